/*-------------------------------------------------------------------------
 *
 * maintain.h
 *	  Incremental maintenance of continuous views.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_MAINTAIN_H
#define STREAM_EXT_MAINTAIN_H

#include "commands/trigger.h"
#include "utils/relcache.h"

#include "core/catalog.h"

/*
 * The batch size maintenance plans are made for (the planner's row count of
 * the transition table), whatever the size of the batch being maintained;
 * stream_ext.explain()'s default batch_rows.
 */
#define MAINT_PLAN_ROWS 1000

extern void maintain_init(void);

/* stream_ext.explain(): the statement a view shares with others, or NULL */
extern char *maint_shared_statement(Relation stream, Oid viewid, int *others);
/* shared storage (ddl/shared_storage.c) */
extern struct CVPlan *maint_view_plan(ViewCatalogEntry *cat, MemoryContext cxt, char **key);
extern char *maint_share_key(Oid owner, const char *timezone, struct CVPlan *plan);

/* may this trigger's batch feed continuous view cat (maint_ops, query/rollup.c)? */
extern bool maint_admit_view(TriggerData *trigdata, ViewCatalogEntry *cat);

/*
 * Would row-level security of stream relid restrict what roleid reads, if
 * RLS were enabled/forced as given?  A continuous view aggregates every row
 * of its stream, so its owner must be able to read them all.
 */
extern bool stream_rls_applies(Oid relid, Oid roleid, bool enabled, bool forced);
extern void stream_rls_flags(Oid relid, bool *enabled, bool *forced);

#endif							/* STREAM_EXT_MAINTAIN_H */
