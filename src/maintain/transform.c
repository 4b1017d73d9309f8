/*-------------------------------------------------------------------------
 *
 * transform.c
 *	  The batch trigger of continuous transforms.
 *
 *	  A continuous view without aggregates and GROUP BY is a transform:
 *	  each batch of its stream is filtered and projected, and the rows are
 *	  appended, in the same transaction, either to another stream
 *	  (WITH (output_stream = 's')) -- whose own continuous views then fire,
 *	  which is how views chain into pipelines -- or to an append-only table
 *	  the user-facing view reads.  A statement-level AFTER INSERT trigger
 *	  (stream_ext.transform()) runs one INSERT ... SELECT over the
 *	  transition table through maintain/trigger.c's skeleton
 *	  (transform_ops): as the transform's owner, security-restricted, with
 *	  the settings of core/security.c pinned, from a plan kept per backend.
 *
 *	  Creating a transform is ddl/create_transform.c's; its options
 *	  (output_stream, notify) are in ddl/view_options.c's table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parsetree.h"
#include "portability/instr_time.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

#include "core/catalog.h"
#include "core/security.h"
#include "core/util.h"
#include "maintain/privileges.h"
#include "maintain/stats.h"
#include "maintain/transform.h"
#include "maintain/trigger.h"
#include "query/analyze.h"
#include "query/joins.h"
#include "query/sjoin_left.h"
#include "query/stream_joins.h"

PG_FUNCTION_INFO_V1(stream_ext_transform);

/* the INSERT statement of a transform, from its target's current name */
static char *
transform_sql(Oid target, const char *columns, const char *select_sql)
{
	return psprintf("/* stream_ext transform */ INSERT INTO %s (%s) %s",
					se_qualified_relname(target), columns, select_sql);
}

/* ---- maintenance -------------------------------------------------------- */

/* a transform's entry->kind */
typedef struct TransformKind
{
	char	   *sql;			/* its INSERT ... SELECT of a batch */
	LeftJoinEntry *left;		/* a LEFT JOIN's (query/sjoin_left.c), or NULL */
} TransformKind;

/*
 * The batch trigger of a transform (maintain/trigger.c's skeleton): one
 * INSERT ... SELECT of the batch into the target, as the transform's owner.
 */
static void
transform_load(SeBatchEntry *entry, TriggerData *trigdata)
{
	Trigger    *trigger = trigdata->tg_trigger;
	Oid			viewid;
	TransformCatalogEntry tc;
	MemoryContext old;
	char	   *select_sql;
	LeftJoinEntry *left;
	TransformKind *kind;

	viewid = relid_from_trigger_arg(trigger->tgargs[0]);
	/* committed now, not as of the statement's snapshot: see core/catalog.c */
	if (!catalog_lookup_transform(viewid, &tc, entry->cxt))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous transform %s does not exist", trigger->tgargs[0]),
				 errdetail("Trigger \"%s\" maintains it.", trigger->tgname)));
	old = MemoryContextSwitchTo(entry->cxt);
	entry->objid = viewid;
	entry->streamid = tc.streamid;
	entry->relids[0] = viewid;
	entry->relids[1] = RelationGetRelid(trigdata->tg_relation);
	entry->relids[2] = tc.targetid;
	entry->owner = tc.owner;
	/* the second stream of a join has its own statement (query/stream_joins.c) */
	select_sql = sjoin_transform_select(entry, viewid, RelationGetRelid(trigdata->tg_relation),
										&left);
	/* the statement */
	kind = palloc0(sizeof(TransformKind));
	kind->sql = transform_sql(tc.targetid, tc.columns,
							  select_sql ? select_sql : tc.select_sql);
	/* a LEFT JOIN: its NULL rows are rows of the transform too (query/sjoin_left.c) */
	if (left)
		left->close_sql = transform_sql(tc.targetid, tc.columns, left->close_sql);
	kind->left = left;
	entry->kind = kind;
	entry->notify = tc.notify;
	entry->timezone = tc.timezone;
	entry->error_context =
		psprintf("continuous transform %s (statement in stream_ext.transform_catalog)",
				 se_qualified_relname(viewid));
	MemoryContextSwitchTo(old);
}

static bool
transform_admit(SeBatchEntry *entry, TriggerData *trigdata)
{
	/* a trigger another role put on its own table must not forge rows */
	if (RelationGetRelid(trigdata->tg_relation) != entry->streamid)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("trigger \"%s\" on \"%s\" cannot run continuous transform \"%s\": it reads another stream",
						trigdata->tg_trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation),
						get_rel_name(entry->objid))));
	/* a transform whose owner lost a privilege no longer forwards rows */
	return priv_invalid_reason(entry->objid) == NULL;
}

static void
transform_prepare(SeBatchEntry *entry)
{
	TransformKind *kind = entry->kind;

	if (kind->left)
		sjoin_left_prepare_plans(entry, kind->sql, NIL, kind->left);
	else
		(void) se_batch_prepare(entry, kind->sql, 0, NULL);
}

static uint64
transform_run(SeBatchEntry *entry, TriggerData *trigdata)
{
	int			rc;

	TransformKind *kind = entry->kind;

	/* a join of two streams: under the join's lock (query/stream_joins.c) */
	if (kind->left)
		return sjoin_left_run(entry, trigdata, 0, kind->left);
	if (entry->sjoin_side != SJOIN_NONE)
		return sjoin_run_plans(entry, trigdata);
	rc = SPI_execute_plan(linitial(se_batch_plans(entry, trigdata)), NULL, NULL, false, 0);

	if (rc != SPI_OK_INSERT)
		elog(ERROR, "stream_ext: transform failed: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

static const SeBatchOps transform_ops = {
	.name = "stream_ext.transform()",
	.argument = "the transform",
	.load = transform_load,
	.admit = transform_admit,
	.prepare = transform_prepare,
	.run = transform_run,
	.materialize = true,
	.plan_rows = 0,
	.invalid_kind = "continuous transform",
};

/*
 * stream_ext.transform(transform) — statement-level AFTER INSERT trigger
 * on a transform's stream, REFERENCING NEW TABLE AS stream_ext_new.
 */
Datum
stream_ext_transform(PG_FUNCTION_ARGS)
{
	return se_batch_trigger(fcinfo, &transform_ops);
}
