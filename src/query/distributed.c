/*-------------------------------------------------------------------------
 *
 * distributed.c
 *	  The read side of a continuous view kept on several nodes
 *	  (docs/scale-out.md): stream_ext.distributed_select_sql(view, parts)
 *	  returns the view's own SELECT, reading instead of its materialization
 *	  the per-group merge of the materializations PARTS (foreign tables over
 *	  postgres_fdw, one per node, made by create_distributed_view() in
 *	  src/sql/60_distributed.sql).
 *
 * The view's plan (keys, aggregates, their state columns) is rebuilt from
 * its stored definition with cv_analyze(), as when it was created, and
 * checked against the local materialization; the combining read is the
 * one session windows use (merge_states() per aggregate, then the view's
 * own finalize expressions from cv_view_select_sql()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "core/catalog.h"
#include "query/analyze.h"
#include "query/shared_plan.h"

PG_FUNCTION_INFO_V1(stream_ext_distributed_select_sql);

/* a column the combining read needs must be in the materialization */
static void
check_matrel_column(Oid matrelid, const char *colname, Oid viewid)
{
	if (get_attnum(matrelid, colname) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("materialization of continuous view \"%s\" has no column \"%s\"",
						get_rel_name(viewid), colname),
				 errdetail("The view's definition, analyzed again, no longer matches its materialization.")));
}

/*
 * distributed_select_sql(view regclass, parts regclass[]) RETURNS text
 */
Datum
stream_ext_distributed_select_sql(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	Datum	   *parts;
	bool	   *nulls;
	int			nparts;
	ViewDefinitionEntry stored;
	char	   *definition;
	Oid			matrelid;
	Oid			streamid;
	List	   *raw;
	Query	   *query;
	CVPlan		plan;
	StringInfoData cols;
	StringInfoData buf;
	ListCell   *lc;
	int			i;

	deconstruct_array(arr, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT,
					  &parts, &nulls, &nparts);
	if (nparts == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a distributed view needs at least one node")));

	/* the nodes' views read their own tables (query/shared_plan.c) */
	shared_refuse(viewid, "stream_ext.create_distributed_view()");
	if (!catalog_lookup_view_definition(viewid, &stored))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view",
						DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(viewid))))));
	if (stored.overlapping_window || stored.session || stored.lateness)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous view \"%s\" cannot be distributed", get_rel_name(viewid)),
				 errdetail("Hopping and sliding windows, session windows and allowed_lateness are not supported across nodes; tumbling windows are."),
				 errhint("See docs/scale-out.md.")));
	definition = stored.definition;
	matrelid = stored.matrelid;
	streamid = stored.streamid;

	/* the plan, as CREATE VIEW made it (the definition is schema-qualified) */
	raw = raw_parser(definition, RAW_PARSE_DEFAULT);
	if (list_length(raw) != 1)
		elog(ERROR, "unexpected definition of continuous view \"%s\"", get_rel_name(viewid));
	query = parse_analyze_fixedparams(linitial_node(RawStmt, raw), definition, NULL, 0, NULL);
	memset(&plan, 0, sizeof(plan));
	cv_analyze(query, definition, cv_view_column_aliases(viewid), NULL, &plan);
	if (plan.streamid != streamid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("definition of continuous view \"%s\" no longer reads its stream",
						get_rel_name(viewid))));

	/* the key and state columns, as every node's materialization has them */
	initStringInfo(&cols);
	append_key_columns(&cols, &plan, "");
	foreach(lc, plan.keys)
		check_matrel_column(matrelid, ((CVKey *) lfirst(lc))->colname, viewid);
	foreach(lc, plan.aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (agg->is_distinct)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("aggregate %s(DISTINCT ...) of continuous view \"%s\" cannot be combined across nodes",
							get_func_name(agg->aggref->aggfnoid), get_rel_name(viewid)),
					 errdetail("Its exact value needs every node's set of distinct values per group."),
					 errhint("Use an approximate distinct count whose states combine (e.g. hll), or keep that view on one node.")));
		check_matrel_column(matrelid, agg->colname, viewid);
	}

	/* every node's states per group, merged per aggregate */
	initStringInfo(&buf);
	appendStringInfo(&buf, "(SELECT %s", plan.keyless ? "true AS " CV_SINGLE_COLUMN : cols.data);
	append_merged_states(&buf, &plan, "u.");
	appendStringInfoString(&buf, " FROM (");
	for (i = 0; i < nparts; i++)
	{
		bool		first = plan.keyless;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("node relations must not be null")));
		appendStringInfo(&buf, "%sSELECT %s", i ? " UNION ALL " : "", cols.data);
		foreach(lc, plan.aggs)
		{
			appendStringInfo(&buf, "%s%s", first ? "" : ", ",
							 quote_identifier(((CVAgg *) lfirst(lc))->colname));
			first = false;
		}
		appendStringInfo(&buf, " FROM %s",
						 quote_qualified_identifier(get_namespace_name(get_rel_namespace(DatumGetObjectId(parts[i]))),
													get_rel_name(DatumGetObjectId(parts[i]))));
	}
	appendStringInfoString(&buf, ") u");
	if (!plan.keyless)
		appendStringInfo(&buf, " GROUP BY %s", cols.data);
	appendStringInfoString(&buf, ")");

	PG_RETURN_TEXT_P(cstring_to_text(cv_view_select_sql(&plan, matrelid, buf.data)));
}
