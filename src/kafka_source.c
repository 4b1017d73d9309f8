/*-------------------------------------------------------------------------
 *
 * kafka_source.c
 *	  SQL interface of Kafka ingest: create_kafka_source, start_source,
 *	  stop_source, drop_source, the live-statistics functions behind the
 *	  source_status view, and parsing/validation of a source's options.
 *
 * The catalog tables (stream_ext.kafka_sources, kafka_offsets,
 * dead_letters) are owned by the extension owner and read by others only
 * through row-level security; these functions check the caller's rights
 * themselves and then write the catalog as the catalog's owner
 * (SECURITY_LOCAL_USERID_CHANGE), so nothing else can forge a source.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "formats.h"
#include "kafka.h"
#include "stream_ext.h"

PG_FUNCTION_INFO_V1(stream_ext_create_kafka_source);
PG_FUNCTION_INFO_V1(stream_ext_start_source);
PG_FUNCTION_INFO_V1(stream_ext_stop_source);
PG_FUNCTION_INFO_V1(stream_ext_drop_source);
PG_FUNCTION_INFO_V1(stream_ext_kafka_worker_stats);
PG_FUNCTION_INFO_V1(stream_ext_kafka_partition_stats);

#define OPTION_KEYS_HINT \
	"Known options: start, start_offset, start_timestamp, batch_size, " \
	"max_wait_ms, workers, on_error, max_message_bytes, columns, paths, " \
	"column, key_column, partition_column, offset_column, timestamp_column, " \
	"csv_delimiter, csv_quote, csv_escape, csv_null, kafka; keys containing " \
	"a dot are librdkafka properties."

/* ----------------------------------------------------------------
 * Options
 * ----------------------------------------------------------------
 */

KafkaFormat
kafka_parse_format(const char *format)
{
	if (format == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("format must not be null")));
	if (pg_strcasecmp(format, "json") == 0)
		return KAFKA_FORMAT_JSON;
	if (pg_strcasecmp(format, "csv") == 0)
		return KAFKA_FORMAT_CSV;
	if (pg_strcasecmp(format, "text") == 0)
		return KAFKA_FORMAT_TEXT;
	if (pg_strcasecmp(format, "bytea") == 0)
		return KAFKA_FORMAT_BYTEA;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown Kafka message format \"%s\"", format),
			 errhint("Valid formats are \"json\", \"csv\", \"text\" and \"bytea\".")));
	return KAFKA_FORMAT_JSON;	/* keep compiler quiet */
}

/* the text of a scalar JSON value (for librdkafka properties) */
static char *
scalar_text(JsonbValue *v, const char *key)
{
	if (v->type != jbvString && v->type != jbvNumeric && v->type != jbvBool)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a string, number or boolean", key)));
	return jsonb_value_text(v);
}

static char *
opt_string(JsonbValue *v, const char *key)
{
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a string", key)));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static int64
opt_int(JsonbValue *v, const char *key, int64 min, int64 max)
{
	char	   *s;
	char	   *end;
	int64		val;

	if (v->type == jbvNumeric)
		s = DatumGetCString(DirectFunctionCall1(numeric_out,
												NumericGetDatum(v->val.numeric)));
	else if (v->type == jbvString)
		s = pnstrdup(v->val.string.val, v->val.string.len);
	else
		s = NULL;
	if (s != NULL)
	{
		errno = 0;
		val = strtoll(s, &end, 10);
		if (errno == 0 && end != s && *end == '\0' && val >= min && val <= max)
			return val;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("option \"%s\" must be an integer between " INT64_FORMAT " and " INT64_FORMAT,
					key, min, max)));
	return 0;
}

static char
opt_char(JsonbValue *v, const char *key)
{
	char	   *s = opt_string(v, key);

	if (strlen(s) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a single one-byte character", key)));
	return s[0];
}

/* split "a.b.c" or ["a","b","c"] into a List of names */
static List *
opt_path(JsonbValue *v, const char *col)
{
	List	   *path = NIL;

	if (v->type == jbvString)
	{
		char	   *s = pnstrdup(v->val.string.val, v->val.string.len);
		char	   *tok;
		char	   *save;

		for (tok = strtok_r(s, ".", &save); tok; tok = strtok_r(NULL, ".", &save))
			path = lappend(path, tok);
	}
	else if (v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
	{
		JsonbIterator *it = JsonbIteratorInit(v->val.binary.data);
		JsonbValue	e;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			path = lappend(path, opt_string(&e, "paths"));
		}
	}
	if (path == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("path of column \"%s\" in option \"paths\" must be a non-empty string \"a.b.c\" or array of keys",
						col)));
	return path;
}

static void
add_kafka_property(KafkaOptions *opts, const char *key, JsonbValue *v)
{
	opts->kafka_keys = lappend(opts->kafka_keys, pstrdup(key));
	opts->kafka_values = lappend(opts->kafka_values, scalar_text(v, key));
}

/*
 * Parse and validate a source's options (NULL means none).  Allocates in
 * CurrentMemoryContext; ereports on anything unknown or malformed.
 */
void
kafka_parse_options(Jsonb *options, KafkaOptions *opts)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;
	bool		have_start = false;
	bool		have_escape = false;

	memset(opts, 0, sizeof(*opts));
	opts->start = KAFKA_START_EARLIEST;
	opts->batch_size = 10000;
	opts->max_wait_ms = 50;
	opts->workers = 1;
	opts->on_error = KAFKA_ON_ERROR_DEAD_LETTER;
	opts->max_message_bytes = 1024 * 1024;
	opts->csv_delimiter = ',';
	opts->csv_quote = '"';
	opts->csv_null = "";

	if (options == NULL)
		goto done;
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

		if (strcmp(key, "start") == 0)
		{
			char	   *s = opt_string(&v, key);

			have_start = true;
			if (strcmp(s, "earliest") == 0)
				opts->start = KAFKA_START_EARLIEST;
			else if (strcmp(s, "latest") == 0)
				opts->start = KAFKA_START_LATEST;
			else if (strcmp(s, "offset") == 0)
				opts->start = KAFKA_START_OFFSET;
			else if (strcmp(s, "timestamp") == 0)
				opts->start = KAFKA_START_TIMESTAMP;
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for option \"start\": \"%s\"", s),
						 errhint("Valid values are \"earliest\", \"latest\", \"offset\" and \"timestamp\".")));
		}
		else if (strcmp(key, "start_offset") == 0)
		{
			opts->start_offset = opt_int(&v, key, 0, PG_INT64_MAX);
			if (!have_start)
				opts->start = KAFKA_START_OFFSET;
		}
		else if (strcmp(key, "start_timestamp") == 0)
		{
			if (v.type == jbvNumeric)
				opts->start_timestamp_ms = opt_int(&v, key, 0, PG_INT64_MAX);
			else
			{
				char	   *s = opt_string(&v, key);
				TimestampTz ts;

				ts = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
															 CStringGetDatum(s),
															 ObjectIdGetDatum(InvalidOid),
															 Int32GetDatum(-1)));
				opts->start_timestamp_ms =
					(ts + ((TimestampTz) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)) / 1000;
			}
			if (!have_start)
				opts->start = KAFKA_START_TIMESTAMP;
		}
		else if (strcmp(key, "batch_size") == 0)
			opts->batch_size = (int) opt_int(&v, key, 1, 1000000);
		else if (strcmp(key, "max_wait_ms") == 0)
			opts->max_wait_ms = (int) opt_int(&v, key, 1, 60000);
		else if (strcmp(key, "workers") == 0)
			opts->workers = (int) opt_int(&v, key, 1, KAFKA_MAX_WORKERS_PER_SOURCE);
		else if (strcmp(key, "max_message_bytes") == 0)
			opts->max_message_bytes = (int) opt_int(&v, key, 1, MaxAllocSize - 1);
		else if (strcmp(key, "on_error") == 0)
		{
			char	   *s = opt_string(&v, key);

			if (strcmp(s, "dead_letter") == 0)
				opts->on_error = KAFKA_ON_ERROR_DEAD_LETTER;
			else if (strcmp(s, "skip") == 0)
				opts->on_error = KAFKA_ON_ERROR_SKIP;
			else if (strcmp(s, "stop") == 0)
				opts->on_error = KAFKA_ON_ERROR_STOP;
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for option \"on_error\": \"%s\"", s),
						 errhint("Valid values are \"dead_letter\", \"skip\" and \"stop\".")));
		}
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
					opts->columns = lappend(opts->columns, opt_string(&e, key));
		}
		else if (strcmp(key, "paths") == 0)
		{
			JsonbIterator *it2;
			JsonbValue	e;
			JsonbIteratorToken t2;
			char	   *col = NULL;

			if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"paths\" must be an object mapping column names to paths")));
			it2 = JsonbIteratorInit(v.val.binary.data);
			while ((t2 = JsonbIteratorNext(&it2, &e, true)) != WJB_DONE)
			{
				if (t2 == WJB_KEY)
					col = pnstrdup(e.val.string.val, e.val.string.len);
				else if (t2 == WJB_VALUE)
				{
					opts->path_columns = lappend(opts->path_columns, col);
					opts->paths = lappend(opts->paths, opt_path(&e, col));
				}
			}
		}
		else if (strcmp(key, "column") == 0)
			opts->column = opt_string(&v, key);
		else if (strcmp(key, "key_column") == 0)
			opts->key_column = opt_string(&v, key);
		else if (strcmp(key, "partition_column") == 0)
			opts->partition_column = opt_string(&v, key);
		else if (strcmp(key, "offset_column") == 0)
			opts->offset_column = opt_string(&v, key);
		else if (strcmp(key, "timestamp_column") == 0)
			opts->timestamp_column = opt_string(&v, key);
		else if (strcmp(key, "csv_delimiter") == 0)
			opts->csv_delimiter = opt_char(&v, key);
		else if (strcmp(key, "csv_quote") == 0)
			opts->csv_quote = opt_char(&v, key);
		else if (strcmp(key, "csv_escape") == 0)
		{
			opts->csv_escape = opt_char(&v, key);
			have_escape = true;
		}
		else if (strcmp(key, "csv_null") == 0)
			opts->csv_null = opt_string(&v, key);
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
					add_kafka_property(opts, prop, &e);
			}
		}
		else if (strchr(key, '.') != NULL)
			add_kafka_property(opts, key, &v);
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown Kafka source option \"%s\"", key),
					 errhint(OPTION_KEYS_HINT)));
	}

done:
	if (!have_escape)
		opts->csv_escape = opts->csv_quote;
	if (opts->csv_delimiter == opts->csv_quote)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("CSV delimiter and quote must be different")));
	if (strchr(opts->csv_null, opts->csv_delimiter) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("CSV null string must not contain the delimiter")));
}

/*
 * librdkafka consumer configuration of a source: user properties first,
 * then the ones stream_ext relies on.  ereports on an invalid property.
 */
rd_kafka_conf_t *
kafka_build_conf(const char *brokers, const KafkaOptions *opts,
				 const char *group_id)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errstr[512];
	ListCell   *lk,
			   *lv;
	bool		have_reset = false;
	bool		have_group = false;
	bool		have_fetch_wait = false;
	bool		have_queue_kb = false;

#define CONF_SET(k, v) \
	do { \
		if (rd_kafka_conf_set(conf, (k), (v), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) \
		{ \
			rd_kafka_conf_destroy(conf); \
			ereport(ERROR, \
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE), \
					 errmsg("invalid librdkafka property \"%s\": %s", (k), errstr))); \
		} \
	} while (0)

	CONF_SET("bootstrap.servers", brokers);
	CONF_SET("client.id", "stream_ext");
	forboth(lk, opts->kafka_keys, lv, opts->kafka_values)
	{
		const char *k = lfirst(lk);

		if (strcmp(k, "enable.auto.commit") == 0 ||
			strcmp(k, "enable.auto.offset.store") == 0 ||
			strcmp(k, "enable.partition.eof") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("librdkafka property \"%s\" is managed by stream_ext", k),
					 errdetail("Offsets are stored in stream_ext.kafka_offsets, in the transaction of each batch.")));
		if (strcmp(k, "auto.offset.reset") == 0)
			have_reset = true;
		if (strcmp(k, "group.id") == 0)
			have_group = true;
		if (strcmp(k, "fetch.wait.max.ms") == 0)
			have_fetch_wait = true;
		if (strcmp(k, "queued.max.messages.kbytes") == 0)
			have_queue_kb = true;
		CONF_SET(k, (const char *) lfirst(lv));
	}
	if (!have_reset)
		CONF_SET("auto.offset.reset", "earliest");
	if (!have_group && group_id)
		CONF_SET("group.id", group_id);
	if (!have_fetch_wait)
	{
		/* the broker holds an empty fetch no longer than a batch may wait */
		char		buf[32];

		snprintf(buf, sizeof(buf), "%d", opts->max_wait_ms);
		CONF_SET("fetch.wait.max.ms", buf);
	}
	if (!have_queue_kb)
		CONF_SET("queued.max.messages.kbytes", "16384");	/* prefetch, bounds RSS */
	CONF_SET("enable.auto.commit", "false");
	CONF_SET("enable.auto.offset.store", "false");
	CONF_SET("enable.partition.eof", "false");
#undef CONF_SET
	return conf;
}

/* ----------------------------------------------------------------
 * Catalog helpers
 * ----------------------------------------------------------------
 */

/* OID of stream_ext.kafka_sources */
Oid
kafka_catalog_relid(bool missing_ok)
{
	Oid			nsp = get_namespace_oid("stream_ext", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("kafka_sources", nsp) : InvalidOid;

	if (!OidIsValid(relid) && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("stream_ext.kafka_sources does not exist"),
				 errhint("Is the extension stream_ext installed in this database?")));
	return relid;
}

/* owner of stream_ext.kafka_sources: the role the catalog is written as */
Oid
kafka_catalog_owner(void)
{
	Oid			relid = kafka_catalog_relid(false);
	HeapTuple	tup;
	Oid			owner;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

typedef struct SourceRow
{
	int32		id;
	char	   *name;
	Oid			stream;
	char	   *format;
	Oid			owner;
	char	   *state;
	Jsonb	   *options;
} SourceRow;

/*
 * Fetch and lock a source row (as the catalog owner; SPI connected).
 * Returns false if missing and missing_ok.
 */
static bool
fetch_source(const char *name, SourceRow *row, bool missing_ok)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int			ret;
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;
	Oid			save_userid;
	int			save_sec;

	args[0] = CStringGetTextDatum(name);
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(kafka_catalog_owner(), save_sec | SECURITY_LOCAL_USERID_CHANGE);
	ret = SPI_execute_with_args("SELECT id, name, stream::oid, format, owner::oid, state, options "
								"FROM stream_ext.kafka_sources WHERE name = $1 FOR UPDATE",
								1, argtypes, args, NULL, false, 1);
	SetUserIdAndSecContext(save_userid, save_sec);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
	{
		if (missing_ok)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("Kafka source \"%s\" does not exist", name),
				 errhint("See stream_ext.kafka_sources for the existing sources.")));
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	row->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	row->name = SPI_getvalue(tup, desc, 2);
	row->stream = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	row->format = SPI_getvalue(tup, desc, 4);
	row->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
	row->state = SPI_getvalue(tup, desc, 6);
	row->options = DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 7, &isnull));
	return true;
}

static void
check_source_owner(const SourceRow *row)
{
	if (!superuser() && !has_privs_of_role(GetUserId(), row->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of Kafka source \"%s\"", row->name),
				 errhint("Only the owner of a source or a superuser can start, stop or drop it.")));
}

/* run a catalog-changing statement as the catalog owner */
static void
catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *args,
			 const char *nulls, int expected)
{
	Oid			save_userid;
	int			save_sec;
	int			ret;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(kafka_catalog_owner(), save_sec | SECURITY_LOCAL_USERID_CHANGE);
	ret = SPI_execute_with_args(sql, nargs, argtypes, args, nulls, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec);
	if (ret != expected)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
}

static void
check_name(const char *name)
{
	const char *p;

	if (name == NULL || name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("Kafka source name must not be empty")));
	if (strlen(name) > KAFKA_NAME_MAXLEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("Kafka source name \"%s\" is too long", name),
				 errdetail("Names are limited to %d bytes.", KAFKA_NAME_MAXLEN)));
	for (p = name; *p; p++)
		if ((unsigned char) *p < 0x20)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("Kafka source name must not contain control characters")));
}

/* ----------------------------------------------------------------
 * SQL functions
 * ----------------------------------------------------------------
 */

/*
 * create_kafka_source(name, stream, brokers, topic, format, options)
 */
Datum
stream_ext_create_kafka_source(PG_FUNCTION_ARGS)
{
	char	   *name;
	Oid			stream;
	char	   *brokers;
	char	   *topic;
	char	   *format;
	Jsonb	   *options;
	KafkaOptions opts;
	KafkaFormat fmt;
	AclResult	aclresult;
	char		relkind;
	rd_kafka_conf_t *conf;
	SourceRow	existing;
	Oid			argtypes[7] = {TEXTOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, OIDOID};
	Datum		args[7];

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name, stream, brokers and topic must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	stream = PG_GETARG_OID(1);
	brokers = text_to_cstring(PG_GETARG_TEXT_PP(2));
	topic = text_to_cstring(PG_GETARG_TEXT_PP(3));
	format = PG_ARGISNULL(4) ? "json" : text_to_cstring(PG_GETARG_TEXT_PP(4));
	options = PG_ARGISNULL(5) ? NULL : PG_GETARG_JSONB_P(5);

	check_name(name);
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
	aclresult = pg_class_aclcheck(stream, GetUserId(), ACL_INSERT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(stream));

	fmt = kafka_parse_format(format);
	kafka_parse_options(options, &opts);
	/* validates the column mapping against the stream */
	(void) kafka_decoder_create(stream, fmt, &opts);
	/* validates the librdkafka properties */
	conf = kafka_build_conf(brokers, &opts, "stream_ext");
	rd_kafka_conf_destroy(conf);

	SPI_connect();
	if (fetch_source(name, &existing, true))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("Kafka source \"%s\" already exists", name)));

	args[0] = CStringGetTextDatum(name);
	args[1] = ObjectIdGetDatum(stream);
	args[2] = CStringGetTextDatum(brokers);
	args[3] = CStringGetTextDatum(topic);
	args[4] = CStringGetTextDatum(fmt == KAFKA_FORMAT_JSON ? "json" :
								  fmt == KAFKA_FORMAT_CSV ? "csv" :
								  fmt == KAFKA_FORMAT_TEXT ? "text" : "bytea");
	args[5] = options ? JsonbPGetDatum(options) : DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	args[6] = ObjectIdGetDatum(GetUserId());
	catalog_exec("INSERT INTO stream_ext.kafka_sources "
				 "(name, stream, brokers, topic, format, options, owner) "
				 "VALUES ($1, $2::regclass, $3, $4, $5, $6, $7::regrole)",
				 7, argtypes, args, NULL, SPI_OK_INSERT);
	SPI_finish();

	PG_RETURN_VOID();
}

/*
 * start_source(name): mark running and launch its workers.  The workers
 * wait for this transaction to end and exit at once if it rolled back.
 */
Datum
stream_ext_start_source(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	SourceRow	row;
	KafkaOptions opts;
	HeapTuple	roletup;
	bool		canlogin;
	AclResult	aclresult;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	int			i;

	if (kafka_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("Kafka sources need stream_ext in shared_preload_libraries"),
				 errhint("Add stream_ext to shared_preload_libraries in postgresql.conf and restart the server.")));

	SPI_connect();
	fetch_source(name, &row, false);
	check_source_owner(&row);
	kafka_parse_options(row.options, &opts);

	roletup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(row.owner));
	if (!HeapTupleIsValid(roletup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("owner of Kafka source \"%s\" no longer exists", name)));
	canlogin = ((Form_pg_authid) GETSTRUCT(roletup))->rolcanlogin;
	ReleaseSysCache(roletup);
	if (!canlogin)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("owner \"%s\" of Kafka source \"%s\" cannot log in",
						GetUserNameFromId(row.owner, false), name),
				 errdetail("Source workers connect as the source's owner."),
				 errhint("ALTER ROLE %s LOGIN", quote_identifier(GetUserNameFromId(row.owner, false)))));
	if (get_rel_name(row.stream) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("stream of Kafka source \"%s\" no longer exists", name)));
	aclresult = pg_class_aclcheck(row.stream, row.owner, ACL_INSERT);
	if (aclresult != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("owner of Kafka source \"%s\" has no INSERT privilege on \"%s\"",
						name, get_rel_name(row.stream))));

	args[0] = Int32GetDatum(row.id);
	catalog_exec("UPDATE stream_ext.kafka_sources "
				 "SET state = 'running', last_error = NULL, updated_at = now() "
				 "WHERE id = $1",
				 1, argtypes, args, NULL, SPI_OK_UPDATE);
	SPI_finish();

	for (i = 0; i < opts.workers; i++)
	{
		KafkaWorkerArgs wargs;

		if (kafka_slot_is_live(MyDatabaseId, kafka_catalog_relid(false), row.id, i))
			continue;
		memset(&wargs, 0, sizeof(wargs));
		wargs.dboid = MyDatabaseId;
		wargs.catalog_relid = kafka_catalog_relid(false);
		wargs.owner = row.owner;
		wargs.source_id = row.id;
		wargs.worker = i;
		wargs.nworkers = opts.workers;
		wargs.wait_xid = GetTopTransactionId();
		kafka_launch_worker(&wargs, true);
	}

	PG_RETURN_VOID();
}

/*
 * stop_source(name): mark stopped; the workers see it within about a
 * second (or at their next batch) and exit without storing anything more.
 */
Datum
stream_ext_stop_source(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	SourceRow	row;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	SPI_connect();
	fetch_source(name, &row, false);
	check_source_owner(&row);
	args[0] = Int32GetDatum(row.id);
	catalog_exec("UPDATE stream_ext.kafka_sources "
				 "SET state = 'stopped', updated_at = now() WHERE id = $1",
				 1, argtypes, args, NULL, SPI_OK_UPDATE);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * drop_source(name, if_exists): delete the source and its stored offsets
 * (dead letters are kept).  Running workers exit when they see it gone.
 */
Datum
stream_ext_drop_source(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		if_exists = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);
	SourceRow	row;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source name must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	SPI_connect();
	if (!fetch_source(name, &row, if_exists))
	{
		ereport(NOTICE,
				(errmsg("Kafka source \"%s\" does not exist, skipping", name)));
		SPI_finish();
		PG_RETURN_VOID();
	}
	check_source_owner(&row);
	args[0] = Int32GetDatum(row.id);
	catalog_exec("DELETE FROM stream_ext.kafka_sources WHERE id = $1",
				 1, argtypes, args, NULL, SPI_OK_DELETE);
	SPI_finish();
	PG_RETURN_VOID();
}

/* ----------------------------------------------------------------
 * Live statistics (shared memory)
 * ----------------------------------------------------------------
 */

static const char *
state_name(KafkaWorkerState s)
{
	switch (s)
	{
		case KWS_STARTING:
			return "starting";
		case KWS_RUNNING:
			return "running";
		case KWS_RETRYING:
			return "retrying";
		default:
			return "stopped";
	}
}

/* a palloc'd copy of the worker slots, taken under the lock */
static KafkaWorkerSlot *
snapshot_slots(int *nslots)
{
	KafkaWorkerSlot *copy;
	Size		sz;

	*nslots = 0;
	if (kafka_shared == NULL)
		return NULL;
	sz = sizeof(KafkaWorkerSlot) * kafka_shared->nslots;
	copy = palloc(sz);
	LWLockAcquire(kafka_shared->lock, LW_SHARED);
	memcpy(copy, kafka_shared->slots, sz);
	*nslots = kafka_shared->nslots;
	LWLockRelease(kafka_shared->lock);
	return copy;
}

static bool
slot_visible(KafkaWorkerSlot *slot)
{
	return slot->in_use && slot->dboid == MyDatabaseId &&
		slot->catalog_relid == kafka_catalog_relid(true) &&
		(superuser() || has_privs_of_role(GetUserId(), slot->owner));
}

Datum
stream_ext_kafka_worker_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	KafkaWorkerSlot *slots;
	int			nslots;

	InitMaterializedSRF(fcinfo, 0);
	slots = snapshot_slots(&nslots);
	for (i = 0; i < nslots; i++)
	{
		KafkaWorkerSlot *slot = &slots[i];
		Datum		values[14];
		bool		nulls[14];

		if (!slot_visible(slot))
			continue;
		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(slot->source_id);
		values[1] = Int32GetDatum(slot->worker);
		values[2] = Int32GetDatum(slot->pid);
		values[3] = CStringGetTextDatum(state_name(slot->state));
		values[4] = Int64GetDatum((int64) slot->messages);
		values[5] = Int64GetDatum((int64) slot->bytes);
		values[6] = Int64GetDatum((int64) slot->batches);
		values[7] = Int64GetDatum((int64) slot->errors);
		values[8] = Int64GetDatum((int64) slot->dead_letters);
		values[9] = Float8GetDatum(slot->rate);
		if (slot->last_error[0])
			values[10] = CStringGetTextDatum(slot->last_error);
		else
			nulls[10] = true;
		values[11] = TimestampTzGetDatum(slot->last_error_time);
		nulls[11] = slot->last_error_time == 0;
		values[12] = TimestampTzGetDatum(slot->last_batch_time);
		nulls[12] = slot->last_batch_time == 0;
		values[13] = TimestampTzGetDatum(slot->started_at);
		nulls[13] = slot->started_at == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}

Datum
stream_ext_kafka_partition_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i,
				j;

	KafkaWorkerSlot *slots;
	int			nslots;

	InitMaterializedSRF(fcinfo, 0);
	slots = snapshot_slots(&nslots);
	for (i = 0; i < nslots; i++)
	{
		KafkaWorkerSlot *slot = &slots[i];

		if (!slot_visible(slot))
			continue;
		for (j = 0; j < slot->npartitions; j++)
		{
			KafkaPartitionStat *ps = &slot->partitions[j];
			Datum		values[5];
			bool		nulls[5];

			memset(nulls, 0, sizeof(nulls));
			values[0] = Int32GetDatum(slot->source_id);
			values[1] = Int32GetDatum(slot->worker);
			values[2] = Int32GetDatum(ps->partition);
			values[3] = Int64GetDatum(ps->next_offset);
			nulls[3] = ps->next_offset < 0;
			values[4] = Int64GetDatum(ps->high_watermark);
			nulls[4] = ps->high_watermark < 0;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	PG_RETURN_VOID();
}
