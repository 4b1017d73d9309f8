/*-------------------------------------------------------------------------
 *
 * aggsupport.h
 *	  Generic partial-aggregate support: which aggregates can be kept
 *	  incrementally, what their stored state looks like, and the SQL-callable
 *	  combine/finalize functions that work on those states.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_AGGSUPPORT_H
#define STREAM_EXT_AGGSUPPORT_H

#include "nodes/primnodes.h"

/* How one aggregate of a continuous view is stored in the materialization */
typedef struct AggStorage
{
	Oid			aggfnoid;		/* pg_proc oid of the aggregate */
	Oid			transtype;		/* resolved transition type */
	Oid			statetype;		/* stored type: transtype, or bytea */
	bool		serialized;		/* transtype is internal: stored serialized */
	bool		has_final;		/* finalfn exists */
	bool		direct;			/* stored state IS the result: read as is */
	Oid			combinefn;		/* pg_proc oid of the combine function */
} AggStorage;

/*
 * Check that an Aggref can be maintained incrementally and describe its
 * storage.  Raises feature_not_supported naming the aggregate otherwise.
 * count(DISTINCT x) is handled by the caller and never reaches here.
 */
extern void describe_agg_storage(Aggref *aggref, AggStorage *storage,
								 int cursorpos);

extern bool is_count_distinct(Aggref *aggref);

extern int	stream_ext_debug_key_hash_bits;
extern void aggsupport_define_gucs(void);

#endif							/* STREAM_EXT_AGGSUPPORT_H */
