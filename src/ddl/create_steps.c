/*-------------------------------------------------------------------------
 *
 * create_steps.c
 *	  One implementation of each step that CREATE VIEW ... WITH (continuous)
 *	  takes for an aggregate view and for a transform alike: the reader's
 *	  privileges and row-level security, the stream lock, the schema and
 *	  name, pinned settings, the trigger on the stream (made as the
 *	  stream's owner), the backfill and the view's comment.  The pipeline
 *	  that calls them is ddl/create_view.c; what differs between views and
 *	  transforms is in create_view.c and create_transform.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "core/security.h"
#include "core/util.h"
#include "ddl/create_steps.h"
#include "maintain/maintain.h"
#include "query/analyze.h"
#include "query/sjoin_window.h"

/*
 * A continuous view or transform reads every row inserted into its stream;
 * it cannot apply row-level security policies to them, so it may only be
 * created by a role the stream's policies do not restrict.  And the
 * creator must be able to read everything the query reads.
 */
static void
check_stream_rls(Oid streamid)
{
	bool		enabled;
	bool		forced;

	stream_rls_flags(streamid, &enabled, &forced);
	if (stream_rls_applies(streamid, GetUserId(), enabled, forced))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot create a continuous view over stream \"%s\": row-level security applies to you",
						get_rel_name(streamid)),
				 errdetail("A continuous view aggregates every row inserted into its stream and cannot apply row-level security policies to them."),
				 errhint("Create the view as the stream's owner or as a role with BYPASSRLS, or disable row-level security on the stream.")));
}

void
create_check_reader(Query *query, Oid streamid)
{
	ExecCheckRTPerms(query->rtable, true);

	check_stream_rls(streamid);
	/* and on the second stream of a join (query/stream_joins.c) */
	if (OidIsValid(sjoin_right_stream(query)))
		check_stream_rls(sjoin_right_stream(query));
}

/*
 * Keep writers out of the stream until we commit: rows committed before
 * are backfilled, rows inserted after see the new trigger.
 */
void
create_lock_stream(Oid streamid)
{
	LockRelationOid(streamid, ShareRowExclusiveLock);
}

Oid
create_namespace(ViewStmt *stmt, bool replacing)
{
	Oid			existing;
	Oid			nspid = RangeVarGetAndCheckCreationNamespace(stmt->view, NoLock, &existing);

	if (OidIsValid(existing) && !replacing)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", stmt->view->relname)));
	return nspid;
}

/*
 * From here on every name we write or read is schema-qualified, and every
 * text we generate or deparse (constants, intervals) is made under the
 * pinned settings of src/core/security.c.
 */
int
create_begin(void)
{
	int			nestlevel = se_pin_settings(NULL);

	SPI_connect();
	return nestlevel;
}

void
create_end(int nestlevel)
{
	SPI_finish();
	se_unpin_settings(nestlevel);
}

/*
 * Reading a stream is enough to build a view over it, but a trigger can
 * only be created by the stream's owner: create this fixed one as the
 * owner.  It runs its work as each view's owner, not the stream's.  With
 * OWNED_BY, the trigger goes when that view goes.
 */
Oid
create_stream_trigger(Oid streamid, const char *trigname, const char *funcname,
					  const char *arg, Oid owned_by)
{
	SeRunAs		runas;
	Oid			trigid;

	se_run_as_role(&runas, se_relation_owner(streamid));
	trigid = se_create_statement_trigger(streamid, trigname, TRIGGER_TYPE_AFTER,
										 TRIGGER_TYPE_INSERT, funcname, arg, CV_NEW_ROWS);
	se_restore(&runas);
	if (OidIsValid(owned_by))
		se_record_dependency(TriggerRelationId, trigid, RelationRelationId, owned_by,
							 DEPENDENCY_AUTO);
	return trigid;
}

/*
 * Run a statement over the whole stream with a fresh snapshot, inside the
 * materialize scope (only there may materializations be written).  WHAT
 * names it in the error context.
 */
void
create_backfill(const char *sql, const char *what)
{
	SPIPlanPtr	plan;
	int			rc;
	MemoryContext cxt = CurrentMemoryContext;

	se_materialize_begin();
	PG_TRY();
	{
		plan = SPI_prepare(sql, 0, NULL);
		if (plan == NULL)
			elog(ERROR, "stream_ext: could not prepare backfill: %s",
				 SPI_result_code_string(SPI_result));
		rc = SPI_execute_snapshot(plan, NULL, NULL, GetLatestSnapshot(),
								  InvalidSnapshot, false, true, 0);
		if (rc < 0)
			elog(ERROR, "stream_ext: backfill failed: %s", SPI_result_code_string(rc));
		SPI_freeplan(plan);
	}
	PG_CATCH();
	{
		se_materialize_end();
		se_rethrow_short_context(cxt, list_make1((char *) sql), "%s", what);
	}
	PG_END_TRY();
	se_materialize_end();
}

/* describe the view (psql \dv+, PostgREST's OpenAPI output) */
void
create_comment_view(const char *vq, const char *definition)
{
	se_run_sql(psprintf("COMMENT ON VIEW %s IS %s", vq, quote_literal_cstr(definition)));
}
