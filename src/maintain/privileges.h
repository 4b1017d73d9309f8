/*-------------------------------------------------------------------------
 *
 * privileges.h
 *	  Privileges of continuous views' and transforms' owners at every
 *	  batch; invalid objects (privileges.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_PRIVILEGES_H
#define STREAM_EXT_PRIVILEGES_H

#include "executor/spi.h"
#include "nodes/plannodes.h"

extern void privileges_init(void);
extern List *priv_collect(SPIPlanPtr plan, Oid streamid, MemoryContext cxt);
extern List *priv_whole_row(Oid streamid, MemoryContext cxt);
extern char *priv_check(List *rtes, Oid owner, uint64 *checked);
extern const char *priv_invalid_reason(Oid relid);
extern void priv_mark_invalid(Oid relid, const char *kind, const char *reason);
/* how the reason of an object the lock guard (lock_guard.c) gave up on begins */
#define PRIV_LOCK_REASON_PREFIX "its maintenance waited longer than"
/* ... and of one whose maintenance raised an error (lock_guard.c) */
#define PRIV_ERROR_REASON_PREFIX "its maintenance failed"
extern void priv_mark_invalid_because(Oid relid, const char *kind, const char *reason,
									  int sqlstate, const char *hint);
extern void priv_check_read(PlannedStmt *stmt);

#endif							/* STREAM_EXT_PRIVILEGES_H */
