/*-------------------------------------------------------------------------
 *
 * shared_storage.h
 *	  Continuous views sharing one materialization and one delta.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_SHARED_STORAGE_H
#define STREAM_EXT_SHARED_STORAGE_H

#include "query/analyze.h"

/* the storage a view being created joins */
typedef struct SharedJoin
{
	Oid			matrelid;
	Oid			deltaid;
	char	   *prefix;			/* the new member's */
	List	   *members;		/* the members before it, oldest first */
	List	   *plans;			/* ... their plans */
} SharedJoin;

extern SharedJoin *shared_storage_join(CVPlan *plan, Oid nspid);
extern void shared_storage_joined(SharedJoin *join, Oid viewid, CVPlan *plan);

#endif							/* STREAM_EXT_SHARED_STORAGE_H */
