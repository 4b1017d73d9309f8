/*-------------------------------------------------------------------------
 *
 * replay.h
 *	  The history of a new continuous view: WITH (backfill, backfill_from),
 *	  and the Kafka replay that builds it from a source's topic
 *	  (replay.c: options, CREATE, progress and cancel; replay_worker.c:
 *	  the private consumer).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_REPLAY_H
#define STREAM_EXT_KAFKA_REPLAY_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "storage/lock.h"

typedef enum BackfillMode
{
	BACKFILL_STREAM,			/* the stream's retained rows (default) */
	BACKFILL_KAFKA,				/* replay of the topic of the stream's source */
	BACKFILL_NONE				/* no history: from the next batch on */
} BackfillMode;

typedef struct BackfillSpec
{
	BackfillMode mode;
	bool		given;			/* backfill was written */
	bool		has_from;
	TimestampTz from;			/* backfill_from */
	const char *from_text;
	/* backfill = 'kafka', filled by backfill_prepare() */
	char	   *source;			/* the Kafka source replayed */
	char	   *replay_source;	/* the maintenance statements' FROM item */
} BackfillSpec;

/* the relation replayed rows are in for the view's maintenance statements */
#define REPLAY_ENR_NAME "stream_ext_replay"

/* what a replay worker gets in bgw_extra */
typedef struct ReplayWorkerArgs
{
	Oid			dboid;
	Oid			viewid;
	TransactionId wait_xid;		/* the creating transaction */
} ReplayWorkerArgs;

extern List *backfill_take_options(List *options, BackfillSpec *spec);
extern void backfill_prepare(BackfillSpec *spec, Oid streamid, bool session,
							 bool lateness);
extern bool backfill_from_stream(const BackfillSpec *spec);
extern char *backfill_stream_source(const BackfillSpec *spec, const char *sq);
extern void backfill_record(BackfillSpec *spec, Oid viewid, Oid streamid,
							const char *maintain_sql, List *distinct_sql);
extern bool backfill_replays(Oid viewid);
extern void replay_launch_running(Oid dboid);
extern void replay_locktag(LOCKTAG *tag, Oid viewid);
extern void replay_launch(Oid dboid, Oid viewid, TransactionId wait_xid);

/* replay_worker.c */
extern PGDLLEXPORT void stream_ext_replay_worker_main(Datum main_arg);

#endif							/* STREAM_EXT_KAFKA_REPLAY_H */
