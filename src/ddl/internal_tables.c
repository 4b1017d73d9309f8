/*-------------------------------------------------------------------------
 *
 * internal_tables.c
 *	  Refuse CREATE TRIGGER and CREATE RULE on the tables stream_ext keeps
 *	  for continuous views and transforms: materializations, deltas, side
 *	  tables, the output tables of transforms and change streams.
 *
 *	  Maintenance writes them in the inserting transaction.  Their owner
 *	  (the view's) owns them, and PostgreSQL would let it add a trigger or
 *	  a rule that raises an error, waits or writes elsewhere: the insert
 *	  of the stream's owner, or of anyone, would run it.  Only stream_ext's
 *	  own trigger functions (schema stream_ext: the roll-up trigger on a
 *	  delta, the guard of a materialization, the queue trigger of a Kafka
 *	  sink on a change stream -- created by stream_ext, or by pg_restore)
 *	  are allowed there, and anything by a superuser (who can run any code
 *	  anyway; docs/security.md).
 *
 *	  Errors the view's owner can still cause in its maintenance (its own
 *	  functions in the view's expressions, constraints or index
 *	  expressions) are contained by the lock guard (maintain/lock_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"

#include "core/catalog.h"
#include "ddl/internal_tables.h"

/* the change stream of a continuous view (maintain/changes.c)? */
static bool
is_change_stream(Oid relid)
{
	Oid			nsp = get_namespace_oid("stream_ext", true);
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	int			ret;
	uint64		rows;

	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("change_streams", nsp)))
		return false;
	args[0] = ObjectIdGetDatum(relid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args("SELECT 1 FROM stream_ext.change_streams"
								" WHERE stream OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
								1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "stream_ext: could not read stream_ext.change_streams: %s",
			 SPI_result_code_string(ret));
	rows = SPI_processed;
	SPI_finish();
	return rows > 0;
}

/* what relid is to stream_ext, for the error; NULL: nothing of it */
static const char *
internal_table_kind(Oid relid)
{
	if (!OidIsValid(relid))
		return NULL;
	if (catalog_is_matrel(relid))
		return catalog_is_transform(relid) ? "a continuous transform" :
			"a table stream_ext maintains for a continuous view or transform";
	if (is_change_stream(relid))
		return "the change stream of a continuous view";
	return NULL;
}

static bool
is_stream_ext_function(List *funcname)
{
	char	   *schema;
	char	   *name;

	DeconstructQualifiedName(funcname, &schema, &name);
	return schema != NULL && strcmp(schema, "stream_ext") == 0;
}

/*
 * Called by the utility hook (stream_ext installed) before CREATE TRIGGER
 * or CREATE RULE runs: refuse one on an internal table.
 */
void
ddl_check_internal_trigger_or_rule(Node *parsetree)
{
	RangeVar   *relation;
	const char *what;
	const char *kind;

	if (IsA(parsetree, CreateTrigStmt))
	{
		CreateTrigStmt *stmt = (CreateTrigStmt *) parsetree;

		if (is_stream_ext_function(stmt->funcname))
			return;
		relation = stmt->relation;
		what = "trigger";
	}
	else if (IsA(parsetree, RuleStmt))
	{
		relation = ((RuleStmt *) parsetree)->relation;
		what = "rule";
	}
	else
		return;
	if (superuser())
		return;
	kind = internal_table_kind(RangeVarGetRelid(relation, NoLock, true));
	if (kind == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot create %s on \"%s\": it is %s", what,
					relation->relname, kind),
			 errdetail("Its maintenance runs in the transactions that insert into the stream; a %s on it would run there too.",
					   what),
			 errhint("Only a superuser may. Put it on a table of your own instead: a continuous transform can feed one.")));
}
