/*-------------------------------------------------------------------------
 *
 * combine.h
 *	  stream_ext.combine(column): re-aggregation of a continuous view's
 *	  column from its stored partial states (query/combine.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_COMBINE_H
#define STREAM_EXT_QUERY_COMBINE_H

#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"

#include "query/analyze.h"

extern void combine_rewrite(Query *parse);
/* combine_distinct.c: combine() of a count(DISTINCT) column */
extern Var *combine_distinct_column(Oid viewid, CVPlan *plan, CVAgg *agg,
									Query *viewq, int varno, AttrNumber attno);

#endif							/* STREAM_EXT_QUERY_COMBINE_H */
