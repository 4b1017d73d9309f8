/*-------------------------------------------------------------------------
 *
 * create_view.c
 *	  CREATE VIEW ... WITH (continuous).  PostgreSQL's grammar cannot be
 *	  extended, so CREATE CONTINUOUS VIEW is spelled that way; the utility
 *	  hook (ddl/utility.c) hands it here, and the continuous view is built
 *	  in the same transaction, in phases (ddl_create_view()):
 *
 *		options		create_options(): the table of ddl/view_options.c
 *		analyze		create_analyze(): the plan, each option checked against
 *					it, the creator's right to read, the stream locked
 *		build		create_build(): materialization and its indexes, the
 *					delta batches append to (unless the view upserts, see
 *					cv_appends()), side tables for count(DISTINCT), the
 *					user-facing view, dependencies, the stream's trigger
 *		record		create_record(): catalog rows
 *		backfill	create_view_backfill(): from rows the stream holds
 *		describe	create_describe(): comments
 *
 *	  A query without aggregates is a transform (ddl/create_transform.c);
 *	  the steps both take are ddl/create_steps.c's.  An error anywhere rolls
 *	  all of it back.
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
#include "ddl/create_steps.h"
#include "ddl/create_transform.h"
#include "ddl/create_view.h"
#include "ddl/rebuild.h"
#include "ddl/replace_view.h"
#include "ddl/shared_storage.h"
#include "ddl/used_objects.h"
#include "ddl/view_options.h"
#include "maintain/changes.h"
#include "maintain/maintain.h"
#include "query/analyze.h"
#include "query/joins.h"
#include "query/retract.h"
#include "query/rollup.h"
#include "query/sjoin_left.h"
#include "query/stream_joins.h"
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

	if (!OidIsValid(funcid) || !OidIsValid(views_trigger_of(streamid, funcid)))
	{
		/* a restored database keeps the names of the OIDs of the dumped one */
		for (int n = 2; OidIsValid(get_trigger_oid(streamid, trigname, true)); n++)
			trigname = psprintf("%s_%d", base, n);

		/* as the stream's owner; before 0.3, the view's own trigger */
		(void) create_stream_trigger(streamid, trigname,
									 OidIsValid(funcid) ? "maintain_views" : "maintain",
									 OidIsValid(funcid) ? NULL : mq,
									 OidIsValid(funcid) ? InvalidOid : viewid);
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

/*
 * A continuous view being created: what each phase of the pipeline below
 * hands to the next.
 */
typedef struct ViewBuild
{
	ViewStmt   *stmt;
	CVOptions opts;			/* options phase */
	Query	   *query;			/* analyze phase: as the user wrote it */
	CVPlan		plan;
	ReplaceState replace;
	Oid			nspid;
	char	   *nspname;
	char	   *definition;		/* build phase: deparsed, names qualified */
	bool		appends;		/* batches append to a delta */
	char	   *maintain_sql;	/* the per-batch statement */
	List	   *distinct_sql;	/* per count(DISTINCT): its side table's */
	List	   *backfill_sql;	/* ... and its backfill */
	char	   *bsq;			/* the backfill's FROM: the stream, or its rows
								 * since backfill_from */
	List	   *replay_distinct;	/* backfill = 'kafka': per count(DISTINCT) */
	ViewObjects obj;			/* the objects made */
	RollupSpec	rollup;			/* over a continuous view: its upstream
								 * (query/rollup.c) */
	/* CREATE OR REPLACE built beside the view (ddl/rebuild.c) */
	Oid			rebuild_of;		/* the view replaced; this one is its shadow */
	const char *partbase;		/* names of the parts: the replaced view's */
	char	   *select_sql;		/* the user-facing view's SELECT */
	SharedJoin *shared;			/* the shared storage it joins, or NULL
								 * (ddl/shared_storage.c) */
} ViewBuild;

/* phase 1: the statement and its options (ddl/view_options.c) */
static void
create_options(ViewStmt *stmt, List *cvopts, CVOptions *opts)
{
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
	view_options_parse(cvopts, opts);
}

/*
 * Phase 2 of an aggregate view: the plan (query/analyze.c), each option
 * checked against it, the creator's right to read, the stream locked, the
 * name free (or a continuous view being replaced).
 */
static void
create_analyze(ViewBuild *cv, const char *queryString)
{
	CVOptions *opts = &cv->opts;

	view_options_check_kind(opts, false);
	{
		/* FROM stream, stream_ext.hop(...): a copy reading the stream alone */
		CVWindow   *hop;
		Query	   *rewritten = window_rewrite_hop(cv->query, queryString, &hop);

		cv_analyze(rewritten, queryString, cv->stmt->aliases, hop, &cv->plan);
	}
	/* a LEFT JOIN of two streams takes allowed_lateness (query/sjoin_left.c) */
	if (!OidIsValid(cv->rollup.upstream))
		sjoin_left_prepare(&cv->plan, &opts->lateness);
	if (joins_has_tables(cv->plan.query) &&
		(opts->session.enabled || opts->lateness.enabled ||
		 (cv->plan.window && cv->plan.window->kind != CV_WINDOW_TUMBLING) ||
		 opts->window != NIL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a join is not supported in a continuous view with session windows, sliding or hopping windows, allowed_lateness or emit"),
				 errdetail("A joined continuous view may group by tumble() or any other expression of the stream and the tables.")));
	/* session windows are refused over a changelog stream (query/retract.c) */
	if (opts->session.enabled)
		se_retract_check_session(cv->plan.streamid);
	view_options_validate(opts, &cv->plan);

	if (OidIsValid(sjoin_right_stream(cv->plan.query)) &&
		(opts->backfill.given || opts->backfill.has_from))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backfill options are not supported for a join of two streams"),
				 errdetail("A join of two streams starts from the rows both streams retain."),
				 errhint("Drop the backfill options.")));
	if (OidIsValid(cv->rollup.upstream) &&
		(opts->backfill.has_from || opts->backfill.mode == BACKFILL_KAFKA))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backfill = 'kafka' and backfill_from are not supported for a view over a continuous view"),
				 errdetail("A view over a continuous view starts from its upstream's current states."),
				 errhint("Use backfill = 'stream' (the default) or 'none'.")));
	if (OidIsValid(cv->rollup.upstream))
	{
		/* SELECT on the upstream view; its delta held until we commit */
		ExecCheckRTPerms(cv->rollup.original->rtable, true);
		create_lock_stream(cv->rollup.updelta);
	}
	else
	{
		create_check_reader(cv->query, cv->plan.streamid);
		create_lock_stream(cv->plan.streamid);
	}

	/* CREATE OR REPLACE of an existing continuous view (ddl/replace_view.c) */
	replace_begin(cv->stmt, &cv->replace);
	if (cv->replace.replacing)
	{
		rollup_check_replace(RangeVarGetRelid(cv->stmt->view, NoLock, true));
		changes_refuse_replace(cv->replace.viewid);
	}
	cv->nspid = create_namespace(cv->stmt, cv->replace.replacing);
	cv->nspname = get_namespace_name(cv->nspid);
}

/*
 * CREATE TABLE of a part of the view: SQL text, whose column types the
 * parser resolves.  Returns its OID; the caller adds indexes (through
 * DefineIndex()) and then the guard trigger (only maintenance writes it).
 */
static Oid
create_table(ViewBuild *cv, const char *name, const char *sql)
{
	se_run_sql(sql);
	return get_relname_relid(name, cv->nspid);
}

/*
 * May the view share a storage with views of its stream (ddl/shared_storage.c)?
 * Not with options that read or write its tables on their own (windows
 * other than tumbling keys, sessions, TTL, allowed_lateness, emit,
 * changes, backfill from Kafka), nor a roll-up, a join of two streams, a
 * rebuild beside a view, count(DISTINCT), no GROUP BY, a changelog stream.
 */
static bool
create_may_share(ViewBuild *cv)
{
	CVOptions  *opts = &cv->opts;
	ListCell   *lc;

	if (opts->window != NIL || opts->session.enabled || opts->lateness.enabled ||
		opts->ttl.enabled || opts->changes || opts->backfill.replay_source ||
		opts->backfill.mode == BACKFILL_KAFKA ||
		OidIsValid(cv->rollup.upstream) || OidIsValid(cv->rebuild_of) ||
		cv->replace.replacing || OidIsValid(sjoin_right_stream(cv->plan.query)) ||
		cv->plan.window != NULL || cv->plan.keyless ||
		se_stream_is_changelog(cv->plan.streamid) ||
		!cv_appends(&cv->plan) || !catalog_has_delta())
		return false;
	foreach(lc, cv->plan.aggs)
	{
		if (((CVAgg *) lfirst(lc))->is_distinct)
			return false;
	}
	return true;
}

/*
 * Phase 3, settings pinned: the materialization (sessions: windows/
 * sessions.c's), the delta, the side tables of count(DISTINCT), the
 * user-facing view, their dependencies and the stream's trigger.
 */
static void
create_build(ViewBuild *cv)
{
	CVPlan	   *plan = &cv->plan;
	ViewObjects *obj = &cv->obj;
	SessionSpec *session = &cv->opts.session;
	char	   *viewname = cv->stmt->view->relname;
	const char *partbase = cv->partbase ? cv->partbase : viewname;
	char	   *matrelname = ChooseRelationName(partbase, NULL, "mrel", cv->nspid, false);
	char	   *mq;
	char	   *dq = NULL;
	ListCell   *lc;

	/*
	 * The recorded definition names everything outside pg_catalog with its
	 * schema (search_path is pinned), so that it can be analyzed again
	 * whatever the search_path: by maintenance to share a batch's
	 * aggregation among views (maintain/maintain.c), stream_ext.combine(),
	 * distributed views.
	 */
	cv->definition = pg_get_querydef(cv->query, true);

	/* checks that generate SQL: after the settings are pinned */
	view_options_prepare(&cv->opts, plan, cv->query);

	obj->plan = plan;
	obj->query = cv->query;
	obj->mq = mq = quote_qualified_identifier(cv->nspname, matrelname);
	obj->sq = quote_qualified_identifier(get_namespace_name(get_rel_namespace(plan->streamid)),
										 get_rel_name(plan->streamid));
	obj->vq = quote_qualified_identifier(cv->nspname, viewname);
	cv->bsq = OidIsValid(cv->rebuild_of) ?
		rebuild_stream_source(&cv->opts.backfill, obj->sq) :
		backfill_stream_source(&cv->opts.backfill, obj->sq);

	/* a storage shared with views of the same batch aggregation (ddl/shared_storage.c) */
	if (create_may_share(cv))
		cv->shared = shared_storage_join(plan, cv->nspid);
	if (cv->shared)
	{
		obj->matrelid = cv->shared->matrelid;
		obj->mq = mq = se_qualified_relname(obj->matrelid);
	}
	else if (session->enabled)
	{
		/* fragments, appended: see windows/sessions.c */
		obj->matrelid = create_table(cv, matrelname,
									 psprintf("CREATE TABLE %s (%s)", mq,
											  sessions_matrel_columns_sql(session, cv_matrel_columns_sql(plan))));
		sessions_create_index(plan, obj->matrelid);
	}
	else
	{
		obj->matrelid = create_table(cv, matrelname,
									 psprintf("CREATE TABLE %s (%s%s) WITH (fillfactor = %d)",
											  mq, cv_matrel_columns_sql(plan),
											  cv_matrel_hash_column_sql(plan), matrel_fillfactor(plan)));
		cv_create_matrel_indexes(plan, obj->matrelid);
	}
	if (!cv->shared)
		se_create_guard_trigger(obj->matrelid);

	/*
	 * The delta: batches append their partial states here, compaction folds
	 * them into the materialization (docs/internals.md, "Append mode").
	 */
	cv->appends = !session->enabled && cv_appends(plan) && catalog_has_delta();
	/* count(DISTINCT) left to compaction (query/analyze.c, "Deferred count(DISTINCT)") */
	plan->defer_distinct = cv->appends && !OidIsValid(cv->rollup.upstream) &&
		!OidIsValid(sjoin_right_stream(plan->query)) && cv_can_defer_distinct(plan);
	if (cv->shared)
	{
		obj->deltaid = cv->shared->deltaid;
		obj->dq = dq = se_qualified_relname(obj->deltaid);
	}
	else if (cv->appends)
	{
		char	   *deltaname = ChooseRelationName(partbase, NULL, "delta", cv->nspid, false);

		obj->dq = dq = quote_qualified_identifier(cv->nspname, deltaname);
		obj->deltaid = create_table(cv, deltaname,
									psprintf("CREATE TABLE %s (%s%s%s)", dq, cv_matrel_columns_sql(plan),
											 cv_matrel_hash_column_sql(plan),
											 cv_delta_values_columns_sql(plan)));
		se_create_guard_trigger(obj->deltaid);
		cv_create_read_indexes(plan, obj->matrelid, obj->deltaid);
	}

	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		char	   *auxname;
		char	   *aq;
		Oid			auxid;

		if (!agg->is_distinct)
			continue;
		auxname = ChooseRelationName(partbase, agg->colname, "mrel", cv->nspid, false);
		aq = quote_qualified_identifier(cv->nspname, auxname);
		agg->auxrel = aq;
		auxid = create_table(cv, auxname,
							 psprintf("CREATE TABLE %s (%s)", aq, cv_auxrel_columns_sql(plan, agg)));
		cv_create_auxrel_index(plan, agg, auxid);
		se_create_guard_trigger(auxid);
		obj->auxids = lappend_oid(obj->auxids, auxid);
		if (OidIsValid(cv->rollup.upstream))
		{
			/* fed by a side table of the upstream, backfilled from it */
			cv->distinct_sql = lappend(cv->distinct_sql,
									   rollup_distinct_sql(&cv->rollup, plan, agg, aq, dq));
			cv->backfill_sql = lappend(cv->backfill_sql, llast(cv->distinct_sql));
			continue;
		}
		cv->distinct_sql = lappend(cv->distinct_sql,
								   cv_distinct_sql(plan, agg, mq, aq, CV_NEW_ROWS, dq));
		cv->backfill_sql = lappend(cv->backfill_sql,
								   cv_distinct_sql(plan, agg, mq, aq, cv->bsq, NULL));
		if (cv->opts.backfill.replay_source)
			cv->replay_distinct = lappend(cv->replay_distinct,
										  cv_distinct_sql(plan, agg, mq, aq,
														  cv->opts.backfill.replay_source, NULL));
	}

	cv->select_sql = session->enabled ?
		cv_view_select_sql(plan, obj->matrelid, sessions_view_source_sql(session, plan, mq)) :
		window_view_select_sql(plan, obj->matrelid, mq, dq);
	replace_define_view(&cv->replace, obj->vq, cv->select_sql);
	obj->viewid = get_relname_relid(viewname, cv->nspid);

	cv->maintain_sql = OidIsValid(cv->rollup.upstream) ?
		rollup_maintain_sql(&cv->rollup, plan, dq) :
		session->enabled ?
		sessions_maintain_sql(session, plan, mq, CV_NEW_ROWS) :
		cv->appends ? cv_maintain_append_sql(plan, dq, CV_NEW_ROWS) :
		cv_maintain_sql(plan, mq, CV_NEW_ROWS);

	/*
	 * The materialization and side tables are internal parts of the view:
	 * DROP VIEW takes them along, and dropping them alone is refused.  They
	 * depend on the stream, so DROP of the stream needs CASCADE.  The
	 * stream's trigger goes with its last view (ddl_drop_unused_views_triggers()).
	 */
	/* a shared storage's tables depend on the stream only (ddl/shared_storage.c) */
	if (!cv->shared)
		se_record_dependency(RelationRelationId, obj->matrelid, RelationRelationId, obj->viewid,
							 DEPENDENCY_INTERNAL);
	if (!OidIsValid(cv->rollup.upstream) && !cv->shared)
		se_record_dependency(RelationRelationId, obj->matrelid, RelationRelationId,
							 plan->streamid, DEPENDENCY_NORMAL);
	/* what it joins and uses: a shared storage's member holds it itself (ddl/used_objects.c) */
	joins_record_dependencies(plan->query, cv->shared ? obj->viewid : obj->matrelid);
	ddl_record_used_objects(cv->shared ? obj->viewid : obj->matrelid, plan->query);
	foreach(lc, obj->auxids)
		se_record_dependency(RelationRelationId, lfirst_oid(lc), RelationRelationId,
							 obj->viewid, DEPENDENCY_INTERNAL);
	if (cv->appends && !cv->shared)
		se_record_dependency(RelationRelationId, obj->deltaid, RelationRelationId, obj->viewid,
							 DEPENDENCY_INTERNAL);
	if (OidIsValid(cv->rollup.upstream))
		rollup_create_trigger(&cv->rollup, obj->viewid, obj->matrelid, mq);
	else
		create_maintenance_trigger(plan->streamid, obj->viewid, obj->matrelid, mq);
	/*
	 * a join of two streams: the second one's trigger too (query/
	 * stream_joins.c); not for a view over a join view (its composed query
	 * joins the streams, but it is fed by the upstream's delta)
	 */
	if (!OidIsValid(cv->rollup.upstream) && OidIsValid(sjoin_right_stream(plan->query)))
		create_maintenance_trigger(sjoin_right_stream(plan->query), obj->viewid,
								   obj->matrelid, mq);
	CommandCounterIncrement();
}

/* phase 4: stream_ext's catalog rows of the view and of each option */
static void
create_record(ViewBuild *cv)
{
	ViewObjects *obj = &cv->obj;

	catalog_insert_view(obj->viewid,
						OidIsValid(cv->rollup.upstream) ? cv->rollup.updelta : cv->plan.streamid,
						obj->matrelid, obj->auxids,
						cv->definition, cv->maintain_sql, cv->distinct_sql);
	/*
	 * A join of two streams: its second stream's statements (query/
	 * stream_joins.c), recorded before the unused triggers go, so that the
	 * second stream's trigger is not taken for unused
	 */
	if (!OidIsValid(cv->rollup.upstream) && OidIsValid(sjoin_right_stream(cv->plan.query)))
		sjoin_create_view(&cv->plan, obj->viewid, obj->mq, obj->dq, obj->auxids,
						  cv->opts.lateness.lateness);
	/* a replaced view's old stream may have no view left */
	if (cv->replace.replacing)
		ddl_drop_unused_views_triggers();
	if (cv->shared)
	{
		catalog_set_delta(obj->viewid, obj->deltaid, NULL);
		shared_storage_joined(cv->shared, obj->viewid, &cv->plan);
	}
	else if (cv->appends)
		catalog_set_delta(obj->viewid, obj->deltaid,
						  cv_compact_sql(&cv->plan, obj->mq, obj->dq));
	view_options_record(&cv->opts, obj);
}

/* phase 5: start from what the stream already holds (or a Kafka replay) */
static void
create_view_backfill(ViewBuild *cv)
{
	const char *what = "backfill of the new continuous view from the rows already in its stream";
	ViewObjects *obj = &cv->obj;
	ListCell   *lc;
	BackfillSpec *bf = &cv->opts.backfill;

	view_options_backfill_begin(&cv->opts);
	if (OidIsValid(cv->rollup.upstream))
	{
		/* a roll-up starts from its upstream's states (query/rollup.c) */
		if (backfill_from_stream(bf))
		{
			create_backfill(rollup_backfill_sql(&cv->rollup, &cv->plan, obj->mq), what);
			foreach(lc, cv->backfill_sql)
				create_backfill(rollup_distinct_backfill_sql(&cv->rollup,
															 foreach_current_index(lc),
															 lfirst(lc)), what);
		}
	}
	else if (sjoin_left_bound(cv->plan.query, NULL))
	{
		/* a LEFT JOIN of two streams: its pairs and closed rows (query/sjoin_left.c) */
		foreach(lc, sjoin_left_backfill_sql(&cv->plan, obj->viewid, obj->mq, obj->auxids))
			create_backfill((char *) lfirst(lc), what);
	}
	else if (OidIsValid(cv->rebuild_of))
	{
		/* built beside the view: its worker backfills (ddl/rebuild.c) */
		rebuild_record(cv->rebuild_of,
					   quote_qualified_identifier(cv->nspname, cv->partbase),
					   obj->viewid, cv->plan.streamid, bf, cv->select_sql,
					   cv_maintain_sql(&cv->plan, obj->mq, cv->bsq),
					   cv->backfill_sql, cv->bsq);
	}
	else if (backfill_from_stream(bf))
	{
		create_backfill(cv->opts.session.enabled ?
						sessions_maintain_sql(&cv->opts.session, &cv->plan, obj->mq, cv->bsq) :
						cv_maintain_sql(&cv->plan, obj->mq, cv->bsq), what);
		foreach(lc, cv->backfill_sql)
			create_backfill((char *) lfirst(lc), what);
	}
	/* backfill = 'kafka': the replay worker's statements (kafka/replay.c) */
	if (bf->replay_source)
		backfill_record(bf, obj->viewid, cv->plan.streamid,
						cv_maintain_sql(&cv->plan, obj->mq, bf->replay_source),
						cv->replay_distinct);
	view_options_backfill_end(&cv->opts, obj);
}

/* last: describe the view (psql \dv+, PostgREST's OpenAPI output) */
static void
create_describe(ViewBuild *cv)
{
	SessionSpec *session = &cv->opts.session;
	const char *vq = cv->obj.vq;
	ListCell   *lc;

	create_comment_view(vq, cv->definition);
	comment_columns(cv->query, &cv->plan, vq);
	foreach(lc, window_comment_sql(&cv->plan, cv->query, vq))
		se_run_sql((char *) lfirst(lc));
	if (session->enabled)
	{
		se_run_sql(psprintf("COMMENT ON COLUMN %s.session_start IS %s", vq,
							quote_literal_cstr(psprintf("session window: earliest %s of the session (session_gap %s)",
														session->time_column, session->gap_text))));
		se_run_sql(psprintf("COMMENT ON COLUMN %s.session_end IS %s", vq,
							quote_literal_cstr(psprintf("session window: latest %s of the session",
														session->time_column))));
	}
}

/*
 * CREATE VIEW ... WITH (continuous): options -> analyze -> build objects ->
 * record -> backfill (-> describe), each phase a function above.  A query
 * without aggregates and GROUP BY is a continuous transform, built by
 * ddl/create_transform.c through the same steps (ddl/create_steps.c).
 */
void
ddl_create_view(ViewStmt *stmt, List *cvopts, const char *queryString,
				int stmt_location, int stmt_len)
{
	ViewBuild	cv;
	RawStmt    *raw;
	int			nestlevel;

	memset(&cv, 0, sizeof(cv));
	cv.stmt = stmt;
	create_options(stmt, cvopts, &cv.opts);

	/* analyze the query as the user wrote it, with the user's search_path */
	raw = makeNode(RawStmt);
	raw->stmt = copyObject(stmt->query);
	raw->stmt_location = stmt_location;
	raw->stmt_len = stmt_len;
	cv.query = parse_analyze_fixedparams(raw, queryString, NULL, 0, NULL);
	/* over a continuous view: the same query over its stream (query/rollup.c) */
	cv.query = rollup_compose(cv.query, queryString, &cv.rollup);
	if (OidIsValid(cv.rollup.upstream))
		rollup_check_create(&cv.rollup, stmt->replace,
							cv.opts.session.enabled || cv.opts.window != NIL ||
							cv.opts.lateness.enabled);
	if (OidIsValid(cv.rollup.upstream) && cv.opts.changes)
		changes_refuse_kind("a continuous view over another continuous view", CHANGES_ROLLUP_DETAIL,
							CHANGES_ROLLUP_HINT);
	if (transform_applies(cv.query))
	{
		view_options_check_kind(&cv.opts, true);
		transform_create(stmt, cv.query, &cv.opts);
	}
	else
	{
		create_analyze(&cv, queryString);
		if (cv.replace.replacing &&
			rebuild_applies(cv.replace.viewid, &cv.opts.backfill,
							!cv.opts.session.enabled && !cv.opts.lateness.enabled &&
							!cv.opts.changes && !OidIsValid(cv.rollup.upstream) &&
							!OidIsValid(sjoin_right_stream(cv.plan.query))))
		{
			/* CREATE OR REPLACE built beside the view: a hidden shadow */
			cv.rebuild_of = cv.replace.viewid;
			cv.partbase = stmt->view->relname;
			stmt->view->relname = rebuild_shadow_name(cv.partbase, cv.nspid);
			cv.replace.replacing = false;
		}
		nestlevel = create_begin();
		create_build(&cv);
		create_record(&cv);
		create_view_backfill(&cv);
		create_describe(&cv);
		create_end(nestlevel);
	}
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
