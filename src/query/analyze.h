/*-------------------------------------------------------------------------
 *
 * analyze.h
 *	  Query analysis and rewrite for continuous views: which queries can be
 *	  maintained incrementally, and the SQL that creates, maintains and
 *	  reads their materialization.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_ANALYZE_H
#define STREAM_EXT_ANALYZE_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"

#include "query/aggsupport.h"

/* a GROUP BY key of a continuous view */
typedef struct CVKey
{
	Expr	   *expr;			/* over the stream (varno 1) */
	char	   *colname;		/* its column in the materialization */
	Oid			type;
	int32		typmod;
	Oid			collation;
} CVKey;

/* an aggregate of a continuous view */
typedef struct CVAgg
{
	Aggref	   *aggref;
	bool		is_distinct;	/* count(DISTINCT x): kept in a side table */
	AggStorage	storage;		/* when !is_distinct */
	char	   *colname;		/* state (or distinct count) column */
	char	   *auxrel;			/* side table name, when is_distinct */
	char	   *valuescol;		/* is_distinct: the delta's column of the
								 * batch's values when deferred */
} CVAgg;

/* everything CREATE VIEW ... WITH (continuous) needs to know */
typedef struct CVPlan
{
	Query	   *query;			/* analyzed user query */
	const char *querytext;		/* for error positions */
	Oid			streamid;
	List	   *keys;			/* CVKey */
	List	   *aggs;			/* CVAgg */
	bool		keyless;		/* no GROUP BY: a single row */
	List	   *colnames;		/* user-facing column names (String) */
	const char *extra_batch_qual;	/* ANDed to the batch's WHERE (SQL
									 * over alias s), e.g. late rows */
	const char *extra_outer_columns;	/* appended to the view's select
										 * list, e.g. session bounds */
	struct CVWindow *window;	/* time window (windows/windows.h), or NULL */
	bool		defer_distinct; /* count(DISTINCT) deferred to compaction
								 * (analyze.c, "Deferred count(DISTINCT)") */
	const char *presence_col;	/* a member of a shared storage: its
								 * count(*) state column, NULL in the
								 * groups it has no rows of
								 * (query/shared_plan.c) */
} CVPlan;

#define CV_SINGLE_COLUMN "_single"
/* the alias of cv_batch_agg_sql()'s subquery in cv_maintain_sql() */
#define CV_BATCH_AGG_ALIAS "stream_ext_batch_agg"
#define CV_NEW_ROWS "stream_ext_new"
/* 64-bit hash of wide group keys (analyze.c: "Wide keys") */
#define CV_KEY_HASH_COLUMN "stream_ext_key_hash"

extern void cv_analyze(Query *query, const char *querytext, List *aliases,
					   struct CVWindow *hop, CVPlan *plan);
extern void cv_name_columns(CVPlan *plan);

/* pieces of SQL generation, shared with windows/sessions.c */
extern char *se_type_sql(Oid type, int32 typmod, Oid collation);
extern void append_key_columns(StringInfo buf, CVPlan *plan, const char *prefix);
extern void append_merged_states(StringInfo buf, CVPlan *plan, const char *prefix);
extern List *se_stream_context(CVPlan *plan);
extern char *interval_sql_literal(const Interval *iv);
extern void append_key_exprs(StringInfo buf, CVPlan *plan, List *ctx);

/* SQL text, generated with search_path pinned to pg_catalog */
extern char *cv_matrel_columns_sql(CVPlan *plan);
extern char *cv_state_column_sql(CVAgg *agg);
extern char *cv_matrel_key_list(CVPlan *plan);
extern char *cv_auxrel_columns_sql(CVPlan *plan, CVAgg *agg);
extern bool cv_matrel_hashed(CVPlan *plan);
extern bool cv_auxrel_hashed(CVPlan *plan, CVAgg *agg);
extern char *cv_matrel_hash_column_sql(CVPlan *plan);
/* the indexes of a materialization, of a side table, for reads by key */
extern void cv_create_matrel_indexes(CVPlan *plan, Oid matrelid);
extern void cv_create_auxrel_index(CVPlan *plan, CVAgg *agg, Oid auxid);
extern Oid	cv_create_key_lookup_index(CVPlan *plan, Oid relid,
									   const char *trailing);
/* the pieces of cv_batch_agg_sql(), deparsed */
typedef struct CVBatchAggParts
{
	List	   *key_exprs;		/* the GROUP BY keys (char *); NIL: keyless */
	char	   *hash_expr;		/* CV_KEY_HASH_COLUMN's value, or NULL */
	List	   *state_exprs;	/* stream_ext.partial(...) per state (char *) */
	List	   *state_cols;		/* their materialization columns (char *) */
	char	   *tail;			/* " FROM ... WHERE ... GROUP BY ..." */
	List	   *values_exprs;	/* deferred count(DISTINCT): the batch's
								 * distinct values per group (char *) */
	List	   *values_cols;	/* their delta columns (char *) */
} CVBatchAggParts;

/* the CTE of cv_shared_maintain_sql() */
#define CV_SHARED_AGG "stream_ext_shared"

extern void cv_batch_agg_parts(CVPlan *plan, const char *source,
							   CVBatchAggParts *parts);
extern char *cv_batch_agg_sql(CVPlan *plan, const char *source);
extern char *cv_shared_maintain_sql(List *plans, List *matrels, List *deltas);
extern List *cv_view_column_aliases(Oid viewid);
extern char *cv_store_sql(CVPlan *plan, const char *matrel,
						  const char *from_item, const char *alias);
extern char *cv_maintain_sql(CVPlan *plan, const char *matrel,
							 const char *source);
extern char *cv_distinct_sql(CVPlan *plan, CVAgg *agg, const char *matrel,
							 const char *auxrel, const char *source,
							 const char *delta);
/* append mode (docs/internals.md, "Append mode") */
extern bool cv_appends(CVPlan *plan);
extern char *cv_append_sql(CVPlan *plan, const char *delta,
						   const char *from_item, const char *alias);
extern char *cv_maintain_append_sql(CVPlan *plan, const char *delta,
									const char *source);
extern char *cv_merged_source_sql(CVPlan *plan, const char *matrel,
								  const char *delta);
extern char *cv_union_source_sql(CVPlan *plan, const char *matrel,
								 const char *delta);
extern char *cv_compact_sql(CVPlan *plan, const char *matrel,
							const char *delta);
extern void cv_create_read_indexes(CVPlan *plan, Oid matrelid, Oid deltaid);
extern char *cv_view_select_sql(CVPlan *plan, Oid matrelid,
								const char *matrel);
extern char *cv_key_hash_sql(List *exprs);
/* deferred count(DISTINCT) (analyze.c) */
extern bool cv_can_defer_distinct(CVPlan *plan);
extern void cv_detect_deferred_distinct(CVPlan *plan, Oid viewid, Oid deltaid);
extern char *cv_delta_values_columns_sql(CVPlan *plan);
extern char *cv_distinct_values_sql(CVPlan *plan, CVAgg *agg,
									const char *auxrel, const char *delta);

#endif							/* STREAM_EXT_ANALYZE_H */
