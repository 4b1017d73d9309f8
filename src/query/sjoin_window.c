/*-------------------------------------------------------------------------
 *
 * sjoin_window.c
 *	  What a join of two streams must be (query/stream_joins.c has the
 *	  rest): two different streams, joined by inner joins (or FROM a LEFT
 *	  JOIN b alone: query/sjoin_left.c), and bounded in
 *	  time both ways -- the second stream's time within an interval of the
 *	  first's.  The largest distance the bounds allow is the join's window,
 *	  which both streams must retain rows for.  Called by joins_check_from()
 *	  (query/joins.c) when a FROM clause has two streams; depends on nothing
 *	  of stream_ext but the catalog, so that the files generating and
 *	  running the join's statements can sit above query/joins.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "query/retract.h"
#include "query/sjoin_window.h"
#include "storage/discard_am.h"

static void
sjoin_refuse(const char *what, const char *construct, const char *detail,
			 const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported in a %s", construct, what),
			 detail ? errdetail("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
}

static bool
contains_rti(Node *node, Index rti)
{
	if (IsA(node, RangeTblRef))
		return ((RangeTblRef *) node)->rtindex == (int) rti;
	if (IsA(node, JoinExpr))
		return contains_rti(((JoinExpr *) node)->larg, rti) ||
			contains_rti(((JoinExpr *) node)->rarg, rti);
	return false;
}

/* the conjuncts of qual, nested ANDs (BETWEEN) flattened */
static List *
conjuncts(Node *qual)
{
	List	   *result = NIL;
	ListCell   *lc;

	if (qual == NULL)
		return NIL;
	if (is_andclause(qual))
	{
		foreach(lc, ((BoolExpr *) qual)->args)
			result = list_concat(result, conjuncts(lfirst(lc)));
		return result;
	}
	if (IsA(qual, List))
	{
		foreach(lc, (List *) qual)
			result = list_concat(result, conjuncts(lfirst(lc)));
		return result;
	}
	return list_make1(qual);
}

/*
 * Outer joins touching the second stream are refused, but for the LEFT
 * JOIN of the two streams alone (FROM a LEFT JOIN b ON ...:
 * query/sjoin_left.c), whose ON quals go to *left_on; every
 * qual of inner joins goes to *quals.
 */
static void
check_joins(Node *node, Index right_rti, const char *what, List **quals,
			List **left_on)
{
	JoinExpr   *j;

	if (!IsA(node, JoinExpr))
		return;
	j = (JoinExpr *) node;
	check_joins(j->larg, right_rti, what, quals, left_on);
	check_joins(j->rarg, right_rti, what, quals, left_on);
	if (j->jointype == JOIN_LEFT && IsA(j->larg, RangeTblRef) &&
		((RangeTblRef *) j->larg)->rtindex == 1 && IsA(j->rarg, RangeTblRef) &&
		((RangeTblRef *) j->rarg)->rtindex == (int) right_rti)
	{
		*left_on = conjuncts(j->quals);
		return;
	}
	if (j->jointype != JOIN_INNER)
	{
		if (contains_rti(node, right_rti))
			sjoin_refuse(what,
						 j->jointype == JOIN_LEFT ? "this LEFT JOIN of two streams" :
						 j->jointype == JOIN_RIGHT ? "a RIGHT JOIN of two streams" :
						 "an outer join of two streams",
						 "Only FROM a LEFT JOIN b ON ... (the first stream on the left, the second on the right, nothing else joined) and inner joins of two streams are maintained.",
						 "Write the join as FROM first_stream LEFT JOIN second_stream ON ..., or use an inner join.");
		return;
	}
	*quals = list_concat(*quals, conjuncts(j->quals));
}

/* one side of a time bound: a column of a relation, plus or minus a constant */
typedef struct TimeTerm
{
	Index		varno;
	AttrNumber	attno;
	Interval	offset;
} TimeTerm;

static Interval *
interval_const(Node *node)
{
	if (IsA(node, Const) && ((Const *) node)->consttype == INTERVALOID &&
		!((Const *) node)->constisnull)
		return DatumGetIntervalP(((Const *) node)->constvalue);
	return NULL;
}

static bool
time_term(Node *node, TimeTerm *t)
{
	memset(t, 0, sizeof(*t));
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node && IsA(node, Var) && ((Var *) node)->varlevelsup == 0)
	{
		t->varno = ((Var *) node)->varno;
		t->attno = ((Var *) node)->varattno;
		return true;
	}
	if (node && IsA(node, OpExpr) && list_length(((OpExpr *) node)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) node;
		char	   *name = get_opname(op->opno);
		Node	   *l = linitial(op->args);
		Node	   *r = lsecond(op->args);
		Interval   *c;

		if (name == NULL)
			return false;
		if ((c = interval_const(r)) != NULL && IsA(l, Var) &&
			((Var *) l)->varlevelsup == 0 &&
			(strcmp(name, "+") == 0 || strcmp(name, "-") == 0))
		{
			t->varno = ((Var *) l)->varno;
			t->attno = ((Var *) l)->varattno;
			t->offset = *c;
			if (strcmp(name, "-") == 0)
				t->offset = *DatumGetIntervalP(DirectFunctionCall1(interval_um,
																   IntervalPGetDatum(c)));
			return true;
		}
		if ((c = interval_const(l)) != NULL && IsA(r, Var) &&
			((Var *) r)->varlevelsup == 0 && strcmp(name, "+") == 0)
		{
			t->varno = ((Var *) r)->varno;
			t->attno = ((Var *) r)->varattno;
			t->offset = *c;
			return true;
		}
	}
	return false;
}

static Interval *
interval_sub(Interval *a, Interval *b)
{
	return DatumGetIntervalP(DirectFunctionCall2(interval_mi, IntervalPGetDatum(a),
												 IntervalPGetDatum(b)));
}

bool
sjoin_interval_less(Interval *a, Interval *b)
{
	return DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(a),
											IntervalPGetDatum(b)));
}

static Interval *
interval_abs(Interval *a)
{
	Interval	zero = {0};

	if (sjoin_interval_less(a, &zero))
		return DatumGetIntervalP(DirectFunctionCall1(interval_um, IntervalPGetDatum(a)));
	return a;
}

/*
 * The quals bounding the join: every qual of q's inner joins and WHERE, as
 * a list of conjuncts, or, for a LEFT JOIN of the two streams, those of its
 * ON clause only (*left set).
 */
static List *
join_quals(Query *q, Index right_rti, const char *what, bool *left)
{
	List	   *quals = NIL;
	List	   *left_on = NIL;
	ListCell   *lc;

	foreach(lc, q->jointree->fromlist)
		check_joins(lfirst(lc), right_rti, what, &quals, &left_on);
	*left = (left_on != NIL);
	if (*left)
		return left_on;
	quals = list_concat(quals, conjuncts(q->jointree->quals));
	return quals;
}

/*
 * The join's window: the largest distance in time between a row of the
 * first stream and a row of the second that the quals allow.  The quals
 * must bound the second stream's time column from both sides by the
 * first's: right.t >= left.t - x and right.t <= left.t + y, or BETWEEN (any
 * columns, any of <, <=, >, >=, either operand first).  NULL if they do not.
 */
static Interval *
join_window(List *quals, Index right_rti, SJoinUpperBound *ub)
{
	Interval   *lower = NULL;	/* right.t - left.t >= lower */
	Interval   *upper = NULL;	/* right.t - left.t <= upper */
	AttrNumber	upper_right = InvalidAttrNumber;
	AttrNumber	upper_left = InvalidAttrNumber;
	ListCell   *lc;

	foreach(lc, quals)
	{
		Node	   *qual = lfirst(lc);
		OpExpr	   *op;
		char	   *name;
		TimeTerm	x;
		TimeTerm	y;
		bool		less;
		Interval   *bound;

		if (!IsA(qual, OpExpr) || list_length(((OpExpr *) qual)->args) != 2)
			continue;
		op = (OpExpr *) qual;
		name = get_opname(op->opno);
		if (name == NULL || (strcmp(name, "<") != 0 && strcmp(name, "<=") != 0 &&
							 strcmp(name, ">") != 0 && strcmp(name, ">=") != 0))
			continue;
		if (!time_term(linitial(op->args), &x) || !time_term(lsecond(op->args), &y))
			continue;
		less = (name[0] == '<');
		/* x.var + x.off op y.var + y.off: x.var - y.var op y.off - x.off */
		if (x.varno == right_rti && y.varno == 1)
			bound = interval_sub(&y.offset, &x.offset);
		else if (x.varno == 1 && y.varno == right_rti)
		{
			/* left - right op c: right - left (flipped op) -c */
			bound = interval_sub(&x.offset, &y.offset);
			less = !less;
			/* (the terms as right, left below) */
			{
				TimeTerm	t = x;

				x = y;
				y = t;
			}
		}
		else
			continue;
		if (less && (upper == NULL || sjoin_interval_less(bound, upper)))
		{
			upper = bound;
			upper_right = x.attno;
			upper_left = y.attno;
		}
		else if (!less && (lower == NULL || sjoin_interval_less(lower, bound)))
			lower = bound;
	}
	if (lower == NULL || upper == NULL)
		return NULL;
	if (ub)
	{
		ub->upper = *upper;
		ub->right_attno = upper_right;
		ub->left_attno = upper_left;
	}
	lower = interval_abs(lower);
	upper = interval_abs(upper);
	return sjoin_interval_less(lower, upper) ? upper : lower;
}

Interval *
sjoin_window(Query *q)
{
	Index		rti = sjoin_right_rti(q);
	bool		left;

	return rti ? join_window(join_quals(q, rti, "continuous view", &left), rti, NULL) : NULL;
}

bool
sjoin_left_bound(Query *q, SJoinUpperBound *ub)
{
	Index		rti = sjoin_right_rti(q);
	bool		left = false;

	if (rti == 0)
		return false;
	if (join_window(join_quals(q, rti, "continuous view", &left), rti, ub) == NULL)
		return false;
	return left;
}

Index
sjoin_right_rti(Query *q)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		Index		rti = foreach_current_index(lc) + 1;

		if (rti > 1 && rte->rtekind == RTE_RELATION && catalog_is_stream(rte->relid))
			return rti;
	}
	return 0;
}

Oid
sjoin_right_stream(Query *q)
{
	Index		rti = sjoin_right_rti(q);

	return rti ? rt_fetch(rti, q->rtable)->relid : InvalidOid;
}

/*
 * A LEFT JOIN of two streams (query/sjoin_left.c): the two streams alone,
 * the first not a changelog stream, and the upper bound of the window a
 * timestamptz column of each, so that a row's window closes when the
 * second stream's watermark passes its time plus the bound.
 */
static void
check_left(Query *q, Index right_rti, SJoinUpperBound *ub, const char *what)
{
	Oid			left = rt_fetch(1, q->rtable)->relid;
	Oid			right = rt_fetch(right_rti, q->rtable)->relid;
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && rte->relid != left && rte->relid != right)
			sjoin_refuse(what, "a LEFT JOIN of two streams joined to a table",
						 "The NULL-extended rows of a LEFT JOIN of two streams are maintained for the two streams alone.",
						 "Join the table in a view over the result, or use an inner join of the streams.");
	}
	if (se_stream_is_changelog(left))
		sjoin_refuse(what, "a LEFT JOIN of a changelog stream",
					 "A NULL-extended row emitted when the window closes cannot be retracted.",
					 NULL);
	if (ub->right_attno <= 0 || ub->left_attno <= 0 ||
		get_atttype(right, ub->right_attno) != TIMESTAMPTZOID ||
		get_atttype(left, ub->left_attno) != TIMESTAMPTZOID)
		sjoin_refuse(what, "a LEFT JOIN of two streams without timestamptz time columns",
					 "The window's upper bound must compare a timestamptz column of each stream (second.ts <= first.ts + interval): a row's window closes when the second stream's watermark passes it.",
					 "Cast the time columns to timestamptz in the streams, or use an inner join.");
}

void
sjoin_check_from(Query *q, Index right_rti, const char *querytext, const char *what)
{
	Oid			left = rt_fetch(1, q->rtable)->relid;
	Oid			right = rt_fetch(right_rti, q->rtable)->relid;
	Oid			sides[2] = {left, right};
	bool		is_left = false;
	SJoinUpperBound ub;

	catalog_require_table("stream_joins", "joins of two streams");
	if (left == right)
		sjoin_refuse(what, "a join of a stream with itself",
					 "A batch of a stream joined to itself would have to join its own rows; only joins of two different streams are maintained.",
					 NULL);
	if (se_stream_is_changelog(right))
		sjoin_refuse(what, psprintf("changelog stream \"%s\" as the second stream of a join", get_rel_name(right)),
					 "Only the first stream's retractions are applied: the second stream's rows would count as inserts.",
					 "Put the changelog stream first in FROM.");
	if (join_window(join_quals(q, right_rti, what, &is_left), right_rti, &ub) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a join of two streams needs a time window in a %s", what),
				 errdetail("Each batch joins the other stream's retained rows: the join must bound how far apart in time two joined rows may be."),
				 errhint("Add a condition like %s.ts BETWEEN %s.ts - interval '5 minutes' AND %s.ts + interval '5 minutes' to the ON clause.",
						 get_rel_name(right), get_rel_name(left), get_rel_name(left))));
	for (int i = 0; i < 2; i++)
	{
		if (se_rel_discards_rows(sides[i]))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("stream \"%s\" does not retain rows and cannot be joined to another stream",
							get_rel_name(sides[i])),
					 errdetail("It was created with retain => false: a batch of the other stream would find none of its rows."),
					 errhint("Create the stream with retain => true (the default).")));
	}
	if (is_left)
		check_left(q, right_rti, &ub, what);
}
