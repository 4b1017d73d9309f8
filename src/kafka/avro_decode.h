/*-------------------------------------------------------------------------
 *
 * avro_decode.h
 *	  Avro messages -> a stream's columns (avro_decode.c): formats "avro"
 *	  (writer schema in the options) and "avro-confluent" (Confluent wire
 *	  format, writer schemas from a schema registry).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_AVRO_DECODE_H
#define STREAM_EXT_KAFKA_AVRO_DECODE_H

#include "kafka/decode.h"

extern struct SeAvroDecoder *se_avro_decoder_create(KafkaDecoder *dec,
													const KafkaOptions *opts);
extern void se_avro_decode(KafkaDecoder *dec, const KafkaMessage *msg);

#endif							/* STREAM_EXT_KAFKA_AVRO_DECODE_H */
