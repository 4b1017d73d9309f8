/*-------------------------------------------------------------------------
 *
 * stream_joins.c
 *	  Joins of two streams within a time window, in continuous views and
 *	  transforms:
 *
 *		FROM a JOIN b ON a.k = b.k
 *		 AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
 *
 *	  Both streams keep their raw rows (retention), so a batch of either
 *	  side is joined with the rows the other side holds: the view's delta
 *	  (or materialization) gets the partial aggregation of (new a JOIN
 *	  retained b) for a batch of a, of (retained a JOIN new b) for a batch
 *	  of b.  Every pair is counted once, by the batch of whichever of its two
 *	  rows comes second.
 *
 *	  The catalog row of the view (or transform) is that of a view over a,
 *	  with b read like a joined table: its statement is the one of a batch
 *	  of a, run by a's trigger.  stream_ext.stream_joins keeps b and the
 *	  statements of a batch of b, made by the same code generator with b's
 *	  range-table entry read from the transition table and a from the stream
 *	  (joins_set_batch_rti()).  A view's two sides are units of the views
 *	  triggers of a and of b (sjoin_view_units(), called by
 *	  maintain/maintain.c); a transform has the trigger stream_ext.transform()
 *	  on both streams (ddl/create_transform.c makes the second one;
 *	  maintain/transform.c asks sjoin_transform_select()).
 *
 *	  Concurrency.  Two transactions, one inserting a row of a, the other a
 *	  matching row of b, must not both miss the pair (each joining its new
 *	  row with what the other side held in its snapshot) nor both count it.
 *	  So a batch of a side takes the join's lock, held until commit:
 *	  RowExclusiveLock for a batch of a, ShareLock for one of b, on a lock
 *	  object of the view (LockDatabaseObject(pg_class, view, SJOIN_LOCK)):
 *	  batches of the same stream run concurrently, a batch of a waits for
 *	  every transaction that maintained a batch of b and has not ended, and
 *	  conversely.  Its statements then run with a snapshot taken after the
 *	  lock (GetLatestSnapshot(), at any isolation level): every row of the
 *	  other side whose batch was maintained before is committed and visible
 *	  (or rolled back), and a row of the other side not yet maintained will
 *	  see this batch's rows when its own batch takes the lock after we
 *	  commit.  Rows of both sides inserted by one transaction see each other
 *	  in the later statement.  A transaction that writes both streams in
 *	  several statements while others do the same may deadlock (40P01,
 *	  retried by the client like a serialization failure).
 *
 *	  Retention.  A row finds its partners only while the other stream holds
 *	  them: at CREATE both streams must retain rows at least as long as the
 *	  join's window (the largest distance in time the ON clause allows);
 *	  streams created with retain => false are refused.
 *
 *	  What is refused (0A000), by query/sjoin_window.c, which also finds the
 *	  window: a stream joined to itself, outer joins of the two streams but
 *	  FROM a LEFT JOIN b (query/sjoin_left.c: rows without a match are
 *	  emitted when their window closes), more than two streams, joins
 *	  without a bounded time window.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "maintain/compact.h"
#include "maintain/privileges.h"
#include "maintain/trigger.h"
#include "query/joins.h"
#include "query/sjoin_left.h"
#include "query/sjoin_window.h"
#include "query/stream_joins.h"
#include "windows/windows.h"

/* ---- CREATE ------------------------------------------------------------- */

/*
 * Both streams keep their rows at least the window, plus allowed_lateness
 * for a LEFT JOIN (NULL retention: always)
 */
static void
check_retention(Oid left, Oid right, Interval *window, Interval *lateness)
{
	List	   *streams = catalog_streams_with_retention();
	ListCell   *lc;

	foreach(lc, streams)
	{
		RetentionStream *s = lfirst(lc);
		Interval   *retention = DatumGetIntervalP(s->retention);

		Interval   *need = window;

		if (s->relid != left && s->relid != right)
			continue;
		if (lateness)
			need = DatumGetIntervalP(DirectFunctionCall2(interval_pl, IntervalPGetDatum(window),
														 IntervalPGetDatum(lateness)));
		if (sjoin_interval_less(retention, need))
		{
			char	   *w = DatumGetCString(DirectFunctionCall1(interval_out,
																IntervalPGetDatum(need)));
			char	   *r = DatumGetCString(DirectFunctionCall1(interval_out, s->retention));

			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 lateness ?
					 errmsg("stream \"%s\" retains its rows for %s, less than the LEFT JOIN's window plus allowed_lateness, %s",
							get_rel_name(s->relid), r, w) :
					 errmsg("stream \"%s\" retains its rows for %s, less than the join's window of %s",
							get_rel_name(s->relid), r, w),
					 lateness ?
					 errdetail("A row of the first stream is NULL-extended when its window closes, allowed_lateness after the window: both streams' rows must be kept that long.") :
					 errdetail("A batch of one stream is joined with the rows the other still holds: rows must be kept at least as long as the window."),
					 errhint("Raise it with SELECT stream_ext.set_retention('%s', '%s'), or narrow the window.",
							 s->qualname, w)));
		}
	}
}

void
sjoin_check_retention(Oid streamid, Interval *retention)
{
	ListCell   *lc;

	if (retention == NULL)
		return;
	foreach(lc, catalog_stream_joins(streamid, InvalidOid, CurrentMemoryContext))
	{
		StreamJoinEntry *sj = lfirst(lc);

		if (sjoin_interval_less(retention, &sj->retain))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("a retention of %s is shorter than the %s of %s of continuous %s \"%s\"",
							DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(retention))),
							sj->left ? "window plus allowed_lateness" : "window",
							DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(&sj->retain))),
							sj->transform ? "transform" : "view", get_rel_name(sj->object)),
					 sj->left ?
					 errdetail("It joins stream \"%s\" with another stream in a LEFT JOIN: a row of the first is NULL-extended when its window closes, allowed_lateness after the window.",
							   get_rel_name(streamid)) :
					 errdetail("It joins stream \"%s\" with another stream: a batch of either must find the other's rows of the whole window.",
							   get_rel_name(streamid)),
					 errhint("Keep a retention of at least the window, or drop the join first.")));
	}
}

/*
 * What CREATE does for any join of two streams (lateness: a LEFT JOIN's,
 * else NULL); returns the window
 */
static Interval *
create_common(Query *q, Oid *left, Oid *right, Interval *lateness)
{
	Interval   *window = sjoin_window(q);

	*left = rt_fetch(1, q->rtable)->relid;
	*right = sjoin_right_stream(q);
	Assert(window != NULL);
	check_retention(*left, *right, window, lateness);

	/*
	 * Writers of the second stream wait until we commit, as those of the
	 * first do (ddl/create_steps.c): rows committed before are backfilled,
	 * rows inserted after see the new trigger.
	 */
	LockRelationOid(*right, ShareRowExclusiveLock);
	return window;
}

void
sjoin_create_view(CVPlan *plan, Oid viewid, const char *mq, const char *dq,
				  List *auxrels, Interval *lateness)
{
	Oid			left;
	Oid			right;
	SJoinUpperBound ub;
	Interval	zero = {0};
	bool		is_left = sjoin_left_bound(plan->query, &ub);
	Interval   *window = create_common(plan->query, &left, &right,
									   is_left ? (lateness ? lateness : &zero) : NULL);
	/* a LEFT JOIN: a batch of b makes pairs only (query/sjoin_left.c) */
	List	   *sql = sjoin_batch_statements(plan, sjoin_right_rti(plan->query),
											 is_left ? sjoin_left_qual(plan->query, &ub, SJOIN_QUAL_PAIRS) :
											 plan->extra_batch_qual,
											 mq, dq, auxrels);

	catalog_insert_stream_join(viewid, left, right, window, linitial(sql),
							   list_copy_tail(sql, 1));
	if (is_left)
		sjoin_left_create(plan, viewid, mq, dq, auxrels, &ub, lateness);
}

void
sjoin_create_transform(Query *q, Oid viewid, const char *right_select)
{
	Oid			left;
	Oid			right;
	Interval   *window = create_common(q, &left, &right, NULL);

	catalog_insert_stream_join(viewid, left, right, window, right_select, NIL);
}

/* ---- batches ------------------------------------------------------------ */

/*
 * Take the join's lock for a batch of one side (see the header comment)
 * and run the entry's plans with a snapshot taken after it.
 */
uint64
sjoin_run_plans(SeBatchEntry *entry, TriggerData *trigdata)
{
	uint64		written = 0;
	ListCell   *lc;

	Assert(entry->sjoin_side != SJOIN_NONE);
	LockDatabaseObject(RelationRelationId, entry->objid, SJOIN_LOCK,
					   entry->sjoin_side == SJOIN_LEFT ? RowExclusiveLock : ShareLock);
	foreach(lc, se_batch_plans(entry, trigdata))
	{
		int			rc = SPI_execute_snapshot(lfirst(lc), NULL, NULL, GetLatestSnapshot(),
											  InvalidSnapshot, false, true, 0);

		if (rc != SPI_OK_INSERT)
			elog(ERROR, "stream_ext: maintenance of a stream join failed: %s",
				 SPI_result_code_string(rc));
		if (foreach_current_index(lc) == 0)
			written = SPI_processed;
	}
	return written;
}

/* a view's side of a join: a unit of a views trigger */
typedef struct SJoinUnit
{
	ViewCatalogEntry cat;
	char	   *sql;			/* this side's maintenance statement */
	List	   *distinct_sql;	/* ... and one per count(DISTINCT) */
	Oid			other;			/* the other stream */
	TimestampTz next_expiry;	/* windows/windows.c */
	LeftJoinEntry *left;		/* a LEFT JOIN (query/sjoin_left.c), or NULL */
} SJoinUnit;

/* row-level security must not apply to the owner on either stream */
static void
check_owner_rls(Oid streamid, SJoinUnit *u)
{
	if (check_enable_rls(streamid, u->cat.owner, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot maintain continuous view \"%s\": row-level security of stream \"%s\" applies to its owner %s",
						get_rel_name(u->cat.viewid), get_rel_name(streamid),
						GetUserNameFromId(u->cat.owner, false)),
				 errdetail("A continuous view aggregates every row of its streams; it would show rows its owner cannot read."),
				 errhint("Give the view to the streams' owner or to a role with BYPASSRLS, or drop it.")));
}

static bool
unit_admit(SeBatchEntry *entry, TriggerData *trigdata)
{
	SJoinUnit  *u = entry->kind;

	if (priv_invalid_reason(u->cat.viewid) != NULL)
		return false;
	check_owner_rls(entry->streamid, u);
	check_owner_rls(u->other, u);
	return true;
}

static void
unit_prepare(SeBatchEntry *entry)
{
	SJoinUnit  *u = entry->kind;
	ListCell   *lc;

	if (u->left)
	{
		sjoin_left_prepare_plans(entry, u->sql, u->distinct_sql, u->left);
		return;
	}
	(void) se_batch_prepare(entry, u->sql, 0, NULL);
	foreach(lc, u->distinct_sql)
		(void) se_batch_prepare(entry, (char *) lfirst(lc), 0, NULL);
}

static uint64
unit_run(SeBatchEntry *entry, TriggerData *trigdata)
{
	SJoinUnit  *u = entry->kind;
	uint64		groups = u->left ?
		sjoin_left_run(entry, trigdata, list_length(u->distinct_sql), u->left) :
		sjoin_run_plans(entry, trigdata);

	compact_after_batch(&u->cat);
	window_expire_opportunistic(&u->cat, &u->next_expiry);
	return groups;
}

static void
unit_load(SeBatchEntry *entry, TriggerData *trigdata)
{
	elog(ERROR, "stream_ext: a stream join is maintained by its streams' views trigger");
}

static const SeBatchOps sjoin_view_ops = {
	.name = "stream_ext.maintain_views()",
	.argument = NULL,
	.load = unit_load,
	.admit = unit_admit,
	.prepare = unit_prepare,
	.run = unit_run,
	.materialize = true,
	/* plan_rows: the views trigger registers the batch for its units */
	.invalid_kind = "continuous view",
};

List *
sjoin_view_units(SeBatchEntry *parent, Oid streamid, List **own)
{
	List	   *units = NIL;
	ListCell   *lc;
	MemoryContext old;

	foreach(lc, catalog_stream_joins(streamid, InvalidOid, parent->cxt))
	{
		StreamJoinEntry *sj = lfirst(lc);
		SeBatchEntry *unit;
		SJoinUnit  *u;
		bool		left = (sj->left_stream == streamid);

		if (sj->transform)
			continue;
		old = MemoryContextSwitchTo(parent->cxt);
		unit = palloc0(sizeof(SeBatchEntry));
		unit->ops = &sjoin_view_ops;
		unit->valid = true;
		unit->cxt = AllocSetContextCreate(parent->cxt, "stream_ext stream join unit",
										  ALLOCSET_SMALL_SIZES);
		u = palloc0(sizeof(SJoinUnit));
		MemoryContextSwitchTo(old);
		catalog_read_latest_begin();
		if (!catalog_lookup_view(sj->object, &u->cat, parent->cxt))
		{
			catalog_read_latest_end();
			continue;
		}
		catalog_read_latest_end();
		old = MemoryContextSwitchTo(parent->cxt);
		if (left)
			*own = lappend_oid(*own, u->cat.matrelid);
		parent->more_relids = lappend_oid(lappend_oid(parent->more_relids, u->cat.viewid),
										  u->cat.matrelid);
		u->sql = left ? u->cat.maintain_sql : sj->right_sql;
		u->distinct_sql = left ? u->cat.distinct_sql : sj->right_distinct_sql;
		u->other = left ? sj->right_stream : sj->left_stream;
		if (sj->left)
		{
			u->left = palloc0(sizeof(LeftJoinEntry));
			if (!catalog_left_join(sj->object, u->left, parent->cxt))
				elog(ERROR, "stream_ext: LEFT JOIN %u has no row in stream_ext.stream_left_joins",
					 sj->object);
		}
		unit->kind = u;
		unit->sjoin_side = left ? SJOIN_LEFT : SJOIN_RIGHT;
		unit->objid = u->cat.viewid;
		unit->streamid = streamid;
		unit->relids[0] = u->cat.matrelid;
		unit->relids[1] = streamid;
		unit->relids[2] = u->cat.viewid;
		unit->owner = u->cat.owner;
		unit->timezone = u->cat.timezone;
		unit->notify = u->cat.notify;
		unit->arrival_attnum = get_attnum(streamid, STREAM_ARRIVAL_COLUMN);
		if (unit->arrival_attnum != InvalidAttrNumber &&
			get_atttype(streamid, unit->arrival_attnum) != TIMESTAMPTZOID)
			unit->arrival_attnum = InvalidAttrNumber;	/* stats: see trigger.c */
		unit->error_context =
			psprintf("maintenance of continuous view %s for a batch of %s, its %s stream"
					 " (statements in stream_ext.%s)",
					 se_qualified_relname(u->cat.viewid), se_qualified_relname(streamid),
					 left ? "first" : "second", left ? "view_catalog" : "stream_joins");
		units = lappend(units, unit);
		MemoryContextSwitchTo(old);
	}
	return units;
}

char *
sjoin_transform_select(SeBatchEntry *entry, Oid transform, Oid relid, LeftJoinEntry **left)
{
	List	   *joins = catalog_stream_joins(InvalidOid, transform, entry->cxt);
	StreamJoinEntry *sj;
	MemoryContext old;

	*left = NULL;
	if (joins == NIL)
		return NULL;
	sj = linitial(joins);
	/* a LEFT JOIN (query/sjoin_left.c): its closing statements too */
	if (sj->left && (relid == sj->left_stream || relid == sj->right_stream))
	{
		*left = MemoryContextAllocZero(entry->cxt, sizeof(LeftJoinEntry));
		if (!catalog_left_join(transform, *left, entry->cxt))
			elog(ERROR, "stream_ext: LEFT JOIN %u has no row in stream_ext.stream_left_joins",
				 transform);
	}
	if (relid == sj->left_stream)
	{
		entry->sjoin_side = SJOIN_LEFT;
		return NULL;
	}
	if (relid != sj->right_stream)
		return NULL;
	entry->sjoin_side = SJOIN_RIGHT;
	entry->streamid = relid;
	old = MemoryContextSwitchTo(entry->cxt);
	entry->more_relids = lappend_oid(entry->more_relids, sj->left_stream);
	MemoryContextSwitchTo(old);
	return sj->right_sql;
}
