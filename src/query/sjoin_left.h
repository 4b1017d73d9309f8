/*-------------------------------------------------------------------------
 *
 * sjoin_left.h
 *	  LEFT JOIN of two streams in a continuous view, a row of the first
 *	  stream without a match emitted when its window closes
 *	  (query/sjoin_left.c, docs/joins.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_SJOIN_LEFT_H
#define STREAM_EXT_SJOIN_LEFT_H

#include "commands/trigger.h"
#include "nodes/parsenodes.h"

#include "core/catalog.h"
#include "maintain/trigger.h"
#include "query/analyze.h"
#include "query/sjoin_window.h"
#include "windows/lateness.h"

/*
 * The statements of a view's batch with range-table entry batch_rti read
 * from the batch (0: none, both streams from their tables) and qual
 * ANDed to their WHERE (plan->extra_batch_qual's way): the main one into
 * the delta dq (or the materialization mq), then one per count(DISTINCT)
 * (auxrels: their side tables, in plan->aggs' order).  For the joins of
 * query/stream_joins.c too.
 */
extern List *sjoin_batch_statements(CVPlan *plan, Index batch_rti, const char *qual,
									const char *mq, const char *dq, List *auxrels);

/*
 * CREATE VIEW, after cv_analyze(): for a LEFT JOIN of two streams, take
 * allowed_lateness (left in *lateness, the lateness module switched off:
 * the join has its own watermark) and make the statements of a batch of
 * the first stream pair its rows and emit the NULL rows of those already
 * closed (plan->extra_batch_qual, with the watermark as $1).  Nothing for
 * other queries.
 */
extern void sjoin_left_prepare(CVPlan *plan, LatenessSpec *lateness);

/*
 * The quals (SQL over s and t<rti>, ANDed to the query's WHERE) of the
 * statements of a LEFT JOIN q with upper bound ub:
 *   FIRST: a batch of the first stream -- every pair, and the NULL rows of
 *          its rows closed at $1 (the watermark);
 *   PAIRS: a batch of the second stream -- its pairs with rows of the first
 *          still open at $1 (the watermark before it);
 *   CLOSE: both streams read from their tables -- the NULL rows of the
 *          rows of the first that the watermark closes moving from $1 to $2.
 */
typedef enum SJoinLeftQual
{
	SJOIN_QUAL_FIRST,
	SJOIN_QUAL_PAIRS,
	SJOIN_QUAL_CLOSE
} SJoinLeftQual;

extern char *sjoin_left_qual(Query *q, SJoinUpperBound *ub, SJoinLeftQual which);

/* FIRST with the recorded watermark of object in place of $1 (backfills) */
extern char *sjoin_left_backfill_qual(Query *q, SJoinUpperBound *ub, Oid object);

/*
 * sjoin_create_view() of a LEFT JOIN: make and record the statements that
 * close windows, count refused pairs and read a batch's time, and the
 * watermark of the rows the second stream holds now.
 */
extern void sjoin_left_create(CVPlan *plan, Oid viewid, const char *mq, const char *dq,
							  List *auxrels, SJoinUpperBound *ub, Interval *lateness);

/*
 * The same for a continuous transform (no allowed_lateness): close_select
 * is its SELECT with CLOSE, both streams read from their tables.
 */
extern void sjoin_left_create_transform(Query *q, Oid object, SJoinUpperBound *ub,
										const char *close_select);

/*
 * The backfill of a new LEFT JOIN view (ddl/create_view.c): every pair of
 * the rows both streams hold and the NULL rows of the first stream's rows
 * whose window the watermark has closed; one statement, then one per
 * count(DISTINCT) side table (auxrels).
 */
extern List *sjoin_left_backfill_sql(CVPlan *plan, Oid viewid, const char *mq,
									 List *auxrels);

/* a view's side of a LEFT JOIN: prepare its statements (their parameters) */
extern void sjoin_left_prepare_plans(SeBatchEntry *entry, const char *sql,
									 List *distinct_sql, LeftJoinEntry *left);

/* ... and run them for a batch of that side; returns the rows written */
extern uint64 sjoin_left_run(SeBatchEntry *entry, TriggerData *trigdata,
							 int ndistinct, LeftJoinEntry *left);

#endif							/* STREAM_EXT_SJOIN_LEFT_H */
