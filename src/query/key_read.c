/*-------------------------------------------------------------------------
 *
 * key_read.c
 *	  Reads by key of a view that appends as one executor node: the custom
 *	  scan StreamExtKeyRead (docs/internals.md, "Reads by key").
 *
 * A view that appends reads materialization (+) delta
 * (cv_merged_source_sql()): a UNION ALL of three branches that PostgreSQL
 * plans, for a read fixing every key by equality, as an Append of two
 * nested loops over four scans, an aggregation of the delta's rows and a
 * Result.  Starting that plan up costs more than running it: a prepared
 * read by key was 2-3 times 0.2's (one index scan of the materialization).
 *
 * set_rel_pathlist_hook offers, for the relation of that UNION ALL, a
 * custom path when every key is fixed by its type's default equality
 * operator to a constant or a parameter (a prepared statement's generic
 * plan, a correlated subquery's outer value): the node probes the
 * materialization's unique key index and the delta's key index directly,
 * under the query's snapshot, and builds the group's one row in C exactly
 * as the UNION ALL does --
 *
 *	- no delta row of the group: the materialization's row as it is;
 *	- delta rows: their states merged in index order (heap order, as the
 *	  aggregation of the plan gets them) by stream_ext.combine() from a NULL
 *	  start, which is what stream_ext.merge_states() does, then combined
 *	  with the materialization row's state by stream_ext.combine() (the
 *	  first branch's CASE); count(DISTINCT) counts summed and added --
 *	  deferred to compaction, plus the distinct values of the delta's
 *	  arrays that the side table lacks (probed in its index, as the SQL
 *	  does); the keys those of the first delta row (the GROUP BY's).
 *
 * stream_ext.combine() is called through the function manager, the same C
 * code (aggsupport.c) the SQL calls.  Everything above the UNION ALL --
 * finalize() of the view's select list, its HAVING, the read's other
 * filters -- stays PostgreSQL's: the node projects and filters its row
 * with the plan's target list and restrictions (all of them, the key
 * equalities included, rechecked on the row).
 *
 * The path is only taken when the UNION ALL is exactly the merged read of
 * the view whose definition it comes from (equal() to the subquery of the
 * view's rule: no security qual of row-level security added, no other
 * query shaped like it) and the view is one this node reads the same way:
 * keys, no hopping or sliding window; the materialization's unique btree on the keys (or, for wide
 * keys stored with their hash, its key lookup index) and the delta's key
 * lookup index (a btree on leading keys or a hash index on the first: rows
 * rechecked on every key).
 * Otherwise the read is planned as before.
 *
 * Privileges: the UNION ALL's tables are checked as the view's owner, like
 * any table of a view, by the executor's ExecCheckRTPerms() -- but it
 * checks the range tables of the subqueries in the plan, and this one's
 * are not there.  So the node checks them itself when it starts, with
 * ExecCheckRTPerms() on the same range table entries (their checkAsUser is
 * the view's owner); the view itself is checked by the executor as before.
 * The tables are added to the plan's dependencies: a DDL on them replans.
 *
 * The view's side of the decision (its definition analyzed again, the
 * tables' columns and indexes, the relation entries to check) is cached
 * per backend (view_analysis()) until a relcache invalidation of the view
 * or one of its tables: planning a read by key then costs about what the
 * merged read's planning does.
 *
 * Unprepared reads were mostly planning: the rewriter's copy of the UNION
 * ALL pulled up and its three branches planned, only for the hook to throw
 * them away.  key_read_planner() (the planner hook's, maintain/maintain.c)
 * replaces each UNION ALL the hook would take by a stub before planning
 * and plans the query again as it was if the node does not take them all
 * (see "stubs" below).
 *
 * stream_ext.key_read_scan (bool, default on) turns the path off.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/hash.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "rewrite/prs2lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/typcache.h"

#include "core/catalog.h"
#include "query/analyze.h"
#include "core/util.h"
#include "query/key_read.h"
#include "query/shared_plan.h"
#include "query/viewplan.h"
#include "windows/windows.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

static bool stream_ext_key_read_scan = true;

/* custom_private of the path and the plan: KR_* lists */
enum
{
	KR_RELS,					/* OidList: view, matrel, its index, delta,
								 * its index, delta index columns used
								 * (0: hash), stream_ext.combine() */
	KR_KEYS,					/* OidList per key: matrel attno, delta
								 * attno, equality function, collation,
								 * typlen, typbyval */
	KR_AGGS,					/* OidList per aggregate: aggfnoid (0:
								 * count(DISTINCT)), matrel attno, delta
								 * attno, collation, typlen, typbyval */
	KR_CALLS,					/* per aggregate, the combine() call its
								 * FmgrInfo describes (NULL: DISTINCT) */
	KR_RTES,					/* the UNION ALL's tables to check */
	KR_NLISTS
};
#define KR_KEY_FIELDS 6
#define KR_AGG_FIELDS 9			/* and, deferred count(DISTINCT): the
								 * delta's values column, the side table,
								 * its index on (keys, value); else 0 */

static Plan *key_read_plan_path(PlannerInfo *root, RelOptInfo *rel,
								CustomPath *best_path, List *tlist,
								List *clauses, List *custom_plans);
static Node *key_read_create_state(CustomScan *cscan);
static void key_read_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *key_read_exec(CustomScanState *node);
static void key_read_end(CustomScanState *node);
static void key_read_rescan(CustomScanState *node);
static void key_read_explain(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods key_read_path_methods = {
	.CustomName = "StreamExtKeyRead",
	.PlanCustomPath = key_read_plan_path,
};

static const CustomScanMethods key_read_scan_methods = {
	.CustomName = "StreamExtKeyRead",
	.CreateCustomScanState = key_read_create_state,
};

static const CustomExecMethods key_read_exec_methods = {
	.CustomName = "StreamExtKeyRead",
	.BeginCustomScan = key_read_begin,
	.ExecCustomScan = key_read_exec,
	.EndCustomScan = key_read_end,
	.ReScanCustomScan = key_read_rescan,
	.ExplainCustomScan = key_read_explain,
};

/* ---- planning ----------------------------------------------------------- */

/* the relation RTEs of a query and of its subqueries, at any depth */
static bool
collect_rtes_walker(Node *node, List **rtes)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
			*rtes = lappend(*rtes, copyObject(rte));
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, collect_rtes_walker, (void *) rtes,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, collect_rtes_walker, (void *) rtes);
}

/* is opno, of the index column's opfamily, its equality (strategy) */
static bool
index_column_has_op(Relation index, int col, Oid opno, int strategy)
{
	return get_op_opfamily_strategy(opno, index->rd_opfamily[col]) == strategy;
}

/*
 * The materialization's unique btree on exactly the keys (matattnos, in
 * order, by their equality operators eqops), or InvalidOid.
 */
static Oid
find_matrel_index(Relation matrel, List *matattnos, List *eqops)
{
	List	   *indexes = RelationGetIndexList(matrel);
	ListCell   *lc;
	Oid			found = InvalidOid;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = index->rd_index;
		bool		ok;

		ok = ix->indisunique && ix->indisvalid && ix->indisready && ix->indislive &&
			index->rd_rel->relam == BTREE_AM_OID &&
			ix->indnkeyatts == list_length(matattnos) &&
			RelationGetIndexExpressions(index) == NIL &&
			RelationGetIndexPredicate(index) == NIL;
		for (int i = 0; ok && i < ix->indnkeyatts; i++)
			ok = ix->indkey.values[i] == (AttrNumber) list_nth_oid(matattnos, i) &&
				index_column_has_op(index, i, list_nth_oid(eqops, i), BTEqualStrategyNumber);
		index_close(index, AccessShareLock);
		if (ok)
		{
			found = lfirst_oid(lc);
			break;
		}
	}
	list_free(indexes);
	return found;
}

/*
 * A key lookup index of rel (cv_create_key_lookup_index(): a delta's, a
 * hashed materialization's): the btree whose leading columns are the most
 * leading keys (*ncols of them), else a hash index on the first key
 * (*ncols = 0); InvalidOid if none.  Its rows are rechecked on every key.
 */
static Oid
find_key_index(Relation delta, List *dattnos, List *eqops, int *ncols)
{
	List	   *indexes = RelationGetIndexList(delta);
	ListCell   *lc;
	Oid			best = InvalidOid;
	int			bestcols = -1;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = index->rd_index;
		int			n = 0;

		if (ix->indisvalid && ix->indisready && ix->indislive &&
			RelationGetIndexPredicate(index) == NIL)
		{
			if (index->rd_rel->relam == BTREE_AM_OID)
			{
				while (n < ix->indnkeyatts && n < list_length(dattnos) &&
					   ix->indkey.values[n] == (AttrNumber) list_nth_oid(dattnos, n) &&
					   index_column_has_op(index, n, list_nth_oid(eqops, n),
										   BTEqualStrategyNumber))
					n++;
				if (n > 0 && n > bestcols)
				{
					best = lfirst_oid(lc);
					bestcols = n;
				}
			}
			else if (index->rd_rel->relam == HASH_AM_OID && bestcols < 0 &&
					 ix->indnkeyatts == 1 &&
					 ix->indkey.values[0] == (AttrNumber) linitial_oid(dattnos) &&
					 index_column_has_op(index, 0, linitial_oid(eqops),
										 HTEqualStrategyNumber))
			{
				best = lfirst_oid(lc);
				bestcols = 0;
			}
		}
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	*ncols = bestcols;
	return best;
}

/*
 * The side table sideid's btree on (keys, value) (cv_create_auxrel_index()
 * of a side table that is not hashed), or InvalidOid.
 */
static Oid
find_side_index(Oid sideid, CVPlan *plan, List *eqops)
{
	Relation	side = table_open(sideid, AccessShareLock);
	List	   *attnos = NIL;
	List	   *ops = list_copy(eqops);
	AttrNumber	va = get_attnum(sideid, "value");
	Oid			found = InvalidOid;
	int			ncols;
	ListCell   *lc;

	foreach(lc, plan->keys)
		attnos = lappend_oid(attnos, get_attnum(sideid, ((CVKey *) lfirst(lc))->colname));
	if (va != InvalidAttrNumber && !list_member_oid(attnos, InvalidAttrNumber))
	{
		Oid			vtype = TupleDescAttr(RelationGetDescr(side), va - 1)->atttypid;

		attnos = lappend_oid(attnos, va);
		ops = lappend_oid(ops, lookup_type_cache(vtype, TYPECACHE_EQ_OPR)->eq_opr);
		found = find_key_index(side, attnos, ops, &ncols);
		if (ncols != list_length(attnos))
			found = InvalidOid;
	}
	table_close(side, AccessShareLock);
	return found;
}

/*
 * The value a restriction of rel fixes output column attno to by operator
 * eqop and collation coll: a Const or a Param (under a relabeling) in
 * "col = value" or "value = col"; NULL if none does.
 */
static Expr *
fixed_value(RelOptInfo *rel, Index rti, AttrNumber attno, Oid eqop, Oid coll)
{
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		OpExpr	   *op = (OpExpr *) ri->clause;

		if (!IsA(op, OpExpr) || op->opno != eqop || list_length(op->args) != 2 ||
			op->inputcollid != coll || ri->pseudoconstant)
			continue;
		for (int side = 0; side < 2; side++)
		{
			Node	   *col = list_nth(op->args, side);
			Node	   *val = list_nth(op->args, 1 - side);
			Node	   *bare = val;

			while (IsA(bare, RelabelType))
				bare = (Node *) ((RelabelType *) bare)->arg;
			if (IsA(col, Var) && ((Var *) col)->varno == rti &&
				((Var *) col)->varattno == attno && ((Var *) col)->varlevelsup == 0 &&
				(IsA(bare, Const) || IsA(bare, Param)))
				return (Expr *) val;
		}
	}
	return NULL;
}

/* the first table a query reads, through its first subqueries */
static Oid
first_table(Query *q)
{
	RangeTblEntry *rte;

	if (q == NULL || q->rtable == NIL)
		return InvalidOid;
	rte = linitial_node(RangeTblEntry, q->rtable);
	if (rte->rtekind == RTE_SUBQUERY)
		return first_table(rte->subquery);
	return rte->rtekind == RTE_RELATION ? rte->relid : InvalidOid;
}

/*
 * rtes with one entry per table and user it is checked as: the same
 * privileges (ExecCheckRTPerms() checks a table's columns only when the
 * table's privilege is missing, and names the table either way), half the
 * checks -- the UNION ALL reads each of its tables four times.
 */
static List *
merge_rtes(List *rtes)
{
	List	   *merged = NIL;
	ListCell   *lc;

	foreach(lc, rtes)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		RangeTblEntry *same = NULL;
		ListCell   *lm;

		if (rte->requiredPerms == 0)
			continue;
		foreach(lm, merged)
		{
			RangeTblEntry *m = lfirst_node(RangeTblEntry, lm);

			if (m->relid == rte->relid && m->checkAsUser == rte->checkAsUser)
				same = m;
		}
		if (same == NULL)
		{
			merged = lappend(merged, rte);
			continue;
		}
		same->requiredPerms |= rte->requiredPerms;
		same->selectedCols = bms_union(same->selectedCols, rte->selectedCols);
		same->insertedCols = bms_union(same->insertedCols, rte->insertedCols);
		same->updatedCols = bms_union(same->updatedCols, rte->updatedCols);
		same->extraUpdatedCols = bms_union(same->extraUpdatedCols, rte->extraUpdatedCols);
	}
	return merged;
}

/* the OID of stream_ext.combine(anyelement, anyelement, regprocedure) */
static Oid
combine_function(void)
{
	Oid			args[3] = {ANYELEMENTOID, ANYELEMENTOID, REGPROCEDUREOID};

	return LookupFuncName(list_make2(makeString("stream_ext"), makeString("combine")),
						  3, args, true);
}

/*
 * What planning a read by key of a view needs that does not depend on the
 * query: the view's analysis, cached per backend (its definition parsed
 * and analyzed again costs more than planning the read) until a relcache
 * invalidation of the view or one of its tables, or a change of pg_proc.
 */
typedef struct KeyReadView
{
	Oid			viewid;			/* hash key */
	bool		valid;
	bool		usable;			/* else: not read by the node */
	uint32		generation;		/* which analysis (key_read_stubs) */
	MemoryContext cxt;			/* everything below */
	Oid			matrelid;
	Query	   *source;			/* the UNION ALL: the rule's subquery */
	List	   *relids;			/* the view and its tables: invalidation */
	List	   *key_resnos;		/* per key: its output column, */
	List	   *key_eqops;		/* equality operator, */
	List	   *key_colls;		/* and collation */
	List	   *rels;			/* custom_private's lists (KR_*) */
	List	   *keys;
	List	   *aggs;
	List	   *calls;
	List	   *rtes;
} KeyReadView;

static HTAB *key_read_views = NULL;
static uint32 key_read_generation = 0;

static void
key_read_forget(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	KeyReadView *v;

	if (key_read_views == NULL)
		return;
	hash_seq_init(&seq, key_read_views);
	while ((v = hash_seq_search(&seq)) != NULL)
	{
		if (!OidIsValid(relid) || list_member_oid(v->relids, relid))
			v->valid = false;
	}
}

static void
key_read_forget_all(Datum arg, int cacheid, uint32 hashvalue)
{
	key_read_forget(arg, InvalidOid);
}

/*
 * Fill v (in CurrentMemoryContext: v->cxt) for view viewid, cat its
 * catalog entry; false when the node does not read it.
 */
static bool
analyze_view(KeyReadView *v, Oid viewid, ViewCatalogEntry *cat)
{
	Relation	view;
	Query	   *def;
	char	   *deftext;
	CVPlan	   *plan;
	Relation	matrel;
	Relation	delta;
	List	   *tles = NIL;
	List	   *matattnos = NIL;
	List	   *dattnos = NIL;
	List	   *eqops = NIL;
	List	   *keys = NIL;
	List	   *aggs = NIL;
	List	   *rtes = NIL;
	List	   *calls = NIL;
	Oid			matidx;
	Oid			didx;
	int			dcols;
	int			mcols;
	Oid			combine_oid = combine_function();
	ListCell   *lc;
	bool		ok = true;

	v->matrelid = cat->matrelid;
	v->relids = list_make3_oid(viewid, cat->matrelid, cat->deltaid);
	if (!OidIsValid(combine_oid))
		return false;

	/* the UNION ALL of the view's rule */
	view = relation_open(viewid, AccessShareLock);
	if (view->rd_rules != NULL && view->rd_rules->numLocks == 1 &&
		view->rd_rules->rules[0]->event == CMD_SELECT &&
		list_length(view->rd_rules->rules[0]->actions) == 1)
	{
		foreach(lc, linitial_node(Query, view->rd_rules->rules[0]->actions)->rtable)
		{
			RangeTblEntry *vrte = lfirst_node(RangeTblEntry, lc);

			if (vrte->rtekind == RTE_SUBQUERY && vrte->subquery->setOperations != NULL &&
				first_table(vrte->subquery) == cat->matrelid)
			{
				v->source = copyObject(vrte->subquery);
				break;
			}
		}
	}
	relation_close(view, AccessShareLock);
	if (v->source == NULL)
		return false;

	def = cv_view_definition(viewid, &deftext);
	if (def == NULL)
		return false;
	plan = cv_reanalyze(viewid, def, deftext);
	/* the shapes and names of the view's tables, as its maintenance has them */
	cv_detect_deferred_distinct(plan, viewid, cat->deltaid);
	(void) shared_plan_apply(plan, viewid, cat->matrelid);
	if (plan->keyless ||
		(plan->window != NULL && plan->window->kind != CV_WINDOW_TUMBLING))
		return false;

	/* the output columns: the keys, then the aggregates, by their names */
	foreach(lc, v->source->targetList)
	{
		if (!lfirst_node(TargetEntry, lc)->resjunk)
			tles = lappend(tles, lfirst(lc));
	}
	if (list_length(tles) != list_length(plan->keys) + list_length(plan->aggs))
		return false;

	matrel = table_open(cat->matrelid, AccessShareLock);
	delta = table_open(cat->deltaid, AccessShareLock);
	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);
		TargetEntry *tle = list_nth(tles, foreach_current_index(lc));
		AttrNumber	ma = get_attnum(cat->matrelid, key->colname);
		AttrNumber	da = get_attnum(cat->deltaid, key->colname);
		Oid			eqop = lookup_type_cache(key->type, TYPECACHE_EQ_OPR)->eq_opr;
		Oid			coll = exprCollation((Node *) tle->expr);

		if (tle->resname == NULL || strcmp(tle->resname, key->colname) != 0 ||
			ma == InvalidAttrNumber || da == InvalidAttrNumber || !OidIsValid(eqop) ||
			exprType((Node *) tle->expr) != key->type ||
			TupleDescAttr(RelationGetDescr(matrel), ma - 1)->atttypid != key->type ||
			TupleDescAttr(RelationGetDescr(delta), da - 1)->atttypid != key->type)
		{
			ok = false;
			break;
		}
		matattnos = lappend_oid(matattnos, ma);
		dattnos = lappend_oid(dattnos, da);
		eqops = lappend_oid(eqops, eqop);
		v->key_resnos = lappend_int(v->key_resnos, tle->resno);
		v->key_colls = lappend_oid(v->key_colls, coll);
		keys = list_concat(keys, list_make4_oid(ma, da, get_opcode(eqop), coll));
		keys = lappend_oid(keys, (Oid) (int) get_typlen(key->type));
		keys = lappend_oid(keys, (Oid) get_typbyval(key->type));
	}
	v->key_eqops = eqops;
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg;
		TargetEntry *tle;
		AttrNumber	ma;
		AttrNumber	da;
		Oid			type;
		Oid			coll;

		if (!ok)
			break;
		agg = lfirst(lc);
		tle = list_nth(tles, list_length(plan->keys) + foreach_current_index(lc));
		ma = get_attnum(cat->matrelid, agg->colname);
		da = get_attnum(cat->deltaid, agg->colname);
		type = agg->is_distinct ? INT8OID : agg->storage.statetype;
		if (tle->resname == NULL || strcmp(tle->resname, agg->colname) != 0 ||
			ma == InvalidAttrNumber || da == InvalidAttrNumber ||
			exprType((Node *) tle->expr) != type ||
			TupleDescAttr(RelationGetDescr(matrel), ma - 1)->atttypid != type ||
			TupleDescAttr(RelationGetDescr(delta), da - 1)->atttypid != type)
		{
			ok = false;
			break;
		}
		coll = TupleDescAttr(RelationGetDescr(matrel), ma - 1)->attcollation;
		aggs = list_concat(aggs, list_make4_oid(agg->is_distinct ? InvalidOid : agg->aggref->aggfnoid,
												ma, da, coll));
		aggs = lappend_oid(aggs, (Oid) (int) get_typlen(type));
		aggs = lappend_oid(aggs, (Oid) get_typbyval(type));
		if (agg->is_distinct && plan->defer_distinct)
		{
			Oid			sideid = cv_distinct_side_table(plan, agg, catalog_view_parts(viewid));
			AttrNumber	va = get_attnum(cat->deltaid, agg->valuescol);
			Oid			sideidx = OidIsValid(sideid) && va != InvalidAttrNumber ?
				find_side_index(sideid, plan, eqops) : InvalidOid;

			if (!OidIsValid(sideidx))
			{
				ok = false;
				break;
			}
			aggs = list_concat(aggs, list_make3_oid(va, sideid, sideidx));
			v->relids = lappend_oid(v->relids, sideid);
		}
		else
			aggs = list_concat(aggs, list_make3_oid(0, InvalidOid, InvalidOid));
		/* as the SQL calls it: combine(state, state, 'agg'::regprocedure) */
		calls = lappend(calls, agg->is_distinct ? NULL :
						makeFuncExpr(combine_oid, type,
									 list_make3(makeNullConst(type, -1, coll),
												makeNullConst(type, -1, coll),
												makeNullConst(REGPROCEDUREOID, -1, InvalidOid)),
									 InvalidOid, coll, COERCE_EXPLICIT_CALL));
	}
	/* the unique btree on the keys, else (wide keys, hashed) a lookup index */
	mcols = list_length(matattnos);
	matidx = ok ? find_matrel_index(matrel, matattnos, eqops) : InvalidOid;
	if (ok && !OidIsValid(matidx))
		matidx = find_key_index(matrel, matattnos, eqops, &mcols);
	didx = OidIsValid(matidx) ? find_key_index(delta, dattnos, eqops, &dcols) : InvalidOid;
	table_close(delta, AccessShareLock);
	table_close(matrel, AccessShareLock);
	if (!OidIsValid(didx))
		return false;

	(void) collect_rtes_walker((Node *) v->source, &rtes);
	v->rels = list_make5_oid(viewid, cat->matrelid, matidx, cat->deltaid, didx);
	v->rels = lappend_oid(v->rels, (Oid) dcols);
	v->rels = lappend_oid(v->rels, combine_oid);
	v->rels = lappend_oid(v->rels, (Oid) mcols);
	v->keys = keys;
	v->aggs = aggs;
	v->calls = calls;
	v->rtes = merge_rtes(rtes);
	return true;
}

/*
 * analyze_view() in a subtransaction: a view whose recorded definition no
 * longer analyzes (its stream renamed, a function of it dropped: the view
 * itself reads its tables and still works) is read as before, not an
 * error in every read of it.  Once per backend and view, until an
 * invalidation of it.  A cancel is not swallowed.
 */
static bool
analyze_view_safely(KeyReadView *v, Oid viewid, ViewCatalogEntry *cat)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		usable = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		usable = analyze_view(v, viewid, cat);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			ReThrowError(edata);
		elog(DEBUG1, "stream_ext: reads by key of \"%s\" are not one node: %s",
			 get_rel_name(viewid), edata->message);
		FreeErrorData(edata);
		usable = false;
	}
	PG_END_TRY();
	return usable;
}

/* the cached analysis of view viewid, made now if need be; NULL: not a continuous view */
static KeyReadView *
view_analysis(Oid viewid)
{
	KeyReadView *v;
	bool		found;
	ViewCatalogEntry cat;
	MemoryContext old;

	if (key_read_views == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(KeyReadView);
		key_read_views = hash_create("stream_ext key reads", 16, &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(key_read_forget, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, key_read_forget_all, (Datum) 0);
	}
	v = hash_search(key_read_views, &viewid, HASH_ENTER, &found);
	if (found && v->valid)
		return v;
	if (found && v->cxt != NULL)
		MemoryContextDelete(v->cxt);
	memset(((char *) v) + sizeof(Oid), 0, sizeof(KeyReadView) - sizeof(Oid));
	v->cxt = AllocSetContextCreate(CacheMemoryContext, "stream_ext key read",
								   ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(v->cxt);
	/* valid before analyze_view(): an invalidation during it marks it stale */
	v->valid = true;
	v->generation = ++key_read_generation;
	v->relids = list_make1_oid(viewid);
	/* (stream_ext's catalog is there: checked here, not at every read) */
	if (stream_ext_installed() &&
		catalog_lookup_view(viewid, &cat, v->cxt) && OidIsValid(cat.deltaid))
		v->usable = analyze_view_safely(v, viewid, &cat);
	MemoryContextSwitchTo(old);
	return v;
}

static bool key_read_add_path(PlannerInfo *root, RelOptInfo *rel, Index rti,
							  KeyReadView *v, bool stub);

/*
 * ---- stubs: planning a read by key without its UNION ALL -----------------
 *
 * key_read_planner() replaces, before planning, the UNION ALL of every read
 * of a view the node reads (the subquery equal() to the view's, as the
 * set_rel_pathlist hook would find it) by a stub: its output columns as
 * typed NULLs, LIMIT -1.  A LIMIT keeps it from being pulled up and the
 * read's restrictions from being pushed into it, so the hook sees them on
 * the stub's relation as it saw them on the UNION ALL's.  The hook gives a
 * stub's relation the node as its only path, or says it cannot; then the
 * query is planned again as it was (the UNION ALL put back).  Executing a
 * stub raises "LIMIT must not be negative": a stub that reached a plan
 * would be an error, never a wrong (empty) answer.
 */
#define KR_STUB_QUERYID_TAG	UINT64CONST(0x53454b5200000000)	/* "SEKR" */
#define KR_STUB_QUERYID_MASK UINT64CONST(0xffffffff00000000)

typedef struct KeyReadStubs
{
	uint32		first;			/* the id of the first stub */
	int			nstubs;
	List	   *viewids;		/* per stub: the view read, */
	List	   *generations;	/* the analysis it was made from, */
	List	   *rtes;			/* its RTE in the query being planned */
	List	   *originals;		/* and the UNION ALL it held */
	bool		failed;			/* a stub's relation is not the node */
} KeyReadStubs;

/* the stubs of the query being planned (key_read_planner()), or NULL */
static KeyReadStubs *key_read_stubs = NULL;
static uint32 key_read_stub_counter = 0;

/*
 * Is sub a stub of the query being planned: its index in key_read_stubs,
 * else -1
 */
static int
stub_index(Query *sub)
{
	uint32		index;

	if (key_read_stubs == NULL || sub == NULL ||
		(sub->queryId & KR_STUB_QUERYID_MASK) != KR_STUB_QUERYID_TAG)
		return -1;
	index = (uint32) (sub->queryId & ~KR_STUB_QUERYID_MASK) - key_read_stubs->first;
	if (index >= (uint32) key_read_stubs->nstubs)
		return -1;
	return (int) index;
}

/* the stub for sub: its output columns, typed NULLs, LIMIT -1 */
static Query *
make_stub(Query *sub, uint32 id)
{
	Query	   *stub = makeNode(Query);
	ListCell   *lc;

	stub->commandType = CMD_SELECT;
	stub->querySource = QSRC_ORIGINAL;
	stub->canSetTag = true;
	stub->queryId = KR_STUB_QUERYID_TAG | id;
	stub->jointree = makeFromExpr(NIL, NULL);
	foreach(lc, sub->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *e = (Node *) tle->expr;

		stub->targetList =
			lappend(stub->targetList,
					makeTargetEntry((Expr *) makeNullConst(exprType(e), exprTypmod(e),
														   exprCollation(e)),
									tle->resno, tle->resname ? pstrdup(tle->resname) : NULL,
									tle->resjunk));
	}
	stub->limitCount = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
										  Int64GetDatum(-1), false, FLOAT8PASSBYVAL);
	stub->limitOption = LIMIT_OPTION_COUNT;
	return stub;
}

/*
 * The view whose merged read sub is, among the views query level q reads
 * (their rule's OLD entry is in its range table), if the node reads it;
 * NULL otherwise.  sub must be exactly the view's UNION ALL: equal() to the
 * subquery of its rule, so no row-level security qual was added to it.
 */
static KeyReadView *
merged_read_view(List *rtable, Query *sub, List *opnos, bool check_opnos)
{
	Oid			first;
	ListCell   *lc;

	if (sub == NULL || sub->setOperations == NULL)
		return NULL;
	first = first_table(sub);
	if (!OidIsValid(first) || !se_is_guarded_table(first))
		return NULL;
	foreach(lc, rtable)
	{
		RangeTblEntry *vrte = lfirst_node(RangeTblEntry, lc);
		KeyReadView *cand;

		if (vrte->rtekind != RTE_RELATION || vrte->relkind != RELKIND_VIEW)
			continue;
		cand = view_analysis(vrte->relid);
		if (!cand->usable || cand->matrelid != first)
			continue;
		if (check_opnos)
		{
			ListCell   *lo;
			bool		all = true;

			foreach(lo, cand->key_eqops)
				all = all && list_member_oid(opnos, lfirst_oid(lo));
			if (!all)
				continue;
		}
		if (equal(cand->source, sub))
			return cand;
	}
	return NULL;
}

typedef struct StubContext
{
	KeyReadStubs *st;
	List	   *opnos;			/* operators of this level's restrictions
								 * and those above */
} StubContext;

/* the operators of the OpExprs among the conjuncts of qual */
static void
collect_conjunct_opnos(Node *qual, List **opnos)
{
	ListCell   *lc;

	if (qual == NULL)
		return;
	if (IsA(qual, List))
	{
		foreach(lc, (List *) qual)
			collect_conjunct_opnos(lfirst(lc), opnos);
	}
	else if (is_andclause(qual))
	{
		foreach(lc, ((BoolExpr *) qual)->args)
			collect_conjunct_opnos(lfirst(lc), opnos);
	}
	else if (IsA(qual, OpExpr))
		*opnos = lappend_oid(*opnos, ((OpExpr *) qual)->opno);
}

/* the same for a query level's join tree: its WHERE and join conditions */
static void
collect_jointree_opnos(Node *jt, List **opnos)
{
	ListCell   *lc;

	if (jt == NULL)
		return;
	if (IsA(jt, FromExpr))
	{
		foreach(lc, ((FromExpr *) jt)->fromlist)
			collect_jointree_opnos(lfirst(lc), opnos);
		collect_conjunct_opnos(((FromExpr *) jt)->quals, opnos);
	}
	else if (IsA(jt, JoinExpr))
	{
		collect_jointree_opnos(((JoinExpr *) jt)->larg, opnos);
		collect_jointree_opnos(((JoinExpr *) jt)->rarg, opnos);
		collect_conjunct_opnos(((JoinExpr *) jt)->quals, opnos);
	}
}

/*
 * Stub every merged read of a view the node reads, at any depth, when each
 * of the view's key equality operators is that of a conjunct of a
 * restriction of the view's query level or one above it (a WHERE, a HAVING
 * the planner turns into one, a join's condition: the equivalences the
 * planner derives come from those; an OR of equalities fixes nothing).
 * The node needs every key fixed by that operator; a read the test lets
 * through and the node does not take (a range, a join on the key) costs
 * the stubs' planning before the query is planned again.
 */
static bool
stub_walker(Node *node, StubContext *cx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;
		KeyReadStubs *st = cx->st;
		int			outer = list_length(cx->opnos);
		ListCell   *lc;
		bool		r;

		collect_jointree_opnos((Node *) q->jointree, &cx->opnos);
		collect_conjunct_opnos(q->havingQual, &cx->opnos);
		foreach(lc, cx->opnos != NIL ? q->rtable : NIL)
		{
			RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
			KeyReadView *v;

			if (rte->rtekind != RTE_SUBQUERY || rte->subquery == NULL ||
				rte->subquery->setOperations == NULL)
				continue;
			v = merged_read_view(q->rtable, rte->subquery, cx->opnos, true);
			if (v == NULL)
				continue;
			st->viewids = lappend_oid(st->viewids, v->viewid);
			st->generations = lappend_int(st->generations, (int) v->generation);
			st->rtes = lappend(st->rtes, rte);
			st->originals = lappend(st->originals, rte->subquery);
			rte->subquery = make_stub(rte->subquery, st->first + st->nstubs);
			st->nstubs++;
		}
		r = query_tree_walker(q, stub_walker, (void *) cx, 0);
		cx->opnos = list_truncate(cx->opnos, outer);
		return r;
	}
	return expression_tree_walker(node, stub_walker, (void *) cx);
}

static PlannedStmt *
call_planner(planner_hook_type next, Query *parse, const char *query_string,
			 int cursorOptions, ParamListInfo boundParams)
{
	if (next)
		return next(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/*
 * The planner, for stream_ext's planner hook (maintain/maintain.c): next
 * (or standard_planner()) on parse, with the merged reads of views the
 * node reads stubbed (see above) when it takes every one of them; else on
 * parse as it was.
 */
PlannedStmt *
key_read_planner(Query *parse, const char *query_string, int cursorOptions,
				 ParamListInfo boundParams, planner_hook_type next)
{
	KeyReadStubs st;
	StubContext cx;
	KeyReadStubs *outer = key_read_stubs;
	PlannedStmt *result = NULL;
	ListCell   *lr;
	ListCell   *lo;

	if (!stream_ext_key_read_scan)
		return call_planner(next, parse, query_string, cursorOptions, boundParams);
	memset(&st, 0, sizeof(st));
	st.first = key_read_stub_counter;
	cx.st = &st;
	cx.opnos = NIL;
	(void) stub_walker((Node *) parse, &cx);
	if (st.nstubs == 0)
		return call_planner(next, parse, query_string, cursorOptions, boundParams);
	key_read_stub_counter += st.nstubs;

	/* planned is a copy: parse is put back as it was, error or not */
	key_read_stubs = &st;
	PG_TRY();
	{
		result = call_planner(next, copyObject(parse), query_string, cursorOptions,
							  boundParams);
	}
	PG_FINALLY();
	{
		key_read_stubs = outer;
		forboth(lr, st.rtes, lo, st.originals)
			((RangeTblEntry *) lfirst(lr))->subquery = (Query *) lfirst(lo);
	}
	PG_END_TRY();
	if (!st.failed)
	{
		elog(DEBUG1, "stream_ext: %d read(s) by key planned without the view's UNION ALL",
			 st.nstubs);
		return result;
	}
	elog(DEBUG1, "stream_ext: not every read of a view is read by key: planned again with the view's UNION ALL");
	return call_planner(next, parse, query_string, cursorOptions, boundParams);
}

static void
key_read_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
						  RangeTblEntry *rte)
{
	KeyReadView *v;
	int			stub;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (rte->rtekind != RTE_SUBQUERY)
		return;
	stub = stub_index(rte->subquery);
	if (stub >= 0)
	{
		/*
		 * a stub: the node, or the query is planned again without stubs
		 * (also when the view was analyzed again since it was made)
		 */
		v = view_analysis(list_nth_oid(key_read_stubs->viewids, stub));
		if (!v->usable ||
			v->generation != (uint32) list_nth_int(key_read_stubs->generations, stub) ||
			rel->reloptkind != RELOPT_BASEREL || IS_DUMMY_REL(rel) ||
			rel->lateral_relids != NULL || rel->pathlist == NIL ||
			!key_read_add_path(root, rel, rti, v, true))
			key_read_stubs->failed = true;
		return;
	}

	if (!stream_ext_key_read_scan ||
		rte->subquery == NULL || rte->subquery->setOperations == NULL ||
		rel->reloptkind != RELOPT_BASEREL || IS_DUMMY_REL(rel) ||
		rel->baserestrictinfo == NIL || rel->lateral_relids != NULL ||
		rel->pathlist == NIL)
		return;

	/*
	 * the continuous view whose read this is, among the views this query
	 * level reads (their rule's OLD entry stays in the range table when
	 * the view is pulled up): the UNION ALL must be exactly the view's
	 */
	v = merged_read_view(root->parse->rtable, rte->subquery, NIL, false);
	if (v == NULL)
		return;
	(void) key_read_add_path(root, rel, rti, v, false);
}

/*
 * Add the node's path to rel, reading view v, if every key is fixed; for a
 * stub (stub: true) as its only path.  False if not.
 */
static bool
key_read_add_path(PlannerInfo *root, RelOptInfo *rel, Index rti, KeyReadView *v,
				  bool stub)
{
	List	   *values = NIL;
	ListCell   *lc;
	CustomPath *cpath;

	if (rel->baserestrictinfo == NIL)
		return false;

	/*
	 * the reltarget: plain columns of this relation (no placeholders, no
	 * whole-row reference: a row mark's, see key_read_recheck())
	 */
	foreach(lc, rel->reltarget->exprs)
	{
		if (!IsA(lfirst(lc), Var) || ((Var *) lfirst(lc))->varattno <= 0)
			return false;
	}
	/* every key fixed */
	for (int i = 0; i < list_length(v->key_resnos); i++)
	{
		Expr	   *val = fixed_value(rel, rti, list_nth_int(v->key_resnos, i),
									  list_nth_oid(v->key_eqops, i),
									  list_nth_oid(v->key_colls, i));

		if (val == NULL)
			return false;
		values = lappend(values, copyObject(val));
	}

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.rows = Min(rel->rows, 1);
	/* two index probes: below the plan it replaces */
	cpath->path.startup_cost = 0;
	cpath->path.total_cost = 2 * (random_page_cost + cpu_index_tuple_cost + cpu_tuple_cost);
	/* a stub's paths cost nothing: the node's estimate is what it was */
	foreach(lc, stub ? NIL : rel->pathlist)
		cpath->path.total_cost = Min(cpath->path.total_cost,
									 ((Path *) lfirst(lc))->total_cost / 2);
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_private = list_make5(copyObject(v->rels), copyObject(v->keys),
									   copyObject(v->aggs), copyObject(v->calls),
									   copyObject(v->rtes));
	cpath->custom_paths = NIL;
	cpath->methods = &key_read_path_methods;
	/* the key values, for the plan (custom_exprs) */
	cpath->custom_private = lappend(cpath->custom_private, values);
	if (stub)
	{
		/* the stub's own plan is never to run */
		rel->pathlist = NIL;
		rel->partial_pathlist = NIL;
	}
	add_path(rel, &cpath->path);
	return true;
}

static Plan *
key_read_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	List	   *rels = linitial(best_path->custom_private);
	List	   *aggs = list_nth(best_path->custom_private, KR_AGGS);
	ListCell   *lc;

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->methods = &key_read_scan_methods;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = copyObject(list_nth(best_path->custom_private, KR_NLISTS));
	cscan->custom_private = list_truncate(list_copy(best_path->custom_private), KR_NLISTS);
	/* the scan tuple: every output column of the UNION ALL */
	foreach(lc, rte->subquery->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk)
			continue;
		cscan->custom_scan_tlist =
			lappend(cscan->custom_scan_tlist,
					makeTargetEntry((Expr *) makeVar(rel->relid, tle->resno,
													 exprType((Node *) tle->expr),
													 exprTypmod((Node *) tle->expr),
													 exprCollation((Node *) tle->expr), 0),
									tle->resno, NULL, false));
	}
	cscan->custom_relids = NULL;
	/* replan when the view or its tables (side tables too) change */
	root->glob->relationOids = lappend_oid(root->glob->relationOids, list_nth_oid(rels, 0));
	root->glob->relationOids = lappend_oid(root->glob->relationOids, list_nth_oid(rels, 1));
	root->glob->relationOids = lappend_oid(root->glob->relationOids, list_nth_oid(rels, 3));
	for (int f = 7; f < list_length(aggs); f += KR_AGG_FIELDS)
	{
		if (OidIsValid(list_nth_oid(aggs, f)))
			root->glob->relationOids = lappend_oid(root->glob->relationOids,
												   list_nth_oid(aggs, f));
	}
	return &cscan->scan.plan;
}

/* ---- execution ---------------------------------------------------------- */

typedef struct KeyReadAgg
{
	bool		distinct;		/* a count(DISTINCT) count: summed */
	AttrNumber	matattno;
	AttrNumber	dattno;
	Oid			collation;		/* the state column's: combine()'s */
	int16		typlen;
	bool		typbyval;
	Datum		aggfnoid;		/* the regprocedure argument of combine() */
	FmgrInfo	combine;		/* stream_ext.combine(), typed for the state */
	/* a count(DISTINCT) deferred to compaction */
	AttrNumber	valattno;		/* the delta's array of a batch's values */
	Relation	side;			/* the side table of the values counted */
	Relation	sideidx;		/* its btree on (keys, value) */
	IndexScanDesc sidescan;
	TupleTableSlot *sideslot;
	RegProcedure value_eqproc;
	FmgrInfo   *value_cmp;		/* the value type's btree comparison */
	int16		vlen;
	bool		vbyval;
	char		valign;
	Datum	   *values;			/* the group's values in the delta's arrays */
	int			nvalues;
	int			maxvalues;
} KeyReadAgg;

typedef struct KeyReadState
{
	CustomScanState css;
	bool		done;			/* the row (or none) was returned */
	Relation	matrel;
	Relation	matidx;
	Relation	delta;
	Relation	didx;
	int			dcols;			/* delta index columns (0: hash) */
	int			mcols;			/* materialization index columns (0: hash) */
	IndexScanDesc matscan;
	IndexScanDesc dscan;
	TupleTableSlot *matslot;
	TupleTableSlot *dslot;
	int			nkeys;
	AttrNumber *key_matattno;
	AttrNumber *key_dattno;
	Oid		   *key_coll;
	RegProcedure *key_eqproc;
	FmgrInfo   *key_eq;
	int16	   *key_typlen;
	bool	   *key_typbyval;
	List	   *key_values;		/* ExprState per key */
	int			naggs;
	KeyReadAgg *aggs;
	MemoryContext scancxt;		/* the index scans' (the query's) */
} KeyReadState;

static Node *
key_read_create_state(CustomScan *cscan)
{
	KeyReadState *state = palloc0(sizeof(KeyReadState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &key_read_exec_methods;
	return (Node *) state;
}

/*
 * stream_ext.combine()'s FmgrInfo, looked up once per backend (and again
 * for another OID: the extension made again); each aggregate's copy gets
 * its own fn_extra (aggsupport.c's cache) and call expression.
 */
static FmgrInfo combine_template;

static void
init_combine(FmgrInfo *finfo, Oid combine_oid, Node *call)
{
	if (combine_template.fn_oid != combine_oid)
		fmgr_info_cxt(combine_oid, &combine_template, TopMemoryContext);
	fmgr_info_copy(finfo, &combine_template, CurrentMemoryContext);
	fmgr_info_set_expr(call, finfo);
}

static void
key_read_begin(CustomScanState *node, EState *estate, int eflags)
{
	KeyReadState *st = (KeyReadState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *rels = list_nth(cscan->custom_private, KR_RELS);
	List	   *keys = list_nth(cscan->custom_private, KR_KEYS);
	List	   *aggs = list_nth(cscan->custom_private, KR_AGGS);
	List	   *calls = list_nth(cscan->custom_private, KR_CALLS);
	Oid			combine_oid = list_nth_oid(rels, 6);

	/* the UNION ALL's tables, as the view's owner (see the file's header) */
	(void) ExecCheckRTPerms(list_nth(cscan->custom_private, KR_RTES), true);

	st->matrel = table_open(list_nth_oid(rels, 1), AccessShareLock);
	st->matidx = index_open(list_nth_oid(rels, 2), AccessShareLock);
	st->delta = table_open(list_nth_oid(rels, 3), AccessShareLock);
	st->didx = index_open(list_nth_oid(rels, 4), AccessShareLock);
	st->dcols = (int) list_nth_oid(rels, 5);
	st->mcols = (int) list_nth_oid(rels, 7);
	st->key_values = ExecInitExprList(cscan->custom_exprs, &node->ss.ps);

	st->nkeys = list_length(keys) / KR_KEY_FIELDS;
	st->key_matattno = palloc(sizeof(AttrNumber) * st->nkeys);
	st->key_dattno = palloc(sizeof(AttrNumber) * st->nkeys);
	st->key_coll = palloc(sizeof(Oid) * st->nkeys);
	st->key_eqproc = palloc(sizeof(RegProcedure) * st->nkeys);
	st->key_eq = palloc(sizeof(FmgrInfo) * st->nkeys);
	st->key_typlen = palloc(sizeof(int16) * st->nkeys);
	st->key_typbyval = palloc(sizeof(bool) * st->nkeys);
	for (int i = 0; i < st->nkeys; i++)
	{
		int			f = i * KR_KEY_FIELDS;

		st->key_matattno[i] = (AttrNumber) list_nth_oid(keys, f);
		st->key_dattno[i] = (AttrNumber) list_nth_oid(keys, f + 1);
		st->key_eqproc[i] = list_nth_oid(keys, f + 2);
		st->key_coll[i] = list_nth_oid(keys, f + 3);
		st->key_typlen[i] = (int16) (int) list_nth_oid(keys, f + 4);
		st->key_typbyval[i] = (bool) list_nth_oid(keys, f + 5);
		fmgr_info(st->key_eqproc[i], &st->key_eq[i]);
	}

	st->naggs = list_length(aggs) / KR_AGG_FIELDS;
	st->aggs = palloc0(sizeof(KeyReadAgg) * st->naggs);
	for (int i = 0; i < st->naggs; i++)
	{
		KeyReadAgg *agg = &st->aggs[i];
		int			f = i * KR_AGG_FIELDS;
		Oid			aggfnoid = list_nth_oid(aggs, f);

		agg->distinct = !OidIsValid(aggfnoid);
		agg->aggfnoid = ObjectIdGetDatum(aggfnoid);
		agg->matattno = (AttrNumber) list_nth_oid(aggs, f + 1);
		agg->dattno = (AttrNumber) list_nth_oid(aggs, f + 2);
		agg->collation = list_nth_oid(aggs, f + 3);
		agg->typlen = (int16) (int) list_nth_oid(aggs, f + 4);
		agg->typbyval = (bool) list_nth_oid(aggs, f + 5);
		if (!agg->distinct)
			init_combine(&agg->combine, combine_oid, list_nth(calls, i));
		agg->valattno = (AttrNumber) list_nth_oid(aggs, f + 6);
		if (agg->valattno != InvalidAttrNumber)
		{
			Oid			vtype;
			TypeCacheEntry *tc;

			agg->side = table_open(list_nth_oid(aggs, f + 7), AccessShareLock);
			agg->sideidx = index_open(list_nth_oid(aggs, f + 8), AccessShareLock);
			vtype = TupleDescAttr(RelationGetDescr(agg->sideidx), st->nkeys)->atttypid;
			tc = lookup_type_cache(vtype, TYPECACHE_EQ_OPR | TYPECACHE_CMP_PROC_FINFO);
			agg->value_eqproc = get_opcode(tc->eq_opr);
			agg->value_cmp = &tc->cmp_proc_finfo;
			get_typlenbyvalalign(vtype, &agg->vlen, &agg->vbyval, &agg->valign);
			agg->sidescan = index_beginscan(agg->side, agg->sideidx, estate->es_snapshot,
											st->nkeys + 1, 0);
			agg->sideslot = table_slot_create(agg->side, NULL);
		}
	}
	st->scancxt = CurrentMemoryContext;
	st->matslot = table_slot_create(st->matrel, NULL);
	st->dslot = table_slot_create(st->delta, NULL);
	/* under the query's snapshot; keys are given per group (read_group()) */
	st->dscan = index_beginscan(st->delta, st->didx, estate->es_snapshot,
								Max(st->dcols, 1), 0);
	st->matscan = index_beginscan(st->matrel, st->matidx, estate->es_snapshot,
								  Max(st->mcols, 1), 0);
	st->done = false;
}

/* stream_ext.combine(a, b, agg) as the SQL calls it (not strict) */
static Datum
combine_states(KeyReadAgg *agg, Datum a, bool anull, Datum b, bool bnull,
			   Oid collation, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, 3);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, &agg->combine, 3, collation, NULL, NULL);
	fcinfo->args[0].value = a;
	fcinfo->args[0].isnull = anull;
	fcinfo->args[1].value = b;
	fcinfo->args[1].isnull = bnull;
	fcinfo->args[2].value = agg->aggfnoid;
	fcinfo->args[2].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return result;
}

/* does the row in slot have the keys (an index may cover fewer, or hash them) */
static bool
row_matches(KeyReadState *st, TupleTableSlot *slot, AttrNumber *attnos, Datum *keys)
{
	for (int i = 0; i < st->nkeys; i++)
	{
		bool		isnull;
		Datum		v = slot_getattr(slot, attnos[i], &isnull);

		if (isnull ||
			!DatumGetBool(FunctionCall2Coll(&st->key_eq[i], st->key_coll[i], v, keys[i])))
			return false;
	}
	return true;
}

/* (re)start scan of index (ncols leading key columns, 0: hash) at keys */
static void
probe(IndexScanDesc scan, Relation index, int ncols, KeyReadState *st, Datum *keys)
{
	ScanKeyData skeys[INDEX_MAX_KEYS];
	MemoryContext old = MemoryContextSwitchTo(st->scancxt);

	for (int i = 0; i < Max(ncols, 1); i++)
		ScanKeyEntryInitialize(&skeys[i], 0, i + 1,
							   ncols == 0 ? HTEqualStrategyNumber : BTEqualStrategyNumber,
							   InvalidOid, index->rd_indcollation[i],
							   st->key_eqproc[i], keys[i]);
	index_rescan(scan, skeys, Max(ncols, 1), NULL, 0);
	MemoryContextSwitchTo(old);
}

/*
 * The next row of an index scan, in the scan's own memory context: index
 * access methods allocate lazily what they keep until index_endscan()
 * (btree's array of killed items, when it meets dead rows), and the rows
 * are read while the per-tuple context is current (read_group()).
 */
static bool
next_row(KeyReadState *st, IndexScanDesc scan, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(st->scancxt);
	bool		found = index_getnext_slot(scan, ForwardScanDirection, slot);

	MemoryContextSwitchTo(old);
	return found;
}

/* the non-NULL values of the array of a deferred count(DISTINCT) in slot */
static void
collect_values(KeyReadAgg *agg, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		arr = slot_getattr(slot, agg->valattno, &isnull);
	Datum	   *elems;
	bool	   *enulls;
	int			n;

	if (isnull)
		return;
	deconstruct_array(DatumGetArrayTypeP(arr), ARR_ELEMTYPE(DatumGetArrayTypeP(arr)),
					  agg->vlen, agg->vbyval, agg->valign, &elems, &enulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (enulls[i])
			continue;
		if (agg->nvalues == agg->maxvalues)
		{
			agg->maxvalues = Max(16, agg->maxvalues * 2);
			agg->values = agg->nvalues == 0 ? palloc(sizeof(Datum) * agg->maxvalues) :
				repalloc(agg->values, sizeof(Datum) * agg->maxvalues);
		}
		agg->values[agg->nvalues++] = datumCopy(elems[i], agg->vbyval, agg->vlen);
	}
}

static int
compare_values(const void *a, const void *b, void *arg)
{
	return DatumGetInt32(FunctionCall2Coll((FmgrInfo *) arg, InvalidOid,
										   *(const Datum *) a, *(const Datum *) b));
}

/*
 * How many of agg's collected values, each once (the type's btree order, as
 * stream_ext.distinct_values() dedupes), the side table has no row of for
 * the group's keys: the merged read's probe "(SELECT true FROM side e WHERE
 * e.keys = q.keys AND e.value = q.value LIMIT 1) IS NULL".
 */
static int64
count_missing_values(KeyReadState *st, KeyReadAgg *agg, Datum *keys)
{
	ScanKeyData skeys[INDEX_MAX_KEYS];
	int64		missing = 0;
	int			n = 0;
	MemoryContext old;

	qsort_arg(agg->values, agg->nvalues, sizeof(Datum), compare_values, agg->value_cmp);
	for (int i = 0; i < agg->nvalues; i++)
	{
		if (n > 0 && compare_values(&agg->values[n - 1], &agg->values[i], agg->value_cmp) == 0)
			continue;
		agg->values[n++] = agg->values[i];
	}
	for (int i = 0; i < n; i++)
	{
		for (int k = 0; k < st->nkeys; k++)
			ScanKeyEntryInitialize(&skeys[k], 0, k + 1, BTEqualStrategyNumber, InvalidOid,
								   agg->sideidx->rd_indcollation[k], st->key_eqproc[k], keys[k]);
		ScanKeyEntryInitialize(&skeys[st->nkeys], 0, st->nkeys + 1, BTEqualStrategyNumber,
							   InvalidOid, agg->sideidx->rd_indcollation[st->nkeys],
							   agg->value_eqproc, agg->values[i]);
		old = MemoryContextSwitchTo(st->scancxt);
		index_rescan(agg->sidescan, skeys, st->nkeys + 1, NULL, 0);
		MemoryContextSwitchTo(old);
		if (!next_row(st, agg->sidescan, agg->sideslot))
			missing++;
	}
	return missing;
}

/*
 * The group's row into the scan slot (see the file's header), or false
 * when the group has no row.
 */
static bool
read_group(KeyReadState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	TupleTableSlot *out = st->css.ss.ss_ScanTupleSlot;
	int			nkeys = st->nkeys;
	Datum	   *keys = palloc(sizeof(Datum) * nkeys);
	Datum	   *states = palloc0(sizeof(Datum) * st->naggs);
	bool	   *nulls = palloc(sizeof(bool) * st->naggs);
	int128	   *sums = palloc0(sizeof(int128) * st->naggs);
	bool		matfound;
	int			drows = 0;
	ListCell   *lc;

	/* the key values: a NULL one matches no group (k = NULL) */
	foreach(lc, st->key_values)
	{
		bool		isnull;

		keys[foreach_current_index(lc)] = ExecEvalExpr(lfirst(lc), econtext, &isnull);
		if (isnull)
			return false;
	}
	for (int i = 0; i < st->naggs; i++)
	{
		nulls[i] = true;
		st->aggs[i].nvalues = 0;
		st->aggs[i].maxvalues = 0;
	}

	/* the delta's rows of the group, in index order */
	probe(st->dscan, st->didx, st->dcols, st, keys);
	while (next_row(st, st->dscan, st->dslot))
	{
		CHECK_FOR_INTERRUPTS();
		if (!row_matches(st, st->dslot, st->key_dattno, keys))
			continue;
		/* the GROUP BY's keys: its first row's */
		if (drows++ == 0)
		{
			ExecClearTuple(out);
			for (int i = 0; i < nkeys; i++)
			{
				bool		isnull;
				Datum		v = slot_getattr(st->dslot, st->key_dattno[i], &isnull);

				out->tts_values[i] = datumCopy(v, st->key_typbyval[i], st->key_typlen[i]);
				out->tts_isnull[i] = false;
			}
		}
		for (int i = 0; i < st->naggs; i++)
		{
			KeyReadAgg *agg = &st->aggs[i];
			bool		isnull;
			Datum		v = slot_getattr(st->dslot, agg->dattno, &isnull);

			if (agg->distinct)
			{
				/* sum(d.col)::bigint */
				if (!isnull)
				{
					sums[i] += DatumGetInt64(v);
					nulls[i] = false;
				}
				if (agg->valattno != InvalidAttrNumber)
					collect_values(agg, st->dslot);
				continue;
			}
			/* merge_states(): state := combine(state, v), from NULL */
			if (!isnull)
				v = datumCopy(v, agg->typbyval, agg->typlen);
			states[i] = combine_states(agg, states[i], nulls[i], v, isnull,
									   agg->collation, &nulls[i]);
		}
	}

	/*
	 * A deferred count(DISTINCT): one more row per distinct value of the
	 * arrays that the side table does not hold (1 for its count, NULL for
	 * every other state), after the delta's rows.
	 */
	for (int i = 0; i < st->naggs; i++)
	{
		KeyReadAgg *agg = &st->aggs[i];
		int64		missing;

		if (agg->valattno == InvalidAttrNumber || agg->nvalues == 0)
			continue;
		missing = count_missing_values(st, agg, keys);
		if (missing == 0)
			continue;
		sums[i] += missing;
		nulls[i] = false;
		for (int64 m = 0; m < missing; m++)
		{
			for (int j = 0; j < st->naggs; j++)
			{
				if (!st->aggs[j].distinct)
					states[j] = combine_states(&st->aggs[j], states[j], nulls[j], (Datum) 0, true,
											   st->aggs[j].collation, &nulls[j]);
			}
		}
	}

	/* the materialization's row of the group, if any (one: its keys are unique) */
	probe(st->matscan, st->matidx, st->mcols, st, keys);
	matfound = false;
	while (!matfound && next_row(st, st->matscan, st->matslot))
		matfound = row_matches(st, st->matslot, st->key_matattno, keys);

	if (drows == 0)
	{
		/* the first branch: the materialization's row as it is */
		if (!matfound)
			return false;
		ExecClearTuple(out);
		for (int i = 0; i < nkeys; i++)
			out->tts_values[i] = slot_getattr(st->matslot, st->key_matattno[i],
											  &out->tts_isnull[i]);
		for (int i = 0; i < st->naggs; i++)
			out->tts_values[nkeys + i] = slot_getattr(st->matslot, st->aggs[i].matattno,
													  &out->tts_isnull[nkeys + i]);
		ExecStoreVirtualTuple(out);
		return true;
	}

	/* the second: the merged delta states combined with the row's */
	for (int i = 0; i < st->naggs; i++)
	{
		KeyReadAgg *agg = &st->aggs[i];
		bool		mnull = true;
		Datum		m = matfound ? slot_getattr(st->matslot, agg->matattno, &mnull) : (Datum) 0;

		if (agg->distinct)
		{
			int64		g;

			if (!nulls[i] && (sums[i] > PG_INT64_MAX || sums[i] < PG_INT64_MIN))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
			g = (int64) sums[i];
			/* CASE WHEN m IS NULL THEN g WHEN g IS NULL THEN m ELSE m + g */
			if (mnull)
				states[i] = Int64GetDatum(g);
			else if (nulls[i])
			{
				states[i] = m;
				nulls[i] = false;
			}
			else
				states[i] = DirectFunctionCall2(int8pl, m, Int64GetDatum(g));
		}
		else if (matfound)
		{
			/* CASE WHEN m.k IS NULL THEN g ELSE combine(m, g, agg) END */
			states[i] = combine_states(agg, m, mnull, states[i], nulls[i],
									   agg->collation, &nulls[i]);
		}
		out->tts_values[nkeys + i] = states[i];
		out->tts_isnull[nkeys + i] = nulls[i];
	}
	ExecStoreVirtualTuple(out);
	return true;
}

static TupleTableSlot *
key_read_next(ScanState *node)
{
	KeyReadState *st = (KeyReadState *) node;
	TupleTableSlot *out = node->ss_ScanTupleSlot;
	MemoryContext old;
	bool		found;

	if (st->done)
		return ExecClearTuple(out);
	st->done = true;
	/* in the per-tuple context: kept until the row is projected */
	old = MemoryContextSwitchTo(node->ps.ps_ExprContext->ecxt_per_tuple_memory);
	found = read_group(st);
	MemoryContextSwitchTo(old);
	return found ? out : ExecClearTuple(out);
}

/*
 * Under EvalPlanQual (an UPDATE or DELETE rechecking a row a concurrent
 * transaction changed: the plan, or a subquery of it, is run again in a
 * state of its own) ExecScan() asks a scan that is no table's (scanrelid
 * 0) for its row here instead of key_read_next(): read it the same way.
 * Joins to the view in such statements carry a whole-row reference to it
 * (a row mark), which the node does not offer to return: they are not read
 * through it.
 */
static bool
key_read_recheck(ScanState *node, TupleTableSlot *slot)
{
	Assert(slot == node->ss_ScanTupleSlot);
	return !TupIsNull(key_read_next(node));
}

static TupleTableSlot *
key_read_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, key_read_next, key_read_recheck);
}

static void
key_read_rescan(CustomScanState *node)
{
	KeyReadState *st = (KeyReadState *) node;

	st->done = false;
	ExecScanReScan(&node->ss);
}

static void
key_read_end(CustomScanState *node)
{
	KeyReadState *st = (KeyReadState *) node;

	for (int i = 0; i < st->naggs; i++)
	{
		KeyReadAgg *agg = &st->aggs[i];

		if (agg->side == NULL)
			continue;
		index_endscan(agg->sidescan);
		ExecDropSingleTupleTableSlot(agg->sideslot);
		index_close(agg->sideidx, AccessShareLock);
		table_close(agg->side, AccessShareLock);
	}
	index_endscan(st->dscan);
	index_endscan(st->matscan);
	ExecDropSingleTupleTableSlot(st->dslot);
	ExecDropSingleTupleTableSlot(st->matslot);
	index_close(st->didx, AccessShareLock);
	index_close(st->matidx, AccessShareLock);
	table_close(st->delta, AccessShareLock);
	table_close(st->matrel, AccessShareLock);
}

/* EXPLAIN: the view read, and the indexes probed (the tables' own) */
static void
key_read_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	KeyReadState *st = (KeyReadState *) node;
	List	   *rels = list_nth(((CustomScan *) node->ss.ps.plan)->custom_private, KR_RELS);
	StringInfoData buf;

	ExplainPropertyText("View", get_rel_name(list_nth_oid(rels, 0)), es);
	initStringInfo(&buf);
	appendStringInfo(&buf, "%s, %s", RelationGetRelationName(st->matidx),
					 RelationGetRelationName(st->didx));
	for (int i = 0; i < st->naggs; i++)
	{
		if (st->aggs[i].sideidx != NULL)
			appendStringInfo(&buf, ", %s", RelationGetRelationName(st->aggs[i].sideidx));
	}
	ExplainPropertyText("Indexes", buf.data, es);
}

void
key_read_init(void)
{
	DefineCustomBoolVariable("stream_ext.key_read_scan",
							 "Reads of continuous views that append fixing every key by equality use one custom scan node.",
							 "The node (StreamExtKeyRead) probes the materialization's and the delta's key indexes and merges the group's states in C, instead of running the merged read's plan.",
							 &stream_ext_key_read_scan,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	RegisterCustomScanMethods(&key_read_scan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = key_read_set_rel_pathlist;
}
