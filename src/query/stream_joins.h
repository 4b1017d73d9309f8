/*-------------------------------------------------------------------------
 *
 * stream_joins.h
 *	  Joins of two streams within a time window, in continuous views and
 *	  transforms (docs/joins.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_STREAM_JOINS_H
#define STREAM_EXT_STREAM_JOINS_H

#include "commands/trigger.h"
#include "nodes/parsenodes.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "maintain/trigger.h"
#include "query/analyze.h"
#include "query/sjoin_left.h"
#include "query/sjoin_window.h"


/*
 * CREATE of a continuous view joining two streams (after its maintenance
 * statements were made): check the streams' retention against the window,
 * lock the second stream against writers, record the statements of its
 * batches.  dq: the delta, or NULL (upsert); auxrels: the count(DISTINCT)
 * side tables, in plan->aggs' order; lateness: a LEFT JOIN's
 * allowed_lateness (NULL: none; query/sjoin_left.c).  (Row-level security on the second
 * stream is checked by ddl/create_steps.c, as on the first, and its
 * trigger made by ddl/create_view.c.)
 */
extern void sjoin_create_view(CVPlan *plan, Oid viewid, const char *mq,
							  const char *dq, List *auxrels, Interval *lateness);

/*
 * The same for a continuous transform: right_select is its SELECT over a
 * batch of the second stream (made with joins_set_batch_rti()).  The
 * second stream's trigger, stream_ext.transform(vq), is made by
 * ddl/create_transform.c before.
 */
extern void sjoin_create_transform(Query *q, Oid viewid, const char *right_select);

/*
 * stream_ext.set_retention(): refuse a retention of streamid shorter than
 * the window of a join it is a side of (NULL: rows kept, always fine).
 */
extern void sjoin_check_retention(Oid streamid, Interval *retention);

/*
 * The views trigger of streamid (maintain/maintain.c): a unit (SeBatchEntry
 * of parent's) per continuous view joining it to another stream, for
 * either side; the materializations of views whose first stream it is are
 * appended to *own (maintained by these units, not by the shared ones).
 */
extern List *sjoin_view_units(SeBatchEntry *parent, Oid streamid, List **own);

/*
 * transform_load() of a trigger on the second stream of a join: the
 * SELECT of its batches (in entry->cxt), or NULL if relid is no side of
 * the transform's join.  Sets entry->sjoin_side, and *left to the
 * statements of a LEFT JOIN (query/sjoin_left.c; else NULL).
 */
extern char *sjoin_transform_select(SeBatchEntry *entry, Oid transform, Oid relid,
									LeftJoinEntry **left);

/*
 * Run an entry's kept plans (no parameters, each an INSERT) for a batch of
 * one side of a join: under the join's lock, with a snapshot taken after
 * it.  Returns the rows the first plan wrote.
 */
extern uint64 sjoin_run_plans(SeBatchEntry *entry, TriggerData *trigdata);

#endif							/* STREAM_EXT_STREAM_JOINS_H */
