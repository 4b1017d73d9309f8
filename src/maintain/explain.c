/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  stream_ext.explain(view): the plan of a continuous view's maintenance.
 *
 *	  Maintenance statements read the batch through the transition table of
 *	  the stream's trigger, which exists only while the trigger runs.  Here
 *	  an empty stand-in with the stream's row type is registered under the
 *	  same name, and the statements are EXPLAINed the way maintenance plans
 *	  them: as the view's owner, with search_path and TimeZone pinned and the
 *	  planner hook turning stream_ext.partial() into partial aggregation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "core/catalog.h"
#include "core/security.h"
#include "maintain/maintain.h"
#include "query/analyze.h"
#include "windows/lateness.h"

PG_FUNCTION_INFO_V1(stream_ext_explain);

static char *
rel_display_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

static void
put_line(ReturnSetInfo *rsinfo, const char *line)
{
	Datum		value = CStringGetTextDatum(line);
	bool		isnull = false;

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
}

/*
 * EXPLAIN one maintenance statement.  With a watermark (allowed_lateness),
 * the statement has it as $1, bound like maintenance binds it.
 */
static void
explain_statement(ReturnSetInfo *rsinfo, const char *sql, bool verbose,
				  MemoryContext outcxt, bool has_watermark,
				  Datum watermark, bool watermark_isnull)
{
	StringInfoData buf;
	Oid			argtypes[1] = {TIMESTAMPTZOID};
	Datum		values[1] = {watermark};
	char		nulls[1] = {watermark_isnull ? 'n' : ' '};
	int			rc;

	initStringInfo(&buf);
	appendStringInfo(&buf, "EXPLAIN (COSTS true, VERBOSE %s) %s",
					 verbose ? "true" : "false", sql);
	rc = SPI_execute_with_args(buf.data, has_watermark ? 1 : 0, argtypes,
							   values, nulls, false, 0);
	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "stream_ext: EXPLAIN failed: %s", SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *line = SPI_getvalue(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 1);
		MemoryContext old = MemoryContextSwitchTo(outcxt);

		put_line(rsinfo, line);
		MemoryContextSwitchTo(old);
	}
}

/*
 * stream_ext.explain(view regclass, verbose boolean DEFAULT false,
 *					  batch_rows integer DEFAULT 1000) RETURNS SETOF text
 *
 * The planner sizes the batch by BATCH_ROWS; maintenance itself always
 * plans for MAINT_PLAN_ROWS (1000) rows, whatever the batch (see
 * maintain/trigger.c), which is the default here.
 */
Datum
stream_ext_explain(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			viewid = PG_GETARG_OID(0);
	bool		verbose = PG_GETARG_BOOL(1);
	int32		batch_rows = PG_GETARG_INT32(2);
	ViewCatalogEntry entry;
	Relation	stream;
	EphemeralNamedRelation enr;
	SeRunAs		octx;
	MemoryContext outcxt = CurrentMemoryContext;
	ListCell   *lc;
	char	   *header;
	bool		has_watermark;
	Datum		watermark = (Datum) 0;
	bool		watermark_isnull = true;
	char	   *shared;
	int			others;
	LeftJoinEntry left;
	bool		is_left;

	if (!catalog_lookup_view(viewid, &entry, CurrentMemoryContext))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view", get_rel_name(viewid)),
				 errhint("For a plain view, use EXPLAIN SELECT.")));
	if (pg_class_aclcheck(viewid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_VIEW, get_rel_name(viewid));
	if (batch_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_rows must be at least 1")));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	header = psprintf("Maintenance of %s: once per INSERT/COPY statement into %s, over its rows (transition table %s, planned for %d rows), into %s",
					  rel_display_name(viewid), rel_display_name(entry.streamid),
					  CV_NEW_ROWS, batch_rows, rel_display_name(entry.matrelid));
	put_line(rsinfo, header);

	stream = table_open(entry.streamid, AccessShareLock);
	enr = palloc0(sizeof(EphemeralNamedRelationData));
	enr->md.name = CV_NEW_ROWS;
	enr->md.reliddesc = entry.streamid;
	enr->md.tupdesc = NULL;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = batch_rows;
	enr->reldata = tuplestore_begin_heap(false, false, work_mem);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "SPI_register_relation failed");

	/*
	 * allowed_lateness: the statements take the watermark as $1.  Planned
	 * with the current one (read, not locked as a batch locks it).
	 */
	has_watermark = lateness_lookup(viewid, CurrentMemoryContext) != NULL;
	/* a LEFT JOIN of two streams: its own watermark (query/sjoin_left.c) */
	is_left = !has_watermark && catalog_left_join(viewid, &left, CurrentMemoryContext);
	if (has_watermark || is_left)
	{
		MemoryContext old;

		watermark = TimestampTzGetDatum(is_left ?
										catalog_left_join_watermark(viewid, &watermark_isnull) :
										lateness_peek_watermark(viewid, &watermark_isnull));
		has_watermark = true;
		old = MemoryContextSwitchTo(outcxt);
		put_line(rsinfo, psprintf("Watermark ($1)%s: %s", is_left ? " of the LEFT JOIN" : "",
								  watermark_isnull ?
								  (is_left ? "none yet (no time of the second stream seen)" :
								   "none yet (no event time seen)") :
								  timestamptz_to_str(DatumGetTimestampTz(watermark))));
		MemoryContextSwitchTo(old);
	}

	/* views sharing the batch's aggregation: their one statement */
	shared = has_watermark ? NULL : maint_shared_statement(stream, viewid, &others);
	if (shared)
	{
		MemoryContext old = MemoryContextSwitchTo(outcxt);

		put_line(rsinfo, psprintf("Shared with %d other continuous view%s of the stream: one aggregation of the batch, then one store per view",
								  others, others > 1 ? "s" : ""));
		if (catalog_shared_prefix(viewid))
			put_line(rsinfo, "Its states are columns of a storage shared with other views (stream_ext.shared_storage_members): one store, one row per group, for all of them");
		MemoryContextSwitchTo(old);
	}

	se_run_as_owner(&octx, entry.owner, entry.timezone);

	se_materialize_begin();
	PG_TRY();
	{
		explain_statement(rsinfo, shared ? shared : entry.maintain_sql, verbose, outcxt,
						  has_watermark, watermark, watermark_isnull);
		foreach(lc, entry.distinct_sql)
		{
			MemoryContext old = MemoryContextSwitchTo(outcxt);

			put_line(rsinfo, "Exact count(DISTINCT), in the same trigger:");
			MemoryContextSwitchTo(old);
			explain_statement(rsinfo, lfirst(lc), verbose, outcxt,
							  has_watermark, watermark, watermark_isnull);
		}
	}
	PG_FINALLY();
	{
		se_materialize_end();
	}
	PG_END_TRY();

	se_restore(&octx);
	SPI_finish();
	table_close(stream, AccessShareLock);
	return (Datum) 0;
}
