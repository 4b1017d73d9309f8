/*-------------------------------------------------------------------------
 *
 * changes.c
 *	  Change streams of continuous views: WITH (continuous, changes = true)
 *	  or ALTER VIEW v SET (changes = true).
 *
 *	  A view with changes has a change stream <view>_changes, a real
 *	  stream owned by the view's owner (INTERNAL part of the view), with
 *	  the columns
 *
 *		change_seq bigint, change_op text,
 *		<the view's GROUP BY key columns>,
 *		old_<c>, new_<c> for every other column c of the view
 *
 *	  Per batch, in the batch's transaction, the view's maintenance
 *	  (maintain.c, maint_run()) calls changes_begin_batch() before its
 *	  statements and changes_end_batch() after them.  The first takes an
 *	  ExclusiveLock on the view (writers of the view's stream wait for each
 *	  other until commit; readers do not wait), reads the view's rows of
 *	  the groups the batch touches as one array of the view's row type (the
 *	  view's own SELECT over its materialization and delta restricted to
 *	  the batch's GROUP BY keys, rows_of_batch_sql()) and aggregates the
 *	  batch's partial states; the second reads the same groups again and
 *	  appends one row
 *	  per group whose row changed: 'insert' (no old row), 'update' or
 *	  'delete' (no new row: HAVING, TTL), with change_seq drawn from
 *	  stream_ext.change_seq under the lock.  Because the lock is held to
 *	  commit, change_seq order is commit order for the changes of one view
 *	  and each change's old row is the previous change's new row.  The
 *	  inserts into the change stream run outside the materialize scope
 *	  (se_materialize_suspend()): the change stream's own triggers
 *	  (continuous views, transforms, Kafka sinks) run user work.
 *
 *	  TTL (housekeeping/retention.c) brackets its DELETE the same way over
 *	  the whole view (changes_lookup(..., whole_view = true)): the expired
 *	  groups come out as 'delete' rows.
 *
 *	  Views whose rows change without a batch or whose groups are not the
 *	  batch's keys (sessions, sliding and hopping windows, allowed_lateness)
 *	  are refused.  Catalog: stream_ext.change_streams.  docs/changes.md.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "maintain/changes.h"
#include "query/sjoin_window.h"
#include "windows/windows.h"

PG_FUNCTION_INFO_V1(stream_ext_changes);

#define CHANGES_TABLE "change_streams"

/* the change stream of view viewid (InvalidOid: none); keys etc. if asked */
typedef struct ChangesRow
{
	Oid			streamid;
	List	   *keys;
	List	   *values;
	char	   *rows_sql;
	char	   *states_sql;
	char	   *states_defs;
	List	   *states;
} ChangesRow;

static bool read_changes_row(Oid relid, bool by_stream, ChangesRow *row, MemoryContext cxt);
static char *rows_of_batch_sql(Oid viewid, CVPlan *plan, CVBatchAggParts *parts);

/* ---- options ------------------------------------------------------------ */

List *
changes_take_options(List *options, bool *enabled)
{
	List	   *rest = NIL;
	ListCell   *lc;

	*enabled = false;
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "changes") == 0)
			*enabled = defGetBoolean(def);
		else
			rest = lappend(rest, def);
	}
	return rest;
}

/*
 * The view columns of the plan's GROUP BY keys, in key order: each key must
 * be one of the view's columns (the change stream's key).
 */
static List *
key_view_columns(CVPlan *plan)
{
	List	   *result = NIL;
	ListCell   *lk;

	foreach(lk, plan->keys)
	{
		CVKey	   *key = lfirst(lk);
		ListCell   *lc;
		ListCell   *name = list_head(plan->colnames);
		char	   *found = NULL;

		foreach(lc, plan->query->targetList)
		{
			TargetEntry *tle = lfirst(lc);

			if (tle->resjunk)
				continue;
			if (found == NULL && equal(tle->expr, key->expr))
				found = strVal(lfirst(name));
			name = lnext(plan->colnames, name);
		}
		if (found == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("changes = true needs every GROUP BY key among the view's columns"),
					 errdetail("The change stream identifies a group by its key columns."),
					 errhint("Add the GROUP BY expressions to the SELECT list.")));
		result = lappend(result, found);
	}
	return result;
}

void
changes_validate(CVPlan *plan, bool sessions, bool lateness)
{
	if (sessions || lateness ||
		(plan->window && plan->window->kind != CV_WINDOW_TUMBLING))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("changes = true is not supported for continuous views with session windows, sliding or hopping windows, or allowed_lateness"),
				 errdetail("Their rows change with time or are merged when read, not per batch of their stream."),
				 errhint("Tumbling windows (tumble()) and plain GROUP BY views can have a change stream.")));
	if (OidIsValid(sjoin_right_stream(plan->query)))
		changes_refuse_kind("a continuous view over a join of two streams",
							"A batch of the second stream is maintained apart from the view's change stream.",
							NULL);
	(void) key_view_columns(plan);
}

/* a view refused a change stream: what it is, and why */
void
changes_refuse_kind(const char *what, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("changes = true is not supported for %s", what),
			 errdetail("%s", detail),
			 hint ? errhint("%s", hint) : 0));
}

/* ---- creation ------------------------------------------------------------ */

static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

static void
spi_check(int rc, int expected, const char *what)
{
	if (rc != expected)
		elog(ERROR, "stream_ext: %s failed: %s", what, SPI_result_code_string(rc));
}

static bool
name_in_list(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

static Datum
text_array(List *names)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(names), 1));
	ListCell   *lc;

	foreach(lc, names)
		elems[foreach_current_index(lc)] = CStringGetTextDatum(lfirst(lc));
	return PointerGetDatum(construct_array(elems, list_length(names), TEXTOID, -1, false,
										   TYPALIGN_INT));
}

/*
 * SELECT on change stream csid follows view viewid's: granted to the roles
 * (and PUBLIC) holding SELECT on the view, revoked from the others.  As the
 * owner of both (the caller switched to it); SPI connected.
 */
static void
sync_grants(Oid viewid, Oid csid)
{
	const char *acl = "SELECT g.grantee FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) g"
		" WHERE c.oid = %u AND g.privilege_type = 'SELECT' AND g.grantee <> c.relowner";
	const char *who = "CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident("
		"(SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid = grantee)) END";
	char	   *csq = qualified_name(csid);
	int			rc;

	rc = SPI_execute(psprintf("WITH vg AS (%s), cg AS (%s)"
							  " SELECT 'GRANT SELECT ON %s TO ' || %s FROM vg"
							  " WHERE grantee NOT IN (SELECT grantee FROM cg)"
							  " UNION ALL SELECT 'REVOKE SELECT ON %s FROM ' || %s FROM cg"
							  " WHERE grantee NOT IN (SELECT grantee FROM vg)",
							  psprintf(acl, viewid), psprintf(acl, csid),
							  csq, who, csq, who),
					 false, 0);
	spi_check(rc, SPI_OK_SELECT, "reading the view's grants");
	{
		SPITupleTable *tt = SPI_tuptable;
		uint64		n = SPI_processed;

		for (uint64 i = 0; i < n; i++)
			spi_check(SPI_execute(SPI_getvalue(tt->vals[i], tt->tupdesc, 1), false, 0),
					  SPI_OK_UTILITY, "following the view's grants");
	}
}

/*
 * GRANT or REVOKE on tables and views (utility.c, after PostgreSQL ran it):
 * the change streams of the views among them follow.
 */
void
changes_follow_grant(GrantStmt *stmt)
{
	ListCell   *lc;

	if (stmt->objtype != OBJECT_TABLE || stmt->targtype != ACL_TARGET_OBJECT)
		return;
	CommandCounterIncrement();
	foreach(lc, stmt->objects)
	{
		Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc), NoLock, true);
		ChangesRow	row;
		SeRunAs		runas;

		if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_VIEW ||
			!read_changes_row(relid, false, &row, CurrentMemoryContext))
			continue;
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		se_run_as_role(&runas, se_relation_owner(relid));
		sync_grants(relid, row.streamid);
		se_restore(&runas);
		SPI_finish();
	}
}

/*
 * Make view viewid's change stream for plan (the view's, analyzed), as the
 * view's owner, and record it.  Runs with the settings pinned.
 */
void
changes_create(Oid viewid, CVPlan *plan)
{
	Oid			owner = se_relation_owner(viewid);
	Oid			nspid = get_rel_namespace(viewid);
	List	   *keys = key_view_columns(plan);
	List	   *values = NIL;
	Relation	rel;
	TupleDesc	desc;
	StringInfoData cols;
	StringInfoData oldcols;
	StringInfoData newcols;
	char	   *name;
	char	   *csq;
	char	   *rows_sql = NULL;
	char	   *states_sql = NULL;
	char	   *states_defs = NULL;
	List	   *states = NIL;
	CVBatchAggParts parts;
	Oid			csid;
	SeRunAs		runas;
	Oid			argtypes[8] = {OIDOID, OIDOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID,
		TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		args[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int			rc;

	initStringInfo(&cols);
	initStringInfo(&oldcols);
	initStringInfo(&newcols);
	appendStringInfoString(&cols, "change_seq bigint, change_op text");
	rel = relation_open(viewid, AccessShareLock);
	desc = RelationGetDescr(rel);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		char	   *type;
		char	   *attname = NameStr(att->attname);

		if (att->attisdropped)
			continue;
		type = format_type_extended(att->atttypid, att->atttypmod,
									FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
		if (name_in_list(keys, attname))
		{
			appendStringInfo(&cols, ", %s %s", quote_identifier(attname), type);
			continue;
		}
		values = lappend(values, pstrdup(attname));
		appendStringInfo(&oldcols, ", %s %s",
						 quote_identifier(psprintf("old_%s", attname)), type);
		appendStringInfo(&newcols, ", %s %s",
						 quote_identifier(psprintf("new_%s", attname)), type);
	}
	relation_close(rel, AccessShareLock);
	appendStringInfo(&cols, "%s%s", oldcols.data, newcols.data);

	/*
	 * The batch's partial state of every aggregate but count(DISTINCT), per
	 * group: the batch's own aggregation again (cv_batch_agg_parts()), its
	 * rows as one record[] whose columns are the keys (c1..) and the states
	 * (s1..); the stream gets a column batch_<state column> per state.
	 */
	cv_batch_agg_parts(plan, CV_NEW_ROWS, &parts);
	if (parts.state_exprs != NIL)
	{
		StringInfoData sel;
		StringInfoData defs;
		ListCell   *lc;
		int			i = 0;

		initStringInfo(&sel);
		initStringInfo(&defs);
		foreach(lc, plan->keys)
		{
			CVKey	   *key = lfirst(lc);

			appendStringInfo(&sel, "%s, ", (char *) list_nth(parts.key_exprs, i));
			appendStringInfo(&defs, "c%d %s, ", ++i,
							 format_type_extended(key->type, key->typmod,
												  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
		}
		i = 0;
		foreach(lc, plan->aggs)
		{
			CVAgg	   *agg = lfirst(lc);
			char	   *type;

			if (agg->is_distinct)
				continue;
			type = format_type_extended(agg->storage.statetype, -1, FORMAT_TYPE_FORCE_QUALIFY);
			appendStringInfo(&sel, "%s%s", i ? ", " : "", (char *) list_nth(parts.state_exprs, i));
			appendStringInfo(&defs, "%ss%d %s", i ? ", " : "", i + 1, type);
			appendStringInfo(&cols, ", %s %s",
							 quote_identifier(psprintf("batch_%s", agg->colname)), type);
			states = lappend(states, psprintf("batch_%s", agg->colname));
			i++;
		}
		states_sql = psprintf("SELECT pg_catalog.array_agg(q) FROM (SELECT %s%s) q",
							  sel.data, parts.tail);
		states_defs = defs.data;
	}

	name = ChooseRelationName(get_rel_name(viewid), NULL, "changes", nspid, false);
	csq = quote_qualified_identifier(get_namespace_name(nspid), name);

	/* the stream, its owner the view's, readable by those who read the view */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	se_run_as_role(&runas, owner);
	rc = SPI_execute(psprintf("SELECT stream_ext.create_stream(%s, %s)",
							  quote_literal_cstr(csq), quote_literal_cstr(cols.data)),
					 false, 0);
	spi_check(rc, SPI_OK_SELECT, "creating the change stream");
	csid = get_relname_relid(name, nspid);
	sync_grants(viewid, csid);
	spi_check(SPI_execute(psprintf("COMMENT ON TABLE %s IS %s", csq,
								   quote_literal_cstr(psprintf("change stream of continuous view %s",
															   qualified_name(viewid)))),
						  false, 0),
			  SPI_OK_UTILITY, "commenting the change stream");
	se_restore(&runas);

	/* dropped with the view, never alone */
	se_record_dependency(RelationRelationId, csid, RelationRelationId, viewid,
						 DEPENDENCY_INTERNAL);

	if (!plan->keyless)
		rows_sql = rows_of_batch_sql(viewid, plan, &parts);

	args[0] = ObjectIdGetDatum(viewid);
	args[1] = ObjectIdGetDatum(csid);
	args[2] = text_array(keys);
	args[3] = text_array(values);
	args[4] = rows_sql ? CStringGetTextDatum(rows_sql) : (Datum) 0;
	nulls[4] = rows_sql ? ' ' : 'n';
	args[5] = states_sql ? CStringGetTextDatum(states_sql) : (Datum) 0;
	nulls[5] = states_sql ? ' ' : 'n';
	args[6] = states_defs ? CStringGetTextDatum(states_defs) : (Datum) 0;
	nulls[6] = states_defs ? ' ' : 'n';
	args[7] = text_array(states);
	se_run_as_catalog_owner(&runas);
	rc = SPI_execute_with_args("INSERT INTO stream_ext." CHANGES_TABLE
							   " (view, stream, key_columns, value_columns, rows_sql,"
							   " states_sql, states_columns, state_columns)"
							   " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
							   8, argtypes, args, nulls, false, 0);
	se_restore(&runas);
	spi_check(rc, SPI_OK_INSERT, "recording the change stream");
	SPI_finish();
	CommandCounterIncrement();
	CacheInvalidateRelcacheByRelid(viewid);
}


static List *
text_array_list(Datum d)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *result = NIL;

	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		result = lappend(result, TextDatumGetCString(elems[i]));
	return result;
}

/* the catalog row by view (by_stream false) or by change stream */
static bool
read_changes_row(Oid relid, bool by_stream, ChangesRow *row, MemoryContext cxt)
{
	Oid			nsp = get_namespace_oid("stream_ext", true);
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		found = false;
	int			rc;
	int			nestlevel;

	memset(row, 0, sizeof(ChangesRow));
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid(CHANGES_TABLE, nsp)))
		return false;
	args[0] = ObjectIdGetDatum(relid);
	nestlevel = se_pin_search_path();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	catalog_read_latest_begin();
	rc = SPI_execute_with_args(by_stream ?
							   "SELECT stream::oid, key_columns, value_columns, rows_sql,"
							   " states_sql, states_columns, state_columns"
							   " FROM stream_ext." CHANGES_TABLE " WHERE stream = $1" :
							   "SELECT stream::oid, key_columns, value_columns, rows_sql,"
							   " states_sql, states_columns, state_columns"
							   " FROM stream_ext." CHANGES_TABLE " WHERE view = $1",
							   1, argtypes, args, NULL, true, 1);
	catalog_read_latest_end();
	spi_check(rc, SPI_OK_SELECT, "reading stream_ext.change_streams");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		row->streamid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		row->keys = text_array_list(SPI_getbinval(tup, desc, 2, &isnull));
		row->values = text_array_list(SPI_getbinval(tup, desc, 3, &isnull));
		row->rows_sql = SPI_getvalue(tup, desc, 4);
		row->states_sql = SPI_getvalue(tup, desc, 5);
		row->states_defs = SPI_getvalue(tup, desc, 6);
		row->states = text_array_list(SPI_getbinval(tup, desc, 7, &isnull));
		MemoryContextSwitchTo(old);
		found = get_rel_name(row->streamid) != NULL;
	}
	SPI_finish();
	se_unpin_settings(nestlevel);
	return found;
}

bool
changes_stream_columns(Oid streamid, List **keys, List **values)
{
	ChangesRow	row;

	if (!read_changes_row(streamid, true, &row, CurrentMemoryContext))
		return false;
	*keys = row.keys;
	*values = row.values;
	return true;
}

/* "ROW(prefix.k1, ...)" */
static char *
key_row(List *keys, const char *prefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "ROW(");
	foreach(lc, keys)
		appendStringInfo(&buf, "%s%s.%s", foreach_current_index(lc) ? ", " : "",
						 prefix, quote_identifier(lfirst(lc)));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * The view's rows (one column r of its row type) of the groups of the batch
 * in the transition table: the view's own SELECT (window_view_select_sql(),
 * as CREATE made it) over its materialization and delta restricted to those
 * groups -- so only they are merged and finalized.  The batch's keys are
 * aggregated from the transition table (cv_batch_agg_parts()).
 */
static char *
rows_of_batch_sql(Oid viewid, CVPlan *plan, CVBatchAggParts *parts)
{
	ViewCatalogEntry cat;
	StringInfoData keys;
	char	   *mq;
	char	   *dq = NULL;
	char	   *mrows;
	char	   *drows = NULL;
	StringInfoData eq;
	StringInfoData nulleq;
	StringInfoData anynull;
	ListCell   *lc;
	ListCell   *lk;

	if (!catalog_lookup_view(viewid, &cat, CurrentMemoryContext))
		elog(ERROR, "continuous view %u has no catalog entry", viewid);
	mq = qualified_name(cat.matrelid);
	if (OidIsValid(cat.deltaid))
		dq = qualified_name(cat.deltaid);

	/* the batch's groups: key columns named as the materialization's */
	initStringInfo(&keys);
	appendStringInfoString(&keys, "SELECT ");
	forboth(lc, parts->key_exprs, lk, plan->keys)
		appendStringInfo(&keys, "%s%s AS %s", foreach_current_index(lc) ? ", " : "",
						 (char *) lfirst(lc), quote_identifier(((CVKey *) lfirst(lk))->colname));
	appendStringInfoString(&keys, parts->tail);

	/*
	 * Rows of the materialization or delta (alias t) of the batch's groups:
	 * keys equal by their equality operators (a hash or merge semi-join, or
	 * the materialization's unique index on the keys), and, in a second
	 * branch read only for rows with a NULL key, equal or both NULL.
	 */
	initStringInfo(&eq);
	initStringInfo(&nulleq);
	initStringInfo(&anynull);
	foreach(lk, plan->keys)
	{
		CVKey	   *key = lfirst(lk);
		const char *k = quote_identifier(key->colname);
		TypeCacheEntry *tce = lookup_type_cache(key->type, TYPECACHE_EQ_OPR);
		char	   *op;
		bool		first = (foreach_current_index(lk) == 0);

		if (!OidIsValid(tce->eq_opr))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("changes = true needs an equality operator for the GROUP BY key of type %s",
							format_type_be(key->type))));
		op = se_operator_sql(tce->eq_opr);
		appendStringInfo(&eq, "%st.%s %s b.%s", first ? "" : " AND ", k, op, k);
		appendStringInfo(&nulleq, "%s(t.%s %s b.%s OR (t.%s IS NULL AND b.%s IS NULL))",
						 first ? "" : " AND ", k, op, k, k, k);
		appendStringInfo(&anynull, "%st.%s IS NULL", first ? "" : " OR ", k);
	}
	/* each read once (the view's SELECT reads its delta several times) */
	mrows = psprintf("stream_ext_b AS MATERIALIZED (%s),"
					 " stream_ext_m AS MATERIALIZED (SELECT t.* FROM %s t WHERE EXISTS (SELECT FROM stream_ext_b b WHERE %s)"
					 " UNION ALL SELECT t.* FROM %s t WHERE (%s) AND EXISTS (SELECT FROM stream_ext_b b WHERE %s))",
					 keys.data, mq, eq.data, mq, anynull.data, nulleq.data);
	if (dq)
		drows = psprintf(", stream_ext_d AS MATERIALIZED (SELECT t.* FROM %s t WHERE EXISTS (SELECT FROM stream_ext_b b WHERE %s)"
						 " UNION ALL SELECT t.* FROM %s t WHERE (%s) AND EXISTS (SELECT FROM stream_ext_b b WHERE %s))",
						 dq, eq.data, dq, anynull.data, nulleq.data);
	return psprintf("WITH %s%s SELECT r::%s AS r FROM (%s) r", mrows, drows ? drows : "",
					qualified_name(viewid),
					window_view_select_sql(plan, cat.matrelid, "stream_ext_m",
										   drows ? "stream_ext_d" : NULL));
}

/*
 * The maintenance of view viewid: its change stream's statements, in cxt,
 * or NULL when it has none.  whole_view: over every row of the view (TTL),
 * else over the groups of the batch in the transition table.
 */
ChangesInfo *
changes_lookup(Oid viewid, bool whole_view, MemoryContext cxt)
{
	ChangesRow	row;
	ChangesInfo *ci;
	StringInfoData buf;
	StringInfoData from;
	char	   *vq;
	ListCell   *lc;
	int			pos;
	MemoryContext old;

	if (!read_changes_row(viewid, false, &row, CurrentMemoryContext))
		return NULL;
	vq = qualified_name(viewid);

	/* the view's rows of the batch's groups, their key as one record */
	initStringInfo(&from);
	if (whole_view || row.rows_sql == NULL)
		appendStringInfo(&from, "SELECT v AS r FROM %s v", vq);
	else
		appendStringInfoString(&from, row.rows_sql);

	old = MemoryContextSwitchTo(cxt);
	ci = palloc0(sizeof(ChangesInfo));
	ci->viewid = viewid;
	ci->streamid = row.streamid;
	ci->arraytype = get_array_type(get_rel_type_id(viewid));
	ci->old_sql = psprintf("SELECT pg_catalog.array_agg(x.r) FROM (%s) x", from.data);

	initStringInfo(&buf);
	appendStringInfo(&buf, "INSERT INTO %s (change_seq, change_op",
					 qualified_name(row.streamid));
	foreach(lc, row.keys)
		appendStringInfo(&buf, ", %s", quote_identifier(lfirst(lc)));
	foreach(lc, row.values)
		appendStringInfo(&buf, ", %s", quote_identifier(psprintf("old_%s", (char *) lfirst(lc))));
	foreach(lc, row.values)
		appendStringInfo(&buf, ", %s", quote_identifier(psprintf("new_%s", (char *) lfirst(lc))));
	foreach(lc, row.states)
		appendStringInfo(&buf, ", %s", quote_identifier(lfirst(lc)));
	appendStringInfoString(&buf, ") SELECT $2, c.stream_ext_op");
	for (pos = 0; pos < list_length(row.keys) + 2 * list_length(row.values); pos++)
		appendStringInfo(&buf, ", c.c%d", pos + 1);
	for (pos = 0; pos < list_length(row.states); pos++)
		appendStringInfo(&buf, ", st.s%d", pos + 1);

	/* c: the changed groups, old and new rows side by side */
	appendStringInfoString(&buf, " FROM (SELECT CASE WHEN o.stream_ext_p IS NULL THEN 'insert'"
						   " WHEN n.stream_ext_p IS NULL THEN 'delete' ELSE 'update' END AS stream_ext_op,"
						   " CASE WHEN n.stream_ext_p THEN n.stream_ext_k ELSE o.stream_ext_k END AS stream_ext_k");
	pos = 0;
	foreach(lc, row.keys)
	{
		const char *k = quote_identifier(lfirst(lc));

		appendStringInfo(&buf, ", CASE WHEN n.stream_ext_p THEN n.%s ELSE o.%s END AS c%d", k, k, ++pos);
	}
	foreach(lc, row.values)
		appendStringInfo(&buf, ", o.%s AS c%d", quote_identifier(lfirst(lc)), ++pos);
	foreach(lc, row.values)
		appendStringInfo(&buf, ", n.%s AS c%d", quote_identifier(lfirst(lc)), ++pos);
	appendStringInfo(&buf, " FROM (SELECT true AS stream_ext_p, %s AS stream_ext_k, x.*"
					 " FROM pg_catalog.unnest($1) x) o"
					 " FULL JOIN (SELECT true AS stream_ext_p, %s AS stream_ext_k, y.*"
					 " FROM (SELECT (x.r).* FROM (%s) x) y) n"
					 " ON o.stream_ext_k OPERATOR(pg_catalog.=) n.stream_ext_k"
					 " WHERE o.stream_ext_p IS NULL OR n.stream_ext_p IS NULL OR %s::text IS DISTINCT FROM %s::text) c",
					 key_row(row.keys, "x"), key_row(row.keys, "y"), from.data,
					 key_row(row.values, "o"), key_row(row.values, "n"));

	/* st: the batch's partial states of the groups ($3, see changes_begin_batch()) */
	if (row.states != NIL)
	{
		List	   *cn = NIL;

		for (pos = 0; pos < list_length(row.keys); pos++)
			cn = lappend(cn, psprintf("c%d", pos + 1));
		appendStringInfo(&buf, " LEFT JOIN (SELECT %s AS stream_ext_k, st.*"
						 " FROM pg_catalog.unnest($3::pg_catalog.record[]) AS st(%s)) st"
						 " ON st.stream_ext_k OPERATOR(pg_catalog.=) c.stream_ext_k",
						 key_row(cn, "st"), row.states_defs);
	}
	/* in key order: the same batch gives the same rows */
	if (row.keys != NIL)
	{
		appendStringInfoString(&buf, " ORDER BY ");
		for (pos = 0; pos < list_length(row.keys); pos++)
			appendStringInfo(&buf, "%s%d", pos ? ", " : "", pos + 3);
	}
	if (!whole_view && row.states_sql)
		ci->states_sql = pstrdup(row.states_sql);
	ci->keep_plans = !whole_view;
	ci->insert_sql = buf.data;
	MemoryContextSwitchTo(old);
	return ci;
}

/* ---- per batch ------------------------------------------------------------ */

/*
 * Run sql: by a plan kept in *plan (prepared at the first batch) when ci
 * keeps plans (a batch trigger's entry), else planned for this once.
 */
static int
run_statement(ChangesInfo *ci, SPIPlanPtr *plan, const char *sql, int nargs,
			  Oid *argtypes, Datum *args, const char *nulls)
{
	if (!ci->keep_plans)
		return SPI_execute_with_args(sql, nargs, argtypes, args, nulls, false, 0);
	if (*plan == NULL)
	{
		/* one generic plan: the parameters are row sets, not selective values */
		SPIPlanPtr	p = SPI_prepare_cursor(sql, nargs, argtypes, CURSOR_OPT_GENERIC_PLAN);

		if (p == NULL)
			elog(ERROR, "stream_ext: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(p);
		*plan = p;
	}
	return SPI_execute_plan(*plan, args, nulls, false, 0);
}

/* the plans ci keeps; ci itself is in its entry's memory */
void
changes_release(ChangesInfo *ci)
{
	if (ci == NULL)
		return;
	if (ci->old_plan)
		SPI_freeplan(ci->old_plan);
	if (ci->states_plan)
		SPI_freeplan(ci->states_plan);
	if (ci->insert_plan)
		SPI_freeplan(ci->insert_plan);
	ci->old_plan = ci->states_plan = ci->insert_plan = NULL;
}

/* run sql outside the materialize scope */
static void
run_outside_materialize(ChangesInfo *ci, SPIPlanPtr *plan, const char *sql,
						int nargs, Oid *argtypes, Datum *args,
						const char *nulls, int expected, const char *what)
{
	int			depth = se_materialize_suspend();
	int			rc;

	PG_TRY();
	{
		rc = run_statement(ci, plan, sql, nargs, argtypes, args, nulls);
	}
	PG_FINALLY();
	{
		se_materialize_resume(depth);
	}
	PG_END_TRY();
	spi_check(rc, expected, what);
}

/*
 * Before the batch's statements: wait for the view's other writers (until
 * they commit) and read the rows of the batch's groups.
 */
void
changes_begin_batch(ChangesInfo *ci)
{
	bool		isnull;

	LockRelationOid(ci->viewid, ExclusiveLock);
	run_outside_materialize(ci, &ci->old_plan, ci->old_sql, 0, NULL, NULL, NULL, SPI_OK_SELECT,
							"reading a view's rows before its batch");
	ci->old = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	ci->old_isnull = isnull;
	if (!isnull)
		ci->old = datumCopy(ci->old, false, -1);

	/* the batch's partial states: in the materialize scope, like the batch's own */
	ci->states_isnull = true;
	if (ci->states_sql)
	{
		int			rc = run_statement(ci, &ci->states_plan, ci->states_sql, 0, NULL, NULL, NULL);

		spi_check(rc, SPI_OK_SELECT, "aggregating a batch's partial states");
		ci->states = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		ci->states_isnull = isnull;
		if (!isnull)
			ci->states = datumCopy(ci->states, false, -1);
	}
}

/* the next change_seq, drawn as the catalog's owner */
static int64
next_change_seq(void)
{
	SeRunAs		runas;
	bool		isnull;
	int64		seq;
	int			rc;

	se_run_as_catalog_owner(&runas);
	rc = SPI_execute("SELECT pg_catalog.nextval('stream_ext.change_seq')", false, 1);
	se_restore(&runas);
	spi_check(rc, SPI_OK_SELECT, "drawing a change_seq");
	seq = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return seq;
}

/* after them: append the groups whose row changed to the change stream */
void
changes_end_batch(ChangesInfo *ci)
{
	Oid			argtypes[3] = {ci->arraytype, INT8OID, RECORDARRAYOID};
	Datum		args[3];
	char		nulls[4] = {' ', ' ', ' ', '\0'};

	args[0] = ci->old;
	nulls[0] = ci->old_isnull ? 'n' : ' ';
	args[1] = Int64GetDatum(next_change_seq());
	args[2] = ci->states;
	nulls[2] = ci->states_isnull ? 'n' : ' ';
	run_outside_materialize(ci, &ci->insert_plan, ci->insert_sql, 3, argtypes, args, nulls, SPI_OK_INSERT,
							"appending to a view's change stream");
}

/*
 * The view's current rows as 'insert' changes: the start of a change stream
 * made for a view that has rows (backfilled at CREATE, or ALTER VIEW).
 */
void
changes_snapshot(Oid viewid)
{
	ChangesInfo *ci;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ci = changes_lookup(viewid, true, CurrentMemoryContext);
	if (ci == NULL)
		elog(ERROR, "continuous view %u has no change stream", viewid);
	LockRelationOid(viewid, ExclusiveLock);
	ci->old_isnull = true;
	ci->states_isnull = true;
	changes_end_batch(ci);
	SPI_finish();
}

void
changes_refuse_replace(Oid viewid)
{
	ChangesRow	row;

	if (read_changes_row(viewid, false, &row, CurrentMemoryContext))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot replace continuous view \"%s\": it has a change stream",
						get_rel_name(viewid)),
				 errdetail("Change stream \"%s\" follows the view's columns and groups.",
						   get_rel_name(row.streamid)),
				 errhint("Run ALTER VIEW %s SET (changes = false) first, or drop the view.",
						 qualified_name(viewid))));
}

/* ---- ALTER VIEW v SET (changes = ...) ------------------------------------ */

/* analyze view's recorded query again, as its owner */
static void
reanalyze(ViewCatalogEntry *cat, CVPlan *plan)
{
	SeRunAs		runas;
	List	   *raw;
	Query	   *query;
	CVWindow   *hop = NULL;

	if (cat->query_sql == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous view \"%s\" was made before version 0.3 and cannot have a change stream",
						get_rel_name(cat->viewid)),
				 errhint("Create it again with CREATE OR REPLACE VIEW ... WITH (continuous, changes = true).")));
	se_run_as_owner(&runas, cat->owner, cat->timezone);
	raw = raw_parser(cat->query_sql, RAW_PARSE_DEFAULT);
	query = parse_analyze_fixedparams(linitial_node(RawStmt, raw), cat->query_sql,
									  NULL, 0, NULL);
	query = window_rewrite_hop(query, cat->query_sql, &hop);
	memset(plan, 0, sizeof(CVPlan));
	cv_analyze(query, cat->query_sql, cv_view_column_aliases(cat->viewid), hop, plan);
	window_apply_options(plan, NIL, false);
	cv_detect_deferred_distinct(plan, cat->viewid, cat->deltaid);
	se_restore(&runas);
}

/* does the view have options changes refuses (sessions, lateness, windows)? */
static bool
view_has_time_options(Oid viewid)
{
	int			rc;
	bool		result;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute(psprintf("SELECT EXISTS (SELECT FROM stream_ext.view_catalog"
							  " WHERE view = %u AND window_kind IS NOT NULL AND window_kind <> 'tumbling')"
							  " OR EXISTS (SELECT FROM stream_ext.session_views WHERE view = %u)"
							  " OR EXISTS (SELECT FROM stream_ext.lateness_views WHERE view = %u)",
							  viewid, viewid, viewid), true, 1);
	spi_check(rc, SPI_OK_SELECT, "reading a view's options");
	result = strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0;
	SPI_finish();
	return result;
}

/* is the view's Kafka replay (backfill = 'kafka', kafka/replay.c) still running? */
static bool
view_replaying(Oid viewid)
{
	bool		result = false;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	spi_check(SPI_execute("SELECT pg_catalog.to_regclass('stream_ext.backfills') IS NOT NULL", true, 1),
			  SPI_OK_SELECT, "reading a view's replay");
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0)
	{
		spi_check(SPI_execute(psprintf("SELECT FROM stream_ext.backfills WHERE view = %u AND state = 'running'",
									   viewid), true, 1),
				  SPI_OK_SELECT, "reading a view's replay");
		result = SPI_processed > 0;
	}
	SPI_finish();
	return result;
}

void
changes_alter(Oid viewid, bool enable)
{
	ChangesRow	row;
	bool		exists = read_changes_row(viewid, false, &row, CurrentMemoryContext);

	if (enable && !exists)
	{
		ViewCatalogEntry cat;
		CVPlan		plan;
		int			nestlevel;

		if (!catalog_lookup_view(viewid, &cat, CurrentMemoryContext))
			elog(ERROR, "continuous view %u has no catalog entry", viewid);
		if (!catalog_is_stream(cat.streamid))
			changes_refuse_kind("a continuous view over another continuous view", CHANGES_ROLLUP_DETAIL,
								CHANGES_ROLLUP_HINT);
		if (view_replaying(viewid))
			changes_refuse_kind("a continuous view while its Kafka replay runs", CHANGES_REPLAY_DETAIL,
								"Wait until stream_ext.backfill_progress shows it done, or cancel it with stream_ext.cancel_backfill().");
		/* writers of the stream finish first; later ones see the change stream */
		LockRelationOid(cat.streamid, ShareRowExclusiveLock);
		reanalyze(&cat, &plan);
		changes_validate(&plan, false, view_has_time_options(viewid));
		nestlevel = se_pin_settings(cat.timezone);
		changes_create(viewid, &plan);
		changes_snapshot(viewid);
		se_unpin_settings(nestlevel);
	}
	else if (!enable && exists)
	{
		ObjectAddress addr;
		SeRunAs		runas;
		Oid			argtypes[1] = {OIDOID};
		Datum		args[1];

		/* what reads the change stream (views, sinks' triggers) needs dropping first */
		deleteDependencyRecordsForSpecific(RelationRelationId, row.streamid,
										   DEPENDENCY_INTERNAL,
										   RelationRelationId, viewid);
		CommandCounterIncrement();
		ObjectAddressSet(addr, RelationRelationId, row.streamid);
		performDeletion(&addr, DROP_RESTRICT, 0);
		args[0] = ObjectIdGetDatum(viewid);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		se_run_as_catalog_owner(&runas);
		spi_check(SPI_execute_with_args("DELETE FROM stream_ext." CHANGES_TABLE " WHERE view = $1",
										1, argtypes, args, NULL, false, 0),
				  SPI_OK_DELETE, "forgetting the change stream");
		se_restore(&runas);
		SPI_finish();
		catalog_remove_orphans();
		CacheInvalidateRelcacheByRelid(viewid);
	}
}

/* ---- stream_ext.changes(view regclass) RETURNS regclass ------------------ */

Datum
stream_ext_changes(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	ChangesRow	row;

	if (!OidIsValid(catalog_stream_of(viewid)) || get_rel_relkind(viewid) != RELKIND_VIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view", get_rel_name(viewid) ? get_rel_name(viewid) : "?")));
	if (!read_changes_row(viewid, false, &row, CurrentMemoryContext))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" has no change stream", get_rel_name(viewid)),
				 errhint("Give it one with ALTER VIEW %s SET (changes = true).",
						 qualified_name(viewid))));
	PG_RETURN_OID(row.streamid);
}
