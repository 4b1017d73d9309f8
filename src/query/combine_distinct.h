/*-------------------------------------------------------------------------
 *
 * combine_distinct.h
 *	  stream_ext.combine() of an exact count(DISTINCT) column: the union
 *	  of the groups' values from the side table (query/combine_distinct.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_COMBINE_DISTINCT_H
#define STREAM_EXT_QUERY_COMBINE_DISTINCT_H

#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"

#include "query/analyze.h"

extern Var *combine_distinct_column(Oid viewid, CVPlan *plan, CVAgg *agg,
									Query *viewq, int varno, AttrNumber attno);

#endif							/* STREAM_EXT_QUERY_COMBINE_DISTINCT_H */
