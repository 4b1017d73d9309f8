/*-------------------------------------------------------------------------
 *
 * view_options.c
 *	  Every option of CREATE VIEW ... WITH (continuous, ...) in one table,
 *	  as postgres_fdw's option.c lists its options: the option's name, the
 *	  module that owns it, whether a continuous transform takes it, and how
 *	  ALTER VIEW SET/RESET changes it without rebuilding the view (NULL: only
 *	  CREATE OR REPLACE VIEW changes it).  Each module hooks into the create
 *	  pipeline (ddl/create_view.c) through its row of modules[]:
 *
 *		parse		take the module's options out of the list (options phase)
 *		validate	check them against the analyzed query (analyze phase)
 *		prepare		the same, once the settings are pinned, for checks that
 *					generate SQL (build phase)
 *		record		write the module's catalog rows (record phase)
 *		backfill_begin / backfill_end	around the backfill
 *
 *	  Modules run in the order of modules[]; an option the table does not
 *	  list is refused before any module parses, with the list of valid ones.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "core/util.h"
#include "ddl/view_options.h"
#include "maintain/changes.h"
#include "windows/windows.h"

typedef struct ViewOptionModule
{
	const char *name;
	List	   *(*parse) (List *defs, CVOptions *vo);
	void		(*validate) (CVOptions *vo, CVPlan *plan);
	void		(*prepare) (CVOptions *vo, CVPlan *plan, Query *query);
	void		(*record) (CVOptions *vo, ViewObjects *obj);
	void		(*backfill_begin) (CVOptions *vo);
	void		(*backfill_end) (CVOptions *vo, ViewObjects *obj);
} ViewOptionModule;

/* the rows of modules[] */
typedef enum ViewOptionModuleId
{
	MOD_NONE = -1,				/* "continuous" itself */
	MOD_WINDOWS,
	MOD_SESSIONS,
	MOD_LATENESS,
	MOD_RETENTION,
	MOD_OUTPUT,
	MOD_BACKFILL,
	MOD_CHANGES
} ViewOptionModuleId;

typedef struct ViewOption
{
	const char *name;
	ViewOptionModuleId module;	/* whose parse callback takes it */
	bool		transforms;		/* valid for continuous transforms too */
	/* ALTER VIEW SET/RESET, or NULL: only CREATE OR REPLACE changes it */
	void		(*alter) (Oid viewid, const char *viewname, DefElem *def, bool reset);
} ViewOption;

/* ---- windows.c: sliding_window, step, time_column ---------------------- */

static List *
windows_parse(List *defs, CVOptions *vo)
{
	List	   *rest = window_take_options(defs, &vo->window);
	ListCell   *lc;

	/* with session_gap, time_column is the session's (sessions.c) */
	foreach(lc, defs)
	{
		if (strcmp(((DefElem *) lfirst(lc))->defname, "session_gap") == 0)
		{
			List	   *window = NIL;
			ListCell   *wc;

			foreach(wc, vo->window)
			{
				DefElem    *def = lfirst(wc);

				if (strcmp(def->defname, "time_column") == 0)
					rest = lappend(rest, def);
				else
					window = lappend(window, def);
			}
			vo->window = window;
			break;
		}
	}
	return rest;
}

static void
windows_validate(CVOptions *vo, CVPlan *plan)
{
	window_apply_options(plan, vo->window, vo->session.enabled);
}

static void
windows_record(CVOptions *vo, ViewObjects *obj)
{
	window_record(obj->plan, obj->viewid, obj->matrelid, obj->dq);
}

/* ---- sessions.c: session_gap, time_column ------------------------------ */

static List *
sessions_parse(List *defs, CVOptions *vo)
{
	return sessions_take_options(defs, &vo->session);
}

static void
sessions_check(CVOptions *vo, CVPlan *plan)
{
	if (vo->session.enabled)
		sessions_validate(&vo->session, plan);
}

static void
sessions_record_options(CVOptions *vo, ViewObjects *obj)
{
	if (vo->session.enabled)
		sessions_record(obj->viewid, &vo->session,
						sessions_compact_sql(&vo->session, obj->plan, obj->mq));
}

/* ---- lateness.c: allowed_lateness, emit (and output_stream with emit) -- */

static List *
lateness_parse(List *defs, CVOptions *vo)
{
	return lateness_take_options(defs, &vo->lateness);
}

static void
lateness_prepare(CVOptions *vo, CVPlan *plan, Query *query)
{
	if (vo->lateness.enabled)
		lateness_validate(&vo->lateness, plan, query, plan->streamid,
						  vo->session.enabled ? &vo->session : NULL);
}

static void
lateness_backfill_begin(CVOptions *vo)
{
	if (vo->lateness.enabled)
		lateness_before_backfill(&vo->lateness);
}

/* after the backfill: its rows set the first watermark */
static void
lateness_backfill_end(CVOptions *vo, ViewObjects *obj)
{
	if (!vo->lateness.enabled)
		return;
	lateness_record(obj->viewid, &vo->lateness, obj->plan, obj->sq, obj->vq);
	/*
	 * The stream closed windows go to: its statement names it, so DROP
	 * TABLE of it needs CASCADE (and takes the view along), as for a
	 * transform's output stream.  On the materialization, which belongs to
	 * this definition (CREATE OR REPLACE makes a new one).
	 */
	if (vo->lateness.emit_on_close)
		se_record_dependency(RelationRelationId, obj->matrelid, RelationRelationId,
							 vo->lateness.output_relid, DEPENDENCY_NORMAL);
}

/* ---- retention.c: ttl, ttl_column -------------------------------------- */

static List *
retention_parse(List *defs, CVOptions *vo)
{
	return retention_take_options(defs, &vo->ttl);
}

static void
retention_check(CVOptions *vo, CVPlan *plan)
{
	if (vo->ttl.enabled)
		retention_validate(&vo->ttl, plan, vo->session.enabled);
}

static void
retention_record_options(CVOptions *vo, ViewObjects *obj)
{
	if (vo->ttl.enabled)
		retention_record(obj->viewid, &vo->ttl, obj->plan, obj->matrelid,
						 obj->mq, obj->dq, obj->auxids);
}

/* ---- every view and transform: notify, output_stream ------------------- */

/* notify = true/on: the default channel; false/off: none; else a channel */
static char *
notify_channel(DefElem *def)
{
	char	   *value = defGetString(def);
	bool		on;

	if (parse_bool(value, &on))
		return on ? pstrdup(CV_DEFAULT_NOTIFY_CHANNEL) : NULL;
	if (value[0] == '\0' || strlen(value) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid notify channel \"%s\"", value),
				 errhint("A channel name is 1 to %d bytes long; notify = true uses \"%s\".",
						 NAMEDATALEN - 1, CV_DEFAULT_NOTIFY_CHANNEL)));
	return value;
}

static List *
output_parse(List *defs, CVOptions *vo)
{
	ListCell   *lc;
	List	   *rest = NIL;

	foreach(lc, defs)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "output_stream") == 0)
			vo->output_stream = defGetString(def);
		else if (strcmp(def->defname, "notify") == 0)
			vo->notify = notify_channel(def);
		else
			rest = lappend(rest, def);
	}
	return rest;
}

static void
output_record(CVOptions *vo, ViewObjects *obj)
{
	if (vo->notify)
		catalog_set_view_notify(obj->viewid, vo->notify);
}

/* ---- ALTER VIEW SET / RESET -------------------------------------------- */

static Interval *
alter_interval(DefElem *def, bool positive)
{
	Interval   *iv = DatumGetIntervalP(DirectFunctionCall3(interval_in,
														   CStringGetDatum(defGetString(def)),
														   ObjectIdGetDatum(InvalidOid),
														   Int32GetDatum(-1)));
	Interval	zero = {0};
	int			cmp = DatumGetInt32(DirectFunctionCall2(interval_cmp,
														IntervalPGetDatum(iv),
														IntervalPGetDatum(&zero)));

	if (cmp < 0 || (positive && cmp == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %s", def->defname,
						positive ? "a positive interval" : "an interval of zero or more")));
	return iv;
}

static void
alter_ttl(Oid viewid, const char *viewname, DefElem *def, bool reset)
{
	if (!catalog_view_has_ttl(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous view \"%s\" has no ttl", viewname),
				 errhint("Add one with CREATE OR REPLACE VIEW %s WITH (continuous, ttl = ..., ttl_column = ...) AS ...",
						 viewname)));
	if (reset)
		catalog_set_view_ttl(viewid, NULL, NULL, NULL);
	else
		catalog_update_view_option(viewid, "ttl", INTERVALOID,
								   IntervalPGetDatum(alter_interval(def, true)));
}

static void
alter_lateness(Oid viewid, const char *viewname, DefElem *def, bool reset)
{
	if (!catalog_view_has_lateness(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous view \"%s\" has no allowed_lateness", viewname),
				 errhint("Add it with CREATE OR REPLACE VIEW %s WITH (continuous, allowed_lateness = ...) AS ...",
						 viewname)));
	if (reset)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("allowed_lateness of continuous view \"%s\" cannot be reset", viewname),
				 errhint("Set it to 0, or use CREATE OR REPLACE VIEW without it.")));
	catalog_update_view_option(viewid, "allowed_lateness", INTERVALOID,
							   IntervalPGetDatum(alter_interval(def, false)));
}

static void
alter_notify(Oid viewid, const char *viewname, DefElem *def, bool reset)
{
	char	   *channel = reset ? NULL : notify_channel(def);

	catalog_update_view_option(viewid, "notify", TEXTOID,
							   channel ? CStringGetTextDatum(channel) : (Datum) 0);
}

/* ---- kafka/replay.c: backfill, backfill_from --------------------------- */

static List *
backfill_parse(List *defs, CVOptions *vo)
{
	return backfill_take_options(defs, &vo->backfill);
}

/* where the history comes from; the stream is locked by now */
static void
backfill_prepare_options(CVOptions *vo, CVPlan *plan, Query *query)
{
	backfill_prepare(&vo->backfill, plan->streamid, vo->session.enabled,
					 vo->lateness.enabled);
}

/* ---- maintain/changes.c: changes --------------------------------------- */

static List *
changes_parse(List *defs, CVOptions *vo)
{
	return changes_take_options(defs, &vo->changes);
}

static void
changes_check(CVOptions *vo, CVPlan *plan)
{
	if (vo->changes && vo->backfill.mode == BACKFILL_KAFKA)
		changes_refuse_kind("a continuous view with backfill = 'kafka'", CHANGES_REPLAY_DETAIL,
							"Use backfill = 'stream' or 'none', or ALTER VIEW ... SET (changes = true) once the replay is done.");
	if (vo->changes)
		changes_validate(plan, vo->session.enabled, vo->lateness.enabled);
}

/* the change stream, starting with the backfilled rows */
static void
changes_after_backfill(CVOptions *vo, ViewObjects *obj)
{
	if (vo->changes)
	{
		changes_create(obj->viewid, obj->plan);
		changes_snapshot(obj->viewid);
	}
}

/* makes or drops the change stream, not a catalog value only */
static void
alter_changes(Oid viewid, const char *viewname, DefElem *def, bool reset)
{
	changes_alter(viewid, !reset && defGetBoolean(def));
}

/* ---- the tables ---------------------------------------------------------- */

/*
 * In the order they run (ViewOptionModuleId): windows before sessions
 * (window_apply_options() refuses session_gap with sliding_window before
 * sessions_validate() looks at the query), lateness before output (with
 * emit, output_stream is lateness.c's).
 *
 * A new option: a row in options[]; a new module: a row here (and in
 * ViewOptionModuleId) whose parse callback takes its options out of the
 * list, its spec a field of CVOptions (view_options.h).
 */
static const ViewOptionModule modules[] = {
	[MOD_WINDOWS] = {"windows", windows_parse, windows_validate, NULL, windows_record, NULL, NULL},
	[MOD_SESSIONS] = {"sessions", sessions_parse, sessions_check, NULL, sessions_record_options, NULL, NULL},
	[MOD_LATENESS] = {"lateness", lateness_parse, NULL, lateness_prepare, NULL,
	 lateness_backfill_begin, lateness_backfill_end},
	[MOD_RETENTION] = {"retention", retention_parse, retention_check, NULL, retention_record_options, NULL, NULL},
	[MOD_OUTPUT] = {"output", output_parse, NULL, NULL, output_record, NULL, NULL},
	/* the backfill itself and the replay's record: ddl/create_view.c */
	[MOD_BACKFILL] = {"backfill", backfill_parse, NULL, backfill_prepare_options, NULL, NULL, NULL},
	/* last: its snapshot of the view follows every other module's backfill */
	[MOD_CHANGES] = {"changes", changes_parse, changes_check, NULL, NULL, NULL, changes_after_backfill},
};

/* every option; the errhint of an unknown one lists them in this order */
static const ViewOption options[] = {
	{"continuous", MOD_NONE, true, NULL},
	{"sliding_window", MOD_WINDOWS, false, NULL},
	{"step", MOD_WINDOWS, false, NULL},
	{"time_column", MOD_WINDOWS, false, NULL},	/* sessions' with session_gap */
	{"session_gap", MOD_SESSIONS, false, NULL},
	{"allowed_lateness", MOD_LATENESS, false, alter_lateness},
	{"emit", MOD_LATENESS, false, NULL},
	{"ttl", MOD_RETENTION, false, alter_ttl},
	{"ttl_column", MOD_RETENTION, false, NULL},
	{"output_stream", MOD_OUTPUT, true, NULL},	/* lateness' with emit */
	{"notify", MOD_OUTPUT, true, alter_notify},
	{"backfill", MOD_BACKFILL, false, NULL},
	{"backfill_from", MOD_BACKFILL, false, NULL},
	{"changes", MOD_CHANGES, false, alter_changes},
};

static const ViewOption *
find_option(const char *name)
{
	for (int i = 0; i < lengthof(options); i++)
		if (strcmp(options[i].name, name) == 0)
			return &options[i];
	return NULL;
}

static char *
valid_options(void)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < lengthof(options); i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", options[i].name);
	return buf.data;
}

void
view_options_parse(List *defs, CVOptions *vo)
{
	ListCell   *lc;

	memset(vo, 0, sizeof(CVOptions));
	foreach(lc, defs)
	{
		DefElem    *def = lfirst(lc);
		const ViewOption *opt = find_option(def->defname);

		if (opt == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized continuous view option \"%s\"", def->defname),
					 errhint("Valid options are: %s.", valid_options())));
		if (!opt->transforms)
			vo->view_only = true;
	}
	for (int i = 0; i < lengthof(modules); i++)
		defs = modules[i].parse(defs, vo);
	Assert(defs == NIL);
}

void
view_options_check_kind(CVOptions *vo, bool transform)
{
	if (transform && (vo->backfill.given || vo->backfill.has_from))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backfill options are not supported for continuous transforms"),
				 errdetail("A continuous transform sees the rows inserted after it is created.")));
	if (transform && vo->view_only)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("window, session, lateness, ttl and changes options are not supported for continuous transforms"),
				 errdetail("A view without aggregates or GROUP BY is a continuous transform.")));
	/* output_stream without emit (lateness.c takes it with emit) */
	if (!transform && vo->output_stream)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output_stream is only valid for continuous transforms"),
				 errdetail("The view has aggregates or GROUP BY; its rows are kept in its materialization."),
				 errhint("Drop output_stream, or chain an aggregate view after a transform.")));
}

void
view_options_validate(CVOptions *vo, CVPlan *plan)
{
	for (int i = 0; i < lengthof(modules); i++)
		if (modules[i].validate)
			modules[i].validate(vo, plan);
}

void
view_options_prepare(CVOptions *vo, CVPlan *plan, Query *query)
{
	for (int i = 0; i < lengthof(modules); i++)
		if (modules[i].prepare)
			modules[i].prepare(vo, plan, query);
}

void
view_options_record(CVOptions *vo, ViewObjects *obj)
{
	for (int i = 0; i < lengthof(modules); i++)
		if (modules[i].record)
			modules[i].record(vo, obj);
}

void
view_options_backfill_begin(CVOptions *vo)
{
	for (int i = 0; i < lengthof(modules); i++)
		if (modules[i].backfill_begin)
			modules[i].backfill_begin(vo);
}

void
view_options_backfill_end(CVOptions *vo, ViewObjects *obj)
{
	for (int i = 0; i < lengthof(modules); i++)
		if (modules[i].backfill_end)
			modules[i].backfill_end(vo, obj);
}

bool
view_option_known(const char *name, bool *alterable)
{
	const ViewOption *opt = find_option(name);

	*alterable = opt != NULL && opt->alter != NULL;
	return opt != NULL;
}

void
view_option_alter(Oid viewid, const char *viewname, DefElem *def, bool reset)
{
	const ViewOption *opt = find_option(def->defname);

	Assert(opt != NULL && opt->alter != NULL);
	opt->alter(viewid, viewname, def, reset);
}
