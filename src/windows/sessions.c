/*-------------------------------------------------------------------------
 *
 * sessions.c
 *	  Session windows: CREATE VIEW v WITH (continuous, session_gap = '20
 *	  minutes', time_column = 'ts') AS SELECT key, aggs... GROUP BY key.
 *
 *	  A session of a group is a maximal run of its rows in which
 *	  consecutive rows (by time_column) are at most session_gap apart.
 *	  Sessions grow, and merge when a row bridges two of them, so they are
 *	  not stable keys that a batch could upsert into.  Instead:
 *
 *	  - write side: each batch is cut into sessions of its own rows (gaps
 *		and islands over the batch) and every piece is appended to the
 *		materialization as a *fragment* (keys, session_start, session_end,
 *		partial states).  Maintenance only inserts: no row locks, no
 *		conflicts, correct under any isolation level and with out-of-order
 *		or late rows.
 *	  - read side: the view merges the fragments of each group with the same
 *		gaps-and-islands rule over their intervals -- a fragment starting
 *		within session_gap of the latest end before it continues that
 *		session -- combining their states with stream_ext.merge_states()
 *		(the aggregate's own combine function) before finalizing.  That is
 *		exactly the sessions of all rows: a gap longer than session_gap
 *		between two rows cannot lie inside any fragment.
 *	  - compaction: stream_ext.compact_sessions(view) rewrites the
 *		fragments of each group into one row per session, under a
 *		self-exclusive lock that lets inserts through; reads stay cheap.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/timestamp.h"

#include "core/catalog.h"
#include "core/security.h"
#include "windows/sessions.h"

PG_FUNCTION_INFO_V1(stream_ext_compact_sessions);

#define SESSION_START "session_start"
#define SESSION_END "session_end"

/*
 * Take session_gap and time_column out of a continuous view's options.
 * Returns the options left.
 */
List *
sessions_take_options(List *options, SessionSpec *spec)
{
	ListCell   *lc;
	List	   *rest = NIL;
	char	   *gap = NULL;

	memset(spec, 0, sizeof(SessionSpec));
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "session_gap") == 0)
			gap = defGetString(def);
		else if (strcmp(def->defname, "time_column") == 0)
			spec->time_column = defGetString(def);
		else
			rest = lappend(rest, def);
	}
	if (gap == NULL)
	{
		/* time_column alone belongs to other window kinds: leave it */
		if (spec->time_column != NULL)
		{
			DefElem    *def = makeDefElem("time_column",
										  (Node *) makeString(spec->time_column), -1);

			rest = lappend(rest, def);
			spec->time_column = NULL;
		}
		return rest;
	}

	spec->enabled = true;
	spec->gap_text = gap;
	spec->gap = DatumGetIntervalP(DirectFunctionCall3(interval_in,
													  CStringGetDatum(gap),
													  ObjectIdGetDatum(InvalidOid),
													  Int32GetDatum(-1)));
	if (spec->gap->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("session_gap must not contain months or years: \"%s\"", gap),
				 errhint("Months have no fixed length; use days, e.g. '30 days'.")));
	if (spec->gap->day < 0 || spec->gap->time < 0 ||
		(spec->gap->day == 0 && spec->gap->time == 0) ||
		(spec->gap->day > 0 && spec->gap->time < 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("session_gap must be a positive interval: \"%s\"", gap)));
	if (spec->time_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("session_gap needs time_column"),
				 errhint("Name the stream column holding event time, e.g. WITH (continuous, session_gap = '%s', time_column = 'ts').", gap)));
	return rest;
}

/* Check a session view's query and options against its analyzed plan. */
void
sessions_validate(SessionSpec *spec, CVPlan *plan)
{
	ListCell   *lc;

	catalog_require_table("session_views", "session windows");
	spec->time_attno = get_attnum(plan->streamid, spec->time_column);
	if (spec->time_attno == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("time_column \"%s\" is not a column of stream \"%s\"",
						spec->time_column, get_rel_name(plan->streamid))));
	spec->time_type = get_atttype(plan->streamid, spec->time_attno);
	if (spec->time_type != TIMESTAMPTZOID && spec->time_type != TIMESTAMPOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("time_column \"%s\" must be of type timestamp with time zone or timestamp, not %s",
						spec->time_column, format_type_be(spec->time_type))));
	if (plan->keyless)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a session window needs GROUP BY"),
				 errhint("Sessions are tracked per group, e.g. GROUP BY user_id.")));
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		if (agg->is_distinct)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("count(DISTINCT ...) is not supported in a session window")));
	}
	foreach(lc, plan->colnames)
	{
		const char *name = strVal(lfirst(lc));

		if (strcmp(name, SESSION_START) == 0 || strcmp(name, SESSION_END) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("column name \"%s\" is reserved in a session window", name),
					 errdetail("The view adds columns session_start and session_end."),
					 errhint("Rename the column with AS.")));
	}
	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		if (strcmp(key->colname, SESSION_START) == 0 ||
			strcmp(key->colname, SESSION_END) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("group key name \"%s\" is reserved in a session window",
							key->colname)));
	}
	plan->extra_outer_columns = "m." SESSION_START " AS " SESSION_START
		", m." SESSION_END " AS " SESSION_END;
}

char *
sessions_matrel_columns_sql(SessionSpec *spec, const char *base_columns)
{
	const char *t = se_type_sql(spec->time_type, -1, InvalidOid);

	return psprintf("%s, " SESSION_START " %s NOT NULL, " SESSION_END " %s NOT NULL",
					base_columns, t, t);
}

/*
 * The materialization's index: on (keys, session_start), or, when a key is
 * of a variable-width type, one without a size limit (analyze.c)
 */
void
sessions_create_index(CVPlan *plan, Oid matrelid)
{
	(void) cv_create_key_lookup_index(plan, matrelid, SESSION_START);
}

static void
append_state_columns(StringInfo buf, CVPlan *plan, const char *prefix)
{
	ListCell   *lc;

	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		appendStringInfo(buf, ", %s%s", prefix, quote_identifier(agg->colname));
	}
}

/*
 * The statement appending a batch's fragments: the batch's rows cut into
 * sessions per group, one fragment per piece, with partial states.
 */
char *
sessions_maintain_sql(SessionSpec *spec, CVPlan *plan, const char *matrel,
					  const char *source)
{
	StringInfoData buf;
	StringInfoData keys;
	List	   *ctx = se_stream_context(plan);
	Node	   *where = plan->query->jointree->quals;
	const char *t = quote_identifier(spec->time_column);
	ListCell   *lc;
	int			i;

	initStringInfo(&keys);
	for (i = 1; i <= list_length(plan->keys); i++)
		appendStringInfo(&keys, "%sstream_ext_k%d", i > 1 ? ", " : "", i);

	initStringInfo(&buf);
	appendStringInfo(&buf, "/* stream_ext maintenance */ INSERT INTO %s (", matrel);
	append_key_columns(&buf, plan, "");
	appendStringInfoString(&buf, ", " SESSION_START ", " SESSION_END);
	append_state_columns(&buf, plan, "");
	/* every aggregate of the statement must be a partial one (maintain/maintain.c) */
	appendStringInfo(&buf, ") SELECT %s, stream_ext.partial(pg_catalog.min(s.%s), NULL::%s),"
					 " stream_ext.partial(pg_catalog.max(s.%s), NULL::%s)",
					 keys.data, t, se_type_sql(spec->time_type, -1, InvalidOid),
					 t, se_type_sql(spec->time_type, -1, InvalidOid));
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		appendStringInfo(&buf, ", stream_ext.partial(%s, NULL::%s)",
						 deparse_expression((Node *) agg->aggref, ctx, true, false),
						 format_type_extended(agg->storage.statetype, -1,
											  FORMAT_TYPE_FORCE_QUALIFY));
	}
	/* islands: running count of breaks, a break = first row or gap exceeded */
	appendStringInfo(&buf,
					 " FROM (SELECT s.*, pg_catalog.sum(s.stream_ext_brk) OVER"
					 " (PARTITION BY %s ORDER BY s.%s ROWS UNBOUNDED PRECEDING) AS stream_ext_island"
					 " FROM (SELECT s.*",
					 keys.data, t);
	i = 0;
	foreach(lc, plan->keys)
	{
		CVKey	   *key = lfirst(lc);

		appendStringInfo(&buf, ", %s AS stream_ext_k%d",
						 deparse_expression((Node *) key->expr, ctx, true, false), ++i);
	}
	appendStringInfo(&buf,
					 ", CASE WHEN s.%s OPERATOR(pg_catalog.-) pg_catalog.lag(s.%s) OVER"
					 " (PARTITION BY ", t, t);
	append_key_exprs(&buf, plan, ctx);
	appendStringInfo(&buf,
					 " ORDER BY s.%s) OPERATOR(pg_catalog.<=) %s THEN 0 ELSE 1 END AS stream_ext_brk"
					 " FROM %s s WHERE s.%s IS NOT NULL",
					 t, interval_sql_literal(spec->gap), source, t);
	if (where)
		appendStringInfo(&buf, " AND (%s)", deparse_expression(where, ctx, true, false));
	/* allowed_lateness: late rows stay out (lateness.c) */
	if (plan->extra_batch_qual && strcmp(source, CV_NEW_ROWS) == 0)
		appendStringInfo(&buf, " AND %s", plan->extra_batch_qual);
	appendStringInfo(&buf, ") s) s GROUP BY %s, s.stream_ext_island", keys.data);
	return buf.data;
}

/*
 * Fragments of SOURCE (the materialization, or rows deleted from it)
 * merged into sessions: one row per session with keys, bounds and
 * combined states, under the materialization's column names.
 */
static char *
merged_sql(SessionSpec *spec, CVPlan *plan, const char *source)
{
	StringInfoData buf;
	StringInfoData keys;

	initStringInfo(&keys);
	append_key_columns(&keys, plan, "f.");

	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT ");
	append_key_columns(&buf, plan, "f.");
	appendStringInfoString(&buf, ", pg_catalog.min(f." SESSION_START ") AS " SESSION_START
						   ", pg_catalog.max(f." SESSION_END ") AS " SESSION_END);
	append_merged_states(&buf, plan, "f.");
	appendStringInfo(&buf,
					 " FROM (SELECT f.*, pg_catalog.sum(f.stream_ext_brk) OVER"
					 " (PARTITION BY %s ORDER BY f." SESSION_START ", f." SESSION_END
					 " ROWS UNBOUNDED PRECEDING) AS stream_ext_session"
					 " FROM (SELECT f.*, CASE WHEN f." SESSION_START " OPERATOR(pg_catalog.-)"
					 " pg_catalog.max(f." SESSION_END ") OVER (PARTITION BY %s ORDER BY f."
					 SESSION_START ", f." SESSION_END
					 " ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) OPERATOR(pg_catalog.<=) %s"
					 " THEN 0 ELSE 1 END AS stream_ext_brk FROM %s f) f) f"
					 " GROUP BY %s, f.stream_ext_session",
					 keys.data, keys.data, interval_sql_literal(spec->gap), source, keys.data);
	return buf.data;
}

/* what the user-facing view reads FROM: the merged sessions */
char *
sessions_view_source_sql(SessionSpec *spec, CVPlan *plan, const char *matrel)
{
	return psprintf("(%s)", merged_sql(spec, plan, matrel));
}

/* stream_ext.compact_sessions(): fragments rewritten as one row per session */
char *
sessions_compact_sql(SessionSpec *spec, CVPlan *plan, const char *matrel)
{
	StringInfoData buf;
	StringInfoData keys;

	initStringInfo(&keys);
	append_key_columns(&keys, plan, "g.");

	initStringInfo(&buf);
	appendStringInfo(&buf,
					 "/* stream_ext maintenance */ WITH d AS (DELETE FROM %s f"
					 " WHERE f.ctid IN (SELECT x.ctid FROM (SELECT g.ctid, pg_catalog.count(*) OVER"
					 " (PARTITION BY %s) AS n FROM %s g) x WHERE x.n OPERATOR(pg_catalog.>) 1)"
					 " RETURNING f.*), i AS (INSERT INTO %s (",
					 matrel, keys.data, matrel, matrel);
	append_key_columns(&buf, plan, "");
	appendStringInfoString(&buf, ", " SESSION_START ", " SESSION_END);
	append_state_columns(&buf, plan, "");
	appendStringInfo(&buf, ") %s RETURNING 1)"
					 " SELECT (SELECT pg_catalog.count(*) FROM d) OPERATOR(pg_catalog.-)"
					 " (SELECT pg_catalog.count(*) FROM i)",
					 merged_sql(spec, plan, "d"));
	return buf.data;
}

/* stream_ext.session_views: the session parameters of a view */
void
sessions_record(Oid viewid, SessionSpec *spec, const char *compact_sql)
{
	catalog_insert_session_view(viewid, spec->time_column,
								DatumGetCString(DirectFunctionCall1(interval_out,
																	IntervalPGetDatum(spec->gap))),
								compact_sql);
}

/*
 * stream_ext.compact_sessions(view regclass) RETURNS bigint: rewrite the
 * fragments of a session-window view as one row per session.  Returns
 * the number of rows it removed.  Runs as the view's owner; the caller
 * must own the view.  Inserts into the stream go on meanwhile (their
 * fragments stay fragments until the next compaction); two compactions
 * of one view queue.
 */
Datum
stream_ext_compact_sessions(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	ViewCatalogEntry entry;
	char	   *compact_sql;
	SeRunAs		octx;
	int64		removed;
	int			rc;
	bool		isnull;
	char	   *mq;

	catalog_get_view(viewid, &entry, true);
	compact_sql = catalog_session_compact_sql(viewid);
	if (compact_sql == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a session-window view", get_rel_name(viewid))));
	mq = quote_qualified_identifier(get_namespace_name(get_rel_namespace(entry.matrelid)),
									get_rel_name(entry.matrelid));

	se_run_as_owner(&octx, entry.owner, entry.timezone);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	se_materialize_begin();
	PG_TRY();
	{
		/* self-exclusive, but lets INSERT/SELECT through */
		rc = SPI_execute(psprintf("LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE", mq), false, 0);
		if (rc != SPI_OK_UTILITY)
			elog(ERROR, "stream_ext: locking %s failed", mq);
		rc = SPI_execute(compact_sql, false, 0);
		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "stream_ext: compaction failed: %s", SPI_result_code_string(rc));
		removed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	PG_FINALLY();
	{
		se_materialize_end();
	}
	PG_END_TRY();

	SPI_finish();
	se_restore(&octx);
	PG_RETURN_INT64(removed);
}
