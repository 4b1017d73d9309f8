/*-------------------------------------------------------------------------
 *
 * create_transform.h
 *	  Creating a continuous transform (a continuous view without
 *	  aggregates and GROUP BY).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_CREATE_TRANSFORM_H
#define STREAM_EXT_CREATE_TRANSFORM_H

#include "nodes/parsenodes.h"

#include "ddl/view_options.h"

/* a query without aggregates and GROUP BY is a continuous transform */
extern bool transform_applies(Query *query);
/* builds it in the caller's transaction (called by ddl_create_view()) */
extern void transform_create(ViewStmt *stmt, Query *query, CVOptions *opts);

#endif							/* STREAM_EXT_CREATE_TRANSFORM_H */
