/*-------------------------------------------------------------------------
 *
 * reads.c
 *	  The planner's size estimate of the deltas of views that append
 *	  (docs/internals.md, "Reading").
 *
 * A view that appends reads its materialization with an anti-join against
 * its delta (cv_merged_source_sql()).  Compaction empties deltas, and a
 * VACUUM of an empty delta records zero rows (or zero pages): PostgreSQL
 * then estimates the delta at one row, and for a full read of the view it
 * may plan the anti-join as a nested loop that rescans the delta once per
 * materialization row -- a hundred thousand rescans of an empty table cost
 * several times the read itself, and of a delta that has filled up since
 * its statistics were taken, far more.
 *
 * get_relation_info_hook (the hook PostgreSQL offers "to alter the assumed
 * relation size") raises the estimate of a delta to at least
 * SE_DELTA_MIN_PAGES page and SE_DELTA_MIN_TUPLES rows -- as PostgreSQL
 * assumes 10 pages for a table that was never vacuumed, but smaller: a
 * rescan per materialization row then costs far more than hashing the
 * delta once (an empty hash table costs nothing), while reads that must
 * merge every delta group (a filter on an aggregate) are not costed as if
 * the delta were big.  A read by key still probes the delta's index once
 * per materialization row it reads.
 * A delta is a plain table with the guard trigger stream_ext_guard and no
 * unique index (materializations and side tables of fixed-width values have
 * one); the floor is harmless for the other guarded tables it may also
 * catch (hashed side tables, session fragments).
 *
 * stream_ext.delta_key_index (bool, default on) decides whether CREATE VIEW
 * gives a view's delta its key index (cv_create_read_indexes()): reads by
 * key probe it instead of scanning the delta, and every delta row a writer
 * appends costs an index insert.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "optimizer/plancat.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "query/reads.h"

#define SE_DELTA_MIN_PAGES 1
#define SE_DELTA_MIN_TUPLES 100

static get_relation_info_hook_type prev_get_relation_info_hook = NULL;

bool		stream_ext_delta_key_index = true;

/* is relid, a plain table with no unique index, guarded by stream_ext? */
static bool
is_delta(Oid relid, RelOptInfo *rel)
{
	Relation	r;
	bool		guarded = false;
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		if (((IndexOptInfo *) lfirst(lc))->unique)
			return false;
	}
	r = relation_open(relid, NoLock);	/* the planner holds a lock */
	if (r->rd_rel->relkind == RELKIND_RELATION && r->trigdesc != NULL)
	{
		for (int i = 0; i < r->trigdesc->numtriggers && !guarded; i++)
			guarded = strcmp(r->trigdesc->triggers[i].tgname, "stream_ext_guard") == 0;
	}
	relation_close(r, NoLock);
	return guarded;
}

static void
reads_get_relation_info(PlannerInfo *root, Oid relid, bool inhparent,
						RelOptInfo *rel)
{
	if (prev_get_relation_info_hook)
		prev_get_relation_info_hook(root, relid, inhparent, rel);

	if (!inhparent &&
		(rel->pages < SE_DELTA_MIN_PAGES || rel->tuples < SE_DELTA_MIN_TUPLES) &&
		is_delta(relid, rel))
	{
		rel->pages = Max(rel->pages, SE_DELTA_MIN_PAGES);
		rel->tuples = Max(rel->tuples, SE_DELTA_MIN_TUPLES);
	}
}

void
reads_init(void)
{
	DefineCustomBoolVariable("stream_ext.delta_key_index",
							 "Gives the deltas of continuous views created from now on an index on their keys.",
							 "Reads filtered on keys then probe the delta instead of scanning it; writers pay an index insert per delta row.",
							 &stream_ext_delta_key_index,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	prev_get_relation_info_hook = get_relation_info_hook;
	get_relation_info_hook = reads_get_relation_info;
}
