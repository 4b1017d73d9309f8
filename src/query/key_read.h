/*-------------------------------------------------------------------------
 *
 * key_read.h
 *	  Reads by key of views that append as one custom scan node,
 *	  StreamExtKeyRead (query/key_read.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_KEY_READ_H
#define STREAM_EXT_QUERY_KEY_READ_H

#include "optimizer/planner.h"

extern void key_read_init(void);
extern PlannedStmt *key_read_planner(Query *parse, const char *query_string,
									 int cursorOptions, ParamListInfo boundParams,
									 planner_hook_type next);

#endif							/* STREAM_EXT_QUERY_KEY_READ_H */
