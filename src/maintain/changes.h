/*-------------------------------------------------------------------------
 *
 * changes.h
 *	  Change streams of continuous views (maintain/changes.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_CHANGES_H
#define STREAM_EXT_CHANGES_H

#include "executor/spi.h"
#include "query/analyze.h"

/* a view's change stream, as its batch trigger keeps it (in its entry's memory) */
typedef struct ChangesInfo
{
	Oid			viewid;
	Oid			streamid;		/* the change stream */
	Oid			arraytype;		/* the view's row type's array type */
	char	   *old_sql;		/* the touched groups' rows, as one array */
	char	   *insert_sql;		/* the changes into the change stream */
	char	   *states_sql;		/* the batch's partial states, or NULL */
	bool		keep_plans;		/* a batch trigger's: plans kept, freed by
								 * changes_release() */
	SPIPlanPtr	old_plan;
	SPIPlanPtr	states_plan;
	SPIPlanPtr	insert_plan;
	/* of the batch at hand */
	Datum		old;
	bool		old_isnull;
	Datum		states;
	bool		states_isnull;
} ChangesInfo;

/* WITH (continuous, changes = true): takes the option; returns the rest */
extern List *changes_take_options(List *options, bool *enabled);

/* refuse what changes = true cannot follow (sessions, lateness, windows) */
extern void changes_validate(CVPlan *plan, bool sessions, bool lateness);
/* why roll-ups and Kafka replays have no change stream (changes_refuse_kind()) */
#define CHANGES_ROLLUP_DETAIL "A roll-up is maintained from its upstream's delta, apart from the batches that feed change streams."
#define CHANGES_ROLLUP_HINT "Give the upstream view a change stream."
#define CHANGES_REPLAY_DETAIL "The replay folds the topic's history into the view without a change for each group it touches."
extern void changes_refuse_kind(const char *what, const char *detail, const char *hint);

/* CREATE VIEW: make the view's change stream (catalog rows already written) */
extern void changes_create(Oid viewid, CVPlan *plan);

/* after CREATE: the view's rows as 'insert' changes */
extern void changes_snapshot(Oid viewid);

/* CREATE OR REPLACE of a view with a change stream: refused */
extern void changes_refuse_replace(Oid viewid);

/* ALTER VIEW v SET (changes = ...) / RESET (changes) */
extern void changes_alter(Oid viewid, bool enable);

/* the maintenance of a view: NULL when it has no change stream */
extern ChangesInfo *changes_lookup(Oid viewid, bool whole_view, MemoryContext cxt);
extern void changes_begin_batch(ChangesInfo *ci);
extern void changes_end_batch(ChangesInfo *ci);
extern void changes_release(ChangesInfo *ci);

/* after GRANT/REVOKE: change streams follow their views' SELECT grants */
extern void changes_follow_grant(GrantStmt *stmt);

/* the key and value columns of change stream streamid; false if it is none */
extern bool changes_stream_columns(Oid streamid, List **keys, List **values);

#endif							/* STREAM_EXT_CHANGES_H */
