/*-------------------------------------------------------------------------
 *
 * discard_am.c
 *	  The table access method stream_ext_discard: a table that stores no
 *	  rows.  It is what a stream created with
 *	  stream_ext.create_stream(..., retain => false) is made of.
 *
 *	  Inserts (INSERT, COPY's multi-insert, the Kafka source's
 *	  table_multi_insert) store nothing and every scan returns no rows, but
 *	  the executor still runs everything around the insert: defaults,
 *	  generated columns, NOT NULL and CHECK constraints, BEFORE triggers,
 *	  RETURNING, and the transition tables of statement-level AFTER
 *	  triggers, which are filled from the executor's slots, not read back
 *	  from the table (commands/trigger.c, AfterTriggerSaveEvent).  So the
 *	  continuous views, transforms and Kafka sinks of a stream, which all
 *	  run from such triggers, see every row while the stream keeps none.
 *
 *	  What cannot work without stored rows is refused with an error:
 *	  - row-level AFTER INSERT triggers (CREATE TRIGGER ... FOR EACH ROW,
 *		constraint triggers, foreign keys): PostgreSQL queues the row's
 *		TID and fetches the row back from the table when the trigger
 *		fires.  Checked at every insert, so it holds however the trigger
 *		came to be (created later, or before ALTER TABLE ... SET ACCESS
 *		METHOD);
 *	  - indexes (and so primary keys, unique constraints, ON CONFLICT
 *		with a target): nothing to index, and index entries would point
 *		at rows that do not exist.
 *	  UPDATE, DELETE and row locks never find a row to act on.
 *
 *	  Any role may create a table USING stream_ext_discard (PostgreSQL has
 *	  no privileges on access methods); only the table's owner can choose
 *	  or change its access method, so nobody can make another role's table
 *	  drop its rows (docs/security.md).  The relation still gets its
 *	  (empty) files, so that TRUNCATE, DROP, SET TABLESPACE, crash reset of
 *	  unlogged tables and everything else that expects them works as for a
 *	  heap table; nothing is ever written to them, and no transaction id is
 *	  stored, so relfrozenxid stays invalid and the table never needs
 *	  freezing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "commands/defrem.h"
#include "executor/tuptable.h"
#include "storage/smgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "storage/discard_am.h"

PG_FUNCTION_INFO_V1(stream_ext_discard_am_handler);

/* the error for what needs stored rows */
static void
refuse(Relation rel, const char *what) pg_attribute_noreturn();

static void
refuse(Relation rel, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s \"%s\": it stores no rows", what,
					RelationGetRelationName(rel)),
			 errdetail("Table \"%s\" uses access method %s, as streams created with retain => false do.",
					   RelationGetRelationName(rel), DISCARD_AM_NAME)));
}

/* ---- slots and scans: there is never a row ------------------------------ */

static const TupleTableSlotOps *
discard_slot_callbacks(Relation rel)
{
	return &TTSOpsVirtual;
}

static TableScanDesc
discard_scan_begin(Relation rel, Snapshot snapshot, int nkeys,
				   struct ScanKeyData *key, ParallelTableScanDesc pscan, uint32 flags)
{
	TableScanDesc scan = palloc0(sizeof(TableScanDescData));

	scan->rs_rd = rel;
	scan->rs_snapshot = snapshot;
	scan->rs_nkeys = nkeys;
	scan->rs_key = key;
	scan->rs_flags = flags;
	scan->rs_parallel = pscan;
	return scan;
}

static void
discard_scan_end(TableScanDesc scan)
{
	/* table_beginscan_catalog() and the like register a snapshot for us */
	if (scan->rs_flags & SO_TEMP_SNAPSHOT)
		UnregisterSnapshot(scan->rs_snapshot);
	pfree(scan);
}

static void
discard_scan_rescan(TableScanDesc scan, struct ScanKeyData *key, bool set_params,
					bool allow_strat, bool allow_sync, bool allow_pagemode)
{
}

static bool
discard_scan_getnextslot(TableScanDesc scan, ScanDirection direction,
						 TupleTableSlot *slot)
{
	ExecClearTuple(slot);
	return false;
}

static void
discard_scan_set_tidrange(TableScanDesc scan, ItemPointer mintid,
						  ItemPointer maxtid)
{
}

static IndexFetchTableData *
discard_index_fetch_begin(Relation rel)
{
	IndexFetchTableData *scan = palloc0(sizeof(IndexFetchTableData));

	scan->rel = rel;
	return scan;
}

static void
discard_index_fetch_reset(IndexFetchTableData *scan)
{
}

static void
discard_index_fetch_end(IndexFetchTableData *scan)
{
	pfree(scan);
}

static bool
discard_index_fetch_tuple(IndexFetchTableData *scan, ItemPointer tid,
						  Snapshot snapshot, TupleTableSlot *slot,
						  bool *call_again, bool *all_dead)
{
	*call_again = false;
	if (all_dead)
		*all_dead = false;
	ExecClearTuple(slot);
	return false;
}

static bool
discard_tuple_fetch_row_version(Relation rel, ItemPointer tid,
								Snapshot snapshot, TupleTableSlot *slot)
{
	ExecClearTuple(slot);
	return false;
}

static bool
discard_tuple_tid_valid(TableScanDesc scan, ItemPointer tid)
{
	return false;
}

static void
discard_tuple_get_latest_tid(TableScanDesc scan, ItemPointer tid)
{
}

static bool
discard_tuple_satisfies_snapshot(Relation rel, TupleTableSlot *slot,
								 Snapshot snapshot)
{
	return false;
}

static TransactionId
discard_index_delete_tuples(Relation rel, TM_IndexDeleteOp *delstate)
{
	refuse(rel, "delete index entries of");
}

/* ---- inserts: checked, then dropped -------------------------------------- */

/*
 * Row-level AFTER INSERT triggers fetch the row back by its TID when they
 * fire; there is no row to fetch.  The transition tables of statement
 * triggers are filled from the slot and need nothing from here.
 */
static void
check_insert(Relation rel)
{
	if (rel->trigdesc && rel->trigdesc->trig_insert_after_row)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot insert into \"%s\": it stores no rows, and it has row-level AFTER INSERT triggers",
						RelationGetRelationName(rel)),
				 errdetail("Row-level AFTER triggers (foreign keys and constraint triggers too) read the inserted row back from the table; table \"%s\" uses access method %s.",
						   RelationGetRelationName(rel), DISCARD_AM_NAME),
				 errhint("Use a statement-level trigger with a transition table (REFERENCING NEW TABLE), or a continuous transform, instead.")));
}

/* what heap_insert leaves in the slot, but no row: no valid TID */
static inline void
dropped(Relation rel, TupleTableSlot *slot)
{
	slot->tts_tableOid = RelationGetRelid(rel);
	ItemPointerSetInvalid(&slot->tts_tid);
}

static void
discard_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
					 int options, struct BulkInsertStateData *bistate)
{
	check_insert(rel);
	dropped(rel, slot);
}

static void
discard_tuple_insert_speculative(Relation rel, TupleTableSlot *slot,
								 CommandId cid, int options,
								 struct BulkInsertStateData *bistate, uint32 specToken)
{
	check_insert(rel);
	dropped(rel, slot);
}

static void
discard_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
								   uint32 specToken, bool succeeded)
{
}

static void
discard_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
					 CommandId cid, int options, struct BulkInsertStateData *bistate)
{
	int			i;

	check_insert(rel);
	for (i = 0; i < nslots; i++)
		dropped(rel, slots[i]);
}

/* no scan ever returns a row, so there is never one to change or lock */
static TM_Result
discard_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
					 Snapshot snapshot, Snapshot crosscheck, bool wait,
					 TM_FailureData *tmfd, bool changingPart)
{
	refuse(rel, "delete from");
}

static TM_Result
discard_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
					 CommandId cid, Snapshot snapshot, Snapshot crosscheck,
					 bool wait, TM_FailureData *tmfd,
					 LockTupleMode *lockmode, bool *update_indexes)
{
	refuse(rel, "update");
}

static TM_Result
discard_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
				   TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
				   LockWaitPolicy wait_policy, uint8 flags,
				   TM_FailureData *tmfd)
{
	refuse(rel, "lock rows of");
}

/* ---- storage: empty files, as a heap table has --------------------------- */

static void
create_storage(const RelFileNode *rnode, char persistence)
{
	SMgrRelation srel = RelationCreateStorage(*rnode, persistence, true);

	/* an unlogged table needs its init fork, reset to at crash recovery */
	if (persistence == RELPERSISTENCE_UNLOGGED)
	{
		smgrcreate(srel, INIT_FORKNUM, false);
		log_smgrcreate(rnode, INIT_FORKNUM);
		smgrimmedsync(srel, INIT_FORKNUM);
	}
	smgrclose(srel);
}

static void
discard_relation_set_new_filenode(Relation rel, const RelFileNode *newrnode,
								  char persistence, TransactionId *freezeXid,
								  MultiXactId *minmulti)
{
	/* no transaction ids stored: nothing to freeze, ever */
	*freezeXid = InvalidTransactionId;
	*minmulti = InvalidMultiXactId;
	create_storage(newrnode, persistence);
}

static void
discard_relation_nontransactional_truncate(Relation rel)
{
	RelationTruncate(rel, 0);
}

/* ALTER TABLE ... SET TABLESPACE: new empty files, the old ones dropped */
static void
discard_relation_copy_data(Relation rel, const RelFileNode *newrnode)
{
	create_storage(newrnode, rel->rd_rel->relpersistence);
	RelationDropStorage(rel);
}

/* VACUUM FULL, CLUSTER: nothing to copy */
static void
discard_relation_copy_for_cluster(Relation OldTable, Relation NewTable,
								  Relation OldIndex, bool use_sort,
								  TransactionId OldestXmin,
								  TransactionId *xid_cutoff,
								  MultiXactId *multi_cutoff,
								  double *num_tuples, double *tups_vacuumed,
								  double *tups_recently_dead)
{
	*xid_cutoff = InvalidTransactionId;
	*multi_cutoff = InvalidMultiXactId;
	*num_tuples = 0;
	*tups_vacuumed = 0;
	*tups_recently_dead = 0;
}

static void
discard_relation_vacuum(Relation rel, struct VacuumParams *params,
						BufferAccessStrategy bstrategy)
{
}

static bool
discard_scan_analyze_next_block(TableScanDesc scan, BlockNumber blockno,
								BufferAccessStrategy bstrategy)
{
	return false;
}

static bool
discard_scan_analyze_next_tuple(TableScanDesc scan, TransactionId OldestXmin,
								double *liverows, double *deadrows,
								TupleTableSlot *slot)
{
	return false;
}

static double
discard_index_build_range_scan(Relation table_rel, Relation index_rel,
							   struct IndexInfo *index_info, bool allow_sync,
							   bool anyvisible, bool progress,
							   BlockNumber start_blockno,
							   BlockNumber numblocks,
							   IndexBuildCallback callback,
							   void *callback_state, TableScanDesc scan)
{
	refuse(table_rel, "create an index on");
}

static void
discard_index_validate_scan(Relation table_rel, Relation index_rel,
							struct IndexInfo *index_info, Snapshot snapshot,
							struct ValidateIndexState *state)
{
	refuse(table_rel, "create an index on");
}

static uint64
discard_relation_size(Relation rel, ForkNumber forkNumber)
{
	return 0;
}

static bool
discard_relation_needs_toast_table(Relation rel)
{
	return false;
}

static Oid
discard_relation_toast_am(Relation rel)
{
	return InvalidOid;
}

static void
discard_relation_fetch_toast_slice(Relation toastrel, Oid valueid,
								   int32 attrsize, int32 sliceoffset,
								   int32 slicelength, struct varlena *result)
{
	refuse(toastrel, "read toasted values of");
}

static void
discard_relation_estimate_size(Relation rel, int32 *attr_widths,
							   BlockNumber *pages, double *tuples,
							   double *allvisfrac)
{
	*pages = 0;
	*tuples = 0;
	*allvisfrac = 0;
}

static bool
discard_scan_bitmap_next_block(TableScanDesc scan,
							   struct TBMIterateResult *tbmres)
{
	return false;
}

static bool
discard_scan_bitmap_next_tuple(TableScanDesc scan,
							   struct TBMIterateResult *tbmres,
							   TupleTableSlot *slot)
{
	ExecClearTuple(slot);
	return false;
}

static bool
discard_scan_sample_next_block(TableScanDesc scan,
							   struct SampleScanState *scanstate)
{
	return false;
}

static bool
discard_scan_sample_next_tuple(TableScanDesc scan,
							   struct SampleScanState *scanstate,
							   TupleTableSlot *slot)
{
	ExecClearTuple(slot);
	return false;
}

static const TableAmRoutine discard_methods = {
	.type = T_TableAmRoutine,

	.slot_callbacks = discard_slot_callbacks,

	.scan_begin = discard_scan_begin,
	.scan_end = discard_scan_end,
	.scan_rescan = discard_scan_rescan,
	.scan_getnextslot = discard_scan_getnextslot,

	.scan_set_tidrange = discard_scan_set_tidrange,
	.scan_getnextslot_tidrange = discard_scan_getnextslot,

	/* a parallel scan of no blocks (relation_size says 0) */
	.parallelscan_estimate = table_block_parallelscan_estimate,
	.parallelscan_initialize = table_block_parallelscan_initialize,
	.parallelscan_reinitialize = table_block_parallelscan_reinitialize,

	.index_fetch_begin = discard_index_fetch_begin,
	.index_fetch_reset = discard_index_fetch_reset,
	.index_fetch_end = discard_index_fetch_end,
	.index_fetch_tuple = discard_index_fetch_tuple,

	.tuple_fetch_row_version = discard_tuple_fetch_row_version,
	.tuple_tid_valid = discard_tuple_tid_valid,
	.tuple_get_latest_tid = discard_tuple_get_latest_tid,
	.tuple_satisfies_snapshot = discard_tuple_satisfies_snapshot,
	.index_delete_tuples = discard_index_delete_tuples,

	.tuple_insert = discard_tuple_insert,
	.tuple_insert_speculative = discard_tuple_insert_speculative,
	.tuple_complete_speculative = discard_tuple_complete_speculative,
	.multi_insert = discard_multi_insert,
	.tuple_delete = discard_tuple_delete,
	.tuple_update = discard_tuple_update,
	.tuple_lock = discard_tuple_lock,

	.relation_set_new_filenode = discard_relation_set_new_filenode,
	.relation_nontransactional_truncate = discard_relation_nontransactional_truncate,
	.relation_copy_data = discard_relation_copy_data,
	.relation_copy_for_cluster = discard_relation_copy_for_cluster,
	.relation_vacuum = discard_relation_vacuum,
	.scan_analyze_next_block = discard_scan_analyze_next_block,
	.scan_analyze_next_tuple = discard_scan_analyze_next_tuple,
	.index_build_range_scan = discard_index_build_range_scan,
	.index_validate_scan = discard_index_validate_scan,

	.relation_size = discard_relation_size,
	.relation_needs_toast_table = discard_relation_needs_toast_table,
	.relation_toast_am = discard_relation_toast_am,
	.relation_fetch_toast_slice = discard_relation_fetch_toast_slice,

	.relation_estimate_size = discard_relation_estimate_size,

	.scan_bitmap_next_block = discard_scan_bitmap_next_block,
	.scan_bitmap_next_tuple = discard_scan_bitmap_next_tuple,
	.scan_sample_next_block = discard_scan_sample_next_block,
	.scan_sample_next_tuple = discard_scan_sample_next_tuple
};

/*
 * stream_ext.discard_am_handler(internal) RETURNS table_am_handler, the
 * handler of CREATE ACCESS METHOD stream_ext_discard.
 */
Datum
stream_ext_discard_am_handler(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(&discard_methods);
}

bool
se_rel_discards_rows(Oid relid)
{
	HeapTuple	tup;
	Oid			amoid = get_table_am_oid(DISCARD_AM_NAME, true);
	bool		result = false;

	if (!OidIsValid(amoid))
		return false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_class) GETSTRUCT(tup))->relam == amoid;
		ReleaseSysCache(tup);
	}
	return result;
}
