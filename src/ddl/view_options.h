/*-------------------------------------------------------------------------
 *
 * view_options.h
 *	  The options of CREATE VIEW ... WITH (continuous, ...) and of ALTER
 *	  VIEW SET/RESET on a continuous view: one table (view_options.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_VIEW_OPTIONS_H
#define STREAM_EXT_VIEW_OPTIONS_H

#include "nodes/parsenodes.h"

#include "housekeeping/retention.h"
#include "kafka/replay.h"
#include "query/analyze.h"
#include "windows/lateness.h"
#include "windows/sessions.h"

#define CV_DEFAULT_NOTIFY_CHANNEL "stream_ext"

/* every option of a continuous view or transform, parsed */
typedef struct CVOptions
{
	List	   *window;			/* sliding_window, step, time_column (windows.c) */
	SessionSpec session;		/* session_gap, time_column (sessions.c) */
	LatenessSpec lateness;		/* allowed_lateness, emit (lateness.c) */
	TtlSpec		ttl;			/* ttl, ttl_column (retention.c) */
	char	   *output_stream;	/* transforms only: the stream to append to */
	char	   *notify;			/* channel to NOTIFY once per batch, or NULL */
	BackfillSpec backfill;		/* backfill, backfill_from (kafka/replay.c) */
	bool		view_only;		/* an option a continuous transform refuses */
} CVOptions;

/* what the build phase of a continuous view made, for the record callbacks */
typedef struct ViewObjects
{
	CVPlan	   *plan;
	Query	   *query;			/* as the user wrote it */
	Oid			viewid;
	Oid			matrelid;
	Oid			deltaid;		/* InvalidOid: the view upserts */
	List	   *auxids;			/* side tables of count(DISTINCT) */
	const char *mq;				/* qualified names: materialization, */
	const char *dq;				/* delta (or NULL), */
	const char *sq;				/* stream, */
	const char *vq;				/* view */
} ViewObjects;

/* options phase: every option checked against the table, parsed */
extern void view_options_parse(List *defs, CVOptions *vo);
/* refuse options of the other kind (transform or aggregate view) */
extern void view_options_check_kind(CVOptions *vo, bool transform);
/* analyze phase: each module checks its options against the plan */
extern void view_options_validate(CVOptions *vo, CVPlan *plan);
/* ... and, settings pinned, those that generate SQL */
extern void view_options_prepare(CVOptions *vo, CVPlan *plan, Query *query);
/* record phase: each module's catalog rows */
extern void view_options_record(CVOptions *vo, ViewObjects *obj);
/* around the backfill */
extern void view_options_backfill_begin(CVOptions *vo);
extern void view_options_backfill_end(CVOptions *vo, ViewObjects *obj);

/* ALTER VIEW SET/RESET: is NAME an option of ours; can it change in place */
extern bool view_option_known(const char *name, bool *alterable);
/* ALTER VIEW SET (def) / RESET (def) on continuous view viewid */
extern void view_option_alter(Oid viewid, const char *viewname, DefElem *def,
							  bool reset);

#endif							/* STREAM_EXT_VIEW_OPTIONS_H */
