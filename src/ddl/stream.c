/*-------------------------------------------------------------------------
 *
 * stream.c
 *	  Streams: append-only UNLOGGED staging tables that continuous views
 *	  read.  stream_ext.create_stream() and the trigger that keeps streams
 *	  append-only.  A stream is a heap table; one created with retain =>
 *	  false uses the access method stream_ext_discard instead
 *	  (storage/discard_am.c) and stores no rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_trigger.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "parser/parser.h"
#include "parser/scansup.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/varlena.h"

#include "core/catalog.h"
#include "core/util.h"
#include "ddl/stream.h"
#include "query/retract.h"
#include "storage/discard_am.h"

PG_FUNCTION_INFO_V1(stream_ext_create_stream);
PG_FUNCTION_INFO_V1(stream_ext_reject_stream_modification);

/* set while stream_ext itself deletes raw rows (retention) */
bool		stream_ext_deleting_raw_rows = false;

/*
 * Parse the user's column list on its own and check that it is nothing but
 * column definitions a staging table can have.  Returns the list of
 * ColumnDefs.
 */
static List *
parse_column_list(const char *columns)
{
	char	   *sql = psprintf("CREATE UNLOGGED TABLE stream_ext_columns (%s)", columns);
	List	   *raw;
	CreateStmt *stmt;
	ListCell   *lc;

	raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	if (list_length(raw) != 1 ||
		!IsA(((RawStmt *) linitial(raw))->stmt, CreateStmt))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid column list for a stream: \"%s\"", columns),
				 errhint("Give column definitions as in CREATE TABLE, for example 'url text, ts timestamptz'.")));
	stmt = (CreateStmt *) ((RawStmt *) linitial(raw))->stmt;
	if (stmt->inhRelations || stmt->partspec || stmt->partbound ||
		stmt->ofTypename || stmt->options || stmt->tablespacename ||
		stmt->accessMethod || stmt->oncommit != ONCOMMIT_NOOP ||
		stmt->relation->relpersistence != RELPERSISTENCE_UNLOGGED ||
		strcmp(stmt->relation->relname, "stream_ext_columns") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid column list for a stream: \"%s\"", columns),
				 errdetail("Only column definitions are allowed.")));
	if (stmt->tableElts == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a stream needs at least one column")));

	foreach(lc, stmt->tableElts)
	{
		Node	   *elt = lfirst(lc);
		ListCell   *lc2;

		if (!IsA(elt, ColumnDef))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("streams can only have column definitions"),
					 errdetail("Table constraints and LIKE clauses are not supported on streams.")));
		if (strcmp(((ColumnDef *) elt)->colname, STREAM_ARRIVAL_COLUMN) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_RESERVED_NAME),
					 errmsg("column name \"%s\" is reserved in streams", STREAM_ARRIVAL_COLUMN),
					 errdetail("stream_ext adds this column to every stream: the time each row arrived."),
					 errhint("Give the column another name.")));
		if (strcmp(((ColumnDef *) elt)->colname, SE_SIGN_COLUMN) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_RESERVED_NAME),
					 errmsg("column name \"%s\" is reserved in streams", SE_SIGN_COLUMN),
					 errdetail("stream_ext adds this column to changelog streams: +1 adds a row, -1 retracts one."),
					 errhint("Create the stream with stream_ext.create_stream(..., changelog => true).")));
		foreach(lc2, ((ColumnDef *) elt)->constraints)
		{
			Constraint *con = lfirst(lc2);

			switch (con->contype)
			{
				case CONSTR_NULL:
				case CONSTR_NOTNULL:
				case CONSTR_DEFAULT:
				case CONSTR_CHECK:
				case CONSTR_GENERATED:
					break;
				default:
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("column \"%s\" of a stream cannot have this constraint",
									((ColumnDef *) elt)->colname),
							 errdetail("Streams are append-only staging tables: only NOT NULL, DEFAULT, CHECK and generated columns are allowed.")));
			}
		}
	}
	/* MaxHeapAttributeNumber, less the column stream_ext adds */
	if (list_length(stmt->tableElts) >= MaxHeapAttributeNumber)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_COLUMNS),
				 errmsg("a stream can have at most %d columns", MaxHeapAttributeNumber - 1),
				 errdetail("Tables can have at most %d columns, and stream_ext adds the column \"%s\" to every stream.",
						   MaxHeapAttributeNumber, STREAM_ARRIVAL_COLUMN)));
	return stmt->tableElts;
}

/*
 * The identifier of part of a dotted name, as SplitIdentifierString() read
 * it from raw at offset start (after the opening quote of a quoted one),
 * before truncation: for the NOTICE PostgreSQL's parser gives on an
 * overlength identifier, which SplitIdentifierString() truncates silently.
 */
static void
notice_truncated_part(const char *raw, int start)
{
	StringInfoData ident;
	const char *p = raw + start;

	initStringInfo(&ident);
	if (start > 0 && raw[start - 1] == '"')
	{
		for (; *p && !(p[0] == '"' && p[1] != '"'); p++)
		{
			if (p[0] == '"')
				p++;			/* a doubled quote stands for one */
			appendStringInfoChar(&ident, *p);
		}
	}
	else
	{
		int			len = 0;
		char	   *down;

		while (p[len] && p[len] != '.' && !scanner_isspace(p[len]))
			len++;
		down = downcase_identifier(p, len, false, false);
		appendStringInfoString(&ident, down);
	}
	/* notices "identifier ... will be truncated to ..." if it is too long */
	truncate_identifier(ident.data, ident.len, true);
}

/*
 * The stream's name: a possibly qualified name as in SQL, resolved like
 * CREATE TABLE's.  Refused in stream_ext's own schema: what is in it goes
 * with the extension (DROP EXTENSION, pg_dump leaves it out).
 */
static RangeVar *
stream_name(text *name)
{
	char	   *raw = text_to_cstring(name);
	char	   *copy = pstrdup(raw);
	List	   *names;
	List	   *qualname = NIL;
	ListCell   *lc;
	RangeVar   *rv;
	Oid			nspid;

	if (!SplitIdentifierString(copy, '.', &names) || names == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid name syntax: \"%s\"", raw)));
	foreach(lc, names)
	{
		char	   *part = lfirst(lc);

		/* a part of NAMEDATALEN - 1 bytes may have been cut from a longer one */
		if (strlen(part) == NAMEDATALEN - 1)
			notice_truncated_part(raw, part - copy);
		qualname = lappend(qualname, makeString(part));
	}
	rv = makeRangeVarFromNameList(qualname);
	if (rv->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("streams cannot be temporary")));
	nspid = RangeVarGetCreationNamespace(rv);
	if (nspid == get_namespace_oid("stream_ext", true))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_SCHEMA_NAME),
				 errmsg("cannot create stream \"%s\" in schema \"stream_ext\"", rv->relname),
				 errdetail("Schema stream_ext belongs to the extension; objects in it are dropped with it and left out by pg_dump."),
				 errhint("Create the stream in another schema.")));
	return rv;
}

/* stream_ext_sign smallint NOT NULL DEFAULT 1 CHECK (stream_ext_sign IN (-1, 1)) */
static ColumnDef *
sign_column(void)
{
	List	   *raw = raw_parser("CREATE TABLE t (" SE_SIGN_COLUMN " pg_catalog.int2 NOT NULL DEFAULT 1"
								 " CHECK (" SE_SIGN_COLUMN " IN (-1, 1)))",
								 RAW_PARSE_DEFAULT);
	CreateStmt *stmt = (CreateStmt *) linitial_node(RawStmt, raw)->stmt;

	return linitial_node(ColumnDef, stmt->tableElts);
}

/*
 * stream_ext.create_stream(name text, columns text, retain boolean DEFAULT
 * true, changelog boolean DEFAULT false) RETURNS regclass.  Installations of
 * 0.2 and older call it with two arguments.
 *
 * A changelog stream (query/retract.c, docs/changelog.md) gets the column
 * stream_ext_sign smallint NOT NULL DEFAULT 1 CHECK (sign in (-1, 1)):
 * a row with -1 retracts a row added before.
 */
Datum
stream_ext_create_stream(PG_FUNCTION_ARGS)
{
	text	   *name;
	char	   *columns;
	RangeVar   *rv;
	CreateStmt *stmt;
	ColumnDef  *arrival;
	Constraint *def;
	PlannedStmt *wrapper;
	Oid			relid;
	ObjectAddress streamaddr;
	ObjectAddress extaddr;
	bool		retain = true;
	bool		changelog = false;

	if (!stream_ext_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stream_ext must be loaded via shared_preload_libraries")));
	/* not STRICT since 0.3: a NULL argument is a mistake, not "no stream" */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s of stream_ext.create_stream() must not be null",
						PG_ARGISNULL(0) ? "name" : "columns")));
	if (PG_NARGS() > 2)
	{
		if (PG_ARGISNULL(2))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("retain of stream_ext.create_stream() must not be null")));
		retain = PG_GETARG_BOOL(2);
	}
	if (PG_NARGS() > 3)
	{
		if (PG_ARGISNULL(3))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("changelog of stream_ext.create_stream() must not be null")));
		changelog = PG_GETARG_BOOL(3);
	}
	name = PG_GETARG_TEXT_PP(0);
	columns = text_to_cstring(PG_GETARG_TEXT_PP(1));

	rv = stream_name(name);
	rv->relpersistence = RELPERSISTENCE_UNLOGGED;

	stmt = makeNode(CreateStmt);
	stmt->relation = rv;
	stmt->tableElts = parse_column_list(columns);
	stmt->oncommit = ONCOMMIT_NOOP;
	/* named, not default_table_access_method: retention DELETEs heap rows */
	stmt->accessMethod = retain ? "heap" : DISCARD_AM_NAME;

	if (changelog)
		stmt->tableElts = lappend(stmt->tableElts, sign_column());

	/* the arrival-time column, filled at insert */
	def = makeNode(Constraint);
	def->contype = CONSTR_DEFAULT;
	def->location = -1;
	def->raw_expr = (Node *) makeFuncCall(list_make2(makeString("pg_catalog"),
													 makeString("clock_timestamp")),
										  NIL, COERCE_EXPLICIT_CALL, -1);
	arrival = makeColumnDef(STREAM_ARRIVAL_COLUMN, TIMESTAMPTZOID, -1, InvalidOid);
	arrival->is_not_null = true;
	arrival->constraints = list_make1(def);
	stmt->tableElts = lappend(stmt->tableElts, arrival);

	wrapper = makeNode(PlannedStmt);
	wrapper->commandType = CMD_UTILITY;
	wrapper->canSetTag = false;
	wrapper->utilityStmt = (Node *) stmt;
	wrapper->stmt_location = -1;
	wrapper->stmt_len = 0;
	ProcessUtility(wrapper, "(stream_ext.create_stream)", false,
				   PROCESS_UTILITY_SUBCOMMAND, NULL, NULL, None_Receiver, NULL);
	CommandCounterIncrement();

	relid = RangeVarGetRelid(rv, NoLock, false);

	(void) se_create_statement_trigger(relid, "stream_ext_append_only", TRIGGER_TYPE_BEFORE,
									   TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE,
									   "reject_stream_modification", NULL, NULL);

	/* DROP EXTENSION needs CASCADE while streams exist, and takes them along */
	ObjectAddressSet(streamaddr, RelationRelationId, relid);
	ObjectAddressSet(extaddr, ExtensionRelationId, get_extension_oid("stream_ext", false));
	recordDependencyOn(&streamaddr, &extaddr, DEPENDENCY_NORMAL);

	catalog_insert_stream(relid, retain);

	PG_RETURN_OID(relid);
}

/*
 * Statement-level BEFORE UPDATE OR DELETE trigger of every stream.
 */
Datum
stream_ext_reject_stream_modification(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("stream_ext.reject_stream_modification() must be called as a trigger")));

	if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) && stream_ext_deleting_raw_rows)
		return PointerGetDatum(NULL);

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s stream \"%s\"",
					TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? "UPDATE" : "DELETE FROM",
					RelationGetRelationName(trigdata->tg_relation)),
			 errdetail("Streams are append-only: rows can only be added with INSERT or COPY."),
			 errhint("TRUNCATE discards raw rows; continuous views keep their results.")));
	return PointerGetDatum(NULL);
}
