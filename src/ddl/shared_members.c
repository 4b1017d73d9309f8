/*-------------------------------------------------------------------------
 *
 * shared_members.c
 *	  A member leaves its shared storage (ddl/shared_storage.c): DROP of
 *	  the view (shared_storage_after_drop(), from the utility hook) or
 *	  CREATE OR REPLACE of it, which gives it tables of its own
 *	  (shared_storage_leave(), when its old definition is detached:
 *	  in place, or at the swap of a rebuild beside it).
 *
 *	  Its columns stay, NULL in new rows and left out of the compaction the
 *	  next CREATE of a member generates (dropping them would lock the other
 *	  members' writers and readers out); the storage's compaction moves to
 *	  the oldest member left; the last member takes the tables along.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "utils/lsyscache.h"

#include "core/catalog.h"
#include "ddl/shared_members.h"

/* the storage of matrelid lost a member: drop it, or move its compaction */
static void
lost_member(Oid matrelid)
{
	Oid			deltaid = catalog_shared_delta(matrelid);
	List	   *members = get_rel_name(matrelid) ? catalog_shared_members(matrelid) : NIL;

	if (members == NIL)
	{
		ObjectAddresses *objs = new_object_addresses();
		ObjectAddress obj;

		obj.classId = RelationRelationId;
		obj.objectSubId = 0;
		obj.objectId = matrelid;
		if (get_rel_name(matrelid))
			add_exact_object_address(&obj, objs);
		obj.objectId = deltaid;
		if (OidIsValid(deltaid) && get_rel_name(deltaid))
			add_exact_object_address(&obj, objs);
		performMultipleDeletions(objs, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
		catalog_delete_shared_storage(matrelid);
		return;
	}
	if (!OidIsValid(catalog_shared_leader(matrelid)))
		catalog_set_view_statements(linitial_oid(members), NULL,
									catalog_shared_compact(matrelid));
}

/*
 * After a DROP: the members whose view is gone leave their storages, and
 * storages whose materialization is gone are forgotten.
 */
void
shared_storage_after_drop(void)
{
	ListCell   *lc;

	foreach(lc, catalog_shared_forget_dropped())
		lost_member(lfirst_oid(lc));
}

/*
 * View viewid, whose catalog row is gone (its old definition detached by
 * CREATE OR REPLACE), leaves its storage, if it was a member.
 */
void
shared_storage_leave(Oid viewid)
{
	Oid			matrelid = catalog_shared_forget_member(viewid);

	if (OidIsValid(matrelid))
	{
		CommandCounterIncrement();
		lost_member(matrelid);
	}
}
