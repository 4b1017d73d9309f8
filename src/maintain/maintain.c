/*-------------------------------------------------------------------------
 *
 * maintain.c
 *	  Incremental maintenance of continuous views.
 *
 *	  Every continuous view has a statement-level AFTER INSERT trigger on
 *	  its stream, with the statement's rows as transition table.  The
 *	  trigger runs the view's maintenance statement (query/analyze.c) once over
 *	  those rows: one partial aggregation of the whole batch, one upsert per
 *	  touched group.  It runs maintain/trigger.c's skeleton (maint_ops): as
 *	  the view's owner, in a security-restricted context, with the settings
 *	  of core/security.c pinned; prepared plans are kept per backend and
 *	  rebuilt when the catalog or the tables change.
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
#include "maintain/compact.h"
#include "maintain/maintain.h"
#include "maintain/privileges.h"
#include "maintain/stats.h"
#include "maintain/trigger.h"
#include "windows/lateness.h"
#include "windows/windows.h"

PG_FUNCTION_INFO_V1(stream_ext_maintain);
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

	if (se_in_maintenance())
		(void) keep_partial_aggs_walker((Node *) parse, NULL);

	if (prev_planner_hook)
		result = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	else
		result = standard_planner(parse, query_string, cursorOptions, boundParams);

	if (se_in_maintenance())
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
	entry->kind = view;
	entry->objid = view->cat.viewid;
	entry->streamid = view->cat.streamid;
	entry->relids[0] = view->cat.matrelid;
	entry->relids[1] = view->cat.streamid;
	entry->relids[2] = view->cat.viewid;
	entry->owner = view->cat.owner;
	entry->timezone = view->cat.timezone;
	entry->notify = view->cat.notify;
	entry->arrival_attnum = get_attnum(view->cat.streamid, STREAM_ARRIVAL_COLUMN);
	if (entry->arrival_attnum != InvalidAttrNumber &&
		get_atttype(view->cat.streamid, entry->arrival_attnum) != TIMESTAMPTZOID)
		entry->arrival_attnum = InvalidAttrNumber;
	view->lateness = lateness_lookup(view->cat.viewid, entry->cxt);
	entry->error_context =
		MemoryContextStrdup(entry->cxt,
							psprintf("maintenance of continuous view %s (statements in stream_ext.view_catalog)",
									 quote_qualified_identifier(get_namespace_name(get_rel_namespace(view->cat.viewid)),
																get_rel_name(view->cat.viewid))));
}

static bool
maint_admit(SeBatchEntry *entry, TriggerData *trigdata)
{
	MaintView  *view = entry->kind;

	/* only the view's own stream feeds it: no trigger elsewhere may forge rows */
	if (RelationGetRelid(trigdata->tg_relation) != view->cat.streamid)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("trigger \"%s\" on \"%s\" cannot maintain continuous view \"%s\": it reads another stream",
						trigdata->tg_trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation),
						get_rel_name(view->cat.viewid))));
	/* a view whose owner lost a privilege is no longer maintained */
	if (priv_invalid_reason(view->cat.viewid) != NULL)
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
	ListCell   *lc;

	if (view->lateness)
	{
		wm = lateness_begin_batch(view->lateness, &wm_isnull);
		params[0] = TimestampTzGetDatum(wm);
		nulls[0] = wm_isnull ? 'n' : ' ';
	}
	foreach(lc, entry->plans)
	{
		int			rc = SPI_execute_plan(lfirst(lc), params, nulls, false, 0);

		if (rc != SPI_OK_INSERT)
			elog(ERROR, "stream_ext: maintenance failed: %s", SPI_result_code_string(rc));
		if (foreach_current_index(lc) == 0)
			groups = SPI_processed;
	}
	if (view->lateness)
		lateness_end_batch(view->lateness, wm, wm_isnull);
	compact_after_batch(&view->cat);
	window_expire_opportunistic(&view->cat, &view->next_expiry);
	return groups;
}

static const SeBatchOps maint_ops = {
	.name = "stream_ext.maintain()",
	.argument = "the materialization",
	.load = maint_load,
	.admit = maint_admit,
	.prepare = maint_prepare,
	.run = maint_run,
	.maintenance = true,
	.plan_rows = MAINT_PLAN_ROWS,
	.invalid_kind = "continuous view",
};

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
	if (se_in_maintenance())
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
}
