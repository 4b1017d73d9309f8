/*-------------------------------------------------------------------------
 *
 * rebuild_finish.c
 *	  The end of a rebuild beside a continuous view (ddl/rebuild.c): the
 *	  swap, stream_ext.swap_backfill(), and its cancel
 *	  (stream_ext.cancel_backfill()).
 *
 * The swap is one transaction, run by the rebuild's worker when the
 * backfill is complete (stream_ext.backfill_auto_swap), or by the owner's
 * stream_ext.swap_backfill():
 *
 *	1. the rebuild's row FOR UPDATE (a cancel, another swap wait), state
 *	   'ready';
 *	2. the stream in SHARE ROW EXCLUSIVE mode (in-flight batches, which
 *	   maintained both, commit first; new ones wait), the view and the
 *	   shadow in ACCESS EXCLUSIVE mode (readers wait, or are waited for);
 *	3. as the view's owner, the view takes the new definition, which reads
 *	   the shadow's parts (ddl/replace_view.c's replace_define_view(): in
 *	   place when the columns allow it, else dropped and created again --
 *	   the dependents were checked at CREATE OR REPLACE), and the old parts
 *	   and catalog rows go;
 *	4. the shadow's catalog row and parts become the view's, its comments
 *	   are copied, the shadow (now empty) is dropped;
 *	5. the row says 'done'.
 *
 * A reader sees all of the old view or all of the new one; a batch counts
 * in the old view (before) or the new one (after), and the new one holds
 * every row of the stream as q2 would, since the hand-over.
 *
 * A cancel drops the shadow and its catalog rows under the row's lock: the
 * view was never touched, and is maintained as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "ddl/create_view.h"
#include "ddl/rebuild.h"
#include "ddl/replace_view.h"

PG_FUNCTION_INFO_V1(stream_ext_swap_backfill);
PG_FUNCTION_INFO_V1(stream_ext_cancel_backfill_or_rebuild);

/* kafka/replay.c */
extern PGDLLEXPORT Datum stream_ext_cancel_backfill(PG_FUNCTION_ARGS);

/* a statement on stream_ext's catalog, as its owner; SPI is connected */
void
rebuild_catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *args, int expected)
{
	SeRunAs		ra;
	int			rc;

	se_run_as_catalog_owner(&ra);
	rc = SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 0);
	se_restore(&ra);
	if (rc != expected)
		elog(ERROR, "stream_ext: rebuild catalog statement failed: %s",
			 SPI_result_code_string(rc));
}

static bool
relation_exists(Oid relid)
{
	return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid));
}

/* the shadow's comments (view and columns) onto view viewid */
static void
copy_comments(Oid shadowid, Oid viewid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(shadowid)};

	if (SPI_execute_with_args("SELECT objsubid, description FROM pg_catalog.pg_description "
							  "WHERE objoid = $1 AND classoid = 'pg_catalog.pg_class'::pg_catalog.regclass",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "stream_ext: could not read the comments of the rebuilt view");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int32		subid = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
														SPI_tuptable->tupdesc, 1, &isnull));

		CreateComments(viewid, RelationRelationId, subid,
					   SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	}
}

/* drop the shadow shadowid of view viewid: its parts and catalog rows */
static void
drop_shadow(Oid shadowid, Oid viewid)
{
	ObjectAddress obj;

	deleteDependencyRecordsForSpecific(RelationRelationId, shadowid, DEPENDENCY_INTERNAL,
									   RelationRelationId, viewid);
	CommandCounterIncrement();
	catalog_forget_view(shadowid);
	ObjectAddressSet(obj, RelationRelationId, shadowid);
	performDeletion(&obj, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	CommandCounterIncrement();
	ddl_drop_unused_views_triggers();
}

/*
 * Swap in the rebuild of the view whose OID was original at CREATE OR
 * REPLACE (see the header).  False when there is none ready; with must,
 * an error says why.
 */
bool
rebuild_swap(Oid original, bool must)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Oid			viewid;
	Oid			shadowid;
	Oid			streamid;
	Oid			owner;
	Oid			newid;
	Oid			nspid;
	char	   *state;
	char	   *view_sql;
	char	   *timezone;
	char	   *viewname;
	char	   *vq;
	ReplaceState rs;
	SeRunAs		ra;
	ObjectAddress obj;

	SPI_connect();
	args[0] = ObjectIdGetDatum(original);
	rebuild_catalog_exec("SELECT r.view::pg_catalog.oid, r.shadow::pg_catalog.oid, r.stream::pg_catalog.oid, "
				"r.state, r.view_sql, v.timezone "
				"FROM stream_ext.rebuilds r LEFT JOIN stream_ext.view_catalog v ON v.view = r.shadow "
				"WHERE r.original = $1 FOR UPDATE OF r",
				1, argtypes, args, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		SPI_finish();
		if (must)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("continuous view \"%s\" has no rebuild to swap in",
							get_rel_name(original))));
		return false;
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	viewid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	shadowid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	streamid = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	state = SPI_getvalue(tup, desc, 4);
	view_sql = SPI_getvalue(tup, desc, 5);
	timezone = SPI_getvalue(tup, desc, 6);
	if (strcmp(state, "ready") != 0)
	{
		SPI_finish();
		if (must)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the rebuild of continuous view \"%s\" cannot be swapped in: it is %s",
							get_rel_name(viewid), state),
					 strcmp(state, "running") == 0 ?
					 errhint("Its backfill is not complete: see stream_ext.backfill_progress.") : 0));
		return false;
	}

	/* writers, then readers: see the header */
	LockRelationOid(streamid, ShareRowExclusiveLock);
	LockRelationOid(viewid, AccessExclusiveLock);
	LockRelationOid(shadowid, AccessExclusiveLock);
	if (!relation_exists(viewid) || !relation_exists(shadowid) || timezone == NULL)
	{
		SPI_finish();
		return false;			/* dropped: DROP VIEW took the shadow along */
	}
	owner = se_relation_owner(viewid);
	if (owner != se_relation_owner(shadowid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the owner of continuous view \"%s\" changed during its rebuild",
						get_rel_name(viewid)),
				 errhint("Cancel the rebuild (stream_ext.cancel_backfill()) and replace the view again.")));
	args[0] = ObjectIdGetDatum(shadowid);
	rebuild_catalog_exec("SELECT reason FROM stream_ext.invalid_objects WHERE object = $1::pg_catalog.regclass",
				1, argtypes, args, SPI_OK_SELECT);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the rebuild of continuous view \"%s\" is no longer maintained: %s",
						get_rel_name(viewid),
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1))));

	viewname = get_rel_name(viewid);
	nspid = get_rel_namespace(viewid);
	vq = quote_qualified_identifier(get_namespace_name(nspid), viewname);

	/* the shadow is no longer part of the view: the old parts go alone */
	deleteDependencyRecordsForSpecific(RelationRelationId, shadowid, DEPENDENCY_INTERNAL,
									   RelationRelationId, viewid);
	CommandCounterIncrement();

	rs.replacing = true;
	rs.viewid = viewid;
	se_run_as_owner(&ra, owner, timezone);
	replace_define_view(&rs, vq, view_sql);
	se_restore(&ra);
	newid = get_relname_relid(viewname, nspid);

	/* the shadow's catalog row and parts are the view's now */
	args[0] = ObjectIdGetDatum(shadowid);
	args[1] = ObjectIdGetDatum(newid);
	rebuild_catalog_exec("UPDATE stream_ext.view_catalog SET view = $2::pg_catalog.regclass "
				"WHERE view = $1::pg_catalog.regclass", 2, argtypes, args, SPI_OK_UPDATE);
	CommandCounterIncrement();
	replace_move_parts(shadowid, newid);
	copy_comments(shadowid, newid);
	ObjectAddressSet(obj, RelationRelationId, shadowid);
	performDeletion(&obj, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	CommandCounterIncrement();
	/* the old definition's stream may have no view left */
	ddl_drop_unused_views_triggers();
	CacheInvalidateRelcacheByRelid(streamid);

	args[0] = ObjectIdGetDatum(original);
	rebuild_catalog_exec("UPDATE stream_ext.rebuilds SET view = $2::pg_catalog.regclass, state = 'done', "
				"last_error = NULL, updated_at = pg_catalog.now(), finished_at = pg_catalog.now() "
				"WHERE original = $1", 2, argtypes, args, SPI_OK_UPDATE);
	SPI_finish();
	ddl_notify_pgrst_reload();
	return true;
}

/*
 * Cancel the pending rebuild of view viewid: drop its shadow; the view is
 * as it was.  False if it has none.  The worker's batch holds the row, so
 * this waits for the batch being applied.
 */
bool
rebuild_cancel(Oid viewid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(viewid)};
	Oid			shadowid;
	bool		isnull;

	if (!rebuild_catalog_exists())
		return false;
	SPI_connect();
	rebuild_catalog_exec("SELECT shadow::pg_catalog.oid FROM stream_ext.rebuilds "
				"WHERE view = $1::pg_catalog.regclass AND state IN ('running', 'ready') FOR UPDATE",
				1, argtypes, args, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		SPI_finish();
		return false;
	}
	shadowid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											  &isnull));
	LockRelationOid(shadowid, AccessExclusiveLock);
	if (relation_exists(shadowid))
		drop_shadow(shadowid, viewid);
	rebuild_catalog_exec("UPDATE stream_ext.rebuilds SET state = 'cancelled', updated_at = pg_catalog.now(), "
				"finished_at = pg_catalog.now() WHERE view = $1::pg_catalog.regclass",
				1, argtypes, args, SPI_OK_UPDATE);
	SPI_finish();
	return true;
}

/*
 * The backfill of the rebuild of original cannot end exact (a crash emptied
 * the stream): drop its shadow, state 'failed' with reason.  The caller
 * holds its row.
 */
void
rebuild_abandon(Oid original, Oid viewid, Oid shadowid, const char *reason)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2] = {ObjectIdGetDatum(original), CStringGetTextDatum(reason)};

	SPI_connect();
	LockRelationOid(shadowid, AccessExclusiveLock);
	if (relation_exists(shadowid))
		drop_shadow(shadowid, viewid);
	rebuild_catalog_exec("UPDATE stream_ext.rebuilds SET state = 'failed', last_error = $2, "
				"updated_at = pg_catalog.now(), finished_at = pg_catalog.now() WHERE original = $1",
				2, argtypes, args, SPI_OK_UPDATE);
	SPI_finish();
	ereport(WARNING,
			(errmsg("stream_ext: rebuild of continuous view \"%s\" abandoned: %s",
					get_rel_name(viewid), reason),
			 errdetail("The view is as it was before CREATE OR REPLACE, and maintained."),
			 errhint("Run CREATE OR REPLACE again.")));
}

/* the caller must own continuous view viewid */
static void
check_owner(Oid viewid)
{
	if (!OidIsValid(catalog_stream_of(viewid)) || catalog_is_transform(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view", get_rel_name(viewid))));
	if (!pg_class_ownercheck(viewid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_VIEW, get_rel_name(viewid));
}

/* stream_ext.swap_backfill(view): swap a ready rebuild in now */
Datum
stream_ext_swap_backfill(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	Oid			original = InvalidOid;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(viewid)};
	bool		isnull;

	check_owner(viewid);
	if (!rebuild_catalog_exists())
		PG_RETURN_BOOL(false);
	SPI_connect();
	rebuild_catalog_exec("SELECT original FROM stream_ext.rebuilds WHERE view = $1::pg_catalog.regclass",
				1, argtypes, args, SPI_OK_SELECT);
	if (SPI_processed > 0)
		original = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	if (!OidIsValid(original))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" has no rebuild to swap in", get_rel_name(viewid))));
	PG_RETURN_BOOL(rebuild_swap(original, true));
}

/*
 * stream_ext.cancel_backfill(view) since 0.3: a rebuild beside the view,
 * else its Kafka replay (kafka/replay.c).
 */
Datum
stream_ext_cancel_backfill_or_rebuild(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);

	check_owner(viewid);
	if (rebuild_cancel(viewid))
		PG_RETURN_BOOL(true);
	return stream_ext_cancel_backfill(fcinfo);
}
