/*-------------------------------------------------------------------------
 *
 * retention.h
 *	  TTL of continuous views, retention of raw stream rows, and
 *	  stream_ext.run_maintenance() with its pg_cron job.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_RETENTION_H
#define STREAM_EXT_RETENTION_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "nodes/pg_list.h"

#include "core/catalog.h"
#include "query/analyze.h"

/* WITH (ttl = '7 days', ttl_column = 'minute') of a continuous view */
typedef struct TtlSpec
{
	bool		enabled;
	char	   *ttl_text;
	Interval   *ttl;
	char	   *column;			/* the view's column, as the user named it */
	CVKey	   *key;			/* the group key it is */
} TtlSpec;

/* takes ttl and ttl_column out of a view's options; returns the rest */
extern List *retention_take_options(List *options, TtlSpec *spec);
/* checks them against the analyzed view: errors before anything exists */
extern void retention_validate(TtlSpec *spec, CVPlan *plan, bool session);
/* records them (catalog, index on the materialization); SPI connected */
extern void retention_record(Oid viewid, TtlSpec *spec, CVPlan *plan,
							 Oid matrelid, const char *matrel,
							 const char *delta, List *auxids);

/*
 * Per-view work of stream_ext.run_maintenance() (TTL, window expiry,
 * session compaction) is a HousekeepingViewTask listed in view_tasks[] in
 * retention.c, with a cheap applies() check, over a HousekeepingView
 * (core/catalog.h).  A task runs in its own subtransaction (an error is a
 * WARNING, the rest of maintenance goes on), as the view's owner,
 * security-restricted, with search_path = pg_catalog and the view's
 * TimeZone, SPI connected and inside se_materialize_begin()/end()
 * (materializations are writable).  It returns the number of rows it
 * removed (reported by run_maintenance()), or -1 to report nothing.
 */
typedef int64 (*HousekeepingViewTask) (HousekeepingView *view);

extern void retention_init(void);
/* the utility hook's part of the pg_cron job (ddl/utility.c) */
extern bool retention_utility_before(Node *parsetree);
extern void retention_utility_after(void);

#endif							/* STREAM_EXT_RETENTION_H */
