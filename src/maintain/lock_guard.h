/*-------------------------------------------------------------------------
 *
 * lock_guard.h
 *	  Bounded lock waits for the maintenance of objects owned by a role
 *	  other than the owner of the relation inserted into (lock_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_LOCK_GUARD_H
#define STREAM_EXT_LOCK_GUARD_H

#include "commands/trigger.h"
#include "utils/relcache.h"

struct SeBatchEntry;

extern int	stream_ext_maintenance_lock_timeout;

extern void lock_guard_init(void);
extern bool lock_guard_applies(Oid owner, Relation rel);
extern bool lock_guard_owner_code_begin(void);
extern void lock_guard_owner_code_end(bool outer);
extern void lock_guard_run_units(void (*run) (struct SeBatchEntry *, TriggerData *, uint64),
								 List *units, TriggerData *trigdata, uint64 rows,
								 List *(*invalid) (struct SeBatchEntry *, const char **kind));

#endif							/* STREAM_EXT_LOCK_GUARD_H */
