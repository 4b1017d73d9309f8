/*-------------------------------------------------------------------------
 *
 * key_read.h
 *	  Reads by key of views that append as one custom scan node,
 *	  StreamExtKeyRead (query/key_read.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_KEY_READ_H
#define STREAM_EXT_QUERY_KEY_READ_H

extern void key_read_init(void);

#endif							/* STREAM_EXT_QUERY_KEY_READ_H */
