/*-------------------------------------------------------------------------
 *
 * kafka_sink.c
 *	  SQL interface of Kafka sinks: create_kafka_sink, start_sink,
 *	  stop_sink, drop_sink, the queue trigger stream_ext.sink_enqueue(),
 *	  the live statistics behind sink_status, parsing of a sink's options,
 *	  the sink workers' shared memory and their launch.
 *
 * A sink turns every row appended to its stream into one Kafka message.
 * create_kafka_sink puts a statement-level AFTER INSERT trigger with a
 * transition table on the stream; for each INSERT (or COPY) the trigger
 * builds the key and payload of all the statement's rows with one SELECT
 * over the transition table, run as the sink's owner in a restricted
 * context (owner_context_enter(): search_path and TimeZone pinned, and
 * DateStyle, IntervalStyle and extra_float_digits too), and appends them
 * with one INSERT ... SELECT to the logged table stream_ext.sink_queue as
 * the catalog's owner.  The queue rows thus commit or roll back with the
 * rows of the stream.  The sink's worker (kafka_sink_worker.c) produces
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
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "formats.h"
#include "kafka_sink.h"
#include "maintain.h"
#include "util.h"

PG_FUNCTION_INFO_V1(stream_ext_create_kafka_sink);
PG_FUNCTION_INFO_V1(stream_ext_start_sink);
PG_FUNCTION_INFO_V1(stream_ext_stop_sink);
PG_FUNCTION_INFO_V1(stream_ext_drop_sink);
PG_FUNCTION_INFO_V1(stream_ext_sink_enqueue);
PG_FUNCTION_INFO_V1(stream_ext_kafka_sink_worker_stats);

#define SINK_ROWS_ENR		"stream_ext_sink_rows"
#define SINK_NEW_TABLE		"stream_ext_sink_new"
#define SINK_FETCH_ROWS		1000	/* trigger's cursor fetch size */
#define ARRIVAL_COLUMN		"arrival_timestamp"

#define SINK_OPTION_KEYS_HINT \
	"Known options: batch_size, poll_interval_ms, columns, kafka; keys " \
	"containing a dot are librdkafka properties."

KafkaSinkShared *kafka_sink_shared = NULL;
int			kafka_max_sinks = 8;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* ----------------------------------------------------------------
 * Shared memory and GUC
 * ----------------------------------------------------------------
 */

static Size
sink_shmem_size(void)
{
	return add_size(offsetof(KafkaSinkShared, slots),
					mul_size(sizeof(KafkaSinkSlot), kafka_max_sinks));
}

static void
sink_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sink_shmem_size());
	RequestNamedLWLockTranche("stream_ext_kafka_sink", 1);
}

static void
sink_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	kafka_sink_shared = ShmemInitStruct("stream_ext kafka sinks", sink_shmem_size(), &found);
	if (!found)
	{
		memset(kafka_sink_shared, 0, sink_shmem_size());
		kafka_sink_shared->lock = &(GetNamedLWLockTranche("stream_ext_kafka_sink"))->lock;
		kafka_sink_shared->nslots = kafka_max_sinks;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* called from _PG_init: the GUC always, shared memory when preloaded */
void
kafka_sink_init(void)
{
	DefineCustomIntVariable("stream_ext.kafka_max_sinks",
							"Maximum number of running Kafka sinks (all databases).",
							"Each sink has one worker, which takes a background worker slot too.",
							&kafka_max_sinks,
							8, 1, 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sink_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sink_shmem_startup;
}

/* ----------------------------------------------------------------
 * Options
 * ----------------------------------------------------------------
 */

static char *
sink_opt_string(JsonbValue *v, const char *key)
{
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a string", key)));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static int
sink_opt_int(JsonbValue *v, const char *key, int min, int max)
{
	char	   *s = NULL;
	char	   *end;
	long		val;

	if (v->type == jbvNumeric)
		s = DatumGetCString(DirectFunctionCall1(numeric_out,
												NumericGetDatum(v->val.numeric)));
	else if (v->type == jbvString)
		s = pnstrdup(v->val.string.val, v->val.string.len);
	if (s != NULL)
	{
		errno = 0;
		val = strtol(s, &end, 10);
		if (errno == 0 && end != s && *end == '\0' && val >= min && val <= max)
			return (int) val;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("option \"%s\" must be an integer between %d and %d", key, min, max)));
	return 0;
}

static void
sink_add_property(KafkaSinkOptions *opts, const char *key, JsonbValue *v)
{
	if (v->type != jbvString && v->type != jbvNumeric && v->type != jbvBool)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a string, number or boolean", key)));
	opts->kafka_keys = lappend(opts->kafka_keys, pstrdup(key));
	opts->kafka_values = lappend(opts->kafka_values, jsonb_value_text(v));
}

/* parse and validate a sink's options (NULL: none); ereports if invalid */
void
kafka_sink_parse_options(Jsonb *options, KafkaSinkOptions *opts)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;

	memset(opts, 0, sizeof(*opts));
	opts->batch_size = 10000;
	opts->poll_interval_ms = 100;
	if (options == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a JSON object")));

	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			continue;
		}
		if (tok != WJB_VALUE)
			continue;

		if (strcmp(key, "batch_size") == 0)
			opts->batch_size = sink_opt_int(&v, key, 1, 100000);
		else if (strcmp(key, "poll_interval_ms") == 0)
			opts->poll_interval_ms = sink_opt_int(&v, key, 10, 60000);
		else if (strcmp(key, "columns") == 0)
		{
			JsonbIterator *it2;
			JsonbValue	e;
			JsonbIteratorToken t2;

			if (v.type != jbvBinary || !JsonContainerIsArray(v.val.binary.data))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"columns\" must be an array of column names")));
			it2 = JsonbIteratorInit(v.val.binary.data);
			while ((t2 = JsonbIteratorNext(&it2, &e, true)) != WJB_DONE)
				if (t2 == WJB_ELEM)
					opts->columns = lappend(opts->columns, sink_opt_string(&e, key));
			if (opts->columns == NIL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"columns\" must name at least one column")));
		}
		else if (strcmp(key, "kafka") == 0)
		{
			JsonbIterator *it2;
			JsonbValue	e;
			JsonbIteratorToken t2;
			char	   *prop = NULL;

			if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"kafka\" must be an object of librdkafka properties")));
			it2 = JsonbIteratorInit(v.val.binary.data);
			while ((t2 = JsonbIteratorNext(&it2, &e, true)) != WJB_DONE)
			{
				if (t2 == WJB_KEY)
					prop = pnstrdup(e.val.string.val, e.val.string.len);
				else if (t2 == WJB_VALUE)
					sink_add_property(opts, prop, &e);
			}
		}
		else if (strchr(key, '.') != NULL)
			sink_add_property(opts, key, &v);
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown Kafka sink option \"%s\"", key),
					 errhint(SINK_OPTION_KEYS_HINT)));
	}
}

/*
 * librdkafka producer configuration of a sink: the user's properties, then
 * the ones delivery tracking relies on.  ereports on an invalid property.
 */
rd_kafka_conf_t *
kafka_sink_build_conf(const char *brokers, const KafkaSinkOptions *opts)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errstr[512];
	ListCell   *lk,
			   *lv;
	bool		have_timeout = false;
	bool		have_linger = false;

#define SINK_CONF_SET(k, v) \
	do { \
		if (rd_kafka_conf_set(conf, (k), (v), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) \
		{ \
			rd_kafka_conf_destroy(conf); \
			ereport(ERROR, \
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE), \
					 errmsg("invalid librdkafka property \"%s\": %s", (k), errstr))); \
		} \
	} while (0)

	SINK_CONF_SET("bootstrap.servers", brokers);
	SINK_CONF_SET("client.id", "stream_ext");
	forboth(lk, opts->kafka_keys, lv, opts->kafka_values)
	{
		const char *k = lfirst(lk);

		if (strcmp(k, "enable.idempotence") == 0 ||
			strcmp(k, "acks") == 0 || strcmp(k, "request.required.acks") == 0 ||
			strcmp(k, "transactional.id") == 0)
		{
			rd_kafka_conf_destroy(conf);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("librdkafka property \"%s\" is managed by stream_ext", k),
					 errdetail("Sinks use the idempotent producer (enable.idempotence=true, acks=all).")));
		}
		if (strcmp(k, "message.timeout.ms") == 0 || strcmp(k, "delivery.timeout.ms") == 0)
			have_timeout = true;
		if (strcmp(k, "linger.ms") == 0 || strcmp(k, "queue.buffering.max.ms") == 0)
			have_linger = true;
		SINK_CONF_SET(k, (const char *) lfirst(lv));
	}
	SINK_CONF_SET("enable.idempotence", "true");
	if (!have_timeout)
		SINK_CONF_SET("message.timeout.ms", "30000");
	if (!have_linger)
		SINK_CONF_SET("linger.ms", "5");
	return conf;
#undef SINK_CONF_SET
}

/* ----------------------------------------------------------------
 * Catalog access
 * ----------------------------------------------------------------
 */

Oid
kafka_sink_catalog_relid(bool missing_ok)
{
	Oid			nsp = get_namespace_oid("stream_ext", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("kafka_sinks", nsp) : InvalidOid;

	if (!OidIsValid(relid) && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("stream_ext.kafka_sinks does not exist"),
				 errhint("Is the extension stream_ext (version 0.2 or later) installed in this database?")));
	return relid;
}

/* owner of stream_ext.kafka_sinks: the role the catalog is written as */
static Oid
sink_catalog_owner(void)
{
	return relation_owner(kafka_sink_catalog_relid(false));
}

/* run one statement as the catalog owner (SPI connected) */
static void
sink_catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *args,
				  const char *nulls, bool read_only, int expected)
{
	Oid			save_userid;
	int			save_sec;
	int			ret;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(sink_catalog_owner(), save_sec | SECURITY_LOCAL_USERID_CHANGE);
	ret = SPI_execute_with_args(sql, nargs, argtypes, args, nulls, read_only, 0);
	SetUserIdAndSecContext(save_userid, save_sec);
	if (ret != expected)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
}

typedef struct SinkRow
{
	int32		id;
	char	   *name;
	Oid			stream;
	Oid			owner;
	char	   *state;
	Jsonb	   *options;
} SinkRow;

/* fetch and lock a sink row (SPI connected); false if missing and missing_ok */
static bool
fetch_sink(const char *name, SinkRow *row, bool missing_ok)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;

	args[0] = CStringGetTextDatum(name);
	sink_catalog_exec("SELECT id, name, stream::oid, owner::oid, state, options "
					  "FROM stream_ext.kafka_sinks WHERE name = $1 FOR UPDATE",
					  1, argtypes, args, NULL, false, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		if (missing_ok)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("Kafka sink \"%s\" does not exist", name),
				 errhint("See stream_ext.kafka_sinks for the existing sinks.")));
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	row->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	row->name = SPI_getvalue(tup, desc, 2);
	row->stream = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	row->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
	row->state = SPI_getvalue(tup, desc, 5);
	row->options = DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 6, &isnull));
	return true;
}

static void
check_sink_owner(const SinkRow *row)
{
	if (!superuser() && !has_privs_of_role(GetUserId(), row->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of Kafka sink \"%s\"", row->name),
				 errhint("Only the owner of a sink or a superuser can start, stop or drop it.")));
}

static void
check_sink_name(const char *name)
{
	const char *p;

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("Kafka sink name must not be empty")));
	if (strlen(name) > KAFKA_NAME_MAXLEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("Kafka sink name \"%s\" is too long", name),
				 errdetail("Names are limited to %d bytes.", KAFKA_NAME_MAXLEN)));
	for (p = name; *p; p++)
		if ((unsigned char) *p < 0x20)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("Kafka sink name must not contain control characters")));
}

static int
sink_parse_format(const char *format)
{
	if (pg_strcasecmp(format, "json") == 0)
		return SINK_FORMAT_JSON;
	if (pg_strcasecmp(format, "csv") == 0)
		return SINK_FORMAT_CSV;
	if (pg_strcasecmp(format, "text") == 0)
		return SINK_FORMAT_TEXT;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown Kafka sink format \"%s\"", format),
			 errhint("Valid formats are \"json\", \"csv\" and \"text\".")));
	return SINK_FORMAT_JSON;
}

static const char *const sink_format_names[] = {"json", "csv", "text"};

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

		if (att->attisdropped || strcmp(NameStr(att->attname), ARRIVAL_COLUMN) == 0)
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
		/* RFC 4180: quote fields holding a quote, comma or line break; NULL is empty */
		foreach(lc, cols)
		{
			char	   *x = column_text(lfirst(lc));

			if (lc != list_head(cols))
				appendStringInfoString(&sql, " || ',' || ");
			appendStringInfo(&sql,
							 "CASE WHEN %s IS NULL THEN '' "
							 "WHEN %s = '' OR %s ~ E'[\",\\\\r\\\\n]' "
							 "THEN '\"' || replace(%s, '\"', '\"\"') || '\"' "
							 "ELSE %s END",
							 x, x, x, x, x);
		}
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
	Relation	rel = relation_open(stream, AccessShareLock);
	List	   *cols = payload_columns(rel, opts->columns);

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
	char	   *name;
	Oid			stream;
	char	   *brokers;
	char	   *topic;
	char	   *format;
	char	   *key_column;
	Jsonb	   *options;
	KafkaSinkOptions opts;
	int			fmt;
	char		relkind;
	AclResult	aclresult;
	rd_kafka_conf_t *conf;
	SinkRow		existing;
	Oid			argtypes[8] = {TEXTOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, OIDOID};
	Datum		args[8];
	char		nulls[9] = "        ";
	int32		id;
	bool		isnull;
	char	   *qualname;
	Oid			save_userid;
	int			save_sec;
	int			ret;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name, stream, brokers and topic must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	stream = PG_GETARG_OID(1);
	brokers = text_to_cstring(PG_GETARG_TEXT_PP(2));
	topic = text_to_cstring(PG_GETARG_TEXT_PP(3));
	format = PG_ARGISNULL(4) ? "json" : text_to_cstring(PG_GETARG_TEXT_PP(4));
	key_column = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	options = PG_ARGISNULL(6) ? NULL : PG_GETARG_JSONB_P(6);

	if (kafka_sink_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("Kafka sinks need stream_ext in shared_preload_libraries")));
	check_sink_name(name);
	if (brokers[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("brokers must not be empty"),
				 errhint("Give a bootstrap list such as 'localhost:9092'.")));
	if (topic[0] == '\0' || strlen(topic) > 249)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid Kafka topic name \"%s\"", topic)));

	relkind = get_rel_relkind(stream);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or stream", get_rel_name(stream))));
	aclresult = pg_class_aclcheck(stream, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(stream));

	fmt = sink_parse_format(format);
	kafka_sink_parse_options(options, &opts);
	validate_sink_columns(stream, fmt, key_column, &opts);
	conf = kafka_sink_build_conf(brokers, &opts);
	rd_kafka_conf_destroy(conf);

	SPI_connect();
	if (fetch_sink(name, &existing, true))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("Kafka sink \"%s\" already exists", name)));

	args[0] = CStringGetTextDatum(name);
	args[1] = ObjectIdGetDatum(stream);
	args[2] = CStringGetTextDatum(brokers);
	args[3] = CStringGetTextDatum(topic);
	args[4] = CStringGetTextDatum(sink_format_names[fmt]);
	if (key_column)
		args[5] = CStringGetTextDatum(key_column);
	else
		nulls[5] = 'n';
	args[6] = options ? JsonbPGetDatum(options) : DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	args[7] = ObjectIdGetDatum(GetUserId());
	sink_catalog_exec("INSERT INTO stream_ext.kafka_sinks "
					  "(name, stream, brokers, topic, format, key_column, options, owner) "
					  "VALUES ($1, $2::regclass, $3, $4, $5, $6, $7, $8::regrole) RETURNING id",
					  8, argtypes, args, nulls, false, SPI_OK_INSERT_RETURNING);
	id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/* the queue trigger, created as the stream's owner (as for views) */
	qualname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(stream)),
										  get_rel_name(stream));
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(relation_owner(stream), save_sec | SECURITY_LOCAL_USERID_CHANGE);
	ret = SPI_execute(psprintf("CREATE TRIGGER stream_ext_sink_%d AFTER INSERT ON %s"
							   " REFERENCING NEW TABLE AS " SINK_NEW_TABLE
							   " FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.sink_enqueue('%d')",
							   id, qualname, id),
					  false, 0);
	SetUserIdAndSecContext(save_userid, save_sec);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not create the queue trigger of Kafka sink \"%s\": %s",
			 name, SPI_result_code_string(ret));
	SPI_finish();

	PG_RETURN_VOID();
}

/* register a sink's dynamic worker */
static bool
launch_sink_worker(const KafkaSinkWorkerArgs *args, bool error_on_failure)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "stream_ext");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "stream_ext_kafka_sink_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "stream_ext kafka sink %d", args->sink_id);
	snprintf(worker.bgw_type, BGW_MAXLEN, "stream_ext kafka sink");
	memcpy(worker.bgw_extra, args, sizeof(KafkaSinkWorkerArgs));
	worker.bgw_notify_pid = 0;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(error_on_failure ? ERROR : WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start the worker of Kafka sink %d: no free background worker slot",
						args->sink_id),
				 errhint("Raise max_worker_processes.")));
		return false;
	}
	return true;
}

/* is a live worker holding the slot of this sink? */
static bool
sink_slot_is_live(Oid dboid, Oid catalog_relid, int32 sink_id)
{
	bool		live = false;
	int			i;

	if (kafka_sink_shared == NULL)
		return false;
	LWLockAcquire(kafka_sink_shared->lock, LW_SHARED);
	for (i = 0; i < kafka_sink_shared->nslots; i++)
	{
		KafkaSinkSlot *slot = &kafka_sink_shared->slots[i];

		if (slot->in_use && slot->dboid == dboid &&
			slot->catalog_relid == catalog_relid && slot->sink_id == sink_id)
		{
			live = true;
			break;
		}
	}
	LWLockRelease(kafka_sink_shared->lock);
	return live;
}

/*
 * start_sink(name): mark running and launch the worker, which waits for
 * this transaction to end and exits at once if it rolled back.
 */
Datum
stream_ext_start_sink(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	SinkRow		row;
	KafkaSinkOptions opts;
	HeapTuple	roletup;
	bool		canlogin;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	KafkaSinkWorkerArgs wargs;

	if (kafka_sink_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("Kafka sinks need stream_ext in shared_preload_libraries"),
				 errhint("Add stream_ext to shared_preload_libraries in postgresql.conf and restart the server.")));

	SPI_connect();
	fetch_sink(name, &row, false);
	check_sink_owner(&row);
	kafka_sink_parse_options(row.options, &opts);

	roletup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(row.owner));
	if (!HeapTupleIsValid(roletup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("owner of Kafka sink \"%s\" no longer exists", name)));
	canlogin = ((Form_pg_authid) GETSTRUCT(roletup))->rolcanlogin;
	ReleaseSysCache(roletup);
	if (!canlogin)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("owner \"%s\" of Kafka sink \"%s\" cannot log in",
						GetUserNameFromId(row.owner, false), name),
				 errdetail("Sink workers connect as the sink's owner."),
				 errhint("ALTER ROLE %s LOGIN", quote_identifier(GetUserNameFromId(row.owner, false)))));
	/* a dropped stream adds nothing, but what it queued is still delivered */
	if (get_rel_name(row.stream) != NULL &&
		pg_class_aclcheck(row.stream, row.owner, ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("owner of Kafka sink \"%s\" has no SELECT privilege on \"%s\"",
						name, get_rel_name(row.stream))));

	args[0] = Int32GetDatum(row.id);
	sink_catalog_exec("UPDATE stream_ext.kafka_sinks "
					  "SET state = 'running', last_error = NULL, updated_at = now() "
					  "WHERE id = $1",
					  1, argtypes, args, NULL, false, SPI_OK_UPDATE);
	SPI_finish();

	if (!sink_slot_is_live(MyDatabaseId, kafka_sink_catalog_relid(false), row.id))
	{
		memset(&wargs, 0, sizeof(wargs));
		wargs.dboid = MyDatabaseId;
		wargs.catalog_relid = kafka_sink_catalog_relid(false);
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
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	SinkRow		row;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	SPI_connect();
	fetch_sink(name, &row, false);
	check_sink_owner(&row);
	args[0] = Int32GetDatum(row.id);
	sink_catalog_exec("UPDATE stream_ext.kafka_sinks "
					  "SET state = 'stopped', updated_at = now() WHERE id = $1",
					  1, argtypes, args, NULL, false, SPI_OK_UPDATE);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * drop_sink(name, if_exists): drop the queue trigger, the undelivered rows
 * and the sink.  A running worker exits when it sees the sink gone.
 */
Datum
stream_ext_drop_sink(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		if_exists = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);
	SinkRow		row;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("sink name must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	SPI_connect();
	if (!fetch_sink(name, &row, if_exists))
	{
		ereport(NOTICE,
				(errmsg("Kafka sink \"%s\" does not exist, skipping", name)));
		SPI_finish();
		PG_RETURN_VOID();
	}
	check_sink_owner(&row);

	if (get_rel_name(row.stream) != NULL)
	{
		char	   *qualname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(row.stream)),
														  get_rel_name(row.stream));
		Oid			save_userid;
		int			save_sec;
		int			ret;

		GetUserIdAndSecContext(&save_userid, &save_sec);
		SetUserIdAndSecContext(relation_owner(row.stream), save_sec | SECURITY_LOCAL_USERID_CHANGE);
		ret = SPI_execute(psprintf("DROP TRIGGER IF EXISTS stream_ext_sink_%d ON %s",
								   row.id, qualname), false, 0);
		SetUserIdAndSecContext(save_userid, save_sec);
		if (ret != SPI_OK_UTILITY)
			elog(ERROR, "could not drop the queue trigger of Kafka sink \"%s\"", name);
	}

	args[0] = Int32GetDatum(row.id);
	sink_catalog_exec("DELETE FROM stream_ext.sink_queue WHERE sink = $1",
					  1, argtypes, args, NULL, false, SPI_OK_DELETE);
	sink_catalog_exec("DELETE FROM stream_ext.kafka_sinks WHERE id = $1",
					  1, argtypes, args, NULL, false, SPI_OK_DELETE);
	SPI_finish();
	PG_RETURN_VOID();
}

/* ----------------------------------------------------------------
 * The queue trigger
 * ----------------------------------------------------------------
 */

/*
 * stream_ext.sink_enqueue(sink_id) — statement-level AFTER INSERT trigger
 * on a sink's stream, REFERENCING NEW TABLE AS stream_ext_sink_new.
 */
Datum
stream_ext_sink_enqueue(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	int32		sink_id;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Oid			owner;
	int			format;
	char	   *key_column;
	Datum		optdatum;
	KafkaSinkOptions opts;
	List	   *cols;
	char	   *sql;
	OwnerContext octx;
	Tuplestorestate *ts;
	EphemeralNamedRelation enr;
	SPIPlanPtr	plan;
	Portal		portal;
	TupleDesc	rowdesc = NULL;
	uint64		i;
	uint64		nrows;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		trigdata->tg_newtable == NULL ||
		trigdata->tg_trigger->tgnargs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("stream_ext.sink_enqueue() must be an AFTER INSERT FOR EACH STATEMENT trigger with a NEW TABLE and a sink id")));

	if (tuplestore_tuple_count(trigdata->tg_newtable) == 0)
		return PointerGetDatum(NULL);
	sink_id = pg_strtoint32(trigdata->tg_trigger->tgargs[0]);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	args[0] = Int32GetDatum(sink_id);
	sink_catalog_exec("SELECT owner::oid, format, key_column, options, name "
					  "FROM stream_ext.kafka_sinks WHERE id = $1",
					  1, argtypes, args, NULL, true, SPI_OK_SELECT);
	if (SPI_processed != 1)
	{
		/* the sink is gone (its trigger outlived it): nothing to queue */
		SPI_finish();
		return PointerGetDatum(NULL);
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	owner = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
	format = sink_parse_format(SPI_getvalue(tup, desc, 2));
	key_column = SPI_getvalue(tup, desc, 3);
	optdatum = SPI_getbinval(tup, desc, 4, &isnull);
	kafka_sink_parse_options(DatumGetJsonbP(optdatum), &opts);
	cols = payload_columns(trigdata->tg_relation, opts.columns);

	if (pg_class_aclcheck(RelationGetRelid(trigdata->tg_relation), owner, ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("owner of Kafka sink \"%s\" has no SELECT privilege on \"%s\"",
						SPI_getvalue(tup, desc, 5), RelationGetRelationName(trigdata->tg_relation)),
				 errdetail("Every row appended to the stream is queued for the sink as its owner."),
				 errhint("Grant SELECT back, or drop the sink with stream_ext.drop_sink().")));

	if (SPI_register_trigger_data(trigdata) != SPI_OK_TD_REGISTER)
		elog(ERROR, "SPI_register_trigger_data failed");

	/*
	 * Key and payload of every row: one SELECT, as the owner, restricted.
	 * It is read through a cursor into a tuplestore, which spills to disk
	 * beyond work_mem, so a large COPY does not hold its rows in memory.
	 */
	sql = build_payload_sql(format, key_column, cols, trigdata->tg_trigger->tgnewtable);
	ts = tuplestore_begin_heap(false, false, work_mem);
	owner_context_enter(&octx, owner, "UTC");
	owner_context_pin("DateStyle", "ISO, YMD");
	owner_context_pin("IntervalStyle", "postgres");
	owner_context_pin("extra_float_digits", "1");
	plan = SPI_prepare(sql, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	nrows = 0;
	for (;;)
	{
		SPI_cursor_fetch(portal, true, SINK_FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		if (rowdesc == NULL)
			rowdesc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
		for (i = 0; i < SPI_processed; i++)
			tuplestore_puttuple(ts, SPI_tuptable->vals[i]);
		nrows += SPI_processed;
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_freeplan(plan);
	owner_context_leave(&octx);
	if (nrows == 0)
	{
		tuplestore_end(ts);
		SPI_finish();
		return PointerGetDatum(NULL);
	}

	/* ... appended to the queue with one INSERT, as the catalog owner */
	enr = palloc0(sizeof(EphemeralNamedRelationData));
	enr->md.name = SINK_ROWS_ENR;
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = rowdesc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = nrows;
	enr->reldata = ts;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "SPI_register_relation failed");
	sink_catalog_exec("INSERT INTO stream_ext.sink_queue (sink, key, payload) "
					  "SELECT $1, key, payload FROM " SINK_ROWS_ENR,
					  1, argtypes, args, NULL, false, SPI_OK_INSERT);
	SPI_unregister_relation(SINK_ROWS_ENR);
	tuplestore_end(ts);
	SPI_finish();
	return PointerGetDatum(NULL);
}

/* ----------------------------------------------------------------
 * Live statistics and launch
 * ----------------------------------------------------------------
 */

static const char *
sink_state_name(KafkaSinkState s)
{
	switch (s)
	{
		case KSS_STARTING:
			return "starting";
		case KSS_RUNNING:
			return "running";
		case KSS_RETRYING:
			return "retrying";
		default:
			return "stopped";
	}
}

Datum
stream_ext_kafka_sink_worker_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KafkaSinkSlot *slots;
	int			nslots;
	int			i;
	Oid			relid = kafka_sink_catalog_relid(true);

	InitMaterializedSRF(fcinfo, 0);
	if (kafka_sink_shared == NULL)
		PG_RETURN_VOID();
	nslots = kafka_sink_shared->nslots;
	slots = palloc(sizeof(KafkaSinkSlot) * nslots);
	LWLockAcquire(kafka_sink_shared->lock, LW_SHARED);
	memcpy(slots, kafka_sink_shared->slots, sizeof(KafkaSinkSlot) * nslots);
	LWLockRelease(kafka_sink_shared->lock);

	for (i = 0; i < nslots; i++)
	{
		KafkaSinkSlot *slot = &slots[i];
		Datum		values[10];
		bool		nulls[10];

		if (!slot->in_use || slot->dboid != MyDatabaseId || slot->catalog_relid != relid ||
			!(superuser() || has_privs_of_role(GetUserId(), slot->owner)))
			continue;
		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(slot->sink_id);
		values[1] = Int32GetDatum(slot->pid);
		values[2] = CStringGetTextDatum(sink_state_name(slot->state));
		values[3] = Int64GetDatum((int64) slot->rows);
		values[4] = Int64GetDatum((int64) slot->batches);
		values[5] = Int64GetDatum((int64) slot->errors);
		if (slot->last_error[0])
			values[6] = CStringGetTextDatum(slot->last_error);
		else
			nulls[6] = true;
		values[7] = TimestampTzGetDatum(slot->last_error_time);
		nulls[7] = slot->last_error_time == 0;
		values[8] = TimestampTzGetDatum(slot->last_batch_time);
		nulls[8] = slot->last_batch_time == 0;
		values[9] = TimestampTzGetDatum(slot->started_at);
		nulls[9] = slot->started_at == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}

/*
 * Called by the launcher's scanner (connected to dboid, no transaction):
 * start the worker of every running sink that has none.
 */
void
kafka_sink_launch_running(Oid dboid)
{
	List	   *todo = NIL;
	ListCell   *lc;
	MemoryContext outer = CurrentMemoryContext;

	if (kafka_sink_shared == NULL)
		return;
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("stream_ext", true)) &&
		OidIsValid(kafka_sink_catalog_relid(true)))
	{
		uint64		i;

		SPI_connect();
		if (SPI_execute("SELECT id, owner::oid FROM stream_ext.kafka_sinks "
						"WHERE state = 'running' ORDER BY id", true, 0) != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute failed");
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			bool		isnull;
			MemoryContext old = MemoryContextSwitchTo(outer);
			KafkaSinkWorkerArgs *wargs = palloc0(sizeof(KafkaSinkWorkerArgs));

			wargs->dboid = dboid;
			wargs->catalog_relid = kafka_sink_catalog_relid(false);
			wargs->sink_id = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
			wargs->owner = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
			wargs->wait_xid = InvalidTransactionId;
			todo = lappend(todo, wargs);
			MemoryContextSwitchTo(old);
		}
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	foreach(lc, todo)
	{
		KafkaSinkWorkerArgs *wargs = lfirst(lc);

		if (sink_slot_is_live(wargs->dboid, wargs->catalog_relid, wargs->sink_id))
			continue;
		ereport(LOG,
				(errmsg("stream_ext: starting the worker of Kafka sink %d", wargs->sink_id)));
		launch_sink_worker(wargs, false);
	}
}
