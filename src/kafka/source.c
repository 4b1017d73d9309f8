/*-------------------------------------------------------------------------
 *
 * source.c
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
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "core/util.h"
#include "kafka/decode.h"
#include "kafka/registry.h"
#include "kafka/source.h"

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
	"csv_delimiter, csv_quote, csv_escape, csv_null, epoch_unit, schema, " \
	"reader_schema, schema_registry, registry_user, registry_password, " \
	"registry_timeout_ms, partitions, node, nodes, " \
	"start_offsets, kafka; keys containing " \
	"a dot are librdkafka properties."

KafkaSourceShared *kafka_source_shared = NULL;
int			kafka_max_source_workers = 16;

/* sources, as common.c tells them from sinks */
const KafkaKind kafka_source_kind = {
	.noun = "source",
	.table = "kafka_sources",
	.missing_hint = "Is the extension stream_ext installed in this database?",
	.login_detail = "Source workers connect as the source's owner.",
	.shared = (void **) &kafka_source_shared,
	.shmem_name = "stream_ext kafka",
	.tranche = "stream_ext_kafka",
	.max_slots = &kafka_max_source_workers,
	.max_slots_default = 16,
	.max_slots_desc = "Maximum number of Kafka source workers (all databases).",
	.max_slots_long_desc = "Each worker takes a background worker slot too: raise max_worker_processes accordingly.",
	.header_size = offsetof(KafkaSourceShared, slots),
	.slot_size = sizeof(KafkaSourceSlot),
	.slot_noun = "worker",
	.slot_guc = "stream_ext.kafka_max_workers",
};

/*
 * Called from _PG_init at preload: the GUC stream_ext.kafka_max_workers and
 * the table of worker slots in shared memory.
 */
void
kafka_source_init(void)
{
	kafka_slot_table_register(&kafka_source_kind);
	se_registry_init();
}

/* ----------------------------------------------------------------
 * Options
 * ----------------------------------------------------------------
 */

/* the names of KafkaFormat's values */
static const char *const kafka_format_names[] = {
	"json", "csv", "text", "bytea", "avro", "avro-confluent",
	"debezium-json", "debezium-avro"
};

KafkaFormat
kafka_parse_format(const char *format)
{
	int			i;

	if (format == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("format must not be null")));
	i = kafka_name_index(format, kafka_format_names, lengthof(kafka_format_names));
	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown Kafka message format \"%s\"", format),
				 errhint("Valid formats are \"json\", \"csv\", \"text\", \"bytea\", \"avro\", \"avro-confluent\", \"debezium-json\" and \"debezium-avro\".")));
	return (KafkaFormat) i;
}

static char
opt_char(JsonbValue *v, const char *key)
{
	char	   *s = kafka_opt_string(v, key);

	if (strlen(s) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a single one-byte character", key)));
	return s[0];
}

/* an Avro schema: a JSON object or array, or a string holding one */
static char *
opt_schema(JsonbValue *v, const char *key)
{
	if (v->type == jbvBinary)
		return JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
	if (v->type == jbvString)
		return pnstrdup(v->val.string.val, v->val.string.len);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("option \"%s\" must be an Avro schema: a JSON object, or a string holding one", key)));
	return NULL;
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
			path = lappend(path, kafka_opt_string(&e, "paths"));
		}
	}
	if (path == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("path of column \"%s\" in option \"paths\" must be a non-empty string \"a.b.c\" or array of keys",
						col)));
	return path;
}

/* ----------------------------------------------------------------
 * Partition shares: "partitions", "node"/"nodes", "start_offsets"
 * ----------------------------------------------------------------
 */

/* a partition number: digits only, 0 .. INT32_MAX */
static int32
share_partition_number(const char *s, const char *what, const char *item)
{
	char	   *end;
	long long	val;

	errno = 0;
	val = strtoll(s, &end, 10);
	if (*s < '0' || *s > '9' || errno != 0 || end == s || *end != '\0' ||
		val < 0 || val > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid partition \"%s\" in option \"%s\"", item, what),
				 errhint("Partitions are numbers from 0, e.g. \"partitions\": \"0-3,7\" or [0, 1, 2].")));
	return (int32) val;
}

/* add "N" or "N-M" to the ranges of option "partitions" */
static void
share_add_range(KafkaOptions *opts, const char *item)
{
	char	   *s = pstrdup(item);
	char	   *dash = strchr(s, '-');
	int32		lo,
				hi;

	if (dash)
		*dash = '\0';
	lo = share_partition_number(s, "partitions", item);
	hi = dash ? share_partition_number(dash + 1, "partitions", item) : lo;
	if (hi < lo)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid partition range \"%s\" in option \"partitions\"", item),
				 errdetail("The range ends before it starts.")));
	if (opts->nranges >= KAFKA_MAX_SHARE_ITEMS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"partitions\" has more than %d ranges", KAFKA_MAX_SHARE_ITEMS)));
	if (opts->range_lo == NULL)
	{
		opts->range_lo = palloc(sizeof(int32) * KAFKA_MAX_SHARE_ITEMS);
		opts->range_hi = palloc(sizeof(int32) * KAFKA_MAX_SHARE_ITEMS);
	}
	opts->range_lo[opts->nranges] = lo;
	opts->range_hi[opts->nranges] = hi;
	opts->nranges++;
}

/* "partitions": "0-3,7", a number, or an array of numbers and "N-M" strings */
static void
share_parse_partitions(KafkaOptions *opts, JsonbValue *v)
{
	if (v->type == jbvString)
	{
		char	   *s = pnstrdup(v->val.string.val, v->val.string.len);
		char	   *tok;
		char	   *save;

		for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		{
			while (*tok == ' ')
				tok++;
			while (*tok && tok[strlen(tok) - 1] == ' ')
				tok[strlen(tok) - 1] = '\0';
			share_add_range(opts, tok);
		}
	}
	else if (v->type == jbvNumeric)
		share_add_range(opts, psprintf(INT64_FORMAT,
									   kafka_opt_int(v, &kafka_source_kind, "partitions")));
	else if (v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
	{
		JsonbIterator *it = JsonbIteratorInit(v->val.binary.data);
		JsonbValue	e;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
			if (tok == WJB_ELEM)
			{
				if (e.type != jbvString && e.type != jbvNumeric)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("elements of option \"partitions\" must be numbers or \"N-M\" strings")));
				share_parse_partitions(opts, &e);
			}
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"partitions\" must be a string such as \"0-3,7\", a number or an array")));
	if (opts->nranges == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"partitions\" names no partition")));
}

/* "start_offsets": {"partition": offset, ...} */
static void
share_parse_start_offsets(KafkaOptions *opts, JsonbValue *v)
{
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;
	int32		part = 0;

	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"start_offsets\" must be an object {\"partition\": offset}")));
	opts->start_offset_partition = palloc(sizeof(int32) * KAFKA_MAX_SHARE_ITEMS);
	opts->start_offset_value = palloc(sizeof(int64) * KAFKA_MAX_SHARE_ITEMS);
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			char	   *k = pnstrdup(e.val.string.val, e.val.string.len);

			part = share_partition_number(k, "start_offsets", k);
		}
		else if (tok == WJB_VALUE)
		{
			if (opts->nstart_offsets >= KAFKA_MAX_SHARE_ITEMS)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"start_offsets\" has more than %d entries",
								KAFKA_MAX_SHARE_ITEMS)));
			opts->start_offset_partition[opts->nstart_offsets] = part;
			opts->start_offset_value[opts->nstart_offsets] =
				kafka_opt_int(&e, &kafka_source_kind, "start_offsets");
			opts->nstart_offsets++;
		}
	}
}

/*
 * Is partition of the topic in this source's share?  All partitions unless
 * "partitions" or "node"/"nodes" narrow it.
 */
bool
kafka_partition_in_share(const KafkaOptions *opts, int32 partition)
{
	int			i;

	if (opts->nodes > 0)
		return partition % opts->nodes == opts->node;
	if (opts->nranges == 0)
		return true;
	for (i = 0; i < opts->nranges; i++)
		if (partition >= opts->range_lo[i] && partition <= opts->range_hi[i])
			return true;
	return false;
}

/* the "start_offsets" entry of a partition, if any */
bool
kafka_share_start_offset(const KafkaOptions *opts, int32 partition, int64 *offset)
{
	int			i;

	for (i = 0; i < opts->nstart_offsets; i++)
		if (opts->start_offset_partition[i] == partition)
		{
			*offset = opts->start_offset_value[i];
			return true;
		}
	return false;
}

/* after all options: the share's options must agree with each other */
static void
share_validate(KafkaOptions *opts, bool have_node)
{
	int			i;

	if (opts->nranges > 0 && (have_node || opts->nodes > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options \"partitions\" and \"node\"/\"nodes\" cannot be combined"),
				 errhint("Give either an explicit list of partitions or this node's number among \"nodes\".")));
	if (have_node != (opts->nodes > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options \"node\" and \"nodes\" must be given together")));
	if (opts->nodes > 0 && opts->node >= opts->nodes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"node\" must be less than \"nodes\" (%d)", opts->nodes),
				 errdetail("Nodes are numbered from 0.")));
	for (i = 0; i < opts->nstart_offsets; i++)
	{
		int			j;

		if (!kafka_partition_in_share(opts, opts->start_offset_partition[i]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"start_offsets\" names partition %d, which is not in this source's share",
							opts->start_offset_partition[i])));
		for (j = 0; j < i; j++)
			if (opts->start_offset_partition[j] == opts->start_offset_partition[i])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"start_offsets\" names partition %d twice",
								opts->start_offset_partition[i])));
	}
}

/* kafka_parse_options() while it walks the options */
typedef struct SourceOptionsParse
{
	KafkaOptions *opts;
	bool		have_start;
	bool		have_escape;
	bool		have_node;
} SourceOptionsParse;

/* one option of a source (a KafkaOptionHandler) */
static void
source_option(const char *key, JsonbValue *v, void *arg)
{
	SourceOptionsParse *parse = (SourceOptionsParse *) arg;
	KafkaOptions *opts = parse->opts;

	if (strcmp(key, "start") == 0)
	{
		char	   *s = kafka_opt_string(v, key);

		parse->have_start = true;
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
		opts->start_offset = kafka_opt_int(v, &kafka_source_kind, key);
		if (!parse->have_start)
			opts->start = KAFKA_START_OFFSET;
	}
	else if (strcmp(key, "start_timestamp") == 0)
	{
		if (v->type == jbvNumeric)
			opts->start_timestamp_ms = kafka_opt_int(v, &kafka_source_kind, key);
		else
		{
			char	   *s = kafka_opt_string(v, key);
			TimestampTz ts;

			ts = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
														 CStringGetDatum(s),
														 ObjectIdGetDatum(InvalidOid),
														 Int32GetDatum(-1)));
			opts->start_timestamp_ms = se_timestamp_to_unix_ms(ts);
		}
		if (!parse->have_start)
			opts->start = KAFKA_START_TIMESTAMP;
	}
	else if (strcmp(key, "batch_size") == 0)
		opts->batch_size = (int) kafka_opt_int(v, &kafka_source_kind, key);
	else if (strcmp(key, "max_wait_ms") == 0)
		opts->max_wait_ms = (int) kafka_opt_int(v, &kafka_source_kind, key);
	else if (strcmp(key, "workers") == 0)
		opts->workers = (int) kafka_opt_int(v, &kafka_source_kind, key);
	else if (strcmp(key, "max_message_bytes") == 0)
		opts->max_message_bytes = (int) kafka_opt_int(v, &kafka_source_kind, key);
	else if (strcmp(key, "on_error") == 0)
	{
		char	   *s = kafka_opt_string(v, key);

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
		opts->columns = kafka_opt_names(v, key);
	else if (strcmp(key, "paths") == 0)
	{
		JsonbIterator *it;
		JsonbValue	e;
		JsonbIteratorToken tok;
		char	   *col = NULL;

		if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"paths\" must be an object mapping column names to paths")));
		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			if (tok == WJB_KEY)
				col = pnstrdup(e.val.string.val, e.val.string.len);
			else if (tok == WJB_VALUE)
			{
				opts->path_columns = lappend(opts->path_columns, col);
				opts->paths = lappend(opts->paths, opt_path(&e, col));
			}
		}
	}
	else if (strcmp(key, "column") == 0)
		opts->column = kafka_opt_string(v, key);
	else if (strcmp(key, "key_column") == 0)
		opts->key_column = kafka_opt_string(v, key);
	else if (strcmp(key, "partition_column") == 0)
		opts->partition_column = kafka_opt_string(v, key);
	else if (strcmp(key, "offset_column") == 0)
		opts->offset_column = kafka_opt_string(v, key);
	else if (strcmp(key, "timestamp_column") == 0)
		opts->timestamp_column = kafka_opt_string(v, key);
	else if (strcmp(key, "csv_delimiter") == 0)
		opts->csv_delimiter = opt_char(v, key);
	else if (strcmp(key, "csv_quote") == 0)
		opts->csv_quote = opt_char(v, key);
	else if (strcmp(key, "csv_escape") == 0)
	{
		opts->csv_escape = opt_char(v, key);
		parse->have_escape = true;
	}
	else if (strcmp(key, "csv_null") == 0)
		opts->csv_null = kafka_opt_string(v, key);
	else if (strcmp(key, "epoch_unit") == 0)
	{
		char	   *s = kafka_opt_string(v, key);

		if (strcmp(s, "s") == 0)
			opts->epoch_unit_usecs = USECS_PER_SEC;
		else if (strcmp(s, "ms") == 0)
			opts->epoch_unit_usecs = 1000;
		else if (strcmp(s, "us") == 0)
			opts->epoch_unit_usecs = 1;
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for option \"epoch_unit\": \"%s\"", s),
					 errhint("Valid values are \"s\", \"ms\" and \"us\".")));
	}
	else if (strcmp(key, "schema") == 0)
		opts->avro_schema = opt_schema(v, key);
	else if (strcmp(key, "reader_schema") == 0)
		opts->avro_reader_schema = opt_schema(v, key);
	else if (strcmp(key, "schema_registry") == 0)
		opts->registry_url = kafka_opt_string(v, key);
	else if (strcmp(key, "registry_user") == 0)
		opts->registry_user = kafka_opt_string(v, key);
	else if (strcmp(key, "registry_password") == 0)
		opts->registry_password = kafka_opt_string(v, key);
	else if (strcmp(key, "registry_timeout_ms") == 0)
		opts->registry_timeout_ms = (int) kafka_opt_int(v, &kafka_source_kind, key);
	else if (strcmp(key, "partitions") == 0)
		share_parse_partitions(opts, v);
	else if (strcmp(key, "node") == 0)
	{
		opts->node = (int) kafka_opt_int(v, &kafka_source_kind, key);
		parse->have_node = true;
	}
	else if (strcmp(key, "nodes") == 0)
		opts->nodes = (int) kafka_opt_int(v, &kafka_source_kind, key);
	else if (strcmp(key, "start_offsets") == 0)
		share_parse_start_offsets(opts, v);
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown Kafka source option \"%s\"", key),
				 errhint(OPTION_KEYS_HINT)));
}

/*
 * Parse and validate a source's options (NULL means none).  Allocates in
 * CurrentMemoryContext; ereports on anything unknown or malformed.
 */
void
kafka_parse_options(Jsonb *options, KafkaOptions *opts)
{
	SourceOptionsParse parse;

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
	opts->registry_timeout_ms = 5000;

	parse.opts = opts;
	parse.have_start = false;
	parse.have_escape = false;
	parse.have_node = false;
	kafka_parse_option_object(options, source_option, &parse,
							  &opts->kafka_keys, &opts->kafka_values);

	share_validate(opts, parse.have_node);
	if (!parse.have_escape)
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

/* offsets live in kafka_offsets: librdkafka must not commit or store them */
static const char *const source_managed_properties[] = {
	"enable.auto.commit", "enable.auto.offset.store", "enable.partition.eof", NULL
};

/*
 * librdkafka consumer configuration of a source: user properties first,
 * then the ones stream_ext relies on.  ereports on an invalid property.
 */
rd_kafka_conf_t *
kafka_build_conf(const char *brokers, const KafkaOptions *opts,
				 const char *group_id, Oid role)
{
	rd_kafka_conf_t *conf;

	conf = kafka_conf_new(brokers, opts->kafka_keys, opts->kafka_values,
						  source_managed_properties,
						  "Offsets are stored in stream_ext.kafka_offsets, in the transaction of each batch.",
						  role);
	if (!kafka_property_given(opts->kafka_keys, "auto.offset.reset"))
		kafka_conf_set(conf, "auto.offset.reset", "earliest");
	if (group_id && !kafka_property_given(opts->kafka_keys, "group.id"))
		kafka_conf_set(conf, "group.id", group_id);
	if (!kafka_property_given(opts->kafka_keys, "fetch.wait.max.ms"))
	{
		/* the broker holds an empty fetch no longer than a batch may wait */
		char		buf[32];

		snprintf(buf, sizeof(buf), "%d", opts->max_wait_ms);
		kafka_conf_set(conf, "fetch.wait.max.ms", buf);
	}
	if (!kafka_property_given(opts->kafka_keys, "queued.max.messages.kbytes"))
		kafka_conf_set(conf, "queued.max.messages.kbytes", "16384");	/* prefetch, bounds RSS */
	kafka_conf_set(conf, "enable.auto.commit", "false");
	kafka_conf_set(conf, "enable.auto.offset.store", "false");
	kafka_conf_set(conf, "enable.partition.eof", "false");
	return conf;
}

/* ----------------------------------------------------------------
 * SQL functions
 * ----------------------------------------------------------------
 */

/*
 * create_kafka_source(name, stream, brokers, topic, format, options)
 * RETURNS text: the name (void before 0.3; a void declaration ignores it)
 */
Datum
stream_ext_create_kafka_source(PG_FUNCTION_ARGS)
{
	KafkaDefinition def;
	Jsonb	   *options;
	KafkaOptions opts;
	KafkaFormat fmt;
	rd_kafka_conf_t *conf;
	Oid			argtypes[7] = {TEXTOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, OIDOID};
	Datum		args[7];

	kafka_definition_args(fcinfo, &def);
	options = PG_ARGISNULL(5) ? NULL : PG_GETARG_JSONB_P(5);

	kafka_check_definition(&kafka_source_kind, def.name, def.stream, def.brokers,
						   def.topic, ACL_INSERT);
	fmt = kafka_parse_format(def.format);
	kafka_parse_options(options, &opts);
	/* validates the column mapping against the stream */
	(void) kafka_decoder_create(def.stream, fmt, &opts);
	/* validates the librdkafka properties */
	conf = kafka_build_conf(def.brokers, &opts, "stream_ext", GetUserId());
	rd_kafka_conf_destroy(conf);

	SPI_connect();
	kafka_check_new_name(&kafka_source_kind, def.name);

	kafka_definition_datums(&def, args);
	args[4] = CStringGetTextDatum(kafka_format_names[fmt]);
	args[5] = options ? JsonbPGetDatum(options) : DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	args[6] = ObjectIdGetDatum(GetUserId());
	kafka_catalog_exec(&kafka_source_kind,
					   "INSERT INTO stream_ext.kafka_sources "
					   "(name, stream, brokers, topic, format, options, owner) "
					   "VALUES ($1, $2::regclass, $3, $4, $5, $6, $7::regrole)",
					   7, argtypes, args, NULL, false, SPI_OK_INSERT);
	SPI_finish();

	/* the name, so that start_source(create_kafka_source(...)) reads well */
	PG_RETURN_TEXT_P(cstring_to_text(def.name));
}

/* register a dynamic source worker */
static bool
launch_source_worker(const KafkaSourceWorkerArgs *args, bool error_on_failure)
{
	return kafka_bgworker_launch("stream_ext_kafka_source_worker_main", "stream_ext kafka worker",
								 psprintf("stream_ext kafka source %d worker %d",
										  args->source_id, args->worker),
								 args, sizeof(KafkaSourceWorkerArgs), error_on_failure,
								 psprintf("worker %d of Kafka source %d",
										  args->worker, args->source_id),
								 "Raise max_worker_processes (and stream_ext.kafka_max_workers).");
}

/*
 * start_source(name) RETURNS text (the name): mark running and launch its
 * workers.  The workers wait for this transaction to end and exit at once if
 * it rolled back.
 */
Datum
stream_ext_start_source(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	KafkaCatalogRow row;
	KafkaOptions opts;
	AclResult	aclresult;
	Oid			catalog_relid;
	int			i;

	SPI_connect();
	kafka_start_fetch_row(&kafka_source_kind, name, &row);
	kafka_parse_options(row.options, &opts);
	kafka_check_owner_login(&kafka_source_kind, &row);
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
	kafka_set_running(&kafka_source_kind, row.id);
	SPI_finish();

	catalog_relid = kafka_catalog_table(&kafka_source_kind, false);
	for (i = 0; i < opts.workers; i++)
	{
		KafkaSourceWorkerArgs wargs;

		if (kafka_slot_is_live(&kafka_source_kind, MyDatabaseId, catalog_relid, row.id, i))
			continue;
		memset(&wargs, 0, sizeof(wargs));
		wargs.dboid = MyDatabaseId;
		wargs.catalog_relid = catalog_relid;
		wargs.owner = row.owner;
		wargs.source_id = row.id;
		wargs.worker = i;
		wargs.nworkers = opts.workers;
		wargs.wait_xid = GetTopTransactionId();
		launch_source_worker(&wargs, true);
	}

	PG_RETURN_TEXT_P(cstring_to_text(name));
}

/*
 * stop_source(name): mark stopped; the workers see it within about a
 * second (or at their next batch) and exit without storing anything more.
 */
Datum
stream_ext_stop_source(PG_FUNCTION_ARGS)
{
	kafka_stop(&kafka_source_kind, text_to_cstring(PG_GETARG_TEXT_PP(0)));
	PG_RETURN_VOID();
}

/*
 * drop_source(name, if_exists): delete the source, and with it (foreign
 * keys ON DELETE CASCADE) its stored offsets and dead letters.  Running
 * workers exit when they see it gone.
 */
Datum
stream_ext_drop_source(PG_FUNCTION_ARGS)
{
	KafkaCatalogRow row;

	if (kafka_drop_begin(&kafka_source_kind, fcinfo, &row))
		kafka_drop_end(&kafka_source_kind, &row);
	PG_RETURN_VOID();
}

/* ----------------------------------------------------------------
 * Live statistics (shared memory)
 * ----------------------------------------------------------------
 */

/* a row of source_status per worker (a KafkaSlotRows) */
static void
worker_stats_rows(const KafkaSlot *common, ReturnSetInfo *rsinfo)
{
	const KafkaSourceSlot *slot = (const KafkaSourceSlot *) common;
	Datum		values[14];
	bool		nulls[14];

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum(slot->common.id);
	values[1] = Int32GetDatum(slot->common.worker);
	values[2] = Int32GetDatum(slot->common.pid);
	values[3] = CStringGetTextDatum(kafka_state_name(slot->common.state));
	values[4] = Int64GetDatum((int64) slot->messages);
	values[5] = Int64GetDatum((int64) slot->bytes);
	values[6] = Int64GetDatum((int64) slot->batches);
	values[7] = Int64GetDatum((int64) slot->common.errors);
	values[8] = Int64GetDatum((int64) slot->dead_letters);
	values[9] = Float8GetDatum(slot->rate);
	kafka_slot_status(&slot->common, &values[10], &nulls[10]);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

Datum
stream_ext_kafka_worker_stats(PG_FUNCTION_ARGS)
{
	kafka_slot_srf(fcinfo, &kafka_source_kind, worker_stats_rows);
	PG_RETURN_VOID();
}

/* a row per partition of a worker (a KafkaSlotRows) */
static void
partition_stats_rows(const KafkaSlot *common, ReturnSetInfo *rsinfo)
{
	const KafkaSourceSlot *slot = (const KafkaSourceSlot *) common;
	int			j;

	for (j = 0; j < slot->npartitions; j++)
	{
		const KafkaPartitionStat *ps = &slot->partitions[j];
		Datum		values[5];
		bool		nulls[5];

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(slot->common.id);
		values[1] = Int32GetDatum(slot->common.worker);
		values[2] = Int32GetDatum(ps->partition);
		values[3] = Int64GetDatum(ps->next_offset);
		nulls[3] = ps->next_offset < 0;
		values[4] = Int64GetDatum(ps->high_watermark);
		nulls[4] = ps->high_watermark < 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

Datum
stream_ext_kafka_partition_stats(PG_FUNCTION_ARGS)
{
	kafka_slot_srf(fcinfo, &kafka_source_kind, partition_stats_rows);
	PG_RETURN_VOID();
}

/* a running source: its workers (a KafkaRunningRow) */
static void
running_source(HeapTuple tup, TupleDesc desc, KafkaLaunchList *list)
{
	bool		isnull;
	KafkaOptions opts;
	KafkaSourceWorkerArgs wargs;
	int			w;

	PG_TRY();
	{
		kafka_parse_options(DatumGetJsonbP(SPI_getbinval(tup, desc, 3, &isnull)),
							&opts);
	}
	PG_CATCH();
	{
		/* cannot happen for a validated source; keep scanning */
		FlushErrorState();
		opts.workers = 1;
	}
	PG_END_TRY();

	memset(&wargs, 0, sizeof(wargs));
	wargs.dboid = list->dboid;
	wargs.catalog_relid = list->catalog_relid;
	wargs.source_id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	wargs.owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
	wargs.nworkers = opts.workers;
	wargs.wait_xid = InvalidTransactionId;
	for (w = 0; w < opts.workers; w++)
	{
		wargs.worker = w;
		kafka_launch_add(list, wargs.source_id, w, &wargs, sizeof(wargs));
	}
}

/* start a worker of a running source (a KafkaStartWorker) */
static void
start_running_source(const KafkaLaunch *launch)
{
	ereport(LOG,
			(errmsg("stream_ext: starting worker %d of Kafka source %d",
					launch->worker, launch->id)));
	launch_source_worker(launch->args, false);
}

/*
 * Called by the launcher's scanner (connected to dboid, no transaction):
 * start the missing workers of every running source.
 */
void
kafka_source_launch_running(Oid dboid)
{
	kafka_launch_running(&kafka_source_kind, dboid,
						 "SELECT id, owner::oid, options FROM stream_ext.kafka_sources "
						 "WHERE state = 'running' ORDER BY id",
						 running_source, start_running_source);
}
