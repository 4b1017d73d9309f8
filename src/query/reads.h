/*-------------------------------------------------------------------------
 *
 * reads.h
 *	  The planner's size estimate of views' deltas (query/reads.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_READS_H
#define STREAM_EXT_QUERY_READS_H

/* stream_ext.delta_key_index: the index CREATE VIEW gives a delta */
typedef enum SeDeltaKeyIndex
{
	SE_DELTA_KEY_INDEX_OFF,		/* none: reads by key scan the delta */
	SE_DELTA_KEY_INDEX_ON,		/* cv_create_key_lookup_index(): btree on the keys */
	SE_DELTA_KEY_INDEX_HASH		/* a hash index on the first key */
} SeDeltaKeyIndex;

extern int	stream_ext_delta_key_index;

extern void reads_init(void);

#endif							/* STREAM_EXT_QUERY_READS_H */
