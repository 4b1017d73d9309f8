/*-------------------------------------------------------------------------
 *
 * sink.h
 *	  Kafka sinks: options, shared memory of the sink workers, and the entry
 *	  points shared by sink.c (SQL functions, queue trigger, launch)
 *	  and sink_worker.c (the producer background worker).  What sinks
 *	  share with sources is in common.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_SINK_H
#define STREAM_EXT_KAFKA_SINK_H

#include "postgres.h"
#include <librdkafka/rdkafka.h>

#include "access/transam.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"
#include "utils/jsonb.h"

#include "kafka/common.h"

#define SINK_FORMAT_JSON	0
#define SINK_FORMAT_CSV		1
#define SINK_FORMAT_TEXT	2

/* a sink's options jsonb, parsed and validated (see docs/kafka.md) */
typedef struct KafkaSinkOptions
{
	int			batch_size;
	int			poll_interval_ms;
	List	   *columns;		/* explicit payload columns (char *), or NIL */
	List	   *kafka_keys;		/* librdkafka property names (char *) */
	List	   *kafka_values;	/* parallel: values (char *) */
	bool		emit_changes;	/* "emit": "changes": a change stream, keyed
								 * by group, deletions as tombstones */
} KafkaSinkOptions;

/* passed to a sink worker in bgw_extra */
typedef struct KafkaSinkWorkerArgs
{
	Oid			dboid;
	Oid			catalog_relid;	/* OID of stream_ext.kafka_sinks */
	Oid			owner;
	int32		sink_id;
	TransactionId wait_xid;		/* start_sink's xact, or Invalid */
} KafkaSinkWorkerArgs;

typedef struct KafkaSinkSlot
{
	KafkaSlot	common;			/* id: the sink; errors: failed attempts */
	uint64		rows;			/* acknowledged and recorded since start */
	uint64		batches;
} KafkaSinkSlot;

typedef struct KafkaSinkShared
{
	KafkaSlotTable table;
	KafkaSinkSlot slots[FLEXIBLE_ARRAY_MEMBER];
} KafkaSinkShared;

extern KafkaSinkShared *kafka_sink_shared;
extern int	kafka_max_sinks;
extern const KafkaKind kafka_sink_kind;

/* sink.c */
extern void kafka_sink_init(void);
extern void kafka_sink_parse_options(Jsonb *options, KafkaSinkOptions *opts);
extern rd_kafka_conf_t *kafka_sink_build_conf(const char *brokers,
											  const KafkaSinkOptions *opts, Oid role);
extern void kafka_sink_launch_running(Oid dboid);

/* background worker entry point (sink_worker.c) */
extern PGDLLEXPORT void stream_ext_kafka_sink_worker_main(Datum main_arg);

#endif							/* STREAM_EXT_KAFKA_SINK_H */
