/*-------------------------------------------------------------------------
 *
 * sessions.h
 *	  Session windows (session_gap, time_column) of continuous views.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_SESSIONS_H
#define STREAM_EXT_SESSIONS_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

#include "query/analyze.h"

typedef struct SessionSpec
{
	bool		enabled;
	char	   *time_column;
	char	   *gap_text;
	Interval   *gap;
	AttrNumber	time_attno;
	Oid			time_type;
} SessionSpec;

extern List *sessions_take_options(List *options, SessionSpec *spec);
extern void sessions_validate(SessionSpec *spec, CVPlan *plan);
extern char *sessions_matrel_columns_sql(SessionSpec *spec, const char *base_columns);
extern void sessions_create_index(CVPlan *plan, Oid matrelid);
extern char *sessions_maintain_sql(SessionSpec *spec, CVPlan *plan,
								   const char *matrel, const char *source);
extern char *sessions_view_source_sql(SessionSpec *spec, CVPlan *plan,
									  const char *matrel);
extern char *sessions_compact_sql(SessionSpec *spec, CVPlan *plan,
								  const char *matrel);
extern void sessions_record(Oid viewid, SessionSpec *spec, const char *compact_sql);

#endif							/* STREAM_EXT_SESSIONS_H */
