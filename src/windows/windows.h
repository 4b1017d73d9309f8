/*-------------------------------------------------------------------------
 *
 * windows.h
 *	  Time windows of continuous views: tumbling (stream_ext.tumble()),
 *	  hopping (FROM s, stream_ext.hop(...)) and sliding
 *	  (WITH (continuous, sliding_window = ...)).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_WINDOWS_H
#define STREAM_EXT_WINDOWS_H

#include "datatype/timestamp.h"
#include "nodes/parsenodes.h"

#include "core/catalog.h"
#include "query/analyze.h"

typedef enum CVWindowKind
{
	CV_WINDOW_NONE = 0,
	CV_WINDOW_TUMBLING,			/* a GROUP BY key is stream_ext.tumble() */
	CV_WINDOW_HOPPING,			/* FROM s, stream_ext.hop(ts, size, slide) */
	CV_WINDOW_SLIDING			/* WITH (sliding_window = ...) */
} CVWindowKind;

/* window of a continuous view (CVPlan.window) */
typedef struct CVWindow
{
	CVWindowKind kind;
	Interval	size;			/* window length */
	Interval	slide;			/* hopping: slide; sliding: step */
	int64		size_us;
	int64		slide_us;
	int64		pane_us;		/* stored granularity: hop pane, sliding step */
	Expr	   *pane_expr;		/* the matrel key holding the pane/bucket */
	char	   *time_column;	/* sliding: stream column */
	bool		user_keyless;	/* sliding over a query without GROUP BY */
	char	   *open_from_column;	/* hopping with allowed_lateness: the key
									 * column of stream_ext.hop_open_from()
									 * (lateness.c), or NULL */
} CVWindow;

/* take the options of WITH (continuous, ...) that windows own */
extern List *window_take_options(List *options, List **window_options);

/* before cv_analyze(): recognise FROM s, stream_ext.hop(...) and rewrite it */
extern Query *window_rewrite_hop(Query *q, const char *querytext,
								 CVWindow **window);

/* after cv_analyze(): sliding_window options, tumble() checks */
extern void window_apply_options(CVPlan *plan, List *window_options,
								 bool session_window);

/* SELECT of the user-facing view (replaces cv_view_select_sql) */
extern char *window_view_select_sql(CVPlan *plan, Oid matrelid,
									const char *matrel, const char *delta);

/* COMMENT ON COLUMN statements describing the window's columns (\d+) */
extern List *window_comment_sql(CVPlan *plan, Query *query, const char *vq);

/* after catalog_insert_view(): record the window */
extern void window_record(CVPlan *plan, Oid viewid, Oid matrelid,
						  const char *delta);
/* runs an expiry statement; returns the number of buckets deleted */
extern int64 window_run_expiry(const char *sql);

/*
 * Called by maintenance after each batch of a sliding view: deletes
 * expired buckets, at most once per step per backend.
 */
extern void window_expire_opportunistic(ViewCatalogEntry *cat,
										TimestampTz *next_expiry);

#endif							/* STREAM_EXT_WINDOWS_H */
