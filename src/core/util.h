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

/* set by _PG_init: loaded through shared_preload_libraries */
extern bool stream_ext_preloaded;

extern Oid	relation_owner(Oid relid);
extern void record_dependency(Oid classid, Oid objid, Oid refclassid,
							  Oid refobjid, DependencyType type);
extern void se_rethrow_short_context(MemoryContext cxt, List *statements,
									 const char *fmt,...)
			pg_attribute_printf(3, 4) pg_attribute_noreturn();
extern Oid	relid_from_trigger_arg(const char *qualname);

#endif							/* STREAM_EXT_UTIL_H */
