/*-------------------------------------------------------------------------
 *
 * used_objects.h
 *	  The functions, operators, types and collations a continuous view or
 *	  transform uses: dependencies, and renames refused.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_USED_OBJECTS_H
#define STREAM_EXT_USED_OBJECTS_H

#include "nodes/parsenodes.h"

extern void ddl_record_used_objects(Oid objid, Query *query);
extern void ddl_forget_used_objects(Oid relid);
extern int	ddl_restore_used_objects(Oid viewid, Oid relid);
extern void ddl_used_objects_to_view(Oid viewid, Oid matrelid);
extern void ddl_check_used_object_alter(Node *parsetree);
extern List *ddl_definitions_before_alter(Node *parsetree);
extern void ddl_record_renamed_stream(List *definitions);

#endif							/* STREAM_EXT_USED_OBJECTS_H */
