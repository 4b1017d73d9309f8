/*-------------------------------------------------------------------------
 *
 * retract.h
 *	  Changelog streams: rows that carry a sign (+1 adds the row, -1
 *	  retracts it), and continuous views that stay exact under retraction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_RETRACT_H
#define STREAM_EXT_RETRACT_H

#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"

/* the column create_stream(..., changelog => true) adds (ddl/stream.c) */
#define SE_SIGN_COLUMN "stream_ext_sign"

extern bool se_stream_is_changelog(Oid relid);
extern Query *se_retract_rewrite(Query *q, Oid streamid, const char *querytext);
extern void se_retract_check_session(Oid streamid);
extern Var *se_retract_sign_var(Query *q, Oid streamid);
extern void se_retract_refuse_wide_distinct(Aggref *aggref, const char *querytext);

/* the signed value counts of a count(DISTINCT) side table (query/analyze.c) */
#define SE_SIDE_COUNT_COLUMN "signed_count"
#define SE_SIDE_PREVIOUS_COLUMN "previous_count"

#endif							/* STREAM_EXT_RETRACT_H */
