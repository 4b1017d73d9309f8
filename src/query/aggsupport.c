/*-------------------------------------------------------------------------
 *
 * aggsupport.c
 *	  Generic partial-aggregate support, built on the machinery PostgreSQL
 *	  uses for parallel aggregation: transition state, combine function,
 *	  serialize/deserialize for internal states, final function.
 *
 *	  No aggregate gets code of its own.  A continuous view stores, per group
 *	  and aggregate, the partial state (serialized when the transition type
 *	  is internal).  Maintenance produces partial states of a batch with a
 *	  real Agg node run in AGGSPLIT_INITIAL_SERIAL mode (see maintain/maintain.c) and
 *	  merges them into the stored ones with stream_ext.combine(); reads call
 *	  stream_ext.finalize().
 *
 *	  The support functions of internal-state aggregates insist on being
 *	  called from an aggregate (AggCheckCallContext).  combine() and
 *	  finalize() therefore call them with a private AggState whose aggregate
 *	  memory context is a per-call scratch context that is reset after
 *	  every call; results are copied out first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "parser/parse_agg.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "common/hashfn.h"

#include "query/aggsupport.h"

PG_FUNCTION_INFO_V1(stream_ext_partial);
PG_FUNCTION_INFO_V1(stream_ext_combine);
PG_FUNCTION_INFO_V1(stream_ext_finalize);

bool
is_count_distinct(Aggref *aggref)
{
	return aggref->aggfnoid == F_COUNT_ANY &&
		aggref->aggdistinct != NIL &&
		list_length(aggref->args) == 1;
}

void
describe_agg_storage(Aggref *aggref, AggStorage *st, int cursorpos)
{
	HeapTuple	tup;
	Form_pg_aggregate agg;
	Oid			inputTypes[FUNC_MAX_ARGS];
	int			nargs;
	char	   *name = format_procedure(aggref->aggfnoid);

	if (aggref->aggdistinct != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 cursorpos > 0 ? errposition(cursorpos) : 0,
				 errmsg("aggregate %s with DISTINCT is not supported in a continuous view", name),
				 errhint("Only count(DISTINCT expression) can be maintained incrementally.")));
	if (aggref->aggorder != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 cursorpos > 0 ? errposition(cursorpos) : 0,
				 errmsg("aggregate %s with ORDER BY is not supported in a continuous view", name)));
	if (aggref->aggkind != AGGKIND_NORMAL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 cursorpos > 0 ? errposition(cursorpos) : 0,
				 errmsg("ordered-set aggregate %s is not supported in a continuous view", name)));

	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggref->aggfnoid);
	agg = (Form_pg_aggregate) GETSTRUCT(tup);

	if (!OidIsValid(agg->aggcombinefn))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 cursorpos > 0 ? errposition(cursorpos) : 0,
				 errmsg("aggregate %s cannot be maintained incrementally", name),
				 errdetail("A continuous view needs aggregates that can combine partial states; %s has no combine function.", name),
				 errhint("Aggregates usable in parallel queries (count, sum, avg, min, max, stddev, ...) are supported.")));

	nargs = get_aggregate_argtypes(aggref, inputTypes);
	st->aggfnoid = aggref->aggfnoid;
	st->transtype = resolve_aggregate_transtype(aggref->aggfnoid,
												agg->aggtranstype,
												inputTypes, nargs);
	st->serialized = (st->transtype == INTERNALOID);
	if (st->serialized &&
		(!OidIsValid(agg->aggserialfn) || !OidIsValid(agg->aggdeserialfn)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 cursorpos > 0 ? errposition(cursorpos) : 0,
				 errmsg("aggregate %s cannot be maintained incrementally", name),
				 errdetail("Its transition state is of type internal and it has no serialization functions.")));
	if (agg->aggfinalextra)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 cursorpos > 0 ? errposition(cursorpos) : 0,
				 errmsg("aggregate %s is not supported in a continuous view", name),
				 errdetail("Its final function takes extra arguments (FINALFUNC_EXTRA).")));
	st->statetype = st->serialized ? BYTEAOID : st->transtype;
	st->has_final = OidIsValid(agg->aggfinalfn);
	st->combinefn = agg->aggcombinefn;
	st->direct = !st->has_final && !st->serialized &&
		st->transtype == aggref->aggtype;
	ReleaseSysCache(tup);

	if (get_typtype(st->statetype) == TYPTYPE_PSEUDO)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 cursorpos > 0 ? errposition(cursorpos) : 0,
				 errmsg("aggregate %s cannot be maintained incrementally", name),
				 errdetail("Its transition type %s cannot be stored.",
						   format_type_be(st->statetype))));
}

/*
 * stream_ext.partial(aggregate_call, NULL::statetype)
 *
 * Marker only: maintenance statements wrap each aggregate in it, and the
 * planner hook replaces the call with the aggregate itself switched to
 * partial (serialized) mode.  Reaching the function body means it was used
 * somewhere else.
 */
Datum
stream_ext_partial(PG_FUNCTION_ARGS)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("stream_ext.partial() can only be used by continuous view maintenance")));
	PG_RETURN_NULL();
}

/* Per-call-site cache of an aggregate's support functions */
typedef struct AggSupportCache
{
	Oid			aggfnoid;
	Oid			statetype;		/* type of the stored state argument */
	bool		serialized;
	FmgrInfo	combinefn;
	FmgrInfo	serialfn;
	FmgrInfo	deserialfn;
	FmgrInfo	finalfn;
	bool		has_final;
	int16		statelen;		/* in-memory transition value */
	bool		statebyval;
	int16		storedlen;		/* stored state (statetype) */
	bool		storedbyval;
	int16		resultlen;
	bool		resultbyval;
	MemoryContext scratch;		/* reset after every call */
	AggState   *aggstate;		/* context handed to support functions */
	ExprContext econtext;
} AggSupportCache;

/*
 * combine(), finalize() and merge_states() are callable by anyone, with any
 * aggregate and any types: hand the aggregate's support functions only the
 * state they take, and return only what its final function makes.  (An
 * int8 given as the state of max(text) would be followed as a pointer.)
 * The state must be of the aggregate's transition type (bytea for an
 * internal one: the serialized state), the result type of its result type;
 * polymorphic ones as the parser would resolve them.  The caller needs
 * EXECUTE on the aggregate, as for calling it.
 */
static void
check_agg_types(Form_pg_aggregate agg, Oid aggfnoid, Oid statetype, Oid resulttype)
{
	Oid			transtype = agg->aggtranstype;
	Oid			rettype = get_func_rettype(aggfnoid);
	Oid			actual[2];
	Oid			declared[2];
	int			n = 0;
	bool		ok;
	AclResult	aclresult;

	aclresult = pg_proc_aclcheck(aggfnoid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_AGGREGATE, get_func_name(aggfnoid));

	statetype = getBaseType(statetype);
	if (transtype == INTERNALOID)
		ok = (statetype == BYTEAOID);
	else
	{
		actual[n] = statetype;
		declared[n++] = transtype;
		ok = IsPolymorphicType(transtype) ||
			statetype == getBaseType(transtype);
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("state of aggregate %s must be of type %s, not %s",
						format_procedure(aggfnoid),
						format_type_be(transtype == INTERNALOID ? BYTEAOID : transtype),
						format_type_be(statetype)),
				 errhint("Pass a state stored by a continuous view of that aggregate.")));
	if (OidIsValid(resulttype))
	{
		resulttype = getBaseType(resulttype);
		if (IsPolymorphicType(rettype))
		{
			/* tied to the state's type, which an internal state does not show */
			if (n == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("aggregate %s has an internal state and a polymorphic result",
								format_procedure(aggfnoid))));
			actual[n] = resulttype;
			declared[n++] = rettype;
		}
		else if (resulttype != getBaseType(rettype))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("result of aggregate %s is of type %s, not %s",
							format_procedure(aggfnoid), format_type_be(rettype),
							format_type_be(resulttype))));
	}
	if (n > 0 && !check_generic_type_consistency(actual, declared, n))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("state or result type does not match polymorphic aggregate %s",
						format_procedure(aggfnoid))));
}

static AggSupportCache *
get_agg_support(FunctionCallInfo fcinfo, Oid aggfnoid, Oid statetype,
				Oid resulttype)
{
	AggSupportCache *cache = (AggSupportCache *) fcinfo->flinfo->fn_extra;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	HeapTuple	tup;
	Form_pg_aggregate agg;

	if (cache != NULL && cache->aggfnoid == aggfnoid &&
		cache->statetype == statetype)
		return cache;

	if (cache == NULL)
	{
		MemoryContext old;

		cache = MemoryContextAllocZero(mcxt, sizeof(AggSupportCache));
		cache->scratch = AllocSetContextCreate(mcxt, "stream_ext aggregate scratch",
											   ALLOCSET_DEFAULT_SIZES);
		old = MemoryContextSwitchTo(mcxt);

		cache->aggstate = makeNode(AggState);
		MemoryContextSwitchTo(old);
		cache->econtext.type = T_ExprContext;
		cache->econtext.ecxt_per_tuple_memory = cache->scratch;
		cache->aggstate->curaggcontext = &cache->econtext;
		cache->aggstate->tmpcontext = &cache->econtext;
		fcinfo->flinfo->fn_extra = cache;
	}

	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function %u is not an aggregate", aggfnoid)));
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	if (!OidIsValid(agg->aggcombinefn))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s has no combine function",
						format_procedure(aggfnoid))));

	check_agg_types(agg, aggfnoid, statetype, resulttype);
	cache->aggfnoid = aggfnoid;
	cache->statetype = statetype;
	cache->serialized = (agg->aggtranstype == INTERNALOID);
	fmgr_info_cxt(agg->aggcombinefn, &cache->combinefn, mcxt);
	if (cache->serialized)
	{
		fmgr_info_cxt(agg->aggserialfn, &cache->serialfn, mcxt);
		fmgr_info_cxt(agg->aggdeserialfn, &cache->deserialfn, mcxt);
	}
	cache->has_final = OidIsValid(agg->aggfinalfn);
	if (cache->has_final)
		fmgr_info_cxt(agg->aggfinalfn, &cache->finalfn, mcxt);
	ReleaseSysCache(tup);

	/* the in-memory transition value's type */
	get_typlenbyval(cache->serialized ? INTERNALOID : statetype,
					&cache->statelen, &cache->statebyval);
	get_typlenbyval(statetype, &cache->storedlen, &cache->storedbyval);
	if (OidIsValid(resulttype))
		get_typlenbyval(resulttype, &cache->resultlen, &cache->resultbyval);
	return cache;
}

/* Call a support function the way nodeAgg.c would */
static Datum
call_support(AggSupportCache *cache, FmgrInfo *fn, Oid collation, int nargs,
			 Datum *args, bool *nulls, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, 3);
	Datum		result;

	Assert(nargs <= 3);
	InitFunctionCallInfoData(*fcinfo, fn, nargs, collation,
							 (Node *) cache->aggstate, NULL);
	for (int i = 0; i < nargs; i++)
	{
		fcinfo->args[i].value = args[i];
		fcinfo->args[i].isnull = nulls[i];
	}
	result = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return result;
}

/*
 * Turn a stored state into an in-memory transition value (in scratch).
 *
 * A state read from a view's table may be TOAST-compressed or stored out of
 * line (a state of a few kB, like a t-digest's or an HLL's, is compressed by
 * the table's TOAST).  PostgreSQL never hands such a value to a support
 * function, and they rely on it: deserialize functions read the bytes
 * directly, combine functions of varlena states update them in place.  So
 * the value is detoasted first; a detoasted copy lives in scratch, which is
 * reset after the call.
 */
static Datum
load_state(AggSupportCache *cache, Datum stored, bool *isnull)
{
	if (*isnull)
		return (Datum) 0;
	if (cache->storedlen == -1)
	{
		struct varlena *plain = pg_detoast_datum((struct varlena *) DatumGetPointer(stored));

		if (plain != (struct varlena *) DatumGetPointer(stored))
		{
			/* already a private copy in scratch: no second copy needed */
			if (!cache->serialized)
				return PointerGetDatum(plain);
			stored = PointerGetDatum(plain);
		}
	}
	if (cache->serialized)
	{
		Datum		args[2] = {stored, PointerGetDatum(NULL)};
		bool		nulls[2] = {false, true};

		return call_support(cache, &cache->deserialfn, InvalidOid, 2,
							args, nulls, isnull);
	}
	/* support functions may scribble on their first argument: copy */
	return datumCopy(stored, cache->statebyval, cache->statelen);
}

/*
 * stream_ext.combine(stored_state, new_state, aggregate regprocedure)
 *
 * Merge two partial states of an aggregate with its combine function and
 * return the result in stored form.
 */
Datum
stream_ext_combine(PG_FUNCTION_ARGS)
{
	Oid			aggfnoid;
	Oid			statetype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	AggSupportCache *cache;
	MemoryContext caller = CurrentMemoryContext;
	Datum		vals[2];
	bool		nulls[2];
	Datum		result;
	bool		isnull;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("aggregate argument of stream_ext.combine() must not be null")));
	aggfnoid = PG_GETARG_OID(2);
	cache = get_agg_support(fcinfo, aggfnoid, statetype, InvalidOid);

	/* a strict combine function ignores a missing side, like nodeAgg.c */
	if (cache->combinefn.fn_strict)
	{
		if (PG_ARGISNULL(1))
		{
			if (PG_ARGISNULL(0))
				PG_RETURN_NULL();
			PG_RETURN_DATUM(PG_GETARG_DATUM(0));
		}
		if (PG_ARGISNULL(0))
			PG_RETURN_DATUM(PG_GETARG_DATUM(1));
	}

	MemoryContextSwitchTo(cache->scratch);
	PG_TRY();
	{
		nulls[0] = PG_ARGISNULL(0);
		vals[0] = load_state(cache, PG_GETARG_DATUM(0), &nulls[0]);
		nulls[1] = PG_ARGISNULL(1);
		vals[1] = load_state(cache, PG_GETARG_DATUM(1), &nulls[1]);

		result = call_support(cache, &cache->combinefn, PG_GET_COLLATION(), 2,
							  vals, nulls, &isnull);
		if (cache->serialized && !isnull)
		{
			Datum		sargs[1] = {result};
			bool		snulls[1] = {false};

			result = call_support(cache, &cache->serialfn, InvalidOid, 1,
								  sargs, snulls, &isnull);
		}
		MemoryContextSwitchTo(caller);
		if (!isnull)
			result = datumCopy(result, cache->storedbyval, cache->storedlen);
	}
	PG_FINALLY();
	{
		MemoryContextSwitchTo(caller);
		MemoryContextReset(cache->scratch);
	}
	PG_END_TRY();

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * stream_ext.finalize(stored_state, aggregate regprocedure, NULL::result_type)
 *
 * The aggregate's result from a stored partial state.
 */
Datum
stream_ext_finalize(PG_FUNCTION_ARGS)
{
	Oid			aggfnoid;
	Oid			statetype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Oid			resulttype = get_fn_expr_argtype(fcinfo->flinfo, 2);
	AggSupportCache *cache;
	MemoryContext caller = CurrentMemoryContext;
	Datum		result;
	bool		isnull;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("aggregate argument of stream_ext.finalize() must not be null")));
	aggfnoid = PG_GETARG_OID(1);
	cache = get_agg_support(fcinfo, aggfnoid, statetype, resulttype);

	if (!cache->has_final)
	{
		/* the state is the result */
		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		if (cache->serialized)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("aggregate %s has an internal state and no final function",
							format_procedure(aggfnoid))));
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	}
	if (cache->finalfn.fn_strict && PG_ARGISNULL(0))
		PG_RETURN_NULL();

	MemoryContextSwitchTo(cache->scratch);
	PG_TRY();
	{
		Datum		vals[1];
		bool		nulls[1];

		nulls[0] = PG_ARGISNULL(0);
		vals[0] = load_state(cache, PG_GETARG_DATUM(0), &nulls[0]);
		if (nulls[0] && cache->finalfn.fn_strict)
			isnull = true, result = (Datum) 0;
		else
			result = call_support(cache, &cache->finalfn, PG_GET_COLLATION(), 1,
								  vals, nulls, &isnull);
		MemoryContextSwitchTo(caller);
		if (!isnull)
			result = datumCopy(result, cache->resultbyval, cache->resultlen);
	}
	PG_FINALLY();
	{
		MemoryContextSwitchTo(caller);
		MemoryContextReset(cache->scratch);
	}
	PG_END_TRY();

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* ---- wide group keys: their hash (analyze.c, "Wide keys") -------------- */

PG_FUNCTION_INFO_V1(stream_ext_key_hash);
PG_FUNCTION_INFO_V1(stream_ext_key_hash_collision);

/*
 * stream_ext.debug_key_hash_bits: continuous views created while it is set
 * keep only this many low bits of the hash of their wide keys (0: all 64),
 * for good.  For tests only: with a few bits, different groups share a
 * hash, and the exact rechecks must keep them apart.
 */
int			stream_ext_debug_key_hash_bits = 0;

void
aggsupport_define_gucs(void)
{
	DefineCustomIntVariable("stream_ext.debug_key_hash_bits",
							"Continuous views created while this is set keep only this many bits of the hash of their wide group keys (0: all 64). For testing collisions.",
							NULL,
							&stream_ext_debug_key_hash_bits,
							0, 0, 63,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

/* the extended hash function of the type last hashed by a call site */
typedef struct KeyHashCache
{
	Oid			type;
	bool		is_numeric;		/* numeric, or a domain over it */
	Datum		numeric_zero;	/* then 0, to compare with (numeric_key_hash()) */
	FmgrInfo	proc;
} KeyHashCache;

/* what a NULL key hashes to (NULL keys form one group) */
#define KEY_HASH_NULL UINT64CONST(0x6a09e667f3bcc908)

/*
 * numeric keys.  PostgreSQL's hash_numeric_extended() hashes a value's
 * digits and weight but not its sign, and gives NaN, Infinity and
 * -Infinity all the same hash (the seed): x and -x, and the three special
 * values, would always be different groups with one hash.  A negative
 * value's hash is therefore combined with a constant, and each special
 * value gets a constant of its own.  (Zero is never negative: numeric
 * stores -0 as 0.)
 */
#define KEY_HASH_NUMERIC_NEG UINT64CONST(0x510e527fade682d1)
#define KEY_HASH_NUMERIC_NAN UINT64CONST(0xbb67ae8584caa73b)
#define KEY_HASH_NUMERIC_INF UINT64CONST(0x3c6ef372fe94f82b)
#define KEY_HASH_NUMERIC_NEG_INF UINT64CONST(0xa54ff53a5f1d36f1)

static uint64
numeric_key_hash(KeyHashCache *cache, Datum value)
{
	Numeric		num = DatumGetNumeric(value);
	bool		negative;
	uint64		h;

	if (numeric_is_nan(num))
		return KEY_HASH_NUMERIC_NAN;
	negative = DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(num),
												 cache->numeric_zero)) < 0;
	if (numeric_is_inf(num))
		return negative ? KEY_HASH_NUMERIC_NEG_INF : KEY_HASH_NUMERIC_INF;
	h = DatumGetUInt64(FunctionCall2(&cache->proc, NumericGetDatum(num), Int64GetDatum(0)));
	return negative ? hash_combine64(KEY_HASH_NUMERIC_NEG, h) : h;
}

/*
 * stream_ext.key_hash(value "any", seed int8) RETURNS int8: the hash of
 * value by its own type's extended hash function (the one hash joins,
 * hash indexes and hash partitioning use: values equal by the type's
 * default equality -- under the value's collation -- hash alike, and
 * hashes stay the same across restarts and dump/restore, as hash
 * partitioning needs), combined into seed.  Keys are hashed as key_hash(k2, key_hash(k1, 0)).  No cast
 * is involved: a timestamptz is hashed as a timestamptz, whatever the
 * time zone.  numeric is the exception: its hash function ignores the
 * sign and hashes NaN and +-Infinity alike (numeric_key_hash()).
 */
Datum
stream_ext_key_hash(PG_FUNCTION_ARGS)
{
	uint64		seed = (uint64) PG_GETARG_INT64(1);
	uint64		h;

	if (PG_ARGISNULL(0))
		h = KEY_HASH_NULL;
	else
	{
		Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 0);
		KeyHashCache *cache = (KeyHashCache *) fcinfo->flinfo->fn_extra;

		if (cache == NULL || cache->type != type)
		{
			TypeCacheEntry *tc;

			if (!OidIsValid(type))
				elog(ERROR, "stream_ext.key_hash: could not determine the type of its argument");
			tc = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC);
			if (!OidIsValid(tc->hash_extended_proc))
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_FUNCTION),
						 errmsg("could not identify an extended hash function for type %s",
								format_type_be(type))));
			if (cache == NULL)
				cache = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(KeyHashCache));
			fmgr_info_cxt(tc->hash_extended_proc, &cache->proc, fcinfo->flinfo->fn_mcxt);
			cache->type = type;
			cache->is_numeric = (getBaseType(type) == NUMERICOID);
			if (cache->is_numeric)
			{
				MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

				cache->numeric_zero = NumericGetDatum(int64_to_numeric(0));
				MemoryContextSwitchTo(old);
			}
			fcinfo->flinfo->fn_extra = cache;
		}
		if (cache->is_numeric)
			h = numeric_key_hash(cache, PG_GETARG_DATUM(0));
		else
			h = DatumGetUInt64(FunctionCall2Coll(&cache->proc, PG_GET_COLLATION(),
												 PG_GETARG_DATUM(0), Int64GetDatum(0)));
	}
	PG_RETURN_INT64((int64) hash_combine64(seed, h));
}

/*
 * stream_ext.key_hash_collision(materialization regclass): called by the
 * upsert of a materialization indexed by the hash of its keys when the row
 * with the batch group's hash holds other keys.  Refuses the batch rather
 * than merge two groups.
 */
Datum
stream_ext_key_hash_collision(PG_FUNCTION_ARGS)
{
	Oid			matrelid = PG_GETARG_OID(0);

	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("two groups of materialization \"%s\" have the same key hash",
					get_rel_name(matrelid)),
			 errdetail("Continuous views with group keys of variable-width types index their groups by a hash of the keys; a batch holding a group whose hash another group already has is refused rather than merged."),
			 errhint("Group by a different expression (e.g. add a key column) or drop and create the view again.")));
	PG_RETURN_NULL();
}
