/*-------------------------------------------------------------------------
 *
 * shared_members.h
 *	  Members leaving a shared storage (ddl/shared_storage.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_SHARED_MEMBERS_H
#define STREAM_EXT_SHARED_MEMBERS_H

extern void shared_storage_after_drop(void);
extern void shared_storage_leave(Oid viewid);

#endif							/* STREAM_EXT_SHARED_MEMBERS_H */
