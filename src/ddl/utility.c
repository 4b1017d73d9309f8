/*-------------------------------------------------------------------------
 *
 * utility.c
 *	  stream_ext's one ProcessUtility hook.  It hands CREATE VIEW ... WITH
 *	  (continuous) to ddl/create_view.c, keeps users from breaking what
 *	  continuous views rely on (altering columns a view reads, touching
 *	  materializations, row-level security that would apply to a view's
 *	  owner, the access method of a stream), says when a new view of a
 *	  stream that stores no rows starts empty, forgets catalog entries of
 *	  dropped objects, repairs what pg_restore leaves out when it creates
 *	  a stream's triggers, and
 *	  schedules or unschedules the pg_cron job of run_maintenance() with
 *	  CREATE / ALTER / DROP EXTENSION (housekeeping/retention.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "ddl/alter_view.h"
#include "ddl/create_view.h"
#include "ddl/internal_tables.h"
#include "ddl/replace_view.h"
#include "ddl/restore.h"
#include "ddl/shared_members.h"
#include "ddl/used_objects.h"
#include "ddl/utility.h"
#include "query/shared_plan.h"
#include "housekeeping/retention.h"
#include "kafka/replay.h"
#include "maintain/changes.h"
#include "maintain/maintain.h"
#include "storage/discard_am.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Is relid a stream that continuous views read? */
static bool
is_stream_with_views(Oid relid)
{
	/* a stream receiving closed windows: their statements name its columns */
	return OidIsValid(relid) &&
		(catalog_stream_has_views(relid) || catalog_stream_is_emit_output(relid));
}

/*
 * DROP or RENAME of column attname of relation relid (to do: "drop" or
 * "rename"), refused if a Kafka sink of the stream keys its messages by
 * it (its capture statement, run for every batch, names the column) or a
 * Kafka source's options name it.
 */
static void
check_kafka_column(Oid relid, const char *attname, const char *to_do, const char *relname)
{
	char	   *sink;
	char	   *source;

	if (!catalog_is_stream(relid))
		return;
	if ((sink = catalog_sink_key_user(relid, attname)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s column \"%s\" of stream \"%s\": Kafka sink \"%s\" keys its messages by it",
						to_do, attname, relname, sink),
				 errdetail("Each batch inserted into the stream is queued for the sink with that column's value as the key."),
				 errhint("Drop the sink with stream_ext.drop_sink() first, or create it again with another key column.")));
	if ((source = catalog_source_column_user(relid, attname)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s column \"%s\" of stream \"%s\": the options of Kafka source \"%s\" name it",
						to_do, attname, relname, source),
				 errdetail("The source inserts its messages into the columns its options name."),
				 errhint("Drop the source with stream_ext.drop_source() first, or create it again without the column.")));
}

/*
 * Disabling, dropping or renaming (to do) one of stream_ext's triggers on
 * stream relid (trigname; NULL: ALTER TABLE ... DISABLE TRIGGER ALL or
 * USER): refused.  Views would silently stop following the stream, and
 * without its append-only guard rows could be updated or deleted under
 * them; other roles' views too.  Dropping the views (or revoking what they
 * need: docs/security.md) is how a stream is detached from them.  A
 * superuser, who can bypass triggers anyway (session_replication_role),
 * may (pg_restore --data-only --disable-triggers does); stream_ext drops
 * its own triggers with performDeletion().
 */
static void
check_stream_trigger(Oid relid, const char *trigname, const char *to_do)
{
	if ((trigname != NULL && strncmp(trigname, "stream_ext_", 11) != 0) ||
		superuser() || !OidIsValid(relid) || !catalog_is_stream(relid))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 trigname != NULL ?
			 errmsg("cannot %s trigger \"%s\" of stream \"%s\"", to_do, trigname,
					get_rel_name(relid)) :
			 errmsg("cannot %s the triggers of stream \"%s\"", to_do, get_rel_name(relid)),
			 errdetail("stream_ext's triggers keep the stream append-only and its continuous views, transforms and sinks exact."),
			 errhint("Drop what reads the stream instead, or revoke a privilege it needs to detach another role's view.")));
}

/* ALTER TABLE ... DISABLE TRIGGER, or ENABLE REPLICA TRIGGER (fired only by replication) */
static void
check_trigger_switch(Oid relid, AlterTableCmd *cmd)
{
	if (cmd->subtype == AT_DisableTrig || cmd->subtype == AT_EnableReplicaTrig)
		check_stream_trigger(relid, cmd->name, "disable");
	else if (cmd->subtype == AT_DisableTrigAll || cmd->subtype == AT_DisableTrigUser)
		check_stream_trigger(relid, NULL, "disable");
}

/*
 * ENABLE or FORCE ROW LEVEL SECURITY on a stream: refused if the policies
 * would then apply to the owner of one of its continuous views.
 */
static void
check_rls_change(Oid relid, bool force, const char *relname)
{
	bool		enabled;
	bool		forced;
	List	   *owners;
	ListCell   *lc;

	stream_rls_flags(relid, &enabled, &forced);
	if (force)
		forced = true;
	else
		enabled = true;
	owners = catalog_view_owners(relid);
	foreach(lc, owners)
	{
		Oid			owner = lfirst_oid(lc);

		if (stream_rls_applies(relid, owner, enabled, forced))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot %s row-level security on stream \"%s\": it would apply to %s, who owns a continuous view of it",
							force ? "force" : "enable", relname,
							GetUserNameFromId(owner, false)),
					 errdetail("A continuous view aggregates every row of its stream; it would show rows its owner cannot read."),
					 errhint("Drop the continuous views of roles the policies would restrict first.")));
	}
}

/*
 * Refuse DDL that would break continuous views: changing columns of a
 * stream that views read, or altering a materialization directly.
 */
static void
check_alter(Node *parsetree)
{
	if (IsA(parsetree, AlterTableStmt))
	{
		AlterTableStmt *stmt = (AlterTableStmt *) parsetree;
		Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
		ListCell   *lc;

		if (!OidIsValid(relid))
			return;
		if (!se_materializing() && catalog_is_matrel(relid))
		{
			/* catalog_is_matrel() also covers transforms: say which */
			if (catalog_is_transform(relid))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot alter continuous transform \"%s\"",
								stmt->relation->relname),
						 errhint("Drop the transform and create it again.")));
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot alter \"%s\": it is the materialization of a continuous view",
							stmt->relation->relname)));
		}
		foreach(lc, stmt->cmds)
		{
			AlterTableCmd *cmd = lfirst(lc);

			/* a shared storage has one owner (query/shared_plan.c) */
			if (cmd->subtype == AT_ChangeOwner)
				shared_refuse(relid, "ALTER VIEW ... OWNER TO");
			/* a stream's access method is what retain => false chose */
			if (cmd->subtype == AT_SetAccessMethod && catalog_is_stream(relid))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot change the access method of stream \"%s\"",
								stmt->relation->relname),
						 errdetail("Whether a stream stores its rows is fixed when it is created."),
						 errhint("Create a new stream with stream_ext.create_stream(..., retain => true or false).")));
		}
		foreach(lc, stmt->cmds)
		{
			AlterTableCmd *cmd = lfirst(lc);

			if (cmd->subtype == AT_DropColumn && cmd->name != NULL)
				check_kafka_column(relid, cmd->name, "drop", stmt->relation->relname);
			check_trigger_switch(relid, cmd);
		}
		if (!is_stream_with_views(relid))
			return;
		foreach(lc, stmt->cmds)
		{
			AlterTableCmd *cmd = lfirst(lc);

			if (cmd->subtype == AT_EnableRowSecurity || cmd->subtype == AT_ForceRowSecurity)
				check_rls_change(relid, cmd->subtype == AT_ForceRowSecurity,
								 stmt->relation->relname);
			if (cmd->subtype == AT_DropColumn || cmd->subtype == AT_AlterColumnType)
			{
				char	   *user = catalog_column_user(relid, cmd->name);

				if (user != NULL)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot %s column \"%s\" of stream \"%s\" while continuous views read it",
									cmd->subtype == AT_DropColumn ? "drop" : "change the type of",
									cmd->name, stmt->relation->relname),
							 errdetail("%s uses the column.", user),
							 errhint("Drop the continuous views and transforms that use the column first.")));
			}
		}
	}
	else if (IsA(parsetree, AlterObjectSchemaStmt))
	{
		AlterObjectSchemaStmt *stmt = (AlterObjectSchemaStmt *) parsetree;
		Oid			relid;

		if (stmt->relation == NULL)
			return;
		relid = RangeVarGetRelid(stmt->relation, NoLock, true);
		if (OidIsValid(relid) && catalog_is_matrel(relid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot move \"%s\" to another schema: it belongs to a continuous view",
							stmt->relation->relname)));
	}
	else if (IsA(parsetree, RenameStmt))
	{
		RenameStmt *stmt = (RenameStmt *) parsetree;
		Oid			relid;

		if (stmt->renameType == OBJECT_TRIGGER && stmt->relation != NULL)
			check_stream_trigger(RangeVarGetRelid(stmt->relation, NoLock, true),
								 stmt->subname, "rename");
		if (stmt->renameType == OBJECT_SCHEMA)
		{
			/* maintenance statements name their tables schema-qualified */
			Oid			nspid = get_namespace_oid(stmt->subname, true);
			char	   *view = OidIsValid(nspid) ? catalog_view_in_schema(nspid) : NULL;

			if (view)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot rename schema \"%s\": it holds the materialization of continuous view %s",
								stmt->subname, view),
						 errhint("Drop the continuous views whose materializations are in the schema, rename it, and create them again.")));
			return;
		}
		if (stmt->relation == NULL)
			return;
		relid = RangeVarGetRelid(stmt->relation, NoLock, true);
		if (!OidIsValid(relid))
			return;
		if (catalog_is_matrel(relid))
		{
			/* catalog_is_matrel() also covers transforms: say which */
			bool		transform = catalog_is_transform(relid);

			if (transform && stmt->renameType == OBJECT_COLUMN)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot rename column \"%s\" of continuous transform \"%s\"",
								stmt->subname, stmt->relation->relname),
						 errhint("Drop the transform and create it again.")));
			if (transform)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot rename continuous transform \"%s\"",
								stmt->relation->relname),
						 errhint("Drop the transform and create it again.")));
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot rename \"%s\": it belongs to a continuous view",
							stmt->relation->relname)));
		}
		if (stmt->renameType == OBJECT_COLUMN)
			check_kafka_column(relid, stmt->subname, "rename", stmt->relation->relname);
		if (stmt->renameType == OBJECT_COLUMN && is_stream_with_views(relid))
		{
			char	   *user = catalog_column_user(relid, stmt->subname);

			if (user != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot rename column \"%s\" of stream \"%s\" while continuous views read it",
								stmt->subname, stmt->relation->relname),
						 errdetail("%s uses the column.", user),
						 errhint("Drop the continuous views and transforms that use the column first.")));
		}
	}
}

/*
 * A plain CREATE OR REPLACE VIEW must not swap the query of a continuous
 * view or transform for another: the view would no longer show what its
 * materialization and triggers maintain.  pg_restore's own (the view's
 * definition, over its materialization) is let through.
 */
static void
check_replace_view(ViewStmt *stmt)
{
	Oid			relid = RangeVarGetRelid(stmt->view, NoLock, true);

	if (OidIsValid(relid) && OidIsValid(catalog_stream_of(relid)) &&
		!replace_reads_own_parts(relid, stmt->query))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a continuous %s", stmt->view->relname,
						catalog_is_transform(relid) ? "transform" : "view"),
				 catalog_is_transform(relid) ?
				 errhint("Drop the continuous transform and create it again.") :
				 errhint("Use CREATE OR REPLACE VIEW %s WITH (continuous) AS ... to change its query.",
						 stmt->view->relname)));
}

/*
 * DROP VIEW of continuous views and transforms: lock their streams first.
 *
 * Writers lock the stream, then (in the maintenance trigger) the
 * materialization and side tables.  Left alone, DROP VIEW locks the view and
 * its materialization first and the stream last (dropping the trigger takes
 * AccessExclusiveLock on it), so a writer in the middle of its batches and
 * DROP VIEW wait for each other.  Taking the stream's lock up front gives
 * both one order: DROP VIEW queues behind the writers of the stream, and
 * writers that come after it wait for it and then no longer see the view.
 * Only the view's owner (who may drop it) takes the lock; anyone else gets
 * DROP VIEW's own permission error without blocking anyone.
 */
static void
lock_streams_of_dropped_views(DropStmt *stmt)
{
	ListCell   *lc;

	if (stmt->removeType != OBJECT_VIEW)
		return;
	foreach(lc, stmt->objects)
	{
		Oid			relid = RangeVarGetRelid(makeRangeVarFromNameList(lfirst(lc)),
											 NoLock, true);
		Oid			streamid;

		if (!OidIsValid(relid) || !pg_class_ownercheck(relid, GetUserId()))
			continue;
		streamid = catalog_stream_of(relid);
		if (OidIsValid(streamid))
			LockRelationOid(streamid, AccessExclusiveLock);
	}
}

/*
 * A continuous view or transform just created on a stream that stores no
 * rows (retain => false) was backfilled from nothing: say so.
 */
static void
notice_nothing_backfilled(RangeVar *view)
{
	Oid			viewid;
	Oid			streamid = InvalidOid;

	/* see what CREATE VIEW has just written */
	CommandCounterIncrement();
	viewid = RangeVarGetRelid(view, NoLock, true);
	if (OidIsValid(viewid))
	{
		catalog_read_latest_begin();
		streamid = catalog_stream_of(viewid);
		catalog_read_latest_end();
	}
	/* (a view built by a Kafka replay, kafka/replay.c, starts from the topic) */
	if (OidIsValid(streamid) && se_rel_discards_rows(streamid) && !backfill_replays(viewid))
		ereport(NOTICE,
				(errmsg("stream \"%s\" does not retain rows: \"%s\" starts empty",
						get_rel_name(streamid), view->relname),
				 errdetail("Rows inserted before now went only to what existed then; \"%s\" gets the rows inserted from now on.",
						   view->relname)));
}

/* stream_ext.maintain_views, maintain, maintain_rollup, transform or reject_stream_modification? */
static bool
is_stream_ext_trigger_function(List *funcname)
{
	char	   *schema;
	char	   *name;

	DeconstructQualifiedName(funcname, &schema, &name);
	return schema != NULL && strcmp(schema, "stream_ext") == 0 &&
		(strcmp(name, "maintain_views") == 0 ||
		 strcmp(name, "maintain") == 0 ||
		 strcmp(name, "maintain_rollup") == 0 ||
		 strcmp(name, "transform") == 0 ||
		 strcmp(name, "reject_stream_modification") == 0);
}

static void
stream_ext_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
						  bool readOnlyTree, ProcessUtilityContext context,
						  ParamListInfo params, QueryEnvironment *queryEnv,
						  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	bool		drops = false;
	List	   *renamed = NIL;	/* definitions naming a stream renamed */
	bool		updated = IsA(parsetree, AlterExtensionStmt) &&
		strcmp(((AlterExtensionStmt *) parsetree)->extname, "stream_ext") == 0;
	CreateTrigStmt *trigger = NULL;
	GrantStmt  *grant = NULL;
	bool		schedule;

	/* the pg_cron job of stream_ext.run_maintenance() (housekeeping/retention.c) */
	schedule = retention_utility_before(parsetree);

	if (IsA(parsetree, ViewStmt))
	{
		ViewStmt   *stmt = (ViewStmt *) parsetree;
		bool		has_option = false;
		ListCell   *lc;

		foreach(lc, stmt->options)
			has_option |= (strcmp(((DefElem *) lfirst(lc))->defname, "continuous") == 0);
		if (has_option)
		{
			List	   *cvopts = NIL;

			if (readOnlyTree)
			{
				pstmt = copyObject(pstmt);
				parsetree = pstmt->utilityStmt;
				stmt = (ViewStmt *) parsetree;
				readOnlyTree = false;
			}
			if (ddl_take_continuous_option(stmt, &cvopts))
			{
				ddl_create_view(stmt, cvopts, queryString,
								pstmt->stmt_location, pstmt->stmt_len);
				notice_nothing_backfilled(stmt->view);
				if (qc)
					SetQueryCompletion(qc, CMDTAG_CREATE_VIEW, 0);
				return;			/* schedule is false: not an extension statement */
			}
		}
		if (stmt->replace && !ddl_replacing_view() && stream_ext_installed())
			check_replace_view(stmt);
	}
	else if (IsA(parsetree, AlterTableStmt) || IsA(parsetree, RenameStmt) ||
			 IsA(parsetree, AlterObjectSchemaStmt))
	{
		if (stream_ext_installed())
		{
			/* ALTER VIEW v SET (ttl = ...): ddl/alter_view.c */
			if (IsA(parsetree, AlterTableStmt) &&
				ddl_alter_view_options((AlterTableStmt *) parsetree))
			{
				if (qc)
					SetQueryCompletion(qc, CMDTAG_ALTER_VIEW, 0);
				return;
			}
			check_alter(parsetree);
			/* functions, types, joined tables named by maintenance SQL */
			ddl_check_used_object_alter(parsetree);
			if (!IsA(parsetree, AlterTableStmt))
				renamed = ddl_definitions_before_alter(parsetree);
		}
	}
	else if (IsA(parsetree, AlterEnumStmt) && stream_ext_installed())
		ddl_check_used_object_alter(parsetree);
	else if (IsA(parsetree, DropStmt))
	{
		drops = !((DropStmt *) parsetree)->concurrent;
		if (((DropStmt *) parsetree)->removeType == OBJECT_TRIGGER && stream_ext_installed())
		{
			ListCell   *lc;

			foreach(lc, ((DropStmt *) parsetree)->objects)
			{
				List	   *names = lfirst_node(List, lc);

				/* relation's name list, then the trigger's name */
				check_stream_trigger(RangeVarGetRelid(makeRangeVarFromNameList(list_truncate(list_copy(names),
																							 list_length(names) - 1)),
													  NoLock, true),
									 strVal(llast(names)), "drop");
			}
		}
		if (stream_ext_installed())
			lock_streams_of_dropped_views((DropStmt *) parsetree);
	}
	else if (IsA(parsetree, DropOwnedStmt))
		drops = true;
	else if (IsA(parsetree, CreateTrigStmt) &&
			 is_stream_ext_trigger_function(((CreateTrigStmt *) parsetree)->funcname))
		trigger = (CreateTrigStmt *) parsetree;
	else if (IsA(parsetree, GrantStmt))
		grant = (GrantStmt *) parsetree;

	/* no user triggers or rules on internal tables (ddl/internal_tables.c) */
	if ((IsA(parsetree, CreateTrigStmt) || IsA(parsetree, RuleStmt)) &&
		stream_ext_installed())
		ddl_check_internal_trigger_or_rule(parsetree);

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	/* its views' recorded definitions name the stream anew (ddl/used_objects.c) */
	ddl_record_renamed_stream(renamed);

	/*
	 * ALTER EXTENSION stream_ext UPDATE: views made by an older version
	 * lack the dependencies this one records at CREATE (the objects their
	 * definitions use: ddl/used_objects.c); pg_restore's repair records them.
	 */
	if (updated && stream_ext_installed() && catalog_extension_is_current())
	{
		ListCell   *lc;

		foreach(lc, catalog_all_streams())
			(void) ddl_restore_dependencies(lfirst_oid(lc));
	}

	if (drops && stream_ext_installed() && catalog_remove_orphans() > 0)
	{
		/* shared storages that lost members (ddl/shared_storage.c) */
		shared_storage_after_drop();
		ddl_drop_unused_views_triggers();
		ddl_notify_pgrst_reload();
	}

	/* pg_restore creating a stream's triggers: see ddl_restore_dependencies() */
	if (trigger && stream_ext_installed())
	{
		Oid			relid = RangeVarGetRelid(trigger->relation, NoLock, true);

		/* a stream, or a view's delta feeding roll-ups (query/rollup.c) */
		if (OidIsValid(relid))
			(void) ddl_restore_dependencies(relid);
	}

	/* change streams follow their views' grants (maintain/changes.c) */
	if (grant && stream_ext_installed())
		changes_follow_grant(grant);

	if (schedule)
		retention_utility_after();
}

void
ddl_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = stream_ext_ProcessUtility;
}
