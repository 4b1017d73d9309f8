/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  Compaction of continuous views that append (docs/internals.md, "Append
 *	  mode").  A batch appends its partial states to the view's delta; the
 *	  view reads materialization (+) delta merged per group.  Compaction
 *	  folds delta rows into the materialization with the one statement
 *	  query/analyze.c's cv_compact_sql() made at CREATE (view_catalog.
 *	  compact_sql): the rows leave the delta and their merged states reach
 *	  the materialization in one transaction, so no row is lost or counted
 *	  twice and a reader sees the view the same before and after.  It takes
 *	  no lock writers wait for: they only insert into the delta.
 *
 *	  The view's compaction lock.  Unless TTL or a sliding window's expiry
 *	  delete the view's delta rows too (then the statement locks up to
 *	  max_rows rows FOR UPDATE SKIP LOCKED, skipping theirs), the statement
 *	  deletes the delta rows below a ctid bound without locking them
 *	  first (query/analyze.c, cv_compact_sql()), so a second compaction
 *	  of the same view would wait on every row the first deletes (and then
 *	  skip it: READ COMMITTED never deletes a row twice, so nothing is
 *	  counted twice either way).  Compactions of one view are therefore
 *	  serialized by a lock of their own, held to the end of the
 *	  transaction: an advisory lock tag on (database, view) with a field4
 *	  of our own (SE_COMPACT_LOCK_FIELD4; the SQL advisory lock functions
 *	  use 1 and 2).  The background compactor and a writer's backpressure
 *	  skip a view whose lock is taken (the writer checks again at its next
 *	  batch, so a writer never waits for a compaction); stream_ext.compact()
 *	  waits for it, as for any lock (lock_timeout, deadlock detection).
 *
 *	  - se_compact_view(): the entry point, for stream_ext.compact() and
 *		the background compactor; runs the statement as the view's owner,
 *		security-restricted, with the view's pinned settings, in the
 *		materialize scope (the guard triggers let it write), and reports it
 *		to view_stats (stats_report_compaction(), counted at commit);
 *	  - backpressure: after each batch, the writer compacts the delta
 *		itself when it holds more than stream_ext.compact_threshold rows
 *		(compact_after_batch(); no scan: delta_rows_waiting(), the view's
 *		backlog kept in view_stats' shared table -- rows appended minus rows
 *		folded, counted at commit -- plus this transaction's own).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "maintain/compact.h"
#include "maintain/stats.h"

PG_FUNCTION_INFO_V1(stream_ext_compact);

/* stream_ext.compact_threshold: delta rows over which a writer compacts */
static int	compact_threshold = 20000;

/* field4 of the view's compaction lock tag (SQL advisory locks use 1 and 2) */
#define SE_COMPACT_LOCK_FIELD4	0x5345

/*
 * Take the compaction lock of view viewid for this transaction: wait for
 * it, or (!wait) give up at once if another transaction holds it.
 */
static bool
compact_lock(Oid viewid, bool wait)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, viewid, 0, SE_COMPACT_LOCK_FIELD4);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

/* the view's name for messages; its OID once it is gone (dropped meanwhile) */
static char *
view_display_name(Oid viewid)
{
	char	   *name = get_rel_name(viewid);
	char	   *nsp = name ? get_namespace_name(get_rel_namespace(viewid)) : NULL;

	if (name == NULL || nsp == NULL)
		return psprintf("with OID %u", viewid);
	return quote_qualified_identifier(nsp, name);
}

/*
 * Run cat's compaction statement as its owner; the number of delta rows
 * folded.  Takes the view's compaction lock first, waiting for it if
 * wait, else returning 0 when another transaction holds it.
 */
static int64
compact_run(ViewCatalogEntry *cat, int64 max_rows, bool wait)
{
	/* rows others delete too (TTL, sliding expiry): lock, skip theirs */
	bool		lock_rows = cat->has_ttl || cat->expire_sql != NULL;
	Oid			argtypes[2] = {INT8OID, BOOLOID};
	Datum		values[2] = {Int64GetDatum(max_rows), BoolGetDatum(lock_rows)};
	char		nulls[2] = {max_rows > 0 ? ' ' : 'n', ' '};
	MemoryContext cxt = CurrentMemoryContext;
	TimestampTz start = GetCurrentTimestamp();	/* before the snapshot */
	SeRunAs		runas;
	int64		folded = 0;
	bool		whole = true;
	bool		isnull;
	int			rc;

	if (!compact_lock(cat->viewid, wait))
		return 0;
	se_run_as_owner(&runas, cat->owner, cat->timezone);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	se_materialize_begin();
	PG_TRY();
	{
		rc = SPI_execute_with_args(cat->compact_sql, 2, argtypes, values, nulls, false, 0);
		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "stream_ext: compaction failed: %s", SPI_result_code_string(rc));
		folded = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1, &isnull));
		/* rows locked and LIMITed: it saw the whole delta if it got fewer */
		whole = max_rows <= 0 || folded < max_rows;
		if (!lock_rows)
			whole = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 3, &isnull));
	}
	PG_CATCH();
	{
		se_materialize_end();
		se_rethrow_short_context(cxt, list_make1(cat->compact_sql),
								 "compaction of continuous view %s (statement in stream_ext.view_catalog)",
								 view_display_name(cat->viewid));
	}
	PG_END_TRY();
	se_materialize_end();
	SPI_finish();
	se_restore(&runas);
	/* view_stats' compaction columns; "drained" if it saw the whole delta */
	stats_report_compaction(cat->viewid, (uint64) folded,
							(double) (GetCurrentTimestamp() - start) / 1000.0,
							whole ? start : 0);
	return folded;
}

/*
 * *cat of continuous view viewid, or an error.  A member of a shared
 * storage (ddl/shared_storage.c) without the storage's compaction: the
 * member that has it, whose compaction folds the delta for all.
 */
static void
lookup_view(Oid viewid, ViewCatalogEntry *cat)
{
	Oid			leader;

	if (!catalog_lookup_view(viewid, cat, CurrentMemoryContext))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view",
						get_rel_name(viewid) ? get_rel_name(viewid) : "?")));
	if (cat->compact_sql == NULL && OidIsValid(cat->deltaid) &&
		catalog_shared_prefix(viewid) != NULL &&
		OidIsValid(leader = catalog_shared_leader(cat->matrelid)))
		(void) catalog_lookup_view(leader, cat, CurrentMemoryContext);
}

int64
se_compact_view(Oid viewid, int64 max_rows)
{
	ViewCatalogEntry cat;

	lookup_view(viewid, &cat);
	return se_compact_view_entry(&cat, max_rows);
}

/* the same, for a caller that has read the view's catalog entry already */
int64
se_compact_view_entry(ViewCatalogEntry *cat, int64 max_rows)
{
	if (!OidIsValid(cat->deltaid) || cat->compact_sql == NULL)
		return 0;
	return compact_run(cat, max_rows, false);
}

/*
 * The rows this transaction (subtransactions included) inserted into
 * relation relid minus those it deleted, not yet committed.
 */
static int64
own_uncommitted_rows(PgStat_TableStatus *mine)
{
	int64		n = 0;

	if (mine)
		for (PgStat_TableXactStatus *t = mine->trans; t != NULL; t = t->upper)
			n += t->tuples_inserted - t->tuples_deleted;
	return n;
}

/*
 * The delta rows of a view waiting to be folded, without a scan: the
 * view's backlog in view_stats' shared table (rows appended minus rows
 * folded, both counted when their transactions commit) plus this
 * transaction's own.  Without a backlog (stream_ext.track_stats off, or no
 * batch since the server started): the cumulative statistics' live
 * tuples plus what this backend has not flushed.  That estimate is only a
 * fallback: PostgreSQL clamps n_live_tuples at zero when a flush would take
 * it below, which happens whenever the compactor's deletions are flushed
 * before the inserts of the writer whose rows it folded -- the estimate
 * then drifts up by those rows for good, and writers compact deltas that
 * are nearly empty.
 */
static int64
delta_rows_waiting(ViewCatalogEntry *cat)
{
	PgStat_TableStatus *mine = find_tabstat_entry(cat->deltaid);
	PgStat_StatTabEntry *shared;
	int64		n;

	if (stats_delta_backlog(cat->viewid, &n))
		return n + own_uncommitted_rows(mine);
	shared = pgstat_fetch_stat_tabentry(cat->deltaid);
	n = shared ? shared->n_live_tuples : 0;
	if (mine)
		n += mine->t_counts.t_delta_live_tuples;
	return n + own_uncommitted_rows(mine);
}

void
compact_after_batch(ViewCatalogEntry *cat)
{
	if (!OidIsValid(cat->deltaid) || cat->compact_sql == NULL || compact_threshold < 0)
		return;
	if (delta_rows_waiting(cat) <= compact_threshold)
		return;
	(void) compact_run(cat, 0, false);
}

/*
 * stream_ext.compact(view regclass) RETURNS bigint
 *
 * Folds the whole delta of a continuous view into its materialization, as
 * the view's owner; returns the number of delta rows folded.  The caller
 * must have the privileges of the view's owner.
 */
Datum
stream_ext_compact(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	ViewCatalogEntry cat;

	lookup_view(viewid, &cat);
	if (!has_privs_of_role(GetUserId(), cat.owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of view %s", get_rel_name(viewid)),
				 errdetail("Compaction runs as the view's owner.")));
	if (!OidIsValid(cat.deltaid) || cat.compact_sql == NULL)
		PG_RETURN_INT64(0);
	PG_RETURN_INT64(compact_run(&cat, 0, true));
}

void
compact_init(void)
{
	DefineCustomIntVariable("stream_ext.compact_threshold",
							"Rows in a continuous view's delta over which the writing statement compacts it itself.",
							"Backpressure for when background compaction falls behind; -1 never compacts in the writer.",
							&compact_threshold,
							20000,
							-1, INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
}
