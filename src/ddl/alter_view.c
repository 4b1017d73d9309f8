/*-------------------------------------------------------------------------
 *
 * alter_view.c
 *	  ALTER VIEW v SET (...) / RESET (...) of the options of a continuous
 *	  view that change without rebuilding it:
 *
 *		ttl					how long groups are kept (a view with ttl)
 *		allowed_lateness	how late rows may arrive (a view with it)
 *		notify				the NOTIFY channel of each batch, or none
 *
 * Which options there are, which of them ALTER VIEW may change and how,
 * is ddl/view_options.c's table.  Each is a value in stream_ext's catalog
 * that maintenance, TTL or the batch trigger reads when it runs; the
 * change takes effect with the next batch (TTL: the next
 * run_maintenance()), in every session (the view's relcache entry is
 * invalidated, which drops the batch triggers' cached entries).  Options fixed by the view's materialization -- its windows,
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

#include "core/catalog.h"
#include "ddl/alter_view.h"
#include "ddl/rebuild.h"
#include "ddl/view_options.h"
#include "query/shared_plan.h"

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
			bool		alterable;

			if (!view_option_known(def->defname, &alterable))
				theirs = true;
			else if (alterable)
				ours = true;
			else
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("option \"%s\" of continuous view \"%s\" cannot be changed with ALTER VIEW",
								def->defname, stmt->relation->relname),
						 errdetail("It is part of how the view's materialization is built."),
						 errhint("Use CREATE OR REPLACE VIEW %s WITH (continuous, %s = ...) AS ...",
								 stmt->relation->relname, def->defname)));
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
	/* the swap of a rebuild beside it would lose them (ddl/rebuild.c) */
	if (rebuild_pending(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("continuous view \"%s\" is being rebuilt by CREATE OR REPLACE",
						stmt->relation->relname),
				 errhint("Wait for it (stream_ext.wait_backfill()) or cancel it (stream_ext.cancel_backfill()) first.")));

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		bool		reset = (cmd->subtype == AT_ResetRelOptions);
		ListCell   *oc;

		foreach(oc, (List *) cmd->def)
		{
			DefElem    *def = lfirst(oc);

			/* but notify, options of a shared storage's member change its tables */
			if (strcmp(def->defname, "notify") != 0)
				shared_refuse(viewid, psprintf("ALTER VIEW ... %s (%s)",
											   reset ? "RESET" : "SET", def->defname));
			view_option_alter(viewid, stmt->relation->relname, def, reset);
		}
	}
	/* the batch triggers' cached entries of this view go */
	CacheInvalidateRelcacheByRelid(viewid);
	return true;
}
