/*-------------------------------------------------------------------------
 *
 * transform.h
 *	  Continuous transforms (continuous views without aggregates) and the
 *	  per-batch NOTIFY of continuous views.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_TRANSFORM_H
#define STREAM_EXT_TRANSFORM_H

#include "nodes/parsenodes.h"

/* WITH (...) options of a continuous view besides "continuous" */
typedef struct CVOptions
{
	char	   *output_stream;	/* transforms only: the stream to append to */
	char	   *notify;			/* channel to NOTIFY once per batch, or NULL */
} CVOptions;

#define CV_DEFAULT_NOTIFY_CHANNEL "stream_ext"

/* takes output_stream and notify from defs; returns the rest */
extern List *cv_take_options(List *defs, CVOptions *opts);

/* a query without aggregates and GROUP BY is a continuous transform */
extern bool transform_applies(Query *query);
extern void transform_create(ViewStmt *stmt, Query *query,
							 const char *queryString, CVOptions *opts);

/* aggregate views: refuse transform-only options; record notify */
extern void cv_check_view_options(CVOptions *opts);
extern void cv_record_notify(Oid viewid, const char *channel);

/* one NOTIFY for a maintained batch */

#endif							/* STREAM_EXT_TRANSFORM_H */
