/*-------------------------------------------------------------------------
 *
 * fast_batch.h
 *	  Aggregating a batch into a delta without the executor: the
 *	  maintenance statement's own plan, compiled once and run by hand
 *	  (fast_batch.c); the lock guard's writes put off past its
 *	  subtransaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_FAST_BATCH_H
#define STREAM_EXT_FAST_BATCH_H

#include "commands/trigger.h"
#include "executor/spi.h"

typedef struct FastBatch FastBatch;
typedef struct FastBatchWrites FastBatchWrites;

extern bool stream_ext_fast_batches;

extern bool fast_batch_run(FastBatch **state, MemoryContext cxt, SPIPlanPtr plan,
						   TriggerData *trigdata, uint64 *groups);
extern void fast_batch_define_gucs(void);

/* the lock guard's subtransaction: writes put off past it (fast_batch.c) */
extern FastBatchWrites *fast_batch_defer_begin(Tuplestorestate *batch);
extern void fast_batch_defer_end(FastBatchWrites *scope);
extern void fast_batch_defer_discard(FastBatchWrites *scope);
extern void fast_batch_write_deferred(FastBatchWrites *scope);

#endif							/* STREAM_EXT_FAST_BATCH_H */
