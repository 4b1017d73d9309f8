/*-------------------------------------------------------------------------
 *
 * fuzz_decode.c
 *	  libFuzzer harness for the Kafka message decoder (src/kafka/decode.c,
 *	  with avro_decode.c and debezium.c),
 *	  running inside a PostgreSQL backend.
 *
 * src/kafka/decode.c needs the backend: jsonb_in, the columns' input functions,
 * memory contexts, ereport.  So instead of a standalone binary with a
 * shim, this is a loadable module (test only, never installed) holding a
 * copy of src/kafka/decode.c compiled with libFuzzer's coverage instrumentation
 * and libFuzzer itself (libclang_rt.fuzzer_no_main).  Its SQL function
 * builds one decoder per (stream, format, options) given -- the options go
 * through the extension's own kafka_parse_options(), resolved from the
 * preloaded stream_ext.so -- and hands control to LLVMFuzzerRunDriver().
 * test/t/050_fuzz_decode.pl runs it in a single-user backend
 * (postgres --single), because libFuzzer ends the process with exit().
 *
 * Each input: the first byte selects the decoder ((byte - '0') mod 256 mod
 * (ndecoders + 1), so seed files start with '0', '1', ...), the rest is
 * the message payload (none: a one-byte input is a tombstone); the message
 * key is "k" or missing, partition, offset and timestamp vary.  It is
 * decoded exactly as the Kafka worker decodes a message: kafka_decode() in
 * a subtransaction, in a memory context reset per message.  Then every
 * decoded value goes through its type's output function (a malformed datum
 * would show there).
 *
 * The selector value ndecoders is the options mode: the second byte picks
 * a decoder's stream and format, the rest is a Kafka source's options
 * (JSON), parsed as create_kafka_source() parses them; a decoder is built
 * from them, and the worker's INSERT statement for it must then parse.
 * Options may also be refused with class 42 (a column that does not exist
 * or has the wrong type).
 *
 * The harness aborts -- libFuzzer records the input as a crash artifact --
 * when
 *	- an error is raised whose SQLSTATE class is not one a bad message may
 *	  legitimately cause (22 data exception, 23 integrity constraint
 *	  violation, 54 program limit exceeded), e.g. XX000 from an elog();
 *	- an output function fails on a value the decoder produced;
 *	- decoding one message allocates more than FUZZ_MEM_BASE plus
 *	  FUZZ_MEM_PER_BYTE times its size;
 * and libFuzzer itself catches crashes (SIGSEGV, SIGBUS, SIGILL, abort)
 * and hangs (-timeout).  A FATAL error would end the backend: an
 * on_proc_exit callback then saves the input as "fatal-input".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "parser/parser.h"
#include "storage/ipc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "kafka/decode.h"
#include "kafka/source.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(stream_ext_fuzz_decode);

extern int	LLVMFuzzerRunDriver(int *argc, char ***argv,
								int (*cb) (const uint8_t *data, size_t size));

#define FUZZ_MEM_BASE		(1024 * 1024)
#define FUZZ_MEM_PER_BYTE	64

typedef struct FuzzDecoder
{
	KafkaDecoder *dec;
	FmgrInfo   *out;			/* output function per target column */
} FuzzDecoder;

static FuzzDecoder *decoders;
static int	ndecoders;
static MemoryContext input_cxt;
static MemoryContext error_cxt;
static const char *artifact_dir = ".";

/* the input being decoded, for the on_proc_exit callback */
static const uint8_t *cur_data;
static size_t cur_size;

/* counters, printed at exit */
static uint64 n_inputs;
static uint64 n_decoded;
static uint64 n_options;
static uint64 n_options_valid;
static uint64 n_errors[3];		/* classes 22, 23, 54 */
static uint64 max_mem;

static void
print_stats(void)
{
	fprintf(stderr,
			"stream_ext fuzz: %llu inputs, %llu decoded, %llu option sets, %llu valid, %llu errors of class 22, %llu of class 23, %llu of class 54, max %llu bytes per input\n",
			(unsigned long long) n_inputs, (unsigned long long) n_decoded,
			(unsigned long long) n_options, (unsigned long long) n_options_valid,
			(unsigned long long) n_errors[0], (unsigned long long) n_errors[1],
			(unsigned long long) n_errors[2], (unsigned long long) max_mem);
}

static void
save_input(const char *name)
{
	char		path[MAXPGPATH];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", artifact_dir, name);
	f = fopen(path, "wb");
	if (f == NULL)
		return;
	if (cur_size > 0)
		fwrite(cur_data, 1, cur_size, f);
	fclose(f);
	fprintf(stderr, "stream_ext fuzz: input saved as %s\n", path);
}

/* a FATAL (or anything else leaving the backend) while decoding */
static void
fuzz_proc_exit(int code, Datum arg)
{
	if (cur_data != NULL)
		save_input("fatal-input");
	print_stats();
}

static void
fuzz_fail(const char *what, ErrorData *edata)
{
	fprintf(stderr, "stream_ext fuzz: %s", what);
	if (edata)
		fprintf(stderr, ": SQLSTATE %s: %s", unpack_sql_state(edata->sqlerrcode),
				edata->message ? edata->message : "(no message)");
	fprintf(stderr, "\n");
	cur_data = NULL;			/* libFuzzer saves the input itself */
	abort();
}

/*
 * Options mode: the payload is a source's options (JSON), for the stream
 * and format of decoder dec: parse them as create_kafka_source() does,
 * build the decoder, and check that the worker's INSERT statement for it
 * parses.
 */
static void
fuzz_options(KafkaDecoder *dec, const char *json, size_t len, volatile bool *built)
{
	char	   *str;
	Jsonb	   *jb;
	KafkaOptions ko;
	KafkaDecoder *newdec;
	char	   *sql;

	/* a jsonb argument of create_kafka_source() is valid in the encoding */
	(void) pg_verify_mbstr(GetDatabaseEncoding(), json, (int) len, false);
	str = pnstrdup(json, len);
	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(str)));
	kafka_parse_options(jb, &ko);
	newdec = kafka_decoder_create(dec->relid, dec->format, &ko);
	*built = true;
	sql = kafka_decoder_insert_sql(newdec, "stream_ext_batch");
	(void) raw_parser(sql, RAW_PARSE_DEFAULT);
}

static int
fuzz_one(const uint8_t *data, size_t size)
{
	FuzzDecoder *fd;
	KafkaMessage msg;
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	volatile bool decoded = false;
	bool		options_mode;
	ErrorData  *volatile edata = NULL;
	Size		mem = 0;
	int			sel;

	if (size == 0)
		return 0;
	n_inputs++;
	cur_data = data;
	cur_size = size;
	sel = ((uint8) (data[0] - '0')) % (ndecoders + 1);
	options_mode = (sel == ndecoders);
	/* options mode: the stream and format of the decoder the 2nd byte picks */
	if (options_mode && size < 2)
		return 0;
	fd = &decoders[options_mode ? ((uint8) (data[1] - '0')) % ndecoders : sel];
	if (options_mode)
		n_options++;

	memset(&msg, 0, sizeof(msg));
	if (size > 1)
	{
		msg.payload = (const char *) data + 1;
		msg.len = size - 1;
	}
	/* else a tombstone: no payload */
	if (n_inputs % 3 != 0)
	{
		msg.key = "k";
		msg.keylen = 1;
	}
	msg.partition = (int32) (n_inputs % 7);
	msg.offset = (int64) n_inputs;
	msg.timestamp_ms = (n_inputs % 5 == 0) ? -1 : (int64) 1700000000000 + n_inputs;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(input_cxt);
	PG_TRY();
	{
		if (options_mode)
		{
			fuzz_options(fd->dec, (const char *) data + 2, size - 2, &decoded);
			mem = MemoryContextMemAllocated(input_cxt, true);
		}
		else
		{
			HeapTuple	tups[2];
			TupleDesc	desc = fd->dec->tupdesc;
			Datum	   *values = palloc(sizeof(Datum) * desc->natts);
			bool	   *nulls = palloc(sizeof(bool) * desc->natts);

			/* none, one, or (a Debezium update) two tuples */
			tups[0] = kafka_decode(fd->dec, &msg, CurrentMemoryContext);
			tups[1] = fd->dec->second;
			decoded = true;
			mem = MemoryContextMemAllocated(input_cxt, true);
			for (int t = 0; t < 2; t++)
			{
				if (tups[t] == NULL)
					continue;
				heap_deform_tuple(tups[t], desc, values, nulls);
				for (int i = 0; i < desc->natts; i++)
					if (!nulls[i])
						(void) OutputFunctionCall(&fd->out[i], values[i]);
			}
		}
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(error_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		mem = Max(mem, MemoryContextMemAllocated(input_cxt, true));
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();

	if (mem > max_mem)
		max_mem = mem;
	if (mem > FUZZ_MEM_BASE + FUZZ_MEM_PER_BYTE * size)
	{
		char		buf[128];

		snprintf(buf, sizeof(buf), "decoding %zu bytes allocated %zu bytes",
				 size, (size_t) mem);
		fuzz_fail(buf, NULL);
	}
	if (edata != NULL)
	{
		if (decoded)
			fuzz_fail(options_mode ? "the INSERT statement of a valid decoder does not parse" :
					  "output function failed on a decoded value", edata);
		if (edata->elevel != ERROR)
			fuzz_fail("unexpected error level", edata);
		switch (ERRCODE_TO_CATEGORY(edata->sqlerrcode))
		{
			case ERRCODE_DATA_EXCEPTION:
				n_errors[0]++;
				break;
			case ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION:
				n_errors[1]++;
				break;
			case ERRCODE_PROGRAM_LIMIT_EXCEEDED:
				n_errors[2]++;
				break;
			case ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION:
				/* an option naming a missing column, of the wrong type */
				if (options_mode)
					break;
				fuzz_fail("error of an unexpected class", edata);
				break;
			default:
				fuzz_fail("error of an unexpected class", edata);
		}
		MemoryContextReset(error_cxt);
	}
	else if (options_mode)
		n_options_valid++;
	else
		n_decoded++;

	MemoryContextReset(input_cxt);
	cur_data = NULL;
	return 0;
}

static char **
text_array_cstrings(ArrayType *arr, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **result;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	result = palloc(sizeof(char *) * (*n + 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			elog(ERROR, "null array element");
		result[i] = TextDatumGetCString(elems[i]);
	}
	result[*n] = NULL;
	return result;
}

/*
 * stream_ext_fuzz_decode(streams regclass[], formats text[], options jsonb[],
 *                        artifact_dir text, libfuzzer_args text[])
 * Never returns: libFuzzer exits the process (0 when done, non-zero on a
 * finding).
 */
Datum
stream_ext_fuzz_decode(PG_FUNCTION_ARGS)
{
	ArrayType  *streams = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *formats = PG_GETARG_ARRAYTYPE_P(1);
	ArrayType  *options = PG_GETARG_ARRAYTYPE_P(2);
	Datum	   *relids;
	Datum	   *opts;
	bool	   *nulls;
	char	  **fmts;
	char	  **args;
	int			nrel;
	int			nfmt;
	int			nopt;
	int			nargs;
	int			argc;
	char	  **argv;
	MemoryContext old;

	old = MemoryContextSwitchTo(TopMemoryContext);
	deconstruct_array(streams, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT,
					  &relids, &nulls, &nrel);
	fmts = text_array_cstrings(formats, &nfmt);
	deconstruct_array(options, JSONBOID, -1, false, TYPALIGN_INT,
					  &opts, &nulls, &nopt);
	if (nrel == 0 || nrel != nfmt || nrel != nopt)
		elog(ERROR, "streams, formats and options must have the same, non-zero length");
	artifact_dir = text_to_cstring(PG_GETARG_TEXT_PP(3));
	args = text_array_cstrings(PG_GETARG_ARRAYTYPE_P(4), &nargs);

	ndecoders = nrel;
	decoders = palloc0(sizeof(FuzzDecoder) * nrel);
	for (int i = 0; i < nrel; i++)
	{
		KafkaOptions ko;
		KafkaDecoder *dec;

		kafka_parse_options(DatumGetJsonbP(opts[i]), &ko);
		dec = kafka_decoder_create(DatumGetObjectId(relids[i]),
								   kafka_parse_format(fmts[i]), &ko);
		decoders[i].dec = dec;
		decoders[i].out = palloc(sizeof(FmgrInfo) * dec->tupdesc->natts);
		for (int j = 0; j < dec->tupdesc->natts; j++)
		{
			Oid			outfn;
			bool		varlena;

			getTypeOutputInfo(TupleDescAttr(dec->tupdesc, j)->atttypid,
							  &outfn, &varlena);
			fmgr_info(outfn, &decoders[i].out[j]);
		}
		fprintf(stderr, "stream_ext fuzz: decoder %d: %s, format %s, %d columns\n",
				i, get_rel_name(DatumGetObjectId(relids[i])), fmts[i],
				dec->ncolumns);
	}
	input_cxt = AllocSetContextCreate(TopMemoryContext, "fuzz input",
									  ALLOCSET_DEFAULT_SIZES);
	error_cxt = AllocSetContextCreate(TopMemoryContext, "fuzz error",
									  ALLOCSET_DEFAULT_SIZES);

	argc = nargs + 1;
	argv = palloc(sizeof(char *) * (argc + 1));
	argv[0] = "stream_ext_fuzz";
	for (int i = 0; i < nargs; i++)
		argv[i + 1] = args[i];
	argv[argc] = NULL;
	MemoryContextSwitchTo(old);

	on_proc_exit(fuzz_proc_exit, (Datum) 0);
	fflush(stdout);
	fflush(stderr);
	(void) LLVMFuzzerRunDriver(&argc, &argv, fuzz_one);
	/* not reached: libFuzzer exits */
	PG_RETURN_VOID();
}
