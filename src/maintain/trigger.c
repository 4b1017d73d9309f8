/*-------------------------------------------------------------------------
 *
 * trigger.c
 *	  The skeleton every batch trigger of stream_ext runs: continuous views
 *	  (maintain.c), continuous transforms (transform.c) and the queue
 *	  trigger of Kafka sinks (kafka/sink.c).
 *
 *	  Each is a statement-level AFTER INSERT trigger with the statement's
 *	  rows as NEW TABLE.  se_batch_trigger() checks that protocol, skips an
 *	  empty batch, finds the trigger's entry in a per-backend cache (hashed
 *	  by trigger OID, dropped by relcache invalidation of the relations it
 *	  names), connects SPI, lets the kind admit the batch, registers the
 *	  transition table, switches to the owner (se_run_as_owner()), prepares
 *	  the kind's plans once and keeps them (two sets when the batch is
 *	  registered with a fixed size: see register_new_rows()), re-checks the
 *	  owner's
 *	  privileges on what they touch (privileges.c), runs them -- in the
 *	  materialize scope and with a short error context when the kind asks
 *	  -- and reports stats and the NOTIFY of the batch.  The kinds differ
 *	  through a SeBatchOps.  A dispatching kind (the trigger of a stream's
 *	  continuous views) is no unit of work itself: its entry holds units,
 *	  entries of other kinds, and its run calls se_batch_run() for each,
 *	  after the protocol check, the cache lookup and the registration of
 *	  the batch ran once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/async.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "maintain/privileges.h"
#include "maintain/stats.h"
#include "maintain/lock_guard.h"
#include "maintain/trigger.h"

static HTAB *batch_cache = NULL;

/*
 * The transition table of the batch at hand as registered for SPI with a
 * fixed plan size (register_new_rows()), or NULL (none, or registered with
 * SPI_register_trigger_data()); set by se_batch_trigger() for its batch.
 * prepare_enr: the same while an entry's ops->prepare runs for that batch.
 */
static EphemeralNamedRelation batch_enr = NULL;
static double batch_plan_rows = 0;	/* its fixed size */
static EphemeralNamedRelation prepare_enr = NULL;

/* the notify option: one NOTIFY per batch, JSON payload */
void
se_batch_notify(const char *channel, Oid viewid, uint64 rows, uint64 groups)
{
	StringInfoData buf;
	char	   *name = get_rel_name(viewid);

	if (name == NULL)
		return;
	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"view\": ");
	escape_json(&buf, quote_qualified_identifier(get_namespace_name(get_rel_namespace(viewid)),
												 name));
	appendStringInfo(&buf, ", \"rows\": " UINT64_FORMAT ", \"groups\": " UINT64_FORMAT "}",
					 rows, groups);
	Async_Notify(channel, buf.data);
}

static void
batch_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	SeBatchEntry *entry;

	if (batch_cache == NULL)
		return;
	hash_seq_init(&status, batch_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (!OidIsValid(relid) || relid == entry->relids[0] ||
			relid == entry->relids[1] || relid == entry->relids[2] ||
			list_member_oid(entry->more_relids, relid))
			entry->valid = false;
	}
}

void
se_batch_forget_plans(SeBatchEntry *entry)
{
	ListCell   *lc;

	foreach(lc, entry->plans)
		SPI_freeplan(lfirst(lc));
	foreach(lc, entry->small_plans)
		SPI_freeplan(lfirst(lc));
	entry->plans = NIL;
	entry->small_plans = NIL;
	entry->statements = NIL;
	entry->privs = NIL;
	entry->privs_checked = 0;
	entry->prepared = false;
}

static void
release_entry(SeBatchEntry *entry)
{
	if (entry->ops && entry->ops->release)
		entry->ops->release(entry);
	se_batch_forget_plans(entry);
	if (entry->cxt)
		MemoryContextDelete(entry->cxt);
	entry->cxt = NULL;
	entry->kind = NULL;
	entry->more_relids = NIL;
	entry->valid = false;
}

static SeBatchEntry *
batch_entry(TriggerData *trigdata, const SeBatchOps *ops)
{
	Trigger    *trigger = trigdata->tg_trigger;
	SeBatchEntry *entry;
	bool		found;

	if (batch_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SeBatchEntry);
		batch_cache = hash_create("stream_ext batch triggers", 64, &ctl,
								  HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(batch_relcache_callback, (Datum) 0);
	}
	entry = hash_search(batch_cache, &trigger->tgoid, HASH_ENTER, &found);
	if (!found)
	{
		memset(((char *) entry) + sizeof(Oid), 0, sizeof(SeBatchEntry) - sizeof(Oid));
		entry->valid = false;
	}
	if (entry->valid && entry->ops == ops)
		return entry;

	release_entry(entry);
	entry->ops = ops;
	entry->objid = InvalidOid;
	entry->streamid = InvalidOid;
	memset(entry->relids, 0, sizeof(entry->relids));
	entry->more_relids = NIL;
	entry->owner = InvalidOid;
	entry->timezone = NULL;
	entry->notify = NULL;
	entry->arrival_attnum = InvalidAttrNumber;
	entry->error_context = NULL;
	entry->sjoin_side = 0;
	entry->cxt = AllocSetContextCreate(CacheMemoryContext, "stream_ext batch trigger",
									   ALLOCSET_SMALL_SIZES);
	ops->load(entry, trigdata);
	entry->valid = true;
	return entry;
}

/* a batch that runs the plans made for one row (register_new_rows()) */
static bool
is_small_batch(TriggerData *trigdata)
{
	return tuplestore_tuple_count(trigdata->tg_newtable) <= SE_SMALL_BATCH_ROWS;
}

/*
 * SPI_prepare() and SPI_keepplan(); rows > 0: with the batch registered as
 * that many rows while the planner runs.
 */
static SPIPlanPtr
prepare_kept(SeBatchEntry *entry, const char *sql, int nargs, Oid *argtypes,
			 double rows)
{
	SPIPlanPtr	plan;
	double		registered = 0;

	if (rows > 0)
	{
		registered = prepare_enr->md.enrtuples;
		prepare_enr->md.enrtuples = rows;
	}
	plan = SPI_prepare(sql, nargs, argtypes);
	if (rows > 0)
		prepare_enr->md.enrtuples = registered;
	if (plan == NULL)
		elog(ERROR, "stream_ext: could not prepare %s: %s", entry->ops->name,
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	return plan;
}

/*
 * Prepare one statement of the entry, keep the plan, remember its SQL for
 * errors and what it touches for the per-batch privilege check.  When the
 * batch is registered with a fixed plan size, also the same statement
 * planned for one row, for small batches (register_new_rows()): the plan
 * at the same place of entry->small_plans.  Returns the plan for the fixed
 * size (or the batch's).
 */
SPIPlanPtr
se_batch_prepare(SeBatchEntry *entry, const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan;
	SPIPlanPtr	small = NULL;
	MemoryContext old;

	if (prepare_enr != NULL)
	{
		plan = prepare_kept(entry, sql, nargs, argtypes, batch_plan_rows);
		small = prepare_kept(entry, sql, nargs, argtypes, 1);
	}
	else
		plan = prepare_kept(entry, sql, nargs, argtypes, 0);
	/* (each SPI call leaves CurrentMemoryContext at SPI's) */
	old = MemoryContextSwitchTo(entry->cxt);
	entry->plans = lappend(entry->plans, plan);
	if (small != NULL)
		entry->small_plans = lappend(entry->small_plans, small);
	entry->statements = lappend(entry->statements, pstrdup(sql));
	if (entry->ops->invalid_kind)
		entry->privs = list_concat(entry->privs,
								   priv_collect(plan, entry->streamid, entry->cxt));
	MemoryContextSwitchTo(old);
	return plan;
}

/* one more statement an error may come from (shortened like the plans') */
void
se_batch_statement(SeBatchEntry *entry, const char *sql)
{
	MemoryContext old = MemoryContextSwitchTo(entry->cxt);

	entry->statements = lappend(entry->statements, pstrdup(sql));
	MemoryContextSwitchTo(old);
}

/*
 * Register the batch (the trigger's transition table) for SPI.
 *
 * With plan_rows, not with SPI_register_trigger_data(): that gives the
 * planner the row count of the batch at hand, and the plans are made once,
 * on the first batch, and then kept.  When that first batch is a single row
 * (a warm-up INSERT, a trickle before a bulk load) the planner picks a sort
 * of the raw rows and a GroupAggregate, and every later 10,000-row batch is
 * sorted row by row instead of being hashed into its groups.  So the
 * planner is always told plan_rows rows, whatever the batch: the plan does
 * not depend on which batch came first.
 *
 * A single-row INSERT, though, pays for that plan's start-up: a hash table
 * sized for plan_rows rows, and a sort of its output.  So each statement is
 * also prepared for a batch of one row (se_batch_prepare()), and a batch of
 * up to SE_SMALL_BATCH_ROWS rows runs those plans (se_batch_plans()) and is
 * registered as one row -- should a kept plan be made again after an
 * invalidation, it is made for the size it was made for.  Both sets are
 * made on the first batch, whatever its size, and dropped together
 * (se_batch_forget_plans()).  The units of a dispatching trigger get both
 * sets too: the batch is registered once for all of them.  Returns the
 * relation registered, or NULL for SPI_register_trigger_data().
 */
static EphemeralNamedRelation
register_new_rows(TriggerData *trigdata, double plan_rows)
{
	EphemeralNamedRelation enr;

	if (plan_rows <= 0)
	{
		if (SPI_register_trigger_data(trigdata) != SPI_OK_TD_REGISTER)
			elog(ERROR, "SPI_register_trigger_data failed");
		return NULL;
	}
	enr = palloc0(sizeof(EphemeralNamedRelationData));
	enr->md.name = trigdata->tg_trigger->tgnewtable;
	enr->md.reliddesc = RelationGetRelid(trigdata->tg_relation);
	enr->md.tupdesc = NULL;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = is_small_batch(trigdata) ? 1 : plan_rows;
	enr->reldata = trigdata->tg_newtable;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "SPI_register_relation failed");
	return enr;
}

/*
 * The plans to run for the batch at hand: entry->plans, or for a small
 * batch entry->small_plans (register_new_rows()), in the same order.
 */
List *
se_batch_plans(SeBatchEntry *entry, TriggerData *trigdata)
{
	if (entry->small_plans != NIL && is_small_batch(trigdata))
		return entry->small_plans;
	return entry->plans;
}

/*
 * One entry's part of a batch (SPI connected, the batch registered): admit,
 * the owner's context, plans, privileges, run, stats and NOTIFY.  An entry
 * of its own trigger, or one unit of a dispatching trigger's entry (its
 * run calls this for each).  A unit owned by another role than the
 * relation inserted into waits for locks a bounded time (lock_guard.c).
 */
static void batch_run_unit(SeBatchEntry *entry, TriggerData *trigdata, uint64 rows);

/*
 * What the lock guard marks invalid when a unit of another role fails:
 * its object (of its kind; a roll-up, which has no kind of its own, is a
 * continuous view), or the views of a shared aggregation.
 */
static List *
unit_invalid_objects(SeBatchEntry *entry, const char **kind)
{
	Oid			streamid;

	*kind = entry->ops->invalid_kind;
	if (OidIsValid(entry->objid))
	{
		if (*kind == NULL && catalog_view_definition(entry->objid, &streamid) != NULL)
			*kind = "continuous view";
		return *kind != NULL ? list_make1_oid(entry->objid) : NIL;
	}
	*kind = "continuous view";
	return entry->ops->objects ? entry->ops->objects(entry) : NIL;
}

void
se_batch_run(SeBatchEntry *entry, TriggerData *trigdata, uint64 rows)
{
	se_batch_run_units(list_make1(entry), trigdata, rows);
}

/*
 * se_batch_run() for each of units, entries of one batch: those of the
 * relation's owner first, then those of other roles together under one
 * lock guard (one subtransaction per batch, not one per unit).
 */
void
se_batch_run_units(List *units, TriggerData *trigdata, uint64 rows)
{
	List	   *guarded = NIL;
	ListCell   *lc;

	foreach(lc, units)
	{
		SeBatchEntry *unit = lfirst(lc);

		if (lock_guard_applies(unit->owner, trigdata->tg_relation))
			guarded = lappend(guarded, unit);
		else
			batch_run_unit(unit, trigdata, rows);
	}
	if (guarded != NIL)
		lock_guard_run_units(batch_run_unit, guarded, trigdata, rows,
							 unit_invalid_objects);
}

static void
batch_run_unit(SeBatchEntry *entry, TriggerData *trigdata, uint64 rows)
{
	const SeBatchOps *ops = entry->ops;
	SeRunAs		runas;
	uint64		written = 0;
	char	   *missing;
	instr_time	start;
	instr_time	elapsed;
	MemoryContext caller_cxt = CurrentMemoryContext;
	bool		outer_owner_code;

	if (ops->admit && !ops->admit(entry, trigdata))
		return;

	se_run_as_owner(&runas, entry->owner, entry->timezone);

	if (!entry->prepared)
	{
		/* (a nested trigger's batch is registered in its own SPI call) */
		prepare_enr = (batch_enr != NULL &&
					   batch_enr->reldata == trigdata->tg_newtable) ? batch_enr : NULL;
		outer_owner_code = lock_guard_owner_code_begin();
		ops->prepare(entry);
		lock_guard_owner_code_end(outer_owner_code);
		prepare_enr = NULL;
		entry->prepared = true;
	}

	/* the owner must still have what the plans need: else mark it invalid */
	if (ops->invalid_kind)
	{
		missing = priv_check(entry->privs, entry->owner, &entry->privs_checked);
		if (missing != NULL)
		{
			se_restore(&runas);
			priv_mark_invalid(entry->objid, ops->invalid_kind, missing);
			return;
		}
	}

	INSTR_TIME_SET_CURRENT(start);
	/* an error from here to the end of run is the unit's own (lock_guard.c) */
	outer_owner_code = lock_guard_owner_code_begin();
	if (ops->materialize || entry->error_context)
	{
		if (ops->materialize)
			se_materialize_begin();
		PG_TRY();
		{
			written = ops->run(entry, trigdata);
		}
		PG_CATCH();
		{
			if (ops->materialize)
				se_materialize_end();
			if (entry->error_context)
				se_rethrow_short_context(caller_cxt, entry->statements,
										 "%s, batch of " UINT64_FORMAT " rows inserted into %s",
										 entry->error_context, rows,
										 RelationGetRelationName(trigdata->tg_relation));
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (ops->materialize)
			se_materialize_end();
	}
	else
		written = ops->run(entry, trigdata);
	lock_guard_owner_code_end(outer_owner_code);

	se_restore(&runas);
	if (ops->finish)
		ops->finish(entry, trigdata, written);

	if (OidIsValid(entry->objid) && stats_tracking())
	{
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);
		stats_report_batch(entry->objid, entry->streamid, rows, written,
						   INSTR_TIME_GET_MILLISEC(elapsed),
						   se_batch_max_arrival(entry, trigdata));
	}
	if (entry->notify)
		se_batch_notify(entry->notify, entry->objid, rows, written);
}

/* bumped at every se_batch_trigger() call: which batch the memo is of */
static uint64 batch_serial = 0;

/*
 * stats: the latest arrival_timestamp of the batch's rows, or 0.  Read once
 * per batch, however many units of the batch report it.
 */
TimestampTz
se_batch_max_arrival(SeBatchEntry *entry, TriggerData *trigdata)
{
	static uint64 memo_serial = 0;
	static Tuplestorestate *memo_store = NULL;
	static AttrNumber memo_attnum = InvalidAttrNumber;
	static TimestampTz memo_max = 0;

	if (entry->arrival_attnum == InvalidAttrNumber)
		return 0;
	/* a nested trigger's batch bumps the serial: both must match */
	if (memo_serial != batch_serial || memo_store != trigdata->tg_newtable ||
		memo_attnum != entry->arrival_attnum)
	{
		memo_max = stats_max_timestamp(trigdata->tg_newtable,
									   RelationGetDescr(trigdata->tg_relation),
									   entry->arrival_attnum);
		memo_serial = batch_serial;
		memo_store = trigdata->tg_newtable;
		memo_attnum = entry->arrival_attnum;
	}
	return memo_max;
}

Datum
se_batch_trigger(FunctionCallInfo fcinfo, const SeBatchOps *ops)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	SeBatchEntry *entry;
	uint64		rows;
	EphemeralNamedRelation outer_enr = batch_enr;
	double		outer_plan_rows = batch_plan_rows;
	int			nestlevel;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		trigdata->tg_newtable == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must be an AFTER INSERT FOR EACH STATEMENT trigger with a NEW TABLE",
						ops->name)));
	if (trigdata->tg_trigger->tgnargs != (ops->argument ? 1 : 0))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 ops->argument ?
				 errmsg("%s needs %s as its argument", ops->name, ops->argument) :
				 errmsg("%s takes no arguments", ops->name)));

	/* an empty batch changes nothing */
	rows = tuplestore_tuple_count(trigdata->tg_newtable);
	if (rows == 0)
		return PointerGetDatum(NULL);
	batch_serial++;

	/*
	 * Every statement of the batch is stream_ext's, run in the inserting
	 * session: its search_path must not choose what their names mean, not
	 * even for those run as the inserting user (core/security.c).
	 */
	nestlevel = se_pin_search_path();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	entry = batch_entry(trigdata, ops);
	batch_enr = register_new_rows(trigdata, ops->plan_rows);
	batch_plan_rows = ops->plan_rows;
	if (ops->dispatch)
		(void) ops->run(entry, trigdata);
	else
		se_batch_run(entry, trigdata, rows);
	/* (after an error, the next batch sets them before they are read) */
	batch_enr = outer_enr;
	batch_plan_rows = outer_plan_rows;
	SPI_finish();
	se_unpin_settings(nestlevel);
	return PointerGetDatum(NULL);
}
