/*-------------------------------------------------------------------------
 *
 * analyze.c
 *	  Query analysis and rewrite for continuous views.
 *
 *	  cv_analyze() decides whether an analyzed SELECT can be maintained
 *	  incrementally and breaks it into group keys and aggregates.  The
 *	  cv_*_sql() functions then write the SQL for its materialization:
 *
 *	  - the maintenance statement, run once per batch over the transition
 *		table: INSERT INTO matrel SELECT keys, partial(agg)... GROUP BY keys
 *		ORDER BY keys ON CONFLICT (keys) DO UPDATE SET state =
 *		combine(state, excluded.state).  Sorting by key gives concurrent
 *		writers one lock order, so they queue instead of deadlocking.
 *	  - for count(DISTINCT x): a side table of (keys, x) and a statement
 *		that adds the batch's new values and counts them into the matrel;
 *	  - the user-facing view: the original select list and HAVING with
 *		aggregates replaced by finalize(state).
 *
 *	  Expressions are deparsed with ruleutils while search_path is pinned
 *	  to pg_catalog (see ddl/create_view.c), so every name in the generated
 *	  SQL is schema-qualified and means the same thing whoever runs it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_am.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "core/catalog.h"
#include "core/util.h"
#include "query/aggsupport.h"
#include "query/analyze.h"
#include "query/joins.h"
#include "query/reads.h"
#include "query/retract.h"

static int
error_position(const char *querytext, int location)
{
	if (querytext == NULL || location < 0)
		return 0;
	return errposition(pg_mbstrlen_with_len(querytext, location) + 1);
}

static void
not_supported(CVPlan *plan, const char *construct, int location)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported in a continuous view", construct),
			 error_position(plan->querytext, location)));
}

/* find the first expression node that itself calls a volatile function */
static bool
is_volatile_func(Oid func_id, void *context)
{
	return func_volatile(func_id) == PROVOLATILE_VOLATILE;
}

static bool
find_volatile_walker(Node *node, Node **found)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, find_volatile_walker,
								 (void *) found, 0);
	if (check_functions_in_node(node, is_volatile_func, NULL))
	{
		*found = node;
		return true;
	}
	return expression_tree_walker(node, find_volatile_walker, (void *) found);
}

static bool
collect_aggs_walker(Node *node, List **aggs)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		ListCell   *lc;

		foreach(lc, *aggs)
		{
			if (equal(((CVAgg *) lfirst(lc))->aggref, node))
				return false;
		}
		{
			CVAgg	   *agg = palloc0(sizeof(CVAgg));

			agg->aggref = (Aggref *) node;
			*aggs = lappend(*aggs, agg);
		}
		return false;			/* nested aggregates are rejected by the parser */
	}
	return expression_tree_walker(node, collect_aggs_walker, (void *) aggs);
}

static void
check_btree_type(CVPlan *plan, Oid type, const char *what, Expr *expr)
{
	/* an anonymous row (k, x) has a btree opclass but no column can hold it */
	if (get_typtype(type) == TYPTYPE_PSEUDO)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s of type %s is not supported in a continuous view",
						what, format_type_be(type)),
				 errdetail("The materialization stores it in a column, and a column cannot have a pseudo-type."),
				 errhint("Cast a row value to a composite type made with CREATE TYPE, or use one expression per column."),
				 error_position(plan->querytext, exprLocation((Node *) expr))));
	if (!OidIsValid(GetDefaultOpClass(type, BTREE_AM_OID)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s of type %s is not supported in a continuous view",
						what, format_type_be(type)),
				 errdetail("The materialization keeps a unique index on it, which needs a btree operator class."),
				 error_position(plan->querytext, exprLocation((Node *) expr))));
}

/*
 * Validate an analyzed query for use as a continuous view and fill *plan.
 * Every rejection is feature_not_supported (or wrong_object_type for a
 * FROM item that is not a stream) and names the construct.  A hopping
 * window has been recognised and rewritten by window_rewrite_hop() before:
 * q is then the copy reading the stream alone, and hop its window.
 */
void
cv_analyze(Query *q, const char *querytext, List *aliases,
		   struct CVWindow *hop, CVPlan *plan)
{
	Node	   *volatile_node = NULL;
	ListCell   *lc;
	int			ncols = 0;

	memset(plan, 0, sizeof(CVPlan));
	plan->querytext = querytext;
	plan->window = hop;
	plan->query = q;

	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view must be defined by a SELECT")));
	if (q->setOperations)
		not_supported(plan, "UNION, INTERSECT or EXCEPT", -1);
	if (q->cteList)
		not_supported(plan, "WITH", -1);
	if (q->hasWindowFuncs)
		not_supported(plan, "a window function", -1);
	if (q->hasSubLinks)
		not_supported(plan, "a subquery", -1);
	if (q->hasTargetSRFs)
		not_supported(plan, "a set-returning function in the select list", -1);
	if (q->sortClause)
		not_supported(plan, "ORDER BY", -1);
	if (q->limitCount || q->limitOffset)
		not_supported(plan, "LIMIT or OFFSET", exprLocation(q->limitCount ? q->limitCount : q->limitOffset));
	if (q->hasDistinctOn)
		not_supported(plan, "DISTINCT ON", -1);
	if (q->distinctClause)
		not_supported(plan, "SELECT DISTINCT", -1);
	if (q->rowMarks)
		not_supported(plan, "FOR UPDATE/SHARE", -1);
	if (q->groupingSets)
		not_supported(plan, "GROUPING SETS, ROLLUP or CUBE", -1);

	/* one stream, maybe joined to tables (joins.c) */
	plan->streamid = joins_check_from(q, querytext, "continuous view");

	if (!q->hasAggs && q->groupClause == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view needs aggregates or GROUP BY"),
				 errhint("Continuous transforms (views without aggregates) are not supported yet.")));

	/* a changelog stream's rows may retract others: signed sums (retract.c) */
	if (se_stream_is_changelog(plan->streamid))
		q = plan->query = se_retract_rewrite(q, plan->streamid, querytext);

	(void) find_volatile_walker((Node *) q, &volatile_node);
	if (volatile_node != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("volatile functions are not supported in a continuous view"),
				 errdetail("A continuous view must equal its query run over the stream; a volatile expression would differ at every evaluation."),
				 error_position(querytext, exprLocation(volatile_node))));

	/* group keys */
	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, q->targetList);
		CVKey	   *key = palloc0(sizeof(CVKey));

		key->expr = tle->expr;
		key->type = exprType((Node *) tle->expr);
		key->typmod = exprTypmod((Node *) tle->expr);
		key->collation = exprCollation((Node *) tle->expr);
		key->colname = (!tle->resjunk && tle->resname) ? pstrdup(tle->resname) : NULL;
		check_btree_type(plan, key->type, "GROUP BY expression", tle->expr);
		plan->keys = lappend(plan->keys, key);
	}
	plan->keyless = (plan->keys == NIL);

	/* aggregates, from the select list and HAVING */
	(void) collect_aggs_walker((Node *) q->targetList, &plan->aggs);
	(void) collect_aggs_walker(q->havingQual, &plan->aggs);
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		int			loc = agg->aggref->location;

		if (is_count_distinct(agg->aggref))
		{
			Expr	   *arg = ((TargetEntry *) linitial(agg->aggref->args))->expr;

			agg->is_distinct = true;
			check_btree_type(plan, exprType((Node *) arg), "count(DISTINCT) argument", arg);
			/* changelog: signed value counts need the unique index (retract.c) */
			if (se_stream_is_changelog(plan->streamid) && cv_auxrel_hashed(plan, agg))
				se_retract_refuse_wide_distinct(agg->aggref, querytext);
			continue;
		}
		describe_agg_storage(agg->aggref, &agg->storage,
							 (loc >= 0 && querytext) ?
							 pg_mbstrlen_with_len(querytext, loc) + 1 : 0);
	}

	/* user-facing column names */
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		if (ncols < list_length(aliases))
			plan->colnames = lappend(plan->colnames,
									 makeString(pstrdup(strVal(list_nth(aliases, ncols)))));
		else
			plan->colnames = lappend(plan->colnames, makeString(pstrdup(tle->resname)));
		ncols++;
	}
	if (list_length(aliases) > ncols)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("CREATE VIEW specifies more column names than columns")));

	cv_name_columns(plan);
}

/* pick a column name not used yet */
static char *
choose_name(const char *base, List **used)
{
	char	   *name = pstrdup(base);
	int			n = 1;

	for (;;)
	{
		ListCell   *lc;
		bool		clash = false;

		foreach(lc, *used)
		{
			if (strcmp(strVal(lfirst(lc)), name) == 0)
			{
				clash = true;
				break;
			}
		}
		if (!clash)
			break;
		name = psprintf("%.*s_%d", NAMEDATALEN - 8, base, ++n);
	}
	*used = lappend(*used, makeString(name));
	return name;
}

void
cv_name_columns(CVPlan *plan)
{
	List	   *used = list_make1(makeString(CV_SINGLE_COLUMN));
	ListCell   *lc;
	int			i = 0;

	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		i++;
		key->colname = choose_name(key->colname ? key->colname : psprintf("key_%d", i), &used);
	}
	i = 0;
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		char	   *aggname = get_func_name(agg->aggref->aggfnoid);

		i++;
		agg->colname = choose_name(psprintf("%s_%s_%d", agg->is_distinct ? "distinct" : "state",
											aggname, i), &used);
	}
	/* the delta's columns of a deferred count(DISTINCT): after all others */
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (agg->is_distinct)
			agg->valuescol = choose_name(psprintf("%s_values", agg->colname), &used);
	}
}

/* ---- SQL generation ---------------------------------------------------- */

char *
se_type_sql(Oid type, int32 typmod, Oid collation)
{
	char	   *s = format_type_extended(type, typmod,
										 FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);

	if (OidIsValid(collation) && collation != get_typcollation(type))
		s = psprintf("%s COLLATE %s", s, generate_collation_name(collation));
	return s;
}

void
append_key_columns(StringInfo buf, CVPlan *plan, const char *prefix)
{
	ListCell   *lc;
	bool		first = true;

	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		appendStringInfo(buf, "%s%s%s", first ? "" : ", ", prefix,
						 quote_identifier(key->colname));
		first = false;
	}
}

/* the columns telling the groups apart: the keys, or CV_SINGLE_COLUMN */
static void
append_group_columns(StringInfo buf, CVPlan *plan, const char *prefix)
{
	if (plan->keyless)
		appendStringInfo(buf, "%s%s", prefix, CV_SINGLE_COLUMN);
	else
		append_key_columns(buf, plan, prefix);
}

/*
 * ", stream_ext.merge_states(<prefix>col, 'aggfn'::regprocedure) AS col" for
 * every aggregate: the states of several rows of a group combined, for reads
 * that gather partial states (session fragments, a distributed view's nodes).
 */
static void
append_merged_state(StringInfo buf, CVAgg *agg, const char *prefix)
{
	const char *col = quote_identifier(agg->colname);

	appendStringInfo(buf, ", stream_ext.merge_states(%s%s, %s::pg_catalog.regprocedure) AS %s",
					 prefix, col,
					 quote_literal_cstr(format_procedure_qualified(agg->aggref->aggfnoid)),
					 col);
}

void
append_merged_states(StringInfo buf, CVPlan *plan, const char *prefix)
{
	ListCell   *lc;

	foreach(lc, plan->aggs)
		append_merged_state(buf, lfirst(lc), prefix);
}

char *
cv_matrel_key_list(CVPlan *plan)
{
	StringInfoData buf;

	initStringInfo(&buf);
	append_group_columns(&buf, plan, "");
	return buf.data;
}

/*
 * Wide keys.  A btree index entry holds at most ~2.7 kB, so a unique index
 * on the group keys (or on a side table's keys and value) refuses a batch
 * holding one wider value.  When a key (or the distinct value) is of a
 * variable-width type, the table gets a column CV_KEY_HASH_COLUMN, a 64-bit
 * hash of the keys (and value) chained through each type's extended hash
 * function -- the one hash joins and hash indexes use, so values equal by
 * the type's equality hash alike -- and is indexed on that instead:
 *
 * - the materialization: a unique index on the hash, the upsert's conflict
 *	 target.  Its DO UPDATE rechecks the keys exactly and calls
 *	 stream_ext.key_hash_collision(), which raises an error, if two
 *	 different groups have the same hash: a collision never merges groups.
 * - a count(DISTINCT) side table: a plain index on the hash; a (keys,
 *	 value) pair is new if no row with its hash has equal keys and value.
 *	 Exact whatever the hash; concurrent batches cannot both add the same
 *	 pair because the maintenance statement has locked the group's row in
 *	 the materialization first (cv_maintain_sql always locks when a side
 *	 table is hashed) and the distinct statement runs with a fresh snapshot.
 *
 * The hash is stream_ext.key_hash() (aggsupport.c): each value hashed by
 * its own type, with no cast that could depend on settings.  A hashed
 * materialization also gets an index leading with the first key, for
 * reads by key (WHERE url = ...) and TTL deletes: a hash index on the
 * first key if it is variable-width (no size limit, equality only), else
 * a btree on the leading fixed-width keys.
 *
 * Fixed-width keys keep the unique btree on the keys themselves (cheaper).
 * Types without an extended hash function keep it too, and so do views
 * created by an installation whose SQL objects predate stream_ext.key_hash
 * (0.2 running this module before ALTER EXTENSION UPDATE).
 */
static Oid
key_hash_func(Oid type)
{
	return lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC)->hash_extended_proc;
}

/* does the installed extension have stream_ext.key_hash("any", int8)? */
static bool
key_hash_installed(void)
{
	Oid			argtypes[2] = {ANYOID, INT8OID};

	return OidIsValid(LookupFuncName(list_make2(makeString("stream_ext"),
												makeString("key_hash")),
									 2, argtypes, true));
}

/* do these types need a hash (some variable-width), and do they all have one? */
static bool
types_need_hash(List *types)
{
	ListCell   *lc;
	bool		wide = false;

	if (!key_hash_installed())
		return false;

	foreach(lc, types)
	{
		Oid			type = lfirst_oid(lc);

		if (!OidIsValid(key_hash_func(type)))
			return false;
		wide |= (get_typlen(type) < 0);
	}
	return wide;
}

static List *
key_types(CVPlan *plan)
{
	List	   *types = NIL;
	ListCell   *lc;

	foreach(lc, plan->keys)
		types = lappend_oid(types, ((CVKey *) lfirst(lc))->type);
	return types;
}

static Expr *distinct_arg(CVAgg *agg);

bool
cv_matrel_hashed(CVPlan *plan)
{
	return !plan->keyless && types_need_hash(key_types(plan));
}

bool
cv_auxrel_hashed(CVPlan *plan, CVAgg *agg)
{
	return types_need_hash(lappend_oid(key_types(plan),
									   exprType((Node *) distinct_arg(agg))));
}

/* does any side table rely on the maintenance statement locking its groups? */
static bool
any_auxrel_hashed(CVPlan *plan)
{
	ListCell   *lc;

	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (agg->is_distinct && cv_auxrel_hashed(plan, agg))
			return true;
	}
	return false;
}

/*
 * The hash of the values exprs (SQL expressions): h_n where h_0 = 0 and
 * h_i = stream_ext.key_hash(expr_i, h_i-1), each value hashed by its own
 * type (aggsupport.c), masked to stream_ext.debug_key_hash_bits bits if
 * that is set.
 */
static void
append_key_hash(StringInfo buf, List *exprs)
{
	StringInfoData h;
	ListCell   *le;

	initStringInfo(&h);
	appendStringInfoString(&h, "0::pg_catalog.int8");
	foreach(le, exprs)
	{
		char	   *prev = pstrdup(h.data);

		resetStringInfo(&h);
		appendStringInfo(&h, "stream_ext.key_hash((%s), %s)", (char *) lfirst(le), prev);
	}
	if (stream_ext_debug_key_hash_bits > 0)
		appendStringInfo(buf, "(%s OPERATOR(pg_catalog.&) " INT64_FORMAT ")", h.data,
						 (int64) ((UINT64CONST(1) << stream_ext_debug_key_hash_bits) - 1));
	else
		appendStringInfoString(buf, h.data);
}

/* append_key_hash() for other files: the hash of key expressions (SQL) */
char *
cv_key_hash_sql(List *exprs)
{
	StringInfoData buf;

	initStringInfo(&buf);
	append_key_hash(&buf, exprs);
	return buf.data;
}

/* the key columns of the plan, each with prefix */
static List *
key_column_refs(CVPlan *plan, const char *prefix)
{
	List	   *refs = NIL;
	ListCell   *lc;

	foreach(lc, plan->keys)
		refs = lappend(refs, psprintf("%s%s", prefix,
									  quote_identifier(((CVKey *) lfirst(lc))->colname)));
	return refs;
}

/* ROW(a.k1, ...) IS NOT DISTINCT FROM ROW(b.k1, ...) */
static void
append_rows_equal(StringInfo buf, List *a, List *b)
{
	ListCell   *la;
	ListCell   *lb;

	appendStringInfoString(buf, "ROW(");
	foreach(la, a)
		appendStringInfo(buf, "%s%s", foreach_current_index(la) > 0 ? ", " : "",
						 (char *) lfirst(la));
	appendStringInfoString(buf, ") IS NOT DISTINCT FROM ROW(");
	foreach(lb, b)
		appendStringInfo(buf, "%s%s", foreach_current_index(lb) > 0 ? ", " : "",
						 (char *) lfirst(lb));
	appendStringInfoChar(buf, ')');
}

/* the materialization's conflict target (and unique index columns) */
static const char *
matrel_conflict_target(CVPlan *plan)
{
	return cv_matrel_hashed(plan) ? CV_KEY_HASH_COLUMN : cv_matrel_key_list(plan);
}

/*
 * SET clause item of a hashed materialization's DO UPDATE: the exact
 * recheck of the keys of the row the hash found.
 */
static void
append_key_recheck(StringInfo buf, CVPlan *plan, const char *matrel)
{
	appendStringInfo(buf, "%s = CASE WHEN ", CV_KEY_HASH_COLUMN);
	append_rows_equal(buf, key_column_refs(plan, "m."), key_column_refs(plan, "excluded."));
	appendStringInfo(buf, " THEN m.%s ELSE stream_ext.key_hash_collision(%s::pg_catalog.regclass) END",
					 CV_KEY_HASH_COLUMN, quote_literal_cstr(matrel));
}

/* the materialization's key hash column, appended to its columns, or "" */
char *
cv_matrel_hash_column_sql(CVPlan *plan)
{
	return cv_matrel_hashed(plan) ? ", " CV_KEY_HASH_COLUMN " bigint NOT NULL" : "";
}

/*
 * An index on rel for reads by key with no size limit when a key is of a
 * variable-width type: a hash index on the first key if that one is
 * variable-width (equality only), else a btree on the leading fixed-width
 * keys.  When every key is fixed-width (or the first key's type has no
 * hash opclass), the btree on all the keys followed by trailing (a column,
 * or NULL).
 */
Oid
cv_create_key_lookup_index(CVPlan *plan, Oid relid, const char *trailing)
{
	ListCell   *lc;
	List	   *columns = NIL;
	CVKey	   *first = linitial(plan->keys);

	if (get_typlen(first->type) < 0 && OidIsValid(key_hash_func(first->type)))
		return se_create_index(relid, list_make1(first->colname), "hash", false, false);
	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		if (get_typlen(key->type) < 0 && OidIsValid(key_hash_func(key->type)))
			break;
		columns = lappend(columns, key->colname);
	}
	if (lc == NULL && trailing != NULL)
		columns = lappend(columns, (char *) trailing);
	return se_create_index(relid, columns, NULL, false, false);
}

/* the columns telling the groups apart, as names: the keys, or CV_SINGLE_COLUMN */
static List *
group_column_names(CVPlan *plan)
{
	List	   *names = NIL;
	ListCell   *lc;

	if (plan->keyless)
		return list_make1(CV_SINGLE_COLUMN);
	foreach(lc, plan->keys)
		names = lappend(names, ((CVKey *) lfirst(lc))->colname);
	return names;
}

/*
 * The indexes of the materialization: the unique index (the upsert's
 * conflict target, NULLS NOT DISTINCT) and, if hashed, the index for reads
 * by key (see "Wide keys")
 */
void
cv_create_matrel_indexes(CVPlan *plan, Oid matrelid)
{
	if (!cv_matrel_hashed(plan))
	{
		(void) se_create_index(matrelid, group_column_names(plan), NULL, true, true);
		return;
	}
	(void) se_create_index(matrelid, list_make1(CV_KEY_HASH_COLUMN), NULL, true, true);
	(void) cv_create_key_lookup_index(plan, matrelid, NULL);
}

/* the [unique] index of a count(DISTINCT) side table */
void
cv_create_auxrel_index(CVPlan *plan, CVAgg *agg, Oid auxid)
{
	if (cv_auxrel_hashed(plan, agg))
		(void) se_create_index(auxid, list_make1(CV_KEY_HASH_COLUMN), NULL, false, false);
	else
		(void) se_create_index(auxid,
							   lappend(plan->keyless ? NIL : group_column_names(plan), "value"),
							   NULL, true, true);
}

/* column definitions of the materialization table */
char *
cv_matrel_columns_sql(CVPlan *plan)
{
	StringInfoData buf;
	ListCell   *lc;
	bool		first = true;

	initStringInfo(&buf);
	if (plan->keyless)
	{
		appendStringInfoString(&buf, CV_SINGLE_COLUMN " boolean NOT NULL DEFAULT true CHECK (" CV_SINGLE_COLUMN ")");
		first = false;
	}
	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		appendStringInfo(&buf, "%s%s %s", first ? "" : ", ",
						 quote_identifier(key->colname),
						 se_type_sql(key->type, key->typmod, key->collation));
		first = false;
	}
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		appendStringInfo(&buf, "%s%s", first ? "" : ", ", cv_state_column_sql(agg));
		first = false;
	}
	return buf.data;
}

/* the definition of an aggregate's column: name and type */
char *
cv_state_column_sql(CVAgg *agg)
{
	if (agg->is_distinct)
		return psprintf("%s bigint NOT NULL DEFAULT 0", quote_identifier(agg->colname));
	return psprintf("%s %s", quote_identifier(agg->colname),
					se_type_sql(agg->storage.statetype, -1,
								type_is_collatable(agg->storage.statetype) ?
								agg->aggref->inputcollid : InvalidOid));
}

static Expr *
distinct_arg(CVAgg *agg)
{
	return ((TargetEntry *) linitial(agg->aggref->args))->expr;
}

/* column definitions of a count(DISTINCT) side table: keys, then value */
char *
cv_auxrel_columns_sql(CVPlan *plan, CVAgg *agg)
{
	StringInfoData buf;
	ListCell   *lc;
	Expr	   *arg = distinct_arg(agg);

	initStringInfo(&buf);
	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		appendStringInfo(&buf, "%s %s, ", quote_identifier(key->colname),
						 se_type_sql(key->type, key->typmod, key->collation));
	}
	appendStringInfo(&buf, "value %s NOT NULL",
					 se_type_sql(exprType((Node *) arg), exprTypmod((Node *) arg),
								 exprCollation((Node *) arg)));
	if (se_stream_is_changelog(plan->streamid))
		appendStringInfoString(&buf, ", " SE_SIDE_COUNT_COLUMN " bigint NOT NULL DEFAULT 0, "
							   SE_SIDE_PREVIOUS_COLUMN " bigint NOT NULL DEFAULT 0");
	if (cv_auxrel_hashed(plan, agg))
		appendStringInfo(&buf, ", %s bigint NOT NULL", CV_KEY_HASH_COLUMN);
	return buf.data;
}

/* an interval as a SQL literal: '...'::pg_catalog.interval */
char *
interval_sql_literal(const Interval *iv)
{
	return psprintf("%s::pg_catalog.interval",
					quote_literal_cstr(DatumGetCString(DirectFunctionCall1(interval_out,
																		   IntervalPGetDatum(iv)))));
}

List *
se_stream_context(CVPlan *plan)
{
	return joins_deparse_context(plan->query, plan->streamid);
}

void
append_key_exprs(StringInfo buf, CVPlan *plan, List *ctx)
{
	ListCell   *lc;
	bool		first = true;

	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		appendStringInfo(buf, "%s%s", first ? "" : ", ",
						 deparse_expression((Node *) key->expr, ctx, true, false));
		first = false;
	}
}

static void
append_positions(StringInfo buf, const char *clause, int n)
{
	if (n == 0)
		return;
	appendStringInfo(buf, " %s ", clause);
	for (int i = 1; i <= n; i++)
		appendStringInfo(buf, "%s%d", i > 1 ? ", " : "", i);
}

/*
 * The expression merging two stored states.  In general that is
 * stream_ext.combine(), which deserializes, calls the combine function in an
 * aggregate context and serializes.  Built-in combine functions of scalar
 * states (int8pl, float8pl, int4larger, ...) are plain functions: call them
 * directly, with the strictness rule of nodeAgg.c -- a NULL side is
 * ignored.  Array states (float8_combine, interval_combine, ...) may need
 * the aggregate context and take the general path.
 */
static void
append_combine(StringInfo buf, CVAgg *agg, const char *a, const char *b)
{
	Oid			fn = agg->storage.combinefn;
	HeapTuple	tup;
	Form_pg_proc proc;
	char	   *call;

	if (agg->storage.serialized ||
		get_func_namespace(fn) != PG_CATALOG_NAMESPACE ||
		OidIsValid(get_element_type(agg->storage.statetype)))
	{
		appendStringInfo(buf, "stream_ext.combine(%s, %s, %s::pg_catalog.regprocedure)",
						 a, b,
						 quote_literal_cstr(format_procedure_qualified(agg->aggref->aggfnoid)));
		return;
	}
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", fn);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (proc->pronargs != 2)
		elog(ERROR, "combine function %u does not take two arguments", fn);
	call = psprintf("%s(%s, %s)",
					quote_qualified_identifier(get_namespace_name(proc->pronamespace),
											   NameStr(proc->proname)),
					a, b);
	if (proc->proisstrict)
		appendStringInfo(buf, "CASE WHEN %s IS NULL THEN %s WHEN %s IS NULL THEN %s ELSE %s END",
						 a, b, b, a, call);
	else
		appendStringInfoString(buf, call);
	ReleaseSysCache(tup);
}

/*
 * The pieces of the batch's partial aggregation (see cv_batch_agg_sql()):
 * what views of one stream must have in common to share it (keys, hash,
 * tail) and what each adds (its states).
 */
static char *distinct_values_expr(CVAgg *agg, List *ctx);

void
cv_batch_agg_parts(CVPlan *plan, const char *source, CVBatchAggParts *parts)
{
	StringInfoData buf;
	List	   *ctx = se_stream_context(plan);
	ListCell   *lc;
	Node	   *where = plan->query->jointree->quals;

	memset(parts, 0, sizeof(CVBatchAggParts));
	foreach(lc, plan->keys)
		parts->key_exprs = lappend(parts->key_exprs,
								   deparse_expression((Node *) ((CVKey *) lfirst(lc))->expr,
													  ctx, true, false));
	if (cv_matrel_hashed(plan))
	{
		initStringInfo(&buf);
		append_key_hash(&buf, parts->key_exprs);
		parts->hash_expr = buf.data;
	}
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (agg->is_distinct)
		{
			if (plan->defer_distinct)
			{
				parts->values_exprs = lappend(parts->values_exprs, distinct_values_expr(agg, ctx));
				parts->values_cols = lappend(parts->values_cols, agg->valuescol);
			}
			continue;
		}
		parts->state_exprs =
			lappend(parts->state_exprs,
					psprintf("stream_ext.partial(%s, NULL::%s)",
							 deparse_expression((Node *) agg->aggref, ctx, true, false),
							 format_type_extended(agg->storage.statetype, -1,
												  FORMAT_TYPE_FORCE_QUALIFY)));
		parts->state_cols = lappend(parts->state_cols, agg->colname);
	}
	initStringInfo(&buf);
	appendStringInfo(&buf, " FROM %s", joins_from_sql(plan->query, ctx, source));
	if (where)
		appendStringInfo(&buf, " WHERE %s", deparse_expression(where, ctx, true, false));
	if (plan->extra_batch_qual && strcmp(source, CV_NEW_ROWS) == 0)
		appendStringInfo(&buf, " %s %s", where ? "AND" : "WHERE", plan->extra_batch_qual);
	if (plan->keyless)
		appendStringInfoString(&buf, " GROUP BY ()");	/* always one row */
	append_positions(&buf, "GROUP BY", list_length(plan->keys));
	parts->tail = buf.data;
}

/*
 * The batch's partial aggregation: one row per group of the rows read from
 * source (the transition table CV_NEW_ROWS or, for the backfill, the stream
 * itself), its columns named as the materialization's: the keys (or
 * CV_SINGLE_COLUMN), CV_KEY_HASH_COLUMN when the materialization is hashed,
 * and one partial state per aggregate other than count(DISTINCT).
 */
char *
cv_batch_agg_sql(CVPlan *plan, const char *source)
{
	StringInfoData buf;
	CVBatchAggParts parts;
	ListCell   *lc;
	ListCell   *lk;

	cv_batch_agg_parts(plan, source, &parts);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT ");
	if (plan->keyless)
		appendStringInfoString(&buf, "true AS " CV_SINGLE_COLUMN);
	forboth(lc, parts.key_exprs, lk, plan->keys)
		appendStringInfo(&buf, "%s%s AS %s", foreach_current_index(lc) ? ", " : "",
						 (char *) lfirst(lc),
						 quote_identifier(((CVKey *) lfirst(lk))->colname));
	if (parts.hash_expr)
		appendStringInfo(&buf, ", %s AS " CV_KEY_HASH_COLUMN, parts.hash_expr);
	forboth(lc, parts.state_exprs, lk, parts.state_cols)
		appendStringInfo(&buf, ", %s AS %s", (char *) lfirst(lc),
						 quote_identifier((char *) lfirst(lk)));
	forboth(lc, parts.values_exprs, lk, parts.values_cols)
		appendStringInfo(&buf, ", %s AS %s", (char *) lfirst(lc),
						 quote_identifier((char *) lfirst(lk)));
	appendStringInfoString(&buf, parts.tail);
	return buf.data;
}

static char *store_sql(CVPlan *plan, const char *matrel, const char *from_item,
					   const char *alias, bool with_distinct);

/* has the plan a count(DISTINCT)? */
static bool
has_distinct(CVPlan *plan)
{
	ListCell   *lc;

	foreach(lc, plan->aggs)
	{
		if (((CVAgg *) lfirst(lc))->is_distinct)
			return true;
	}
	return false;
}

/*
 * ", <prefix>col" for each count(DISTINCT) column: its count, or (values)
 * the delta's column of its values (deferred, see below)
 */
static char *
distinct_columns_of(CVPlan *plan, const char *prefix, bool values)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (agg->is_distinct)
			appendStringInfo(&buf, ", %s%s", prefix,
							 quote_identifier(values ? agg->valuescol : agg->colname));
	}
	return buf.data;
}

static char *
distinct_columns(CVPlan *plan, const char *prefix)
{
	return distinct_columns_of(plan, prefix, false);
}

/*
 * The columns cv_batch_agg_sql() yields, in its order: keys, hash, states,
 * each name after prefix.
 */
static char *
batch_agg_columns(CVPlan *plan, const char *prefix, bool *has_states)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	append_group_columns(&buf, plan, prefix);
	if (cv_matrel_hashed(plan))
		appendStringInfo(&buf, ", %s%s", prefix, CV_KEY_HASH_COLUMN);
	*has_states = false;
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (!agg->is_distinct)
		{
			appendStringInfo(&buf, ", %s%s", prefix, quote_identifier(agg->colname));
			*has_states = true;
		}
	}
	return buf.data;
}

/*
 * The store of a batch's partial aggregation: the rows of from_item (a
 * relation name or a parenthesized subquery, with the columns of
 * cv_batch_agg_sql()), read under alias, merged into the materialization
 * in key order so that concurrent batches lock groups in the same order.
 * Every column reference is qualified: catalog_column_user() takes a bare
 * name for a possible use of the stream's column of that name.
 */
char *
cv_store_sql(CVPlan *plan, const char *matrel, const char *from_item,
			 const char *alias)
{
	return store_sql(plan, matrel, from_item, alias, false);
}

/*
 * cv_store_sql(), and with_distinct: from_item also has the count(DISTINCT)
 * columns (counts of values new to the group), added to the stored ones --
 * the compaction of a delta (cv_compact_sql()).
 */
static char *
store_sql(CVPlan *plan, const char *matrel, const char *from_item,
		  const char *alias, bool with_distinct)
{
	StringInfoData buf;
	ListCell   *lc;
	bool		first;
	bool		has_states;
	bool		hashed = cv_matrel_hashed(plan);
	char	   *prefix = psprintf("%s.", alias);
	char	   *cols = batch_agg_columns(plan, "", &has_states);
	char	   *from_cols = batch_agg_columns(plan, prefix, &has_states);

	if (with_distinct && has_distinct(plan))
	{
		cols = psprintf("%s%s", cols, distinct_columns(plan, ""));
		from_cols = psprintf("%s%s", from_cols, distinct_columns(plan, prefix));
		has_states = true;
	}
	else
		with_distinct = false;

	initStringInfo(&buf);
	appendStringInfo(&buf, "INSERT INTO %s AS m (%s) SELECT %s FROM %s AS %s",
					 matrel, cols, from_cols, from_item, alias);
	if (!plan->keyless)
	{
		appendStringInfoString(&buf, " ORDER BY ");
		append_key_columns(&buf, plan, prefix);
	}
	appendStringInfo(&buf, " ON CONFLICT (%s) DO ", matrel_conflict_target(plan));
	if (!has_states && !hashed && !any_auxrel_hashed(plan))
		appendStringInfoString(&buf, "NOTHING");
	else if (!has_states && !hashed)
	{
		/* lock the group's row for the hashed side tables (see above) */
		const char *col = plan->keyless ? CV_SINGLE_COLUMN :
			quote_identifier(((CVKey *) linitial(plan->keys))->colname);
		appendStringInfo(&buf, "UPDATE SET %s = excluded.%s", col, col);
	}
	else
	{
		appendStringInfoString(&buf, "UPDATE SET ");
		first = true;
		if (hashed)
		{
			append_key_recheck(&buf, plan, matrel);
			first = false;
		}
		foreach(lc, plan->aggs)
		{
			CVAgg	   *agg = lfirst(lc);
			const char *col;

			col = quote_identifier(agg->colname);
			if (agg->is_distinct)
			{
				if (with_distinct)
				{
					appendStringInfo(&buf, "%s%s = m.%s OPERATOR(pg_catalog.+) excluded.%s",
									 first ? "" : ", ", col, col, col);
					first = false;
				}
				continue;
			}
			appendStringInfo(&buf, "%s%s = ", first ? "" : ", ", col);
			append_combine(&buf, agg, psprintf("m.%s", col), psprintf("excluded.%s", col));
			first = false;
		}
	}
	return buf.data;
}

/*
 * The batch's partial aggregation of source, appended to rel (a delta) or
 * stored into it (a materialization).
 */
static char *
maintain_statement(CVPlan *plan, const char *rel, const char *source, bool append)
{
	char	   *from_item = psprintf("(%s)", cv_batch_agg_sql(plan, source));

	return psprintf("/* stream_ext maintenance */ %s",
					append ? cv_append_sql(plan, rel, from_item, CV_BATCH_AGG_ALIAS) :
					cv_store_sql(plan, rel, from_item, CV_BATCH_AGG_ALIAS));
}

/*
 * The per-batch statement: the batch's partial aggregation
 * (cv_batch_agg_sql()) stored into the materialization (cv_store_sql()).
 * source is the relation read: the transition table (CV_NEW_ROWS) or, for
 * the backfill, the stream itself.
 */
char *
cv_maintain_sql(CVPlan *plan, const char *matrel, const char *source)
{
	return maintain_statement(plan, matrel, source, false);
}

/* the position of string str in list (of char *), or -1 */
static int
string_position(List *list, const char *str)
{
	ListCell   *lc;

	foreach(lc, list)
	{
		if (strcmp(lfirst(lc), str) == 0)
			return foreach_current_index(lc);
	}
	return -1;
}

/*
 * A continuous view's attribute names, as CREATE VIEW's column aliases: to
 * analyze its stored definition again as it was created.
 */
List *
cv_view_column_aliases(Oid viewid)
{
	Relation	rel = relation_open(viewid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *aliases = NIL;
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped)
			aliases = lappend(aliases, makeString(pstrdup(NameStr(att->attname))));
	}
	relation_close(rel, AccessShareLock);
	return aliases;
}

/*
 * The batch's partial aggregation shared by several views (plans, with
 * matrels their materializations, in that order): views of one stream
 * whose cv_batch_agg_parts() have the same keys, hash and tail (same FROM,
 * WHERE and GROUP BY).  One statement: the aggregation, computing each
 * distinct partial state once, as a materialized CTE, then one store per
 * view reading its columns from it -- cv_append_sql() into its delta where
 * deltas (in the order of plans) has one, else cv_store_sql() -- and one
 * row with the number of groups each store wrote, in the order of plans.
 */
char *
cv_shared_maintain_sql(List *plans, List *matrels, List *deltas)
{
	StringInfoData buf;
	CVPlan	   *first = linitial(plans);
	CVBatchAggParts parts;
	List	   *states = NIL;	/* distinct state expressions */
	ListCell   *lp;
	ListCell   *lm;
	ListCell   *ld;
	ListCell   *lc;

	cv_batch_agg_parts(first, CV_NEW_ROWS, &parts);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "/* stream_ext maintenance */ WITH " CV_SHARED_AGG " AS MATERIALIZED (SELECT ");
	if (first->keyless)
		appendStringInfoString(&buf, "true AS " CV_SINGLE_COLUMN);
	foreach(lc, parts.key_exprs)
		appendStringInfo(&buf, "%s%s AS k%d", foreach_current_index(lc) ? ", " : "",
						 (char *) lfirst(lc), foreach_current_index(lc) + 1);
	if (parts.hash_expr)
		appendStringInfo(&buf, ", %s AS " CV_KEY_HASH_COLUMN, parts.hash_expr);
	foreach(lp, plans)
	{
		CVBatchAggParts p;

		cv_batch_agg_parts(lfirst(lp), CV_NEW_ROWS, &p);
		foreach(lc, list_concat(list_copy(p.state_exprs), p.values_exprs))
		{
			if (string_position(states, lfirst(lc)) >= 0)
				continue;
			states = lappend(states, lfirst(lc));
			appendStringInfo(&buf, ", %s AS s%d", (char *) lfirst(lc), list_length(states));
		}
	}
	appendStringInfo(&buf, "%s)", parts.tail);

	/* one store per view, reading its columns under its names */
	forthree(lp, plans, lm, matrels, ld, deltas)
	{
		CVPlan	   *plan = lfirst(lp);
		CVBatchAggParts p;
		StringInfoData from;
		ListCell   *lk;

		cv_batch_agg_parts(plan, CV_NEW_ROWS, &p);
		initStringInfo(&from);
		appendStringInfoString(&from, "(SELECT ");
		if (plan->keyless)
			appendStringInfoString(&from, "b." CV_SINGLE_COLUMN);
		foreach(lk, plan->keys)
			appendStringInfo(&from, "%sb.k%d AS %s", foreach_current_index(lk) ? ", " : "",
							 foreach_current_index(lk) + 1,
							 quote_identifier(((CVKey *) lfirst(lk))->colname));
		if (p.hash_expr)
			appendStringInfoString(&from, ", b." CV_KEY_HASH_COLUMN);
		forboth(lc, p.state_exprs, lk, p.state_cols)
			appendStringInfo(&from, ", b.s%d AS %s",
							 string_position(states, lfirst(lc)) + 1,
							 quote_identifier((char *) lfirst(lk)));
		forboth(lc, p.values_exprs, lk, p.values_cols)
			appendStringInfo(&from, ", b.s%d AS %s",
							 string_position(states, lfirst(lc)) + 1,
							 quote_identifier((char *) lfirst(lk)));
		appendStringInfoString(&from, " FROM " CV_SHARED_AGG " b)");
		appendStringInfo(&buf, ", stream_ext_store%d AS (%s RETURNING 1)",
						 foreach_current_index(lp) + 1,
						 lfirst(ld) ?
						 cv_append_sql(plan, (char *) lfirst(ld), from.data,
									   CV_BATCH_AGG_ALIAS) :
						 cv_store_sql(plan, (char *) lfirst(lm), from.data,
									  CV_BATCH_AGG_ALIAS));
	}
	appendStringInfoString(&buf, " SELECT ");
	foreach(lp, plans)
		appendStringInfo(&buf, "%s(SELECT pg_catalog.count(*) FROM stream_ext_store%d)",
						 foreach_current_index(lp) ? ", " : "", foreach_current_index(lp) + 1);
	return buf.data;
}

/*
 * The per-batch statement of one count(DISTINCT x): record the batch's
 * values not seen before in the group, and add their number to the count:
 * in the materialization (delta NULL), after cv_maintain_sql, which
 * already locked every group's row; or, for a view that appends, as a row
 * of the delta holding only that count (the side table's unique index on
 * (keys, value) alone makes concurrent batches count a value once: the
 * second inserter waits for the first and then finds the conflict).
 */
char *
cv_distinct_sql(CVPlan *plan, CVAgg *agg, const char *matrel,
				const char *auxrel, const char *source, const char *delta)
{
	StringInfoData buf;
	List	   *ctx = se_stream_context(plan);
	Node	   *where = plan->query->jointree->quals;
	char	   *arg = deparse_expression((Node *) distinct_arg(agg), ctx, true, false);
	const char *col = quote_identifier(agg->colname);
	bool		aux_hashed = cv_auxrel_hashed(plan, agg);
	bool		hashed = cv_matrel_hashed(plan);
	int			nkeys = list_length(plan->keys);
	bool		changelog = se_stream_is_changelog(plan->streamid);
	char	   *sign = NULL;
	const char *count = "pg_catalog.count(*)";

	/*
	 * A changelog stream's batch adds its signed count per (keys, value)
	 * (retract.c); the value's count in the group goes from <= 0 to > 0 (+1)
	 * or back (-1).  The upsert's SET reads the row it locked, so
	 * previous_count is exact under concurrent batches.
	 */
	if (changelog)
	{
		sign = deparse_expression((Node *) se_retract_sign_var(plan->query, plan->streamid),
								  ctx, true, false);
		count = "pg_catalog.sum(stream_ext_change)";
	}
	initStringInfo(&buf);
	appendStringInfo(&buf, "/* stream_ext maintenance */ WITH new_values AS (INSERT INTO %s%s (",
					 auxrel, changelog ? " AS a" : "");
	append_key_columns(&buf, plan, "");
	appendStringInfo(&buf, "%svalue%s%s) ", plan->keyless ? "" : ", ",
					 aux_hashed ? ", " CV_KEY_HASH_COLUMN : "",
					 changelog ? ", " SE_SIDE_COUNT_COLUMN : "");
	if (changelog)
	{
		appendStringInfoString(&buf, "SELECT ");
		append_key_exprs(&buf, plan, ctx);
		appendStringInfo(&buf, "%s%s, pg_catalog.sum(%s)", plan->keyless ? "" : ", ", arg, sign);
	}
	else if (aux_hashed)
	{
		/*
		 * the batch's distinct pairs d, with their hash, not yet in auxrel
		 * (columns named one by one: catalog_column_user() takes a
		 * whole-row reference for a use of every stream column)
		 */
		List	   *cols = NIL;

		for (int i = 1; i <= nkeys; i++)
			cols = lappend(cols, psprintf("d.k%d", i));
		cols = lappend(cols, "d.v");
		appendStringInfoString(&buf, "SELECT ");
		for (int i = 1; i <= nkeys; i++)
			appendStringInfo(&buf, "x.k%d, ", i);
		appendStringInfoString(&buf, "x.v, x.h FROM (SELECT ");
		for (int i = 1; i <= nkeys; i++)
			appendStringInfo(&buf, "d.k%d, ", i);
		appendStringInfoString(&buf, "d.v, ");
		append_key_hash(&buf, cols);
		appendStringInfoString(&buf, " AS h FROM (SELECT DISTINCT ");
		for (int i = 1; i <= nkeys; i++)
			appendStringInfo(&buf, "%s AS k%d, ",
							 deparse_expression((Node *) ((CVKey *) list_nth(plan->keys, i - 1))->expr,
												ctx, true, false), i);
		appendStringInfo(&buf, "%s AS v", arg);
	}
	else
	{
		appendStringInfoString(&buf, "SELECT DISTINCT ");
		append_key_exprs(&buf, plan, ctx);
		appendStringInfo(&buf, "%s%s", plan->keyless ? "" : ", ", arg);
	}
	appendStringInfo(&buf, " FROM %s WHERE (%s) IS NOT NULL",
					 joins_from_sql(plan->query, ctx, source), arg);
	if (where)
		appendStringInfo(&buf, " AND (%s)", deparse_expression(where, ctx, true, false));
	if (plan->extra_batch_qual && strcmp(source, CV_NEW_ROWS) == 0)
		appendStringInfo(&buf, " AND %s", plan->extra_batch_qual);
	if (agg->aggref->aggfilter)
		appendStringInfo(&buf, " AND (%s)",
						 deparse_expression((Node *) agg->aggref->aggfilter, ctx, true, false));
	/* deferred: written through only for a roll-up (see "Deferred count(DISTINCT)") */
	if (plan->defer_distinct && delta != NULL)
		appendStringInfo(&buf, " AND EXISTS (SELECT FROM pg_catalog.pg_trigger t"
						 " WHERE t.tgrelid OPERATOR(pg_catalog.=) %s::pg_catalog.regclass"
						 " AND t.tgfoid OPERATOR(pg_catalog.=) 'stream_ext.maintain_rollup()'::pg_catalog.regprocedure)",
						 quote_literal_cstr(auxrel));
	if (aux_hashed)
	{
		List	   *stored = key_column_refs(plan, "e.");
		List	   *xcols = NIL;

		for (int i = 1; i <= nkeys; i++)
			xcols = lappend(xcols, psprintf("x.k%d", i));
		xcols = lappend(xcols, "x.v");
		stored = lappend(stored, "e.value");
		/*
		 * A scalar subquery, not NOT EXISTS: the planner may turn an anti
		 * join into a hash join over the whole side table, once per batch;
		 * a scalar subquery stays an index probe per pair.
		 */
		appendStringInfo(&buf, ") d) x WHERE (SELECT true FROM %s e WHERE e.%s OPERATOR(pg_catalog.=) x.h AND ",
						 auxrel, CV_KEY_HASH_COLUMN);
		append_rows_equal(&buf, stored, xcols);
		appendStringInfoString(&buf, " LIMIT 1) IS NULL RETURNING ");
	}
	else if (changelog)
	{
		append_positions(&buf, "GROUP BY", nkeys + 1);
		appendStringInfo(&buf, " HAVING pg_catalog.sum(%s) OPERATOR(pg_catalog.<>) 0", sign);
		append_positions(&buf, "ORDER BY", nkeys + 1);
		appendStringInfoString(&buf, " ON CONFLICT (");
		append_key_columns(&buf, plan, "");
		appendStringInfo(&buf, "%svalue) DO UPDATE SET "
						 SE_SIDE_PREVIOUS_COLUMN " = a." SE_SIDE_COUNT_COLUMN ", "
						 SE_SIDE_COUNT_COLUMN " = a." SE_SIDE_COUNT_COLUMN
						 " OPERATOR(pg_catalog.+) excluded." SE_SIDE_COUNT_COLUMN " RETURNING ",
						 plan->keyless ? "" : ", ");
	}
	else
		appendStringInfoString(&buf, " ON CONFLICT DO NOTHING RETURNING ");
	if (!plan->keyless)
		append_key_columns(&buf, plan, "");
	else if (!changelog)
		appendStringInfoString(&buf, "1");
	if (changelog)
		appendStringInfo(&buf, "%sCASE WHEN " SE_SIDE_PREVIOUS_COLUMN " OPERATOR(pg_catalog.<=) 0 AND "
						 SE_SIDE_COUNT_COLUMN " OPERATOR(pg_catalog.>) 0 THEN 1 WHEN "
						 SE_SIDE_PREVIOUS_COLUMN " OPERATOR(pg_catalog.>) 0 AND "
						 SE_SIDE_COUNT_COLUMN " OPERATOR(pg_catalog.<=) 0 THEN -1 ELSE 0 END AS stream_ext_change",
						 plan->keyless ? "" : ", ");
	appendStringInfo(&buf, ") INSERT INTO %s AS m (%s%s, %s) SELECT ",
					 delta ? delta : matrel, cv_matrel_key_list(plan),
					 hashed ? ", " CV_KEY_HASH_COLUMN : "", col);
	if (plan->keyless)
		appendStringInfo(&buf, "true, %s FROM new_values HAVING %s OPERATOR(pg_catalog.<>) 0",
						 count, count);
	else
	{
		append_key_columns(&buf, plan, "");
		if (hashed)
		{
			appendStringInfoString(&buf, ", ");
			append_key_hash(&buf, key_column_refs(plan, ""));
		}
		appendStringInfo(&buf, ", %s FROM new_values", count);
		append_positions(&buf, "GROUP BY", nkeys);
		if (changelog)
			appendStringInfo(&buf, " HAVING %s OPERATOR(pg_catalog.<>) 0", count);
		if (delta == NULL)
			append_positions(&buf, "ORDER BY", nkeys);
	}
	/* append mode: the group's count of new values, added when read */
	if (delta != NULL)
		return buf.data;
	appendStringInfo(&buf, " ON CONFLICT (%s) DO UPDATE SET ", matrel_conflict_target(plan));
	if (hashed)
	{
		append_key_recheck(&buf, plan, matrel);
		appendStringInfoString(&buf, ", ");
	}
	appendStringInfo(&buf, "%s = m.%s OPERATOR(pg_catalog.+) excluded.%s", col, col, col);
	return buf.data;
}

/* ---- append mode: the delta ------------------------------------------- */

/*
 * Does a view of this plan append its batches to a delta (see "Append mode"
 * in docs/internals.md)?  Not when a count(DISTINCT) side table is
 * hashed: its batches rely on the upsert locking each group's row before
 * they look for values already seen; nor when a key's type has no
 * extended hash function (reads match groups by their hash).
 * Session windows keep their own fragments (windows/sessions.c) and never
 * ask.
 */
bool
cv_appends(CVPlan *plan)
{
	ListCell   *lc;

	if (any_auxrel_hashed(plan) || !key_hash_installed())
		return false;
	foreach(lc, plan->keys)
	{
		if (!OidIsValid(key_hash_func(((CVKey *) lfirst(lc))->type)))
			return false;
	}
	return true;
}

static char *values_columns(CVPlan *plan, const char *prefix);

/*
 * The append of a batch's partial aggregation: the rows of from_item (with
 * cv_batch_agg_sql()'s columns), read under alias, added to the delta as
 * they are -- no lookup, no lock on any group.  Column references are
 * qualified, as in cv_store_sql().
 */
char *
cv_append_sql(CVPlan *plan, const char *delta, const char *from_item,
			  const char *alias)
{
	bool		has_states;

	return psprintf("INSERT INTO %s (%s%s) SELECT %s%s FROM %s AS %s", delta,
					batch_agg_columns(plan, "", &has_states),
					values_columns(plan, ""),
					batch_agg_columns(plan, psprintf("%s.", alias), &has_states),
					values_columns(plan, psprintf("%s.", alias)),
					from_item, alias);
}

/* the per-batch statement of a view that appends: cv_maintain_sql()'s twin */
char *
cv_maintain_append_sql(CVPlan *plan, const char *delta, const char *source)
{
	return maintain_statement(plan, delta, source, true);
}


/*
 * "a.k1 OP b.k1 AND ...": the keys of a and b equal by each key type's
 * default equality operator (the one GROUP BY uses), so a join on them is
 * hashable and mergeable and a filter on a.k1 carries over to b.k1.  Keys
 * that are NULL never match: see append_any_key_null().
 */
static void
append_keys_equal(StringInfo buf, CVPlan *plan, const char *a, const char *b)
{
	ListCell   *lc;

	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);
		const char *col = quote_identifier(key->colname);
		TypeCacheEntry *tce = lookup_type_cache(key->type, TYPECACHE_EQ_OPR);

		if (!OidIsValid(tce->eq_opr))
			elog(ERROR, "no equality operator for the GROUP BY key of type %s",
				 format_type_be(key->type));
		appendStringInfo(buf, "%s%s.%s %s %s.%s", foreach_current_index(lc) > 0 ? " AND " : "",
						 a, col, se_operator_sql(tce->eq_opr), b, col);
	}
}

/* "(p.k1 IS NULL OR ...)": a group with a NULL key (p NULL: no prefix) */
static void
append_any_key_null(StringInfo buf, CVPlan *plan, const char *p)
{
	ListCell   *lc;

	appendStringInfoChar(buf, '(');
	foreach(lc, plan->keys)
		appendStringInfo(buf, "%s%s%s%s IS NULL", foreach_current_index(lc) > 0 ? " OR " : "",
						 p ? p : "", p ? "." : "",
						 quote_identifier(((CVKey *) lfirst(lc))->colname));
	appendStringInfoChar(buf, ')');
}

/*
 * The indexes reads of a view that appends need (cv_merged_source_sql();
 * keyless views: none):
 * - on the delta, unless stream_ext.delta_key_index is off, the key lookup
 *	 index of cv_create_key_lookup_index() (a btree on the keys, or on the
 *	 leading fixed-width ones, or a hash index on a variable-width first
 *	 key): a read filtered on keys finds the delta's rows of those groups,
 *	 and its anti-join of a materialization row probes the delta, instead of
 *	 scanning it.  Every row a writer appends costs an insert into it (a
 *	 btree's without deduplication: delta_index_without_dedup()).
 *	 With stream_ext.delta_key_index = hash, a hash index on the first key
 *	 whatever its type: about half the cost per row appended, for reads by
 *	 equality on that key only (a range or IS NULL scans the delta).
 * - on the materialization, unless the key is one fixed-width column (its
 *	 unique btree answers IS NULL), a partial index of the groups with a
 *	 NULL key, which every read merges: empty in the common case, and
 *	 written by compaction only.
 */
/*
 * A delta's btree keeps each row's entry apart (deduplicate_items = off).
 * A delta holds several rows of a group (one per batch that touched it),
 * and deduplication merges their entries into a posting list when a leaf
 * page fills: work each writer pays on its inserts, to save space in an
 * index that compaction empties anyway (about an eighth of the index's
 * cost per row appended: docs/benchmarks.md).
 */
static void
delta_index_without_dedup(Oid indexid)
{
	Relation	index = relation_open(indexid, AccessShareLock);
	bool		btree = index->rd_rel->relam == BTREE_AM_OID;

	relation_close(index, AccessShareLock);
	if (btree)
		se_run_sql(psprintf("ALTER INDEX %s SET (deduplicate_items = off)",
							se_qualified_relname(indexid)));
}

void
cv_create_read_indexes(CVPlan *plan, Oid matrelid, Oid deltaid)
{
	CVKey	   *first;
	StringInfoData buf;

	if (plan->keyless)
		return;
	first = linitial(plan->keys);
	if (stream_ext_delta_key_index == SE_DELTA_KEY_INDEX_HASH &&
		OidIsValid(key_hash_func(first->type)))
		(void) se_create_index(deltaid, list_make1(first->colname), "hash", false, false);
	else if (stream_ext_delta_key_index != SE_DELTA_KEY_INDEX_OFF)
		delta_index_without_dedup(cv_create_key_lookup_index(plan, deltaid, NULL));
	if (list_length(plan->keys) == 1 && get_typlen(first->type) > 0)
		return;
	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE INDEX ON %s ((%s IS NULL)) WHERE ",
					 se_qualified_relname(matrelid), quote_identifier(first->colname));
	append_any_key_null(&buf, plan, NULL);
	se_run_sql(buf.data);
}

/* the columns the view reads (keys or _single, every aggregate's), after prefix */
static char *
stored_columns(CVPlan *plan, const char *prefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	append_group_columns(&buf, plan, prefix);
	foreach(lc, plan->aggs)
		appendStringInfo(&buf, ", %s%s", prefix, quote_identifier(((CVAgg *) lfirst(lc))->colname));
	return buf.data;
}

/*
 * ", merged AS col" for every aggregate over the rows of a group: states
 * by stream_ext.merge_states(), count(DISTINCT) counts of new values summed
 */
static void
append_merged_columns(StringInfo buf, CVPlan *plan, const char *prefix)
{
	ListCell   *lc;

	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		const char *col = quote_identifier(agg->colname);

		if (agg->is_distinct)
			appendStringInfo(buf, ", pg_catalog.sum(%s%s)::pg_catalog.int8 AS %s",
							 prefix, col, col);
		else
			append_merged_state(buf, agg, prefix);
	}
}

/*
 * The rows the view reads, one per group, with the materialization's column
 * names: materialization (+) delta (docs/internals.md, "Reading").
 *
 * - A materialization row of a group that no delta row has is read as it
 *	 is: an anti-join on the keys (equal by their equality operators), which
 *	 PostgreSQL plans as a hash (or merge) anti-join for a full read and as
 *	 a nested loop probing the delta's index for a read filtered on keys --
 *	 a filter on m.k implies one on d.k.
 * - The delta's groups without a NULL key are merged per group (GROUP BY
 *	 the keys, states by merge_states(), counts of count(DISTINCT) summed)
 *	 and joined to their materialization row, if any, by a left join on the
 *	 keys: states combined by stream_ext.combine() -- what a compaction
 *	 stores -- and counts added.  Each materialization row is read once,
 *	 and the merge reads the delta's rows only.
 * - Keys compared with "=" never match a NULL key: the groups with a NULL
 *	 key, of the materialization (through the partial index of
 *	 cv_create_read_indexes(), or the unique btree of a single fixed-width
 *	 key) and of the delta, are merged by GROUP BY, where NULL keys are equal.
 *
 * A key filter is pushed into every branch, so a read by key is index
 * scans of both tables (cv_create_read_indexes()).  Each branch produces
 * its rows in key order when asked to (a GROUP BY over the delta's key
 * index, a merge or nested loop join in the order of the materialization's
 * key index; query/read_order.c asks), so ORDER BY the keys LIMIT n merges
 * the branches in order.  No per-row correlated subplan: it would be costed
 * per row, and its cost alone would make PostgreSQL JIT-compile a plain
 * full read.  One statement, one snapshot: a batch or a compaction is seen
 * whole or not at all.  matrel and delta may be any relation names (CTEs in
 * changes.c): the result relies on no index.
 *
 * Keyless views (one group): the materialization's row when the delta is
 * empty, else the merge of the delta's rows and that row.
 */
static void append_deferred_new_values(StringInfo buf, CVPlan *plan, const char *delta);

/*
 * ", <combined> AS col" for every aggregate of a materialization row m (all
 * NULL when the group has none: m.<first key> IS NULL) and the merged delta
 * row g of its group: states by stream_ext.combine(), counts of
 * count(DISTINCT) added (a NULL side counts nothing).
 */
static void
append_combined_columns(StringInfo buf, CVPlan *plan)
{
	const char *k1 = quote_identifier(((CVKey *) linitial(plan->keys))->colname);
	ListCell   *lc;

	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		const char *col = quote_identifier(agg->colname);

		if (agg->is_distinct)
			appendStringInfo(buf, ", CASE WHEN m.%s IS NULL THEN g.%s WHEN g.%s IS NULL THEN m.%s"
							 " ELSE m.%s OPERATOR(pg_catalog.+) g.%s END AS %s",
							 col, col, col, col, col, col, col);
		else
			appendStringInfo(buf, ", CASE WHEN m.%s IS NULL THEN g.%s"
							 " ELSE stream_ext.combine(m.%s, g.%s, %s::pg_catalog.regprocedure) END AS %s",
							 k1, col, col, col,
							 quote_literal_cstr(format_procedure_qualified(agg->aggref->aggfnoid)),
							 col);
	}
}

char *
cv_merged_source_sql(CVPlan *plan, const char *matrel, const char *delta)
{
	StringInfoData buf;
	StringInfoData eq;
	StringInfoData mnull;
	StringInfoData dnull;
	StringInfoData dsrc;
	char	   *mcols = stored_columns(plan, "m.");
	char	   *dcols = stored_columns(plan, "d.");

	initStringInfo(&buf);
	initStringInfo(&eq);
	initStringInfo(&mnull);
	initStringInfo(&dnull);
	initStringInfo(&dsrc);

	/* the delta's rows (and the rows counting its deferred distinct values) */
	if (plan->defer_distinct)
	{
		appendStringInfo(&dsrc, "(SELECT %s FROM %s d", dcols, delta);
		append_deferred_new_values(&dsrc, plan, delta);
		appendStringInfoString(&dsrc, ") d");
	}
	else
		appendStringInfo(&dsrc, "%s d", delta);

	if (plan->keyless)
	{
		appendStringInfo(&buf, "(SELECT %s FROM %s m WHERE NOT EXISTS (SELECT FROM %s d)"
						 " UNION ALL SELECT ", mcols, matrel, delta);
		append_group_columns(&buf, plan, "u.");
		append_merged_columns(&buf, plan, "u.");
		appendStringInfo(&buf, " FROM (SELECT %s FROM %s UNION ALL SELECT %s FROM %s m"
						 " WHERE EXISTS (SELECT FROM %s d)) u GROUP BY ",
						 dcols, dsrc.data, mcols, matrel, delta);
		append_group_columns(&buf, plan, "u.");
		appendStringInfoChar(&buf, ')');
		return buf.data;
	}

	append_keys_equal(&eq, plan, "d", "m");
	append_any_key_null(&mnull, plan, "m");
	append_any_key_null(&dnull, plan, "d");

	/* groups without delta rows */
	appendStringInfo(&buf, "(SELECT %s FROM %s m WHERE NOT %s AND NOT EXISTS (SELECT FROM %s d WHERE %s)",
					 mcols, matrel, mnull.data, delta, eq.data);

	/* the delta's groups, merged, with their materialization rows */
	appendStringInfoString(&buf, " UNION ALL SELECT ");
	append_group_columns(&buf, plan, "g.");
	append_combined_columns(&buf, plan);
	appendStringInfoString(&buf, " FROM (SELECT ");
	append_group_columns(&buf, plan, "d.");
	append_merged_columns(&buf, plan, "d.");
	appendStringInfo(&buf, " FROM %s WHERE NOT %s GROUP BY ", dsrc.data, dnull.data);
	append_group_columns(&buf, plan, "d.");
	resetStringInfo(&eq);
	append_keys_equal(&eq, plan, "g", "m");
	appendStringInfo(&buf, ") g LEFT JOIN %s m ON %s", matrel, eq.data);

	/*
	 * groups with a NULL key: merged.  The test of NULL keys is on u, not in
	 * u's branches: PostgreSQL then pulls the branches up as members of an
	 * append relation, each with the test and a key filter of the read as
	 * its restrictions, and drops a member whose restrictions contradict
	 * each other (k IS NULL AND k = $1: relation_excluded_by_constraints(),
	 * for append members with the default constraint_exclusion = partition)
	 * -- a read by key plans no scan and no aggregate for this branch.
	 */
	resetStringInfo(&mnull);
	append_any_key_null(&mnull, plan, "u");
	appendStringInfoString(&buf, " UNION ALL SELECT ");
	append_group_columns(&buf, plan, "u.");
	append_merged_columns(&buf, plan, "u.");
	appendStringInfo(&buf, " FROM (SELECT %s FROM %s UNION ALL SELECT %s FROM %s m) u WHERE %s GROUP BY ",
					 dcols, dsrc.data, mcols, matrel, mnull.data);
	append_group_columns(&buf, plan, "u.");
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * The materialization's rows and the delta's, not merged: for reads that
 * merge per group anyway (hopping and sliding windows).
 */
char *
cv_union_source_sql(CVPlan *plan, const char *matrel, const char *delta)
{
	return psprintf("(SELECT %s FROM %s m UNION ALL SELECT %s FROM %s d)",
					stored_columns(plan, "m."), matrel, stored_columns(plan, "d."), delta);
}

/*
 * The compaction of a delta: delete up to $1 (bigint; NULL: all) of its
 * rows, merge them per group and store the result into the
 * materialization (the upsert of cv_store_sql(), in key order), in one
 * statement -- the rows leave the delta and reach the materialization in
 * the same transaction, so a reader sees either.  Yields (delta rows
 * folded, groups stored, whether it saw the whole delta).
 *
 * $2 (boolean) is false when compactions are the only statements that
 * delete the view's delta rows: the rows are then those visible to the
 * statement's snapshot below a ctid bound: b, the ctid of the ($1 + 1)th
 * row in heap order (a TID range scan, which starts at block 0, never at a
 * synchronized scan's position), and the DELETE reads the heap from its
 * start up to it -- no subselect of ctids, no row locks.  Rows that writers
 * insert meanwhile, below the bound too (into space freed by earlier
 * compactions), are invisible to the snapshot and stay for the next
 * compaction.  Without row locks two compactions of one view would queue
 * on each other's rows, so the caller serializes them (compact.c, "the
 * view's compaction lock").  $2 is true when TTL or a sliding window's
 * expiry delete delta rows too: those lock rows FOR UPDATE SKIP LOCKED in
 * transactions of their own (a writer's, for sliding expiry), so the
 * compaction takes up to $1 rows the same way, skipping theirs instead of
 * waiting for them (b is then empty and the third column true).  Writers
 * only insert into the delta: nothing here waits for them.
 */
static char *deferred_compact_rows(CVPlan *plan, const char *delta);
static char *deferred_compact_inserts(CVPlan *plan);

char *
cv_compact_sql(CVPlan *plan, const char *matrel, const char *delta)
{
	StringInfoData merged;
	const char *candidates = "";

	initStringInfo(&merged);
	appendStringInfoString(&merged, "(SELECT ");
	append_group_columns(&merged, plan, "d.");
	if (cv_matrel_hashed(plan))
		appendStringInfoString(&merged, ", d." CV_KEY_HASH_COLUMN);
	append_merged_columns(&merged, plan, "d.");
	appendStringInfo(&merged, " FROM %s GROUP BY ",
					 plan->defer_distinct ? deferred_compact_rows(plan, delta) : "d");
	append_group_columns(&merged, plan, "d.");
	if (cv_matrel_hashed(plan))
		appendStringInfoString(&merged, ", d." CV_KEY_HASH_COLUMN);
	appendStringInfoChar(&merged, ')');

	if (cv_matrel_hashed(plan))
	{
		/*
		 * Wide keys: a group whose key hash another group has, in the
		 * materialization or in the delta, stays in the delta, where reads
		 * still merge it by its keys: the materialization's unique index on
		 * the hash holds one of them only, and a compaction must not fail.
		 */
		StringInfoData w;

		initStringInfo(&w);
		appendStringInfo(&w, " AND NOT EXISTS (SELECT FROM %s m WHERE m.%s OPERATOR(pg_catalog.=) x.%s AND NOT ",
						 matrel, CV_KEY_HASH_COLUMN, CV_KEY_HASH_COLUMN);
		append_rows_equal(&w, key_column_refs(plan, "m."), key_column_refs(plan, "x."));
		appendStringInfo(&w, ") AND NOT (x.%s OPERATOR(pg_catalog.=) ANY (SELECT y.%s FROM %s y GROUP BY y.%s HAVING pg_catalog.count(DISTINCT ROW(",
						 CV_KEY_HASH_COLUMN, CV_KEY_HASH_COLUMN, delta, CV_KEY_HASH_COLUMN);
		append_key_columns(&w, plan, "y.");
		appendStringInfoString(&w, ")) OPERATOR(pg_catalog.>) 1))");
		candidates = w.data;
	}
	return psprintf("/* stream_ext compaction */ WITH b AS (SELECT x.ctid FROM %s x"
					" WHERE $1 IS NOT NULL AND NOT $2 AND x.ctid OPERATOR(pg_catalog.>=) '(0,0)'%s OFFSET $1 LIMIT 1),"
					" d AS (DELETE FROM %s x WHERE x.ctid OPERATOR(pg_catalog.<)"
					" COALESCE((SELECT b.ctid FROM b), '(4294967295,0)'::pg_catalog.tid)"
					" AND (NOT $2 OR x.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
					"SELECT x.ctid FROM %s x WHERE true%s LIMIT $1 FOR UPDATE OF x SKIP LOCKED)))%s RETURNING x.*),%s"
					" s AS (%s RETURNING 1)"
					" SELECT (SELECT pg_catalog.count(*) FROM d), (SELECT pg_catalog.count(*) FROM s),"
					" NOT EXISTS (SELECT FROM b)",
					delta, candidates, delta, delta, candidates, candidates,
					plan->defer_distinct ? deferred_compact_inserts(plan) : "",
					store_sql(plan, matrel, merged.data, "c", true));
}

/* ---- the user-facing view ---------------------------------------------- */

typedef struct OuterContext
{
	CVPlan	   *plan;
	Oid			finalize_oid;
	Oid			matrelid;
} OuterContext;

static Var *
matrel_var(OuterContext *ctx, const char *colname, Oid type, int32 typmod,
		   Oid collation)
{
	AttrNumber	attno = get_attnum(ctx->matrelid, colname);

	if (attno == InvalidAttrNumber)
		elog(ERROR, "materialization column \"%s\" not found", colname);
	return makeVar(1, attno, type, typmod, collation, 0);
}

/* replace group keys and aggregates by what the materialization holds */
static Node *
outer_mutator(Node *node, OuterContext *ctx)
{
	ListCell   *lc;

	if (node == NULL)
		return NULL;
	foreach(lc, ctx->plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		if (equal(node, key->expr))
			return (Node *) matrel_var(ctx, key->colname, key->type, key->typmod,
									   key->collation);
	}
	if (IsA(node, Aggref))
	{
		Aggref	   *aggref = (Aggref *) node;

		foreach(lc, ctx->plan->aggs)
		{
			CVAgg	   *agg = lfirst(lc);
			Var		   *state;
			FuncExpr   *fin;

			if (!equal(agg->aggref, aggref))
				continue;
			if (agg->is_distinct)
				return (Node *) matrel_var(ctx, agg->colname, INT8OID, -1, InvalidOid);
			state = matrel_var(ctx, agg->colname, agg->storage.statetype, -1,
							   type_is_collatable(agg->storage.statetype) ?
							   aggref->inputcollid : InvalidOid);
			if (agg->storage.direct)
				return (Node *) state;
			fin = makeFuncExpr(ctx->finalize_oid, aggref->aggtype,
							   list_make3(state,
										  makeConst(REGPROCEDUREOID, -1, InvalidOid,
													sizeof(Oid),
													ObjectIdGetDatum(aggref->aggfnoid),
													false, true),
										  makeNullConst(aggref->aggtype, -1,
														aggref->aggcollid)),
							   aggref->aggcollid, aggref->inputcollid,
							   COERCE_EXPLICIT_CALL);
			return (Node *) fin;
		}
		elog(ERROR, "aggregate not found in continuous view plan");
	}
	if (IsA(node, Var))
		elog(ERROR, "ungrouped column in continuous view select list");
	return expression_tree_mutator(node, outer_mutator, (void *) ctx);
}

/* SELECT ... FROM matrel m [WHERE having] */
char *
cv_view_select_sql(CVPlan *plan, Oid matrelid, const char *matrel)
{
	StringInfoData buf;
	OuterContext ctx;
	List	   *dctx = deparse_context_for("m", matrelid);
	ListCell   *lc;
	ListCell   *name = list_head(plan->colnames);
	bool		first = true;
	List	   *fname = list_make2(makeString("stream_ext"), makeString("finalize"));
	Oid			argtypes[3] = {ANYOID, REGPROCEDUREOID, ANYCOMPATIBLEOID};

	ctx.plan = plan;
	ctx.matrelid = matrelid;
	ctx.finalize_oid = LookupFuncName(fname, 3, argtypes, false);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT ");
	foreach(lc, plan->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Node	   *expr;

		if (tle->resjunk)
			continue;
		expr = outer_mutator((Node *) tle->expr, &ctx);
		appendStringInfo(&buf, "%s%s AS %s", first ? "" : ", ",
						 deparse_expression(expr, dctx, true, false),
						 quote_identifier(strVal(lfirst(name))));
		name = lnext(plan->colnames, name);
		first = false;
	}
	if (plan->extra_outer_columns)
		appendStringInfo(&buf, ", %s", plan->extra_outer_columns);
	appendStringInfo(&buf, " FROM %s m", matrel);
	/* a member of a shared storage: only the groups it has rows of */
	if (plan->presence_col)
		appendStringInfo(&buf, " WHERE m.%s IS NOT NULL", quote_identifier(plan->presence_col));
	if (plan->query->havingQual)
		appendStringInfo(&buf, " %s %s", plan->presence_col ? "AND" : "WHERE",
						 deparse_expression(outer_mutator(plan->query->havingQual, &ctx),
											dctx, true, false));
	return buf.data;
}

/* ---- deferred count(DISTINCT) ------------------------------------------ */

/*
 * A view that appends keeps the count(DISTINCT) work out of its writers
 * when it can (cv_can_defer_distinct()): the batch's one aggregation also
 * yields, per group, the batch's distinct values as a sorted array
 * (stream_ext.distinct_values(), query/distinct_values.c) into the
 * delta's column CVAgg.valuescol -- no side-table probe per value, no
 * second statement.  The side table of (keys, value) stays the set of
 * values counted into the materialization:
 *
 * - compaction (cv_compact_sql()) inserts the distinct pairs of the delta
 *	 rows it folds into the side table, ON CONFLICT DO NOTHING, and adds
 *	 the number it inserted per group to the materialization's count, in
 *	 its one statement: a pair leaves the delta's arrays and reaches the
 *	 side table and the count in the same transaction.  The unique index
 *	 arbitrates concurrent compactions as it did concurrent writers.
 * - reads (cv_merged_source_sql()) count, per group with delta rows, the
 *	 stored count, plus the delta's counts (below), plus the distinct
 *	 values of the delta's arrays that the side table does not hold: the
 *	 same snapshot sees each pair either in the side table (counted) or
 *	 only in the delta -- exact at every commit.
 * - a roll-up of such a view is fed by the inserts into its side table
 *	 (query/rollup.c), which must happen at the writer's commit: the
 *	 view's count(DISTINCT) statement (cv_distinct_sql()) still runs per
 *	 batch, writing through to the side table and counting into the delta
 *	 as before, but only while the side table has a roll-up's trigger --
 *	 a one-time test, so without roll-ups it reads nothing.  Both shapes
 *	 can be in the delta at once: a pair written through is in the side
 *	 table, so its copy in an array is never counted again.
 *
 * Views that cannot (changelog streams with their signed counts, hashed
 * side tables, stream-stream joins, views made before) keep the
 * per-batch statement alone; a view's shape is read from its delta
 * (cv_detect_deferred_distinct()).
 */

/* does stream_ext.distinct_values(anyelement) exist (0.2 SQL objects)? */
static bool
distinct_values_installed(void)
{
	Oid			argtypes[1] = {ANYELEMENTOID};

	return OidIsValid(LookupFuncName(list_make2(makeString("stream_ext"),
												makeString("distinct_values")),
									 1, argtypes, true));
}

/* OPERATOR(schema.=) of type's default btree opclass, or NULL */
static char *
eq_operator_sql(Oid type)
{
	Oid			opr = lookup_type_cache(type, TYPECACHE_EQ_OPR)->eq_opr;
	HeapTuple	tup;
	char	   *sql;

	if (!OidIsValid(opr))
		return NULL;
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opr));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opr);
	sql = psprintf("OPERATOR(%s.%s)",
				   quote_identifier(get_namespace_name(((Form_pg_operator) GETSTRUCT(tup))->oprnamespace)),
				   NameStr(((Form_pg_operator) GETSTRUCT(tup))->oprname));
	ReleaseSysCache(tup);
	return sql;
}

/*
 * Can a view that appends, of this plan, defer its count(DISTINCT)s?
 * (The caller knows that it appends and is a view over a stream of its
 * own, not a roll-up or a join of two streams.)
 */
bool
cv_can_defer_distinct(CVPlan *plan)
{
	ListCell   *lc;

	if (!has_distinct(plan) || !cv_appends(plan) ||
		se_stream_is_changelog(plan->streamid) || !distinct_values_installed())
		return false;
	foreach(lc, plan->keys)
	{
		if (eq_operator_sql(((CVKey *) lfirst(lc))->type) == NULL)
			return false;
	}
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		Oid			type;

		if (!agg->is_distinct)
			continue;
		type = exprType((Node *) distinct_arg(agg));
		if (!OidIsValid(get_array_type(type)) || eq_operator_sql(type) == NULL ||
			type_is_collatable(type))
			return false;
	}
	return true;
}

/*
 * An existing view's shape (plan analyzed again from its definition):
 * deferred if its delta has the values columns; then each count(DISTINCT)
 * learns its side table (the view's parts: materialization, side tables).
 */
void
cv_detect_deferred_distinct(CVPlan *plan, Oid viewid, Oid deltaid)
{
	ListCell   *lc;
	ListCell   *lp;
	List	   *parts;

	plan->defer_distinct = false;
	if (!OidIsValid(deltaid) || !has_distinct(plan))
		return;
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (agg->is_distinct && get_attnum(deltaid, agg->valuescol) == InvalidAttrNumber)
			return;
	}
	parts = catalog_view_parts(viewid);
	lp = list_second_cell(parts);
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		Oid			auxid;

		if (!agg->is_distinct)
			continue;
		if (lp == NULL)
			elog(ERROR, "stream_ext: a side table of continuous view %u is missing", viewid);
		auxid = lfirst_oid(lp);
		agg->auxrel = quote_qualified_identifier(get_namespace_name(get_rel_namespace(auxid)),
												 get_rel_name(auxid));
		lp = lnext(parts, lp);
	}
	plan->defer_distinct = true;
}

/* ", col type[]" per count(DISTINCT), for the delta of a deferring view */
char *
cv_delta_values_columns_sql(CVPlan *plan)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	if (!plan->defer_distinct)
		return buf.data;
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		Expr	   *arg;

		if (!agg->is_distinct)
			continue;
		arg = distinct_arg(agg);
		appendStringInfo(&buf, ", %s %s", quote_identifier(agg->valuescol),
						 se_type_sql(get_array_type(exprType((Node *) arg)), -1,
									 exprCollation((Node *) arg)));
	}
	return buf.data;
}

/* ", <prefix>valuescol" per count(DISTINCT) of a deferring view */
static char *
values_columns(CVPlan *plan, const char *prefix)
{
	return plan->defer_distinct ? distinct_columns_of(plan, prefix, true) : "";
}

/* the batch's distinct values of agg per group (in its aggregation) */
static char *
distinct_values_expr(CVAgg *agg, List *ctx)
{
	Expr	   *arg = distinct_arg(agg);
	char	   *expr = psprintf("stream_ext.distinct_values(%s)",
								deparse_expression((Node *) arg, ctx, true, false));

	if (agg->aggref->aggfilter)
		expr = psprintf("%s FILTER (WHERE %s)", expr,
						deparse_expression((Node *) agg->aggref->aggfilter, ctx, true, false));
	/* partial mode, as the states: its serialization is the array */
	return psprintf("stream_ext.partial(%s, NULL::%s)", expr,
					format_type_extended(get_array_type(exprType((Node *) arg)), -1,
										 FORMAT_TYPE_FORCE_QUALIFY));
}

/*
 * The distinct (keys, value) pairs in the arrays of the delta rows read
 * from from (a relation or CTE), as columns keys..., value: each group's
 * arrays merged by stream_ext.distinct_values() (one small sort per
 * group, not one sort of every pair), then unnested.
 */
static void
append_array_pairs(StringInfo buf, CVPlan *plan, CVAgg *agg, const char *from)
{
	appendStringInfoString(buf, "SELECT ");
	if (!plan->keyless)
	{
		append_key_columns(buf, plan, "g.");
		appendStringInfoString(buf, ", ");
	}
	appendStringInfoString(buf, "x.value FROM (SELECT ");
	if (!plan->keyless)
	{
		append_key_columns(buf, plan, "d.");
		appendStringInfoString(buf, ", ");
	}
	appendStringInfo(buf, "stream_ext.distinct_values(u.value) AS vals FROM %s d, pg_catalog.unnest(d.%s) AS u(value)",
					 from, quote_identifier(agg->valuescol));
	if (!plan->keyless)
	{
		appendStringInfoString(buf, " GROUP BY ");
		append_key_columns(buf, plan, "d.");
	}
	appendStringInfoString(buf, ") g, pg_catalog.unnest(g.vals) AS x(value)");
}

/* "e.k1 = q.k1 AND ... AND e.value = q.value", by each type's equality */
static void
append_pair_equal(StringInfo buf, CVPlan *plan, CVAgg *agg, const char *e, const char *q)
{
	ListCell   *lc;

	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);
		const char *col = quote_identifier(key->colname);

		appendStringInfo(buf, "%s.%s %s %s.%s AND ", e, col, eq_operator_sql(key->type), q, col);
	}
	appendStringInfo(buf, "%s.value %s %s.value", e,
					 eq_operator_sql(exprType((Node *) distinct_arg(agg))), q);
}

/*
 * ", ... AS (INSERT INTO side table ...)" per count(DISTINCT): the pairs of
 * the folded delta rows d not in the side table yet, inserted in order;
 * RETURNING their keys.  The NOT EXISTS only spares the insert the pairs
 * already stored (NULL keys never match it); ON CONFLICT decides.
 */
static char *
deferred_compact_inserts(CVPlan *plan)
{
	StringInfoData buf;
	ListCell   *lc;
	int			nkeys = list_length(plan->keys);

	initStringInfo(&buf);
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (!agg->is_distinct)
			continue;
		appendStringInfo(&buf, " stream_ext_new_%d AS (INSERT INTO %s (",
						 foreach_current_index(lc) + 1, agg->auxrel);
		if (!plan->keyless)
		{
			append_key_columns(&buf, plan, "");
			appendStringInfoString(&buf, ", ");
		}
		appendStringInfoString(&buf, "value) SELECT q.* FROM (");
		append_array_pairs(&buf, plan, agg, "d");
		appendStringInfo(&buf, ") q WHERE NOT EXISTS (SELECT FROM %s e WHERE ", agg->auxrel);
		append_pair_equal(&buf, plan, agg, "e", "q");
		appendStringInfoChar(&buf, ')');
		append_positions(&buf, "ORDER BY", nkeys + 1);
		appendStringInfoString(&buf, " ON CONFLICT DO NOTHING RETURNING ");
		if (plan->keyless)
			appendStringInfoString(&buf, "true AS " CV_SINGLE_COLUMN);
		else
			append_key_columns(&buf, plan, "");
		appendStringInfoString(&buf, "),");
	}
	return buf.data;
}

/*
 * ", NULL, ..., count, ..." : the aggregate columns of a row adding count
 * (SQL) to agg's count(DISTINCT) (NULL states merge as nothing)
 */
static void
append_new_values_count(StringInfo buf, CVPlan *plan, CVAgg *agg, const char *count)
{
	ListCell   *lc;

	foreach(lc, plan->aggs)
		appendStringInfo(buf, ", %s", lfirst(lc) == agg ? count : "NULL");
}

/*
 * The rows compaction merges per group: the folded delta rows d and, per
 * count(DISTINCT), one row per group with the number of values it
 * inserted (deferred_compact_inserts()).
 */
static char *
deferred_compact_rows(CVPlan *plan, const char *delta)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfo(&buf, "(SELECT %s FROM d", stored_columns(plan, "d."));
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (!agg->is_distinct)
			continue;
		appendStringInfoString(&buf, " UNION ALL SELECT ");
		append_group_columns(&buf, plan, "n.");
		append_new_values_count(&buf, plan, agg, "pg_catalog.count(*)");
		appendStringInfo(&buf, " FROM stream_ext_new_%d n GROUP BY ", foreach_current_index(lc) + 1);
		append_group_columns(&buf, plan, "n.");
	}
	appendStringInfoString(&buf, ") d");
	return buf.data;
}

/*
 * " UNION ALL ..." per count(DISTINCT), for the merged reads: one row per
 * distinct pair of the delta's arrays that the side table does not hold.
 * Each pair is probed by index (a scalar subquery: an anti join could
 * become a hash join over the whole side table); pairs with a NULL key
 * by IS NOT DISTINCT FROM (the side table's unique index treats NULLs
 * as equal).
 */
static void
append_deferred_new_values(StringInfo buf, CVPlan *plan, const char *delta)
{
	ListCell   *lc;

	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (!agg->is_distinct)
			continue;
		appendStringInfoString(buf, " UNION ALL SELECT ");
		if (plan->keyless)
			appendStringInfoString(buf, "true");
		else
			append_key_columns(buf, plan, "q.");
		append_new_values_count(buf, plan, agg, "1::pg_catalog.int8");
		appendStringInfoString(buf, " FROM (");
		append_array_pairs(buf, plan, agg, delta);
		appendStringInfoString(buf, ") q WHERE ");
		if (plan->keyless)
		{
			appendStringInfo(buf, "(SELECT true FROM %s e WHERE ", agg->auxrel);
			append_pair_equal(buf, plan, agg, "e", "q");
			appendStringInfoString(buf, " LIMIT 1) IS NULL");
			continue;
		}
		appendStringInfoString(buf, "(CASE WHEN ROW(");
		append_key_columns(buf, plan, "q.");
		appendStringInfo(buf, ") IS NOT NULL THEN (SELECT true FROM %s e WHERE ", agg->auxrel);
		append_pair_equal(buf, plan, agg, "e", "q");
		appendStringInfo(buf, " LIMIT 1) ELSE (SELECT true FROM %s e WHERE ", agg->auxrel);
		append_rows_equal(buf, key_column_refs(plan, "e."), key_column_refs(plan, "q."));
		appendStringInfo(buf, " AND e.value %s q.value LIMIT 1) END) IS NULL",
						 eq_operator_sql(exprType((Node *) distinct_arg(agg))));
	}
}

/*
 * The distinct values of agg's count(DISTINCT) per group, as rows of the
 * side table's columns (keys, value): the side table, and for a view that
 * defers, the pairs still in its delta's arrays.  What a reader of "the
 * distinct values of these groups" must read (roll-up backfill, combine()).
 */
char *
cv_distinct_values_sql(CVPlan *plan, CVAgg *agg, const char *auxrel, const char *delta)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT ");
	if (!plan->keyless)
	{
		append_key_columns(&buf, plan, "a.");
		appendStringInfoString(&buf, ", ");
	}
	appendStringInfo(&buf, "a.value FROM %s a", auxrel);
	if (plan->defer_distinct && delta != NULL)
	{
		appendStringInfoString(&buf, " UNION ");
		append_array_pairs(&buf, plan, agg, delta);
	}
	return buf.data;
}
