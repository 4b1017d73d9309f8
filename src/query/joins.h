/*-------------------------------------------------------------------------
 *
 * joins.h
 *	  Stream-table joins: which FROM clauses a continuous view or transform
 *	  may have, and the SQL that reads a batch joined with its tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_JOINS_H
#define STREAM_EXT_JOINS_H

#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"

/*
 * Validate q's FROM clause (one stream, first, optionally joined to
 * tables) and return the stream.  Join alias Vars of q are replaced by the
 * columns they stand for, so every Var is a column of a relation.  what is
 * "continuous view" or "continuous transform", for messages.
 */
extern Oid	joins_check_from(Query *q, const char *querytext, const char *what);

/* does q read anything besides its stream? */
extern bool joins_has_tables(Query *q);

/* the tables q joins (relation OIDs, in range-table order) */
extern List *joins_tables(Query *q);

/*
 * Deparse context for expressions of q: the stream is "s", the table of
 * range-table entry i is "t<i>".
 */
extern List *joins_deparse_context(Query *q, Oid streamid);

/*
 * q's FROM clause with the stream read from source (a relation or the
 * transition table), aliased s: "source s" or "(source s JOIN t t2 ON ...)".
 */
extern char *joins_from_sql(Query *q, List *ctx, const char *source);

/*
 * A stream-stream join (query/stream_joins.c): make joins_from_sql() read
 * range-table entry rti from its source and the first stream (rti 1) from
 * the stream itself; 1 restores the default.  Returns the previous value.
 */
extern Index joins_set_batch_rti(Index rti);

/*
 * Record that objid (a pg_class object) depends on every table column q
 * reads, so DROP TABLE / DROP COLUMN need CASCADE.
 */
extern void joins_record_dependencies(Query *q, Oid objid);

/*
 * After pg_restore: record objid's dependencies on the tables that its
 * generated SQL (maintenance or transform statement) joins, if missing.
 */
extern int	joins_restore_dependencies(const char *sql, Oid objid);

#endif							/* STREAM_EXT_JOINS_H */
