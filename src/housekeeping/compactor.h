/*-------------------------------------------------------------------------
 *
 * compactor.h
 *	  The background compactor: a worker per database that folds the
 *	  deltas of continuous views into their materializations.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_COMPACTOR_H
#define STREAM_EXT_COMPACTOR_H

#include "fmgr.h"

extern void compactor_init(void);
/* the launcher's scanner, connected to dboid, outside a transaction */
extern void compactor_launch_if_needed(Oid dboid);

/* background worker entry point */
extern PGDLLEXPORT void stream_ext_compactor_main(Datum main_arg);

#endif							/* STREAM_EXT_COMPACTOR_H */
