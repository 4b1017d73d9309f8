/*-------------------------------------------------------------------------
 *
 * replace_view.c
 *	  CREATE OR REPLACE VIEW v WITH (continuous) AS q2 on an existing
 *	  continuous view: the new query's materialization is built and
 *	  backfilled by create_view.c as for a new view, and v itself takes the
 *	  new definition in the same transaction.
 *
 * What stays: when the new columns keep the old ones (same names, types,
 * typmods and collations, in order; new ones may follow) -- PostgreSQL's
 * own rule for CREATE OR REPLACE VIEW -- the user-facing view is replaced
 * in place, so its OID, owner, grants, comments and everything built on it
 * (views over it, stream_ext.expose()'d API views, rules) stay.  When the
 * columns change otherwise, the view is dropped and created again, which
 * is allowed only if nothing depends on it; else the error names what does.
 * Its grants are carried over.
 *
 * What goes: everything PostgreSQL would drop with the old view and that
 * is not the view itself -- the objects with an INTERNAL or AUTO
 * dependency on it (materialization, side tables, delta, its triggers) --
 * and its rows in stream_ext's catalog (with their cascades: windows,
 * sessions, lateness, watermarks, late rows; invalid_objects).
 *
 * Exactness across the switch: the old view's stream is locked in SHARE
 * ROW EXCLUSIVE mode first (as CREATE VIEW locks the new one), so no
 * writer inserts between the old trigger's last batch and the backfill of
 * the new materialization; writers wait until the replacing transaction
 * ends, readers of v until it commits (ACCESS EXCLUSIVE on v).  Cancelled
 * or failed, it rolls back whole: v is untouched.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "core/catalog.h"
#include "core/util.h"
#include "ddl/replace_view.h"
#include "ddl/shared_members.h"
#include "ddl/used_objects.h"

/* set while replace_define_view() runs its own CREATE OR REPLACE VIEW */
static bool replacing = false;

bool
ddl_replacing_view(void)
{
	return replacing;
}

/*
 * Define the user-facing view vq of a continuous view again, with the same
 * columns (a view becoming the first member of a shared storage,
 * ddl/shared_storage.c).
 */
void
replace_redefine_view(const char *vq, const char *select_sql)
{
	replacing = true;
	PG_TRY();
	{
		se_run_sql(psprintf("CREATE OR REPLACE VIEW %s AS %s", vq, select_sql));
	}
	PG_FINALLY();
	{
		replacing = false;
	}
	PG_END_TRY();
}

/*
 * At the start of CREATE [OR REPLACE] VIEW ... WITH (continuous): is an
 * existing continuous view to be replaced?  Locks it and its stream, and
 * checks that the caller may.
 */
void
replace_begin(ViewStmt *stmt, ReplaceState *rs)
{
	Oid			relid;
	Oid			streamid;

	memset(rs, 0, sizeof(*rs));
	if (!stmt->replace)
		return;
	relid = RangeVarGetRelidExtended(stmt->view, AccessExclusiveLock,
									 RVR_MISSING_OK, NULL, NULL);
	if (!OidIsValid(relid))
		return;					/* nothing to replace: CREATE */
	streamid = catalog_stream_of(relid);
	if (!OidIsValid(streamid) || catalog_is_transform(relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a continuous view", stmt->view->relname),
				 catalog_is_transform(relid) ?
				 errhint("A continuous transform cannot be replaced: drop it and create it again.") :
				 errhint("Drop it first, or create the continuous view under another name.")));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_VIEW, stmt->view->relname);
	/* no batch between the old trigger's last one and the new backfill */
	LockRelationOid(streamid, ShareRowExclusiveLock);
	rs->replacing = true;
	rs->viewid = relid;
}

/* the columns of the SELECT select_sql: names, types, typmods, collations */
static List *
select_columns(const char *select_sql)
{
	List	   *raw = raw_parser(select_sql, RAW_PARSE_DEFAULT);
	Query	   *q = parse_analyze_fixedparams(linitial_node(RawStmt, raw), select_sql,
											  NULL, 0, NULL);
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (!tle->resjunk)
			result = lappend(result, tle);
	}
	return result;
}

/*
 * Does a view reading select_sql keep the columns of view viewid, by
 * PostgreSQL's rule for CREATE OR REPLACE VIEW?  *why says what differs.
 */
static bool
columns_compatible(Oid viewid, const char *select_sql, char **why)
{
	Relation	rel = relation_open(viewid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *cols = select_columns(select_sql);
	bool		ok = true;
	int			n = 0;

	*why = NULL;
	for (int i = 0; i < desc->natts && ok; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		TargetEntry *tle;

		if (att->attisdropped)
			continue;
		if (n >= list_length(cols))
		{
			*why = psprintf("column \"%s\" would be removed", NameStr(att->attname));
			ok = false;
			break;
		}
		tle = list_nth(cols, n++);
		if (strcmp(tle->resname, NameStr(att->attname)) != 0)
			*why = psprintf("column %d would be renamed from \"%s\" to \"%s\"",
							n, NameStr(att->attname), tle->resname);
		else if (exprType((Node *) tle->expr) != att->atttypid ||
				 exprTypmod((Node *) tle->expr) != att->atttypmod ||
				 exprCollation((Node *) tle->expr) != att->attcollation)
			*why = psprintf("column \"%s\" would change from %s to %s",
							NameStr(att->attname),
							format_type_with_typemod(att->atttypid, att->atttypmod),
							format_type_with_typemod(exprType((Node *) tle->expr),
													 exprTypmod((Node *) tle->expr)));
		ok = (*why == NULL);
	}
	relation_close(rel, AccessShareLock);
	return ok;
}

/*
 * The relation a trigger (TriggerRelationId) or a rule (RewriteRelationId)
 * is on; InvalidOid if it is gone.
 */
static Oid
owning_relid(Oid classid, Oid objid)
{
	Relation	rel = table_open(classid, AccessShareLock);
	HeapTuple	tup;
	Oid			result = InvalidOid;

	tup = get_catalog_object_by_oid(rel, get_object_attnum_oid(classid), objid);
	if (HeapTupleIsValid(tup))
		result = classid == TriggerRelationId ?
			((Form_pg_trigger) GETSTRUCT(tup))->tgrelid :
			((Form_pg_rewrite) GETSTRUCT(tup))->ev_class;
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * The objects depending on view viewid: stream_ext's parts of it (tables
 * INTERNAL to it, triggers on other relations AUTO-dependent on it) into
 * *internal; what the user built on it (views, rules, its own triggers...)
 * as descriptions into *others.  Its own rewrite rule and row type are
 * neither.
 */
static void
view_dependents(Oid viewid, List **internal, List **others)
{
	Relation	depRel = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;

	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(viewid));
	scan = systable_beginscan(depRel, DependReferenceIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);
		ObjectAddress obj;

		ObjectAddressSubSet(obj, dep->classid, dep->objid, dep->objsubid);
		if ((dep->deptype == DEPENDENCY_INTERNAL && dep->classid == TypeRelationId) ||
			(dep->classid == RewriteRelationId && owning_relid(RewriteRelationId, dep->objid) == viewid &&
			 dep->deptype != DEPENDENCY_AUTO))
			continue;			/* the view's own _RETURN rule and row type */
		if ((dep->deptype == DEPENDENCY_INTERNAL && dep->classid == RelationRelationId) ||
			(dep->deptype == DEPENDENCY_AUTO && dep->classid == TriggerRelationId &&
			 owning_relid(TriggerRelationId, dep->objid) != viewid))
		{
			/* materialization, side tables, delta; triggers on the stream */
			if (internal)
			{
				ObjectAddress *copy = palloc(sizeof(ObjectAddress));

				*copy = obj;
				*internal = lappend(*internal, copy);
			}
		}
		else if (others)
		{
			char	   *desc;

			obj.objectSubId = 0;
			desc = getObjectDescription(&obj, false);
			if (!list_member(*others, makeString(desc)))
				*others = lappend(*others, makeString(desc));
		}
	}
	systable_endscan(scan);
	table_close(depRel, AccessShareLock);
}

static bool
rangevar_walker(Node *node, List **relids)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeVar))
	{
		Oid			relid = RangeVarGetRelid((RangeVar *) node, NoLock, true);

		if (OidIsValid(relid))
			*relids = lappend_oid(*relids, relid);
		return false;
	}
	return raw_expression_tree_walker(node, rangevar_walker, (void *) relids);
}

/*
 * Does the raw SELECT query read a part of continuous view or transform
 * viewid (its materialization or side table, a transform's output table)?  pg_dump writes a
 * view whose parts depend on it as a placeholder first and then CREATE OR
 * REPLACE VIEW with its definition, which reads them: that one is let
 * through.  A query reading none of them would replace what stream_ext
 * maintains by something else.
 */
bool
replace_reads_own_parts(Oid viewid, Node *query)
{
	List	   *relids = NIL;
	ListCell   *lc;

	/* from the catalog: pg_restore records the dependencies only later */
	(void) rangevar_walker(query, &relids);
	foreach(lc, catalog_view_parts(viewid))
	{
		if (list_member_oid(relids, lfirst_oid(lc)))
			return true;
	}
	return false;
}

/* drop stream_ext's parts of the old view, and its catalog rows */
static void
detach_internals(Oid viewid)
{
	ObjectAddresses *objects = new_object_addresses();
	List	   *internal = NIL;
	ListCell   *lc;

	view_dependents(viewid, &internal, NULL);
	/* they may go without the view now */
	foreach(lc, internal)
	{
		ObjectAddress *obj = lfirst(lc);

		deleteDependencyRecordsForSpecific(obj->classId, obj->objectId,
										   DEPENDENCY_INTERNAL,
										   RelationRelationId, viewid);
		add_exact_object_address(obj, objects);
	}
	CommandCounterIncrement();
	performMultipleDeletions(objects, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	catalog_forget_view(viewid);
	/* what the old definition of a shared storage's member used, recorded on the view */
	ddl_forget_used_objects(viewid);
	CommandCounterIncrement();
	/* a member of a shared storage leaves it (ddl/shared_members.c) */
	shared_storage_leave(viewid);
}

/* GRANT statements giving a new view vq what view viewid granted */
static List *
grants_of(Oid viewid, const char *vq)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(viewid)};
	List	   *result = NIL;
	MemoryContext cxt = CurrentMemoryContext;

	SPI_connect();
	if (SPI_execute_with_args("SELECT a.privilege_type,"
							  "       CASE WHEN a.grantee = 0 THEN 'PUBLIC'"
							  "            ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,"
							  "       a.is_grantable"
							  "  FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a"
							  " WHERE c.oid = $1 AND a.grantee <> c.relowner",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the grants of view %u", viewid);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		result = lappend(result, psprintf("GRANT %s ON %s TO %s%s",
										  SPI_getvalue(t, d, 1), vq, SPI_getvalue(t, d, 2),
										  strcmp(SPI_getvalue(t, d, 3), "t") == 0 ?
										  " WITH GRANT OPTION" : ""));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return result;
}

/*
 * A replacement of view viewid (named vq) whose columns change (why says
 * how) drops and creates the view again: refused when other objects depend
 * on it (named in the error) or when the caller is not its owner.  Called
 * at CREATE OR REPLACE, also for a rebuild beside the view (ddl/rebuild.c),
 * so that its swap cannot fail for this.
 */
void
replace_check_columns(Oid viewid, const char *vq, const char *why)
{
	List	   *others = NIL;
	ListCell   *lc;

	view_dependents(viewid, NULL, &others);
	if (others != NIL)
	{
		StringInfoData list;

		initStringInfo(&list);
		foreach(lc, others)
			appendStringInfo(&list, "%s%s", list.len > 0 ? "\n" : "", strVal(lfirst(lc)));
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot replace continuous view %s: %s, and other objects depend on it", vq, why),
				 errdetail("%s", list.data),
				 errhint("Keep the existing columns (names and types, in order) and add new ones at the end, or drop the dependent objects first.")));
	}
	if (GetUserId() != se_relation_owner(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot replace continuous view %s: %s", vq, why),
				 errdetail("Changing the columns drops and creates the view again, owned by the role creating it."),
				 errhint("Replace it as its owner (SET ROLE).")));
}

/*
 * Does select_sql keep the columns of view viewid?  If not, may it be
 * dropped and created again (replace_check_columns())?  False when the
 * columns change.
 */
bool
replace_columns_kept(Oid viewid, const char *vq, const char *select_sql)
{
	char	   *why;

	if (columns_compatible(viewid, select_sql, &why))
		return true;
	replace_check_columns(viewid, vq, why);
	return false;
}

/*
 * Make stream_ext's parts of continuous view from (materialization, delta,
 * side tables) parts of view to: their INTERNAL dependency moves.
 */
void
replace_move_parts(Oid from, Oid to)
{
	List	   *internal = NIL;
	ListCell   *lc;

	view_dependents(from, &internal, NULL);
	foreach(lc, internal)
	{
		ObjectAddress *obj = lfirst(lc);

		if (obj->classId == RelationRelationId)
			changeDependencyFor(obj->classId, obj->objectId, RelationRelationId, from, to);
	}
	CommandCounterIncrement();
}

/*
 * Define the user-facing view vq as select_sql: CREATE VIEW for a new
 * view; for a replaced one, in place when the columns allow it, else drop
 * and create again (see the header).  Then the old view's parts go.
 */
void
replace_define_view(ReplaceState *rs, const char *vq, const char *select_sql)
{
	char	   *why;
	List	   *grants;
	ObjectAddress view;
	ListCell   *lc;

	if (!rs->replacing)
	{
		se_run_sql(psprintf("CREATE VIEW %s AS %s", vq, select_sql));
		return;
	}
	if (columns_compatible(rs->viewid, select_sql, &why))
	{
		replace_redefine_view(vq, select_sql);
		detach_internals(rs->viewid);
		return;
	}

	replace_check_columns(rs->viewid, vq, why);
	grants = grants_of(rs->viewid, vq);
	/* its parts go with it, as in DROP VIEW */
	catalog_forget_view(rs->viewid);
	ObjectAddressSet(view, RelationRelationId, rs->viewid);
	performDeletion(&view, DROP_RESTRICT, 0);
	CommandCounterIncrement();
	shared_storage_leave(rs->viewid);
	se_run_sql(psprintf("CREATE VIEW %s AS %s", vq, select_sql));
	foreach(lc, grants)
		se_run_sql((char *) lfirst(lc));
}
