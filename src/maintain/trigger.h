/*-------------------------------------------------------------------------
 *
 * trigger.h
 *	  The one skeleton of stream_ext's batch triggers (continuous views,
 *	  transforms, the Kafka sink's queue trigger) and their plan cache.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_TRIGGER_H
#define STREAM_EXT_TRIGGER_H

#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "datatype/timestamp.h"

typedef struct SeBatchEntry SeBatchEntry;

/* what a kind of batch trigger does differently */
typedef struct SeBatchOps
{
	const char *name;			/* "stream_ext.maintain()", for errors */
	const char *argument;		/* what its one argument is, for errors;
								 * NULL: it takes none */

	/*
	 * Fill a new cache entry (SPI connected, entry->cxt empty): owner,
	 * timezone, streamid, relids, kind, ... from the catalog.
	 */
	void		(*load) (SeBatchEntry *entry, TriggerData *trigdata);

	/*
	 * At every batch, before the owner's context: may it run?  false skips
	 * the batch.  May call se_batch_forget_plans().  NULL: always.
	 */
	bool		(*admit) (SeBatchEntry *entry, TriggerData *trigdata);

	/* prepare the plans with se_batch_prepare(), as the owner, once */
	void		(*prepare) (SeBatchEntry *entry);

	/* run the batch as the owner; returns the rows written (groups) */
	uint64		(*run) (SeBatchEntry *entry, TriggerData *trigdata);

	/* after the owner's context, SPI still connected; NULL: nothing */
	void		(*finish) (SeBatchEntry *entry, TriggerData *trigdata, uint64 written);

	/* before the entry is dropped from the cache: free what load made */
	void		(*release) (SeBatchEntry *entry);

	/*
	 * The entry is no unit of work itself: run is called (SPI connected,
	 * batch registered, as the inserting user) to run its units, entries
	 * of their own kind, with se_batch_run().
	 */
	bool		dispatch;

	bool		materialize;	/* run in the materialize scope */

	/*
	 * > 0: tell the planner the NEW TABLE has this many rows, whatever the
	 * batch (see trigger.c), and keep a second set of plans made for one
	 * row for batches of up to SE_SMALL_BATCH_ROWS rows (se_batch_plans());
	 * 0: SPI_register_trigger_data().  Units of a dispatching trigger get
	 * the dispatcher's registration.
	 */
	double		plan_rows;

	/* priv_mark_invalid()'s kind; NULL: no per-batch privilege check */
	const char *invalid_kind;

	/*
	 * The continuous views a unit maintains when it is not one object
	 * (objid invalid: a shared aggregation's views), for the lock guard
	 * (lock_guard.c) to mark invalid.  NULL: objid.
	 */
	List	   *(*objects) (SeBatchEntry *entry);
} SeBatchOps;

/* one trigger's entry of the per-backend cache */
struct SeBatchEntry
{
	Oid			tgoid;			/* hash key: the trigger */
	bool		valid;
	const SeBatchOps *ops;

	/* set by ops->load */
	Oid			objid;			/* view or transform: privileges, stats,
								 * notify; InvalidOid for none */
	Oid			streamid;
	Oid			relids[3];		/* relations whose change drops the entry */
	List	   *more_relids;	/* more of them (in cxt) */
	Oid			owner;			/* the batch runs as this role */
	char	   *timezone;		/* pinned; NULL: not pinned */
	char	   *notify;			/* NOTIFY channel per batch, or NULL */
	AttrNumber	arrival_attnum; /* stats: the stream's arrival_timestamp */
	char	   *error_context;	/* CONTEXT of an error in the statements,
								 * or NULL for PostgreSQL's own */
	void	   *kind;			/* the kind's own state, in cxt */

	/* the plan cache: se_batch_prepare() */
	bool		prepared;
	List	   *plans;			/* kept SPIPlanPtrs */
	List	   *small_plans;	/* the same, made for a batch of one row, or
								 * NIL: run se_batch_plans() */
	List	   *statements;		/* their SQL (and more), for errors */
	List	   *privs;			/* what the plans touch: privileges.c */
	uint64		privs_checked;
	MemoryContext cxt;

	/* a side of a stream-stream join (query/stream_joins.h), or 0 */
	int			sjoin_side;
};

extern Datum se_batch_trigger(FunctionCallInfo fcinfo, const SeBatchOps *ops);
extern void se_batch_run(SeBatchEntry *entry, TriggerData *trigdata, uint64 rows);
extern void se_batch_run_units(List *units, TriggerData *trigdata, uint64 rows);
extern void se_batch_notify(const char *channel, Oid viewid, uint64 rows, uint64 groups);
extern TimestampTz se_batch_max_arrival(SeBatchEntry *entry, TriggerData *trigdata);
extern SPIPlanPtr se_batch_prepare(SeBatchEntry *entry, const char *sql,
								   int nargs, Oid *argtypes);
extern void se_batch_statement(SeBatchEntry *entry, const char *sql);
extern void se_batch_forget_plans(SeBatchEntry *entry);
extern List *se_batch_plans(SeBatchEntry *entry, TriggerData *trigdata);

/* batches of up to this many rows run the plans made for one row */
#define SE_SMALL_BATCH_ROWS 10

#endif							/* STREAM_EXT_TRIGGER_H */
