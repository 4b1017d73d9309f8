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

extern void combine_rewrite(Query *parse);

#endif							/* STREAM_EXT_QUERY_COMBINE_H */
