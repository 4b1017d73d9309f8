/*-------------------------------------------------------------------------
 *
 * combine.c
 *	  stream_ext.combine(column) at read time: an aggregate column of a
 *	  continuous view re-aggregated across the view's rows from the stored
 *	  partial states (PipelineDB's combine()).
 *
 *	  SELECT stream_ext.combine(users) FROM clicks_per_minute
 *	   WHERE minute >= now() - interval '1 hour';
 *
 * gives the distinct users of the hour, not the sum of each minute's
 * count; combine(avg_col) is the average of the rows, not of the minutes'
 * averages.  stream_ext.combine(anyelement) is declared as an aggregate
 * so that the parser types and groups it like any other; it is never run
 * as one.  combine_rewrite(), called by the planner hook before planning
 * (so a cached plan is rewritten again whenever it is re-planned), finds
 * its calls and, for each:
 *
 *	- its argument must be a column of a continuous view read directly in
 *	  that query level, and that column a single aggregate of the view's
 *	  definition (not an expression of aggregates); else an error says
 *	  why.  A count(DISTINCT) column goes to combine_distinct.c: the
 *	  union of its groups' values from the side table;
 *	- in the view's expanded query (the rewriter's subquery), the column's
 *	  expression stream_ext.finalize(state, ...) -- or the state itself for
 *	  aggregates whose state is their result -- becomes the bare state;
 *	- the call becomes stream_ext.finalize(stream_ext.merge_states(state,
 *	  'agg'), 'agg', NULL::result): the states of the selected rows merged
 *	  with the aggregate's combine function, then finalized (over no rows:
 *	  the aggregate's initial state finalized, count() is 0).
 *
 * The view stays a view: its WHERE (a HAVING), its windows, its owner's
 * permission checks and the read check of privileges.c are the rewriter's,
 * untouched.  Any other use of a rewritten column in the same query is an
 * error (it now holds a state, not the column's value).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parse_func.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "query/combine.h"
#include "query/combine_distinct.h"
#include "query/viewplan.h"

PG_FUNCTION_INFO_V1(stream_ext_combine_unplanned);

/* the OIDs of stream_ext's functions, looked up once per backend */
static bool oids_valid = false;
static Oid	combine_oid = InvalidOid;	/* stream_ext.combine(anyelement) */
static Oid	merge_states_oid = InvalidOid;
static Oid	finalize_oid = InvalidOid;
static Oid	distinct_union_oid = InvalidOid;	/* stream_ext.distinct_union(anyarray) */

static void
forget_oids(Datum arg, int cacheid, uint32 hashvalue)
{
	oids_valid = false;
}

static bool
lookup_oids(void)
{
	static bool registered = false;
	Oid			nsp;

	if (oids_valid)
		return OidIsValid(combine_oid);
	if (!registered)
	{
		CacheRegisterSyscacheCallback(PROCOID, forget_oids, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, forget_oids, (Datum) 0);
		registered = true;
	}
	combine_oid = merge_states_oid = finalize_oid = distinct_union_oid = InvalidOid;
	nsp = get_namespace_oid("stream_ext", true);
	if (OidIsValid(nsp))
	{
		Oid			one[1] = {ANYELEMENTOID};
		Oid			merge[2] = {ANYELEMENTOID, REGPROCEDUREOID};
		Oid			fin[3] = {ANYOID, REGPROCEDUREOID, ANYCOMPATIBLEOID};
		Oid			arr[1] = {ANYARRAYOID};
		List	   *name;

		name = list_make2(makeString("stream_ext"), makeString("combine"));
		combine_oid = LookupFuncName(name, 1, one, true);
		name = list_make2(makeString("stream_ext"), makeString("merge_states"));
		merge_states_oid = LookupFuncName(name, 2, merge, true);
		name = list_make2(makeString("stream_ext"), makeString("finalize"));
		finalize_oid = LookupFuncName(name, 3, fin, true);
		name = list_make2(makeString("stream_ext"), makeString("distinct_union"));
		distinct_union_oid = LookupFuncName(name, 1, arr, true);
		if (!OidIsValid(merge_states_oid) || !OidIsValid(finalize_oid))
			combine_oid = InvalidOid;
	}
	oids_valid = true;
	return OidIsValid(combine_oid);
}

/* a combine() call, with where it points */
typedef struct CombineCall
{
	Aggref	   *aggref;
	int			varno;
	AttrNumber	attno;
} CombineCall;

typedef struct FindContext
{
	List	   *calls;			/* CombineCall * of this query level */
} FindContext;

static void rewrite_query(Query *q);

static bool
find_calls_walker(Node *node, FindContext *cx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref) && ((Aggref *) node)->aggfnoid == combine_oid)
	{
		Aggref	   *agg = (Aggref *) node;
		TargetEntry *arg = linitial_node(TargetEntry, agg->args);
		Var		   *var = (Var *) arg->expr;
		CombineCall *call;

		if (agg->agglevelsup != 0 || agg->aggdistinct != NIL || agg->aggorder != NIL ||
			!IsA(var, Var) || var->varlevelsup != 0 || var->varattno <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("stream_ext.combine() takes a column of a continuous view"),
					 errdetail("Its argument must be an aggregate column of a continuous view read in the same FROM, with no DISTINCT or ORDER BY."),
					 errhint("Write stream_ext.combine(column) FROM view.")));
		call = palloc(sizeof(CombineCall));
		call->aggref = agg;
		call->varno = var->varno;
		call->attno = var->varattno;
		cx->calls = lappend(cx->calls, call);
		return false;
	}
	if (IsA(node, WindowFunc) && ((WindowFunc *) node)->winfnoid == combine_oid)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("stream_ext.combine() cannot be used as a window function"),
				 errhint("Merge the rows with GROUP BY, or compute per-row values from the view's own columns.")));
	if (IsA(node, Query))
		return false;			/* sublevels: rewrite_query() */
	return expression_tree_walker(node, find_calls_walker, (void *) cx);
}

/*
 * Does query level q hold a subquery?  An analyzed query holds other
 * Query nodes only in its range table (RTE_SUBQUERY: a FROM subquery, a
 * view the rewriter expanded), its CTEs and its sublinks (hasSubLinks,
 * also set for the sublinks of security quals the rewriter adds).  Most
 * statements -- an INSERT ... VALUES into a stream -- have none: the
 * planner hook runs for every statement, and this spares it the walk.
 */
static bool
has_subqueries(Query *q)
{
	ListCell   *lc;

	if (q->hasSubLinks || q->cteList != NIL)
		return true;
	foreach(lc, q->rtable)
	{
		if (((RangeTblEntry *) lfirst(lc))->rtekind == RTE_SUBQUERY)
			return true;
	}
	return false;
}

/* recurse into every subquery: FROM, CTEs, sublinks */
static bool
subqueries_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		rewrite_query((Query *) node);
		return false;
	}
	return expression_tree_walker(node, subqueries_walker, context);
}

/*
 * The continuous view an RTE_SUBQUERY was expanded from: PostgreSQL 15's
 * stored view queries keep the view itself as their first range table
 * entry (the rewriter's OLD), for permission checks.
 */
static Oid
expanded_view(RangeTblEntry *rte)
{
	RangeTblEntry *old;

	if (rte->rtekind != RTE_SUBQUERY || rte->subquery == NULL ||
		rte->subquery->rtable == NIL)
		return InvalidOid;
	old = linitial_node(RangeTblEntry, rte->subquery->rtable);
	if (old->rtekind != RTE_RELATION || old->relkind != RELKIND_VIEW)
		return InvalidOid;
	return old->relid;
}

/*
 * The definition of continuous view viewid as stream_ext recorded it,
 * analyzed again (cv_view_definition()); errors if viewid is none.
 */
static Query *
view_definition(Oid viewid, char **text)
{
	Query	   *def = cv_view_definition(viewid, text);

	if (def == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("stream_ext.combine() takes a column of a continuous view"),
				 errdetail("\"%s\" is not a continuous view.", get_rel_name(viewid))));
	return def;
}

/*
 * The aggregate of column attno of continuous view viewid, whose recorded
 * definition, analyzed, is def (view_definition()); errors if the column
 * is not one aggregate that merges.
 */
static Aggref *
column_aggregate(Query *def, Oid viewid, AttrNumber attno, const char *colname)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, def->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		if (++n != attno)
			continue;
		if (!IsA(tle->expr, Aggref))
			break;
		if (((Aggref *) tle->expr)->aggdistinct != NIL && !OidIsValid(distinct_union_oid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("stream_ext.combine() cannot merge column \"%s\" of continuous view \"%s\": it is a count(DISTINCT ...)",
							colname, get_rel_name(viewid)),
					 errdetail("An exact count(DISTINCT) keeps its values per group, not a mergeable state."),
					 errhint("For distinct counts across rows, define the column with hll_add_agg() (postgresql-15-hll) and read hll_cardinality(stream_ext.combine(column)).")));
		return (Aggref *) tle->expr;
	}
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("column \"%s\" of continuous view \"%s\" is not an aggregate",
					colname, get_rel_name(viewid)),
			 errdetail("stream_ext.combine() merges the stored states of a column that is exactly one aggregate of the view's query.")));
	return NULL;				/* keep compiler quiet */
}

/*
 * Is expr, a view's column without its finalize(), one stored state: the
 * state itself, or coalesce(state, constant) (count(*) and count(x) over a
 * changelog stream, retract.c)?  Not an expression of several states.
 */
static bool
is_one_state(Node *expr)
{
	if (IsA(expr, CoalesceExpr) && list_length(((CoalesceExpr *) expr)->args) == 2 &&
		IsA(lsecond(((CoalesceExpr *) expr)->args), Const))
		expr = linitial(((CoalesceExpr *) expr)->args);
	return IsA(expr, Var);
}

/* a regprocedure constant */
static Const *
regproc_const(Oid procid)
{
	return makeConst(REGPROCEDUREOID, -1, InvalidOid, sizeof(Oid),
					 ObjectIdGetDatum(procid), false, true);
}

/*
 * merge_states() over no rows (no view row read, or none passing the
 * call's FILTER) is NULL.  The aggregate itself over no rows starts from
 * its initial value (count(): 0), which its final function, if any, then
 * sees: so COALESCE(merged, initial state) when the aggregate has one.
 * An internal state has no value to start from here; such aggregates
 * (sum(numeric), ...) have none.
 */
static Node *
initial_state_if_null(Node *merged, Oid aggfnoid, Oid statetype, Oid collid)
{
	HeapTuple	tup;
	Datum		initval;
	bool		isnull;
	Oid			transtype;
	Oid			typinput;
	Oid			typioparam;
	Const	   *init;
	CoalesceExpr *c;

	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggfnoid);
	transtype = ((Form_pg_aggregate) GETSTRUCT(tup))->aggtranstype;
	initval = SysCacheGetAttr(AGGFNOID, tup, Anum_pg_aggregate_agginitval, &isnull);
	if (isnull || transtype == INTERNALOID)
	{
		ReleaseSysCache(tup);
		return merged;
	}
	getTypeInputInfo(statetype, &typinput, &typioparam);
	init = makeConst(statetype, -1, collid, get_typlen(statetype),
					 OidInputFunctionCall(typinput, TextDatumGetCString(initval), typioparam, -1),
					 false, get_typbyval(statetype));
	ReleaseSysCache(tup);

	c = makeNode(CoalesceExpr);
	c->coalescetype = statetype;
	c->coalescecollid = collid;
	c->args = list_make2(merged, init);
	c->location = -1;
	return (Node *) c;
}

/*
 * What a combine() call becomes: finalize(merge_states(state, agg), agg,
 * NULL::result), with merge_states an Aggref of the same query level
 * (keeping the call's FILTER) and, over no rows, the aggregate's initial
 * state in its place (initial_state_if_null()).  A count(DISTINCT) column (aggfnoid
 * InvalidOid, state: the array of its values, combine_distinct.c) becomes
 * stream_ext.distinct_union(values).
 */
static Node *
merged_call(Aggref *call, Var *state, Oid aggfnoid)
{
	Aggref	   *merge = makeNode(Aggref);
	FuncExpr   *fin;
	Oid			statetype = state->vartype;

	if (!OidIsValid(aggfnoid))
	{
		merge->aggfnoid = distinct_union_oid;
		merge->aggtype = INT8OID;
		merge->aggcollid = InvalidOid;
		merge->inputcollid = state->varcollid;
		merge->aggtranstype = InvalidOid;
		merge->aggargtypes = list_make1_oid(statetype);
		merge->args = list_make1(makeTargetEntry((Expr *) state, 1, NULL, false));
		merge->aggfilter = call->aggfilter;
		merge->aggkind = AGGKIND_NORMAL;
		merge->aggsplit = AGGSPLIT_SIMPLE;
		merge->aggno = -1;
		merge->aggtransno = -1;
		merge->location = call->location;
		return (Node *) merge;
	}
	merge->aggfnoid = merge_states_oid;
	merge->aggtype = statetype;
	merge->aggcollid = state->varcollid;
	merge->inputcollid = state->varcollid;
	merge->aggtranstype = InvalidOid;	/* the planner fills it in */
	merge->aggargtypes = list_make2_oid(statetype, REGPROCEDUREOID);
	merge->aggdirectargs = NIL;
	merge->args = list_make2(makeTargetEntry((Expr *) state, 1, NULL, false),
							 makeTargetEntry((Expr *) regproc_const(aggfnoid), 2, NULL, false));
	merge->aggorder = NIL;
	merge->aggdistinct = NIL;
	merge->aggfilter = call->aggfilter;
	merge->aggstar = false;
	merge->aggvariadic = false;
	merge->aggkind = AGGKIND_NORMAL;
	merge->agglevelsup = 0;
	merge->aggsplit = AGGSPLIT_SIMPLE;
	merge->aggno = -1;
	merge->aggtransno = -1;
	merge->location = call->location;

	fin = makeFuncExpr(finalize_oid, call->aggtype,
					   list_make3(initial_state_if_null((Node *) merge, aggfnoid, statetype, state->varcollid),
								  regproc_const(aggfnoid),
								  makeNullConst(call->aggtype, -1, call->aggcollid)),
					   call->aggcollid, InvalidOid, COERCE_EXPLICIT_CALL);
	return (Node *) fin;
}

typedef struct MutateContext
{
	int			varno;			/* the view's range table index */
	Bitmapset  *attnos;			/* its columns now holding states */
	List	   *states;			/* per attno in attnos order: Var of the state */
	List	   *aggs;			/* parallel: aggregate OID (as oid list) */
	List	   *attlist;		/* parallel: attno (int list) */
	int			levelsup;
	List	   *join_columns;	/* (join rtindex, attno) pairs, as int lists,
								 * aliasing a rewritten column */
	const char *viewname;
	List	   *colnames;
} MutateContext;

static Node *
replace_mutator(Node *node, MutateContext *cx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref) && ((Aggref *) node)->aggfnoid == combine_oid && cx->levelsup == 0)
	{
		Aggref	   *call = (Aggref *) node;
		Var		   *var = (Var *) linitial_node(TargetEntry, call->args)->expr;

		if (var->varno == cx->varno && bms_is_member(var->varattno, cx->attnos))
		{
			ListCell   *s,
					   *a,
					   *n;

			forthree(s, cx->states, a, cx->aggs, n, cx->attlist)
			{
				if (lfirst_int(n) == var->varattno)
					return merged_call(call, copyObject((Var *) lfirst(s)), lfirst_oid(a));
			}
		}
	}
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		ListCell   *lj;
		bool		aliased = false;

		foreach(lj, cx->join_columns)
		{
			if (var->varlevelsup == cx->levelsup &&
				var->varno == linitial_int(lfirst(lj)) &&
				(var->varattno == 0 || var->varattno == lsecond_int(lfirst(lj))))
				aliased = true;
		}
		if (var->varlevelsup == cx->levelsup &&
			((var->varno == cx->varno &&
			  (var->varattno == 0 || bms_is_member(var->varattno, cx->attnos))) ||
			 aliased))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of continuous view \"%s\" is read through stream_ext.combine() and otherwise in the same query",
							var->varattno > 0 ? strVal(list_nth(cx->colnames, var->varattno - 1)) : "*",
							cx->viewname),
					 errhint("Read the column's own values in a separate query or subquery.")));
		return node;
	}
	if (IsA(node, Query))
	{
		Query	   *result;

		cx->levelsup++;
		result = query_tree_mutator((Query *) node, replace_mutator, (void *) cx, 0);
		cx->levelsup--;
		return (Node *) result;
	}
	return expression_tree_mutator(node, replace_mutator, (void *) cx);
}

/* does expr read one of cx's rewritten columns (at the query's level)? */
static bool
reads_rewritten_walker(Node *node, MutateContext *cx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup == 0 && ((Var *) node)->varno == cx->varno &&
			bms_is_member(((Var *) node)->varattno, cx->attnos);
	return expression_tree_walker(node, reads_rewritten_walker, (void *) cx);
}

/*
 * The columns of q's joins that alias a rewritten column (FROM v JOIN t
 * USING (k) names every column of v again): each becomes a NULL of its
 * type, so that the join's columns keep their types, and any read of it
 * is refused like a read of the column itself.
 */
static void
hide_join_aliases(Query *q, MutateContext *cx)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		ListCell   *la;

		if (rte->rtekind != RTE_JOIN)
			continue;
		foreach(la, rte->joinaliasvars)
		{
			Node	   *alias = lfirst(la);

			if (alias == NULL || !reads_rewritten_walker(alias, cx))
				continue;
			lfirst(la) = makeNullConst(exprType(alias), exprTypmod(alias), exprCollation(alias));
			cx->join_columns = lappend(cx->join_columns,
									   list_make2_int(foreach_current_index(lc) + 1,
													  foreach_current_index(la) + 1));
		}
	}
}

static void
rewrite_query(Query *q)
{
	FindContext fcx = {NIL};
	ListCell   *lc;
	int			varno;

	/* inner levels first (their own combine() calls) */
	if (has_subqueries(q))
		(void) query_tree_walker(q, subqueries_walker, NULL, 0);
	if (!q->hasAggs && !q->hasWindowFuncs)
		return;
	(void) query_tree_walker(q, find_calls_walker, (void *) &fcx, QTW_IGNORE_RANGE_TABLE);
	if (fcx.calls == NIL)
		return;

	/* one view at a time */
	for (varno = 1; varno <= list_length(q->rtable); varno++)
	{
		RangeTblEntry *rte = rt_fetch(varno, q->rtable);
		MutateContext mcx = {0};
		Oid			viewid = InvalidOid;
		Query	   *def = NULL; /* the view's definition, analyzed once */
		char	   *deftext = NULL;
		CVPlan	   *plan = NULL;	/* and broken into keys and aggregates */

		foreach(lc, fcx.calls)
		{
			CombineCall *call = lfirst(lc);
			TargetEntry *tle;
			Aggref	   *agg;
			Node	   *expr;
			Var		   *state;

			if (call->varno != varno || bms_is_member(call->attno, mcx.attnos))
				continue;
			if (!OidIsValid(viewid))
			{
				viewid = expanded_view(rte);
				if (!OidIsValid(viewid))
					ereport(ERROR,
							(errcode(ERRCODE_WRONG_OBJECT_TYPE),
							 errmsg("stream_ext.combine() takes a column of a continuous view"),
							 errdetail("\"%s\" is not a continuous view.", rte->eref->aliasname),
							 errhint("Apply stream_ext.combine() to the view's column directly, not through a subquery or join alias.")));
				mcx.varno = varno;
				mcx.viewname = get_rel_name(viewid);
				mcx.colnames = rte->eref->colnames;
			}
			if (def == NULL)
				def = view_definition(viewid, &deftext);
			agg = column_aggregate(def, viewid, call->attno,
								   strVal(list_nth(rte->eref->colnames, call->attno - 1)));
			tle = get_tle_by_resno(rte->subquery->targetList, call->attno);
			if (tle == NULL)
				elog(ERROR, "continuous view %u has no column %d", viewid, call->attno);
			if (agg->aggdistinct != NIL)
			{
				/* count(DISTINCT): its values, from the side table */
				CVAgg	   *cvagg;

				if (plan == NULL)
				{
					ViewCatalogEntry entry;

					plan = cv_reanalyze(viewid, copyObject(def), deftext);
					/* count(DISTINCT) deferred to compaction: values in the delta too */
					if (catalog_lookup_view(viewid, &entry, CurrentMemoryContext))
						cv_detect_deferred_distinct(plan, viewid, entry.deltaid);
				}
				cvagg = cv_column_agg(plan, call->attno);
				if (cvagg == NULL || !cvagg->is_distinct)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("stream_ext.combine() cannot merge column \"%s\" of continuous view \"%s\"",
									strVal(list_nth(rte->eref->colnames, call->attno - 1)),
									mcx.viewname),
							 errdetail("Of the aggregates with DISTINCT, only count(DISTINCT ...) keeps its values.")));
				state = combine_distinct_column(viewid, plan, cvagg, rte->subquery,
												varno, call->attno);
				mcx.attnos = bms_add_member(mcx.attnos, call->attno);
				mcx.states = lappend(mcx.states, state);
				mcx.aggs = lappend_oid(mcx.aggs, InvalidOid);
				mcx.attlist = lappend_int(mcx.attlist, call->attno);
				continue;
			}
			/* finalize(state, agg, NULL::t) -> state; a direct state stays */
			expr = (Node *) tle->expr;
			if (IsA(expr, FuncExpr) && ((FuncExpr *) expr)->funcid == finalize_oid)
				expr = linitial(((FuncExpr *) expr)->args);
			if (!is_one_state(expr))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("stream_ext.combine() cannot merge column \"%s\" of continuous view \"%s\": it is computed from several stored states",
								strVal(list_nth(rte->eref->colnames, call->attno - 1)), mcx.viewname),
						 errdetail("Over a changelog stream, sum, avg, the variances, bool_and and bool_or are kept as signed sums and counts; of them, combine() merges count(*) and count(x)."),
						 errhint("Keep the signed parts as columns of their own (e.g. sum(x) and count(x)) and combine those.")));
			tle->expr = (Expr *) expr;
			state = makeVar(varno, call->attno, exprType(expr), exprTypmod(expr),
							exprCollation(expr), 0);
			mcx.attnos = bms_add_member(mcx.attnos, call->attno);
			mcx.states = lappend(mcx.states, state);
			mcx.aggs = lappend_oid(mcx.aggs, agg->aggfnoid);
			mcx.attlist = lappend_int(mcx.attlist, call->attno);
		}
		if (mcx.attnos == NULL)
			continue;
		/* the calls become merges, and nothing else may read those columns */
		hide_join_aliases(q, &mcx);
		(void) query_tree_mutator(q, replace_mutator, (void *) &mcx,
								  QTW_DONT_COPY_QUERY | QTW_IGNORE_JOINALIASES);
	}
}

/*
 * Rewrite the combine() calls of a query about to be planned (the planner
 * hook, maintain/maintain.c).  Cheap when there are none: one walk over the
 * query tree, and only when stream_ext is installed.
 */
void
combine_rewrite(Query *parse)
{
	if (!lookup_oids())
		return;
	rewrite_query(parse);
}

/*
 * The transition function of the aggregate stream_ext.combine(anyelement):
 * reached only when the planner hook did not rewrite the call (it always
 * does, or raises an error).
 */
Datum
stream_ext_combine_unplanned(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("stream_ext.combine() can only be used on an aggregate column of a continuous view")));
	PG_RETURN_NULL();
}
