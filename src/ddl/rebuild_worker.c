/*-------------------------------------------------------------------------
 *
 * rebuild_worker.c
 *	  The worker of a rebuild beside a continuous view (ddl/rebuild.c): it
 *	  folds the stream's rows visible to the hand-over into the shadow, a
 *	  range of blocks per transaction, then swaps the shadow in
 *	  (ddl/rebuild_finish.c).
 *
 * One batch is one transaction:
 *
 *	1. the rebuild's row FOR UPDATE (a cancel or a swap waits for the
 *	   batch), still 'running'; the shadow locked (ACCESS SHARE) and there;
 *	2. the view's owner may still read the stream (checked now, not at
 *	   CREATE);
 *	3. as the owner, with the view's pinned settings, in the materialize
 *	   scope: the backfill statements over the rows of blocks
 *	   [next_block, next_block + batch_blocks) visible
 *	   to the hand-over, and their count;
 *	4. next_block and rows_done stored in the row;
 *	5. commit.
 *
 * The stored next_block is the only truth: after an error or a restart
 * the worker starts again from it, so every row is folded in once.  A
 * crash (kill -9 included) empties the stream, an unlogged table: the rows
 * not yet folded in are lost, so the rebuild is abandoned -- its shadow
 * dropped, state 'failed', the view as it was and maintained -- which the
 * unlogged stream_ext.rebuild_sentinels tells (its row is gone too).  When next_block reaches the hand-over's end the row
 * says 'ready' in the last batch's transaction, and unless the rebuild
 * was made with stream_ext.backfill_auto_swap = off the worker swaps the
 * shadow in.
 *
 * The worker connects as the bootstrap superuser to read stream_ext's
 * catalog; everything done with the user's data runs as the view's owner.
 * One worker per rebuild: a session lock (rebuild_locktag()); a twin
 * started by the launcher's scanner exits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "storage/itemptr.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "core/security.h"
#include "core/util.h"
#include "ddl/rebuild.h"
#include "kafka/common.h"

PGDLLEXPORT void stream_ext_rebuild_worker_main(Datum main_arg);

typedef struct RebuildWorker
{
	RebuildWorkerArgs args;
	char	   *viewname;
	bool		auto_swap;		/* the rebuild's */
	int			backoff_ms;
} RebuildWorker;

static RebuildWorker W;

static void
begin_xact(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
}

static void
commit_xact(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* after a failed attempt: show its error in backfill_progress */
static void
record_error(const char *error)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2];

	begin_xact();
	args[0] = ObjectIdGetDatum(W.args.original);
	args[1] = CStringGetTextDatum(error);
	rebuild_catalog_exec("UPDATE stream_ext.rebuilds SET last_error = $2, updated_at = pg_catalog.now() "
				 "WHERE original = $1 AND state IN ('running', 'ready')",
				 2, argtypes, args, SPI_OK_UPDATE);
	commit_xact();
}

/* as the owner: run sql with the block bounds and the hand-over */
static int64
run_statement(const char *sql, Datum *args)
{
	Oid			argtypes[3] = {TIDOID, TIDOID, PG_SNAPSHOTOID};
	int			rc;

	rc = SPI_execute_with_args(sql, 3, argtypes, args, NULL, false, 0);
	if (rc < 0)
		elog(ERROR, "stream_ext: rebuild statement failed: %s", SPI_result_code_string(rc));
	if (rc == SPI_OK_SELECT && SPI_processed == 1)
	{
		bool		isnull;

		return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										   &isnull));
	}
	return 0;
}

/*
 * One batch (see the header).  Returns the rebuild's state after it:
 * "running", "ready", or NULL when it is over (cancelled, the view gone).
 */
static char *
apply_batch(void)
{
	Oid			argtypes[4] = {OIDOID, INT8OID, INT8OID, TEXTOID};
	Datum		args[4];
	Datum		stargs[3];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Oid			viewid;
	Oid			shadowid;
	Oid			streamid;
	Oid			owner;
	int64		end_block;
	int64		next_block;
	int64		upto;
	int64		rows;
	int			batch_blocks;
	char	   *state;
	char	   *backfill_sql;
	char	   *count_sql;
	char	   *timezone;
	List	   *distinct_sql = NIL;
	ItemPointerData lo;
	ItemPointerData hi;
	SeRunAs		ra;
	ListCell   *lc;
	char	   *result;

	begin_xact();
	args[0] = ObjectIdGetDatum(W.args.original);
	rebuild_catalog_exec("SELECT r.state, r.view::pg_catalog.oid, r.shadow::pg_catalog.oid, "
				 "r.stream::pg_catalog.oid, r.end_block, r.next_block, r.handover, "
				 "r.backfill_sql, r.distinct_sql, r.count_sql, v.timezone, "
				 "r.auto_swap, r.batch_blocks "
				 "FROM stream_ext.rebuilds r LEFT JOIN stream_ext.view_catalog v ON v.view = r.shadow "
				 "WHERE r.original = $1 FOR UPDATE OF r",
				 1, argtypes, args, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		commit_xact();
		return NULL;
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	state = SPI_getvalue(tup, desc, 1);
	W.auto_swap = DatumGetBool(SPI_getbinval(tup, desc, 12, &isnull));
	batch_blocks = DatumGetInt32(SPI_getbinval(tup, desc, 13, &isnull));
	if (strcmp(state, "running") != 0)
	{
		result = strcmp(state, "ready") == 0 ? "ready" : NULL;
		commit_xact();
		return result;
	}
	viewid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	shadowid = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	streamid = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
	end_block = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	next_block = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
	stargs[2] = SPI_getbinval(tup, desc, 7, &isnull);
	backfill_sql = SPI_getvalue(tup, desc, 8);
	{
		ArrayType  *arr = DatumGetArrayTypeP(SPI_getbinval(tup, desc, 9, &isnull));
		Datum	   *elems;
		int			n;

		deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
		for (int i = 0; i < n; i++)
			distinct_sql = lappend(distinct_sql, TextDatumGetCString(elems[i]));
	}
	count_sql = SPI_getvalue(tup, desc, 10);
	timezone = SPI_getvalue(tup, desc, 11);

	/*
	 * The shadow (and so the view) still there?  A DROP VIEW that took them
	 * along left the row to us (catalog_remove_orphans()).
	 */
	LockRelationOid(shadowid, AccessShareLock);
	if (timezone == NULL || !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(shadowid)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(viewid)))
	{
		rebuild_catalog_exec("DELETE FROM stream_ext.rebuilds WHERE original = $1",
					 1, argtypes, args, SPI_OK_DELETE);
		commit_xact();
		return NULL;
	}
	/* a crash emptied the stream since CREATE OR REPLACE: no exact end */
	rebuild_catalog_exec("SELECT 1 FROM stream_ext.rebuild_sentinels WHERE original = $1",
				 1, argtypes, args, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		rebuild_abandon(W.args.original, viewid, shadowid,
						"a crash emptied the stream (unlogged) before its backfill was complete");
		commit_xact();
		return NULL;
	}
	owner = se_relation_owner(shadowid);
	if (W.viewname == NULL)
	{
		W.viewname = MemoryContextStrdup(TopMemoryContext, get_rel_name(viewid));
		pgstat_report_appname(psprintf("stream_ext rebuild %s", W.viewname));
	}

	upto = Min(end_block, next_block + batch_blocks);
	rows = 0;
	if (next_block < end_block)
	{
		/* the owner's rights now, not at CREATE */
		if (pg_class_aclcheck(streamid, owner, ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("the owner of continuous view \"%s\" may no longer read stream \"%s\"",
							W.viewname, get_rel_name(streamid))));
		ItemPointerSet(&lo, (BlockNumber) next_block, 0);
		ItemPointerSet(&hi, (BlockNumber) Min(upto, (int64) MaxBlockNumber), 0);
		stargs[0] = PointerGetDatum(&lo);
		stargs[1] = PointerGetDatum(&hi);
		se_run_as_owner(&ra, owner, timezone);
		se_materialize_begin();
		PG_TRY();
		{
			rows = run_statement(count_sql, stargs);
			if (rows > 0)
			{
				run_statement(backfill_sql, stargs);
				foreach(lc, distinct_sql)
					run_statement((char *) lfirst(lc), stargs);
			}
		}
		PG_FINALLY();
		{
			se_materialize_end();
		}
		PG_END_TRY();
		se_restore(&ra);
	}

	result = upto >= end_block ? "ready" : "running";
	args[1] = Int64GetDatum(upto);
	args[2] = Int64GetDatum(rows);
	args[3] = CStringGetTextDatum(result);
	rebuild_catalog_exec("UPDATE stream_ext.rebuilds SET next_block = $2, rows_done = rows_done + $3, "
				 "state = $4, last_error = NULL, updated_at = pg_catalog.now() WHERE original = $1",
				 4, argtypes, args, SPI_OK_UPDATE);
	commit_xact();
	return result;
}

/* swap the shadow in (ddl/rebuild_finish.c), in a transaction of its own */
static void
swap(void)
{
	begin_xact();
	(void) rebuild_swap(W.args.original, false);
	commit_xact();
}

/*
 * One attempt: batches until the backfill is complete, then the swap
 * (auto_swap); an error is retried from the stored block
 * (kafka_bgworker_retry_loop()).
 */
static void
attempt(void)
{
	char	   *state;

	do
	{
		CHECK_FOR_INTERRUPTS();
		/* orphaned by a crash: no more batches in its shared memory */
		if (!PostmasterIsAlive())
			proc_exit(1);
		state = apply_batch();
		W.backoff_ms = 0;
	} while (state != NULL && strcmp(state, "running") == 0);
	if (state != NULL && W.auto_swap && PostmasterIsAlive())
		swap();
}

void
stream_ext_rebuild_worker_main(Datum main_arg)
{
	LOCKTAG		tag;

	memset(&W, 0, sizeof(W));
	memcpy(&W.args, MyBgworkerEntry->bgw_extra, sizeof(RebuildWorkerArgs));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* as the bootstrap superuser: it reads stream_ext's catalog */
	BackgroundWorkerInitializeConnectionByOid(W.args.dboid, InvalidOid, 0);
	se_pin_worker_search_path();
	pgstat_report_appname("stream_ext rebuild");

	/* one worker per rebuild, once the creating transaction is over */
	rebuild_locktag(&tag, W.args.dboid, W.args.original);
	kafka_bgworker_claim(&tag, W.args.wait_xid);

	kafka_bgworker_retry_loop(attempt, NULL, record_error, &W.backoff_ms);
	proc_exit(0);
}
