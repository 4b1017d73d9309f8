/*-------------------------------------------------------------------------
 *
 * compactor_slots.h
 *	  The background compactors' slots in shared memory (one per database)
 *	  and the writers' wake-up of their database's compactor.  No
 *	  dependencies on the rest of stream_ext: writers, statistics and the
 *	  compactor itself (compactor.c) all include it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_COMPACTOR_SLOTS_H
#define STREAM_EXT_COMPACTOR_SLOTS_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/latch.h"

typedef struct CompactorSlot
{
	bool		in_use;
	pid_t		pid;
	Oid			dboid;
	Latch	   *latch;			/* the worker's, set by writers */
	pg_atomic_uint64 appended;	/* delta rows committed since the worker
								 * last looked */
	/* below: under the table's lock */
	TimestampTz started_at;
	TimestampTz last_round_at;	/* end of the newest pass over the views */
	int64		rows_compacted;
	int64		errors;			/* failed compaction transactions */
} CompactorSlot;

/* stream_ext.compact_batch_rows: delta rows per compaction transaction */
extern int	compact_batch_rows;

extern void compactor_slots_init(void);
extern CompactorSlot *compactor_slot_claim(Oid dboid);
extern void compactor_slot_release(CompactorSlot *slot);
extern bool compactor_slot_live(Oid dboid);
extern uint64 compactor_slot_take_appended(CompactorSlot *slot);
extern void compactor_slot_update(CompactorSlot *slot, int64 rows, bool failed);
extern CompactorSlot *compactor_slot_copy(Oid dboid);

/*
 * A writer appended ROWS rows to deltas in this transaction: at commit
 * they count towards waking the database's compactor (set its latch once
 * stream_ext.compact_batch_rows rows are waiting; no system call while it
 * is already set).
 */
extern void se_compactor_note_rows(uint64 rows);

/*
 * Set by compactor.c: start the compactor of a database (called after a
 * writer's commit when the database has none).  A hook, so that this file
 * keeps no dependency on the rest of stream_ext.
 */
typedef void (*compactor_start_hook_type) (Oid dboid);
extern compactor_start_hook_type se_compactor_start_hook;

#endif							/* STREAM_EXT_COMPACTOR_SLOTS_H */
