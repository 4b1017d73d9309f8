/*-------------------------------------------------------------------------
 *
 * combine_distinct.c
 *	  stream_ext.combine() of an exact count(DISTINCT x) column: the number
 *	  of distinct values over the union of the groups a query reads.
 *
 *	  SELECT stream_ext.combine(users) FROM clicks_per_minute
 *	   WHERE minute >= now() - interval '1 hour';
 *
 *	  Such a column stores a count per group; its values are in the view's
 *	  side table of (keys, value) (query/analyze.c, cv_distinct_sql()),
 *	  which every batch fills before it commits -- in append mode too: the
 *	  delta holds only the number of values new to a group, never values.
 *	  combine.c hands such a column to combine_distinct_column(), which
 *	  changes, inside the view's expanded query (the rewriter's subquery),
 *	  the column's expression into
 *
 *	    ARRAY(SELECT a.value FROM <side table> a
 *	           WHERE a.k1 = m.k1 OR (a.k1 IS NULL AND m.k1 IS NULL) ...
 *	           [AND a.signed_count > 0])           -- changelog streams
 *
 *	  per row of the view (m: the view's FROM item, so the view's own WHERE,
 *	  HAVING, windows and row filters pick the groups): an index probe per
 *	  row, the side table's unique index leading with the keys.  A side
 *	  table of variable-width keys or value has an index on the hash of
 *	  the whole (keys, value) pair only, so there the view's FROM item is
 *	  instead LEFT JOINed to the side table's values grouped by keys:
 *
 *	    m LEFT JOIN (SELECT keys, key_hash(keys) AS h, array_agg(value)
 *	                   FROM <side table> a GROUP BY keys) v
 *	      ON v.h = key_hash(m.keys) AND v.k1 = m.k1 OR (both NULL) ...
 *
 *	  one pass over the side table and a hash join, not a scan per row.
 *	  Then the combine()
 *	  call into stream_ext.distinct_union(that array): the values of the
 *	  selected rows sorted (tuplesort: spills past work_mem) and counted
 *	  once each, with the value type's default btree equality -- the one
 *	  the side table's unique index uses, so a value counted once per group
 *	  is counted once in the union.
 *
 *	  Privileges: the side table is read with the permissions the view
 *	  reads its materialization with (the range table entry's checkAsUser,
 *	  copied from the materialization's: the view's owner, or the reader
 *	  for a security_invoker view), and the reader's own check is the one
 *	  on the view's column, as for any column of a view.  No value leaves
 *	  the view's query except counted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "parser/parse_oper.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/ruleutils.h"
#include "query/combine_distinct.h"
#include "query/retract.h"
#include "query/viewplan.h"

PG_FUNCTION_INFO_V1(stream_ext_distinct_union_trans);
PG_FUNCTION_INFO_V1(stream_ext_distinct_union_final);

/* the relation range table entry of relid in q or its subqueries, or NULL */
static RangeTblEntry *
find_relation_rte(Query *q, Oid relid)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && rte->relid == relid)
			return rte;
		if (rte->rtekind == RTE_SUBQUERY && rte->subquery != NULL)
		{
			RangeTblEntry *found = find_relation_rte(rte->subquery, relid);

			if (found != NULL)
				return found;
		}
	}
	return NULL;
}

static Node *
is_null(Var *var)
{
	NullTest   *test = makeNode(NullTest);

	test->arg = (Expr *) copyObject(var);
	test->nulltesttype = IS_NULL;
	test->argisrow = false;
	test->location = -1;
	return (Node *) test;
}

/* a = b, or both NULL (the side table's unique index is NULLS NOT DISTINCT) */
static Node *
null_safe_equal(Var *a, Var *b)
{
	TypeCacheEntry *tc = lookup_type_cache(a->vartype, TYPECACHE_EQ_OPR);
	OpExpr	   *eq;

	if (!OidIsValid(tc->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an equality operator for type %s",
						format_type_be(a->vartype))));
	eq = (OpExpr *) make_opclause(tc->eq_opr, BOOLOID, false, (Expr *) a, (Expr *) b,
								  InvalidOid, a->varcollid);
	set_opfuncid(eq);
	return (Node *) makeBoolExpr(OR_EXPR,
								 list_make2(eq,
											makeBoolExpr(AND_EXPR,
														 list_make2(is_null(a), is_null(b)),
														 -1)),
								 -1);
}

/* the Var of column name of relation rel, range table index 1 */
static Var *
side_var(Relation rel, const char *name, RangeTblEntry *rte)
{
	AttrNumber	attno = attnameAttNum(rel, name, false);
	Form_pg_attribute att;

	if (attno <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("side table \"%s\" has no column \"%s\"",
						RelationGetRelationName(rel), name),
				 errdetail("Its continuous view's recorded definition no longer matches its tables.")));
	att = TupleDescAttr(RelationGetDescr(rel), attno - 1);
	rte->selectedCols = bms_add_member(rte->selectedCols,
									   attno - FirstLowInvalidHeapAttributeNumber);
	return makeVar(1, attno, att->atttypid, att->atttypmod, att->attcollation, 0);
}

#define VALUES_ALIAS "stream_ext_values"

/*
 * Is the view's FROM m alone (range table index mvarno), or m already
 * joined to the values of other count(DISTINCT) columns here?
 */
static bool
joinable_from(Query *viewq, int mvarno)
{
	Node	   *item;

	if (list_length(viewq->jointree->fromlist) != 1)
		return false;
	item = linitial(viewq->jointree->fromlist);
	while (IsA(item, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) item;
		RangeTblEntry *right;

		if (join->jointype != JOIN_LEFT || !IsA(join->rarg, RangeTblRef))
			return false;
		right = rt_fetch(((RangeTblRef *) join->rarg)->rtindex, viewq->rtable);
		if (right->rtekind != RTE_SUBQUERY || strcmp(right->eref->aliasname, VALUES_ALIAS) != 0)
			return false;
		item = join->larg;
	}
	return IsA(item, RangeTblRef) && ((RangeTblRef *) item)->rtindex == mvarno;
}

/* stream_ext.key_hash(value "any", seed int8) */
static Oid
key_hash_oid(void)
{
	Oid			args[2] = {ANYOID, INT8OID};

	return LookupFuncName(list_make2(makeString("stream_ext"), makeString("key_hash")),
						  2, args, false);
}

/* the hash of the keys vars: key_hash(k_n, ... key_hash(k_1, 0)) */
static Node *
keys_hash_expr(List *vars, Oid fn)
{
	Node	   *h = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
									   Int64GetDatum(0), false, FLOAT8PASSBYVAL);
	ListCell   *lc;

	foreach(lc, vars)
		h = (Node *) makeFuncExpr(fn, INT8OID, list_make2(copyObject(lfirst(lc)), h),
								  InvalidOid, exprCollation((Node *) lfirst(lc)),
								  COERCE_EXPLICIT_CALL);
	return h;
}

/*
 * The view's FROM item m (range table index mvarno, its only FROM item)
 * LEFT JOINed to the side table's values per group (see the file header);
 * returns the Var of the values' array, NULL for a group without values.
 */
/* checkAsUser of every relation read by q and its subqueries */
static void
set_check_as_user(List *rtable, Oid checkAsUser)
{
	ListCell   *lc;

	foreach(lc, rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION)
			rte->checkAsUser = checkAsUser;
		else if (rte->rtekind == RTE_SUBQUERY)
			set_check_as_user(rte->subquery->rtable, checkAsUser);
	}
}

/*
 * from_sql: NULL for the side table itself, else a statement giving its
 * rows (keys, value): for a view that defers its count(DISTINCT) to
 * compaction, the side table and the values still in the delta's arrays
 * (cv_distinct_values_sql()).
 */
static Var *
join_side_values(Oid auxid, const char *from_sql, CVPlan *plan, Query *viewq, int mvarno,
				 List *mvars, RangeTblEntry *matrte)
{
	StringInfoData sql;
	ListCell   *lc;
	int			n = 0;
	SeRunAs		runas;
	Oid			owner = OidIsValid(matrte->checkAsUser) ? matrte->checkAsUser : GetUserId();
	List	   *raw;
	Query	   *grouped;
	RangeTblEntry *vrte;
	RangeTblEntry *jrte;
	JoinExpr   *join;
	RangeTblRef *rref = makeNode(RangeTblRef);
	List	   *colnames;
	List	   *colvars;
	List	   *quals = NIL;
	List	   *avars = NIL;
	int			vvarno;
	Oid			fn = key_hash_oid();
	Oid			int8eq = lookup_type_cache(INT8OID, TYPECACHE_EQ_OPR)->eq_opr;
	OpExpr	   *heq;
	TargetEntry *valtle;

	/* the side table's values grouped by keys, analyzed as the view reads it */
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, plan->keys)
		appendStringInfo(&sql, "a.%s, ", quote_identifier(((CVKey *) lfirst(lc))->colname));
	{
		StringInfoData h;

		initStringInfo(&h);
		appendStringInfoString(&h, "0::pg_catalog.int8");
		foreach(lc, plan->keys)
		{
			char	   *prev = pstrdup(h.data);

			resetStringInfo(&h);
			appendStringInfo(&h, "stream_ext.key_hash(a.%s, %s)",
							 quote_identifier(((CVKey *) lfirst(lc))->colname), prev);
		}
		if (from_sql != NULL)
			appendStringInfo(&sql, "%s AS stream_ext_h, pg_catalog.array_agg(a.value) AS stream_ext_values FROM (%s) a",
							 h.data, from_sql);
		else
			appendStringInfo(&sql, "%s AS stream_ext_h, pg_catalog.array_agg(a.value) AS stream_ext_values FROM %s a",
							 h.data, quote_qualified_identifier(get_namespace_name(get_rel_namespace(auxid)),
																get_rel_name(auxid)));
	}
	if (se_stream_is_changelog(plan->streamid))
		appendStringInfoString(&sql, " WHERE a." SE_SIDE_COUNT_COLUMN " OPERATOR(pg_catalog.>) 0");
	appendStringInfoString(&sql, " GROUP BY ");
	for (n = 1; n <= list_length(plan->keys); n++)
		appendStringInfo(&sql, "%s%d", n > 1 ? ", " : "", n);

	se_run_as_owner(&runas, owner, NULL);
	raw = raw_parser(sql.data, RAW_PARSE_DEFAULT);
	grouped = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql.data, NULL, 0, NULL);
	se_restore(&runas);
	set_check_as_user(grouped->rtable, matrte->checkAsUser);

	/* v: the grouped values, a subquery of the view's query */
	vrte = makeNode(RangeTblEntry);
	vrte->rtekind = RTE_SUBQUERY;
	vrte->subquery = grouped;
	vrte->alias = NULL;
	colnames = NIL;
	foreach(lc, grouped->targetList)
		colnames = lappend(colnames, makeString(pstrdup(((TargetEntry *) lfirst(lc))->resname)));
	vrte->eref = makeAlias(VALUES_ALIAS, colnames);
	vrte->inFromCl = true;
	viewq->rtable = lappend(viewq->rtable, vrte);
	vvarno = list_length(viewq->rtable);

	/* ON v.h = key_hash(m.keys) AND v.k = m.k (or both NULL) ... */
	n = 0;
	foreach(lc, grouped->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *v = makeVar(vvarno, tle->resno, exprType((Node *) tle->expr),
								exprTypmod((Node *) tle->expr),
								exprCollation((Node *) tle->expr), 0);

		if (n < list_length(plan->keys))
		{
			quals = lappend(quals, null_safe_equal(v, list_nth(mvars, n)));
			avars = lappend(avars, v);
		}
		else if (n == list_length(plan->keys))
		{
			heq = (OpExpr *) make_opclause(int8eq, BOOLOID, false, (Expr *) v,
										   (Expr *) keys_hash_expr(mvars, fn),
										   InvalidOid, InvalidOid);
			set_opfuncid(heq);
			quals = lcons(heq, quals);
		}
		n++;
	}

	/* the join, in the range table and as the view's FROM */
	jrte = makeNode(RangeTblEntry);
	jrte->rtekind = RTE_JOIN;
	jrte->jointype = JOIN_LEFT;
	jrte->joinmergedcols = 0;
	jrte->inFromCl = true;
	colnames = NIL;
	{
		Node	   *left = linitial(viewq->jointree->fromlist);
		int			leftindex = IsA(left, RangeTblRef) ? ((RangeTblRef *) left)->rtindex :
			((JoinExpr *) left)->rtindex;

		expandRTE(rt_fetch(leftindex, viewq->rtable), leftindex, 0, -1, false, &colnames, &colvars);
		jrte->joinaliasvars = colvars;
		foreach(lc, colvars)
			jrte->joinleftcols = lappend_int(jrte->joinleftcols, ((Var *) lfirst(lc))->varattno);
	}
	{
		List	   *rnames;
		List	   *rvars;

		expandRTE(vrte, vvarno, 0, -1, false, &rnames, &rvars);
		colnames = list_concat(colnames, rnames);
		jrte->joinaliasvars = list_concat(jrte->joinaliasvars, rvars);
		foreach(lc, rvars)
			jrte->joinrightcols = lappend_int(jrte->joinrightcols, ((Var *) lfirst(lc))->varattno);
	}
	jrte->eref = makeAlias("unnamed_join", colnames);
	viewq->rtable = lappend(viewq->rtable, jrte);

	rref->rtindex = vvarno;
	join = makeNode(JoinExpr);
	join->jointype = JOIN_LEFT;
	join->isNatural = false;
	join->larg = (Node *) linitial(viewq->jointree->fromlist);
	join->rarg = (Node *) rref;
	join->quals = (Node *) makeBoolExpr(AND_EXPR, quals, -1);
	join->rtindex = list_length(viewq->rtable);
	viewq->jointree->fromlist = list_make1(join);

	valtle = llast(grouped->targetList);
	return makeVar(vvarno, valtle->resno, exprType((Node *) valtle->expr), -1,
				   exprCollation((Node *) valtle->expr), 0);
}

/* a = b */
static Node *
plain_equal(Var *a, Var *b)
{
	TypeCacheEntry *tc = lookup_type_cache(a->vartype, TYPECACHE_EQ_OPR);
	OpExpr	   *eq = (OpExpr *) make_opclause(tc->eq_opr, BOOLOID, false,
											  (Expr *) copyObject(a), (Expr *) copyObject(b),
											  InvalidOid, a->varcollid);

	set_opfuncid(eq);
	return (Node *) eq;
}

/* ARRAY(SELECT value FROM <rtable's side table> WHERE quals) */
static SubLink *
values_sublink(List *rtable, List *quals, Var *value)
{
	Query	   *sub = makeNode(Query);
	RangeTblRef *ref = makeNode(RangeTblRef);
	SubLink    *sublink = makeNode(SubLink);

	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->rtable = rtable;
	ref->rtindex = 1;
	sub->jointree = makeFromExpr(list_make1(ref),
								 quals == NIL ? NULL :
								 list_length(quals) == 1 ? linitial(quals) :
								 (Node *) makeBoolExpr(AND_EXPR, quals, -1));
	sub->targetList = list_make1(makeTargetEntry((Expr *) copyObject(value), 1, "value", false));

	sublink->subLinkType = ARRAY_SUBLINK;
	sublink->subLinkId = 0;
	sublink->testexpr = NULL;
	sublink->operName = NIL;
	sublink->subselect = (Node *) sub;
	sublink->location = -1;
	return sublink;
}

/*
 * Column attno of continuous view viewid is count(DISTINCT) agg of plan;
 * viewq is the view's expanded query in the range table entry read by the
 * combine() call.  Turns the column into the array of its group's distinct
 * values (see the file header) and returns the Var the caller's
 * stream_ext.distinct_union() call reads.
 */
Var *
combine_distinct_column(Oid viewid, CVPlan *plan, CVAgg *agg, Query *viewq,
						int varno, AttrNumber attno)
{
	TargetEntry *tle = get_tle_by_resno(viewq->targetList, attno);
	Var		   *count = tle ? (Var *) tle->expr : NULL;
	RangeTblEntry *source;
	RangeTblEntry *matrte;
	RangeTblEntry *rte;
	List	   *parts = catalog_view_parts(viewid);
	Oid			auxid = cv_distinct_side_table(plan, agg, parts);
	Relation	rel;
	ParseState *pstate;
	List	   *quals = NIL;
	List	   *eq_quals = NIL;	/* the same for keys that are not NULL */
	List	   *mvars = NIL;		/* the view row's keys, in its query */
	ListCell   *lc;
	Var		   *value;
	Oid			arraytype;

	/* the count column as the view reads it: m.<count column> */
	if (count == NULL || !IsA(count, Var) || count->varlevelsup != 0 ||
		count->varno < 1 || count->varno > list_length(viewq->rtable))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("stream_ext.combine() cannot merge column \"%s\" of continuous view \"%s\"",
						agg->colname, get_rel_name(viewid)),
				 errdetail("The view does not read the column's count directly from its materialization.")));
	source = rt_fetch(count->varno, viewq->rtable);
	matrte = find_relation_rte(viewq, linitial_oid(parts));
	if (matrte == NULL)
		elog(ERROR, "stream_ext: continuous view %u does not read its materialization", viewid);

	/* the side table, read as the view reads its materialization */
	rel = table_open(auxid, AccessShareLock);
	pstate = make_parsestate(NULL);
	rte = addRangeTableEntryForRelation(pstate, rel, AccessShareLock,
										makeAlias("a", NIL), false, true)->p_rte;
	rte->checkAsUser = matrte->checkAsUser;

	/* the group's keys: the side table's, equal to the view row's */
	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);
		Var		   *a = side_var(rel, key->colname, rte);
		int			pos = 0;
		ListCell   *ln;
		Var		   *m;

		foreach(ln, source->eref->colnames)
		{
			pos++;
			if (strcmp(strVal(lfirst(ln)), key->colname) == 0)
				break;
		}
		if (ln == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("stream_ext.combine() cannot merge column \"%s\" of continuous view \"%s\"",
							agg->colname, get_rel_name(viewid)),
					 errdetail("The view's rows do not carry its group key \"%s\".", key->colname)));
		m = makeVar(count->varno, pos, a->vartype, a->vartypmod, a->varcollid, 1);
		quals = lappend(quals, null_safe_equal(a, m));
		eq_quals = lappend(eq_quals, plain_equal(a, m));
		mvars = lappend(mvars, makeVar(count->varno, pos, a->vartype, a->vartypmod,
									   a->varcollid, 0));
	}

	/*
	 * A view that defers its count(DISTINCT) to compaction: the values of
	 * the side table and those still in the delta's arrays, joined by hash.
	 */
	if (plan->defer_distinct)
	{
		ViewCatalogEntry entry;
		Oid			deltaid;

		if (!catalog_lookup_view(viewid, &entry, CurrentMemoryContext))
			elog(ERROR, "stream_ext: continuous view %u is not in the catalog", viewid);
		deltaid = entry.deltaid;
		if (plan->keyless)
		{
			/* one group: all of its values, an uncorrelated sublink */
			char	   *sql = psprintf("SELECT pg_catalog.array_agg(a.value) FROM (%s) a",
									   cv_distinct_values_sql(plan, agg, agg->auxrel,
															  quote_qualified_identifier(get_namespace_name(get_rel_namespace(deltaid)),
																						 get_rel_name(deltaid))));
			SeRunAs		runas;
			Query	   *sub;
			SubLink    *link = makeNode(SubLink);

			table_close(rel, NoLock);
			se_run_as_owner(&runas, OidIsValid(matrte->checkAsUser) ? matrte->checkAsUser : GetUserId(), NULL);
			sub = parse_analyze_fixedparams(linitial_node(RawStmt, raw_parser(sql, RAW_PARSE_DEFAULT)),
											sql, NULL, 0, NULL);
			se_restore(&runas);
			set_check_as_user(sub->rtable, matrte->checkAsUser);
			link->subLinkType = EXPR_SUBLINK;
			link->subLinkId = 0;
			link->testexpr = NULL;
			link->operName = NIL;
			link->subselect = (Node *) sub;
			link->location = -1;
			tle->expr = (Expr *) link;
			return makeVar(varno, attno, exprType((Node *) link), -1,
						   exprCollation((Node *) link), 0);
		}
		if (!joinable_from(viewq, count->varno))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("stream_ext.combine() cannot merge column \"%s\" of continuous view \"%s\"",
							agg->colname, get_rel_name(viewid)),
					 errdetail("The view is read through a join inside its own definition, and its distinct values are partly in its delta."),
					 errhint("Read the column itself, or run stream_ext.compact('%s') first.",
							 get_rel_name(viewid))));
		table_close(rel, NoLock);
		value = join_side_values(auxid, cv_distinct_values_sql(plan, agg, agg->auxrel,
															   quote_qualified_identifier(get_namespace_name(get_rel_namespace(deltaid)),
																						  get_rel_name(deltaid))),
								 plan, viewq, count->varno, mvars, matrte);
		tle->expr = (Expr *) value;
		return makeVar(varno, attno, value->vartype, -1, value->varcollid, 0);
	}
	/* no index by keys: one pass over the side table, joined by hash */
	if (cv_auxrel_hashed(plan, agg) && !plan->keyless && joinable_from(viewq, count->varno))
	{
		table_close(rel, NoLock);
		value = join_side_values(auxid, NULL, plan, viewq, count->varno, mvars, matrte);
		tle->expr = (Expr *) value;
		return makeVar(varno, attno, value->vartype, -1, value->varcollid, 0);
	}
	/* a changelog stream's value is in the group while its count is > 0 */
	if (se_stream_is_changelog(plan->streamid))
	{
		OpExpr	   *positive;

		Oid			gt = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString(">")),
										  INT8OID, INT8OID);

		positive = (OpExpr *) make_opclause(gt, BOOLOID, false,
											(Expr *) side_var(rel, SE_SIDE_COUNT_COLUMN, rte),
											(Expr *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
															   Int64GetDatum(0), false, FLOAT8PASSBYVAL),
											InvalidOid, InvalidOid);
		set_opfuncid(positive);
		quals = lappend(quals, positive);
		if (eq_quals != NIL)
			eq_quals = lappend(eq_quals, copyObject(positive));
	}
	value = side_var(rel, "value", rte);
	table_close(rel, NoLock);

	arraytype = get_array_type(value->vartype);
	if (!OidIsValid(arraytype))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("stream_ext.combine() cannot merge column \"%s\" of continuous view \"%s\"",
						agg->colname, get_rel_name(viewid)),
				 errdetail("Type %s has no array type.", format_type_be(value->vartype))));

	/*
	 * A row whose keys are all non-NULL probes the index with plain
	 * equalities on every key; the null-safe form (an OR per key) would
	 * use the index's first column only.  Rows with a NULL key take it.
	 */
	if (eq_quals == NIL)
		tle->expr = (Expr *) values_sublink(pstate->p_rtable, quals, value);
	else
	{
		CaseExpr   *kase = makeNode(CaseExpr);
		CaseWhen   *when = makeNode(CaseWhen);
		List	   *not_null = NIL;

		foreach(lc, mvars)
		{
			NullTest   *test = makeNode(NullTest);

			test->arg = (Expr *) copyObject(lfirst(lc));
			test->nulltesttype = IS_NOT_NULL;
			test->argisrow = false;
			test->location = -1;
			not_null = lappend(not_null, test);
		}
		when->expr = list_length(not_null) == 1 ? linitial(not_null) :
			(Expr *) makeBoolExpr(AND_EXPR, not_null, -1);
		when->result = (Expr *) values_sublink(copyObject(pstate->p_rtable), eq_quals, value);
		when->location = -1;
		kase->casetype = arraytype;
		kase->casecollid = value->varcollid;
		kase->arg = NULL;
		kase->args = list_make1(when);
		kase->defresult = (Expr *) values_sublink(pstate->p_rtable, quals, value);
		kase->location = -1;
		tle->expr = (Expr *) kase;
	}
	viewq->hasSubLinks = true;

	return makeVar(varno, attno, arraytype, -1, value->varcollid, 0);
}

/* ---- stream_ext.distinct_union(anyarray): the aggregate ------------------ */

typedef struct DistinctUnion
{
	Tuplesortstate *sort;		/* every value of the rows, sorted at the end */
	Oid			type;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	FmgrInfo	eq;				/* the type's default equality */
} DistinctUnion;

static void
distinct_union_shutdown(Datum arg)
{
	DistinctUnion *st = (DistinctUnion *) DatumGetPointer(arg);

	if (st->sort != NULL)
		tuplesort_end(st->sort);
	st->sort = NULL;
}

Datum
stream_ext_distinct_union_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	DistinctUnion *st = PG_ARGISNULL(0) ? NULL : (DistinctUnion *) PG_GETARG_POINTER(0);
	ArrayType  *values;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (AggCheckCallContext(fcinfo, &aggcontext) != AGG_CONTEXT_AGGREGATE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("stream_ext.distinct_union() can only be called as an aggregate")));
	if (st == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(aggcontext);
		Oid			arraytype = get_fn_expr_argtype(fcinfo->flinfo, 1);
		TypeCacheEntry *tc;

		st = palloc0(sizeof(DistinctUnion));
		st->type = get_element_type(arraytype);
		if (!OidIsValid(st->type))
			elog(ERROR, "stream_ext.distinct_union() takes an array");
		st->collation = PG_GET_COLLATION();
		tc = lookup_type_cache(st->type, TYPECACHE_LT_OPR | TYPECACHE_EQ_OPR_FINFO);
		if (!OidIsValid(tc->lt_opr) || !OidIsValid(tc->eq_opr_finfo.fn_oid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("could not identify an ordering operator for type %s",
							format_type_be(st->type))));
		fmgr_info_cxt(tc->eq_opr_finfo.fn_oid, &st->eq, aggcontext);
		get_typlenbyvalalign(st->type, &st->typlen, &st->typbyval, &st->typalign);
		st->sort = tuplesort_begin_datum(st->type, tc->lt_opr, st->collation, false,
										 work_mem, NULL, TUPLESORT_NONE);
		AggRegisterCallback(fcinfo, distinct_union_shutdown, PointerGetDatum(st));
		MemoryContextSwitchTo(old);
	}
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(st);
	values = PG_GETARG_ARRAYTYPE_P(1);
	deconstruct_array(values, st->type, st->typlen, st->typbyval, st->typalign,
					  &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (!nulls[i])
			tuplesort_putdatum(st->sort, elems[i], false);
	}
	PG_RETURN_POINTER(st);
}

Datum
stream_ext_distinct_union_final(PG_FUNCTION_ARGS)
{
	DistinctUnion *st = PG_ARGISNULL(0) ? NULL : (DistinctUnion *) PG_GETARG_POINTER(0);
	int64		count = 0;
	Datum		prev = (Datum) 0;
	Datum		value;
	bool		isnull;

	if (st == NULL)
		PG_RETURN_INT64(0);
	if (st->sort == NULL)
		elog(ERROR, "stream_ext.distinct_union() finalized twice");
	tuplesort_performsort(st->sort);
	while (tuplesort_getdatum(st->sort, true, &value, &isnull, NULL))
	{
		if (count == 0 ||
			!DatumGetBool(FunctionCall2Coll(&st->eq, st->collation, prev, value)))
		{
			count++;
			if (!st->typbyval && count > 1)
				pfree(DatumGetPointer(prev));
			prev = value;
		}
		else if (!st->typbyval)
			pfree(DatumGetPointer(value));
	}
	distinct_union_shutdown(PointerGetDatum(st));
	PG_RETURN_INT64(count);
}
