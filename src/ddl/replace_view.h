/*-------------------------------------------------------------------------
 *
 * replace_view.h
 *	  CREATE OR REPLACE VIEW ... WITH (continuous) of an existing continuous
 *	  view (ddl/replace_view.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_DDL_REPLACE_VIEW_H
#define STREAM_EXT_DDL_REPLACE_VIEW_H

#include "nodes/parsenodes.h"

typedef struct ReplaceState
{
	bool		replacing;		/* an existing continuous view is replaced */
	Oid			viewid;			/* that view */
} ReplaceState;

extern void replace_begin(ViewStmt *stmt, ReplaceState *rs);
extern void replace_define_view(ReplaceState *rs, const char *vq,
								const char *select_sql);
extern bool ddl_replacing_view(void);
extern void replace_redefine_view(const char *vq, const char *select_sql);
extern void replace_check_columns(Oid viewid, const char *vq, const char *why);
extern bool replace_columns_kept(Oid viewid, const char *vq, const char *select_sql);
extern void replace_move_parts(Oid from, Oid to);
extern bool replace_reads_own_parts(Oid viewid, Node *query);

#endif							/* STREAM_EXT_DDL_REPLACE_VIEW_H */
