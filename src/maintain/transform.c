/*-------------------------------------------------------------------------
 *
 * transform.c
 *	  Continuous transforms and the per-batch NOTIFY of continuous views.
 *
 *	  A continuous view without aggregates and GROUP BY is a transform:
 *	  each batch of its stream is filtered and projected, and the rows are
 *	  appended, in the same transaction, either to another stream
 *	  (WITH (output_stream = 's')) -- whose own continuous views then fire,
 *	  which is how views chain into pipelines -- or to an append-only table
 *	  the user-facing view reads.  A statement-level AFTER INSERT trigger
 *	  (stream_ext.transform()) runs one INSERT ... SELECT over the
 *	  transition table through maintain/trigger.c's skeleton
 *	  (transform_ops): as the transform's owner, security-restricted, with
 *	  the settings of core/security.c pinned, from a plan kept per backend.
 *
 *	  It also owns the notify = 'channel' option at CREATE (the NOTIFY of
 *	  each batch is sent by trigger.c), for transforms and aggregate views
 *	  alike.
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
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parsetree.h"
#include "portability/instr_time.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "maintain/privileges.h"
#include "maintain/stats.h"
#include "maintain/transform.h"
#include "maintain/trigger.h"
#include "query/analyze.h"
#include "query/joins.h"
#include "query/stream_joins.h"

PG_FUNCTION_INFO_V1(stream_ext_transform);

/* ---- options ------------------------------------------------------------ */

/* take output_stream and notify from defs; returns the other options */
List *
cv_take_options(List *defs, CVOptions *opts)
{
	ListCell   *lc;
	List	   *rest = NIL;

	memset(opts, 0, sizeof(CVOptions));
	foreach(lc, defs)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "output_stream") == 0)
			opts->output_stream = defGetString(def);
		else if (strcmp(def->defname, "notify") == 0)
		{
			char	   *value = defGetString(def);
			bool		on;

			/* notify = true/on: the default channel; false/off: none */
			if (parse_bool(value, &on))
				opts->notify = on ? pstrdup(CV_DEFAULT_NOTIFY_CHANNEL) : NULL;
			else if (value[0] == '\0' || strlen(value) >= NAMEDATALEN)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid notify channel \"%s\"", value),
						 errhint("A channel name is 1 to %d bytes long; notify = true uses \"%s\".",
								 NAMEDATALEN - 1, CV_DEFAULT_NOTIFY_CHANNEL)));
			else
				opts->notify = value;
		}
		else
			rest = lappend(rest, def);
	}
	return rest;
}

void
cv_check_view_options(CVOptions *opts)
{
	if (opts->output_stream)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output_stream is only valid for continuous transforms"),
				 errdetail("The view has aggregates or GROUP BY; its rows are kept in its materialization."),
				 errhint("Drop output_stream, or chain an aggregate view after a transform.")));
}

void
cv_record_notify(Oid viewid, const char *channel)
{
	catalog_set_view_notify(viewid, channel);
}

/* ---- CREATE ----------------------------------------------------------------- */

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

static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* the transform's SELECT (select list exprs) over source */
static char *
batch_select_sql(Query *query, List *ctx, const char *exprs, const char *source)
{
	return psprintf("SELECT %s FROM %s%s%s", exprs,
					joins_from_sql(query, ctx, source),
					query->jointree->quals ? " WHERE " : "",
					query->jointree->quals ?
					deparse_expression(query->jointree->quals, ctx, true, false) : "");
}

/* the INSERT statement of a transform, from its target's current name */
static char *
transform_sql(Oid target, const char *columns, const char *select_sql)
{
	return psprintf("/* stream_ext transform */ INSERT INTO %s (%s) %s",
					qualified_name(target), columns, select_sql);
}

void
transform_create(ViewStmt *stmt, Query *query, const char *queryString,
				 CVOptions *opts)
{
	char	   *name = stmt->view->relname;
	Oid			streamid;
	Oid			outid = InvalidOid;
	Oid			tableid = InvalidOid;
	Oid			nspid;
	Oid			existing;
	Oid			viewid;
	Oid			trigid;
	char	   *nspname;
	char	   *vq;
	char	   *sq;
	List	   *cols = NIL;
	List	   *ctx;
	ListCell   *lc;
	int			ncols = 0;
	int			nestlevel;
	StringInfoData collist;
	StringInfoData exprs;
	StringInfoData typed;
	char	   *select_sql;
	char	   *definition;
	char	   *trigname;
	SeRunAs		runas;

	catalog_require_table("transform_catalog", "continuous transforms");
	streamid = transform_check_query(query);
	ExecCheckRTPerms(query->rtable, true);

	/* column names: CREATE VIEW's list, else the select list's */
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		OutCol	   *col;
		ListCell   *lc2;

		if (tle->resjunk)
			continue;
		col = palloc(sizeof(OutCol));
		col->name = ncols < list_length(stmt->aliases) ?
			strVal(list_nth(stmt->aliases, ncols)) : tle->resname;
		col->expr = tle->expr;
		foreach(lc2, cols)
			if (strcmp(((OutCol *) lfirst(lc2))->name, col->name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" specified more than once in continuous transform \"%s\"",
								col->name, name)));
		cols = lappend(cols, col);
		ncols++;
	}
	if (list_length(stmt->aliases) > ncols)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("CREATE VIEW specifies more column names than columns")));

	/* one transform creation at a time: the cycle check sees all others */
	catalog_lock_transforms();
	LockRelationOid(streamid, ShareRowExclusiveLock);

	if (opts->output_stream)
	{
		RangeVar   *rv = makeRangeVarFromNameList(stringToQualifiedNameList(opts->output_stream));

		outid = RangeVarGetRelid(rv, AccessShareLock, false);
		if (!catalog_is_stream(outid))
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("output_stream \"%s\" is not a stream", opts->output_stream),
					 errhint("Create it with stream_ext.create_stream().")));
		check_output_columns(name, cols, outid);
	}

	nspid = RangeVarGetAndCheckCreationNamespace(stmt->view, NoLock, &existing);
	if (OidIsValid(existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", name)));
	nspname = get_namespace_name(nspid);
	definition = pg_get_querydef(query, true);

	nestlevel = se_pin_settings(NULL);
	SPI_connect();

	if (OidIsValid(outid))
		check_cycle(name, streamid, outid);

	/* the per-batch SELECT over the transition table */
	ctx = joins_deparse_context(query, streamid);
	initStringInfo(&collist);
	initStringInfo(&exprs);
	initStringInfo(&typed);
	foreach(lc, cols)
	{
		OutCol	   *col = lfirst(lc);
		Oid			type = exprType((Node *) col->expr);
		Oid			coll = exprCollation((Node *) col->expr);
		bool		first = (lc == list_head(cols));

		appendStringInfo(&collist, "%s%s", first ? "" : ", ", quote_identifier(col->name));
		appendStringInfo(&exprs, "%s%s", first ? "" : ", ",
						 deparse_expression((Node *) col->expr, ctx, true, false));
		appendStringInfo(&typed, "%s%s %s", first ? "" : ", ", quote_identifier(col->name),
						 format_type_extended(type, exprTypmod((Node *) col->expr),
											  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
		if (OidIsValid(coll) && coll != get_typcollation(type))
			appendStringInfo(&typed, " COLLATE %s", generate_collation_name(coll));
	}
	select_sql = batch_select_sql(query, ctx, exprs.data, CV_NEW_ROWS);

	vq = quote_qualified_identifier(nspname, name);
	sq = qualified_name(streamid);
	if (OidIsValid(outid))
	{
		/*
		 * The user-facing object reads nothing: a transform's rows are in its
		 * output stream.  Reading the output stream's columns makes it depend
		 * on them, so DROP or ALTER of the output stream needs CASCADE.
		 */
		se_run_sql(psprintf("CREATE VIEW %s AS SELECT %s FROM %s WHERE false",
						 vq, collist.data, qualified_name(outid)));
		viewid = get_relname_relid(name, nspid);
	}
	else
	{
		char	   *tablename = ChooseRelationName(name, NULL, "mrel", nspid, false);
		char	   *tq = quote_qualified_identifier(nspname, tablename);

		se_run_sql(psprintf("CREATE TABLE %s (%s)", tq, typed.data));
		tableid = get_relname_relid(tablename, nspid);
		se_create_guard_trigger(tableid);
		se_run_sql(psprintf("CREATE VIEW %s AS SELECT %s FROM %s", vq, collist.data, tq));
		viewid = get_relname_relid(name, nspid);
		se_record_dependency(RelationRelationId, tableid, RelationRelationId, viewid,
							 DEPENDENCY_INTERNAL);
	}
	se_record_dependency(RelationRelationId, viewid, RelationRelationId, streamid,
						 DEPENDENCY_NORMAL);
	joins_record_dependencies(query, viewid);

	/* the trigger, created as the stream's owner (see ddl/create_view.c) */
	trigname = psprintf("stream_ext_transform_%u", viewid);
	se_run_as_role(&runas, se_relation_owner(streamid));
	trigid = se_create_statement_trigger(streamid, trigname, TRIGGER_TYPE_AFTER,
										 TRIGGER_TYPE_INSERT, "transform", vq, CV_NEW_ROWS);
	se_restore(&runas);
	se_record_dependency(TriggerRelationId, trigid, RelationRelationId, viewid,
						 DEPENDENCY_AUTO);
	CommandCounterIncrement();

	/* a join of two streams: the second one's trigger (query/stream_joins.c) */
	if (OidIsValid(sjoin_right_stream(query)))
	{
		Index		old = joins_set_batch_rti(sjoin_right_rti(query));
		char	   *right_select = batch_select_sql(query, ctx, exprs.data, CV_NEW_ROWS);

		joins_set_batch_rti(old);
		sjoin_create_transform(query, viewid, vq, right_select);
	}

	catalog_insert_transform(viewid, streamid, outid, tableid, definition,
							 collist.data, select_sql, opts->notify);

	/*
	 * A transform into a table starts from what the stream holds, like an
	 * aggregate view.  One into a stream does not replay old rows: its
	 * output is a flow of events, and re-creating a transform must not
	 * duplicate them downstream.
	 */
	if (OidIsValid(tableid))
	{
		SPIPlanPtr	plan;
		char	   *sql = psprintf("/* stream_ext transform backfill */ INSERT INTO %s (%s) %s",
								   qualified_name(tableid), collist.data,
								   batch_select_sql(query, ctx, exprs.data, sq));

		MemoryContext cxt = CurrentMemoryContext;

		se_materialize_begin();
		PG_TRY();
		{
			plan = SPI_prepare(sql, 0, NULL);
			if (plan == NULL ||
				SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(),
									 InvalidSnapshot, false, true, 0) < 0)
				elog(ERROR, "stream_ext: transform backfill failed");
		}
		PG_CATCH();
		{
			se_materialize_end();
			se_rethrow_short_context(cxt, list_make1(sql),
									 "backfill of the new continuous transform from the rows already in its stream");
		}
		PG_END_TRY();
		se_materialize_end();
	}

	se_run_sql(psprintf("COMMENT ON VIEW %s IS %s", vq, quote_literal_cstr(definition)));
	SPI_finish();
	se_unpin_settings(nestlevel);
}

/* ---- maintenance -------------------------------------------------------- */

/*
 * The batch trigger of a transform (maintain/trigger.c's skeleton): one
 * INSERT ... SELECT of the batch into the target, as the transform's owner.
 */
static void
transform_load(SeBatchEntry *entry, TriggerData *trigdata)
{
	Trigger    *trigger = trigdata->tg_trigger;
	Oid			viewid;
	TransformCatalogEntry tc;
	MemoryContext old;
	char	   *select_sql;

	viewid = relid_from_trigger_arg(trigger->tgargs[0]);
	/* committed now, not as of the statement's snapshot: see core/catalog.c */
	if (!catalog_lookup_transform(viewid, &tc, entry->cxt))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous transform %s does not exist", trigger->tgargs[0]),
				 errdetail("Trigger \"%s\" maintains it.", trigger->tgname)));
	old = MemoryContextSwitchTo(entry->cxt);
	entry->objid = viewid;
	entry->streamid = tc.streamid;
	entry->relids[0] = viewid;
	entry->relids[1] = RelationGetRelid(trigdata->tg_relation);
	entry->relids[2] = tc.targetid;
	entry->owner = tc.owner;
	/* the second stream of a join has its own statement (query/stream_joins.c) */
	select_sql = sjoin_transform_select(entry, viewid, RelationGetRelid(trigdata->tg_relation));
	/* the statement */
	entry->kind = transform_sql(tc.targetid, tc.columns,
								select_sql ? select_sql : tc.select_sql);
	entry->notify = tc.notify;
	entry->timezone = tc.timezone;
	entry->error_context =
		psprintf("continuous transform %s (statement in stream_ext.transform_catalog)",
				 qualified_name(viewid));
	MemoryContextSwitchTo(old);
}

static bool
transform_admit(SeBatchEntry *entry, TriggerData *trigdata)
{
	/* a trigger another role put on its own table must not forge rows */
	if (RelationGetRelid(trigdata->tg_relation) != entry->streamid)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("trigger \"%s\" on \"%s\" cannot run continuous transform \"%s\": it reads another stream",
						trigdata->tg_trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation),
						get_rel_name(entry->objid))));
	/* a transform whose owner lost a privilege no longer forwards rows */
	return priv_invalid_reason(entry->objid) == NULL;
}

static void
transform_prepare(SeBatchEntry *entry)
{
	(void) se_batch_prepare(entry, (char *) entry->kind, 0, NULL);
}

static uint64
transform_run(SeBatchEntry *entry, TriggerData *trigdata)
{
	int			rc;

	/* a join of two streams: under the join's lock (query/stream_joins.c) */
	if (entry->sjoin_side != SJOIN_NONE)
		return sjoin_run_plans(entry);
	rc = SPI_execute_plan(linitial(entry->plans), NULL, NULL, false, 0);

	if (rc != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: transform failed: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

static const SeBatchOps transform_ops = {
	.name = "stream_ext.transform()",
	.argument = "the transform",
	.load = transform_load,
	.admit = transform_admit,
	.prepare = transform_prepare,
	.run = transform_run,
	.materialize = true,
	.plan_rows = 0,
	.invalid_kind = "continuous transform",
};

/*
 * stream_ext.transform(transform) — statement-level AFTER INSERT trigger
 * on a transform's stream, REFERENCING NEW TABLE AS stream_ext_new.
 */
Datum
stream_ext_transform(PG_FUNCTION_ARGS)
{
	return se_batch_trigger(fcinfo, &transform_ops);
}
