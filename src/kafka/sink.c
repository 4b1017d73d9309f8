/*-------------------------------------------------------------------------
 *
 * sink.c
 *	  SQL interface of Kafka sinks: create_kafka_sink, start_sink,
 *	  stop_sink, drop_sink, the queue trigger stream_ext.sink_enqueue(),
 *	  the live statistics behind sink_status, parsing of a sink's options,
 *	  and the launch of the sink workers.  What sinks share with sources
 *	  (checks, catalog statements, shared memory) is in common.c.
 *
 * A sink turns every row appended to its stream into one Kafka message.
 * create_kafka_sink puts a statement-level AFTER INSERT trigger with a
 * transition table on the stream; for each INSERT (or COPY) the trigger
 * builds the key and payload of all the statement's rows with one SELECT
 * over the transition table, run as the sink's owner in a restricted
 * context (se_run_as_owner(): the settings of se_pin_settings() pinned,
 * TimeZone UTC), and appends them
 * with one INSERT ... SELECT to the logged table stream_ext.sink_queue as
 * the catalog's owner.  The queue rows thus commit or roll back with the
 * rows of the stream.  The sink's worker (sink_worker.c) produces
 * them and removes them once Kafka has acknowledged them.
 *
 * The catalog tables are owned by the extension owner and read by others
 * through row-level security; the functions here check the caller's rights
 * themselves and then write as the catalog's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/lwlock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "kafka/decode.h"
#include "kafka/sink.h"
#include "maintain/changes.h"
#include "maintain/trigger.h"

PG_FUNCTION_INFO_V1(stream_ext_create_kafka_sink);
PG_FUNCTION_INFO_V1(stream_ext_start_sink);
PG_FUNCTION_INFO_V1(stream_ext_stop_sink);
PG_FUNCTION_INFO_V1(stream_ext_drop_sink);
PG_FUNCTION_INFO_V1(stream_ext_sink_enqueue);
PG_FUNCTION_INFO_V1(stream_ext_kafka_sink_worker_stats);

#define SINK_ROWS_ENR		"stream_ext_sink_rows"
#define SINK_NEW_TABLE		"stream_ext_sink_new"
#define SINK_FETCH_ROWS		1000	/* trigger's cursor fetch size */

#define SINK_OPTION_KEYS_HINT \
	"Known options: batch_size, poll_interval_ms, columns, emit, kafka; keys " \
	"containing a dot are librdkafka properties."

KafkaSinkShared *kafka_sink_shared = NULL;
int			kafka_max_sinks = 8;

/* sinks, as common.c tells them from sources */
const KafkaKind kafka_sink_kind = {
	.noun = "sink",
	.table = "kafka_sinks",
	.missing_hint = "Is the extension stream_ext (version 0.2 or later) installed in this database?",
	.login_detail = "Sink workers connect as the sink's owner.",
	.shared = (void **) &kafka_sink_shared,
	.shmem_name = "stream_ext kafka sinks",
	.tranche = "stream_ext_kafka_sink",
	.max_slots = &kafka_max_sinks,
	.max_slots_default = 8,
	.max_slots_desc = "Maximum number of running Kafka sinks (all databases).",
	.max_slots_long_desc = "Each sink has one worker, which takes a background worker slot too.",
	.header_size = offsetof(KafkaSinkShared, slots),
	.slot_size = sizeof(KafkaSinkSlot),
	.slot_noun = "sink",
	.slot_guc = "stream_ext.kafka_max_sinks",
};

/*
 * Called from _PG_init at preload: the GUC stream_ext.kafka_max_sinks and
 * the table of sink slots in shared memory.
 */
void
kafka_sink_init(void)
{
	kafka_slot_table_register(&kafka_sink_kind);
}

/* ----------------------------------------------------------------
 * Options
 * ----------------------------------------------------------------
 */

/* one option of a sink (a KafkaOptionHandler) */
static void
sink_option(const char *key, JsonbValue *v, void *arg)
{
	KafkaSinkOptions *opts = (KafkaSinkOptions *) arg;

	if (strcmp(key, "batch_size") == 0)
		opts->batch_size = (int) kafka_opt_int(v, &kafka_sink_kind, key);
	else if (strcmp(key, "poll_interval_ms") == 0)
		opts->poll_interval_ms = (int) kafka_opt_int(v, &kafka_sink_kind, key);
	else if (strcmp(key, "emit") == 0)
	{
		if (v->type != jbvString ||
			strncmp(v->val.string.val, "changes", v->val.string.len) != 0 ||
			v->val.string.len != strlen("changes"))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"emit\" of a Kafka sink must be \"changes\""),
					 errhint("\"emit\": \"changes\" publishes a view's change stream keyed by group, deletions as tombstones.")));
		opts->emit_changes = true;
	}
	else if (strcmp(key, "columns") == 0)
	{
		opts->columns = kafka_opt_names(v, key);
		if (opts->columns == NIL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"columns\" must name at least one column")));
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown Kafka sink option \"%s\"", key),
				 errhint(SINK_OPTION_KEYS_HINT)));
}

/* parse and validate a sink's options (NULL: none); ereports if invalid */
void
kafka_sink_parse_options(Jsonb *options, KafkaSinkOptions *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->batch_size = 10000;
	opts->poll_interval_ms = 100;
	kafka_parse_option_object(options, sink_option, opts,
							  &opts->kafka_keys, &opts->kafka_values);
}

/* delivery tracking relies on the idempotent producer */
static const char *const sink_managed_properties[] = {
	"enable.idempotence", "acks", "request.required.acks", "transactional.id", NULL
};

/*
 * librdkafka producer configuration of a sink: the user's properties, then
 * the ones delivery tracking relies on.  ereports on an invalid property.
 */
rd_kafka_conf_t *
kafka_sink_build_conf(const char *brokers, const KafkaSinkOptions *opts, Oid role)
{
	rd_kafka_conf_t *conf;

	conf = kafka_conf_new(brokers, opts->kafka_keys, opts->kafka_values,
						  sink_managed_properties,
						  "Sinks use the idempotent producer (enable.idempotence=true, acks=all).",
						  role);
	kafka_conf_set(conf, "enable.idempotence", "true");
	if (!kafka_property_given(opts->kafka_keys, "message.timeout.ms") &&
		!kafka_property_given(opts->kafka_keys, "delivery.timeout.ms"))
		kafka_conf_set(conf, "message.timeout.ms", "30000");
	if (!kafka_property_given(opts->kafka_keys, "linger.ms") &&
		!kafka_property_given(opts->kafka_keys, "queue.buffering.max.ms"))
		kafka_conf_set(conf, "linger.ms", "5");
	/*
	 * "emit": "changes": every message of a group to one partition, also
	 * for an empty key (a NULL group key in csv, a view without GROUP BY),
	 * which consistent_random would scatter; murmur2 is the Java client's.
	 */
	if (opts->emit_changes && !kafka_property_given(opts->kafka_keys, "partitioner"))
		kafka_conf_set(conf, "partitioner", "murmur2");
	return conf;
}

/* ----------------------------------------------------------------
 * Columns and payload
 * ----------------------------------------------------------------
 */

/* the names of the SINK_FORMAT_* values */
static const char *const sink_format_names[] = {"json", "csv", "text"};

static int
sink_parse_format(const char *format)
{
	int			i = kafka_name_index(format, sink_format_names,
									 lengthof(sink_format_names));

	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown Kafka sink format \"%s\"", format),
				 errhint("Valid formats are \"json\", \"csv\" and \"text\".")));
	return i;
}

/*
 * The payload columns of a sink on relation rel: the explicit list, or
 * every column but arrival_timestamp.  ereports on an unknown column.
 */
static List *
payload_columns(Relation rel, List *explicit)
{
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *cols = NIL;
	ListCell   *lc;
	int			i;

	if (explicit != NIL)
	{
		foreach(lc, explicit)
		{
			char	   *c = lfirst(lc);

			if (get_attnum(RelationGetRelid(rel), c) == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("column \"%s\" of option \"columns\" does not exist in \"%s\"",
								c, RelationGetRelationName(rel))));
			cols = lappend(cols, c);
		}
		return cols;
	}
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strcmp(NameStr(att->attname), STREAM_ARRIVAL_COLUMN) == 0)
			continue;
		cols = lappend(cols, pstrdup(NameStr(att->attname)));
	}
	return cols;
}

/* the SQL text of a column's value as text, or NULL */
static char *
column_text(const char *col)
{
	return psprintf("(n.%s)::text", quote_identifier(col));
}

/* one RFC 4180 line of the text values exprs: quoted when they hold a quote, comma or line break; NULL is empty */
static void
append_csv_line(StringInfo sql, List *exprs)
{
	ListCell   *lc;

	foreach(lc, exprs)
	{
		char	   *x = lfirst(lc);

		if (lc != list_head(exprs))
			appendStringInfoString(sql, " || ',' || ");
		appendStringInfo(sql,
						 "CASE WHEN %s IS NULL THEN '' "
						 "WHEN %s = '' OR %s ~ E'[\",\\\\r\\\\n]' "
						 "THEN '\"' || replace(%s, '\"', '\"\"') || '\"' "
						 "ELSE %s END",
						 x, x, x, x, x);
	}
}

/* the JSON object (text) of the columns of n named names, as names[i] AS as[i] */
static void
append_json_object(StringInfo sql, List *names, List *as)
{
	ListCell   *lc;
	ListCell   *la;

	appendStringInfoString(sql, "(SELECT row_to_json(r)::text FROM (SELECT ");
	forboth(lc, names, la, as)
		appendStringInfo(sql, "%sn.%s AS %s", lc != list_head(names) ? ", " : "",
						 quote_identifier(lfirst(lc)), quote_identifier(lfirst(la)));
	appendStringInfoString(sql, ") r)");
}

/*
 * "emit": "changes" over change stream streamid (maintain/changes.c): the
 * key is the group's key columns, the payload the group's new row (keys
 * and new_ values, named as the view's columns), NULL -- a tombstone --
 * for a deletion.  ereports if streamid is no change stream or format is
 * text.
 */
static char *
build_changes_payload_sql(Oid streamid, int format, const char *newtable)
{
	List	   *keys;
	List	   *values;
	List	   *newcols = NIL;
	List	   *exprs = NIL;
	StringInfoData sql;
	ListCell   *lc;

	if (!changes_stream_columns(streamid, &keys, &values))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"emit\": \"changes\" needs the change stream of a continuous view, not \"%s\"",
						get_rel_name(streamid)),
				 errhint("Give the view one with ALTER VIEW v SET (changes = true), and sink stream_ext.changes('v').")));
	if (format == SINK_FORMAT_TEXT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"emit\": \"changes\" publishes format \"json\" or \"csv\", not \"text\"")));
	foreach(lc, values)
		newcols = lappend(newcols, psprintf("new_%s", (char *) lfirst(lc)));
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	if (format == SINK_FORMAT_JSON)
		append_json_object(&sql, keys, keys);
	else
	{
		foreach(lc, keys)
			exprs = lappend(exprs, column_text(lfirst(lc)));
		if (exprs == NIL)
			appendStringInfoString(&sql, "''");
		else
			append_csv_line(&sql, exprs);
	}
	appendStringInfoString(&sql, " AS key, CASE WHEN n.change_op = 'delete' THEN NULL ELSE ");
	if (format == SINK_FORMAT_JSON)
		append_json_object(&sql, list_concat_copy(keys, newcols), list_concat_copy(keys, values));
	else
	{
		foreach(lc, newcols)
			exprs = lappend(exprs, column_text(lfirst(lc)));
		append_csv_line(&sql, exprs);
	}
	appendStringInfo(&sql, " END AS payload FROM %s n", quote_identifier(newtable));
	return sql.data;
}

/*
 * The SELECT producing (key text, payload text) for every row of the
 * transition table, in its order.
 */
static char *
build_payload_sql(int format, const char *key_column, List *cols,
				  const char *newtable)
{
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s AS key, ",
					 key_column ? column_text(key_column) : "NULL::text");
	if (format == SINK_FORMAT_JSON)
	{
		appendStringInfoString(&sql, "row_to_json(r)::text AS payload FROM ");
		appendStringInfo(&sql, "%s n CROSS JOIN LATERAL (SELECT ", quote_identifier(newtable));
		foreach(lc, cols)
		{
			if (lc != list_head(cols))
				appendStringInfoString(&sql, ", ");
			appendStringInfo(&sql, "n.%s", quote_identifier(lfirst(lc)));
		}
		appendStringInfoString(&sql, ") r");
	}
	else if (format == SINK_FORMAT_CSV)
	{
		List	   *exprs = NIL;

		foreach(lc, cols)
			exprs = lappend(exprs, column_text(lfirst(lc)));
		append_csv_line(&sql, exprs);
		appendStringInfo(&sql, " AS payload FROM %s n", quote_identifier(newtable));
	}
	else
	{
		appendStringInfo(&sql, "%s AS payload FROM %s n",
						 column_text(linitial(cols)), quote_identifier(newtable));
	}
	return sql.data;
}

/* validate format, key column and payload columns against the stream */
static void
validate_sink_columns(Oid stream, int format, const char *key_column,
					  const KafkaSinkOptions *opts)
{
	Relation	rel;
	List	   *cols;

	if (opts->emit_changes)
	{
		if (key_column || opts->columns)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"emit\": \"changes\" takes no key_column and no option \"columns\""),
					 errdetail("The key is the view's group key, the payload its new row.")));
		(void) build_changes_payload_sql(stream, format, SINK_NEW_TABLE);
		return;
	}
	rel = relation_open(stream, AccessShareLock);
	cols = payload_columns(rel, opts->columns);

	if (key_column && get_attnum(stream, key_column) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("key column \"%s\" does not exist in \"%s\"",
						key_column, RelationGetRelationName(rel))));
	if (cols == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" has no column to send", RelationGetRelationName(rel))));
	if (format == SINK_FORMAT_TEXT && list_length(cols) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("format \"text\" sends exactly one column, not %d", list_length(cols)),
				 errhint("Name it with the option \"columns\", e.g. '{\"columns\": [\"line\"]}'.")));
	relation_close(rel, AccessShareLock);
}


/* ----------------------------------------------------------------
 * SQL functions
 * ----------------------------------------------------------------
 */

/*
 * create_kafka_sink(name, stream, brokers, topic, format, key_column, options)
 */
Datum
stream_ext_create_kafka_sink(PG_FUNCTION_ARGS)
{
	KafkaDefinition def;
	char	   *key_column;
	Jsonb	   *options;
	KafkaSinkOptions opts;
	int			fmt;
	rd_kafka_conf_t *conf;
	Oid			argtypes[8] = {TEXTOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, OIDOID};
	Datum		args[8];
	char		nulls[9] = "        ";
	int32		id;
	bool		isnull;
	char	   *qualname;
	SeRunAs		runas;
	int			ret;

	kafka_definition_args(fcinfo, &def);
	key_column = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	options = PG_ARGISNULL(6) ? NULL : PG_GETARG_JSONB_P(6);

	if (kafka_sink_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("Kafka sinks need stream_ext in shared_preload_libraries")));
	kafka_check_definition(&kafka_sink_kind, def.name, def.stream, def.brokers,
						   def.topic, ACL_SELECT);

	fmt = sink_parse_format(def.format);
	kafka_sink_parse_options(options, &opts);
	validate_sink_columns(def.stream, fmt, key_column, &opts);
	conf = kafka_sink_build_conf(def.brokers, &opts, GetUserId());
	rd_kafka_conf_destroy(conf);

	SPI_connect();
	kafka_check_new_name(&kafka_sink_kind, def.name);

	kafka_definition_datums(&def, args);
	args[4] = CStringGetTextDatum(sink_format_names[fmt]);
	if (key_column)
		args[5] = CStringGetTextDatum(key_column);
	else
		nulls[5] = 'n';
	args[6] = options ? JsonbPGetDatum(options) : DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	args[7] = ObjectIdGetDatum(GetUserId());
	kafka_catalog_exec(&kafka_sink_kind,
					   "INSERT INTO stream_ext.kafka_sinks "
					   "(name, stream, brokers, topic, format, key_column, options, owner) "
					   "VALUES ($1, $2::regclass, $3, $4, $5, $6, $7, $8::regrole) RETURNING id",
					   8, argtypes, args, nulls, false, SPI_OK_INSERT_RETURNING);
	id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/* the queue trigger, created as the stream's owner (as for views) */
	qualname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(def.stream)),
										  get_rel_name(def.stream));
	se_run_as_role(&runas, se_relation_owner(def.stream));
	ret = SPI_execute(psprintf("CREATE TRIGGER stream_ext_sink_%d AFTER INSERT ON %s"
							   " REFERENCING NEW TABLE AS " SINK_NEW_TABLE
							   " FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.sink_enqueue('%d')",
							   id, qualname, id),
					  false, 0);
	se_restore(&runas);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not create the queue trigger of Kafka sink \"%s\": %s",
			 def.name, SPI_result_code_string(ret));
	SPI_finish();

	PG_RETURN_VOID();
}

/* register a sink's dynamic worker */
static bool
launch_sink_worker(const KafkaSinkWorkerArgs *args, bool error_on_failure)
{
	return kafka_bgworker_launch("stream_ext_kafka_sink_worker_main", "stream_ext kafka sink",
								 psprintf("stream_ext kafka sink %d", args->sink_id),
								 args, sizeof(KafkaSinkWorkerArgs), error_on_failure,
								 psprintf("the worker of Kafka sink %d", args->sink_id),
								 "Raise max_worker_processes.");
}

/*
 * start_sink(name): mark running and launch the worker, which waits for
 * this transaction to end and exits at once if it rolled back.
 */
Datum
stream_ext_start_sink(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	KafkaCatalogRow row;
	KafkaSinkOptions opts;
	Oid			catalog_relid;
	KafkaSinkWorkerArgs wargs;

	SPI_connect();
	kafka_start_fetch_row(&kafka_sink_kind, name, &row);
	kafka_sink_parse_options(row.options, &opts);
	kafka_check_owner_login(&kafka_sink_kind, &row);
	/* a dropped stream adds nothing, but what it queued is still delivered */
	if (get_rel_name(row.stream) != NULL &&
		pg_class_aclcheck(row.stream, row.owner, ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("owner of Kafka sink \"%s\" has no SELECT privilege on \"%s\"",
						name, get_rel_name(row.stream))));
	kafka_set_running(&kafka_sink_kind, row.id);
	SPI_finish();

	catalog_relid = kafka_catalog_table(&kafka_sink_kind, false);
	if (!kafka_slot_is_live(&kafka_sink_kind, MyDatabaseId, catalog_relid, row.id, 0))
	{
		memset(&wargs, 0, sizeof(wargs));
		wargs.dboid = MyDatabaseId;
		wargs.catalog_relid = catalog_relid;
		wargs.owner = row.owner;
		wargs.sink_id = row.id;
		wargs.wait_xid = GetTopTransactionId();
		launch_sink_worker(&wargs, true);
	}
	PG_RETURN_VOID();
}

/*
 * stop_sink(name): mark stopped; the worker records what Kafka has
 * acknowledged and exits within about a second.  Rows keep being queued.
 */
Datum
stream_ext_stop_sink(PG_FUNCTION_ARGS)
{
	kafka_stop(&kafka_sink_kind, text_to_cstring(PG_GETARG_TEXT_PP(0)));
	PG_RETURN_VOID();
}

/*
 * drop_sink(name, if_exists): drop the queue trigger, the undelivered rows
 * and the sink.  A running worker exits when it sees the sink gone.
 */
Datum
stream_ext_drop_sink(PG_FUNCTION_ARGS)
{
	KafkaCatalogRow row;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	if (!kafka_drop_begin(&kafka_sink_kind, fcinfo, &row))
		PG_RETURN_VOID();

	if (get_rel_name(row.stream) != NULL)
	{
		/*
		 * The queue trigger, as an internal deletion: DROP TRIGGER of
		 * stream_ext's triggers on a stream is refused to users
		 * (ddl/utility.c); kafka_drop_begin() checked the caller may drop
		 * the sink.
		 */
		Oid			trigid = get_trigger_oid(row.stream,
											 psprintf("stream_ext_sink_%d", row.id), true);

		if (OidIsValid(trigid))
		{
			ObjectAddress trigger;

			ObjectAddressSet(trigger, TriggerRelationId, trigid);
			performDeletion(&trigger, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
		}
	}

	args[0] = Int32GetDatum(row.id);
	kafka_catalog_exec(&kafka_sink_kind,
					   "DELETE FROM stream_ext.sink_queue WHERE sink = $1",
					   1, argtypes, args, NULL, false, SPI_OK_DELETE);
	kafka_drop_end(&kafka_sink_kind, &row);
	PG_RETURN_VOID();
}


/* ----------------------------------------------------------------
 * The queue trigger
 * ----------------------------------------------------------------
 */

/*
 * The queue trigger runs maintain/trigger.c's skeleton.  Its cache entry
 * keeps the payload plan and the parsed definition of the sink; the sink's
 * catalog row is still read at every statement (a kept plan, the latest
 * committed row), so a stopped, failed, dropped or changed sink is seen at
 * once, and the definition is parsed again only when it changed.
 */
typedef struct SinkBatch
{
	int32		sink_id;
	bool		parsed;			/* the fields below are set */
	Oid			owner;
	char	   *format;
	char	   *key_column;
	Jsonb	   *options;
	char	   *sql;			/* the payload SELECT */
	/* of the batch at hand, from run to finish */
	Tuplestorestate *ts;
	TupleDesc	rowdesc;
} SinkBatch;

/* the sink's catalog row, kept for the backend (revalidated by plancache) */
static SPIPlanPtr sink_read_plan = NULL;

static bool
text_equal(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static void
sink_load(SeBatchEntry *entry, TriggerData *trigdata)
{
	SinkBatch  *sink = MemoryContextAllocZero(entry->cxt, sizeof(SinkBatch));

	sink->sink_id = pg_strtoint32(trigdata->tg_trigger->tgargs[0]);
	entry->kind = sink;
	entry->streamid = RelationGetRelid(trigdata->tg_relation);
	entry->relids[0] = entry->streamid;
	entry->timezone = "UTC";
}

static bool
sink_admit(SeBatchEntry *entry, TriggerData *trigdata)
{
	SinkBatch  *sink = entry->kind;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Oid			owner;
	char	   *format;
	char	   *key_column;
	Jsonb	   *options;
	SeRunAs		runas;
	int			rc;

	if (sink_read_plan == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare("SELECT owner::oid, format, key_column, options, name, state,"
									   " stream::oid FROM stream_ext.kafka_sinks WHERE id = $1",
									   1, argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		sink_read_plan = plan;
	}
	args[0] = Int32GetDatum(sink->sink_id);
	/* committed now, not as of the statement's snapshot: see core/catalog.c */
	catalog_read_latest_begin();
	se_run_as_role(&runas, se_relation_owner(kafka_catalog_table(&kafka_sink_kind, false)));
	rc = SPI_execute_plan(sink_read_plan, args, NULL, true, 1);
	se_restore(&runas);
	catalog_read_latest_end();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
	/* the sink is gone (its trigger outlived it): nothing to queue */
	if (SPI_processed != 1)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;

	/*
	 * Only the sink's own stream feeds it: a trigger calling this function
	 * on another table (its owner may create one) must not put rows into
	 * another role's sink.
	 */
	if (DatumGetObjectId(SPI_getbinval(tup, desc, 7, &isnull)) !=
		RelationGetRelid(trigdata->tg_relation))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("trigger \"%s\" on \"%s\" cannot feed Kafka sink \"%s\": it is not the sink's stream",
						trigdata->tg_trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation),
						SPI_getvalue(tup, desc, 5))));
	/* failed: its owner lost SELECT (below); it queues nothing until restarted */
	if (strcmp(SPI_getvalue(tup, desc, 6), "failed") == 0)
		return false;
	owner = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	format = SPI_getvalue(tup, desc, 2);
	key_column = SPI_getvalue(tup, desc, 3);
	options = DatumGetJsonbP(SPI_getbinval(tup, desc, 4, &isnull));

	/* a new or changed definition: parse it, and plan again */
	if (!sink->parsed || owner != sink->owner ||
		!text_equal(format, sink->format) ||
		!text_equal(key_column, sink->key_column) ||
		VARSIZE(options) != VARSIZE(sink->options) ||
		memcmp(options, sink->options, VARSIZE(options)) != 0)
	{
		KafkaSinkOptions opts;
		List	   *cols;
		MemoryContext old;
		char	   *sql;

		kafka_sink_parse_options(options, &opts);
		if (opts.emit_changes)
			sql = build_changes_payload_sql(RelationGetRelid(trigdata->tg_relation),
											sink_parse_format(format),
											trigdata->tg_trigger->tgnewtable);
		else
		{
			cols = payload_columns(trigdata->tg_relation, opts.columns);
			sql = build_payload_sql(sink_parse_format(format), key_column, cols,
									trigdata->tg_trigger->tgnewtable);
		}
		se_batch_forget_plans(entry);
		sink->parsed = false;
		old = MemoryContextSwitchTo(entry->cxt);
		sink->owner = owner;
		sink->format = pstrdup(format);
		sink->key_column = key_column ? pstrdup(key_column) : NULL;
		sink->options = palloc(VARSIZE(options));
		memcpy(sink->options, options, VARSIZE(options));
		sink->sql = pstrdup(sql);
		MemoryContextSwitchTo(old);
		sink->parsed = true;
	}
	entry->owner = sink->owner;

	/*
	 * The owner lost SELECT on the stream: the insert succeeds (the stream's
	 * owner must always be able to insert), the sink stops queuing and is
	 * marked failed, visibly in sink_status, until start_sink().
	 */
	if (pg_class_aclcheck(RelationGetRelid(trigdata->tg_relation), owner, ACL_SELECT) != ACLCHECK_OK)
	{
		char	   *name = SPI_getvalue(tup, desc, 5);
		char	   *msg = psprintf("owner \"%s\" of Kafka sink \"%s\" has no SELECT privilege on \"%s\": rows are no longer queued",
								   GetUserNameFromId(owner, false), name,
								   RelationGetRelationName(trigdata->tg_relation));
		Oid			failtypes[2] = {INT4OID, TEXTOID};
		Datum		failargs[2];

		failargs[0] = Int32GetDatum(sink->sink_id);
		failargs[1] = CStringGetTextDatum(msg);
		kafka_catalog_exec(&kafka_sink_kind,
						   "UPDATE stream_ext.kafka_sinks SET state = 'failed', last_error = $2,"
						   " updated_at = now() WHERE id = $1",
						   2, failtypes, failargs, NULL, false, SPI_OK_UPDATE);
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s", msg),
				 errdetail("Kafka sink \"%s\" is marked failed; the rows of this statement and later ones are not queued for it.", name),
				 errhint("Grant SELECT back and run stream_ext.start_sink(), or drop the sink with stream_ext.drop_sink().")));
		return false;
	}
	return true;
}

static void
sink_prepare(SeBatchEntry *entry)
{
	SinkBatch  *sink = entry->kind;

	(void) se_batch_prepare(entry, sink->sql, 0, NULL);
}

/*
 * Key and payload of every row: one SELECT, as the owner, restricted, with
 * TimeZone UTC.  It is read through a cursor into a tuplestore, which
 * spills to disk beyond work_mem, so a large COPY does not hold its rows in
 * memory.
 */
static uint64
sink_run(SeBatchEntry *entry, TriggerData *trigdata)
{
	SinkBatch  *sink = entry->kind;
	Portal		portal;
	uint64		i;
	uint64		nrows = 0;

	sink->ts = tuplestore_begin_heap(false, false, work_mem);
	sink->rowdesc = NULL;
	portal = SPI_cursor_open(NULL, linitial(entry->plans), NULL, NULL, true);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, SINK_FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		if (sink->rowdesc == NULL)
			sink->rowdesc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
		for (i = 0; i < SPI_processed; i++)
			tuplestore_puttuple(sink->ts, SPI_tuptable->vals[i]);
		nrows += SPI_processed;
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	return nrows;
}

/* ... appended to the queue with one INSERT, as the catalog owner */
static void
sink_finish(SeBatchEntry *entry, TriggerData *trigdata, uint64 nrows)
{
	SinkBatch  *sink = entry->kind;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	EphemeralNamedRelation enr;

	if (nrows > 0)
	{
		enr = palloc0(sizeof(EphemeralNamedRelationData));
		enr->md.name = SINK_ROWS_ENR;
		enr->md.reliddesc = InvalidOid;
		enr->md.tupdesc = sink->rowdesc;
		enr->md.enrtype = ENR_NAMED_TUPLESTORE;
		enr->md.enrtuples = nrows;
		enr->reldata = sink->ts;
		if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
			elog(ERROR, "SPI_register_relation failed");
		args[0] = Int32GetDatum(sink->sink_id);
		kafka_catalog_exec(&kafka_sink_kind,
						   "INSERT INTO stream_ext.sink_queue (sink, key, payload) "
						   "SELECT $1, key, payload FROM " SINK_ROWS_ENR,
						   1, argtypes, args, NULL, false, SPI_OK_INSERT);
		SPI_unregister_relation(SINK_ROWS_ENR);
	}
	tuplestore_end(sink->ts);
	sink->ts = NULL;
	sink->rowdesc = NULL;
}

static const SeBatchOps sink_ops = {
	.name = "stream_ext.sink_enqueue()",
	.argument = "a sink id",
	.load = sink_load,
	.admit = sink_admit,
	.prepare = sink_prepare,
	.run = sink_run,
	.finish = sink_finish,
	.materialize = false,
	.plan_rows = 0,
	.invalid_kind = NULL,
};

/*
 * stream_ext.sink_enqueue(sink_id) — statement-level AFTER INSERT trigger
 * on a sink's stream, REFERENCING NEW TABLE AS stream_ext_sink_new.
 */
Datum
stream_ext_sink_enqueue(PG_FUNCTION_ARGS)
{
	return se_batch_trigger(fcinfo, &sink_ops);
}

/* ----------------------------------------------------------------
 * Live statistics and launch
 * ----------------------------------------------------------------
 */

/* a row of sink_status (a KafkaSlotRows) */
static void
sink_stats_rows(const KafkaSlot *common, ReturnSetInfo *rsinfo)
{
	const KafkaSinkSlot *slot = (const KafkaSinkSlot *) common;
	Datum		values[10];
	bool		nulls[10];

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum(slot->common.id);
	values[1] = Int32GetDatum(slot->common.pid);
	values[2] = CStringGetTextDatum(kafka_state_name(slot->common.state));
	values[3] = Int64GetDatum((int64) slot->rows);
	values[4] = Int64GetDatum((int64) slot->batches);
	values[5] = Int64GetDatum((int64) slot->common.errors);
	kafka_slot_status(&slot->common, &values[6], &nulls[6]);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

Datum
stream_ext_kafka_sink_worker_stats(PG_FUNCTION_ARGS)
{
	kafka_slot_srf(fcinfo, &kafka_sink_kind, sink_stats_rows);
	PG_RETURN_VOID();
}

/* a running sink: its worker (a KafkaRunningRow) */
static void
running_sink(HeapTuple tup, TupleDesc desc, KafkaLaunchList *list)
{
	bool		isnull;
	KafkaSinkWorkerArgs wargs;

	memset(&wargs, 0, sizeof(wargs));
	wargs.dboid = list->dboid;
	wargs.catalog_relid = list->catalog_relid;
	wargs.sink_id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	wargs.owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	wargs.wait_xid = InvalidTransactionId;
	kafka_launch_add(list, wargs.sink_id, 0, &wargs, sizeof(wargs));
}

/* start the worker of a running sink (a KafkaStartWorker) */
static void
start_running_sink(const KafkaLaunch *launch)
{
	ereport(LOG,
			(errmsg("stream_ext: starting the worker of Kafka sink %d", launch->id)));
	launch_sink_worker(launch->args, false);
}

/*
 * Called by the launcher's scanner (connected to dboid, no transaction):
 * start the worker of every running sink that has none.
 */
void
kafka_sink_launch_running(Oid dboid)
{
	kafka_launch_running(&kafka_sink_kind, dboid,
						 "SELECT id, owner::oid FROM stream_ext.kafka_sinks "
						 "WHERE state = 'running' ORDER BY id",
						 running_sink, start_running_sink);
}
