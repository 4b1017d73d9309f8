/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  stream_ext's catalog: which tables are streams, which views are
 *	  continuous and what their maintenance statements are.
 *
 *	  The catalog is two ordinary tables in schema stream_ext, readable by
 *	  everyone and writable only by the extension's owner, so that users
 *	  cannot forge entries.  Writes made on behalf of a user (creating a
 *	  stream or a view) switch to the extension owner for the duration of
 *	  that one fixed statement and nothing else.  Objects are referenced by
 *	  regclass so that pg_dump writes them by name.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "core/catalog.h"
#include "core/security.h"

bool
stream_ext_installed(void)
{
	return OidIsValid(get_extension_oid("stream_ext", true)) &&
		OidIsValid(get_relname_relid("view_catalog",
									 get_namespace_oid("stream_ext", true)));
}

/* run a catalog query with one oid parameter; returns the row count */
static uint64
catalog_query_oid(const char *sql, Oid relid, bool write)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	uint64		n;
	int			rc;

	SPI_connect();
	rc = SPI_execute_with_args(sql, 1, argtypes, values, NULL, !write, 0);
	if (rc < 0)
		elog(ERROR, "stream_ext catalog query failed: %s", SPI_result_code_string(rc));
	n = SPI_processed;
	SPI_finish();
	return n;
}

bool
catalog_is_stream(Oid relid)
{
	return catalog_query_oid("SELECT 1 FROM stream_ext.stream_catalog WHERE stream = $1",
							 relid, false) > 0;
}

/*
 * Objects added in 0.2: a module newer than the installed extension script
 * (before ALTER EXTENSION stream_ext UPDATE) must not read them.
 */
static bool
has_catalog_table(const char *name)
{
	return OidIsValid(get_relname_relid(name, get_namespace_oid("stream_ext", true)));
}

static bool
has_transform_catalog(void)
{
	return has_catalog_table("transform_catalog");
}

static bool
view_catalog_has_column(const char *name)
{
	Oid			relid = get_relname_relid("view_catalog",
										  get_namespace_oid("stream_ext", true));

	return OidIsValid(relid) && get_attnum(relid, name) != InvalidAttrNumber;
}

static bool
view_catalog_has_notify(void)
{
	return view_catalog_has_column("notify");
}

/* a materialization, delta, side table, transform or a transform's table? */
bool
catalog_is_matrel(Oid relid)
{
	return catalog_query_oid(psprintf("SELECT 1 FROM stream_ext.view_catalog WHERE matrel = $1"
									  " OR $1::pg_catalog.regclass = ANY (aux_tables)%s%s",
									  view_catalog_has_column("delta") ? " OR delta = $1" : "",
									  has_transform_catalog() ?
									  " UNION ALL SELECT 1 FROM stream_ext.transform_catalog"
									  " WHERE output_table = $1 OR transform = $1" : ""),
							 relid, false) > 0;
}

/* the view relation of a continuous transform? */
bool
catalog_is_transform(Oid relid)
{
	return has_transform_catalog() &&
		catalog_query_oid("SELECT 1 FROM stream_ext.transform_catalog WHERE transform = $1",
						  relid, false) > 0;
}

/* read by continuous views or transforms, or written by transforms? */
bool
catalog_stream_has_views(Oid relid)
{
	return catalog_query_oid(has_transform_catalog() ?
							 "SELECT 1 FROM stream_ext.view_catalog WHERE stream = $1"
							 " UNION ALL SELECT 1 FROM stream_ext.transform_catalog"
							 " WHERE stream = $1 OR output_stream = $1" :
							 "SELECT 1 FROM stream_ext.view_catalog WHERE stream = $1",
							 relid, false) > 0;
}

/* ---- which columns of a stream continuous views and transforms use ---- */

typedef struct ColumnUseContext
{
	Oid			relid;
	const char *attname;
	bool		found;
} ColumnUseContext;

/*
 * Does a raw parse tree reference column attname?  Generated statements
 * qualify stream columns (s.x), so a column reference ending in attname
 * counts, whatever its qualifier (at worst a same-named column of another
 * table protects this one too), and so does a target column of an INSERT
 * into the stream (an output stream).  A whole-row reference (s.*, or a
 * bare name that may be a row variable) counts for every column.
 */
static bool
column_use_walker(Node *node, ColumnUseContext *cx)
{
	if (node == NULL)
		return false;
	if (IsA(node, ColumnRef))
	{
		ColumnRef  *cr = (ColumnRef *) node;
		Node	   *last = llast(cr->fields);

		if (IsA(last, A_Star) || list_length(cr->fields) == 1 ||
			strcmp(strVal(last), cx->attname) == 0)
		{
			cx->found = true;
			return true;
		}
		return false;
	}
	if (IsA(node, InsertStmt) &&
		RangeVarGetRelid(((InsertStmt *) node)->relation, NoLock, true) == cx->relid)
	{
		ListCell   *lc;

		/* INSERT INTO stream (...): an output stream's written columns */
		foreach(lc, ((InsertStmt *) node)->cols)
		{
			if (strcmp(((ResTarget *) lfirst(lc))->name, cx->attname) == 0)
			{
				cx->found = true;
				return true;
			}
		}
	}
	return raw_expression_tree_walker(node, column_use_walker, (void *) cx);
}

/*
 * A continuous view or transform (as text) that reads column attname of
 * stream relid, or writes it (a transform into its output stream); NULL if
 * none does.  Looks at every statement stored for them that reads the
 * stream or writes to it (maintenance, DISTINCT, late data, final rows,
 * transform SELECT) and at their time columns and output columns.  Only
 * DDL calls this.
 */
char *
catalog_column_user(Oid relid, const char *attname)
{
	StringInfoData sql;
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *result = NULL;
	MemoryContext caller = CurrentMemoryContext;
	int			rc;

	/*
	 * (object, text, names): a statement reading the stream, or (names) a
	 * list of the stream's column names the object uses.  Statements on
	 * materializations only (TTL, sliding-window expiry, session
	 * compaction) read no stream column.
	 */
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT * FROM ("
					 "SELECT v.view::pg_catalog.text, q.sql, false"
					 "  FROM stream_ext.view_catalog v,"
					 "       LATERAL pg_catalog.unnest(ARRAY[v.maintain_sql]"
					 "               OPERATOR(pg_catalog.||) v.distinct_sql) AS q(sql)"
					 " WHERE v.stream = $1");
	/* windows came in 0.2: not in a 0.1 catalog before its update */
	if (view_catalog_has_column("time_column"))
		appendStringInfoString(&sql,
							   " UNION ALL SELECT v.view::pg_catalog.text, pg_catalog.quote_ident(v.time_column), true"
							   "  FROM stream_ext.view_catalog v WHERE v.stream = $1 AND v.time_column IS NOT NULL");
	if (has_catalog_table("lateness_views"))
		appendStringInfoString(&sql,
							   " UNION ALL SELECT v.view::pg_catalog.text, q.sql, false"
							   "  FROM stream_ext.view_catalog v"
							   "  JOIN stream_ext.lateness_views l ON l.view OPERATOR(pg_catalog.=) v.view,"
							   "       LATERAL pg_catalog.unnest(ARRAY[l.late_sql, l.max_sql, l.emit_sql]) AS q(sql)"
							   " WHERE v.stream = $1 OR l.output_stream = $1");
	if (has_catalog_table("session_views"))
		appendStringInfoString(&sql,
							   " UNION ALL SELECT v.view::pg_catalog.text, pg_catalog.quote_ident(w.time_column), true"
							   "  FROM stream_ext.view_catalog v"
							   "  JOIN stream_ext.session_views w ON w.view OPERATOR(pg_catalog.=) v.view"
							   " WHERE v.stream = $1");
	if (has_catalog_table("transform_catalog"))
		appendStringInfoString(&sql,
							   " UNION ALL SELECT t.transform::pg_catalog.text, t.select_sql, false"
							   "  FROM stream_ext.transform_catalog t WHERE t.stream = $1"
							   " UNION ALL SELECT t.transform::pg_catalog.text, t.columns, true"
							   "  FROM stream_ext.transform_catalog t WHERE t.output_stream = $1");
	/* the first user by name is reported */
	appendStringInfoString(&sql, ") u ORDER BY 1");

	SPI_connect();
	rc = SPI_execute_with_args(sql.data, 1, argtypes, values, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext column lookup failed: %s", SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed && result == NULL; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *text = SPI_getvalue(tup, desc, 2);
		bool		isnull;
		ColumnUseContext cx = {relid, attname, false};
		ListCell   *lc;

		if (text == NULL)
			continue;
		if (DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull)))
		{
			List	   *names;

			/* a list we wrote with quote_identifier(): cannot fail */
			if (!SplitIdentifierString(text, ',', &names))
				cx.found = true;
			foreach(lc, names)
				if (strcmp(lfirst(lc), attname) == 0)
					cx.found = true;
		}
		else
		{
			foreach(lc, raw_parser(text, RAW_PARSE_DEFAULT))
			{
				if (column_use_walker(((RawStmt *) lfirst(lc))->stmt, &cx))
					break;
			}
		}
		if (cx.found)
			result = SPI_getvalue(tup, desc, 1);
	}
	if (result != NULL)
		result = MemoryContextStrdup(caller, result);
	SPI_finish();
	return result;
}

/*
 * A continuous view (as text) whose materialization or a side table is in
 * schema nspid, or NULL.
 */
char *
catalog_view_in_schema(Oid nspid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(nspid)};
	MemoryContext cxt = CurrentMemoryContext;
	char	   *result = NULL;
	int			rc;

	SPI_connect();
	rc = SPI_execute_with_args("SELECT v.view::pg_catalog.text FROM stream_ext.view_catalog v"
							   " WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c"
							   "  WHERE c.relnamespace = $1"
							   "    AND (c.oid = v.matrel OR c.oid = ANY (v.aux_tables)))"
							   " ORDER BY 1 LIMIT 1",
							   1, argtypes, values, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext catalog query failed: %s", SPI_result_code_string(rc));
	if (SPI_processed > 0)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		result = MemoryContextStrdup(cxt, v);
	}
	SPI_finish();
	return result;
}

/* the owners of the continuous views of stream relid */
List *
catalog_view_owners(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	MemoryContext cxt = CurrentMemoryContext;
	List	   *result = NIL;
	int			rc;

	SPI_connect();
	/* continuous transforms read every row of their stream too */
	rc = SPI_execute_with_args(has_transform_catalog() ?
							   "SELECT c.relowner FROM stream_ext.view_catalog v"
							   " JOIN pg_catalog.pg_class c ON c.oid = v.view"
							   " WHERE v.stream = $1"
							   " UNION SELECT c.relowner FROM stream_ext.transform_catalog t"
							   " JOIN pg_catalog.pg_class c ON c.oid = t.transform"
							   " WHERE t.stream = $1" :
							   "SELECT DISTINCT c.relowner FROM stream_ext.view_catalog v"
							   " JOIN pg_catalog.pg_class c ON c.oid = v.view"
							   " WHERE v.stream = $1",
							   1, argtypes, values, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext catalog query failed: %s", SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));
		MemoryContext old = MemoryContextSwitchTo(cxt);

		result = lappend_oid(result, owner);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return result;
}

void
catalog_insert_stream(Oid relid)
{
	SeRunAs		runas;

	se_run_as_catalog_owner(&runas);
	catalog_query_oid("INSERT INTO stream_ext.stream_catalog (stream) VALUES ($1)",
					  relid, true);
	se_restore(&runas);
}

static Datum
text_list_to_array(List *list)
{
	int			n = list_length(list);
	Datum	   *elems = palloc(sizeof(Datum) * (n + 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, list)
		elems[i++] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

void
catalog_insert_view(Oid viewid, Oid streamid, Oid matrelid,
					List *aux_tables, const char *definition,
					const char *maintain_sql, List *distinct_sql)
{
	Oid			argtypes[7] = {OIDOID, OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTARRAYOID, OIDARRAYOID};
	Datum		values[7];
	Datum	   *auxs = palloc(sizeof(Datum) * (list_length(aux_tables) + 1));
	int			naux = 0;
	ListCell   *lc;
	SeRunAs		runas;
	int			rc;

	values[0] = ObjectIdGetDatum(viewid);
	values[1] = ObjectIdGetDatum(streamid);
	values[2] = ObjectIdGetDatum(matrelid);
	values[3] = CStringGetTextDatum(definition);
	values[4] = CStringGetTextDatum(maintain_sql);
	values[5] = text_list_to_array(distinct_sql);
	foreach(lc, aux_tables)
		auxs[naux++] = ObjectIdGetDatum(lfirst_oid(lc));
	values[6] = PointerGetDatum(construct_array(auxs, naux, OIDOID, sizeof(Oid),
												true, TYPALIGN_INT));

	se_run_as_catalog_owner(&runas);
	SPI_connect();
	rc = SPI_execute_with_args("INSERT INTO stream_ext.view_catalog"
							   " (view, stream, matrel, aux_tables, definition, maintain_sql, distinct_sql, timezone)"
							   " VALUES ($1, $2, $3, $7::pg_catalog.regclass[], $4, $5, $6,"
							   " pg_catalog.current_setting('TimeZone'))",
							   7, argtypes, values, NULL, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not record continuous view: %s", SPI_result_code_string(rc));
	SPI_finish();
	se_restore(&runas);
}

/*
 * A feature of this module whose catalog objects the extension's SQL objects
 * in this database do not have yet (the module was updated, ALTER EXTENSION
 * stream_ext UPDATE was not run).
 */
void
catalog_report_needs_update(const char *feature)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("stream_ext 0.2 or later is needed for %s", feature),
			 errdetail("The extension's objects in this database are older than its loaded module."),
			 errhint("Run ALTER EXTENSION stream_ext UPDATE.")));
}

/* Does catalog table stream_ext.name (added after 0.1) exist, else report */
void
catalog_require_table(const char *name, const char *feature)
{
	if (!has_catalog_table(name))
		catalog_report_needs_update(feature);
}

/*
 * Has view_catalog the window columns (0.2)?  A database still on 0.1 is
 * served by this module until ALTER EXTENSION stream_ext UPDATE.
 */
static bool
catalog_has_windows(void)
{
	Oid			nsp = get_namespace_oid("stream_ext", false);
	Oid			relid = get_relname_relid("view_catalog", nsp);

	return OidIsValid(relid) && get_attnum(relid, "expire_sql") != InvalidAttrNumber;
}

/* record the time window of a view (see windows/windows.c); NULLs where none */
void
catalog_set_window(Oid viewid, const char *kind, const char *size,
				   const char *slide, const char *step,
				   const char *time_column, const char *window_column,
				   const char *expire_sql)
{
	Oid			argtypes[8] = {OIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	const char *args[8] = {NULL, kind, size, slide, step, time_column, window_column, expire_sql};
	Datum		values[8];
	char		nulls[8];
	SeRunAs		runas;
	int			rc;

	if (!catalog_has_windows())
		catalog_report_needs_update("time windows");
	values[0] = ObjectIdGetDatum(viewid);
	nulls[0] = ' ';
	for (int i = 1; i < 8; i++)
	{
		values[i] = args[i] ? CStringGetTextDatum(args[i]) : (Datum) 0;
		nulls[i] = args[i] ? ' ' : 'n';
	}
	se_run_as_catalog_owner(&runas);
	SPI_connect();
	rc = SPI_execute_with_args("UPDATE stream_ext.view_catalog SET window_kind = $2,"
							   " window_size = $3::pg_catalog.interval,"
							   " window_slide = $4::pg_catalog.interval,"
							   " window_step = $5::pg_catalog.interval,"
							   " time_column = $6, window_column = $7, expire_sql = $8"
							   " WHERE view = $1",
							   8, argtypes, values, nulls, false, 0);
	if (rc != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not record the window of continuous view %u", viewid);
	SPI_finish();
	se_restore(&runas);
}

/*
 * Has view_catalog the delta columns (0.3)?  Before ALTER EXTENSION
 * stream_ext UPDATE new views upsert, as all views of 0.2 do.
 */
bool
catalog_has_delta(void)
{
	return view_catalog_has_column("delta");
}

/* record the delta of a view that appends, and its compaction statement */
void
catalog_set_delta(Oid viewid, Oid deltaid, const char *compact_sql)
{
	Oid			argtypes[3] = {OIDOID, OIDOID, TEXTOID};
	Datum		values[3];
	SeRunAs		runas;
	int			rc;

	values[0] = ObjectIdGetDatum(viewid);
	values[1] = ObjectIdGetDatum(deltaid);
	values[2] = CStringGetTextDatum(compact_sql);
	se_run_as_catalog_owner(&runas);
	SPI_connect();
	rc = SPI_execute_with_args("UPDATE stream_ext.view_catalog SET delta = $2, compact_sql = $3"
							   " WHERE view = $1",
							   3, argtypes, values, NULL, false, 0);
	if (rc != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not record the delta of continuous view %u", viewid);
	SPI_finish();
	se_restore(&runas);
}

/*
 * Fill *entry for the view whose materialization is matrelid; the strings
 * are allocated in mcxt.  Returns false if there is none.
 */
static bool lookup_view(bool by_matrel, Oid relid, ViewCatalogEntry *entry,
						MemoryContext mcxt);

bool
catalog_lookup_view_by_matrel(Oid matrelid, ViewCatalogEntry *entry,
							  MemoryContext mcxt)
{
	return lookup_view(true, matrelid, entry, mcxt);
}

/* the same, by the user-facing view */
bool
catalog_lookup_view(Oid viewid, ViewCatalogEntry *entry, MemoryContext mcxt)
{
	return lookup_view(false, viewid, entry, mcxt);
}


/*
 * Read stream_ext's catalog as it is committed now, not as the running
 * statement's snapshot saw it: for the triggers of continuous views,
 * transforms and sinks, between catalog_read_latest_begin() and _end().
 *
 * A writer can fire a trigger its snapshot predates.  COPY (and anything
 * else that takes its snapshot before it locks the stream) waits behind
 * CREATE VIEW's ShareRowExclusiveLock with a snapshot from before CREATE
 * VIEW committed; once it has the lock it sees the new trigger (PostgreSQL
 * reads pg_trigger with a fresh catalog snapshot after every lock
 * acquisition), but not the view's row in stream_ext.view_catalog.  The
 * view exists all the same, and the trigger must count the writer's rows:
 * CREATE VIEW's backfill ran while it held the stream, before these rows
 * were inserted, so it cannot have counted them.  Every row is counted
 * exactly once: a row whose statement locked the stream before CREATE VIEW
 * did is committed (or rolled back) before CREATE VIEW gets the lock and is
 * backfilled (if committed) from GetLatestSnapshot(); its statement fired
 * the trigger set it saw when it locked, without the new view.  A row whose
 * statement locked the stream after CREATE VIEW committed fires the new
 * trigger and is not in the backfill.  So the trigger looks the view up
 * with the latest snapshot, the way PostgreSQL itself reads pg_class and
 * pg_trigger; the trigger's existence proves the catalog row is committed
 * (or is ours: CREATE VIEW and a write in one transaction).  The
 * maintenance statements themselves run with a fresh snapshot per SPI
 * statement (READ COMMITTED), so they see the backfilled groups.
 */
void
catalog_read_latest_begin(void)
{
	PushActiveSnapshot(GetLatestSnapshot());
}

void
catalog_read_latest_end(void)
{
	PopActiveSnapshot();
}

/* the stream of continuous view or transform relid, InvalidOid if none */
Oid
catalog_stream_of(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	Oid			result = InvalidOid;
	bool		isnull;
	int			rc;

	SPI_connect();
	rc = SPI_execute_with_args(has_transform_catalog() ?
							   "SELECT stream::oid FROM stream_ext.view_catalog WHERE view = $1"
							   " UNION ALL SELECT stream::oid FROM stream_ext.transform_catalog"
							   " WHERE transform = $1" :
							   "SELECT stream::oid FROM stream_ext.view_catalog WHERE view = $1",
							   1, argtypes, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext catalog query failed: %s", SPI_result_code_string(rc));
	if (SPI_processed == 1)
		result = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
												SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return result;
}

static bool
lookup_view(bool by_matrel, Oid relid, ViewCatalogEntry *entry,
			MemoryContext mcxt)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	bool		found = false;
	const char *window_columns;
	const char *notify = view_catalog_has_notify() ? "v.notify" : "NULL::pg_catalog.text";
	const char *delta = catalog_has_delta() ? "v.delta::pg_catalog.oid, v.compact_sql" :
		"NULL::pg_catalog.oid, NULL::pg_catalog.text";
	int			rc;

	/* sliding windows: expiry statement, and its step in microseconds */
	window_columns = catalog_has_windows() ?
		"v.expire_sql, (pg_catalog.date_part('epoch', v.window_step) * 1000000)::pg_catalog.int8" :
		"NULL::pg_catalog.text, NULL::pg_catalog.int8";

	SPI_connect();
	catalog_read_latest_begin();
	rc = SPI_execute_with_args(psprintf("SELECT v.view::oid, v.stream::oid, c.relowner,"
										" v.maintain_sql, v.distinct_sql, v.timezone, v.matrel::oid, %s, %s, %s"
										" FROM stream_ext.view_catalog v"
										" JOIN pg_catalog.pg_class c ON c.oid = v.view"
										" WHERE v.%s = $1",
										window_columns, notify, delta, by_matrel ? "matrel" : "view"),
							   1, argtypes, values, NULL, true, 1);
	catalog_read_latest_end();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext catalog lookup failed: %s", SPI_result_code_string(rc));
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		MemoryContext old;
		ArrayType  *arr;
		Datum	   *elems;
		int			nelems;

		old = MemoryContextSwitchTo(mcxt);
		entry->matrelid = DatumGetObjectId(SPI_getbinval(tup, desc, 7, &isnull));
		entry->viewid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		entry->streamid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
		entry->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		entry->maintain_sql = SPI_getvalue(tup, desc, 4);
		entry->timezone = SPI_getvalue(tup, desc, 6);
		entry->expire_sql = SPI_getvalue(tup, desc, 8);
		entry->expire_every_us = DatumGetInt64(SPI_getbinval(tup, desc, 9, &isnull));
		if (isnull)
			entry->expire_every_us = 0;
		entry->notify = SPI_getvalue(tup, desc, 10);
		entry->deltaid = DatumGetObjectId(SPI_getbinval(tup, desc, 11, &isnull));
		if (isnull)
			entry->deltaid = InvalidOid;
		entry->compact_sql = SPI_getvalue(tup, desc, 12);
		entry->distinct_sql = NIL;
		arr = DatumGetArrayTypeP(SPI_getbinval(tup, desc, 5, &isnull));
		deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, NULL, &nelems);
		for (int i = 0; i < nelems; i++)
			entry->distinct_sql = lappend(entry->distinct_sql,
										  TextDatumGetCString(elems[i]));
		MemoryContextSwitchTo(old);
		found = true;
	}
	SPI_finish();
	return found;
}

/*
 * Forget streams and views that no longer exist.  Called after DDL that
 * may have dropped some (DROP TABLE/VIEW/SCHEMA/OWNED, with or without
 * CASCADE); PostgreSQL's dependencies already dropped the objects.
 */
uint64
catalog_remove_orphans(void)
{
	SeRunAs		runas;
	int			rc;
	uint64		views;

	se_run_as_catalog_owner(&runas);
	SPI_connect();
	rc = SPI_execute("DELETE FROM stream_ext.view_catalog v WHERE NOT EXISTS"
					 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = v.view)",
					 false, 0);
	views = SPI_processed;
	if (rc == SPI_OK_DELETE && has_transform_catalog())
	{
		rc = SPI_execute("DELETE FROM stream_ext.transform_catalog t WHERE NOT EXISTS"
						 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = t.transform)",
						 false, 0);
		views += SPI_processed;
	}
	/* 0.3: views and transforms no longer maintained (privileges.c) */
	if (rc == SPI_OK_DELETE && has_catalog_table("invalid_objects"))
		rc = SPI_execute("DELETE FROM stream_ext.invalid_objects i WHERE NOT EXISTS"
						 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = i.object)",
						 false, 0);
	if (rc == SPI_OK_DELETE)
		rc = SPI_execute("DELETE FROM stream_ext.stream_catalog s WHERE NOT EXISTS"
						 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.stream)",
						 false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "stream_ext catalog cleanup failed: %s", SPI_result_code_string(rc));
	SPI_finish();
	se_restore(&runas);
	return views;
}

/* WITH (ttl, ttl_column) of a view just recorded; ttl_sql: its statement */
void
catalog_set_view_ttl(Oid viewid, Interval *ttl, const char *ttl_column,
					 const char *ttl_sql)
{
	Oid			argtypes[4] = {OIDOID, INTERVALOID, TEXTOID, TEXTOID};
	Datum		values[4];
	SeRunAs		runas;
	int			rc;

	values[0] = ObjectIdGetDatum(viewid);
	values[1] = IntervalPGetDatum(ttl);
	values[2] = CStringGetTextDatum(ttl_column);
	values[3] = CStringGetTextDatum(ttl_sql);
	se_run_as_catalog_owner(&runas);
	SPI_connect();
	rc = SPI_execute_with_args("UPDATE stream_ext.view_catalog SET ttl = $2, ttl_column = $3, ttl_sql = $4"
							   " WHERE view = $1",
							   4, argtypes, values, NULL, false, 0);
	if (rc != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not record the TTL of continuous view %u", viewid);
	SPI_finish();
	se_restore(&runas);
}

/* stream_ext.set_retention(): NULL keeps raw rows */
void
catalog_set_stream_retention(Oid relid, Interval *retention)
{
	Oid			argtypes[2] = {OIDOID, INTERVALOID};
	Datum		values[2];
	char		nulls[2] = {' ', retention ? ' ' : 'n'};
	SeRunAs		runas;
	int			rc;

	values[0] = ObjectIdGetDatum(relid);
	values[1] = retention ? IntervalPGetDatum(retention) : (Datum) 0;
	se_run_as_catalog_owner(&runas);
	SPI_connect();
	rc = SPI_execute_with_args("UPDATE stream_ext.stream_catalog SET retention = $2 WHERE stream = $1",
							   2, argtypes, values, nulls, false, 0);
	if (rc != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not record the retention of stream %u", relid);
	SPI_finish();
	se_restore(&runas);
}
