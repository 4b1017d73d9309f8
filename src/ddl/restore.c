/*-------------------------------------------------------------------------
 *
 * restore.c
 *	  Repair after pg_restore.  pg_dump does not dump dependencies, so a
 *	  restored database lacks those that tie materializations (and deltas) to their
 *	  views, maintenance triggers to theirs, streams to the extension and
 *	  views to the tables they join.  The utility hook (ddl/utility.c)
 *	  calls ddl_restore_dependencies() after each CREATE TRIGGER of one of
 *	  stream_ext's trigger functions on a stream, which pg_restore runs
 *	  after the data of stream_ext's catalog is loaded.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_trigger.h"
#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "core/catalog.h"
#include "core/util.h"
#include "ddl/restore.h"
#include "ddl/used_objects.h"
#include "query/joins.h"
#include "query/rollup.h"

/*
 * Record that (classid, objid) depends on (refclassid, refobjid) unless it
 * already does (on the whole object or a column of it); returns 1 if
 * recorded, else 0.
 */
static int
restore_dependency(Oid classid, Oid objid, Oid refclassid, Oid refobjid,
				   DependencyType type)
{
	if (!OidIsValid(objid) || !OidIsValid(refobjid) ||
		se_dependency_exists(classid, objid, refclassid, refobjid, -1))
		return 0;
	se_record_dependency(classid, objid, refclassid, refobjid, type);
	return 1;
}

/*
 * The triggers of stream that run stream_ext.funcname() with one argument
 * naming relation relid, recorded AUTO on objid.  The argument is compared
 * as the schema-qualified name the trigger was created with (as
 * relid_from_trigger_arg() reads it), not resolved: resolving would need
 * USAGE on the schema of every view of the stream, some of which may
 * belong to other roles.  The relcache has the arguments decoded from
 * pg_trigger.tgargs, as PostgreSQL's own trigger code reads them.
 */
static int
restore_trigger_dependencies(Relation stream, const char *funcname,
							 Oid relid, Oid objid)
{
	TriggerDesc *trigdesc = stream->trigdesc;
	Oid			nspid = get_namespace_oid("stream_ext", false);
	char	   *relname = get_rel_name(relid);
	char	   *qualname;
	int			n = 0;

	if (trigdesc == NULL || relname == NULL)
		return 0;
	qualname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
										  relname);
	for (int i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *tg = &trigdesc->triggers[i];
		char	   *proname;

		if (tg->tgnargs != 1 || strcmp(tg->tgargs[0], qualname) != 0 ||
			get_func_namespace(tg->tgfoid) != nspid)
			continue;
		proname = get_func_name(tg->tgfoid);
		if (proname != NULL && strcmp(proname, funcname) == 0)
			n += restore_dependency(TriggerRelationId, tg->tgoid,
									RelationRelationId, objid, DEPENDENCY_AUTO);
	}
	return n;
}

/*
 * The triggers stream_ext.maintain_rollup('<a roll-up's side table>') on
 * relid, a side table of a continuous view feeding a roll-up's
 * count(DISTINCT) (query/rollup.c), recorded AUTO on that roll-up.
 */
static int
restore_side_table_triggers(Oid relid)
{
	Relation	rel;
	Oid			nspid = get_namespace_oid("stream_ext", false);
	int			n = 0;

	if (!OidIsValid(catalog_view_of_side_table(relid)))
		return 0;
	CommandCounterIncrement();
	rel = table_open(relid, AccessShareLock);
	for (int i = 0; rel->trigdesc && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *tg = &rel->trigdesc->triggers[i];
		char	   *proname;
		Oid			viewid;

		if (tg->tgnargs != 1 || get_func_namespace(tg->tgfoid) != nspid)
			continue;
		proname = get_func_name(tg->tgfoid);
		if (proname == NULL || strcmp(proname, "maintain_rollup") != 0)
			continue;
		viewid = catalog_view_of_side_table(relid_from_trigger_arg(tg->tgargs[0]));
		n += restore_dependency(TriggerRelationId, tg->tgoid, RelationRelationId, viewid,
								DEPENDENCY_AUTO);
	}
	table_close(rel, AccessShareLock);
	return n;
}

/*
 * Record the dependencies of a stream and of its continuous views and
 * transforms that are missing.  pg_dump does not dump dependencies: after
 * a restore the materializations would no longer go with their views, the
 * maintenance triggers with theirs, the streams with the extension.
 * pg_restore creates triggers after the data of stream_ext's catalog is
 * loaded, so the utility hook calls this after each CREATE TRIGGER running
 * one of stream_ext's trigger functions on a stream; on a stream created
 * by create_stream() and views created by CREATE VIEW it finds nothing to
 * do.  Returns the number of dependencies recorded.
 */
int
ddl_restore_dependencies(Oid streamid)
{
	Relation	stream;
	List	   *objects;
	ListCell   *lc;
	int			n = 0;
	bool		is_stream = catalog_is_stream(streamid);

	/* or the delta of a continuous view feeding roll-ups (query/rollup.c) */
	if (!is_stream && !rollup_feeds_views(streamid))
		return restore_side_table_triggers(streamid);

	/* the trigger this CREATE TRIGGER has just made, in the relcache too */
	CommandCounterIncrement();
	objects = catalog_stream_objects(streamid);
	stream = table_open(streamid, AccessShareLock);
	foreach(lc, objects)
	{
		StreamObject *obj = lfirst(lc);
		ListCell   *ac;

		if (!obj->transform && catalog_is_shared_table(obj->relid))
		{
			/* a shared storage's tables: on the stream (ddl/shared_storage.c) */
			n += restore_dependency(RelationRelationId, obj->relid,
									RelationRelationId, streamid, DEPENDENCY_NORMAL);
			n += restore_dependency(RelationRelationId, obj->deltaid,
									RelationRelationId, streamid, DEPENDENCY_NORMAL);
		}
		else if (!obj->transform)
		{
			/* materialization and side tables INTERNAL on the view */
			n += restore_dependency(RelationRelationId, obj->relid,
									RelationRelationId, obj->objid, DEPENDENCY_INTERNAL);
			n += restore_dependency(RelationRelationId, obj->relid,
									RelationRelationId, streamid, DEPENDENCY_NORMAL);
			n += restore_dependency(RelationRelationId, obj->deltaid,
									RelationRelationId, obj->objid, DEPENDENCY_INTERNAL);
			foreach(ac, obj->aux_tables)
				n += restore_dependency(RelationRelationId, lfirst_oid(ac),
										RelationRelationId, obj->objid, DEPENDENCY_INTERNAL);
			/* the stream closed windows go to (ddl/view_options.c) */
			n += restore_dependency(RelationRelationId, obj->relid, RelationRelationId,
									catalog_view_emit_output(obj->objid), DEPENDENCY_NORMAL);
			n += restore_trigger_dependencies(stream, "maintain", obj->relid, obj->objid);
			n += restore_trigger_dependencies(stream, "maintain_rollup", obj->relid, obj->objid);
		}
		else
		{
			n += restore_dependency(RelationRelationId, obj->relid,
									RelationRelationId, obj->objid, DEPENDENCY_INTERNAL);
			n += restore_dependency(RelationRelationId, obj->objid,
									RelationRelationId, streamid, DEPENDENCY_NORMAL);
			n += restore_trigger_dependencies(stream, "transform", obj->objid, obj->objid);
		}
	}
	/* the trigger of a transform on the second stream it joins (query/stream_joins.c) */
	foreach(lc, catalog_stream_joins(streamid, InvalidOid, CurrentMemoryContext))
	{
		StreamJoinEntry *sj = lfirst(lc);

		if (sj->transform && sj->right_stream == streamid)
			n += restore_trigger_dependencies(stream, "transform", sj->object, sj->object);
	}
	table_close(stream, AccessShareLock);
	if (is_stream)
		n += restore_dependency(RelationRelationId, streamid, ExtensionRelationId,
								get_extension_oid("stream_ext", false), DEPENDENCY_NORMAL);

	/* the tables joined by the stream's views and transforms (query/joins.c) */
	CommandCounterIncrement();
	foreach(lc, objects)
	{
		StreamObject *obj = lfirst(lc);
		/* held by the materialization; by a transform or a shared storage's member itself */
		Oid			holder = obj->transform || catalog_shared_prefix(obj->objid) != NULL ?
			obj->objid : obj->relid;

		n += joins_restore_dependencies(obj->sql, holder);
		/* functions, types, ... of its definition (ddl/used_objects.c) */
		if (!obj->transform)
			n += ddl_restore_used_objects(obj->objid, holder);
	}
	return n;
}
