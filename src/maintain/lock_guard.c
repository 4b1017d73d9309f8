/*-------------------------------------------------------------------------
 *
 * lock_guard.c
 *	  The owner of a stream can always insert into it: the maintenance of
 *	  an object owned by another role waits for locks a bounded time.
 *
 *	  A batch maintains every view, transform and roll-up attached to the
 *	  relation inserted into, in the inserting transaction.  Their owners
 *	  own the tables that maintenance writes (materialization, delta, side
 *	  tables, change stream) and may lock them: LOCK TABLE in an open
 *	  transaction, SELECT ... FOR UPDATE of their rows, REINDEX.  The
 *	  inserting statement would then wait for as long as they like -- and a
 *	  REVOKE cannot help, since the batch waits before its privilege check.
 *
 *	  So the units of a batch whose owner is not the owner of the relation
 *	  inserted into run in a subtransaction (one for all of them: each
 *	  subtransaction that writes takes a subtransaction id, and a
 *	  transaction with more than 64 overflows PGPROC's cache of them,
 *	  which slows every snapshot in the cluster) with lock_timeout set to
 *	  stream_ext.maintenance_lock_timeout (milliseconds; 0 turns the guard
 *	  off).  The units aggregated without the executor write nothing in
 *	  it: they take their locks, check privileges and constraints and
 *	  compute their delta rows there, and the rows are written after the
 *	  subtransaction is released (fast_batch.c, fast_batch_defer_begin()),
 *	  so that the common case takes no subtransaction id at all.  Every
 *	  lock it waits for -- a relation's, an index's, a row's, another
 *	  transaction's -- is bounded by it.  When it expires
 *	  (55P03, lock_not_available), the subtransaction is rolled back (the
 *	  unit wrote nothing; the other units run again in a new one), the
 *	  object is marked invalid as one whose owner
 *	  lost a privilege is (privileges.c: a row in
 *	  stream_ext.invalid_objects, a WARNING, reads refused) and the insert
 *	  goes on with the other units.  An error the unit itself raises (its
 *	  owner's functions in the view's expressions, a constraint or index
 *	  of its tables, bad data in its expressions: guard_contains()) is
 *	  treated the same way: one broken object does not stop ingestion for
 *	  everyone.  A cancel, statement_timeout, deadlock, serialization
 *	  failure or lack of resources fails the insert, as without the guard.
 *	  Units of the relation's own owner run as before: their locks and
 *	  errors are that owner's business, and an error of theirs fails the
 *	  insert (never a silently skipped batch).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "maintain/fast_batch.h"
#include "maintain/lock_guard.h"
#include "maintain/privileges.h"

/* milliseconds a unit of another role's object waits for a lock; 0: off */
int			stream_ext_maintenance_lock_timeout = 5000;

void
lock_guard_init(void)
{
	DefineCustomIntVariable("stream_ext.maintenance_lock_timeout",
							"Longest wait for a lock by the maintenance of a continuous view, transform or roll-up owned by a role other than the owner of the relation inserted into.",
							"When it expires the object is marked invalid and the insert goes on; 0 waits as long as it takes.",
							&stream_ext_maintenance_lock_timeout,
							5000, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/* does the guard apply to owner's unit of a batch inserted into rel? */
bool
lock_guard_applies(Oid owner, Relation rel)
{
	return stream_ext_maintenance_lock_timeout > 0 && OidIsValid(owner) &&
		owner != rel->rd_rel->relowner;
}

/*
 * Is an error raised by the maintenance of another role's object its own
 * (the object is marked invalid, the insert goes on) rather than the
 * inserting statement's?  Not: a cancel or statement_timeout, a shutdown
 * (57), a serialization failure or deadlock, which a retry of the insert
 * resolves (40), a lack of resources (53), system and internal errors (58,
 * XX).  Everything else -- a lock timeout (55P03), an error its owner's
 * functions, constraints or indexes raise, a data error in its expressions
 * -- is.
 */
static bool
guard_contains(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_OPERATOR_INTERVENTION:
		case ERRCODE_TRANSACTION_ROLLBACK:
		case ERRCODE_INSUFFICIENT_RESOURCES:
		case ERRCODE_SYSTEM_ERROR:
		case ERRCODE_INTERNAL_ERROR:
			return false;
		default:
			return true;
	}
}

/*
 * Set while a unit prepares and runs its owner's statements (trigger.c):
 * only an error raised there is the unit's own.  stream_ext's checks
 * before them -- a forged trigger on another table, row-level security
 * that came to apply to the owner -- are the insert's: they fail it, or
 * any role could mark another's view invalid.  A lock timeout is the
 * unit's wherever it happens.
 */
static bool owner_code = false;

bool
lock_guard_owner_code_begin(void)
{
	bool		outer = owner_code;

	owner_code = true;
	return outer;
}

void
lock_guard_owner_code_end(bool outer)
{
	owner_code = outer;
}

/* mark the objects of a unit invalid because of edata (guard_contains()) */
static void
mark_unit_invalid(ErrorData *edata, List *invalid, const char *kind)
{
	ListCell   *lc;
	char	   *reason;
	const char *hint;

	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
	{
		reason = psprintf(PRIV_LOCK_REASON_PREFIX " stream_ext.maintenance_lock_timeout (%d ms) for a lock (%s)",
						  stream_ext_maintenance_lock_timeout, edata->message);
		hint = "A role other than the owner of the relation inserted into held a lock its maintenance needed. Drop it and create it again.";
	}
	else
	{
		reason = psprintf(PRIV_ERROR_REASON_PREFIX " with SQLSTATE %s: %s",
						  unpack_sql_state(edata->sqlerrcode), edata->message);
		hint = "Its owner is not the owner of the relation inserted into: the error ended its maintenance, not the insert. Drop it and create it again once the cause is fixed.";
	}
	foreach(lc, invalid)
		priv_mark_invalid_because(lfirst_oid(lc), kind, reason, edata->sqlerrcode, hint);
}

/*
 * run(unit, trigdata, rows) for each of units (guarded units of one batch,
 * in order) in ONE subtransaction with the bounded lock wait: a batch takes
 * one subtransaction id for all of them, not one per unit -- none when
 * they only run fast batches, whose rows are written after the release,
 * in the caller's transaction (an error there is not the units').  On a
 * lock timeout or another error guard_contains() in a unit, the subtransaction
 * is rolled back, the objects invalid(unit, &kind) lists are marked
 * invalid, and the other units run again in a new subtransaction (those
 * that had run were rolled back with it); an error whose unit lists no
 * object, or any other error, is raised again.  A unit that ran twice
 * counts once: stats of an aborted subtransaction are dropped (stats.c),
 * its NOTIFY too.
 */
void
lock_guard_run_units(void (*run) (struct SeBatchEntry *, TriggerData *, uint64),
					 List *units, TriggerData *trigdata, uint64 rows,
					 List *(*invalid) (struct SeBatchEntry *, const char **kind))
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	ResourceOwner caller_owner = CurrentResourceOwner;
	List	   *volatile pending = list_copy(units);
	bool		outer_owner_code = owner_code;
	FastBatchWrites *volatile writes = NULL;

	while (pending != NIL)
	{
		struct SeBatchEntry *volatile current = NULL;

		owner_code = false;
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(caller_cxt);
		PG_TRY();
		{
			int			nestlevel = NewGUCNestLevel();
			ListCell   *lc;

			(void) set_config_option("lock_timeout",
									 psprintf("%d", stream_ext_maintenance_lock_timeout),
									 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
			/* the delta rows of fast batches wait for the release */
			writes = fast_batch_defer_begin(trigdata->tg_newtable);
			foreach(lc, pending)
			{
				current = lfirst(lc);
				run(current, trigdata, rows);
			}
			fast_batch_defer_end(writes);
			AtEOXact_GUC(true, nestlevel);
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(caller_cxt);
			CurrentResourceOwner = caller_owner;
			owner_code = outer_owner_code;
			pending = NIL;
		}
		PG_CATCH();
		{
			ErrorData  *edata;
			List	   *objects;
			const char *kind = NULL;
			bool		in_owner_code = owner_code;

			MemoryContextSwitchTo(caller_cxt);
			if (writes != NULL)
				fast_batch_defer_discard(writes);
			writes = NULL;
			edata = CopyErrorData();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(caller_cxt);
			CurrentResourceOwner = caller_owner;
			owner_code = outer_owner_code;
			if (current == NULL ||
				(edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE &&
				 !(in_owner_code && guard_contains(edata->sqlerrcode))))
				ReThrowError(edata);
			objects = invalid(current, &kind);
			if (objects == NIL)
				ReThrowError(edata);
			mark_unit_invalid(edata, objects, kind);
			FreeErrorData(edata);
			pending = list_delete_ptr(pending, current);
		}
		PG_END_TRY();
	}

	/*
	 * The subtransaction wrote nothing of the fast batches (no id if
	 * nothing else wrote): their delta rows, with the locks it took, go in
	 * now, as their owners -- an error here is not the units' (fast_batch.c)
	 */
	if (writes != NULL)
		fast_batch_write_deferred(writes);
}
