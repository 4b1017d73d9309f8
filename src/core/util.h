/*-------------------------------------------------------------------------
 *
 * util.h
 *	  Small helpers on PostgreSQL's own catalogs that several subsystems
 *	  use: a relation's owner, recording a dependency, the relation a
 *	  trigger argument names.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_UTIL_H
#define STREAM_EXT_UTIL_H

#include "catalog/dependency.h"
#include "datatype/timestamp.h"
#include "utils/relcache.h"

/* the column every stream gets, filled at insert (ddl/stream.c) */
#define STREAM_ARRIVAL_COLUMN "arrival_timestamp"

/* the Unix epoch, 1970-01-01 00:00:00 UTC, as a timestamptz */
#define SE_UNIX_EPOCH_TIMESTAMP \
	((TimestampTz) (UNIX_EPOCH_JDATE - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY)

/* milliseconds since the Unix epoch (Kafka's timestamps) and back */
static inline TimestampTz
se_timestamp_from_unix_ms(int64 ms)
{
	return (TimestampTz) ms * 1000 + SE_UNIX_EPOCH_TIMESTAMP;
}

static inline int64
se_timestamp_to_unix_ms(TimestampTz ts)
{
	return (ts - SE_UNIX_EPOCH_TIMESTAMP) / 1000;
}

/* set by _PG_init: loaded through shared_preload_libraries */
extern bool stream_ext_preloaded;

extern Oid	se_relation_owner(Oid relid);
extern char *se_qualified_relname(Oid relid);
extern void se_record_dependency(Oid classid, Oid objid, Oid refclassid,
								 Oid refobjid, DependencyType type);
extern bool se_dependency_exists(Oid classid, Oid objid, Oid refclassid,
								 Oid refobjid, int32 refobjsubid);
extern void se_rethrow_short_context(MemoryContext cxt, List *statements,
									 const char *fmt,...)
			pg_attribute_printf(3, 4) pg_attribute_noreturn();
extern Oid	relid_from_trigger_arg(const char *qualname);

/* fn(arg) in a subtransaction: NULL, or the error it raised (rolled back) */
typedef void (*SeSubxactFn) (void *arg);
extern ErrorData *se_try_in_subxact(SeSubxactFn fn, void *arg,
									MemoryContext body_cxt, MemoryContext errcxt);
extern Oid	se_create_statement_trigger(Oid relid, const char *trigname,
										int16 timing, int16 events,
										const char *funcname, const char *arg,
										const char *newtable);
extern Oid	se_create_index(Oid relid, List *columns, const char *method,
							bool unique, bool nulls_not_distinct);
extern void se_create_guard_trigger(Oid relid);
extern bool se_rel_is_guarded(Relation r);
extern bool se_is_guarded_table(Oid relid);
extern void se_run_sql(const char *sql);
extern char *se_operator_sql(Oid opid);

#endif							/* STREAM_EXT_UTIL_H */
