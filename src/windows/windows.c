/*-------------------------------------------------------------------------
 *
 * windows.c
 *	  Time windows of continuous views.
 *
 *	  - Tumbling: stream_ext.tumble(ts, size) is date_bin(size, ts, epoch),
 *		an immutable function usable as a GROUP BY key like any other.
 *	  - Hopping: FROM s, stream_ext.hop(ts, size, slide) AS w(window_start)
 *		(or s CROSS JOIN LATERAL stream_ext.hop(...)) is plain SQL (hop() is a set-returning function giving every
 *		window containing ts), so the view's oracle is the query itself.
 *		As a continuous view the window start is replaced by the pane
 *		tumble(ts, gcd(size, slide)): the materialization keeps one partial
 *		state per pane, and the user-facing view expands each pane into the
 *		windows containing it (hop() of the pane start, which are exactly
 *		the windows containing the pane's rows) and merges the panes'
 *		states with stream_ext.merge_states().  Storage grows with the
 *		number of panes, not with size/slide.
 *	  - Sliding: WITH (continuous, sliding_window = '5 minutes'
 *		[, time_column = 'ts'] [, step = '5 seconds']) keeps one partial
 *		state per step bucket tumble(time_column, step) and the view merges
 *		the buckets starting at or after now() - sliding_window.  Expired
 *		buckets are deleted by stream_ext.expire_sliding() and, at most once
 *		per step, by the maintenance trigger.
 *
 *	  Interval arguments must be positive and free of months (a month has
 *	  no fixed length); a day counts as 24 hours.  Bad windows are refused
 *	  when the view is created.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "common/int.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "core/security.h"
#include "core/util.h"
#include "windows/windows.h"

PG_FUNCTION_INFO_V1(stream_ext_tumble);
PG_FUNCTION_INFO_V1(stream_ext_hop);
PG_FUNCTION_INFO_V1(stream_ext_expire_sliding);
PG_FUNCTION_INFO_V1(stream_ext_hop_open_from);

/* windows are aligned to 1970-01-01 00:00:00 (UTC for timestamptz) */
#define WINDOW_ORIGIN ((int64) SE_UNIX_EPOCH_TIMESTAMP)

#define BUCKET_COLUMN "window_bucket"

/* ---- intervals and alignment ------------------------------------------ */

static char *
interval_text(Interval *iv)
{
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(iv)));
}

/* the length of a window parameter in microseconds; what names it */
static int64
window_usecs(Interval *iv, const char *what)
{
	int64		us;

	if (iv->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not contain months or years", what),
				 errdetail("It is \"%s\"; a month has no fixed length.", interval_text(iv)),
				 errhint("Use days, e.g. '30 days'.")));
	if (pg_mul_s64_overflow((int64) iv->day, USECS_PER_DAY, &us) ||
		pg_add_s64_overflow(us, iv->time, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s is out of range", what)));
	if (us <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a positive interval", what),
				 errdetail("It is \"%s\".", interval_text(iv))));
	return us;
}

static Interval *
usecs_interval(int64 us)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = us;
	return iv;
}

static char *
usecs_literal(int64 us)
{
	return interval_sql_literal(usecs_interval(us));
}

static void
check_hop_args(int64 size_us, int64 slide_us)
{
	if (slide_us > size_us)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hop() slide must not be longer than its size"),
				 errdetail("Windows would leave gaps: rows between them would belong to no window."),
				 errhint("Use a slide between a fraction of the size and the size itself (a tumbling window).")));
}

/* the start of the stride-long bucket holding ts */
static int64
align_down(int64 ts, int64 stride)
{
	int64		off;
	int64		rem;
	int64		result;

	if (pg_sub_s64_overflow(ts, WINDOW_ORIGIN, &off))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	rem = off % stride;
	if (rem < 0)
		rem += stride;
	result = ts - rem;
	if (!IS_VALID_TIMESTAMP(result))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	return result;
}

static int64
gcd64(int64 a, int64 b)
{
	while (b != 0)
	{
		int64		t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * stream_ext.tumble(ts, size): the start of the size-long window holding
 * ts, windows aligned to 1970-01-01 (date_bin(size, ts, epoch)).  The same
 * code serves timestamp and timestamptz, which share their representation.
 */
Datum
stream_ext_tumble(PG_FUNCTION_ARGS)
{
	int64		ts = PG_GETARG_INT64(0);
	int64		size = window_usecs(PG_GETARG_INTERVAL_P(1), "stream_ext.tumble() size");

	if (TIMESTAMP_NOT_FINITE(ts))
		PG_RETURN_INT64(ts);
	PG_RETURN_INT64(align_down(ts, size));
}

typedef struct HopState
{
	int64		next;			/* next window start to return */
	int64		slide;
	int64		remaining;		/* windows still to return */
} HopState;

/*
 * stream_ext.hop(ts, size, slide): the start of every window containing
 * ts, ascending.  Windows start at multiples of slide from 1970-01-01 and
 * are size long; there are about size/slide of them.
 */
Datum
stream_ext_hop(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	HopState   *st;

	if (SRF_IS_FIRSTCALL())
	{
		int64		ts = PG_GETARG_INT64(0);
		int64		size = window_usecs(PG_GETARG_INTERVAL_P(1), "hop() size");
		int64		slide = window_usecs(PG_GETARG_INTERVAL_P(2), "hop() slide");
		MemoryContext old;

		check_hop_args(size, slide);
		funcctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		st = palloc(sizeof(HopState));
		MemoryContextSwitchTo(old);
		st->slide = slide;
		if (TIMESTAMP_NOT_FINITE(ts))
		{
			/* infinity is its own window, as tumble() leaves it alone */
			st->next = ts;
			st->remaining = 1;
		}
		else
		{
			/* latest window start <= ts; earlier ones while start > ts - size */
			int64		last = align_down(ts, slide);
			int64		back = (last - ts + size - 1) / slide;	/* >= 0 */
			int64		span;

			st->remaining = back + 1;
			if (pg_mul_s64_overflow(back, slide, &span) ||
				pg_sub_s64_overflow(last, span, &st->next) ||
				!IS_VALID_TIMESTAMP(st->next))
				ereport(ERROR,
						(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
						 errmsg("timestamp out of range")));
		}
		funcctx->user_fctx = st;
	}
	funcctx = SRF_PERCALL_SETUP();
	st = funcctx->user_fctx;
	if (st->remaining > 0)
	{
		int64		w = st->next;

		st->remaining--;
		if (st->remaining > 0)
			st->next += st->slide;
		SRF_RETURN_NEXT(funcctx, Int64GetDatum(w));
	}
	SRF_RETURN_DONE(funcctx);
}

/*
 * stream_ext.hop_open_from(pane, size, slide, watermark): of the hopping
 * windows holding PANE, where the ones a row of that pane may still join
 * start, given WATERMARK (allowed_lateness, lateness.c): -infinity when all
 * of them are open (or there is no watermark yet), else the start of the
 * first window ending after the watermark.  Windows close in the order of
 * their start, so the closed windows of a row are those starting before
 * this.  A group key of hopping views with allowed_lateness: the view
 * expands a pane only into windows starting at or after it.
 */
Datum
stream_ext_hop_open_from(PG_FUNCTION_ARGS)
{
	int64		pane;
	int64		wm;
	int64		size;
	int64		slide;
	int64		t;
	int64		first;
	int64		first_open;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		PG_RETURN_TIMESTAMPTZ(DT_NOBEGIN);
	pane = PG_GETARG_INT64(0);
	size = window_usecs(PG_GETARG_INTERVAL_P(1), "hop() size");
	slide = window_usecs(PG_GETARG_INTERVAL_P(2), "hop() slide");
	wm = PG_GETARG_INT64(3);
	check_hop_args(size, slide);
	if (TIMESTAMP_NOT_FINITE(pane) || TIMESTAMP_NOT_FINITE(wm) ||
		pg_sub_s64_overflow(pane, size, &t) || !IS_VALID_TIMESTAMP(t) ||
		pg_sub_s64_overflow(wm, size, &first_open) || !IS_VALID_TIMESTAMP(first_open))
		PG_RETURN_TIMESTAMPTZ(DT_NOBEGIN);
	/* the first window holding pane, and the first one ending after wm */
	first = align_down(t, slide) + slide;
	first_open = align_down(first_open, slide) + slide;
	if (first >= first_open)
		PG_RETURN_TIMESTAMPTZ(DT_NOBEGIN);
	PG_RETURN_TIMESTAMPTZ(first_open);
}

/* ---- query analysis ---------------------------------------------------- */

static bool
is_stream_ext_func(Oid funcid, const char *name)
{
	char	   *fname;

	if (get_func_namespace(funcid) != get_namespace_oid("stream_ext", true))
		return false;
	fname = get_func_name(funcid);
	return fname != NULL && strcmp(fname, name) == 0;
}

/*
 * Move sliding_window, step and time_column from options to
 * *window_options; returns the rest.  (sessions.c takes time_column first
 * when session_gap is given.)
 */
List *
window_take_options(List *options, List **window_options)
{
	ListCell   *lc;
	List	   *rest = NIL;

	*window_options = NIL;
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "sliding_window") == 0 ||
			strcmp(def->defname, "time_column") == 0 ||
			strcmp(def->defname, "step") == 0)
			*window_options = lappend(*window_options, def);
		else
			rest = lappend(rest, def);
	}
	return rest;
}

static Oid
tumble_oid(Oid tstype)
{
	Oid			argtypes[2] = {tstype, INTERVALOID};

	return LookupFuncName(list_make2(makeString("stream_ext"), makeString("tumble")),
						  2, argtypes, false);
}

/* stream_ext.tumble(ts, 'pane'::interval) */
static Expr *
make_tumble(Expr *ts, int64 pane_us)
{
	Oid			tstype = exprType((Node *) ts);
	Const	   *size = makeConst(INTERVALOID, -1, InvalidOid, sizeof(Interval),
								 IntervalPGetDatum(usecs_interval(pane_us)),
								 false, false);

	return (Expr *) makeFuncExpr(tumble_oid(tstype), tstype,
								 list_make2(ts, size), InvalidOid, InvalidOid,
								 COERCE_EXPLICIT_CALL);
}

static Interval *
const_interval(const char *querytext, Node *arg, const char *what)
{
	Node	   *folded = eval_const_expressions(NULL, arg);
	int			loc = exprLocation(arg);

	if (!IsA(folded, Const))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s must be a constant in a continuous view", what),
				 (loc >= 0 && querytext) ?
				 errposition(pg_mbstrlen_with_len(querytext, loc) + 1) : 0));
	if (((Const *) folded)->constisnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	return DatumGetIntervalP(((Const *) folded)->constvalue);
}

typedef struct VarnoContext
{
	int			varno;
	Node	   *replacement;
} VarnoContext;

static bool
uses_varno_walker(Node *node, VarnoContext *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno == ctx->varno &&
			((Var *) node)->varlevelsup == 0;
	return expression_tree_walker(node, uses_varno_walker, (void *) ctx);
}

static Node *
replace_varno_mutator(Node *node, VarnoContext *ctx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == ctx->varno &&
		((Var *) node)->varlevelsup == 0)
		return copyObject(ctx->replacement);
	return expression_tree_mutator(node, replace_varno_mutator, (void *) ctx);
}

static bool
find_distinct_agg_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref) && ((Aggref *) node)->aggdistinct != NIL)
		return true;
	return expression_tree_walker(node, find_distinct_agg_walker, context);
}

static bool
aggref_uses_varno_walker(Node *node, VarnoContext *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
		return uses_varno_walker(node, ctx);
	return expression_tree_walker(node, aggref_uses_varno_walker, (void *) ctx);
}

static void
window_not_supported(const char *what, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s", what),
			 hint ? errhint("%s", hint) : 0));
}

/*
 * FROM stream, stream_ext.hop(ts, size, slide) AS w(window_start): return
 * a copy of q reading the stream alone, with every use of window_start
 * replaced by the pane tumble(ts, gcd(size, slide)), and the window in
 * *window (for cv_analyze()).  Any other query is returned as it is, with
 * *window NULL.
 */
Query *
window_rewrite_hop(Query *q, const char *querytext, CVWindow **window)
{
	RangeTblRef *rel_ref;
	RangeTblRef *fn_ref;
	RangeTblEntry *rte;
	RangeTblFunction *rtfunc;
	FuncExpr   *hop;
	Expr	   *ts;
	Interval   *size;
	Interval   *slide;
	CVWindow   *win;
	VarnoContext ctx;
	Query	   *nq;
	ListCell   *lc;
	bool		grouped = false;

	*window = NULL;
	if (q->jointree == NULL)
		return q;
	if (list_length(q->jointree->fromlist) == 2 &&
		IsA(linitial(q->jointree->fromlist), RangeTblRef) &&
		IsA(lsecond(q->jointree->fromlist), RangeTblRef))
	{
		/* FROM s, stream_ext.hop(...) */
		rel_ref = linitial(q->jointree->fromlist);
		fn_ref = lsecond(q->jointree->fromlist);
	}
	else if (list_length(q->jointree->fromlist) == 1 &&
			 IsA(linitial(q->jointree->fromlist), JoinExpr))
	{
		/* FROM s CROSS JOIN LATERAL stream_ext.hop(...), or JOIN ... ON true */
		JoinExpr   *j = linitial(q->jointree->fromlist);
		Node	   *quals = j->quals ? eval_const_expressions(NULL, j->quals) : NULL;

		if (j->jointype != JOIN_INNER || j->usingClause != NIL || j->isNatural ||
			!IsA(j->larg, RangeTblRef) || !IsA(j->rarg, RangeTblRef) ||
			(quals != NULL && !(IsA(quals, Const) && !((Const *) quals)->constisnull &&
								DatumGetBool(((Const *) quals)->constvalue))))
			return q;
		rel_ref = (RangeTblRef *) j->larg;
		fn_ref = (RangeTblRef *) j->rarg;
	}
	else
		return q;
	if (rel_ref->rtindex != 1 ||
		rt_fetch(rel_ref->rtindex, q->rtable)->rtekind != RTE_RELATION)
		return q;
	rte = rt_fetch(fn_ref->rtindex, q->rtable);
	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1)
		return q;
	rtfunc = linitial(rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr))
		return q;
	hop = (FuncExpr *) rtfunc->funcexpr;
	if (!is_stream_ext_func(hop->funcid, "hop") || list_length(hop->args) != 3)
		return q;

	if (rte->funcordinality)
		window_not_supported("hop() WITH ORDINALITY is not supported in a continuous view", NULL);
	ts = linitial(hop->args);
	size = const_interval(querytext, lsecond(hop->args), "hop() size");
	slide = const_interval(querytext, lthird(hop->args), "hop() slide");

	win = palloc0(sizeof(CVWindow));
	win->kind = CV_WINDOW_HOPPING;
	win->size = *size;
	win->slide = *slide;
	win->size_us = window_usecs(size, "hop() size");
	win->slide_us = window_usecs(slide, "hop() slide");
	check_hop_args(win->size_us, win->slide_us);
	win->pane_us = gcd64(win->size_us, win->slide_us);
	win->pane_expr = make_tumble(copyObject(ts), win->pane_us);

	ctx.varno = fn_ref->rtindex;
	ctx.replacement = (Node *) win->pane_expr;

	if (uses_varno_walker(q->jointree->quals, &ctx))
		window_not_supported("a WHERE condition on the window start of hop() is not supported in a continuous view",
							 "Filter the view when reading it.");
	if (aggref_uses_varno_walker((Node *) q->targetList, &ctx) ||
		aggref_uses_varno_walker(q->havingQual, &ctx))
		window_not_supported("an aggregate of the window start of hop() is not supported in a continuous view", NULL);
	if (find_distinct_agg_walker((Node *) q->targetList, NULL) ||
		find_distinct_agg_walker(q->havingQual, NULL))
		window_not_supported("count(DISTINCT) is not supported over hop() windows",
							 "Use a tumbling window (GROUP BY stream_ext.tumble(ts, size)) for distinct counts.");
	foreach(lc, q->groupClause)
	{
		TargetEntry *tle = get_sortgroupclause_tle(lfirst(lc), q->targetList);

		if (!uses_varno_walker((Node *) tle->expr, &ctx))
			continue;
		if (!IsA(tle->expr, Var))
			window_not_supported("a GROUP BY expression of the window start of hop() is not supported in a continuous view",
								 "Group by the window start itself and compute expressions of it in the select list.");
		grouped = true;
	}
	if (!grouped)
		window_not_supported("a continuous view over hop() must GROUP BY the window start",
							 "Add the column of hop() to GROUP BY, e.g. GROUP BY w.window_start.");

	nq = copyObject(q);
	nq->targetList = (List *) replace_varno_mutator((Node *) nq->targetList, &ctx);
	nq->havingQual = replace_varno_mutator(nq->havingQual, &ctx);
	nq->jointree->fromlist = list_make1(makeNode(RangeTblRef));
	((RangeTblRef *) linitial(nq->jointree->fromlist))->rtindex = rel_ref->rtindex;
	*window = win;
	return nq;
}

/* tumble() calls with constant sizes are checked when the view is created */
static bool
check_tumble_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr) && is_stream_ext_func(((FuncExpr *) node)->funcid, "tumble") &&
		list_length(((FuncExpr *) node)->args) == 2)
	{
		Node	   *size = eval_const_expressions(NULL, lsecond(((FuncExpr *) node)->args));

		if (IsA(size, Const) && !((Const *) size)->constisnull)
			(void) window_usecs(DatumGetIntervalP(((Const *) size)->constvalue),
								"stream_ext.tumble() size");
	}
	return expression_tree_walker(node, check_tumble_walker, context);
}

static Interval *
interval_option(DefElem *def)
{
	char	   *s = defGetString(def);
	MemoryContext cxt = CurrentMemoryContext;
	Interval   *volatile result = NULL;

	/* name the option in the error; nothing to clean up but memory */
	PG_TRY();
	{
		result = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(s),
													   ObjectIdGetDatum(InvalidOid),
													   Int32GetDatum(-1)));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for continuous view option \"%s\": \"%s\"",
						def->defname, s),
				 errdetail("%s", edata->message),
				 errhint("Give an interval such as '5 minutes'.")));
	}
	PG_END_TRY();
	return result;
}

static DefElem *
take_option(DefElem *found, DefElem *def)
{
	if (found != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("continuous view option \"%s\" specified more than once",
						def->defname)));
	return def;
}

/*
 * The window options of WITH (continuous, ...), and checks of tumble()
 * calls.  For sliding_window the step bucket becomes the first key of the
 * materialization (its unique index then serves expiry and reads).
 */
void
window_apply_options(CVPlan *plan, List *options, bool session_window)
{
	DefElem    *sw = NULL;
	DefElem    *tc = NULL;
	DefElem    *st = NULL;
	ListCell   *lc;
	CVWindow   *win;
	const char *colname;
	AttrNumber	attno;
	HeapTuple	atttup;
	Oid			atttype;
	CVKey	   *key;
	Var		   *tsvar;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "sliding_window") == 0)
			sw = take_option(sw, def);
		else if (strcmp(def->defname, "time_column") == 0)
			tc = take_option(tc, def);
		else if (strcmp(def->defname, "step") == 0)
			st = take_option(st, def);
	}

	if (session_window && (sw != NULL || st != NULL))
		window_not_supported("continuous view option \"session_gap\" cannot be combined with \"sliding_window\" or \"step\"", NULL);
	if (session_window && plan->window != NULL)
		window_not_supported("continuous view option \"session_gap\" cannot be combined with hop()", NULL);

	(void) check_tumble_walker((Node *) plan->query->targetList, NULL);
	(void) check_tumble_walker(plan->query->jointree->quals, NULL);
	(void) check_tumble_walker(plan->query->havingQual, NULL);

	if (sw == NULL)
	{
		if (st != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("continuous view option \"step\" needs option \"sliding_window\"")));
		if (tc != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("continuous view option \"time_column\" needs option \"sliding_window\" or \"session_gap\"")));
		if (plan->window != NULL || session_window)
			return;
		/* a tumble() key with a constant size: record a tumbling window */
		foreach(lc, plan->keys)
		{
			CVKey	   *k = lfirst(lc);
			FuncExpr   *f = (FuncExpr *) k->expr;
			Node	   *size;

			if (!IsA(f, FuncExpr) || !is_stream_ext_func(f->funcid, "tumble") ||
				list_length(f->args) != 2)
				continue;
			size = eval_const_expressions(NULL, lsecond(f->args));
			if (!IsA(size, Const) || ((Const *) size)->constisnull)
				continue;
			win = palloc0(sizeof(CVWindow));
			win->kind = CV_WINDOW_TUMBLING;
			win->size = *DatumGetIntervalP(((Const *) size)->constvalue);
			win->slide = win->size;
			win->size_us = win->slide_us = win->pane_us =
				window_usecs(&win->size, "stream_ext.tumble() size");
			win->pane_expr = k->expr;
			plan->window = win;
			break;
		}
		return;
	}

	if (plan->window != NULL && plan->window->kind == CV_WINDOW_HOPPING)
		window_not_supported("continuous view option \"sliding_window\" cannot be combined with hop()", NULL);
	foreach(lc, plan->aggs)
	{
		if (((CVAgg *) lfirst(lc))->is_distinct)
			window_not_supported("count(DISTINCT) is not supported with option \"sliding_window\"", NULL);
	}

	win = palloc0(sizeof(CVWindow));
	win->kind = CV_WINDOW_SLIDING;
	win->size = *interval_option(sw);
	win->size_us = window_usecs(&win->size, "continuous view option \"sliding_window\"");
	if (st != NULL)
	{
		win->slide = *interval_option(st);
		win->slide_us = window_usecs(&win->slide, "continuous view option \"step\"");
		if (win->slide_us > win->size_us)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("continuous view option \"step\" must not be longer than \"sliding_window\""),
					 errdetail("step is \"%s\", sliding_window is \"%s\".",
							   interval_text(&win->slide), interval_text(&win->size))));
	}
	else
	{
		/* default: 1/60 of the window */
		win->slide_us = Max(win->size_us / 60, 1);
		win->slide = *usecs_interval(win->slide_us);
	}
	win->pane_us = win->slide_us;

	colname = tc ? defGetString(tc) : STREAM_ARRIVAL_COLUMN;
	attno = get_attnum(plan->streamid, colname);
	if (attno == InvalidAttrNumber || attno < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of continuous view option \"time_column\" does not exist in stream \"%s\"",
						colname, get_rel_name(plan->streamid))));
	atttup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(plan->streamid), Int16GetDatum(attno));
	if (!HeapTupleIsValid(atttup))
		elog(ERROR, "cache lookup failed for attribute %d of relation %u", attno, plan->streamid);
	atttype = ((Form_pg_attribute) GETSTRUCT(atttup))->atttypid;
	ReleaseSysCache(atttup);
	if (atttype != TIMESTAMPTZOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of continuous view option \"time_column\" must be of type timestamp with time zone",
						colname),
				 errdetail("It is of type %s.", format_type_be(atttype))));
	/* the view shows rows by it: its creator must be able to read it */
	if (pg_attribute_aclcheck(plan->streamid, attno, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_class_aclcheck(plan->streamid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for column \"%s\" of stream \"%s\" (continuous view option \"time_column\")",
						colname, get_rel_name(plan->streamid))));
	win->time_column = pstrdup(colname);

	tsvar = makeVar(1, attno, TIMESTAMPTZOID, -1, InvalidOid, 0);
	win->pane_expr = make_tumble((Expr *) tsvar, win->pane_us);
	win->user_keyless = plan->keyless;

	key = palloc0(sizeof(CVKey));
	key->expr = win->pane_expr;
	key->colname = BUCKET_COLUMN;
	key->type = TIMESTAMPTZOID;
	key->typmod = -1;
	key->collation = InvalidOid;
	plan->keys = lcons(key, plan->keys);
	plan->keyless = false;
	plan->window = win;
	cv_name_columns(plan);
}

/* ---- the user-facing view ---------------------------------------------- */

static bool
is_pane_key(CVPlan *plan, CVKey *key)
{
	return plan->window != NULL && equal(key->expr, plan->window->pane_expr);
}

/*
 * The agg's initial state, as an SQL literal of its stored type, or NULL if
 * it has none: what a keyless sliding view shows when no bucket is live
 * (count() is 0 there, as in the plain query).
 */
static char *
initial_state_literal(CVAgg *agg)
{
	HeapTuple	tup;
	Datum		val;
	bool		isnull;
	char	   *result = NULL;

	if (agg->storage.serialized)
		return NULL;
	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(agg->aggref->aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", agg->aggref->aggfnoid);
	val = SysCacheGetAttr(AGGFNOID, tup, Anum_pg_aggregate_agginitval, &isnull);
	if (!isnull)
		result = psprintf("%s::%s", quote_literal_cstr(TextDatumGetCString(val)),
						  format_type_extended(agg->storage.statetype, -1,
											   FORMAT_TYPE_FORCE_QUALIFY));
	ReleaseSysCache(tup);
	return result;
}

/*
 * Hopping and sliding views read, instead of the materialization, a
 * subquery of the same column names with each window's panes merged;
 * cv_view_select_sql() then builds the select list over it as usual.
 */
char *
window_view_select_sql(CVPlan *plan, Oid matrelid, const char *matrel,
					   const char *delta)
{
	CVWindow   *win = plan->window;
	StringInfoData buf;
	ListCell   *lc;
	bool		first = true;
	int			ngroup = 0;
	char	   *panecol = NULL;

	if (win == NULL || (win->kind != CV_WINDOW_HOPPING && win->kind != CV_WINDOW_SLIDING))
		return cv_view_select_sql(plan, matrelid,
								  delta ? cv_merged_source_sql(plan, matrel, delta) : matrel);
	/* panes are merged per window anyway: the delta's rows are more panes */
	if (delta)
		matrel = cv_union_source_sql(plan, matrel, delta);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "(SELECT ");
	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);
		const char *col = quote_identifier(key->colname);

		if (win->open_from_column && strcmp(key->colname, win->open_from_column) == 0)
			continue;			/* applied below: not a key of the view */
		if (is_pane_key(plan, key))
		{
			panecol = pstrdup(col);
			if (win->kind == CV_WINDOW_SLIDING)
				continue;
			appendStringInfo(&buf, "%sw.window_start AS %s", first ? "" : ", ", col);
		}
		else
			appendStringInfo(&buf, "%sm.%s", first ? "" : ", ", col);
		first = false;
		ngroup++;
	}
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		const char *col = quote_identifier(agg->colname);
		char	   *merged;
		char	   *init;

		Assert(!agg->is_distinct);
		merged = psprintf("stream_ext.merge_states(m.%s, %s::pg_catalog.regprocedure)", col,
						  quote_literal_cstr(format_procedure_qualified(agg->aggref->aggfnoid)));
		if (win->user_keyless && (init = initial_state_literal(agg)) != NULL)
			merged = psprintf("COALESCE(%s, %s)", merged, init);
		appendStringInfo(&buf, "%s%s AS %s", first ? "" : ", ", merged, col);
		first = false;
	}
	if (first)
		appendStringInfoString(&buf, "NULL");	/* keys only, keyless: not reached */
	appendStringInfo(&buf, " FROM %s m", matrel);
	Assert(panecol != NULL);
	if (win->kind == CV_WINDOW_HOPPING)
	{
		appendStringInfo(&buf, " CROSS JOIN LATERAL stream_ext.hop(m.%s, %s, %s) AS w(window_start)",
						 panecol, usecs_literal(win->size_us), usecs_literal(win->slide_us));
		/* rows that arrived after some of their windows closed: the others */
		if (win->open_from_column)
			appendStringInfo(&buf, " WHERE w.window_start OPERATOR(pg_catalog.>=) m.%s",
							 quote_identifier(win->open_from_column));
	}
	else
		appendStringInfo(&buf, " WHERE m.%s OPERATOR(pg_catalog.>=) (pg_catalog.now() OPERATOR(pg_catalog.-) %s)",
						 panecol, usecs_literal(win->size_us));
	if (ngroup > 0)
	{
		appendStringInfoString(&buf, " GROUP BY ");
		for (int i = 1; i <= ngroup; i++)
			appendStringInfo(&buf, "%s%d", i > 1 ? ", " : "", i);
	}
	appendStringInfoChar(&buf, ')');
	return cv_view_select_sql(plan, matrelid, buf.data);
}

/*
 * Descriptions of the window's columns for psql's \d+ (after
 * ddl/create_view.c's own comments, which these replace): the window start
 * of a hopping view, and the aggregates of a sliding one.  query is the view's query as written.
 */
List *
window_comment_sql(CVPlan *plan, Query *query, const char *vq)
{
	CVWindow   *win = plan->window;
	List	   *result = NIL;
	List	   *context;
	ListCell   *lc;
	ListCell   *nc = list_head(plan->colnames);

	if (win == NULL || (win->kind != CV_WINDOW_HOPPING && win->kind != CV_WINDOW_SLIDING))
		return NIL;
	/*
	 * Intervals read the same whatever the creator's settings: the caller,
	 * ddl_create_view(), pinned them (se_pin_settings()).
	 */
	context = deparse_context_for(get_rel_name(plan->streamid), plan->streamid);
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		const char *colname;
		char	   *comment = NULL;

		if (tle->resjunk)
			continue;
		colname = strVal(lfirst(nc));
		nc = lnext(plan->colnames, nc);
		if (win->kind == CV_WINDOW_HOPPING && IsA(tle->expr, Var) &&
			((Var *) tle->expr)->varno != 1)
			comment = psprintf("hopping window start: windows of %s every %s, kept as panes of %s",
							   interval_text(usecs_interval(win->size_us)),
							   interval_text(usecs_interval(win->slide_us)),
							   interval_text(usecs_interval(win->pane_us)));
		else if (win->kind == CV_WINDOW_SLIDING && contain_agg_clause((Node *) tle->expr))
			comment = psprintf("%s over rows whose %s is in the last %s (sliding window, step %s), maintained incrementally",
							   deparse_expression((Node *) tle->expr, context, false, false),
							   win->time_column,
							   interval_text(usecs_interval(win->size_us)),
							   interval_text(usecs_interval(win->slide_us)));
		if (comment)
			result = lappend(result, psprintf("COMMENT ON COLUMN %s.%s IS %s", vq,
											  quote_identifier(colname),
											  quote_literal_cstr(comment)));
	}
	return result;
}

/* ---- catalog and expiry ------------------------------------------------ */

static const char *
kind_name(CVWindowKind kind)
{
	switch (kind)
	{
		case CV_WINDOW_TUMBLING:
			return "tumbling";
		case CV_WINDOW_HOPPING:
			return "hopping";
		case CV_WINDOW_SLIDING:
			return "sliding";
		default:
			return NULL;
	}
}

/*
 * Buckets that no reader needs any more: older than sliding_window plus
 * one step, so that a reading transaction whose now() is up to a step
 * older than the expiring one still sees all of its buckets; and the
 * bucket of rows whose time is NULL, which no read ever shows.  Rows locked
 * by concurrent maintenance are skipped (taken next time), so expiry never
 * waits for writers.
 */
static char *
expire_sql(CVPlan *plan, const char *matrel, const char *delta)
{
	CVWindow   *win = plan->window;
	CVKey	   *bucket = linitial(plan->keys);
	const char *col = quote_identifier(bucket->colname);
	char	   *expired = psprintf("%s IS NULL OR %s OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) %s)",
								   col, col, usecs_literal(win->size_us + win->slide_us));
	char	   *del = psprintf("DELETE FROM %s WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
							   "SELECT ctid FROM %s WHERE %s ORDER BY %s FOR UPDATE SKIP LOCKED))",
							   matrel, matrel, expired, col);

	StringInfoData keys;

	Assert(is_pane_key(plan, bucket));
	if (delta == NULL)
		return psprintf("/* stream_ext expiry */ %s", del);
	/*
	 * and the expired buckets' rows of the delta, in the same statement;
	 * counted as the groups gone from either (window_run_expiry())
	 */
	initStringInfo(&keys);
	append_key_columns(&keys, plan, "");
	return psprintf("/* stream_ext expiry */ WITH d AS (DELETE FROM %s WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
					"SELECT ctid FROM %s WHERE %s FOR UPDATE SKIP LOCKED)) RETURNING %s),"
					" m AS (%s RETURNING %s)"
					" SELECT pg_catalog.count(*) FROM (SELECT %s FROM d UNION SELECT %s FROM m) g",
					delta, delta, expired, keys.data, del, keys.data, keys.data, keys.data);
}

/*
 * Run a view's expiry statement (expire_sql above); the number of buckets
 * (groups) it deleted.
 */
int64
window_run_expiry(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);
	bool		isnull;

	if (rc == SPI_OK_DELETE)
		return (int64) SPI_processed;
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "stream_ext: window expiry failed: %s", SPI_result_code_string(rc));
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

void
window_record(CVPlan *plan, Oid viewid, Oid matrelid, const char *delta)
{
	CVWindow   *win = plan->window;
	char	   *matrel;
	char	   *column = NULL;
	ListCell   *lc;

	if (win == NULL)
		return;
	matrel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(matrelid)),
										get_rel_name(matrelid));
	foreach(lc, plan->keys)
	{
		if (is_pane_key(plan, lfirst(lc)))
			column = ((CVKey *) lfirst(lc))->colname;
	}
	catalog_set_window(viewid, kind_name(win->kind),
					   interval_text(&win->size), interval_text(&win->slide),
					   interval_text(usecs_interval(win->pane_us)),
					   win->time_column, column,
					   win->kind == CV_WINDOW_SLIDING ? expire_sql(plan, matrel, delta) : NULL);
}

void
window_expire_opportunistic(ViewCatalogEntry *cat, TimestampTz *next_expiry)
{
	TimestampTz now;

	if (cat->expire_sql == NULL)
		return;
	now = GetCurrentTimestamp();
	if (now < *next_expiry)
		return;
	(void) window_run_expiry(cat->expire_sql);
	*next_expiry = now + Max(cat->expire_every_us, 1);
}

/*
 * stream_ext.expire_sliding(view regclass DEFAULT NULL) RETURNS bigint
 *
 * Deletes the expired buckets of a sliding-window view, or of every one
 * the caller owns when view is NULL (a superuser owns them all); returns
 * the number of buckets deleted.  Runs as the view's owner.
 */
Datum
stream_ext_expire_sliding(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	List	   *views = NIL;
	ListCell   *lc;
	int64		total = 0;

	/* the sliding windows: those with an expiry statement */
	foreach(lc, catalog_housekeeping_views(viewid))
	{
		HousekeepingView *view = lfirst(lc);

		if (view->expire_sql != NULL)
			views = lappend(views, view);
	}
	if (OidIsValid(viewid) && views == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view with a sliding window",
						get_rel_name(viewid) ? get_rel_name(viewid) : "?")));

	SPI_connect();
	foreach(lc, views)
	{
		HousekeepingView *view = lfirst(lc);
		SeRunAs		octx;

		if (!has_privs_of_role(GetUserId(), view->owner))
		{
			if (OidIsValid(viewid))
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("must be owner of view %s", get_rel_name(view->viewid))));
			continue;
		}
		se_run_as_owner(&octx, view->owner, NULL);
		se_materialize_begin();
		PG_TRY();
		{
			total += window_run_expiry(view->expire_sql);
		}
		PG_FINALLY();
		{
			se_materialize_end();
		}
		PG_END_TRY();
		se_restore(&octx);
	}
	SPI_finish();
	PG_RETURN_INT64(total);
}
