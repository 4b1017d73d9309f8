/*-------------------------------------------------------------------------
 *
 * stream.h
 *	  Streams: append-only UNLOGGED staging tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_STREAM_H
#define STREAM_EXT_STREAM_H

/* the column every stream gets, filled at insert */
#define STREAM_ARRIVAL_COLUMN "arrival_timestamp"

/* set while stream_ext itself deletes raw rows (retention) */
extern bool stream_ext_deleting_raw_rows;

#endif							/* STREAM_EXT_STREAM_H */
