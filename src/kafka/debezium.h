/*-------------------------------------------------------------------------
 *
 * debezium.h
 *	  Kafka source formats debezium-json and debezium-avro: Debezium change
 *	  events into the signed rows of a changelog stream.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_DEBEZIUM_H
#define STREAM_EXT_KAFKA_DEBEZIUM_H

#include "kafka/decode.h"
#include "utils/relcache.h"

extern void se_debezium_check_stream(Relation rel, KafkaFormat format);
extern struct SeDebezium *se_debezium_create(KafkaDecoder *dec,
											 const KafkaOptions *opts);
extern KafkaDecoder *se_debezium_inner(struct SeDebezium *dz);
extern HeapTuple se_debezium_tuples(KafkaDecoder *dec, MemoryContext tuplecxt);

#endif							/* STREAM_EXT_KAFKA_DEBEZIUM_H */
