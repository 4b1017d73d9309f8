/*-------------------------------------------------------------------------
 *
 * shared_plan.h
 *	  The plans of continuous views that share a storage (one
 *	  materialization and one delta): their column names there.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_SHARED_PLAN_H
#define STREAM_EXT_SHARED_PLAN_H

#include "query/analyze.h"

/* a member's count(*) state, after its prefix: NULL where it has no rows */
#define SHARED_PRESENCE_COLUMN "stream_ext_present"

/* stream_ext.share_storage: new views may share a storage */
extern bool stream_ext_share_storage;

extern void shared_plan_name(CVPlan *plan, Oid matrelid, const char *prefix);
extern bool shared_plan_apply(CVPlan *plan, Oid viewid, Oid matrelid);
extern CVPlan *shared_storage_plan(List *plans);
extern void shared_refuse(Oid viewid, const char *what);
extern void shared_plan_define_gucs(void);

#endif							/* STREAM_EXT_SHARED_PLAN_H */
