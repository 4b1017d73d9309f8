/*-------------------------------------------------------------------------
 *
 * indexes.c
 *	  Secondary indexes on continuous views (docs/continuous-views.md,
 *	  "Indexes").  A continuous view is a plain view over its
 *	  materialization; a filter on a view column that is stored as it is
 *	  in the materialization (a group key, or an aggregate kept as its
 *	  result such as count or max) is pushed down to that column, so an
 *	  index on the materialization's column serves it.
 *	  stream_ext.create_index() (src/sql/30_postgrest.sql) builds such an
 *	  index from view column names; this file gives it the mapping:
 *	  stream_ext._view_column_source(view, column) is the materialization
 *	  column a view column reads, or NULL when the column is computed at
 *	  read time (avg, finalized states, expressions), which no plain index
 *	  on the materialization can serve.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "core/catalog.h"

PG_FUNCTION_INFO_V1(stream_ext_view_column_source);

/* stream_ext._view_column_source(view regclass, col name) RETURNS name */
Datum
stream_ext_view_column_source(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	char	   *colname = NameStr(*PG_GETARG_NAME(1));
	ViewCatalogEntry entry;
	Relation	rel;
	Query	   *query;
	ListCell   *lc;
	char	   *source = NULL;

	if (!catalog_lookup_view(viewid, &entry, CurrentMemoryContext))
		PG_RETURN_NULL();
	rel = table_open(viewid, AccessShareLock);
	query = get_view_query(rel);
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *var;
		RangeTblEntry *rte;

		if (tle->resjunk || tle->resname == NULL || strcmp(tle->resname, colname) != 0)
			continue;
		if (!IsA(tle->expr, Var))
			break;
		var = (Var *) tle->expr;
		if (var->varlevelsup != 0 || var->varattno <= 0)
			break;
		rte = rt_fetch(var->varno, query->rtable);
		if (rte->rtekind == RTE_RELATION && rte->relid == entry.matrelid)
			source = get_attname(entry.matrelid, var->varattno, false);
		else if (rte->rtekind == RTE_SUBQUERY && OidIsValid(entry.deltaid) &&
				 rte->subquery->setOperations != NULL)
		{
			/*
			 * materialization (+) delta (cv_merged_source_sql()): its columns
			 * are the materialization's, and a filter on one reaches the
			 * materialization's rows of groups without delta rows
			 */
			TargetEntry *sub = get_tle_by_resno(rte->subquery->targetList, var->varattno);

			if (sub && sub->resname &&
				get_attnum(entry.matrelid, sub->resname) != InvalidAttrNumber)
				source = pstrdup(sub->resname);
		}
		break;
	}
	table_close(rel, AccessShareLock);
	if (source == NULL)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(DirectFunctionCall1(namein, CStringGetDatum(source)));
}
