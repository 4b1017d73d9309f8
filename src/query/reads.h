/*-------------------------------------------------------------------------
 *
 * reads.h
 *	  The planner's size estimate of views' deltas (query/reads.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_READS_H
#define STREAM_EXT_QUERY_READS_H

extern bool stream_ext_delta_key_index;

extern void reads_init(void);

#endif							/* STREAM_EXT_QUERY_READS_H */
