/*-------------------------------------------------------------------------
 *
 * lateness.h
 *	  Late data of time windows (allowed_lateness, watermarks,
 *	  stream_ext.late_rows).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_LATENESS_H
#define STREAM_EXT_LATENESS_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

#include "query/analyze.h"
#include "windows/sessions.h"

typedef struct LatenessSpec
{
	bool		enabled;
	char	   *text;
	Interval   *lateness;
	char	   *event_time_sql;
	char	   *size_sql;		/* a window closes this long after its
								 * window column: size, session_gap */
	const char *kind;			/* "tumbling", "hopping", "session" */
	char	   *all_open_sql;	/* the row misses no window (SQL over s) */
	char	   *late_reason_sql;	/* late_rows.reason of a row that does */
	CVKey	   *open_from_key;	/* hopping: stream_ext.hop_open_from() */
	/* emit = 'on_close', output_stream = '...' */
	bool		emit_on_close;
	char	   *output_stream;	/* as given */
	Oid			output_relid;
	char	   *output_sql;		/* qualified, quoted */
	char	   *window_column;	/* view column a window closes after:
								 * window start, session_end */
	char	   *column_list;	/* the view's columns, quoted */
	char	   *value_list;		/* the same, as v.column */
} LatenessSpec;

/* what maintenance needs, per view (maintain/maintain.c caches it) */
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
							  Oid streamid, SessionSpec *session);
extern void lateness_before_backfill(LatenessSpec *spec);
extern void lateness_record(Oid viewid, LatenessSpec *spec, CVPlan *plan,
							const char *stream_sql, const char *view_sql);
extern LatenessInfo *lateness_lookup(Oid viewid, MemoryContext mcxt);
extern TimestampTz lateness_begin_batch(LatenessInfo *info, bool *isnull);
extern TimestampTz lateness_peek_watermark(Oid viewid, bool *isnull);
extern void lateness_end_batch(LatenessInfo *info, TimestampTz wm, bool wm_isnull);

#endif							/* STREAM_EXT_LATENESS_H */
