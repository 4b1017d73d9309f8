/*-------------------------------------------------------------------------
 *
 * restore.c
 *	  Repair after pg_restore.  pg_dump does not dump dependencies, so a
 *	  restored database lacks those that tie materializations (and deltas) to their
 *	  views, maintenance triggers to theirs, streams to the extension and
 *	  views to the tables they join.  The utility hook (ddl/utility.c)
 *	  calls ddl_restore_dependencies() after each CREATE TRIGGER of one of
 *	  stream_ext's trigger functions on a stream, which pg_restore runs
 *	  after the data of stream_ext's catalog is loaded.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"

#include "core/catalog.h"
#include "ddl/restore.h"
#include "query/joins.h"

/*
 * Does the one argument of trigger tg name relation rel?  Compared as the
 * schema-qualified name the trigger was created with, not with
 * to_regclass(), which would need USAGE on the schema of every view of the
 * stream, some of which may belong to other roles.
 */
#define TRIGGER_ARG_NAMES(tg, rel) \
	"pg_catalog.convert_from(pg_catalog.substring(" tg ".tgargs, 1," \
	"  pg_catalog.length(" tg ".tgargs) - 1), pg_catalog.current_setting('server_encoding'))" \
	" OPERATOR(pg_catalog.=) (SELECT pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.'" \
	"   OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname)" \
	"  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace" \
	" WHERE c.oid = " rel ")"

/* the dependencies of a stream's transforms, for ddl_restore_dependencies() */
static const char *transform_dependencies =
		"  UNION ALL"
		"  SELECT 'pg_catalog.pg_class', t.output_table::pg_catalog.oid,"
		"         'pg_catalog.pg_class', t.transform::pg_catalog.oid, 'i'"
		"    FROM stream_ext.transform_catalog t WHERE t.stream = $1 AND t.output_table IS NOT NULL"
		"  UNION ALL"
		"  SELECT 'pg_catalog.pg_class', t.transform::pg_catalog.oid,"
		"         'pg_catalog.pg_class', t.stream::pg_catalog.oid, 'n'"
		"    FROM stream_ext.transform_catalog t WHERE t.stream = $1"
		"  UNION ALL"
		"  SELECT 'pg_catalog.pg_trigger', g.oid, 'pg_catalog.pg_class', t.transform::pg_catalog.oid, 'a'"
		"    FROM stream_ext.transform_catalog t JOIN pg_catalog.pg_trigger g ON g.tgrelid = t.stream"
		"    JOIN pg_catalog.pg_proc p ON p.oid = g.tgfoid"
		"   WHERE t.stream = $1 AND p.proname = 'transform'"
		"     AND p.pronamespace = 'stream_ext'::pg_catalog.regnamespace"
		"     AND g.tgnargs = 1"
		"     AND " TRIGGER_ARG_NAMES("g", "t.transform");

/*
 * Record the dependencies of a stream and of its continuous views that are
 * missing.  pg_dump does not dump dependencies: after a restore the
 * materializations would no longer go with their views, the maintenance
 * triggers with theirs, the streams with the extension.  pg_restore
 * creates triggers after the data of stream_ext's catalog is loaded, so
 * the utility hook calls this after each CREATE TRIGGER running one of
 * stream_ext's trigger functions on a stream; on a stream created by
 * create_stream() and views created by CREATE VIEW it finds nothing to do.
 * Returns the number of dependencies recorded.
 */
int
ddl_restore_dependencies(Oid streamid)
{
	bool		has_transforms;
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(streamid)};
	int			rc;
	int			n = 0;

	/*
	 * Not read-only: SPI then takes a new snapshot after a command counter
	 * increment, which shows the trigger this CREATE TRIGGER has just made.
	 * With the statement's snapshot, the last trigger of a stream in the
	 * dump would never get its dependencies back.
	 */
	SPI_connect();
	/* transforms came in 0.2; a 0.1 installation has no catalog of them */
	has_transforms = OidIsValid(get_relname_relid("transform_catalog",
												  get_namespace_oid("stream_ext", false)));
	rc = SPI_execute_with_args(psprintf(
		"WITH v AS (SELECT view::pg_catalog.oid AS view, stream::pg_catalog.oid AS stream,"
		"                  matrel::pg_catalog.oid AS matrel, aux_tables, %s AS delta"
		"             FROM stream_ext.view_catalog WHERE stream = $1),"
		" want (classid, objid, refclassid, refobjid, deptype) AS ("
		"  SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, v.matrel,"
		"         'pg_catalog.pg_class'::pg_catalog.regclass, v.view, 'i' FROM v"
		"  UNION ALL"
		"  SELECT 'pg_catalog.pg_class', v.matrel, 'pg_catalog.pg_class', v.stream, 'n' FROM v"
		"  UNION ALL"
		"  SELECT 'pg_catalog.pg_class', v.delta, 'pg_catalog.pg_class', v.view, 'i' FROM v"
		"   WHERE v.delta IS NOT NULL"
		"  UNION ALL"
		"  SELECT 'pg_catalog.pg_class', a.aux::pg_catalog.oid, 'pg_catalog.pg_class', v.view, 'i'"
		"    FROM v, pg_catalog.unnest(v.aux_tables) AS a(aux)"
		"  UNION ALL"
		"  SELECT 'pg_catalog.pg_trigger', t.oid, 'pg_catalog.pg_class', v.view, 'a'"
		"    FROM v JOIN pg_catalog.pg_trigger t ON t.tgrelid = v.stream"
		"    JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid"
		"   WHERE p.proname = 'maintain'"
		"     AND p.pronamespace = 'stream_ext'::pg_catalog.regnamespace"
		"     AND t.tgnargs = 1"
		"     AND " TRIGGER_ARG_NAMES("t", "v.matrel")
		"%s"
		"  UNION ALL"
		"  SELECT 'pg_catalog.pg_class', s.stream::pg_catalog.oid, 'pg_catalog.pg_extension', e.oid, 'n'"
		"    FROM stream_ext.stream_catalog s, pg_catalog.pg_extension e"
		"   WHERE s.stream = $1 AND e.extname = 'stream_ext')"
		" SELECT w.classid::pg_catalog.oid, w.objid, w.refclassid::pg_catalog.oid, w.refobjid, w.deptype::pg_catalog.\"char\""
		"   FROM want w"
		"  WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d"
		"                     WHERE d.classid = w.classid AND d.objid = w.objid"
		"                       AND d.refclassid = w.refclassid AND d.refobjid = w.refobjid)",
		catalog_has_delta() ? "delta::pg_catalog.oid" : "NULL::pg_catalog.oid",
		has_transforms ? transform_dependencies : ""),
		1, argtypes, values, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext dependency lookup failed: %s", SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		ObjectAddress obj;
		ObjectAddress ref;

		ObjectAddressSet(obj, DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull)),
						 DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull)));
		ObjectAddressSet(ref, DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull)),
						 DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull)));
		recordDependencyOn(&obj, &ref,
						   (DependencyType) DatumGetChar(SPI_getbinval(tup, desc, 5, &isnull)));
		n++;
	}

	/* the tables joined by the stream's views and transforms (query/joins.c) */
	rc = SPI_execute_with_args(psprintf(
		"SELECT matrel::pg_catalog.oid, maintain_sql FROM stream_ext.view_catalog WHERE stream = $1%s",
		has_transforms ?
		" UNION ALL SELECT transform::pg_catalog.oid, select_sql"
		" FROM stream_ext.transform_catalog WHERE stream = $1" : ""),
		1, argtypes, values, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "stream_ext dependency lookup failed: %s", SPI_result_code_string(rc));
	{
		List	   *objids = NIL;
		List	   *sqls = NIL;
		uint64		nrows = SPI_processed;
		SPITupleTable *tuptable = SPI_tuptable;

		for (uint64 i = 0; i < nrows; i++)
		{
			bool		isnull;

			objids = lappend_oid(objids,
								 DatumGetObjectId(SPI_getbinval(tuptable->vals[i], tuptable->tupdesc, 1, &isnull)));
			sqls = lappend(sqls, SPI_getvalue(tuptable->vals[i], tuptable->tupdesc, 2));
		}
		for (int i = 0; i < list_length(objids); i++)
			n += joins_restore_dependencies(list_nth(sqls, i), list_nth_oid(objids, i));
	}
	SPI_finish();
	return n;
}
