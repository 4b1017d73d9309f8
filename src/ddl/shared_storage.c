/*-------------------------------------------------------------------------
 *
 * shared_storage.c
 *	  Continuous views that share their batch aggregation also share one
 *	  materialization and one delta (docs/internals.md, "Shared storage"):
 *	  one row per group holding every member's state columns, so a batch
 *	  appends one row per group for all of them and one compaction folds
 *	  it for all of them.
 *
 *	  - CREATE (shared_storage_join()): a new view that could share the
 *		batch's aggregation with a view of its stream (maintain.c's
 *		share_key(): same owner, TimeZone, FROM, WHERE and GROUP BY) and
 *		has none of the options that need tables of its own joins that
 *		view's storage; a view that still has tables of its own becomes the
 *		storage's first member then (convert_first()).  The new member's
 *		columns are added (ALTER TABLE ADD COLUMN: nullable, no default,
 *		catalog only) and its backfill upserts them.
 *	  - The storage's compaction (shared_storage.compact_sql, generated
 *		from every member's plan) is recorded as the compact_sql of its
 *		oldest member only: the compactor, the writer's backpressure,
 *		stream_ext.compact() and the compaction lock work per view, and so
 *		once per storage.  No member's own compaction ever runs over the
 *		shared delta (it would drop the others' states).
 *	  - DROP of a member, or CREATE OR REPLACE of it (which gives it tables
 *		of its own): ddl/shared_members.c.
 *
 *	  The tables depend on the stream (NORMAL), not on a view: DROP VIEW
 *	  of a member leaves them to the others, DROP of the stream takes them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "ddl/rebuild.h"
#include "ddl/replace_view.h"
#include "ddl/shared_storage.h"
#include "ddl/used_objects.h"
#include "maintain/changes.h"
#include "maintain/maintain.h"
#include "maintain/privileges.h"
#include "query/analyze.h"
#include "query/reads.h"
#include "query/rollup.h"
#include "query/shared_plan.h"

/* may an existing view (cat, plan as maintenance builds it) share a storage? */
static bool
view_can_share(ViewCatalogEntry *cat, CVPlan *plan)
{
	ListCell   *lc;

	if (plan == NULL || !OidIsValid(cat->deltaid) || cat->has_ttl ||
		cat->expire_sql != NULL || plan->window != NULL || plan->keyless ||
		plan->defer_distinct || priv_invalid_reason(cat->viewid) != NULL ||
		rollup_feeds_views(cat->deltaid) || rebuild_pending(cat->viewid) ||
		changes_lookup(cat->viewid, false, CurrentMemoryContext) != NULL)
		return false;
	foreach(lc, plan->aggs)
	{
		if (((CVAgg *) lfirst(lc))->is_distinct)
			return false;
	}
	return true;
}

/*
 * Does delta deltaid have the index stream_ext.delta_key_index = on gives a
 * view of plan's keys (cv_create_read_indexes(): a btree on the keys, a hash
 * index when the first key is variable-width)?  A view made with hash or off
 * keeps the delta it asked for: it neither joins nor is joined.
 */
static bool
delta_has_default_index(Oid deltaid, CVPlan *plan)
{
	Relation	rel = table_open(deltaid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	bool		found = false;
	ListCell   *lc;

	table_close(rel, AccessShareLock);
	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(lfirst_oid(lc)));
		Oid			am;

		if (!HeapTupleIsValid(tup))
			continue;
		am = ((Form_pg_class) GETSTRUCT(tup))->relam;
		ReleaseSysCache(tup);
		if (am == BTREE_AM_OID ||
			(am == HASH_AM_OID && plan->keys != NIL &&
			 get_typlen(((CVKey *) linitial(plan->keys))->type) < 0))
			found = true;
	}
	return found;
}

/* ALTER TABLE rel ADD COLUMN for each of aggs, in the materialize scope */
static void
add_columns(Oid relid, List *aggs, const char *default_sql)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfo(&buf, "ALTER TABLE %s", se_qualified_relname(relid));
	foreach(lc, aggs)
		appendStringInfo(&buf, "%s ADD COLUMN %s%s%s", foreach_current_index(lc) ? "," : "",
						 cv_state_column_sql(lfirst(lc)),
						 default_sql ? " DEFAULT " : "", default_sql ? default_sql : "");
	se_materialize_begin();
	se_run_sql(buf.data);
	if (default_sql)
	{
		/* the rows there get the default; rows added later none */
		resetStringInfo(&buf);
		appendStringInfo(&buf, "ALTER TABLE %s", se_qualified_relname(relid));
		foreach(lc, aggs)
			appendStringInfo(&buf, "%s ALTER COLUMN %s DROP DEFAULT",
							 foreach_current_index(lc) ? "," : "",
							 quote_identifier(((CVAgg *) lfirst(lc))->colname));
		se_run_sql(buf.data);
	}
	se_materialize_end();
}

/*
 * View cat (plan: its own names) becomes the first member of a storage of
 * its tables: its groups so far are marked present (the column's default
 * for the rows there, none for rows added later), its maintenance
 * statement and user-facing view are made again with the presence state,
 * and the tables no longer go with it.
 */
static void
convert_first(ViewCatalogEntry *cat, CVPlan *plan)
{
	char	   *mq = se_qualified_relname(cat->matrelid);
	char	   *dq = se_qualified_relname(cat->deltaid);

	catalog_insert_shared_storage(cat->matrelid, cat->deltaid, cat->streamid);
	catalog_insert_shared_member(cat->viewid, cat->matrelid, "");
	shared_plan_name(plan, cat->matrelid, "");
	add_columns(cat->matrelid, list_make1(llast(plan->aggs)), "1");
	add_columns(cat->deltaid, list_make1(llast(plan->aggs)), "1");
	CommandCounterIncrement();
	catalog_set_view_statements(cat->viewid,
								cv_maintain_append_sql(plan, dq, CV_NEW_ROWS),
								cat->compact_sql);
	replace_redefine_view(se_qualified_relname(cat->viewid),
						  cv_view_select_sql(plan, cat->matrelid,
											 cv_merged_source_sql(plan, mq, dq)));
	/* the tables are the storage's: on the stream, not on the view */
	(void) deleteDependencyRecordsForClass(RelationRelationId, cat->matrelid,
										   RelationRelationId, DEPENDENCY_INTERNAL);
	(void) deleteDependencyRecordsForClass(RelationRelationId, cat->deltaid,
										   RelationRelationId, DEPENDENCY_INTERNAL);
	se_record_dependency(RelationRelationId, cat->deltaid, RelationRelationId,
						 cat->streamid, DEPENDENCY_NORMAL);
	CommandCounterIncrement();
	/* what its definition uses: on the view, as for the other members */
	ddl_used_objects_to_view(cat->viewid, cat->matrelid);
}

/*
 * The compaction of the storage of matrelid from its members' plans
 * (plans), recorded in shared_storage and as the compact_sql of its oldest
 * member (members: oldest first), none of the others'.
 */
static void
set_compaction(Oid matrelid, List *members, List *plans)
{
	Oid			deltaid = catalog_shared_delta(matrelid);
	char	   *sql = cv_compact_sql(shared_storage_plan(plans),
									 se_qualified_relname(matrelid),
									 se_qualified_relname(deltaid));
	ListCell   *lc;

	catalog_set_shared_compact(matrelid, sql);
	foreach(lc, members)
		catalog_set_view_statements(lfirst_oid(lc), NULL,
									foreach_current_index(lc) == 0 ? sql : NULL);
}

/* a member of a storage, as shared_storage_join() reads them */
typedef struct SharedMember
{
	Oid			viewid;
	char	   *prefix;
	CVPlan	   *plan;
} SharedMember;

/* oldest member first: "", "m2_", ..., "m10_", ... */
static int
member_cmp(const ListCell *a, const ListCell *b)
{
	const char *pa = ((SharedMember *) lfirst(a))->prefix;
	const char *pb = ((SharedMember *) lfirst(b))->prefix;

	if (strlen(pa) != strlen(pb))
		return strlen(pa) < strlen(pb) ? -1 : 1;
	return strcmp(pa, pb);
}

/* would prefix's names for plan (named by cv_name_columns()) clash in relid? */
static bool
names_clash(Oid relid, CVPlan *plan, const char *prefix)
{
	ListCell   *lc;
	List	   *names = list_make1(psprintf("%s%s", prefix, SHARED_PRESENCE_COLUMN));

	foreach(lc, plan->aggs)
		names = lappend(names, psprintf("%s%s", prefix, ((CVAgg *) lfirst(lc))->colname));
	foreach(lc, names)
	{
		const char *col = lfirst(lc);

		if (strlen(col) >= NAMEDATALEN || get_attnum(relid, col) != InvalidAttrNumber)
			return true;
	}
	return false;
}

/*
 * At CREATE VIEW of a continuous view that may share a storage (plan, named
 * by cv_name_columns(), in namespace nspid, settings pinned; the caller
 * checked its options): the storage it joins -- plan named for it there,
 * its columns added to the tables -- or NULL if it has no view of the same
 * owner, schema and share_key() to share with (it gets tables of its own).
 * A view found with tables of its own becomes the storage's first member.
 * After the view is recorded, shared_storage_joined() finishes.
 */
SharedJoin *
shared_storage_join(CVPlan *plan, Oid nspid)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *timezone = GetConfigOptionByName("TimeZone", NULL, false);
	char	   *key;
	List	   *views;
	ListCell   *lc;
	ViewCatalogEntry *found = NULL;
	CVPlan	   *found_plan = NULL;
	SharedJoin *join;
	List	   *members = NIL;
	List	   *view_plans = NIL;	/* per view of views: its plan, or NULL */

	if (!stream_ext_share_storage || !catalog_has_shared_storage() ||
		stream_ext_delta_key_index != SE_DELTA_KEY_INDEX_ON)
		return NULL;
	key = maint_share_key(GetUserId(), timezone, plan);
	views = catalog_views_of_stream(plan->streamid, cxt);
	foreach(lc, views)
	{
		ViewCatalogEntry *cat = lfirst(lc);
		char	   *other_key = NULL;
		CVPlan	   *other = NULL;

		/* every member of a storage found gets its plan here (same owner, delta, schema) */
		if (cat->owner == GetUserId() && OidIsValid(cat->deltaid) &&
			get_rel_namespace(cat->matrelid) == nspid)
			other = maint_view_plan(cat, cxt, &other_key);
		view_plans = lappend(view_plans, other);
		if (other == NULL || other_key == NULL || strcmp(other_key, key) != 0 ||
			!view_can_share(cat, other) || !delta_has_default_index(cat->deltaid, other))
			continue;
		/* a storage already there first */
		if (found == NULL || catalog_shared_prefix(cat->viewid) != NULL)
		{
			found = cat;
			found_plan = other;
		}
	}
	if (found == NULL)
		return NULL;

	join = palloc0(sizeof(SharedJoin));
	join->matrelid = found->matrelid;
	join->deltaid = found->deltaid;
	if (catalog_shared_prefix(found->viewid) == NULL)
	{
		/* the first member: its own names and a presence column */
		if (names_clash(found->matrelid, plan, "m2_") ||
			get_attnum(found->matrelid, SHARED_PRESENCE_COLUMN) != InvalidAttrNumber)
			return NULL;
		convert_first(found, found_plan);
		join->members = list_make1_oid(found->viewid);
		join->plans = list_make1(found_plan);
	}
	else
	{
		/* every member's plan, for the storage's compaction */
		ListCell   *lp;

		forboth(lc, views, lp, view_plans)
		{
			ViewCatalogEntry *cat = lfirst(lc);
			SharedMember *m;

			if (cat->matrelid != found->matrelid)
				continue;
			m = palloc0(sizeof(SharedMember));
			m->viewid = cat->viewid;
			m->prefix = catalog_shared_prefix(cat->viewid);
			m->plan = lfirst(lp);
			if (m->prefix == NULL || m->plan == NULL)
				return NULL;
			members = lappend(members, m);
		}
		list_sort(members, member_cmp);
		foreach(lc, members)
		{
			SharedMember *m = lfirst(lc);

			join->members = lappend_oid(join->members, m->viewid);
			join->plans = lappend(join->plans, m->plan);
		}
		/* numbers are never reused: a dropped member's columns stay */
		join->prefix = psprintf("m%d_", catalog_shared_take_member(found->matrelid));
		if (names_clash(found->matrelid, plan, join->prefix))
			return NULL;
	}
	if (join->prefix == NULL)
		join->prefix = psprintf("m%d_", catalog_shared_take_member(found->matrelid));
	shared_plan_name(plan, join->matrelid, join->prefix);
	add_columns(join->matrelid, plan->aggs, NULL);
	add_columns(join->deltaid, plan->aggs, NULL);
	CommandCounterIncrement();
	return join;
}

/*
 * After view viewid (plan, named by shared_storage_join()) is recorded:
 * its membership, and the storage's compaction of every member.
 */
void
shared_storage_joined(SharedJoin *join, Oid viewid, CVPlan *plan)
{
	catalog_insert_shared_member(viewid, join->matrelid, join->prefix);
	set_compaction(join->matrelid, lappend_oid(join->members, viewid),
				   lappend(join->plans, plan));
}
