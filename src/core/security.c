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
 *	  runs and is deparsed under.  se_materialize_begin()/end() delimit
 *	  the materialize scope (a batch's statements, backfill, compaction):
 *	  the only code that opens the materializations' guard and turns on the
 *	  planner's partial-aggregate rewrite.  (Housekeeping -- TTL, retention,
 *	  run_maintenance() -- is another thing.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"

#include "core/security.h"

/* > 0 inside se_materialize_begin()/se_materialize_end() */
static int	materialize_depth = 0;

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

/*
 * The settings se_pin_settings() pins.  Their values are compared with the
 * session's through the variables themselves (found once per backend:
 * PostgreSQL's own settings never move), and set -- which parses the value
 * and pushes it on the GUC stack -- only where they differ.  The comparison
 * is what GetConfigOption()'s text would be compared with: the string of a
 * string setting, the value of an enum, integer or boolean one.
 */
typedef struct PinnedSetting
{
	const char *name;
	const char *value;			/* NULL: the view's TimeZone */
	struct config_generic *gen; /* found on first use */
	int			intval;			/* value, for an enum, integer or boolean setting */
} PinnedSetting;

/*
 * search_path lists pg_temp, last: a schema not listed is searched for
 * relations and types *first*, so with "pg_catalog" alone a temporary type
 * of the session (CREATE DOMAIN pg_temp.oid ... CHECK (f(VALUE)), which
 * needs no privilege but TEMP) would capture every "::oid" or "::text" of a
 * statement run on someone else's behalf, and its CHECK run with that
 * role's rights.
 */
static PinnedSetting pinned[] = {
	{"search_path", "pg_catalog, pg_temp"},
	{"DateStyle", "ISO, YMD"},
	{"IntervalStyle", "postgres"},
	{"extra_float_digits", "1"},
	/* the tables stream_ext creates store their rows (storage/discard_am.c) */
	{"default_table_access_method", "heap"},
	/*
	 * How generated SQL parses, whatever the inserting session set: with
	 * standard_conforming_strings off, 'x\y' of a view's WHERE would read
	 * "xy"; with array_nulls off, '{NULL}' a string; with
	 * transform_null_equals, "= NULL" IS NULL.  And what bytea::text gives.
	 */
	{"standard_conforming_strings", "on"},
	{"array_nulls", "on"},
	{"transform_null_equals", "off"},
	{"bytea_output", "hex"},
	{"TimeZone", NULL},
};

#define PIN_TIMEZONE (lengthof(pinned) - 1)

static bool pinned_found = false;

static void
find_pinned_settings(void)
{
	struct config_generic **vars = get_guc_variables();
	int			nvars = GetNumConfigOptions();

	for (int i = 0; i < lengthof(pinned); i++)
	{
		PinnedSetting *p = &pinned[i];

		for (int j = 0; j < nvars && p->gen == NULL; j++)
			if (pg_strcasecmp(vars[j]->name, p->name) == 0)
				p->gen = vars[j];
		if (p->gen == NULL)
			elog(ERROR, "stream_ext: setting \"%s\" not found", p->name);
		if (p->gen->vartype == PGC_ENUM)
		{
			if (!config_enum_lookup_by_name((struct config_enum *) p->gen,
											p->value, &p->intval))
				elog(ERROR, "stream_ext: bad value for setting \"%s\"", p->name);
		}
		else if (p->gen->vartype == PGC_INT)
		{
			if (!parse_int(p->value, &p->intval, 0, NULL))
				elog(ERROR, "stream_ext: bad value for setting \"%s\"", p->name);
		}
		else if (p->gen->vartype == PGC_BOOL)
		{
			bool		b;

			if (!parse_bool(p->value, &b))
				elog(ERROR, "stream_ext: bad value for setting \"%s\"", p->name);
			p->intval = b;
		}
		else if (p->gen->vartype != PGC_STRING)
			elog(ERROR, "stream_ext: setting \"%s\" has an unexpected type", p->name);
	}
	pinned_found = true;
}

static bool
has_value(PinnedSetting *p, const char *value)
{
	switch (p->gen->vartype)
	{
		case PGC_STRING:
			{
				const char *current = *((struct config_string *) p->gen)->variable;

				return current != NULL && strcmp(current, value) == 0;
			}
		case PGC_ENUM:
			return *((struct config_enum *) p->gen)->variable == p->intval;
		case PGC_INT:
			return *((struct config_int *) p->gen)->variable == p->intval;
		case PGC_BOOL:
			return *((struct config_bool *) p->gen)->variable == (bool) p->intval;
		default:
			return false;
	}
}

/* set a GUC in the current nest level, unless it already has that value */
static void
pin(PinnedSetting *p, const char *value)
{
	if (!has_value(p, value))
		(void) set_config_option(p->name, value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
}

int
se_pin_settings(const char *timezone)
{
	int			nestlevel = NewGUCNestLevel();

	if (!pinned_found)
		find_pinned_settings();
	for (int i = 0; i < PIN_TIMEZONE; i++)
		pin(&pinned[i], pinned[i].value);
	if (timezone != NULL)
		pin(&pinned[PIN_TIMEZONE], timezone);
	return nestlevel;
}

/* 0 when it already is (a batch's statements, nested): nothing to undo */
int
se_pin_search_path(void)
{
	int			nestlevel;

	if (!pinned_found)
		find_pinned_settings();
	if (has_value(&pinned[0], pinned[0].value))
		return 0;
	nestlevel = NewGUCNestLevel();
	pin(&pinned[0], pinned[0].value);
	return nestlevel;
}

/*
 * The search_path of a background worker connected as the bootstrap
 * superuser, for its whole session: its fixed statements read catalogs as
 * that superuser, and the database's default search_path (say, a public
 * schema others may create in) must not choose what their names mean.
 */
void
se_pin_worker_search_path(void)
{
	SetConfigOption("search_path", pinned[0].value, PGC_SUSET, PGC_S_SESSION);
}

void
se_unpin_settings(int nestlevel)
{
	if (nestlevel > 0)
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

/*
 * The two switches below run fixed statements, but with another role's
 * rights (the extension's owner is a superuser): the session's search_path
 * must not choose what their names mean, so it is pinned too.
 */
void
se_run_as_catalog_owner(SeRunAs *ra)
{
	switch_user(ra, extension_owner(), SECURITY_LOCAL_USERID_CHANGE);
	ra->nestlevel = se_pin_search_path();
}

void
se_run_as_role(SeRunAs *ra, Oid role)
{
	switch_user(ra, role, SECURITY_LOCAL_USERID_CHANGE);
	ra->nestlevel = se_pin_search_path();
}

void
se_restore(SeRunAs *ra)
{
	if (ra->nestlevel > 0)
		se_unpin_settings(ra->nestlevel);
	SetUserIdAndSecContext(ra->save_userid, ra->save_sec);
}

void
se_materialize_begin(void)
{
	materialize_depth++;
}

void
se_materialize_end(void)
{
	Assert(materialize_depth > 0);
	materialize_depth--;
}

bool
se_materializing(void)
{
	return materialize_depth > 0;
}

/*
 * Leave the materialize scope for a while (returns what se_materialize_resume()
 * needs): statements whose triggers run user work -- a view's inserts into
 * its change stream (maintain/changes.c) -- must not run inside it.
 */
int
se_materialize_suspend(void)
{
	int			depth = materialize_depth;

	materialize_depth = 0;
	return depth;
}

void
se_materialize_resume(int depth)
{
	materialize_depth = depth;
}
