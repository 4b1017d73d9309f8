/*-------------------------------------------------------------------------
 *
 * sjoin_window.h
 *	  What a join of two streams must be, and its window
 *	  (query/sjoin_window.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_SJOIN_WINDOW_H
#define STREAM_EXT_SJOIN_WINDOW_H

#include "nodes/parsenodes.h"
#include "utils/timestamp.h"

/* which stream's batch an entry maintains (SeBatchEntry.sjoin_side) */
#define SJOIN_NONE	0
#define SJOIN_LEFT	1			/* the first stream of FROM */
#define SJOIN_RIGHT 2			/* the second stream */

/* the objsubid of the join's lock object (query/stream_joins.c's header comment) */
#define SJOIN_LOCK 0x534a

/*
 * From joins_check_from(): q's FROM joins stream rti 1 and stream
 * right_rti.  Refuses what cannot be maintained (a self-join, outer joins
 * of the two streams but FROM a LEFT JOIN b ON ..., no time window
 * bounding the join both ways, a stream that retains no rows) with 0A000.
 */
extern void sjoin_check_from(Query *q, Index right_rti, const char *querytext,
							 const char *what);

/* q's second stream and its range-table index, or InvalidOid / 0 */
extern Oid	sjoin_right_stream(Query *q);
extern Index sjoin_right_rti(Query *q);

/* the window of q, a join of two streams that sjoin_check_from() accepted */
extern Interval *sjoin_window(Query *q);

extern bool sjoin_interval_less(Interval *a, Interval *b);

/*
 * The upper bound of a join's window: second.right_attno - first.left_attno
 * <= upper (from second.t <= first.t + upper, or BETWEEN ... AND first.t +
 * upper, the tightest one).
 */
typedef struct SJoinUpperBound
{
	Interval	upper;
	AttrNumber	right_attno;	/* of the second stream */
	AttrNumber	left_attno;		/* of the first stream */
} SJoinUpperBound;

/*
 * Is q, accepted by sjoin_check_from(), a LEFT JOIN of two streams
 * (query/sjoin_left.c)?  If so, *ub is its window's upper bound.
 */
extern bool sjoin_left_bound(Query *q, SJoinUpperBound *ub);

#endif							/* STREAM_EXT_SJOIN_WINDOW_H */
