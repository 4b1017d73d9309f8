/*-------------------------------------------------------------------------
 *
 * utility.h
 *	  stream_ext's one ProcessUtility hook.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_UTILITY_H
#define STREAM_EXT_UTILITY_H

extern void ddl_init(void);

#endif							/* STREAM_EXT_UTILITY_H */
