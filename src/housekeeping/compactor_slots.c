/*-------------------------------------------------------------------------
 *
 * compactor_slots.c
 *	  Shared memory of the background compactors (housekeeping/compactor.c):
 *	  one slot per database that has a compactor, and the wake-up writers
 *	  give it.
 *
 *	  The table has max_worker_processes slots (a compactor is a background
 *	  worker, so there cannot be more) under one LWLock.  A compactor claims
 *	  the slot of its database when it starts and gives it back when it
 *	  exits, so there is at most one per database: a twin started by a
 *	  second scan exits at once.
 *
 *	  Wake-up: a writer that appended partial states to deltas counts the
 *	  rows (se_compactor_note_rows()); when its transaction commits, the
 *	  count is added to the slot's atomic counter `appended`, and the one
 *	  commit that takes it across stream_ext.compact_batch_rows sets the
 *	  compactor's latch.  Other commits cost one atomic add and no system
 *	  call.  The compactor swaps the counter back to 0 before each pass, and
 *	  also wakes every stream_ext.compact_naptime, so a trickle of small
 *	  batches is compacted too.  The writer finds the slot of its database
 *	  without the lock (a cached index, checked against the slot's database):
 *	  a stale read costs at most a spurious or a missed wake-up, which the
 *	  nap covers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "housekeeping/compactor_slots.h"

int			compact_batch_rows = 10000;

typedef struct CompactorShared
{
	LWLock	   *lock;
	pg_atomic_uint64 launch_requested_at;	/* ms since the epoch of the
											 * newest start by a writer */
	int			nslots;
	CompactorSlot slots[FLEXIBLE_ARRAY_MEMBER];
} CompactorShared;

static CompactorShared *compactor_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this backend's rows appended in the current transaction */
static uint64 my_appended = 0;
static bool callback_registered = false;
compactor_start_hook_type se_compactor_start_hook = NULL;
static int	my_slot_index = -1;	/* cache: the slot of MyDatabaseId */

static Size
compactor_shmem_size(void)
{
	return add_size(offsetof(CompactorShared, slots),
					mul_size(sizeof(CompactorSlot), max_worker_processes));
}

static void
compactor_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(compactor_shmem_size());
	RequestNamedLWLockTranche("stream_ext_compactor", 1);
}

static void
compactor_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	compactor_shared = ShmemInitStruct("stream_ext compactors",
									   compactor_shmem_size(), &found);
	if (!found)
	{
		memset(compactor_shared, 0, compactor_shmem_size());
		compactor_shared->lock = &(GetNamedLWLockTranche("stream_ext_compactor"))->lock;
		compactor_shared->nslots = max_worker_processes;
		pg_atomic_init_u64(&compactor_shared->launch_requested_at, 0);
		for (int i = 0; i < compactor_shared->nslots; i++)
			pg_atomic_init_u64(&compactor_shared->slots[i].appended, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* at preload (compactor_init()) */
void
compactor_slots_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = compactor_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = compactor_shmem_startup;
}

/*
 * In the compactor of dboid: claim its database's slot; NULL if a twin
 * holds it.  ERROR if every slot is taken (cannot happen: a slot per
 * background worker).
 */
CompactorSlot *
compactor_slot_claim(Oid dboid)
{
	CompactorSlot *mine = NULL;

	if (compactor_shared == NULL)
		ereport(FATAL,
				(errmsg("stream_ext is not in shared_preload_libraries")));
	LWLockAcquire(compactor_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < compactor_shared->nslots; i++)
	{
		CompactorSlot *s = &compactor_shared->slots[i];

		if (s->in_use && s->dboid == dboid)
		{
			LWLockRelease(compactor_shared->lock);
			return NULL;
		}
		if (!s->in_use && mine == NULL)
			mine = s;
	}
	if (mine == NULL)
	{
		LWLockRelease(compactor_shared->lock);
		elog(ERROR, "no free stream_ext compactor slot");
	}
	mine->in_use = true;
	mine->pid = MyProcPid;
	mine->dboid = dboid;
	mine->latch = MyLatch;
	pg_atomic_write_u64(&mine->appended, 0);
	mine->started_at = GetCurrentTimestamp();
	mine->last_round_at = 0;
	mine->rows_compacted = 0;
	mine->errors = 0;
	LWLockRelease(compactor_shared->lock);
	return mine;
}

void
compactor_slot_release(CompactorSlot *slot)
{
	LWLockAcquire(compactor_shared->lock, LW_EXCLUSIVE);
	slot->in_use = false;
	slot->pid = 0;
	slot->dboid = InvalidOid;
	slot->latch = NULL;
	LWLockRelease(compactor_shared->lock);
}

/* does database dboid have a live compactor? */
bool
compactor_slot_live(Oid dboid)
{
	bool		live = false;

	if (compactor_shared == NULL)
		return false;
	LWLockAcquire(compactor_shared->lock, LW_SHARED);
	for (int i = 0; i < compactor_shared->nslots; i++)
		if (compactor_shared->slots[i].in_use &&
			compactor_shared->slots[i].dboid == dboid)
			live = true;
	LWLockRelease(compactor_shared->lock);
	return live;
}

/* the rows writers committed since the last call (and start over) */
uint64
compactor_slot_take_appended(CompactorSlot *slot)
{
	return pg_atomic_exchange_u64(&slot->appended, 0);
}

/* a compaction transaction failed, or a pass compacted ROWS rows */
void
compactor_slot_update(CompactorSlot *slot, int64 rows, bool failed)
{
	LWLockAcquire(compactor_shared->lock, LW_EXCLUSIVE);
	if (failed)
		slot->errors++;
	else
	{
		slot->rows_compacted += rows;
		slot->last_round_at = GetCurrentTimestamp();
	}
	LWLockRelease(compactor_shared->lock);
}

/* a palloc'd copy of dboid's slot, or NULL if it has no compactor */
CompactorSlot *
compactor_slot_copy(Oid dboid)
{
	CompactorSlot *copy = NULL;

	if (compactor_shared == NULL)
		return NULL;
	LWLockAcquire(compactor_shared->lock, LW_SHARED);
	for (int i = 0; i < compactor_shared->nslots; i++)
	{
		CompactorSlot *s = &compactor_shared->slots[i];

		if (s->in_use && s->dboid == dboid)
		{
			copy = palloc(sizeof(CompactorSlot));
			memcpy(copy, s, sizeof(CompactorSlot));
			break;
		}
	}
	LWLockRelease(compactor_shared->lock);
	return copy;
}

/* ---- writers' wake-up ---------------------------------------------------- */

/* the slot of this database's compactor, without the lock; NULL if none */
static CompactorSlot *
my_database_slot(void)
{
	CompactorSlot *s;

	if (my_slot_index >= 0)
	{
		s = &compactor_shared->slots[my_slot_index];
		if (s->in_use && s->dboid == MyDatabaseId)
			return s;
	}
	for (int i = 0; i < compactor_shared->nslots; i++)
	{
		s = &compactor_shared->slots[i];
		if (s->in_use && s->dboid == MyDatabaseId)
		{
			my_slot_index = i;
			return s;
		}
	}
	return NULL;
}

/*
 * A writer committed delta rows and its database has no compactor: start
 * one now rather than at the launcher's next scan (up to
 * kafka_launcher_naptime later, while the delta grows and writers compact
 * inline).  At most one start per second across all backends: a worker
 * takes a moment to claim its slot, and the commits in that moment must
 * not each register a twin.
 */
static void
start_compactor(void)
{
	uint64		now_ms = (uint64) (GetCurrentTimestamp() / 1000);
	uint64		last = pg_atomic_read_u64(&compactor_shared->launch_requested_at);

	if (se_compactor_start_hook == NULL || now_ms < last + 1000)
		return;
	if (!pg_atomic_compare_exchange_u64(&compactor_shared->launch_requested_at,
										&last, now_ms))
		return;
	se_compactor_start_hook(MyDatabaseId);
}

static void
compactor_xact_callback(XactEvent event, void *arg)
{
	if (my_appended == 0)
		return;
	if (event == XACT_EVENT_COMMIT)
	{
		CompactorSlot *s = my_database_slot();

		if (s != NULL)
		{
			uint64		before = pg_atomic_fetch_add_u64(&s->appended,
														 (int64) my_appended);
			Latch	   *latch = s->latch;

			if (before < (uint64) compact_batch_rows &&
				before + my_appended >= (uint64) compact_batch_rows &&
				latch != NULL)
				SetLatch(latch);
		}
		else
			start_compactor();
		my_appended = 0;
	}
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE)
		my_appended = 0;
}

void
se_compactor_note_rows(uint64 rows)
{
	if (compactor_shared == NULL || rows == 0)
		return;
	if (!callback_registered)
	{
		RegisterXactCallback(compactor_xact_callback, NULL);
		callback_registered = true;
	}
	my_appended += rows;
}
