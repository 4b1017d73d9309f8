/*-------------------------------------------------------------------------
 *
 * reads.c
 *	  The planner's size estimate of the deltas of views that append
 *	  (docs/internals.md, "Reading").
 *
 * A view that appends reads its materialization with an anti-join against
 * its delta (cv_merged_source_sql()).  Compaction empties deltas, and a
 * VACUUM of an empty delta records zero rows (or zero pages): PostgreSQL
 * then estimates the delta at one row, and for a full read of the view it
 * may plan the anti-join as a nested loop that rescans the delta once per
 * materialization row -- a hundred thousand rescans of an empty table cost
 * several times the read itself, and of a delta that has filled up since
 * its statistics were taken, far more.
 *
 * get_relation_info_hook (the hook PostgreSQL offers "to alter the assumed
 * relation size") raises the estimate of a delta to at least
 * SE_DELTA_MIN_PAGES page and SE_DELTA_MIN_TUPLES rows -- as PostgreSQL
 * assumes 10 pages for a table that was never vacuumed, but smaller: a
 * rescan per materialization row then costs far more than hashing the
 * delta once (an empty hash table costs nothing), while reads that must
 * merge every delta group (a filter on an aggregate) are not costed as if
 * the delta were big.  A read by key still probes the delta's index once
 * per materialization row it reads.
 * A delta is a plain table with the guard trigger stream_ext_guard and no
 * unique index (materializations and side tables of fixed-width values have
 * one); the floor is harmless for the other guarded tables it may also
 * catch (session fragments).
 *
 * Hashed side tables of count(DISTINCT) (keys, value, stream_ext_key_hash;
 * a plain index on the hash) get a larger floor, SE_SIDE_MIN_PAGES pages
 * and SE_SIDE_MIN_TUPLES rows, as PostgreSQL assumes for a table never
 * vacuumed.  A batch's side-table statement (cv_distinct_sql()) probes the
 * side table once per new (keys, value) pair with a scalar subquery and
 * inserts the new pairs into the same table.  Estimated at one page (a side
 * table vacuumed or analyzed while small), the probe became a sequential
 * scan, and a scan that rereads every row the statement has inserted so
 * far: one INSERT of n rows cost O(n^2) (50,000 rows 15 s, 5,000-row batches
 * 0.07 s each).  At ten pages the index probe is always cheaper.
 *
 * stream_ext.delta_key_index (on, hash or off; default on) decides which
 * index CREATE VIEW gives a view's delta (cv_create_read_indexes()): reads
 * by key probe it instead of scanning the delta, and every delta row a
 * writer appends costs an index insert.  on: the btree of
 * cv_create_key_lookup_index() (equality, ranges, IS NULL); hash: a hash
 * index on the first key, about half the writer's cost per entry, for
 * equality on that key only (docs/continuous-views.md); off: none.
 *
 * A branch of a view's read that merges groups (GROUP BY over a UNION ALL
 * of the delta's and the materialization's rows with a NULL key,
 * cv_merged_source_sql()) is empty whenever its input is: a GROUP BY with
 * grouping columns yields no row for no input row.  PostgreSQL proves the
 * input empty for a read by key (the members' restrictions k IS NULL and
 * k = $1 contradict each other: relation_excluded_by_constraints()) but
 * still plans the aggregate over the empty input, and a prepared read by
 * key then starts up (ExecInitAgg(), one transition per aggregate) and runs
 * an aggregate, an append and its scans for nothing -- a third of the
 * read's instructions.  set_rel_pathlist_hook marks such a branch empty
 * (mark_dummy_rel()): the read's Append leaves it out, as it leaves out a
 * branch proved empty by its own restrictions.  Only for members of an
 * append relation that are subqueries reading stream_ext's tables first,
 * with a plain GROUP BY (no grouping sets) whose every path is an
 * aggregation of an empty relation.
 *
 * The same hook gives a range filter of a read (k > K, k BETWEEN ...) to
 * the other table of the read's anti-join and left join
 * (derive_key_ranges()): PostgreSQL derives equalities through a join's
 * equality, which is why a read by key probes both tables, but not ranges,
 * and a read WHERE k > K ORDER BY k LIMIT n read the delta's and the
 * materialization's key indexes from their start.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/stratnum.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "query/read_order.h"
#include "core/util.h"
#include "query/reads.h"

#define SE_DELTA_MIN_PAGES 1
#define SE_DELTA_MIN_TUPLES 100
#define SE_SIDE_MIN_PAGES 10
#define SE_SIDE_MIN_TUPLES 1000

static get_relation_info_hook_type prev_get_relation_info_hook = NULL;
static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

int			stream_ext_delta_key_index = SE_DELTA_KEY_INDEX_ON;

static const struct config_enum_entry delta_key_index_options[] = {
	{"on", SE_DELTA_KEY_INDEX_ON, false},
	{"hash", SE_DELTA_KEY_INDEX_HASH, false},
	{"off", SE_DELTA_KEY_INDEX_OFF, false},
	{"btree", SE_DELTA_KEY_INDEX_ON, true},
	{"true", SE_DELTA_KEY_INDEX_ON, true},
	{"false", SE_DELTA_KEY_INDEX_OFF, true},
	{"yes", SE_DELTA_KEY_INDEX_ON, true},
	{"no", SE_DELTA_KEY_INDEX_OFF, true},
	{"1", SE_DELTA_KEY_INDEX_ON, true},
	{"0", SE_DELTA_KEY_INDEX_OFF, true},
	{NULL, 0, false}
};

/*
 * Is r (a delta-like guarded table) a hashed count(DISTINCT) side table?
 * Its last two columns are value (NOT NULL) and stream_ext_key_hash
 * (cv_auxrel_columns_sql()); a delta's hash column follows its keys and
 * aggregate states, none of them a NOT NULL column named value.
 */
static bool
is_hashed_side_table(Relation r)
{
	TupleDesc	desc = RelationGetDescr(r);
	Form_pg_attribute value;
	Form_pg_attribute hash;

	if (desc->natts < 2)
		return false;
	value = TupleDescAttr(desc, desc->natts - 2);
	hash = TupleDescAttr(desc, desc->natts - 1);
	return !value->attisdropped && !hash->attisdropped && value->attnotnull &&
		strcmp(NameStr(value->attname), "value") == 0 &&
		strcmp(NameStr(hash->attname), "stream_ext_key_hash") == 0;	/* CV_KEY_HASH_COLUMN */
}

/*
 * The planner's floor for relid: 0 when it is not a plain table with no
 * unique index guarded by stream_ext; else SE_SIDE_MIN_PAGES for a hashed
 * side table and SE_DELTA_MIN_PAGES for the others (*min_tuples to match).
 */
static BlockNumber
floor_pages(Oid relid, RelOptInfo *rel, double *min_tuples)
{
	Relation	r;
	bool		guarded = false;
	BlockNumber pages = 0;
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		if (((IndexOptInfo *) lfirst(lc))->unique)
			return 0;
	}
	r = relation_open(relid, NoLock);	/* the planner holds a lock */
	guarded = r->rd_rel->relkind == RELKIND_RELATION && se_rel_is_guarded(r);
	if (guarded && is_hashed_side_table(r))
	{
		pages = SE_SIDE_MIN_PAGES;
		*min_tuples = SE_SIDE_MIN_TUPLES;
	}
	else if (guarded)
	{
		pages = SE_DELTA_MIN_PAGES;
		*min_tuples = SE_DELTA_MIN_TUPLES;
	}
	relation_close(r, NoLock);
	return pages;
}

static void
reads_get_relation_info(PlannerInfo *root, Oid relid, bool inhparent,
						RelOptInfo *rel)
{
	BlockNumber min_pages;
	double		min_tuples = 0;

	if (prev_get_relation_info_hook)
		prev_get_relation_info_hook(root, relid, inhparent, rel);

	if (!inhparent &&
		(rel->pages < SE_SIDE_MIN_PAGES || rel->tuples < SE_SIDE_MIN_TUPLES) &&
		(min_pages = floor_pages(relid, rel, &min_tuples)) > 0)
	{
		rel->pages = Max(rel->pages, min_pages);
		rel->tuples = Max(rel->tuples, min_tuples);
	}
}
/*
 * Does path yield no row: a grouping (an aggregation with grouping columns)
 * of an empty relation (a dummy Append), through sorts and projections?
 */
static bool
is_empty_grouping(Path *path)
{
	bool		grouped = false;

	for (;;)
	{
		switch (nodeTag(path))
		{
			case T_ProjectionPath:
				path = ((ProjectionPath *) path)->subpath;
				break;
			case T_SortPath:
			case T_IncrementalSortPath:
				path = ((SortPath *) path)->subpath;
				break;
			case T_AggPath:
				if (((AggPath *) path)->aggstrategy == AGG_PLAIN ||
					((AggPath *) path)->aggstrategy == AGG_MIXED ||
					((AggPath *) path)->groupClause == NIL)
					return false;
				grouped = true;
				path = ((AggPath *) path)->subpath;
				break;
			case T_GroupPath:
				if (((GroupPath *) path)->groupClause == NIL)
					return false;
				grouped = true;
				path = ((GroupPath *) path)->subpath;
				break;
			case T_AppendPath:
				return grouped && IS_DUMMY_APPEND(path);
			default:
				return false;
		}
	}
}

/* Does q read a table guarded by stream_ext first (its first table)? */
static bool
query_reads_guarded_first(Query *q)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION)
			return se_is_guarded_table(rte->relid);
	}
	return false;
}

/* Is node the column var (same relation and attribute, this query level)? */
static bool
is_same_column(Node *node, Var *var)
{
	Var		   *v = (Var *) node;

	return node != NULL && IsA(node, Var) && v->varno == var->varno &&
		v->varattno == var->varattno && v->varlevelsup == 0 &&
		v->vartype == var->vartype && v->varcollid == var->varcollid;
}

/*
 * The range filters on outer (a plain Var) among quals: "outer op value"
 * (or "value op outer", commuted) with op a btree comparison of opfamily
 * under the join equality's collation and value a constant or a parameter
 * of the statement, as clauses on inner (a Var of outer's type and
 * collation).
 */
static List *
ranges_for(List *quals, Var *outer, Var *inner, Oid opfamily, Oid collation)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, quals)
	{
		Node	   *q = lfirst(lc);
		OpExpr	   *op;
		Node	   *left;
		Node	   *right;
		Oid			opno;
		int			strategy;

		if (IsA(q, RestrictInfo))
			q = (Node *) ((RestrictInfo *) q)->clause;
		if (!IsA(q, OpExpr) || list_length(((OpExpr *) q)->args) != 2 ||
			((OpExpr *) q)->inputcollid != collation)
			continue;
		op = (OpExpr *) q;
		left = linitial(op->args);
		right = lsecond(op->args);
		opno = op->opno;
		if (!is_same_column(left, outer))
		{
			if (!is_same_column(right, outer) || !OidIsValid(opno = get_commutator(opno)))
				continue;
			right = left;
		}
		if (!IsA(right, Const) &&
			!(IsA(right, Param) && ((Param *) right)->paramkind == PARAM_EXTERN))
			continue;
		strategy = get_op_opfamily_strategy(opno, opfamily);
		if (strategy != BTLessStrategyNumber && strategy != BTLessEqualStrategyNumber &&
			strategy != BTGreaterEqualStrategyNumber && strategy != BTGreaterStrategyNumber)
			continue;
		result = lappend(result,
						 make_opclause(opno, BOOLOID, false, (Expr *) copyObject(inner),
									   (Expr *) copyObject(right), InvalidOid,
									   op->inputcollid));
	}
	return result;
}

/*
 * A range filter of a read reaches the other table of its joins: rel, a
 * table of stream_ext on the nullable side of an outer or anti join of a
 * view's read (the delta under the anti-join of the materialization's
 * groups without delta rows, the materialization under the left join of
 * the merged delta groups), gets "k op value" for each filter "o.k op
 * value" of the query (WHERE) or of the other side's table, o.k = k being
 * a clause of that join (btree equality; op a comparison of the same
 * operator family).  PostgreSQL derives equalities through a join's
 * equality (a read by key probes both tables), not ranges: a read
 * WHERE k > K ORDER BY k LIMIT n read the delta's and the
 * materialization's key indexes from their start up to K.
 *
 * Exact: a row of rel that fails the range matches no row of the other
 * side that passes it (equal keys), and the other side's rows that fail
 * it are filtered out anyway; rel's rows are only looked up, never
 * preserved.  rel's paths were made without the new clauses: its index
 * paths are made again (every plan of rel applies them, as quals of the
 * relation).
 */
static void
derive_key_ranges(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	List	   *derived = NIL;
	List	   *clauses;
	List	   *wherequals;
	ListCell   *lc;

	if (rte->rtekind != RTE_RELATION || rel->reloptkind != RELOPT_BASEREL ||
		root->parent_root == NULL || rel->indexlist == NIL ||
		!query_reads_guarded_first(root->parse) || !se_is_guarded_table(rte->relid))
		return;
	wherequals = (List *) root->parse->jointree->quals;
	if (wherequals != NIL && !IsA(wherequals, List))
		wherequals = make_ands_implicit((Expr *) wherequals);
	clauses = list_concat_copy(root->left_join_clauses, root->right_join_clauses);
	foreach(lc, clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		OpExpr	   *eq = (OpExpr *) ri->clause;
		Var		   *inner;
		Var		   *outer;
		RelOptInfo *orel;
		ListCell   *lf;

		if (!IsA(eq, OpExpr) || list_length(eq->args) != 2 ||
			!IsA(linitial(eq->args), Var) || !IsA(lsecond(eq->args), Var) ||
			ri->mergeopfamilies == NIL)
			continue;
		/* the nullable side: the right one of a left_join_clause */
		if (list_member_ptr(root->left_join_clauses, ri))
		{
			outer = linitial(eq->args);
			inner = lsecond(eq->args);
		}
		else
		{
			outer = lsecond(eq->args);
			inner = linitial(eq->args);
		}
		if (inner->varno != rel->relid || inner->varlevelsup != 0 ||
			outer->varlevelsup != 0 || outer->varno == rel->relid ||
			exprType((Node *) inner) != exprType((Node *) outer) ||
			exprCollation((Node *) inner) != exprCollation((Node *) outer))
			continue;
		orel = find_base_rel(root, outer->varno);
		foreach(lf, ri->mergeopfamilies)
		{
			Oid			opfamily = lfirst_oid(lf);

			derived = list_concat(derived, ranges_for(wherequals, outer, inner, opfamily,
													  eq->inputcollid));
			derived = list_concat(derived, ranges_for(orel->baserestrictinfo, outer, inner,
													  opfamily, eq->inputcollid));
		}
	}
	if (derived == NIL)
		return;
	foreach(lc, derived)
	{
		Expr	   *clause = lfirst(lc);
		bool		dup = false;
		ListCell   *lb;

		foreach(lb, rel->baserestrictinfo)
			dup = dup || equal(((RestrictInfo *) lfirst(lb))->clause, clause);
		if (dup)
			continue;
		rel->baserestrictinfo =
			lappend(rel->baserestrictinfo,
					make_restrictinfo(root, clause, true, false, false,
									  root->qual_security_level, rel->relids,
									  NULL, NULL));
	}
	/* the indexes' copies of the restrictions, the size estimate, the paths */
	check_index_predicates(root, rel);
	set_baserel_size_estimates(root, rel);
	create_index_paths(root, rel);
}

static void
reads_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					   RangeTblEntry *rte)
{
	Query	   *sub;
	RelOptInfo *final;
	ListCell   *lc;
	Oid			first = InvalidOid;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	derive_key_ranges(root, rel, rte);

	if (rte->rtekind != RTE_SUBQUERY || rel->reloptkind != RELOPT_OTHER_MEMBER_REL ||
		rel->subroot == NULL || rel->pathlist == NIL || IS_DUMMY_REL(rel))
		return;
	sub = rel->subroot->parse;
	if (sub->groupClause == NIL || sub->groupingSets != NIL)
		return;
	final = fetch_upper_rel(rel->subroot, UPPERREL_FINAL, NULL);
	if (final->pathlist == NIL)
		return;
	foreach(lc, final->pathlist)
	{
		if (!is_empty_grouping((Path *) lfirst(lc)))
			return;
	}
	foreach(lc, sub->rtable)
	{
		RangeTblEntry *srte = lfirst_node(RangeTblEntry, lc);

		if (srte->rtekind == RTE_RELATION)
		{
			first = srte->relid;
			break;
		}
	}
	if (!OidIsValid(first) || !se_is_guarded_table(first))
		return;
	mark_dummy_rel(rel);
}

void
reads_init(void)
{
	DefineCustomEnumVariable("stream_ext.delta_key_index",
							 "The index the deltas of continuous views created from now on get: on (a btree on the keys), hash (a hash index on the first key) or off.",
							 "Reads filtered on keys then probe the delta instead of scanning it; writers pay an index insert per delta row, about half as much for hash, which serves equality on the first key only.",
							 &stream_ext_delta_key_index,
							 SE_DELTA_KEY_INDEX_ON,
							 delta_key_index_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	prev_get_relation_info_hook = get_relation_info_hook;
	get_relation_info_hook = reads_get_relation_info;
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = reads_set_rel_pathlist;
	read_order_init();
}
