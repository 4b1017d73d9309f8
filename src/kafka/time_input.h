/*-------------------------------------------------------------------------
 *
 * time_input.h
 *	  Direct input of ISO 8601 and Unix-time timestamps for the decoders.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_TIME_INPUT_H
#define STREAM_EXT_KAFKA_TIME_INPUT_H

#include "datatype/timestamp.h"

extern bool kafka_fast_timestamp(const char *s, bool with_tz, Timestamp *result);
extern Timestamp kafka_epoch_timestamp(const char *number, int64 unit_usecs);

#endif							/* STREAM_EXT_KAFKA_TIME_INPUT_H */
