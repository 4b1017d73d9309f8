/*-------------------------------------------------------------------------
 *
 * security.h
 *	  Who runs stream_ext's statements, with which settings, and when the
 *	  tables only stream_ext writes are open: the one implementation of
 *	  run-as-owner, extension-owner writes, pinned settings and the
 *	  materialize scope.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_SECURITY_H
#define STREAM_EXT_SECURITY_H

/* what se_restore() puts back */
typedef struct SeRunAs
{
	Oid			save_userid;
	int			save_sec;
	int			nestlevel;		/* GUC nest level of pinned settings, or 0 */
} SeRunAs;

/*
 * User work (maintenance, transforms, sink payloads, TTL, expiry): as
 * OWNER, security-restricted, with the settings se_pin_settings() pins;
 * TIMEZONE is the one recorded for the object (NULL: leave TimeZone).
 */
extern void se_run_as_owner(SeRunAs *ra, Oid owner, const char *timezone);

/*
 * stream_ext's own tables (catalogs, watermarks, invalid objects): as the
 * extension's owner, SECURITY_LOCAL_USERID_CHANGE only, for one fixed
 * statement; search_path pinned (se_pin_search_path()).
 */
extern void se_run_as_catalog_owner(SeRunAs *ra);

/* a plain switch to ROLE (SECURITY_LOCAL_USERID_CHANGE), search_path pinned */
extern void se_run_as_role(SeRunAs *ra, Oid role);

/* back to the caller's user and settings (an error restores them too) */
extern void se_restore(SeRunAs *ra);

/*
 * Pin, in a new GUC nest level, the settings every generated statement and
 * every deparsed text is made under: search_path = 'pg_catalog, pg_temp'
 * (pg_temp last: never first, as an unlisted pg_temp is), DateStyle
 * 'ISO, YMD', IntervalStyle 'postgres', extra_float_digits 1 and, when
 * TIMEZONE is given, TimeZone.  Returns the nest level for
 * se_unpin_settings().
 */
extern int	se_pin_settings(const char *timezone);
extern void se_unpin_settings(int nestlevel);

/*
 * Pin search_path alone, in a new GUC nest level: for fixed statements on
 * stream_ext's catalogs, whoever runs them (se_unpin_settings() ends it).
 * Returns 0, and pushes no level, when it is pinned already.
 */
extern int	se_pin_search_path(void);

/* the same for a background worker's whole session, right after it connects */
extern void se_pin_worker_search_path(void);

/*
 * The materialize scope: between se_materialize_begin() and
 * se_materialize_end() the planner hook turns stream_ext.partial() into
 * partial aggregates and the guard trigger lets writes to materializations
 * and side tables through.  The caller ends the scope on error too, in
 * the PG_CATCH (or PG_FINALLY) of a PG_TRY around the statements.
 */
extern void se_materialize_begin(void);
extern void se_materialize_end(void);
extern bool se_materializing(void);
extern int	se_materialize_suspend(void);
extern void se_materialize_resume(int depth);

#endif							/* STREAM_EXT_SECURITY_H */
