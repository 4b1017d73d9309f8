/*-------------------------------------------------------------------------
 *
 * viewplan.h
 *	  A continuous view's plan (keys, aggregates, side tables) rebuilt from
 *	  its recorded definition, for the code that reads or feeds from an
 *	  existing view: roll-ups (query/rollup.c) and combine() at read time
 *	  (query/combine.c, combine_distinct.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_VIEWPLAN_H
#define STREAM_EXT_QUERY_VIEWPLAN_H

#include "query/analyze.h"

extern Query *cv_view_definition(Oid viewid, char **text);
extern CVPlan *cv_reanalyze(Oid viewid, Query *def, const char *definition);
extern CVAgg *cv_column_agg(CVPlan *plan, AttrNumber attno);
extern Oid	cv_distinct_side_table(CVPlan *plan, CVAgg *agg, List *parts);

#endif							/* STREAM_EXT_QUERY_VIEWPLAN_H */
