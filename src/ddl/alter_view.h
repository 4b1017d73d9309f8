/*-------------------------------------------------------------------------
 *
 * alter_view.h
 *	  ALTER VIEW ... SET/RESET of a continuous view's options (ddl/alter_view.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_DDL_ALTER_VIEW_H
#define STREAM_EXT_DDL_ALTER_VIEW_H

#include "nodes/parsenodes.h"

extern bool ddl_alter_view_options(AlterTableStmt *stmt);

#endif							/* STREAM_EXT_DDL_ALTER_VIEW_H */
