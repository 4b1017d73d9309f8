/*-------------------------------------------------------------------------
 *
 * decode.c
 *	  Decoding of Kafka messages into tuples of a stream's columns.
 *
 * A KafkaDecoder is built once per worker from the stream's tuple
 * descriptor and the source's options: it fixes the target columns (the
 * columns the batch INSERT names), how each is fed (payload, key,
 * partition, offset or message timestamp) and each column's input
 * function.  kafka_decode() turns one message into one heap tuple in the
 * memory context the caller names, or ereports ERROR (the worker catches it
 * and dead-letters the message).
 *
 * Formats:
 *	json	a JSON object; column c takes the value at key c, or at the path
 *			given in the "paths" option; strings are passed to the input
 *			function as-is, numbers/booleans as their JSON text, objects and
 *			arrays as JSON text; a missing key or JSON null gives NULL.
 *	csv		one record, COPY ... (FORMAT csv) rules: delimiter, quote and
 *			escape characters, unquoted null string means NULL, fields map
 *			to the target columns by position.
 *	text	the whole payload into one column through its input function.
 *	bytea	the whole payload, uninterpreted, into one bytea column.
 *	avro, avro-confluent
 *			Avro records (avro_decode.c); columns map to fields by name or
 *			by the "paths" option, like JSON.
 *	debezium-json, debezium-avro
 *			Debezium change events into a changelog stream (debezium.c):
 *			zero, one or two tuples per message (dec->second).
 *
 * Timestamps (json, csv): ISO 8601 ones are read by time_input.c, numbers
 * are Unix time with the option epoch_unit (field_value()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "common/jsonapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/jsonfuncs.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "core/util.h"
#include "kafka/avro_decode.h"
#include "kafka/debezium.h"
#include "kafka/decode.h"
#include "kafka/time_input.h"
#include "query/retract.h"

static int
find_column(TupleDesc tupdesc, const char *name)
{
	int			i;

	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return i;
	}
	return -1;
}

static bool
is_meta_column(const KafkaOptions *opts, const char *name)
{
	return (opts->key_column && strcmp(opts->key_column, name) == 0) ||
		(opts->partition_column && strcmp(opts->partition_column, name) == 0) ||
		(opts->offset_column && strcmp(opts->offset_column, name) == 0) ||
		(opts->timestamp_column && strcmp(opts->timestamp_column, name) == 0);
}

/*
 * Can attribute att be fed from the payload by default?  Not if dropped,
 * generated, arrival_timestamp, a changelog stream's sign or fed from the
 * message's metadata.
 */
static bool
payload_column(const KafkaOptions *opts, Form_pg_attribute att)
{
	return !(att->attisdropped || att->attgenerated ||
			 strcmp(NameStr(att->attname), STREAM_ARRIVAL_COLUMN) == 0 ||
			 strcmp(NameStr(att->attname), SE_SIGN_COLUMN) == 0 ||
			 is_meta_column(opts, NameStr(att->attname)));
}

static void
add_column(KafkaDecoder *dec, Relation rel, const char *name,
		   KafkaColumnRole role)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			i = find_column(tupdesc, name);
	Form_pg_attribute att;
	KafkaColumn *col;
	Oid			infunc;
	int			j;

	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						name, RelationGetRelationName(rel))));
	att = TupleDescAttr(tupdesc, i);
	if (att->attgenerated)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column \"%s\" is a generated column", name)));
	for (j = 0; j < dec->ncolumns; j++)
		if (dec->columns[j].attnum == att->attnum)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column \"%s\" is assigned more than once", name)));

	col = &dec->columns[dec->ncolumns++];
	col->name = pstrdup(name);
	col->attnum = att->attnum;
	col->typid = att->atttypid;
	col->typmod = att->atttypmod;
	col->role = role;
	getTypeInputInfo(att->atttypid, &infunc, &col->typioparam);
	fmgr_info(infunc, &col->input);
	col->npath = 1;
	col->path = palloc(sizeof(char *));
	col->pathlen = palloc(sizeof(int));
	col->path[0] = col->name;
	col->pathlen[0] = strlen(col->name);
	if (role == KCOL_DATA)
		dec->ndata++;
}

/*
 * Build a decoder for relation relid; ereports on a bad configuration.
 * Everything is allocated in CurrentMemoryContext.
 */
KafkaDecoder *
kafka_decoder_create(Oid relid, KafkaFormat format, const KafkaOptions *opts)
{
	KafkaDecoder *dec = palloc0(sizeof(KafkaDecoder));
	bool		avro = format == KAFKA_FORMAT_AVRO || format == KAFKA_FORMAT_AVRO_CONFLUENT;
	bool		debezium = format == KAFKA_FORMAT_DEBEZIUM_JSON ||
		format == KAFKA_FORMAT_DEBEZIUM_AVRO;
	Relation	rel;
	TupleDesc	tupdesc;
	ListCell   *lc,
			   *lc2;
	int			i;

	dec->format = format;
	dec->relid = relid;

	rel = table_open(relid, AccessShareLock);
	tupdesc = RelationGetDescr(rel);
	dec->columns = palloc0(sizeof(KafkaColumn) * (tupdesc->natts + 4));

	if (format == KAFKA_FORMAT_TEXT || format == KAFKA_FORMAT_BYTEA)
	{
		if (opts->column)
			add_column(dec, rel, opts->column, KCOL_DATA);
		else if (opts->columns != NIL)
		{
			if (list_length(opts->columns) != 1)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("format \"%s\" takes exactly one target column",
								format == KAFKA_FORMAT_TEXT ? "text" : "bytea")));
			add_column(dec, rel, linitial(opts->columns), KCOL_DATA);
		}
		else
		{
			const char *only = NULL;
			int			n = 0;

			for (i = 0; i < tupdesc->natts; i++)
			{
				Form_pg_attribute att = TupleDescAttr(tupdesc, i);

				if (!payload_column(opts, att))
					continue;
				only = NameStr(att->attname);
				n++;
			}
			if (n != 1)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("cannot choose the target column of format \"%s\": the stream has %d candidate columns",
								format == KAFKA_FORMAT_TEXT ? "text" : "bytea", n),
						 errhint("Set the option \"column\".")));
			add_column(dec, rel, only, KCOL_DATA);
		}
		if (format == KAFKA_FORMAT_BYTEA && dec->columns[0].typid != BYTEAOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("format \"bytea\" needs a bytea column, but column \"%s\" is of type %s",
							dec->columns[0].name,
							format_type_be(dec->columns[0].typid))));
	}
	else if (opts->columns != NIL)
	{
		foreach(lc, opts->columns)
			add_column(dec, rel, (char *) lfirst(lc), KCOL_DATA);
	}
	else
	{
		for (i = 0; i < tupdesc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(tupdesc, i);

			if (!payload_column(opts, att))
				continue;
			add_column(dec, rel, NameStr(att->attname), KCOL_DATA);
		}
	}

	/* JSON paths */
	forboth(lc, opts->path_columns, lc2, opts->paths)
	{
		const char *name = lfirst(lc);
		List	   *path = lfirst(lc2);
		KafkaColumn *col = NULL;
		ListCell   *lc3;
		int			k = 0;

		if (format != KAFKA_FORMAT_JSON && !avro && !debezium)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"paths\" applies only to formats \"json\", \"avro\", \"avro-confluent\", \"debezium-json\" and \"debezium-avro\"")));
		for (i = 0; i < dec->ncolumns; i++)
			if (strcmp(dec->columns[i].name, name) == 0)
				col = &dec->columns[i];
		if (col == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"paths\" names column \"%s\", which is not a target column", name)));
		col->npath = list_length(path);
		col->path = palloc(sizeof(char *) * col->npath);
		col->pathlen = palloc(sizeof(int) * col->npath);
		foreach(lc3, path)
		{
			col->path[k] = lfirst(lc3);
			col->pathlen[k] = strlen(col->path[k]);
			k++;
		}
	}

	dec->epoch_unit_usecs = opts->epoch_unit_usecs;
	if (opts->epoch_unit_usecs != 0 &&
		format != KAFKA_FORMAT_JSON && format != KAFKA_FORMAT_CSV &&
		format != KAFKA_FORMAT_DEBEZIUM_JSON)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"epoch_unit\" applies only to formats \"json\", \"csv\" and \"debezium-json\"")));

	if (dec->ndata == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("relation \"%s\" has no column to receive the message payload",
						RelationGetRelationName(rel))));

	if (opts->key_column)
	{
		add_column(dec, rel, opts->key_column, KCOL_KEY);
	}
	if (opts->partition_column)
		add_column(dec, rel, opts->partition_column, KCOL_PARTITION);
	if (opts->offset_column)
		add_column(dec, rel, opts->offset_column, KCOL_OFFSET);
	if (opts->timestamp_column)
		add_column(dec, rel, opts->timestamp_column, KCOL_TIMESTAMP);

	/* Debezium: the sign of each tuple (debezium.c) */
	if (debezium)
		se_debezium_check_stream(rel, format);
	if (debezium)
		add_column(dec, rel, SE_SIGN_COLUMN, KCOL_SIGN);

	/* the decoded tuples' descriptor: the target columns, in order */
	dec->tupdesc = CreateTemplateTupleDesc(dec->ncolumns);
	for (i = 0; i < dec->ncolumns; i++)
		TupleDescInitEntry(dec->tupdesc, (AttrNumber) (i + 1),
						   dec->columns[i].name, dec->columns[i].typid,
						   dec->columns[i].typmod, 0);
	dec->values = palloc(sizeof(Datum) * dec->ncolumns);
	dec->nulls = palloc(sizeof(bool) * dec->ncolumns);

	if (avro)
		dec->avro = se_avro_decoder_create(dec, opts);
	else if (debezium)
		dec->debezium = se_debezium_create(dec, opts);
	else if (opts->avro_schema || opts->avro_reader_schema || opts->registry_url ||
			 opts->registry_user || opts->registry_password)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options \"schema\", \"reader_schema\" and \"schema_registry\" apply only to formats \"avro\" and \"avro-confluent\"")));

	dec->csv_delimiter = opts->csv_delimiter;
	dec->csv_quote = opts->csv_quote;
	dec->csv_escape = opts->csv_escape;
	dec->csv_null = opts->csv_null;
	dec->csv_nulllen = strlen(opts->csv_null);

	table_close(rel, AccessShareLock);
	return dec;
}

/* validated, NUL-terminated copy of a text payload */
static char *
payload_cstring(const char *data, size_t len)
{
	char	   *s;

	if (len > MaxAllocSize - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("message too large")));
	/* also rejects embedded NUL bytes */
	(void) pg_verify_mbstr(GetDatabaseEncoding(), data, (int) len, false);
	s = palloc(len + 1);
	memcpy(s, data, len);
	s[len] = '\0';
	return s;
}

static Datum
bytes_to_bytea(const char *data, size_t len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	if (len > 0)
		memcpy(VARDATA(b), data, len);
	return PointerGetDatum(b);
}

static inline Datum
input_value(KafkaColumn *col, char *str)
{
	return InputFunctionCall(&col->input, str, col->typioparam, col->typmod);
}

/*
 * The value of a payload field for column col: a number (a JSON number, an
 * unquoted CSV number) into a timestamp, timestamptz or date column is Unix
 * time when the source has epoch_unit; ISO 8601 timestamps are read by
 * kafka_fast_timestamp(); everything else goes through the input function.
 */
static Datum
field_value(KafkaDecoder *dec, KafkaColumn *col, char *text, bool is_number)
{
	Timestamp	ts;

	switch (col->typid)
	{
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			if (is_number && dec->epoch_unit_usecs != 0)
				ts = kafka_epoch_timestamp(text, dec->epoch_unit_usecs);
			else if (!kafka_fast_timestamp(text, col->typid == TIMESTAMPTZOID, &ts))
				break;
			AdjustTimestampForTypmod(&ts, col->typmod);
			return TimestampGetDatum(ts);
		case DATEOID:
			if (is_number && dec->epoch_unit_usecs != 0)
				return DirectFunctionCall1(timestamp_date,
										   TimestampGetDatum(kafka_epoch_timestamp(text,
																				   dec->epoch_unit_usecs)));
			break;
		default:
			break;
	}
	return input_value(col, text);
}

/* an unquoted CSV field that is a decimal number (for epoch_unit) */
static bool
csv_number(const char *s)
{
	bool		digit = false;

	if (*s == '-' || *s == '+')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digit = true;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			digit = true;
	return digit && *s == '\0';
}

/* the value for a metadata column */
static void
meta_value(KafkaColumn *col, const KafkaMessage *msg, Datum *value, bool *isnull)
{
	char		buf[32];

	*isnull = false;
	switch (col->role)
	{
		case KCOL_KEY:
			if (msg->key == NULL)
				*isnull = true;
			else if (col->typid == BYTEAOID)
				*value = bytes_to_bytea(msg->key, msg->keylen);
			else
				*value = input_value(col, payload_cstring(msg->key, msg->keylen));
			break;
		case KCOL_PARTITION:
			if (col->typid == INT4OID)
				*value = Int32GetDatum(msg->partition);
			else if (col->typid == INT8OID)
				*value = Int64GetDatum((int64) msg->partition);
			else
			{
				snprintf(buf, sizeof(buf), "%d", (int) msg->partition);
				*value = input_value(col, buf);
			}
			break;
		case KCOL_OFFSET:
			if (col->typid == INT8OID)
				*value = Int64GetDatum(msg->offset);
			else
			{
				snprintf(buf, sizeof(buf), INT64_FORMAT, msg->offset);
				*value = input_value(col, buf);
			}
			break;
		case KCOL_TIMESTAMP:
			if (msg->timestamp_ms < 0)
				*isnull = true;
			else if (col->typid == INT8OID)
				*value = Int64GetDatum(msg->timestamp_ms);
			else
			{
				TimestampTz ts;

				ts = se_timestamp_from_unix_ms(msg->timestamp_ms);
				if (col->typid == TIMESTAMPTZOID)
					*value = TimestampTzGetDatum(ts);
				else
					*value = input_value(col, DatumGetCString(DirectFunctionCall1(timestamptz_out,
																				   TimestampTzGetDatum(ts))));
			}
			break;
		case KCOL_DATA:
		case KCOL_SIGN:
			Assert(false);
			break;
	}
}

/* text form of a JSON value for a column's input function; NULL for null */
char *
kafka_jsonb_value_text(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return NULL;
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out,
													   NumericGetDatum(v->val.numeric)));
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		case jbvBinary:
			return JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return NULL;
}

/*
 * JSON: one pass of PostgreSQL's JSON parser (common/jsonapi.h) over the
 * payload, keeping only the values found at the columns' paths -- no jsonb
 * is built.  The result is the one jsonb_in() followed by key lookups gave:
 * the whole payload must be valid JSON (same error), the root must be an
 * object, a key given twice counts by its last value (for a path, the last
 * value of each key along it), a path through an array or a scalar is not
 * found, and the text handed to a column's input function is the same:
 * strings unescaped, numbers as numeric_out() writes them, objects and
 * arrays as jsonb's text.
 */
typedef struct JsonPick
{
	KafkaDecoder *dec;
	JsonLexContext *lex;
	int			maxdepth;		/* longest path */
	int			depth;			/* containers open; the root object is 1 */
	bool		broken;			/* a container above is an array: no match */
	int			broken_at;		/* the depth where that array was opened */
	char	  **keys;			/* keys[d - 1]: current key at depth d */
	char	  **starts;			/* starts[d - 1]: text of the container at d */
	bool		root_seen;
	bool		root_not_object;
	char	  **text;			/* per column: the value's text, or NULL */
	bool	   *found;
	bool	   *number;			/* per column: the value is a JSON number */
} JsonPick;

/* does column col's path end at the current key of depth d? */
static bool
pick_matches(JsonPick *st, KafkaColumn *col, int d)
{
	if (col->role != KCOL_DATA || col->npath != d || st->broken)
		return false;
	for (int k = 0; k < d; k++)
	{
		if (st->keys[k] == NULL ||
			strlen(st->keys[k]) != (size_t) col->pathlen[k] ||
			memcmp(st->keys[k], col->path[k], col->pathlen[k]) != 0)
			return false;
	}
	return true;
}

static void
pick_value(JsonPick *st, int d, char *text, bool number)
{
	for (int i = 0; i < st->dec->ncolumns; i++)
	{
		if (pick_matches(st, &st->dec->columns[i], d))
		{
			st->found[i] = true;
			st->text[i] = text;
			st->number[i] = number;
		}
	}
}

static void
pick_container_start(JsonPick *st, bool is_array)
{
	if (!st->root_seen)
	{
		st->root_seen = true;
		st->root_not_object = is_array;
	}
	st->depth++;
	if (st->depth <= st->maxdepth + 1)
	{
		st->starts[st->depth - 1] = st->lex->token_start;
		st->keys[st->depth - 1] = NULL;
	}
	if (is_array && !st->broken)
	{
		st->broken = true;
		st->broken_at = st->depth;
	}
}

static void
pick_container_end(JsonPick *st, bool is_array)
{
	int			d = st->depth;

	if (is_array && st->broken && st->broken_at == d)
		st->broken = false;
	st->depth--;
	/* an object or array as the value of a column's path: its jsonb text */
	if (d >= 2 && d - 1 <= st->maxdepth && !st->broken)
	{
		for (int i = 0; i < st->dec->ncolumns; i++)
		{
			if (pick_matches(st, &st->dec->columns[i], d - 1) &&
				st->dec->columns[i].presence_only)
			{
				st->found[i] = true;
				st->text[i] = "";
				st->number[i] = false;
			}
			else if (pick_matches(st, &st->dec->columns[i], d - 1))
			{
				char	   *raw = pnstrdup(st->starts[d - 1],
										   st->lex->prev_token_terminator - st->starts[d - 1]);
				Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
																	CStringGetDatum(raw)));

				st->found[i] = true;
				st->text[i] = JsonbToCString(NULL, &jb->root, VARSIZE(jb));
				st->number[i] = false;
			}
		}
	}
}

static void
pick_object_start(void *state)
{
	pick_container_start((JsonPick *) state, false);
}

static void
pick_object_end(void *state)
{
	pick_container_end((JsonPick *) state, false);
}

static void
pick_array_start(void *state)
{
	pick_container_start((JsonPick *) state, true);
}

static void
pick_array_end(void *state)
{
	pick_container_end((JsonPick *) state, true);
}

static void
pick_field_start(void *state, char *fname, bool isnull)
{
	JsonPick   *st = (JsonPick *) state;
	int			d = st->depth;

	if (d > st->maxdepth || st->broken)
		return;
	st->keys[d - 1] = fname;
	/* a repeated key: what an earlier value of it gave is forgotten */
	for (int i = 0; i < st->dec->ncolumns; i++)
	{
		KafkaColumn *col = &st->dec->columns[i];
		bool		under = col->role == KCOL_DATA && col->npath >= d;

		for (int k = 0; under && k < d; k++)
			under = strlen(st->keys[k]) == (size_t) col->pathlen[k] &&
				memcmp(st->keys[k], col->path[k], col->pathlen[k]) == 0;
		if (under)
		{
			st->found[i] = false;
			st->text[i] = NULL;
		}
	}
}

/* numeric_out()'s text of a JSON number, without a numeric when it is the same */
static char *
json_number_text(char *token)
{
	const char *p = token;
	bool		nonzero = false;

	if (*p == '-')
		p++;
	for (; *p; p++)
	{
		if (*p >= '1' && *p <= '9')
			nonzero = true;
		else if (*p != '0' && *p != '.')
			break;				/* an exponent */
	}
	if (*p == '\0' && (token[0] != '-' || nonzero))
		return token;
	return DatumGetCString(DirectFunctionCall1(numeric_out,
											   DirectFunctionCall3(numeric_in,
																   CStringGetDatum(token),
																   ObjectIdGetDatum(InvalidOid),
																   Int32GetDatum(-1))));
}

static void
pick_scalar(void *state, char *token, JsonTokenType tokentype)
{
	JsonPick   *st = (JsonPick *) state;
	int			d = st->depth;

	if (!st->root_seen)
	{
		st->root_seen = true;
		st->root_not_object = true;
		return;
	}
	if (d > st->maxdepth || st->broken)
		return;
	switch (tokentype)
	{
		case JSON_TOKEN_NULL:
			pick_value(st, d, NULL, false);
			break;
		case JSON_TOKEN_NUMBER:
			/* as written: only the value a column keeps is converted */
			pick_value(st, d, token, true);
			break;
		default:
			/* strings come unescaped; true and false as themselves */
			pick_value(st, d, token, false);
			break;
	}
}

static void
decode_json(KafkaDecoder *dec, const KafkaMessage *msg)
{
	char	   *str = payload_cstring(msg->payload, msg->len);
	JsonPick	st = {0};
	JsonSemAction sem = {0};
	JsonParseErrorType rc;
	int			i;

	st.dec = dec;
	for (i = 0; i < dec->ncolumns; i++)
		if (dec->columns[i].role == KCOL_DATA)
			st.maxdepth = Max(st.maxdepth, dec->columns[i].npath);
	st.keys = palloc0(sizeof(char *) * (st.maxdepth + 1));
	st.starts = palloc0(sizeof(char *) * (st.maxdepth + 1));
	st.text = palloc0(sizeof(char *) * dec->ncolumns);
	st.found = palloc0(sizeof(bool) * dec->ncolumns);
	st.number = palloc0(sizeof(bool) * dec->ncolumns);
	st.lex = makeJsonLexContextCstringLen(str, (int) msg->len, GetDatabaseEncoding(), true);

	sem.semstate = &st;
	sem.object_start = pick_object_start;
	sem.object_end = pick_object_end;
	sem.array_start = pick_array_start;
	sem.array_end = pick_array_end;
	sem.object_field_start = pick_field_start;
	sem.scalar = pick_scalar;

	rc = pg_parse_json(st.lex, &sem);
	if (rc != JSON_SUCCESS)
		json_ereport_error(rc, st.lex);
	if (st.root_not_object)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("JSON message is not an object")));

	for (i = 0; i < dec->ncolumns; i++)
	{
		KafkaColumn *col = &dec->columns[i];

		if (col->role != KCOL_DATA)
			continue;
		if (!st.found[i] || st.text[i] == NULL)
		{
			dec->nulls[i] = true;
			dec->values[i] = (Datum) 0;
		}
		else if (col->presence_only)
		{
			dec->nulls[i] = false;
			dec->values[i] = (Datum) 0;
		}
		else
		{
			dec->nulls[i] = false;
			/* Unix time reads the number as written (errors show it) */
			if (st.number[i] &&
				!(dec->epoch_unit_usecs != 0 &&
				  (col->typid == TIMESTAMPTZOID || col->typid == TIMESTAMPOID ||
				   col->typid == DATEOID)))
				st.text[i] = json_number_text(st.text[i]);
			dec->values[i] = field_value(dec, col, st.text[i], st.number[i]);
		}
	}
}

/*
 * CSV, following COPY's CSV rules for one record: fields separated by the
 * delimiter; a field may be quoted; inside quotes the escape character
 * followed by the quote or escape character stands for that character
 * (a doubled quote when escape = quote); an unquoted field equal to the
 * null string is NULL.  A trailing newline ends the record.
 */
static void
decode_csv(KafkaDecoder *dec, const KafkaMessage *msg)
{
	char	   *str = payload_cstring(msg->payload, msg->len);
	size_t		len = msg->len;
	const char *p;
	const char *end;
	StringInfoData field;
	int			col = 0;		/* index into dec->columns, data ones first */
	bool		done = false;

	/* strip one trailing record terminator */
	if (len > 0 && str[len - 1] == '\n')
		len--;
	if (len > 0 && str[len - 1] == '\r')
		len--;
	p = str;
	end = str + len;

	initStringInfo(&field);
	while (!done)
	{
		bool		quoted = false;
		bool		in_quote = false;
		KafkaColumn *kc;

		resetStringInfo(&field);
		for (;;)
		{
			const char *start;
			char		c;

			if (p >= end)
			{
				if (in_quote)
					ereport(ERROR,
							(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
							 errmsg("unterminated CSV quoted field")));
				done = true;
				break;
			}
			start = p;
			c = *p++;
			if (in_quote)
			{
				if (c == dec->csv_escape && p < end &&
					(*p == dec->csv_quote || *p == dec->csv_escape))
				{
					appendStringInfoChar(&field, *p++);
					continue;
				}
				if (c == dec->csv_quote)
				{
					in_quote = false;
					continue;
				}
				/* c, and the run of ordinary characters after it */
				while (p < end && *p != dec->csv_quote && *p != dec->csv_escape)
					p++;
			}
			else
			{
				if (c == dec->csv_delimiter)
					break;
				if (c == dec->csv_quote)
				{
					in_quote = true;
					quoted = true;
					continue;
				}
				while (p < end && *p != dec->csv_delimiter && *p != dec->csv_quote)
					p++;
			}
			appendBinaryStringInfo(&field, start, p - start);
		}

		/* skip metadata columns; data columns come first in dec->columns */
		while (col < dec->ncolumns && dec->columns[col].role != KCOL_DATA)
			col++;
		if (col >= dec->ncolumns)
			ereport(ERROR,
					(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
					 errmsg("extra data after last expected column")));
		kc = &dec->columns[col];
		if (!quoted && field.len == dec->csv_nulllen &&
			memcmp(field.data, dec->csv_null, field.len) == 0)
		{
			dec->nulls[col] = true;
			dec->values[col] = (Datum) 0;
		}
		else
		{
			dec->nulls[col] = false;
			dec->values[col] = field_value(dec, kc, pstrdup(field.data),
										   !quoted && dec->epoch_unit_usecs != 0 &&
										   csv_number(field.data));
		}
		col++;
	}
	while (col < dec->ncolumns && dec->columns[col].role != KCOL_DATA)
		col++;
	if (col < dec->ncolumns)
		ereport(ERROR,
				(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
				 errmsg("missing data for column \"%s\"", dec->columns[col].name)));
}

/* msg's payload (not NULL) into dec's data columns */
static void
decode_payload(KafkaDecoder *dec, const KafkaMessage *msg)
{
	switch (dec->format)
	{
		case KAFKA_FORMAT_JSON:
			decode_json(dec, msg);
			break;
		case KAFKA_FORMAT_CSV:
			decode_csv(dec, msg);
			break;
		case KAFKA_FORMAT_TEXT:
			dec->nulls[0] = false;
			dec->values[0] = input_value(&dec->columns[0],
										 payload_cstring(msg->payload, msg->len));
			break;
		case KAFKA_FORMAT_BYTEA:
			dec->nulls[0] = false;
			dec->values[0] = bytes_to_bytea(msg->payload, msg->len);
			break;
		case KAFKA_FORMAT_AVRO:
		case KAFKA_FORMAT_AVRO_CONFLUENT:
			se_avro_decode(dec, msg);
			break;
		case KAFKA_FORMAT_DEBEZIUM_JSON:
		case KAFKA_FORMAT_DEBEZIUM_AVRO:
			elog(ERROR, "Debezium payloads are decoded by debezium.c");
	}
}

/*
 * Decode one message into a tuple of dec->tupdesc, allocated in tuplecxt;
 * whatever else decoding allocates goes to CurrentMemoryContext (the
 * caller's per-message context).  ereports ERROR on a bad message.
 *
 * The Debezium formats make zero, one or two tuples of a message: NULL for
 * none (a tombstone), and a second one in dec->second (an update).
 */
HeapTuple
kafka_decode(KafkaDecoder *dec, const KafkaMessage *msg, MemoryContext tuplecxt)
{
	MemoryContext oldcxt;
	HeapTuple	tuple;
	int			i;

	dec->second = NULL;
	for (i = 0; i < dec->ncolumns; i++)
	{
		if (dec->columns[i].role != KCOL_DATA && dec->columns[i].role != KCOL_SIGN)
			meta_value(&dec->columns[i], msg, &dec->values[i], &dec->nulls[i]);
	}
	if (dec->debezium)
	{
		/* the envelope by the inner decoder, the tuples by debezium.c */
		if (msg->payload == NULL)
			return NULL;		/* a tombstone: nothing to apply */
		decode_payload(se_debezium_inner(dec->debezium), msg);
		return se_debezium_tuples(dec, tuplecxt);
	}

	if (msg->payload == NULL)
	{
		/* tombstone: every payload column is NULL */
		for (i = 0; i < dec->ncolumns; i++)
			if (dec->columns[i].role == KCOL_DATA)
			{
				dec->nulls[i] = true;
				dec->values[i] = (Datum) 0;
			}
		if (dec->format != KAFKA_FORMAT_TEXT && dec->format != KAFKA_FORMAT_BYTEA)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("message has no payload")));
	}
	else
		decode_payload(dec, msg);

	oldcxt = MemoryContextSwitchTo(tuplecxt);
	tuple = heap_form_tuple(dec->tupdesc, dec->values, dec->nulls);
	MemoryContextSwitchTo(oldcxt);
	return tuple;
}
