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
extern void lock_guard_run(void (*run) (struct SeBatchEntry *, TriggerData *, uint64),
						   struct SeBatchEntry *entry, TriggerData *trigdata, uint64 rows,
						   Oid objid, const char *kind,
						   List *(*objects) (struct SeBatchEntry *));

#endif							/* STREAM_EXT_LOCK_GUARD_H */
