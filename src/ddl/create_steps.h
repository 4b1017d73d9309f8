/*-------------------------------------------------------------------------
 *
 * create_steps.h
 *	  The steps that creating a continuous view and creating a continuous
 *	  transform share (ddl/create_view.c runs the pipeline).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_CREATE_STEPS_H
#define STREAM_EXT_CREATE_STEPS_H

#include "nodes/parsenodes.h"

/* analyze: the creator may read all the query reads, every row of the stream */
extern void create_check_reader(Query *query, Oid streamid);
/* keep writers out of the stream until the creating transaction commits */
extern void create_lock_stream(Oid streamid);
/* the schema of the new view; an existing relation is an error unless REPLACING */
extern Oid	create_namespace(ViewStmt *stmt, bool replacing);
/* build: settings pinned, SPI connected, until create_end() */
extern int	create_begin(void);
extern void create_end(int nestlevel);
/* a statement trigger on the stream, made as the stream's owner */
extern Oid	create_stream_trigger(Oid streamid, const char *trigname,
								  const char *funcname, const char *arg,
								  Oid owned_by);
/* backfill: a statement over the stream's rows, with a fresh snapshot */
extern void create_backfill(const char *sql, const char *what);
/* describe: COMMENT ON VIEW with the view's definition */
extern void create_comment_view(const char *vq, const char *definition);

#endif							/* STREAM_EXT_CREATE_STEPS_H */
