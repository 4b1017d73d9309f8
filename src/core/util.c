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

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "core/util.h"

/* set by _PG_init: loaded through shared_preload_libraries */
bool		stream_ext_preloaded = false;

/* the owner of relation relid (pg_class.relowner) */
Oid
relation_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/* record that object (classid, objid) depends on (refclassid, refobjid) */
void
record_dependency(Oid classid, Oid objid, Oid refclassid, Oid refobjid,
				  DependencyType type)
{
	ObjectAddress obj;
	ObjectAddress ref;

	ObjectAddressSet(obj, classid, objid);
	ObjectAddressSet(ref, refclassid, refobjid);
	recordDependencyOn(&obj, &ref, type);
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
