/*-------------------------------------------------------------------------
 *
 * maintain.c
 *	  Incremental maintenance of continuous views.
 *
 *	  Every continuous view has a statement-level AFTER INSERT trigger on
 *	  its stream, with the statement's rows as transition table.  The
 *	  trigger runs the view's maintenance statement (query/analyze.c) once over
 *	  those rows: one partial aggregation of the whole batch, one upsert per
 *	  touched group.  It runs as the view's owner, in a security-restricted
 *	  context, with search_path and TimeZone pinned; prepared plans are kept
 *	  per backend and rebuilt when the catalog or the tables change.
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
#include "maintain/maintain.h"
#include "maintain/privileges.h"
#include "maintain/stats.h"
#include "maintain/transform.h"
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

/* ---- per-backend cache of maintenance plans ---------------------------- */

typedef struct MaintEntry
{
	Oid			tgoid;			/* hash key: the maintenance trigger */
	bool		valid;
	ViewCatalogEntry cat;
	SPIPlanPtr	maintain_plan;
	List	   *distinct_plans;
	AttrNumber	arrival_attnum; /* stream's arrival_timestamp, for stats */
	TimestampTz next_expiry;	/* sliding windows: see windows/windows.c */
	LatenessInfo *lateness;		/* allowed_lateness: see windows/lateness.c */
	List	   *statements;		/* the SQL of the plans, for errors */
	char	   *error_context;	/* "maintenance of continuous view ..." */
	List	   *privs;			/* what the plans touch: see privileges.c */
	uint64		privs_checked;
	MemoryContext cxt;
} MaintEntry;

static HTAB *maint_cache = NULL;

static void
maint_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	MaintEntry *entry;

	if (maint_cache == NULL)
		return;
	hash_seq_init(&status, maint_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (!OidIsValid(relid) || relid == entry->cat.matrelid ||
			relid == entry->cat.streamid || relid == entry->cat.viewid)
			entry->valid = false;
	}
}

static void
release_entry(MaintEntry *entry)
{
	ListCell   *lc;

	if (entry->maintain_plan)
		SPI_freeplan(entry->maintain_plan);
	entry->maintain_plan = NULL;
	foreach(lc, entry->distinct_plans)
		SPI_freeplan(lfirst(lc));
	entry->distinct_plans = NIL;
	entry->privs = NIL;
	entry->privs_checked = 0;
	if (entry->cxt)
		MemoryContextDelete(entry->cxt);
	entry->cxt = NULL;
	entry->valid = false;
}

static MaintEntry *
get_entry(Trigger *trigger)
{
	MaintEntry *entry;
	bool		found;
	Oid			matrelid;

	if (maint_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(MaintEntry);
		maint_cache = hash_create("stream_ext maintenance plans", 64, &ctl,
								  HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(maint_relcache_callback, (Datum) 0);
	}

	entry = hash_search(maint_cache, &trigger->tgoid, HASH_ENTER, &found);
	if (!found)
	{
		entry->valid = false;
		entry->maintain_plan = NULL;
		entry->distinct_plans = NIL;
		entry->next_expiry = 0;
		entry->lateness = NULL;
		entry->privs = NIL;
		entry->privs_checked = 0;
		entry->cxt = NULL;
	}
	if (entry->valid)
		return entry;

	release_entry(entry);
	if (trigger->tgnargs != 1)
		elog(ERROR, "stream_ext.maintain() needs the materialization as its argument");
	matrelid = relid_from_trigger_arg(trigger->tgargs[0]);
	entry->cxt = AllocSetContextCreate(CacheMemoryContext, "stream_ext view",
									   ALLOCSET_SMALL_SIZES);
	if (!OidIsValid(matrelid) ||
		!catalog_lookup_view_by_matrel(matrelid, &entry->cat, entry->cxt))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous view with materialization %s does not exist",
						trigger->tgargs[0]),
				 errdetail("Trigger \"%s\" maintains it.", trigger->tgname)));
	entry->arrival_attnum = get_attnum(entry->cat.streamid, "arrival_timestamp");
	if (entry->arrival_attnum != InvalidAttrNumber &&
		get_atttype(entry->cat.streamid, entry->arrival_attnum) != TIMESTAMPTZOID)
		entry->arrival_attnum = InvalidAttrNumber;
	entry->lateness = lateness_lookup(entry->cat.viewid, entry->cxt);
	entry->valid = true;
	return entry;
}

static void
prepare_plans(MaintEntry *entry)
{
	ListCell   *lc;
	MemoryContext old;
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	int			nargs = entry->lateness ? 1 : 0;	/* $1: the watermark */

	entry->maintain_plan = SPI_prepare(entry->cat.maintain_sql, nargs, argtypes);
	if (entry->maintain_plan == NULL)
		elog(ERROR, "stream_ext: could not prepare maintenance: %s",
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(entry->maintain_plan);
	foreach(lc, entry->cat.distinct_sql)
	{
		SPIPlanPtr	plan = SPI_prepare((char *) lfirst(lc), nargs, argtypes);

		if (plan == NULL)
			elog(ERROR, "stream_ext: could not prepare maintenance: %s",
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		old = MemoryContextSwitchTo(entry->cxt);
		entry->distinct_plans = lappend(entry->distinct_plans, plan);
		entry->privs = list_concat(entry->privs,
								   priv_collect(plan, entry->cat.streamid, entry->cxt));
		MemoryContextSwitchTo(old);
	}

	/*
	 * An error in these statements gets a short CONTEXT naming the view
	 * instead of the statements themselves (se_rethrow_short_context).
	 */
	old = MemoryContextSwitchTo(entry->cxt);
	entry->statements = lcons(entry->cat.maintain_sql, list_copy(entry->cat.distinct_sql));
	if (entry->cat.expire_sql)
		entry->statements = lappend(entry->statements, entry->cat.expire_sql);
	if (entry->lateness)
	{
		entry->statements = lappend(entry->statements, entry->lateness->late_sql);
		entry->statements = lappend(entry->statements, entry->lateness->max_sql);
		if (entry->lateness->emit_sql)
			entry->statements = lappend(entry->statements, entry->lateness->emit_sql);
	}
	entry->error_context =
		psprintf("maintenance of continuous view %s (statements in stream_ext.view_catalog)",
				 quote_qualified_identifier(get_namespace_name(get_rel_namespace(entry->cat.viewid)),
											get_rel_name(entry->cat.viewid)));
	/* what the plans touch, checked at every batch (privileges.c) */
	entry->privs = list_concat(entry->privs,
							   priv_collect(entry->maintain_plan, entry->cat.streamid, entry->cxt));
	MemoryContextSwitchTo(old);
}

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
check_stream_rls(Relation stream, MaintEntry *entry)
{
	if (!stream->rd_rel->relrowsecurity)
		return;
	if (stream_rls_applies(RelationGetRelid(stream), entry->cat.owner, true,
						   stream->rd_rel->relforcerowsecurity))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot maintain continuous view \"%s\": row-level security of stream \"%s\" applies to its owner %s",
						get_rel_name(entry->cat.viewid),
						RelationGetRelationName(stream),
						GetUserNameFromId(entry->cat.owner, false)),
				 errdetail("A continuous view aggregates every row of its stream; it would show rows its owner cannot read."),
				 errhint("Give the view to the stream's owner or to a role with BYPASSRLS, or drop it.")));
}

/*
 * Register the batch (the trigger's transition table) for SPI.
 *
 * Not with SPI_register_trigger_data(): that gives the planner the row count
 * of the batch at hand, and the maintenance plan is made once, on the first
 * batch, and then kept.  When that first batch is a single row (a warm-up
 * INSERT, a trickle before a bulk load) the planner picks a sort of the raw
 * rows and a GroupAggregate, and every later 10,000-row batch is sorted row
 * by row instead of being hashed into its groups.  So the planner is always
 * told MAINT_PLAN_ROWS rows, whatever the batch: the plan does not depend on
 * which batch came first, and is the one stream_ext.explain() shows by
 * default.
 */
static void
register_new_rows(TriggerData *trigdata)
{
	EphemeralNamedRelation enr;

	if (trigdata->tg_trigger->tgnewtable == NULL)
		elog(ERROR, "stream_ext.maintain() needs a NEW TABLE");
	enr = palloc0(sizeof(EphemeralNamedRelationData));
	enr->md.name = trigdata->tg_trigger->tgnewtable;
	enr->md.reliddesc = RelationGetRelid(trigdata->tg_relation);
	enr->md.tupdesc = NULL;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = MAINT_PLAN_ROWS;
	enr->reldata = trigdata->tg_newtable;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "SPI_register_relation failed");
}

/*
 * stream_ext.maintain(materialization) — statement-level AFTER INSERT
 * trigger on a stream, REFERENCING NEW TABLE AS stream_ext_new.
 */
Datum
stream_ext_maintain(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	MaintEntry *entry;
	SeRunAs		octx;
	ListCell   *lc;
	int			rc;
	uint64		groups;
	Datum		params[1] = {0};
	char		nulls[1] = {' '};
	TimestampTz wm = 0;
	bool		wm_isnull = true;
	char	   *missing;
	instr_time	start;
	instr_time	elapsed;
	MemoryContext caller_cxt = CurrentMemoryContext;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		trigdata->tg_newtable == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("stream_ext.maintain() must be an AFTER INSERT FOR EACH STATEMENT trigger with a NEW TABLE")));

	/* an empty batch changes nothing */
	if (tuplestore_tuple_count(trigdata->tg_newtable) == 0)
		return PointerGetDatum(NULL);

	entry = get_entry(trigdata->tg_trigger);
	/* only the view's own stream feeds it: no trigger elsewhere may forge rows */
	if (RelationGetRelid(trigdata->tg_relation) != entry->cat.streamid)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("trigger \"%s\" on \"%s\" cannot maintain continuous view \"%s\": it reads another stream",
						trigdata->tg_trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation),
						get_rel_name(entry->cat.viewid))));
	/* a view whose owner lost a privilege is no longer maintained */
	if (priv_invalid_reason(entry->cat.viewid) != NULL)
		return PointerGetDatum(NULL);
	check_stream_rls(trigdata->tg_relation, entry);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	register_new_rows(trigdata);

	se_run_as_owner(&octx, entry->cat.owner, entry->cat.timezone);

	if (entry->maintain_plan == NULL)
		prepare_plans(entry);

	/* the owner must still read what the view reads: else mark it invalid */
	missing = priv_check(entry->privs, entry->cat.owner, &entry->privs_checked);
	if (missing != NULL)
	{
		se_restore(&octx);
		SPI_finish();
		priv_mark_invalid(entry->cat.viewid, "continuous view", missing);
		return PointerGetDatum(NULL);
	}

	INSTR_TIME_SET_CURRENT(start);
	se_maintenance_begin();
	PG_TRY();
	{
		if (entry->lateness)
		{
			wm = lateness_begin_batch(entry->lateness, &wm_isnull);
			params[0] = TimestampTzGetDatum(wm);
			nulls[0] = wm_isnull ? 'n' : ' ';
		}
		rc = SPI_execute_plan(entry->maintain_plan, params, nulls, false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "stream_ext: maintenance failed: %s", SPI_result_code_string(rc));
		groups = SPI_processed;
		foreach(lc, entry->distinct_plans)
		{
			rc = SPI_execute_plan(lfirst(lc), params, nulls, false, 0);
			if (rc != SPI_OK_INSERT)
				elog(ERROR, "stream_ext: maintenance failed: %s", SPI_result_code_string(rc));
		}
		if (entry->lateness)
			lateness_end_batch(entry->lateness, wm, wm_isnull);
		window_expire_opportunistic(&entry->cat, &entry->next_expiry);
	}
	PG_CATCH();
	{
		se_maintenance_end();
		se_rethrow_short_context(caller_cxt, entry->statements,
								 "%s, batch of " UINT64_FORMAT " rows inserted into %s",
								 entry->error_context,
								 (uint64) tuplestore_tuple_count(trigdata->tg_newtable),
								 RelationGetRelationName(trigdata->tg_relation));
	}
	PG_END_TRY();
	se_maintenance_end();

	se_restore(&octx);
	SPI_finish();

	if (stats_tracking())
	{
		TimestampTz max_arrival = 0;

		if (entry->arrival_attnum != InvalidAttrNumber)
			max_arrival = stats_max_timestamp(trigdata->tg_newtable,
											  RelationGetDescr(trigdata->tg_relation),
											  entry->arrival_attnum);
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);
		stats_report_batch(entry->cat.viewid, entry->cat.streamid,
						   tuplestore_tuple_count(trigdata->tg_newtable),
						   groups, INSTR_TIME_GET_MILLISEC(elapsed),
						   max_arrival);
	}
	if (entry->cat.notify)
		cv_notify_batch(entry->cat.notify, entry->cat.viewid,
						tuplestore_tuple_count(trigdata->tg_newtable), groups);
	return PointerGetDatum(NULL);
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
