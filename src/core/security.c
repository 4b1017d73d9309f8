/*-------------------------------------------------------------------------
 *
 * security.c
 *	  Who runs this, and may it write?
 *
 *	  Every statement stream_ext runs on someone's behalf goes through one
 *	  of three switches: se_run_as_owner() for user work (the object's
 *	  owner, security-restricted, settings pinned), se_run_as_catalog_owner()
 *	  for stream_ext's own tables (the extension's owner, for one fixed
 *	  statement) and se_run_as_role() where a fixed statement needs a given
 *	  role's rights (creating a trigger as the stream's owner, Kafka
 *	  catalogs).  se_pin_settings() is the one set of settings generated SQL
 *	  runs and is deparsed under.  se_maintenance_begin()/end() delimit
 *	  maintenance: the only code that opens the materializations' guard and
 *	  turns on the planner's partial-aggregate rewrite.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"

#include "core/security.h"

/* > 0 inside se_maintenance_begin()/se_maintenance_end() */
static int	maintenance_depth = 0;

static Oid
extension_owner(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("stream_ext"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"stream_ext\" is not installed in this database")));
	return owner;
}

/* set a GUC in the current nest level, unless it already has that value */
static void
pin(const char *name, const char *value)
{
	const char *current = GetConfigOption(name, false, false);

	if (current == NULL || strcmp(current, value) != 0)
		(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
}

int
se_pin_settings(const char *timezone)
{
	int			nestlevel = NewGUCNestLevel();

	pin("search_path", "pg_catalog");
	pin("DateStyle", "ISO, YMD");
	pin("IntervalStyle", "postgres");
	pin("extra_float_digits", "1");
	/* the tables stream_ext creates store their rows (storage/discard_am.c) */
	pin("default_table_access_method", "heap");
	if (timezone != NULL)
		pin("TimeZone", timezone);
	return nestlevel;
}

void
se_unpin_settings(int nestlevel)
{
	AtEOXact_GUC(true, nestlevel);
}

static void
switch_user(SeRunAs *ra, Oid role, int flags)
{
	GetUserIdAndSecContext(&ra->save_userid, &ra->save_sec);
	SetUserIdAndSecContext(role, ra->save_sec | flags);
	ra->nestlevel = 0;
}

void
se_run_as_owner(SeRunAs *ra, Oid owner, const char *timezone)
{
	switch_user(ra, owner,
				SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	ra->nestlevel = se_pin_settings(timezone);
}

void
se_run_as_catalog_owner(SeRunAs *ra)
{
	switch_user(ra, extension_owner(), SECURITY_LOCAL_USERID_CHANGE);
}

void
se_run_as_role(SeRunAs *ra, Oid role)
{
	switch_user(ra, role, SECURITY_LOCAL_USERID_CHANGE);
}

void
se_restore(SeRunAs *ra)
{
	if (ra->nestlevel > 0)
		se_unpin_settings(ra->nestlevel);
	SetUserIdAndSecContext(ra->save_userid, ra->save_sec);
}

void
se_maintenance_begin(void)
{
	maintenance_depth++;
}

void
se_maintenance_end(void)
{
	Assert(maintenance_depth > 0);
	maintenance_depth--;
}

bool
se_in_maintenance(void)
{
	return maintenance_depth > 0;
}
