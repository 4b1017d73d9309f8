/*-------------------------------------------------------------------------
 *
 * fast_batch.h
 *	  Aggregating a batch into a delta without the executor: the
 *	  maintenance statement's own plan, compiled once and run by hand
 *	  (fast_batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_FAST_BATCH_H
#define STREAM_EXT_FAST_BATCH_H

#include "commands/trigger.h"
#include "executor/spi.h"

typedef struct FastBatch FastBatch;

extern bool stream_ext_fast_batches;

extern bool fast_batch_run(FastBatch **state, MemoryContext cxt, SPIPlanPtr plan,
						   TriggerData *trigdata, uint64 *groups);
extern void fast_batch_define_gucs(void);

#endif							/* STREAM_EXT_FAST_BATCH_H */
