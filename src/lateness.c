/*-------------------------------------------------------------------------
 *
 * lateness.c
 *	  Late data of tumbling windows: WITH (continuous, allowed_lateness =
 *	  '5 minutes') on a view grouped by stream_ext.tumble(ts, size).
 *
 *	  Each such view has a watermark: the newest event time it has seen
 *	  (stream_ext.watermarks.max_event_time) minus allowed_lateness.  A
 *	  window [start, start + size) is closed once start + size <= watermark;
 *	  a row whose window is closed when its batch arrives is not applied but
 *	  kept in stream_ext.late_rows (view, event time, watermark, the row as
 *	  jsonb), so nothing vanishes silently and closed windows stay final.
 *	  Rows with a NULL event time are always applied (their window never
 *	  closes).
 *
 *	  Per batch, inside the maintenance trigger (maintain.c):
 *	    1. lateness_begin_batch(): lock the view's watermark row and read it
 *		   -- writers of one view take their turn here, before they lock any
 *		   group, so they cannot deadlock;
 *	    2. the maintenance statements run with the watermark as $1 and skip
 *		   late rows (CVPlan.extra_batch_qual);
 *	    3. lateness_end_batch(): copy the late rows to late_rows and advance
 *		   the watermark to the batch's newest event time.
 *	  The rows of one batch are judged against the watermark from before the
 *	  batch, so a batch never makes its own rows late.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "nodes/nodeFuncs.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "lateness.h"
#include "windows.h"

static Interval *
parse_lateness(const char *text)
{
	Interval   *iv = DatumGetIntervalP(DirectFunctionCall3(interval_in,
														   CStringGetDatum(text),
														   ObjectIdGetDatum(InvalidOid),
														   Int32GetDatum(-1)));

	if (iv->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("allowed_lateness must not contain months or years: \"%s\"", text),
				 errhint("Months have no fixed length; use days, e.g. '30 days'.")));
	if (iv->day < 0 || iv->time < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("allowed_lateness must not be negative: \"%s\"", text)));
	return iv;
}

/* Take allowed_lateness out of a continuous view's options. */
List *
lateness_take_options(List *options, LatenessSpec *spec)
{
	ListCell   *lc;
	List	   *rest = NIL;

	memset(spec, 0, sizeof(LatenessSpec));
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "allowed_lateness") == 0)
		{
			spec->enabled = true;
			spec->text = defGetString(def);
			spec->lateness = parse_lateness(spec->text);
		}
		else
			rest = lappend(rest, def);
	}
	return rest;
}

static char *
interval_literal(Interval *iv)
{
	return psprintf("%s::pg_catalog.interval",
					quote_literal_cstr(DatumGetCString(DirectFunctionCall1(interval_out,
																		   IntervalPGetDatum(iv)))));
}

/*
 * After cv_analyze() and the window options: the view must be a tumbling
 * window; sets the qualification that keeps late rows out of maintenance.
 */
void
lateness_validate(LatenessSpec *spec, CVPlan *plan)
{
	List	   *ctx = stream_context(plan);
	FuncExpr   *tumble;

	if (plan->window == NULL || plan->window->kind != CV_WINDOW_TUMBLING)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("allowed_lateness needs a tumbling window"),
				 errdetail("Late rows are judged by the end of their window."),
				 errhint("Group by stream_ext.tumble(time_column, size).")));
	tumble = (FuncExpr *) plan->window->pane_expr;
	Assert(IsA(tumble, FuncExpr) && list_length(tumble->args) == 2);
	if (exprType(linitial(tumble->args)) != TIMESTAMPTZOID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("allowed_lateness needs a tumbling window over timestamp with time zone")));

	spec->window_start_sql = deparse_expression((Node *) tumble, ctx, true, false);
	spec->event_time_sql = deparse_expression(linitial(tumble->args), ctx, true, false);
	spec->size_sql = interval_literal(&plan->window->size);
	/* on time: no watermark yet, no event time, or its window still open */
	plan->extra_batch_qual =
		psprintf("($1::pg_catalog.timestamptz IS NULL OR (%s) IS NULL"
				 " OR (%s) OPERATOR(pg_catalog.+) %s OPERATOR(pg_catalog.>) $1::pg_catalog.timestamptz)",
				 spec->window_start_sql, spec->window_start_sql, spec->size_sql);
}

/*
 * Record the view's lateness; the statements that lateness_end_batch()
 * runs are generated here, over the transition table.
 */
void
lateness_record(Oid viewid, LatenessSpec *spec, CVPlan *plan,
				const char *stream_sql)
{
	Oid			argtypes[5] = {OIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[5];
	Oid			save_userid;
	int			save_sec;
	char	   *late_sql;
	char	   *max_sql;
	char	   *backfill_sql;
	Node	   *where = plan->query->jointree->quals;
	char	   *where_sql = where ? psprintf(" AND (%s)",
											 deparse_expression(where, stream_context(plan), true, false)) : "";

	late_sql = psprintf("INSERT INTO stream_ext.late_rows (view, event_time, watermark, reason, \"row\")"
						" SELECT $2::pg_catalog.regclass, %s, $1, 'window closed', pg_catalog.to_jsonb(s)"
						" FROM " CV_NEW_ROWS " s WHERE NOT (%s)%s",
						spec->event_time_sql, plan->extra_batch_qual, where_sql);
	max_sql = psprintf("SELECT pg_catalog.max(%s) FROM " CV_NEW_ROWS " s WHERE true%s",
					   spec->event_time_sql, where_sql);
	backfill_sql = psprintf("SELECT pg_catalog.max(%s) FROM %s s WHERE true%s",
							spec->event_time_sql, stream_sql, where_sql);

	values[0] = ObjectIdGetDatum(viewid);
	values[1] = CStringGetTextDatum(DatumGetCString(DirectFunctionCall1(interval_out,
																		IntervalPGetDatum(spec->lateness))));
	values[2] = CStringGetTextDatum(late_sql);
	values[3] = CStringGetTextDatum(max_sql);
	values[4] = CStringGetTextDatum(backfill_sql);

	catalog_begin_write(&save_userid, &save_sec);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("INSERT INTO stream_ext.lateness_views (view, allowed_lateness, late_sql, max_sql)"
							  " VALUES ($1::pg_catalog.regclass, $2::pg_catalog.interval, $3, $4)",
							  4, argtypes, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: recording allowed_lateness failed");
	/* the rows backfilled so far set the first watermark */
	if (SPI_execute_with_args(psprintf("INSERT INTO stream_ext.watermarks (view, max_event_time)"
									   " SELECT $1::pg_catalog.regclass, (%s)", backfill_sql),
							  1, argtypes, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: recording the watermark failed");
	SPI_finish();
	catalog_end_write(save_userid, save_sec);
}

/*
 * The lateness of view VIEWID, or NULL if it has none.  Allocated in
 * MCXT.  Called when maintenance (re)builds its per-view cache.
 */
LatenessInfo *
lateness_lookup(Oid viewid, MemoryContext mcxt)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(viewid)};
	LatenessInfo *info = NULL;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* a database not yet updated to 0.2 has no such table: no lateness */
	if (SPI_execute("SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"
					" ON n.oid = c.relnamespace WHERE n.nspname = 'stream_ext'"
					" AND c.relname = 'lateness_views'", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1 &&
		SPI_execute_with_args("SELECT allowed_lateness, late_sql, max_sql FROM stream_ext.lateness_views"
							  " WHERE view = $1::pg_catalog.regclass",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(mcxt);

		info = palloc0(sizeof(LatenessInfo));
		info->viewid = viewid;
		info->lateness = *DatumGetIntervalP(SPI_getbinval(tup, desc, 1, &isnull));
		info->late_sql = SPI_getvalue(tup, desc, 2);
		info->max_sql = SPI_getvalue(tup, desc, 3);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return info;
}

/*
 * Step 1: lock and read the view's watermark (max event time minus
 * allowed_lateness); *isnull when the view has seen no event time yet.
 * Runs inside maintenance's SPI connection.
 */
TimestampTz
lateness_begin_batch(LatenessInfo *info, bool *isnull)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(info->viewid)};
	Oid			save_userid;
	int			save_sec;
	TimestampTz wm = 0;

	*isnull = true;
	catalog_begin_write(&save_userid, &save_sec);
	if (SPI_execute_with_args("SELECT max_event_time OPERATOR(pg_catalog.-) l.allowed_lateness"
							  " FROM stream_ext.watermarks w JOIN stream_ext.lateness_views l USING (view)"
							  " WHERE w.view = $1::pg_catalog.regclass FOR UPDATE OF w",
							  1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "stream_ext: reading the watermark failed");
	if (SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull);

		if (!*isnull)
			wm = DatumGetTimestampTz(d);
	}
	catalog_end_write(save_userid, save_sec);
	return wm;
}

/*
 * Step 3: keep the batch's late rows and advance the watermark.  WM is
 * what lateness_begin_batch() returned.
 */
void
lateness_end_batch(LatenessInfo *info, TimestampTz wm, bool wm_isnull)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, OIDOID};
	Datum		values[2] = {TimestampTzGetDatum(wm), ObjectIdGetDatum(info->viewid)};
	char		nulls[2] = {wm_isnull ? 'n' : ' ', ' '};
	Oid			save_userid;
	int			save_sec;
	bool		isnull;
	Datum		batch_max;

	catalog_begin_write(&save_userid, &save_sec);
	if (!wm_isnull &&
		SPI_execute_with_args(info->late_sql, 2, argtypes, values, nulls,
							  false, 0) != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: keeping late rows failed");
	if (SPI_execute(info->max_sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "stream_ext: reading the batch's event time failed");
	batch_max = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
	{
		Oid			types2[2] = {OIDOID, TIMESTAMPTZOID};
		Datum		vals2[2] = {ObjectIdGetDatum(info->viewid), batch_max};

		if (SPI_execute_with_args("INSERT INTO stream_ext.watermarks AS w (view, max_event_time)"
								  " VALUES ($1::pg_catalog.regclass, $2)"
								  " ON CONFLICT (view) DO UPDATE SET max_event_time ="
								  " GREATEST(w.max_event_time, excluded.max_event_time)",
								  2, types2, vals2, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "stream_ext: advancing the watermark failed");
	}
	catalog_end_write(save_userid, save_sec);
}
