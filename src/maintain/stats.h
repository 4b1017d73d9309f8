/*-------------------------------------------------------------------------
 *
 * stats.h
 *	  Statistics of continuous-view maintenance (stream_ext.view_stats).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_STATS_H
#define STREAM_EXT_STATS_H

#include "access/tupdesc.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

extern void stats_init(void);
extern bool stats_tracking(void);
extern bool stats_delta_backlog(Oid viewid, int64 *rows);
extern void stats_report_batch(Oid viewid, Oid streamid, uint64 rows,
							   uint64 groups, double elapsed_ms,
							   TimestampTz max_arrival);
extern void stats_report_compaction(Oid viewid, uint64 rows,
									double elapsed_ms, TimestampTz drained_at);
extern void stats_report_compaction_error(Oid viewid, const char *msg);
extern TimestampTz stats_max_timestamp(Tuplestorestate *store, TupleDesc desc,
									   AttrNumber attnum);

#endif							/* STREAM_EXT_STATS_H */
