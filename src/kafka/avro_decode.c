/*-------------------------------------------------------------------------
 *
 * avro_decode.c
 *	  Decoding of Avro messages into a stream's columns, for the Kafka
 *	  source formats
 *
 *	avro			Avro binary encoding of one record, written with the
 *					schema given in the option "schema";
 *	avro-confluent	Confluent's wire format: magic byte 0, the writer
 *					schema's id (4 bytes, big-endian), the Avro binary;
 *					schemas are fetched by id from the schema registry of
 *					the option "schema_registry" (registry.c) and cached
 *					for as long as the worker runs.
 *
 * Records are read with avro-c (Debian's libavro) into a generic value of
 * the writer schema.  Column c takes the field named c, or the one at the
 * path of the option "paths" (nested records, through unions with null).
 *
 * Schema evolution.  With the option "reader_schema" each writer schema is
 * resolved against it by Avro's rules, for the fields the columns read:
 * record names must match, a reader field the writer lacks takes the
 * reader's default (no default: the writer schema is incompatible), a
 * writer field the reader lacks is ignored, and each column's writer type
 * must resolve to the reader's type (avro_resolved_writer_new(): int ->
 * long/float/double, string <-> bytes, unions, enums...).  Without it the
 * columns' mapping is the reader: a path the writer schema lacks gives
 * NULL.  A message whose writer schema is incompatible, unknown to the
 * registry, or whose payload is truncated or garbage, raises an ordinary
 * error (the worker makes it a dead letter with that reason); a registry
 * that does not answer raises class 08 (the batch is retried).
 *
 * avro-c has no logical types and no field defaults, so the schema's JSON
 * is read too (as jsonb): logicalType timestamp-millis/-micros,
 * local-timestamp-millis/-micros, date, time-millis/-micros, uuid and
 * decimal (bytes or fixed) are converted accordingly.  Values become Datums
 * directly where the column has the value's natural type (bigint, integer,
 * double precision, boolean, text, bytea, timestamptz, timestamp, date,
 * numeric, uuid); any other column type gets the natural type's text form
 * through the column's input function (so domains' CHECKs apply).  Records,
 * arrays and maps in a column give avro-c's JSON of them.
 *
 * Before avro-c reads a payload, check_binary() walks it against the
 * writer schema: every length, count, union branch and enum index must fit
 * the payload, nothing may follow the record, and zero-width array items
 * are bounded -- so garbage never makes avro-c allocate by a length it read
 * or loop on a forged count.  Schemas in which a record contains itself
 * other than through a union, array or map are refused (avro-c would
 * recurse forever building a value of them).
 *
 * avro-c objects are malloc'd by libavro; they are freed by a reset
 * callback of the memory context the decoder lives in.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <avro.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "kafka/avro_decode.h"
#include "kafka/registry.h"

#define NEGATIVE_CACHE_MS	30000	/* retry a schema id the registry refused */
#define NEGATIVE_CACHE_MAX	1000	/* refusals remembered at most */

typedef enum AvroLogical
{
	LT_NONE,
	LT_TS_MILLIS,
	LT_TS_MICROS,
	LT_LOCAL_TS_MILLIS,
	LT_LOCAL_TS_MICROS,
	LT_DATE,
	LT_TIME_MILLIS,
	LT_TIME_MICROS,
	LT_UUID,
	LT_DECIMAL
} AvroLogical;

typedef struct LeafInfo
{
	AvroLogical lt;
	int			scale;			/* decimal */
	char		kind;			/* base type, first letter; for defaults:
								 * 'i'nt/'l'ong, 'f'loat/'d'ouble, 's'tring,
								 * 'b'ytes/fi'x'ed, ... */
} LeafInfo;

typedef enum PlanKind
{
	CP_PATH,					/* read from the record */
	CP_NULL,					/* the writer lacks the path: NULL */
	CP_DEFAULT					/* the writer lacks it: the reader's default */
} PlanKind;

/* how one column is read from records of one writer schema */
typedef struct ColumnPlan
{
	PlanKind	kind;
	int			nsteps;
	int		   *field;			/* field index in the record of each step */
	int		   *branch;			/* union branch holding that record, or -1 */
	int			nleaf;			/* 0: the leaf is no union; else its size */
	LeafInfo   *leaf;			/* [Max(nleaf, 1)] */
	Datum		defval;			/* CP_DEFAULT */
	bool		defnull;
} ColumnPlan;

/* a writer schema and how to read the columns from its records */
typedef struct SchemaEntry
{
	int32		id;				/* avro-confluent: registry id */
	char	   *error;			/* not usable: why (then nothing below) */
	TimestampTz failed_at;
	avro_schema_t schema;
	avro_value_iface_t *iface;
	avro_value_t value;
	bool		have_value;
	ColumnPlan *plans;			/* [dec->ncolumns], KCOL_DATA ones set */
	struct SchemaEntry *next;
} SchemaEntry;

/* a schema's JSON and its named types */
typedef struct SchemaJson
{
	Jsonb	   *jb;
	JsonbValue	root;
	int			nnames;
	char	  **names;			/* full names */
	JsonbValue *defs;
} SchemaJson;

typedef struct SeAvroDecoder
{
	bool		confluent;
	MemoryContext cxt;			/* where the decoder and its cache live */
	SeRegistryConf reg;
	SchemaJson *reader;			/* option reader_schema, or NULL */
	avro_schema_t reader_schema;
	SchemaEntry *plain;			/* format avro: the writer schema */
	SchemaEntry *entries;		/* avro-confluent: by id, most recent first */
	int			nrefused;		/* entries remembering a registry refusal */
	avro_reader_t areader;
	MemoryContextCallback cb;
} SeAvroDecoder;

static const char *const primitive_names[] = {
	"null", "boolean", "int", "long", "float", "double", "bytes", "string"
};

/* ----------------------------------------------------------------
 * avro-c objects: freed when the decoder's context goes
 * ----------------------------------------------------------------
 */

static void
free_entry_avro(SchemaEntry *e)
{
	if (e->have_value)
		avro_value_decref(&e->value);
	if (e->iface)
		avro_value_iface_decref(e->iface);
	if (e->schema)
		avro_schema_decref(e->schema);
	e->have_value = false;
	e->iface = NULL;
	e->schema = NULL;
}

static void
avro_decoder_free(void *arg)
{
	SeAvroDecoder *ad = (SeAvroDecoder *) arg;
	SchemaEntry *e;

	if (ad->plain)
		free_entry_avro(ad->plain);
	for (e = ad->entries; e; e = e->next)
		free_entry_avro(e);
	if (ad->reader_schema)
		avro_schema_decref(ad->reader_schema);
	if (ad->areader)
		avro_reader_free(ad->areader);
}

/* ----------------------------------------------------------------
 * The schema's JSON (for names, logical types, defaults)
 * ----------------------------------------------------------------
 */

static bool
jget(const JsonbValue *obj, const char *key, JsonbValue *out)
{
	if (obj->type != jbvBinary || !JsonContainerIsObject(obj->val.binary.data))
		return false;
	return getKeyJsonValueFromContainer(obj->val.binary.data, key, strlen(key), out) != NULL;
}

static char *
jstring(const JsonbValue *v)
{
	return v->type == jbvString ? pnstrdup(v->val.string.val, v->val.string.len) : NULL;
}

static char *
jget_string(const JsonbValue *obj, const char *key)
{
	JsonbValue	v;

	return jget(obj, key, &v) ? jstring(&v) : NULL;
}

static int
jarray_size(const JsonbValue *v)
{
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return -1;
	return JsonContainerSize(v->val.binary.data);
}

static void
jarray_get(const JsonbValue *v, int i, JsonbValue *out)
{
	*out = *getIthJsonbValueFromContainer(v->val.binary.data, i);
}

static bool
is_primitive(const char *name)
{
	int			i;

	for (i = 0; i < lengthof(primitive_names); i++)
		if (strcmp(name, primitive_names[i]) == 0)
			return true;
	return false;
}

static const char *
short_name(const char *full)
{
	const char *dot = strrchr(full, '.');

	return dot ? dot + 1 : full;
}

/* register the named types (record, enum, fixed) defined in t */
static void
collect_names(SchemaJson *sj, const JsonbValue *t, const char *ns)
{
	JsonbValue	tv;
	char	   *type;
	int			n,
				i;

	check_stack_depth();
	if ((n = jarray_size(t)) >= 0)
	{
		for (i = 0; i < n; i++)
		{
			JsonbValue	b;

			jarray_get(t, i, &b);
			collect_names(sj, &b, ns);
		}
		return;
	}
	if (!jget(t, "type", &tv))
		return;
	if ((type = jstring(&tv)) == NULL)
	{
		collect_names(sj, &tv, ns);
		return;
	}
	if (strcmp(type, "record") == 0 || strcmp(type, "error") == 0 ||
		strcmp(type, "enum") == 0 || strcmp(type, "fixed") == 0)
	{
		char	   *name = jget_string(t, "name");
		char	   *space = jget_string(t, "namespace");
		char	   *full;
		JsonbValue	fields;

		if (name == NULL)
			return;
		if (space == NULL)
			space = (char *) ns;
		full = strchr(name, '.') || space == NULL || space[0] == '\0' ?
			name : psprintf("%s.%s", space, name);
		if (sj->nnames % 16 == 0)
		{
			sj->names = sj->names ? repalloc(sj->names, sizeof(char *) * (sj->nnames + 16)) :
				palloc(sizeof(char *) * 16);
			sj->defs = sj->defs ? repalloc(sj->defs, sizeof(JsonbValue) * (sj->nnames + 16)) :
				palloc(sizeof(JsonbValue) * 16);
		}
		sj->names[sj->nnames] = full;
		sj->defs[sj->nnames] = *t;
		sj->nnames++;
		if (strcmp(type, "enum") != 0 && strcmp(type, "fixed") != 0 &&
			(n = jget(t, "fields", &fields) ? jarray_size(&fields) : -1) > 0)
		{
			const char *dot = strrchr(full, '.');
			char	   *inner = dot ? pnstrdup(full, dot - full) : NULL;

			for (i = 0; i < n; i++)
			{
				JsonbValue	f,
							ft;

				jarray_get(&fields, i, &f);
				if (jget(&f, "type", &ft))
					collect_names(sj, &ft, inner);
			}
		}
	}
	else if (strcmp(type, "array") == 0 && jget(t, "items", &tv))
		collect_names(sj, &tv, ns);
	else if (strcmp(type, "map") == 0 && jget(t, "values", &tv))
		collect_names(sj, &tv, ns);
}

/*
 * The definition of type t: named references followed, {"type": {...}}
 * unwrapped.  false if a name is undefined.
 */
static bool
resolve_type(const SchemaJson *sj, const JsonbValue *t, JsonbValue *out)
{
	JsonbValue	cur = *t;
	int			hops;

	for (hops = 0; hops < 64; hops++)
	{
		char	   *s = jstring(&cur);
		JsonbValue	tv;
		int			i;

		if (s != NULL)
		{
			if (is_primitive(s))
				break;
			for (i = 0; i < sj->nnames; i++)
				if (strcmp(sj->names[i], s) == 0)
					break;
			if (i == sj->nnames)
				for (i = 0; i < sj->nnames; i++)
					if (strcmp(short_name(sj->names[i]), short_name(s)) == 0)
						break;
			if (i == sj->nnames)
				return false;
			cur = sj->defs[i];
			continue;
		}
		if (jget(&cur, "type", &tv) && tv.type != jbvString)
		{
			cur = tv;
			continue;
		}
		break;
	}
	*out = cur;
	return true;
}

/* "record", "union", "long", ... of a resolved type */
static char *
type_kind(const JsonbValue *t)
{
	char	   *s = jstring(t);

	if (s)
		return s;
	if (jarray_size(t) >= 0)
		return "union";
	s = jget_string(t, "type");
	if (s && strcmp(s, "error") == 0)
		return "record";
	return s ? s : "?";
}

static bool
jget_int(const JsonbValue *obj, const char *key, int *out)
{
	JsonbValue	v;

	if (!jget(obj, key, &v) || v.type != jbvNumeric)
		return false;
	*out = DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(v.val.numeric)));
	return true;
}

/* the logical type of a resolved type (invalid ones are ignored, as Avro says) */
static void
leaf_info(const JsonbValue *t, LeafInfo *li)
{
	char	   *kind = type_kind(t);
	char	   *lt = jget_string(t, "logicalType");
	int			precision = 0;

	memset(li, 0, sizeof(*li));
	li->kind = strcmp(kind, "fixed") == 0 ? 'x' : kind[0];
	if (lt == NULL)
		return;
	if (strcmp(kind, "long") == 0)
	{
		if (strcmp(lt, "timestamp-millis") == 0)
			li->lt = LT_TS_MILLIS;
		else if (strcmp(lt, "timestamp-micros") == 0)
			li->lt = LT_TS_MICROS;
		else if (strcmp(lt, "local-timestamp-millis") == 0)
			li->lt = LT_LOCAL_TS_MILLIS;
		else if (strcmp(lt, "local-timestamp-micros") == 0)
			li->lt = LT_LOCAL_TS_MICROS;
		else if (strcmp(lt, "time-micros") == 0)
			li->lt = LT_TIME_MICROS;
	}
	else if (strcmp(kind, "int") == 0)
	{
		if (strcmp(lt, "date") == 0)
			li->lt = LT_DATE;
		else if (strcmp(lt, "time-millis") == 0)
			li->lt = LT_TIME_MILLIS;
	}
	else if (strcmp(lt, "uuid") == 0 &&
			 (strcmp(kind, "string") == 0 || strcmp(kind, "fixed") == 0))
		li->lt = LT_UUID;
	else if (strcmp(lt, "decimal") == 0 &&
			 (strcmp(kind, "bytes") == 0 || strcmp(kind, "fixed") == 0) &&
			 jget_int(t, "precision", &precision) && precision > 0)
	{
		int			scale = 0;

		if (!jget_int(t, "scale", &scale))
			scale = 0;
		/* numeric's own limit on the scale: larger is no decimal we can hold */
		if (scale >= 0 && scale <= precision && scale <= NUMERIC_MAX_SCALE)
		{
			li->lt = LT_DECIMAL;
			li->scale = scale;
		}
	}
}

/* parse a schema's JSON; ereports 22023 naming the option */
static SchemaJson *
schema_json(const char *json, const char *what)
{
	SchemaJson *sj = palloc0(sizeof(SchemaJson));
	JsonLexContext *lex = makeJsonLexContextCstringLen((char *) json, strlen(json),
													   GetDatabaseEncoding(), true);

	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not valid JSON", what)));
	sj->jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
	if (JB_ROOT_IS_SCALAR(sj->jb))
	{
		JsonbValue	v;

		/* a bare name such as "string": not a record anyway */
		(void) JsonbExtractScalar(&sj->jb->root, &v);
		sj->root = v;
	}
	else
	{
		sj->root.type = jbvBinary;
		sj->root.val.binary.data = &sj->jb->root;
		sj->root.val.binary.len = VARSIZE(sj->jb) - VARHDRSZ;
	}
	collect_names(sj, &sj->root, NULL);
	return sj;
}

/* ----------------------------------------------------------------
 * avro-c schemas
 * ----------------------------------------------------------------
 */

static avro_schema_t
deref(avro_schema_t s)
{
	int			hops = 0;

	while (s && is_avro_link(s) && hops++ < 64)
		s = avro_schema_link_target(s);
	return s;
}

/* does record s contain itself through record fields only? */
static bool
record_cycle(avro_schema_t s, avro_schema_t *stack, int depth)
{
	size_t		i,
				n;
	int			d;

	s = deref(s);
	if (s == NULL || !is_avro_record(s))
		return false;
	for (d = 0; d < depth; d++)
		if (stack[d] == s)
			return true;
	if (depth >= 64)
		return true;			/* absurdly deep: refuse too */
	stack[depth] = s;
	n = avro_schema_record_size(s);
	for (i = 0; i < n; i++)
		if (record_cycle(avro_schema_record_field_get_by_index(s, (int) i), stack, depth + 1))
			return true;
	return false;
}

/* parse with avro-c; NULL and *error when avro-c refuses it */
static avro_schema_t
avro_schema_parse(const char *json, char **error)
{
	avro_schema_t s = NULL;
	avro_schema_t stack[64];

	if (avro_schema_from_json_length(json, strlen(json), &s) != 0 || s == NULL)
	{
		*error = pstrdup(avro_strerror());
		return NULL;
	}
	if (!is_avro_record(deref(s)))
	{
		avro_schema_decref(s);
		*error = pstrdup("the schema is not a record");
		return NULL;
	}
	if (record_cycle(s, stack, 0))
	{
		avro_schema_decref(s);
		*error = pstrdup("a record contains itself other than through a union, array or map");
		return NULL;
	}
	return s;
}

/* ----------------------------------------------------------------
 * Values -> Datums
 * ----------------------------------------------------------------
 */

static Datum
input_value(KafkaColumn *col, char *str)
{
	return InputFunctionCall(&col->input, str, col->typioparam, col->typmod);
}

/* a value of natural type natural (output function outfn) into col */
static Datum
to_column(KafkaColumn *col, Datum d, Oid natural, PGFunction outfn)
{
	if (col->typid == natural && col->typmod < 0)
		return d;
	return input_value(col, DatumGetCString(DirectFunctionCall1(outfn, d)));
}

static Datum
conv_long(KafkaColumn *col, int64 v, const LeafInfo *li)
{
	char		buf[32];

	switch (li->lt)
	{
		case LT_TS_MILLIS:
		case LT_TS_MICROS:
		case LT_LOCAL_TS_MILLIS:
		case LT_LOCAL_TS_MICROS:
			{
				int64		us = v;
				Timestamp	ts;
				bool		local = li->lt == LT_LOCAL_TS_MILLIS || li->lt == LT_LOCAL_TS_MICROS;

				if ((li->lt == LT_TS_MILLIS || li->lt == LT_LOCAL_TS_MILLIS) &&
					pg_mul_s64_overflow(v, 1000, &us))
					us = PG_INT64_MAX;
				if (pg_sub_s64_overflow(us, (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY, &ts) ||
					!IS_VALID_TIMESTAMP(ts))
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("timestamp out of range: " INT64_FORMAT, v)));
				if (local)
					return to_column(col, TimestampGetDatum(ts), TIMESTAMPOID, timestamp_out);
				return to_column(col, TimestampTzGetDatum(ts), TIMESTAMPTZOID, timestamptz_out);
			}
		case LT_DATE:
			{
				DateADT		d;

				if (v < PG_INT32_MIN + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) ||
					v > PG_INT32_MAX ||
					!IS_VALID_DATE(d = (DateADT) (v - (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE))))
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("date out of range: " INT64_FORMAT " days", v)));
				return to_column(col, DateADTGetDatum(d), DATEOID, date_out);
			}
		case LT_TIME_MILLIS:
		case LT_TIME_MICROS:
			{
				int64		us = v;

				if (li->lt == LT_TIME_MILLIS && pg_mul_s64_overflow(v, 1000, &us))
					us = -1;
				if (v < 0 || us < 0 || us > USECS_PER_DAY)
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("time of day out of range: " INT64_FORMAT, v)));
				return to_column(col, TimeADTGetDatum(us), TIMEOID, time_out);
			}
		default:
			break;
	}
	if (col->typmod < 0)
		switch (col->typid)
		{
			case INT8OID:
				return Int64GetDatum(v);
			case INT4OID:
				if (v >= PG_INT32_MIN && v <= PG_INT32_MAX)
					return Int32GetDatum((int32) v);
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("integer out of range")));
				break;
			case FLOAT8OID:
				return Float8GetDatum((float8) v);
			case NUMERICOID:
				return NumericGetDatum(int64_to_numeric(v));
			default:
				break;
		}
	snprintf(buf, sizeof(buf), INT64_FORMAT, v);
	return input_value(col, buf);
}

static Datum
conv_double(KafkaColumn *col, double v)
{
	if (col->typid == FLOAT8OID)
		return Float8GetDatum(v);
	return input_value(col, float8out_internal(v));
}

static Datum
conv_bool(KafkaColumn *col, bool v)
{
	if (col->typid == BOOLOID)
		return BoolGetDatum(v);
	return input_value(col, v ? "true" : "false");
}

/* a string of len bytes (not NUL-terminated) */
static Datum
conv_string(KafkaColumn *col, const char *s, size_t len, const LeafInfo *li)
{
	if (len > MaxAllocSize - VARHDRSZ - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("string too long")));
	/* also rejects NUL bytes */
	(void) pg_verify_mbstr(GetDatabaseEncoding(), s, (int) len, false);
	if (li->lt != LT_UUID && (col->typid == TEXTOID ||
							  (col->typid == VARCHAROID && col->typmod < 0)))
		return PointerGetDatum(cstring_to_text_with_len(s, (int) len));
	return input_value(col, pnstrdup(s, len));
}

/* a decimal's unscaled two's-complement big-endian integer, as text */
static char *
decimal_text(const unsigned char *b, size_t len, int scale)
{
	StringInfoData out;
	unsigned char *mag;
	bool		neg = len > 0 && (b[0] & 0x80);
	char	   *digits;
	int			nd = 0;
	size_t		i;

	if (len > 128)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("Avro decimal of %zu bytes is too large", len)));
	mag = palloc(len + 1);
	memcpy(mag, b, len);
	if (neg)
	{
		/* two's complement: invert and add one */
		int			carry = 1;

		for (i = len; i-- > 0;)
		{
			int			x = (unsigned char) ~mag[i] + carry;

			mag[i] = (unsigned char) x;
			carry = x >> 8;
		}
	}
	/* repeated division by 10 of the big-endian magnitude */
	digits = palloc(len * 3 + scale + 2);
	for (;;)
	{
		int			rem = 0;
		bool		zero = true;

		for (i = 0; i < len; i++)
		{
			int			cur = rem * 256 + mag[i];

			mag[i] = (unsigned char) (cur / 10);
			rem = cur % 10;
			if (mag[i])
				zero = false;
		}
		digits[nd++] = (char) ('0' + rem);
		if (zero)
			break;
	}
	while (nd <= scale)
		digits[nd++] = '0';
	initStringInfo(&out);
	if (neg)
		appendStringInfoChar(&out, '-');
	for (i = nd; i-- > 0;)
	{
		appendStringInfoChar(&out, digits[i]);
		if ((int) i == scale && scale > 0)
			appendStringInfoChar(&out, '.');
	}
	return out.data;
}

static Datum
conv_bytes(KafkaColumn *col, const void *buf, size_t len, const LeafInfo *li)
{
	bytea	   *b;

	if (li->lt == LT_DECIMAL)
	{
		char	   *s = decimal_text(buf, len, li->scale);

		if (col->typid == NUMERICOID)
			return input_value(col, s);
		return to_column(col, DirectFunctionCall3(numeric_in, CStringGetDatum(s),
												  ObjectIdGetDatum(InvalidOid),
												  Int32GetDatum(-1)),
						 NUMERICOID, numeric_out);
	}
	if (li->lt == LT_UUID && len == UUID_LEN)
	{
		pg_uuid_t  *u = palloc(sizeof(pg_uuid_t));

		memcpy(u->data, buf, UUID_LEN);
		return to_column(col, UUIDPGetDatum(u), UUIDOID, uuid_out);
	}
	if (len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("bytes too long")));
	b = palloc(VARHDRSZ + len);
	SET_VARSIZE(b, VARHDRSZ + len);
	if (len > 0)
		memcpy(VARDATA(b), buf, len);
	return to_column(col, PointerGetDatum(b), BYTEAOID, byteaout);
}

static void pg_attribute_noreturn()
avro_fail(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid Avro %s: %s", what, avro_strerror())));
}

/* value v (no union) into col */
static Datum
conv_value(KafkaColumn *col, avro_value_t *v, const LeafInfo *li, bool *isnull)
{
	*isnull = false;
	switch (avro_value_get_type(v))
	{
		case AVRO_NULL:
			*isnull = true;
			return (Datum) 0;
		case AVRO_BOOLEAN:
			{
				int			b = 0;

				avro_value_get_boolean(v, &b);
				return conv_bool(col, b != 0);
			}
		case AVRO_INT32:
			{
				int32_t		i = 0;

				avro_value_get_int(v, &i);
				return conv_long(col, i, li);
			}
		case AVRO_INT64:
			{
				int64_t		l = 0;

				avro_value_get_long(v, &l);
				return conv_long(col, l, li);
			}
		case AVRO_FLOAT:
			{
				float		f = 0;

				avro_value_get_float(v, &f);
				return conv_double(col, f);
			}
		case AVRO_DOUBLE:
			{
				double		d = 0;

				avro_value_get_double(v, &d);
				return conv_double(col, d);
			}
		case AVRO_STRING:
			{
				const char *s = NULL;
				size_t		size = 0;

				avro_value_get_string(v, &s, &size);
				/* size counts avro-c's terminating NUL */
				return conv_string(col, s ? s : "", size > 0 ? size - 1 : 0, li);
			}
		case AVRO_BYTES:
			{
				const void *b = NULL;
				size_t		size = 0;

				avro_value_get_bytes(v, &b, &size);
				return conv_bytes(col, b, size, li);
			}
		case AVRO_FIXED:
			{
				const void *b = NULL;
				size_t		size = 0;

				avro_value_get_fixed(v, &b, &size);
				return conv_bytes(col, b, size, li);
			}
		case AVRO_ENUM:
			{
				int			idx = 0;
				const char *sym;
				LeafInfo	none = {LT_NONE, 0, 's'};

				avro_value_get_enum(v, &idx);
				sym = avro_schema_enum_get(avro_value_get_schema(v), idx);
				if (sym == NULL)
					avro_fail("enum value");
				return conv_string(col, sym, strlen(sym), &none);
			}
		default:
			{
				/* record, array, map: avro-c's JSON of it */
				char	   *json = NULL;
				char	   *copy;

				if (avro_value_to_json(v, 1, &json) != 0 || json == NULL)
					avro_fail("value (cannot render it as JSON)");
				copy = pstrdup(json);
				free(json);
				return input_value(col, copy);
			}
	}
}

/* a reader default (JSON) into col, as a value of the reader's leaf type */
static Datum
conv_default(KafkaColumn *col, JsonbValue *dv, const LeafInfo *li, bool *isnull)
{
	*isnull = false;
	switch (dv->type)
	{
		case jbvNull:
			*isnull = true;
			return (Datum) 0;
		case jbvBool:
			return conv_bool(col, dv->val.boolean);
		case jbvNumeric:
			if (li->kind == 'i' || li->kind == 'l')
				return conv_long(col, DatumGetInt64(DirectFunctionCall1(numeric_int8,
																		NumericGetDatum(dv->val.numeric))),
								 li);
			if (li->kind == 'f' || li->kind == 'd')
				return conv_double(col, DatumGetFloat8(DirectFunctionCall1(numeric_float8,
																		   NumericGetDatum(dv->val.numeric))));
			return input_value(col, DatumGetCString(DirectFunctionCall1(numeric_out,
																		NumericGetDatum(dv->val.numeric))));
		case jbvString:
			return conv_string(col, dv->val.string.val, dv->val.string.len, li);
		default:
			return input_value(col, JsonbToCString(NULL, dv->val.binary.data,
												   dv->val.binary.len));
	}
}

/* ----------------------------------------------------------------
 * Plans: how each column is read from records of a writer schema
 * ----------------------------------------------------------------
 */

/* a type and its avro-c schema, walked together */
typedef struct TypeRef
{
	JsonbValue	json;			/* resolved */
	avro_schema_t as;
} TypeRef;

/* the field named name of record t (JSON), its index or -1 */
static int
record_field(const JsonbValue *rec, const char *name, JsonbValue *field, bool aliases)
{
	JsonbValue	fields;
	int			n,
				i;

	if (!jget(rec, "fields", &fields) || (n = jarray_size(&fields)) < 0)
		return -1;
	for (i = 0; i < n; i++)
	{
		char	   *fname;
		JsonbValue	al;
		int			na,
					j;

		jarray_get(&fields, i, field);
		fname = jget_string(field, "name");
		if (fname && strcmp(fname, name) == 0)
			return i;
		if (aliases && jget(field, "aliases", &al) && (na = jarray_size(&al)) > 0)
			for (j = 0; j < na; j++)
			{
				JsonbValue	a;
				char	   *s;

				jarray_get(&al, j, &a);
				if ((s = jstring(&a)) && strcmp(s, name) == 0)
					return i;
			}
	}
	return -1;
}

/* t's record (t itself, or its first record branch: *branch); false if none */
static bool
record_of(const SchemaJson *sj, TypeRef *t, int *branch)
{
	int			n,
				i;

	*branch = -1;
	if (strcmp(type_kind(&t->json), "union") == 0)
	{
		n = jarray_size(&t->json);
		for (i = 0; i < n; i++)
		{
			JsonbValue	b,
						r;

			jarray_get(&t->json, i, &b);
			if (resolve_type(sj, &b, &r) && strcmp(type_kind(&r), "record") == 0)
			{
				*branch = i;
				t->json = r;
				if (t->as)
					t->as = deref(avro_schema_union_branch(t->as, i));
				return true;
			}
		}
		return false;
	}
	return strcmp(type_kind(&t->json), "record") == 0;
}

/* step into field index i of record t */
static bool
step_field(const SchemaJson *sj, TypeRef *t, const JsonbValue *field, int i)
{
	JsonbValue	ft;

	if (!jget(field, "type", &ft) || !resolve_type(sj, &ft, &t->json))
		return false;
	if (t->as)
		t->as = deref(avro_schema_record_field_get_by_index(t->as, i));
	return true;
}

static void
set_leaf(const SchemaJson *sj, ColumnPlan *p, const TypeRef *t)
{
	if (strcmp(type_kind(&t->json), "union") == 0)
	{
		int			i;

		p->nleaf = jarray_size(&t->json);
		p->leaf = palloc0(sizeof(LeafInfo) * Max(p->nleaf, 1));
		for (i = 0; i < p->nleaf; i++)
		{
			JsonbValue	b,
						r;

			jarray_get(&t->json, i, &b);
			if (resolve_type(sj, &b, &r))
				leaf_info(&r, &p->leaf[i]);
		}
	}
	else
	{
		p->nleaf = 0;
		p->leaf = palloc0(sizeof(LeafInfo));
		leaf_info(&t->json, &p->leaf[0]);
	}
}

static const char *
path_text(const KafkaColumn *col, int upto)
{
	StringInfoData s;
	int			k;

	initStringInfo(&s);
	for (k = 0; k <= upto && k < col->npath; k++)
		appendStringInfo(&s, "%s%s", k ? "." : "", col->path[k]);
	return s.data;
}

/*
 * Plan column col for writer schema w (JSON wj, avro-c ws), resolved
 * against the reader schema if there is one.  Returns NULL, or why the
 * writer schema cannot be read (incompatible).
 */
static char *
plan_column(SeAvroDecoder *ad, KafkaColumn *col, const SchemaJson *wj,
			avro_schema_t ws, ColumnPlan *p)
{
	const SchemaJson *rj = ad->reader;
	TypeRef		w = {wj->root, deref(ws)};
	TypeRef		r;
	int			k;

	memset(p, 0, sizeof(*p));
	p->kind = CP_PATH;
	p->nsteps = col->npath;
	p->field = palloc(sizeof(int) * col->npath);
	p->branch = palloc(sizeof(int) * col->npath);
	if (!resolve_type(wj, &wj->root, &w.json))
		return psprintf("the writer schema refers to an undefined type");
	if (rj)
	{
		r.json = rj->root;
		r.as = deref(ad->reader_schema);
		if (!resolve_type(rj, &rj->root, &r.json))
			return psprintf("the reader schema refers to an undefined type");
	}

	for (k = 0; k < col->npath; k++)
	{
		JsonbValue	wf,
					rf;
		int			wi,
					ri = -1,
					rbranch;
		char	   *rname = NULL;

		if (rj)
		{
			if (!record_of(rj, &r, &rbranch) ||
				(ri = record_field(&r.json, col->path[k], &rf, false)) < 0)
				return psprintf("the reader schema has no field \"%s\"", path_text(col, k));
			rname = jget_string(&r.json, "name");
		}
		if (!record_of(wj, &w, &p->branch[k]))
			return psprintf("field \"%s\" of the writer schema is a %s, not a record",
							path_text(col, k - 1), type_kind(&w.json));
		if (rname)
		{
			char	   *wname = jget_string(&w.json, "name");

			if (wname == NULL || strcmp(short_name(wname), short_name(rname)) != 0)
				return psprintf("record \"%s\" of the writer schema does not match record \"%s\" of the reader schema",
								wname ? wname : "?", rname);
		}
		wi = record_field(&w.json, col->path[k], &wf, false);
		if (wi < 0 && rj)
		{
			/* the reader field's aliases name the writer's field */
			JsonbValue	al;
			int			na,
						j;

			if (jget(&rf, "aliases", &al) && (na = jarray_size(&al)) > 0)
				for (j = 0; j < na && wi < 0; j++)
				{
					JsonbValue	a;
					char	   *s;

					jarray_get(&al, j, &a);
					if ((s = jstring(&a)) != NULL)
						wi = record_field(&w.json, s, &wf, false);
				}
		}
		if (wi < 0)
		{
			JsonbValue	dv;
			int			j;

			if (!rj)
			{
				p->kind = CP_NULL;
				return NULL;
			}
			if (!jget(&rf, "default", &dv))
				return psprintf("field \"%s\" of the reader schema is not in the writer schema and has no default",
								path_text(col, k));
			/* the default, down the rest of the path */
			if (!step_field(rj, &r, &rf, ri))
				return psprintf("the reader schema refers to an undefined type");
			for (j = k + 1; j < col->npath; j++)
			{
				JsonbValue	sub,
							f2;
				int			b2,
							i2;

				if (!jget(&dv, col->path[j], &sub) ||
					!record_of(rj, &r, &b2) ||
					(i2 = record_field(&r.json, col->path[j], &f2, false)) < 0 ||
					!step_field(rj, &r, &f2, i2))
				{
					dv.type = jbvNull;
					break;
				}
				dv = sub;
			}
			p->kind = CP_DEFAULT;
			set_leaf(rj, p, &r);
			/* a union's default is of its first branch */
			{
				MemoryContext old = MemoryContextSwitchTo(ad->cxt);

				p->defval = conv_default(col, &dv, &p->leaf[0], &p->defnull);
				MemoryContextSwitchTo(old);
			}
			return NULL;
		}
		p->field[k] = wi;
		if (!step_field(wj, &w, &wf, wi))
			return psprintf("the writer schema refers to an undefined type");
		if (rj && !step_field(rj, &r, &rf, ri))
			return psprintf("the reader schema refers to an undefined type");
	}
	set_leaf(wj, p, &w);

	if (rj && w.as && r.as)
	{
		/* Avro's resolution of the leaf types, by avro-c */
		avro_value_iface_t *res = avro_resolved_writer_new(w.as, r.as);

		if (res == NULL)
			return psprintf("field \"%s\": the writer's type cannot be read as the reader's: %s",
							path_text(col, col->npath - 1), avro_strerror());
		avro_value_iface_decref(res);
	}
	return NULL;
}

/*
 * Build the entry of writer schema json (in ad->cxt): parse it, plan every
 * data column.  e->error says why it cannot be used.
 */
static void
build_entry(SeAvroDecoder *ad, KafkaDecoder *dec, SchemaEntry *e, const char *json)
{
	MemoryContext old = MemoryContextSwitchTo(ad->cxt);
	SchemaJson *wj;
	char	   *error = NULL;
	int			i;

	e->schema = avro_schema_parse(json, &error);
	if (e->schema == NULL)
	{
		e->error = psprintf("invalid writer schema: %s", error);
		MemoryContextSwitchTo(old);
		return;
	}
	wj = schema_json(json, "the writer schema");
	e->plans = palloc0(sizeof(ColumnPlan) * dec->ncolumns);
	for (i = 0; i < dec->ncolumns && error == NULL; i++)
		if (dec->columns[i].role == KCOL_DATA)
			error = plan_column(ad, &dec->columns[i], wj, e->schema, &e->plans[i]);
	if (error)
	{
		e->error = error;
		free_entry_avro(e);
		MemoryContextSwitchTo(old);
		return;
	}
	e->iface = avro_generic_class_from_schema(e->schema);
	if (e->iface == NULL || avro_generic_value_new(e->iface, &e->value) != 0)
		e->error = psprintf("avro-c cannot build values of the writer schema: %s",
							avro_strerror());
	else
		e->have_value = true;
	MemoryContextSwitchTo(old);
}

/* ----------------------------------------------------------------
 * The payload
 * ----------------------------------------------------------------
 */

typedef struct BinCheck
{
	const unsigned char *p;
	const unsigned char *end;
	const unsigned char *start;
	int64		budget;			/* array/map items left */
} BinCheck;

static void pg_attribute_noreturn()
bin_error(BinCheck *c, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid Avro payload at byte %d: %s", (int) (c->p - c->start), what)));
}

/* a zig-zag varint of at most maxbytes bytes */
static int64
bin_varint(BinCheck *c, int maxbytes)
{
	uint64		u = 0;
	int			shift = 0;
	int			n = 0;

	for (;;)
	{
		unsigned char b;

		if (c->p >= c->end)
			bin_error(c, "truncated");
		if (n++ >= maxbytes)
			bin_error(c, "integer too long");
		b = *c->p++;
		u |= (uint64) (b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
		shift += 7;
	}
	return (int64) (u >> 1) ^ -(int64) (u & 1);
}

static void
bin_skip(BinCheck *c, int64 n)
{
	if (n < 0 || n > c->end - c->p)
		bin_error(c, "truncated");
	c->p += n;
}

/* walk one value of schema s */
static void
check_binary(BinCheck *c, avro_schema_t s)
{
	check_stack_depth();
	s = deref(s);
	switch (avro_typeof(s))
	{
		case AVRO_NULL:
			break;
		case AVRO_BOOLEAN:
			if (c->p >= c->end)
				bin_error(c, "truncated");
			if (*c->p > 1)
				bin_error(c, "boolean is neither 0 nor 1");
			c->p++;
			break;
		case AVRO_INT32:
			{
				int64		v = bin_varint(c, 5);

				if (v < PG_INT32_MIN || v > PG_INT32_MAX)
					bin_error(c, "int out of range");
				break;
			}
		case AVRO_INT64:
			(void) bin_varint(c, 10);
			break;
		case AVRO_FLOAT:
			bin_skip(c, 4);
			break;
		case AVRO_DOUBLE:
			bin_skip(c, 8);
			break;
		case AVRO_STRING:
		case AVRO_BYTES:
			bin_skip(c, bin_varint(c, 10));
			break;
		case AVRO_FIXED:
			bin_skip(c, avro_schema_fixed_size(s));
			break;
		case AVRO_ENUM:
			{
				int64		v = bin_varint(c, 10);

				if (v < 0 || v >= avro_schema_enum_number_of_symbols(s))
					bin_error(c, "enum index out of range");
				break;
			}
		case AVRO_UNION:
			{
				int64		v = bin_varint(c, 10);

				if (v < 0 || v >= (int64) avro_schema_union_size(s))
					bin_error(c, "union branch out of range");
				check_binary(c, avro_schema_union_branch(s, (int) v));
				break;
			}
		case AVRO_RECORD:
			{
				size_t		n = avro_schema_record_size(s),
							i;

				for (i = 0; i < n; i++)
					check_binary(c, avro_schema_record_field_get_by_index(s, (int) i));
				break;
			}
		case AVRO_ARRAY:
		case AVRO_MAP:
			{
				bool		map = avro_typeof(s) == AVRO_MAP;
				avro_schema_t item = map ? avro_schema_map_values(s) : avro_schema_array_items(s);

				for (;;)
				{
					int64		count = bin_varint(c, 10);

					if (count == 0)
						break;
					if (count < 0)
					{
						if (count == PG_INT64_MIN)
							bin_error(c, "bad block count");
						count = -count;
						if (bin_varint(c, 10) < 0)
							bin_error(c, "bad block size");
					}
					if (count > c->budget)
						bin_error(c, "too many array or map items");
					c->budget -= count;
					while (count-- > 0)
					{
						if (map)
							bin_skip(c, bin_varint(c, 10));
						check_binary(c, item);
					}
				}
				break;
			}
		default:
			bin_error(c, "unsupported type");
	}
}

/* read payload buf/len, written with e's schema, into e->value */
static void
read_record(SeAvroDecoder *ad, SchemaEntry *e, const char *buf, size_t len)
{
	BinCheck	c;

	c.start = c.p = (const unsigned char *) buf;
	c.end = c.p + len;
	c.budget = (int64) len + 1024;
	check_binary(&c, e->schema);
	if (c.p != c.end)
		bin_error(&c, psprintf("%d bytes after the record", (int) (c.end - c.p)));

	if (ad->areader == NULL)
	{
		ad->areader = avro_reader_memory(buf, len);
		if (ad->areader == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}
	else
		avro_reader_memory_set_source(ad->areader, buf, len);
	if (avro_value_read(ad->areader, &e->value) != 0)
		avro_fail("payload");
}

/* the columns of the record in e->value */
static void
record_columns(KafkaDecoder *dec, SchemaEntry *e)
{
	int			i;

	for (i = 0; i < dec->ncolumns; i++)
	{
		KafkaColumn *col = &dec->columns[i];
		ColumnPlan *p = &e->plans[i];
		avro_value_t v = e->value;
		const LeafInfo *li;
		int			k;

		if (col->role != KCOL_DATA)
			continue;
		dec->nulls[i] = true;
		dec->values[i] = (Datum) 0;
		if (p->kind == CP_NULL)
			continue;
		if (p->kind == CP_DEFAULT)
		{
			dec->nulls[i] = p->defnull;
			dec->values[i] = p->defval;
			continue;
		}
		for (k = 0; k < p->nsteps; k++)
		{
			avro_value_t child;

			if (p->branch[k] >= 0)
			{
				int			d = -1;

				if (avro_value_get_discriminant(&v, &d) != 0 ||
					avro_value_get_current_branch(&v, &child) != 0)
					avro_fail("union");
				if (d != p->branch[k])
				{
					if (avro_value_get_type(&child) == AVRO_NULL)
						break;	/* NULL */
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("field \"%s\" of the Avro record is not a record",
									path_text(col, k - 1))));
				}
				v = child;
			}
			if (avro_value_get_by_index(&v, p->field[k], &child, NULL) != 0)
				avro_fail("record");
			v = child;
		}
		if (k < p->nsteps)
			continue;
		li = &p->leaf[0];
		if (avro_value_get_type(&v) == AVRO_UNION)
		{
			avro_value_t child;
			int			d = -1;

			if (avro_value_get_discriminant(&v, &d) != 0 ||
				avro_value_get_current_branch(&v, &child) != 0 ||
				d < 0 || d >= Max(p->nleaf, 1))
				avro_fail("union");
			li = &p->leaf[p->nleaf > 0 ? d : 0];
			v = child;
		}
		if (col->presence_only)
		{
			/* is there a value (debezium.c: "before", "after")? */
			dec->nulls[i] = avro_value_get_type(&v) == AVRO_NULL;
			continue;
		}
		dec->values[i] = conv_value(col, &v, li, &dec->nulls[i]);
	}
}

/* ----------------------------------------------------------------
 * avro-confluent: schemas by id
 * ----------------------------------------------------------------
 */

static SchemaEntry *
schema_by_id(SeAvroDecoder *ad, KafkaDecoder *dec, int32 id)
{
	SchemaEntry *e;
	SchemaEntry **prev;
	char	   *json = NULL;
	MemoryContext cxt = CurrentMemoryContext;

	for (prev = &ad->entries; (e = *prev) != NULL; prev = &e->next)
		if (e->id == id)
			break;
	if (e && e->error && e->failed_at != 0 &&
		TimestampDifferenceExceeds(e->failed_at, GetCurrentTimestamp(), NEGATIVE_CACHE_MS))
	{
		/* the registry refused it a while ago: ask again */
		*prev = e->next;
		ad->nrefused--;
		e = NULL;
	}
	if (e)
		return e;

	PG_TRY();
	{
		json = se_registry_fetch_schema(&ad->reg, id, GetUserId());
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(ad->cxt);
		edata = CopyErrorData();
		/* remember a refusal (not an outage) for a while, then rethrow */
		if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_CONNECTION_EXCEPTION &&
			edata->sqlerrcode != ERRCODE_QUERY_CANCELED &&
			ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_INSUFFICIENT_RESOURCES)
		{
			if (ad->nrefused >= NEGATIVE_CACHE_MAX)
			{
				/* messages naming ever new ids: forget the refusals */
				SchemaEntry **p = &ad->entries;

				while (*p)
					if ((*p)->failed_at != 0)
						*p = (*p)->next;
					else
						p = &(*p)->next;
				ad->nrefused = 0;
			}
			ad->nrefused++;
			e = palloc0(sizeof(SchemaEntry));
			e->id = id;
			e->error = pstrdup(edata->message);
			e->failed_at = GetCurrentTimestamp();
			e->next = ad->entries;
			ad->entries = e;
		}
		FreeErrorData(edata);
		MemoryContextSwitchTo(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();

	e = MemoryContextAllocZero(ad->cxt, sizeof(SchemaEntry));
	e->id = id;
	e->next = ad->entries;
	ad->entries = e;			/* registered first: its avro-c objects are freed */
	PG_TRY();
	{
		build_entry(ad, dec, e, json);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* never leave a half-built entry usable */
		MemoryContextSwitchTo(ad->cxt);
		edata = CopyErrorData();
		free_entry_avro(e);
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_INSUFFICIENT_RESOURCES)
			ad->entries = e->next;	/* not the schema's fault: build it again */
		else
			e->error = psprintf("the schema cannot be used: %s", edata->message);
		FreeErrorData(edata);
		MemoryContextSwitchTo(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return e;
}

/* ----------------------------------------------------------------
 * Entry points (decode.c)
 * ----------------------------------------------------------------
 */

/*
 * Set up Avro decoding for dec (formats avro and avro-confluent) from the
 * source's options; ereports 22023 (42501: registry not allowed) on a bad
 * configuration.  Allocates in CurrentMemoryContext, which must live as
 * long as dec.
 */
struct SeAvroDecoder *
se_avro_decoder_create(KafkaDecoder *dec, const KafkaOptions *opts)
{
	SeAvroDecoder *ad = palloc0(sizeof(SeAvroDecoder));
	int			i;

	ad->confluent = dec->format == KAFKA_FORMAT_AVRO_CONFLUENT;
	ad->cxt = CurrentMemoryContext;
	ad->cb.func = avro_decoder_free;
	ad->cb.arg = ad;
	MemoryContextRegisterResetCallback(ad->cxt, &ad->cb);

	if (ad->confluent)
	{
		if (opts->avro_schema)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("format \"avro-confluent\" takes its writer schemas from the schema registry, not from option \"schema\""),
					 errhint("Give the schema that the columns read in option \"reader_schema\".")));
		if (opts->registry_url == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("format \"avro-confluent\" needs option \"schema_registry\""),
					 errhint("Give the registry's URL, e.g. \"http://registry:8081\".")));
		/*
		 * The allow-list as the caller of create_kafka_source; a worker
		 * checks it before each request instead, so that a registry struck
		 * from the list makes dead letters of the messages needing it
		 * rather than a worker that cannot start.
		 */
		se_registry_check_url(opts->registry_url,
							  IsBackgroundWorker ? InvalidOid : GetUserId());
		ad->reg.url = opts->registry_url;
		ad->reg.user = opts->registry_user;
		ad->reg.password = opts->registry_password;
		ad->reg.timeout_ms = opts->registry_timeout_ms;
	}
	else
	{
		if (opts->avro_schema == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("format \"avro\" needs option \"schema\""),
					 errhint("Give the writer schema of the messages, a JSON record schema.")));
		if (opts->registry_url || opts->registry_user || opts->registry_password)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schema registry options apply only to format \"avro-confluent\"")));
	}

	if (opts->avro_reader_schema)
	{
		char	   *error = NULL;

		ad->reader = schema_json(opts->avro_reader_schema, "option \"reader_schema\"");
		ad->reader_schema = avro_schema_parse(opts->avro_reader_schema, &error);
		if (ad->reader_schema == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid Avro schema in option \"reader_schema\": %s", error)));
		/* every column's path must be in the reader schema */
		for (i = 0; i < dec->ncolumns; i++)
		{
			ColumnPlan	p;
			char	   *why;

			if (dec->columns[i].role != KCOL_DATA)
				continue;
			/* the reader resolved against itself */
			why = plan_column(ad, &dec->columns[i], ad->reader, ad->reader_schema, &p);
			if (why)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("column \"%s\" cannot be read with option \"reader_schema\": %s",
								dec->columns[i].name, why)));
		}
	}

	if (!ad->confluent)
	{
		ad->plain = palloc0(sizeof(SchemaEntry));
		build_entry(ad, dec, ad->plain, opts->avro_schema);
		if (ad->plain->error)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"schema\" cannot be used: %s", ad->plain->error)));
		if (!ad->reader)
			for (i = 0; i < dec->ncolumns; i++)
				if (dec->columns[i].role == KCOL_DATA &&
					ad->plain->plans[i].kind == CP_NULL)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("the Avro schema has no field \"%s\" for column \"%s\"",
									path_text(&dec->columns[i], dec->columns[i].npath),
									dec->columns[i].name),
							 errhint("Map columns to fields with option \"paths\", or name the target columns in option \"columns\".")));
	}
	return ad;
}

/* decode msg's payload (not NULL) into dec's data columns */
void
se_avro_decode(KafkaDecoder *dec, const KafkaMessage *msg)
{
	SeAvroDecoder *ad = dec->avro;
	SchemaEntry *e;
	const char *buf = msg->payload;
	size_t		len = msg->len;

	if (ad->confluent)
	{
		const unsigned char *b = (const unsigned char *) buf;
		int32		id;

		if (len < 5)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("message of %zu bytes is too short for the Confluent wire format", len),
					 errdetail("It starts with a magic byte 0 and a 4-byte schema id.")));
		if (b[0] != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("message does not start with the Confluent wire format's magic byte 0 (it starts with %d)",
							(int) b[0])));
		id = (int32) (((uint32) b[1] << 24) | ((uint32) b[2] << 16) |
					  ((uint32) b[3] << 8) | (uint32) b[4]);
		e = schema_by_id(ad, dec, id);
		if (e->error && e->failed_at != 0)	/* the registry's refusal */
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("%s", e->error)));
		if (e->error)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("cannot decode a message written with schema id %d: %s", id, e->error)));
		buf += 5;
		len -= 5;
	}
	else
		e = ad->plain;

	read_record(ad, e, buf, len);
	record_columns(dec, e);
}
