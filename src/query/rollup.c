/*-------------------------------------------------------------------------
 *
 * rollup.c
 *	  Continuous views over continuous views (roll-ups):
 *
 *	  CREATE VIEW clicks_per_hour WITH (continuous) AS
 *	    SELECT url, date_bin('1 hour', minute, '2000-01-01') AS hour,
 *	           sum(hits) AS hits, stream_ext.combine(avg_latency) AS avg_latency
 *	      FROM clicks_per_minute GROUP BY 1, 2;
 *
 *	  The upstream (clicks_per_minute) appends one row of partial states per
 *	  group it touched to its delta at every batch, and nothing else ever
 *	  inserts into that delta (compaction, TTL and expiry only delete from
 *	  it).  So a roll-up is maintained by a statement trigger on the
 *	  upstream's delta, stream_ext.maintain_rollup(<roll-up's
 *	  materialization>): its batch is the upstream batch's states, mapped to
 *	  the coarse groups and merged with stream_ext.merge_states() into the
 *	  roll-up's own delta -- never a rescan of the upstream.  The roll-up is
 *	  itself a view that appends, so roll-ups chain to any depth, and the
 *	  upstream's TTL never reaches it (deletes fire no insert trigger).
 *
 *	  At CREATE (ddl/create_view.c calls in here at a few points):
 *
 *	- rollup_compose(): the user's query reads the upstream view; its group
 *	  keys and WHERE may use only the upstream's group key columns, and its
 *	  aggregates are stream_ext.combine(col) of an aggregate column, or the
 *	  aggregates that equal it (sum() of a count or sum column, min() of a
 *	  min, max() of a max).  The query is rewritten into the equivalent
 *	  query over the upstream's stream (keys substituted by the upstream's
 *	  key expressions, each aggregate by the upstream's aggregate, cast
 *	  back to the type the user's aggregate had), which cv_analyze() then
 *	  plans like any continuous view: the roll-up's materialization, delta,
 *	  reads, compaction and TTL are those of a view over the stream, and
 *	  its states are the upstream's aggregates' states.  That composed
 *	  query is the roll-up's recorded definition (so stream_ext.combine()
 *	  works on a roll-up, and a roll-up of a roll-up composes again).
 *	- rollup_maintain_sql(): the batch statement, over the transition
 *	  table of the upstream delta (d): the user's keys and WHERE with the
 *	  upstream view's columns read as the delta's columns, and per state
 *	  stream_ext.merge_states(d.<upstream state column>), appended to the
 *	  roll-up's delta (cv_append_sql()).
 *	- rollup_backfill_sql(): the upstream's current groups
 *	  (materialization (+) delta, cv_merged_source_sql()) read as the
 *	  upstream's owner -- only stream_ext's own statement runs as that role
 *	  -- into a tuplestore registered as the batch, which the batch
 *	  statement then stores into the roll-up's materialization as its
 *	  creator.  CREATE holds the upstream delta in SHARE ROW EXCLUSIVE mode
 *	  until commit: the upstream's batches committed before are in the
 *	  backfill, later ones fire the trigger.
 *	- rollup_distinct_sql(): stream_ext.combine() of the upstream's exact
 *	  count(DISTINCT) column.  The upstream's side table of (fine keys,
 *	  value) receives each pair once, when it is new; a second trigger on it
 *	  puts the batch's (coarse keys, value) into the roll-up's own side
 *	  table (its unique index keeps each once) and appends the number new
 *	  to each coarse group to the roll-up's delta.
 *	- rollup_create_trigger(): the triggers, created as the owner of the
 *	  delta (and side tables), AUTO-dependent on the roll-up; the roll-up's
 *	  materialization depends NORMAL on the upstream's delta, so DROP of
 *	  the upstream needs CASCADE and takes the roll-up along.
 *
 *	  The roll-up's catalog row names the upstream's delta as its stream:
 *	  the relation whose inserts feed it.
 *
 *	  At every batch (rollup_ops, maintain/trigger.c's skeleton): the
 *	  roll-up's owner must still have SELECT on the upstream view, else
 *	  the roll-up is marked invalid (privileges.c) and the upstream's batch
 *	  goes on; any other error fails the upstream's batch, as the error of
 *	  any view fails the insert into its stream.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parser.h"
#include "parser/analyze.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "maintain/compact.h"
#include "maintain/maintain.h"
#include "maintain/privileges.h"
#include "maintain/trigger.h"
#include "query/retract.h"
#include "query/rollup.h"
#include "query/shared_plan.h"
#include "query/viewplan.h"
#include "windows/windows.h"

PG_FUNCTION_INFO_V1(stream_ext_maintain_rollup);

/* what a column of the upstream view is */
typedef enum RollupColumnKind
{
	ROLLUP_KEY,					/* one of its group keys */
	ROLLUP_STATE,				/* exactly one mergeable aggregate */
	ROLLUP_DISTINCT,			/* a count(DISTINCT) */
	ROLLUP_OTHER				/* an expression */
} RollupColumnKind;

typedef struct RollupColumn
{
	RollupColumnKind kind;
	char	   *name;			/* the view's column name */
	Expr	   *expr;			/* key expression or Aggref, over the stream */
	char	   *stored;			/* its column in materialization and delta */
	AttrNumber delta_attno;		/* that column's number in the delta */
	Oid			auxid;			/* count(DISTINCT): its side table */
} RollupColumn;

/* the name of the delta's rows in the batch statement */
#define ROLLUP_ALIAS "d"

static const char *
upstream_name(RollupSpec *spec)
{
	return get_rel_name(spec->upstream);
}

/* ---- composing the roll-up's query over the upstream's stream ----------- */

/* the upstream's plan, rebuilt from its recorded (schema-qualified) definition */
static void
upstream_plan(RollupSpec *spec, const char *definition)
{
	List	   *raw;
	Query	   *def;
	int			nestlevel = se_pin_settings(NULL);

	raw = raw_parser(definition, RAW_PARSE_DEFAULT);
	if (list_length(raw) != 1)
		elog(ERROR, "unexpected definition of continuous view \"%s\"", upstream_name(spec));
	def = parse_analyze_fixedparams(linitial_node(RawStmt, raw), definition, NULL, 0, NULL);
	se_unpin_settings(nestlevel);
	spec->uplan = cv_reanalyze(spec->upstream, def, definition);
	cv_detect_deferred_distinct(spec->uplan, spec->upstream, spec->updelta);
	if (def->havingQual != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot build a continuous view over continuous view \"%s\": it has a HAVING clause",
						upstream_name(spec)),
				 errdetail("Its HAVING hides groups when it is read; a roll-up sees every group's states.")));
}

/*
 * expr, or the argument of its cast to numeric: a roll-up's sum() of a
 * count or sum is numeric as in SQL (rollup_aggregate()), a cast of the
 * upstream's aggregate that a roll-up of the roll-up sees through.  Only
 * to numeric: exact and order-preserving from every integer and numeric.
 */
static Expr *
numeric_cast_arg(Expr *expr)
{
	if (exprType((Node *) expr) == NUMERICOID && IsA(expr, FuncExpr) &&
		(((FuncExpr *) expr)->funcformat == COERCE_EXPLICIT_CAST ||
		 ((FuncExpr *) expr)->funcformat == COERCE_IMPLICIT_CAST) &&
		list_length(((FuncExpr *) expr)->args) == 1)
		return (Expr *) linitial(((FuncExpr *) expr)->args);
	return expr;
}

/* what each column of the upstream view is, and where it is stored */
static void
upstream_columns(RollupSpec *spec)
{
	CVPlan	   *up = spec->uplan;
	List	   *names = cv_view_column_aliases(spec->upstream);
	ListCell   *lc;
	int			n = 0;

	List	   *parts = catalog_view_parts(spec->upstream);	/* matrel, side tables */

	spec->ncols = list_length(names);
	spec->cols = palloc0(sizeof(RollupColumn) * Max(spec->ncols, 1));
	foreach(lc, up->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		RollupColumn *col;
		ListCell   *lk;

		if (tle->resjunk)
			continue;
		if (n >= spec->ncols)
			break;
		col = &spec->cols[n];
		col->name = strVal(list_nth(names, n));
		col->kind = ROLLUP_OTHER;
		n++;
		foreach(lk, up->keys)
		{
			CVKey	   *key = lfirst(lk);

			if (equal(key->expr, tle->expr))
			{
				col->kind = ROLLUP_KEY;
				col->expr = key->expr;
				col->stored = key->colname;
				break;
			}
		}
		if (col->kind == ROLLUP_OTHER && IsA(numeric_cast_arg(tle->expr), Aggref))
		{
			foreach(lk, up->aggs)
			{
				CVAgg	   *agg = lfirst(lk);

				/*
				 * a changelog view's side table is upserted with signed
				 * counts, which a feed of its inserts would not follow
				 */
				if (agg->is_distinct && se_stream_is_changelog(up->streamid))
					continue;
				if (equal(agg->aggref, numeric_cast_arg(tle->expr)))
				{
					col->kind = agg->is_distinct ? ROLLUP_DISTINCT : ROLLUP_STATE;
					col->expr = (Expr *) agg->aggref;
					col->stored = agg->colname;
					if (agg->is_distinct)
						col->auxid = cv_distinct_side_table(up, agg, parts);
					break;
				}
			}
		}
		if (col->stored)
		{
			col->delta_attno = get_attnum(spec->updelta, col->stored);
			if (col->delta_attno == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("the delta of continuous view \"%s\" has no column \"%s\"",
								upstream_name(spec), col->stored),
						 errdetail("Its recorded definition no longer matches its tables.")));
		}
	}
}

/* stream_ext.combine(anyelement), or InvalidOid */
static Oid
combine_function(void)
{
	Oid			argtypes[1] = {ANYELEMENTOID};

	return LookupFuncName(list_make2(makeString("stream_ext"), makeString("combine")),
						  1, argtypes, true);
}

/* is aggregate fnoid pg_catalog's aggregate called name? */
static bool
is_catalog_agg(Oid fnoid, const char *name)
{
	return get_func_namespace(fnoid) == PG_CATALOG_NAMESPACE &&
		strcmp(get_func_name(fnoid), name) == 0;
}

/* does aggregate call fnoid over a column computed by upstream merge exactly? */
static bool
agg_merges(Oid fnoid, Oid upfnoid, Oid combine_oid)
{
	if (fnoid == combine_oid)
		return true;
	if (is_catalog_agg(fnoid, "sum"))
		return is_catalog_agg(upfnoid, "sum") || is_catalog_agg(upfnoid, "count");
	if (is_catalog_agg(fnoid, "min") || is_catalog_agg(fnoid, "max"))
		return fnoid == upfnoid;
	/* postgresql-15-hll: the union of hll values is the merge of their states */
	if (strcmp(get_func_name(fnoid), "hll_union_agg") == 0)
		return get_func_namespace(fnoid) == get_func_namespace(upfnoid) &&
			(strcmp(get_func_name(upfnoid), "hll_add_agg") == 0 ||
			 strcmp(get_func_name(upfnoid), "hll_union_agg") == 0);
	return false;
}

typedef struct ComposeContext
{
	RollupSpec *spec;
	Oid			combine_oid;
	Oid			target;			/* Vars over this relation's columns of the
								 * same names (the delta, a side table);
								 * InvalidOid: over the stream */
	const char *querytext;
} ComposeContext;

static void
refuse_aggregate(ComposeContext *cx, Aggref *agg, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("aggregate %s() over continuous view \"%s\" cannot be maintained from its partial states",
					get_func_name(agg->aggfnoid), upstream_name(cx->spec)),
			 errdetail_internal("%s", detail),
			 errhint("Aggregate a column of \"%s\" with stream_ext.combine(column): it merges the column's stored states exactly (an avg stays an average of the stream's rows).",
					 upstream_name(cx->spec))));
}

/* a key column of the upstream: over the stream, or as the delta's column */
static Node *
key_column(ComposeContext *cx, Var *var)
{
	RollupColumn *col;

	if (var->varattno <= 0 || var->varattno > cx->spec->ncols)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view over continuous view \"%s\" may read its columns only one by one",
						upstream_name(cx->spec))));
	col = &cx->spec->cols[var->varattno - 1];
	if (col->kind != ROLLUP_KEY)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("column \"%s\" of continuous view \"%s\" is not one of its group keys",
						col->name, upstream_name(cx->spec)),
				 errdetail("A continuous view over another groups and filters by the other's group keys; it reads the other's aggregates only inside an aggregate."),
				 errhint("Aggregate the column with stream_ext.combine(%s).", quote_identifier(col->name))));
	if (OidIsValid(cx->target))
	{
		AttrNumber	attno = get_attnum(cx->target, col->stored);
		Oid			type;
		int32		typmod;
		Oid			coll;

		if (attno == InvalidAttrNumber)
			elog(ERROR, "stream_ext: \"%s\" has no column \"%s\"", get_rel_name(cx->target),
				 col->stored);
		get_atttypetypmodcoll(cx->target, attno, &type, &typmod, &coll);
		return (Node *) makeVar(1, attno, type, typmod, coll, 0);
	}
	return copyObject((Node *) col->expr);
}

/* an aggregate over the upstream: its aggregate, over the stream */
static Node *
rollup_aggregate(ComposeContext *cx, Aggref *agg)
{
	TargetEntry *arg;
	Var		   *var;
	RollupColumn *col;
	Aggref	   *up;
	Node	   *result;

	if (agg->agglevelsup != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a subquery is not supported in a continuous view")));
	if (agg->aggstar || agg->args == NIL)
		refuse_aggregate(cx, agg,
						 psprintf("%s(*) over a continuous view counts its groups, and a group's partial states arrive once per batch that touched it.",
								  get_func_name(agg->aggfnoid)));
	if (list_length(agg->args) != 1 || agg->aggdistinct != NIL || agg->aggorder != NIL ||
		agg->aggfilter != NULL || agg->aggdirectargs != NIL)
		refuse_aggregate(cx, agg, "Only an aggregate of one column of the view, without DISTINCT, ORDER BY or FILTER, merges its states.");
	arg = linitial_node(TargetEntry, agg->args);
	var = (Var *) arg->expr;
	if (!IsA(var, Var) || var->varlevelsup != 0 || var->varattno <= 0 ||
		var->varattno > cx->spec->ncols)
		refuse_aggregate(cx, agg, "Its argument is not a column of the view: only the stored states of an aggregate column can be merged.");
	col = &cx->spec->cols[var->varattno - 1];
	if (col->kind == ROLLUP_DISTINCT && agg->aggfnoid != cx->combine_oid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s() over column \"%s\" of continuous view \"%s\" cannot be maintained",
						get_func_name(agg->aggfnoid), col->name, upstream_name(cx->spec)),
				 errdetail("The column is a count(DISTINCT ...): a value counted in two of its groups would be counted twice."),
				 errhint("Roll it up with stream_ext.combine(%s): the distinct values of the coarser group, counted exactly.",
						 quote_identifier(col->name))));
	if (col->kind == ROLLUP_DISTINCT)
	{
		/* the upstream's count(DISTINCT): its side table feeds ours */
		Aggref	   *up = copyObject((Aggref *) col->expr);

		if (OidIsValid(cx->target))
			elog(ERROR, "stream_ext: rollup aggregate left in a key expression");
		up->location = agg->location;
		return (Node *) up;
	}
	if (col->kind != ROLLUP_STATE)
		refuse_aggregate(cx, agg,
						 psprintf("Column \"%s\" is %s, not one aggregate of the view's query: its value has no stored state, and an aggregate of values taken once per batch counts groups again.",
								  col->name, col->kind == ROLLUP_KEY ? "a group key" : "an expression"));
	up = (Aggref *) col->expr;
	if (!agg_merges(agg->aggfnoid, up->aggfnoid, cx->combine_oid))
		refuse_aggregate(cx, agg,
						 psprintf("Column \"%s\" is %s(); %s() of its values is not the merge of its states (only stream_ext.combine() of any aggregate column, sum() of a count or sum, min() of a min and max() of a max are).",
								  col->name, get_func_name(up->aggfnoid),
								  get_func_name(agg->aggfnoid)));
	if (OidIsValid(cx->target))
		elog(ERROR, "stream_ext: rollup aggregate left in a key expression");

	/* the upstream's own aggregate: the same states */
	up = copyObject(up);
	up->location = agg->location;
	result = (Node *) up;
	if (up->aggtype != agg->aggtype)
	{
		/* sum(count) is numeric in SQL: keep the type the query saw */
		result = coerce_to_target_type(NULL, result, up->aggtype,
									   agg->aggtype, exprTypmod((Node *) agg),
									   COERCION_EXPLICIT, COERCE_EXPLICIT_CAST, -1);
		if (result == NULL)
			elog(ERROR, "stream_ext: cannot cast %s to %s", format_type_be(up->aggtype),
				 format_type_be(agg->aggtype));
	}
	return result;
}

static Node *
compose_mutator(Node *node, ComposeContext *cx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
		return rollup_aggregate(cx, (Aggref *) node);
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varlevelsup != 0 || var->varno != 1)
			return node;
		return key_column(cx, var);
	}
	if (IsA(node, Query) || IsA(node, SubLink))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a subquery is not supported in a continuous view")));
	return expression_tree_mutator(node, compose_mutator, (void *) cx);
}

/*
 * If query reads a continuous view, fill spec and return the equivalent
 * query over that view's stream (see the header comment); else return
 * query as it is, spec->upstream InvalidOid.
 */
Query *
rollup_compose(Query *query, const char *querytext, RollupSpec *spec)
{
	ListCell   *lc;
	ViewCatalogEntry up;
	ViewDefinitionEntry def;
	ComposeContext cx;
	Query	   *composed;
	Query	   *upq;
	Node	   *quals;
	bool		reads_view = false;

	memset(spec, 0, sizeof(RollupSpec));
	if (query->commandType != CMD_SELECT)
		return query;
	foreach(lc, query->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_VIEW &&
			catalog_lookup_view(rte->relid, &up, CurrentMemoryContext))
		{
			reads_view = true;
			spec->upstream = rte->relid;
		}
	}
	if (!reads_view)
		return query;
	if (list_length(query->rtable) != 1 || list_length(query->jointree->fromlist) != 1 ||
		!IsA(linitial(query->jointree->fromlist), RangeTblRef))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view over continuous view \"%s\" must read it alone",
						upstream_name(spec)),
				 errdetail("Joins, several views and subqueries in FROM are not supported over a continuous view.")));
	if (query->hasSubLinks)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a subquery is not supported in a continuous view")));
	if (!query->hasAggs && query->groupClause == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view over continuous view \"%s\" needs aggregates or GROUP BY",
						upstream_name(spec)),
				 errdetail("Continuous transforms read streams, not continuous views.")));
	/* its delta holds other views' rows too (query/shared_plan.c) */
	shared_refuse(spec->upstream, "a continuous view over it");
	if (!OidIsValid(up.deltaid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot build a continuous view over continuous view \"%s\": it upserts its groups",
						upstream_name(spec)),
				 errdetail("A continuous view over another is fed by the batches the other appends to its delta; session windows, a count(DISTINCT) of a variable-width value and views made before stream_ext 0.3 upsert instead."),
				 errhint("Create the coarser view over the stream itself.")));
	if (se_stream_is_changelog(up.streamid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot build a continuous view over continuous view \"%s\": it reads changelog stream \"%s\"",
						upstream_name(spec), get_rel_name(up.streamid)),
				 errdetail("Retractions make its groups shrink and vanish; its partial states do not carry that to a roll-up exactly."),
				 errhint("Create the coarser view over the changelog stream itself.")));
	if (!catalog_lookup_view_definition(spec->upstream, &def))
		elog(ERROR, "continuous view \"%s\" has no recorded definition", upstream_name(spec));
	if (def.overlapping_window)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot build a continuous view over continuous view \"%s\": it has a hopping or sliding window",
						upstream_name(spec)),
				 errdetail("Its rows are panes merged when read; only views without windows or with tumbling windows can be rolled up.")));
	spec->updelta = up.deltaid;
	spec->upmatrel = up.matrelid;
	spec->upowner = up.owner;
	spec->original = query;
	upstream_plan(spec, def.definition);
	upstream_columns(spec);

	/* the same query over the upstream's FROM */
	cx.spec = spec;
	cx.combine_oid = combine_function();
	cx.target = InvalidOid;
	cx.querytext = querytext;
	upq = spec->uplan->query;
	composed = copyObject(query);
	composed->rtable = copyObject(upq->rtable);
	composed->targetList = (List *) compose_mutator((Node *) query->targetList, &cx);
	composed->havingQual = compose_mutator(query->havingQual, &cx);
	quals = compose_mutator(query->jointree->quals, &cx);
	if (upq->jointree->quals != NULL)
		quals = quals ? (Node *) make_andclause(list_make2(copyObject(upq->jointree->quals), quals)) :
			copyObject(upq->jointree->quals);
	composed->jointree = makeFromExpr(copyObject(upq->jointree->fromlist), quals);
	composed->hasSubLinks = upq->hasSubLinks;
	return composed;
}

/*
 * What CREATE VIEW may not combine with a roll-up: CREATE OR REPLACE
 * (either way) and the options that need the stream's rows (windows,
 * sessions, lateness).
 */
void
rollup_check_create(RollupSpec *spec, bool replacing, bool options)
{
	if (replacing)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("CREATE OR REPLACE is not supported for a continuous view over a continuous view"),
				 errhint("Drop the view and create it again: its history is backfilled from \"%s\".",
						 upstream_name(spec))));
	if (options)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("window, session and lateness options are not supported for a continuous view over continuous view \"%s\"",
						upstream_name(spec)),
				 errdetail("A roll-up groups the upstream's groups; only ttl, ttl_column and notify apply to it.")));
}

/* CREATE OR REPLACE of existing (a relation): not of a roll-up or an upstream */
void
rollup_check_replace(Oid existing)
{
	ViewCatalogEntry cat;

	if (!OidIsValid(existing) ||
		!catalog_lookup_view(existing, &cat, CurrentMemoryContext))
		return;
	if ((OidIsValid(cat.deltaid) && rollup_feeds_views(cat.deltaid)) ||
		!catalog_is_stream(cat.streamid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot replace continuous view \"%s\": it is a continuous view over another or one is built over it",
						get_rel_name(existing)),
				 errhint("Drop the views over it (DROP VIEW ... CASCADE) and create them again; each backfills from its upstream.")));
}

/* do continuous views (roll-ups) read the inserts into deltaid? */
bool
rollup_feeds_views(Oid deltaid)
{
	return catalog_has_delta() &&
		catalog_views_of_stream(deltaid, CurrentMemoryContext) != NIL;
}

/* ---- the batch statement ---------------------------------------------- */

/* the roll-up's batch of source (read as ROLLUP_ALIAS), with cv_batch_agg_sql()'s columns */
static char *
batch_agg_sql(RollupSpec *spec, CVPlan *plan, const char *source)
{
	ComposeContext cx = {spec, InvalidOid, spec->updelta, NULL};
	List	   *ctx = deparse_context_for(ROLLUP_ALIAS, spec->updelta);
	Query	   *q = spec->original;
	List	   *key_exprs = NIL;
	StringInfoData buf;
	ListCell   *lc;
	ListCell   *lk;
	Node	   *where;

	foreach(lc, q->groupClause)
	{
		TargetEntry *tle = get_sortgroupclause_tle(lfirst(lc), q->targetList);
		Node	   *expr = compose_mutator((Node *) copyObject(tle->expr), &cx);

		key_exprs = lappend(key_exprs, deparse_expression(expr, ctx, true, false));
	}
	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT ");
	if (plan->keyless)
		appendStringInfoString(&buf, "true AS " CV_SINGLE_COLUMN);
	forboth(lc, key_exprs, lk, plan->keys)
		appendStringInfo(&buf, "%s%s AS %s", foreach_current_index(lc) ? ", " : "",
						 (char *) lfirst(lc),
						 quote_identifier(((CVKey *) lfirst(lk))->colname));
	if (cv_matrel_hashed(plan))
		appendStringInfo(&buf, ", %s AS " CV_KEY_HASH_COLUMN, cv_key_hash_sql(key_exprs));
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);
		const char *upcol = NULL;

		if (agg->is_distinct)
			continue;			/* rollup_distinct_sql() */
		for (int i = 0; i < spec->ncols; i++)
		{
			if (spec->cols[i].kind == ROLLUP_STATE &&
				equal(spec->cols[i].expr, agg->aggref))
				upcol = spec->cols[i].stored;
		}
		if (upcol == NULL)
			elog(ERROR, "stream_ext: no state of \"%s\" for aggregate %s",
				 upstream_name(spec), get_func_name(agg->aggref->aggfnoid));
		appendStringInfo(&buf, ", stream_ext.merge_states(%s.%s, %s::pg_catalog.regprocedure) AS %s",
						 ROLLUP_ALIAS, quote_identifier(upcol),
						 quote_literal_cstr(format_procedure_qualified(agg->aggref->aggfnoid)),
						 quote_identifier(agg->colname));
	}
	appendStringInfo(&buf, " FROM %s %s", source, ROLLUP_ALIAS);
	where = compose_mutator(copyObject(q->jointree->quals), &cx);
	if (where)
		appendStringInfo(&buf, " WHERE %s", deparse_expression(where, ctx, true, false));
	if (plan->keyless)
		appendStringInfoString(&buf, " GROUP BY ()");
	for (int i = 1; i <= list_length(plan->keys); i++)
		appendStringInfo(&buf, "%s%d", i == 1 ? " GROUP BY " : ", ", i);
	return buf.data;
}

/*
 * The roll-up's maintenance statement: the upstream batch's states (the
 * transition table of the upstream's delta) merged per coarse group and
 * appended to the roll-up's delta.
 */
char *
rollup_maintain_sql(RollupSpec *spec, CVPlan *plan, const char *delta)
{
	if (delta == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a continuous view over continuous view \"%s\" must append to a delta",
						upstream_name(spec)),
				 errdetail("Its group keys have a type without an extended hash function, or stream_ext was not updated to 0.3.")));
	return psprintf("/* stream_ext maintenance */ %s",
					cv_append_sql(plan, delta,
								  psprintf("(%s)", batch_agg_sql(spec, plan, CV_NEW_ROWS)),
								  CV_BATCH_AGG_ALIAS));
}

/*
 * The rows of source (SQL of stream_ext's own, over the upstream's tables),
 * read as the upstream's owner with the latest snapshot (the caller holds
 * the upstream's delta), into a tuplestore registered as CV_NEW_ROWS on the
 * caller's SPI connection, in place of any registered before: the batch of
 * a backfill statement then run as the roll-up's creator.
 */
static void
register_upstream_rows(RollupSpec *spec, const char *source)
{
	SeRunAs		runas;
	Portal		portal;
	Tuplestorestate *store;
	TupleDesc	desc = NULL;
	EphemeralNamedRelation enr;
	uint64		n = 0;

	store = tuplestore_begin_heap(false, false, work_mem);
	se_run_as_owner(&runas, spec->upowner, NULL);
	PushActiveSnapshot(GetLatestSnapshot());
	portal = SPI_cursor_open_with_args(NULL, source, 0, NULL, NULL, NULL, true, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, 10000);
		if (desc == NULL)
			desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
			tuplestore_puttuple(store, SPI_tuptable->vals[i]);
		n += SPI_processed;
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	PopActiveSnapshot();
	se_restore(&runas);

	(void) SPI_unregister_relation(CV_NEW_ROWS);
	enr = palloc0(sizeof(EphemeralNamedRelationData));
	enr->md.name = CV_NEW_ROWS;
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = n;
	enr->reldata = store;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "SPI_register_relation failed");
}

static char *
rel_sql(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * The backfill: the upstream's groups as they are now (materialization
 * (+) delta) registered as the batch (register_upstream_rows()); returns
 * the statement storing them into the roll-up's materialization.
 */
char *
rollup_backfill_sql(RollupSpec *spec, CVPlan *plan, const char *matrel)
{
	register_upstream_rows(spec,
						   psprintf("SELECT * FROM %s m",
									cv_merged_source_sql(spec->uplan, rel_sql(spec->upmatrel),
														 rel_sql(spec->updelta))));
	return cv_store_sql(plan, matrel,
						psprintf("(%s)", batch_agg_sql(spec, plan, CV_NEW_ROWS)),
						CV_BATCH_AGG_ALIAS);
}

/*
 * A roll-up's count(DISTINCT) (stream_ext.combine() of the upstream's):
 * fed by the inserts into the upstream's side table of (fine keys, value),
 * which hold each value new to a fine group once.  Per batch of them, the
 * pairs (coarse keys, value) go into the roll-up's side table, whose unique
 * index keeps each once, and the number of those new to the coarse group
 * is appended to the roll-up's delta -- the statement a view over a stream
 * runs per count(DISTINCT), over the side table's rows (alias a).
 */
char *
rollup_distinct_sql(RollupSpec *spec, CVPlan *plan, CVAgg *agg, const char *auxrel,
					const char *delta)
{
	Oid			feed = InvalidOid;
	ComposeContext cx = {spec, InvalidOid, InvalidOid, NULL};
	Query	   *q = spec->original;
	List	   *ctx;
	StringInfoData buf;
	StringInfoData cols;
	ListCell   *lc;
	Node	   *where;

	for (int i = 0; i < spec->ncols; i++)
	{
		if (spec->cols[i].kind == ROLLUP_DISTINCT && equal(spec->cols[i].expr, agg->aggref))
			feed = spec->cols[i].auxid;
	}
	if (!OidIsValid(feed) || delta == NULL || cv_auxrel_hashed(plan, agg))
		elog(ERROR, "stream_ext: count(DISTINCT) of a roll-up without a side table to read");
	cx.target = feed;
	ctx = deparse_context_for("a", feed);

	initStringInfo(&cols);
	append_key_columns(&cols, plan, "");
	initStringInfo(&buf);
	appendStringInfo(&buf, "/* stream_ext maintenance */ WITH new_values AS (INSERT INTO %s (%s%svalue) SELECT DISTINCT ",
					 auxrel, cols.data, plan->keyless ? "" : ", ");
	foreach(lc, q->groupClause)
	{
		TargetEntry *tle = get_sortgroupclause_tle(lfirst(lc), q->targetList);

		appendStringInfo(&buf, "%s, ",
						 deparse_expression(compose_mutator((Node *) copyObject(tle->expr), &cx),
											ctx, true, false));
	}
	appendStringInfo(&buf, "a.value FROM %s a", CV_NEW_ROWS);
	where = compose_mutator(copyObject(q->jointree->quals), &cx);
	if (where)
		appendStringInfo(&buf, " WHERE %s", deparse_expression(where, ctx, true, false));
	appendStringInfo(&buf, " ON CONFLICT DO NOTHING RETURNING %s) INSERT INTO %s (%s, %s) SELECT %s, pg_catalog.count(*) FROM new_values",
					 plan->keyless ? "1" : cols.data, delta,
					 plan->keyless ? CV_SINGLE_COLUMN : cols.data,
					 quote_identifier(agg->colname),
					 plan->keyless ? "true" : cols.data);
	for (int i = 1; i <= list_length(plan->keys); i++)
		appendStringInfo(&buf, "%s%d", i == 1 ? " GROUP BY " : ", ", i);

	spec->distinct_feeds = lappend_oid(spec->distinct_feeds, feed);
	spec->distinct_aux = lappend(spec->distinct_aux, pstrdup(auxrel));
	return buf.data;
}

/*
 * The backfill of the roll-up's n-th count(DISTINCT) (0-based): sql
 * (rollup_distinct_sql()) over the upstream's side table as it is now.
 */
char *
rollup_distinct_backfill_sql(RollupSpec *spec, int n, char *sql)
{
	Oid			feed = list_nth_oid(spec->distinct_feeds, n);
	char	   *rows = psprintf("SELECT * FROM %s", rel_sql(feed));

	/* an upstream that defers: its values still in its delta too */
	if (spec->uplan->defer_distinct)
	{
		List	   *parts = catalog_view_parts(spec->upstream);
		ListCell   *lc;

		foreach(lc, spec->uplan->aggs)
		{
			CVAgg	   *agg = lfirst(lc);

			if (agg->is_distinct && cv_distinct_side_table(spec->uplan, agg, parts) == feed)
				rows = cv_distinct_values_sql(spec->uplan, agg, rel_sql(feed),
											  rel_sql(spec->updelta));
		}
	}
	register_upstream_rows(spec, rows);
	return sql;
}

/*
 * The trigger on feed (the upstream's delta, or one of its side tables)
 * that maintains the roll-up, stream_ext.maintain_rollup('<target: the
 * roll-up's materialization or side table>'): made as feed's owner (only a
 * table's owner may create a trigger on it), AUTO on the roll-up so that
 * it goes with it.
 */
static void
create_feed_trigger(Oid feed, Oid viewid, Oid target, const char *arg)
{
	char	   *base = psprintf("stream_ext_rollup_%u", target);
	char	   *trigname = base;
	SeRunAs		runas;
	Oid			trigid;

	for (int n = 2; OidIsValid(get_trigger_oid(feed, trigname, true)); n++)
		trigname = psprintf("%s_%d", base, n);
	se_run_as_role(&runas, se_relation_owner(feed));
	trigid = se_create_statement_trigger(feed, trigname, TRIGGER_TYPE_AFTER,
										 TRIGGER_TYPE_INSERT, "maintain_rollup", arg,
										 CV_NEW_ROWS);
	se_restore(&runas);
	se_record_dependency(TriggerRelationId, trigid, RelationRelationId, viewid,
						 DEPENDENCY_AUTO);
	CacheInvalidateRelcacheByRelid(feed);
}

/*
 * The roll-up's triggers; its materialization depends on the upstream's
 * delta: DROP of the upstream needs CASCADE.
 */
void
rollup_create_trigger(RollupSpec *spec, Oid viewid, Oid matrelid, const char *mq)
{
	ListCell   *lf;
	ListCell   *la;

	create_feed_trigger(spec->updelta, viewid, matrelid, mq);
	/* each count(DISTINCT): stream_ext.maintain_rollup('<its side table>') */
	forboth(lf, spec->distinct_feeds, la, spec->distinct_aux)
		create_feed_trigger(lfirst_oid(lf), viewid,
							relid_from_trigger_arg((char *) lfirst(la)),
							(char *) lfirst(la));
	se_record_dependency(RelationRelationId, matrelid, RelationRelationId,
						 spec->updelta, DEPENDENCY_NORMAL);
}

/* ---- the trigger: stream_ext.maintain_rollup(materialization) ---------- */

/* the position of relid in list (1-based), 0 if none */
static int
oid_position(List *list, Oid relid)
{
	ListCell   *lc;

	foreach(lc, list)
	{
		if (lfirst_oid(lc) == relid)
			return foreach_current_index(lc) + 1;
	}
	return 0;
}

typedef struct RollupUnit
{
	ViewCatalogEntry cat;		/* the roll-up */
	Oid			upstream;		/* the view it reads */
	const char *sql;			/* its statement for this trigger's batches */
	Oid			auxid;			/* a count(DISTINCT)'s side table, fed by a
								 * side table of the upstream; InvalidOid:
								 * the states, fed by the upstream's delta */
} RollupUnit;

static void
rollup_load(SeBatchEntry *entry, TriggerData *trigdata)
{
	Trigger    *trigger = trigdata->tg_trigger;
	RollupUnit *unit = MemoryContextAllocZero(entry->cxt, sizeof(RollupUnit));
	Oid			matrelid = relid_from_trigger_arg(trigger->tgargs[0]);
	ViewCatalogEntry up;
	MemoryContext old;

	if (OidIsValid(matrelid) &&
		!catalog_lookup_view_by_matrel(matrelid, &unit->cat, entry->cxt))
	{
		/* the side table of a count(DISTINCT): its statement (parts: matrel, side tables) */
		Oid			viewid = catalog_view_of_side_table(matrelid);
		List	   *parts;
		int			n;

		if (OidIsValid(viewid) &&
			catalog_lookup_view(viewid, &unit->cat, entry->cxt) &&
			(n = oid_position(parts = catalog_view_parts(viewid), matrelid) - 1) > 0 &&
			n <= list_length(unit->cat.distinct_sql))
		{
			unit->auxid = matrelid;
			unit->sql = list_nth(unit->cat.distinct_sql, n - 1);
			matrelid = unit->cat.matrelid;
		}
	}
	if (unit->sql == NULL)
		unit->sql = unit->cat.maintain_sql;
	if (!OidIsValid(matrelid) || unit->cat.matrelid != matrelid)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous view with materialization %s does not exist",
						trigger->tgargs[0]),
				 errdetail("Trigger \"%s\" maintains it.", trigger->tgname)));
	if (!catalog_view_of_delta(unit->cat.streamid, &up, entry->cxt))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous view \"%s\" reads no continuous view",
						get_rel_name(unit->cat.viewid))));
	unit->upstream = up.viewid;
	entry->kind = unit;
	entry->objid = unit->cat.viewid;
	entry->streamid = unit->cat.streamid;
	entry->relids[0] = unit->cat.matrelid;
	entry->relids[1] = unit->cat.streamid;
	entry->relids[2] = unit->cat.viewid;
	old = MemoryContextSwitchTo(entry->cxt);
	entry->more_relids = list_make1_oid(up.viewid);
	MemoryContextSwitchTo(old);
	entry->owner = unit->cat.owner;
	entry->timezone = unit->cat.timezone;
	entry->notify = unit->cat.notify;
	entry->error_context =
		MemoryContextStrdup(entry->cxt,
							psprintf("maintenance of continuous view %s from the batch of continuous view %s",
									 quote_identifier(get_rel_name(unit->cat.viewid)),
									 quote_identifier(get_rel_name(up.viewid))));
}

static bool
rollup_admit(SeBatchEntry *entry, TriggerData *trigdata)
{
	RollupUnit *unit = entry->kind;

	if (OidIsValid(unit->auxid))
	{
		/* a side table of the upstream feeds a count(DISTINCT), none other */
		List	   *parts = catalog_view_parts(unit->upstream);

		if (oid_position(parts, RelationGetRelid(trigdata->tg_relation)) <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("trigger \"%s\" on \"%s\" cannot maintain continuous view \"%s\": it reads another relation",
							trigdata->tg_trigger->tgname,
							RelationGetRelationName(trigdata->tg_relation),
							get_rel_name(unit->cat.viewid))));
		if (priv_invalid_reason(unit->cat.viewid) != NULL)
			return false;
	}
	else if (!maint_admit_view(trigdata, &unit->cat))
		return false;
	/* the owner reads the upstream: SELECT on it, checked at every batch */
	if (pg_class_aclcheck(unit->upstream, unit->cat.owner, ACL_SELECT) != ACLCHECK_OK)
	{
		priv_mark_invalid(unit->cat.viewid, "continuous view",
						  psprintf("role \"%s\" has no SELECT on view %s",
								   GetUserNameFromId(unit->cat.owner, false),
								   quote_qualified_identifier(get_namespace_name(get_rel_namespace(unit->upstream)),
															  get_rel_name(unit->upstream))));
		return false;
	}
	return true;
}

static void
rollup_prepare(SeBatchEntry *entry)
{
	RollupUnit *unit = entry->kind;

	(void) se_batch_prepare(entry, unit->sql, 0, NULL);
}

static uint64
rollup_run(SeBatchEntry *entry, TriggerData *trigdata)
{
	RollupUnit *unit = entry->kind;
	int			rc = SPI_execute_plan(linitial(se_batch_plans(entry, trigdata)),
									  NULL, NULL, false, 0);

	if (rc != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: maintenance failed: %s", SPI_result_code_string(rc));
	compact_after_batch(&unit->cat);
	return SPI_processed;
}

static const SeBatchOps rollup_ops = {
	.name = "stream_ext.maintain_rollup()",
	.argument = "the materialization",
	.load = rollup_load,
	.admit = rollup_admit,
	.prepare = rollup_prepare,
	.run = rollup_run,
	.materialize = true,
	.plan_rows = MAINT_PLAN_ROWS,
	.invalid_kind = NULL,		/* rollup_admit() checks the one privilege */
};

Datum
stream_ext_maintain_rollup(PG_FUNCTION_ARGS)
{
	return se_batch_trigger(fcinfo, &rollup_ops);
}
