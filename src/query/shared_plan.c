/*-------------------------------------------------------------------------
 *
 * shared_plan.c
 *	  The plans of continuous views that share a storage (docs/internals.md,
 *	  "Shared storage"; ddl/shared_storage.c makes and drops them).  A
 *	  member's states are columns of the storage's materialization and
 *	  delta, named after its prefix (stream_ext.shared_storage_members; ""
 *	  for the first member, "m2_", "m3_", ... for the next), and its keys
 *	  are the storage's key columns.  It has one more state: count(*), in
 *	  column <prefix>stream_ext_present, NULL in the groups it has no rows
 *	  of (other members' groups, rows of other members only), which its
 *	  view does not show.  Once a plan has these names
 *	  (shared_plan_apply(), wherever a member's plan is built from its
 *	  definition), query/analyze.c's generators write its statements over
 *	  the shared tables unchanged: its own append (only its columns set),
 *	  its backfill, its reads.  The statements that cover every member --
 *	  the writer's one append of a batch, the compaction -- are generated
 *	  from the storage's plan (shared_storage_plan()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "core/catalog.h"
#include "query/aggsupport.h"
#include "query/shared_plan.h"

bool		stream_ext_share_storage = true;

/* the presence state: count(*), in column colname */
static CVAgg *
presence_agg(const char *colname)
{
	CVAgg	   *agg = palloc0(sizeof(CVAgg));
	Aggref	   *aggref = makeNode(Aggref);

	aggref->aggfnoid = F_COUNT_;
	aggref->aggtype = INT8OID;
	aggref->aggstar = true;
	aggref->aggkind = AGGKIND_NORMAL;
	aggref->aggsplit = AGGSPLIT_SIMPLE;
	aggref->aggno = -1;
	aggref->aggtransno = -1;
	aggref->location = -1;
	agg->aggref = aggref;
	describe_agg_storage(aggref, &agg->storage, 0);
	agg->colname = pstrdup(colname);
	return agg;
}

/*
 * Give plan (named by cv_name_columns()) the names of member prefix of the
 * storage whose materialization is matrelid: the keys are its first
 * columns, the states get the prefix, and the presence state is added.
 */
void
shared_plan_name(CVPlan *plan, Oid matrelid, const char *prefix)
{
	ListCell   *lc;

	foreach(lc, plan->keys)
		((CVKey *) lfirst(lc))->colname =
			get_attname(matrelid, foreach_current_index(lc) + 1, false);
	foreach(lc, plan->aggs)
	{
		CVAgg	   *agg = lfirst(lc);

		agg->colname = psprintf("%s%s", prefix, agg->colname);
	}
	plan->presence_col = psprintf("%s%s", prefix, SHARED_PRESENCE_COLUMN);
	plan->aggs = lappend(plan->aggs, presence_agg(plan->presence_col));
}

/*
 * If view viewid is a member of a shared storage (matrelid), give plan its
 * names there; false if it has tables of its own.
 */
bool
shared_plan_apply(CVPlan *plan, Oid viewid, Oid matrelid)
{
	char	   *prefix = catalog_shared_prefix(viewid);

	if (prefix == NULL)
		return false;
	shared_plan_name(plan, matrelid, prefix);
	return true;
}

/*
 * The plan of a whole storage: the keys, FROM and WHERE of its members'
 * plans (plans, named by shared_plan_name(); the same but for the states)
 * and every member's states.
 */
CVPlan *
shared_storage_plan(List *plans)
{
	CVPlan	   *storage = palloc(sizeof(CVPlan));
	ListCell   *lc;

	*storage = *(CVPlan *) linitial(plans);
	storage->aggs = NIL;
	storage->presence_col = NULL;
	foreach(lc, plans)
		storage->aggs = list_concat(storage->aggs, ((CVPlan *) lfirst(lc))->aggs);
	return storage;
}

/* refuse what (a command) for view viewid if it shares a storage */
void
shared_refuse(Oid viewid, const char *what)
{
	if (catalog_shared_prefix(viewid) == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s is not supported for continuous view \"%s\": it shares its storage with other views",
					what, get_rel_name(viewid)),
			 errdetail("Its states are columns of a materialization and a delta it shares with the views of its stream that have the same owner and GROUP BY (stream_ext.shared_storage_members)."),
			 errhint("CREATE OR REPLACE the view, or drop it and create it again with stream_ext.share_storage = off, to give it tables of its own.")));
}

void
shared_plan_define_gucs(void)
{
	DefineCustomBoolVariable("stream_ext.share_storage",
							 "New continuous views share one materialization and one delta with the views of their stream that share their batch aggregation.",
							 "Views of one stream with the same owner, TimeZone, FROM, WHERE and GROUP BY, without count(DISTINCT), TTL, windows other than tumbling keys, allowed_lateness or changes; off: every new view gets tables of its own.",
							 &stream_ext_share_storage,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}
