/*-------------------------------------------------------------------------
 *
 * util.c
 *	  Small helpers on PostgreSQL's own catalogs that several subsystems
 *	  use: a relation's owner, recording a dependency.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "utils/syscache.h"

#include "util.h"

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
