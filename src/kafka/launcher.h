/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  Kafka ingest initialisation hook called from _PG_init: GUCs, shared
 *	  memory and the launcher background worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_LAUNCHER_H
#define STREAM_EXT_LAUNCHER_H

extern void stream_ext_launcher_init(void);

#endif							/* STREAM_EXT_LAUNCHER_H */
