/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  The Kafka launcher: its GUC and background worker, set up by
 *	  _PG_init (kafka_launcher_init()).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_LAUNCHER_H
#define STREAM_EXT_KAFKA_LAUNCHER_H

extern int	kafka_launcher_naptime;

extern void kafka_launcher_init(void);

/* background worker entry points */
extern PGDLLEXPORT void stream_ext_kafka_launcher_main(Datum main_arg);
extern PGDLLEXPORT void stream_ext_kafka_scanner_main(Datum main_arg);

#endif							/* STREAM_EXT_KAFKA_LAUNCHER_H */
