/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  The utility hook.  PostgreSQL's grammar cannot be extended, so
 *	  CREATE CONTINUOUS VIEW is spelled CREATE VIEW ... WITH (continuous);
 *	  this hook intercepts it and builds the continuous view in the same
 *	  transaction: materialization table and its unique index, side tables
 *	  for count(DISTINCT), the user-facing view, the maintenance trigger on
 *	  the stream, dependencies, catalog entry and the backfill from rows the
 *	  stream already holds.  An error anywhere rolls all of it back.
 *
 *	  It also keeps users from breaking what continuous views rely on
 *	  (altering columns a view reads, touching materializations) and
 *	  forgets catalog entries of dropped objects.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/async.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_clause.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "ddl/ddl.h"
#include "housekeeping/retention.h"
#include "maintain/maintain.h"
#include "maintain/transform.h"
#include "query/analyze.h"
#include "query/joins.h"
#include "windows/lateness.h"
#include "windows/sessions.h"
#include "windows/windows.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* stream_ext.notify_pgrst: tell PostgREST to reload its schema cache */
static bool notify_pgrst = true;

/*
 * NOTIFY pgrst, 'reload schema': PostgREST (db-channel-enabled) reloads its
 * schema cache when the transaction commits.  Sent when continuous views
 * come and go, and by stream_ext.expose()/unexpose().
 */
static void
notify_pgrst_reload(void)
{
	if (notify_pgrst)
		Async_Notify("pgrst", "reload schema");
}

/*
 * Does this CREATE VIEW ask for a continuous view?  Removes the option; the
 * other options of a continuous view are returned in *cvopts.
 */
static bool
take_continuous_option(ViewStmt *stmt, List **cvopts)
{
	ListCell   *lc;
	bool		continuous = false;
	bool		seen = false;
	List	   *rest = NIL;

	foreach(lc, stmt->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "continuous") == 0)
		{
			continuous = defGetBoolean(def);
			seen = true;
		}
		else
			rest = lappend(rest, def);
	}
	if (!seen)
		return false;
	*cvopts = continuous ? rest : NIL;
	stmt->options = continuous ? NIL : rest;
	return continuous;
}

static void
reject_unknown_options(List *options)
{
	if (options != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized continuous view option \"%s\"",
						((DefElem *) linitial(options))->defname)));
}

static void
run_sql(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc < 0)
		elog(ERROR, "stream_ext: SPI_execute failed (%s): %s",
			 SPI_result_code_string(rc), sql);
}

/*
 * Fillfactor of a materialization.  A batch updates each group's row once
 * per maintenance statement (once for the states, once more per
 * count(DISTINCT)), and the versions it replaces are still live until the
 * batch commits, so a page needs room for one new version of each of its
 * rows per statement for every update to stay HOT (no new index entry, no
 * index bloat).  Time-bucketed views touch all rows of their newest pages
 * in every batch: with 70, only ~57% of those updates were HOT.
 */
static int
matrel_fillfactor(CVPlan *plan)
{
	ListCell   *lc;
	int			updates = 1;

	foreach(lc, plan->aggs)
	{
		if (((CVAgg *) lfirst(lc))->is_distinct)
			updates++;
	}
	return Max(100 / (updates + 1), 10);
}

static void
create_guard_trigger(const char *rel)
{
	run_sql(psprintf("CREATE TRIGGER stream_ext_guard"
					 " BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s"
					 " FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.guard_materialization()",
					 rel));
}

/* run a maintenance statement over the whole stream with a fresh snapshot */
static void
backfill(const char *sql)
{
	SPIPlanPtr	plan;
	int			rc;
	MemoryContext cxt = CurrentMemoryContext;

	se_maintenance_begin();
	PG_TRY();
	{
		plan = SPI_prepare(sql, 0, NULL);
		if (plan == NULL)
			elog(ERROR, "stream_ext: could not prepare backfill: %s",
				 SPI_result_code_string(SPI_result));
		rc = SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(),
								  InvalidSnapshot, false, true, 0);
		if (rc < 0)
			elog(ERROR, "stream_ext: backfill failed: %s", SPI_result_code_string(rc));
		SPI_freeplan(plan);
	}
	PG_CATCH();
	{
		se_maintenance_end();
		se_rethrow_short_context(cxt, list_make1((char *) sql),
								 "backfill of the new continuous view from the rows already in its stream");
	}
	PG_END_TRY();
	se_maintenance_end();
}

/*
 * Describe each column of a continuous view (psql \d+ shows it): group
 * keys as such, other columns by the expression they compute.
 */
static void
comment_columns(Query *query, CVPlan *plan, const char *vq)
{
	List	   *context = deparse_context_for(get_rel_name(plan->streamid),
											  plan->streamid);
	ListCell   *lc;
	ListCell   *nc = list_head(plan->colnames);
	Bitmapset  *only_stream = bms_make_singleton(1);

	/*
	 * Constants read the same whatever the reader's settings: the caller
	 * pinned them (se_pin_settings()).
	 */

	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		const char *colname;
		char	   *text;
		const char *comment;

		if (tle->resjunk)
			continue;
		colname = strVal(lfirst(nc));
		nc = lnext(plan->colnames, nc);
		if (!bms_is_subset(pull_varnos(NULL, (Node *) tle->expr), only_stream))
			continue;
		text = deparse_expression((Node *) tle->expr, context, false, false);
		if (tle->ressortgroupref != 0 &&
			get_sortgroupref_clause_noerr(tle->ressortgroupref, query->groupClause) != NULL)
			comment = psprintf("group key: %s", text);
		else if (contain_agg_clause((Node *) tle->expr))
			comment = psprintf("%s, maintained incrementally", text);
		else
			continue;
		run_sql(psprintf("COMMENT ON COLUMN %s.%s IS %s", vq,
						 quote_identifier(colname), quote_literal_cstr(comment)));
	}
}

/*
 * A continuous view or transform reads every row inserted into its stream;
 * it cannot apply row-level security policies to them, so it may only be
 * created by a role the stream's policies do not restrict.
 */
static void
check_creator_rls(Oid streamid)
{
	bool		enabled;
	bool		forced;

	stream_rls_flags(streamid, &enabled, &forced);
	if (stream_rls_applies(streamid, GetUserId(), enabled, forced))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot create a continuous view over stream \"%s\": row-level security applies to you",
						get_rel_name(streamid)),
				 errdetail("A continuous view aggregates every row inserted into its stream and cannot apply row-level security policies to them."),
				 errhint("Create the view as the stream's owner or as a role with BYPASSRLS, or disable row-level security on the stream.")));
}

static void
create_continuous_view(ViewStmt *stmt, List *cvopts, const char *queryString,
					   int stmt_location, int stmt_len)
{
	SessionSpec session;
	LatenessSpec lateness;
	List	   *window_opts;
	TtlSpec		ttl;
	CVOptions	opts;
	RawStmt    *raw;
	Query	   *query;
	CVPlan		plan;
	Oid			nspid;
	Oid			existing;
	char	   *nspname;
	char	   *viewname = stmt->view->relname;
	char	   *matrelname;
	char	   *definition;
	char	   *mq;
	char	   *sq;
	char	   *vq;
	Oid			matrelid;
	Oid			viewid;
	Oid			trigid;
	char	   *trigname;
	char	   *maintain_sql;
	List	   *distinct_sql = NIL;
	List	   *backfill_sql = NIL;
	List	   *auxids = NIL;
	ListCell   *lc;
	int			nestlevel;
	SeRunAs		runas;

	if (!stream_ext_installed())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"stream_ext\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION stream_ext.")));
	if (stmt->replace)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("CREATE OR REPLACE is not supported for continuous views"),
				 errhint("Drop the continuous view and create it again.")));
	if (stmt->view->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous views cannot be temporary")));
	if (stmt->withCheckOption != NO_CHECK_OPTION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("WITH CHECK OPTION is not supported for continuous views")));
	cvopts = sessions_take_options(cvopts, &session);
	cvopts = window_take_options(cvopts, &window_opts);
	cvopts = lateness_take_options(cvopts, &lateness);
	cvopts = retention_take_options(cvopts, &ttl);
	cvopts = cv_take_options(cvopts, &opts);
	reject_unknown_options(cvopts);

	/* analyze the query as the user wrote it, with the user's search_path */
	raw = makeNode(RawStmt);
	raw->stmt = copyObject(stmt->query);
	raw->stmt_location = stmt_location;
	raw->stmt_len = stmt_len;
	query = parse_analyze_fixedparams(raw, queryString, NULL, 0, NULL);
	if (transform_applies(query))
	{
		/* no aggregates: a continuous transform (maintain/transform.c) */
		if (session.enabled || window_opts != NIL || lateness.enabled || ttl.enabled)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("window, session, lateness and ttl options are not supported for continuous transforms"),
					 errdetail("A view without aggregates or GROUP BY is a continuous transform.")));
		if (list_length(query->rtable) >= 1 &&
			linitial_node(RangeTblEntry, query->rtable)->rtekind == RTE_RELATION)
			check_creator_rls(linitial_node(RangeTblEntry, query->rtable)->relid);
		transform_create(stmt, query, queryString, &opts);
		notify_pgrst_reload();
		return;
	}
	cv_check_view_options(&opts);
	cv_analyze(query, queryString, stmt->aliases, &plan);
	if (joins_has_tables(plan.query) &&
		(session.enabled || lateness.enabled ||
		 (plan.window && plan.window->kind != CV_WINDOW_TUMBLING) ||
		 window_opts != NIL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a join is not supported in a continuous view with session windows, sliding or hopping windows, allowed_lateness or emit"),
				 errdetail("A joined continuous view may group by tumble() or any other expression of the stream and the tables.")));
	window_apply_options(&plan, window_opts, session.enabled);
	if (session.enabled)
		sessions_validate(&session, &plan);
	if (ttl.enabled)
		retention_validate(&ttl, &plan, session.enabled);

	/* the creator must be able to read everything the view reads */
	ExecCheckRTPerms(query->rtable, true);

	/* ... every row of it: no row-level security may hide any from them */
	check_creator_rls(plan.streamid);

	/*
	 * Keep writers out of the stream until we commit: rows committed before
	 * are backfilled, rows inserted after see the maintenance trigger.
	 */
	LockRelationOid(plan.streamid, ShareRowExclusiveLock);

	nspid = RangeVarGetAndCheckCreationNamespace(stmt->view, NoLock, &existing);
	if (OidIsValid(existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", viewname)));
	nspname = get_namespace_name(nspid);
	definition = pg_get_querydef(query, true);
	matrelname = ChooseRelationName(viewname, NULL, "mrel", nspid, false);

	/*
	 * From here on every name we write or read is schema-qualified, and
	 * every text we generate or deparse (constants, intervals) is made
	 * under the pinned settings of src/core/security.c.
	 */
	nestlevel = se_pin_settings(NULL);

	SPI_connect();

	/* generates SQL: after the settings are pinned */
	if (lateness.enabled)
		lateness_validate(&lateness, &plan, query, plan.streamid,
						  session.enabled ? &session : NULL);

	mq = quote_qualified_identifier(nspname, matrelname);
	sq = quote_qualified_identifier(get_namespace_name(get_rel_namespace(plan.streamid)),
									get_rel_name(plan.streamid));
	vq = quote_qualified_identifier(nspname, viewname);

	if (session.enabled)
	{
		/* fragments, appended: see windows/sessions.c */
		run_sql(psprintf("CREATE TABLE %s (%s)", mq,
						 sessions_matrel_columns_sql(&session, cv_matrel_columns_sql(&plan))));
		run_sql(sessions_index_sql(&plan, mq));
	}
	else
	{
		run_sql(psprintf("CREATE TABLE %s (%s%s) WITH (fillfactor = %d)",
						 mq, cv_matrel_columns_sql(&plan),
						 cv_matrel_hash_column_sql(&plan), matrel_fillfactor(&plan)));
		run_sql(cv_matrel_index_sql(&plan, mq));
	}
	matrelid = get_relname_relid(matrelname, nspid);
	create_guard_trigger(mq);

	foreach(lc, plan.aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		char	   *auxname;
		char	   *aq;

		if (!agg->is_distinct)
			continue;
		auxname = ChooseRelationName(viewname, agg->colname, "mrel", nspid, false);
		aq = quote_qualified_identifier(nspname, auxname);
		run_sql(psprintf("CREATE TABLE %s (%s)", aq, cv_auxrel_columns_sql(&plan, agg)));
		run_sql(cv_auxrel_index_sql(&plan, agg, aq));
		create_guard_trigger(aq);
		auxids = lappend_oid(auxids, get_relname_relid(auxname, nspid));
		distinct_sql = lappend(distinct_sql,
							   cv_distinct_sql(&plan, agg, mq, aq, CV_NEW_ROWS));
		backfill_sql = lappend(backfill_sql,
							   cv_distinct_sql(&plan, agg, mq, aq, sq));
	}

	run_sql(psprintf("CREATE VIEW %s AS %s", vq,
					 session.enabled ?
					 cv_view_select_sql(&plan, matrelid,
										sessions_view_source_sql(&session, &plan, mq)) :
					 window_view_select_sql(&plan, matrelid, mq)));
	viewid = get_relname_relid(viewname, nspid);

	maintain_sql = session.enabled ?
		sessions_maintain_sql(&session, &plan, mq, CV_NEW_ROWS) :
		cv_maintain_sql(&plan, mq, CV_NEW_ROWS);
	trigname = psprintf("stream_ext_maintain_%u", matrelid);
	/* a restored database keeps the names of the OIDs of the dumped one */
	for (int n = 2; OidIsValid(get_trigger_oid(plan.streamid, trigname, true)); n++)
		trigname = psprintf("stream_ext_maintain_%u_%d", matrelid, n);

	/*
	 * Reading a stream is enough to build a view over it, but a trigger can
	 * only be created by the stream's owner: create this fixed one as the
	 * owner.  It runs maintenance as the view's owner, not the stream's.
	 */
	se_run_as_role(&runas, relation_owner(plan.streamid));
	run_sql(psprintf("CREATE TRIGGER %s AFTER INSERT ON %s"
					 " REFERENCING NEW TABLE AS " CV_NEW_ROWS
					 " FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.maintain(%s)",
					 quote_identifier(trigname), sq, quote_literal_cstr(mq)));
	se_restore(&runas);
	trigid = get_trigger_oid(plan.streamid, trigname, false);

	/*
	 * The materialization and side tables are internal parts of the view:
	 * DROP VIEW takes them along, and dropping them alone is refused.  They
	 * depend on the stream, so DROP of the stream needs CASCADE.  The
	 * trigger goes with the view.
	 */
	record_dependency(RelationRelationId, matrelid, RelationRelationId, viewid,
					  DEPENDENCY_INTERNAL);
	record_dependency(RelationRelationId, matrelid, RelationRelationId,
					  plan.streamid, DEPENDENCY_NORMAL);
	joins_record_dependencies(plan.query, matrelid);
	foreach(lc, auxids)
		record_dependency(RelationRelationId, lfirst_oid(lc), RelationRelationId,
						  viewid, DEPENDENCY_INTERNAL);
	record_dependency(TriggerRelationId, trigid, RelationRelationId, viewid,
					  DEPENDENCY_AUTO);
	CommandCounterIncrement();

	catalog_insert_view(viewid, plan.streamid, matrelid, auxids, definition,
						maintain_sql, distinct_sql);
	if (opts.notify)
		cv_record_notify(viewid, opts.notify);
	if (session.enabled)
		sessions_record(viewid, &session, sessions_compact_sql(&session, &plan, mq));
	window_record(&plan, viewid, matrelid);
	if (ttl.enabled)
		retention_record(viewid, &ttl, &plan, mq, auxids);

	/* start from what the stream already holds */
	if (lateness.enabled)
		lateness_before_backfill(&lateness);
	backfill(session.enabled ? sessions_maintain_sql(&session, &plan, mq, sq) :
			 cv_maintain_sql(&plan, mq, sq));
	foreach(lc, backfill_sql)
		backfill((char *) lfirst(lc));
	if (lateness.enabled)
		lateness_record(viewid, &lateness, &plan, sq, vq);

	/* describe the view (psql \dv+, PostgREST's OpenAPI output) */
	run_sql(psprintf("COMMENT ON VIEW %s IS %s", vq, quote_literal_cstr(definition)));
	comment_columns(query, &plan, vq);
	foreach(lc, window_comment_sql(&plan, query, vq))
		run_sql((char *) lfirst(lc));
	if (session.enabled)
	{
		run_sql(psprintf("COMMENT ON COLUMN %s.session_start IS %s", vq,
						 quote_literal_cstr(psprintf("session window: earliest %s of the session (session_gap %s)",
													 session.time_column, session.gap_text))));
		run_sql(psprintf("COMMENT ON COLUMN %s.session_end IS %s", vq,
						 quote_literal_cstr(psprintf("session window: latest %s of the session",
													 session.time_column))));
	}

	SPI_finish();
	se_unpin_settings(nestlevel);

	notify_pgrst_reload();
}

/* Is relid a stream that continuous views read? */
static bool
is_stream_with_views(Oid relid)
{
	return OidIsValid(relid) && catalog_stream_has_views(relid);
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
		if (!se_in_maintenance() && catalog_is_matrel(relid))
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

/* stream_ext.maintain or stream_ext.reject_stream_modification? */
static bool
is_stream_ext_trigger_function(List *funcname)
{
	char	   *schema;
	char	   *name;

	DeconstructQualifiedName(funcname, &schema, &name);
	return schema != NULL && strcmp(schema, "stream_ext") == 0 &&
		(strcmp(name, "maintain") == 0 ||
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
	CreateTrigStmt *trigger = NULL;

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
			if (take_continuous_option(stmt, &cvopts))
			{
				create_continuous_view(stmt, cvopts, queryString,
									   pstmt->stmt_location, pstmt->stmt_len);
				if (qc)
					SetQueryCompletion(qc, CMDTAG_CREATE_VIEW, 0);
				return;
			}
		}
	}
	else if (IsA(parsetree, AlterTableStmt) || IsA(parsetree, RenameStmt) ||
			 IsA(parsetree, AlterObjectSchemaStmt))
	{
		if (stream_ext_installed())
			check_alter(parsetree);
	}
	else if (IsA(parsetree, DropStmt))
	{
		drops = !((DropStmt *) parsetree)->concurrent;
		if (stream_ext_installed())
			lock_streams_of_dropped_views((DropStmt *) parsetree);
	}
	else if (IsA(parsetree, DropOwnedStmt))
		drops = true;
	else if (IsA(parsetree, CreateTrigStmt) &&
			 is_stream_ext_trigger_function(((CreateTrigStmt *) parsetree)->funcname))
		trigger = (CreateTrigStmt *) parsetree;

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	if (drops && stream_ext_installed() && catalog_remove_orphans() > 0)
		notify_pgrst_reload();

	/* pg_restore creating a stream's triggers: see catalog_restore_dependencies() */
	if (trigger && stream_ext_installed())
	{
		Oid			relid = RangeVarGetRelid(trigger->relation, NoLock, true);

		if (OidIsValid(relid) && catalog_is_stream(relid))
			(void) catalog_restore_dependencies(relid);
	}
}

void
ddl_define_gucs(void)
{
	DefineCustomBoolVariable("stream_ext.notify_pgrst",
							 "Sends NOTIFY pgrst, 'reload schema' when continuous views are created, dropped, exposed or unexposed.",
							 "PostgREST reloads its schema cache on this notification (db-channel-enabled).",
							 &notify_pgrst,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

void
ddl_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = stream_ext_ProcessUtility;
}
