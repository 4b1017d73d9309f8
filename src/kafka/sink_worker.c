/*-------------------------------------------------------------------------
 *
 * sink_worker.c
 *	  Kafka sink worker: a dynamic background worker that produces the rows
 *	  queued for its sink (stream_ext.sink_queue) to the sink's topic, and
 *	  removes them from the queue once Kafka has acknowledged them.
 *
 * The worker connects as the sink's owner; the statements on stream_ext's
 * own tables run as the catalog owner.  One batch is:
 *
 *	1. in a short transaction: check the sink is still running and read up
 *	   to batch_size queued rows in seq order;
 *	2. produce them with the idempotent producer (enable.idempotence=true,
 *	   acks=all), each message carrying its batch index as opaque, and
 *	   serve delivery reports until every message is acknowledged or has
 *	   failed (message.timeout.ms bounds the wait);
 *	3. in one transaction: delete the acknowledged rows from the queue and
 *	   add them to the sink's counters (delivered_seq, rows_delivered).
 *
 * So a row acknowledged and recorded is never produced again; a row
 * acknowledged but not yet recorded when the server crashes is produced
 * again after the restart (at-least-once for those only).  SIGTERM (fast
 * shutdown, pg_terminate_backend) is handled between steps: the worker
 * waits for the outstanding acknowledgements (at most a few seconds),
 * records them and exits, so a clean restart re-sends nothing.  Failed
 * deliveries leave their rows queued; the producer is rebuilt after an
 * exponential backoff (100 ms .. 30 s) and they are produced again, the
 * error shown in stream_ext.sink_status.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "kafka/sink.h"

#define SHUTDOWN_FLUSH_MS	5000
#define DELIVERY_POLL_MS	100	/* wait for delivery reports */

typedef struct SinkWorker
{
	KafkaSinkWorkerArgs args;
	KafkaSinkSlot *slot;

	/* the sink (in sink_cxt) */
	char	   *name;
	char	   *brokers;
	char	   *topic;
	KafkaSinkOptions opts;

	/* the producer */
	rd_kafka_t *rk;
	rd_kafka_topic_t *rkt;

	/* the batch (in batch_cxt) */
	int			n;
	int64	   *seq;
	char	  **key;			/* NULL: no key */
	char	  **payload;		/* NULL: tombstone */
	bool	   *acked;
	int			pending;		/* produced, no delivery report yet */
	int			nfailed;
	char		dr_error[KAFKA_ERRMSG_LEN];

	MemoryContext sink_cxt;
	MemoryContext batch_cxt;
	int			backoff_ms;
} SinkWorker;

static SinkWorker S;

/* delivery report: runs inside rd_kafka_poll() in this process */
static void
dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	intptr_t	i = (intptr_t) m->_private;

	if (i < 0 || i >= S.n)
		return;
	S.pending--;
	if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
		S.acked[i] = true;
	else
	{
		if (S.nfailed == 0)
			snprintf(S.dr_error, sizeof(S.dr_error), "delivery to topic \"%s\" failed: %s",
					 S.topic, rd_kafka_err2str(m->err));
		S.nfailed++;
	}
}

/* the error shown in sink_status, counted in its errors */
static void
set_error(const char *msg, KafkaWorkerState state)
{
	kafka_worker_set_error(msg, state, true);
}

/* ----------------------------------------------------------------
 * Catalog access (SPI; caller manages the transaction)
 * ----------------------------------------------------------------
 */

/* load the sink's definition; false if it is not (or no longer) running */
static bool
load_sink(void)
{
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	MemoryContext old;

	tup = kafka_worker_read_row("SELECT name, brokers, topic, options "
								"FROM stream_ext.kafka_sinks WHERE id = $1", &desc);
	if (tup == NULL)
		return false;
	MemoryContextReset(S.sink_cxt);
	old = MemoryContextSwitchTo(S.sink_cxt);
	S.name = SPI_getvalue(tup, desc, 1);
	S.brokers = SPI_getvalue(tup, desc, 2);
	S.topic = SPI_getvalue(tup, desc, 3);
	kafka_sink_parse_options(DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 4, &isnull)),
							 &S.opts);
	MemoryContextSwitchTo(old);
	kafka_worker_loaded(S.name);
	return true;
}

/* ----------------------------------------------------------------
 * Producer
 * ----------------------------------------------------------------
 */

static void
teardown_producer(void)
{
	if (S.rkt)
		rd_kafka_topic_destroy(S.rkt);
	S.rkt = NULL;
	if (S.rk)
	{
		/* drop what is still queued locally; it stays in sink_queue */
		rd_kafka_purge(S.rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
		S.n = 0;				/* late delivery reports are ignored */
		rd_kafka_poll(S.rk, 0);
		rd_kafka_destroy(S.rk);
	}
	S.rk = NULL;
	S.pending = 0;
}

static void
setup_producer(void)
{
	rd_kafka_conf_t *conf;
	char		errstr[512];

	/* as the owner, whose rights may have changed since the sink was created */
	kafka_begin_xact();
	conf = kafka_sink_build_conf(S.brokers, &S.opts, S.args.owner);
	kafka_commit_xact();
	rd_kafka_conf_set_error_cb(conf, kafka_error_cb);
	rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
	S.rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (S.rk == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("cannot create Kafka producer: %s", errstr)));
	S.rkt = rd_kafka_topic_new(S.rk, S.topic, NULL);
	if (S.rkt == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot use Kafka topic \"%s\": %s", S.topic,
						rd_kafka_err2str(rd_kafka_last_error()))));
}

/* ----------------------------------------------------------------
 * One batch
 * ----------------------------------------------------------------
 */

/* read the next queued rows; -1 when the sink is no longer running */
static int
fetch_batch(void)
{
	Oid			argtypes[2] = {INT4OID, INT4OID};
	Datum		args[2];
	MemoryContext old;
	uint64		i;

	MemoryContextReset(S.batch_cxt);
	S.n = 0;
	S.pending = 0;
	S.nfailed = 0;
	S.dr_error[0] = '\0';

	kafka_begin_xact();
	if (!kafka_worker_is_running(false))
	{
		kafka_commit_xact();
		return -1;
	}
	args[0] = Int32GetDatum(S.args.sink_id);
	args[1] = Int32GetDatum(S.opts.batch_size);
	kafka_worker_exec("SELECT seq, key, payload FROM stream_ext.sink_queue "
					  "WHERE sink = $1 ORDER BY seq LIMIT $2",
					  2, argtypes, args, NULL, true, 0, SPI_OK_SELECT);

	old = MemoryContextSwitchTo(S.batch_cxt);
	S.seq = palloc(sizeof(int64) * Max(SPI_processed, 1));
	S.key = palloc(sizeof(char *) * Max(SPI_processed, 1));
	S.payload = palloc(sizeof(char *) * Max(SPI_processed, 1));
	S.acked = palloc0(sizeof(bool) * Max(SPI_processed, 1));
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;

		S.seq[i] = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		S.key[i] = SPI_getvalue(tup, SPI_tuptable->tupdesc, 2);
		S.payload[i] = SPI_getvalue(tup, SPI_tuptable->tupdesc, 3);
	}
	MemoryContextSwitchTo(old);
	i = SPI_processed;
	kafka_commit_xact();
	return (int) i;
}

/*
 * Hand the batch to librdkafka.  Returns NULL, or the error that stopped
 * it (the rows from there on stay queued).
 */
static char *
produce_batch(void)
{
	int			i;

	for (i = 0; i < S.n; i++)
	{
		for (;;)
		{
			rd_kafka_resp_err_t err;

			err = rd_kafka_producev(S.rk,
									RD_KAFKA_V_RKT(S.rkt),
									RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
									RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
									RD_KAFKA_V_KEY(S.key[i], S.key[i] ? strlen(S.key[i]) : 0),
									RD_KAFKA_V_VALUE(S.payload[i], S.payload[i] ? strlen(S.payload[i]) : 0),
									RD_KAFKA_V_OPAQUE((void *) (intptr_t) i),
									RD_KAFKA_V_END);
			if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			{
				S.pending++;
				break;
			}
			if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
				return psprintf("cannot produce row " INT64_FORMAT " to Kafka topic \"%s\": %s",
								S.seq[i], S.topic, rd_kafka_err2str(err));
			/* the local queue is full: serve delivery reports, then retry */
			rd_kafka_poll(S.rk, DELIVERY_POLL_MS);
			CHECK_FOR_INTERRUPTS();
		}
	}
	return NULL;
}

/*
 * Serve delivery reports until none is outstanding.  When the sink is
 * stopped or the worker asked to shut down, wait at most SHUTDOWN_FLUSH_MS
 * more.  Returns false if the worker should exit after recording.
 */
static bool
wait_for_acks(void)
{
	TimestampTz last_check = GetCurrentTimestamp();
	TimestampTz exit_since = 0;
	bool		keep_going = true;
	const char *rk_error;

	while (S.pending > 0)
	{
		TimestampTz now;

		rd_kafka_poll(S.rk, DELIVERY_POLL_MS);
		CHECK_FOR_INTERRUPTS();
		if ((rk_error = kafka_pending_error()) != NULL)
			set_error(rk_error, KWS_RETRYING);
		now = GetCurrentTimestamp();
		if (keep_going && ShutdownRequestPending)
			keep_going = false;
		if (keep_going && TimestampDifferenceExceeds(last_check, now, KAFKA_STATE_CHECK_MS))
		{
			last_check = now;
			keep_going = kafka_worker_is_running_xact();
		}
		if (!keep_going)
		{
			if (exit_since == 0)
				exit_since = now;
			else if (TimestampDifferenceExceeds(exit_since, now, SHUTDOWN_FLUSH_MS))
				break;
		}
	}
	return keep_going;
}

/* delete the acknowledged rows from the queue and count them, atomically */
static int
record_acked(void)
{
	Datum	   *elems;
	int			nacked = 0;
	int64		high = 0;
	int			i;
	ArrayType  *arr;
	Oid			argtypes[4] = {INT4OID, INT8ARRAYOID, INT8OID, INT8OID};
	Datum		args[4];
	MemoryContext old = MemoryContextSwitchTo(S.batch_cxt);

	elems = palloc(sizeof(Datum) * Max(S.n, 1));
	for (i = 0; i < S.n; i++)
		if (S.acked[i])
		{
			elems[nacked++] = Int64GetDatum(S.seq[i]);
			high = Max(high, S.seq[i]);
		}
	if (nacked == 0)
	{
		MemoryContextSwitchTo(old);
		return 0;
	}
	arr = construct_array(elems, nacked, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	MemoryContextSwitchTo(old);

	kafka_begin_xact();
	args[0] = Int32GetDatum(S.args.sink_id);
	args[1] = PointerGetDatum(arr);
	args[2] = Int64GetDatum(high);
	args[3] = Int64GetDatum(nacked);
	kafka_worker_exec("DELETE FROM stream_ext.sink_queue WHERE sink = $1 AND seq = ANY ($2)",
					  2, argtypes, args, NULL, false, 0, SPI_OK_DELETE);
	kafka_worker_exec("UPDATE stream_ext.kafka_sinks "
					  "SET delivered_seq = greatest(delivered_seq, $3), "
					  "rows_delivered = rows_delivered + $4, batches = batches + 1, "
					  "last_delivered_at = now() WHERE id = $1",
					  4, argtypes, args, NULL, false, 0, SPI_OK_UPDATE);
	kafka_commit_xact();

	LWLockAcquire(kafka_sink_shared->table.lock, LW_EXCLUSIVE);
	S.slot->rows += nacked;
	S.slot->batches++;
	S.slot->common.last_batch_time = GetCurrentTimestamp();
	LWLockRelease(kafka_sink_shared->table.lock);
	return nacked;
}

/* ----------------------------------------------------------------
 * Main loop
 * ----------------------------------------------------------------
 */

/* one pass; false when the worker should exit */
static bool
sink_iteration(void)
{
	int			n;
	bool		keep_going;
	char	   *produce_error;
	const char *rk_error;

	if (S.rk == NULL)
	{
		if (!kafka_worker_is_running_xact())
			return false;
		kafka_worker_set_state(KWS_STARTING);
		setup_producer();
		kafka_worker_set_state(KWS_RUNNING);
	}

	n = fetch_batch();
	if (n < 0)
		return false;
	if (n == 0)
	{
		rd_kafka_poll(S.rk, 0);
		if ((rk_error = kafka_pending_error()) != NULL)
			set_error(rk_error, S.slot->common.state);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 S.opts.poll_interval_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		return !ShutdownRequestPending;
	}

	S.n = n;
	produce_error = produce_batch();
	keep_going = wait_for_acks();
	record_acked();
	if (produce_error)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s", produce_error),
				 errdetail("The row and the ones after it stay queued."),
				 errhint("A row larger than message.max.bytes needs a larger one in the sink's options.")));
	if (S.nfailed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("%s", S.dr_error),
				 errdetail("%d of %d rows were not acknowledged; they stay queued and are produced again.",
						   S.nfailed, S.n)));
	if (S.pending > 0)
	{
		ereport(LOG,
				(errmsg("stream_ext: Kafka sink \"%s\" stops with %d rows not yet acknowledged",
						S.name, S.pending),
				 errdetail("They stay queued and are produced again when the sink next runs.")));
		/* never let this producer deliver them behind the next batch */
		teardown_producer();
	}
	else
	{
		kafka_worker_set_state(KWS_RUNNING);
		S.backoff_ms = 0;
	}
	return keep_going && !ShutdownRequestPending;
}

static bool
has_producer(void)
{
	return S.rk != NULL;
}

void
stream_ext_kafka_sink_worker_main(Datum main_arg)
{
	KafkaWorkerLoop loop;

	memset(&S, 0, sizeof(S));
	memcpy(&S.args, MyBgworkerEntry->bgw_extra, sizeof(KafkaSinkWorkerArgs));

	/*
	 * connect as the sink's owner, claim the slot, wait for start_sink;
	 * SIGTERM: finish the batch's acknowledgements, record them, exit
	 */
	S.slot = (KafkaSinkSlot *) kafka_worker_attach(&kafka_sink_kind,
												   SignalHandlerForShutdownRequest,
												   S.args.dboid, S.args.catalog_relid,
												   S.args.owner, S.args.sink_id, 0,
												   S.args.wait_xid);

	S.sink_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext kafka sink",
									   ALLOCSET_DEFAULT_SIZES);
	S.batch_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext kafka sink batch",
										ALLOCSET_DEFAULT_SIZES);

	if (!load_sink())
		proc_exit(0);

	/*
	 * After an error the unacknowledged rows are still queued: rebuild the
	 * producer and send them again.  A stop that a start followed while the
	 * worker flushed does not end it.
	 */
	loop.iteration = sink_iteration;
	loop.teardown = teardown_producer;
	loop.has_client = has_producer;
	loop.recheck_on_exit = true;
	loop.count_errors = true;
	loop.backoff_ms = &S.backoff_ms;
	kafka_worker_main_loop(&loop);

	teardown_producer();
	ereport(LOG,
			(errmsg("stream_ext: Kafka sink \"%s\" worker exiting", S.name ? S.name : "?")));
	proc_exit(0);
}
