/*-------------------------------------------------------------------------
 *
 * privileges.c
 *	  Privileges of the owners of continuous views and transforms, checked
 *	  at every batch, and the objects that lost them.
 *
 *	  Maintenance reads a batch of rows through a transition table, which
 *	  PostgreSQL does not check privileges on, and may read joined tables
 *	  and write an output stream.  So the relations and columns each
 *	  maintenance statement touches are collected once, when its plan is
 *	  prepared (priv_collect()), and checked as the object's owner before
 *	  every batch (priv_check()).  The check is cached per backend: it is
 *	  repeated only after an invalidation that can change a privilege (any
 *	  relcache invalidation -- GRANT and REVOKE on a table or a column send
 *	  one for that table -- or a change of pg_authid or pg_auth_members).
 *
 *	  An object whose owner lost a privilege is recorded in
 *	  stream_ext.invalid_objects (priv_mark_invalid(), as the extension
 *	  owner, in the inserting transaction) and is not maintained from then
 *	  on; the insert itself succeeds.  It stays invalid when the privilege
 *	  comes back, since it missed rows: it has to be dropped and created
 *	  again.  Reading an invalid object raises 42501 naming the privilege
 *	  (priv_check_read(), from the planner hook), so no query silently gets
 *	  stale rows.  The backend keeps the set of invalid objects in memory
 *	  and reloads it after invalidations; a plan that reads views costs one
 *	  hash probe per relation it reads when some object is invalid, and
 *	  nothing else.  The plan itself is not changed: key filters on a view
 *	  stay index scans.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "core/catalog.h"
#include "core/security.h"
#include "maintain/privileges.h"

/* bumped by every invalidation that can change a privilege */
static uint64 priv_generation = 1;

static void
priv_relcache_callback(Datum arg, Oid relid)
{
	priv_generation++;
}

static void
priv_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	priv_generation++;
}

void
privileges_init(void)
{
	CacheRegisterRelcacheCallback(priv_relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, priv_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, priv_syscache_callback, (Datum) 0);
}

/* ---- what a maintenance statement touches ------------------------------- */

typedef struct CollectContext
{
	List	   *rtables;		/* rtables of the enclosing queries, innermost first */
	RangeTblEntry *stream;		/* the batch, as a SELECT of the stream */
	List	   *rtes;			/* relations touched, copied */
} CollectContext;

static bool collect_walker(Node *node, CollectContext *cc);

static void
collect_var(Var *var, CollectContext *cc)
{
	List	   *rtable;
	RangeTblEntry *rte;

	if (var->varlevelsup >= list_length(cc->rtables))
		return;
	rtable = list_nth(cc->rtables, var->varlevelsup);
	if (var->varno < 1 || var->varno > list_length(rtable))
		return;
	rte = rt_fetch(var->varno, rtable);
	if (rte->rtekind == RTE_NAMEDTUPLESTORE)
	{
		/* the batch: a column of the stream (0: the whole row) */
		cc->stream->selectedCols =
			bms_add_member(cc->stream->selectedCols,
						   var->varattno - FirstLowInvalidHeapAttributeNumber);
	}
	else if (rte->rtekind == RTE_JOIN && var->varattno > 0 &&
			 var->varattno <= list_length(rte->joinaliasvars))
	{
		/* a join's column: what it stands for, at the join's level */
		List	   *saved = cc->rtables;

		cc->rtables = list_copy_tail(cc->rtables, var->varlevelsup);
		(void) collect_walker(list_nth(rte->joinaliasvars, var->varattno - 1), cc);
		cc->rtables = saved;
	}
}

static bool
collect_walker(Node *node, CollectContext *cc)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		collect_var((Var *) node, cc);
		return false;
	}
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION && rte->requiredPerms != 0)
			cc->rtes = lappend(cc->rtes, copyObject(rte));
		return false;
	}
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;
		bool		result;

		cc->rtables = lcons(q->rtable, cc->rtables);
		result = query_tree_walker(q, collect_walker, cc,
								   QTW_EXAMINE_RTES_BEFORE | QTW_IGNORE_JOINALIASES);
		cc->rtables = list_delete_first(cc->rtables);
		return result;
	}
	return expression_tree_walker(node, collect_walker, cc);
}

/*
 * The relations and columns plan touches, as RTEs to check (the rows of
 * the batch as a SELECT of the stream's columns they use), in cxt.
 */
List *
priv_collect(SPIPlanPtr plan, Oid streamid, MemoryContext cxt)
{
	CollectContext cc;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(cxt);

	memset(&cc, 0, sizeof(cc));
	cc.stream = makeNode(RangeTblEntry);
	cc.stream->rtekind = RTE_RELATION;
	cc.stream->relid = streamid;
	cc.stream->relkind = RELKIND_RELATION;
	cc.stream->requiredPerms = ACL_SELECT;
	foreach(lc, SPI_plan_get_plan_sources(plan))
	{
		CachedPlanSource *ps = lfirst(lc);
		ListCell   *lq;

		foreach(lq, ps->query_list)
			(void) collect_walker(lfirst(lq), &cc);
	}
	cc.rtes = lcons(cc.stream, cc.rtes);
	MemoryContextSwitchTo(old);
	return cc.rtes;
}

/*
 * SELECT on every column of the stream, as an RTE list for priv_check():
 * for what a statement keeps whole (the late rows of a view with
 * allowed_lateness, windows/lateness.c), which priv_collect() does not see.
 */
List *
priv_whole_row(Oid streamid, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	List	   *result;

	rte->rtekind = RTE_RELATION;
	rte->relid = streamid;
	rte->relkind = RELKIND_RELATION;
	rte->requiredPerms = ACL_SELECT;
	rte->selectedCols = bms_make_singleton(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber);
	result = list_make1(rte);
	MemoryContextSwitchTo(old);
	return result;
}

static const char *
privilege_name(AclMode perm)
{
	switch (perm)
	{
		case ACL_SELECT:
			return "SELECT";
		case ACL_INSERT:
			return "INSERT";
		case ACL_UPDATE:
			return "UPDATE";
		default:
			return "DELETE";
	}
}

/* "SELECT on column "v" of table public.s", or NULL if user has it */
static char *
missing_privilege(Oid relid, Oid user, AclMode perm, Bitmapset *cols)
{
	char	   *relname;
	int			col = -1;

	if (pg_class_aclcheck(relid, user, perm) == ACLCHECK_OK)
		return NULL;
	relname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
										 get_rel_name(relid));
	if (bms_is_empty(cols))
	{
		/* count(*): any column will do */
		if (pg_attribute_aclcheck_all(relid, user, perm, ACLMASK_ANY) == ACLCHECK_OK)
			return NULL;
		return psprintf("%s on table %s", privilege_name(perm), relname);
	}
	while ((col = bms_next_member(cols, col)) >= 0)
	{
		AttrNumber	attno = col + FirstLowInvalidHeapAttributeNumber;

		if (attno == InvalidAttrNumber)
		{
			if (pg_attribute_aclcheck_all(relid, user, perm, ACLMASK_ALL) != ACLCHECK_OK)
				return psprintf("%s on table %s", privilege_name(perm), relname);
		}
		else if (pg_attribute_aclcheck(relid, attno, user, perm) != ACLCHECK_OK)
			return psprintf("%s on column %s of table %s", privilege_name(perm),
							quote_identifier(get_attname(relid, attno, false)), relname);
	}
	return NULL;
}

/*
 * The first privilege owner lacks among rtes (from priv_collect()), as
 * "role "r" has no SELECT on table s", or NULL if it has them all.  Checked
 * again only after an invalidation (*checked holds the generation of the
 * last successful check).
 */
char *
priv_check(List *rtes, Oid owner, uint64 *checked)
{
	ListCell   *lc;

	if (*checked == priv_generation)
		return NULL;
	foreach(lc, rtes)
	{
		RangeTblEntry *rte = lfirst(lc);
		Oid			user = OidIsValid(rte->checkAsUser) ? rte->checkAsUser : owner;
		char	   *missing = NULL;

		if (get_rel_relkind(rte->relid) == '\0')
			continue;			/* dropped: the plan is rebuilt or fails itself */
		if (rte->requiredPerms & ACL_SELECT)
			missing = missing_privilege(rte->relid, user, ACL_SELECT, rte->selectedCols);
		if (!missing && (rte->requiredPerms & ACL_INSERT))
			missing = missing_privilege(rte->relid, user, ACL_INSERT, rte->insertedCols);
		if (!missing && (rte->requiredPerms & ACL_UPDATE))
			missing = missing_privilege(rte->relid, user, ACL_UPDATE, rte->updatedCols);
		if (!missing && (rte->requiredPerms & ACL_DELETE))
			missing = missing_privilege(rte->relid, user, ACL_DELETE, NULL);
		if (missing)
			return psprintf("role \"%s\" has no %s",
							GetUserNameFromId(user, false), missing);
	}
	*checked = priv_generation;
	return NULL;
}

/* ---- invalid objects ---------------------------------------------------- */

typedef struct InvalidEntry
{
	Oid			relid;			/* hash key: the view or transform */
	char	   *kind;
	char	   *reason;
} InvalidEntry;

static HTAB *invalid_set = NULL;
static MemoryContext invalid_cxt = NULL;
static uint64 invalid_set_generation = 0;

/* (re)load the set of invalid objects of this database if stale */
static void
invalid_set_locked(void *arg)
{
	/* taking the lock may have processed invalidations: note it after */
	*(uint64 *) arg = priv_generation;
}

static void
invalid_set_add(Oid object, const char *kind, const char *reason, void *arg)
{
	InvalidEntry *entry = hash_search(invalid_set, &object, HASH_ENTER, NULL);

	entry->kind = MemoryContextStrdup(invalid_cxt, kind);
	entry->reason = MemoryContextStrdup(invalid_cxt, reason);
}

static void
load_invalid_set(void)
{
	HASHCTL		ctl;
	uint64		generation = priv_generation;
	InvalidObjectsReader reader = {invalid_set_locked, invalid_set_add, &generation};

	if (invalid_set != NULL && invalid_set_generation == priv_generation)
		return;
	invalid_set_generation = 0;	/* stale until loaded whole */
	if (invalid_cxt == NULL)
		invalid_cxt = AllocSetContextCreate(CacheMemoryContext, "stream_ext invalid objects",
											ALLOCSET_SMALL_SIZES);
	MemoryContextReset(invalid_cxt);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(InvalidEntry);
	ctl.hcxt = invalid_cxt;
	invalid_set = hash_create("stream_ext invalid objects", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	switch (catalog_scan_invalid_objects(&reader))
	{
		case CATALOG_SCAN_NO_TABLE:
			invalid_set_generation = priv_generation;
			break;
		case CATALOG_SCAN_BUSY:
			/* left empty until the lock is released: loaded again next time */
			break;
		case CATALOG_SCAN_DONE:
			invalid_set_generation = generation;
			break;
	}
}

/* why relid (a continuous view or transform) is invalid, or NULL */
const char *
priv_invalid_reason(Oid relid)
{
	InvalidEntry *entry;

	load_invalid_set();
	if (hash_get_num_entries(invalid_set) == 0)
		return NULL;
	entry = hash_search(invalid_set, &relid, HASH_FIND, NULL);
	return entry ? entry->reason : NULL;
}

/*
 * Record that relid (a continuous view or transform) is no longer
 * maintained, in the current transaction, and tell the inserting user.
 */
void
priv_mark_invalid(Oid relid, const char *kind, const char *reason)
{
	priv_mark_invalid_because(relid, kind, reason, ERRCODE_INSUFFICIENT_PRIVILEGE,
							  "Drop it and create it again once its owner has the privilege.");
}

/* the same, for another reason than a privilege (lock_guard.c) */
void
priv_mark_invalid_because(Oid relid, const char *kind, const char *reason,
						  int sqlstate, const char *hint)
{
	if (!OidIsValid(catalog_invalid_objects_relid()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot maintain %s \"%s\": %s", kind, get_rel_name(relid), reason),
				 errhint("Run ALTER EXTENSION stream_ext UPDATE, then insert again: the %s will be marked invalid and the insert will succeed.",
						 kind)));
	catalog_insert_invalid_object(relid, kind, reason);
	/* other backends reload their set, and replan queries reading it */
	CacheInvalidateRelcacheByRelid(relid);
	ereport(WARNING,
			(errcode(sqlstate),
			 errmsg("%s \"%s\" is no longer maintained: %s", kind, get_rel_name(relid), reason),
			 errdetail("The rows of this statement and all later ones are not applied to it; reading it raises an error."),
			 errhint("%s", hint)));
}

/*
 * Planner hook (outside maintenance, which never reads one): refuse a plan
 * that reads an invalid continuous view or transform.
 */
void
priv_check_read(PlannedStmt *stmt)
{
	ListCell   *lc;

	bool		reads_view = false;

	if (!IsTransactionState())
		return;
	/* continuous views and transforms are read through views */
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_VIEW)
		{
			reads_view = true;
			break;
		}
	}
	if (!reads_view)
		return;
	load_invalid_set();
	if (hash_get_num_entries(invalid_set) == 0)
		return;
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		InvalidEntry *entry;

		if (rte->rtekind != RTE_RELATION || !(rte->requiredPerms & ACL_SELECT))
			continue;
		entry = hash_search(invalid_set, &rte->relid, HASH_FIND, NULL);
		if (entry && strncmp(entry->reason, PRIV_ERROR_REASON_PREFIX,
							 strlen(PRIV_ERROR_REASON_PREFIX)) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("%s \"%s\" is invalid: %s",
							entry->kind, get_rel_name(rte->relid), entry->reason),
					 errdetail("It stopped being maintained when its maintenance raised an error; rows inserted since are missing from it."),
					 errhint("Drop it and create it again once the cause is fixed (stream_ext.invalid_objects lists invalid objects).")));
		if (entry)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("%s \"%s\" is invalid: %s",
							entry->kind, get_rel_name(rte->relid), entry->reason),
					 strncmp(entry->reason, PRIV_LOCK_REASON_PREFIX, strlen(PRIV_LOCK_REASON_PREFIX)) == 0 ?
					 errdetail("It stopped being maintained when another role held a lock its maintenance needed; rows inserted since are missing from it.") :
					 errdetail("It stopped being maintained when its owner lost the privilege; rows inserted since are missing from it."),
					 strncmp(entry->reason, PRIV_LOCK_REASON_PREFIX, strlen(PRIV_LOCK_REASON_PREFIX)) == 0 ?
					 errhint("Drop it and create it again (stream_ext.invalid_objects lists invalid objects).") :
					 errhint("Drop it and create it again once its owner has the privilege (stream_ext.invalid_objects lists invalid objects).")));
	}
}
