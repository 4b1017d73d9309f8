/*-------------------------------------------------------------------------
 *
 * maintain.c
 *	  Incremental maintenance of continuous views.
 *
 *	  A stream with continuous views has one statement-level AFTER INSERT
 *	  trigger for all of them (stream_ext.maintain_views(), views_ops), with
 *	  the statement's rows as transition table.  It runs each view's
 *	  maintenance statement (query/analyze.c) once over those rows: one
 *	  partial aggregation of the whole batch, one store per touched group
 *	  -- and views with the same owner, FROM, WHERE and GROUP BY share one
 *	  statement, which aggregates the batch once for all of them
 *	  (group_ops, cv_shared_maintain_sql()).  Each unit runs
 *	  maintain/trigger.c's skeleton: as the views' owner, in a
 *	  security-restricted context, with the settings of core/security.c
 *	  pinned; the stream's views, their grouping and the prepared plans
 *	  are kept per backend and rebuilt when the catalog or the tables
 *	  change.  Views made before 0.3 keep their own trigger,
 *	  stream_ext.maintain(materialization) (maint_ops).
 *
 *	  The maintenance statement wraps each aggregate in stream_ext.partial().
 *	  The planner hook below replaces those wrappers, in the Agg node of the
 *	  finished plan, with the aggregate itself in AGGSPLIT_INITIAL_SERIAL
 *	  mode -- the mode parallel query uses for its workers -- so the batch
 *	  is aggregated by PostgreSQL's own executor into states that
 *	  stream_ext.combine() can merge.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "portability/instr_time.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "maintain/changes.h"
#include "maintain/compact.h"
#include "maintain/fast_batch.h"
#include "maintain/maintain.h"
#include "maintain/privileges.h"
#include "maintain/stats.h"
#include "maintain/trigger.h"
#include "query/analyze.h"
#include "query/key_read.h"
#include "query/stream_joins.h"
#include "query/combine.h"
#include "query/shared_plan.h"
#include "windows/lateness.h"
#include "windows/windows.h"

PG_FUNCTION_INFO_V1(stream_ext_maintain);
PG_FUNCTION_INFO_V1(stream_ext_maintain_views);
PG_FUNCTION_INFO_V1(stream_ext_guard_materialization);

static planner_hook_type prev_planner_hook = NULL;

/* ---- partial aggregation in the plan ----------------------------------- */

static bool
is_partial_func(Oid funcid)
{
	char	   *name;
	bool		result;

	if (get_func_namespace(funcid) != get_namespace_oid("stream_ext", true))
		return false;
	name = get_func_name(funcid);
	result = (name != NULL && strcmp(name, "partial") == 0);
	return result;
}

static bool
check_all_partial_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		if (((Aggref *) node)->aggsplit != AGGSPLIT_INITIAL_SERIAL)
			elog(ERROR, "stream_ext: aggregate without stream_ext.partial() in a maintenance statement");
		return false;
	}
	return expression_tree_walker(node, check_all_partial_walker, context);
}

static void
rewrite_agg(Agg *agg)
{
	ListCell   *lc;
	bool		found = false;

	foreach(lc, agg->plan.targetlist)
	{
		TargetEntry *tle = lfirst(lc);
		FuncExpr   *func;
		Aggref	   *aggref;

		if (!IsA(tle->expr, FuncExpr))
			continue;
		func = (FuncExpr *) tle->expr;
		if (!is_partial_func(func->funcid))
			continue;
		if (list_length(func->args) != 2 || !IsA(linitial(func->args), Aggref))
			elog(ERROR, "stream_ext.partial() must wrap an aggregate call");
		aggref = (Aggref *) linitial(func->args);
		aggref->aggsplit = AGGSPLIT_INITIAL_SERIAL;
		aggref->aggtype = exprType(lsecond(func->args));
		tle->expr = (Expr *) aggref;
		found = true;
	}
	if (!found)
		return;
	agg->aggsplit = AGGSPLIT_INITIAL_SERIAL;
	(void) check_all_partial_walker((Node *) agg->plan.targetlist, NULL);
	(void) check_all_partial_walker((Node *) agg->plan.qual, NULL);
}

static void
rewrite_plan(Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (IsA(plan, Agg))
		rewrite_agg((Agg *) plan);
	rewrite_plan(plan->lefttree);
	rewrite_plan(plan->righttree);
	switch (nodeTag(plan))
	{
		case T_SubqueryScan:
			rewrite_plan(((SubqueryScan *) plan)->subplan);
			break;
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				rewrite_plan(lfirst(lc));
			break;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				rewrite_plan(lfirst(lc));
			break;
		default:
			break;
	}
}

/*
 * PostgreSQL's MIN/MAX optimization (planagg.c) replaces the aggregates of
 * an ungrouped query over one table by "ORDER BY ... LIMIT 1" subplans when
 * every aggregate is MIN/MAX-like (has a sort operator) and that is
 * cheaper: an index on the argument, or a constant argument (max(100)).
 * Under stream_ext.partial() that leaves no Agg node to switch to partial
 * mode, and the wrapper itself would run.  planagg skips aggregates with a
 * FILTER clause, so each such wrapped aggregate of an ungrouped query gets
 * the filter "WHERE true" before planning: same rows, same result, a plain
 * Agg node.  Only stream_ext.partial()'s own arguments are touched.
 */
static bool
agg_has_sortop(Oid aggfnoid)
{
	HeapTuple	tup;
	bool		result;

	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tup))
		return false;
	result = OidIsValid(((Form_pg_aggregate) GETSTRUCT(tup))->aggsortop);
	ReleaseSysCache(tup);
	return result;
}

static bool
keep_partial_aggs_walker(Node *node, void *context)
{
	bool		grouped = context != NULL && *(bool *) context;

	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = (Query *) node;
		bool		query_grouped = query->groupClause != NIL;

		return query_tree_walker(query, keep_partial_aggs_walker,
								 &query_grouped, 0);
	}
	if (!grouped && IsA(node, FuncExpr) &&
		is_partial_func(((FuncExpr *) node)->funcid))
	{
		FuncExpr   *func = (FuncExpr *) node;
		Aggref	   *aggref;

		if (list_length(func->args) == 2 && IsA(linitial(func->args), Aggref))
		{
			aggref = (Aggref *) linitial(func->args);
			if (aggref->aggfilter == NULL && agg_has_sortop(aggref->aggfnoid))
				aggref->aggfilter = (Expr *) makeBoolConst(true, false);
		}
	}
	return expression_tree_walker(node, keep_partial_aggs_walker, context);
}

static PlannedStmt *
stream_ext_planner(Query *parse, const char *query_string, int cursorOptions,
				   ParamListInfo boundParams)
{
	PlannedStmt *result;

	if (se_materializing())
		(void) keep_partial_aggs_walker((Node *) parse, NULL);
	else
		combine_rewrite(parse);

	if (se_materializing())
		result = prev_planner_hook ?
			prev_planner_hook(parse, query_string, cursorOptions, boundParams) :
			standard_planner(parse, query_string, cursorOptions, boundParams);
	else						/* reads by key: their UNION ALL not planned */
		result = key_read_planner(parse, query_string, cursorOptions, boundParams,
								  prev_planner_hook);

	if (se_materializing())
	{
		ListCell   *lc;

		rewrite_plan(result->planTree);
		foreach(lc, result->subplans)
			rewrite_plan(lfirst(lc));
	}
	else
		priv_check_read(result);
	return result;
}

/* a view's part of its trigger's cache entry (maintain/trigger.c) */
typedef struct MaintView
{
	ViewCatalogEntry cat;
	TimestampTz next_expiry;	/* sliding windows: see windows/windows.c */
	LatenessInfo *lateness;		/* allowed_lateness: see windows/lateness.c */
	ChangesInfo *changes;		/* changes = true: see maintain/changes.c */
	FastBatch  *fast[2];		/* its statement without the executor, for
								 * small and other batches (fast_batch.c) */
} MaintView;

/* ---- row-level security ------------------------------------------------ */

bool
stream_rls_applies(Oid relid, Oid roleid, bool enabled, bool forced)
{
	if (!enabled)
		return false;
	if (superuser_arg(roleid) || has_bypassrls_privilege(roleid))
		return false;
	/* the owner is exempt unless FORCE ROW LEVEL SECURITY */
	if (!forced && pg_class_ownercheck(relid, roleid))
		return false;
	return true;
}

void
stream_rls_flags(Oid relid, bool *enabled, bool *forced)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	*enabled = ((Form_pg_class) GETSTRUCT(tup))->relrowsecurity;
	*forced = ((Form_pg_class) GETSTRUCT(tup))->relforcerowsecurity;
	ReleaseSysCache(tup);
}

/*
 * Refuse to fold rows the view's owner may not read into the view: RLS
 * that applies to the owner can only have come after the view was created
 * (the stream or the view changed owner, a role lost BYPASSRLS).
 */
static void
check_stream_rls(Relation stream, MaintView *view)
{
	if (!stream->rd_rel->relrowsecurity)
		return;
	if (stream_rls_applies(RelationGetRelid(stream), view->cat.owner, true,
						   stream->rd_rel->relforcerowsecurity))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot maintain continuous view \"%s\": row-level security of stream \"%s\" applies to its owner %s",
						get_rel_name(view->cat.viewid),
						RelationGetRelationName(stream),
						GetUserNameFromId(view->cat.owner, false)),
				 errdetail("A continuous view aggregates every row of its stream; it would show rows its owner cannot read."),
				 errhint("Give the view to the stream's owner or to a role with BYPASSRLS, or drop it.")));
}

/* ---- the maintenance trigger ------------------------------------------- */

/* a view's error context: names it, not its statements */
static char *
view_error_context(MemoryContext cxt, List *views)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfo(&buf, "maintenance of continuous view%s ",
					 list_length(views) > 1 ? "s" : "");
	foreach(lc, views)
	{
		Oid			viewid = ((MaintView *) lfirst(lc))->cat.viewid;

		appendStringInfo(&buf, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_qualified_identifier(get_namespace_name(get_rel_namespace(viewid)),
													get_rel_name(viewid)));
	}
	appendStringInfoString(&buf, list_length(views) > 1 ?
						   " (one statement sharing the batch's aggregation, see stream_ext.explain())" :
						   " (statements in stream_ext.view_catalog)");
	return MemoryContextStrdup(cxt, buf.data);
}

/* the stream's arrival_timestamp column, for stats; 0 if none */
static AttrNumber
arrival_attnum(Oid streamid)
{
	AttrNumber	attnum = get_attnum(streamid, STREAM_ARRIVAL_COLUMN);

	if (attnum != InvalidAttrNumber && get_atttype(streamid, attnum) != TIMESTAMPTZOID)
		return InvalidAttrNumber;
	return attnum;
}

/* fill the entry of one view (view->cat read; lateness too if lateness_read) */
static void
maint_fill(SeBatchEntry *entry, MaintView *view, bool lateness_read)
{
	entry->kind = view;
	entry->objid = view->cat.viewid;
	entry->streamid = view->cat.streamid;
	entry->relids[0] = view->cat.matrelid;
	entry->relids[1] = view->cat.streamid;
	entry->relids[2] = view->cat.viewid;
	entry->owner = view->cat.owner;
	entry->timezone = view->cat.timezone;
	entry->notify = view->cat.notify;
	entry->arrival_attnum = arrival_attnum(view->cat.streamid);
	if (!lateness_read)
	{
		catalog_read_latest_begin();
		view->lateness = lateness_lookup(view->cat.viewid, entry->cxt);
		catalog_read_latest_end();
		view->changes = changes_lookup(view->cat.viewid, false, entry->cxt);
	}
	entry->error_context = view_error_context(entry->cxt, list_make1(view));
}

static void
maint_load(SeBatchEntry *entry, TriggerData *trigdata)
{
	Trigger    *trigger = trigdata->tg_trigger;
	MaintView  *view = MemoryContextAllocZero(entry->cxt, sizeof(MaintView));
	Oid			matrelid = relid_from_trigger_arg(trigger->tgargs[0]);

	if (!OidIsValid(matrelid) ||
		!catalog_lookup_view_by_matrel(matrelid, &view->cat, entry->cxt))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous view with materialization %s does not exist",
						trigger->tgargs[0]),
				 errdetail("Trigger \"%s\" maintains it.", trigger->tgname)));
	maint_fill(entry, view, false);
}

/*
 * May this trigger's batch feed continuous view cat?  Only the relation the
 * view reads (its stream; a roll-up's upstream delta, query/rollup.c) feeds
 * it: no trigger elsewhere may forge rows.  A view whose owner lost a
 * privilege is no longer maintained: false.
 */
bool
maint_admit_view(TriggerData *trigdata, ViewCatalogEntry *cat)
{
	if (RelationGetRelid(trigdata->tg_relation) != cat->streamid)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("trigger \"%s\" on \"%s\" cannot maintain continuous view \"%s\": it reads another stream",
						trigdata->tg_trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation),
						get_rel_name(cat->viewid))));
	return priv_invalid_reason(cat->viewid) == NULL;
}

static bool
maint_admit(SeBatchEntry *entry, TriggerData *trigdata)
{
	MaintView  *view = entry->kind;

	if (!maint_admit_view(trigdata, &view->cat))
		return false;
	check_stream_rls(trigdata->tg_relation, view);
	return true;
}

/*
 * The maintenance statement first, then one per count(DISTINCT); $1 is the
 * watermark of a view with allowed_lateness.  Errors in these and in the
 * expiry and lateness statements get a short CONTEXT naming the view
 * instead of the statements themselves (se_rethrow_short_context).
 */
static void
maint_prepare(SeBatchEntry *entry)
{
	MaintView  *view = entry->kind;
	ListCell   *lc;
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	int			nargs = view->lateness ? 1 : 0;

	(void) se_batch_prepare(entry, view->cat.maintain_sql, nargs, argtypes);
	foreach(lc, view->cat.distinct_sql)
		(void) se_batch_prepare(entry, (char *) lfirst(lc), nargs, argtypes);
	if (view->cat.expire_sql)
		se_batch_statement(entry, view->cat.expire_sql);
	if (view->lateness)
	{
		/* late rows are kept whole (to_jsonb of the row): every column */
		MemoryContext old = MemoryContextSwitchTo(entry->cxt);

		entry->privs = list_concat(entry->privs,
								   priv_whole_row(entry->streamid, entry->cxt));
		MemoryContextSwitchTo(old);
		se_batch_statement(entry, view->lateness->late_sql);
		se_batch_statement(entry, view->lateness->max_sql);
		if (view->lateness->emit_sql)
			se_batch_statement(entry, view->lateness->emit_sql);
	}
}

static uint64
maint_run(SeBatchEntry *entry, TriggerData *trigdata)
{
	MaintView  *view = entry->kind;
	Datum		params[1] = {0};
	char		nulls[1] = {' '};
	TimestampTz wm = 0;
	bool		wm_isnull = true;
	uint64		groups = 0;
	List	   *plans;
	ListCell   *lc;

	if (view->lateness)
	{
		wm = lateness_begin_batch(view->lateness, &wm_isnull);
		params[0] = TimestampTzGetDatum(wm);
		nulls[0] = wm_isnull ? 'n' : ' ';
	}
	if (view->changes)
		changes_begin_batch(view->changes);
	plans = se_batch_plans(entry, trigdata);
	foreach(lc, plans)
	{
		int			rc;

		/* the maintenance statement, if simple, without the executor */
		if (foreach_current_index(lc) == 0 && !view->lateness && !view->changes &&
			!view->cat.has_ttl &&
			fast_batch_run(&view->fast[plans == entry->small_plans], entry->cxt,
						   lfirst(lc), trigdata, &groups))
			continue;
		rc = SPI_execute_plan(lfirst(lc), params, nulls, false, 0);

		if (rc != SPI_OK_INSERT)
			elog(ERROR, "stream_ext: maintenance failed: %s", SPI_result_code_string(rc));
		if (foreach_current_index(lc) == 0)
			groups = SPI_processed;
	}
	if (view->lateness)
		lateness_end_batch(view->lateness, wm, wm_isnull);
	compact_after_batch(&view->cat);
	window_expire_opportunistic(&view->cat, &view->next_expiry);
	if (view->changes)
		changes_end_batch(view->changes);
	return groups;
}

/* what a view keeps besides its entry's plans: its change stream's plans */
static void
maint_release(SeBatchEntry *entry)
{
	MaintView  *view = entry->kind;

	if (view)
		changes_release(view->changes);
}

static const SeBatchOps maint_ops = {
	.name = "stream_ext.maintain()",
	.argument = "the materialization",
	.load = maint_load,
	.admit = maint_admit,
	.prepare = maint_prepare,
	.run = maint_run,
	.release = maint_release,
	.materialize = true,
	.plan_rows = MAINT_PLAN_ROWS,
	.invalid_kind = "continuous view",
};

/* ---- views sharing one aggregation of the batch ------------------------- */

/*
 * A group of views of one stream maintained by one statement
 * (cv_shared_maintain_sql()): same owner and TimeZone, and the same batch
 * aggregation but for the states (FROM, WHERE, GROUP BY).  Each view keeps
 * its own privileges (those its own maintenance statement needs, checked
 * as the owner at every batch), stats, NOTIFY, count(DISTINCT) statements
 * and window expiry.
 */
typedef struct MaintGroup
{
	List	   *views;			/* MaintView */
	char	   *shared_sql;
	int			nviews;
	List	  **privs;			/* per view: what its own statements touch */
	uint64	   *privs_checked;
	List	  **distinct_plans; /* per view: their places in the entry's
								 * plans (se_batch_plans()) */
	int		   *store_of;		/* per view: its store in shared_sql's
								 * result (members of one shared storage
								 * have one); NULL: shared_sql is one
								 * INSERT of them all */
	FastBatch  *fast[2];		/* that INSERT without the executor, for
								 * small and other batches (fast_batch.c) */

	/* this batch */
	bool	   *skip;			/* invalid, or lost a privilege */
	char	  **missing;		/* the privilege lost, for finish */
	uint64	   *groups;
	double		elapsed_ms;
} MaintGroup;

static bool
group_admit(SeBatchEntry *entry, TriggerData *trigdata)
{
	MaintGroup *group = entry->kind;
	ListCell   *lc;

	foreach(lc, group->views)
	{
		MaintView  *view = lfirst(lc);
		int			i = foreach_current_index(lc);

		group->skip[i] = priv_invalid_reason(view->cat.viewid) != NULL;
		group->missing[i] = NULL;
		group->groups[i] = 0;
		if (!group->skip[i])
			check_stream_rls(trigdata->tg_relation, view);
	}
	return true;
}

/* a plan of the view's own maintenance statement, not kept */
static SPIPlanPtr
prepare_own(SeBatchEntry *entry, MaintView *view)
{
	SPIPlanPtr	plan = SPI_prepare(view->cat.maintain_sql, 0, NULL);

	if (plan == NULL)
		elog(ERROR, "stream_ext: could not prepare %s: %s", entry->ops->name,
			 SPI_result_code_string(SPI_result));
	return plan;
}

static void
group_prepare(SeBatchEntry *entry)
{
	MaintGroup *group = entry->kind;
	ListCell   *lc;
	ListCell   *ld;

	(void) se_batch_prepare(entry, group->shared_sql, 0, NULL);
	foreach(lc, group->views)
	{
		MaintView  *view = lfirst(lc);
		int			i = foreach_current_index(lc);
		SPIPlanPtr	own = prepare_own(entry, view);
		MemoryContext old;

		/* the privileges are those of the view's own statement */
		group->privs[i] = priv_collect(own, entry->streamid, entry->cxt);
		SPI_freeplan(own);
		se_batch_statement(entry, view->cat.maintain_sql);
		foreach(ld, view->cat.distinct_sql)
		{
			SPIPlanPtr	plan = se_batch_prepare(entry, lfirst(ld), 0, NULL);

			old = MemoryContextSwitchTo(entry->cxt);
			group->distinct_plans[i] = lappend_int(group->distinct_plans[i],
												   list_length(entry->plans) - 1);
			group->privs[i] = list_concat(group->privs[i],
										  priv_collect(plan, entry->streamid, entry->cxt));
			MemoryContextSwitchTo(old);
		}
		if (view->cat.expire_sql)
			se_batch_statement(entry, view->cat.expire_sql);
	}
}

static void
run_insert(SPIPlanPtr plan, uint64 *processed)
{
	int			rc = SPI_execute_plan(plan, NULL, NULL, false, 0);

	if (rc != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: maintenance failed: %s", SPI_result_code_string(rc));
	if (processed)
		*processed = SPI_processed;
}

static uint64
group_run(SeBatchEntry *entry, TriggerData *trigdata)
{
	MaintGroup *group = entry->kind;
	List	   *plans = se_batch_plans(entry, trigdata);
	ListCell   *lc;
	ListCell   *lp;
	bool		all = true;
	uint64		total = 0;
	instr_time	start;
	instr_time	elapsed;

	INSTR_TIME_SET_CURRENT(start);
	foreach(lc, group->views)
	{
		int			i = foreach_current_index(lc);

		if (!group->skip[i])
		{
			group->missing[i] = priv_check(group->privs[i], entry->owner,
										   &group->privs_checked[i]);
			if (group->missing[i])
				group->skip[i] = true;
		}
		all &= !group->skip[i];
	}

	if (all)
	{
		/* one statement: the shared aggregation and every view's store */
		if (group->store_of == NULL)
		{
			/*
			 * One shared storage: one INSERT for all (group_statement()),
			 * without the executor if simple.
			 */
			uint64		groups;

			if (!fast_batch_run(&group->fast[plans == entry->small_plans], entry->cxt,
								linitial(plans), trigdata, &groups))
			{
				int			rc = SPI_execute_plan(linitial(plans), NULL, NULL, false, 0);

				if (rc != SPI_OK_INSERT)
					elog(ERROR, "stream_ext: maintenance failed: %s", SPI_result_code_string(rc));
				groups = SPI_processed;
			}
			for (int i = 0; i < group->nviews; i++)
				group->groups[i] = groups;
		}
		else
		{
			int			rc = SPI_execute_plan(linitial(plans), NULL, NULL, false, 0);

			if (rc != SPI_OK_SELECT || SPI_processed != 1)
				elog(ERROR, "stream_ext: maintenance failed: %s", SPI_result_code_string(rc));
			for (int i = 0; i < group->nviews; i++)
			{
				bool		isnull;

				group->groups[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
															   SPI_tuptable->tupdesc,
															   group->store_of[i] + 1, &isnull));
			}
		}
	}
	foreach(lc, group->views)
	{
		MaintView  *view = lfirst(lc);
		int			i = foreach_current_index(lc);

		if (group->skip[i])
			continue;
		/*
		 * Some view of the group is left out of this batch: the others run
		 * their own statements (the group is formed again without it, see
		 * views_load()).
		 */
		if (!all)
		{
			SPIPlanPtr	own = prepare_own(entry, view);

			run_insert(own, &group->groups[i]);
			SPI_freeplan(own);
		}
		foreach(lp, group->distinct_plans[i])
			run_insert(list_nth(plans, lfirst_int(lp)), NULL);
		compact_after_batch(&view->cat);
		window_expire_opportunistic(&view->cat, &view->next_expiry);
		total += group->groups[i];
	}
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	group->elapsed_ms = INSTR_TIME_GET_MILLISEC(elapsed);
	return total;
}

/*
 * After the owner's context: record views that lost a privilege, report
 * each view's stats (the statement's time shared evenly) and NOTIFY.
 */
static void
group_finish(SeBatchEntry *entry, TriggerData *trigdata, uint64 written)
{
	MaintGroup *group = entry->kind;
	uint64		rows = tuplestore_tuple_count(trigdata->tg_newtable);
	bool		tracking = stats_tracking();
	TimestampTz max_arrival = 0;
	ListCell   *lc;

	if (tracking)
		max_arrival = se_batch_max_arrival(entry, trigdata);
	foreach(lc, group->views)
	{
		MaintView  *view = lfirst(lc);
		int			i = foreach_current_index(lc);

		if (group->missing[i])
			priv_mark_invalid(view->cat.viewid, "continuous view", group->missing[i]);
		if (group->skip[i])
			continue;
		if (tracking)
			stats_report_batch(view->cat.viewid, view->cat.streamid, rows,
							   group->groups[i], group->elapsed_ms / group->nviews,
							   max_arrival);
		if (view->cat.notify)
			se_batch_notify(view->cat.notify, view->cat.viewid, rows, group->groups[i]);
	}
}

/* the views of a group (the lock guard marks them invalid together) */
static List *
group_objects(SeBatchEntry *entry)
{
	MaintGroup *group = entry->kind;
	List	   *objects = NIL;
	ListCell   *lc;

	foreach(lc, group->views)
		objects = lappend_oid(objects, ((MaintView *) lfirst(lc))->cat.viewid);
	return objects;
}

static const SeBatchOps group_ops = {
	.name = "stream_ext.maintain_views()",
	.admit = group_admit,
	.prepare = group_prepare,
	.run = group_run,
	.finish = group_finish,
	.materialize = true,
	.plan_rows = MAINT_PLAN_ROWS,
	.objects = group_objects,
};

/* ---- one trigger for all views of a stream ------------------------------ */

/*
 * Can this view share the batch's aggregation with others?  Its stored
 * definition (view_catalog.definition, schema-qualified) is analyzed
 * again, as its owner with the settings it was created under, and its
 * maintenance statement generated again: only when that gives the stored
 * statement is the plan the view's (views with
 * options that change it -- sessions, sliding windows, allowed_lateness --
 * and views made by another version run alone).  Any error in doing so
 * (an object renamed since) means no.  Returns the plan, or NULL.
 */
static char *share_key(MaintView *view, CVPlan *plan);

/* relation relid, schema-qualified */
static char *
rel_qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* share_plan()'s work, run by se_try_in_subxact() */
typedef struct SharePlanCall
{
	MaintView  *view;
	MemoryContext cxt;
	CVPlan	   *result;
	char	   *key;
} SharePlanCall;

static void
share_plan_body(void *arg)
{
	SharePlanCall *call = arg;
	MaintView  *view = call->view;
	SeRunAs		runas;
	List	   *raw;
	Query	   *query;
	CVWindow   *hop = NULL;
	CVPlan	   *plan;
	char	   *mq;
	MemoryContext old;

	se_run_as_owner(&runas, view->cat.owner, view->cat.timezone);
	old = MemoryContextSwitchTo(call->cxt);
	plan = palloc0(sizeof(CVPlan));
	raw = raw_parser(view->cat.query_sql, RAW_PARSE_DEFAULT);
	if (list_length(raw) == 1)
	{
		query = parse_analyze_fixedparams(linitial_node(RawStmt, raw),
										  view->cat.query_sql, NULL, 0, NULL);
		query = window_rewrite_hop(query, view->cat.query_sql, &hop);
		cv_analyze(query, view->cat.query_sql,
				   cv_view_column_aliases(view->cat.viewid), hop, plan);
		window_apply_options(plan, NIL, false);
		cv_detect_deferred_distinct(plan, view->cat.viewid, view->cat.deltaid);
		/* a member of a shared storage: its columns there (query/shared_plan.c) */
		(void) shared_plan_apply(plan, view->cat.viewid, view->cat.matrelid);
		mq = rel_qualified_name(view->cat.matrelid);
		if (plan->streamid == view->cat.streamid &&
			strcmp(OidIsValid(view->cat.deltaid) ?
				   cv_maintain_append_sql(plan, rel_qualified_name(view->cat.deltaid),
										  CV_NEW_ROWS) :
				   cv_maintain_sql(plan, mq, CV_NEW_ROWS),
				   view->cat.maintain_sql) == 0)
		{
			call->result = plan;
			call->key = share_key(view, plan);
		}
	}
	MemoryContextSwitchTo(old);
	se_restore(&runas);
}

static CVPlan *
share_plan(MaintView *view, MemoryContext cxt, char **key)
{
	SharePlanCall call = {view, cxt, NULL, NULL};
	ErrorData  *edata;

	if (view->lateness || view->cat.query_sql == NULL)
		return NULL;
	/* any error: the view runs alone */
	edata = se_try_in_subxact(share_plan_body, &call, NULL, CurrentMemoryContext);
	if (edata != NULL)
	{
		FreeErrorData(edata);
		return NULL;
	}
	*key = call.key;
	return call.result;
}

/* what views must have in common to share a statement */
static char *
share_key(MaintView *view, CVPlan *plan)
{
	CVBatchAggParts parts;
	StringInfoData buf;
	ListCell   *lc;

	cv_batch_agg_parts(plan, CV_NEW_ROWS, &parts);
	initStringInfo(&buf);
	appendStringInfo(&buf, "%u %s %d", view->cat.owner, view->cat.timezone, plan->keyless);
	foreach(lc, parts.key_exprs)
		appendStringInfo(&buf, "|%s", (char *) lfirst(lc));
	appendStringInfo(&buf, "|%s|%s", parts.hash_expr ? parts.hash_expr : "", parts.tail);
	return buf.data;
}

/*
 * For ddl/shared_storage.c: the plan of continuous view cat as maintenance
 * builds it (share_plan(): its columns in its shared storage, if any) and
 * in *key its share_key(), in cxt; NULL if it cannot share a statement.
 */
CVPlan *
maint_view_plan(ViewCatalogEntry *cat, MemoryContext cxt, char **key)
{
	MaintView	view;

	memset(&view, 0, sizeof(view));
	view.cat = *cat;
	catalog_read_latest_begin();
	view.lateness = lateness_lookup(cat->viewid, cxt);
	catalog_read_latest_end();
	*key = NULL;
	return share_plan(&view, cxt, key);
}

/* share_key() of a view of owner, created under timezone, with plan */
char *
maint_share_key(Oid owner, const char *timezone, CVPlan *plan)
{
	MaintView	view;

	memset(&view, 0, sizeof(view));
	view.cat.owner = owner;
	view.cat.timezone = (char *) timezone;
	return share_key(&view, plan);
}

/* the views of the stream: units of work (SeBatchEntry) */
typedef struct MaintViews
{
	List	   *units;
} MaintViews;

/* a unit of views_load(), in the stream's entry's memory */
static SeBatchEntry *
new_unit(SeBatchEntry *parent, const SeBatchOps *ops)
{
	SeBatchEntry *unit = MemoryContextAllocZero(parent->cxt, sizeof(SeBatchEntry));

	unit->ops = ops;
	unit->valid = true;
	unit->cxt = AllocSetContextCreate(parent->cxt, "stream_ext maintenance unit",
									  ALLOCSET_SMALL_SIZES);
	return unit;
}

/* matrels whose view has its own stream_ext.maintain() trigger (before 0.3) */
static List *
views_with_own_trigger(Relation stream, Oid self, bool *first)
{
	TriggerDesc *trigdesc = stream->trigdesc;
	Oid			nsp = get_namespace_oid("stream_ext", true);
	Oid			selffn = InvalidOid;
	List	   *result = NIL;

	*first = true;
	if (trigdesc == NULL)
		return NIL;
	for (int i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];
		char	   *name;

		if (t->tgoid == self)
			selffn = t->tgfoid;
		if (get_func_namespace(t->tgfoid) != nsp)
			continue;
		name = get_func_name(t->tgfoid);
		if (strcmp(name, "maintain") == 0 && t->tgnargs == 1)
			result = lappend_oid(result, relid_from_trigger_arg(t->tgargs[0]));
	}
	/* only the first trigger of this function maintains the views */
	for (int i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];

		if (t->tgfoid == selffn && t->tgenabled != TRIGGER_DISABLED)
		{
			*first = (t->tgoid == self);
			break;
		}
	}
	return result;
}

/*
 * The continuous views of stream, but those with their own trigger
 * (matrels in own) or invalid, grouped by share_key() in the catalog's
 * order: a List of Lists of MaintView, and in *plans their CVPlans (NULL
 * where a view cannot share), in cxt.  *relids gets every view's relations
 * whose change invalidates the grouping.
 */
static List *
group_views(Oid streamid, List *own, MemoryContext cxt, List **plans, List **relids)
{
	List	   *keys = NIL;		/* share_key() of each group */
	List	   *groups = NIL;
	ListCell   *lc;
	MemoryContext old;

	*plans = NIL;
	foreach(lc, catalog_views_of_stream(streamid, cxt))
	{
		ViewCatalogEntry *cat = lfirst(lc);
		MaintView  *view;
		CVPlan	   *plan;
		char	   *key;
		int			pos = -1;
		ListCell   *lk;

		old = MemoryContextSwitchTo(cxt);
		*relids = lappend_oid(lappend_oid(*relids, cat->viewid), cat->matrelid);
		MemoryContextSwitchTo(old);
		if (list_member_oid(own, cat->matrelid) ||
			priv_invalid_reason(cat->viewid) != NULL)
			continue;
		view = MemoryContextAllocZero(cxt, sizeof(MaintView));
		view->cat = *cat;
		catalog_read_latest_begin();
		view->lateness = lateness_lookup(cat->viewid, cxt);
		catalog_read_latest_end();
		key = NULL;
		plan = share_plan(view, cxt, &key);
		/* a view with a change stream runs alone (maint_run()) */
		view->changes = changes_lookup(cat->viewid, false, cxt);
		if (view->changes)
			key = NULL;
		foreach(lk, keys)
		{
			if (key && lfirst(lk) && strcmp(lfirst(lk), key) == 0)
				pos = foreach_current_index(lk);
		}
		old = MemoryContextSwitchTo(cxt);
		if (pos < 0)
		{
			keys = lappend(keys, key);
			groups = lappend(groups, list_make1(view));
			*plans = lappend(*plans, list_make1(plan));
		}
		else
		{
			list_nth_cell(groups, pos)->ptr_value = lappend(list_nth(groups, pos), view);
			list_nth_cell(*plans, pos)->ptr_value = lappend(list_nth(*plans, pos), plan);
		}
		MemoryContextSwitchTo(old);
	}
	return groups;
}

/*
 * The statement of a group of views (MaintView) and their plans, generated
 * under the settings pinned for them (as their own statements were).  The
 * members of one shared storage (query/shared_plan.c) have one store: one
 * row per group with all their columns, from the storage's plan of them.
 * *store_of gets each view's store (the column of the statement's result),
 * or NULL when all are of one storage: then the statement is that store
 * alone, an INSERT (no CTE).
 */
static char *
group_statement(List *views, List *plans, int **store_of)
{
	int			nestlevel = se_pin_settings(((MaintView *) linitial(views))->cat.timezone);
	List	   *matrels = NIL;
	List	   *deltas = NIL;
	List	   *stores = NIL;	/* per store: the List of its plans */
	List	   *store_rels = NIL;	/* per store: its materialization */
	List	   *store_plans = NIL;
	int		   *of = palloc0(sizeof(int) * list_length(views));
	ListCell   *lc;
	ListCell   *lp;
	char	   *sql;

	forboth(lc, views, lp, plans)
	{
		ViewCatalogEntry *cat = &((MaintView *) lfirst(lc))->cat;
		CVPlan	   *plan = lfirst(lp);
		int			s = -1;

		if (plan->presence_col)
		{
			ListCell   *ls;

			foreach(ls, store_rels)
				if (lfirst_oid(ls) == cat->matrelid)
					s = foreach_current_index(ls);
		}
		if (s >= 0)
		{
			list_nth_cell(stores, s)->ptr_value = lappend(list_nth(stores, s), plan);
			of[foreach_current_index(lc)] = s;
			continue;
		}
		of[foreach_current_index(lc)] = list_length(stores);
		stores = lappend(stores, list_make1(plan));
		store_rels = lappend_oid(store_rels, plan->presence_col ? cat->matrelid : InvalidOid);
		matrels = lappend(matrels, rel_qualified_name(cat->matrelid));
		deltas = lappend(deltas, OidIsValid(cat->deltaid) ?
						 rel_qualified_name(cat->deltaid) : NULL);
	}
	foreach(lc, stores)
		store_plans = lappend(store_plans, list_length(lfirst(lc)) > 1 ?
							  shared_storage_plan(lfirst(lc)) : linitial(lfirst(lc)));
	if (list_length(stores) == 1 && linitial(deltas) != NULL)
	{
		sql = cv_maintain_append_sql(linitial(store_plans), linitial(deltas), CV_NEW_ROWS);
		of = NULL;
	}
	else
		sql = cv_shared_maintain_sql(store_plans, matrels, deltas);
	se_unpin_settings(nestlevel);
	if (store_of)
		*store_of = of;
	return sql;
}

/*
 * The statement that maintains view viewid of stream together with other
 * views (cv_shared_maintain_sql()), and in *others how many they are; NULL
 * if it has its own statements.  For stream_ext.explain().
 */
char *
maint_shared_statement(Relation stream, Oid viewid, int *others)
{
	bool		first;
	List	   *plans;
	List	   *relids = NIL;
	List	   *groups;
	ListCell   *lc;
	ListCell   *lp;

	*others = 0;
	groups = group_views(RelationGetRelid(stream),
						 views_with_own_trigger(stream, InvalidOid, &first),
						 CurrentMemoryContext, &plans, &relids);
	forboth(lc, groups, lp, plans)
	{
		List	   *members = lfirst(lc);
		ListCell   *lm;

		if (list_length(members) < 2)
			continue;
		foreach(lm, members)
		{
			if (((MaintView *) lfirst(lm))->cat.viewid == viewid)
			{
				*others = list_length(members) - 1;
				return group_statement(members, lfirst(lp), NULL);
			}
		}
	}
	return NULL;
}

static void
views_load(SeBatchEntry *entry, TriggerData *trigdata)
{
	Relation	stream = trigdata->tg_relation;
	MaintViews *views = MemoryContextAllocZero(entry->cxt, sizeof(MaintViews));
	List	   *own;
	List	   *sjoin_units;
	List	   *groups;
	List	   *plans;
	bool		first;
	ListCell   *lc;
	MemoryContext old;

	if (trigdata->tg_trigger->tgnewtable == NULL ||
		strcmp(trigdata->tg_trigger->tgnewtable, CV_NEW_ROWS) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("stream_ext.maintain_views() needs REFERENCING NEW TABLE AS %s",
						CV_NEW_ROWS)));
	entry->kind = views;
	entry->streamid = RelationGetRelid(stream);
	entry->relids[0] = entry->streamid;
	own = views_with_own_trigger(stream, trigdata->tg_trigger->tgoid, &first);
	if (!first)
		return;					/* a second trigger like it does nothing */
	/* joins of two streams run as units of their own (query/stream_joins.c) */
	sjoin_units = sjoin_view_units(entry, entry->streamid, &own);
	groups = group_views(entry->streamid, own, entry->cxt, &plans, &entry->more_relids);

	/* a group of one view is that view's own statements */
	foreach(lc, groups)
	{
		List	   *members = lfirst(lc);
		MaintView  *view = linitial(members);
		SeBatchEntry *unit;

		if (list_length(members) == 1)
		{
			unit = new_unit(entry, &maint_ops);
			maint_fill(unit, view, true);
		}
		else
		{
			MaintGroup *group;
			int			n = list_length(members);

			unit = new_unit(entry, &group_ops);
			old = MemoryContextSwitchTo(unit->cxt);
			group = palloc0(sizeof(MaintGroup));
			group->views = members;
			group->nviews = n;
			group->privs = palloc0(sizeof(List *) * n);
			group->privs_checked = palloc0(sizeof(uint64) * n);
			group->distinct_plans = palloc0(sizeof(List *) * n);
			group->skip = palloc0(sizeof(bool) * n);
			group->missing = palloc0(sizeof(char *) * n);
			group->groups = palloc0(sizeof(uint64) * n);
			group->shared_sql = group_statement(members,
												list_nth(plans, foreach_current_index(lc)),
												&group->store_of);
			MemoryContextSwitchTo(old);
			unit->kind = group;
			unit->streamid = entry->streamid;
			unit->owner = view->cat.owner;
			unit->timezone = view->cat.timezone;
			unit->arrival_attnum = arrival_attnum(entry->streamid);
			unit->error_context = view_error_context(unit->cxt, members);
		}
		old = MemoryContextSwitchTo(entry->cxt);
		views->units = lappend(views->units, unit);
		MemoryContextSwitchTo(old);
	}
	old = MemoryContextSwitchTo(entry->cxt);
	views->units = list_concat(views->units, sjoin_units);
	MemoryContextSwitchTo(old);
}

static uint64
views_run(SeBatchEntry *entry, TriggerData *trigdata)
{
	MaintViews *views = entry->kind;
	uint64		rows = tuplestore_tuple_count(trigdata->tg_newtable);

	se_batch_run_units(views->units, trigdata, rows);
	return 0;
}

static void
views_release(SeBatchEntry *entry)
{
	MaintViews *views = entry->kind;
	ListCell   *lc;

	if (views == NULL)
		return;
	foreach(lc, views->units)
	{
		SeBatchEntry *unit = lfirst(lc);

		if (unit->ops->release)
			unit->ops->release(unit);
		se_batch_forget_plans(unit);
	}
}

static const SeBatchOps views_ops = {
	.name = "stream_ext.maintain_views()",
	.argument = NULL,
	.load = views_load,
	.run = views_run,
	.release = views_release,
	.dispatch = true,
	.plan_rows = MAINT_PLAN_ROWS,
};

/*
 * stream_ext.maintain_views() — the statement-level AFTER INSERT trigger
 * of a stream with continuous views, REFERENCING NEW TABLE AS
 * stream_ext_new: maintains all of them (but those of before 0.3 that
 * have their own stream_ext.maintain() trigger).
 */
Datum
stream_ext_maintain_views(PG_FUNCTION_ARGS)
{
	return se_batch_trigger(fcinfo, &views_ops);
}

/*
 * stream_ext.maintain(materialization) — statement-level AFTER INSERT
 * trigger on a stream, REFERENCING NEW TABLE AS stream_ext_new.  The
 * planner is told MAINT_PLAN_ROWS rows whatever the batch (trigger.c), so
 * the kept plan is the one stream_ext.explain() shows by default.
 */
Datum
stream_ext_maintain(PG_FUNCTION_ARGS)
{
	return se_batch_trigger(fcinfo, &maint_ops);
}

/*
 * Statement-level BEFORE trigger of materializations and side tables: only
 * maintenance may write them.
 */
Datum
stream_ext_guard_materialization(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("stream_ext.guard_materialization() must be called as a trigger")));
	if (se_materializing())
		return PointerGetDatum(NULL);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot modify \"%s\" directly",
					RelationGetRelationName(trigdata->tg_relation)),
			 errdetail("It holds the state of a continuous view and is maintained by stream_ext."),
			 errhint("Insert into the view's stream instead.")));
	return PointerGetDatum(NULL);
}

void
maintain_init(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = stream_ext_planner;
	fast_batch_define_gucs();
}
