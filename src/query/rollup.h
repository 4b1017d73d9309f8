/*-------------------------------------------------------------------------
 *
 * rollup.h
 *	  Continuous views over continuous views (roll-ups): query/rollup.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_ROLLUP_H
#define STREAM_EXT_QUERY_ROLLUP_H

#include "nodes/parsenodes.h"
#include "utils/relcache.h"

#include "query/analyze.h"

/* a roll-up being created: what CREATE VIEW needs to know of its upstream */
typedef struct RollupSpec
{
	Oid			upstream;		/* the continuous view read; InvalidOid: not
								 * a roll-up */
	Oid			updelta;		/* its delta, whose inserts feed the roll-up */
	Oid			upmatrel;		/* its materialization */
	Oid			upowner;		/* owner of the upstream view */
	Query	   *original;		/* the user's query, over the upstream view */
	CVPlan	   *uplan;			/* the upstream's plan, from its definition */
	struct RollupColumn *cols;	/* per column of the upstream view */
	int			ncols;
	List	   *distinct_feeds;	/* per count(DISTINCT) of the roll-up, in
								 * order: the upstream side table feeding
								 * it (Oid list) */
	List	   *distinct_aux;	/* ... and its own side table (char *) */
} RollupSpec;

extern Query *rollup_compose(Query *query, const char *querytext, RollupSpec *spec);
extern void rollup_check_create(RollupSpec *spec, bool replacing, bool options);
extern void rollup_check_replace(Oid existing);
extern char *rollup_maintain_sql(RollupSpec *spec, CVPlan *plan, const char *delta);
extern char *rollup_backfill_sql(RollupSpec *spec, CVPlan *plan, const char *matrel);
extern char *rollup_distinct_sql(RollupSpec *spec, CVPlan *plan, CVAgg *agg,
								 const char *auxrel, const char *delta);
extern char *rollup_distinct_backfill_sql(RollupSpec *spec, int n, char *sql);
extern void rollup_create_trigger(RollupSpec *spec, Oid viewid, Oid matrelid,
								  const char *mq);
extern bool rollup_feeds_views(Oid deltaid);

#endif							/* STREAM_EXT_QUERY_ROLLUP_H */
