/*-------------------------------------------------------------------------
 *
 * discard_am.h
 *	  The table access method stream_ext_discard: tables that store no
 *	  rows (non-retaining streams).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_DISCARD_AM_H
#define STREAM_EXT_DISCARD_AM_H

#define DISCARD_AM_NAME "stream_ext_discard"

/* does relation relid use stream_ext_discard (store no rows)? */
extern bool se_rel_discards_rows(Oid relid);

#endif							/* STREAM_EXT_DISCARD_AM_H */
