/*-------------------------------------------------------------------------
 *
 * distinct_values.c
 *	  stream_ext.distinct_values(x): the distinct non-NULL values of a group,
 *	  as a sorted array without duplicates.
 *
 *	  The writer's half of a deferred count(DISTINCT) (query/analyze.c,
 *	  "Deferred count(DISTINCT)"): a view that appends keeps, per batch and
 *	  group, the batch's distinct values in its delta; compaction moves
 *	  them into the side table.  Computed in the batch's one hash
 *	  aggregation, next to the other partial states: the transition only
 *	  appends the value to an ArrayBuildState (no per-row SQL, no index
 *	  probe), the final function sorts by the type's default btree
 *	  comparator and drops duplicates, so that the array holds each value
 *	  once.  Equality is the btree opclass's (what the side table's unique
 *	  index and count(DISTINCT) use).
 *
 *	  The batch's aggregation runs in partial mode (stream_ext.partial(),
 *	  maintain/maintain.c), which skips final functions and serializes
 *	  internal states: the serialization function therefore yields the
 *	  same sorted array (typed bytea in the catalog, as PostgreSQL wants
 *	  of a serialization function, but an array of the element type, which
 *	  stream_ext.partial(..., NULL::type[]) makes the column's type), and
 *	  the deserialization function reads one back.  Only for types without
 *	  a collation (query/analyze.c): serialization gets none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

PG_FUNCTION_INFO_V1(stream_ext_distinct_values_add);
PG_FUNCTION_INFO_V1(stream_ext_distinct_values_final);
PG_FUNCTION_INFO_V1(stream_ext_distinct_values_serialize);
PG_FUNCTION_INFO_V1(stream_ext_distinct_values_deserialize);

/*
 * stream_ext.distinct_values_add(state internal, value anyelement)
 * RETURNS internal
 */
Datum
stream_ext_distinct_values_add(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	ArrayBuildState *state = PG_ARGISNULL(0) ? NULL :
		(ArrayBuildState *) PG_GETARG_POINTER(0);
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "stream_ext.distinct_values_add called in non-aggregate context");
	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not determine the input data type")));
	if (state == NULL)
		state = initArrayResult(type, aggcxt, false);
	if (!PG_ARGISNULL(1))
		state = accumArrayResult(state, PG_GETARG_DATUM(1), false, type, aggcxt);
	PG_RETURN_POINTER(state);
}

typedef struct SortCxt
{
	FmgrInfo   *cmp;
	Oid			collation;
} SortCxt;

static int
compare_datums(const void *a, const void *b, void *arg)
{
	SortCxt    *cxt = arg;

	return DatumGetInt32(FunctionCall2Coll(cxt->cmp, cxt->collation,
										   *(const Datum *) a, *(const Datum *) b));
}

/*
 * The state's values sorted, each once (in place), as an array; NULL when
 * it has none.
 */
static Datum
sorted_distinct_array(ArrayBuildState *state, Oid collation, bool *isnull)
{
	TypeCacheEntry *tc;
	SortCxt		cxt;
	int			n = 0;

	*isnull = (state == NULL || state->nelems == 0);
	if (*isnull)
		return (Datum) 0;
	tc = lookup_type_cache(state->element_type, TYPECACHE_CMP_PROC_FINFO);
	if (!OidIsValid(tc->cmp_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify a comparison function for type %s",
						format_type_be(state->element_type))));
	cxt.cmp = &tc->cmp_proc_finfo;
	cxt.collation = collation;

	/*
	 * Sorting is idempotent and nelems shrinks to the distinct values, so
	 * the state stays valid if the final function runs again (a window
	 * aggregate).
	 */
	qsort_arg(state->dvalues, state->nelems, sizeof(Datum), compare_datums, &cxt);
	for (int i = 0; i < state->nelems; i++)
	{
		if (n > 0 && compare_datums(&state->dvalues[n - 1], &state->dvalues[i], &cxt) == 0)
			continue;
		state->dvalues[n++] = state->dvalues[i];
	}
	state->nelems = n;
	return PointerGetDatum(construct_array(state->dvalues, n, state->element_type,
										   state->typlen, state->typbyval, state->typalign));
}

/*
 * stream_ext.distinct_values_final(state internal, value anyelement)
 * RETURNS anyarray
 */
Datum
stream_ext_distinct_values_final(PG_FUNCTION_ARGS)
{
	bool		isnull;
	Datum		result;

	Assert(AggCheckCallContext(fcinfo, NULL));
	result = sorted_distinct_array(PG_ARGISNULL(0) ? NULL :
								   (ArrayBuildState *) PG_GETARG_POINTER(0),
								   PG_GET_COLLATION(), &isnull);
	if (isnull)
		PG_RETURN_NULL();
	return result;
}

/*
 * stream_ext.distinct_values_serialize(state internal) RETURNS bytea: the
 * sorted array (see above); an empty one for a state without values.
 */
Datum
stream_ext_distinct_values_serialize(PG_FUNCTION_ARGS)
{
	ArrayBuildState *state = (ArrayBuildState *) PG_GETARG_POINTER(0);
	bool		isnull;
	Datum		result;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "stream_ext.distinct_values_serialize called in non-aggregate context");
	result = sorted_distinct_array(state, InvalidOid, &isnull);
	if (isnull)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(state->element_type));
	return result;
}

/* stream_ext.distinct_values_deserialize(bytea, internal) RETURNS internal */
Datum
stream_ext_distinct_values_deserialize(PG_FUNCTION_ARGS)
{
	ArrayType  *array = DatumGetArrayTypeP(PG_GETARG_DATUM(0));
	MemoryContext aggcxt;
	ArrayBuildState *state;
	ArrayIterator it;
	Datum		value;
	bool		isnull;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "stream_ext.distinct_values_deserialize called in non-aggregate context");
	state = initArrayResult(ARR_ELEMTYPE(array), aggcxt, false);
	it = array_create_iterator(array, 0, NULL);
	while (array_iterate(it, &value, &isnull))
	{
		if (!isnull)
			state = accumArrayResult(state, value, false, ARR_ELEMTYPE(array), aggcxt);
	}
	array_free_iterator(it);
	PG_RETURN_POINTER(state);
}
