/*-------------------------------------------------------------------------
 *
 * create_view.c
 *	  CREATE VIEW ... WITH (continuous).  PostgreSQL's grammar cannot be
 *	  extended, so CREATE CONTINUOUS VIEW is spelled that way; the utility
 *	  hook (ddl/utility.c) hands it here, and the continuous view is built
 *	  in the same transaction: materialization table and its unique index,
 *	  the delta batches append to (unless the view upserts, see
 *	  cv_appends()), side tables for count(DISTINCT), the user-facing view, the
 *	  maintenance trigger on the stream, dependencies, catalog entry and
 *	  the backfill from rows the stream already holds.  An error anywhere
 *	  rolls all of it back.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
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
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "ddl/create_view.h"
#include "ddl/replace_view.h"
#include "housekeeping/retention.h"
#include "maintain/maintain.h"
#include "maintain/transform.h"
#include "query/analyze.h"
#include "query/joins.h"
#include "query/stream_joins.h"
#include "windows/lateness.h"
#include "windows/sessions.h"
#include "windows/windows.h"

/* stream_ext.notify_pgrst: tell PostgREST to reload its schema cache */
static bool notify_pgrst = true;

/*
 * NOTIFY pgrst, 'reload schema': PostgREST (db-channel-enabled) reloads its
 * schema cache when the transaction commits.  Sent when continuous views
 * come and go, and by stream_ext.expose()/unexpose().
 */
void
ddl_notify_pgrst_reload(void)
{
	if (notify_pgrst)
		Async_Notify("pgrst", "reload schema");
}

/*
 * Does this CREATE VIEW ask for a continuous view?  Removes the option; the
 * other options of a continuous view are returned in *cvopts.
 */
bool
ddl_take_continuous_option(ViewStmt *stmt, List **cvopts)
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

/* run a maintenance statement over the whole stream with a fresh snapshot */
static void
backfill(const char *sql)
{
	SPIPlanPtr	plan;
	int			rc;
	MemoryContext cxt = CurrentMemoryContext;

	se_materialize_begin();
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
		se_materialize_end();
		se_rethrow_short_context(cxt, list_make1((char *) sql),
								 "backfill of the new continuous view from the rows already in its stream");
	}
	PG_END_TRY();
	se_materialize_end();
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
		se_run_sql(psprintf("COMMENT ON COLUMN %s.%s IS %s", vq,
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

/* stream_ext.maintain_views(), or InvalidOid before ALTER EXTENSION UPDATE */
static Oid
views_trigger_function(void)
{
	List	   *name = list_make2(makeString("stream_ext"), makeString("maintain_views"));

	return LookupFuncName(name, 0, NULL, true);
}

/* the stream's stream_ext.maintain_views() trigger, or InvalidOid */
static Oid
views_trigger_of(Oid streamid, Oid funcid)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			result = InvalidOid;

	rel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(streamid));
	scan = systable_beginscan(rel, TriggerRelidNameIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_trigger tg = (Form_pg_trigger) GETSTRUCT(tup);

		if (tg->tgfoid == funcid)
		{
			result = tg->oid;
			break;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * The one trigger maintaining every continuous view of a stream
 * (stream_ext.maintain_views(), maintain/maintain.c), made with the
 * stream's first view.  Either way the stream's cached trigger state is
 * dropped in every backend when this transaction commits, so that the next
 * batch sees the new view.
 *
 * Before ALTER EXTENSION stream_ext UPDATE to 0.3 there is no such
 * function: the view gets its own trigger, stream_ext.maintain(its
 * materialization), as views did before 0.3, which goes with the view.
 */
static void
create_maintenance_trigger(Oid streamid, Oid viewid, Oid matrelid, const char *mq)
{
	Oid			funcid = views_trigger_function();
	char	   *trigname = OidIsValid(funcid) ? "stream_ext_maintain" :
		psprintf("stream_ext_maintain_%u", matrelid);
	const char *base = trigname;
	Oid			trigid;
	SeRunAs		runas;

	if (!OidIsValid(funcid) || !OidIsValid(views_trigger_of(streamid, funcid)))
	{
		/* a restored database keeps the names of the OIDs of the dumped one */
		for (int n = 2; OidIsValid(get_trigger_oid(streamid, trigname, true)); n++)
			trigname = psprintf("%s_%d", base, n);

		/*
		 * Reading a stream is enough to build a view over it, but a trigger
		 * can only be created by the stream's owner: create this fixed one
		 * as the owner.  It runs maintenance as each view's owner, not the
		 * stream's.
		 */
		se_run_as_role(&runas, se_relation_owner(streamid));
		trigid = se_create_statement_trigger(streamid, trigname, TRIGGER_TYPE_AFTER,
											 TRIGGER_TYPE_INSERT,
											 OidIsValid(funcid) ? "maintain_views" : "maintain",
											 OidIsValid(funcid) ? NULL : mq, CV_NEW_ROWS);
		se_restore(&runas);
		if (!OidIsValid(funcid))
			se_record_dependency(TriggerRelationId, trigid, RelationRelationId, viewid,
								 DEPENDENCY_AUTO);
	}
	CacheInvalidateRelcacheByRelid(streamid);
}

/*
 * After a DROP: remove the stream_ext.maintain_views() trigger of every
 * stream that has no continuous view left.  Catalog rows of dropped views
 * are already gone (catalog_remove_orphans()).  Dropping a trigger is
 * internal here: the view's owner may drop the view, and with the last one
 * goes the trigger, whoever owns the stream.
 */
void
ddl_drop_unused_views_triggers(void)
{
	Oid			funcid = views_trigger_function();
	List	   *triggers;
	ListCell   *lc;

	if (!OidIsValid(funcid))
		return;
	triggers = catalog_triggers_without_views(funcid);
	foreach(lc, triggers)
	{
		ObjectAddress trigger;

		ObjectAddressSet(trigger, TriggerRelationId, lfirst_oid(lc));
		performDeletion(&trigger, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}
	if (triggers != NIL)
		CommandCounterIncrement();
}

void
ddl_create_view(ViewStmt *stmt, List *cvopts, const char *queryString,
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
	char	   *query_sql;
	bool		appends;
	char	   *dq = NULL;
	Oid			deltaid = InvalidOid;
	char	   *mq;
	char	   *sq;
	char	   *vq;
	Oid			matrelid;
	Oid			viewid;
	char	   *maintain_sql;
	List	   *distinct_sql = NIL;
	List	   *backfill_sql = NIL;
	List	   *auxids = NIL;
	ListCell   *lc;
	int			nestlevel;
	ReplaceState replace;

	if (!stream_ext_installed())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"stream_ext\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION stream_ext.")));
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
		/* and on the second stream of a join (query/stream_joins.c) */
		if (OidIsValid(sjoin_right_stream(query)))
			check_creator_rls(sjoin_right_stream(query));
		transform_create(stmt, query, queryString, &opts);
		ddl_notify_pgrst_reload();
		return;
	}
	cv_check_view_options(&opts);
	{
		/* FROM stream, stream_ext.hop(...): a copy reading the stream alone */
		CVWindow   *hop;
		Query	   *rewritten = window_rewrite_hop(query, queryString, &hop);

		cv_analyze(rewritten, queryString, stmt->aliases, hop, &plan);
	}
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
	if (OidIsValid(sjoin_right_stream(plan.query)))
		check_creator_rls(sjoin_right_stream(plan.query));

	/*
	 * Keep writers out of the stream until we commit: rows committed before
	 * are backfilled, rows inserted after see the maintenance trigger.
	 */
	LockRelationOid(plan.streamid, ShareRowExclusiveLock);

	/* CREATE OR REPLACE of an existing continuous view (ddl/replace_view.c) */
	replace_begin(stmt, &replace);
	nspid = RangeVarGetAndCheckCreationNamespace(stmt->view, NoLock, &existing);
	if (OidIsValid(existing) && !replace.replacing)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", viewname)));
	nspname = get_namespace_name(nspid);
	matrelname = ChooseRelationName(viewname, NULL, "mrel", nspid, false);

	/*
	 * From here on every name we write or read is schema-qualified, and
	 * every text we generate or deparse (constants, intervals) is made
	 * under the pinned settings of src/core/security.c.
	 */
	nestlevel = se_pin_settings(NULL);
	query_sql = pg_get_querydef(query, false);

	/*
	 * The recorded definition names everything outside pg_catalog with its
	 * schema, so that it can be analyzed again whatever the search_path
	 * (stream_ext.combine(), distributed views).
	 */
	definition = pg_get_querydef(query, true);

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
		se_run_sql(psprintf("CREATE TABLE %s (%s)", mq,
						 sessions_matrel_columns_sql(&session, cv_matrel_columns_sql(&plan))));
		se_run_sql(sessions_index_sql(&plan, mq));
	}
	else
	{
		se_run_sql(psprintf("CREATE TABLE %s (%s%s) WITH (fillfactor = %d)",
						 mq, cv_matrel_columns_sql(&plan),
						 cv_matrel_hash_column_sql(&plan), matrel_fillfactor(&plan)));
		se_run_sql(cv_matrel_index_sql(&plan, mq));
	}
	matrelid = get_relname_relid(matrelname, nspid);
	se_create_guard_trigger(matrelid);

	/*
	 * The delta: batches append their partial states here, compaction folds
	 * them into the materialization (docs/internals.md, "Append mode").
	 */
	appends = !session.enabled && cv_appends(&plan) && catalog_has_delta();
	if (appends)
	{
		char	   *deltaname = ChooseRelationName(viewname, NULL, "delta", nspid, false);

		dq = quote_qualified_identifier(nspname, deltaname);
		se_run_sql(psprintf("CREATE TABLE %s (%s%s)", dq, cv_matrel_columns_sql(&plan),
							cv_matrel_hash_column_sql(&plan)));
		deltaid = get_relname_relid(deltaname, nspid);
		se_create_guard_trigger(deltaid);
		if (cv_group_hash_index_sql(&plan, mq))
			se_run_sql(cv_group_hash_index_sql(&plan, mq));
	}

	foreach(lc, plan.aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		char	   *auxname;
		char	   *aq;
		Oid			auxid;

		if (!agg->is_distinct)
			continue;
		auxname = ChooseRelationName(viewname, agg->colname, "mrel", nspid, false);
		aq = quote_qualified_identifier(nspname, auxname);
		se_run_sql(psprintf("CREATE TABLE %s (%s)", aq, cv_auxrel_columns_sql(&plan, agg)));
		se_run_sql(cv_auxrel_index_sql(&plan, agg, aq));
		auxid = get_relname_relid(auxname, nspid);
		se_create_guard_trigger(auxid);
		auxids = lappend_oid(auxids, auxid);
		distinct_sql = lappend(distinct_sql,
							   cv_distinct_sql(&plan, agg, mq, aq, CV_NEW_ROWS, dq));
		backfill_sql = lappend(backfill_sql,
							   cv_distinct_sql(&plan, agg, mq, aq, sq, NULL));
	}

	replace_define_view(&replace, vq,
						session.enabled ?
						cv_view_select_sql(&plan, matrelid,
										   sessions_view_source_sql(&session, &plan, mq)) :
						window_view_select_sql(&plan, matrelid, mq, dq));
	viewid = get_relname_relid(viewname, nspid);

	maintain_sql = session.enabled ?
		sessions_maintain_sql(&session, &plan, mq, CV_NEW_ROWS) :
		appends ? cv_maintain_append_sql(&plan, dq, CV_NEW_ROWS) :
		cv_maintain_sql(&plan, mq, CV_NEW_ROWS);
	/*
	 * The materialization and side tables are internal parts of the view:
	 * DROP VIEW takes them along, and dropping them alone is refused.  They
	 * depend on the stream, so DROP of the stream needs CASCADE.  The
	 * stream's trigger goes with its last view (ddl_drop_unused_views_triggers()).
	 */
	se_record_dependency(RelationRelationId, matrelid, RelationRelationId, viewid,
						 DEPENDENCY_INTERNAL);
	se_record_dependency(RelationRelationId, matrelid, RelationRelationId,
						 plan.streamid, DEPENDENCY_NORMAL);
	joins_record_dependencies(plan.query, matrelid);
	foreach(lc, auxids)
		se_record_dependency(RelationRelationId, lfirst_oid(lc), RelationRelationId,
							 viewid, DEPENDENCY_INTERNAL);
	if (appends)
		se_record_dependency(RelationRelationId, deltaid, RelationRelationId, viewid,
							 DEPENDENCY_INTERNAL);
	create_maintenance_trigger(plan.streamid, viewid, matrelid, mq);
	/* a join of two streams: the second one's trigger too (query/stream_joins.c) */
	if (OidIsValid(sjoin_right_stream(plan.query)))
		create_maintenance_trigger(sjoin_right_stream(plan.query), viewid, matrelid, mq);
	CommandCounterIncrement();

	catalog_insert_view(viewid, plan.streamid, matrelid, auxids, definition,
						maintain_sql, distinct_sql);
	/* a replaced view's old stream may have no view left */
	if (replace.replacing)
		ddl_drop_unused_views_triggers();
	catalog_set_view_query(viewid, query_sql);
	if (appends)
		catalog_set_delta(viewid, deltaid, cv_compact_sql(&plan, mq, dq));
	if (opts.notify)
		cv_record_notify(viewid, opts.notify);
	if (session.enabled)
		sessions_record(viewid, &session, sessions_compact_sql(&session, &plan, mq));
	window_record(&plan, viewid, matrelid, dq);
	if (ttl.enabled)
		retention_record(viewid, &ttl, &plan, mq, dq, auxids);
	if (OidIsValid(sjoin_right_stream(plan.query)))
		sjoin_create_view(&plan, viewid, mq, dq, auxids);

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
	se_run_sql(psprintf("COMMENT ON VIEW %s IS %s", vq, quote_literal_cstr(definition)));
	comment_columns(query, &plan, vq);
	foreach(lc, window_comment_sql(&plan, query, vq))
		se_run_sql((char *) lfirst(lc));
	if (session.enabled)
	{
		se_run_sql(psprintf("COMMENT ON COLUMN %s.session_start IS %s", vq,
						 quote_literal_cstr(psprintf("session window: earliest %s of the session (session_gap %s)",
													 session.time_column, session.gap_text))));
		se_run_sql(psprintf("COMMENT ON COLUMN %s.session_end IS %s", vq,
						 quote_literal_cstr(psprintf("session window: latest %s of the session",
													 session.time_column))));
	}

	SPI_finish();
	se_unpin_settings(nestlevel);

	ddl_notify_pgrst_reload();
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
