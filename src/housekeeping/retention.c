/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  Bounded storage: TTL of continuous views, retention of raw stream
 *	  rows, and the periodic job that applies both.
 *
 *	  - TTL: CREATE VIEW v WITH (continuous, ttl = '7 days', ttl_column =
 *		'minute') -- ttl_column must be a group key of type timestamptz,
 *		timestamp or date.  Groups whose ttl_column < now() - ttl are
 *		deleted, with their count(DISTINCT) side-table rows, by one
 *		statement generated at CREATE time (view_catalog.ttl_sql).  It
 *		locks the groups it deletes with SKIP LOCKED: a group an
 *		in-flight insert is updating is left for the next run, so TTL
 *		never waits for writers and cannot deadlock with them.
 *	  - Retention: stream_ext.set_retention(stream, interval) bounds how
 *		long raw rows stay in a stream (default 1 hour; NULL keeps them;
 *		a stream created with retain => false has none and no retention).
 *		Raw rows are only read when a new view is backfilled, maintenance
 *		reads the transition table.  Expired rows are removed by a plain
 *		DELETE on arrival_timestamp (RowExclusiveLock: inserts go on;
 *		streams are UNLOGGED, so no WAL), and a stream whose rows are all
 *		gone is then TRUNCATEd if its AccessExclusiveLock is free right
 *		away and run_maintenance() is its transaction's only statement
 *		(as pg_cron runs it), which gives the file back at once.  docs/retention.md says
 *		why streams are not partitioned by time.
 *	  - stream_ext.run_maintenance() runs both for everything the caller
 *		may maintain (objects owned by roles whose privileges it has),
 *		each view's work as the view's owner and each stream's as the
 *		stream's owner, security-restricted, one subtransaction per item
 *		so that one failure is a WARNING and the rest still runs.  Per-view
 *		work is a list of tasks (view_tasks[] below): TTL, and the expiry
 *		of sliding windows (windows/windows.c's statement), so that windows of
 *		idle streams expire too, and the compaction of session windows'
 *		fragments (windows/sessions.c).
 *	  - Scheduling: when pg_cron is installed in the database (schema
 *		cron), CREATE EXTENSION, ALTER EXTENSION UPDATE and the first
 *		ttl/retention schedule the job 'stream_ext_maintenance'
 *		(stream_ext.maintenance_schedule, every minute); without pg_cron
 *		a NOTICE says to call run_maintenance() from any scheduler, or,
 *		when pg_cron is preloaded but runs in another database
 *		(cron.database_name), gives the cron.schedule_in_database() call
 *		to run there.  DROP
 *		EXTENSION unschedules the job (utility hook below).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "ddl/stream.h"
#include "housekeeping/retention.h"
#include "maintain/changes.h"
#include "query/stream_joins.h"
#include "storage/discard_am.h"
#include "windows/windows.h"

PG_FUNCTION_INFO_V1(stream_ext_set_retention);
PG_FUNCTION_INFO_V1(stream_ext_run_maintenance);
PG_FUNCTION_INFO_V1(stream_ext_schedule_maintenance);
PG_FUNCTION_INFO_V1(stream_ext_unschedule_maintenance);

#define MAINTENANCE_JOB "stream_ext_maintenance"
#define MAINTENANCE_COMMAND "SELECT stream_ext.run_maintenance()"

/* stream_ext.maintenance_schedule: pg_cron schedule of the job */
static char *maintenance_schedule = NULL;


/* ---- options of CREATE VIEW ... WITH (continuous, ttl, ttl_column) ----- */

/*
 * Parse an interval that must be positive; "what" names it in errors.
 */
static Interval *
positive_interval(const char *what, const char *text)
{
	Interval   *iv;
	Interval   *zero = palloc0(sizeof(Interval));

	iv = DatumGetIntervalP(DirectFunctionCall3(interval_in,
											   CStringGetDatum(text),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
	if (!DatumGetBool(DirectFunctionCall2(interval_gt, IntervalPGetDatum(iv),
										  IntervalPGetDatum(zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a positive interval: \"%s\"", what, text)));
	return iv;
}

List *
retention_take_options(List *options, TtlSpec *spec)
{
	ListCell   *lc;
	List	   *rest = NIL;

	memset(spec, 0, sizeof(TtlSpec));
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "ttl") == 0)
			spec->ttl_text = defGetString(def);
		else if (strcmp(def->defname, "ttl_column") == 0)
			spec->column = defGetString(def);
		else
			rest = lappend(rest, def);
	}
	if (spec->ttl_text == NULL && spec->column == NULL)
		return rest;
	if (spec->ttl_text == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl_column needs ttl"),
				 errhint("Say how long groups are kept, e.g. WITH (continuous, ttl = '7 days', ttl_column = '%s').",
						 spec->column)));
	spec->ttl = positive_interval("ttl", spec->ttl_text);
	if (spec->column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl needs ttl_column"),
				 errhint("Name the view's time group key, e.g. WITH (continuous, ttl = '%s', ttl_column = 'minute').",
						 spec->ttl_text)));
	spec->enabled = true;
	return rest;
}

void
retention_validate(TtlSpec *spec, CVPlan *plan, bool session)
{
	Query	   *q = plan->query;
	ListCell   *lc;
	ListCell   *nc = list_head(plan->colnames);
	TargetEntry *found = NULL;
	bool		grouped = false;

	if (session)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ttl is not supported on session windows")));

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		if (strcmp(strVal(lfirst(nc)), spec->column) == 0)
			found = tle;
		nc = lnext(plan->colnames, nc);
	}
	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("ttl_column \"%s\" is not a column of the view", spec->column)));
	/*
	 * The group key computing that column.  Matched by expression, not by
	 * position: windows add keys of their own (a sliding view's bucket).
	 */
	foreach(lc, q->groupClause)
	{
		if (found->ressortgroupref != 0 &&
			((SortGroupClause *) lfirst(lc))->tleSortGroupRef == found->ressortgroupref)
			grouped = true;
	}
	if (grouped)
	{
		foreach(lc, plan->keys)
		{
			CVKey	   *key = lfirst(lc);

			if (equal(key->expr, found->expr))
			{
				spec->key = key;
				break;
			}
		}
	}
	if (spec->key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl_column \"%s\" is not a group key of the view", spec->column),
				 errdetail("TTL deletes whole groups, so it is decided by a GROUP BY column."),
				 errhint("Name a time bucket the view groups by, e.g. date_bin('1 minute', ts, '2000-01-01') AS minute.")));
	if (spec->key->type != TIMESTAMPTZOID && spec->key->type != TIMESTAMPOID &&
		spec->key->type != DATEOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("ttl_column \"%s\" must be of type timestamp with time zone, timestamp or date, not %s",
						spec->column, format_type_be(spec->key->type))));
}

/*
 * The TTL statement of a view: $1 is the ttl.  Deletes the expired groups
 * it can lock without waiting and, in the same statement (same snapshot),
 * their rows in the delta (a view that appends) and their values in the
 * count(DISTINCT) side tables; yields the number of groups deleted.
 */
static char *
ttl_sql(TtlSpec *spec, CVPlan *plan, const char *matrel, const char *delta,
		List *auxids)
{
	StringInfoData buf;
	StringInfoData keys;
	const char *col = quote_identifier(spec->key->colname);
	ListCell   *lc;
	int			n = 0;

	initStringInfo(&keys);
	append_key_columns(&keys, plan, "");
	initStringInfo(&buf);
	appendStringInfo(&buf,
					 "/* stream_ext ttl */ WITH gone_m AS (DELETE FROM %s WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
					 "SELECT ctid FROM %s WHERE %s OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) $1)"
					 " FOR UPDATE SKIP LOCKED)) RETURNING %s)",
					 matrel, matrel, col, keys.data);
	if (delta)
		appendStringInfo(&buf,
						 ", gone_d AS (DELETE FROM %s WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
						 "SELECT ctid FROM %s WHERE %s OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) $1)"
						 " FOR UPDATE SKIP LOCKED)) RETURNING %s),"
						 " gone AS (SELECT %s FROM gone_m UNION SELECT %s FROM gone_d)",
						 delta, delta, col, keys.data, keys.data, keys.data);
	else
		appendStringInfoString(&buf, ", gone AS (SELECT * FROM gone_m)");
	foreach(lc, auxids)
	{
		Oid			auxid = lfirst_oid(lc);
		ListCell   *kc;

		appendStringInfo(&buf, ", aux_%d AS (DELETE FROM %s a USING gone g WHERE a.%s OPERATOR(pg_catalog.=) g.%s",
						 ++n,
						 quote_qualified_identifier(get_namespace_name(get_rel_namespace(auxid)),
													get_rel_name(auxid)),
						 col, col);
		foreach(kc, plan->keys)
		{
			CVKey	   *key = lfirst(kc);
			const char *kq = quote_identifier(key->colname);

			if (key == spec->key)
				continue;
			appendStringInfo(&buf, " AND a.%s IS NOT DISTINCT FROM g.%s", kq, kq);
		}
		appendStringInfoString(&buf, " RETURNING 1)");
	}
	appendStringInfoString(&buf, " SELECT pg_catalog.count(*) FROM gone");
	return buf.data;
}

static void ensure_job(void);

void
retention_record(Oid viewid, TtlSpec *spec, CVPlan *plan, Oid matrelid,
				 const char *matrel, const char *delta, List *auxids)
{
	/*
	 * The unique index leads with the first group key; TTL needs its own
	 * index when ttl_column is another one.  Keys never change, so updates
	 * of a group stay HOT either way.
	 */
	if (linitial(plan->keys) != spec->key)
		(void) se_create_index(matrelid, list_make1(spec->key->colname), NULL,
							   false, false);
	catalog_set_view_ttl(viewid, spec->ttl, spec->column,
						 ttl_sql(spec, plan, matrel, delta, auxids));
	ensure_job();
}

/* ---- stream_ext.set_retention(stream regclass, retention interval) ----- */

Datum
stream_ext_set_retention(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Interval   *retention = NULL;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("stream must not be null")));
	relid = PG_GETARG_OID(0);
	if (!catalog_is_stream(relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a stream",
						DatumGetCString(DirectFunctionCall1(regclassout,
															ObjectIdGetDatum(relid))))));
	if (!pg_class_ownercheck(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of stream \"%s\"", get_rel_name(relid))));
	if (!PG_ARGISNULL(1) && se_rel_discards_rows(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("stream \"%s\" does not retain rows", get_rel_name(relid)),
				 errdetail("It was created with retain => false: its rows are not stored, so there are none to expire."),
				 errhint("Only NULL (no retention) applies to it.")));
	if (!PG_ARGISNULL(1))
	{
		Interval   *zero = palloc0(sizeof(Interval));

		retention = PG_GETARG_INTERVAL_P(1);
		if (!DatumGetBool(DirectFunctionCall2(interval_gt, IntervalPGetDatum(retention),
											  IntervalPGetDatum(zero))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("retention must be a positive interval: \"%s\"",
							DatumGetCString(DirectFunctionCall1(interval_out,
																IntervalPGetDatum(retention)))),
					 errhint("Pass NULL to keep raw rows until TRUNCATE.")));
	}
	/* joins of two streams need their rows for the whole window (query/stream_joins.c) */
	sjoin_check_retention(relid, retention);
	catalog_set_stream_retention(relid, retention);
	if (retention != NULL)
		ensure_job();
	PG_RETURN_VOID();
}

/* ---- stream_ext.run_maintenance() -------------------------------------- */


/* a stream's retention, and whether all its rows expired: try TRUNCATE */
typedef struct StreamWork
{
	RetentionStream *stream;
	bool		emptied;
} StreamWork;

/* per-view tasks: see HousekeepingViewTask in retention.h */
typedef HousekeepingView ViewWork;
typedef HousekeepingViewTask ViewTask;

static bool
view_has_ttl(ViewWork *view)
{
	return view->ttl_sql != NULL;
}

static int64
view_task_ttl(ViewWork *view)
{
	Oid			argtypes[1] = {INTERVALOID};
	Datum		values[1];
	bool		isnull;
	int			rc;
	int64		removed;
	/* changes = true: expired groups are 'delete' changes (maintain/changes.c) */
	ChangesInfo *changes = changes_lookup(view->viewid, true, CurrentMemoryContext);

	if (changes)
		changes_begin_batch(changes);
	values[0] = view->ttl;
	rc = SPI_execute_with_args(view->ttl_sql, 1, argtypes, values, NULL, false, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "stream_ext: TTL statement failed: %s", SPI_result_code_string(rc));
	removed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (changes && removed > 0)
		changes_end_batch(changes);
	return removed;
}

/* expired buckets of a sliding window (the statement windows/windows.c records) */
static bool
view_has_window_expiry(ViewWork *view)
{
	return view->expire_sql != NULL;
}

static int64
view_task_window_expiry(ViewWork *view)
{
	return window_run_expiry(view->expire_sql);
}

static bool
view_is_session(ViewWork *view)
{
	return view->session;
}

/* session windows: fragments rewritten as one row per session (windows/sessions.c) */
static int64
view_task_compact_sessions(ViewWork *view)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1] = {ObjectIdGetDatum(view->viewid)};
	bool		isnull;
	int			rc = SPI_execute_with_args("SELECT stream_ext.compact_sessions($1)",
										   1, argtypes, values, NULL, false, 1);

	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "stream_ext: session compaction failed: %s", SPI_result_code_string(rc));
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

static const struct
{
	const char *name;
	bool		(*applies) (ViewWork *view);	/* cheap check, no subxact */
	ViewTask	fn;
}			view_tasks[] =
{
	{"ttl", view_has_ttl, view_task_ttl},
	{"window_expiry", view_has_window_expiry, view_task_window_expiry},
	{"session_compaction", view_is_session, view_task_compact_sessions},
};

/* a task that failed reports removed = NULL */
#define TASK_FAILED (-2)

typedef int64 (*ItemFn) (void *arg, void *arg2);

typedef struct ItemCall
{
	ItemFn		fn;
	void	   *arg;
	void	   *arg2;
	int64		result;
} ItemCall;

static void
call_item(void *arg)
{
	ItemCall   *call = arg;

	call->result = call->fn(call->arg, call->arg2);
}

/*
 * Run fn in a subtransaction: an error becomes a WARNING naming the object
 * and TASK_FAILED; the rest of maintenance goes on.
 */
static int64
run_item(const char *task, Oid relid, ItemFn fn, void *arg, void *arg2)
{
	ItemCall	call = {fn, arg, arg2, 0};
	ErrorData  *edata = se_try_in_subxact(call_item, &call, NULL, CurrentMemoryContext);

	if (edata == NULL)
		return call.result;
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("stream_ext maintenance (%s) of \"%s\" failed: %s",
					task, get_rel_name(relid) ? get_rel_name(relid) : "?",
					edata->message),
			 edata->detail ? errdetail("%s", edata->detail) : 0));
	FreeErrorData(edata);
	return TASK_FAILED;
}

/* one view task, as the view's owner (inside run_item's subtransaction) */
static int64
view_item(void *arg, void *arg2)
{
	ViewWork   *view = arg;
	ViewTask	fn = (ViewTask) arg2;
	SeRunAs		octx;
	int64		removed;

	SPI_connect();
	se_run_as_owner(&octx, view->owner, view->timezone);
	se_materialize_begin();
	PG_TRY();
	{
		removed = fn(view);
	}
	PG_FINALLY();
	{
		se_materialize_end();
	}
	PG_END_TRY();
	se_restore(&octx);
	SPI_finish();
	return removed;
}

/* delete a stream's expired raw rows, as the stream's owner */
static int64
stream_item(void *arg, void *arg2)
{
	StreamWork *work = arg;
	RetentionStream *stream = work->stream;
	Oid			argtypes[1] = {INTERVALOID};
	Datum		values[1] = {stream->retention};
	SeRunAs		octx;
	int			rc;
	uint64		deleted;

	SPI_connect();
	se_run_as_owner(&octx, stream->owner, NULL);
	stream_ext_deleting_raw_rows = true;
	PG_TRY();
	{
		rc = SPI_execute_with_args(psprintf("/* stream_ext retention */ DELETE FROM %s WHERE "
											STREAM_ARRIVAL_COLUMN " OPERATOR(pg_catalog.<)"
											" (pg_catalog.now() OPERATOR(pg_catalog.-) $1)",
											stream->qualname),
								   1, argtypes, values, NULL, false, 0);
		if (rc != SPI_OK_DELETE)
			elog(ERROR, "stream_ext: retention failed: %s", SPI_result_code_string(rc));
		deleted = SPI_processed;
		if (deleted > 0)
		{
			rc = SPI_execute(psprintf("SELECT 1 FROM %s LIMIT 1", stream->qualname), false, 1);
			work->emptied = (rc == SPI_OK_SELECT && SPI_processed == 0);
		}
	}
	PG_FINALLY();
	{
		stream_ext_deleting_raw_rows = false;
	}
	PG_END_TRY();
	se_restore(&octx);
	SPI_finish();
	return (int64) deleted;
}

/*
 * TRUNCATE a stream whose rows all expired, if no one holds a lock on it
 * right now.  Under the lock no insert is in progress; a fresh snapshot
 * sees every committed row, so TRUNCATE only drops what DELETE removed.
 */
static int64
truncate_item(void *arg, void *arg2)
{
	RetentionStream *stream = ((StreamWork *) arg)->stream;
	SeRunAs		octx;
	SPIPlanPtr	plan;
	int			rc;
	bool		truncated = false;

	if (!ConditionalLockRelationOid(stream->relid, AccessExclusiveLock))
		return 0;
	SPI_connect();
	se_run_as_owner(&octx, stream->owner, NULL);
	plan = SPI_prepare(psprintf("SELECT 1 FROM %s LIMIT 1", stream->qualname), 0, NULL);
	if (plan == NULL)
		elog(ERROR, "stream_ext: could not prepare: %s", SPI_result_code_string(SPI_result));
	rc = SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(),
							  InvalidSnapshot, false, false, 1);
	if (rc == SPI_OK_SELECT && SPI_processed == 0)
	{
		rc = SPI_execute(psprintf("TRUNCATE %s", stream->qualname), false, 0);
		if (rc != SPI_OK_UTILITY)
			elog(ERROR, "stream_ext: TRUNCATE failed: %s", SPI_result_code_string(rc));
		truncated = true;
	}
	se_restore(&octx);
	SPI_finish();
	/* rows came in meanwhile: nothing was changed under the lock */
	if (!truncated)
		UnlockRelationOid(stream->relid, AccessExclusiveLock);
	return truncated ? 1 : 0;
}

static void
report(ReturnSetInfo *rsinfo, const char *task, Oid relid, int64 removed)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = CStringGetTextDatum(task);
	values[1] = ObjectIdGetDatum(relid);
	values[2] = Int64GetDatum(removed);
	nulls[2] = (removed == TASK_FAILED);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * stream_ext.run_maintenance() RETURNS TABLE (task text, object regclass,
 * removed bigint)
 */
Datum
stream_ext_run_maintenance(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *views = NIL;
	List	   *streams = NIL;
	Oid			me = GetUserId();
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);

	/* what is there to do, and for whom */
	foreach(lc, catalog_housekeeping_views(InvalidOid))
	{
		ViewWork   *w = lfirst(lc);

		if (has_privs_of_role(me, w->owner))
			views = lappend(views, w);
	}
	foreach(lc, catalog_streams_with_retention())
	{
		RetentionStream *stream = lfirst(lc);
		StreamWork *w;

		if (!has_privs_of_role(me, stream->owner))
			continue;
		w = palloc0(sizeof(StreamWork));
		w->stream = stream;
		streams = lappend(streams, w);
	}

	/* views first: their deletes hold no lock that inserts wait for */
	foreach(lc, views)
	{
		ViewWork   *w = lfirst(lc);

		for (int t = 0; t < lengthof(view_tasks); t++)
		{
			int64		removed;

			if (!view_tasks[t].applies(w))
				continue;
			removed = run_item(view_tasks[t].name, w->viewid, view_item,
										   w, (void *) view_tasks[t].fn);

			if (removed != -1)
				report(rsinfo, view_tasks[t].name, w->viewid, removed);
		}
		CHECK_FOR_INTERRUPTS();
	}
	foreach(lc, streams)
	{
		StreamWork *w = lfirst(lc);

		report(rsinfo, "retention", w->stream->relid,
			   run_item("retention", w->stream->relid, stream_item, w, NULL));
		CHECK_FOR_INTERRUPTS();
	}
	/*
	 * Last, so that the AccessExclusiveLocks are held only until commit --
	 * and only when the commit follows this statement: inside a transaction
	 * block the caller may go on for long, and inserts would wait.
	 */
	foreach(lc, streams)
	{
		StreamWork *w = lfirst(lc);

		if (w->emptied && !IsTransactionBlock() &&
			run_item("truncate", w->stream->relid, truncate_item, w, NULL) == 1)
			report(rsinfo, "truncate", w->stream->relid, 0);
	}
	return (Datum) 0;
}

/* ---- the pg_cron job ---------------------------------------------------- */

static bool
pg_cron_present(void)
{
	return OidIsValid(get_namespace_oid("cron", true));
}

/*
 * Say that maintenance is not scheduled, and how to schedule it.  pg_cron
 * lives in one database (cron.database_name, a GUC that exists when it is
 * preloaded) and CREATE EXTENSION pg_cron fails in any other, so there the
 * one thing to do is to schedule this database's job from that database
 * with cron.schedule_in_database(): the NOTICE is that statement.
 */
static void
notice_unscheduled(void)
{
	const char *crondb = GetConfigOption("cron.database_name", true, false);
	char	   *dbname = get_database_name(MyDatabaseId);

	if (crondb != NULL && dbname != NULL && strcmp(crondb, dbname) != 0)
	{
		char	   *job = psprintf("%s_%s", MAINTENANCE_JOB, dbname);

		ereport(NOTICE,
				(errmsg("stream_ext maintenance (TTL, retention) is not scheduled: pg_cron runs in database %s; there, run SELECT cron.schedule_in_database(%s, %s, %s, %s)",
						quote_identifier(crondb), quote_literal_cstr(job),
						quote_literal_cstr(maintenance_schedule),
						quote_literal_cstr(MAINTENANCE_COMMAND),
						quote_literal_cstr(dbname))));
		return;
	}
	ereport(NOTICE,
			(errmsg("pg_cron is not installed in this database: stream_ext maintenance (TTL, retention) is not scheduled"),
			 errhint("Call SELECT stream_ext.run_maintenance() periodically from any scheduler, or install pg_cron and call SELECT stream_ext.schedule_maintenance().")));
}

/*
 * Schedule the maintenance job in this database if pg_cron is here: as the
 * extension's owner, so that it maintains everything.  replace: also when
 * a job exists (takes the current schedule).  Without pg_cron, a NOTICE if
 * asked.  Returns the job id or 0.
 */
static int64
schedule_job_id(bool replace, bool notice)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];
	SeRunAs		runas;
	int64		jobid = 0;
	bool		isnull;
	int			rc;

	if (!pg_cron_present())
	{
		if (notice)
			notice_unscheduled();
		return 0;
	}
	values[0] = CStringGetTextDatum(MAINTENANCE_JOB);
	values[1] = CStringGetTextDatum(maintenance_schedule);
	values[2] = CStringGetTextDatum(MAINTENANCE_COMMAND);
	se_run_as_catalog_owner(&runas);
	SPI_connect();
	if (!replace)
	{
		rc = SPI_execute_with_args("SELECT jobid FROM cron.job WHERE jobname OPERATOR(pg_catalog.=) $1"
								   " AND database OPERATOR(pg_catalog.=) pg_catalog.current_database()",
								   1, argtypes, values, NULL, true, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "stream_ext: could not read cron.job: %s", SPI_result_code_string(rc));
		if (SPI_processed == 1)
			jobid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	if (jobid == 0)
	{
		rc = SPI_execute_with_args("SELECT cron.schedule($1, $2, $3)",
								   3, argtypes, values, NULL, false, 1);
		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "stream_ext: cron.schedule failed: %s", SPI_result_code_string(rc));
		jobid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();
	se_restore(&runas);
	return jobid;
}

/*
 * Schedule the job if there is none, on behalf of a statement that only
 * makes it necessary (CREATE EXTENSION, a ttl, set_retention()): if pg_cron
 * refuses (say, a bad stream_ext.maintenance_schedule), that statement
 * still succeeds, with a WARNING.
 */
static void
schedule_job_in_subxact(void *arg)
{
	(void) schedule_job_id(false, true);
}

static void
ensure_job(void)
{
	ErrorData  *edata;

	if (!pg_cron_present())
	{
		(void) schedule_job_id(false, true);	/* the NOTICE */
		return;
	}
	edata = se_try_in_subxact(schedule_job_in_subxact, NULL, NULL, CurrentMemoryContext);
	if (edata == NULL)
		return;
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("could not schedule the pg_cron job " MAINTENANCE_JOB ": %s",
					edata->message),
			 errhint("Fix the cause and call SELECT stream_ext.schedule_maintenance(), or call SELECT stream_ext.run_maintenance() from another scheduler.")));
	FreeErrorData(edata);
}

/* unschedule this database's job; returns whether there was one */
static bool
unschedule_job(void)
{
	int			rc;
	bool		found;

	if (!pg_cron_present())
		return false;
	SPI_connect();
	rc = SPI_execute("SELECT cron.unschedule(jobid) FROM cron.job"
					 " WHERE jobname OPERATOR(pg_catalog.=) '" MAINTENANCE_JOB "'"
					 " AND database OPERATOR(pg_catalog.=) pg_catalog.current_database()",
					 false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext: cron.unschedule failed: %s", SPI_result_code_string(rc));
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

/* stream_ext.schedule_maintenance() RETURNS bigint: the job id, or NULL */
Datum
stream_ext_schedule_maintenance(PG_FUNCTION_ARGS)
{
	int64		jobid = schedule_job_id(true, true);

	if (jobid == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(jobid);
}

/* stream_ext.unschedule_maintenance() RETURNS boolean */
Datum
stream_ext_unschedule_maintenance(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(unschedule_job());
}

/* DROP EXTENSION stream_ext takes its job along */
static bool
drops_stream_ext(Node *parsetree)
{
	DropStmt   *stmt;
	ListCell   *lc;

	if (!IsA(parsetree, DropStmt))
		return false;
	stmt = (DropStmt *) parsetree;
	if (stmt->removeType != OBJECT_EXTENSION)
		return false;
	foreach(lc, stmt->objects)
	{
		if (IsA(lfirst(lc), String) && strcmp(strVal(lfirst(lc)), "stream_ext") == 0)
			return true;
	}
	return false;
}

/*
 * Called by the utility hook (ddl/utility.c) before a utility statement runs:
 * DROP EXTENSION stream_ext unschedules the job now; returns true when the
 * statement creates or updates the extension, and retention_utility_after()
 * must then schedule the job once it has run.
 *
 * Scheduling follows CREATE EXTENSION and ALTER EXTENSION UPDATE rather than
 * living in the scripts: a script runs with client_min_messages raised to
 * WARNING, which would hide the NOTICE.
 */
bool
retention_utility_before(Node *parsetree)
{
	if (drops_stream_ext(parsetree) && stream_ext_installed())
		(void) unschedule_job();

	return (IsA(parsetree, CreateExtensionStmt) &&
			strcmp(((CreateExtensionStmt *) parsetree)->extname, "stream_ext") == 0 &&
			!OidIsValid(get_extension_oid("stream_ext", true))) ||
		(IsA(parsetree, AlterExtensionStmt) &&
		 strcmp(((AlterExtensionStmt *) parsetree)->extname, "stream_ext") == 0);
}

/* after CREATE or ALTER EXTENSION stream_ext: schedule the job */
void
retention_utility_after(void)
{
	if (stream_ext_installed())
		ensure_job();
}

void
retention_init(void)
{
	DefineCustomStringVariable("stream_ext.maintenance_schedule",
							   "pg_cron schedule of the stream_ext_maintenance job.",
							   "Used when the job is scheduled (CREATE EXTENSION, the first ttl or retention, stream_ext.schedule_maintenance()).",
							   &maintenance_schedule,
							   "* * * * *",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);
}
