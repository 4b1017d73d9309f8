/*-------------------------------------------------------------------------
 *
 * rebuild.c
 *	  CREATE OR REPLACE VIEW v WITH (continuous) AS q2 on an existing
 *	  continuous view, built beside it: the start (the shadow's hand-over
 *	  and its row in stream_ext.rebuilds), the backfill's statements, the
 *	  start of its worker (ddl/rebuild_worker.c).  The swap and a cancel are
 *	  ddl/rebuild_finish.c's.  docs/internals.md, "Rebuilding beside a view".
 *
 * At CREATE OR REPLACE (ddl/create_view.c), instead of replacing v in its
 * transaction, the new definition is built as a hidden continuous view of
 * its own, the shadow (named v_rebuild, its parts v_mrel1...), owned by v's
 * owner, INTERNAL to v (DROP VIEW v takes it along; it cannot be dropped
 * alone), created with no backfill: from the commit of CREATE OR REPLACE
 * on, every batch of the stream maintains v and the shadow.
 *
 * The hand-over: CREATE OR REPLACE holds the stream in SHARE ROW EXCLUSIVE
 * mode (as CREATE VIEW does), so no transaction that inserted into it is in
 * progress; a snapshot taken then (GetLatestSnapshot()) sees every row
 * whose batch the shadow's trigger will not see, and none of those it will
 * see (their transactions are in progress at it, or start after it).  It is
 * recorded (a pg_snapshot listing subtransactions too: handover_text())
 * with the stream's size in blocks: the rows visible
 * to it all lie below that block.  The worker folds them into the shadow
 * in block ranges, one transaction each, selecting the rows whose xmin is
 * visible to the hand-over (stream_ext._xid_visible_in(xmin, handover):
 * the raw xmin, so frozen rows are judged right) among those visible now.
 * Retention does not delete rows of a stream with a rebuild pending
 * (catalog_streams_with_retention()): the backfill still needs them.  A
 * crash empties the stream (it is unlogged): the rebuild's row in the
 * unlogged stream_ext.rebuild_sentinels goes with it, and the worker then
 * abandons the rebuild (state 'failed', shadow dropped, the view as it was)
 * instead of ending it short.
 *
 * Who may: v's owner (the shadow is created by the caller and must be
 * owned as v is).  What would make the swap fail is refused here: columns
 * that change while objects depend on v (replace_columns_kept()), a
 * second rebuild while one is pending.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/xid8.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "ddl/rebuild.h"
#include "ddl/replace_view.h"
#include "kafka/common.h"

PG_FUNCTION_INFO_V1(stream_ext_xid_visible_in);

/* GUCs (docs/continuous-views.md) */
bool		rebuild_in_place = false;
int			rebuild_batch_blocks = 1000;
bool		rebuild_auto_swap = true;

#define REBUILD_LOCK_FIELD4 0x5e53	/* tells our lock from user advisory locks */

void
rebuild_define_gucs(void)
{
	DefineCustomBoolVariable("stream_ext.replace_in_place",
							 "CREATE OR REPLACE of a continuous view rebuilds it in its own transaction.",
							 "Off (the default): the new definition is built beside the view while ingest goes on, and swapped in when its backfill is complete.",
							 &rebuild_in_place, false, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("stream_ext.rebuild_batch_blocks",
							"Blocks of the stream a rebuild's backfill reads per transaction.",
							"Recorded with the rebuild at CREATE OR REPLACE.",
							&rebuild_batch_blocks, 1000, 1, INT_MAX / 2,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("stream_ext.backfill_auto_swap",
							 "A rebuild's worker swaps the new definition in when its backfill is complete.",
							 "Off: the rebuild waits in state 'ready' for stream_ext.swap_backfill().  Recorded with the rebuild at CREATE OR REPLACE.",
							 &rebuild_auto_swap, true, PGC_USERSET, 0, NULL, NULL, NULL);
}

bool
rebuild_catalog_exists(void)
{
	Oid			nsp = get_namespace_oid("stream_ext", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("rebuilds", nsp));
}

/*
 * Is view viewid an aggregate view over one stream with no session window,
 * allowed_lateness or change stream?  Its catalog rows of those would go
 * at the swap while batches still need them.
 */
static bool
old_view_plain(Oid viewid)
{
	static const char *const tables[][2] = {
		{"session_views", "view"}, {"lateness_views", "view"},
		{"change_streams", "view"}, {"stream_joins", "object"}};
	Oid			nsp = get_namespace_oid("stream_ext", false);
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(viewid)};
	bool		plain = true;
	SeRunAs		ra;

	SPI_connect();
	se_run_as_catalog_owner(&ra);
	for (int i = 0; i < lengthof(tables) && plain; i++)
	{
		if (!OidIsValid(get_relname_relid(tables[i][0], nsp)))
			continue;
		if (SPI_execute_with_args(psprintf("SELECT 1 FROM stream_ext.%s WHERE %s = $1::pg_catalog.regclass",
										   tables[i][0], tables[i][1]),
								  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "stream_ext: could not read stream_ext.%s", tables[i][0]);
		plain = (SPI_processed == 0);
	}
	se_restore(&ra);
	SPI_finish();
	return plain;
}

/*
 * Is this CREATE OR REPLACE to be built beside view viewid?  With
 * backfill = 'stream' (the default), for an aggregate view over one stream
 * with no session window, allowed_lateness or change stream, replacing one
 * of the same kind; else (and with stream_ext.replace_in_place) it is
 * replaced in place.  A pending
 * rebuild of viewid refuses any replacement.
 */
bool
rebuild_applies(Oid viewid, const BackfillSpec *backfill, bool plain)
{
	if (!OidIsValid(viewid) || !rebuild_catalog_exists())
		return false;
	if (rebuild_pending(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("continuous view \"%s\" is being rebuilt by an earlier CREATE OR REPLACE",
						get_rel_name(viewid)),
				 errdetail("Its new definition is built beside it and swapped in when its backfill is complete."),
				 errhint("Wait for it (stream_ext.wait_backfill()) or cancel it (stream_ext.cancel_backfill()) first.")));
	return !rebuild_in_place && plain && backfill->mode == BACKFILL_STREAM &&
		old_view_plain(viewid);
}

/* has view viewid a rebuild that is not over ('running' or 'ready')? */
bool
rebuild_pending(Oid viewid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(viewid)};
	SeRunAs		ra;
	bool		result;
	SPIPlanPtr	plan;

	if (!rebuild_catalog_exists())
		return false;
	SPI_connect();
	se_run_as_catalog_owner(&ra);
	plan = SPI_prepare("SELECT 1 FROM stream_ext.rebuilds WHERE view = $1::pg_catalog.regclass "
					   "AND state IN ('running', 'ready')", 1, argtypes);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "stream_ext: could not read stream_ext.rebuilds");
	se_restore(&ra);
	result = SPI_processed > 0;
	SPI_finish();
	return result;
}

/* the name of the shadow of view viewname in schema nspid: <view>_rebuild */
char *
rebuild_shadow_name(const char *viewname, Oid nspid)
{
	return ChooseRelationName(viewname, NULL, "rebuild", nspid, false);
}

/*
 * The FROM item of the backfill's statements: the rows of stream sq in
 * blocks [$1, $2) (tids) visible to the hand-over $3, with backfill_from
 * only those that arrived at or after it.  Settings are pinned.
 */
char *
rebuild_stream_source(const BackfillSpec *spec, const char *sq)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "(SELECT s.* FROM %s s WHERE s.ctid OPERATOR(pg_catalog.>=) $1"
					 " AND s.ctid OPERATOR(pg_catalog.<) $2"
					 " AND stream_ext._xid_visible_in(s.xmin, $3)", sq);
	if (spec->has_from)
	{
		int64		usecs = spec->from + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;

		appendStringInfo(&buf, " AND s.%s OPERATOR(pg_catalog.>=) (pg_catalog.timestamptz 'epoch' "
						 "OPERATOR(pg_catalog.+) (" INT64_FORMAT " OPERATOR(pg_catalog.*) pg_catalog.interval '1 microsecond'))",
						 quote_identifier(STREAM_ARRIVAL_COLUMN), usecs);
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

static FullTransactionId widen_xid(TransactionId xid, FullTransactionId next);

static int
xid_cmp(const void *a, const void *b)
{
	FullTransactionId x = *(const FullTransactionId *) a;
	FullTransactionId y = *(const FullTransactionId *) b;

	return FullTransactionIdPrecedes(x, y) ? -1 : FullTransactionIdFollows(x, y) ? 1 : 0;
}

/*
 * The hand-over as a pg_snapshot's text: snap's xmin, xmax and every xid
 * in progress in it -- top-level (xip) and subtransactions' (subxip): a
 * row inserted later by a subtransaction whose xid was assigned before
 * the hand-over must not look visible to it.  pg_current_snapshot() lists
 * the top-level ones only.  When a backend had more subtransactions than
 * PostgreSQL's snapshot keeps (suboverflowed), they cannot all be listed:
 * refused, to be tried again.
 */
static char *
handover_text(Snapshot snap)
{
	FullTransactionId next = ReadNextFullTransactionId();
	int			n = snap->xcnt + snap->subxcnt;
	FullTransactionId *xids = palloc(sizeof(FullTransactionId) * Max(n, 1));
	StringInfoData buf;
	int			k = 0;

	if (snap->suboverflowed)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot record the hand-over of the rebuild: a transaction has too many subtransactions in progress"),
				 errdetail("The rows of the stream the backfill reads are told by the transactions in progress now, subtransactions included."),
				 errhint("Try again when the transaction with more than 64 subtransactions has ended.")));
	for (int i = 0; i < snap->xcnt; i++)
		xids[k++] = widen_xid(snap->xip[i], next);
	for (int i = 0; i < snap->subxcnt; i++)
		xids[k++] = widen_xid(snap->subxip[i], next);
	qsort(xids, k, sizeof(FullTransactionId), xid_cmp);
	initStringInfo(&buf);
	appendStringInfo(&buf, UINT64_FORMAT ":" UINT64_FORMAT ":",
					 U64FromFullTransactionId(widen_xid(snap->xmin, next)),
					 U64FromFullTransactionId(widen_xid(snap->xmax, next)));
	for (int i = 0; i < k; i++)
	{
		if (i > 0 && FullTransactionIdEquals(xids[i], xids[i - 1]))
			continue;
		appendStringInfo(&buf, "%s" UINT64_FORMAT, i > 0 ? "," : "",
						 U64FromFullTransactionId(xids[i]));
	}
	return buf.data;
}

/*
 * After the shadow shadowid (named shadowq) is built and recorded: check
 * that it can replace view viewid (named vq) when its backfill is complete,
 * make it part of viewid, record the rebuild and its hand-over, and start
 * its worker (which waits for this transaction).  The stream is locked
 * (SHARE ROW EXCLUSIVE) since before the shadow's trigger existed.
 */
void
rebuild_record(Oid viewid, const char *vq, Oid shadowid, Oid streamid,
			   const BackfillSpec *spec, const char *view_sql,
			   const char *backfill_sql, List *distinct_sql, const char *bsq)
{
	Oid			argtypes[12] = {OIDOID, OIDOID, OIDOID, TIMESTAMPTZOID, INT8OID, TEXTOID,
	TEXTOID, TEXTARRAYOID, TEXTOID, BOOLOID, INT4OID, TEXTOID};
	Datum		args[12];
	char		nulls[12] = "           ";
	Datum	   *elems;
	int			n = 0;
	ListCell   *lc;
	SeRunAs		ra;
	SPIPlanPtr	plan;
	Relation	rel;
	BlockNumber nblocks;
	int			rc;

	if (GetUserId() != se_relation_owner(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot replace continuous view %s: only its owner may rebuild it", vq),
				 errdetail("The new definition is built beside the view, owned by the role creating it."),
				 errhint("Replace it as its owner (SET ROLE), or with stream_ext.replace_in_place = on.")));
	/* the swap must not fail on the columns: refused now, naming dependents */
	(void) replace_columns_kept(viewid, vq, view_sql);

	/* DROP VIEW v takes the shadow along; it is not dropped alone */
	se_record_dependency(RelationRelationId, shadowid, RelationRelationId, viewid,
						 DEPENDENCY_INTERNAL);

	/* the stream's size now: rows visible to the hand-over lie below it */
	rel = relation_open(streamid, AccessShareLock);
	nblocks = RelationGetNumberOfBlocks(rel);
	relation_close(rel, AccessShareLock);

	elems = palloc(sizeof(Datum) * Max(list_length(distinct_sql), 1));
	foreach(lc, distinct_sql)
		elems[n++] = CStringGetTextDatum((char *) lfirst(lc));
	args[0] = ObjectIdGetDatum(viewid);
	args[1] = ObjectIdGetDatum(shadowid);
	args[2] = ObjectIdGetDatum(streamid);
	args[3] = TimestampTzGetDatum(spec->from);
	if (!spec->has_from)
		nulls[3] = 'n';
	args[4] = Int64GetDatum((int64) nblocks);
	args[5] = CStringGetTextDatum(view_sql);
	args[6] = CStringGetTextDatum(backfill_sql);
	args[7] = PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
	args[8] = CStringGetTextDatum(psprintf("SELECT pg_catalog.count(*) FROM %s c", bsq));
	args[9] = BoolGetDatum(rebuild_auto_swap);
	args[10] = Int32GetDatum(rebuild_batch_blocks);
	/* the hand-over: the latest snapshot, taken under the stream's lock */
	args[11] = CStringGetTextDatum(handover_text(GetLatestSnapshot()));

	SPI_connect();
	se_run_as_catalog_owner(&ra);
	/* a finished rebuild of this view leaves its row until the next one */
	rc = SPI_execute_with_args("DELETE FROM stream_ext.rebuilds WHERE view = $1::pg_catalog.regclass",
							   1, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "stream_ext: could not record the rebuild: %s", SPI_result_code_string(rc));

	plan = SPI_prepare("INSERT INTO stream_ext.rebuilds (view, original, shadow, stream, "
					   "backfill_from, handover, end_block, view_sql, backfill_sql, "
					   "distinct_sql, count_sql, auto_swap, batch_blocks) "
					   "VALUES ($1::pg_catalog.regclass, $1, $2::pg_catalog.regclass, "
					   "$3::pg_catalog.regclass, $4, $12::pg_catalog.pg_snapshot, $5, "
					   "$6, $7, $8, $9, $10, $11)", 12, argtypes);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	rc = SPI_execute_plan(plan, args, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: could not record the rebuild: %s", SPI_result_code_string(rc));
	/* gone after a crash, as the stream's rows (rebuild_worker.c) */
	rc = SPI_execute_with_args("INSERT INTO stream_ext.rebuild_sentinels VALUES ($1) "
							   "ON CONFLICT DO NOTHING", 1, argtypes, args, NULL, false, 0);
	se_restore(&ra);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: could not record the rebuild: %s", SPI_result_code_string(rc));
	SPI_finish();

	rebuild_launch(MyDatabaseId, viewid, GetTopTransactionId());
}

/* ---- workers -------------------------------------------------------------- */

/* the session lock the worker of the rebuild of original holds: one worker */
void
rebuild_locktag(LOCKTAG *tag, Oid dboid, Oid original)
{
	SET_LOCKTAG_ADVISORY(*tag, dboid, original, 0, REBUILD_LOCK_FIELD4);
}

void
rebuild_launch(Oid dboid, Oid original, TransactionId wait_xid)
{
	RebuildWorkerArgs args;

	memset(&args, 0, sizeof(args));
	args.dboid = dboid;
	args.original = original;
	args.wait_xid = wait_xid;
	(void) kafka_bgworker_launch("stream_ext_rebuild_worker_main", "stream_ext rebuild",
								 psprintf("stream_ext rebuild %u", original),
								 &args, sizeof(args), false, "the rebuild worker",
								 "Raise max_worker_processes; the rebuild starts at the Kafka launcher's next scan.");
}

/*
 * From the launcher's scanner: start the worker of every rebuild still
 * running (after a restart, a crash, a failed start) whose worker is not
 * alive.  A 'ready' one is left to stream_ext.swap_backfill() unless
 * it swaps itself (auto_swap).
 */
void
rebuild_launch_running(Oid dboid)
{
	List	   *originals = NIL;
	ListCell   *lc;

	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (stream_ext_installed() && rebuild_catalog_exists())
	{
		int			rc = SPI_execute("SELECT original FROM stream_ext.rebuilds "
									 "WHERE state = 'running' OR (state = 'ready' AND auto_swap)",
									 true, 0);

		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Oid			original = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
																  SPI_tuptable->tupdesc, 1, &isnull));
			LOCKTAG		tag;

			rebuild_locktag(&tag, dboid, original);
			if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
				continue;		/* its worker is alive */
			LockRelease(&tag, ExclusiveLock, false);
			originals = lappend_oid(originals, original);
		}
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	foreach(lc, originals)
		rebuild_launch(dboid, lfirst_oid(lc), InvalidTransactionId);
}

/* ---- stream_ext._xid_visible_in(xid, pg_snapshot) -------------------------- */

/*
 * xid (a row's raw xmin) widened to a FullTransactionId: it precedes the
 * next xid by less than 2^31 (else the row would have wrapped around), so
 * it is in next's epoch, or the one before when it is above next's xid.
 */
static FullTransactionId
widen_xid(TransactionId xid, FullTransactionId next)
{
	uint32		epoch = EpochFromFullTransactionId(next);

	if (!TransactionIdIsNormal(xid))
		return FullTransactionIdFromEpochAndXid(0, xid);
	if (xid > XidFromFullTransactionId(next) && epoch > 0)
		epoch--;
	return FullTransactionIdFromEpochAndXid(epoch, xid);
}

Datum
stream_ext_xid_visible_in(PG_FUNCTION_ARGS)
{
	TransactionId xid = DatumGetTransactionId(PG_GETARG_DATUM(0));
	FullTransactionId *next = (FullTransactionId *) fcinfo->flinfo->fn_extra;

	/* the next xid once per statement: not a lock per row */
	if (next == NULL)
	{
		next = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(FullTransactionId));
		*next = ReadNextFullTransactionId();
		fcinfo->flinfo->fn_extra = next;
	}
	return DirectFunctionCall2(pg_visible_in_snapshot,
							   FullTransactionIdGetDatum(widen_xid(xid, *next)),
							   PG_GETARG_DATUM(1));
}
