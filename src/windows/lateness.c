/*-------------------------------------------------------------------------
 *
 * lateness.c
 *	  Late data of time windows: WITH (continuous, allowed_lateness =
 *	  '5 minutes') on a view with a tumbling (stream_ext.tumble()), hopping
 *	  (stream_ext.hop()), session (session_gap) or sliding (sliding_window)
 *	  window.
 *
 *	  Each such view has a watermark: the newest event time it has seen
 *	  (stream_ext.watermarks.max_event_time) minus allowed_lateness.  Which
 *	  rows are late depends on the window kind (docs/windows.md, "Late
 *	  data"; lateness_validate() builds the conditions):
 *	    - tumbling: a window [start, start + size) is closed once
 *		  start + size <= watermark; a row of a closed window is late;
 *	    - hopping: each (row, window) pair is judged like a tumbling window;
 *		  a row whose windows are all closed is late, one with only some
 *		  closed is applied to the open ones (the key hop_open_from() keeps
 *		  it apart in its pane, windows.c expands it into those only) and
 *		  also recorded in late_rows;
 *	    - session: a row is late iff its time is at or before the
 *		  watermark, so a closed session (last event + gap <= watermark)
 *		  never grows nor merges;
 *	    - sliding (allowed_lateness only): a row is late once its step
 *		  bucket + sliding_window <= watermark, when no reader whose now()
 *		  has reached the watermark would show it.
 *	  Late rows are not applied but kept in stream_ext.late_rows (view,
 *	  event time, watermark, reason, the row as jsonb), so nothing vanishes
 *	  silently and closed windows stay final.  Rows with a NULL event time
 *	  are always applied (their window never closes).
 *
 *	  With emit = 'on_close', each window (session) is appended to the
 *	  output stream once, by the batch whose watermark passes its end
 *	  (last event + gap): emit_closed().
 *
 *	  Per batch, inside the maintenance trigger (maintain/maintain.c):
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

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "core/security.h"
#include "windows/lateness.h"
#include "windows/windows.h"

static void emit_closed(LatenessInfo *info, TimestampTz old, bool old_isnull);

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
		else if (strcmp(def->defname, "emit") == 0)
		{
			char	   *emit = defGetString(def);

			if (strcmp(emit, "on_close") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for continuous view option \"emit\": \"%s\"", emit),
						 errhint("The only value is 'on_close'.")));
			spec->emit_on_close = true;
		}
		else if (strcmp(def->defname, "output_stream") == 0 && spec->output_stream == NULL)
			spec->output_stream = defGetString(def);
		else
			rest = lappend(rest, def);
	}
	if (spec->emit_on_close && spec->output_stream == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("emit = 'on_close' needs option \"output_stream\""),
				 errhint("Name the stream that receives each window's final row.")));
	if (spec->output_stream != NULL && !spec->emit_on_close)
	{
		/* not ours (continuous transforms take it): give it back */
		rest = lappend(rest, makeDefElem("output_stream",
										 (Node *) makeString(spec->output_stream), -1));
		spec->output_stream = NULL;
	}
	/* the name as the user means it: resolved with the user's search_path */
	if (spec->emit_on_close)
		spec->output_relid =
			RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(spec->output_stream)),
							 NoLock, true);
	if (spec->emit_on_close && !spec->enabled)
	{
		/* windows close when the newest event time passes their end */
		spec->enabled = true;
		spec->text = "0";
		spec->lateness = parse_lateness(spec->text);
	}
	return rest;
}

/* the output stream's attribute named COLNAME, checked to take type FROM */
static int
output_column(LatenessSpec *spec, TupleDesc desc, const char *colname, Oid from)
{
	for (int attno = 0; attno < desc->natts; attno++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attno);

		if (att->attisdropped || strcmp(NameStr(att->attname), colname) != 0)
			continue;
		if (!can_coerce_type(1, &from, &att->atttypid, COERCION_ASSIGNMENT))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of output_stream \"%s\" is of type %s, the view's is %s",
							colname, spec->output_stream, format_type_be(att->atttypid),
							format_type_be(from))));
		return attno;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("output_stream \"%s\" has no column \"%s\"",
					spec->output_stream, colname),
			 errhint("The output stream takes the view's columns by name.")));
	return -1;					/* keep compiler quiet */
}

/*
 * emit = 'on_close': the output stream must be a stream other than the
 * view's own, take every column of the view by name with an assignable
 * type, and have no other column that needs a value; the creator must be
 * allowed to insert into it.  Finds the view column holding the window
 * start (session windows: session_end, set by the caller).
 */
static void
check_output_stream(LatenessSpec *spec, CVPlan *plan, Oid streamid,
					SessionSpec *session)
{
	Relation	rel;
	TupleDesc	desc;
	ListCell   *lc;
	ListCell   *nc = list_head(plan->colnames);
	Bitmapset  *given = NULL;
	AclResult	acl;
	List	   *columns = NIL;

	if (!OidIsValid(spec->output_relid) || !catalog_is_stream(spec->output_relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("output_stream \"%s\" is not a stream", spec->output_stream),
				 errhint("Create it with stream_ext.create_stream().")));
	if (spec->output_relid == streamid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("output_stream \"%s\" is the stream the view reads", spec->output_stream),
				 errdetail("Each emitted row would feed the view again.")));
	acl = pg_class_aclcheck(spec->output_relid, GetUserId(), ACL_INSERT);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_TABLE, get_rel_name(spec->output_relid));

	rel = table_open(spec->output_relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	/* the query as analyzed: hop()'s window start is its pane there */
	foreach(lc, plan->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		const char *colname;

		if (tle->resjunk)
			continue;
		colname = strVal(lfirst(nc));
		nc = lnext(plan->colnames, nc);
		if (session == NULL && equal(tle->expr, plan->window->pane_expr))
			spec->window_column = pstrdup(colname);
		given = bms_add_member(given, output_column(spec, desc, colname,
													exprType((Node *) tle->expr)));
		columns = lappend(columns, makeString(pstrdup(colname)));
	}
	if (session != NULL)
	{
		/* the bounds the view adds (sessions.c) */
		given = bms_add_member(given, output_column(spec, desc, "session_start", session->time_type));
		given = bms_add_member(given, output_column(spec, desc, "session_end", session->time_type));
		columns = lappend(columns, makeString("session_start"));
		columns = lappend(columns, makeString("session_end"));
	}
	for (int attno = 0; attno < desc->natts; attno++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attno);

		if (att->attisdropped || bms_is_member(attno, given))
			continue;
		if (att->attnotnull && !att->atthasdef)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("column \"%s\" of output_stream \"%s\" is NOT NULL without a default, and the view does not provide it",
							NameStr(att->attname), spec->output_stream)));
	}
	table_close(rel, AccessShareLock);
	if (spec->window_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("emit = 'on_close' needs the window start in the select list"),
				 errhint("Select the stream_ext.tumble(...) group key, or the window start of hop().")));
	spec->output_sql = quote_qualified_identifier(get_namespace_name(get_rel_namespace(spec->output_relid)),
												  get_rel_name(spec->output_relid));
	{
		StringInfoData cols;
		StringInfoData vals;

		initStringInfo(&cols);
		initStringInfo(&vals);
		foreach(nc, columns)
		{
			const char *c = quote_identifier(strVal(lfirst(nc)));

			appendStringInfo(&cols, "%s%s", cols.len ? ", " : "", c);
			appendStringInfo(&vals, "%sv.%s", vals.len ? ", " : "", c);
		}
		spec->column_list = cols.data;
		spec->value_list = vals.data;
	}
}

static void
lateness_not_supported(LatenessSpec *spec, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s needs a time window over timestamp with time zone",
					spec->emit_on_close ? "emit = 'on_close'" : "allowed_lateness"),
			 detail ? errdetail("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
}

/*
 * Hopping: the group key telling which of a row's windows it joins,
 * stream_ext.hop_open_from(pane, size, slide, $1): rows that arrive after
 * some of their windows closed are kept apart from the others of their
 * pane, and the view expands them only into their open windows.
 */
static CVKey *
open_from_key(CVPlan *plan)
{
	CVWindow   *win = plan->window;
	Oid			argtypes[4] = {TIMESTAMPTZOID, INTERVALOID, INTERVALOID, TIMESTAMPTZOID};
	Param	   *wm = makeNode(Param);
	CVKey	   *key = palloc0(sizeof(CVKey));
	Interval   *size = palloc(sizeof(Interval));
	Interval   *slide = palloc(sizeof(Interval));

	*size = win->size;
	*slide = win->slide;
	wm->paramkind = PARAM_EXTERN;
	wm->paramid = 1;
	wm->paramtype = TIMESTAMPTZOID;
	wm->paramtypmod = -1;
	wm->paramcollid = InvalidOid;
	wm->location = -1;
	key->expr = (Expr *) makeFuncExpr(LookupFuncName(list_make2(makeString("stream_ext"),
																makeString("hop_open_from")),
													 4, argtypes, false),
									  TIMESTAMPTZOID,
									  list_make4(copyObject(win->pane_expr),
												 makeConst(INTERVALOID, -1, InvalidOid, sizeof(Interval),
														   IntervalPGetDatum(size), false, false),
												 makeConst(INTERVALOID, -1, InvalidOid, sizeof(Interval),
														   IntervalPGetDatum(slide), false, false),
												 wm),
									  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	key->colname = "window_open_from";
	key->type = TIMESTAMPTZOID;
	key->typmod = -1;
	key->collation = InvalidOid;
	return key;
}

/*
 * The backfill at CREATE runs before the view has a watermark: every row
 * is on time (the key's $1 becomes NULL).  Call after the maintenance
 * statement was generated.
 */
void
lateness_before_backfill(LatenessSpec *spec)
{
	FuncExpr   *f;

	if (spec->open_from_key == NULL)
		return;
	f = (FuncExpr *) spec->open_from_key->expr;
	llast(f->args) = makeNullConst(TIMESTAMPTZOID, -1, InvalidOid);
}

/*
 * After cv_analyze() and the window options: which rows are on time (see
 * docs/windows.md, "Late data", for the rule of each window kind); sets
 * the qualification that keeps late rows out of maintenance.  SESSION is
 * the view's session window, or NULL.
 */
void
lateness_validate(LatenessSpec *spec, CVPlan *plan, Query *query, Oid streamid,
				  SessionSpec *session)
{
	List	   *ctx = se_stream_context(plan);
	CVWindow   *win = plan->window;
	const char *ts;

	catalog_require_table("lateness_views", "allowed_lateness");
	if (session != NULL)
	{
		if (session->time_type != TIMESTAMPTZOID)
			lateness_not_supported(spec, psprintf("time_column \"%s\" is of type %s.", session->time_column,
												  format_type_be(session->time_type)), NULL);
		spec->kind = "session";
		ts = psprintf("s.%s", quote_identifier(session->time_column));
		spec->event_time_sql = (char *) ts;
		spec->size_sql = interval_sql_literal(session->gap);
		spec->window_column = "session_end";
		/*
		 * On time: later than the watermark.  A session closed (its last
		 * event + gap <= watermark) then never grows nor merges.
		 */
		plan->extra_batch_qual =
			psprintf("($1::pg_catalog.timestamptz IS NULL OR %s IS NULL"
					 " OR %s OPERATOR(pg_catalog.>) $1::pg_catalog.timestamptz)", ts, ts);
		spec->all_open_sql = (char *) plan->extra_batch_qual;
		spec->late_reason_sql = "'behind watermark'";
	}
	else if (win != NULL && (win->kind == CV_WINDOW_TUMBLING ||
							 (win->kind == CV_WINDOW_SLIDING && !spec->emit_on_close)))
	{
		/*
		 * The row's window (tumbling), or the last window showing its step
		 * bucket (sliding), is [start, start + size) with start the pane.
		 */
		FuncExpr   *pane = (FuncExpr *) win->pane_expr;
		char	   *start;

		Assert(IsA(pane, FuncExpr) && list_length(pane->args) == 2);
		if (exprType(linitial(pane->args)) != TIMESTAMPTZOID)
			lateness_not_supported(spec, "The tumble() is over timestamp without time zone.", NULL);
		spec->kind = win->kind == CV_WINDOW_TUMBLING ? "tumbling" : "sliding";
		start = deparse_expression((Node *) pane, ctx, true, false);
		spec->event_time_sql = deparse_expression(linitial(pane->args), ctx, true, false);
		spec->size_sql = interval_sql_literal(&win->size);
		/* on time: no watermark yet, no event time, or its window still open */
		plan->extra_batch_qual =
			psprintf("($1::pg_catalog.timestamptz IS NULL OR (%s) IS NULL"
					 " OR (%s) OPERATOR(pg_catalog.+) %s OPERATOR(pg_catalog.>) $1::pg_catalog.timestamptz)",
					 start, start, spec->size_sql);
		spec->all_open_sql = (char *) plan->extra_batch_qual;
		spec->late_reason_sql = "'window closed'";
	}
	else if (win != NULL && win->kind == CV_WINDOW_HOPPING)
	{
		FuncExpr   *pane = (FuncExpr *) win->pane_expr;
		char	   *slide_sql = interval_sql_literal(&win->slide);

		Assert(IsA(pane, FuncExpr) && list_length(pane->args) == 2);
		if (exprType(linitial(pane->args)) != TIMESTAMPTZOID)
			lateness_not_supported(spec, "The hop() is over timestamp without time zone.", NULL);
		spec->kind = "hopping";
		ts = deparse_expression(linitial(pane->args), ctx, true, false);
		spec->event_time_sql = (char *) ts;
		spec->size_sql = interval_sql_literal(&win->size);
		spec->open_from_key = open_from_key(plan);
		plan->keys = lappend(plan->keys, spec->open_from_key);
		win->open_from_column = spec->open_from_key->colname;
		/* applied: its last window (starting at tumble(ts, slide)) is open */
		plan->extra_batch_qual =
			psprintf("($1::pg_catalog.timestamptz IS NULL OR (%s) IS NULL"
					 " OR stream_ext.tumble(%s, %s) OPERATOR(pg_catalog.+) %s"
					 " OPERATOR(pg_catalog.>) $1::pg_catalog.timestamptz)",
					 ts, ts, slide_sql, spec->size_sql);
		spec->all_open_sql =
			psprintf("(%s OPERATOR(pg_catalog.=) '-infinity'::pg_catalog.timestamptz)",
					 deparse_expression((Node *) spec->open_from_key->expr, ctx, true, false));
		spec->late_reason_sql =
			psprintf("CASE WHEN %s THEN 'some windows closed' ELSE 'window closed' END",
					 plan->extra_batch_qual);
	}
	else if (win != NULL && win->kind == CV_WINDOW_SLIDING)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("emit = 'on_close' is not supported for sliding windows"),
				 errdetail("A sliding view shows the window ending at the reader's now(); no window of it closes."),
				 errhint("For the final result of every window of sliding_window length, one per step, aggregate over stream_ext.hop(ts, sliding_window, step).")));
	else
		lateness_not_supported(spec, "Late rows are judged by the end of their window.",
							   spec->emit_on_close ?
							   "Group by stream_ext.tumble(time_column, size), aggregate over stream_ext.hop(), or use session_gap." :
							   "Group by stream_ext.tumble(time_column, size), aggregate over stream_ext.hop(), or use session_gap or sliding_window.");

	if (spec->emit_on_close)
		check_output_stream(spec, plan, streamid, session);
}

/*
 * Record the view's lateness; the statements that lateness_end_batch()
 * runs are generated here, over the transition table.
 */
void
lateness_record(Oid viewid, LatenessSpec *spec, CVPlan *plan,
				const char *stream_sql, const char *view_sql)
{
	char	   *emit_sql = NULL;
	char	   *late_sql;
	char	   *max_sql;
	char	   *backfill_sql;
	Datum		first_max;
	bool		first_max_isnull;
	Node	   *where = plan->query->jointree->quals;
	char	   *where_sql = where ? psprintf(" AND (%s)",
											 deparse_expression(where, se_stream_context(plan), true, false)) : "";

	/*
	 * Late rows are kept whole, every column of the stream (to_jsonb(s)),
	 * for the view's owner to read: it must be able to read them all, at
	 * creation as at every batch (maintain.c, priv_whole_row()).
	 */
	if (pg_class_aclcheck(plan->streamid, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(plan->streamid, GetUserId(), ACL_SELECT,
								  ACLMASK_ALL) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(plan->streamid)),
				 errdetail("A continuous view with allowed_lateness keeps its late rows whole, every column, in stream_ext.late_rows."),
				 errhint("Its owner needs SELECT on every column of the stream.")));

	late_sql = psprintf("INSERT INTO stream_ext.late_rows (view, event_time, watermark, reason, \"row\")"
						" SELECT $2::pg_catalog.regclass, %s, $1, %s, pg_catalog.to_jsonb(s)"
						" FROM " CV_NEW_ROWS " s WHERE NOT (%s)%s",
						spec->event_time_sql, spec->late_reason_sql, spec->all_open_sql, where_sql);
	max_sql = psprintf("SELECT pg_catalog.max(%s) FROM " CV_NEW_ROWS " s WHERE true%s",
					   spec->event_time_sql, where_sql);
	backfill_sql = psprintf("SELECT pg_catalog.max(%s) FROM %s s WHERE true%s",
							spec->event_time_sql, stream_sql, where_sql);

	if (spec->emit_on_close)
	{
		const char *end = psprintf("(v.%s OPERATOR(pg_catalog.+) %s)",
								   quote_identifier(spec->window_column), spec->size_sql);

		emit_sql = psprintf("INSERT INTO %s (%s) SELECT %s FROM %s v"
							" WHERE ($1::pg_catalog.timestamptz IS NULL OR %s OPERATOR(pg_catalog.>) $1)"
							" AND %s OPERATOR(pg_catalog.<=) $2::pg_catalog.timestamptz"
							" ORDER BY v.%s",
							spec->output_sql, spec->column_list, spec->value_list,
							view_sql, end, end, quote_identifier(spec->window_column));
	}

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/*
	 * The rows backfilled so far set the first watermark.  backfill_sql
	 * holds the view's own expressions: it runs as the creating user (the
	 * view's owner), never as the catalog's owner.
	 */
	if (SPI_execute(backfill_sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "stream_ext: reading the stream's newest event time failed");
	first_max = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
							  &first_max_isnull);

	catalog_insert_lateness_view(viewid,
								 DatumGetCString(DirectFunctionCall1(interval_out,
																	 IntervalPGetDatum(spec->lateness))),
								 late_sql, max_sql, emit_sql,
								 spec->emit_on_close ? spec->output_relid : InvalidOid);
	/* the view's watermark row exists from now on: writers lock it */
	catalog_raise_max_event_time(viewid, first_max, first_max_isnull);
	SPI_finish();

	/* windows the backfilled rows already closed are final now */
	if (emit_sql)
	{
		LatenessInfo info;

		info.viewid = viewid;
		info.lateness = *spec->lateness;
		info.emit_sql = emit_sql;
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		emit_closed(&info, 0, true);
		SPI_finish();
	}
}

/*
 * The lateness of view VIEWID, or NULL if it has none.  Allocated in
 * MCXT.  Called when maintenance (re)builds its per-view cache.
 */
LatenessInfo *
lateness_lookup(Oid viewid, MemoryContext mcxt)
{
	LatenessCatalogEntry entry;
	LatenessInfo *info;

	if (!catalog_lookup_lateness(viewid, &entry, mcxt))
		return NULL;
	info = MemoryContextAllocZero(mcxt, sizeof(LatenessInfo));
	info->viewid = viewid;
	info->lateness = entry.lateness;
	info->late_sql = entry.late_sql;
	info->max_sql = entry.max_sql;
	info->emit_sql = entry.emit_sql;
	return info;
}

/*
 * Step 1: lock and read the view's watermark; *isnull when the view has
 * seen no event time yet.  Runs inside maintenance's SPI connection.
 */
TimestampTz
lateness_begin_batch(LatenessInfo *info, bool *isnull)
{
	return catalog_watermark(info->viewid, true, isnull);
}

/* The current watermark, not locked (stream_ext.explain()); SPI connected */
TimestampTz
lateness_peek_watermark(Oid viewid, bool *isnull)
{
	return catalog_watermark(viewid, false, isnull);
}

/*
 * Append the final rows of the windows closed since watermark OLD (none:
 * OLD_ISNULL) to the output stream.  Runs as the current user (the view's
 * owner, in maintenance), in the caller's SPI connection.
 */
static void
emit_closed(LatenessInfo *info, TimestampTz old, bool old_isnull)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[2];
	char		nulls[2] = {old_isnull ? 'n' : ' ', ' '};
	bool		isnull;
	TimestampTz now_wm = catalog_watermark(info->viewid, false, &isnull);

	if (isnull || (!old_isnull && now_wm <= old))
		return;					/* no window closed */
	values[0] = TimestampTzGetDatum(old);
	values[1] = TimestampTzGetDatum(now_wm);
	if (SPI_execute_with_args(info->emit_sql, 2, argtypes, values, nulls,
							  false, 0) != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: emitting closed windows failed");
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
	bool		isnull;
	Datum		batch_max;

	/*
	 * Both statements evaluate the view's own expressions (its WHERE clause,
	 * its event time), so they run as the current user -- the view's owner,
	 * security-restricted -- never as the catalog's owner.  late_rows lets a
	 * view's owner insert rows of its own views (its row-level policy).
	 */
	if (!wm_isnull &&
		SPI_execute_with_args(info->late_sql, 2, argtypes, values, nulls,
							  false, 0) != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: keeping late rows failed");
	if (SPI_execute(info->max_sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "stream_ext: reading the batch's event time failed");
	batch_max = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		catalog_raise_max_event_time(info->viewid, batch_max, false);
	if (info->emit_sql)
		emit_closed(info, wm, wm_isnull);
}

/*
 * stream_ext.advance_watermark(view regclass, event_time timestamptz)
 *		RETURNS timestamptz
 *
 * Moves a view's newest event time forward to EVENT_TIME (never back), as
 * if a row of that time had arrived: windows it closes are closed -- later
 * rows for them are late, and with emit = 'on_close' their final rows are
 * emitted now.  For streams that go idle: schedule it with the wall clock,
 * e.g. advance_watermark('v', now() - '1 minute').  Returns the new
 * watermark.  The caller must own the view; runs as the view's owner.
 */
PG_FUNCTION_INFO_V1(stream_ext_advance_watermark);

Datum
stream_ext_advance_watermark(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	TimestampTz to = PG_GETARG_TIMESTAMPTZ(1);
	ViewCatalogEntry entry;
	LatenessInfo *info;
	TimestampTz old;
	bool		old_isnull;
	SeRunAs		octx;
	TimestampTz result;
	bool		isnull;

	catalog_get_view(viewid, &entry, true);
	info = lateness_lookup(viewid, CurrentMemoryContext);
	if (info == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous view \"%s\" has no watermark", get_rel_name(viewid)),
				 errhint("Only views with allowed_lateness or emit = 'on_close' have one.")));

	se_run_as_owner(&octx, entry.owner, entry.timezone);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	old = lateness_begin_batch(info, &old_isnull);
	catalog_raise_max_event_time(viewid, TimestampTzGetDatum(to), false);
	result = catalog_watermark(viewid, false, &isnull);
	if (info->emit_sql)
		emit_closed(info, old, old_isnull);
	SPI_finish();
	se_restore(&octx);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(result);
}
