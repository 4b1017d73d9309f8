/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Statistics of continuous-view maintenance: stream_ext.view_stats.
 *
 *	  Maintenance (maintain.c) reports every batch it applied here: rows,
 *	  groups touched, time spent, the newest arrival time among the rows.
 *	  Reports are held per transaction (and per subtransaction level) and
 *	  folded into a shared-memory table only when the transaction commits,
 *	  so a rolled-back batch -- or one in a rolled-back savepoint -- is never
 *	  counted, exactly like the view itself never sees it.
 *
 *	  The shared table is modelled on pg_stat_statements: a hash table keyed
 *	  by (database, view) under one LWLock, taken in shared mode to update an
 *	  existing entry (whose counters have their own spinlock) and in
 *	  exclusive mode only to add or remove entries.  Counters live as long as
 *	  the server: they restart from zero after a restart or
 *	  stream_ext.reset_stats().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "core/catalog.h"
#include "core/security.h"
#include "housekeeping/compactor_slots.h"
#include "maintain/stats.h"
#include "query/shared_plan.h"

PG_FUNCTION_INFO_V1(stream_ext_view_stats_raw);
PG_FUNCTION_INFO_V1(stream_ext_reset_stats);
PG_FUNCTION_INFO_V1(stream_ext_view_groups);
PG_FUNCTION_INFO_V1(stream_ext_stats_info);
PG_FUNCTION_INFO_V1(stream_ext_view_delta_rows);
PG_FUNCTION_INFO_V1(stream_ext_compaction_stats);

#define STATS_ERRMSG_LEN 128

typedef struct StatsKey
{
	Oid			dbid;
	Oid			viewid;
} StatsKey;

/* the key of view viewid of this database (padding zeroed: it is hashed) */
static inline StatsKey
view_key(Oid viewid)
{
	StatsKey	key;

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.viewid = viewid;
	return key;
}

typedef struct StatsCounters
{
	int64		rows;
	int64		batches;
	int64		groups;			/* groups touched, summed over batches */
	int64		last_rows;		/* rows of the newest batch */
	double		total_ms;
	double		max_ms;
	TimestampTz last_at;		/* commit of the newest batch */
	TimestampTz max_arrival;	/* newest arrival_timestamp applied */
	/* compaction of the view's delta (housekeeping/compactor.c) */
	int64		compacted_rows;
	int64		compactions;	/* transactions that folded rows */
	double		compact_ms;
	TimestampTz compacted_at;	/* commit of the newest compaction */
	TimestampTz drained_at;		/* start of the newest compaction that
								 * emptied the delta as it saw it; pending
								 * only */
	TimestampTz delta_since;	/* the delta has had rows since then (at
								 * most); 0: empty, or unknown */
} StatsCounters;

typedef struct StatsEntry
{
	StatsKey	key;
	slock_t		mutex;
	Oid			streamid;
	StatsCounters c;
	int64		compaction_errors;
	TimestampTz compaction_error_at;
	char		compaction_error[STATS_ERRMSG_LEN];
	/* the view's delta rows committed and not yet folded (a lower bound) */
	int64		backlog;
	bool		backlog_known;	/* a batch has added to it since the entry
								 * was made */
} StatsEntry;

typedef struct StatsShared
{
	LWLock	   *lock;
	slock_t		mutex;			/* protects the two fields below */
	TimestampTz reset_at;
	int64		dropped;		/* batches not recorded: table full */
} StatsShared;

/* a batch (or several) reported in this transaction, not yet committed */
typedef struct PendingStats
{
	Oid			viewid;
	Oid			streamid;
	int			nestlevel;
	StatsCounters c;
	bool		flushed;		/* flush_pending(): folded under the
								 * shared lock */
} PendingStats;

static bool track_stats = true;
static int	stats_max_views = 1000;

static StatsShared *stats_shared = NULL;
static HTAB *stats_hash = NULL;

static List *pending = NIL;		/* of PendingStats, in TopTransactionContext */
static bool callbacks_registered = false;
static bool backlog_added = false;	/* pending batches added to backlogs */

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* ---- shared memory ------------------------------------------------------- */

static Size
stats_memsize(void)
{
	return add_size(MAXALIGN(sizeof(StatsShared)),
					hash_estimate_size(stats_max_views, sizeof(StatsEntry)));
}

static void
stats_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(stats_memsize());
	RequestNamedLWLockTranche("stream_ext_stats", 1);
}

static void
stats_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	stats_shared = ShmemInitStruct("stream_ext view stats", sizeof(StatsShared),
								   &found);
	if (!found)
	{
		stats_shared->lock = &(GetNamedLWLockTranche("stream_ext_stats"))->lock;
		SpinLockInit(&stats_shared->mutex);
		stats_shared->reset_at = GetCurrentTimestamp();
		stats_shared->dropped = 0;
	}
	info.keysize = sizeof(StatsKey);
	info.entrysize = sizeof(StatsEntry);
	stats_hash = ShmemInitHash("stream_ext view stats hash",
							   stats_max_views, stats_max_views,
							   &info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/* ---- pending reports ----------------------------------------------------- */

static void
merge_counters(StatsCounters *into, const StatsCounters *from)
{
	into->rows += from->rows;
	into->batches += from->batches;
	into->groups += from->groups;
	into->total_ms += from->total_ms;
	if (from->max_ms > into->max_ms)
		into->max_ms = from->max_ms;
	if (from->batches > 0)
		into->last_rows = from->last_rows;
	if (from->last_at > into->last_at)
		into->last_at = from->last_at;
	if (from->max_arrival > into->max_arrival)
		into->max_arrival = from->max_arrival;
	into->compacted_rows += from->compacted_rows;
	into->compactions += from->compactions;
	into->compact_ms += from->compact_ms;
	if (from->compacted_at > into->compacted_at)
		into->compacted_at = from->compacted_at;
	if (from->drained_at > into->drained_at)
		into->drained_at = from->drained_at;
}

/*
 * The time since which a view's delta has had rows (at most): set by the
 * first batch after the delta was seen empty, cleared by a compaction that
 * emptied it as its snapshot saw it -- unless a batch committed after that
 * compaction began (then that start bounds the oldest row left).
 */
static void
update_delta_since(StatsCounters *c, const StatsCounters *p, TimestampTz now)
{
	if (p->batches > 0 && c->delta_since == 0)
		c->delta_since = now;
	if (p->drained_at != 0)
		c->delta_since = c->last_at <= p->drained_at ? 0 :
			Max(c->delta_since, p->drained_at);
}

static PendingStats *
pending_find(Oid viewid, int nestlevel)
{
	ListCell   *lc;

	foreach(lc, pending)
	{
		PendingStats *p = lfirst(lc);

		if (p->viewid == viewid && p->nestlevel == nestlevel)
			return p;
	}
	return NULL;
}

static void
init_entry(StatsEntry *e, Oid streamid)
{
	SpinLockInit(&e->mutex);
	e->streamid = streamid;
	memset(&e->c, 0, sizeof(e->c));
	e->compaction_errors = 0;
	e->compaction_error_at = 0;
	e->compaction_error[0] = '\0';
	e->backlog = 0;
	e->backlog_known = false;
}

/* fold pending report p into its shared entry e (the lock held) */
static void
flush_one(StatsEntry *e, PendingStats *p, TimestampTz now)
{
	SpinLockAcquire(&e->mutex);
	if (OidIsValid(p->streamid))
		e->streamid = p->streamid;
	merge_counters(&e->c, &p->c);
	update_delta_since(&e->c, &p->c, now);
	e->c.drained_at = 0;
	e->backlog = Max(e->backlog - p->c.compacted_rows, 0);
	SpinLockRelease(&e->mutex);
}

/*
 * Fold this transaction's reports into the shared table: all of those
 * whose views have an entry under one shared lock (a transaction that fed
 * ten views takes it once, not ten times), then, under the exclusive lock,
 * those that need one made.
 */
static void
flush_pending(void)
{
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	bool		missing = false;

	if (stats_hash == NULL)
		return;
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	foreach(lc, pending)
	{
		PendingStats *p = lfirst(lc);
		StatsKey	key;
		StatsEntry *e;

		key = view_key(p->viewid);
		if (p->c.batches > 0)
			p->c.last_at = now;
		if (p->c.compactions > 0)
			p->c.compacted_at = now;
		e = hash_search(stats_hash, &key, HASH_FIND, NULL);
		p->flushed = (e != NULL);
		if (e != NULL)
			flush_one(e, p, now);
		else
			missing = true;
	}
	LWLockRelease(stats_shared->lock);
	if (!missing)
		return;

	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	foreach(lc, pending)
	{
		PendingStats *p = lfirst(lc);
		StatsKey	key;
		StatsEntry *e;
		bool		found;

		if (p->flushed)
			continue;
		key = view_key(p->viewid);
		e = hash_search(stats_hash, &key, HASH_ENTER_NULL, &found);
		if (e == NULL)
		{
			SpinLockAcquire(&stats_shared->mutex);
			stats_shared->dropped += p->c.batches;
			SpinLockRelease(&stats_shared->mutex);
			continue;
		}
		if (!found)
			init_entry(e, p->streamid);
		flush_one(e, p, now);
	}
	LWLockRelease(stats_shared->lock);
}

/*
 * Add (sign 1) or take back (sign -1) the delta rows the pending batches
 * appended to their views' backlogs.  Added before the commit makes the
 * rows visible, so a compaction can fold them -- and take them off, at its
 * own commit -- only after they were added: the backlog never goes below
 * the rows waiting because of a race, and clamping it at zero only
 * forgets rows nobody counted (appended before a restart or a reset).
 * A view without an entry (the table is full) has no backlog.
 */
static void
backlog_apply(int sign)
{
	ListCell   *lc;

	if (stats_hash == NULL)
		return;
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	foreach(lc, pending)
	{
		PendingStats *p = lfirst(lc);
		StatsKey	key;
		StatsEntry *e;

		if (p->c.groups == 0)
			continue;
		key = view_key(p->viewid);
		e = hash_search(stats_hash, &key, HASH_FIND, NULL);
		if (e == NULL && sign > 0)
		{
			bool		found;

			LWLockRelease(stats_shared->lock);
			LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
			e = hash_search(stats_hash, &key, HASH_ENTER_NULL, &found);
			if (e != NULL && !found)
				init_entry(e, p->streamid);
			LWLockRelease(stats_shared->lock);
			LWLockAcquire(stats_shared->lock, LW_SHARED);
			e = hash_search(stats_hash, &key, HASH_FIND, NULL);
		}
		if (e == NULL)
			continue;
		SpinLockAcquire(&e->mutex);
		e->backlog = Max(e->backlog + sign * p->c.groups, 0);
		if (sign > 0)
			e->backlog_known = true;
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(stats_shared->lock);
}

static void
stats_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (pending != NIL)
			{
				backlog_apply(1);
				backlog_added = true;
			}
			break;
		case XACT_EVENT_COMMIT:
			/* after the commit record: nothing here may fail */
			if (pending != NIL)
				flush_pending();
			pending = NIL;
			backlog_added = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			/* a prepared transaction's batches are not counted */
			if (backlog_added)
				backlog_apply(-1);
			pending = NIL;
			backlog_added = false;
			break;
		default:
			break;
	}
}

static void
stats_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (pending == NIL)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(lc, pending)
		{
			PendingStats *p = lfirst(lc);

			if (p->nestlevel >= level)
				pending = foreach_delete_current(pending, lc);
		}
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, pending)
		{
			PendingStats *p = lfirst(lc);
			PendingStats *parent;

			if (p->nestlevel < level)
				continue;
			parent = pending_find(p->viewid, level - 1);
			if (parent != NULL)
			{
				merge_counters(&parent->c, &p->c);
				pending = foreach_delete_current(pending, lc);
			}
			else
				p->nestlevel = level - 1;
		}
	}
}

/*
 * Called by maintenance after it applied one batch of ROWS rows to view
 * VIEWID, touching GROUPS groups in ELAPSED_MS; MAX_ARRIVAL is the newest
 * arrival_timestamp of the batch (0 if unknown).
 */
/* this transaction's pending report of viewid, created if missing */
static PendingStats *
pending_entry(Oid viewid, Oid streamid)
{
	int			level = GetCurrentTransactionNestLevel();
	PendingStats *p;

	if (!callbacks_registered)
	{
		RegisterXactCallback(stats_xact_callback, NULL);
		RegisterSubXactCallback(stats_subxact_callback, NULL);
		callbacks_registered = true;
	}
	p = pending_find(viewid, level);
	if (p == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		p = palloc0(sizeof(PendingStats));
		p->viewid = viewid;
		p->streamid = streamid;
		p->nestlevel = level;
		pending = lappend(pending, p);
		MemoryContextSwitchTo(old);
	}
	return p;
}

/*
 * Called by maintenance after it applied one batch of ROWS rows to view
 * VIEWID, touching GROUPS groups in ELAPSED_MS; MAX_ARRIVAL is the newest
 * arrival_timestamp of the batch (0 if unknown).
 */
void
stats_report_batch(Oid viewid, Oid streamid, uint64 rows, uint64 groups,
				   double elapsed_ms, TimestampTz max_arrival)
{
	PendingStats *p;

	/*
	 * A view with a delta appended one row per group touched: count them
	 * towards waking the background compactor at commit (cheap, and
	 * harmless for a view that upserts: a spurious wake-up at most).
	 */
	se_compactor_note_rows(groups);
	if (!track_stats || stats_hash == NULL)
		return;
	p = pending_entry(viewid, streamid);
	p->c.rows += rows;
	p->c.batches += 1;
	p->c.groups += groups;
	p->c.last_rows = rows;
	p->c.total_ms += elapsed_ms;
	if (elapsed_ms > p->c.max_ms)
		p->c.max_ms = elapsed_ms;
	if (max_arrival > p->c.max_arrival)
		p->c.max_arrival = max_arrival;
}

/*
 * Called after a compaction (se_compact_view(): the background compactor,
 * a writer's inline compaction, stream_ext.compact()) folded ROWS delta
 * rows of VIEWID into its materialization in ELAPSED_MS; DRAINED_AT is the
 * time the compaction began if it emptied the delta as it saw it, else 0.
 * Counted at commit, like batches.
 */
void
stats_report_compaction(Oid viewid, uint64 rows, double elapsed_ms,
						TimestampTz drained_at)
{
	PendingStats *p;

	if (!track_stats || stats_hash == NULL)
		return;
	if (rows == 0 && drained_at == 0)
		return;
	p = pending_entry(viewid, InvalidOid);
	p->c.compacted_rows += rows;
	p->c.compactions += rows > 0 ? 1 : 0;
	p->c.compact_ms += elapsed_ms;
	if (drained_at > p->c.drained_at)
		p->c.drained_at = drained_at;
}

/*
 * A compaction of VIEWID failed with MSG (its transaction is rolled back):
 * shown at once, outside any transaction.
 */
void
stats_report_compaction_error(Oid viewid, const char *msg)
{
	StatsKey	key;
	StatsEntry *e;
	bool		found;

	if (!track_stats || stats_hash == NULL)
		return;
	key = view_key(viewid);
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	e = hash_search(stats_hash, &key, HASH_ENTER_NULL, &found);
	if (e != NULL)
	{
		if (!found)
			init_entry(e, InvalidOid);
		SpinLockAcquire(&e->mutex);
		e->compaction_errors++;
		e->compaction_error_at = GetCurrentTimestamp();
		strlcpy(e->compaction_error, msg, STATS_ERRMSG_LEN);
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(stats_shared->lock);
}

bool
stats_tracking(void)
{
	return track_stats && stats_hash != NULL;
}

/*
 * The delta rows of view viewid committed and not yet folded by a committed
 * compaction (the backlog, above).  False if unknown: no statistics
 * (stream_ext.track_stats off), or no batch counted since the server
 * started or the view's counters were reset, or the table is full.
 */
bool
stats_delta_backlog(Oid viewid, int64 *rows)
{
	StatsKey	key;
	StatsEntry *e;
	bool		known = false;
	int64		n = 0;

	if (!stats_tracking())
		return false;
	key = view_key(viewid);
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	e = hash_search(stats_hash, &key, HASH_FIND, NULL);
	if (e != NULL)
	{
		SpinLockAcquire(&e->mutex);
		known = e->backlog_known;
		n = e->backlog;
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(stats_shared->lock);
	if (!known)
		return false;
	*rows = n;
	return true;
}

/* ---- SQL interface ------------------------------------------------------- */

static void
stats_require_shmem(void)
{
	if (stats_hash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stream_ext statistics are not available"),
				 errhint("stream_ext must be loaded via shared_preload_libraries.")));
}

/*
 * A palloc'd copy of this database's entries (*n of them), taken under the
 * lock; the caller looks at them (catalog lookups) without it.
 */
static StatsEntry *
database_entries(int *n)
{
	HASH_SEQ_STATUS status;
	StatsEntry *e;
	StatsEntry *copy;
	int			max;

	stats_require_shmem();
	*n = 0;
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	max = hash_get_num_entries(stats_hash);
	copy = palloc(sizeof(StatsEntry) * Max(max, 1));
	hash_seq_init(&status, stats_hash);
	while ((e = hash_seq_search(&status)) != NULL)
	{
		if (e->key.dbid != MyDatabaseId || *n >= max)
			continue;
		SpinLockAcquire(&e->mutex);
		copy[(*n)++] = *e;
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(stats_shared->lock);
	return copy;
}

/*
 * stream_ext._view_stats() -- the counters of this database's views; the
 * view stream_ext.view_stats joins them with the catalog.
 */
Datum
stream_ext_view_stats_raw(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n;
	StatsEntry *copy = database_entries(&n);
	List	   *dead = NIL;

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < n; i++)
	{
		Datum		values[10];
		bool		nulls[10] = {0};
		StatsCounters *c = &copy[i].c;

		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(copy[i].key.viewid)))
		{
			dead = lappend_oid(dead, copy[i].key.viewid);
			continue;
		}
		values[0] = ObjectIdGetDatum(copy[i].key.viewid);
		values[1] = ObjectIdGetDatum(copy[i].streamid);
		values[2] = Int64GetDatum(c->rows);
		values[3] = Int64GetDatum(c->batches);
		values[4] = Int64GetDatum(c->groups);
		values[5] = Int64GetDatum(c->last_rows);
		values[6] = Float8GetDatum(c->total_ms);
		values[7] = Float8GetDatum(c->max_ms);
		values[8] = TimestampTzGetDatum(c->last_at);
		if (c->max_arrival != 0)
			values[9] = TimestampTzGetDatum(c->max_arrival);
		else
			nulls[9] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	/* forget views that were dropped (the table is bounded) */
	if (dead != NIL)
	{
		ListCell   *lc;

		LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
		foreach(lc, dead)
		{
			StatsKey	key;

			key = view_key(lfirst_oid(lc));
			hash_search(stats_hash, &key, HASH_REMOVE, NULL);
		}
		LWLockRelease(stats_shared->lock);
	}
	return (Datum) 0;
}

/*
 * stream_ext.stats_info(): when the counters were last reset (all of them:
 * server start or reset_stats() without argument) and how many batches
 * went uncounted because stream_ext.stats_max_views entries were in use.
 */
Datum
stream_ext_stats_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {0};

	stats_require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	SpinLockAcquire(&stats_shared->mutex);
	values[0] = TimestampTzGetDatum(stats_shared->reset_at);
	values[1] = Int64GetDatum(stats_shared->dropped);
	SpinLockRelease(&stats_shared->mutex);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}

/*
 * The newest value of timestamptz column ATTNUM among the rows of a
 * transition table (0 if none is non-NULL).  Reads through a read pointer
 * of its own, so the maintenance statement's scan is not disturbed.  The
 * column is read from each stored row with heap_getattr() -- at its cached
 * offset when the columns before it have a fixed width and the row no
 * NULLs -- instead of deforming every column up to it into the slot.
 */
TimestampTz
stats_max_timestamp(Tuplestorestate *store, TupleDesc desc, AttrNumber attnum)
{
	TupleTableSlot *slot;
	int			ptr;
	int			oldptr = 0;
	TimestampTz result = 0;

	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	ptr = tuplestore_alloc_read_pointer(store, EXEC_FLAG_REWIND);
	tuplestore_select_read_pointer(store, ptr);
	tuplestore_rescan(store);
	while (tuplestore_gettupleslot(store, true, false, slot))
	{
		bool		isnull;
		Datum		d = heap_getattr(&((MinimalTupleTableSlot *) slot)->minhdr,
									 attnum, desc, &isnull);

		if (!isnull && DatumGetTimestampTz(d) > result)
			result = DatumGetTimestampTz(d);
	}
	tuplestore_select_read_pointer(store, oldptr);
	ExecDropSingleTupleTableSlot(slot);
	return result;
}

/*
 * stream_ext.reset_stats(view regclass DEFAULT NULL): forget the counters
 * of one view, or of every view of this database.  Revoked from PUBLIC by
 * the install script, like pg_stat_statements_reset().
 */
Datum
stream_ext_reset_stats(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS status;
	StatsEntry *e;
	Oid			viewid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);

	stats_require_shmem();
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&status, stats_hash);
	while ((e = hash_seq_search(&status)) != NULL)
	{
		if (e->key.dbid != MyDatabaseId)
			continue;
		if (OidIsValid(viewid) && e->key.viewid != viewid)
			continue;
		hash_search(stats_hash, &e->key, HASH_REMOVE, NULL);
	}
	LWLockRelease(stats_shared->lock);
	if (!OidIsValid(viewid))
	{
		SpinLockAcquire(&stats_shared->mutex);
		stats_shared->reset_at = GetCurrentTimestamp();
		stats_shared->dropped = 0;
		SpinLockRelease(&stats_shared->mutex);
	}
	PG_RETURN_VOID();
}

static char *
qualified_rel(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * The columns of the materialization's unique index (the group keys, or
 * the hash of wide keys), as a select list: what tells its groups apart.
 */
static char *
group_columns(Oid matrelid)
{
	Relation	rel = table_open(matrelid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for index %u", lfirst_oid(lc));
		index = (Form_pg_index) GETSTRUCT(tup);
		if (index->indisunique && buf.len == 0)
		{
			for (int i = 0; i < index->indnkeyatts; i++)
				appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "",
								 quote_identifier(get_attname(matrelid, index->indkey.values[i], false)));
		}
		ReleaseSysCache(tup);
	}
	table_close(rel, AccessShareLock);
	if (buf.len == 0)
		elog(ERROR, "materialization %s has no unique index", get_rel_name(matrelid));
	return buf.data;
}

/*
 * Continuous view viewid's catalog entry, if the caller may read the view
 * (false: it may not).
 */
static bool
readable_view(Oid viewid, ViewCatalogEntry *entry)
{
	if (pg_class_aclcheck(viewid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return false;
	catalog_get_view(viewid, entry, false);
	return true;
}

/*
 * May the owner of the view of entry still read table relid?  A view whose
 * owner lost USAGE on a schema or SELECT on its own tables shows NULL
 * counts instead of failing all of view_stats.
 */
static bool
owner_can_read(const ViewCatalogEntry *entry, Oid relid)
{
	return pg_namespace_aclcheck(get_rel_namespace(relid), entry->owner,
								 ACL_USAGE) == ACLCHECK_OK &&
		pg_class_aclcheck(relid, entry->owner, ACL_SELECT) == ACLCHECK_OK;
}

/*
 * " WHERE <its presence column> IS NOT NULL" for a member of a shared
 * storage (query/shared_plan.c): its groups, its rows; else ""
 */
static char *
member_rows(const ViewCatalogEntry *entry)
{
	char	   *prefix = catalog_shared_prefix(entry->viewid);

	if (prefix == NULL)
		return "";
	return psprintf(" WHERE %s IS NOT NULL",
					quote_identifier(psprintf("%s%s", prefix, SHARED_PRESENCE_COLUMN)));
}

/* the count(*) query sql, as the owner of the view of entry */
static int64
count_as_owner(const ViewCatalogEntry *entry, const char *sql)
{
	SeRunAs		runas;
	int			rc;
	bool		isnull;
	int64		result;

	se_run_as_owner(&runas, entry->owner, entry->timezone);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute(sql, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "stream_ext: counting rows failed: %s", SPI_result_code_string(rc));
	result = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	se_restore(&runas);
	return result;
}

/*
 * stream_ext.view_groups(view regclass) -- the number of groups a
 * continuous view holds now (rows of its materialization), or NULL when the
 * caller may not read the view (or its owner its tables).  Counts as the view's owner: the caller
 * need not be able to read the materialization itself.
 */
Datum
stream_ext_view_groups(PG_FUNCTION_ARGS)
{
	ViewCatalogEntry entry;
	char	   *sql;

	if (!readable_view(PG_GETARG_OID(0), &entry) ||
		!owner_can_read(&entry, entry.matrelid) ||
		(OidIsValid(entry.deltaid) && !owner_can_read(&entry, entry.deltaid)))
		PG_RETURN_NULL();
	if (OidIsValid(entry.deltaid))
	{
		/* materialization (+) delta: each group counted once */
		char	   *keys = group_columns(entry.matrelid);

		char	   *where = member_rows(&entry);

		sql = psprintf("SELECT pg_catalog.count(*) FROM (SELECT %s FROM %s%s UNION SELECT %s FROM %s%s) g",
					   keys, qualified_rel(entry.matrelid), where,
					   keys, qualified_rel(entry.deltaid), where);
	}
	else
		sql = psprintf("SELECT pg_catalog.count(*) FROM %s", qualified_rel(entry.matrelid));
	PG_RETURN_INT64(count_as_owner(&entry, sql));
}

/*
 * stream_ext.view_delta_rows(view regclass) -- the partial states waiting
 * in a continuous view's delta for the compactor (rows of the delta), or
 * NULL when the view has no delta or the caller may not read it (or its
 * owner the delta).
 */
Datum
stream_ext_view_delta_rows(PG_FUNCTION_ARGS)
{
	ViewCatalogEntry entry;

	if (!readable_view(PG_GETARG_OID(0), &entry) || !OidIsValid(entry.deltaid) ||
		!owner_can_read(&entry, entry.deltaid))
		PG_RETURN_NULL();
	PG_RETURN_INT64(count_as_owner(&entry,
								   psprintf("SELECT pg_catalog.count(*) FROM %s%s",
											qualified_rel(entry.deltaid),
											member_rows(&entry))));
}

/*
 * stream_ext._compaction_stats() -- the compaction counters of this
 * database's views; the view stream_ext.view_stats shows them.
 */
Datum
stream_ext_compaction_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n;
	StatsEntry *copy = database_entries(&n);

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < n; i++)
	{
		StatsEntry *c = &copy[i];
		Datum		values[8];
		bool		nulls[8] = {0};

		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(c->key.viewid)))
			continue;			/* dropped: view_stats forgets it */
		values[0] = ObjectIdGetDatum(c->key.viewid);
		values[1] = Int64GetDatum(c->c.compacted_rows);
		values[2] = Int64GetDatum(c->c.compactions);
		values[3] = Float8GetDatum(c->c.compact_ms);
		values[4] = TimestampTzGetDatum(c->c.compacted_at);
		nulls[4] = c->c.compacted_at == 0;
		values[5] = TimestampTzGetDatum(c->c.delta_since);
		nulls[5] = c->c.delta_since == 0;
		values[6] = Int64GetDatum(c->compaction_errors);

		/*
		 * The last error, until a compaction folds rows again; only to
		 * those who may read the view (it may quote the view's data).
		 */
		values[7] = CStringGetTextDatum(c->compaction_error);
		nulls[7] = c->compaction_error_at == 0 ||
			c->compaction_error_at < c->c.compacted_at ||
			pg_class_aclcheck(c->key.viewid, GetUserId(), ACL_SELECT) != ACLCHECK_OK;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

void
stats_init(void)
{
	DefineCustomBoolVariable("stream_ext.track_stats",
							 "Collects statistics of continuous-view maintenance (stream_ext.view_stats).",
							 NULL,
							 &track_stats,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("stream_ext.stats_max_views",
							"Number of continuous views whose statistics are kept in shared memory.",
							"Batches of views beyond this number are not counted (stream_ext.stats_info shows how many).",
							&stats_max_views,
							1000, 16, INT_MAX / 2,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = stats_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = stats_shmem_startup;
}
