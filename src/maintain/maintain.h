/*-------------------------------------------------------------------------
 *
 * maintain.h
 *	  Incremental maintenance of continuous views.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_MAINTAIN_H
#define STREAM_EXT_MAINTAIN_H

/*
 * > 0 while stream_ext runs maintenance statements: the planner hook turns
 * stream_ext.partial() calls into partial aggregates, and the guard trigger
 * of materializations lets writes through.
 */
extern int	stream_ext_maintenance_depth;

/*
 * The batch size maintenance plans are made for (the planner's row count of
 * the transition table), whatever the size of the batch being maintained;
 * stream_ext.explain()'s default batch_rows.
 */
#define MAINT_PLAN_ROWS 1000

/*
 * Run user work as OWNER: security-restricted, with search_path pinned to
 * pg_catalog and, when TIMEZONE is given, TimeZone pinned -- how every
 * maintenance statement runs.  owner_context_pin() pins one more setting
 * the same way.  owner_context_leave() restores the caller's
 * user and settings (an error restores them through transaction abort).
 */
typedef struct OwnerContext
{
	Oid			save_userid;
	int			save_sec;
	int			nestlevel;
} OwnerContext;

extern void owner_context_enter(OwnerContext *ctx, Oid owner, const char *timezone);
extern void owner_context_pin(const char *name, const char *value);
extern void owner_context_leave(OwnerContext *ctx);

extern void maintain_init(void);

/*
 * Would row-level security of stream relid restrict what roleid reads, if
 * RLS were enabled/forced as given?  A continuous view aggregates every row
 * of its stream, so its owner must be able to read them all.
 */
extern bool stream_rls_applies(Oid relid, Oid roleid, bool enabled, bool forced);
extern void stream_rls_flags(Oid relid, bool *enabled, bool *forced);

#endif							/* STREAM_EXT_MAINTAIN_H */
