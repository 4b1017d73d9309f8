/*-------------------------------------------------------------------------
 *
 * used_objects.c
 *	  The objects a continuous view or transform uses besides its stream:
 *	  the functions, operators, types and collations of its definition.
 *
 * Its maintenance statements are SQL text (stream_ext.view_catalog), and
 * they name those objects, as they name the tables a view joins
 * (query/joins.c).  A view of PostgreSQL keeps a parse tree and follows a
 * renamed function; a text does not: dropping, renaming or moving such an
 * object would make every batch inserted into the stream fail.  So:
 *
 *	- at CREATE, the materialization (a transform: its view) records a
 *	  NORMAL dependency on each of them, as on the tables it joins: DROP
 *	  FUNCTION is refused, or with CASCADE takes the view along, as for a
 *	  view of PostgreSQL.  A member of a shared storage (ddl/shared_storage.c)
 *	  records them on its view instead: the materialization is every
 *	  member's, and a function one member uses must neither take the others
 *	  along on CASCADE nor stay protected after that member is gone
 *	  (ddl_used_objects_to_view() when a view becomes a storage's first
 *	  member; ddl_forget_used_objects() when CREATE OR REPLACE detaches a
 *	  view's old definition);
 *	- after pg_restore (which keeps no dependencies) they are recorded
 *	  again from the recorded definition (ddl/restore.c);
 *	- ALTER ... RENAME and ALTER ... SET SCHEMA of anything recorded that
 *	  way -- those objects, the tables joined and their columns, a schema
 *	  holding one of them -- and ALTER TYPE ... RENAME VALUE of an enum
 *	  used are refused with the view's name (ddl_check_used_object_alter(),
 *	  from the utility hook); so is a RENAME or SET SCHEMA of a view with a
 *	  change stream or emitting its closed windows, whose statements name
 *	  the view itself.
 *
 * The stream itself is not such an object: maintenance reads a batch's
 * rows, not the stream by name, so a stream can be renamed and moved
 * (ddl/utility.c records its views' definitions again under the new name)
 * -- unless a view joins it with another stream (the statement run for a
 * batch of one names the other) or emits its closed windows into it.
 * Objects of stream_ext's own schema are not recorded: they go only with
 * the extension, whose streams already depend on it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/ruleutils.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "ddl/used_objects.h"
#include "query/joins.h"
#include "query/viewplan.h"

typedef struct UsedObjects
{
	List	   *addrs;			/* ObjectAddress *, each once */
	Oid			skip_nspid;		/* stream_ext's schema */
} UsedObjects;

static void
add_object(UsedObjects *uo, Oid classid, Oid objid)
{
	ObjectAddress addr;
	ObjectAddress *copy;
	ListCell   *lc;

	/* built-in objects are pinned: PostgreSQL records nothing on them */
	if (!OidIsValid(objid) || objid < FirstNormalObjectId)
		return;
	ObjectAddressSet(addr, classid, objid);
	if (OidIsValid(uo->skip_nspid) && get_object_namespace(&addr) == uo->skip_nspid)
		return;
	foreach(lc, uo->addrs)
	{
		ObjectAddress *a = lfirst(lc);

		if (a->classId == classid && a->objectId == objid)
			return;
	}
	copy = palloc(sizeof(ObjectAddress));
	*copy = addr;
	uo->addrs = lappend(uo->addrs, copy);
}

static void
add_sort_group_clauses(UsedObjects *uo, List *clauses)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);

		add_object(uo, OperatorRelationId, sgc->eqop);
		add_object(uo, OperatorRelationId, sgc->sortop);
	}
}

static bool
used_objects_walker(Node *node, UsedObjects *uo)
{
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_Const:
			add_object(uo, TypeRelationId, ((Const *) node)->consttype);
			add_object(uo, CollationRelationId, ((Const *) node)->constcollid);
			break;
		case T_FuncExpr:
			add_object(uo, ProcedureRelationId, ((FuncExpr *) node)->funcid);
			break;
		case T_Aggref:
			add_object(uo, ProcedureRelationId, ((Aggref *) node)->aggfnoid);
			break;
		case T_WindowFunc:
			add_object(uo, ProcedureRelationId, ((WindowFunc *) node)->winfnoid);
			break;
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			add_object(uo, OperatorRelationId, ((OpExpr *) node)->opno);
			break;
		case T_ScalarArrayOpExpr:
			add_object(uo, OperatorRelationId, ((ScalarArrayOpExpr *) node)->opno);
			break;
		case T_RowCompareExpr:
			{
				ListCell   *lc;

				foreach(lc, ((RowCompareExpr *) node)->opnos)
					add_object(uo, OperatorRelationId, lfirst_oid(lc));
			}
			break;
		case T_RelabelType:
			add_object(uo, TypeRelationId, ((RelabelType *) node)->resulttype);
			break;
		case T_CoerceViaIO:
			add_object(uo, TypeRelationId, ((CoerceViaIO *) node)->resulttype);
			break;
		case T_ArrayCoerceExpr:
			add_object(uo, TypeRelationId, ((ArrayCoerceExpr *) node)->resulttype);
			break;
		case T_ConvertRowtypeExpr:
			add_object(uo, TypeRelationId, ((ConvertRowtypeExpr *) node)->resulttype);
			break;
		case T_CoerceToDomain:
			add_object(uo, TypeRelationId, ((CoerceToDomain *) node)->resulttype);
			break;
		case T_RowExpr:
			add_object(uo, TypeRelationId, ((RowExpr *) node)->row_typeid);
			break;
		case T_CollateExpr:
			add_object(uo, CollationRelationId, ((CollateExpr *) node)->collOid);
			break;
		case T_Query:
			{
				Query	   *q = (Query *) node;

				add_sort_group_clauses(uo, q->groupClause);
				add_sort_group_clauses(uo, q->sortClause);
				add_sort_group_clauses(uo, q->distinctClause);
				return query_tree_walker(q, used_objects_walker, (void *) uo, 0);
			}
		default:
			break;
	}
	return expression_tree_walker(node, used_objects_walker, (void *) uo);
}

/* the functions, operators, types and collations query uses */
static List *
used_objects(Query *query)
{
	UsedObjects uo;

	uo.addrs = NIL;
	uo.skip_nspid = get_namespace_oid("stream_ext", true);
	(void) used_objects_walker((Node *) query, &uo);
	return uo.addrs;
}

/*
 * Record that relation objid (a materialization, a transform) depends on
 * what definition query uses (pinned objects are left out by PostgreSQL).
 */
void
ddl_record_used_objects(Oid objid, Query *query)
{
	ObjectAddress depender;
	ListCell   *lc;

	ObjectAddressSet(depender, RelationRelationId, objid);
	foreach(lc, used_objects(query))
		recordDependencyOn(&depender, (ObjectAddress *) lfirst(lc), DEPENDENCY_NORMAL);
}

/*
 * Forget what ddl_record_used_objects() recorded on relation relid: its
 * NORMAL dependencies, as a whole relation, on functions, operators, types
 * and collations (its columns' dependencies on their types are not of that
 * kind); for a view (a member of a shared storage), also those on the
 * tables and columns it joins (query/joins.c), PostgreSQL recording none
 * of its own there (a view's rule holds them).
 */
void
ddl_forget_used_objects(Oid relid)
{
	Relation	depend = table_open(DependRelationId, RowExclusiveLock);
	ScanKeyData key[3];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		view = get_rel_relkind(relid) == RELKIND_VIEW;

	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&key[2], Anum_pg_depend_objsubid, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(0));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 3, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->deptype == DEPENDENCY_NORMAL &&
			(dep->refclassid == ProcedureRelationId ||
			 dep->refclassid == OperatorRelationId ||
			 dep->refclassid == TypeRelationId ||
			 dep->refclassid == CollationRelationId ||
			 (view && dep->refclassid == RelationRelationId)))
			CatalogTupleDelete(depend, &tup->t_self);
	}
	systable_endscan(scan);
	table_close(depend, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * RENAME, RENAME COLUMN or SET SCHEMA of relid, refused if it is a view
 * whose statements name it: one with a change stream (maintain/changes.c)
 * or emitting its closed windows (windows/lateness.c) reads its own rows
 * by the view's name and columns.
 */
static void
check_view_named_by_own_sql(Oid relid, Node *parsetree, const char *relname)
{
	char	   *why = catalog_view_named_by_own_sql(relid);

	if (why == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 IsA(parsetree, AlterObjectSchemaStmt) ?
			 errmsg("cannot move continuous view \"%s\" to another schema: %s",
					relname, why) :
			 ((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN ?
			 errmsg("cannot rename column \"%s\" of continuous view \"%s\": %s",
					((RenameStmt *) parsetree)->subname, relname, why) :
			 errmsg("cannot rename continuous view \"%s\": %s", relname, why),
			 errdetail("The statement that reads the view's rows for it names the view and its columns."),
			 strstr(why, "change stream") != NULL ?
			 errhint("ALTER VIEW ... SET (changes = false) first, and SET (changes = true) again after.") :
			 errhint("Drop the view and create it again under the new name.")));
}

/* the object a RenameStmt or AlterObjectSchemaStmt alters, if in reach */
static bool
altered_object(Node *parsetree, ObjectAddress *addr, Oid *nspid, Oid *stream)
{
	ObjectType	type;
	RangeVar   *relation;
	Node	   *object;
	Relation	rel = NULL;

	*nspid = InvalidOid;
	*stream = InvalidOid;
	if (IsA(parsetree, AlterEnumStmt))
	{
		AlterEnumStmt *stmt = (AlterEnumStmt *) parsetree;

		/* ALTER TYPE ... RENAME VALUE: a constant of the type is its label */
		if (stmt->oldVal == NULL)
			return false;
		*addr = get_object_address(OBJECT_TYPE,
								   (Node *) makeTypeNameFromNameList(stmt->typeName),
								   &rel, AccessExclusiveLock, true);
		return OidIsValid(addr->objectId);
	}
	if (IsA(parsetree, RenameStmt))
	{
		RenameStmt *stmt = (RenameStmt *) parsetree;

		type = stmt->renameType;
		relation = stmt->relation;
		object = stmt->object;
		if (type == OBJECT_SCHEMA)
		{
			*nspid = get_namespace_oid(stmt->subname, true);
			return OidIsValid(*nspid);
		}
		if (type == OBJECT_COLUMN && relation != NULL)
		{
			Oid			relid = RangeVarGetRelid(relation, NoLock, true);
			AttrNumber	attnum;

			if (!OidIsValid(relid))
				return false;
			check_view_named_by_own_sql(relid, parsetree, relation->relname);
			if (catalog_is_stream(relid))
				return false;
			attnum = get_attnum(relid, stmt->subname);
			if (attnum == InvalidAttrNumber)
				return false;
			ObjectAddressSubSet(*addr, RelationRelationId, relid, attnum);
			return true;
		}
	}
	else if (IsA(parsetree, AlterObjectSchemaStmt))
	{
		AlterObjectSchemaStmt *stmt = (AlterObjectSchemaStmt *) parsetree;

		type = stmt->objectType;
		relation = stmt->relation;
		object = stmt->object;
	}
	else
		return false;

	switch (type)
	{
		case OBJECT_TABLE:
		case OBJECT_VIEW:
		case OBJECT_MATVIEW:
		case OBJECT_FOREIGN_TABLE:
			{
				Oid			relid;

				if (relation == NULL)
					return false;
				relid = RangeVarGetRelid(relation, NoLock, true);
				if (!OidIsValid(relid))
					return false;
				check_view_named_by_own_sql(relid, parsetree, relation->relname);
				/* a stream may be renamed and moved (see the header) */
				if (catalog_is_stream(relid))
				{
					*stream = relid;
					return true;
				}
				ObjectAddressSet(*addr, RelationRelationId, relid);
				return true;
			}
		case OBJECT_TYPE:
		case OBJECT_DOMAIN:
			object = (Node *) makeTypeNameFromNameList(castNode(List, object));
			/* FALLTHROUGH */
		case OBJECT_FUNCTION:
		case OBJECT_ROUTINE:
		case OBJECT_AGGREGATE:
		case OBJECT_OPERATOR:
		case OBJECT_COLLATION:
			if (object == NULL)
				return false;
			/* the lock ALTER takes next, on the object only (not a table) */
			*addr = get_object_address(type, object, &rel, AccessExclusiveLock, true);
			return OidIsValid(addr->objectId);
		default:
			return false;
	}
}

/*
 * ALTER TABLE t ALTER COLUMN c TYPE of a column that a view reads from a
 * joined table: PostgreSQL would fail on the materialization's dependency
 * ("unexpected object depending on column"); say which view instead.  A
 * stream's columns: ddl/utility.c.
 */
static void
check_column_types(AlterTableStmt *stmt)
{
	Oid			relid = InvalidOid;
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);
		AttrNumber	attnum;
		char	   *user;

		if (cmd->subtype != AT_AlterColumnType || cmd->name == NULL)
			continue;
		if (!OidIsValid(relid))
		{
			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
			if (!OidIsValid(relid) || catalog_is_stream(relid))
				return;
		}
		if ((attnum = get_attnum(relid, cmd->name)) == InvalidAttrNumber)
			continue;
		user = catalog_object_user(RelationRelationId, relid, attnum);
		if (user != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot change the type of column \"%s\" of \"%s\": %s uses it",
							cmd->name, stmt->relation->relname, user),
					 errhint("Drop the continuous views and transforms that use it first.")));
	}
}

/*
 * Refuse ALTER ... RENAME or SET SCHEMA of an object that the SQL of a
 * continuous view or transform names (see the header): the object a
 * definition uses, a table it joins or a column of one, the schema of one
 * of those; ALTER TYPE ... RENAME VALUE of an enum it uses, and ALTER
 * TABLE ... ALTER COLUMN ... TYPE of a joined table's column it reads.
 */
void
ddl_check_used_object_alter(Node *parsetree)
{
	ObjectAddress addr;
	Oid			nspid;
	Oid			stream;
	char	   *user;
	bool		rename = IsA(parsetree, RenameStmt);

	if (IsA(parsetree, AlterTableStmt))
	{
		check_column_types((AlterTableStmt *) parsetree);
		return;
	}
	if (!altered_object(parsetree, &addr, &nspid, &stream))
		return;
	if (OidIsValid(stream) || OidIsValid(nspid))
	{
		/* unless the SQL of a view joining it or emitting into it names it */
		user = catalog_stream_named_by(stream, nspid);
		if (user != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 OidIsValid(stream) ?
					 (rename ?
					  errmsg("cannot rename stream \"%s\": %s",
							 get_rel_name(stream), user) :
					  errmsg("cannot move stream \"%s\" to another schema: %s",
							 get_rel_name(stream), user)) :
					 errmsg("cannot rename schema \"%s\" holding a stream: %s",
							get_namespace_name(nspid), user),
					 errdetail("The statements that maintain that view name the stream."),
					 errhint("Drop the continuous views and transforms that join the stream or emit into it first.")));
		if (OidIsValid(stream))
			return;
	}
	if (OidIsValid(nspid))
	{
		user = catalog_schema_object_user(nspid);
		if (user != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot rename schema \"%s\": %s uses objects in it",
							get_namespace_name(nspid), user),
					 errdetail("The statements that maintain it name them with their schema."),
					 errhint("Drop the continuous views and transforms that use them, rename the schema, and create them again.")));
		return;
	}
	user = catalog_object_user(addr.classId, addr.objectId, addr.objectSubId);
	if (user != NULL && IsA(parsetree, AlterEnumStmt))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot rename a value of %s: %s uses the type",
						getObjectDescription(&addr, false), user),
				 errdetail("The statements that maintain it name the type's values by their labels."),
				 errhint("Drop the continuous views and transforms that use it, or create them again without it, first.")));
	if (user != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 rename ?
				 errmsg("cannot rename %s: %s uses it",
						getObjectDescription(&addr, false), user) :
				 errmsg("cannot move %s to another schema: %s uses it",
						getObjectDescription(&addr, false), user),
				 errdetail("The statements that maintain it name it."),
				 errhint("Drop the continuous views and transforms that use it, or create them again without it, first.")));
}

/* ---- a stream renamed or moved ------------------------------------------ */

typedef struct RecordedDefinition
{
	Oid			viewid;
	Query	   *query;			/* analyzed before the rename */
	char	   *text;			/* as recorded */
} RecordedDefinition;

/* views's definition analyzed, or NULL if it no longer analyzes */
static RecordedDefinition *
analyze_recorded(Oid viewid)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	RecordedDefinition *rd = palloc0(sizeof(RecordedDefinition));

	rd->viewid = viewid;
	/* a definition recorded stale before (an older stream_ext) stays so */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		rd->query = cv_view_definition(viewid, &rd->text);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(caller);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		rd = NULL;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(caller);
	CurrentResourceOwner = owner;
	return rd;
}

/*
 * Before ALTER TABLE s RENAME TO / SET SCHEMA of a stream, or ALTER SCHEMA
 * RENAME of a schema holding streams: the definitions of the views naming
 * them, analyzed (names resolved to OIDs), for ddl_record_renamed_stream().
 */
List *
ddl_definitions_before_alter(Node *parsetree)
{
	List	   *streams = NIL;
	List	   *result = NIL;
	ListCell   *lc;
	RangeVar   *relation = NULL;

	if (IsA(parsetree, RenameStmt))
	{
		RenameStmt *stmt = (RenameStmt *) parsetree;

		if (stmt->renameType == OBJECT_SCHEMA)
		{
			Oid			nspid = get_namespace_oid(stmt->subname, true);

			if (OidIsValid(nspid))
				streams = catalog_streams_in_schema(nspid);
		}
		else if (stmt->renameType == OBJECT_TABLE ||
				 stmt->renameType == OBJECT_FOREIGN_TABLE)
			relation = stmt->relation;
	}
	else if (IsA(parsetree, AlterObjectSchemaStmt) &&
			 (((AlterObjectSchemaStmt *) parsetree)->objectType == OBJECT_TABLE ||
			  ((AlterObjectSchemaStmt *) parsetree)->objectType == OBJECT_FOREIGN_TABLE))
		relation = ((AlterObjectSchemaStmt *) parsetree)->relation;
	if (relation != NULL)
	{
		Oid			relid = RangeVarGetRelid(relation, NoLock, true);

		if (OidIsValid(relid) && catalog_is_stream(relid))
			streams = list_make1_oid(relid);
	}
	foreach(lc, streams)
	{
		ListCell   *vc;

		foreach(vc, catalog_views_naming_stream(lfirst_oid(lc)))
		{
			RecordedDefinition *rd;
			ListCell   *dc;
			bool		seen = false;

			foreach(dc, result)
				seen |= ((RecordedDefinition *) lfirst(dc))->viewid == lfirst_oid(vc);
			if (!seen && (rd = analyze_recorded(lfirst_oid(vc))) != NULL)
				result = lappend(result, rd);
		}
	}
	return result;
}

/*
 * After it: each definition deparsed again, as CREATE VIEW did (the
 * settings pinned: every schema named), names the stream as it is now;
 * recorded if it changed, and in the view's comment if that still showed
 * the old one.
 */
void
ddl_record_renamed_stream(List *definitions)
{
	ListCell   *lc;

	if (definitions == NIL)
		return;
	CommandCounterIncrement();
	foreach(lc, definitions)
	{
		RecordedDefinition *rd = lfirst(lc);
		int			nestlevel = se_pin_settings(NULL);
		char	   *text = pg_get_querydef(rd->query, true);
		char	   *comment;

		se_unpin_settings(nestlevel);
		if (strcmp(text, rd->text) == 0)
			continue;
		catalog_set_view_definition(rd->viewid, text);
		comment = GetComment(rd->viewid, RelationRelationId, 0);
		if (comment != NULL && strcmp(comment, rd->text) == 0)
			CreateComments(rd->viewid, RelationRelationId, 0, text);
	}
}

/*
 * After pg_restore: what continuous view viewid's recorded definition uses,
 * recorded where missing on relid, the relation that holds them (its
 * materialization; the view itself for a member of a shared storage);
 * returns how many.
 */
int
ddl_restore_used_objects(Oid viewid, Oid relid)
{
	RecordedDefinition *rd = analyze_recorded(viewid);
	ObjectAddress depender;
	ListCell   *lc;
	int			n = 0;

	if (rd == NULL)
		return 0;
	ObjectAddressSet(depender, RelationRelationId, relid);
	foreach(lc, used_objects(rd->query))
	{
		ObjectAddress *ref = lfirst(lc);

		if (se_dependency_exists(RelationRelationId, relid, ref->classId,
								 ref->objectId, -1))
			continue;
		recordDependencyOn(&depender, ref, DEPENDENCY_NORMAL);
		n++;
	}
	return n;
}

/*
 * Continuous view viewid becomes the first member of a storage of its
 * materialization matrelid (ddl/shared_storage.c): what its definition
 * uses, and the tables and columns it joins, are recorded on the view, no
 * longer on the materialization.
 */
void
ddl_used_objects_to_view(Oid viewid, Oid matrelid)
{
	RecordedDefinition *rd = analyze_recorded(viewid);
	ListCell   *lc;

	ddl_forget_used_objects(matrelid);
	if (rd == NULL)
		return;
	foreach(lc, joins_tables(rd->query))
		(void) deleteDependencyRecordsForSpecific(RelationRelationId, matrelid,
												  DEPENDENCY_NORMAL, RelationRelationId,
												  lfirst_oid(lc));
	CommandCounterIncrement();
	(void) ddl_restore_used_objects(viewid, viewid);
	joins_record_dependencies(rd->query, viewid);
	CommandCounterIncrement();
}
