/*-------------------------------------------------------------------------
 *
 * bulk_insert.c
 *	  Bulk insertion of already-decoded tuples into a stream, the way COPY
 *	  FROM does it, for the Kafka source workers.
 *
 * kafka_bulk_insert() inserts a batch of tuples (of the target columns
 * only) as one statement with the semantics of
 *		INSERT INTO stream (target columns) SELECT ... FROM batch
 * without planning or running that statement: INSERT privilege on the
 * target columns is checked, the other columns get their defaults (per
 * row: arrival_timestamp DEFAULT clock_timestamp()), stored generated
 * columns are computed, NOT NULL and CHECK constraints are checked, index
 * entries are made, BEFORE/AFTER STATEMENT triggers fire once, AFTER ROW
 * triggers per row, and the transition table of the AFTER INSERT
 * statement triggers (which maintain the continuous views) holds every
 * row.  Rows go to the heap with table_multi_insert(), up to
 * BULK_MAX_BUFFERED at a time, like copyfrom.c; one row at a time when a
 * default is volatile (other than clock_timestamp() and nextval(), which
 * cannot look at the table), again like COPY.
 *
 * The buffered slots are kept from one batch to the next (a worker loads
 * the same stream batch after batch): making a thousand slots per batch
 * cost about a twentieth of the worker's time.
 *
 * It returns false, having done nothing, when the relation needs what this
 * path does not reproduce: BEFORE ROW or INSTEAD OF triggers, INSERT
 * rules, row-level security, partitioning, a relkind other than a plain
 * table.  The caller then runs the INSERT statement instead.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/prs2lock.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "kafka/bulk_insert.h"

#define BULK_MAX_BUFFERED 1000

/* can this path stand in for INSERT on rel? */
static bool
bulk_insert_possible(Relation rel)
{
	TriggerDesc *trig = rel->trigdesc;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition)
		return false;
	if (trig && (trig->trig_insert_before_row || trig->trig_insert_instead_row))
		return false;
	if (rel->rd_rules)
	{
		int			i;

		for (i = 0; i < rel->rd_rules->numLocks; i++)
			if (rel->rd_rules->rules[i]->event == CMD_INSERT)
				return false;
	}
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, true) == RLS_ENABLED)
		return false;
	return true;
}

/* a volatile function that might read the table being loaded */
static bool
unsafe_function(Oid funcid, void *context)
{
	if (funcid == F_CLOCK_TIMESTAMP || funcid == F_NEXTVAL)
		return false;
	return func_volatile(funcid) == PROVOLATILE_VOLATILE;
}

static bool
unsafe_default_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, unsafe_function, context))
		return true;
	return expression_tree_walker(node, unsafe_default_walker, context);
}

/*
 * Slots for the rows of the relation last loaded, kept across calls.  They
 * are made for a private copy of its tuple descriptor (not reference
 * counted, so not tied to any transaction's resource owner) and remade when
 * another relation is loaded or its descriptor changed.
 */
static struct
{
	Oid			relid;
	TupleDesc	tupdesc;
	const TupleTableSlotOps *ops;
	int			nslots;
	TupleTableSlot *slots[BULK_MAX_BUFFERED];
	MemoryContext cxt;
}			slot_cache;

static TupleTableSlot **
cached_slots(Relation rel, int n)
{
	const TupleTableSlotOps *ops = table_slot_callbacks(rel);
	MemoryContext oldcxt;

	if (slot_cache.cxt == NULL)
		slot_cache.cxt = AllocSetContextCreate(TopMemoryContext,
											   "stream_ext bulk insert slots",
											   ALLOCSET_DEFAULT_SIZES);
	if (slot_cache.relid != RelationGetRelid(rel) || slot_cache.ops != ops ||
		!equalTupleDescs(slot_cache.tupdesc, RelationGetDescr(rel)))
	{
		/* the slots own nothing outside the context: just forget them */
		MemoryContextReset(slot_cache.cxt);
		slot_cache.nslots = 0;
		slot_cache.relid = RelationGetRelid(rel);
		slot_cache.ops = ops;
		oldcxt = MemoryContextSwitchTo(slot_cache.cxt);
		slot_cache.tupdesc = CreateTupleDescCopyConstr(RelationGetDescr(rel));
		MemoryContextSwitchTo(oldcxt);
	}
	oldcxt = MemoryContextSwitchTo(slot_cache.cxt);
	while (slot_cache.nslots < n)
		slot_cache.slots[slot_cache.nslots++] =
			MakeSingleTupleTableSlot(slot_cache.tupdesc, ops);
	MemoryContextSwitchTo(oldcxt);
	return slot_cache.slots;
}

/* heap-insert the buffered slots, then their index entries and AFTER ROW events */
static void
flush_slots(EState *estate, ResultRelInfo *rri, TransitionCaptureState *tcs,
			TupleTableSlot **slots, int nslots, CommandId cid,
			BulkInsertState bistate)
{
	int			i;

	table_multi_insert(rri->ri_RelationDesc, slots, nslots, cid, 0, bistate);
	for (i = 0; i < nslots; i++)
	{
		List	   *recheck = NIL;

		if (rri->ri_NumIndices > 0)
			recheck = ExecInsertIndexTuples(rri, slots[i], estate,
											false, false, NULL, NIL);
		ExecARInsertTriggers(estate, rri, slots[i], recheck, tcs);
		list_free(recheck);
		ResetPerTupleExprContext(estate);
	}
}

/*
 * Insert tuples[0..ntuples) of srcdesc, whose column k goes to the
 * stream's attribute attnums[k], into relation relid as one statement.
 * Returns false (nothing done) when only the INSERT statement can do it.
 * ereports like INSERT would on a refused row; the caller runs it in a
 * subtransaction.
 */
bool
kafka_bulk_insert(Oid relid, TupleDesc srcdesc, const AttrNumber *attnums,
				   HeapTuple *tuples, int ntuples)
{
	Relation	rel;
	RangeTblEntry *rte;
	EState	   *estate;
	ResultRelInfo *rri;
	TransitionCaptureState *tcs;
	ExprContext *econtext;
	ExprState **defexprs;
	int		   *srccol;
	int			natts;
	bool		one_at_a_time = false;
	bool		has_generated;
	TupleTableSlot **slots;
	int			nbuf;
	int			nbuffered = 0;
	Datum	   *svalues;
	bool	   *snulls;
	BulkInsertState bistate;
	CommandId	cid;
	MemoryContext oldcxt;
	int			i,
				t;

	LockRelationOid(relid, RowExclusiveLock);
	rel = table_open(relid, NoLock);
	if (!bulk_insert_possible(rel))
	{
		table_close(rel, NoLock);
		return false;
	}
	natts = RelationGetDescr(rel)->natts;
	table_close(rel, NoLock);

	/* the statement's snapshot, as SPI takes it for an INSERT */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());

	estate = CreateExecutorState();
	oldcxt = MemoryContextSwitchTo(estate->es_query_cxt);

	/* INSERT privilege on the target columns, as the current user */
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = RELKIND_RELATION;
	rte->rellockmode = RowExclusiveLock;
	rte->requiredPerms = ACL_INSERT;
	for (i = 0; i < srcdesc->natts; i++)
		rte->insertedCols = bms_add_member(rte->insertedCols,
										   attnums[i] - FirstLowInvalidHeapAttributeNumber);
	ExecCheckRTPerms(list_make1(rte), true);

	ExecInitRangeTable(estate, list_make1(rte));
	rri = makeNode(ResultRelInfo);
	ExecInitResultRelation(estate, rri, 1);
	rel = rri->ri_RelationDesc;
	CheckValidResultRel(rri, CMD_INSERT);
	if (rel->rd_rel->relhasindex)
		ExecOpenIndices(rri, false);
	estate->es_snapshot = GetActiveSnapshot();
	cid = GetCurrentCommandId(true);
	estate->es_output_cid = cid;
	has_generated = rel->rd_att->constr && rel->rd_att->constr->has_generated_stored;

	/* where each attribute comes from: a batch column or its default */
	srccol = palloc(sizeof(int) * natts);
	defexprs = palloc0(sizeof(ExprState *) * natts);
	for (i = 0; i < natts; i++)
		srccol[i] = -1;
	for (i = 0; i < srcdesc->natts; i++)
		srccol[attnums[i] - 1] = i;
	for (i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(rel->rd_att, i);
		Expr	   *def;

		if (att->attisdropped || att->attgenerated || srccol[i] >= 0)
			continue;
		def = (Expr *) build_column_default(rel, i + 1);
		if (def == NULL)
			continue;
		def = expression_planner(def);
		if (unsafe_default_walker((Node *) def, NULL))
			one_at_a_time = true;
		defexprs[i] = ExecInitExpr(def, NULL);
	}

	/* the transition tables belong to this query level of the trigger queue */
	AfterTriggerBeginQuery();
	tcs = MakeTransitionCaptureState(rri->ri_TrigDesc, relid, CMD_INSERT);
	econtext = GetPerTupleExprContext(estate);

	nbuf = one_at_a_time ? 1 : Min(ntuples, BULK_MAX_BUFFERED);
	slots = cached_slots(rel, nbuf);
	svalues = palloc(sizeof(Datum) * srcdesc->natts);
	snulls = palloc(sizeof(bool) * srcdesc->natts);
	bistate = GetBulkInsertState();

	ExecBSInsertTriggers(estate, rri);

	for (t = 0; t < ntuples; t++)
	{
		TupleTableSlot *slot = slots[nbuffered];

		CHECK_FOR_INTERRUPTS();
		ExecClearTuple(slot);
		heap_deform_tuple(tuples[t], srcdesc, svalues, snulls);
		for (i = 0; i < natts; i++)
		{
			if (srccol[i] >= 0)
			{
				slot->tts_values[i] = svalues[srccol[i]];
				slot->tts_isnull[i] = snulls[srccol[i]];
			}
			else if (defexprs[i] != NULL)
				slot->tts_values[i] = ExecEvalExpr(defexprs[i], econtext,
												   &slot->tts_isnull[i]);
			else
			{
				slot->tts_values[i] = (Datum) 0;
				slot->tts_isnull[i] = true;
			}
		}
		ExecStoreVirtualTuple(slot);
		if (has_generated)
			ExecComputeStoredGenerated(rri, estate, slot, CMD_INSERT);
		if (rel->rd_att->constr)
			ExecConstraints(rri, slot, estate);
		/* the slot must outlive the per-tuple memory of its defaults */
		ExecMaterializeSlot(slot);
		ResetPerTupleExprContext(estate);

		if (++nbuffered == nbuf)
		{
			flush_slots(estate, rri, tcs, slots, nbuffered, cid, bistate);
			nbuffered = 0;
		}
	}
	if (nbuffered > 0)
		flush_slots(estate, rri, tcs, slots, nbuffered, cid, bistate);

	/* the rows stay in the heap and the transition table, not in the slots */
	for (i = 0; i < nbuf; i++)
		ExecClearTuple(slots[i]);
	FreeBulkInsertState(bistate);
	ExecASInsertTriggers(estate, rri, tcs);
	AfterTriggerEndQuery(estate);

	MemoryContextSwitchTo(oldcxt);
	ExecResetTupleTable(estate->es_tupleTable, false);
	ExecCloseResultRelations(estate);
	ExecCloseRangeTableRelations(estate);
	FreeExecutorState(estate);
	PopActiveSnapshot();
	return true;
}
