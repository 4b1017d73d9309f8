/*-------------------------------------------------------------------------
 *
 * replay.c
 *	  Where a new continuous view's history comes from: the options
 *	  WITH (backfill = 'stream' | 'kafka' | 'none', backfill_from = ts) of
 *	  CREATE [OR REPLACE] VIEW ... WITH (continuous), and for 'kafka' the
 *	  hand-over to the replay worker (replay_worker.c), its progress view
 *	  and stream_ext.cancel_backfill().
 *
 * backfill = 'stream' (the default) folds the rows the stream holds into
 * the new view in the creating transaction (ddl/create_view.c); with
 * backfill_from only those whose arrival_timestamp is at or after it.
 * 'none' starts the view empty: it sees the batches committed after it.
 *
 * backfill = 'kafka' replays the topic of the Kafka source feeding the
 * stream.  The hand-over point is read in the creating transaction, which
 * holds the stream in SHARE ROW EXCLUSIVE mode (create_view.c): a source
 * batch stores its offsets in the transaction of its INSERT into the
 * stream, so with writers locked out the source's stored next offsets
 * (stream_ext.kafka_offsets, read with the latest snapshot) are exactly
 * where the batches the new view's trigger will not see end: every
 * message below them is in the stream already, every message from them on
 * reaches the view through its trigger once this transaction commits.
 * They are recorded as the end of the replay per partition
 * (stream_ext.backfill_offsets), and a replay worker is started that
 * reads the topic up to them (from backfill_from's offsets, or the
 * beginning), feeding only this view.  The stream's retained rows are not
 * used (they are among those messages).
 *
 * The replayed rows are the source's decoded messages completed to the
 * stream's row type as an INSERT would (defaults of the other columns):
 * the maintenance statements are the backfill's, reading
 * (SELECT <stream columns> FROM stream_ext_replay) instead of the stream,
 * made here once, with the view's plan.
 *
 * Who may: the view's creator must be able to read the stream (CREATE
 * VIEW checks it) and have the privileges of the source's owner: the
 * replay reads the topic with the source's connection settings, and may
 * read messages the stream never held (before the source's start).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "catalog/pg_namespace.h"
#include "commands/defrem.h"
#include "nodes/nodeFuncs.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "kafka/common.h"
#include "kafka/decode.h"
#include "kafka/replay.h"
#include "kafka/source.h"

PG_FUNCTION_INFO_V1(stream_ext_cancel_backfill);

/* ---- options ------------------------------------------------------------ */

List *
backfill_take_options(List *options, BackfillSpec *spec)
{
	ListCell   *lc;
	List	   *rest = NIL;

	memset(spec, 0, sizeof(BackfillSpec));
	spec->mode = BACKFILL_STREAM;
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "backfill") == 0)
		{
			char	   *mode = defGetString(def);

			if (strcmp(mode, "stream") == 0)
				spec->mode = BACKFILL_STREAM;
			else if (strcmp(mode, "kafka") == 0)
				spec->mode = BACKFILL_KAFKA;
			else if (strcmp(mode, "none") == 0)
				spec->mode = BACKFILL_NONE;
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for continuous view option \"backfill\": \"%s\"", mode),
						 errhint("Valid values are 'stream' (the rows the stream holds, the default), 'kafka' (a replay of the topic of the stream's Kafka source) and 'none'.")));
			spec->given = true;
		}
		else if (strcmp(def->defname, "backfill_from") == 0)
		{
			spec->from_text = defGetString(def);
			/* as the user meant it: their TimeZone and DateStyle */
			spec->from = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
																 CStringGetDatum(spec->from_text),
																 ObjectIdGetDatum(InvalidOid),
																 Int32GetDatum(-1)));
			if (TIMESTAMP_NOT_FINITE(spec->from))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("continuous view option \"backfill_from\" must be a finite timestamp")));
			spec->has_from = true;
		}
		else
			rest = lappend(rest, def);
	}
	if (spec->has_from && spec->mode == BACKFILL_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"backfill_from\" cannot be used with backfill = 'none'"),
				 errhint("Use backfill = 'stream' or 'kafka' to start the view from a point in time.")));
	return rest;
}

bool
backfill_from_stream(const BackfillSpec *spec)
{
	return spec->mode == BACKFILL_STREAM;
}

/*
 * The FROM item of the stream backfill: the stream, or with backfill_from
 * its rows that arrived at or after it.  Settings are pinned: the instant
 * is written as microseconds since the Unix epoch, exact in any TimeZone.
 */
char *
backfill_stream_source(const BackfillSpec *spec, const char *sq)
{
	int64		usecs;

	if (!spec->has_from || spec->mode != BACKFILL_STREAM)
		return (char *) sq;
	usecs = spec->from + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
	return psprintf("(SELECT * FROM %s WHERE %s >= pg_catalog.timestamptz 'epoch' + "
					"(" INT64_FORMAT " * pg_catalog.interval '1 microsecond'))",
					sq, quote_identifier(STREAM_ARRIVAL_COLUMN), usecs);
}

/* ---- backfill = 'kafka' at CREATE ---------------------------------------- */

/* run sql with args as the catalog owner; SPI is connected */
static void
catalog_sql(const char *sql, int nargs, Oid *argtypes, Datum *args, bool latest,
			int expected)
{
	SeRunAs		ra;
	int			rc;

	se_run_as_catalog_owner(&ra);
	if (latest)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		rc = SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(),
								  InvalidSnapshot, false, false, 0);
	}
	else
		rc = SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 0);
	se_restore(&ra);
	if (rc != expected)
		elog(ERROR, "stream_ext: catalog statement failed: %s", SPI_result_code_string(rc));
}

static bool
not_catalog_function(Oid funcid, void *context)
{
	return get_func_namespace(funcid) != PG_CATALOG_NAMESPACE;
}

/* does expression node call a function (or operator) outside pg_catalog? */
static bool
calls_user_function(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, not_catalog_function, context))
		return true;
	return expression_tree_walker(node, calls_user_function, context);
}

/*
 * (SELECT <the stream's columns> FROM stream_ext_replay): each column from
 * the decoded message, else its default, else NULL -- the row an INSERT
 * of the decoded columns would make.  Settings are pinned.
 */
static char *
replay_source_sql(Oid streamid, KafkaDecoder *dec)
{
	Relation	rel = relation_open(streamid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData buf;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "(SELECT ");
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *name = NULL;
		Node	   *def;

		if (att->attisdropped)
			continue;
		if (att->attgenerated)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("backfill = 'kafka' is not supported for a stream with generated columns"),
					 errdetail("Column \"%s\" of stream \"%s\" is generated.",
							   NameStr(att->attname), RelationGetRelationName(rel)),
					 errhint("Use backfill = 'stream' or 'none'.")));
		for (int c = 0; c < dec->ncolumns; c++)
			if (dec->columns[c].attnum == att->attnum)
				name = dec->columns[c].name;
		if (!first)
			appendStringInfoString(&buf, ", ");
		first = false;
		if (name != NULL)
			appendStringInfoString(&buf, quote_identifier(name));
		else if ((def = build_column_default(rel, att->attnum)) != NULL)
		{
			/*
			 * The replay evaluates it as the view's owner, where an insert
			 * evaluates it as the inserter: only built-in functions, unless
			 * the creator could run the stream owner's own.
			 */
			if (calls_user_function(def, NULL) &&
				!has_privs_of_role(GetUserId(), rel->rd_rel->relowner))
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("backfill = 'kafka' cannot evaluate the default of column \"%s\" of stream \"%s\"",
								NameStr(att->attname), RelationGetRelationName(rel)),
						 errdetail("It calls a function that is not built in, which the replay would run as the view's owner."),
						 errhint("Create the view as the stream's owner, or use backfill = 'stream'.")));
			appendStringInfo(&buf, "(%s)", deparse_expression(def, NIL, false, false));
		}
		else
			appendStringInfo(&buf, "NULL::%s",
							 format_type_with_typemod(att->atttypid, att->atttypmod));
		appendStringInfo(&buf, " AS %s", quote_identifier(NameStr(att->attname)));
	}
	appendStringInfo(&buf, " FROM %s)", REPLAY_ENR_NAME);
	relation_close(rel, AccessShareLock);
	return buf.data;
}

/*
 * backfill = 'kafka': the source feeding the stream, checked; the FROM
 * item of the replay's maintenance statements in spec->replay_source.
 * After the stream is locked and the settings pinned, SPI connected.
 */
void
backfill_prepare(BackfillSpec *spec, Oid streamid, bool session, bool lateness)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Oid			source_owner;
	KafkaOptions opts;
	KafkaDecoder *dec;
	KafkaFormat format;

	if (spec->mode == BACKFILL_STREAM && spec->has_from &&
		get_attnum(streamid, STREAM_ARRIVAL_COLUMN) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("option \"backfill_from\" needs column \"%s\" in stream \"%s\"",
						STREAM_ARRIVAL_COLUMN, get_rel_name(streamid))));
	if (spec->mode != BACKFILL_KAFKA)
		return;
	if (session || lateness)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backfill = 'kafka' is not supported for continuous views with session windows or allowed_lateness"),
				 errhint("Use backfill = 'stream' or 'none'.")));
	if (!OidIsValid(get_relname_relid("backfills", get_namespace_oid("stream_ext", false))))
		catalog_report_needs_update("backfill = 'kafka'");

	args[0] = ObjectIdGetDatum(streamid);
	catalog_sql("SELECT name, format, options, owner::pg_catalog.oid "
				"FROM stream_ext.kafka_sources WHERE stream = $1 ORDER BY name",
				1, argtypes, args, true, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("backfill = 'kafka' needs a Kafka source feeding stream \"%s\", and it has none",
						get_rel_name(streamid)),
				 errhint("Create one with stream_ext.create_kafka_source(), or use backfill = 'stream'.")));
	if (SPI_processed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backfill = 'kafka' needs exactly one Kafka source feeding stream \"%s\", and it has " UINT64_FORMAT,
						get_rel_name(streamid), SPI_processed),
				 errhint("Use backfill = 'stream', or feed the stream from one source.")));
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	spec->source = SPI_getvalue(tup, desc, 1);
	format = kafka_parse_format(SPI_getvalue(tup, desc, 2));
	kafka_parse_options(DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 3, &isnull)), &opts);
	source_owner = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
	if (!has_privs_of_role(GetUserId(), source_owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to replay Kafka source \"%s\"", spec->source),
				 errdetail("A replay reads the source's topic with the source's connection settings."),
				 errhint("Create the view as the source's owner or a member of its role, or use backfill = 'stream'.")));

	/* the source's own decoder: the columns a message fills */
	dec = kafka_decoder_create(streamid, format, &opts);
	spec->replay_source = replay_source_sql(streamid, dec);
}

/*
 * After the view's catalog entry: record the replay and its hand-over
 * offsets, and start its worker (it waits for this transaction).
 */
void
backfill_record(BackfillSpec *spec, Oid viewid, Oid streamid,
				const char *maintain_sql, List *distinct_sql)
{
	Oid			argtypes[5] = {OIDOID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTARRAYOID};
	Datum		args[5];
	Datum	   *elems;
	int			n = 0;
	ListCell   *lc;
	SeRunAs		ra;
	SPIPlanPtr	plan;
	char		nulls[5] = "     ";
	int			rc;

	if (spec->mode != BACKFILL_KAFKA)
		return;
	elems = palloc(sizeof(Datum) * Max(list_length(distinct_sql), 1));
	foreach(lc, distinct_sql)
		elems[n++] = CStringGetTextDatum((char *) lfirst(lc));
	args[0] = ObjectIdGetDatum(viewid);
	args[1] = CStringGetTextDatum(spec->source);
	args[2] = TimestampTzGetDatum(spec->from);
	if (!spec->has_from)
		nulls[2] = 'n';
	args[3] = CStringGetTextDatum(maintain_sql);
	args[4] = PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));

	se_run_as_catalog_owner(&ra);
	rc = SPI_execute_with_args("INSERT INTO stream_ext.backfills "
							   "(view, source, backfill_from, maintain_sql, distinct_sql) "
							   "VALUES ($1::pg_catalog.regclass, $2, $3, $4, $5)",
							   5, argtypes, args, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: could not record the backfill: %s", SPI_result_code_string(rc));

	/*
	 * The hand-over: what the source has stored, as of now (the stream is
	 * locked against its batches since before the view's trigger existed).
	 */
	plan = SPI_prepare("INSERT INTO stream_ext.backfill_offsets (view, partition, end_offset) "
					   "SELECT $1::pg_catalog.regclass, partition, next_offset "
					   "FROM stream_ext.kafka_offsets WHERE source = $2",
					   2, argtypes);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	rc = SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot,
							  false, true, 0);
	se_restore(&ra);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: could not record the hand-over offsets: %s",
			 SPI_result_code_string(rc));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("Kafka source \"%s\" has not stored any offsets yet", spec->source),
				 errdetail("The replay ends where the source's stored offsets are when the view is created."),
				 errhint("Start the source (stream_ext.start_source()) and let it consume, or use backfill = 'stream'.")));

	replay_launch(MyDatabaseId, viewid, GetTopTransactionId());
}

/* is the view built by a Kafka replay (a backfills row, seen with the latest snapshot)? */
bool
backfill_replays(Oid viewid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		result = false;
	Oid			nsp = get_namespace_oid("stream_ext", true);

	if (!OidIsValid(get_relname_relid("backfills", nsp)))
		return false;
	SPI_connect();
	args[0] = ObjectIdGetDatum(viewid);
	catalog_sql("SELECT 1 FROM stream_ext.backfills WHERE view = $1::pg_catalog.regclass",
				1, argtypes, args, true, SPI_OK_SELECT);
	result = SPI_processed > 0;
	SPI_finish();
	return result;
}

/* ---- workers -------------------------------------------------------------- */

#define REPLAY_LOCK_FIELD4 0x5e52	/* tells our lock from user advisory locks */

/*
 * The lock a replay worker holds for its view's replay, for its whole life
 * (session lock): one worker per view.
 */
void
replay_locktag(LOCKTAG *tag, Oid viewid)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, viewid, 0, REPLAY_LOCK_FIELD4);
}

/* does a worker replay this view now?  (in the view's database) */
static bool
replay_worker_alive(Oid viewid)
{
	LOCKTAG		tag;

	replay_locktag(&tag, viewid);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ExclusiveLock, false);
	return false;
}

void
replay_launch(Oid dboid, Oid viewid, TransactionId wait_xid)
{
	ReplayWorkerArgs args;

	memset(&args, 0, sizeof(args));
	args.dboid = dboid;
	args.viewid = viewid;
	args.wait_xid = wait_xid;
	(void) kafka_bgworker_launch("stream_ext_replay_worker_main", "stream_ext kafka replay",
								 psprintf("stream_ext kafka replay %u", viewid),
								 &args, sizeof(args), false, "the Kafka replay worker",
								 "Raise max_worker_processes; the replay starts at the Kafka launcher's next scan.");
}

/*
 * From the launcher's scanner (as the bootstrap superuser): start the
 * worker of every replay still running (after a restart, a crash, a
 * failed start) whose worker is not alive (replay_worker.c's lock).
 */
void
replay_launch_running(Oid dboid)
{
	List	   *views = NIL;
	ListCell   *lc;
	Oid			nsp;

	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	nsp = get_namespace_oid("stream_ext", true);
	if (stream_ext_installed() && OidIsValid(get_relname_relid("backfills", nsp)))
	{
		int			rc = SPI_execute("SELECT view::pg_catalog.oid FROM stream_ext.backfills "
									 "WHERE state = 'running'", true, 0);

		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Oid			viewid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
																SPI_tuptable->tupdesc, 1, &isnull));

			if (replay_worker_alive(viewid))
				continue;
			views = lappend_oid(views, viewid);
		}
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	foreach(lc, views)
		replay_launch(dboid, lfirst_oid(lc), InvalidTransactionId);
}

/* ---- cancel ---------------------------------------------------------------- */

/*
 * stream_ext.cancel_backfill(view): stop the running replay of a view (its
 * owner only).  The view keeps the batches replayed so far.  The worker's
 * batch holds the replay's row, so this waits for the batch being applied
 * and the worker stops before the next.
 */
Datum
stream_ext_cancel_backfill(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		result;

	if (!OidIsValid(catalog_stream_of(viewid)) || catalog_is_transform(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view", get_rel_name(viewid))));
	if (!pg_class_ownercheck(viewid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_VIEW, get_rel_name(viewid));
	SPI_connect();
	args[0] = ObjectIdGetDatum(viewid);
	catalog_sql("UPDATE stream_ext.backfills SET state = 'cancelled', finished_at = now(), "
				"updated_at = now() WHERE view = $1::pg_catalog.regclass AND state = 'running'",
				1, argtypes, args, false, SPI_OK_UPDATE);
	result = SPI_processed > 0;
	SPI_finish();
	PG_RETURN_BOOL(result);
}
