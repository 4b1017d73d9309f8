/*-------------------------------------------------------------------------
 *
 * fast_batch.c
 *	  A batch's partial aggregation and its append to the delta without
 *	  the executor (stream_ext.fast_batches).
 *
 *	  A continuous view's maintenance statement (query/analyze.c) is
 *	  INSERT INTO delta SELECT keys, stream_ext.partial(agg(...)), ...
 *	  FROM stream_ext_new GROUP BY keys.  Running it costs an executor
 *	  start-up per batch, which dominates a single-row INSERT.  This file
 *	  runs the very plan SPI would run (the kept plan's generic plan, got
 *	  from the plan cache at every batch, so it is replanned and
 *	  revalidated as before) by hand, when it has the simple shape
 *
 *	    ModifyTable (INSERT into one plain table, no RETURNING/ON CONFLICT)
 *	      [Subquery Scan: the delta's columns in its order]
 *	        Agg (hashed, sorted or plain; partial or without aggregates)
 *	          [Sort]
 *	            Named Tuplestore Scan (qual: the view's WHERE)
 *
 *	  with expressions over the stream's columns made of built-in,
 *	  non-volatile functions (and stream_ext.key_hash()), aggregates built
 *	  in with a transition state that is neither "internal" nor
 *	  polymorphic (count, sum/avg of int2/int4/float, min/max, ...; no
 *	  DISTINCT or ORDER BY inside), and a delta without triggers (but
 *	  stream_ext's guard), row security or generated columns.  The plan's
 *	  expressions (the scan's target list and qual, the aggregates'
 *	  arguments and FILTERs, expressions of the keys in the delta row) are
 *	  compiled once into ExprStates, and recompiled when the plan cache
 *	  hands out another plan.  Per batch: the range table's privileges
 *	  are checked as the executor does (ExecCheckRTPerms, as the owner),
 *	  the rows are read from the transition table, grouped in a hash table
 *	  with the grouping operators' hash and equality functions, and each
 *	  aggregate's transition function is called as nodeAgg.c calls it (a
 *	  strict one skips NULL inputs, and without an initial value takes the
 *	  first input as its state; one state per transition the planner
 *	  shares); the states are the columns of the delta rows, checked by
 *	  ExecConstraints() when the delta has NOT NULL or CHECK constraints,
 *	  inserted with heap_multi_insert() and their index entries with
 *	  ExecInsertIndexTuples().  Anything else runs the statement with SPI.
 *	  Under the lock guard (lock_guard.c) the rows are computed and
 *	  checked in its subtransaction and written after it, so that it takes
 *	  no subtransaction id (fast_batch_defer_begin()).  See
 *	  docs/internals.md, "Batches without the executor".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/clauses.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "maintain/fast_batch.h"

bool		stream_ext_fast_batches = true;

/* batches run here in this backend, for tests: stream_ext.fast_batches_run() */
static int64 fast_batches_run = 0;

PG_FUNCTION_INFO_V1(stream_ext_fast_batches_run);

/* one aggregate of the statement */
typedef struct FbAgg
{
	int			transno;		/* the planner's aggtransno */
	FmgrInfo	transfn;
	Oid			collation;
	int			nargs;
	ExprState **args;			/* over the scan's projected row */
	ExprState  *filter;			/* FILTER (WHERE ...), or NULL */
	bool		init_isnull;
	Datum		init_value;
	int16		translen;
	bool		transbyval;
} FbAgg;

/* a column of the delta row: a key, an aggregate's state or a constant */
typedef struct FbColumn
{
	int			key;			/* >= 0: grouping column number */
	int			agg;			/* >= 0: aggregate number */
	ExprState  *expr;			/* else an expression of the keys, or */
	Datum		value;			/* else this constant */
	bool		isnull;
} FbColumn;

/* a group of the batch */
typedef struct FbGroup
{
	uint32		hash;
	struct FbGroup *next;		/* in the order groups were found */
	Datum	   *keys;
	bool	   *keynulls;
	Datum	   *states;
	bool	   *statenulls;
	bool	   *notrans;
} FbGroup;

struct FastBatch
{
	MemoryContext cxt;			/* this struct and what it compiled */
	SPIPlanPtr	plan;			/* of this SPI plan ... */
	CachedPlan *cplan;			/* ... and this generic plan of it */
	int			generation;
	bool		eligible;
	const char *why;			/* why not, for DEBUG */
	char	   *query;			/* the statement, for errors' CONTEXT */

	Oid			deltaid;
	Index		deltarti;		/* its range table index */
	List	   *rtable;			/* for ExecCheckRTPerms() */
	ExprContext *econtext;
	TupleTableSlot *inslot;		/* a row of the batch */
	ExprState  *qual;
	ProjectionInfo *proj;		/* the scan's target list */
	TupleTableSlot *projslot;

	int			nkeys;
	AttrNumber *keycols;		/* in projslot */
	FmgrInfo   *eqfns;
	FmgrInfo   *hashfns;
	Oid		   *keycolls;
	int16	   *keylens;
	bool	   *keybyvals;

	int			naggs;
	FbAgg	   *aggs;

	int			ncols;
	FbColumn   *cols;
	TupleDesc	deltadesc;
	bool		constraints;	/* NOT NULL or CHECK: ExecConstraints() */
	bool		has_exprs;		/* some column is an expression of keys */
	TupleTableSlot **outslots;	/* delta rows, FB_MULTI at most, made as needed */
	int			noutslots;
	TupleTableSlot *keyslot;	/* a group's keys, for the expressions */

	MemoryContext batchcxt;		/* reset per batch */

	/*
	 * A write of this batch's rows put off past the lock guard's
	 * subtransaction (fast_batch_defer_begin()) writes them with outslots;
	 * should this struct be freed first, forget unlinks it (fb_forget()).
	 */
	struct FbWrite *pending;
	MemoryContextCallback forget;

	/*
	 * What the transition functions are called with as context: an
	 * AggState whose aggregate memory is batchcxt, where the states are,
	 * so that AggCheckCallContext() is true and the functions that can
	 * (int4_avg_accum(), float8_accum()) update their state in place as
	 * under nodeAgg.c, instead of copying it at every row.
	 */
	AggState   *aggstate;
	ExprContext *aggcontext;
};

/* ---- is the plan simple enough? ----------------------------------------- */

/* check_functions_in_node(): a user's function, or a volatile one */
static bool
fb_func_bad(Oid funcid, void *context)
{
	if (funcid >= FirstGenbkiObjectId)
	{
		/* stream_ext's own key_hash() of shared and hash-indexed deltas */
		char	   *name = get_func_name(funcid);
		Oid			nsp = get_namespace_oid("stream_ext", true);

		return !(OidIsValid(nsp) && get_func_namespace(funcid) == nsp &&
				 name != NULL && strcmp(name, "key_hash") == 0 &&
				 func_volatile(funcid) == PROVOLATILE_IMMUTABLE);
	}
	return func_volatile(funcid) == PROVOLATILE_VOLATILE;
}

/* node types the expressions may have; Vars of level 0 and real columns */
static bool
fb_expr_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_Var:
			if (((Var *) node)->varlevelsup != 0 || ((Var *) node)->varattno <= 0)
				return true;
			return false;
		case T_Const:
		case T_CaseTestExpr:
			return false;
		case T_FuncExpr:
			if (((FuncExpr *) node)->funcretset)
				return true;
			break;
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			if (((OpExpr *) node)->opretset)
				return true;
			break;
		case T_ScalarArrayOpExpr:
		case T_BoolExpr:
		case T_RelabelType:
		case T_CoerceViaIO:
		case T_NullTest:
		case T_BooleanTest:
		case T_CaseExpr:
		case T_CaseWhen:
		case T_CoalesceExpr:
		case T_MinMaxExpr:
		case T_TargetEntry:
		case T_List:
			break;
		default:
			elog(DEBUG2, "stream_ext: fast batch: node %d", (int) nodeTag(node));
			return true;
	}
	if (check_functions_in_node(node, fb_func_bad, NULL))
	{
		elog(DEBUG2, "stream_ext: fast batch: function of node %d", (int) nodeTag(node));
		return true;
	}
	return expression_tree_walker(node, fb_expr_walker, context);
}

static bool
fb_expr_ok(Node *node)
{
	return !fb_expr_walker(node, NULL);
}

/* only stream_ext's own guard trigger (a no-op in maintenance) */
static bool
fb_triggers_ok(Relation rel)
{
	TriggerDesc *td = rel->trigdesc;
	Oid			nsp;

	if (td == NULL)
		return true;
	nsp = get_namespace_oid("stream_ext", true);
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];
		char	   *name;

		if (!TRIGGER_FOR_BEFORE(t->tgtype) || TRIGGER_FOR_ROW(t->tgtype) ||
			get_func_namespace(t->tgfoid) != nsp)
			return false;
		name = get_func_name(t->tgfoid);
		if (name == NULL || strcmp(name, "guard_materialization") != 0)
			return false;
	}
	return true;
}

/* delta rows written with one heap_multi_insert() */
#define FB_MULTI 1000

#define FB_NOT(reason) do { fb->why = (reason); return; } while (0)

/* compile an aggregate of the plan, or set fb->why */
static bool
fb_compile_agg(FastBatch *fb, Aggref *aggref, FbAgg *agg)
{
	HeapTuple	tup;
	Form_pg_aggregate aggform;
	Datum		textInitVal;
	bool		initnull;
	Oid			transtype;
	ListCell   *lc;
	int			i;

	if (aggref->aggsplit != AGGSPLIT_INITIAL_SERIAL ||
		aggref->aggdistinct != NIL || aggref->aggorder != NIL ||
		aggref->aggdirectargs != NIL || aggref->aggkind != AGGKIND_NORMAL ||
		aggref->agglevelsup != 0 || aggref->aggfnoid >= FirstGenbkiObjectId)
	{
		fb->why = "an aggregate with DISTINCT, ORDER BY, or not built in";
		return false;
	}
	if (!fb_expr_ok((Node *) aggref->args) || !fb_expr_ok((Node *) aggref->aggfilter))
	{
		fb->why = "an aggregate's argument is not a simple expression";
		return false;
	}
	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggref->aggfnoid);
	aggform = (Form_pg_aggregate) GETSTRUCT(tup);
	transtype = aggform->aggtranstype;
	if (transtype == INTERNALOID || get_typtype(transtype) == TYPTYPE_PSEUDO ||
		aggref->aggtranstype != transtype ||
		aggform->aggtransfn >= FirstGenbkiObjectId ||
		aggref->aggtype != transtype)
	{
		ReleaseSysCache(tup);
		fb->why = "an aggregate with an internal or polymorphic state";
		return false;
	}
	foreach(lc, aggref->aggargtypes)
	{
		if (get_typtype(lfirst_oid(lc)) == TYPTYPE_PSEUDO)
		{
			ReleaseSysCache(tup);
			fb->why = "an aggregate of a polymorphic argument";
			return false;
		}
	}
	fmgr_info_cxt(aggform->aggtransfn, &agg->transfn, fb->cxt);
	textInitVal = SysCacheGetAttr(AGGFNOID, tup, Anum_pg_aggregate_agginitval,
								  &initnull);
	get_typlenbyval(transtype, &agg->translen, &agg->transbyval);
	agg->init_isnull = initnull;
	if (!initnull)
	{
		Oid			typinput;
		Oid			typioparam;
		char	   *str = TextDatumGetCString(textInitVal);

		getTypeInputInfo(transtype, &typinput, &typioparam);
		agg->init_value = OidInputFunctionCall(typinput, str, typioparam, -1);
	}
	ReleaseSysCache(tup);
	agg->collation = aggref->inputcollid;
	agg->nargs = list_length(aggref->args);
	agg->args = palloc0(sizeof(ExprState *) * Max(agg->nargs, 1));
	i = 0;
	foreach(lc, aggref->args)
		agg->args[i++] = ExecInitExpr(((TargetEntry *) lfirst(lc))->expr, NULL);
	agg->filter = aggref->aggfilter ? ExecInitExpr(aggref->aggfilter, NULL) : NULL;
	return true;
}

static void
fb_compile(FastBatch *fb, CachedPlan *cplan, TriggerData *trigdata)
{
	PlannedStmt *stmt;
	ModifyTable *mt;
	Plan	   *top;
	SubqueryScan *sqs = NULL;
	Agg		   *agg;
	Plan	   *child;
	NamedTuplestoreScan *scan;
	Relation	delta;
	RangeTblEntry *rte;
	List	   *outlist = NIL;
	ListCell   *lc;
	TupleDesc	streamdesc;
	TupleDesc	projdesc;

	if (list_length(cplan->stmt_list) != 1)
		FB_NOT("not one statement");
	stmt = copyObject(linitial_node(PlannedStmt, cplan->stmt_list));
	if (stmt->commandType != CMD_INSERT || stmt->hasModifyingCTE ||
		!IsA(stmt->planTree, ModifyTable))
		FB_NOT("not a plain INSERT");
	/* (paramExecTypes has ModifyTable's epqParam; no expression has a Param) */
	if (stmt->subplans != NIL)
		FB_NOT("subplans");
	mt = (ModifyTable *) stmt->planTree;
	if (mt->operation != CMD_INSERT || list_length(mt->resultRelations) != 1 ||
		mt->returningLists != NIL || mt->onConflictAction != ONCONFLICT_NONE ||
		mt->withCheckOptionLists != NIL || mt->rootRelation != 0 ||
		mt->plan.initPlan != NIL || mt->plan.lefttree == NULL)
		FB_NOT("not a plain INSERT");
	top = mt->plan.lefttree;
	if (IsA(top, SubqueryScan))
	{
		/* the subquery's columns in the delta's order (and constants) */
		sqs = (SubqueryScan *) top;
		if (sqs->scan.plan.qual != NIL || sqs->scan.plan.initPlan != NIL)
			FB_NOT("a subquery with a filter");
		top = sqs->subplan;
	}
	if (!IsA(top, Agg))
		FB_NOT("not an INSERT of an aggregation");
	agg = (Agg *) top;
	/* GROUP BY () is one group, as no GROUP BY */
	if (agg->groupingSets != NIL &&
		!(agg->numCols == 0 && list_length(agg->groupingSets) == 1 &&
		  linitial(agg->groupingSets) == NIL))
		FB_NOT("grouping sets");
	/* (each Aggref is checked to be partial below) */
	if ((agg->aggstrategy != AGG_HASHED && agg->aggstrategy != AGG_SORTED &&
		 agg->aggstrategy != AGG_PLAIN) ||
		(agg->aggsplit != AGGSPLIT_INITIAL_SERIAL && agg->aggsplit != AGGSPLIT_SIMPLE) ||
		agg->chain != NIL || agg->plan.qual != NIL || agg->plan.initPlan != NIL)
		FB_NOT("not a plain partial aggregation");
	child = agg->plan.lefttree;
	if (child && IsA(child, Sort))
	{
		int			i = 1;

		/* a Sort passes its input's columns on, in order */
		foreach(lc, child->targetlist)
		{
			Var		   *var = (Var *) ((TargetEntry *) lfirst(lc))->expr;

			if (!IsA(var, Var) || var->varno != OUTER_VAR || var->varattno != i++)
				FB_NOT("a sort that projects");
		}
		if (list_length(child->targetlist) != list_length(child->lefttree->targetlist))
			FB_NOT("a sort that projects");
		child = child->lefttree;
	}
	if (child == NULL || !IsA(child, NamedTuplestoreScan) || child->initPlan != NIL)
		FB_NOT("not over the batch's rows");
	scan = (NamedTuplestoreScan *) child;
	if (!fb_expr_ok((Node *) scan->scan.plan.targetlist) ||
		!fb_expr_ok((Node *) scan->scan.plan.qual))
		FB_NOT("keys or WHERE not simple expressions");

	rte = rt_fetch(linitial_int(mt->resultRelations), stmt->rtable);
	if (rte->rtekind != RTE_RELATION)
		FB_NOT("not a table");
	fb->deltaid = rte->relid;
	fb->deltarti = linitial_int(mt->resultRelations);
	delta = table_open(fb->deltaid, AccessShareLock);
	if (delta->rd_rel->relkind != RELKIND_RELATION ||
		delta->rd_rel->relrowsecurity ||
		(delta->rd_att->constr && delta->rd_att->constr->has_generated_stored) ||
		!fb_triggers_ok(delta))
	{
		table_close(delta, AccessShareLock);
		FB_NOT("a delta with triggers, row security or generated columns");
	}
	fb->constraints = delta->rd_att->constr != NULL &&
		(delta->rd_att->constr->has_not_null || delta->rd_att->constr->num_check > 0);
	fb->deltadesc = CreateTupleDescCopy(RelationGetDescr(delta));
	table_close(delta, AccessShareLock);
	fb->rtable = stmt->rtable;

	/* the scan: the batch's rows, WHERE, then the keys and arguments */
	streamdesc = CreateTupleDescCopy(RelationGetDescr(trigdata->tg_relation));
	fb->econtext = CreateStandaloneExprContext();
	fb->inslot = MakeSingleTupleTableSlot(streamdesc, &TTSOpsMinimalTuple);
	fb->qual = ExecInitQual(scan->scan.plan.qual, NULL);
	projdesc = ExecTypeFromTL(scan->scan.plan.targetlist);
	fb->projslot = MakeSingleTupleTableSlot(projdesc, &TTSOpsVirtual);
	fb->proj = ExecBuildProjectionInfo(scan->scan.plan.targetlist, fb->econtext,
									   fb->projslot, NULL, streamdesc);

	/* grouping: the hash and equality functions of the grouping operators */
	fb->nkeys = agg->numCols;
	fb->keycols = agg->grpColIdx;
	fb->eqfns = palloc0(sizeof(FmgrInfo) * Max(fb->nkeys, 1));
	fb->hashfns = palloc0(sizeof(FmgrInfo) * Max(fb->nkeys, 1));
	fb->keycolls = agg->grpCollations;
	fb->keylens = palloc0(sizeof(int16) * Max(fb->nkeys, 1));
	fb->keybyvals = palloc0(sizeof(bool) * Max(fb->nkeys, 1));
	for (int i = 0; i < fb->nkeys; i++)
	{
		Oid			lhs;
		Oid			rhs;
		Form_pg_attribute att = TupleDescAttr(projdesc, fb->keycols[i] - 1);

		if (!get_op_hash_functions(agg->grpOperators[i], &lhs, &rhs) || lhs != rhs)
			FB_NOT("a key that cannot be hashed");
		fmgr_info_cxt(get_opcode(agg->grpOperators[i]), &fb->eqfns[i], fb->cxt);
		fmgr_info_cxt(lhs, &fb->hashfns[i], fb->cxt);
		fb->keylens[i] = att->attlen;
		fb->keybyvals[i] = att->attbyval;
	}

	/* the delta row: keys, aggregates' states and constants */
	foreach(lc, sqs ? sqs->scan.plan.targetlist : agg->plan.targetlist)
	{
		TargetEntry *tle = lfirst(lc);
		Expr	   *expr = tle->expr;

		if (tle->resjunk)
			continue;
		if (sqs && IsA(expr, Var))
		{
			Var		   *var = (Var *) expr;

			if (var->varno != sqs->scan.scanrelid || var->varattno <= 0 ||
				var->varattno > list_length(agg->plan.targetlist))
				FB_NOT("a subquery column that is no column of the aggregation");
			expr = ((TargetEntry *) list_nth(agg->plan.targetlist, var->varattno - 1))->expr;
		}
		else if (sqs && !IsA(expr, Const))
			FB_NOT("a subquery that computes");
		outlist = lappend(outlist, expr);
	}
	if (list_length(outlist) != fb->deltadesc->natts)
		FB_NOT("not a row of the delta");
	fb->ncols = list_length(outlist);
	fb->cols = palloc0(sizeof(FbColumn) * Max(fb->ncols, 1));
	fb->aggs = palloc0(sizeof(FbAgg) * Max(fb->ncols, 1));
	foreach(lc, outlist)
	{
		Node	   *expr = lfirst(lc);
		int			c = foreach_current_index(lc);
		FbColumn   *col = &fb->cols[c];
		Form_pg_attribute att = TupleDescAttr(fb->deltadesc, c);

		col->key = col->agg = -1;
		if (exprType(expr) != att->atttypid && !att->attisdropped)
			FB_NOT("a column of another type");
		if (IsA(expr, Var) && ((Var *) expr)->varno == OUTER_VAR)
		{
			for (int k = 0; k < fb->nkeys; k++)
				if (fb->keycols[k] == ((Var *) expr)->varattno)
					col->key = k;
			if (col->key < 0)
				FB_NOT("a column that is no key");
		}
		else if (IsA(expr, Aggref))
		{
			Aggref	   *aggref = (Aggref *) expr;

			/*
			 * The planner's aggtransno: aggregates with one transition
			 * (views of a shared storage with the same count(*)) have one
			 * state, as in nodeAgg.c, and output it (partial, not internal)
			 */
			for (int a = 0; a < fb->naggs && aggref->aggtransno >= 0; a++)
				if (fb->aggs[a].transno == aggref->aggtransno)
					col->agg = a;
			if (col->agg >= 0)
				continue;
			col->agg = fb->naggs;
			if (!fb_compile_agg(fb, aggref, &fb->aggs[fb->naggs]))
				return;
			fb->aggs[fb->naggs].transno = aggref->aggtransno;
			fb->naggs++;
		}
		else if (IsA(expr, Const))
		{
			col->value = ((Const *) expr)->constvalue;
			col->isnull = ((Const *) expr)->constisnull;
		}
		else
		{
			/* an expression of the keys alone (stream_ext.key_hash()) */
			List	   *vars = pull_var_clause(expr, 0);
			ListCell   *lv;

			if (!fb_expr_ok(expr) || contain_agg_clause(expr))
				FB_NOT("a column that is neither key, aggregate nor constant");
			foreach(lv, vars)
			{
				Var		   *var = lfirst(lv);
				bool		found = false;

				for (int k = 0; k < fb->nkeys; k++)
					found |= (var->varno == OUTER_VAR && fb->keycols[k] == var->varattno);
				if (!found)
					FB_NOT("a column computed from other than keys");
			}
			col->expr = ExecInitExpr((Expr *) expr, NULL);
			fb->has_exprs = true;
		}
	}
	fb->keyslot = MakeSingleTupleTableSlot(projdesc, &TTSOpsVirtual);
	fb->outslots = palloc0(sizeof(TupleTableSlot *) * FB_MULTI);
	fb->batchcxt = AllocSetContextCreate(fb->cxt, "stream_ext fast batch",
										 ALLOCSET_DEFAULT_SIZES);
	fb->aggcontext = makeNode(ExprContext);
	fb->aggcontext->ecxt_per_tuple_memory = fb->batchcxt;
	fb->aggcontext->ecxt_per_query_memory = fb->batchcxt;
	fb->aggstate = makeNode(AggState);
	fb->aggstate->curaggcontext = fb->aggcontext;
	fb->aggstate->tmpcontext = fb->econtext;
	fb->eligible = true;
}

/* ---- running a batch ---------------------------------------------------- */

static inline uint32
fb_hash(FastBatch *fb, Datum *values, bool *nulls)
{
	uint32		hash = 0;

	for (int i = 0; i < fb->nkeys; i++)
	{
		hash = pg_rotate_left32(hash, 1);
		if (!nulls[i])
			hash ^= DatumGetUInt32(FunctionCall1Coll(&fb->hashfns[i], fb->keycolls[i],
													 values[i]));
	}
	return hash;
}

static inline bool
fb_equal(FastBatch *fb, FbGroup *g, Datum *values, bool *nulls)
{
	for (int i = 0; i < fb->nkeys; i++)
	{
		if (g->keynulls[i] != nulls[i])
			return false;
		if (!nulls[i] &&
			!DatumGetBool(FunctionCall2Coll(&fb->eqfns[i], fb->keycolls[i],
											g->keys[i], values[i])))
			return false;
	}
	return true;
}

static FbGroup *
fb_new_group(FastBatch *fb, uint32 hash, Datum *values, bool *nulls)
{
	FbGroup    *g = palloc(sizeof(FbGroup));

	g->hash = hash;
	g->next = NULL;
	g->keys = palloc(sizeof(Datum) * Max(fb->nkeys, 1));
	g->keynulls = palloc(sizeof(bool) * Max(fb->nkeys, 1));
	for (int i = 0; i < fb->nkeys; i++)
	{
		g->keynulls[i] = nulls[i];
		g->keys[i] = nulls[i] ? (Datum) 0 :
			datumCopy(values[i], fb->keybyvals[i], fb->keylens[i]);
	}
	g->states = palloc(sizeof(Datum) * Max(fb->naggs, 1));
	g->statenulls = palloc(sizeof(bool) * Max(fb->naggs, 1));
	g->notrans = palloc(sizeof(bool) * Max(fb->naggs, 1));
	for (int a = 0; a < fb->naggs; a++)
	{
		FbAgg	   *agg = &fb->aggs[a];

		/* nodeAgg.c's initialize_aggregate() */
		g->statenulls[a] = agg->init_isnull;
		g->notrans[a] = agg->init_isnull;
		g->states[a] = agg->init_isnull ? (Datum) 0 :
			datumCopy(agg->init_value, agg->transbyval, agg->translen);
	}
	return g;
}

/* nodeAgg.c's advance_transition_function(), in the group's memory */
static inline void
fb_advance(FastBatch *fb, FbAgg *agg, FbGroup *g, int a, ExprContext *econtext)
{
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	Datum		newval;

	if (agg->filter)
	{
		bool		isnull;
		Datum		res = ExecEvalExpr(agg->filter, econtext, &isnull);

		if (isnull || !DatumGetBool(res))
			return;
	}
	InitFunctionCallInfoData(*fcinfo, &agg->transfn, agg->nargs + 1,
							 agg->collation, (Node *) fb->aggstate, NULL);
	for (int i = 0; i < agg->nargs; i++)
	{
		fcinfo->args[i + 1].value = ExecEvalExpr(agg->args[i], econtext,
												 &fcinfo->args[i + 1].isnull);
		if (fcinfo->args[i + 1].isnull && agg->transfn.fn_strict)
			return;
	}
	if (agg->transfn.fn_strict)
	{
		if (g->notrans[a])
		{
			/* the first non-NULL input is the state */
			MemoryContext old = MemoryContextSwitchTo(fb->batchcxt);

			g->states[a] = datumCopy(fcinfo->args[1].value, agg->transbyval,
									 agg->translen);
			MemoryContextSwitchTo(old);
			g->statenulls[a] = false;
			g->notrans[a] = false;
			return;
		}
		if (g->statenulls[a])
			return;
	}
	fcinfo->args[0].value = g->states[a];
	fcinfo->args[0].isnull = g->statenulls[a];
	fcinfo->isnull = false;
	newval = FunctionCallInvoke(fcinfo);
	if (!agg->transbyval && DatumGetPointer(newval) != DatumGetPointer(g->states[a]))
	{
		/* ExecAggTransReparent(): the new state into the group's memory */
		if (!fcinfo->isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(fb->batchcxt);

			newval = datumCopy(newval, agg->transbyval, agg->translen);
			MemoryContextSwitchTo(old);
		}
		if (!g->statenulls[a])
			pfree(DatumGetPointer(g->states[a]));
	}
	g->states[a] = newval;
	g->statenulls[a] = fcinfo->isnull;
}

/* rows 0..n-1 of fb->outslots into the delta and its indexes */
static void
fb_flush(FastBatch *fb, Relation delta, ResultRelInfo *rri, EState *estate,
		 CommandId cid, int n)
{
	if (n == 1)
		table_tuple_insert(delta, fb->outslots[0], cid, 0, NULL);
	else
		table_multi_insert(delta, fb->outslots, n, cid, 0, NULL);
	for (int i = 0; i < n; i++)
	{
		if (rri->ri_NumIndices > 0)
		{
			ResetPerTupleExprContext(estate);
			(void) ExecInsertIndexTuples(rri, fb->outslots[i], estate, false, false,
										 NULL, NIL);
		}
		ExecClearTuple(fb->outslots[i]);
	}
}

/* ---- writes put off past the lock guard's subtransaction ------------------ */

/*
 * The lock guard (lock_guard.c) runs the units of another role's objects
 * in a subtransaction, and a subtransaction that writes takes a
 * subtransaction id.  So while its scope (fast_batch_defer_begin()) is
 * open, a fast batch of that batch does everything that can wait for a
 * lock or fail by its unit's fault in the subtransaction -- the locks of
 * the delta and of its indexes, the privilege check, the aggregation, the
 * delta rows formed and checked by ExecConstraints() -- and hands the rows
 * to the scope instead of writing them; the guard releases the
 * subtransaction (nothing written: no id) and writes them in the
 * inserting transaction (fast_batch_write_deferred()), as the owner they
 * were computed as.  A row is put off only when writing it can fail for
 * no fault of the unit's (guard_contains()): the delta's indexes are
 * btree or hash, neither unique nor exclusion constraints, without
 * expressions or predicates (fb_indexes_deferrable()), and the row is
 * small enough to need no TOAST and to fit any index entry, and holds no
 * TOAST pointer (FB_DEFER_MAX_ROW).  Then the write takes no lock that
 * the subtransaction has not taken, runs no code of the owner's, and can
 * fail only for a lack of resources or a system or internal error, which
 * fail the insert with or without the guard.  A batch whose rows do not
 * qualify writes them in the subtransaction, as before.
 */
struct FastBatchWrites
{
	Tuplestorestate *batch;		/* the transition table of the batch */
	MemoryContext cxt;			/* the caller's: the rows put off */
	List	   *writes;			/* FbWrite, in cxt */
	FastBatchWrites *outer;		/* the scope of an enclosing guard */
};

/* one delta's rows put off */
typedef struct FbWrite
{
	Oid			deltaid;
	Oid			userid;			/* the owner, as it computed them */
	int			sec_context;	/* ... security-restricted */
	int			ntuples;
	HeapTuple  *tuples;
	int			nindexes;		/* the delta's indexes it locked and checked */
	Oid		   *indexoids;
	FastBatch  *fb;				/* whose slots write them; NULL: none (it
								 * was freed, or has another write pending) */
} FbWrite;

static FastBatchWrites *defer_scope = NULL;

/*
 * The largest delta row put off: heap_insert() toasts a row above
 * TOAST_TUPLE_THRESHOLD (a lock of the TOAST table), and a btree refuses
 * an entry above about a third of a page (54000).  An index entry holds
 * at most the row's data plus a header and alignment padding of up to
 * INDEX_MAX_KEYS columns, so a row under a quarter of a page less that
 * fits both.
 */
#define FB_DEFER_MAX_ROW	(BLCKSZ / 4 - INDEX_MAX_KEYS * MAXIMUM_ALIGNOF - 2 * MAXIMUM_ALIGNOF)
StaticAssertDecl(FB_DEFER_MAX_ROW < TOAST_TUPLE_THRESHOLD, "a row put off must need no TOAST");

/*
 * Lock the indexes of delta as the write will (RowExclusiveLock, kept to
 * the end of the transaction): the wait, if any, is bounded by the lock
 * guard.  Can the write of its rows outside the subtransaction fail by the
 * unit's fault?  Not when every index is btree or hash, not unique nor an
 * exclusion constraint, without expressions or predicate.  w gets them:
 * the write inserts into these, whatever index becomes ready for inserts
 * meanwhile (CREATE INDEX CONCURRENTLY of the delta's owner: it waits for
 * this transaction, which holds the delta's lock, before it validates the
 * index, and then adds its rows, as for any inserter that did not see the
 * index ready).
 */
static bool
fb_indexes_deferrable(Relation delta, FbWrite *w, MemoryContext cxt)
{
	List	   *indexes;
	ListCell   *lc;
	bool		ok = true;

	if (!delta->rd_rel->relhasindex)
		return true;
	indexes = RelationGetIndexList(delta);
	w->indexoids = MemoryContextAlloc(cxt, sizeof(Oid) * Max(list_length(indexes), 1));
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), RowExclusiveLock);

		w->indexoids[w->nindexes++] = lfirst_oid(lc);
		if ((index->rd_rel->relam != BTREE_AM_OID &&
			 index->rd_rel->relam != HASH_AM_OID) ||
			index->rd_index->indisunique || index->rd_index->indisexclusion ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
			ok = false;
		index_close(index, NoLock);
	}
	list_free(indexes);
	return ok;
}

/* fb's memory is being freed: its write put off makes slots of its own */
static void
fb_forget(void *arg)
{
	FastBatch  *fb = arg;

	if (fb->pending)
		fb->pending->fb = NULL;
	fb->pending = NULL;
}

/*
 * The rows of write w (formed with its delta's descriptor) into the delta
 * and its indexes, FB_MULTI per table_multi_insert(), with the slots of
 * FastBatch fb (made once, as fb_write() makes them), or of its own when
 * NULL; in the subtransaction (a batch whose rows were not put off) or
 * after it (fast_batch_write_deferred()).  The delta and its indexes are
 * locked already.  The slots free the rows.
 */
static void
fb_store(FbWrite *w, FastBatch *fb)
{
	Relation	delta = table_open(w->deltaid, RowExclusiveLock);
	EState	   *estate = CreateExecutorState();
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	CommandId	cid = GetCurrentCommandId(true);
	int			nslots = Min(w->ntuples, FB_MULTI);
	TupleTableSlot **slots;
	HeapTuple  *tuples = w->tuples;
	int			ntuples = w->ntuples;

	InitResultRelInfo(rri, delta, 0, NULL, 0);
	/* ExecOpenIndices() of the indexes checked (fb_indexes_deferrable()) */
	if (w->nindexes > 0)
	{
		rri->ri_NumIndices = w->nindexes;
		rri->ri_IndexRelationDescs = palloc(sizeof(Relation) * w->nindexes);
		rri->ri_IndexRelationInfo = palloc(sizeof(IndexInfo *) * w->nindexes);
		for (int i = 0; i < w->nindexes; i++)
		{
			rri->ri_IndexRelationDescs[i] = index_open(w->indexoids[i], RowExclusiveLock);
			rri->ri_IndexRelationInfo[i] = BuildIndexInfo(rri->ri_IndexRelationDescs[i]);
		}
	}
	if (fb)
	{
		MemoryContext old = MemoryContextSwitchTo(fb->cxt);

		while (fb->noutslots < nslots)
			fb->outslots[fb->noutslots++] =
				MakeSingleTupleTableSlot(fb->deltadesc, &TTSOpsHeapTuple);
		MemoryContextSwitchTo(old);
		slots = fb->outslots;
	}
	else
	{
		slots = palloc(sizeof(TupleTableSlot *) * Max(nslots, 1));
		for (int i = 0; i < nslots; i++)
			slots[i] = MakeSingleTupleTableSlot(RelationGetDescr(delta), &TTSOpsHeapTuple);
	}
	for (int done = 0; done < ntuples; done += nslots)
	{
		int			n = Min(nslots, ntuples - done);

		for (int i = 0; i < n; i++)
			ExecStoreHeapTuple(tuples[done + i], slots[i], true);
		if (n == 1)
			table_tuple_insert(delta, slots[0], cid, 0, NULL);
		else
			table_multi_insert(delta, slots, n, cid, 0, NULL);
		for (int i = 0; i < n; i++)
		{
			if (rri->ri_NumIndices > 0)
			{
				ResetPerTupleExprContext(estate);
				(void) ExecInsertIndexTuples(rri, slots[i], estate, false, false,
											 NULL, NIL);
			}
			ExecClearTuple(slots[i]);
		}
	}
	if (fb == NULL)
		for (int i = 0; i < nslots; i++)
			ExecDropSingleTupleTableSlot(slots[i]);
	if (w->nindexes > 0)
		ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(delta, NoLock);
	w->ntuples = 0;
}

/*
 * Open the scope of the batch whose transition table is batch (the lock
 * guard's units of it, in its subtransaction): their fast batches put
 * their writes off to fast_batch_write_deferred().  Batches of nested
 * statements (another transition table) write as usual.  In the caller's
 * memory, which must outlive the subtransaction: the rows put off are
 * kept there (the trigger's SPI memory, freed when it returns).
 */
FastBatchWrites *
fast_batch_defer_begin(Tuplestorestate *batch)
{
	FastBatchWrites *scope = palloc0(sizeof(FastBatchWrites));

	scope->batch = batch;
	scope->cxt = CurrentMemoryContext;
	scope->outer = defer_scope;
	defer_scope = scope;
	return scope;
}

/* close the scope (before the subtransaction ends); its writes stay */
void
fast_batch_defer_end(FastBatchWrites *scope)
{
	defer_scope = scope->outer;
}

/*
 * Close the scope and forget its writes (the subtransaction rolled back;
 * their memory goes with the caller's)
 */
void
fast_batch_defer_discard(FastBatchWrites *scope)
{
	ListCell   *lc;

	defer_scope = scope->outer;
	foreach(lc, scope->writes)
	{
		FbWrite    *w = lfirst(lc);

		if (w->fb && w->fb->pending == w)
			w->fb->pending = NULL;
		w->fb = NULL;
	}
	scope->writes = NIL;
}

/*
 * Write the rows the scope's batches put off, in the transaction the
 * subtransaction was released into, each as the owner and in the
 * security context it was computed in.  What can fail here is no unit's
 * fault (see above): it fails the insert.
 */
void
fast_batch_write_deferred(FastBatchWrites *scope)
{
	ListCell   *lc;

	/*
	 * Unlinked first (an error fails the insert: no FastBatch may point to
	 * a write then); nothing frees a FastBatch while the rows go in.
	 */
	foreach(lc, scope->writes)
	{
		FbWrite    *w = lfirst(lc);

		if (w->fb && w->fb->pending == w)
			w->fb->pending = NULL;
	}
	foreach(lc, scope->writes)
	{
		FbWrite    *w = lfirst(lc);
		Oid			save_userid;
		int			save_sec_context;

		GetUserIdAndSecContext(&save_userid, &save_sec_context);
		SetUserIdAndSecContext(w->userid, w->sec_context);
		fb_store(w, w->fb);
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	defer_scope = scope->outer;
	scope->writes = NIL;
}

/*
 * Append the groups to the delta, FB_MULTI rows per heap_multi_insert()
 * (as COPY does), then their index entries; returns how many.  In a scope
 * of the lock guard (defer), the rows are formed and checked, the indexes
 * locked, and the rows put off to it when they qualify (above).
 */
static uint64
fb_write(FastBatch *fb, FbGroup *first, uint64 ngroups, FastBatchWrites *defer)
{
	Relation	delta = table_open(fb->deltaid, RowExclusiveLock);
	EState	   *estate = NULL;
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	CommandId	cid = GetCurrentCommandId(true);
	Datum	   *values = palloc(sizeof(Datum) * Max(fb->ncols, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(fb->ncols, 1));
	uint64		n = 0;
	int			pending = 0;
	FbWrite    *w = NULL;
	bool		put_off = true;

	if (defer)
	{
		w = MemoryContextAllocZero(defer->cxt, sizeof(FbWrite));
		if (fb_indexes_deferrable(delta, w, defer->cxt))
		{
			w->deltaid = fb->deltaid;
			GetUserIdAndSecContext(&w->userid, &w->sec_context);
			w->tuples = MemoryContextAlloc(defer->cxt, sizeof(HeapTuple) * Max(ngroups, 1));
		}
		else
			w = NULL;
	}
	/* (rows put off need it only for ExecConstraints()) */
	if (w == NULL || fb->constraints)
		estate = CreateExecutorState();
	/* (ExecConstraints()'s error names the columns the statement inserts) */
	if (fb->constraints)
		ExecInitRangeTable(estate, fb->rtable);
	InitResultRelInfo(rri, delta, fb->deltarti, NULL, 0);
	if (w == NULL && delta->rd_rel->relhasindex)
		ExecOpenIndices(rri, false);
	for (FbGroup *g = first; g; g = g->next)
	{
		HeapTuple	tuple;

		ResetExprContext(fb->econtext);
		if (fb->has_exprs)
		{
			/* the group's keys where the expressions read them */
			ExecClearTuple(fb->keyslot);
			memset(fb->keyslot->tts_isnull, true,
				   sizeof(bool) * fb->keyslot->tts_tupleDescriptor->natts);
			for (int k = 0; k < fb->nkeys; k++)
			{
				fb->keyslot->tts_values[fb->keycols[k] - 1] = g->keys[k];
				fb->keyslot->tts_isnull[fb->keycols[k] - 1] = g->keynulls[k];
			}
			ExecStoreVirtualTuple(fb->keyslot);
			fb->econtext->ecxt_outertuple = fb->keyslot;
		}
		for (int c = 0; c < fb->ncols; c++)
		{
			FbColumn   *col = &fb->cols[c];

			if (col->expr)
				values[c] = ExecEvalExprSwitchContext(col->expr, fb->econtext, &nulls[c]);
			else if (col->key >= 0)
			{
				values[c] = g->keys[col->key];
				nulls[c] = g->keynulls[col->key];
			}
			else if (col->agg >= 0)
			{
				values[c] = g->states[col->agg];
				nulls[c] = g->statenulls[col->agg];
			}
			else
			{
				values[c] = col->value;
				nulls[c] = col->isnull;
			}
		}
		if (pending == fb->noutslots)
		{
			MemoryContext old = MemoryContextSwitchTo(fb->cxt);

			fb->outslots[fb->noutslots++] =
				MakeSingleTupleTableSlot(fb->deltadesc, &TTSOpsHeapTuple);
			MemoryContextSwitchTo(old);
		}
		if (w)
		{
			/* formed where it waits for the write, and checked now */
			MemoryContext old = MemoryContextSwitchTo(defer->cxt);

			tuple = heap_form_tuple(fb->deltadesc, values, nulls);
			MemoryContextSwitchTo(old);
			w->tuples[w->ntuples++] = tuple;
			put_off &= tuple->t_len <= FB_DEFER_MAX_ROW && !HeapTupleHasExternal(tuple);
			if (fb->constraints)
			{
				ExecStoreHeapTuple(tuple, fb->outslots[0], false);
				ExecConstraints(rri, fb->outslots[0], estate);
				ExecClearTuple(fb->outslots[0]);
			}
			n++;
			continue;
		}
		tuple = heap_form_tuple(fb->deltadesc, values, nulls);
		ExecStoreHeapTuple(tuple, fb->outslots[pending], true);
		if (fb->constraints)
			ExecConstraints(rri, fb->outslots[pending], estate);
		pending++;
		n++;
		if (pending == FB_MULTI || g->next == NULL)
		{
			fb_flush(fb, delta, rri, estate, cid, pending);
			pending = 0;
		}
	}
	ResetExprContext(fb->econtext);
	if (w == NULL && delta->rd_rel->relhasindex)
		ExecCloseIndices(rri);
	if (estate)
		FreeExecutorState(estate);
	table_close(delta, NoLock);
	if (w && w->ntuples > 0)
	{
		if (put_off)
		{
			MemoryContext old = MemoryContextSwitchTo(defer->cxt);

			defer->writes = lappend(defer->writes, w);
			MemoryContextSwitchTo(old);
			/* its slots, unless a write of a nested batch has them */
			if (fb->pending == NULL)
			{
				w->fb = fb;
				fb->pending = w;
			}
		}
		else
		{
			/* a wide row: all of them now, in the subtransaction */
			fb_store(w, fb);
			pfree(w->tuples);
			pfree(w);
		}
	}
	return n;
}

static uint64
fb_aggregate(FastBatch *fb, Tuplestorestate *rows, FastBatchWrites *defer)
{
	ExprContext *econtext = fb->econtext;
	uint64		nrows = tuplestore_tuple_count(rows);
	uint32		size = 16;
	FbGroup   **table;
	FbGroup    *first = NULL;
	FbGroup   **last = &first;
	uint32		ngroups = 0;
	int			readptr;
	Datum	   *keys = palloc(sizeof(Datum) * Max(fb->nkeys, 1));
	bool	   *keynulls = palloc(sizeof(bool) * Max(fb->nkeys, 1));

	while (size < nrows * 2 && size < 65536)
		size <<= 1;
	table = palloc0(sizeof(FbGroup *) * size);

	/* an aggregation without GROUP BY has its one group whatever the rows */
	if (fb->nkeys == 0)
	{
		first = fb_new_group(fb, 0, keys, keynulls);
		last = &first->next;
		ngroups = 1;
	}

	/* as nodeNamedtuplestorescan.c reads it */
	readptr = tuplestore_alloc_read_pointer(rows, EXEC_FLAG_REWIND);
	tuplestore_copy_read_pointer(rows, 0, readptr);
	tuplestore_select_read_pointer(rows, readptr);
	tuplestore_rescan(rows);

	for (;;)
	{
		TupleTableSlot *proj;
		FbGroup    *g;
		MemoryContext old;

		ResetExprContext(econtext);
		if (!tuplestore_gettupleslot(rows, true, false, fb->inslot))
			break;
		econtext->ecxt_scantuple = fb->inslot;
		if (fb->qual && !ExecQual(fb->qual, econtext))
			continue;
		proj = ExecProject(fb->proj);
		old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		if (fb->nkeys == 0)
			g = first;
		else
		{
			uint32		hash;
			uint32		i;

			slot_getallattrs(proj);
			for (int k = 0; k < fb->nkeys; k++)
			{
				keys[k] = proj->tts_values[fb->keycols[k] - 1];
				keynulls[k] = proj->tts_isnull[fb->keycols[k] - 1];
			}
			hash = fb_hash(fb, keys, keynulls);
			for (i = hash & (size - 1);; i = (i + 1) & (size - 1))
			{
				g = table[i];
				if (g == NULL || (g->hash == hash && fb_equal(fb, g, keys, keynulls)))
					break;
			}
			if (g == NULL)
			{
				MemoryContextSwitchTo(fb->batchcxt);
				g = fb_new_group(fb, hash, keys, keynulls);
				MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
				table[i] = g;
				*last = g;
				last = &g->next;
				if (++ngroups * 2 > size)
				{
					/* grow: twice the buckets, the groups hashed again */
					FbGroup   **bigger;

					size <<= 1;
					bigger = MemoryContextAllocZero(fb->batchcxt, sizeof(FbGroup *) * size);
					for (FbGroup *h = first; h; h = h->next)
					{
						uint32		j = h->hash & (size - 1);

						while (bigger[j])
							j = (j + 1) & (size - 1);
						bigger[j] = h;
					}
					table = bigger;
				}
			}
		}
		econtext->ecxt_outertuple = proj;
		for (int a = 0; a < fb->naggs; a++)
			fb_advance(fb, &fb->aggs[a], g, a, econtext);
		MemoryContextSwitchTo(old);
	}
	ResetExprContext(econtext);
	ExecClearTuple(fb->inslot);
	return fb_write(fb, first, ngroups, defer);
}

/*
 * An error's CONTEXT names the statement as SPI's does (_SPI_error_callback),
 * so that the batch trigger shortens it the same way (se_rethrow_short_context).
 */
static void
fb_error_callback(void *arg)
{
	const char *query = arg;
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery(query);
	}
	else
		errcontext("SQL statement \"%s\"", query);
}

/*
 * Run the batch of trigdata through plan (a kept SPI plan of a maintenance
 * statement) without the executor, if its plan qualifies; *state is the
 * compiled plan, made in a child of cxt.  Returns false when the batch
 * must be run by SPI; else *groups gets the rows written.
 */
bool
fast_batch_run(FastBatch **state, MemoryContext cxt, SPIPlanPtr plan,
			   TriggerData *trigdata, uint64 *groups)
{
	FastBatch  *fb = *state;
	CachedPlan *cplan;
	MemoryContext old;
	ErrorContextCallback errcallback;

	if (!stream_ext_fast_batches || XactReadOnly)
		return false;
	/* a plan that did not qualify: its shape comes from the view */
	if (fb && fb->plan == plan && !fb->eligible)
		return false;
	cplan = SPI_plan_get_cached_plan(plan);
	if (cplan == NULL)
		return false;
	if (fb == NULL || fb->plan != plan || fb->cplan != cplan ||
		fb->generation != cplan->generation)
	{
		MemoryContext fcxt;

		if (fb)
			MemoryContextDelete(fb->cxt);
		*state = NULL;
		fcxt = AllocSetContextCreate(cxt, "stream_ext fast batch plan",
									 ALLOCSET_SMALL_SIZES);
		old = MemoryContextSwitchTo(fcxt);
		fb = palloc0(sizeof(FastBatch));
		fb->cxt = fcxt;
		fb->plan = plan;
		fb->cplan = cplan;
		fb->generation = cplan->generation;
		fb->query = pstrdup(((CachedPlanSource *) linitial(SPI_plan_get_plan_sources(plan)))->query_string);
		fb->forget.func = fb_forget;
		fb->forget.arg = fb;
		MemoryContextRegisterResetCallback(fcxt, &fb->forget);
		fb_compile(fb, cplan, trigdata);
		MemoryContextSwitchTo(old);
		*state = fb;
		if (!fb->eligible)
			elog(DEBUG1, "stream_ext: maintenance runs its statement: %s", fb->why);
	}
	if (!fb->eligible)
	{
		ReleaseCachedPlan(cplan, CurrentResourceOwner);
		return false;
	}

	errcallback.callback = fb_error_callback;
	errcallback.arg = fb->query;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	/* the executor's privilege check of the statement, as the owner */
	(void) ExecCheckRTPerms(fb->rtable, true);

	MemoryContextReset(fb->batchcxt);
	old = MemoryContextSwitchTo(fb->batchcxt);
	*groups = fb_aggregate(fb, trigdata->tg_newtable,
						   defer_scope && defer_scope->batch == trigdata->tg_newtable ?
						   defer_scope : NULL);
	MemoryContextSwitchTo(old);
	error_context_stack = errcallback.previous;
	MemoryContextReset(fb->batchcxt);
	ReleaseCachedPlan(cplan, CurrentResourceOwner);
	fast_batches_run++;
	return true;
}

/*
 * stream_ext.fast_batches_run() -- how many maintenance statements of this
 * backend ran without the executor (tests).
 */
Datum
stream_ext_fast_batches_run(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(fast_batches_run);
}

void
fast_batch_define_gucs(void)
{
	DefineCustomBoolVariable("stream_ext.fast_batches",
							 "Aggregate a batch into a continuous view's delta without the executor when its maintenance statement is simple enough.",
							 "Views with built-in aggregates of non-internal states over simple keys; off: every batch runs the statement with SPI.",
							 &stream_ext_fast_batches,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}
