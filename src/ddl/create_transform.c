/*-------------------------------------------------------------------------
 *
 * create_transform.c
 *	  CREATE VIEW ... WITH (continuous) AS <a query without aggregates and
 *	  GROUP BY>: a continuous transform (its batches are run by
 *	  maintain/transform.c).  ddl_create_view() (ddl/create_view.c) parses
 *	  the options and analyzes the query, then hands it here; the phases
 *	  are an aggregate view's -- analyze, build objects, record, backfill --
 *	  and each step they share with it (privileges and row-level security,
 *	  stream lock, name, pinned settings, the trigger made as the stream's
 *	  owner, backfill, comment) is ddl/create_steps.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/varlena.h"

#include "core/catalog.h"
#include "core/util.h"
#include "ddl/create_steps.h"
#include "ddl/create_transform.h"
#include "ddl/used_objects.h"
#include "query/analyze.h"
#include "query/joins.h"
#include "query/sjoin_left.h"
#include "query/stream_joins.h"

bool
transform_applies(Query *query)
{
	return query->commandType == CMD_SELECT && query->utilityStmt == NULL &&
		!query->hasAggs && !query->hasWindowFuncs &&
		query->groupClause == NIL &&
		query->groupingSets == NIL && query->havingQual == NULL &&
		query->setOperations == NULL;
}

static void
transform_not_supported(const char *construct)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported in a continuous transform", construct)));
}

static bool
is_volatile_func(Oid func_id, void *context)
{
	return func_volatile(func_id) == PROVOLATILE_VOLATILE;
}

static bool
has_volatile_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, is_volatile_func, NULL))
		return true;
	return expression_tree_walker(node, has_volatile_walker, context);
}

/* validate the query; returns the stream it reads */
static Oid
transform_check_query(Query *q)
{
	Oid			streamid;

	if (q->cteList)
		transform_not_supported("WITH");
	if (q->hasWindowFuncs)
		transform_not_supported("a window function");
	if (q->hasSubLinks)
		transform_not_supported("a subquery");
	if (q->hasTargetSRFs)
		transform_not_supported("a set-returning function in the select list");
	if (q->sortClause)
		transform_not_supported("ORDER BY");
	if (q->limitCount || q->limitOffset)
		transform_not_supported("LIMIT or OFFSET");
	if (q->distinctClause)
		transform_not_supported("SELECT DISTINCT");
	if (q->rowMarks)
		transform_not_supported("FOR UPDATE/SHARE");
	/* one stream, maybe joined to tables (query/joins.c) */
	streamid = joins_check_from(q, NULL, "continuous transform");
	if (has_volatile_walker((Node *) q->targetList, NULL) ||
		has_volatile_walker((Node *) q->jointree, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("volatile functions are not supported in a continuous transform"),
				 errdetail("A transform must equal its query run over the stream's rows.")));
	return streamid;
}

/*
 * Refuse a transform whose output stream feeds, directly or through other
 * transforms, the stream it reads.  The caller holds a lock on
 * transform_catalog that serializes transform creation.
 */
static void
check_cycle(const char *name, Oid source, Oid output)
{
	char	   *path = catalog_transform_path(output, source);

	if (path != NULL)
	{
		char	   *src = quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
													 get_rel_name(source));

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("continuous transform \"%s\" would create a cycle", name),
				 errdetail("Rows would flow %s -> %s -> %s.", src, name, path),
				 errhint("A transform cannot feed, directly or through other transforms, the stream it reads.")));
	}
}

typedef struct OutCol
{
	char	   *name;
	Expr	   *expr;
} OutCol;

/*
 * Match the transform's columns to the output stream's by name: each must
 * exist with an assignable type, and every column the transform leaves out
 * must be nullable or have a default.
 */
static void
check_output_columns(const char *name, List *cols, Oid outid)
{
	Relation	rel = table_open(outid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;
	bool		table_insert = pg_class_aclcheck(outid, GetUserId(), ACL_INSERT) == ACLCHECK_OK;

	foreach(lc, cols)
	{
		OutCol	   *col = lfirst(lc);
		AttrNumber	attnum = get_attnum(outid, col->name);
		Oid			srctype = exprType((Node *) col->expr);
		Form_pg_attribute att;

		if (attnum <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of continuous transform \"%s\" does not exist in output stream \"%s\"",
							col->name, name, RelationGetRelationName(rel)),
					 errhint("Transform columns are matched to the output stream's columns by name; rename it with AS.")));
		att = TupleDescAttr(desc, attnum - 1);
		if (att->attgenerated)
			ereport(ERROR,
					(errcode(ERRCODE_GENERATED_ALWAYS),
					 errmsg("column \"%s\" of output stream \"%s\" is a generated column",
							col->name, RelationGetRelationName(rel))));
		if (srctype != att->atttypid &&
			!can_coerce_type(1, &srctype, &att->atttypid, COERCION_ASSIGNMENT))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of continuous transform \"%s\" is of type %s but column \"%s\" of output stream \"%s\" is of type %s",
							col->name, name, format_type_be(srctype), col->name,
							RelationGetRelationName(rel), format_type_be(att->atttypid)),
					 errhint("Cast the expression in the transform's select list.")));
		if (!table_insert &&
			pg_attribute_aclcheck(outid, attnum, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for stream %s", RelationGetRelationName(rel)),
					 errdetail("The transform inserts into it as its owner.")));
	}
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		given = false;

		if (att->attisdropped || !att->attnotnull || att->atthasdef || att->attgenerated)
			continue;
		foreach(lc, cols)
			given |= (strcmp(((OutCol *) lfirst(lc))->name, NameStr(att->attname)) == 0);
		if (!given)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("continuous transform \"%s\" gives no value for column \"%s\" of output stream \"%s\"",
							name, NameStr(att->attname), RelationGetRelationName(rel)),
					 errdetail("The column is NOT NULL and has no default.")));
	}
	table_close(rel, NoLock);
}

/*
 * A continuous transform being created: what each phase hands to the next.
 */
typedef struct TransformBuild
{
	ViewStmt   *stmt;
	Query	   *query;
	CVOptions *opts;
	Oid			streamid;
	Oid			outid;			/* output_stream, or InvalidOid: a table */
	Oid			nspid;
	List	   *cols;			/* OutCol, in select-list order */
	char	   *definition;
	List	   *ctx;			/* deparse context of the query */
	StringInfoData collist;		/* "a, b" */
	StringInfoData exprs;		/* the select list, deparsed */
	char	   *select_sql;		/* the per-batch SELECT over the transition table */
	char	   *vq;
	Oid			viewid;
	Oid			tableid;		/* the table it appends to, or InvalidOid */
	/* a LEFT JOIN of two streams (query/sjoin_left.c) */
	bool		left;
	SJoinUpperBound ub;
	char	   *extra_qual;		/* ANDed to the WHERE of transform_select_sql() */
} TransformBuild;

/*
 * Phase 2: the query checked, the columns named, the creator's right to
 * read, the stream locked, the output stream checked, the name free.
 */
static void
transform_analyze(TransformBuild *ct)
{
	const char *name = ct->stmt->view->relname;
	List	   *aliases = ct->stmt->aliases;
	ListCell   *lc;
	int			ncols = 0;

	catalog_require_table("transform_catalog", "continuous transforms");
	ct->streamid = transform_check_query(ct->query);
	create_check_reader(ct->query, ct->streamid);

	/* column names: CREATE VIEW's list, else the select list's */
	foreach(lc, ct->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		OutCol	   *col;
		ListCell   *lc2;

		if (tle->resjunk)
			continue;
		col = palloc(sizeof(OutCol));
		col->name = ncols < list_length(aliases) ?
			strVal(list_nth(aliases, ncols)) : tle->resname;
		col->expr = tle->expr;
		foreach(lc2, ct->cols)
			if (strcmp(((OutCol *) lfirst(lc2))->name, col->name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" specified more than once in continuous transform \"%s\"",
								col->name, name)));
		ct->cols = lappend(ct->cols, col);
		ncols++;
	}
	if (list_length(aliases) > ncols)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("CREATE VIEW specifies more column names than columns")));

	/* one transform creation at a time: the cycle check sees all others */
	catalog_lock_transforms();
	create_lock_stream(ct->streamid);

	if (ct->opts->output_stream)
	{
		const char *output = ct->opts->output_stream;
		RangeVar   *rv = makeRangeVarFromNameList(stringToQualifiedNameList(output));

		ct->outid = RangeVarGetRelid(rv, AccessShareLock, false);
		if (!catalog_is_stream(ct->outid))
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("output_stream \"%s\" is not a stream", output),
					 errhint("Create it with stream_ext.create_stream().")));
		check_output_columns(name, ct->cols, ct->outid);
	}
	ct->nspid = create_namespace(ct->stmt, false);
}

/* SELECT <the transform's expressions> FROM <source> [WHERE ...] */
static char *
transform_select_sql(TransformBuild *ct, const char *source)
{
	Query	   *query = ct->query;

	return psprintf("SELECT %s FROM %s%s%s%s%s", ct->exprs.data,
					joins_from_sql(query, ct->ctx, source),
					query->jointree->quals ? " WHERE " : "",
					query->jointree->quals ?
					deparse_expression(query->jointree->quals, ct->ctx, true, false) : "",
					ct->extra_qual ? (query->jointree->quals ? " AND " : " WHERE ") : "",
					ct->extra_qual ? ct->extra_qual : "");
}

/*
 * Phase 3, settings pinned: the per-batch statement, the table it appends
 * to (or, for an output stream, none), the user-facing view, their
 * dependencies and the transform's trigger on the stream.
 */
static void
transform_build(TransformBuild *ct)
{
	const char *name = ct->stmt->view->relname;
	char	   *nspname = get_namespace_name(ct->nspid);
	StringInfoData typed;
	ListCell   *lc;

	ct->definition = pg_get_querydef(ct->query, true);
	if (OidIsValid(ct->outid))
		check_cycle(name, ct->streamid, ct->outid);

	/* the per-batch SELECT over the transition table */
	ct->ctx = joins_deparse_context(ct->query, ct->streamid);
	initStringInfo(&ct->collist);
	initStringInfo(&ct->exprs);
	initStringInfo(&typed);
	foreach(lc, ct->cols)
	{
		OutCol	   *col = lfirst(lc);
		Oid			type = exprType((Node *) col->expr);
		Oid			coll = exprCollation((Node *) col->expr);
		bool		first = (lc == list_head(ct->cols));

		appendStringInfo(&ct->collist, "%s%s", first ? "" : ", ", quote_identifier(col->name));
		appendStringInfo(&ct->exprs, "%s%s", first ? "" : ", ",
						 deparse_expression((Node *) col->expr, ct->ctx, true, false));
		appendStringInfo(&typed, "%s%s %s", first ? "" : ", ", quote_identifier(col->name),
						 format_type_extended(type, exprTypmod((Node *) col->expr),
											  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
		if (OidIsValid(coll) && coll != get_typcollation(type))
			appendStringInfo(&typed, " COLLATE %s", generate_collation_name(coll));
	}
	/* a LEFT JOIN of two streams: pairs, and NULL rows of closed rows */
	ct->left = sjoin_left_bound(ct->query, &ct->ub);
	if (ct->left)
		ct->extra_qual = sjoin_left_qual(ct->query, &ct->ub, SJOIN_QUAL_FIRST);
	ct->select_sql = transform_select_sql(ct, CV_NEW_ROWS);
	ct->extra_qual = NULL;

	ct->vq = quote_qualified_identifier(nspname, name);
	if (OidIsValid(ct->outid))
	{
		/*
		 * The user-facing object reads nothing: a transform's rows are in its
		 * output stream.  Reading the output stream's columns makes it depend
		 * on them, so DROP or ALTER of the output stream needs CASCADE.
		 */
		se_run_sql(psprintf("CREATE VIEW %s AS SELECT %s FROM %s WHERE false",
							ct->vq, ct->collist.data, se_qualified_relname(ct->outid)));
		ct->viewid = get_relname_relid(name, ct->nspid);
	}
	else
	{
		char	   *tablename = ChooseRelationName(name, NULL, "mrel", ct->nspid, false);
		char	   *tq = quote_qualified_identifier(nspname, tablename);

		se_run_sql(psprintf("CREATE TABLE %s (%s)", tq, typed.data));
		ct->tableid = get_relname_relid(tablename, ct->nspid);
		se_create_guard_trigger(ct->tableid);
		se_run_sql(psprintf("CREATE VIEW %s AS SELECT %s FROM %s", ct->vq, ct->collist.data, tq));
		ct->viewid = get_relname_relid(name, ct->nspid);
		se_record_dependency(RelationRelationId, ct->tableid, RelationRelationId, ct->viewid,
							 DEPENDENCY_INTERNAL);
	}
	se_record_dependency(RelationRelationId, ct->viewid, RelationRelationId, ct->streamid,
						 DEPENDENCY_NORMAL);
	joins_record_dependencies(ct->query, ct->viewid);
	ddl_record_used_objects(ct->viewid, ct->query);

	(void) create_stream_trigger(ct->streamid,
								 psprintf("stream_ext_transform_%u", ct->viewid),
								 "transform", ct->vq, ct->viewid);
	CommandCounterIncrement();

	/*
	 * A join of two streams: the same trigger on the second one, and the
	 * SELECT of its batches (query/stream_joins.c)
	 */
	if (OidIsValid(sjoin_right_stream(ct->query)))
	{
		Index		old = joins_set_batch_rti(sjoin_right_rti(ct->query));
		char	   *right_select;
		char	   *close_select = NULL;

		if (ct->left)
			ct->extra_qual = sjoin_left_qual(ct->query, &ct->ub, SJOIN_QUAL_PAIRS);
		right_select = transform_select_sql(ct, CV_NEW_ROWS);
		if (ct->left)
		{
			/* both streams from their tables: the rows a batch closes */
			joins_set_batch_rti(0);
			ct->extra_qual = sjoin_left_qual(ct->query, &ct->ub, SJOIN_QUAL_CLOSE);
			close_select = transform_select_sql(ct, CV_NEW_ROWS);
		}
		ct->extra_qual = NULL;
		joins_set_batch_rti(old);
		(void) create_stream_trigger(sjoin_right_stream(ct->query),
									 psprintf("stream_ext_transform_%u", ct->viewid),
									 "transform", ct->vq, ct->viewid);
		CommandCounterIncrement();
		sjoin_create_transform(ct->query, ct->viewid, right_select);
		if (ct->left)
			sjoin_left_create_transform(ct->query, ct->viewid, &ct->ub, close_select);
	}
}

/* phase 4: the transform's catalog row */
static void
transform_record(TransformBuild *ct)
{
	catalog_insert_transform(ct->viewid, ct->streamid, ct->outid, ct->tableid,
							 ct->definition, ct->collist.data, ct->select_sql,
							 ct->opts->notify);
}

/*
 * Phase 5: a transform into a table starts from what the stream holds,
 * like an aggregate view.  One into a stream does not replay old rows: its
 * output is a flow of events, and re-creating a transform must not
 * duplicate them downstream.
 */
static void
transform_backfill(TransformBuild *ct)
{
	Index		old = 0;
	char	   *select;

	if (!OidIsValid(ct->tableid))
		return;
	/* a LEFT JOIN: pairs, and NULL rows of rows closed (query/sjoin_left.c) */
	if (ct->left)
	{
		old = joins_set_batch_rti(0);
		ct->extra_qual = sjoin_left_backfill_qual(ct->query, &ct->ub, ct->viewid);
	}
	select = transform_select_sql(ct, se_qualified_relname(ct->streamid));
	if (ct->left)
	{
		joins_set_batch_rti(old);
		ct->extra_qual = NULL;
	}
	create_backfill(psprintf("/* stream_ext transform backfill */ INSERT INTO %s (%s) %s",
							 se_qualified_relname(ct->tableid), ct->collist.data, select),
					"backfill of the new continuous transform from the rows already in its stream");
}

/*
 * The transform's side of ddl_create_view(): the same phases as an
 * aggregate view's, through the same steps (ddl/create_steps.c).
 */
void
transform_create(ViewStmt *stmt, Query *query, CVOptions *opts)
{
	TransformBuild ct;
	int			nestlevel;

	memset(&ct, 0, sizeof(ct));
	ct.stmt = stmt;
	ct.query = query;
	ct.opts = opts;
	transform_analyze(&ct);
	nestlevel = create_begin();
	transform_build(&ct);
	transform_record(&ct);
	transform_backfill(&ct);
	create_comment_view(ct.vq, ct.definition);
	create_end(nestlevel);
}
