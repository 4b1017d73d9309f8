/*-------------------------------------------------------------------------
 *
 * alter_view.c
 *	  ALTER VIEW v SET (...) / RESET (...) of the options of a continuous
 *	  view that change without rebuilding it:
 *
 *		ttl					how long groups are kept (a view with ttl)
 *		allowed_lateness	how late rows may arrive (a view with it)
 *		notify				the NOTIFY channel of each batch, or none
 *		changes				the view's change stream (maintain/changes.c:
 *							made or dropped, not a catalog value only)
 *
 * Each is a value in stream_ext's catalog that maintenance, TTL or the
 * batch trigger reads when it runs; the change takes effect with the next
 * batch (TTL: the next run_maintenance()), in every session (the view's
 * relcache entry is invalidated, which drops the batch triggers' cached
 * entries).  Options fixed by the view's materialization -- its windows,
 * sessions, ttl_column, emit, whether it has ttl or lateness at all --
 * change with CREATE OR REPLACE VIEW (ddl/replace_view.c); ALTER VIEW says
 * so.  PostgreSQL's own view options (security_barrier, ...) are left to
 * PostgreSQL, but not in the same statement.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "ddl/alter_view.h"
#include "maintain/changes.h"
#include "maintain/transform.h"

/* the options of a continuous view that ALTER VIEW can change */
typedef enum AlterableOption
{
	OPT_TTL,
	OPT_ALLOWED_LATENESS,
	OPT_NOTIFY,
	OPT_CHANGES
} AlterableOption;

static const struct
{
	const char *name;
	AlterableOption opt;
} alterable[] = {
	{"ttl", OPT_TTL},
	{"allowed_lateness", OPT_ALLOWED_LATENESS},
	{"notify", OPT_NOTIFY},
	{"changes", OPT_CHANGES},
};

/* the options of CREATE VIEW ... WITH (continuous, ...) that only a rebuild changes */
static const char *const fixed[] = {
	"continuous", "ttl_column", "emit", "output_stream", "session_gap",
	"time_column", "sliding_window", "step", NULL
};

static int
alterable_index(const char *name)
{
	for (int i = 0; i < lengthof(alterable); i++)
		if (strcmp(alterable[i].name, name) == 0)
			return i;
	return -1;
}

static bool
is_fixed(const char *name)
{
	for (int i = 0; fixed[i] != NULL; i++)
		if (strcmp(fixed[i], name) == 0)
			return true;
	return false;
}

static Interval *
interval_option(DefElem *def, bool positive)
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

/*
 * ALTER VIEW/TABLE on relation stmt->relation: if it is a continuous view
 * and the statement sets or resets its options, apply them and return
 * true (the statement is done); else false (PostgreSQL runs it).
 */
bool
ddl_alter_view_options(AlterTableStmt *stmt)
{
	Oid			viewid;
	ListCell   *lc;
	bool		ours = false;
	bool		theirs = false;

	/*
	 * Only views: ALTER EXTENSION UPDATE alters stream_ext's own tables
	 * while its catalog is between versions.
	 */
	viewid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(viewid) || get_rel_relkind(viewid) != RELKIND_VIEW ||
		!OidIsValid(catalog_stream_of(viewid)) || catalog_is_transform(viewid))
		return false;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		ListCell   *oc;

		if (cmd->subtype != AT_SetRelOptions && cmd->subtype != AT_ResetRelOptions)
		{
			theirs = true;
			continue;
		}
		foreach(oc, (List *) cmd->def)
		{
			DefElem    *def = lfirst(oc);

			if (alterable_index(def->defname) >= 0)
				ours = true;
			else if (is_fixed(def->defname))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("option \"%s\" of continuous view \"%s\" cannot be changed with ALTER VIEW",
								def->defname, stmt->relation->relname),
						 errdetail("It is part of how the view's materialization is built."),
						 errhint("Use CREATE OR REPLACE VIEW %s WITH (continuous, %s = ...) AS ...",
								 stmt->relation->relname, def->defname)));
			else
				theirs = true;
		}
	}
	if (!ours)
		return false;
	if (theirs)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ALTER VIEW cannot change stream_ext's and PostgreSQL's options of \"%s\" in one statement",
						stmt->relation->relname),
				 errhint("Run one ALTER VIEW for ttl, allowed_lateness and notify, another for the rest.")));

	/* as PostgreSQL's ALTER VIEW: the owner, and no reader in between */
	viewid = RangeVarGetRelid(stmt->relation, AccessExclusiveLock, false);
	if (!pg_class_ownercheck(viewid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_VIEW, stmt->relation->relname);

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		bool		reset = (cmd->subtype == AT_ResetRelOptions);
		ListCell   *oc;

		foreach(oc, (List *) cmd->def)
		{
			DefElem    *def = lfirst(oc);

			switch (alterable[alterable_index(def->defname)].opt)
			{
				case OPT_TTL:
					if (!catalog_view_has_ttl(viewid))
						ereport(ERROR,
								(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
								 errmsg("continuous view \"%s\" has no ttl", stmt->relation->relname),
								 errhint("Add one with CREATE OR REPLACE VIEW %s WITH (continuous, ttl = ..., ttl_column = ...) AS ...",
										 stmt->relation->relname)));
					if (reset)
						catalog_set_view_ttl(viewid, NULL, NULL, NULL);
					else
						catalog_update_view_option(viewid, "ttl", INTERVALOID,
												   IntervalPGetDatum(interval_option(def, true)));
					break;
				case OPT_ALLOWED_LATENESS:
					if (!catalog_view_has_lateness(viewid))
						ereport(ERROR,
								(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
								 errmsg("continuous view \"%s\" has no allowed_lateness", stmt->relation->relname),
								 errhint("Add it with CREATE OR REPLACE VIEW %s WITH (continuous, allowed_lateness = ...) AS ...",
										 stmt->relation->relname)));
					if (reset)
						ereport(ERROR,
								(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
								 errmsg("allowed_lateness of continuous view \"%s\" cannot be reset", stmt->relation->relname),
								 errhint("Set it to 0, or use CREATE OR REPLACE VIEW without it.")));
					catalog_update_view_option(viewid, "allowed_lateness", INTERVALOID,
											   IntervalPGetDatum(interval_option(def, false)));
					break;
				case OPT_NOTIFY:
					{
						CVOptions	opts;

						opts.notify = NULL;
						if (!reset)
							(void) cv_take_options(list_make1(def), &opts);
						catalog_update_view_option(viewid, "notify", TEXTOID,
												   opts.notify ? CStringGetTextDatum(opts.notify) : (Datum) 0);
					}
					break;
				case OPT_CHANGES:
					/* maintain/changes.c: makes or drops the change stream */
					changes_alter(viewid, !reset && defGetBoolean(def));
					break;
			}
		}
	}
	/* the batch triggers' cached entries of this view go */
	CacheInvalidateRelcacheByRelid(viewid);
	return true;
}
