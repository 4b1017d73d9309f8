/*-------------------------------------------------------------------------
 *
 * source.h
 *	  Kafka ingest: source options, worker shared memory, and the entry
 *	  points shared by source.c (SQL functions, launch), source_worker.c
 *	  (consumer background workers) and launcher.c (supervisor).  What
 *	  sources share with sinks is in common.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_SOURCE_H
#define STREAM_EXT_KAFKA_SOURCE_H

#include "postgres.h"
#include <librdkafka/rdkafka.h>

#include "access/transam.h"
#include "datatype/timestamp.h"
#include "storage/lwlock.h"
#include "utils/jsonb.h"

#include "kafka/common.h"

#define KAFKA_MAX_WORKER_PARTITIONS	256

/* where a partition without a stored offset starts */
typedef enum KafkaStartPos
{
	KAFKA_START_EARLIEST,
	KAFKA_START_LATEST,
	KAFKA_START_OFFSET,
	KAFKA_START_TIMESTAMP
} KafkaStartPos;

typedef enum KafkaOnError
{
	KAFKA_ON_ERROR_DEAD_LETTER,
	KAFKA_ON_ERROR_SKIP,
	KAFKA_ON_ERROR_STOP
} KafkaOnError;

typedef enum KafkaFormat
{
	KAFKA_FORMAT_JSON,
	KAFKA_FORMAT_CSV,
	KAFKA_FORMAT_TEXT,
	KAFKA_FORMAT_BYTEA,
	KAFKA_FORMAT_AVRO,			/* Avro binary, schema in the options */
	KAFKA_FORMAT_AVRO_CONFLUENT,	/* Confluent wire format, schema registry */
	KAFKA_FORMAT_DEBEZIUM_JSON, /* Debezium change events (kafka/debezium.c) */
	KAFKA_FORMAT_DEBEZIUM_AVRO	/* the same, Avro on avro-confluent */
} KafkaFormat;

/* A source's options jsonb, parsed and validated (see docs/kafka.md). */
typedef struct KafkaOptions
{
	KafkaStartPos start;
	int64		start_offset;
	int64		start_timestamp_ms;
	int			batch_size;
	int			max_wait_ms;
	int			workers;
	KafkaOnError on_error;
	int			max_message_bytes;
	List	   *columns;		/* explicit target columns (char *), or NIL */
	List	   *path_columns;	/* column names having a JSON path (char *) */
	List	   *paths;			/* parallel to path_columns: List of char * */
	char	   *column;			/* target column of text/bytea */
	char	   *key_column;
	char	   *partition_column;
	char	   *offset_column;
	char	   *timestamp_column;
	char		csv_delimiter;
	char		csv_quote;
	char		csv_escape;
	char	   *csv_null;
	int64		epoch_unit_usecs;	/* "epoch_unit" in microseconds; 0: none */
	char	   *avro_schema;	/* "schema": writer schema JSON (avro) */
	char	   *avro_reader_schema; /* "reader_schema" */
	char	   *registry_url;	/* "schema_registry" (avro-confluent) */
	char	   *registry_user;
	char	   *registry_password;
	int			registry_timeout_ms;
	List	   *kafka_keys;		/* librdkafka property names (char *) */
	List	   *kafka_values;	/* parallel: values (char *) */
	/* this source's share of the topic's partitions (docs/scale-out.md) */
	int			nranges;		/* "partitions": lo..hi ranges; 0: no list */
	int32	   *range_lo;
	int32	   *range_hi;
	int			node;			/* "node" of "nodes": p mod nodes = node */
	int			nodes;			/* 0: not given */
	int			nstart_offsets; /* "start_offsets": {"partition": offset} */
	int32	   *start_offset_partition;
	int64	   *start_offset_value;
} KafkaOptions;

extern KafkaFormat kafka_parse_format(const char *format);
extern void kafka_parse_options(Jsonb *options, KafkaOptions *opts);
extern bool kafka_partition_in_share(const KafkaOptions *opts, int32 partition);
extern bool kafka_share_start_offset(const KafkaOptions *opts, int32 partition,
									 int64 *offset);

/* ---- shared memory ---- */

/* passed to a source worker in bgw_extra */
typedef struct KafkaSourceWorkerArgs
{
	Oid			dboid;
	Oid			catalog_relid;	/* OID of stream_ext.kafka_sources: tells
								 * apart incarnations of the extension */
	Oid			owner;
	int32		source_id;
	int32		worker;			/* 0 .. nworkers-1 */
	int32		nworkers;
	TransactionId wait_xid;		/* start_source's xact, or Invalid */
} KafkaSourceWorkerArgs;

typedef struct KafkaPartitionStat
{
	int32		partition;
	int64		next_offset;
	int64		high_watermark; /* -1 when unknown */
} KafkaPartitionStat;

typedef struct KafkaSourceSlot
{
	KafkaSlot	common;			/* id: the source; errors: bad messages */
	uint64		messages;
	uint64		bytes;
	uint64		batches;
	uint64		dead_letters;
	double		rate;			/* messages/s, smoothed */
	int			npartitions;
	KafkaPartitionStat partitions[KAFKA_MAX_WORKER_PARTITIONS];
} KafkaSourceSlot;

typedef struct KafkaSourceShared
{
	KafkaSlotTable table;
	pid_t		launcher_pid;
	KafkaSourceSlot slots[FLEXIBLE_ARRAY_MEMBER];
} KafkaSourceShared;

extern KafkaSourceShared *kafka_source_shared;

/* source.c */
extern int	kafka_max_source_workers;	/* GUC */
extern const KafkaKind kafka_source_kind;

extern void kafka_source_init(void);
extern rd_kafka_conf_t *kafka_build_conf(const char *brokers, const KafkaOptions *opts,
										 const char *group_id, Oid role);
extern void kafka_source_launch_running(Oid dboid);

/* background worker entry point (source_worker.c) */
extern PGDLLEXPORT void stream_ext_kafka_source_worker_main(Datum main_arg);

#endif							/* STREAM_EXT_KAFKA_SOURCE_H */
