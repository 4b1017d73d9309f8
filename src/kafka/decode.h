/*-------------------------------------------------------------------------
 *
 * decode.h
 *	  Kafka message -> stream tuple decoding (JSON, CSV, text, bytea, Avro).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_DECODE_H
#define STREAM_EXT_KAFKA_DECODE_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "fmgr.h"

#include "kafka/source.h"

typedef enum KafkaColumnRole
{
	KCOL_DATA,					/* from the payload */
	KCOL_KEY,					/* message key */
	KCOL_PARTITION,
	KCOL_OFFSET,
	KCOL_TIMESTAMP				/* message timestamp */
} KafkaColumnRole;

typedef struct KafkaColumn
{
	char	   *name;			/* column name in the stream */
	AttrNumber	attnum;			/* in the stream */
	Oid			typid;
	int32		typmod;
	Oid			typioparam;
	FmgrInfo	input;
	KafkaColumnRole role;
	int			npath;			/* JSON: key path (npath >= 1) */
	char	  **path;
	int		   *pathlen;
} KafkaColumn;

typedef struct KafkaDecoder
{
	KafkaFormat format;
	Oid			relid;
	int			ncolumns;
	KafkaColumn *columns;
	int			ndata;			/* columns fed from the payload */
	TupleDesc	tupdesc;		/* of the decoded tuples (target columns) */
	Datum	   *values;
	bool	   *nulls;
	char		csv_delimiter;
	char		csv_quote;
	char		csv_escape;
	char	   *csv_null;
	int			csv_nulllen;
	struct SeAvroDecoder *avro;	/* formats avro, avro-confluent */
	int64		epoch_unit_usecs;	/* numbers into timestamps: 0 = no */
} KafkaDecoder;

/* one message as handed to the decoder */
typedef struct KafkaMessage
{
	const char *payload;		/* may be NULL (tombstone) */
	size_t		len;
	const char *key;
	size_t		keylen;
	int32		partition;
	int64		offset;
	int64		timestamp_ms;	/* -1 when the message has none */
} KafkaMessage;

extern KafkaDecoder *kafka_decoder_create(Oid relid, KafkaFormat format,
										  const KafkaOptions *opts);
extern HeapTuple kafka_decode(KafkaDecoder *dec, const KafkaMessage *msg,
							  MemoryContext tuplecxt);
extern char *kafka_jsonb_value_text(JsonbValue *v);

/* source_worker.c: the batch's fallback INSERT; a consumed message; errors not a message's fault */
extern char *kafka_decoder_insert_sql(const KafkaDecoder *dec, const char *enrname);
extern void kafka_message_from_rd(rd_kafka_message_t *m, KafkaMessage *km);
extern bool kafka_transient_error(int sqlerrcode);

#endif							/* STREAM_EXT_KAFKA_DECODE_H */
