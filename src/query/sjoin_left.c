/*-------------------------------------------------------------------------
 *
 * sjoin_left.c
 *	  LEFT JOIN of two streams in a continuous view or transform
 *	  (docs/joins.md):
 *
 *		FROM a LEFT JOIN b ON a.k = b.k
 *		 AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
 *
 *	  The pairs are maintained as for an inner join (query/stream_joins.c):
 *	  each by the batch of whichever of its rows comes second.  A row of a
 *	  without a match is NULL-extended only once its window has closed: when
 *	  the join's watermark W -- the newest b.ts seen minus the view's
 *	  allowed_lateness, kept in stream_ext.stream_left_joins -- has passed
 *	  a.ts + y (y the window's upper bound; rows with a NULL time close at
 *	  once).  A row's result is final when it closes: its pairs, or its NULL
 *	  row.  So a batch of b that would pair a closed row of a (only a b row
 *	  older than W can) refuses the pair -- not the row, which still pairs
 *	  the open rows of a -- and counts it in late_pairs.
 *
 *	  Per batch, under the join's lock (stream_joins.c), with the latest
 *	  snapshot:
 *	    a batch of a (RowExclusiveLock, concurrent with other batches of a):
 *	      W read; the statement joins the new rows with b's, keeping every
 *	      pair and the NULL rows of new rows already closed at W
 *	      (plan->extra_batch_qual, W as $1);
 *	    a batch of b (ShareRowExclusiveLock: one at a time, and not with
 *	      batches of a):
 *	      1. W_old read; the pairs of the new b rows with the rows of a
 *	         still open at W_old;
 *	      2. the batch's newest and oldest b.ts; if the oldest is below
 *	         W_old, the refused pairs are counted;
 *	      3. max_time raised (W_new), late_pairs added, in the batch's
 *	         transaction;
 *	      4. the NULL rows of the rows of a with a.ts + y in [W_old, W_new)
 *	         that match no row of b (an anti-join over both streams' rows).
 *	  Step 4 is exact: every row of b matching such a row arrived while it
 *	  was open, so it was paired; and no pair of it is counted later.  Each
 *	  row of a closes once: in the batch of b moving W past it, or, if W
 *	  had passed it already when it arrived, in its own batch -- the lock
 *	  orders the two.  A rolled-back batch takes its pairs, NULL rows and
 *	  watermark with it.
 *
 *	  A transform (ddl/create_transform.c) has the same statements over its
 *	  SELECT: its NULL rows are output rows; allowed_lateness is 0.
 *
 *	  Rows of a must be retained until they close: retention deletes rows
 *	  by arrival, so a stalled b (W not advancing) lets rows of a go before
 *	  their window closes, without a NULL row (docs/joins.md says so; keep
 *	  the retention above the window plus allowed_lateness plus how long b
 *	  may stall).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "core/util.h"
#include "query/joins.h"
#include "query/sjoin_left.h"

/* the SQL of a's row's end of window and of b's time, over s and t<rti> */
typedef struct LeftTerms
{
	char	   *a_time;			/* s.ts */
	char	   *end;			/* (s.ts + y) */
	char	   *b_time;			/* t2.ts: NULL in a NULL-extended row */
} LeftTerms;

static void
left_terms(Query *q, SJoinUpperBound *ub, LeftTerms *t)
{
	Index		rti = sjoin_right_rti(q);
	Oid			left = rt_fetch(1, q->rtable)->relid;
	Oid			right = rt_fetch(rti, q->rtable)->relid;

	t->a_time = psprintf("s.%s", quote_identifier(get_attname(left, ub->left_attno, false)));
	t->end = psprintf("(%s + %s)", t->a_time, interval_sql_literal(&ub->upper));
	t->b_time = psprintf("t%u.%s", rti,
						 quote_identifier(get_attname(right, ub->right_attno, false)));
}

#define OLD_WATERMARK "COALESCE($1, '-infinity'::pg_catalog.timestamptz)"

char *
sjoin_left_qual(Query *q, SJoinUpperBound *ub, SJoinLeftQual which)
{
	LeftTerms	t;

	left_terms(q, ub, &t);
	switch (which)
	{
		case SJOIN_QUAL_FIRST:
			/* every pair, and the NULL rows of new rows closed already */
			return psprintf("(%s IS NOT NULL OR %s IS NULL OR %s < $1)",
							t.b_time, t.a_time, t.end);
		case SJOIN_QUAL_PAIRS:
			/* pairs only (the planner makes the LEFT JOIN an inner one), of open rows */
			return psprintf("(%s IS NOT NULL AND %s >= " OLD_WATERMARK ")", t.b_time, t.end);
		case SJOIN_QUAL_CLOSE:
			/* the NULL rows of the rows closed by W moving from $1 to $2 */
			return psprintf("(%s IS NULL AND %s >= " OLD_WATERMARK " AND %s < $2)",
							t.b_time, t.end, t.end);
	}
	return NULL;
}

/* the watermark of LEFT JOIN object, as SQL (backfills) */
static char *
watermark_sql(Oid object)
{
	return psprintf("(SELECT w.max_time - w.allowed_lateness FROM stream_ext.stream_left_joins w"
					" WHERE w.object OPERATOR(pg_catalog.=) %u::pg_catalog.oid)", object);
}

char *
sjoin_left_backfill_qual(Query *q, SJoinUpperBound *ub, Oid object)
{
	LeftTerms	t;

	left_terms(q, ub, &t);
	return psprintf("(%s IS NOT NULL OR %s IS NULL OR %s < %s)",
					t.b_time, t.a_time, t.end, watermark_sql(object));
}

void
sjoin_left_prepare(CVPlan *plan, LatenessSpec *lateness)
{
	SJoinUpperBound ub;

	if (!sjoin_left_bound(plan->query, &ub))
		return;
	if (lateness->emit_on_close)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("emit is not supported for a LEFT JOIN of two streams"),
				 errdetail("A LEFT JOIN of two streams emits each row's NULL-extended row into the view when its window closes."),
				 errhint("Drop emit and output_stream; allowed_lateness is supported.")));
	/* the join's own watermark, not the lateness module's */
	lateness->enabled = false;
	plan->extra_batch_qual = sjoin_left_qual(plan->query, &ub, SJOIN_QUAL_FIRST);
}

List *
sjoin_batch_statements(CVPlan *plan, Index batch_rti, const char *qual, const char *mq,
					   const char *dq, List *auxrels)
{
	const char *saved = plan->extra_batch_qual;
	Index		old = joins_set_batch_rti(batch_rti);
	List	   *result = NIL;

	PG_TRY();
	{
		ListCell   *lc;
		ListCell   *la = list_head(auxrels);

		plan->extra_batch_qual = qual;
		result = lappend(result, dq ? cv_maintain_append_sql(plan, dq, CV_NEW_ROWS) :
						 cv_maintain_sql(plan, mq, CV_NEW_ROWS));
		foreach(lc, plan->aggs)
		{
			CVAgg	   *agg = lfirst(lc);

			if (!agg->is_distinct)
				continue;
			result = lappend(result,
							 cv_distinct_sql(plan, agg, mq, se_qualified_relname(lfirst_oid(la)),
											 CV_NEW_ROWS, dq));
			la = lnext(auxrels, la);
		}
	}
	PG_FINALLY();
	{
		joins_set_batch_rti(old);
		plan->extra_batch_qual = saved;
	}
	PG_END_TRY();
	return result;
}

/*
 * The statements of a LEFT JOIN that are not the maintenance of a batch:
 * its refused pairs and its time, and its row in stream_left_joins with
 * the watermark of the rows the second stream holds now (locked by
 * create_common()) and the closing statements close.
 */
static void
record_left(Query *q, Oid object, SJoinUpperBound *ub, Interval *lateness, List *close)
{
	Index		rti = sjoin_right_rti(q);
	Oid			right = rt_fetch(rti, q->rtable)->relid;
	const char *bcol = quote_identifier(get_attname(right, ub->right_attno, false));
	Interval	zero = {0};
	LeftTerms	t;
	char	   *late_sql;
	char	   *max_sql;
	Index		old;
	Node	   *where = q->jointree->quals;
	List	   *ctx = joins_deparse_context(q, rt_fetch(1, q->rtable)->relid);
	Datum		max_time = (Datum) 0;
	bool		max_isnull = true;
	SPIPlanPtr	p;

	if (lateness == NULL)
		lateness = &zero;
	left_terms(q, ub, &t);

	/* the pairs of a batch of b that a closed row of a refuses */
	old = joins_set_batch_rti(rti);
	PG_TRY();
	{
		late_sql = psprintf("SELECT pg_catalog.count(*) FROM %s WHERE %s%s%s IS NOT NULL AND %s < $1",
							joins_from_sql(q, ctx, CV_NEW_ROWS),
							where ? "(" : "",
							where ? psprintf("%s) AND ", deparse_expression(where, ctx, true, false)) : "",
							t.b_time, t.end);
	}
	PG_FINALLY();
	{
		joins_set_batch_rti(old);
	}
	PG_END_TRY();
	max_sql = psprintf("SELECT pg_catalog.max(%s), pg_catalog.min(%s) FROM " CV_NEW_ROWS,
					   bcol, bcol);

	p = SPI_prepare(psprintf("SELECT pg_catalog.max(%s) FROM %s", bcol,
							 se_qualified_relname(right)), 0, NULL);
	if (p == NULL ||
		SPI_execute_snapshot(p, NULL, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "stream_ext: could not read the second stream's newest time");
	max_time = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &max_isnull);
	SPI_freeplan(p);

	catalog_insert_left_join(object, lateness, linitial(close), list_copy_tail(close, 1),
							 late_sql, max_sql, max_time, max_isnull);
}

void
sjoin_left_create(CVPlan *plan, Oid viewid, const char *mq, const char *dq,
				  List *auxrels, SJoinUpperBound *ub, Interval *lateness)
{
	record_left(plan->query, viewid, ub, lateness,
				sjoin_batch_statements(plan, 0, sjoin_left_qual(plan->query, ub, SJOIN_QUAL_CLOSE),
									   mq, dq, auxrels));
}

void
sjoin_left_create_transform(Query *q, Oid object, SJoinUpperBound *ub, const char *close_select)
{
	record_left(q, object, ub, NULL, list_make1((char *) close_select));
}

List *
sjoin_left_backfill_sql(CVPlan *plan, Oid viewid, const char *mq, List *auxrels)
{
	SJoinUpperBound ub;

	if (!sjoin_left_bound(plan->query, &ub))
		return NIL;
	return sjoin_batch_statements(plan, 0, sjoin_left_backfill_qual(plan->query, &ub, viewid),
								  mq, NULL, auxrels);
}

/* ---- batches ------------------------------------------------------------ */

void
sjoin_left_prepare_plans(SeBatchEntry *entry, const char *sql, List *distinct_sql,
						 LeftJoinEntry *left)
{
	Oid			types[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	ListCell   *lc;

	/* both sides: the batch's statements, the watermark as $1 */
	(void) se_batch_prepare(entry, sql, 1, types);
	foreach(lc, distinct_sql)
		(void) se_batch_prepare(entry, (char *) lfirst(lc), 1, types);
	if (entry->sjoin_side != SJOIN_RIGHT)
		return;
	/* a batch of b: closing ($1, $2), its time, its refused pairs ($1) */
	(void) se_batch_prepare(entry, left->close_sql, 2, types);
	foreach(lc, left->close_distinct_sql)
		(void) se_batch_prepare(entry, (char *) lfirst(lc), 2, types);
	(void) se_batch_prepare(entry, left->max_sql, 0, NULL);
	(void) se_batch_prepare(entry, left->late_sql, 1, types);
}

/* run plan with the latest snapshot; returns the rows processed */
static uint64
run_plan(SPIPlanPtr plan, Datum *values, const char *nulls, bool select)
{
	int			rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
										  InvalidSnapshot, select, true, 0);

	if (rc < 0 || (select && rc != SPI_OK_SELECT))
		elog(ERROR, "stream_ext: maintenance of a LEFT JOIN of two streams failed: %s",
			 SPI_result_code_string(rc));
	return SPI_processed;
}

static Datum
first_value(int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, isnull);
}

uint64
sjoin_left_run(SeBatchEntry *entry, TriggerData *trigdata, int ndistinct,
			   LeftJoinEntry *left)
{
	List	   *plans = se_batch_plans(entry, trigdata);
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	bool		isnull;
	TimestampTz wm_old;
	TimestampTz wm_new;
	bool		old_isnull;
	bool		new_isnull;
	uint64		written = 0;
	int64		late = 0;
	Datum		bmax;
	Datum		bmin;
	bool		max_isnull;
	bool		min_isnull;
	int			i;

	LockDatabaseObject(RelationRelationId, entry->objid, SJOIN_LOCK,
					   entry->sjoin_side == SJOIN_LEFT ? RowExclusiveLock :
					   ShareRowExclusiveLock);
	wm_old = catalog_left_join_watermark(entry->objid, &old_isnull);
	values[0] = TimestampTzGetDatum(wm_old);
	nulls[0] = old_isnull ? 'n' : ' ';

	/* a: pairs and closed NULL rows; b: pairs of open rows */
	for (i = 0; i <= ndistinct; i++)
	{
		uint64		n = run_plan(list_nth(plans, i), values, nulls, false);

		if (i == 0)
			written = n;
	}
	if (entry->sjoin_side == SJOIN_LEFT)
		return written;

	/* b: its time, its refused pairs, the new watermark */
	run_plan(list_nth(plans, 2 * (ndistinct + 1)), NULL, NULL, true);
	bmax = first_value(1, &max_isnull);
	bmin = first_value(2, &min_isnull);
	if (!old_isnull && !min_isnull && DatumGetTimestampTz(bmin) < wm_old)
	{
		run_plan(list_nth(plans, 2 * (ndistinct + 1) + 1), values, nulls, true);
		late = DatumGetInt64(first_value(1, &isnull));
	}
	wm_new = catalog_left_join_advance(entry->objid, bmax, max_isnull, late, &new_isnull);

	/* the NULL rows of the rows of a it closes */
	if (!new_isnull && (old_isnull || wm_new > wm_old))
	{
		values[1] = TimestampTzGetDatum(wm_new);
		for (i = 0; i <= ndistinct; i++)
			(void) run_plan(list_nth(plans, ndistinct + 1 + i), values, nulls, false);
	}
	return written;
}
