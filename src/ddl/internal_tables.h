/*-------------------------------------------------------------------------
 *
 * internal_tables.h
 *	  No user triggers or rules on the tables stream_ext keeps for
 *	  continuous views (ddl/internal_tables.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_DDL_INTERNAL_TABLES_H
#define STREAM_EXT_DDL_INTERNAL_TABLES_H

#include "nodes/parsenodes.h"

extern void ddl_check_internal_trigger_or_rule(Node *parsetree);

#endif							/* STREAM_EXT_DDL_INTERNAL_TABLES_H */
