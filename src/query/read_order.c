/*-------------------------------------------------------------------------
 *
 * read_order.c
 *	  Reads of a view that appends in the order the reader asks for:
 *	  ORDER BY <keys or an indexed aggregate> LIMIT n read in index order
 *	  (docs/internals.md, "Reading").
 *
 * A view that appends reads materialization (+) delta
 * (cv_merged_source_sql()): a UNION ALL whose first branch, the
 * materialization's groups without delta rows, is an anti-join of the
 * materialization and the delta, and whose second merges the delta's groups
 * (GROUP BY the keys).  PostgreSQL flattens the UNION ALL into an append
 * relation, but a branch with a join stays a subquery, planned on its own
 * (set_subquery_pathlist()) with no ORDER BY of its own: no ordering is
 * useful to it, so the order of an index scan of the materialization is
 * dropped at the anti-join (build_join_pathkeys() keeps only useful
 * pathkeys) and the outer ORDER BY ... LIMIT n sorts the whole first branch.
 *
 * set_rel_pathlist_hook gives such a subquery the ordering its parent query
 * wants: when the first table a subquery reads is a stream_ext table (the
 * guard trigger stream_ext_guard), the subquery has no ordering of its own
 * and the parent query has one (root->query_pathkeys) whose leading
 * expressions are plain output columns of this subquery, those become the
 * subquery's query_pathkeys -- set when the paths of its first base
 * relation are made, before those of the others and of the joins -- and
 * that relation's index paths are made again so that ordered index scans
 * are among them.  The subquery then keeps, next to its cheapest paths, its
 * cheapest ordered ones (the anti-join over the materialization's key index
 * in its order; the merged delta groups, a GROUP BY over the delta's key
 * index, joined in that order to the materialization), and the parent's
 * append relation can merge them with the other branches (Merge Append)
 * under the Limit.
 *
 * Nothing here states an order: the pathkeys of every path are still those
 * PostgreSQL derives from its index scans and joins, and which plan runs is
 * still its choice by cost.  The hook only makes ordered paths of the
 * subquery worth keeping.  It acts in subqueries that read stream_ext's own
 * tables only, so the plans of other queries stay PostgreSQL's own.
 *
 * stream_ext.ordered_reads (bool, default on) turns the hook off: reads then
 * sort the whole first branch as before (for comparisons, bench/reads.sh).
 *
 * Which relation of the parent the subquery is: the one being planned now,
 * a subquery relation without a subroot whose query starts the same way
 * (the kind of its first range table entry, its first table).  When two do
 * (a view read twice in one query), none is chosen and the read is planned
 * as before.
 *
 * In the parent, a branch of the append relation whose ordered path costs
 * more than a sort of its cheapest path also gets that sort as a path
 * (add_sorted_cheapest()).
 *
 * Under a LIMIT, the subqueries of the read are planned for their first
 * rows too (plan_first_rows()): PostgreSQL plans a subquery for all of its
 * rows when its parent sorts or joins, and kept only a sort of the whole
 * delta before the merged delta groups, where a GROUP BY over the delta's
 * key index streams them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "core/util.h"
#include "query/read_order.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/* add_path()'s fuzz factor for costs (STD_FUZZ_FACTOR of pathnode.c) */
#define SORT_FUZZ_FACTOR 1.01

static bool stream_ext_ordered_reads = true;

/*
 * What tells a subquery of a view's read apart from the other subqueries of
 * its parent: the kind of its first range table entry (a subquery may pull
 * more entries up behind it, never before it) and its first table's relid
 * (InvalidOid when it reads none).
 */
static Oid
first_relation(Query *q, RTEKind *first_kind)
{
	ListCell   *lc;

	*first_kind = RTE_RESULT;
	if (q == NULL || q->rtable == NIL)
		return InvalidOid;
	*first_kind = linitial_node(RangeTblEntry, q->rtable)->rtekind;
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION)
			return rte->relid;
	}
	return InvalidOid;
}

/*
 * The range table index in root's parent of the subquery root plans: the
 * only subquery relation of the parent not planned yet (no subroot) whose
 * query starts the same way (first_relation()); 0 when none or several are.
 */
static Index
rti_in_parent(PlannerInfo *root, Oid relid, RTEKind kind)
{
	PlannerInfo *parent = root->parent_root;
	Index		found = 0;

	for (int i = 1; i < parent->simple_rel_array_size; i++)
	{
		RelOptInfo *prel = parent->simple_rel_array[i];
		RangeTblEntry *prte = parent->simple_rte_array[i];
		RTEKind		pkind;

		if (prel == NULL || prte == NULL || prte->rtekind != RTE_SUBQUERY ||
			prel->subroot != NULL || first_relation(prte->subquery, &pkind) != relid ||
			pkind != kind)
			continue;
		if (found != 0)
			return 0;
		found = i;
	}
	return found;
}

/*
 * The parent's query_pathkeys in root's terms: for each, while the parent's
 * equivalence class has a member that is a plain column of this subquery
 * (Var of rti), the pathkey of the subquery's output expression of that
 * column, with the same opfamily, direction and NULLS placement.  Stops at
 * the first pathkey that is not such a column (a prefix of an ordering is
 * still an ordering).
 */
static List *
parent_order(PlannerInfo *root, Index rti)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, root->parent_root->query_pathkeys)
	{
		PathKey    *pk = lfirst_node(PathKey, lc);
		EquivalenceClass *ec = pk->pk_eclass;
		EquivalenceMember *em = NULL;
		TargetEntry *tle;
		EquivalenceClass *sub_ec;
		PathKey    *sub_pk;
		ListCell   *lm;

		foreach(lm, ec->ec_members)
		{
			EquivalenceMember *m = lfirst(lm);
			Var		   *var = (Var *) m->em_expr;

			if (IsA(var, Var) && var->varno == rti && var->varlevelsup == 0)
			{
				em = m;
				break;
			}
		}
		if (em == NULL)
			break;
		tle = get_tle_by_resno(root->parse->targetList, ((Var *) em->em_expr)->varattno);
		if (tle == NULL || tle->resjunk ||
			exprType((Node *) tle->expr) != exprType((Node *) em->em_expr) ||
			exprCollation((Node *) tle->expr) != ec->ec_collation ||
			contain_volatile_functions((Node *) tle->expr))
			break;
		sub_ec = get_eclass_for_sort_expr(root, tle->expr, NULL, ec->ec_opfamilies,
										  em->em_datatype, ec->ec_collation, 0, NULL, true);
		if (sub_ec == NULL)
			break;
		while (sub_ec->ec_merged)
			sub_ec = sub_ec->ec_merged;
		if (EC_MUST_BE_REDUNDANT(sub_ec))
			continue;
		sub_pk = make_canonical_pathkey(root, sub_ec, pk->pk_opfamily,
										pk->pk_strategy, pk->pk_nulls_first);
		if (list_member_ptr(result, sub_pk))
			continue;
		result = lappend(result, sub_pk);
	}
	return result;
}

/* Is rti the first base relation of root (the first whose paths are made)? */
static bool
is_first_base_rel(PlannerInfo *root, Index rti)
{
	for (int i = 1; i < root->simple_rel_array_size; i++)
	{
		RelOptInfo *r = root->simple_rel_array[i];

		if (r != NULL && r->reloptkind == RELOPT_BASEREL)
			return (Index) i == rti;
	}
	return false;
}

/*
 * In the parent: a branch rel of the view's append relation that has an
 * ordered path costlier than sorting its cheapest one gets that sort as a
 * path too.  PostgreSQL's Merge Append takes a branch's cheapest path in the
 * wanted order when there is one (generate_orderedappend_paths()), even
 * when sorting its cheapest path would cost less -- as for the merged delta
 * groups read in descending key order, whose GROUP BY yields ascending
 * order only.  Only when every wanted pathkey is a plain column of rel.
 */
static void
add_sorted_cheapest(PlannerInfo *root, RelOptInfo *rel)
{
	Path	   *cheapest = NULL;
	Path	   *sorted;
	ListCell   *lc;

	foreach(lc, root->query_pathkeys)
	{
		EquivalenceClass *ec = lfirst_node(PathKey, lc)->pk_eclass;
		bool		found = false;
		ListCell   *lm;

		foreach(lm, ec->ec_members)
		{
			EquivalenceMember *m = lfirst(lm);

			if (IsA(m->em_expr, Var) && bms_equal(m->em_relids, rel->relids))
			{
				found = true;
				break;
			}
		}
		if (!found)
			return;
	}
	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (path->param_info == NULL &&
			(cheapest == NULL || path->total_cost < cheapest->total_cost))
			cheapest = path;
	}
	if (cheapest == NULL || pathkeys_contained_in(root->query_pathkeys, cheapest->pathkeys))
		return;
	sorted = (Path *) create_sort_path(root, rel, cheapest, root->query_pathkeys, -1.0);

	/*
	 * add_path() frees the paths the new one dominates, and a sort that costs
	 * (fuzzily) no more than its input -- an aggregation yielding few rows,
	 * whose startup cost is its total -- dominates that input: the sort's
	 * subpath would be freed memory, which a later path may reuse (a plan
	 * then recursed into itself until "stack depth limit exceeded").  Such a
	 * sort takes its input's place in the list instead, as
	 * apply_scanjoin_target_to_paths() replaces paths in place; set_cheapest()
	 * runs after this hook.
	 */
	if (sorted->startup_cost <= cheapest->startup_cost * SORT_FUZZ_FACTOR &&
		sorted->total_cost <= cheapest->total_cost * SORT_FUZZ_FACTOR)
	{
		foreach(lc, rel->pathlist)
		{
			if (lfirst(lc) == cheapest)
				lfirst(lc) = sorted;
		}
	}
	else
		add_path(rel, sorted);
}

/* Does root plan a query that reads a table guarded by stream_ext first? */
static bool
reads_guarded_first(PlannerInfo *root)
{
	RTEKind		kind;
	Oid			relid = first_relation(root->parse, &kind);

	return OidIsValid(relid) && se_is_guarded_table(relid);
}

/*
 * In a subquery of a view's read under ORDER BY ... LIMIT n: plan for the
 * first rows, as the query above does.  PostgreSQL plans a subquery for all
 * of its rows when the query level above it sorts or joins
 * (set_subquery_pathlist()), and then keeps, among the paths of one
 * ordering, only the cheapest in total -- for the merged delta groups, a
 * sort of the whole delta before the first group, where a GROUP BY over the
 * delta's key index streams the groups in order.
 *
 * When the paths of the first base relation of such a subquery are made
 * (before its joins and its grouping), and the query levels above it up to
 * one with a fraction (root->tuple_fraction, LIMIT) and an ordering are all
 * subqueries reading stream_ext's tables first (the view's branches), each
 * of them gets that fraction: their joins and upper relations made from
 * then on keep the paths that start fast too (consider_startup), and so
 * does the relation this subquery is in its parent, which gets its paths
 * when this planning ends.  The Limit above chooses by cost as always.
 */
static void
plan_first_rows(PlannerInfo *root, RelOptInfo *rel, Index rti)
{
	PlannerInfo *limited;
	double		fraction;
	Oid			relid;
	RTEKind		kind;
	Index		prti;

	if (root->parent_root == NULL || root->tuple_fraction > 0 ||
		rel->reloptkind != RELOPT_BASEREL || !is_first_base_rel(root, rti) ||
		!reads_guarded_first(root))
		return;
	for (limited = root->parent_root; limited != NULL; limited = limited->parent_root)
	{
		if (limited->tuple_fraction > 0)
			break;
		if (limited->parent_root == NULL || !reads_guarded_first(limited))
			return;
	}
	if (limited == NULL || limited->query_pathkeys == NIL)
		return;
	fraction = limited->tuple_fraction;
	relid = first_relation(root->parse, &kind);
	prti = rti_in_parent(root, relid, kind);
	if (prti != 0)
		root->parent_root->simple_rel_array[prti]->consider_startup = true;
	for (PlannerInfo *p = root; p != limited; p = p->parent_root)
		p->tuple_fraction = fraction;
}

static void
read_order_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
							RangeTblEntry *rte)
{
	Index		prti;
	Oid			relid;
	RTEKind		kind;
	List	   *pathkeys;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (stream_ext_ordered_reads)
		plan_first_rows(root, rel, rti);

	if (stream_ext_ordered_reads && root->query_pathkeys != NIL &&
		rte->rtekind == RTE_SUBQUERY && rel->reloptkind == RELOPT_OTHER_MEMBER_REL &&
		rel->subroot != NULL && OidIsValid(relid = first_relation(rte->subquery, &kind)) &&
		se_is_guarded_table(relid))
		add_sorted_cheapest(root, rel);

	if (!stream_ext_ordered_reads ||
		root->parent_root == NULL || root->parent_root->query_pathkeys == NIL ||
		root->query_pathkeys != NIL || root->parse->setOperations != NULL ||
		rel->reloptkind != RELOPT_BASEREL || !is_first_base_rel(root, rti))
		return;
	relid = first_relation(root->parse, &kind);
	if (!OidIsValid(relid) || !se_is_guarded_table(relid))
		return;
	prti = rti_in_parent(root, relid, kind);
	if (prti == 0)
		return;
	pathkeys = parent_order(root, prti);
	if (pathkeys == NIL)
		return;
	root->query_pathkeys = pathkeys;
	/* this relation's paths were made without the ordering: add the ordered ones */
	if (rte->rtekind == RTE_RELATION && rel->indexlist != NIL)
		create_index_paths(root, rel);
}

void
read_order_init(void)
{
	DefineCustomBoolVariable("stream_ext.ordered_reads",
							 "Reads ORDER BY ... LIMIT of continuous views that append in index order.",
							 "The materialization's groups without delta rows are read in the order of its indexes and merged with the delta's groups, instead of being read whole and sorted.",
							 &stream_ext_ordered_reads,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = read_order_set_rel_pathlist;
}
