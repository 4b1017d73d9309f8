/*-------------------------------------------------------------------------
 *
 * create_view.h
 *	  CREATE VIEW ... WITH (continuous): continuous views and transforms.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_CREATE_VIEW_H
#define STREAM_EXT_CREATE_VIEW_H

#include "nodes/parsenodes.h"

/*
 * Does this CREATE VIEW ask for a continuous view?  Removes the option; the
 * other options of a continuous view are returned in *cvopts.
 */
extern bool ddl_take_continuous_option(ViewStmt *stmt, List **cvopts);
/* builds the continuous view or transform in the caller's transaction */
extern void ddl_create_view(ViewStmt *stmt, List *cvopts, const char *queryString,
							int stmt_location, int stmt_len);
/* NOTIFY pgrst, 'reload schema' unless stream_ext.notify_pgrst is off */
extern void ddl_notify_pgrst_reload(void);
extern void ddl_define_gucs(void);
/* after DROP: the streams' triggers for views no longer there */
extern void ddl_drop_unused_views_triggers(void);

#endif							/* STREAM_EXT_CREATE_VIEW_H */
