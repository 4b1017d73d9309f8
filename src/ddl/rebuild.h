/*-------------------------------------------------------------------------
 *
 * rebuild.h
 *	  CREATE OR REPLACE of a continuous view built beside it and swapped in
 *	  (ddl/rebuild.c: start; ddl/rebuild_worker.c: backfill;
 *	  ddl/rebuild_finish.c: swap, cancel).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_DDL_REBUILD_H
#define STREAM_EXT_DDL_REBUILD_H

#include "kafka/replay.h"
#include "storage/lock.h"

/* what a rebuild worker gets in bgw_extra */
typedef struct RebuildWorkerArgs
{
	Oid			dboid;
	Oid			original;		/* the view's OID at CREATE OR REPLACE */
	TransactionId wait_xid;		/* the creating transaction */
} RebuildWorkerArgs;

extern bool rebuild_in_place;
extern int	rebuild_batch_blocks;
extern bool rebuild_auto_swap;

extern void rebuild_define_gucs(void);
extern bool rebuild_catalog_exists(void);
extern bool rebuild_applies(Oid viewid, const BackfillSpec *backfill, bool plain);
extern bool rebuild_pending(Oid viewid);
extern char *rebuild_shadow_name(const char *viewname, Oid nspid);
extern char *rebuild_stream_source(const BackfillSpec *spec, const char *sq);
extern void rebuild_record(Oid viewid, const char *vq, Oid shadowid, Oid streamid,
						   const BackfillSpec *spec, const char *view_sql,
						   const char *backfill_sql, List *distinct_sql, const char *bsq);
extern void rebuild_locktag(LOCKTAG *tag, Oid dboid, Oid original);
extern void rebuild_launch(Oid dboid, Oid original, TransactionId wait_xid);
extern void rebuild_launch_running(Oid dboid);

/* rebuild_finish.c */
extern void rebuild_catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *args,
								 int expected);
extern bool rebuild_swap(Oid original, bool must);
extern bool rebuild_cancel(Oid viewid);
extern void rebuild_abandon(Oid original, Oid viewid, Oid shadowid, const char *reason);

#endif							/* STREAM_EXT_DDL_REBUILD_H */
