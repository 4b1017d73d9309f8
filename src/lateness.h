/*-------------------------------------------------------------------------
 *
 * lateness.h
 *	  Late data of tumbling windows (allowed_lateness, watermarks,
 *	  stream_ext.late_rows).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_LATENESS_H
#define STREAM_EXT_LATENESS_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

#include "analyze.h"

typedef struct LatenessSpec
{
	bool		enabled;
	char	   *text;
	Interval   *lateness;
	char	   *window_start_sql;	/* over the stream, alias s */
	char	   *event_time_sql;
	char	   *size_sql;
	/* emit = 'on_close', output_stream = '...' */
	bool		emit_on_close;
	char	   *output_stream;	/* as given */
	Oid			output_relid;
	char	   *output_sql;		/* qualified, quoted */
	char	   *window_column;	/* view column holding the window start */
	char	   *column_list;	/* the view's columns, quoted */
	char	   *value_list;		/* the same, as v.column */
} LatenessSpec;

/* what maintenance needs, per view (maintain.c caches it) */
typedef struct LatenessInfo
{
	Oid			viewid;
	Interval	lateness;
	char	   *late_sql;		/* $1 watermark, $2 view */
	char	   *max_sql;
	char	   *emit_sql;		/* NULL unless emit = 'on_close': $1 old,
								 * $2 new watermark */
} LatenessInfo;

extern List *lateness_take_options(List *options, LatenessSpec *spec);
extern void lateness_validate(LatenessSpec *spec, CVPlan *plan, Query *query,
							  Oid streamid);
extern void lateness_record(Oid viewid, LatenessSpec *spec, CVPlan *plan,
							const char *stream_sql, const char *view_sql);
extern LatenessInfo *lateness_lookup(Oid viewid, MemoryContext mcxt);
extern TimestampTz lateness_begin_batch(LatenessInfo *info, bool *isnull);
extern TimestampTz lateness_peek_watermark(Oid viewid, bool *isnull);
extern void lateness_end_batch(LatenessInfo *info, TimestampTz wm, bool wm_isnull);

#endif							/* STREAM_EXT_LATENESS_H */
