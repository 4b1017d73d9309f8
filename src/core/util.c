/*-------------------------------------------------------------------------
 *
 * util.c
 *	  Small helpers that several subsystems use: a relation's owner,
 *	  recording a dependency, short error context for generated statements,
 *	  the relation a trigger argument names.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_trigger.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "catalog/index.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "parser/parse_utilcmd.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"

#include "core/util.h"

/* set by _PG_init: loaded through shared_preload_libraries */
bool		stream_ext_preloaded = false;

/* the owner of relation relid (pg_class.relowner) */
Oid
se_relation_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/* "schema"."name" of relation relid, quoted as needed */
char *
se_qualified_relname(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* record that object (classid, objid) depends on (refclassid, refobjid) */
void
se_record_dependency(Oid classid, Oid objid, Oid refclassid, Oid refobjid,
					 DependencyType type)
{
	ObjectAddress obj;
	ObjectAddress ref;

	ObjectAddressSet(obj, classid, objid);
	ObjectAddressSet(ref, refclassid, refobjid);
	recordDependencyOn(&obj, &ref, type);
}

/*
 * Does object (classid, objid), or one of its columns, depend on
 * (refclassid, refobjid)?  refobjsubid: on that column of it (0: on the
 * whole object), or -1: on any.  Reads pg_depend as of now (the catalog
 * snapshot), so it sees dependencies recorded before the last
 * CommandCounterIncrement().
 */
bool
se_dependency_exists(Oid classid, Oid objid, Oid refclassid, Oid refobjid,
					 int32 refobjsubid)
{
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(classid));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(objid));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 2, key);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		found = dep->refclassid == refclassid && dep->refobjid == refobjid &&
			(refobjsubid < 0 || dep->refobjsubid == refobjsubid);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return found;
}

/*
 * Run fn(arg) in an internal subtransaction, starting in memory context
 * body_cxt (NULL: the caller's).  Returns NULL when it succeeded and the
 * subtransaction committed; else the subtransaction is rolled back, the
 * error state is clean and the error is returned, copied into errcxt (its
 * message never NULL).  Either way the caller's memory context and
 * resource owner are current again.  The one implementation of "try this,
 * and go on if it fails" for run_maintenance()'s items, the pg_cron job
 * and the Kafka source's decoding and inserts.
 */
ErrorData *
se_try_in_subxact(SeSubxactFn fn, void *arg, MemoryContext body_cxt,
				  MemoryContext errcxt)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(body_cxt ? body_cxt : oldcxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(errcxt);
		e = CopyErrorData();
		FlushErrorState();
		if (e->message == NULL)
			e->message = pstrdup("unknown error");
		edata = e;
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	return edata;
}

/*
 * CREATE TRIGGER trigname {BEFORE | AFTER} events ON relid
 * [REFERENCING NEW TABLE AS newtable] FOR EACH STATEMENT
 * EXECUTE FUNCTION stream_ext.funcname(arg), through CreateTrigger() as
 * ProcessUtility would run it, but without SQL text, without a pass through
 * the utility hook, and with the trigger's OID returned rather than looked
 * up by name.  timing is TRIGGER_TYPE_BEFORE or TRIGGER_TYPE_AFTER, events
 * TRIGGER_TYPE_INSERT etc.; arg and newtable may be NULL.  The trigger is
 * an ordinary one (pg_dump dumps it), created with the current user's
 * privileges: TRIGGER on the relation, EXECUTE on the function.
 */
Oid
se_create_statement_trigger(Oid relid, const char *trigname, int16 timing,
							int16 events, const char *funcname,
							const char *arg, const char *newtable)
{
	CreateTrigStmt *stmt = makeNode(CreateTrigStmt);
	ObjectAddress address;

	stmt->trigname = pstrdup(trigname);
	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(relid)),
								  get_rel_name(relid), -1);
	stmt->funcname = list_make2(makeString("stream_ext"), makeString(pstrdup(funcname)));
	stmt->args = arg ? list_make1(makeString(pstrdup(arg))) : NIL;
	stmt->row = false;
	stmt->timing = timing;
	stmt->events = events;
	if (newtable)
	{
		TriggerTransition *tt = makeNode(TriggerTransition);

		tt->name = pstrdup(newtable);
		tt->isNew = true;
		tt->isTable = true;
		stmt->transitionRels = list_make1(tt);
	}

	address = CreateTrigger(stmt, NULL, relid, InvalidOid, InvalidOid,
							InvalidOid, InvalidOid, InvalidOid, NULL,
							false, false);
	CommandCounterIncrement();
	return address.objectId;
}

/*
 * CREATE [UNIQUE] INDEX ON relid USING method (columns) [NULLS NOT
 * DISTINCT], through DefineIndex() as PostgreSQL's CREATE INDEX runs it:
 * no SQL text to parse, no name to look up again, no pass through the
 * utility hooks.  The index is named as CREATE INDEX without a name would
 * name it (ChooseIndexName()).  Columns are names (char *); method NULL is
 * btree.  Returns the index's OID.
 */
Oid
se_create_index(Oid relid, List *columns, const char *method, bool unique,
				bool nulls_not_distinct)
{
	IndexStmt  *stmt = makeNode(IndexStmt);
	ObjectAddress address;
	ListCell   *lc;

	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(relid)),
								  get_rel_name(relid), -1);
	stmt->accessMethod = pstrdup(method ? method : DEFAULT_INDEX_TYPE);
	foreach(lc, columns)
	{
		IndexElem  *elem = makeNode(IndexElem);

		elem->name = pstrdup((char *) lfirst(lc));
		elem->ordering = SORTBY_DEFAULT;
		elem->nulls_ordering = SORTBY_NULLS_DEFAULT;
		stmt->indexParams = lappend(stmt->indexParams, elem);
	}
	stmt->unique = unique;
	stmt->nulls_not_distinct = nulls_not_distinct;
	stmt = transformIndexStmt(relid, stmt, NULL);
	address = DefineIndex(relid, stmt, InvalidOid, InvalidOid, InvalidOid,
						  false, true, true, false, false);
	CommandCounterIncrement();
	return address.objectId;
}

/*
 * The guard trigger of a materialization or a transform's table: writes
 * only through maintenance (stream_ext_guard_materialization()).
 */
void
se_create_guard_trigger(Oid relid)
{
	(void) se_create_statement_trigger(relid, "stream_ext_guard", TRIGGER_TYPE_BEFORE,
									   TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE |
									   TRIGGER_TYPE_DELETE | TRIGGER_TYPE_TRUNCATE,
									   "guard_materialization", NULL, NULL);
}

/* Has r stream_ext's guard trigger (materialization, delta, side table)? */
bool
se_rel_is_guarded(Relation r)
{
	if (r->trigdesc == NULL)
		return false;
	for (int i = 0; i < r->trigdesc->numtriggers; i++)
	{
		if (strcmp(r->trigdesc->triggers[i].tgname, "stream_ext_guard") == 0)
			return true;
	}
	return false;
}

/* Is relid a table guarded by stream_ext?  The caller holds a lock on it. */
bool
se_is_guarded_table(Oid relid)
{
	Relation	r = relation_open(relid, NoLock);
	bool		guarded = se_rel_is_guarded(r);

	relation_close(r, NoLock);
	return guarded;
}

/* run one generated statement through SPI (connected); errors are ERROR */
void
se_run_sql(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc < 0)
		elog(ERROR, "stream_ext: SPI_execute failed (%s): %s",
			 SPI_result_code_string(rc), sql);
}

/*
 * The CONTEXT of an error in one of stream_ext's generated statements.  SPI
 * reports the whole statement there (SQL statement "..."), or as QUERY
 * for an error with a position: tens of kB for a wide view.  Called in a
 * PG_CATCH block, this rethrows the error with the context line of the
 * first of STATEMENTS (a List of char *, not in ErrorContext) found in
 * it replaced by a line formatted from FMT; other lines, e.g. those of a
 * user's function that failed inside the statement, stay.  CXT: the memory
 * context to copy the error into (the caller's, not ErrorContext).
 */
void
se_rethrow_short_context(MemoryContext cxt, List *statements, const char *fmt,...)
{
	ErrorData  *edata;
	ListCell   *lc;
	StringInfoData whatbuf;
	char	   *what;

	/* the catch block runs in ErrorContext, which FlushErrorState() resets */
	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	initStringInfo(&whatbuf);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&whatbuf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&whatbuf, needed);
	}
	what = whatbuf.data;

	foreach(lc, statements)
	{
		const char *sql = lfirst(lc);
		char	   *hit;

		if (edata->internalquery && strstr(edata->internalquery, sql))
		{
			/* an error with a position in the statement: drop the statement */
			edata->internalquery = NULL;
			edata->internalpos = 0;
			edata->context = edata->context ?
				psprintf("%s\n%s", edata->context, what) : pstrdup(what);
			break;
		}
		hit = edata->context ? strstr(edata->context, sql) : NULL;
		if (hit)
		{
			StringInfoData buf;
			char	   *line = hit;
			char	   *end = strchr(hit + strlen(sql), '\n');

			while (line > edata->context && line[-1] != '\n')
				line--;
			initStringInfo(&buf);
			appendBinaryStringInfo(&buf, edata->context, line - edata->context);
			appendStringInfoString(&buf, what);
			if (end)
				appendStringInfoString(&buf, end);
			edata->context = buf.data;
			break;
		}
	}
	ReThrowError(edata);
}

/*
 * The relation a trigger of stream_ext names in its argument (written
 * schema-qualified when the trigger was created), or InvalidOid.  Triggers
 * run as whoever inserts, who need not have USAGE on the schema of a view
 * someone else built over the stream: the name is resolved through the
 * catalogs, without the inserting user's rights on that schema.  What the
 * trigger then does runs as the object's owner.
 */
Oid
relid_from_trigger_arg(const char *qualname)
{
	char	   *schema;
	char	   *relname;
	Oid			nspid;

	DeconstructQualifiedName(stringToQualifiedNameList(qualname), &schema, &relname);
	if (schema == NULL)
		return RelnameGetRelid(relname);
	nspid = get_namespace_oid(schema, true);
	return OidIsValid(nspid) ? get_relname_relid(relname, nspid) : InvalidOid;
}

/* OPERATOR(schema.name) of operator opid */
char *
se_operator_sql(Oid opid)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opid));
	Form_pg_operator op;
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opid);
	op = (Form_pg_operator) GETSTRUCT(tup);
	result = psprintf("OPERATOR(%s.%s)",
					  quote_identifier(get_namespace_name(op->oprnamespace)),
					  NameStr(op->oprname));
	ReleaseSysCache(tup);
	return result;
}
