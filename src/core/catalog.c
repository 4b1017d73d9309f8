/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  stream_ext's catalog: which tables are streams, which views are
 *	  continuous, what their maintenance statements, windows, sessions,
 *	  lateness, watermarks and housekeeping are, which transforms there
 *	  are, which objects are invalid.  Every statement on those tables is
 *	  here, behind a function named for what it returns or records; the
 *	  Kafka tables are kafka/common.c's.
 *
 *	  The catalog is ordinary tables in schema stream_ext, readable by
 *	  everyone and writable only by the extension's owner, so that users
 *	  cannot forge entries.  Writes made on behalf of a user (creating a
 *	  stream or a view, a batch raising a watermark) switch to the
 *	  extension owner for the duration of that one fixed statement and
 *	  nothing else, inside catalog_exec(): callers never switch for it.
 *	  Objects are referenced by regclass so that pg_dump writes them by
 *	  name.
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
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "storage/lmgr.h"
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

/*
 * Every statement on stream_ext's catalog tables runs through catalog_exec():
 * in an SPI connection of its own (nested in the caller's, if any), and,
 * with CATALOG_AS_OWNER, as the extension's owner for that one fixed
 * statement.  Each row returned is handed to row_fn in the caller's memory
 * context, so that what it keeps outlives the connection.  Returns the
 * number of rows processed.
 */
#define CATALOG_WRITE		0x01	/* not read-only (sees this command's writes) */
#define CATALOG_AS_OWNER	0x02	/* se_run_as_catalog_owner() */
#define CATALOG_LATEST		0x04	/* catalog_read_latest_begin() */

typedef void (*CatalogRowFn) (HeapTuple tup, TupleDesc desc, void *arg);

/* the parameters $1, $2, ... of a catalog statement, added in order */
#define CATALOG_MAX_ARGS 8

typedef struct CatalogArgs
{
	int			n;
	Oid			types[CATALOG_MAX_ARGS];
	Datum		values[CATALOG_MAX_ARGS];
	char		nulls[CATALOG_MAX_ARGS];
} CatalogArgs;

static void
arg_datum(CatalogArgs *args, Oid type, Datum value, bool isnull)
{
	Assert(args->n < CATALOG_MAX_ARGS);
	args->types[args->n] = type;
	args->values[args->n] = isnull ? (Datum) 0 : value;
	args->nulls[args->n] = isnull ? 'n' : ' ';
	args->n++;
}

/* an oid; InvalidOid is NULL */
static void
arg_oid(CatalogArgs *args, Oid value)
{
	arg_datum(args, OIDOID, ObjectIdGetDatum(value), !OidIsValid(value));
}

/* a text; NULL is NULL */
static void
arg_text(CatalogArgs *args, const char *value)
{
	arg_datum(args, TEXTOID, value ? CStringGetTextDatum(value) : (Datum) 0,
			  value == NULL);
}

static uint64
catalog_exec(const char *sql, CatalogArgs *args, int flags, long limit,
			 CatalogRowFn row_fn, void *arg)
{
	MemoryContext caller = CurrentMemoryContext;
	SeRunAs		runas;
	int			nestlevel = 0;
	uint64		n;
	int			rc;

	/* as the caller too: its search_path must not pick the names (security.c) */
	if (flags & CATALOG_AS_OWNER)
		se_run_as_catalog_owner(&runas);
	else
		nestlevel = se_pin_search_path();
	SPI_connect();
	if (flags & CATALOG_LATEST)
		catalog_read_latest_begin();
	rc = SPI_execute_with_args(sql, args ? args->n : 0,
							   args ? args->types : NULL,
							   args ? args->values : NULL,
							   args ? args->nulls : NULL,
							   (flags & CATALOG_WRITE) == 0, limit);
	if (flags & CATALOG_LATEST)
		catalog_read_latest_end();
	if (rc < 0)
		elog(ERROR, "stream_ext catalog statement failed: %s", SPI_result_code_string(rc));
	n = SPI_processed;
	if (row_fn != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(caller);

		for (uint64 i = 0; i < n; i++)
			row_fn(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, arg);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	if (flags & CATALOG_AS_OWNER)
		se_restore(&runas);
	else
		se_unpin_settings(nestlevel);
	return n;
}

/*
 * A write as the extension's owner that must change exactly one row: what
 * and objid name it in the error otherwise.
 */
static void
catalog_write_one(const char *sql, CatalogArgs *args, const char *what, Oid objid)
{
	if (catalog_exec(sql, args, CATALOG_WRITE | CATALOG_AS_OWNER, 0, NULL, NULL) != 1)
		elog(ERROR, "stream_ext: could not record %s %u", what, objid);
}

/* a catalog statement with one oid parameter, each row to row_fn if any */
static uint64
catalog_rows_oid(const char *sql, Oid relid, int flags, long limit,
				 CatalogRowFn row_fn, void *arg)
{
	CatalogArgs args = {0};

	arg_oid(&args, relid);
	return catalog_exec(sql, &args, flags, limit, row_fn, arg);
}

/* the same, without rows; returns the row count */
static uint64
catalog_query_oid(const char *sql, Oid relid, int flags)
{
	return catalog_rows_oid(sql, relid, flags, 0, NULL, NULL);
}

/* row_fn of a one-column text result: the first value, in *arg */
static void
row_first_text(HeapTuple tup, TupleDesc desc, void *arg)
{
	char	  **result = arg;

	if (*result == NULL)
		*result = SPI_getvalue(tup, desc, 1);
}

/* row_fn of a one-column oid result: appended to the List * in *arg */
static void
row_append_oid(HeapTuple tup, TupleDesc desc, void *arg)
{
	List	  **result = arg;
	bool		isnull;

	*result = lappend_oid(*result,
						  DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull)));
}

bool
catalog_is_stream(Oid relid)
{
	return catalog_query_oid("SELECT 1 FROM stream_ext.stream_catalog WHERE stream = $1",
							 relid, 0) > 0;
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
							 relid, 0) > 0;
}

/* the view relation of a continuous transform? */
bool
catalog_is_transform(Oid relid)
{
	return has_transform_catalog() &&
		catalog_query_oid("SELECT 1 FROM stream_ext.transform_catalog WHERE transform = $1",
						  relid, 0) > 0;
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
							 relid, 0) > 0;
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
	char	   *result = NULL;

	catalog_rows_oid("SELECT v.view::pg_catalog.text FROM stream_ext.view_catalog v"
					 " WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c"
					 "  WHERE c.relnamespace = $1"
					 "    AND (c.oid = v.matrel OR c.oid = ANY (v.aux_tables)))"
					 " ORDER BY 1 LIMIT 1",
					 nspid, 0, 0, row_first_text, &result);
	return result;
}

/*
 * The users of objects recorded by ddl/used_objects.c and query/joins.c:
 * NORMAL dependencies of materializations, of the views of shared storages
 * and of transforms, on anything but a stream.  Rows: what it is
 * ("continuous view v"), refclassid, refobjid, refobjsubid.
 */
static char *
used_objects_sql(void)
{
	return psprintf("SELECT u.what, d.refclassid, d.refobjid, d.refobjsubid"
					"  FROM pg_catalog.pg_depend d,"
					"       LATERAL (SELECT 'continuous view ' OPERATOR(pg_catalog.||) v.view::pg_catalog.text"
					"                  FROM stream_ext.view_catalog v"
					"                 WHERE d.objid OPERATOR(pg_catalog.=) v.matrel"
					"                    OR d.objid OPERATOR(pg_catalog.=) v.view%s) u(what)"
					" WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
					"   AND d.deptype = 'n'"
					"   AND NOT (d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
					"            AND d.refobjid IN (SELECT s.stream FROM stream_ext.stream_catalog s))",
					has_transform_catalog() ?
					" UNION ALL SELECT 'continuous transform ' OPERATOR(pg_catalog.||) t.transform::pg_catalog.text"
					"  FROM stream_ext.transform_catalog t"
					" WHERE d.objid OPERATOR(pg_catalog.=) t.transform" : "");
}

/*
 * A continuous view or transform whose SQL names object (classid, objid)
 * -- column subid of it; 0: the object or any of its columns --, or NULL.
 */
char *
catalog_object_user(Oid classid, Oid objid, int32 subid)
{
	CatalogArgs args = {0};
	char	   *result = NULL;

	arg_oid(&args, classid);
	arg_oid(&args, objid);
	arg_datum(&args, INT4OID, Int32GetDatum(subid), false);
	catalog_exec(psprintf("SELECT what FROM (%s) x"
						  " WHERE refclassid = $1 AND refobjid = $2"
						  "   AND ($3 = 0 OR refobjsubid = $3)"
						  " ORDER BY 1 LIMIT 1", used_objects_sql()),
				 &args, 0, 0, row_first_text, &result);
	return result;
}

/* the same for any object of schema nspid */
char *
catalog_schema_object_user(Oid nspid)
{
	char	   *result = NULL;

	catalog_rows_oid(psprintf("SELECT what FROM (%s) x"
							  " WHERE CASE refclassid"
							  "  WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN"
							  "   (SELECT relnamespace FROM pg_catalog.pg_class WHERE oid = refobjid)"
							  "  WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN"
							  "   (SELECT pronamespace FROM pg_catalog.pg_proc WHERE oid = refobjid)"
							  "  WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN"
							  "   (SELECT typnamespace FROM pg_catalog.pg_type WHERE oid = refobjid)"
							  "  WHEN 'pg_catalog.pg_operator'::pg_catalog.regclass THEN"
							  "   (SELECT oprnamespace FROM pg_catalog.pg_operator WHERE oid = refobjid)"
							  "  WHEN 'pg_catalog.pg_collation'::pg_catalog.regclass THEN"
							  "   (SELECT collnamespace FROM pg_catalog.pg_collation WHERE oid = refobjid)"
							  " END = $1"
							  " ORDER BY 1 LIMIT 1", used_objects_sql()),
					 nspid, 0, 0, row_first_text, &result);
	return result;
}

/*
 * The Kafka sink of stream relid that keys its messages by column attname
 * (its capture statement names it: kafka/sink.c), or NULL.  Read as the
 * catalog's owner: the stream's owner may not see other roles' sinks.
 */
char *
catalog_sink_key_user(Oid relid, const char *attname)
{
	CatalogArgs args = {0};
	char	   *result = NULL;

	if (!has_catalog_table("kafka_sinks"))
		return NULL;
	arg_oid(&args, relid);
	arg_text(&args, attname);
	catalog_exec("SELECT name FROM stream_ext.kafka_sinks"
				 " WHERE stream = $1 AND key_column = $2 ORDER BY 1 LIMIT 1",
				 &args, CATALOG_AS_OWNER, 0, row_first_text, &result);
	return result;
}

/*
 * The Kafka source into stream relid whose options name column attname
 * (the target columns, a column's path, the key, partition, offset or
 * timestamp column: kafka/source.c inserts into them by name), or NULL.
 * Read as the catalog's owner, as catalog_sink_key_user().
 */
char *
catalog_source_column_user(Oid relid, const char *attname)
{
	CatalogArgs args = {0};
	char	   *result = NULL;

	if (!has_catalog_table("kafka_sources"))
		return NULL;
	arg_oid(&args, relid);
	arg_text(&args, attname);
	catalog_exec("SELECT s.name FROM stream_ext.kafka_sources s,"
				 "       LATERAL (SELECT s.options OPERATOR(pg_catalog.->) 'columns' AS c,"
				 "                       s.options OPERATOR(pg_catalog.->) 'paths' AS p) o"
				 " WHERE s.stream = $1"
				 "   AND ($2 OPERATOR(pg_catalog.=) ANY (ARRAY["
				 "          s.options OPERATOR(pg_catalog.->>) 'column',"
				 "          s.options OPERATOR(pg_catalog.->>) 'key_column',"
				 "          s.options OPERATOR(pg_catalog.->>) 'partition_column',"
				 "          s.options OPERATOR(pg_catalog.->>) 'offset_column',"
				 "          s.options OPERATOR(pg_catalog.->>) 'timestamp_column'])"
				 "        OR (pg_catalog.jsonb_typeof(o.c) OPERATOR(pg_catalog.=) 'array'"
				 "            AND o.c OPERATOR(pg_catalog.?) $2)"
				 "        OR (pg_catalog.jsonb_typeof(o.p) OPERATOR(pg_catalog.=) 'object'"
				 "            AND o.p OPERATOR(pg_catalog.?) $2))"
				 " ORDER BY 1 LIMIT 1",
				 &args, CATALOG_AS_OWNER, 0, row_first_text, &result);
	return result;
}

/*
 * A continuous view or transform whose statements name stream relid (nspid
 * valid: any stream of schema nspid), or NULL: "continuous view v joins it
 * with another stream" (each stream's batch statement names the other:
 * query/stream_joins.c) or "... emits its closed windows into it"
 * (emit = 'on_close': windows/lateness.c).
 */
char *
catalog_stream_named_by(Oid relid, Oid nspid)
{
	CatalogArgs args = {0};
	StringInfoData sql;
	char	   *result = NULL;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT NULL::pg_catalog.text WHERE false");
	if (has_catalog_table("stream_joins"))
		appendStringInfoString(&sql,
							   " UNION ALL"
							   " SELECT CASE WHEN EXISTS (SELECT FROM stream_ext.transform_catalog t"
							   "                           WHERE t.transform = j.object)"
							   "         THEN 'continuous transform ' ELSE 'continuous view ' END"
							   "        OPERATOR(pg_catalog.||) j.object::pg_catalog.text"
							   "        OPERATOR(pg_catalog.||) ' joins it with another stream'"
							   "   FROM stream_ext.stream_joins j, pg_catalog.pg_class l, pg_catalog.pg_class r"
							   "  WHERE l.oid = j.left_stream AND r.oid = j.right_stream"
							   "    AND (l.oid = $1 OR r.oid = $1"
							   "         OR l.relnamespace = $2 OR r.relnamespace = $2)");
	if (has_catalog_table("lateness_views"))
		appendStringInfoString(&sql,
							   " UNION ALL"
							   " SELECT 'continuous view ' OPERATOR(pg_catalog.||) l.view::pg_catalog.text"
							   "        OPERATOR(pg_catalog.||) ' emits its closed windows into it'"
							   "   FROM stream_ext.lateness_views l, pg_catalog.pg_class o"
							   "  WHERE o.oid = l.output_stream AND (o.oid = $1 OR o.relnamespace = $2)");
	appendStringInfoString(&sql, " ORDER BY 1 LIMIT 1");
	arg_oid(&args, relid);
	arg_oid(&args, nspid);
	catalog_exec(sql.data, &args, 0, 0, row_first_text, &result);
	return result;
}

/*
 * Why the statements of continuous view viewid name the view itself (its
 * row type, its columns), or NULL: "it has a change stream"
 * (maintain/changes.c), "it emits its closed windows into a stream"
 * (windows/lateness.c).
 */
char *
catalog_view_named_by_own_sql(Oid viewid)
{
	StringInfoData sql;
	char	   *result = NULL;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT NULL::pg_catalog.text WHERE false");
	if (has_catalog_table("change_streams"))
		appendStringInfoString(&sql, " UNION ALL SELECT 'it has a change stream'"
							   " FROM stream_ext.change_streams WHERE view = $1");
	if (has_catalog_table("lateness_views"))
		appendStringInfoString(&sql, " UNION ALL SELECT 'it emits its closed windows into a stream'"
							   " FROM stream_ext.lateness_views WHERE view = $1 AND emit_sql IS NOT NULL");
	appendStringInfoString(&sql, " ORDER BY 1 LIMIT 1");
	catalog_rows_oid(sql.data, viewid, 0, 0, row_first_text, &result);
	return result;
}

/* the stream continuous view viewid emits its closed windows into, if any */
Oid
catalog_view_emit_output(Oid viewid)
{
	List	   *result = NIL;

	if (has_catalog_table("lateness_views"))
		catalog_rows_oid("SELECT output_stream::pg_catalog.oid FROM stream_ext.lateness_views"
						 " WHERE view = $1 AND output_stream IS NOT NULL",
						 viewid, 0, 1, row_append_oid, &result);
	return result != NIL ? linitial_oid(result) : InvalidOid;
}

/* is stream relid where a view emits its closed windows? */
bool
catalog_stream_is_emit_output(Oid relid)
{
	return has_catalog_table("lateness_views") &&
		catalog_query_oid("SELECT 1 FROM stream_ext.lateness_views WHERE output_stream = $1",
						  relid, 0) > 0;
}

/*
 * The continuous views whose recorded definition names stream relid: its
 * own, and those joining it (their materialization depends on it).
 */
List *
catalog_views_naming_stream(Oid relid)
{
	List	   *result = NIL;

	catalog_rows_oid("SELECT v.view::pg_catalog.oid FROM stream_ext.view_catalog v"
					 " WHERE v.stream = $1"
					 "    OR EXISTS (SELECT FROM pg_catalog.pg_depend d"
					 "                WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
					 "                  AND d.objid = v.matrel"
					 "                  AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
					 "                  AND d.refobjid = $1)"
					 " ORDER BY 1",
					 relid, 0, 0, row_append_oid, &result);
	return result;
}

/*
 * Is the installed stream_ext the version of this module (the default)?
 * CATALOG_WRITE: a new snapshot, which sees an ALTER EXTENSION of this
 * transaction.
 */
bool
catalog_extension_is_current(void)
{
	return catalog_exec("SELECT 1 FROM pg_catalog.pg_extension e"
						" JOIN pg_catalog.pg_available_extensions a ON a.name = e.extname"
						" WHERE e.extname = 'stream_ext' AND e.extversion = a.default_version",
						NULL, CATALOG_WRITE, 0, NULL, NULL) > 0;
}

/* every stream */
List *
catalog_all_streams(void)
{
	List	   *result = NIL;

	catalog_exec("SELECT stream::pg_catalog.oid FROM stream_ext.stream_catalog ORDER BY 1",
				 NULL, 0, 0, row_append_oid, &result);
	return result;
}

/* the streams in schema nspid */
List *
catalog_streams_in_schema(Oid nspid)
{
	List	   *result = NIL;

	catalog_rows_oid("SELECT s.stream::pg_catalog.oid FROM stream_ext.stream_catalog s"
					 " JOIN pg_catalog.pg_class c ON c.oid = s.stream"
					 " WHERE c.relnamespace = $1 ORDER BY 1",
					 nspid, 0, 0, row_append_oid, &result);
	return result;
}

/*
 * Text column (a name of ours, not a user's) of continuous view viewid's
 * catalog row becomes value; what names it in the error.
 */
static void
set_view_text(Oid viewid, const char *column, const char *value, const char *what)
{
	CatalogArgs args = {0};

	arg_oid(&args, viewid);
	arg_text(&args, value);
	catalog_write_one(psprintf("UPDATE stream_ext.view_catalog SET %s = $2 WHERE view = $1",
							   column),
					  &args, what, viewid);
}

/* continuous view viewid's recorded definition becomes definition */
void
catalog_set_view_definition(Oid viewid, const char *definition)
{
	set_view_text(viewid, "definition", definition, "the definition of continuous view");
}

/* the owners of the continuous views of stream relid */
List *
catalog_view_owners(Oid relid)
{
	List	   *result = NIL;

	/* continuous transforms read every row of their stream too */
	catalog_rows_oid(has_transform_catalog() ?
					 "SELECT c.relowner FROM stream_ext.view_catalog v"
					 " JOIN pg_catalog.pg_class c ON c.oid = v.view"
					 " WHERE v.stream = $1"
					 " UNION SELECT c.relowner FROM stream_ext.transform_catalog t"
					 " JOIN pg_catalog.pg_class c ON c.oid = t.transform"
					 " WHERE t.stream = $1" :
					 "SELECT DISTINCT c.relowner FROM stream_ext.view_catalog v"
					 " JOIN pg_catalog.pg_class c ON c.oid = v.view"
					 " WHERE v.stream = $1",
					 relid, 0, 0, row_append_oid, &result);
	return result;
}

/*
 * A new stream; retain = false: one that stores no rows (no retention
 * either).  Only create_stream() of 0.3 passes false, so a module newer than
 * the installed script never names the retain column before it exists.
 */
void
catalog_insert_stream(Oid relid, bool retain)
{
	catalog_query_oid(retain ?
					  "INSERT INTO stream_ext.stream_catalog (stream) VALUES ($1)" :
					  "INSERT INTO stream_ext.stream_catalog (stream, retain, retention)"
					  " VALUES ($1, false, NULL)",
					  relid, CATALOG_WRITE | CATALOG_AS_OWNER);
}

/* the elements of a text[] datum, as a List of C strings */
static List *
text_array_to_list(Datum array)
{
	List	   *result = NIL;
	Datum	   *elems;
	int			nelems;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
		result = lappend(result, TextDatumGetCString(elems[i]));
	return result;
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
	CatalogArgs args = {0};
	Datum	   *auxs = palloc(sizeof(Datum) * (list_length(aux_tables) + 1));
	int			naux = 0;
	ListCell   *lc;

	foreach(lc, aux_tables)
		auxs[naux++] = ObjectIdGetDatum(lfirst_oid(lc));
	arg_oid(&args, viewid);
	arg_oid(&args, streamid);
	arg_oid(&args, matrelid);
	arg_text(&args, definition);
	arg_text(&args, maintain_sql);
	arg_datum(&args, TEXTARRAYOID, text_list_to_array(distinct_sql), false);
	arg_datum(&args, OIDARRAYOID,
			  PointerGetDatum(construct_array(auxs, naux, OIDOID, sizeof(Oid),
											  true, TYPALIGN_INT)), false);
	catalog_write_one("INSERT INTO stream_ext.view_catalog"
					  " (view, stream, matrel, aux_tables, definition, maintain_sql, distinct_sql, timezone)"
					  " VALUES ($1, $2, $3, $7::pg_catalog.regclass[], $4, $5, $6,"
					  " pg_catalog.current_setting('TimeZone'))",
					  &args, "continuous view", viewid);
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
	CatalogArgs args = {0};

	if (!catalog_has_windows())
		catalog_report_needs_update("time windows");
	arg_oid(&args, viewid);
	arg_text(&args, kind);
	arg_text(&args, size);
	arg_text(&args, slide);
	arg_text(&args, step);
	arg_text(&args, time_column);
	arg_text(&args, window_column);
	arg_text(&args, expire_sql);
	catalog_write_one("UPDATE stream_ext.view_catalog SET window_kind = $2,"
					  " window_size = $3::pg_catalog.interval,"
					  " window_slide = $4::pg_catalog.interval,"
					  " window_step = $5::pg_catalog.interval,"
					  " time_column = $6, window_column = $7, expire_sql = $8"
					  " WHERE view = $1",
					  &args, "the window of continuous view", viewid);
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
	CatalogArgs args = {0};

	arg_oid(&args, viewid);
	arg_oid(&args, deltaid);
	arg_text(&args, compact_sql);
	catalog_write_one("UPDATE stream_ext.view_catalog SET delta = $2, compact_sql = $3"
					  " WHERE view = $1",
					  &args, "the delta of continuous view", viewid);
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
 * The same, for an SQL function given viewid: an error (42809) if it is not
 * a continuous view and, with must_own, if the current user does not own
 * it.  Strings in the current memory context.
 */
void
catalog_get_view(Oid viewid, ViewCatalogEntry *entry, bool must_own)
{
	if (!lookup_view(false, viewid, entry, CurrentMemoryContext))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view", get_rel_name(viewid))));
	if (must_own && !pg_class_ownercheck(viewid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_VIEW, get_rel_name(viewid));
}

/*
 * Forget continuous view viewid: its row in view_catalog (and with it, by
 * their foreign keys, its sessions, lateness, watermark and late rows) and
 * in invalid_objects.  For CREATE OR REPLACE (ddl/replace_view.c), which
 * keeps the view itself.
 */
void
catalog_forget_view(Oid viewid)
{
	catalog_query_oid("DELETE FROM stream_ext.view_catalog WHERE view = $1",
					  viewid, CATALOG_WRITE | CATALOG_AS_OWNER);
	if (has_catalog_table("invalid_objects"))
		catalog_query_oid("DELETE FROM stream_ext.invalid_objects WHERE object = $1",
						  viewid, CATALOG_WRITE | CATALOG_AS_OWNER);
	/* a join of two streams: its second stream and statements (query/stream_joins.c) */
	if (has_catalog_table("stream_joins"))
		catalog_query_oid("DELETE FROM stream_ext.stream_joins WHERE object = $1",
						  viewid, CATALOG_WRITE | CATALOG_AS_OWNER);
}

/*
 * The tables stream_ext keeps for continuous view or transform relid: the
 * materialization and side tables of a view, the output table of a
 * transform.
 */
List *
catalog_view_parts(Oid relid)
{
	List	   *result = NIL;

	catalog_rows_oid(has_transform_catalog() ?
					 "SELECT matrel::pg_catalog.oid FROM stream_ext.view_catalog WHERE view = $1"
					 " UNION ALL SELECT a::pg_catalog.oid FROM stream_ext.view_catalog v,"
					 "   pg_catalog.unnest(v.aux_tables) a WHERE v.view = $1"
					 " UNION ALL SELECT output_table::pg_catalog.oid FROM stream_ext.transform_catalog"
					 " WHERE transform = $1 AND output_table IS NOT NULL" :
					 "SELECT matrel::pg_catalog.oid FROM stream_ext.view_catalog WHERE view = $1"
					 " UNION ALL SELECT a::pg_catalog.oid FROM stream_ext.view_catalog v,"
					 "   pg_catalog.unnest(v.aux_tables) a WHERE v.view = $1",
					 relid, 0, 0, row_append_oid, &result);
	return result;
}

/*
 * The recorded definition (a SELECT) of continuous view viewid, in the
 * caller's memory context, and its stream in *streamid; NULL if viewid is
 * none.
 */
static void
row_definition(HeapTuple tup, TupleDesc desc, void *arg)
{
	ViewDefinitionEntry *entry = arg;
	bool		isnull;

	entry->definition = SPI_getvalue(tup, desc, 1);
	entry->streamid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
}

char *
catalog_view_definition(Oid viewid, Oid *streamid)
{
	ViewDefinitionEntry entry = {0};

	if (catalog_rows_oid("SELECT definition, stream::pg_catalog.oid FROM stream_ext.view_catalog WHERE view = $1",
						 viewid, 0, 1, row_definition, &entry) == 0)
		return NULL;
	*streamid = entry.streamid;
	return entry.definition;
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
	List	   *result = NIL;

	catalog_rows_oid(has_transform_catalog() ?
					 "SELECT stream::oid FROM stream_ext.view_catalog WHERE view = $1"
					 " UNION ALL SELECT stream::oid FROM stream_ext.transform_catalog"
					 " WHERE transform = $1" :
					 "SELECT stream::oid FROM stream_ext.view_catalog WHERE view = $1",
					 relid, 0, 1, row_append_oid, &result);
	return result != NIL ? linitial_oid(result) : InvalidOid;
}

/* row_fn of lookup_views(): a ViewCatalogEntry appended to the List * in *arg */
static void
row_view_entry(HeapTuple tup, TupleDesc desc, void *arg)
{
	List	  **result = arg;
	ViewCatalogEntry *entry = palloc0(sizeof(ViewCatalogEntry));
	bool		isnull;
	ArrayType  *arr;
	Datum	   *elems;
	int			nelems;

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
	entry->query_sql = SPI_getvalue(tup, desc, 13);
	entry->has_ttl = DatumGetBool(SPI_getbinval(tup, desc, 14, &isnull)) && !isnull;
	entry->distinct_sql = NIL;
	arr = DatumGetArrayTypeP(SPI_getbinval(tup, desc, 5, &isnull));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
		entry->distinct_sql = lappend(entry->distinct_sql,
									  TextDatumGetCString(elems[i]));
	*result = lappend(*result, entry);
}

/*
 * The continuous views whose column (view, matrel or stream) is relid, in
 * the order of their materializations' OIDs, as ViewCatalogEntry * in mcxt;
 * read with the latest snapshot (catalog_read_latest_begin()).
 */
static List *
lookup_views(const char *column, Oid relid, MemoryContext mcxt)
{
	List	   *result = NIL;
	const char *window_columns;
	const char *notify = view_catalog_has_notify() ? "v.notify" : "NULL::pg_catalog.text";
	const char *delta = catalog_has_delta() ? "v.delta::pg_catalog.oid, v.compact_sql" :
		"NULL::pg_catalog.oid, NULL::pg_catalog.text";
	char	   *sql;
	MemoryContext old;

	/* sliding windows: expiry statement, and its step in microseconds */
	window_columns = catalog_has_windows() ?
		"v.expire_sql, (pg_catalog.date_part('epoch', v.window_step) * 1000000)::pg_catalog.int8" :
		"NULL::pg_catalog.text, NULL::pg_catalog.int8";

	sql = psprintf("SELECT v.view::oid, v.stream::oid, c.relowner,"
				   " v.maintain_sql, v.distinct_sql, v.timezone, v.matrel::oid, %s, %s, %s,"
				   " %s, %s"
				   " FROM stream_ext.view_catalog v"
				   " JOIN pg_catalog.pg_class c ON c.oid = v.view"
				   " WHERE v.%s = $1 ORDER BY v.matrel::oid, v.view::oid",
				   window_columns, notify, delta,
				   "v.definition",
				   /* TTL matters to views with a delta (compact.c), all 0.3 */
				   catalog_has_delta() ? "v.ttl_sql IS NOT NULL" : "false",
				   column);
	/* the entries, their strings and the list in mcxt */
	old = MemoryContextSwitchTo(mcxt);
	catalog_rows_oid(sql, relid, CATALOG_LATEST, 0, row_view_entry, &result);
	MemoryContextSwitchTo(old);
	pfree(sql);
	return result;
}

static bool
lookup_view(bool by_matrel, Oid relid, ViewCatalogEntry *entry,
			MemoryContext mcxt)
{
	List	   *views = lookup_views(by_matrel ? "matrel" : "view", relid, mcxt);

	if (views == NIL)
		return false;
	*entry = *(ViewCatalogEntry *) linitial(views);
	return true;
}

/*
 * The continuous view whose delta is deltaid (query/rollup.c: the upstream
 * of the roll-ups fed by that delta); false if none.
 */
bool
catalog_view_of_delta(Oid deltaid, ViewCatalogEntry *entry, MemoryContext mcxt)
{
	List	   *views;

	if (!catalog_has_delta())
		return false;
	views = lookup_views("delta", deltaid, mcxt);
	if (views == NIL)
		return false;
	*entry = *(ViewCatalogEntry *) linitial(views);
	return true;
}

/* the continuous view whose side table (count(DISTINCT)) is auxid, or InvalidOid */
Oid
catalog_view_of_side_table(Oid auxid)
{
	List	   *result = NIL;

	catalog_rows_oid("SELECT view::pg_catalog.oid FROM stream_ext.view_catalog"
					 " WHERE $1::pg_catalog.regclass = ANY (aux_tables)",
					 auxid, CATALOG_LATEST, 1, row_append_oid, &result);
	return result != NIL ? linitial_oid(result) : InvalidOid;
}

/* the continuous views of stream streamid (ViewCatalogEntry *, in mcxt) */
List *
catalog_views_of_stream(Oid streamid, MemoryContext mcxt)
{
	return lookup_views("stream", streamid, mcxt);
}

/*
 * Forget streams and views that no longer exist.  Called after DDL that
 * may have dropped some (DROP TABLE/VIEW/SCHEMA/OWNED, with or without
 * CASCADE); PostgreSQL's dependencies already dropped the objects.
 */
uint64
catalog_remove_orphans(void)
{
	const int	flags = CATALOG_WRITE | CATALOG_AS_OWNER;
	uint64		views;

	views = catalog_exec("DELETE FROM stream_ext.view_catalog v WHERE NOT EXISTS"
						 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = v.view)",
						 NULL, flags, 0, NULL, NULL);
	if (has_transform_catalog())
		views += catalog_exec("DELETE FROM stream_ext.transform_catalog t WHERE NOT EXISTS"
							  " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = t.transform)",
							  NULL, flags, 0, NULL, NULL);
	/* 0.3: stream-stream joins (query/stream_joins.c) */
	if (has_catalog_table("stream_joins"))
		catalog_exec("DELETE FROM stream_ext.stream_joins j WHERE NOT EXISTS"
					 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = j.object)",
					 NULL, flags, 0, NULL, NULL);
	/* 0.3: views and transforms no longer maintained (privileges.c) */
	if (has_catalog_table("invalid_objects"))
		catalog_exec("DELETE FROM stream_ext.invalid_objects i WHERE NOT EXISTS"
					 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = i.object)",
					 NULL, flags, 0, NULL, NULL);
	/* 0.3: rebuilds beside a view dropped with it (ddl/rebuild.c) */
	if (has_catalog_table("rebuilds"))
		/* one its worker holds is left to it: it waits for our locks */
		catalog_exec("DELETE FROM stream_ext.rebuilds WHERE ctid = ANY (ARRAY("
					 "SELECT r.ctid FROM stream_ext.rebuilds r WHERE NOT EXISTS"
					 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = r.view)"
					 " FOR UPDATE SKIP LOCKED))",
					 NULL, flags, 0, NULL, NULL);
	catalog_exec("DELETE FROM stream_ext.stream_catalog s WHERE NOT EXISTS"
				 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.stream)",
				 NULL, flags, 0, NULL, NULL);
	return views;
}

/* WITH (ttl, ttl_column) of a view just recorded; ttl_sql: its statement */
void
catalog_set_view_ttl(Oid viewid, Interval *ttl, const char *ttl_column,
					 const char *ttl_sql)
{
	CatalogArgs args = {0};

	arg_oid(&args, viewid);
	arg_datum(&args, INTERVALOID, PointerGetDatum(ttl), ttl == NULL);
	arg_text(&args, ttl_column);
	arg_text(&args, ttl_sql);
	catalog_write_one("UPDATE stream_ext.view_catalog SET ttl = $2, ttl_column = $3, ttl_sql = $4"
					  " WHERE view = $1",
					  &args, "the TTL of continuous view", viewid);
}

/* has continuous view viewid a TTL?  an allowed_lateness? */
static bool
view_has(Oid viewid, const char *sql)
{
	return catalog_rows_oid(sql, viewid, 0, 1, NULL, NULL) > 0;
}

bool
catalog_view_has_ttl(Oid viewid)
{
	return view_has(viewid, "SELECT FROM stream_ext.view_catalog WHERE view = $1 AND ttl_sql IS NOT NULL");
}

bool
catalog_view_has_lateness(Oid viewid)
{
	return has_catalog_table("lateness_views") &&
		view_has(viewid, "SELECT FROM stream_ext.lateness_views WHERE view = $1");
}

/*
 * ALTER VIEW v SET (option = value) (ddl/alter_view.c): the catalog value
 * that maintenance reads; (Datum) 0 stores NULL.  option is ttl, notify
 * (view_catalog) or allowed_lateness (lateness_views).
 */
void
catalog_update_view_option(Oid viewid, const char *option, Oid type, Datum value)
{
	CatalogArgs args = {0};
	const char *table = strcmp(option, "allowed_lateness") == 0 ?
		"lateness_views" : "view_catalog";

	arg_oid(&args, viewid);
	arg_datum(&args, type, value, value == (Datum) 0);
	catalog_write_one(psprintf("UPDATE stream_ext.%s SET %s = $2 WHERE view = $1",
							   table, quote_identifier(option)),
					  &args, psprintf("option %s of continuous view", option), viewid);
}

/* stream_ext.set_retention(): NULL keeps raw rows */
void
catalog_set_stream_retention(Oid relid, Interval *retention)
{
	CatalogArgs args = {0};

	arg_oid(&args, relid);
	arg_datum(&args, INTERVALOID, PointerGetDatum(retention), retention == NULL);
	catalog_write_one("UPDATE stream_ext.stream_catalog SET retention = $2 WHERE stream = $1",
					  &args, "the retention of stream", relid);
}

/* ---- housekeeping: run_maintenance(), expire_sliding() ----------------- */

static void
row_housekeeping_view(HeapTuple tup, TupleDesc desc, void *arg)
{
	List	  **result = arg;
	HousekeepingView *view = palloc0(sizeof(HousekeepingView));
	bool		isnull;
	Datum		ttl;

	view->viewid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	view->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	view->timezone = SPI_getvalue(tup, desc, 3);
	ttl = SPI_getbinval(tup, desc, 4, &isnull);
	if (!isnull)
	{
		view->ttl = datumCopy(ttl, false, sizeof(Interval));
		view->ttl_sql = SPI_getvalue(tup, desc, 5);
	}
	view->expire_sql = SPI_getvalue(tup, desc, 6);
	view->session = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));
	*result = lappend(*result, view);
}

/*
 * Every continuous view (viewid InvalidOid) or the one view viewid, with
 * what housekeeping does to it, in the order of their OIDs; whoever owns
 * them.
 */
List *
catalog_housekeeping_views(Oid viewid)
{
	List	   *result = NIL;

	catalog_rows_oid("SELECT v.view::pg_catalog.oid, c.relowner, v.timezone, v.ttl, v.ttl_sql, v.expire_sql,"
					 " sv.view IS NOT NULL"
					 " FROM stream_ext.view_catalog v"
					 " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) v.view"
					 " LEFT JOIN stream_ext.session_views sv ON sv.view OPERATOR(pg_catalog.=) v.view"
					 " WHERE $1 IS NULL OR v.view OPERATOR(pg_catalog.=) $1"
					 " ORDER BY 1",
					 viewid, 0, 0, row_housekeeping_view, &result);
	return result;
}

static void
row_retention_stream(HeapTuple tup, TupleDesc desc, void *arg)
{
	List	  **result = arg;
	RetentionStream *stream = palloc0(sizeof(RetentionStream));
	bool		isnull;

	stream->relid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	stream->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	stream->retention = datumCopy(SPI_getbinval(tup, desc, 3, &isnull), false,
								  sizeof(Interval));
	stream->qualname = SPI_getvalue(tup, desc, 4);
	*result = lappend(*result, stream);
}

/* every stream with a retention (set_retention()), in the order of their OIDs */
List *
catalog_streams_with_retention(void)
{
	List	   *result = NIL;

	/* a rebuild's backfill still needs the rows (ddl/rebuild.c) */
	const char *rebuilding = has_catalog_table("rebuilds") ?
		" AND NOT EXISTS (SELECT 1 FROM stream_ext.rebuilds r"
		" WHERE r.stream OPERATOR(pg_catalog.=) s.stream AND r.state = 'running')" : "";

	catalog_exec(psprintf("SELECT s.stream::pg_catalog.oid, c.relowner, s.retention,"
						  " pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.'"
						  " OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname)"
						  " FROM stream_ext.stream_catalog s"
						  " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.stream"
						  " JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace"
						  " WHERE s.retention IS NOT NULL%s ORDER BY 1", rebuilding),
				 NULL, 0, 0, row_retention_stream, &result);
	return result;
}

/* ---- continuous transforms (maintain/transform.c) ---------------------- */

/* WITH (notify = 'channel') of a continuous view just recorded */
void
catalog_set_view_notify(Oid viewid, const char *channel)
{
	set_view_text(viewid, "notify", channel, "the notify channel of continuous view");
}

/*
 * One transform creation at a time (until commit): transforms that write
 * to streams must not form a cycle, and catalog_transform_path() sees
 * every other one only if none is being created meanwhile.
 */
void
catalog_lock_transforms(void)
{
	LockRelationOid(get_relname_relid("transform_catalog",
									  get_namespace_oid("stream_ext", false)),
					ShareRowExclusiveLock);
}

/*
 * How rows written into stream from flow, through continuous transforms
 * and their output streams, into stream to: "from -> t1 -> s1 -> t2 -> to",
 * or NULL if they do not.
 */
char *
catalog_transform_path(Oid from, Oid to)
{
	CatalogArgs args = {0};
	char	   *path = NULL;

	arg_oid(&args, from);
	arg_oid(&args, to);
	catalog_exec("WITH RECURSIVE walk(stream, seen, path) AS ("
				 " SELECT $1::pg_catalog.regclass, ARRAY[$1::pg_catalog.oid],"
				 "        $1::pg_catalog.regclass::pg_catalog.text"
				 " UNION ALL"
				 " SELECT t.output_stream, w.seen || t.output_stream::pg_catalog.oid,"
				 "        w.path || ' -> ' || t.transform::pg_catalog.text"
				 "        || ' -> ' || t.output_stream::pg_catalog.text"
				 "   FROM walk w JOIN stream_ext.transform_catalog t ON t.stream = w.stream"
				 "  WHERE t.output_stream IS NOT NULL"
				 "    AND t.output_stream::pg_catalog.oid <> ALL (w.seen))"
				 " SELECT path FROM walk WHERE stream = $2::pg_catalog.regclass LIMIT 1",
				 &args, 0, 1, row_first_text, &path);
	return path;
}

/* a new continuous transform; output_stream or output_table InvalidOid */
void
catalog_insert_transform(Oid transform, Oid stream, Oid output_stream,
						 Oid output_table, const char *definition,
						 const char *columns, const char *select_sql,
						 const char *notify)
{
	CatalogArgs args = {0};

	arg_oid(&args, transform);
	arg_oid(&args, stream);
	arg_oid(&args, output_stream);
	arg_oid(&args, output_table);
	arg_text(&args, definition);
	arg_text(&args, columns);
	arg_text(&args, select_sql);
	arg_text(&args, notify);
	catalog_write_one("INSERT INTO stream_ext.transform_catalog"
					  " (transform, stream, output_stream, output_table, definition,"
					  "  columns, select_sql, notify, timezone)"
					  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
					  " pg_catalog.current_setting('TimeZone'))",
					  &args, "continuous transform", transform);
}

static void
row_transform_entry(HeapTuple tup, TupleDesc desc, void *arg)
{
	TransformCatalogEntry *entry = arg;
	bool		isnull;

	entry->streamid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	entry->targetid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	entry->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	entry->columns = SPI_getvalue(tup, desc, 4);
	entry->select_sql = SPI_getvalue(tup, desc, 5);
	entry->notify = SPI_getvalue(tup, desc, 6);
	entry->timezone = SPI_getvalue(tup, desc, 7);
}

/*
 * Fill *entry for continuous transform transform, as committed now (for its
 * trigger: see catalog_read_latest_begin()); strings in mcxt.  Returns
 * false if there is none.
 */
bool
catalog_lookup_transform(Oid transform, TransformCatalogEntry *entry,
						 MemoryContext mcxt)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	uint64		n;

	entry->transform = transform;
	n = catalog_rows_oid("SELECT t.stream::oid, coalesce(t.output_stream, t.output_table)::oid,"
						 " c.relowner, t.columns, t.select_sql, t.notify, t.timezone"
						 " FROM stream_ext.transform_catalog t"
						 " JOIN pg_catalog.pg_class c ON c.oid = t.transform"
						 " WHERE t.transform = $1",
						 transform, CATALOG_LATEST, 1, row_transform_entry, entry);
	MemoryContextSwitchTo(old);
	return n == 1;
}

/* ---- session windows (windows/sessions.c) ------------------------------ */

/* the session parameters of a view just created */
void
catalog_insert_session_view(Oid viewid, const char *time_column,
							const char *session_gap, const char *compact_sql)
{
	CatalogArgs args = {0};

	arg_oid(&args, viewid);
	arg_datum(&args, NAMEOID, DirectFunctionCall1(namein, CStringGetDatum(time_column)), false);
	arg_text(&args, session_gap);
	arg_text(&args, compact_sql);
	catalog_write_one("INSERT INTO stream_ext.session_views (view, time_column, session_gap, compact_sql)"
					  " VALUES ($1::pg_catalog.regclass, $2, $3::pg_catalog.interval, $4)",
					  &args, "the session window of continuous view", viewid);
}

/* the compaction statement of a session-window view, or NULL if it is none */
char *
catalog_session_compact_sql(Oid viewid)
{
	char	   *result = NULL;

	catalog_rows_oid("SELECT compact_sql FROM stream_ext.session_views WHERE view = $1::pg_catalog.regclass",
					 viewid, 0, 1, row_first_text, &result);
	return result;
}

/* ---- allowed_lateness and watermarks (windows/lateness.c) -------------- */

/* the lateness of a view just created; output_stream InvalidOid if none */
void
catalog_insert_lateness_view(Oid viewid, const char *allowed_lateness,
							 const char *late_sql, const char *max_sql,
							 const char *emit_sql, Oid output_stream)
{
	CatalogArgs args = {0};

	arg_oid(&args, viewid);
	arg_text(&args, allowed_lateness);
	arg_text(&args, late_sql);
	arg_text(&args, max_sql);
	arg_text(&args, emit_sql);
	arg_oid(&args, output_stream);
	catalog_write_one("INSERT INTO stream_ext.lateness_views (view, allowed_lateness, late_sql, max_sql,"
					  " emit_sql, output_stream)"
					  " VALUES ($1::pg_catalog.regclass, $2::pg_catalog.interval, $3, $4, $5,"
					  " $6::pg_catalog.regclass)",
					  &args, "the allowed_lateness of continuous view", viewid);
}

static void
row_lateness_entry(HeapTuple tup, TupleDesc desc, void *arg)
{
	LatenessCatalogEntry *entry = arg;
	bool		isnull;

	entry->lateness = *DatumGetIntervalP(SPI_getbinval(tup, desc, 1, &isnull));
	entry->late_sql = SPI_getvalue(tup, desc, 2);
	entry->max_sql = SPI_getvalue(tup, desc, 3);
	entry->emit_sql = SPI_getvalue(tup, desc, 4);	/* NULL if none */
}

/*
 * Fill *entry with the lateness of view viewid (strings in mcxt); false if
 * it has none (or the database is not updated to 0.2 yet).
 */
bool
catalog_lookup_lateness(Oid viewid, LatenessCatalogEntry *entry,
						MemoryContext mcxt)
{
	MemoryContext old;
	uint64		n;

	if (!has_catalog_table("lateness_views"))
		return false;
	old = MemoryContextSwitchTo(mcxt);
	n = catalog_rows_oid("SELECT allowed_lateness, late_sql, max_sql, emit_sql FROM stream_ext.lateness_views"
						 " WHERE view = $1::pg_catalog.regclass",
						 viewid, 0, 1, row_lateness_entry, entry);
	MemoryContextSwitchTo(old);
	return n == 1;
}

/*
 * The view's newest event time becomes at least ts (isnull: none yet, the
 * row is still made).
 */
void
catalog_raise_max_event_time(Oid viewid, Datum ts, bool isnull)
{
	CatalogArgs args = {0};

	arg_oid(&args, viewid);
	arg_datum(&args, TIMESTAMPTZOID, ts, isnull);
	catalog_write_one("INSERT INTO stream_ext.watermarks AS w (view, max_event_time)"
					  " VALUES ($1::pg_catalog.regclass, $2)"
					  " ON CONFLICT (view) DO UPDATE SET max_event_time ="
					  " GREATEST(w.max_event_time, excluded.max_event_time)",
					  &args, "the watermark of continuous view", viewid);
}

static void
row_first_timestamptz(HeapTuple tup, TupleDesc desc, void *arg)
{
	NullableDatum *result = arg;

	result->value = SPI_getbinval(tup, desc, 1, &result->isnull);
}

/*
 * The view's watermark now (max event time minus allowed_lateness);
 * *isnull when it has seen no event time yet.  Not a read-only query, so
 * that it sees what this command just wrote.  lock: FOR UPDATE, as a batch
 * needs it.
 */
TimestampTz
catalog_watermark(Oid viewid, bool lock, bool *isnull)
{
	NullableDatum wm = {0, true};

	catalog_rows_oid(lock ?
					 "SELECT w.max_event_time OPERATOR(pg_catalog.-) l.allowed_lateness"
					 " FROM stream_ext.watermarks w JOIN stream_ext.lateness_views l USING (view)"
					 " WHERE w.view = $1::pg_catalog.regclass FOR UPDATE OF w" :
					 "SELECT w.max_event_time OPERATOR(pg_catalog.-) l.allowed_lateness"
					 " FROM stream_ext.watermarks w JOIN stream_ext.lateness_views l USING (view)"
					 " WHERE w.view = $1::pg_catalog.regclass",
					 viewid, CATALOG_WRITE | CATALOG_AS_OWNER, 1,
					 row_first_timestamptz, &wm);
	*isnull = wm.isnull;
	return wm.isnull ? 0 : DatumGetTimestampTz(wm.value);
}

/* ---- distributed views (query/distributed.c) --------------------------- */

static void
row_view_definition(HeapTuple tup, TupleDesc desc, void *arg)
{
	ViewDefinitionEntry *entry = arg;
	bool		isnull;

	entry->definition = SPI_getvalue(tup, desc, 1);
	entry->matrelid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	entry->streamid = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	entry->overlapping_window = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
	entry->session = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
	entry->lateness = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
}

/*
 * The stored definition of continuous view viewid and what its plan cannot
 * be rebuilt from; false if it is none.
 */
bool
catalog_lookup_view_definition(Oid viewid, ViewDefinitionEntry *entry)
{
	return catalog_rows_oid("SELECT definition, matrel::oid, stream::oid, "
							"window_kind IS NOT NULL AND window_kind <> 'tumbling', "
							"EXISTS (SELECT FROM stream_ext.session_views s WHERE s.view = c.view), "
							"EXISTS (SELECT FROM stream_ext.lateness_views l WHERE l.view = c.view) "
							"FROM stream_ext.view_catalog c WHERE c.view = $1",
							viewid, 0, 1, row_view_definition, entry) == 1;
}

/* ---- invalid views and transforms (maintain/privileges.c) -------------- */

/* relid (a continuous view or transform) is no longer maintained */
void
catalog_insert_invalid_object(Oid relid, const char *kind, const char *reason)
{
	CatalogArgs args = {0};

	arg_oid(&args, relid);
	arg_text(&args, kind);
	arg_text(&args, reason);
	catalog_exec("INSERT INTO stream_ext.invalid_objects (object, kind, reason)"
				 " VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
				 &args, CATALOG_WRITE | CATALOG_AS_OWNER, 0, NULL, NULL);
}

/*
 * The triggers running function funcid (stream_ext.maintain_views()) on
 * streams that have no continuous view left (ddl/create_view.c drops them).
 * Not read-only: sees the catalog rows this command removed.
 */
List *
catalog_triggers_without_views(Oid funcid)
{
	List	   *result = NIL;

	/* the second stream of a stream-stream join keeps its trigger too */
	catalog_rows_oid(has_catalog_table("stream_joins") ?
					 "SELECT t.oid FROM pg_catalog.pg_trigger t"
					 " WHERE t.tgfoid = $1 AND NOT EXISTS"
					 " (SELECT 1 FROM stream_ext.view_catalog v WHERE v.stream = t.tgrelid)"
					 " AND NOT EXISTS (SELECT 1 FROM stream_ext.stream_joins j"
					 " JOIN stream_ext.view_catalog v ON v.view = j.object"
					 " WHERE j.right_stream = t.tgrelid)" :
					 "SELECT t.oid FROM pg_catalog.pg_trigger t"
					 " WHERE t.tgfoid = $1 AND NOT EXISTS"
					 " (SELECT 1 FROM stream_ext.view_catalog v WHERE v.stream = t.tgrelid)",
					 funcid, CATALOG_WRITE, 0, row_append_oid, &result);
	return result;
}

/* ---- what a stream's views and transforms are made of (ddl/restore.c) -- */

static void
row_stream_object(HeapTuple tup, TupleDesc desc, void *arg)
{
	List	  **result = arg;
	StreamObject *obj = palloc0(sizeof(StreamObject));
	bool		isnull;
	Datum		aux;

	obj->objid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	obj->transform = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
	obj->relid = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	if (isnull)
		obj->relid = InvalidOid;
	aux = SPI_getbinval(tup, desc, 4, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		int			nelems;

		deconstruct_array(DatumGetArrayTypeP(aux), OIDOID, sizeof(Oid), true,
						  TYPALIGN_INT, &elems, NULL, &nelems);
		for (int i = 0; i < nelems; i++)
			obj->aux_tables = lappend_oid(obj->aux_tables, DatumGetObjectId(elems[i]));
	}
	obj->sql = SPI_getvalue(tup, desc, 5);
	obj->deltaid = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
	if (isnull)
		obj->deltaid = InvalidOid;
	*result = lappend(*result, obj);
}

/*
 * The continuous views of stream streamid, then its continuous transforms,
 * each with the relations it is made of and its statement.  Not read-only:
 * after pg_restore's CREATE TRIGGER it sees all this transaction wrote.
 */
List *
catalog_stream_objects(Oid streamid)
{
	List	   *result = NIL;

	char	   *sql;

	/*
	 * transforms came in 0.2, deltas in 0.3: an installation not yet updated
	 * has no catalog of them
	 */
	sql = psprintf("SELECT view::pg_catalog.oid, false, matrel::pg_catalog.oid,"
				   " aux_tables::pg_catalog.oid[], maintain_sql, %s"
				   " FROM stream_ext.view_catalog WHERE stream = $1%s",
				   catalog_has_delta() ? "delta::pg_catalog.oid" : "NULL::pg_catalog.oid",
				   has_transform_catalog() ?
				   " UNION ALL SELECT transform::pg_catalog.oid, true, output_table::pg_catalog.oid,"
				   " NULL, select_sql, NULL"
				   " FROM stream_ext.transform_catalog WHERE stream = $1" : "");
	catalog_rows_oid(sql, streamid, CATALOG_WRITE, 0, row_stream_object, &result);
	pfree(sql);
	return result;
}

/*
 * Read stream_ext.invalid_objects (maintain/privileges.c's set of invalid
 * views and transforms): reader->locked() once its lock is taken, then
 * reader->row() for each row (kind and reason "" when NULL).  Never waits
 * for the lock: this runs in the planner hook, after the query's own
 * relations are locked, and DROP EXTENSION locks this table before others
 * -- waiting here could deadlock with it.  Only a role that may drop,
 * truncate or lock the table holds a conflicting lock.  Returns
 * CATALOG_SCAN_NO_TABLE (not installed, or older than 0.3) or
 * CATALOG_SCAN_BUSY (locked by another: nothing read) or CATALOG_SCAN_DONE.
 */
CatalogScanResult
catalog_scan_invalid_objects(const InvalidObjectsReader *reader)
{
	Oid			relid = catalog_invalid_objects_relid();
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(relid))
		return CATALOG_SCAN_NO_TABLE;
	if (!ConditionalLockRelationOid(relid, AccessShareLock))
		return CATALOG_SCAN_BUSY;
	rel = table_open(relid, NoLock);
	reader->locked(reader->arg);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		obj = heap_getattr(tup, 1, RelationGetDescr(rel), &isnull);
		Datum		kind;
		Datum		reason;
		bool		kind_null;
		bool		reason_null;

		if (isnull)
			continue;
		kind = heap_getattr(tup, 2, RelationGetDescr(rel), &kind_null);
		reason = heap_getattr(tup, 3, RelationGetDescr(rel), &reason_null);
		reader->row(DatumGetObjectId(obj),
					kind_null ? "" : TextDatumGetCString(kind),
					reason_null ? "" : TextDatumGetCString(reason),
					reader->arg);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return CATALOG_SCAN_DONE;
}

/* stream_ext.invalid_objects, or InvalidOid (not installed, or older) */
Oid
catalog_invalid_objects_relid(void)
{
	Oid			nspid = get_namespace_oid("stream_ext", true);

	return OidIsValid(nspid) ? get_relname_relid("invalid_objects", nspid) : InvalidOid;
}

/* ---- stream-stream joins (query/stream_joins.c) -------------------------- */

/* a stream-stream join just created: its row in stream_ext.stream_joins */
void
catalog_insert_stream_join(Oid object, Oid left_stream, Oid right_stream,
						   Interval *window, const char *right_sql,
						   List *right_distinct_sql)
{
	CatalogArgs args = {0};

	catalog_require_table("stream_joins", "joins of two streams");
	arg_oid(&args, object);
	arg_oid(&args, left_stream);
	arg_oid(&args, right_stream);
	arg_datum(&args, INTERVALOID, IntervalPGetDatum(window), false);
	arg_text(&args, right_sql);
	arg_datum(&args, TEXTARRAYOID, text_list_to_array(right_distinct_sql), false);
	catalog_write_one("INSERT INTO stream_ext.stream_joins"
					  " (object, left_stream, right_stream, join_window, right_sql, right_distinct_sql)"
					  " VALUES ($1, $2, $3, $4, $5, $6)",
					  &args, "the stream join", object);
}

static void
row_stream_join(HeapTuple tup, TupleDesc desc, void *arg)
{
	List	  **result = arg;
	StreamJoinEntry *entry = palloc0(sizeof(StreamJoinEntry));
	bool		isnull;

	entry->object = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	entry->left_stream = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	entry->right_stream = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	entry->right_sql = SPI_getvalue(tup, desc, 4);
	entry->right_distinct_sql = text_array_to_list(SPI_getbinval(tup, desc, 5, &isnull));
	entry->transform = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
	entry->window = *DatumGetIntervalP(SPI_getbinval(tup, desc, 7, &isnull));
	entry->retain = *DatumGetIntervalP(SPI_getbinval(tup, desc, 8, &isnull));
	entry->left = DatumGetBool(SPI_getbinval(tup, desc, 9, &isnull));
	*result = lappend(*result, entry);
}

/*
 * The stream-stream joins (StreamJoinEntry *, in mcxt, in the order of their
 * objects' OIDs) that streamid is a side of, or, with object valid, that
 * one object's join; read with the latest snapshot.  NIL before ALTER
 * EXTENSION UPDATE.
 */
List *
catalog_stream_joins(Oid streamid, Oid object, MemoryContext mcxt)
{
	List	   *result = NIL;
	CatalogArgs args = {0};
	MemoryContext old;
	char	   *sql;

	if (!has_catalog_table("stream_joins"))
		return NIL;
	arg_oid(&args, OidIsValid(object) ? object : streamid);
	sql = psprintf("SELECT j.object::oid, j.left_stream::oid, j.right_stream::oid,"
						  " j.right_sql, j.right_distinct_sql,"
						  " NOT EXISTS (SELECT 1 FROM stream_ext.view_catalog v WHERE v.view = j.object),"
						  " j.join_window, %s"
						  " FROM stream_ext.stream_joins j WHERE %s ORDER BY j.object::oid",
				   /* a LEFT JOIN keeps rows until they close: window + lateness */
				   has_catalog_table("stream_left_joins") ?
				   "j.join_window OPERATOR(pg_catalog.+) COALESCE((SELECT l.allowed_lateness"
				   " FROM stream_ext.stream_left_joins l WHERE l.object = j.object),"
				   " '0'::pg_catalog.interval), EXISTS (SELECT 1 FROM stream_ext.stream_left_joins l"
				   " WHERE l.object = j.object)" :
				   "j.join_window, false",
						  OidIsValid(object) ? "j.object = $1" :
						  "j.left_stream = $1 OR j.right_stream = $1");
	old = MemoryContextSwitchTo(mcxt);
	catalog_exec(sql, &args, CATALOG_LATEST, 0, row_stream_join, &result);
	MemoryContextSwitchTo(old);
	return result;
}

/* ---- LEFT JOINs of two streams (query/sjoin_left.c) ---------------------- */

/* a LEFT JOIN of two streams just created: its row in stream_left_joins */
void
catalog_insert_left_join(Oid object, Interval *lateness, const char *close_sql,
						 List *close_distinct_sql, const char *late_sql,
						 const char *max_sql, Datum max_time, bool max_isnull)
{
	CatalogArgs args = {0};

	catalog_require_table("stream_left_joins", "LEFT JOINs of two streams");
	arg_oid(&args, object);
	arg_datum(&args, INTERVALOID, IntervalPGetDatum(lateness), false);
	arg_text(&args, close_sql);
	arg_datum(&args, TEXTARRAYOID, text_list_to_array(close_distinct_sql), false);
	arg_text(&args, late_sql);
	arg_text(&args, max_sql);
	arg_datum(&args, TIMESTAMPTZOID, max_time, max_isnull);
	catalog_write_one("INSERT INTO stream_ext.stream_left_joins"
					  " (object, allowed_lateness, close_sql, close_distinct_sql, late_sql,"
					  " max_sql, max_time) VALUES ($1, $2, $3, $4, $5, $6, $7)",
					  &args, "the LEFT JOIN", object);
}

static void
row_left_join(HeapTuple tup, TupleDesc desc, void *arg)
{
	LeftJoinEntry *entry = arg;
	bool		isnull;

	entry->close_sql = SPI_getvalue(tup, desc, 1);
	entry->close_distinct_sql = text_array_to_list(SPI_getbinval(tup, desc, 2, &isnull));
	entry->late_sql = SPI_getvalue(tup, desc, 3);
	entry->max_sql = SPI_getvalue(tup, desc, 4);
}

/* the statements of LEFT JOIN object, in mcxt; false if it is no LEFT JOIN */
bool
catalog_left_join(Oid object, LeftJoinEntry *entry, MemoryContext mcxt)
{
	MemoryContext old;
	uint64		n;

	memset(entry, 0, sizeof(LeftJoinEntry));
	if (!has_catalog_table("stream_left_joins"))
		return false;
	old = MemoryContextSwitchTo(mcxt);
	n = catalog_rows_oid("SELECT close_sql, close_distinct_sql, late_sql, max_sql"
						 " FROM stream_ext.stream_left_joins WHERE object = $1",
						 object, CATALOG_LATEST, 1, row_left_join, entry);
	MemoryContextSwitchTo(old);
	return n == 1;
}

/*
 * The watermark of LEFT JOIN object (the second stream's newest time minus
 * allowed_lateness; *isnull before any), read with the latest snapshot:
 * the batches of the second stream that wrote it have committed (the
 * join's lock orders them before the caller), or are the caller's own.
 */
TimestampTz
catalog_left_join_watermark(Oid object, bool *isnull)
{
	NullableDatum wm = {0, true};

	catalog_rows_oid("SELECT max_time OPERATOR(pg_catalog.-) allowed_lateness"
					 " FROM stream_ext.stream_left_joins WHERE object = $1",
					 object, CATALOG_LATEST, 1, row_first_timestamptz, &wm);
	*isnull = wm.isnull;
	return wm.isnull ? 0 : DatumGetTimestampTz(wm.value);
}

/*
 * A batch of the second stream of LEFT JOIN object: raise its newest time
 * to batch_max (never lower it) and add the pairs it refused; returns the
 * new watermark.  With the latest snapshot, at any isolation level: the
 * join's lock serializes these batches, so the row found is the newest
 * (a transaction snapshot would find an older one at REPEATABLE READ and
 * fail to update it).
 */
TimestampTz
catalog_left_join_advance(Oid object, Datum batch_max, bool max_isnull,
						  int64 late_pairs, bool *isnull)
{
	Oid			types[3] = {OIDOID, TIMESTAMPTZOID, INT8OID};
	Datum		values[3] = {ObjectIdGetDatum(object), max_isnull ? (Datum) 0 : batch_max,
	Int64GetDatum(late_pairs)};
	char		nulls[3] = {' ', max_isnull ? 'n' : ' ', ' '};
	MemoryContext caller = CurrentMemoryContext;
	SeRunAs		runas;
	SPIPlanPtr	plan;
	NullableDatum wm = {0, true};
	int			rc;

	se_run_as_catalog_owner(&runas);
	SPI_connect();
	plan = SPI_prepare("UPDATE stream_ext.stream_left_joins"
					   " SET max_time = GREATEST(max_time, $2),"
					   " late_pairs = late_pairs OPERATOR(pg_catalog.+) $3"
					   " WHERE object = $1"
					   " RETURNING max_time OPERATOR(pg_catalog.-) allowed_lateness",
					   3, types);
	if (plan == NULL)
		elog(ERROR, "stream_ext: could not prepare the watermark's update: %s",
			 SPI_result_code_string(SPI_result));
	rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
							  InvalidSnapshot, false, false, 0);
	if (rc != SPI_OK_UPDATE_RETURNING || SPI_processed != 1)
		elog(ERROR, "stream_ext: could not record the watermark of LEFT JOIN %u", object);
	{
		MemoryContext old = MemoryContextSwitchTo(caller);

		row_first_timestamptz(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, &wm);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	se_restore(&runas);
	*isnull = wm.isnull;
	return wm.isnull ? 0 : DatumGetTimestampTz(wm.value);
}

/* ---- shared storage (ddl/shared_storage.c) ------------------------------ */

/* is stream_ext.shared_storage there (0.3)? */
bool
catalog_has_shared_storage(void)
{
	return has_catalog_table("shared_storage_members");
}

/*
 * The prefix of view viewid's columns in its shared storage (palloc'd, ""
 * for the first member), or NULL when the view has its own tables.
 */
char *
catalog_shared_prefix(Oid viewid)
{
	char	   *prefix = NULL;

	if (!catalog_has_shared_storage())
		return NULL;
	catalog_rows_oid("SELECT prefix FROM stream_ext.shared_storage_members WHERE view = $1",
					 viewid, CATALOG_LATEST, 1, row_first_text, &prefix);
	return prefix;
}

/* is relid the materialization or the delta of a shared storage? */
bool
catalog_is_shared_table(Oid relid)
{
	return catalog_has_shared_storage() &&
		catalog_query_oid("SELECT 1 FROM stream_ext.shared_storage"
						  " WHERE matrel = $1 OR delta = $1", relid, 0) > 0;
}

void
catalog_insert_shared_storage(Oid matrelid, Oid deltaid, Oid streamid)
{
	CatalogArgs args = {0};

	arg_oid(&args, matrelid);
	arg_oid(&args, deltaid);
	arg_oid(&args, streamid);
	catalog_write_one("INSERT INTO stream_ext.shared_storage (matrel, delta, stream)"
					  " VALUES ($1, $2, $3)", &args, "the shared storage", matrelid);
}

/* the number of the next member of the storage of matrelid, taken */
int
catalog_shared_take_member(Oid matrelid)
{
	char	   *n = NULL;

	catalog_rows_oid("UPDATE stream_ext.shared_storage SET next_member = next_member + 1"
					 " WHERE matrel = $1 RETURNING next_member - 1",
					 matrelid, CATALOG_WRITE | CATALOG_AS_OWNER, 0, row_first_text, &n);
	if (n == NULL)
		elog(ERROR, "stream_ext: no shared storage with materialization %u", matrelid);
	return atoi(n);
}

void
catalog_insert_shared_member(Oid viewid, Oid matrelid, const char *prefix)
{
	CatalogArgs args = {0};

	arg_oid(&args, viewid);
	arg_oid(&args, matrelid);
	arg_text(&args, prefix);
	catalog_write_one("INSERT INTO stream_ext.shared_storage_members (view, matrel, prefix)"
					  " VALUES ($1, $2, $3)", &args, "the shared storage member", viewid);
}

/* the member views of the storage of matrelid, oldest member first */
List *
catalog_shared_members(Oid matrelid)
{
	List	   *result = NIL;

	catalog_rows_oid("SELECT m.view::pg_catalog.oid FROM stream_ext.shared_storage_members m"
					 " JOIN pg_catalog.pg_class c ON c.oid = m.view"
					 " WHERE m.matrel = $1"
					 " ORDER BY pg_catalog.length(m.prefix), m.prefix",
					 matrelid, CATALOG_WRITE, 0, row_append_oid, &result);
	return result;
}

/* the oid of the first row of catalog statement sql over relid, or InvalidOid */
static Oid
first_oid(const char *sql, Oid relid, int flags)
{
	List	   *result = NIL;

	catalog_rows_oid(sql, relid, flags, 1, row_append_oid, &result);
	return result ? linitial_oid(result) : InvalidOid;
}

/* the delta of the storage of matrelid, or InvalidOid */
Oid
catalog_shared_delta(Oid matrelid)
{
	return first_oid("SELECT delta::pg_catalog.oid FROM stream_ext.shared_storage WHERE matrel = $1",
					 matrelid, CATALOG_WRITE);
}

/* the member recording the storage's compaction (its compact_sql), or InvalidOid */
Oid
catalog_shared_leader(Oid matrelid)
{
	return first_oid("SELECT view::pg_catalog.oid FROM stream_ext.view_catalog"
					 " WHERE matrel = $1 AND compact_sql IS NOT NULL",
					 matrelid, CATALOG_LATEST);
}

/* set view viewid's maintenance statement (unless NULL) and compaction statement */
void
catalog_set_view_statements(Oid viewid, const char *maintain_sql, const char *compact_sql)
{
	CatalogArgs args = {0};

	arg_oid(&args, viewid);
	arg_text(&args, maintain_sql);
	arg_text(&args, compact_sql);
	catalog_write_one("UPDATE stream_ext.view_catalog SET maintain_sql = COALESCE($2, maintain_sql),"
					  " compact_sql = $3 WHERE view = $1",
					  &args, "the statements of continuous view", viewid);
}

/*
 * After a DROP: forget the members whose view is gone; the storages that
 * lost a member or their materialization (their matrel OIDs).
 */
List *
catalog_shared_forget_dropped(void)
{
	List	   *result = NIL;

	if (!catalog_has_shared_storage())
		return NIL;
	catalog_exec("WITH gone AS (DELETE FROM stream_ext.shared_storage_members m WHERE NOT EXISTS"
				 " (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = m.view) RETURNING m.matrel)"
				 " SELECT DISTINCT matrel::pg_catalog.oid FROM gone UNION"
				 " SELECT s.matrel::pg_catalog.oid FROM stream_ext.shared_storage s"
				 " WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.matrel)"
				 " OR NOT EXISTS (SELECT 1 FROM stream_ext.shared_storage_members m WHERE m.matrel = s.matrel)",
				 NULL, CATALOG_WRITE | CATALOG_AS_OWNER, 0, row_append_oid, &result);
	return result;
}

/* forget member viewid; the materialization of its storage, or InvalidOid */
Oid
catalog_shared_forget_member(Oid viewid)
{
	if (!catalog_has_shared_storage())
		return InvalidOid;
	return first_oid("DELETE FROM stream_ext.shared_storage_members WHERE view = $1"
					 " RETURNING matrel::pg_catalog.oid",
					 viewid, CATALOG_WRITE | CATALOG_AS_OWNER);
}

void
catalog_delete_shared_storage(Oid matrelid)
{
	catalog_rows_oid("DELETE FROM stream_ext.shared_storage WHERE matrel = $1", matrelid,
					 CATALOG_WRITE | CATALOG_AS_OWNER, 0, NULL, NULL);
}

/* the compaction statement of the storage of matrelid: set, read */
void
catalog_set_shared_compact(Oid matrelid, const char *compact_sql)
{
	CatalogArgs args = {0};

	arg_oid(&args, matrelid);
	arg_text(&args, compact_sql);
	catalog_write_one("UPDATE stream_ext.shared_storage SET compact_sql = $2 WHERE matrel = $1",
					  &args, "the compaction of the shared storage", matrelid);
}

char *
catalog_shared_compact(Oid matrelid)
{
	char	   *sql = NULL;

	catalog_rows_oid("SELECT compact_sql FROM stream_ext.shared_storage WHERE matrel = $1",
					 matrelid, CATALOG_WRITE, 1, row_first_text, &sql);
	return sql;
}
