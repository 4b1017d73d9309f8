/*-------------------------------------------------------------------------
 *
 * replay_worker.c
 *	  The Kafka replay worker of a continuous view created with
 *	  backfill = 'kafka' (replay.c): a private consumer that reads the
 *	  topic of the stream's source from the replay's start up to the
 *	  hand-over offsets recorded at CREATE, and folds the messages into
 *	  that view only.
 *
 * One batch is one transaction:
 *
 *	1. lock the view (ACCESS SHARE: a DROP VIEW waits for the batch, and the
 *	   worker finds the view gone at the next) and the replay's row of
 *	   stream_ext.backfills (FOR UPDATE: cancel_backfill() waits for the
 *	   batch); stop unless it is still 'running';
 *	2. check that the view's owner may still read the stream and has the
 *	   privileges of the source's owner;
 *	3. as the view's owner, with the view's pinned settings: decode the
 *	   messages with the source's decoder (decode.c), in subtransactions
 *	   as the source does; a message that does not decode is skipped and
 *	   counted (the live source made it a dead letter when it read it, or
 *	   never read it: a replay adds no dead letters);
 *	4. run the view's replay statements (replay.c) over the decoded rows,
 *	   an ephemeral named relation;
 *	5. store the next offset of every partition the batch covered in
 *	   stream_ext.backfill_offsets and the counts in stream_ext.backfills;
 *	6. commit.
 *
 * The stored offsets are the only truth: after any error, a restart or a
 * crash, the worker starts again from them, so every message below the
 * hand-over is applied exactly once.  Messages at or beyond a partition's
 * hand-over offset are dropped: the view's trigger sees them in the stream.
 * A partition is done when the batch reaching its hand-over offset
 * commits, or when the consumer's position passes it (transaction markers,
 * messages deleted by retention).  When every partition is done the state
 * becomes 'done'.
 *
 * The worker connects as the bootstrap superuser to read stream_ext's
 * catalog; everything done with the user's data runs as the view's owner.
 * One worker per view: it holds a session lock on the view's replay
 * (replay_locktag(), replay.c); a twin started by the launcher's scanner exits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/queryenvironment.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "core/security.h"
#include "core/util.h"
#include "kafka/common.h"
#include "kafka/decode.h"
#include "kafka/replay.h"
#include "kafka/source.h"

#define IDLE_POLL_MS	250
#define STATE_CHECK_MS	1000

typedef struct ReplayWorker
{
	ReplayWorkerArgs args;

	/* the replay (in cxt) */
	char	   *viewname;
	Oid			stream;
	Oid			owner;			/* the view's */
	Oid			source_owner;
	char	   *timezone;
	char	   *source;
	char	   *brokers;
	char	   *topic;
	bool		has_from;
	TimestampTz from;
	char	   *maintain_sql;
	List	   *distinct_sql;
	KafkaOptions opts;
	KafkaDecoder *dec;

	/* partitions */
	int			npart;
	int32	   *part;
	int64	   *end;			/* hand-over offset */
	int64	   *next;			/* stored next offset */
	int64	   *taken;			/* next offset after the batch */

	rd_kafka_t *rk;
	rd_kafka_message_t **msgs;
	int			nmsgs;

	MemoryContext cxt;
	MemoryContext batch_cxt;
	MemoryContext msg_cxt;
	int			backoff_ms;
} ReplayWorker;

static ReplayWorker R;

/* ---- catalog --------------------------------------------------------------- */

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

/* a statement on stream_ext's catalog, as its owner */
static void
catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *args,
			 const char *nulls, int expected)
{
	SeRunAs		ra;
	int			rc;

	se_run_as_catalog_owner(&ra);
	rc = SPI_execute_with_args(sql, nargs, argtypes, args, nulls, false, 0);
	se_restore(&ra);
	if (rc != expected)
		elog(ERROR, "stream_ext: replay catalog statement failed: %s",
			 SPI_result_code_string(rc));
}

static void
set_state(const char *state, const char *error)
{
	Oid			argtypes[3] = {OIDOID, TEXTOID, TEXTOID};
	Datum		args[3];
	char		nulls[3] = "   ";

	args[0] = ObjectIdGetDatum(R.args.viewid);
	args[1] = CStringGetTextDatum(state);
	if (error)
		args[2] = CStringGetTextDatum(error);
	else
		nulls[2] = 'n';
	catalog_exec("UPDATE stream_ext.backfills SET state = $2, last_error = $3, "
				 "updated_at = now(), "
				 "finished_at = CASE WHEN $2 = 'running' THEN NULL ELSE now() END "
				 "WHERE view = $1::pg_catalog.regclass AND state = 'running'",
				 3, argtypes, args, nulls, SPI_OK_UPDATE);
}

/* after a failed attempt: show its error in backfill_progress */
static void
record_error(const char *error)
{
	begin_xact();
	set_state("running", error);
	commit_xact();
}

/*
 * Read the replay, its source and its partitions (stored offsets); false
 * when there is nothing (left) to do: the view or the replay is gone,
 * done or cancelled.
 */
static bool
load_replay(void)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	MemoryContext old;
	SeRunAs		ra;
	Datum		d;

	begin_xact();
	args[0] = ObjectIdGetDatum(R.args.viewid);
	if (SPI_execute_with_args("SELECT b.state, b.source, b.backfill_from, b.maintain_sql, "
							  "b.distinct_sql, c.relowner, v.stream::pg_catalog.oid, "
							  "v.timezone, s.brokers, s.topic, s.format, s.options, "
							  "s.owner::pg_catalog.oid, c.relname "
							  "FROM stream_ext.backfills b "
							  "JOIN stream_ext.view_catalog v ON v.view = b.view "
							  "JOIN pg_catalog.pg_class c ON c.oid = b.view "
							  "LEFT JOIN stream_ext.kafka_sources s ON s.name = b.source "
							  "WHERE b.view = $1::pg_catalog.regclass",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the replay of view %u", R.args.viewid);
	if (SPI_processed == 0 ||
		strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "running") != 0)
	{
		commit_xact();
		return false;
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	if (SPI_getvalue(tup, desc, 9) == NULL)
	{
		/* the source was dropped: its topic can no longer be read */
		set_state("cancelled", "the Kafka source was dropped");
		commit_xact();
		return false;
	}

	MemoryContextReset(R.cxt);
	old = MemoryContextSwitchTo(R.cxt);
	R.source = SPI_getvalue(tup, desc, 2);
	d = SPI_getbinval(tup, desc, 3, &isnull);
	R.has_from = !isnull;
	R.from = isnull ? 0 : DatumGetTimestampTz(d);
	R.maintain_sql = SPI_getvalue(tup, desc, 4);
	R.distinct_sql = NIL;
	{
		ArrayType  *arr = DatumGetArrayTypePCopy(SPI_getbinval(tup, desc, 5, &isnull));
		Datum	   *elems;
		int			n;

		deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
		for (int i = 0; i < n; i++)
			R.distinct_sql = lappend(R.distinct_sql, TextDatumGetCString(elems[i]));
	}
	R.owner = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
	R.stream = DatumGetObjectId(SPI_getbinval(tup, desc, 7, &isnull));
	R.timezone = SPI_getvalue(tup, desc, 8);
	R.brokers = SPI_getvalue(tup, desc, 9);
	R.topic = SPI_getvalue(tup, desc, 10);
	kafka_parse_options(DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 12, &isnull)), &R.opts);
	R.source_owner = DatumGetObjectId(SPI_getbinval(tup, desc, 13, &isnull));
	R.viewname = SPI_getvalue(tup, desc, 14);
	{
		KafkaFormat format = kafka_parse_format(SPI_getvalue(tup, desc, 11));

		/* input functions, a schema registry: as the view's owner */
		se_run_as_owner(&ra, R.owner, R.timezone);
		R.dec = kafka_decoder_create(R.stream, format, &R.opts);
		se_restore(&ra);
	}
	MemoryContextSwitchTo(old);

	if (SPI_execute_with_args("SELECT partition, end_offset, next_offset "
							  "FROM stream_ext.backfill_offsets "
							  "WHERE view = $1::pg_catalog.regclass ORDER BY partition",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the offsets of the replay of view %u", R.args.viewid);
	old = MemoryContextSwitchTo(R.cxt);
	R.npart = (int) SPI_processed;
	R.part = palloc(sizeof(int32) * Max(R.npart, 1));
	R.end = palloc(sizeof(int64) * Max(R.npart, 1));
	R.next = palloc(sizeof(int64) * Max(R.npart, 1));
	R.taken = palloc(sizeof(int64) * Max(R.npart, 1));
	for (int i = 0; i < R.npart; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];

		R.part[i] = DatumGetInt32(SPI_getbinval(t, SPI_tuptable->tupdesc, 1, &isnull));
		R.end[i] = DatumGetInt64(SPI_getbinval(t, SPI_tuptable->tupdesc, 2, &isnull));
		d = SPI_getbinval(t, SPI_tuptable->tupdesc, 3, &isnull);
		R.next[i] = isnull ? -1 : DatumGetInt64(d);
	}
	R.msgs = palloc0(sizeof(rd_kafka_message_t *) * R.opts.batch_size);
	MemoryContextSwitchTo(old);
	commit_xact();
	pgstat_report_appname(psprintf("stream_ext kafka replay %s", R.viewname));
	return true;
}

/* ---- consumer ---------------------------------------------------------------- */

static void
teardown_consumer(void)
{
	for (int i = 0; i < R.nmsgs; i++)
		rd_kafka_message_destroy(R.msgs[i]);
	R.nmsgs = 0;
	if (R.rk)
		rd_kafka_destroy(R.rk);
	R.rk = NULL;
}

/*
 * Where the replay of each partition without a stored start begins: the
 * first offset whose message timestamp is at or after backfill_from, else
 * the partition's first offset; never beyond its hand-over.  Stored at
 * once, so that restarts agree.
 */
static void
resolve_starts(void)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(Max(R.npart, 1));
	rd_kafka_resp_err_t err;
	Oid			argtypes[3] = {OIDOID, INT4OID, INT8OID};
	Datum		args[3];
	bool		any = false;

	for (int i = 0; i < R.npart; i++)
	{
		if (R.next[i] >= 0)
			continue;
		any = true;
		rd_kafka_topic_partition_list_add(l, R.topic, R.part[i])->offset =
			R.has_from ? (R.from / 1000 + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400000) :
			RD_KAFKA_OFFSET_BEGINNING;
	}
	if (!any)
	{
		rd_kafka_topic_partition_list_destroy(l);
		return;
	}
	if (R.has_from)
	{
		err = rd_kafka_offsets_for_times(R.rk, l, KAFKA_REQUEST_TIMEOUT_MS);
		if (err)
		{
			rd_kafka_topic_partition_list_destroy(l);
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("cannot look up offsets by timestamp in Kafka topic \"%s\": %s",
							R.topic, rd_kafka_err2str(err))));
		}
	}
	begin_xact();
	for (int k = 0; k < l->cnt; k++)
	{
		int			i;
		int64		start;

		for (i = 0; i < R.npart && R.part[i] != l->elems[k].partition; i++)
			;
		if (R.has_from)
			/* -1: no message at or after it: nothing to replay */
			start = (l->elems[k].err || l->elems[k].offset < 0) ? R.end[i] : l->elems[k].offset;
		else
		{
			int64_t		lo,
						hi;

			err = rd_kafka_query_watermark_offsets(R.rk, R.topic, R.part[i], &lo, &hi,
												   KAFKA_REQUEST_TIMEOUT_MS);
			if (err)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("cannot query offsets of Kafka topic \"%s\" partition %d: %s",
								R.topic, R.part[i], rd_kafka_err2str(err))));
			start = lo;
		}
		start = Min(start, R.end[i]);
		R.next[i] = start;
		args[0] = ObjectIdGetDatum(R.args.viewid);
		args[1] = Int32GetDatum(R.part[i]);
		args[2] = Int64GetDatum(start);
		catalog_exec("UPDATE stream_ext.backfill_offsets "
					 "SET start_offset = $3, next_offset = $3 "
					 "WHERE view = $1::pg_catalog.regclass AND partition = $2 "
					 "AND next_offset IS NULL",
					 3, argtypes, args, NULL, SPI_OK_UPDATE);
	}
	commit_xact();
	rd_kafka_topic_partition_list_destroy(l);
}

/* the consumer, assigned to the unfinished partitions at their stored offsets */
static void
setup_consumer(void)
{
	rd_kafka_conf_t *conf;
	rd_kafka_topic_partition_list_t *assign;
	rd_kafka_resp_err_t err;

	/* the source's settings, as its owner (whose rights may have changed) */
	begin_xact();
	conf = kafka_build_conf(R.brokers, &R.opts,
							psprintf("stream_ext-replay-%u", R.args.viewid),
							R.source_owner);
	commit_xact();
	R.rk = kafka_new_consumer(conf);
	resolve_starts();

	assign = rd_kafka_topic_partition_list_new(Max(R.npart, 1));
	for (int i = 0; i < R.npart; i++)
		if (R.next[i] < R.end[i])
			rd_kafka_topic_partition_list_add(assign, R.topic, R.part[i])->offset = R.next[i];
	err = rd_kafka_assign(R.rk, assign);
	rd_kafka_topic_partition_list_destroy(assign);
	if (err)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("cannot assign Kafka partitions: %s", rd_kafka_err2str(err))));
	ereport(LOG,
			(errmsg("stream_ext: replaying Kafka source \"%s\" (topic \"%s\", %d partitions) into continuous view \"%s\"",
					R.source, R.topic, R.npart, R.viewname)));
}

static int
part_index(int32 partition)
{
	for (int i = 0; i < R.npart; i++)
		if (R.part[i] == partition)
			return i;
	return -1;
}

/*
 * Collect up to batch_size messages below the hand-over offsets into
 * R.msgs; R.taken[] is where each partition stands after them.  With no
 * message, a partition whose consumer position passed its hand-over
 * (nothing left below it to read) is taken to its end.
 */
static void
consume_batch(void)
{
	TimestampTz deadline = 0;

	for (int i = 0; i < R.npart; i++)
		R.taken[i] = R.next[i];
	R.nmsgs = 0;
	while (R.nmsgs < R.opts.batch_size)
	{
		rd_kafka_message_t *m;
		int			p;
		int			wait;

		if (R.nmsgs == 0)
			wait = IDLE_POLL_MS;
		else
		{
			long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

			wait = (int) Max(left, 0);
		}
		m = rd_kafka_consumer_poll(R.rk, wait);
		if (m == NULL)
			break;
		if (m->err)
		{
			ereport(LOG,
					(errmsg("stream_ext: Kafka replay into \"%s\": %s: %s", R.viewname,
							rd_kafka_err2name(m->err), rd_kafka_message_errstr(m))));
			rd_kafka_message_destroy(m);
			continue;
		}
		p = part_index(m->partition);
		/* read before, or beyond the hand-over: not ours */
		if (p < 0 || m->offset < R.taken[p] || m->offset >= R.end[p])
		{
			if (p >= 0 && m->offset >= R.end[p])
				R.taken[p] = R.end[p];
			rd_kafka_message_destroy(m);
			continue;
		}
		R.taken[p] = m->offset + 1;
		if (R.nmsgs == 0)
			deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), R.opts.max_wait_ms);
		R.msgs[R.nmsgs++] = m;
		kafka_check_interrupts();
	}

	if (R.nmsgs == 0)
	{
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(Max(R.npart, 1));

		for (int i = 0; i < R.npart; i++)
			if (R.next[i] < R.end[i])
				rd_kafka_topic_partition_list_add(l, R.topic, R.part[i]);
		if (l->cnt > 0 && rd_kafka_position(R.rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			for (int k = 0; k < l->cnt; k++)
			{
				int			p = part_index(l->elems[k].partition);

				if (!l->elems[k].err && l->elems[k].offset >= R.end[p])
					R.taken[p] = R.end[p];
			}
		}
		rd_kafka_topic_partition_list_destroy(l);
	}
}

/* ---- batches ------------------------------------------------------------------ */

/* decode_batch()'s progress */
typedef struct DecodeRun
{
	HeapTuple  *tuples;
	int			ntuples;
	int			i;				/* the next message */
} DecodeRun;

static void
decode_run(void *arg)
{
	DecodeRun  *run = arg;

	for (; run->i < R.nmsgs; run->i++)
	{
		rd_kafka_message_t *m = R.msgs[run->i];
		KafkaMessage km;
		HeapTuple	tuple;

		if (m->len > (size_t) R.opts.max_message_bytes)
			elog(ERROR, "message exceeds max_message_bytes");
		kafka_message_from_rd(m, &km);
		tuple = kafka_decode(R.dec, &km, R.batch_cxt);
		/* a Debezium message is none (a tombstone), one or two (an update) rows */
		if (tuple != NULL)
			run->tuples[run->ntuples++] = tuple;
		if (R.dec->second != NULL)
			run->tuples[run->ntuples++] = R.dec->second;
		MemoryContextReset(R.msg_cxt);
	}
}

static void
run_maintenance(void *arg)
{
	ListCell   *lc;
	int			rc;

	rc = SPI_execute(R.maintain_sql, false, 0);
	if (rc < 0)
		elog(ERROR, "stream_ext: replay statement failed: %s", SPI_result_code_string(rc));
	foreach(lc, R.distinct_sql)
	{
		rc = SPI_execute((char *) lfirst(lc), false, 0);
		if (rc < 0)
			elog(ERROR, "stream_ext: replay statement failed: %s", SPI_result_code_string(rc));
	}
}

/*
 * Apply R.msgs and R.taken in one transaction (see the header).  False
 * when the replay is over: the view dropped, the replay cancelled.
 */
static bool
apply_batch(void)
{
	Oid			argtypes[4] = {OIDOID, INT4ARRAYOID, INT8ARRAYOID, INT8OID};
	Datum		args[4];
	DecodeRun	run;
	int			skipped = 0;
	Datum	   *parts;
	Datum	   *offs;
	int			n = 0;
	SeRunAs		ra;
	MemoryContext oldcxt;

	MemoryContextReset(R.batch_cxt);
	begin_xact();
	LockRelationOid(R.args.viewid, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(R.args.viewid)))
	{
		commit_xact();
		return false;
	}
	args[0] = ObjectIdGetDatum(R.args.viewid);
	catalog_exec("SELECT maintain_sql FROM stream_ext.backfills "
				 "WHERE view = $1::pg_catalog.regclass AND state = 'running' FOR UPDATE",
				 1, argtypes, args, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		commit_xact();
		return false;
	}
	/* CREATE OR REPLACE made the view anew (same OID): start over */
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
			   R.maintain_sql) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" was replaced, restarting its replay",
						R.viewname)));

	/* the owner now (ALTER VIEW ... OWNER TO: start over as the new one) */
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(R.args.viewid));

		if (HeapTupleIsValid(tup))
		{
			Oid			owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;

			ReleaseSysCache(tup);
			if (owner != R.owner)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("the owner of continuous view \"%s\" changed, restarting its replay",
								R.viewname)));
		}
	}

	/* the owner's rights now, not at CREATE */
	if (pg_class_aclcheck(R.stream, R.owner, ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the owner of continuous view \"%s\" may no longer read stream \"%s\"",
						R.viewname, get_rel_name(R.stream))));
	if (!has_privs_of_role(R.owner, R.source_owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the owner of continuous view \"%s\" no longer has the privileges of the owner of Kafka source \"%s\"",
						R.viewname, R.source)));

	oldcxt = MemoryContextSwitchTo(R.batch_cxt);
	run.tuples = palloc(sizeof(HeapTuple) * Max(2 * R.nmsgs, 1));	/* up to two a message */
	parts = palloc(sizeof(Datum) * Max(R.npart, 1));
	offs = palloc(sizeof(Datum) * Max(R.npart, 1));
	MemoryContextSwitchTo(oldcxt);
	run.ntuples = 0;
	run.i = 0;

	se_run_as_owner(&ra, R.owner, R.timezone);
	while (run.i < R.nmsgs)
	{
		ErrorData  *edata = se_try_in_subxact(decode_run, &run, R.msg_cxt, R.batch_cxt);

		if (edata == NULL)
			continue;
		MemoryContextReset(R.msg_cxt);
		if (kafka_transient_error(edata->sqlerrcode))
			ReThrowError(edata);
		skipped++;
		run.i++;
	}
	if (run.ntuples > 0)
	{
		Tuplestorestate *ts;
		EphemeralNamedRelation enr;
		ErrorData  *edata;

		oldcxt = MemoryContextSwitchTo(R.batch_cxt);
		ts = tuplestore_begin_heap(false, false, Max(work_mem, 65536));
		for (int i = 0; i < run.ntuples; i++)
			tuplestore_puttuple(ts, run.tuples[i]);
		enr = palloc0(sizeof(EphemeralNamedRelationData));
		enr->md.name = REPLAY_ENR_NAME;
		enr->md.reliddesc = InvalidOid;
		enr->md.tupdesc = R.dec->tupdesc;
		enr->md.enrtype = ENR_NAMED_TUPLESTORE;
		enr->md.enrtuples = run.ntuples;
		enr->reldata = ts;
		MemoryContextSwitchTo(oldcxt);
		if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
			elog(ERROR, "SPI_register_relation failed");
		se_materialize_begin();
		edata = se_try_in_subxact(run_maintenance, NULL, NULL, R.batch_cxt);
		se_materialize_end();
		if (edata != NULL)
			ReThrowError(edata);
		SPI_unregister_relation(REPLAY_ENR_NAME);
		tuplestore_end(ts);
	}
	se_restore(&ra);

	for (int i = 0; i < R.npart; i++)
		if (R.taken[i] > R.next[i])
		{
			parts[n] = Int32GetDatum(R.part[i]);
			offs[n] = Int64GetDatum(R.taken[i]);
			n++;
		}
	args[1] = PointerGetDatum(construct_array(parts, n, INT4OID, 4, true, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(offs, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	catalog_exec("UPDATE stream_ext.backfill_offsets o SET next_offset = u.n "
				 "FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS u(p, n) "
				 "WHERE o.view = $1::pg_catalog.regclass AND o.partition = u.p",
				 3, argtypes, args, NULL, SPI_OK_UPDATE);
	args[1] = Int64GetDatum((int64) (R.nmsgs - skipped));	/* messages, not rows */
	args[2] = Int64GetDatum((int64) skipped);
	argtypes[1] = INT8OID;
	argtypes[2] = INT8OID;
	catalog_exec("UPDATE stream_ext.backfills SET messages = messages + $2, "
				 "skipped = skipped + $3, last_error = NULL, updated_at = now() "
				 "WHERE view = $1::pg_catalog.regclass",
				 3, argtypes, args, NULL, SPI_OK_UPDATE);
	commit_xact();

	/* committed: now the in-memory offsets may move */
	for (int i = 0; i < R.npart; i++)
		R.next[i] = Max(R.next[i], R.taken[i]);
	for (int i = 0; i < R.nmsgs; i++)
		rd_kafka_message_destroy(R.msgs[i]);
	R.nmsgs = 0;
	return true;
}

/* is the replay still wanted (the view there, its state 'running')? */
static bool
still_running(void)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		result;

	begin_xact();
	args[0] = ObjectIdGetDatum(R.args.viewid);
	catalog_exec("SELECT 1 FROM stream_ext.backfills WHERE view = $1::pg_catalog.regclass "
				 "AND state = 'running'", 1, argtypes, args, NULL, SPI_OK_SELECT);
	result = SPI_processed > 0;
	commit_xact();
	return result;
}

/* replay until every partition reached its hand-over, or it is stopped */
static void
replay(void)
{
	TimestampTz last_check = GetCurrentTimestamp();

	setup_consumer();
	for (;;)
	{
		bool		done = true;
		bool		moved = false;

		kafka_check_interrupts();
		for (int i = 0; i < R.npart; i++)
			if (R.next[i] < R.end[i])
				done = false;
		if (done)
		{
			begin_xact();
			set_state("done", NULL);
			commit_xact();
			ereport(LOG,
					(errmsg("stream_ext: Kafka replay into continuous view \"%s\" done",
							R.viewname)));
			return;
		}
		consume_batch();
		for (int i = 0; i < R.npart; i++)
			if (R.taken[i] > R.next[i])
				moved = true;
		if (moved)
		{
			if (!apply_batch())
				return;
			R.backoff_ms = 0;
			last_check = GetCurrentTimestamp();
		}
		else if (TimestampDifferenceExceeds(last_check, GetCurrentTimestamp(), STATE_CHECK_MS))
		{
			if (!still_running())
				return;
			last_check = GetCurrentTimestamp();
		}
	}
}

/* one attempt; an error is retried from the stored offsets */
static void
attempt(void)
{
	if (load_replay())
		replay();
}

void
stream_ext_replay_worker_main(Datum main_arg)
{
	LOCKTAG		tag;

	memset(&R, 0, sizeof(R));
	memcpy(&R.args, MyBgworkerEntry->bgw_extra, sizeof(ReplayWorkerArgs));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* as the bootstrap superuser: it reads stream_ext's catalog */
	BackgroundWorkerInitializeConnectionByOid(R.args.dboid, InvalidOid, 0);
	se_pin_worker_search_path();
	pgstat_report_appname("stream_ext kafka replay");

	/* one worker per view, once the creating transaction is over */
	replay_locktag(&tag, R.args.viewid);
	kafka_bgworker_claim(&tag, R.args.wait_xid);

	R.cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext kafka replay",
								  ALLOCSET_DEFAULT_SIZES);
	R.batch_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext kafka replay batch",
										ALLOCSET_DEFAULT_SIZES);
	R.msg_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext kafka replay message",
									  ALLOCSET_DEFAULT_SIZES);

	kafka_bgworker_retry_loop(attempt, teardown_consumer, record_error, &R.backoff_ms);
	teardown_consumer();
	proc_exit(0);
}
