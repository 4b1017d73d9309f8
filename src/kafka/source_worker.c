/*-------------------------------------------------------------------------
 *
 * source_worker.c
 *	  Kafka source worker: a dynamic background worker that consumes its
 *	  share of a source's partitions and loads them, batch by batch, into
 *	  the source's stream.
 *
 * The worker connects as the source's owner, so the stream INSERT (and
 * every continuous view trigger it fires) runs with the owner's rights;
 * only the bookkeeping statements on stream_ext's own tables run as the
 * catalog owner.  One batch is one transaction:
 *
 *	1. lock the source row (FOR KEY SHARE) and check it is still running;
 *	2. decode every message into a tuple (decode.c) inside one
 *	   subtransaction; a message that fails rolls back only that
 *	   subtransaction, is set aside as a dead letter, and decoding goes on
 *	   in a fresh one from the next message;
 *	3. insert the decoded tuples as one statement, so the stream's
 *	   statement-level triggers fire once per batch: bulk_insert.c does
 *	   it like COPY FROM (multi-insert, no planning); for a stream it cannot
 *	   handle (row-level security, BEFORE ROW triggers, rules) the batch is
 *	   an ephemeral named relation for INSERT INTO stream SELECT ... FROM it.
 *	   Should it fail, the bad rows are found by bisection (halves of the
 *	   batch inserted in subtransactions, a failing half split again; failure
 *	   path only) and dead-lettered;
 *	4. insert the dead letters and upsert the next offset of every
 *	   partition in stream_ext.kafka_offsets;
 *	5. commit.
 *
 * Kafka offsets are never committed to the broker: the stored offsets are
 * the only truth, so a batch is applied exactly once.  A transient error
 * anywhere in the batch (a deadlock, a serialization failure, a lock
 * timeout, a cancel request, out of memory or shared memory, a schema
 * registry that does not answer: never a message's fault) rolls back the
 * whole transaction, and the same
 * messages are applied again after a backoff (100 ms .. 10 s, with
 * jitter), the worker keeping them meanwhile.  After any other failure the consumer is torn
 * down and rebuilt from the stored offsets after an exponential backoff
 * (100 ms .. 30 s).  Either way the error is shown in
 * stream_ext.source_status.  Per-batch memory lives in contexts reset for
 * every batch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/queryenvironment.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "core/util.h"
#include "kafka/decode.h"
#include "kafka/source.h"
#include "kafka/bulk_insert.h"

#define BATCH_ENR_NAME	"stream_ext_batch"
#define IDLE_POLL_MS	250
#define METADATA_CHECK_MS 30000
#define RETRY_MIN_MS	100		/* backoff of a batch retried after a transient error */
#define RETRY_MAX_MS	10000
#define ERROR_REPORT_MS	100

typedef enum BatchResult
{
	BATCH_OK,
	BATCH_SOURCE_GONE,			/* stopped, dropped or failed: exit */
	BATCH_STOP_ON_ERROR			/* on_error = 'stop' hit a bad message */
} BatchResult;

/* a message that could not be loaded */
typedef struct DeadLetter
{
	int			msgidx;
	char	   *error;
} DeadLetter;

/* the batch being applied (apply_batch(); arrays in W.batch_cxt) */
typedef struct Batch
{
	HeapTuple  *tuples;			/* decoded, in the order of W.msgs */
	int		   *tuple_msg;		/* the W.msgs index of each tuple */
	int			ntuples;
	DeadLetter *dead;			/* messages that could not be loaded */
	int			ndead;
	uint64		nbytes;			/* of all the messages */
	char	   *stop_error;		/* on_error = 'stop': why the batch stops */
} Batch;

typedef struct SourceWorker
{
	KafkaSourceWorkerArgs args;
	KafkaSourceSlot *slot;

	/* the source (in source_cxt) */
	char	   *name;
	Oid			stream;
	char	   *brokers;
	char	   *topic;
	KafkaFormat format;
	KafkaOptions opts;
	KafkaDecoder *dec;
	char	   *insert_sql;
	AttrNumber *attnums;		/* stream attribute of each decoded column */
	char	   *group_id;

	/* the consumer */
	rd_kafka_t *rk;
	char		client_error[KAFKA_ERRMSG_LEN];	/* librdkafka's last, in setup */
	bool		client_failing;	/* librdkafka reported an error since the
								 * cluster last answered a metadata request */
	rd_kafka_queue_t *rkq;
	int			npartitions;	/* of the topic, as last seen */
	int			nmine;
	int32	   *mine;			/* my partitions */
	int64	   *next_offset;	/* stored (committed) next offset per mine[] */
	int64	   *position;		/* next offset to poll per mine[] */
	int64	   *woken_at;		/* position at the last wake_fetcher() */
	int64		queue_min_msgs; /* librdkafka's queued.min.messages */
	int64		queue_max_bytes;	/* and queued.max.messages.kbytes */
	bool		queue_filled;	/* was near either since the last wake */
	double		avg_msg_len;	/* of the last batch */
	int64	   *taken;			/* scratch: next offset the batch may take */
	int64	   *high_watermark;

	/* the batch */
	rd_kafka_message_t **msgs;
	int			nmsgs;
	TimestampTz batch_started;	/* when its first message was polled */
	TimestampTz batch_done;		/* when the previous batch was applied */
	bool		trimmed;		/* memory given back since that batch */

	MemoryContext source_cxt;
	MemoryContext batch_cxt;
	MemoryContext msg_cxt;

	/* pacing */
	int			backoff_ms;
	int			retry_ms;		/* backoff of the batch being retried */
	int			retries;		/* of the batch being retried */
	pg_prng_state prng;			/* jitter of that backoff */
	TimestampTz last_state_check;
	TimestampTz last_metadata_check;
	TimestampTz rate_time;
	uint64		rate_messages;
} SourceWorker;

static SourceWorker W;

/* ----------------------------------------------------------------
 * Shared memory slot
 * ----------------------------------------------------------------
 */

/* the error shown in source_status (bad messages are counted by batch) */
static void
set_error(const char *msg, KafkaWorkerState state)
{
	kafka_worker_set_error(msg, state, false);
}

/* an error of librdkafka's (a broker refusing, a failed handshake, ...) */
static void
set_client_error(const char *msg)
{
	W.client_failing = true;
	set_error(msg, KWS_RETRYING);
}

static void
publish_partitions(void)
{
	int			i;

	LWLockAcquire(kafka_source_shared->table.lock, LW_EXCLUSIVE);
	W.slot->npartitions = Min(W.nmine, KAFKA_MAX_WORKER_PARTITIONS);
	for (i = 0; i < W.slot->npartitions; i++)
	{
		W.slot->partitions[i].partition = W.mine[i];
		W.slot->partitions[i].next_offset = W.next_offset[i];
		W.slot->partitions[i].high_watermark = W.high_watermark[i];
	}
	LWLockRelease(kafka_source_shared->table.lock);
}

/* refresh the cached high watermarks (non-blocking) */
static void
refresh_watermarks(void)
{
	int			i;

	if (W.rk == NULL)
		return;
	for (i = 0; i < W.nmine; i++)
	{
		int64_t		lo,
					hi;

		if (rd_kafka_get_watermark_offsets(W.rk, W.topic, W.mine[i], &lo, &hi) ==
			RD_KAFKA_RESP_ERR_NO_ERROR && hi >= 0)
			W.high_watermark[i] = hi;
	}
}

/* ----------------------------------------------------------------
 * Catalog access (SPI; caller manages the transaction)
 * ----------------------------------------------------------------
 */

/*
 * INSERT INTO stream (cols) SELECT cols FROM enrname, cols being dec's
 * target columns: the batch's insert where kafka_bulk_insert() cannot
 * stand in for it (see insert_tuples()).  Exported for the decoder's fuzz
 * harness (test/fuzz), which checks that it parses for any options.
 */
char *
kafka_decoder_insert_sql(const KafkaDecoder *dec, const char *enrname)
{
	StringInfoData cols;
	StringInfoData sql;
	char	   *nspname = get_namespace_name(get_rel_namespace(dec->relid));
	char	   *relname = get_rel_name(dec->relid);
	int			i;

	if (nspname == NULL || relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("stream with OID %u does not exist", dec->relid)));

	initStringInfo(&cols);
	for (i = 0; i < dec->ncolumns; i++)
	{
		if (i > 0)
			appendStringInfoString(&cols, ", ");
		appendStringInfoString(&cols, quote_identifier(dec->columns[i].name));
	}
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (%s) SELECT %s FROM %s",
					 quote_qualified_identifier(nspname, relname),
					 cols.data, cols.data, quote_identifier(enrname));
	return sql.data;
}

/* load the source definition; false if it is not (or no longer) running */
static bool
load_source(void)
{
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	MemoryContext old;
	int			i;

	tup = kafka_worker_read_row("SELECT name, stream::oid, brokers, topic, format, options "
								"FROM stream_ext.kafka_sources WHERE id = $1", &desc);
	if (tup == NULL)
		return false;

	MemoryContextReset(W.source_cxt);
	old = MemoryContextSwitchTo(W.source_cxt);
	W.name = SPI_getvalue(tup, desc, 1);
	W.stream = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	W.brokers = SPI_getvalue(tup, desc, 3);
	W.topic = SPI_getvalue(tup, desc, 4);
	W.format = kafka_parse_format(SPI_getvalue(tup, desc, 5));
	kafka_parse_options(DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 6, &isnull)),
						&W.opts);
	W.dec = kafka_decoder_create(W.stream, W.format, &W.opts);
	W.insert_sql = kafka_decoder_insert_sql(W.dec, BATCH_ENR_NAME);
	W.attnums = palloc(sizeof(AttrNumber) * W.dec->ncolumns);
	for (i = 0; i < W.dec->ncolumns; i++)
		W.attnums[i] = W.dec->columns[i].attnum;
	W.group_id = psprintf("stream_ext-%s", W.name);
	W.msgs = palloc0(sizeof(rd_kafka_message_t *) * W.opts.batch_size);
	MemoryContextSwitchTo(old);
	kafka_worker_loaded(W.name);
	return true;
}

/* ----------------------------------------------------------------
 * Consumer
 * ----------------------------------------------------------------
 */

static void
free_batch_messages(void)
{
	int			i;

	for (i = 0; i < W.nmsgs; i++)
		rd_kafka_message_destroy(W.msgs[i]);
	W.nmsgs = 0;
}

static void
teardown_consumer(void)
{
	free_batch_messages();
	if (W.rkq)
		rd_kafka_queue_destroy(W.rkq);
	W.rkq = NULL;
	if (W.rk)
		rd_kafka_destroy(W.rk);
	W.rk = NULL;
}

/*
 * Show the errors librdkafka reported (a broker refusing the connection,
 * a failed SASL handshake, ...) in source_status at once; the last one is
 * kept in W.client_error.  Only before the partitions are assigned: it
 * serves the consumer queue, where messages would come from too.
 */
static void
report_client_errors(void)
{
	rd_kafka_message_t *m;
	const char *e;

	while ((m = rd_kafka_consumer_poll(W.rk, 0)) != NULL)
	{
		if (m->err)
			snprintf(W.client_error, sizeof(W.client_error), "%s: %s",
					 rd_kafka_err2name(m->err), rd_kafka_message_errstr(m));
		rd_kafka_message_destroy(m);
	}
	if ((e = kafka_pending_error()) != NULL)
		strlcpy(W.client_error, e, sizeof(W.client_error));
	if (W.client_error[0] != '\0' &&
		strcmp(W.client_error, W.slot->common.last_error) != 0)
		set_client_error(W.client_error);
}

/*
 * Number of partitions of the topic; ereports if unknown or missing.  With
 * report_errors (while setting up the consumer), the wait for a broker
 * that answers is cut into slices (100 ms, then doubled: a slow broker
 * still gets its time), between which librdkafka's errors are reported,
 * and the error raised names the last of them.
 */
static int
topic_partition_count(int timeout_ms, bool report_errors)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(W.rk, W.topic, NULL);
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	long		slice = report_errors ? ERROR_REPORT_MS : timeout_ms;
	int			n;

	for (;;)
	{
		long		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

		err = rd_kafka_metadata(W.rk, 0, rkt, &md, (int) Min(remaining, slice));
		if (!report_errors)
			break;
		slice *= 2;
		report_client_errors();
		if ((err != RD_KAFKA_RESP_ERR__TRANSPORT && err != RD_KAFKA_RESP_ERR__TIMED_OUT) ||
			GetCurrentTimestamp() >= deadline)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	rd_kafka_topic_destroy(rkt);
	if (err)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("cannot get metadata of Kafka topic \"%s\" from %s: %s",
						W.topic, W.brokers,
						report_errors && W.client_error[0] ? W.client_error :
						rd_kafka_err2str(err))));
	if (md->topic_cnt != 1 || md->topics[0].err ||
		md->topics[0].partition_cnt == 0)
	{
		err = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
		rd_kafka_metadata_destroy(md);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("Kafka topic \"%s\" is not available: %s",
						W.topic, err ? rd_kafka_err2str(err) : "no partitions")));
	}
	n = md->topics[0].partition_cnt;
	rd_kafka_metadata_destroy(md);
	return n;
}

/* the concrete start offset of a partition with no stored offset */
static int64
resolve_start_offset(int32 partition)
{
	int64_t		lo,
				hi;
	rd_kafka_resp_err_t err;
	int64		given;

	/* moved here from another node: where that node's last batch ended */
	if (kafka_share_start_offset(&W.opts, partition, &given))
		return given;
	if (W.opts.start == KAFKA_START_OFFSET)
		return W.opts.start_offset;

	err = rd_kafka_query_watermark_offsets(W.rk, W.topic, partition, &lo, &hi, KAFKA_REQUEST_TIMEOUT_MS);
	if (err)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("cannot query offsets of Kafka topic \"%s\" partition %d: %s",
						W.topic, partition, rd_kafka_err2str(err))));
	if (W.opts.start == KAFKA_START_EARLIEST)
		return lo;
	if (W.opts.start == KAFKA_START_LATEST)
		return hi;

	/* timestamp */
	{
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
		int64		off;

		rd_kafka_topic_partition_list_add(l, W.topic, partition)->offset =
			W.opts.start_timestamp_ms;
		err = rd_kafka_offsets_for_times(W.rk, l, KAFKA_REQUEST_TIMEOUT_MS);
		off = l->elems[0].err ? -1 : l->elems[0].offset;
		rd_kafka_topic_partition_list_destroy(l);
		if (err)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("cannot look up offsets by timestamp in Kafka topic \"%s\": %s",
							W.topic, rd_kafka_err2str(err))));
		return off < 0 ? hi : off;
	}
}

/* an integer property of a librdkafka configuration */
static int64
conf_int(const rd_kafka_conf_t *conf, const char *name, int64 dflt)
{
	char		buf[64];
	size_t		len = sizeof(buf);

	if (rd_kafka_conf_get(conf, name, buf, &len) != RD_KAFKA_CONF_OK)
		return dflt;
	return strtoll(buf, NULL, 10);
}

/*
 * Create the consumer, find my partitions, and assign them at their stored
 * offsets (resolving and storing the start offset of new partitions).
 */
static void
setup_consumer(void)
{
	rd_kafka_conf_t *conf;
	rd_kafka_topic_partition_list_t *assign;
	Oid			argtypes[4] = {TEXTOID, INT4OID, INT8OID, INT8OID};
	Datum		args[4];
	int			p,
				i;
	MemoryContext old;

	/* as the owner, whose rights may have changed since the source was created */
	kafka_begin_xact();
	conf = kafka_build_conf(W.brokers, &W.opts, W.group_id, W.args.owner);
	kafka_commit_xact();
	W.client_error[0] = '\0';
	W.rk = kafka_new_consumer(conf);
	W.rkq = rd_kafka_queue_get_consumer(W.rk);
	W.queue_min_msgs = conf_int(rd_kafka_conf(W.rk), "queued.min.messages", 100000);
	W.queue_max_bytes = conf_int(rd_kafka_conf(W.rk), "queued.max.messages.kbytes", 65536) * 1024;
	W.queue_filled = false;

	W.npartitions = topic_partition_count(KAFKA_REQUEST_TIMEOUT_MS, true);

	old = MemoryContextSwitchTo(W.source_cxt);
	W.mine = palloc(sizeof(int32) * W.npartitions);
	W.next_offset = palloc(sizeof(int64) * W.npartitions);
	W.position = palloc(sizeof(int64) * W.npartitions);
	W.woken_at = palloc(sizeof(int64) * W.npartitions);
	W.taken = palloc(sizeof(int64) * W.npartitions);
	W.high_watermark = palloc(sizeof(int64) * W.npartitions);
	MemoryContextSwitchTo(old);
	/*
	 * The source's share of the partitions (all, or its "partitions" or
	 * "node"/"nodes"); the k-th partition of the share goes to worker k mod
	 * workers (without a share, partition p to worker p mod workers).
	 */
	W.nmine = 0;
	i = 0;
	for (p = 0; p < W.npartitions; p++)
	{
		if (!kafka_partition_in_share(&W.opts, p))
			continue;
		if (i++ % W.args.nworkers == W.args.worker)
		{
			W.mine[W.nmine] = p;
			W.next_offset[W.nmine] = -1;
			W.high_watermark[W.nmine] = -1;
			W.nmine++;
		}
	}

	/* stored offsets */
	kafka_begin_xact();
	args[0] = CStringGetTextDatum(W.name);
	kafka_worker_exec("SELECT partition, next_offset FROM stream_ext.kafka_offsets "
								"WHERE source = $1", 1, argtypes, args, NULL, true, 0,
				 SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;
		int32		part = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		int64		off = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));

		for (p = 0; p < W.nmine; p++)
			if (W.mine[p] == part)
				W.next_offset[p] = off;
	}
	/* new partitions: resolve and store their start, so restarts agree */
	for (p = 0; p < W.nmine; p++)
	{
		if (W.next_offset[p] >= 0)
			continue;
		W.next_offset[p] = resolve_start_offset(W.mine[p]);
		args[1] = Int32GetDatum(W.mine[p]);
		args[2] = Int64GetDatum(W.next_offset[p]);
		args[3] = Int64GetDatum(W.next_offset[p]);
		kafka_worker_exec("INSERT INTO stream_ext.kafka_offsets "
									"(source, partition, next_offset, high_watermark) "
									"VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
									4, argtypes, args, NULL, false, 0,
					 SPI_OK_INSERT);
	}
	kafka_commit_xact();

	assign = rd_kafka_topic_partition_list_new(Max(W.nmine, 1));
	for (p = 0; p < W.nmine; p++)
		rd_kafka_topic_partition_list_add(assign, W.topic, W.mine[p])->offset =
			W.next_offset[p];
	{
		rd_kafka_resp_err_t err = rd_kafka_assign(W.rk, assign);

		rd_kafka_topic_partition_list_destroy(assign);
		if (err)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("cannot assign Kafka partitions: %s", rd_kafka_err2str(err))));
	}
	for (p = 0; p < W.nmine; p++)
	{
		W.position[p] = W.next_offset[p];
		W.woken_at[p] = -1;
	}
	W.last_metadata_check = GetCurrentTimestamp();
	publish_partitions();
	ereport(LOG,
			(errmsg("stream_ext: Kafka source \"%s\" worker %d consuming %d of %d partitions of topic \"%s\"",
					W.name, W.args.worker, W.nmine, W.npartitions, W.topic)));
}

/* index in mine[] (ascending) of one of my partitions, or -1 */
static int
mine_index(int32 partition)
{
	int			lo = 0,
				hi = W.nmine - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (W.mine[mid] == partition)
			return mid;
		if (W.mine[mid] < partition)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/*
 * The local queue ran dry: make sure librdkafka is fetching.
 *
 * librdkafka 2.0 stops fetching while its consumer queue holds
 * queued.min.messages (or queued.max.messages.kbytes) and decides to fetch
 * again only when its broker thread next wakes up: on I/O, on an operation
 * queued for it, or after up to a second (librdkafka 2.1 made this
 * fetch.queue.backoff.ms).  A worker that drains those messages faster
 * than that would wait for the rest of the second.  So when the queue was
 * (nearly) full since the last wake-up and is now empty, and a partition is
 * known to have more messages on the broker (its high watermark, as of the
 * last fetch, is beyond what we polled), seek that partition to where we
 * are: nothing is skipped or read twice, and the seek wakes the broker
 * thread, which fetches at once.
 *
 * It must not block: a synchronous request (say, for the partition's
 * offsets) waits far beyond its timeout while the broker is down, and the
 * worker would stop noticing anything.  Nor resume the partitions, though
 * never paused: librdkafka before 2.4 then restarts the fetch from the
 * offset the partition was assigned at, and everything since is read
 * again.  A seek purges what was fetched for the partition and not yet
 * polled, hence only with the queue empty, and not while it never came
 * near the thresholds (then the fetcher is busy and a fetch may be under
 * way).  Once per position of a partition: a worker that is caught up
 * seeks nothing, nor does one whose partition's high watermark stays
 * beyond the last message (a transaction marker).
 */
static void
wake_fetcher(void)
{
	rd_kafka_topic_partition_list_t *seek = NULL;
	int			i;

	if (!W.queue_filled)
		return;
	W.queue_filled = false;
	for (i = 0; i < W.nmine; i++)
	{
		int64_t		lo,
					hi;

		if (W.woken_at[i] == W.position[i] ||
			rd_kafka_get_watermark_offsets(W.rk, W.topic, W.mine[i], &lo, &hi) !=
			RD_KAFKA_RESP_ERR_NO_ERROR || hi <= W.position[i])
			continue;
		W.woken_at[i] = W.position[i];
		if (seek == NULL)
			seek = rd_kafka_topic_partition_list_new(W.nmine);
		rd_kafka_topic_partition_list_add(seek, W.topic, W.mine[i])->offset =
			W.position[i];
	}
	if (seek != NULL)
	{
		rd_kafka_error_t *error = rd_kafka_seek_partitions(W.rk, seek, 0);

		if (error != NULL)
			rd_kafka_error_destroy(error);
		rd_kafka_topic_partition_list_destroy(seek);
	}
}

/*
 * Nothing came for IDLE_POLL_MS: give freed memory back to the OS, once per
 * idle period.  librdkafka's fetcher allocates the prefetched messages in
 * its own thread's malloc arena; glibc returns an arena's free memory only
 * from its top, so after a burst the worker would otherwise keep a
 * varying part of the prefetch queue's high-water mark (docs/kafka.md,
 * "Worker memory over long runs").
 */
static void
release_idle_memory(void)
{
	if (W.trimmed)
		return;
	W.trimmed = true;
#ifdef __GLIBC__
	(void) malloc_trim(0);
#endif
}

/* add a polled message to the batch, and advance its partition's position */
static inline void
add_message(rd_kafka_message_t *m)
{
	int			i;

	W.msgs[W.nmsgs++] = m;
	if (!m->err && (i = mine_index(m->partition)) >= 0 && m->offset >= W.position[i])
		W.position[i] = m->offset + 1;
}

/*
 * Collect up to batch_size messages: wait up to IDLE_POLL_MS for the first,
 * then up to max_wait_ms for the rest.  One rd_kafka_consumer_poll() per
 * message (served from librdkafka's local queue): librdkafka 2.0's batch
 * consume API is known to skip messages.
 */
static void
consume_batch(void)
{
	rd_kafka_message_t *m;
	TimestampTz deadline;
	bool		woken = false;
	int			i,
				keep,
				nold;

	W.nmsgs = 0;
	if (W.rkq != NULL)
	{
		/* what we take before looking again counts, hence + batch_size */
		double		queued = (double) rd_kafka_queue_length(W.rkq) + W.opts.batch_size;

		if (queued >= W.queue_min_msgs ||
			queued * W.avg_msg_len >= W.queue_max_bytes)
			W.queue_filled = true;
	}
	m = rd_kafka_consumer_poll(W.rk, 0);
	if (m == NULL)
	{
		wake_fetcher();
		woken = true;
		m = rd_kafka_consumer_poll(W.rk, IDLE_POLL_MS);
	}
	if (m == NULL)
	{
		release_idle_memory();
		return;
	}
	W.trimmed = false;
	add_message(m);
	W.batch_started = GetCurrentTimestamp();
	deadline = TimestampTzPlusMilliseconds(W.batch_started, W.opts.max_wait_ms);
	while (W.nmsgs < W.opts.batch_size)
	{
		/* whatever is already queued, without waiting */
		m = rd_kafka_consumer_poll(W.rk, 0);
		if (m == NULL)
		{
			long		remaining;

			if (!woken)
			{
				wake_fetcher();
				woken = true;
			}
			remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
			if (remaining <= 0)
				break;
			m = rd_kafka_consumer_poll(W.rk, (int) remaining);
			if (m == NULL)
				break;
		}
		add_message(m);
		/* a steady trickle must not hold the batch past its deadline */
		if ((W.nmsgs & 1023) == 0 && GetCurrentTimestamp() >= deadline)
			break;
	}

	/*
	 * Consumer errors travel as messages: record, drop.  So do messages
	 * read before: below the partition's stored offset (applied by an
	 * earlier batch) or not beyond the last one taken into this batch.
	 * librdkafka should never deliver them, but exactly-once must not
	 * depend on it (librdkafka < 2.4 does after resuming a partition that
	 * was not paused).  Offsets also go backwards when a topic is deleted
	 * and created again under the same name: its messages below the stored
	 * offsets are dropped too, and logged.
	 */
	for (i = 0; i < W.nmine; i++)
		W.taken[i] = W.next_offset[i];
	keep = 0;
	nold = 0;
	for (i = 0; i < W.nmsgs; i++)
	{
		rd_kafka_message_t *m = W.msgs[i];
		int			p;

		if (m->err)
		{
			char		buf[KAFKA_ERRMSG_LEN];

			snprintf(buf, sizeof(buf), "%s: %s", rd_kafka_err2name(m->err),
					 rd_kafka_message_errstr(m));
			set_client_error(buf);
			rd_kafka_message_destroy(m);
			continue;
		}
		if ((p = mine_index(m->partition)) >= 0)
		{
			if (m->offset < W.taken[p])
			{
				nold++;
				rd_kafka_message_destroy(m);
				continue;
			}
			W.taken[p] = m->offset + 1;
		}
		W.msgs[keep++] = m;
	}
	W.nmsgs = keep;
	if (nold > 0)
		ereport(LOG,
				(errmsg("stream_ext: Kafka source \"%s\" worker %d dropped %d messages read before",
						W.name, W.args.worker, nold),
				 errdetail("Their offsets are below the next offset stored for their partition, or repeat offsets of the batch.")));
}

/* ----------------------------------------------------------------
 * Batch application
 * ----------------------------------------------------------------
 */

/* a consumed message as the decoder takes it (also the Kafka replay's, replay_worker.c) */
void
kafka_message_from_rd(rd_kafka_message_t *m, KafkaMessage *km)
{
	rd_kafka_timestamp_type_t tstype;

	km->payload = m->payload;
	km->len = m->len;
	km->key = m->key;
	km->keylen = m->key_len;
	km->partition = m->partition;
	km->offset = m->offset;
	km->timestamp_ms = rd_kafka_message_timestamp(m, &tstype);
	if (tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE)
		km->timestamp_ms = -1;
}

static Datum
bytea_datum(const void *data, size_t len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	if (len)
		memcpy(VARDATA(b), data, len);
	return PointerGetDatum(b);
}

/* a one-dimensional array of n elements of type elmtype */
static Datum
make_array(Datum *elems, bool *nulls, int n, Oid elmtype)
{
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;

	get_typlenbyvalalign(elmtype, &elmlen, &elmbyval, &elmalign);
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs, elmtype,
											  elmlen, elmbyval, elmalign));
}

/*
 * Insert the batch's dead letters, in the order of dead[], with one
 * statement: a batch with 1% bad messages has a hundred of them.
 */
static void
insert_dead_letters(DeadLetter *dead, int ndead)
{
	Oid			argtypes[6] = {TEXTOID, INT4ARRAYOID, INT8ARRAYOID, BYTEAARRAYOID,
	BYTEAARRAYOID, TEXTARRAYOID};
	Datum		args[6];
	Datum	   *part = palloc(sizeof(Datum) * ndead);
	Datum	   *off = palloc(sizeof(Datum) * ndead);
	Datum	   *key = palloc(sizeof(Datum) * ndead);
	Datum	   *payload = palloc(sizeof(Datum) * ndead);
	Datum	   *error = palloc(sizeof(Datum) * ndead);
	bool	   *nokey = palloc(sizeof(bool) * ndead);
	bool	   *nopayload = palloc(sizeof(bool) * ndead);
	int			i;

	for (i = 0; i < ndead; i++)
	{
		rd_kafka_message_t *m = W.msgs[dead[i].msgidx];

		part[i] = Int32GetDatum(m->partition);
		off[i] = Int64GetDatum(m->offset);
		nokey[i] = (m->key == NULL);
		key[i] = nokey[i] ? (Datum) 0 : bytea_datum(m->key, m->key_len);
		nopayload[i] = (m->payload == NULL);
		payload[i] = nopayload[i] ? (Datum) 0 : bytea_datum(m->payload, m->len);
		error[i] = CStringGetTextDatum(dead[i].error);
	}
	args[0] = CStringGetTextDatum(W.name);
	args[1] = make_array(part, NULL, ndead, INT4OID);
	args[2] = make_array(off, NULL, ndead, INT8OID);
	args[3] = make_array(key, nokey, ndead, BYTEAOID);
	args[4] = make_array(payload, nopayload, ndead, BYTEAOID);
	args[5] = make_array(error, NULL, ndead, TEXTOID);
	kafka_worker_exec("INSERT INTO stream_ext.dead_letters "
					  "(source, partition, \"offset\", key, payload, error) "
					  "SELECT $1, d.p, d.o, d.k, d.v, d.e "
					  "FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), "
					  "pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6)) "
					  "WITH ORDINALITY AS d(p, o, k, v, e, n) ORDER BY d.n",
					  6, argtypes, args, NULL, false, 0, SPI_OK_INSERT);
}

static void
register_enr(const char *name, Tuplestorestate *ts, int ntuples)
{
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
	int			ret;

	enr->md.name = (char *) name;
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = W.dec->tupdesc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = ntuples;
	enr->reldata = ts;
	ret = SPI_register_relation(enr);
	if (ret != SPI_OK_REL_REGISTER)
		elog(ERROR, "SPI_register_relation failed: %s", SPI_result_code_string(ret));
}

/*
 * Is this error transient, never the fault of a message?  Class 40
 * (deadlock, serialization failure), class 53 (insufficient resources: out
 * of memory, out of shared memory, disk full), class 08 (a connection
 * failed: a schema registry that does not answer, registry.c), 55P03
 * (lock_timeout) and 57014 (a cancel request).  The whole batch is then
 * rolled back and applied again after a backoff (apply_batch_retrying());
 * only the other errors make dead letters.
 */
bool
kafka_transient_error(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_TRANSACTION_ROLLBACK:
		case ERRCODE_INSUFFICIENT_RESOURCES:
		case ERRCODE_CONNECTION_EXCEPTION:
			return true;
		default:
			return sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
				sqlerrcode == ERRCODE_QUERY_CANCELED;
	}
}

/*
 * After a subtransaction that failed with edata was rolled back: a
 * transient error is not the message's fault, so it goes on up to
 * apply_batch_retrying(), which rolls back and retries the whole batch.
 */
static void
rethrow_transient(ErrorData *edata)
{
	if (kafka_transient_error(edata->sqlerrcode))
		ReThrowError(edata);
}

/* one INSERT of insert_in_subxact() */
typedef struct InsertCall
{
	const char *sql;
	HeapTuple  *tuples;
	int			ntuples;
	bool	   *unsupported;
} InsertCall;

static void
insert_call(void *arg)
{
	InsertCall *call = arg;

	if (call->sql == NULL)
		*call->unsupported = !kafka_bulk_insert(W.stream, W.dec->tupdesc, W.attnums,
												call->tuples, call->ntuples);
	else
	{
		int			ret = SPI_execute(call->sql, false, 0);

		if (ret != SPI_OK_INSERT)
			elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(ret));
	}
}

/*
 * Run one INSERT of the batch (or of a part of it) in a subtransaction:
 * the statement sql, or with sql NULL the ntuples tuples through
 * kafka_bulk_insert(), which sets *unsupported (and does nothing) when it
 * cannot stand in for the statement.  Returns NULL when it succeeded, else
 * the error message (allocated in the batch context), the subtransaction
 * rolled back so the batch can go on; a transient error is rethrown.
 */
static char *
insert_in_subxact(const char *sql, HeapTuple *tuples, int ntuples,
				  bool *unsupported)
{
	InsertCall	call = {sql, tuples, ntuples, unsupported};
	ErrorData  *edata = se_try_in_subxact(insert_call, &call, NULL, W.batch_cxt);

	if (edata == NULL)
		return NULL;
	rethrow_transient(edata);
	return edata->message;
}

/*
 * Insert tuples[0..ntuples) as one statement, in a subtransaction: like
 * COPY FROM (bulk_insert.c), or for a stream that path cannot handle,
 * with INSERT INTO stream SELECT ... FROM them as an ephemeral named
 * relation.  NULL when it succeeded, else the error message.
 */
static char *
insert_tuples(HeapTuple *tuples, int ntuples, MemoryContext oldcxt)
{
	bool		unsupported = false;
	char	   *msg = insert_in_subxact(NULL, tuples, ntuples, &unsupported);

	if (msg == NULL && unsupported)
	{
		Tuplestorestate *ts;
		int			i;

		MemoryContextSwitchTo(W.batch_cxt);
		ts = tuplestore_begin_heap(false, false, Max(work_mem, 65536));
		for (i = 0; i < ntuples; i++)
			tuplestore_puttuple(ts, tuples[i]);
		MemoryContextSwitchTo(oldcxt);
		register_enr(BATCH_ENR_NAME, ts, ntuples);
		msg = insert_in_subxact(W.insert_sql, NULL, 0, NULL);
		SPI_unregister_relation(BATCH_ENR_NAME);
		tuplestore_end(ts);
	}
	return msg;
}

/*
 * tuples[0..ntuples) failed as one statement with error msg, a row's own
 * fault (a CHECK constraint of the stream, an error in a view's
 * expression): find the rows to blame by bisection.  Each half goes in as
 * one statement in a subtransaction; a half that fails is split again, down
 * to single messages' rows (one, or a Debezium update's two, never split),
 * which are the bad messages (dead[], *ndead).  With k bad
 * rows among n that is about 2k log2(n/k) statements instead of n, so the
 * good rows take their groups' locks in a few statements (each one sorted
 * by group key, like the batch's) rather than one row at a time.
 */
static void
isolate_bad_rows(HeapTuple *tuples, const int *tuple_msg, int ntuples, char *msg,
				 DeadLetter *dead, int *ndead, MemoryContext oldcxt)
{
	int			half = ntuples / 2;

	/*
	 * A message's tuples (a Debezium update: two) stay together: the halves
	 * split between messages, and one message's tuples are all dead or all
	 * in.
	 */
	if (tuple_msg[0] == tuple_msg[ntuples - 1])
	{
		dead[*ndead].msgidx = tuple_msg[0];
		dead[*ndead].error = msg;
		(*ndead)++;
		return;
	}
	while (half > 1 && tuple_msg[half] == tuple_msg[half - 1])
		half--;
	if (tuple_msg[half] == tuple_msg[half - 1])
		half++;
	CHECK_FOR_INTERRUPTS();
	if ((msg = insert_tuples(tuples, half, oldcxt)) != NULL)
		isolate_bad_rows(tuples, tuple_msg, half, msg, dead, ndead, oldcxt);
	if ((msg = insert_tuples(tuples + half, ntuples - half, oldcxt)) != NULL)
		isolate_bad_rows(tuples + half, tuple_msg + half, ntuples - half, msg,
						 dead, ndead, oldcxt);
}

/* decode_batch()'s progress: where it is, what it has made */
typedef struct DecodeRun
{
	Batch	   *b;
	int			i;				/* the next message */
	int			ntuples;
	int			ndead;
	uint64		nbytes;
} DecodeRun;

/* decode from message run->i on, until the end or an error */
static void
decode_run(void *arg)
{
	DecodeRun  *run = arg;
	Batch	   *b = run->b;

	for (; run->i < W.nmsgs; run->i++)
	{
		rd_kafka_message_t *m = W.msgs[run->i];
		KafkaMessage km;
		HeapTuple	tuple;

		run->nbytes += m->len;
		if (m->len > (size_t) W.opts.max_message_bytes)
		{
			MemoryContextSwitchTo(W.batch_cxt);
			b->dead[run->ndead].msgidx = run->i;
			b->dead[run->ndead].error = psprintf("message of %zu bytes exceeds max_message_bytes (%d)",
												 m->len, W.opts.max_message_bytes);
			run->ndead++;
			MemoryContextSwitchTo(W.msg_cxt);
			continue;
		}
		kafka_message_from_rd(m, &km);
		/* the tuple outlives the message's scratch memory */
		tuple = kafka_decode(W.dec, &km, W.batch_cxt);
		/* none (a Debezium tombstone), one, or two (a Debezium update) */
		if (tuple != NULL)
		{
			b->tuples[run->ntuples] = tuple;
			b->tuple_msg[run->ntuples] = run->i;
			run->ntuples++;
		}
		if (W.dec->second != NULL)
		{
			b->tuples[run->ntuples] = W.dec->second;
			b->tuple_msg[run->ntuples] = run->i;
			run->ntuples++;
		}
		MemoryContextReset(W.msg_cxt);
	}
}

/*
 * Decode W.msgs[0..nmsgs) into b's tuples.  One subtransaction covers the
 * whole run of good messages; a bad one aborts it, becomes a dead letter,
 * and decoding resumes in a new one.  Oversized messages are dead letters
 * without decoding.  With on_error = 'stop', b->stop_error is the first
 * error and decoding stops there.
 */
static void
decode_batch(Batch *b)
{
	DecodeRun	run = {b, 0, 0, 0, 0};
	char	   *stop_error = NULL;

	while (run.i < W.nmsgs && stop_error == NULL)
	{
		ErrorData  *edata = se_try_in_subxact(decode_run, &run, W.msg_cxt, W.batch_cxt);

		if (edata != NULL)
		{
			MemoryContextReset(W.msg_cxt);
			rethrow_transient(edata);
			b->dead[run.ndead].msgidx = run.i;
			b->dead[run.ndead].error = edata->message;
			run.ndead++;
			run.i++;
		}
		/* the oversize path may also have added dead letters */
		if (run.ndead > 0 && W.opts.on_error == KAFKA_ON_ERROR_STOP)
			stop_error = b->dead[0].error;
	}
	b->ntuples = run.ntuples;
	b->ndead = run.ndead;
	b->nbytes = run.nbytes;
	b->stop_error = stop_error;
}

/*
 * Insert b's tuples with one statement (insert_tuples()).  Should that
 * fail, with on_error = 'stop' the error is b->stop_error; otherwise the
 * rows to blame are found by bisection and become dead letters, the others
 * are inserted.
 */
static void
insert_batch(Batch *b, MemoryContext oldcxt)
{
	char	   *msg;

	if (b->ntuples == 0 || b->stop_error != NULL)
		return;
	msg = insert_tuples(b->tuples, b->ntuples, oldcxt);
	if (msg == NULL)
		return;
	ereport(DEBUG1,
			(errmsg_internal("stream_ext: Kafka source \"%s\": batch insert failed, looking for the bad rows: %s",
							 W.name, msg)));
	if (W.opts.on_error == KAFKA_ON_ERROR_STOP)
		b->stop_error = msg;
	else
	{
		/* a row the stream refuses: find it, insert the rest */
		isolate_bad_rows(b->tuples, b->tuple_msg, b->ntuples, msg, b->dead,
						 &b->ndead, oldcxt);
	}
}

/*
 * Upsert next_offset and high_watermark of every partition the batch
 * touched into stream_ext.kafka_offsets; batch_next[] (per W.mine[]) gets
 * each one's next offset, -1 for the others.
 */
static void
store_offsets(int64 *batch_next)
{
	int			i;

	for (i = 0; i < W.nmine; i++)
		batch_next[i] = -1;
	for (i = 0; i < W.nmsgs; i++)
	{
		rd_kafka_message_t *m = W.msgs[i];
		int			p;

		for (p = 0; p < W.nmine; p++)
			if (W.mine[p] == m->partition)
			{
				if (m->offset + 1 > batch_next[p])
					batch_next[p] = m->offset + 1;
				break;
			}
	}
	refresh_watermarks();
	for (i = 0; i < W.nmine; i++)
	{
		Oid			argtypes[4] = {TEXTOID, INT4OID, INT8OID, INT8OID};
		Datum		args[4];
		char		nulls[5] = "    ";

		if (batch_next[i] < 0)
			continue;
		args[0] = CStringGetTextDatum(W.name);
		args[1] = Int32GetDatum(W.mine[i]);
		args[2] = Int64GetDatum(batch_next[i]);
		if (W.high_watermark[i] >= 0)
			args[3] = Int64GetDatum(Max(W.high_watermark[i], batch_next[i]));
		else
			nulls[3] = 'n';
		kafka_worker_exec("INSERT INTO stream_ext.kafka_offsets AS o "
						  "(source, partition, next_offset, high_watermark) "
						  "VALUES ($1, $2, $3, $4) "
						  "ON CONFLICT (source, partition) DO UPDATE "
						  "SET next_offset = excluded.next_offset, "
						  "high_watermark = excluded.high_watermark, "
						  "updated_at = now()",
						  4, argtypes, args, nulls, false, 0,
						  SPI_OK_INSERT);
	}
}

/*
 * Apply W.msgs[0..nmsgs) in one transaction: decode_batch(),
 * insert_batch(), the dead letters, store_offsets(), commit.  ereports on
 * failures that are not about one message: apply_batch_retrying() retries
 * transient ones in place, the worker's main loop backs off and rebuilds
 * after the others.
 */
static BatchResult
apply_batch(uint64 *n_errors, uint64 *n_dead, uint64 *n_bytes)
{
	MemoryContext oldcxt;
	Batch		b;
	int64	   *batch_next;
	int			i;

	*n_errors = *n_dead = *n_bytes = 0;
	MemoryContextReset(W.batch_cxt);

	kafka_begin_xact();
	if (!kafka_worker_is_running(true))
	{
		kafka_commit_xact();
		return BATCH_SOURCE_GONE;
	}

	oldcxt = MemoryContextSwitchTo(W.batch_cxt);
	memset(&b, 0, sizeof(b));
	/* a message may make two tuples (a Debezium update) */
	b.tuples = palloc(sizeof(HeapTuple) * W.nmsgs * 2);
	b.tuple_msg = palloc(sizeof(int) * W.nmsgs * 2);
	b.dead = palloc(sizeof(DeadLetter) * W.nmsgs);
	batch_next = palloc(sizeof(int64) * W.nmine);
	MemoryContextSwitchTo(oldcxt);

	decode_batch(&b);
	insert_batch(&b, oldcxt);

	if (b.stop_error != NULL)
	{
		/* nothing of this batch is stored; the caller marks the source failed */
		set_error(b.stop_error, KWS_RETRYING);
		SPI_finish();
		PopActiveSnapshot();
		AbortCurrentTransaction();
		return BATCH_STOP_ON_ERROR;
	}

	/* dead letters */
	*n_bytes = b.nbytes;
	*n_errors = b.ndead;
	if (W.opts.on_error == KAFKA_ON_ERROR_DEAD_LETTER)
	{
		if (b.ndead > 0)
			insert_dead_letters(b.dead, b.ndead);
		*n_dead = b.ndead;
	}
	if (b.ndead > 0)
		set_error(b.dead[b.ndead - 1].error, W.slot->common.state);

	store_offsets(batch_next);
	kafka_commit_xact();

	/* committed: now the in-memory offsets may move */
	for (i = 0; i < W.nmine; i++)
		if (batch_next[i] >= 0)
			W.next_offset[i] = batch_next[i];
	return BATCH_OK;
}

/*
 * Sleep before retrying a batch that failed with a transient error (retry
 * W.retries): W.retry_ms doubles from RETRY_MIN_MS up to RETRY_MAX_MS, and
 * the sleep is a random time between half of it and all of it, so that two
 * workers whose batches deadlocked do not meet again in step.
 */
static void
retry_backoff(const ErrorData *edata)
{
	int			sleep_ms;

	W.retry_ms = W.retry_ms == 0 ? RETRY_MIN_MS : Min(W.retry_ms * 2, RETRY_MAX_MS);
	sleep_ms = W.retry_ms / 2 + (int) pg_prng_uint64_range(&W.prng, 0, W.retry_ms / 2);
	ereport(LOG,
			(errmsg("stream_ext: Kafka source \"%s\" worker %d: retrying a batch of %d messages in %d ms (retry %d) after a transient error: %s",
					W.name, W.args.worker, W.nmsgs, sleep_ms, W.retries, edata->message),
			 errdetail("SQLSTATE %s: the batch was rolled back whole and is applied again; no message is a dead letter for this error.",
					   unpack_sql_state(edata->sqlerrcode))));
	set_error(edata->message, KWS_RETRYING);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 sleep_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

/*
 * apply_batch() until it does not fail with a transient error
 * (kafka_transient_error(): a deadlock, a lock timeout, out of shared memory...).
 * Such an error is never a message's fault: the transaction is rolled back
 * whole (nothing of the batch stored, its offsets included), and the same
 * messages, still held by the worker, are applied again after a backoff,
 * for as long as the source runs.  Each retry is logged, and shown in
 * source_status as state 'retrying' with the error.  Other errors go on up
 * to the main loop.
 */
static BatchResult
apply_batch_retrying(uint64 *n_errors, uint64 *n_dead, uint64 *n_bytes)
{
	for (;;)
	{
		volatile BatchResult r = BATCH_OK;
		ErrorData  *volatile edata = NULL;

		PG_TRY();
		{
			r = apply_batch(n_errors, n_dead, n_bytes);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(TopMemoryContext);
			edata = CopyErrorData();
			if (!kafka_transient_error(edata->sqlerrcode))
			{
				FreeErrorData(edata);
				PG_RE_THROW();
			}
			HOLD_INTERRUPTS();
			FlushErrorState();
			AbortOutOfAnyTransaction();
			MemoryContextSwitchTo(TopMemoryContext);
			RESUME_INTERRUPTS();
		}
		PG_END_TRY();

		if (edata == NULL)
		{
			W.retry_ms = 0;
			W.retries = 0;
			return r;
		}
		W.retries++;
		retry_backoff(edata);
		FreeErrorData(edata);
	}
}

/* on_error = 'stop': mark the source failed, with the error */
static void
mark_source_failed(const char *error)
{
	Oid			argtypes[2] = {INT4OID, TEXTOID};
	Datum		args[2];

	kafka_begin_xact();
	args[0] = Int32GetDatum(W.args.source_id);
	args[1] = CStringGetTextDatum(error);
	kafka_worker_exec("UPDATE stream_ext.kafka_sources "
								"SET state = 'failed', last_error = $2, updated_at = now() "
								"WHERE id = $1 AND state = 'running'",
								2, argtypes, args, NULL, false, 0,
				 SPI_OK_UPDATE);
	kafka_commit_xact();
}

/* ----------------------------------------------------------------
 * Main loop
 * ----------------------------------------------------------------
 */

static void
update_rate(void)
{
	TimestampTz now = GetCurrentTimestamp();
	long		ms = TimestampDifferenceMilliseconds(W.rate_time, now);

	if (ms < 1000)
		return;
	LWLockAcquire(kafka_source_shared->table.lock, LW_EXCLUSIVE);
	{
		double		inst = (double) (W.slot->messages - W.rate_messages) * 1000.0 / ms;

		W.slot->rate = W.slot->rate == 0 ? inst : 0.5 * W.slot->rate + 0.5 * inst;
		if (W.slot->rate < 0.01)
			W.slot->rate = 0;
		W.rate_messages = W.slot->messages;
	}
	LWLockRelease(kafka_source_shared->table.lock);
	W.rate_time = now;
}

/* one pass of the loop; returns false when the worker should exit */
static bool
source_worker_iteration(void)
{
	TimestampTz now;
	const char *rk_error;

	if (W.rk == NULL)
	{
		/* (re)starting, maybe after failures: is the source still wanted? */
		if (!kafka_worker_is_running_xact())
			return false;
		W.last_state_check = GetCurrentTimestamp();

		/*
		 * After a failure stay 'retrying' until the consumer is up again:
		 * during a broker outage most of the time goes into these attempts
		 * (each waits up to 5 s for metadata), and 'starting' would show
		 * the source as running in source_status.
		 */
		if (W.slot->common.state != KWS_RETRYING)
			kafka_worker_set_state(KWS_STARTING);
		setup_consumer();
		W.client_failing = false;
		kafka_worker_set_state(KWS_RUNNING);
		W.backoff_ms = 0;
	}

	consume_batch();
	if ((rk_error = kafka_pending_error()) != NULL)
		set_client_error(rk_error);

	if (W.nmsgs > 0)
	{
		uint64		n_errors,
					n_dead,
					n_bytes;
		int			n = W.nmsgs;
		BatchResult r = apply_batch_retrying(&n_errors, &n_dead, &n_bytes);

		if (r == BATCH_SOURCE_GONE)
			return false;
		if (r == BATCH_STOP_ON_ERROR)
		{
			mark_source_failed(W.slot->common.last_error);
			ereport(LOG,
					(errmsg("stream_ext: Kafka source \"%s\" stopped on a bad message: %s",
							W.name, W.slot->common.last_error)));
			return false;
		}
		free_batch_messages();
		now = GetCurrentTimestamp();
		ereport(DEBUG2,
				(errmsg_internal("stream_ext: Kafka source \"%s\" worker %d: batch of %d messages: %ld ms waiting for the first, %ld ms collecting and applying",
								 W.name, W.args.worker, n,
								 W.batch_done == 0 ? -1L :
								 TimestampDifferenceMilliseconds(W.batch_done, W.batch_started),
								 TimestampDifferenceMilliseconds(W.batch_started, now))));
		W.batch_done = now;
		W.avg_msg_len = (double) n_bytes / n;
		LWLockAcquire(kafka_source_shared->table.lock, LW_EXCLUSIVE);
		W.slot->messages += n;
		W.slot->bytes += n_bytes;
		W.slot->batches++;
		W.slot->common.errors += n_errors;
		W.slot->dead_letters += n_dead;
		W.slot->common.last_batch_time = GetCurrentTimestamp();
		/*
		 * A batch retried after a database error has gone through.  After a
		 * client error (a broker down) batches may still come from
		 * librdkafka's prefetched queue: the source stays 'retrying' until
		 * the cluster answers again (below).
		 */
		if (W.slot->common.state == KWS_RETRYING && !W.client_failing)
			W.slot->common.state = KWS_RUNNING;
		LWLockRelease(kafka_source_shared->table.lock);
		W.backoff_ms = 0;
		publish_partitions();
		W.last_state_check = GetCurrentTimestamp();
	}

	now = GetCurrentTimestamp();
	update_rate();

	if (TimestampDifferenceExceeds(W.last_state_check, now, KAFKA_STATE_CHECK_MS))
	{
		if (!kafka_worker_is_running_xact())
			return false;
		W.last_state_check = now;
		refresh_watermarks();
		publish_partitions();

		/* after broker errors, see whether the cluster answers again */
		if (W.slot->common.state == KWS_RETRYING)
		{
			(void) topic_partition_count(KAFKA_PROBE_TIMEOUT_MS, false);
			W.client_failing = false;
			kafka_worker_set_state(KWS_RUNNING);
		}
	}

	if (TimestampDifferenceExceeds(W.last_metadata_check, now, METADATA_CHECK_MS))
	{
		W.last_metadata_check = now;
		if (topic_partition_count(KAFKA_REQUEST_TIMEOUT_MS, false) != W.npartitions)
		{
			ereport(LOG,
					(errmsg("stream_ext: partitions of Kafka topic \"%s\" changed, reassigning",
							W.topic)));
			teardown_consumer();
		}
	}
	return true;
}

static bool
has_consumer(void)
{
	return W.rk != NULL;
}

void
stream_ext_kafka_source_worker_main(Datum main_arg)
{
	KafkaWorkerLoop loop;

	memset(&W, 0, sizeof(W));
	memcpy(&W.args, MyBgworkerEntry->bgw_extra, sizeof(KafkaSourceWorkerArgs));

	/* connect as the source's owner, claim the slot, wait for start_source */
	W.slot = (KafkaSourceSlot *) kafka_worker_attach(&kafka_source_kind, die,
													 W.args.dboid, W.args.catalog_relid,
													 W.args.owner, W.args.source_id,
													 W.args.worker, W.args.wait_xid);

	W.source_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext kafka source",
										 ALLOCSET_DEFAULT_SIZES);
	W.batch_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext kafka batch",
										ALLOCSET_DEFAULT_SIZES);
	W.msg_cxt = AllocSetContextCreate(TopMemoryContext, "stream_ext kafka message",
									  ALLOCSET_DEFAULT_SIZES);
	pg_prng_seed(&W.prng, (uint64) MyProcPid ^ (uint64) GetCurrentTimestamp());

	if (!load_source())
		proc_exit(0);
	W.rate_time = GetCurrentTimestamp();
	W.last_state_check = W.rate_time;

	/* after an error: rebuild from the stored offsets, nothing of the batch stuck */
	loop.iteration = source_worker_iteration;
	loop.teardown = teardown_consumer;
	loop.has_client = has_consumer;
	loop.recheck_on_exit = false;
	loop.count_errors = false;
	loop.backoff_ms = &W.backoff_ms;
	kafka_worker_main_loop(&loop);

	teardown_consumer();
	ereport(LOG,
			(errmsg("stream_ext: Kafka source \"%s\" worker %d exiting",
					W.name ? W.name : "?", W.args.worker)));
	proc_exit(0);
}
