/*-------------------------------------------------------------------------
 *
 * compactor.c
 *	  The background compactor: one worker per database folds the deltas
 *	  of continuous views (the partial states each batch appends) into
 *	  their materializations, on a core of its own, in short transactions.
 *
 *	  Start.  The Kafka launcher's per-database scanner (kafka/launcher.c)
 *	  calls compactor_launch_if_needed(): if stream_ext is installed and
 *	  some view has a delta (view_catalog.delta), and the database has no
 *	  live compactor (compactor_slots.c), it registers one.  The worker
 *	  connects as the bootstrap superuser and claims its database's slot; a
 *	  twin exits at once.  A crash restart starts it again with the
 *	  launcher's first scan.  A writer that commits delta rows in a
 *	  database without a live compactor starts one at once (at most one
 *	  start a second, compactor_slots.c), so a new view does not wait for
 *	  the launcher's next scan (stream_ext.kafka_launcher_naptime).
 *
 *	  Work.  A pass reads the views that have a delta and, round-robin, folds
 *	  up to stream_ext.compact_batch_rows delta rows of each view per
 *	  transaction with se_compact_view() (maintain/compact.c), which runs
 *	  the compaction statement as the view's owner, security-restricted:
 *	  nothing a user wrote runs as the superuser the worker is connected
 *	  as.  Rounds repeat while some view had a full batch, so a delta is
 *	  emptied in bounded transactions and no view waits behind another.
 *	  Each transaction sets lock_timeout (stream_ext.compact_lock_timeout):
 *	  a view whose tables someone has locked is skipped and retried, and
 *	  the others go on.  A delta row is deleted in the transaction that
 *	  folds it into the materialization, so a crash at any point loses or
 *	  repeats nothing (TAP test 140_compactor_crash).
 *
 *	  Errors.  A failed transaction is rolled back and the view backs off:
 *	  transient errors (deadlock, serialization failure, lock timeout,
 *	  cancel) are retried after 100 ms doubling to 2 s, others after 1 s
 *	  doubling to 60 s; the error is logged and shown in view_stats
 *	  (compaction_errors, last_compaction_error); stream_ext.compactor_status
 *	  counts them.  Other views are compacted meanwhile.
 *
 *	  Waking.  Writers' commits add their appended rows to the slot's
 *	  counter and set the latch when stream_ext.compact_batch_rows rows are
 *	  waiting (compactor_slots.c); otherwise a pass runs every
 *	  stream_ext.compact_naptime.
 *
 *	  Exit.  SIGTERM (die(): the transaction in progress is rolled back);
 *	  stream_ext.background_compaction turned off (no compactor starts then);
 *	  DROP EXTENSION or the last view with a delta gone (the scanner starts
 *	  it again when one appears); and DROP DATABASE (or another command
 *	  that needs the database to itself): such a command holds the
 *	  database's lock while it waits for other sessions to leave, so the
 *	  worker probes that lock at least every second
 *	  (database_wanted_alone()) and leaves.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_database.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "core/security.h"
#include "housekeeping/compactor.h"
#include "housekeeping/compactor_slots.h"
#include "kafka/common.h"
#include "maintain/compact.h"
#include "maintain/stats.h"

/* GUCs */
static bool background_compaction = true;
static int	compact_naptime = 1000;		/* ms */
static int	compact_lock_timeout = 1000;	/* ms, 0: none */

/* the longest the worker sleeps before probing for DROP DATABASE */
#define PROBE_MS				1000
#define TRANSIENT_MIN_MS		100
#define TRANSIENT_MAX_MS		2000
#define FAILURE_MIN_MS			1000
#define FAILURE_MAX_MS			60000

/* a view the worker compacts */
typedef struct CompactView
{
	Oid			viewid;
	char	   *name;			/* regclass text, for messages */
	int			backoff_ms;		/* 0: last attempt succeeded */
	TimestampTz retry_at;		/* not before */
} CompactView;

static void start_compactor(Oid dboid);

static CompactorSlot *my_slot = NULL;
static MemoryContext compactor_cxt = NULL;	/* the views */
static MemoryContext pass_cxt = NULL;	/* reset after every pass */
static CompactView *views = NULL;
static int	nviews = 0;

void
compactor_init(void)
{
	DefineCustomBoolVariable("stream_ext.background_compaction",
							 "Runs a background compactor in every database whose continuous views have deltas.",
							 "Off: deltas are compacted only by writers past stream_ext.compact_threshold and by stream_ext.compact().",
							 &background_compaction,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("stream_ext.compact_naptime",
							"Time between passes of the background compactor when no writer wakes it.",
							"Writers wake it as soon as stream_ext.compact_batch_rows delta rows are waiting.",
							&compact_naptime,
							1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("stream_ext.compact_batch_rows",
							"Delta rows the background compactor folds into a materialization per transaction.",
							NULL,
							&compact_batch_rows,
							10000, 1, INT_MAX,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("stream_ext.compact_lock_timeout",
							"lock_timeout of the background compactor's transactions (0: wait as long as it takes).",
							"A view whose tables stay locked longer is skipped and retried; the other views go on.",
							&compact_lock_timeout,
							1000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	if (process_shared_preload_libraries_in_progress)
	{
		compactor_slots_init();
		se_compactor_start_hook = start_compactor;
	}
}

/* ---- the views with a delta ---------------------------------------------- */

/* view_catalog and its column delta (absent before ALTER EXTENSION UPDATE) */
static bool
deltas_possible(void)
{
	Oid			nsp;
	Oid			relid;

	if (!stream_ext_installed())
		return false;
	nsp = get_namespace_oid("stream_ext", true);
	relid = get_relname_relid("view_catalog", nsp);
	return OidIsValid(relid) && get_attnum(relid, "delta") != InvalidAttrNumber;
}

/*
 * Run the catalog query SQL (SPI connected) as the extension's owner.
 */
static void
catalog_select(const char *sql)
{
	SeRunAs		runas;
	int			rc;

	se_run_as_catalog_owner(&runas);
	rc = SPI_execute(sql, true, 0);
	se_restore(&runas);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext compactor: catalog query failed: %s",
			 SPI_result_code_string(rc));
}

/*
 * Read the views with a delta (in a transaction of its own), keeping the
 * backoff of those already known.  False: the extension is gone, or no view
 * has a delta.
 */
static bool
load_views(void)
{
	CompactView *fresh = NULL;
	int			nfresh = 0;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (deltas_possible())
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		catalog_select("SELECT v.view::pg_catalog.oid, v.view::pg_catalog.text"
					   " FROM stream_ext.view_catalog v"
					   " WHERE v.delta IS NOT NULL AND v.compact_sql IS NOT NULL ORDER BY 1");
		nfresh = (int) SPI_processed;
		fresh = MemoryContextAllocZero(compactor_cxt,
									   sizeof(CompactView) * Max(nfresh, 1));
		for (int i = 0; i < nfresh; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			bool		isnull;

			fresh[i].viewid = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
			fresh[i].name = MemoryContextStrdup(compactor_cxt,
												SPI_getvalue(tup, SPI_tuptable->tupdesc, 2));
			for (int j = 0; j < nviews; j++)
				if (views[j].viewid == fresh[i].viewid)
				{
					fresh[i].backoff_ms = views[j].backoff_ms;
					fresh[i].retry_at = views[j].retry_at;
				}
		}
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	for (int j = 0; j < nviews; j++)
		pfree(views[j].name);
	if (views != NULL)
		pfree(views);
	views = fresh;
	nviews = nfresh;
	return nviews > 0;
}

/* ---- one compaction transaction ------------------------------------------ */

static bool
transient_error(int sqlerrcode)
{
	return sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED ||
		sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE ||
		sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		sqlerrcode == ERRCODE_QUERY_CANCELED;
}

/* a compaction of view failed with edata: back off, tell */
static void
view_failed(CompactView *v, ErrorData *edata)
{
	bool		transient = transient_error(edata->sqlerrcode);
	int			min_ms = transient ? TRANSIENT_MIN_MS : FAILURE_MIN_MS;
	int			max_ms = transient ? TRANSIENT_MAX_MS : FAILURE_MAX_MS;
	char	   *msg = edata->message ? edata->message : "unknown error";

	v->backoff_ms = v->backoff_ms < min_ms ? min_ms : Min(v->backoff_ms * 2, max_ms);
	v->retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), v->backoff_ms);
	ereport(transient ? DEBUG1 : LOG,
			(errcode(edata->sqlerrcode),
			 errmsg("stream_ext compactor: compaction of continuous view %s failed: %s",
					v->name, msg),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 errhint("Retried in %d ms; the other views are compacted meanwhile.",
					 v->backoff_ms)));
	stats_report_compaction_error(v->viewid, msg);
	compactor_slot_update(my_slot, 0, true);
}

/*
 * Lock relid without waiting, or fail as a lock timeout does (the view is
 * retried after a short back-off, and view_stats shows why).
 */
static void
lock_or_give_up(Oid relid, LOCKMODE mode)
{
	if (!ConditionalLockRelationOid(relid, mode))
	{
		char	   *name = get_rel_name(relid);

		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 name ? errmsg("lock timeout: \"%s\" is in use by another transaction", name) :
				 errmsg("lock timeout: relation %u is in use by another transaction", relid)));
	}
}

/*
 * Fold up to max_rows delta rows of view v in one transaction.  Returns the
 * rows folded, or -1 after an error (rolled back, reported).
 */
static int64
compact_view_once(CompactView *v, int64 max_rows)
{
	MemoryContext cxt = CurrentMemoryContext;
	int64		n = -1;

	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		if (compact_lock_timeout > 0)
			(void) set_config_option("lock_timeout",
									 psprintf("%d", compact_lock_timeout),
									 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
									 true, 0, false);
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING,
							   psprintf("compacting continuous view %s", v->name));
		/*
		 * Hold the view, its materialization and its delta for the
		 * transaction, so that DROP waits for it rather than dropping the
		 * tables under the statement -- but only if all three are free now:
		 * DROP ... CASCADE takes its locks in the order of PostgreSQL's
		 * dependency walk (a delta before its view, say), and a compactor
		 * waiting for one of them while holding another would deadlock
		 * with it.  A view that is busy is tried again in the next round.
		 * Then see whether it was dropped since the views were read (the
		 * lock processed the invalidations).
		 */
		n = 0;
		lock_or_give_up(v->viewid, AccessShareLock);
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(v->viewid)))
		{
			ViewCatalogEntry entry;

			if (catalog_lookup_view(v->viewid, &entry, CurrentMemoryContext))
			{
				lock_or_give_up(entry.matrelid, RowExclusiveLock);
				if (OidIsValid(entry.deltaid))
					lock_or_give_up(entry.deltaid, RowExclusiveLock);
				n = se_compact_view_entry(&entry, max_rows);
			}
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(cxt);
		RESUME_INTERRUPTS();
		view_failed(v, edata);
		FreeErrorData(edata);
		n = -1;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	pgstat_report_activity(STATE_IDLE, NULL);
	pgstat_report_stat(false);
	if (n >= 0)
	{
		v->backoff_ms = 0;
		v->retry_at = 0;
	}
	return n;
}

/* ---- the worker ------------------------------------------------------------ */

/*
 * Does a command wait for this database to be free of sessions (DROP
 * DATABASE, ALTER DATABASE ... RENAME or SET TABLESPACE)?  Such a command
 * holds AccessExclusiveLock on the database while it waits; a new session
 * takes RowExclusiveLock, which conflicts.
 */
static bool
database_wanted_alone(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, InvalidOid, DatabaseRelationId, MyDatabaseId, 0);
	if (LockAcquire(&tag, RowExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, RowExclusiveLock, true);
	return false;
}

static void
leave_if_database_wanted(void)
{
	if (database_wanted_alone())
	{
		ereport(LOG,
				(errmsg("stream_ext compactor: leaving database %u, which a command needs to itself",
						MyDatabaseId)));
		proc_exit(0);
	}
}

/*
 * One pass: rounds over the views, each view one transaction per round,
 * until no view had a full batch.
 */
static void
compaction_pass(void)
{
	int64		total = 0;
	bool		more;

	do
	{
		TimestampTz now = GetCurrentTimestamp();

		more = false;
		MemoryContextSwitchTo(pass_cxt);
		for (int i = 0; i < nviews; i++)
		{
			CompactView *v = &views[i];
			int64		n;

			if (v->retry_at > now)
				continue;
			n = compact_view_once(v, compact_batch_rows);
			if (n > 0)
				total += n;
			if (n >= compact_batch_rows)
				more = true;
			CHECK_FOR_INTERRUPTS();
		}
		MemoryContextReset(pass_cxt);
		if (more)
		{
			leave_if_database_wanted();
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
		}
	} while (more);
	compactor_slot_update(my_slot, total, false);
}

/* the earliest retry of a view that backs off, or 0 */
static TimestampTz
next_retry(void)
{
	TimestampTz next = 0;

	for (int i = 0; i < nviews; i++)
		if (views[i].retry_at != 0 && (next == 0 || views[i].retry_at < next))
			next = views[i].retry_at;
	return next;
}

static void
release_slot(int code, Datum arg)
{
	compactor_slot_release(my_slot);
}

void
stream_ext_compactor_main(Datum main_arg)
{
	Oid			dboid;
	TimestampTz last_pass = 0;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * As the bootstrap superuser: it reads stream_ext's catalog; the
	 * compaction of each view runs as the view's owner (se_compact_view()).
	 */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	se_pin_worker_search_path();
	my_slot = compactor_slot_claim(dboid);
	if (my_slot == NULL)
		proc_exit(0);			/* a twin runs */
	before_shmem_exit(release_slot, (Datum) 0);
	pgstat_report_appname("stream_ext compactor");

	compactor_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext compactor",
										  ALLOCSET_DEFAULT_SIZES);
	pass_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext compactor pass",
									 ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		for (;;)
		{
			TimestampTz now;
			TimestampTz retry;
			long		wait_ms;
			int			rc;

			CHECK_FOR_INTERRUPTS();
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			leave_if_database_wanted();
			if (!background_compaction)
				break;

			(void) compactor_slot_take_appended(my_slot);
			MemoryContextSwitchTo(pass_cxt);
			if (!load_views())
				break;
			compaction_pass();
			last_pass = GetCurrentTimestamp();

			/*
			 * Sleep until a writer wakes us, the nap is over or a view's
			 * retry is due; every PROBE_MS, check for DROP DATABASE.
			 */
			for (;;)
			{
				now = GetCurrentTimestamp();
				wait_ms = compact_naptime - (long) ((now - last_pass) / 1000);
				retry = next_retry();
				if (retry != 0)
					wait_ms = Min(wait_ms, (long) ((retry - now) / 1000));
				if (wait_ms <= 0)
					break;
				rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							   Min(wait_ms, PROBE_MS), PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
				if (rc & WL_LATCH_SET)
					break;
				leave_if_database_wanted();
			}
		}
	}
	PG_CATCH();
	{
		/*
		 * An error outside a view's transaction (reading the catalog): log
		 * it and exit; the launcher's next scan starts a new compactor.
		 */
		EmitErrorReport();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		proc_exit(1);
	}
	PG_END_TRY();

	ereport(DEBUG1,
			(errmsg("stream_ext compactor: no continuous view with a delta in database %u, or background compaction off; exiting",
					MyDatabaseId)));
	proc_exit(0);
}

/* ---- start by the launcher's scanner -------------------------------------- */

void
compactor_launch_if_needed(Oid dboid)
{
	bool		needed = false;

	if (!background_compaction || compactor_slot_live(dboid))
		return;
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (deltas_possible())
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		catalog_select("SELECT 1 FROM stream_ext.view_catalog WHERE delta IS NOT NULL LIMIT 1");
		needed = SPI_processed > 0;
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	if (needed)
		start_compactor(dboid);
}

/*
 * Register the compactor of dboid (a twin, if one has started meanwhile,
 * exits at once).  Called by the launcher's scanner and, through
 * se_compactor_start_hook, by a writer's commit that appended delta rows
 * in a database without a compactor (compactor_slots.c).
 */
static void
start_compactor(Oid dboid)
{
	if (!background_compaction)
		return;
	ereport(DEBUG1,
			(errmsg("stream_ext: starting the compactor of database %u", dboid)));
	(void) kafka_bgworker_launch("stream_ext_compactor_main", "stream_ext compactor",
								 "stream_ext compactor", &dboid, sizeof(Oid), false,
								 "the stream_ext compactor",
								 "Raise max_worker_processes.");
}

/* ---- stream_ext.compactor_status ------------------------------------------ */

PG_FUNCTION_INFO_V1(stream_ext_compactor_status);

/*
 * stream_ext.compactor_status(): this database's compactor, one row (pid,
 * started_at, last_pass_at, rows_compacted, errors), or none when it has
 * no compactor running.
 */
Datum
stream_ext_compactor_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	CompactorSlot *slot = compactor_slot_copy(MyDatabaseId);
	Datum		values[5];
	bool		nulls[5] = {0};

	InitMaterializedSRF(fcinfo, 0);
	if (slot == NULL)
		return (Datum) 0;
	values[0] = Int32GetDatum(slot->pid);
	values[1] = TimestampTzGetDatum(slot->started_at);
	values[2] = TimestampTzGetDatum(slot->last_round_at);
	nulls[2] = slot->last_round_at == 0;
	values[3] = Int64GetDatum(slot->rows_compacted);
	values[4] = Int64GetDatum(slot->errors);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
