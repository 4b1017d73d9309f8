/*-------------------------------------------------------------------------
 *
 * restore.h
 *	  Repair after pg_restore: dependencies pg_dump does not keep.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_RESTORE_H
#define STREAM_EXT_RESTORE_H

/* re-record the missing dependencies of a stream and what reads it */
extern int	ddl_restore_dependencies(Oid streamid);

#endif							/* STREAM_EXT_RESTORE_H */
