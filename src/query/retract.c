/*-------------------------------------------------------------------------
 *
 * retract.c
 *	  Continuous views over changelog streams, exact under retraction.
 *
 *	  A changelog stream (stream_ext.create_stream(..., changelog => true),
 *	  ddl/stream.c) has the column stream_ext_sign smallint: +1 adds the
 *	  row, -1 retracts a row added before (a CDC delete; an update is a
 *	  retraction of the old row and an addition of the new one).  A view
 *	  over such a stream must equal its query over the rows added and not
 *	  retracted.
 *
 *	  se_retract_rewrite() makes that hold by rewriting the view's query,
 *	  before cv_analyze() breaks it into keys and aggregates, into one whose
 *	  aggregates are all sums of signed values -- which the existing
 *	  machinery keeps, combines across batches, appends to deltas, compacts
 *	  and merges unchanged, since a sum's partial states of any sign
 *	  combine:
 *
 *		count(*)	coalesce(sum(sign), 0)
 *		count(x)	coalesce(nn(x), 0)
 *					where nn(x) = sum(CASE WHEN x IS NOT NULL THEN sign ELSE 0 END)
 *		sum(x)		CASE WHEN nn(x) > 0 THEN sum(x * sign) END
 *		avg(x)		CASE WHEN nn(x) > 0 THEN sum(x * sign)::r / nn(x)::r END
 *					(r the type avg(x) returns: the same division avg's
 *					final function makes)
 *		bool_or(x)	CASE WHEN nn(x) > 0 THEN t(x) > 0 END
 *					where t(x) = sum(CASE WHEN x THEN sign ELSE 0 END)
 *		bool_and(x), every(x)
 *					CASE WHEN nn(x) > 0 THEN t(x) = nn(x) END
 *		var_pop(x), var_samp(x), variance(x) of integers
 *					from nn(x), sum(x * sign) and sum(x * x * sign) in
 *					numeric (rewrite_variance())
 *		count(DISTINCT x)
 *					left as it is: its side table keeps a signed count
 *					per (keys, value) (cv_distinct_sql() in analyze.c)
 *
 *	  and, with GROUP BY, HAVING sum(sign) > 0 ANDed to the view's own: a
 *	  group whose rows have all been retracted disappears (its row stays
 *	  in the materialization, with zero states, until TTL or a DROP).  A
 *	  FILTER clause stays on each rewritten aggregate.  sum(x)'s NULL-ness
 *	  is nn(x), the signed count of non-NULL values.
 *
 *	  Why not PostgreSQL's moving-aggregate support (msfunc/minvfunc)?  It
 *	  is made for window frames: its states have no combine function, so
 *	  the partial states of two batches (or of a delta and the
 *	  materialization) could not be merged.  The rewrite covers the
 *	  built-in count, sum and avg exactly (integer and numeric; float sums
 *	  may differ in the last bits, as any reordering of float additions
 *	  does), bool_and/bool_or/every, the integer variances and
 *	  count(DISTINCT); every other aggregate -- min, max, stddev, the other
 *	  statistics aggregates, user-defined ones -- is refused at CREATE
 *	  (feature_not_supported, naming it).
 *
 *	  The rewritten query is a copy: the view's recorded definition stays
 *	  the user's, and every later cv_analyze() of it (maintenance, combine,
 *	  distributed views) rewrites it again the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parse_node.h"
#include "parser/parse_oper.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "query/retract.h"

bool
se_stream_is_changelog(Oid relid)
{
	AttrNumber	attno = get_attnum(relid, SE_SIGN_COLUMN);

	return attno != InvalidAttrNumber && get_atttype(relid, attno) == INT2OID;
}

typedef struct RetractContext
{
	ParseState *pstate;
	Var		   *sign;			/* the stream's sign column */
	const char *querytext;
} RetractContext;

static List *
catalog_name(const char *name)
{
	return list_make2(makeString("pg_catalog"), makeString(pstrdup(name)));
}

static Node *
make_catalog_op(RetractContext *cx, const char *op, Node *l, Node *r)
{
	return (Node *) make_op(cx->pstate, catalog_name(op), l, r, NULL, -1);
}

/* pg_catalog.sum(arg), with orig's FILTER; location -1 unless given */
static Aggref *
make_sum(Aggref *orig, Node *arg, int location)
{
	Oid			argtype = exprType(arg);
	Oid			fn = LookupFuncName(catalog_name("sum"), 1, &argtype, false);
	Aggref	   *a = makeNode(Aggref);

	a->aggfnoid = fn;
	a->aggtype = get_func_rettype(fn);
	a->aggcollid = InvalidOid;
	a->inputcollid = InvalidOid;
	a->aggtranstype = InvalidOid;
	a->aggargtypes = list_make1_oid(argtype);
	a->aggdirectargs = NIL;
	a->args = list_make1(makeTargetEntry((Expr *) arg, 1, NULL, false));
	a->aggorder = NIL;
	a->aggdistinct = NIL;
	a->aggfilter = copyObject(orig->aggfilter);
	a->aggstar = false;
	a->aggvariadic = false;
	a->aggkind = AGGKIND_NORMAL;
	a->agglevelsup = 0;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = -1;
	a->aggtransno = -1;
	a->location = location;
	return a;
}

static Node *
int2_const(int16 v)
{
	return (Node *) makeConst(INT2OID, -1, InvalidOid, sizeof(int16),
							  Int16GetDatum(v), false, true);
}

/* sum(CASE WHEN cond THEN sign ELSE 0 END): the signed count of rows where cond */
static Aggref *
make_signed_count(RetractContext *cx, Aggref *orig, Expr *cond)
{
	CaseWhen   *w = makeNode(CaseWhen);
	CaseExpr   *c = makeNode(CaseExpr);

	w->expr = cond;
	w->result = (Expr *) copyObject(cx->sign);
	w->location = -1;
	c->casetype = INT2OID;
	c->casecollid = InvalidOid;
	c->arg = NULL;
	c->args = list_make1(w);
	c->defresult = (Expr *) int2_const(0);
	c->location = -1;
	return make_sum(orig, (Node *) c, -1);
}

/* nn(x): sum(CASE WHEN x IS NOT NULL THEN sign ELSE 0 END) */
static Aggref *
make_nonnull_count(RetractContext *cx, Aggref *orig, Expr *x)
{
	NullTest   *nt = makeNode(NullTest);

	nt->arg = (Expr *) copyObject(x);
	nt->nulltesttype = IS_NOT_NULL;
	nt->argisrow = false;
	nt->location = -1;
	return make_signed_count(cx, orig, (Expr *) nt);
}

/* CASE WHEN cond THEN result END */
static Node *
case_when(Node *cond, Node *result)
{
	CaseWhen   *w = makeNode(CaseWhen);
	CaseExpr   *c = makeNode(CaseExpr);

	w->expr = (Expr *) cond;
	w->result = (Expr *) result;
	w->location = -1;
	c->casetype = exprType(result);
	c->casecollid = exprCollation(result);
	c->arg = NULL;
	c->args = list_make1(w);
	c->defresult = (Expr *) makeNullConst(c->casetype, exprTypmod(result),
										  c->casecollid);
	c->location = -1;
	return (Node *) c;
}

/* CASE WHEN cond THEN result ELSE otherwise END */
static Node *
case_else(Node *cond, Node *result, Node *otherwise)
{
	CaseExpr   *c = (CaseExpr *) case_when(cond, result);

	c->defresult = (Expr *) otherwise;
	return (Node *) c;
}

static Node *
int8_const(int64 v)
{
	return (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
							  Int64GetDatum(v), false, FLOAT8PASSBYVAL);
}

static Node *
coalesce_zero(Node *count)
{
	CoalesceExpr *c = makeNode(CoalesceExpr);

	c->coalescetype = INT8OID;
	c->coalescecollid = InvalidOid;
	c->args = list_make2(count, makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
										  Int64GetDatum(0), false, FLOAT8PASSBYVAL));
	c->location = -1;
	return (Node *) c;
}

static Node *
coerce_to(RetractContext *cx, Node *expr, Oid type)
{
	Node	   *r;

	if (exprType(expr) == type)
		return expr;
	r = coerce_to_target_type(cx->pstate, expr, exprType(expr), type, -1,
							  COERCION_EXPLICIT, COERCE_EXPLICIT_CAST, -1);
	if (r == NULL)
		elog(ERROR, "cannot cast type %s to %s",
			 format_type_be(exprType(expr)), format_type_be(type));
	return r;
}

static void
refuse(RetractContext *cx, Aggref *aggref, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("aggregate %s%s is not supported in a continuous view over a changelog stream",
					format_procedure(aggref->aggfnoid),
					aggref->aggdistinct != NIL ? " with DISTINCT" : ""),
			 detail ? errdetail_internal("%s", detail) : 0,
			 errhint("Over a changelog stream, whose rows can be retracted, a continuous view can use count, sum and avg (of numbers and intervals), bool_and, bool_or, every, and var_pop, var_samp and variance (of integers)."),
			 (cx->querytext && aggref->location >= 0) ?
			 errposition(pg_mbstrlen_with_len(cx->querytext, aggref->location) + 1) : 0));
}

/*
 * bool_and(x), every(x) and bool_or(x) from the signed counts of non-NULL
 * and of true values: bool_and is true when they are equal, bool_or when
 * some value is true; NULL when no value is left.
 */
static Node *
rewrite_bool(RetractContext *cx, Aggref *a, const char *name, Expr *x)
{
	Node	   *nn = (Node *) make_nonnull_count(cx, a, x);
	Node	   *trues = (Node *) make_signed_count(cx, a, (Expr *) copyObject(x));
	Node	   *result;

	if (exprType((Node *) x) != BOOLOID)
		refuse(cx, a, NULL);
	if (strcmp(name, "bool_or") == 0)
		result = make_catalog_op(cx, ">", trues, int8_const(0));
	else
		result = make_catalog_op(cx, "=", trues, copyObject(nn));
	return case_when(make_catalog_op(cx, ">", nn, int8_const(0)), result);
}

/*
 * var_pop(x), var_samp(x) and variance(x) of an integer x from n = nn(x),
 * sx = sum(x * sign) and sx2 = sum(x * x * sign), all in numeric: the same
 * arithmetic as numeric_stddev_internal() makes on the same exact sums,
 *
 *		CASE WHEN n > 0 (var_samp: n > 1) THEN
 *			CASE WHEN n * sx2 - sx * sx <= 0 THEN 0
 *				 ELSE (n * sx2 - sx * sx) / (n * n) (var_samp: n * (n - 1)) END END
 *
 * so the result equals PostgreSQL's own to the last digit (integer sums have
 * scale 0, so the products are exact and the division picks the same
 * scale).  numeric inputs are refused: a retracted value's scale would stay
 * in the sums and change the division's; float inputs too: their sums
 * depend on the order of additions.  stddev is refused: the square root's
 * rounding to the variance's scale cannot be repeated exactly in SQL.
 */
static Node *
rewrite_variance(RetractContext *cx, Aggref *a, const char *name, Expr *x)
{
	Oid			xtype = exprType((Node *) x);
	bool		sample = strcmp(name, "var_pop") != 0;
	Node	   *xn;
	Node	   *n;
	Node	   *sx;
	Node	   *sx2;
	Node	   *num;
	Node	   *den;
	Node	   *zero;

	if (xtype != INT2OID && xtype != INT4OID && xtype != INT8OID)
		refuse(cx, a, "Over a changelog stream, var_pop, var_samp and variance are exact only for integer arguments.");
	xn = coerce_to(cx, (Node *) copyObject(x), NUMERICOID);
	n = coerce_to(cx, (Node *) make_nonnull_count(cx, a, x), NUMERICOID);
	sx = (Node *) make_sum(a, make_catalog_op(cx, "*", xn, copyObject((Node *) cx->sign)),
						   a->location);
	sx2 = (Node *) make_sum(a, make_catalog_op(cx, "*",
											   make_catalog_op(cx, "*", copyObject(xn), copyObject(xn)),
											   copyObject((Node *) cx->sign)), -1);
	num = make_catalog_op(cx, "-",
						  make_catalog_op(cx, "*", copyObject(n), sx2),
						  make_catalog_op(cx, "*", copyObject(sx), sx));
	den = make_catalog_op(cx, "*", copyObject(n),
						  sample ? make_catalog_op(cx, "-", copyObject(n),
												   coerce_to(cx, int8_const(1), NUMERICOID))
						  : copyObject(n));
	zero = coerce_to(cx, int8_const(0), NUMERICOID);
	return case_when(make_catalog_op(cx, ">", n,
									 coerce_to(cx, int8_const(sample ? 1 : 0), NUMERICOID)),
					 case_else(make_catalog_op(cx, "<=", copyObject(num), copyObject(zero)),
							   zero,
							   make_catalog_op(cx, "/", num, den)));
}

/* the rewrite of one aggregate call (see the header comment) */
static Node *
rewrite_aggref(RetractContext *cx, Aggref *a)
{
	char	   *name;
	Expr	   *x;
	Oid			xtype;
	Node	   *signed_x;
	Aggref	   *sum;
	Node	   *positive;

	/* count(DISTINCT x): signed value counts in its side table (analyze.c) */
	/*
	 * (is_count_distinct()'s test, written out: test/fuzz links this file
	 * without aggsupport.c)
	 */
	if (a->aggfnoid == F_COUNT_ANY && a->aggdistinct != NIL && list_length(a->args) == 1)
		return (Node *) copyObject(a);
	if (a->aggdistinct != NIL)
		refuse(cx, a, NULL);
	if (a->aggorder != NIL || a->aggkind != AGGKIND_NORMAL)
		refuse(cx, a, NULL);
	if (a->aggfnoid == F_COUNT_)
	{
		/* without a FILTER, the same state as the group count's */
		return coalesce_zero((Node *) make_sum(a, copyObject((Node *) cx->sign), -1));
	}
	if (list_length(a->args) != 1 ||
		get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE)
		refuse(cx, a, NULL);
	x = ((TargetEntry *) linitial(a->args))->expr;
	if (a->aggfnoid == F_COUNT_ANY)
		return coalesce_zero((Node *) make_nonnull_count(cx, a, x));

	name = get_func_name(a->aggfnoid);
	if (strcmp(name, "bool_and") == 0 || strcmp(name, "every") == 0 ||
		strcmp(name, "bool_or") == 0)
		return rewrite_bool(cx, a, name, x);
	if (strcmp(name, "var_pop") == 0 || strcmp(name, "var_samp") == 0 ||
		strcmp(name, "variance") == 0)
		return rewrite_variance(cx, a, name, x);
	if (strcmp(name, "sum") != 0 && strcmp(name, "avg") != 0)
		refuse(cx, a,
			   (strcmp(name, "min") == 0 || strcmp(name, "max") == 0) ?
			   "A retraction of the current extreme value would need every other value of the group." : NULL);
	xtype = exprType((Node *) x);
	switch (xtype)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case NUMERICOID:
		case FLOAT4OID:
		case FLOAT8OID:
		case INTERVALOID:
		case MONEYOID:
			break;
		default:
			refuse(cx, a, NULL);
	}
	/* avg(float4) adds in float8, like float4_accum */
	signed_x = (Node *) copyObject(x);
	if (name[0] == 'a' && xtype == FLOAT4OID)
		signed_x = coerce_to(cx, signed_x, FLOAT8OID);
	signed_x = make_catalog_op(cx, "*", signed_x, copyObject((Node *) cx->sign));
	sum = make_sum(a, signed_x, a->location);
	positive = make_catalog_op(cx, ">", (Node *) make_nonnull_count(cx, a, x),
							   (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
												  Int64GetDatum(0), false, FLOAT8PASSBYVAL));
	if (name[0] == 's')
	{
		if (sum->aggtype != a->aggtype)
			refuse(cx, a, NULL);
		return case_when(positive, (Node *) sum);
	}
	if (a->aggtype == MONEYOID)
		refuse(cx, a, NULL);
	return case_when(positive,
					 make_catalog_op(cx, "/", coerce_to(cx, (Node *) sum, a->aggtype),
									 coerce_to(cx, (Node *) make_nonnull_count(cx, a, x),
											   a->aggtype == INTERVALOID ? FLOAT8OID : a->aggtype)));
}

static Node *
retract_mutator(Node *node, RetractContext *cx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
		return rewrite_aggref(cx, (Aggref *) node);
	return expression_tree_mutator(node, retract_mutator, (void *) cx);
}

/* the sign column of changelog stream streamid in query q, as a Var */
Var *
se_retract_sign_var(Query *q, Oid streamid)
{
	ListCell   *lc;
	Index		rti = 0;
	Index		i = 0;
	AttrNumber	attno = get_attnum(streamid, SE_SIGN_COLUMN);

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		i++;
		if (rte->rtekind == RTE_RELATION && rte->relid == streamid)
		{
			rti = i;
			break;
		}
	}
	if (rti == 0 || attno == InvalidAttrNumber)
		elog(ERROR, "changelog stream %u not found in the query", streamid);
	return makeVar(rti, attno, INT2OID, -1, InvalidOid, 0);
}

/*
 * The view's query q over changelog stream streamid, rewritten so that its
 * aggregates are exact under retraction (see the header comment).  q itself
 * is left as it is.
 */
Query *
se_retract_rewrite(Query *q, Oid streamid, const char *querytext)
{
	RetractContext cx;

	cx.sign = se_retract_sign_var(q, streamid);
	q = copyObject(q);
	cx.pstate = make_parsestate(NULL);
	cx.querytext = querytext;

	q->targetList = (List *) retract_mutator((Node *) q->targetList, &cx);
	q->havingQual = retract_mutator(q->havingQual, &cx);

	/* a group whose rows were all retracted is not in the view */
	if (q->groupClause != NIL)
	{
		Aggref		model = {0};
		Node	   *alive;

		model.aggfilter = NULL;
		alive = make_catalog_op(&cx, ">",
								(Node *) make_sum(&model, copyObject((Node *) cx.sign), -1),
								(Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
												   Int64GetDatum(0), false, FLOAT8PASSBYVAL));
		q->havingQual = q->havingQual ?
			(Node *) make_and_qual(q->havingQual, alive) : alive;
	}
	q->hasAggs = true;
	free_parsestate(cx.pstate);
	return q;
}

/*
 * count(DISTINCT x) over a changelog stream whose keys and value are too
 * wide for a unique index of its side table: refused, since concurrent
 * batches could not add their signed counts to one row per value.
 */
void
se_retract_refuse_wide_distinct(Aggref *aggref, const char *querytext)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("count(DISTINCT) of a value this wide is not supported in a continuous view over a changelog stream"),
			 errdetail("The group keys and the value are stored by their hash; a changelog stream's value counts need them in a unique index."),
			 errhint("Count a narrower expression, such as a hash of the value."),
			 (querytext && aggref->location >= 0) ?
			 errposition(pg_mbstrlen_with_len(querytext, aggref->location) + 1) : 0));
}

/*
 * Session windows over a changelog stream are refused: a retraction could
 * split a session in two, which fragments merged at read time cannot undo.
 */
void
se_retract_check_session(Oid streamid)
{
	if (se_stream_is_changelog(streamid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session windows are not supported over a changelog stream"),
				 errdetail("Retracting a row could split a session in two."),
				 errhint("Use tumble() or hop() windows, which a retraction leaves whole.")));
}
