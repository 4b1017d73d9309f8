/*-------------------------------------------------------------------------
 *
 * debezium.c
 *	  Kafka source formats debezium-json and debezium-avro: Debezium change
 *	  events into the signed rows of a changelog stream (query/retract.c).
 *
 *	  A change event is an envelope {op, before, after, source, ts_ms,
 *	  transaction}; it becomes
 *
 *		op c (create), r (snapshot read)	+after
 *		op d (delete)						-before
 *		op u (update)						-before, then +after
 *		op m (logical decoding message)		nothing
 *		a tombstone (null value)			nothing
 *
 *	  and everything else -- an op t (truncate: it retracts rows it does not
 *	  list), an unknown op, a message without op, a create without after,
 *	  a delete or update without before (PostgreSQL sources need REPLICA
 *	  IDENTITY FULL) -- is an error, which the worker makes a dead letter
 *	  with that reason.  source, ts_ms and the transaction block are not
 *	  read: each event is applied in its own right (exactly once, in offset
 *	  order, like any message), and a view is exact once every event of a
 *	  source transaction has arrived; Debezium's transaction metadata topic
 *	  is not a topic for this format.
 *
 *	  No decoder of its own: the source's columns are read by the json or
 *	  avro-confluent decoder (decode.c, avro_decode.c) through an inner
 *	  KafkaDecoder whose columns are each stream column twice, at its path
 *	  under "before" and under "after" (the option "paths" applies inside
 *	  them), plus "op" and two presence-only columns saying whether before
 *	  and after hold a row.  JSON envelopes come bare or, from a converter
 *	  with schemas enabled, as {"schema": ..., "payload": envelope}: the
 *	  inner JSON decoder reads both layouts in its one pass, and the one
 *	  whose op is there is used.  The outer decoder's tuples are the
 *	  stream's columns, its metadata columns and stream_ext_sign.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "kafka/avro_decode.h"
#include "kafka/debezium.h"
#include "query/retract.h"

#define MAX_SETS 2

typedef struct SeDebezium
{
	KafkaDecoder *inner;
	int			nsets;			/* layouts: bare, and (JSON) under "payload" */
	int			op[MAX_SETS];	/* inner column of op */
	int			has_before[MAX_SETS];	/* inner presence columns */
	int			has_after[MAX_SETS];
	int		   *before[MAX_SETS];	/* per outer column: its inner column */
	int		   *after[MAX_SETS];
} SeDebezium;

static const char *
format_name(KafkaFormat format)
{
	return format == KAFKA_FORMAT_DEBEZIUM_JSON ? "debezium-json" : "debezium-avro";
}

/* the Debezium formats write signed rows: only into a changelog stream */
void
se_debezium_check_stream(Relation rel, KafkaFormat format)
{
	if (!se_stream_is_changelog(RelationGetRelid(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("format \"%s\" needs a changelog stream, and \"%s\" is not one",
						format_name(format), RelationGetRelationName(rel)),
				 errdetail("Deletes and updates retract rows: the stream must carry the column \"%s\".",
						   SE_SIGN_COLUMN),
				 errhint("Create the stream with stream_ext.create_stream(..., changelog => true).")));
}

/* a column of the inner decoder at path prefix + (first, rest...) */
static int
inner_column(KafkaDecoder *inner, const KafkaColumn *like, Oid typid,
			 int nprefix, const char *first, const KafkaColumn *rest)
{
	KafkaColumn *col = &inner->columns[inner->ncolumns];
	int			nrest = rest ? rest->npath : 0;
	int			k = 0;
	Oid			infunc;

	if (like)
		*col = *like;
	else
	{
		memset(col, 0, sizeof(KafkaColumn));
		col->typid = typid;
		col->typmod = -1;
		getTypeInputInfo(typid, &infunc, &col->typioparam);
		fmgr_info(infunc, &col->input);
	}
	col->role = KCOL_DATA;
	col->presence_only = false;
	col->npath = nprefix + 1 + nrest;
	col->path = palloc(sizeof(char *) * col->npath);
	col->pathlen = palloc(sizeof(int) * col->npath);
	if (nprefix)
		col->path[k++] = "payload";
	col->path[k++] = (char *) first;
	for (int j = 0; j < nrest; j++)
		col->path[k++] = rest->path[j];
	for (k = 0; k < col->npath; k++)
		col->pathlen[k] = strlen(col->path[k]);
	col->name = psprintf("%s.%s", first, rest ? rest->name : "");
	if (rest == NULL)
		col->name[strlen(col->name) - 1] = '\0';
	inner->ndata++;
	return inner->ncolumns++;
}

/*
 * The Debezium part of decoder dec (format debezium-json or -avro), whose
 * columns are set: the inner decoder that reads the envelope.
 */
struct SeDebezium *
se_debezium_create(KafkaDecoder *dec, const KafkaOptions *opts)
{
	SeDebezium *dz = palloc0(sizeof(SeDebezium));
	KafkaDecoder *inner = palloc0(sizeof(KafkaDecoder));
	bool		json = dec->format == KAFKA_FORMAT_DEBEZIUM_JSON;
	int			s;

	if (json && (opts->avro_schema || opts->avro_reader_schema || opts->registry_url ||
				 opts->registry_user || opts->registry_password))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options \"schema\", \"reader_schema\" and \"schema_registry\" do not apply to format \"debezium-json\"")));

	dz->nsets = json ? 2 : 1;
	inner->format = json ? KAFKA_FORMAT_JSON : KAFKA_FORMAT_AVRO_CONFLUENT;
	inner->relid = dec->relid;
	inner->epoch_unit_usecs = dec->epoch_unit_usecs;
	inner->columns = palloc0(sizeof(KafkaColumn) * dz->nsets * (2 * dec->ncolumns + 3));
	for (s = 0; s < dz->nsets; s++)
	{
		dz->op[s] = inner_column(inner, NULL, TEXTOID, s, "op", NULL);
		dz->has_before[s] = inner_column(inner, NULL, TEXTOID, s, "before", NULL);
		inner->columns[dz->has_before[s]].presence_only = true;
		dz->has_after[s] = inner_column(inner, NULL, TEXTOID, s, "after", NULL);
		inner->columns[dz->has_after[s]].presence_only = true;
		dz->before[s] = palloc(sizeof(int) * dec->ncolumns);
		dz->after[s] = palloc(sizeof(int) * dec->ncolumns);
		for (int i = 0; i < dec->ncolumns; i++)
		{
			KafkaColumn *col = &dec->columns[i];

			dz->before[s][i] = dz->after[s][i] = -1;
			if (col->role != KCOL_DATA)
				continue;
			dz->before[s][i] = inner_column(inner, col, col->typid, s, "before", col);
			dz->after[s][i] = inner_column(inner, col, col->typid, s, "after", col);
		}
	}
	inner->values = palloc0(sizeof(Datum) * inner->ncolumns);
	inner->nulls = palloc0(sizeof(bool) * inner->ncolumns);
	if (!json)
		inner->avro = se_avro_decoder_create(inner, opts);
	dz->inner = inner;
	return dz;
}

/* a tuple of dec: the data columns from one half of the envelope */
static HeapTuple
signed_tuple(KafkaDecoder *dec, SeDebezium *dz, const int *half, int16 sign,
			 MemoryContext tuplecxt)
{
	MemoryContext old;
	HeapTuple	tuple;

	for (int i = 0; i < dec->ncolumns; i++)
	{
		if (dec->columns[i].role == KCOL_DATA)
		{
			dec->values[i] = dz->inner->values[half[i]];
			dec->nulls[i] = dz->inner->nulls[half[i]];
		}
		else if (dec->columns[i].role == KCOL_SIGN)
		{
			dec->values[i] = Int16GetDatum(sign);
			dec->nulls[i] = false;
		}
	}
	old = MemoryContextSwitchTo(tuplecxt);
	tuple = heap_form_tuple(dec->tupdesc, dec->values, dec->nulls);
	MemoryContextSwitchTo(old);
	return tuple;
}

static void
require_half(SeDebezium *dz, int s, bool before, const char *op)
{
	if (dz->inner->nulls[before ? dz->has_before[s] : dz->has_after[s]])
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("Debezium %s event has no \"%s\" row", op, before ? "before" : "after"),
				 before ?
				 errhint("A PostgreSQL source table needs REPLICA IDENTITY FULL for its updates and deletes to carry the old row.") : 0));
}

/* the decoder that reads the envelope of a message (decode.c runs it) */
KafkaDecoder *
se_debezium_inner(struct SeDebezium *dz)
{
	return dz->inner;
}

/*
 * The tuples of one Debezium message whose envelope the inner decoder has
 * read: NULL for none; the first, with the second (an update's new row) in
 * dec->second.  Metadata columns are set already (kafka_decode()); a
 * tombstone never gets here.
 */
HeapTuple
se_debezium_tuples(KafkaDecoder *dec, MemoryContext tuplecxt)
{
	SeDebezium *dz = dec->debezium;
	KafkaDecoder *inner = dz->inner;
	HeapTuple	first;
	char	   *op;
	int			s;

	for (s = 0; s < dz->nsets; s++)
		if (!inner->nulls[dz->op[s]])
			break;
	if (s == dz->nsets)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("message is not a Debezium change event: it has no field \"op\""),
				 errdetail("Format \"%s\" reads envelopes {\"op\", \"before\", \"after\", ...}%s.",
						   format_name(dec->format),
						   dz->nsets > 1 ? ", bare or under \"payload\"" : "")));
	op = TextDatumGetCString(inner->values[dz->op[s]]);
	if (strcmp(op, "c") == 0 || strcmp(op, "r") == 0)
	{
		require_half(dz, s, false, op[0] == 'c' ? "create" : "read");
		return signed_tuple(dec, dz, dz->after[s], 1, tuplecxt);
	}
	if (strcmp(op, "d") == 0)
	{
		require_half(dz, s, true, "delete");
		return signed_tuple(dec, dz, dz->before[s], -1, tuplecxt);
	}
	if (strcmp(op, "u") == 0)
	{
		require_half(dz, s, true, "update");
		require_half(dz, s, false, "update");
		first = signed_tuple(dec, dz, dz->before[s], -1, tuplecxt);
		dec->second = signed_tuple(dec, dz, dz->after[s], 1, tuplecxt);
		return first;
	}
	if (strcmp(op, "m") == 0)
		return NULL;
	if (strcmp(op, "t") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("Debezium truncate event cannot be applied to a changelog stream"),
				 errdetail("A truncate removes rows that the event does not list, so they cannot be retracted.")));
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("unknown Debezium operation \"%s\"", op),
			 errdetail("Known operations are c, r, u, d, t and m.")));
	return NULL;
}
