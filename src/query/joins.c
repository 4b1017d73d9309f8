/*-------------------------------------------------------------------------
 *
 * joins.c
 *	  Stream-table joins in continuous views and transforms.
 *
 *	  A continuous view or transform may join its stream to ordinary
 *	  tables (FROM clicks c JOIN users u ON u.id = c.user_id): INNER, CROSS,
 *	  and outer joins that keep every stream row (LEFT with the stream on
 *	  the left, RIGHT with it on the right).  Each batch is joined to the
 *	  tables as they are when it is maintained, in the inserting
 *	  transaction's snapshot; a later change to a table does not rewrite
 *	  what was already aggregated.  That is the incremental meaning of the
 *	  join: every stream row is combined with the table rows it saw.
 *
 *	  This file validates the FROM clause and writes the FROM clause of the
 *	  generated SQL.  Expressions are deparsed against the query's own range
 *	  table, with the stream named s (as everywhere in stream_ext's SQL) and
 *	  the table of range-table entry i named t<i>, so the maintenance
 *	  statement reads "FROM stream_ext_new s JOIN public.users t2 ON ...".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "core/catalog.h"
#include "core/util.h"
#include "query/joins.h"
#include "query/sjoin_window.h"

/*
 * The range-table entry read from the batch in joins_from_sql(), when it is
 * not the stream (rti 1): the second stream of a stream-stream join, whose
 * batches join the first stream's retained rows (query/stream_joins.c).
 */
static Index batch_rti = 1;

Index
joins_set_batch_rti(Index rti)
{
	Index		old = batch_rti;

	batch_rti = rti;
	return old;
}

typedef struct FromCheck
{
	Query	   *q;
	const char *querytext;
	const char *what;
	int			nstreams;
	int			nrels;
	Index		stream_rti;
	Index		second_stream_rti;	/* a join of two streams: query/stream_joins.c */
} FromCheck;

static void
join_not_supported(FromCheck *fc, const char *construct, const char *detail,
				   int location)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported in a %s", construct, fc->what),
			 detail ? errdetail("%s", detail) : 0,
			 (fc->querytext && location >= 0) ?
			 errposition(pg_mbstrlen_with_len(fc->querytext, location) + 1) : 0));
}

/* does the jointree node contain range-table entry rti? */
static bool
node_contains_rti(Node *node, Index rti)
{
	if (IsA(node, RangeTblRef))
		return ((RangeTblRef *) node)->rtindex == (int) rti;
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		return node_contains_rti(j->larg, rti) || node_contains_rti(j->rarg, rti);
	}
	return false;
}

static void
check_from_item(FromCheck *fc, Node *node)
{
	if (IsA(node, RangeTblRef))
	{
		Index		rti = ((RangeTblRef *) node)->rtindex;
		RangeTblEntry *rte = rt_fetch(rti, fc->q->rtable);
		char		relkind;

		if (rte->rtekind != RTE_RELATION)
			join_not_supported(fc, "a FROM item other than a stream or a table", NULL, -1);
		if (rte->tablesample)
			join_not_supported(fc, "TABLESAMPLE", NULL, -1);
		fc->nrels++;
		if (catalog_is_stream(rte->relid))
		{
			fc->nstreams++;
			if (fc->nstreams == 1)
				fc->stream_rti = rti;
			else if (fc->nstreams == 2)
				fc->second_stream_rti = rti;
			return;
		}
		relkind = get_rel_relkind(rte->relid);
		if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
			relkind != RELKIND_MATVIEW && relkind != RELKIND_VIEW &&
			relkind != RELKIND_FOREIGN_TABLE)
			join_not_supported(fc, psprintf("joining \"%s\"", get_rel_name(rte->relid)),
							   "Only tables, views and materialized views can be joined to a stream.", -1);
		return;
	}
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		check_from_item(fc, j->larg);
		check_from_item(fc, j->rarg);
		switch (j->jointype)
		{
			case JOIN_INNER:
				break;
			case JOIN_LEFT:
			case JOIN_RIGHT:
				if (fc->stream_rti != 0 &&
					node_contains_rti(j->jointype == JOIN_LEFT ? j->rarg : j->larg,
									  fc->stream_rti))
					join_not_supported(fc,
									   j->jointype == JOIN_LEFT ?
									   "a LEFT JOIN with the stream on its right side" :
									   "a RIGHT JOIN with the stream on its left side",
									   "A continuous view is maintained from the stream's new rows; table rows that match no stream row cannot be maintained incrementally.",
									   -1);
				break;
			case JOIN_FULL:
				join_not_supported(fc, "FULL JOIN",
								   "A continuous view is maintained from the stream's new rows; table rows that match no stream row cannot be maintained incrementally.",
								   -1);
				break;
			default:
				join_not_supported(fc, "this kind of join", NULL, -1);
		}
		return;
	}
	join_not_supported(fc, "a FROM item other than a stream or a table", NULL, -1);
}

Oid
joins_check_from(Query *q, const char *querytext, const char *what)
{
	FromCheck	fc;
	ListCell   *lc;
	RangeTblEntry *rte = NULL;

	memset(&fc, 0, sizeof(fc));
	fc.q = q;
	fc.querytext = querytext;
	fc.what = what;
	if (q->jointree->fromlist == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a %s must read a stream", what),
				 errhint("Continuous views read from streams; create one with stream_ext.create_stream().")));
	foreach(lc, q->jointree->fromlist)
		check_from_item(&fc, lfirst(lc));

	if (fc.nstreams == 0)
	{
		/* name the first relation: none is a stream */
		rte = NULL;
		foreach(lc, q->rtable)
		{
			rte = lfirst(lc);
			if (rte->rtekind == RTE_RELATION)
				break;
		}
		Assert(rte != NULL);
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a stream", get_rel_name(rte->relid)),
				 errhint("Continuous views read from streams; create one with stream_ext.create_stream().")));
	}
	if (fc.nstreams > 2)
		join_not_supported(&fc, "a join of more than two streams",
						   "A continuous view reads one stream, or two joined within a time window; it may join them to tables.", -1);
	if (fc.stream_rti != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the stream must be the first relation in the FROM clause of a %s", what),
				 errhint("Write FROM stream JOIN table ..., not FROM table JOIN stream ....")));

	/* every Var a column of a relation: join alias Vars are resolved */
	if (fc.nrels > 1)
	{
		q->targetList = (List *) flatten_join_alias_vars(q, (Node *) q->targetList);
		q->jointree = (FromExpr *) flatten_join_alias_vars(q, (Node *) q->jointree);
		q->havingQual = flatten_join_alias_vars(q, q->havingQual);
	}
	/* two streams: joined within a time window (query/stream_joins.c) */
	if (fc.nstreams == 2)
		sjoin_check_from(q, fc.second_stream_rti, querytext, what);
	return rt_fetch(1, q->rtable)->relid;
}

bool
joins_has_tables(Query *q)
{
	return joins_tables(q) != NIL;
}

List *
joins_tables(Query *q)
{
	List	   *result = NIL;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		i++;
		if (i > 1 && rte->rtekind == RTE_RELATION)
			result = lappend_oid(result, rte->relid);
	}
	return result;
}

List *
joins_deparse_context(Query *q, Oid streamid)
{
	PlannedStmt *ps;
	List	   *rtable = NIL;
	List	   *names = NIL;
	ListCell   *lc;
	int			i = 0;

	if (!joins_has_tables(q))
		return deparse_context_for("s", streamid);

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = copyObject((RangeTblEntry *) lfirst(lc));

		i++;
		if (rte->rtekind == RTE_RELATION)
		{
			/* the generated FROM uses real column names, no aliases */
			rte->alias = NULL;
			names = lappend(names, i == 1 ? pstrdup("s") : psprintf("t%d", i));
		}
		else
			names = lappend(names, NULL);
		rtable = lappend(rtable, rte);
	}
	ps = makeNode(PlannedStmt);
	ps->rtable = rtable;
	return deparse_context_for_plan_tree(ps, names);
}

static void
append_from_item(StringInfo buf, Query *q, List *ctx, const char *source,
				 Node *node)
{
	if (IsA(node, RangeTblRef))
	{
		Index		rti = ((RangeTblRef *) node)->rtindex;
		RangeTblEntry *rte = rt_fetch(rti, q->rtable);

		if (rti == 1 && batch_rti == 1)
			appendStringInfo(buf, "%s s", source);
		else if (rti == batch_rti)
			appendStringInfo(buf, "%s t%u", source, rti);
		else if (rti == 1)
			appendStringInfo(buf, "%s%s s", rte->inh ? "" : "ONLY ",
							 quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
														get_rel_name(rte->relid)));
		else
			appendStringInfo(buf, "%s%s t%u", rte->inh ? "" : "ONLY ",
							 quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
														get_rel_name(rte->relid)),
							 rti);
		return;
	}
	else
	{
		JoinExpr   *j = castNode(JoinExpr, node);
		const char *kind;

		switch (j->jointype)
		{
			case JOIN_INNER:
				kind = j->quals ? "JOIN" : "CROSS JOIN";
				break;
			case JOIN_LEFT:
				kind = "LEFT JOIN";
				break;
			case JOIN_RIGHT:
				kind = "RIGHT JOIN";
				break;
			default:
				elog(ERROR, "unexpected join type %d", (int) j->jointype);
				kind = NULL;	/* keep compiler quiet */
		}
		appendStringInfoChar(buf, '(');
		append_from_item(buf, q, ctx, source, j->larg);
		appendStringInfo(buf, " %s ", kind);
		append_from_item(buf, q, ctx, source, j->rarg);
		if (j->quals)
			appendStringInfo(buf, " ON %s", deparse_expression(j->quals, ctx, true, false));
		else if (j->jointype != JOIN_INNER)
			appendStringInfoString(buf, " ON true");
		appendStringInfoChar(buf, ')');
	}
}

char *
joins_from_sql(Query *q, List *ctx, const char *source)
{
	StringInfoData buf;
	ListCell   *lc;

	if (!joins_has_tables(q))
		return psprintf("%s s", source);
	initStringInfo(&buf);
	foreach(lc, q->jointree->fromlist)
	{
		if (lc != list_head(q->jointree->fromlist))
			appendStringInfoString(&buf, " CROSS JOIN ");
		append_from_item(&buf, q, ctx, source, lfirst(lc));
	}
	return buf.data;
}

typedef struct DepContext
{
	Query	   *q;
	ObjectAddress obj;
} DepContext;

static bool
record_var_walker(Node *node, DepContext *dc)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		RangeTblEntry *rte;
		ObjectAddress ref;

		if (var->varlevelsup != 0 || var->varno <= 1 ||
			var->varno > list_length(dc->q->rtable))
			return false;
		rte = rt_fetch(var->varno, dc->q->rtable);
		if (rte->rtekind != RTE_RELATION)
			return false;
		ObjectAddressSubSet(ref, RelationRelationId, rte->relid,
							var->varattno > 0 ? var->varattno : 0);
		recordDependencyOn(&dc->obj, &ref, DEPENDENCY_NORMAL);
		return false;
	}
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, record_var_walker, (void *) dc);
}

void
joins_record_dependencies(Query *q, Oid objid)
{
	DepContext	dc;
	ListCell   *lc;

	dc.q = q;
	ObjectAddressSet(dc.obj, RelationRelationId, objid);
	/* the tables themselves (DROP TABLE), then each column read */
	foreach(lc, joins_tables(q))
	{
		ObjectAddress ref;

		ObjectAddressSet(ref, RelationRelationId, lfirst_oid(lc));
		recordDependencyOn(&dc.obj, &ref, DEPENDENCY_NORMAL);
	}
	(void) record_var_walker((Node *) q->targetList, &dc);
	(void) record_var_walker((Node *) q->jointree, &dc);
	(void) record_var_walker(q->havingQual, &dc);
}

/* ---- after pg_restore ---------------------------------------------------- */

typedef struct RestoreContext
{
	List	   *aliases;		/* String "t<i>" */
	List	   *relids;			/* their relations, in parallel */
	List	   *columns;		/* ColumnRef "t<i>.col" */
} RestoreContext;

static bool
collect_refs_walker(Node *node, RestoreContext *rc)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeVar))
	{
		RangeVar   *rv = (RangeVar *) node;
		Oid			relid;

		if (rv->alias && rv->alias->aliasname[0] == 't' &&
			strspn(rv->alias->aliasname + 1, "0123456789") == strlen(rv->alias->aliasname + 1) &&
			rv->alias->aliasname[1] != '\0' &&
			OidIsValid(relid = RangeVarGetRelid(rv, NoLock, true)))
		{
			rc->aliases = lappend(rc->aliases, makeString(rv->alias->aliasname));
			rc->relids = lappend_oid(rc->relids, relid);
		}
		return false;
	}
	if (IsA(node, ColumnRef))
	{
		ColumnRef  *cr = (ColumnRef *) node;

		if (list_length(cr->fields) == 2 && IsA(linitial(cr->fields), String) &&
			IsA(lsecond(cr->fields), String))
			rc->columns = lappend(rc->columns, cr);
		return false;
	}
	return raw_expression_tree_walker(node, collect_refs_walker, (void *) rc);
}

static bool
dependency_exists(const ObjectAddress *obj, const ObjectAddress *ref)
{
	return se_dependency_exists(obj->classId, obj->objectId, ref->classId,
								ref->objectId, ref->objectSubId);
}

/*
 * pg_dump does not dump dependencies.  Re-record those of objid (a
 * materialization or a transform) on the tables its generated SQL joins:
 * the SQL is schema-qualified and names joined tables t<i>, so its raw
 * parse tree says which tables and columns it reads.  Returns the number
 * of dependencies recorded.
 */
int
joins_restore_dependencies(const char *sql, Oid objid)
{
	RestoreContext rc = {NIL, NIL, NIL};
	List	   *parsetree = raw_parser(sql, RAW_PARSE_DEFAULT);
	ListCell   *lc;
	ObjectAddress obj;
	int			n = 0;

	ObjectAddressSet(obj, RelationRelationId, objid);
	foreach(lc, parsetree)
		(void) collect_refs_walker(((RawStmt *) lfirst(lc))->stmt, &rc);

	for (int i = 0; i < list_length(rc.relids); i++)
	{
		ObjectAddress ref;

		ObjectAddressSet(ref, RelationRelationId, list_nth_oid(rc.relids, i));
		if (!dependency_exists(&obj, &ref))
		{
			recordDependencyOn(&obj, &ref, DEPENDENCY_NORMAL);
			CommandCounterIncrement();
			n++;
		}
	}
	foreach(lc, rc.columns)
	{
		ColumnRef  *cr = lfirst(lc);
		const char *alias = strVal(linitial(cr->fields));

		for (int i = 0; i < list_length(rc.aliases); i++)
		{
			Oid			relid;
			AttrNumber	attno;
			ObjectAddress ref;

			if (strcmp(strVal(list_nth(rc.aliases, i)), alias) != 0)
				continue;
			relid = list_nth_oid(rc.relids, i);
			attno = get_attnum(relid, strVal(lsecond(cr->fields)));
			if (attno <= 0)
				break;
			ObjectAddressSubSet(ref, RelationRelationId, relid, attno);
			if (!dependency_exists(&obj, &ref))
			{
				recordDependencyOn(&obj, &ref, DEPENDENCY_NORMAL);
				CommandCounterIncrement();	/* the next lookup sees it */
				n++;
			}
			break;
		}
	}
	return n;
}
