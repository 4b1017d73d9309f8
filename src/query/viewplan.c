/*-------------------------------------------------------------------------
 *
 * viewplan.c
 *	  A continuous view's plan rebuilt from its recorded definition: what
 *	  each column is and where it is stored, for the code that works on an
 *	  existing view -- roll-ups (rollup.c), combine() at read time
 *	  (combine.c, combine_distinct.c) and reads by key (key_read.c).
 *
 *	  The recorded definition is schema-qualified (CREATE VIEW deparsed it
 *	  under the pinned settings); cv_analyze() of it yields the keys and
 *	  aggregates the view was built with, in the same order, so the n-th
 *	  count(DISTINCT) aggregate is the n-th side table of the catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "query/viewplan.h"

/*
 * The plan of continuous view viewid from def, its recorded definition
 * (the text definition) parsed and analyzed, under the pinned settings.
 */
CVPlan *
cv_reanalyze(Oid viewid, Query *def, const char *definition)
{
	CVPlan	   *plan = palloc0(sizeof(CVPlan));
	int			nestlevel = se_pin_settings(NULL);

	cv_analyze(def, definition, cv_view_column_aliases(viewid), NULL, plan);
	se_unpin_settings(nestlevel);
	return plan;
}

/*
 * The aggregate of plan that is column attno (1-based, the view's columns
 * in order) exactly, or NULL: a key, an expression of aggregates.
 */
CVAgg *
cv_column_agg(CVPlan *plan, AttrNumber attno)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, plan->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		ListCell   *la;

		if (tle->resjunk || ++n != attno)
			continue;
		foreach(la, plan->aggs)
		{
			CVAgg	   *agg = lfirst(la);

			if (equal(agg->aggref, tle->expr))
				return agg;
		}
		return NULL;
	}
	return NULL;
}

/*
 * The side table of count(DISTINCT) agg of plan: a view's side tables are
 * recorded in the order of its count(DISTINCT) aggregates (parts:
 * catalog_view_parts(), the materialization, then the side tables).
 */
Oid
cv_distinct_side_table(CVPlan *plan, CVAgg *agg, List *parts)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, plan->aggs)
	{
		CVAgg	   *a = lfirst(lc);

		if (!a->is_distinct)
			continue;
		n++;
		if (a == agg)
			break;
	}
	if (n >= list_length(parts))
		elog(ERROR, "stream_ext: side table %d of a continuous view is missing", n);
	return list_nth_oid(parts, n);
}

/*
 * The definition of continuous view viewid as stream_ext recorded it,
 * analyzed again (*text: the recorded text); NULL if viewid is none.
 */
Query *
cv_view_definition(Oid viewid, char **text)
{
	Oid			streamid = InvalidOid;
	char	   *definition = catalog_view_definition(viewid, &streamid);
	List	   *raw;
	Query	   *def;
	int			nestlevel;

	if (definition == NULL)
		return NULL;
	/*
	 * As CREATE VIEW deparsed it: with the pinned settings, whose
	 * search_path (pg_catalog) made it name every other schema.  Views
	 * made before stream_ext 0.3 recorded it under their creator's
	 * search_path: the schemas of the view and of its stream, then public,
	 * after pg_catalog, resolve the usual cases the same way.
	 */
	nestlevel = se_pin_settings(NULL);
	(void) set_config_option("search_path",
							 psprintf("pg_catalog, %s, %s, public",
									  quote_identifier(get_namespace_name(get_rel_namespace(viewid))),
									  quote_identifier(get_namespace_name(get_rel_namespace(streamid)))),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	raw = raw_parser(definition, RAW_PARSE_DEFAULT);
	def = parse_analyze_fixedparams(linitial_node(RawStmt, raw), definition, NULL, 0, NULL);
	se_unpin_settings(nestlevel);
	*text = definition;
	return def;
}

