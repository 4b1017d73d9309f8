/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  Access to stream_ext's own catalog tables (stream_catalog,
 *	  view_catalog, transform_catalog, session_views, lateness_views,
 *	  watermarks, invalid_objects; not the Kafka tables).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_CATALOG_H
#define STREAM_EXT_CATALOG_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

/* One row of stream_ext.view_catalog, as maintenance needs it */
typedef struct ViewCatalogEntry
{
	Oid			viewid;
	Oid			streamid;
	Oid			matrelid;
	Oid			owner;			/* owner of the user-facing view */
	char	   *maintain_sql;	/* over the transition table */
	List	   *distinct_sql;	/* one statement per count(DISTINCT) */
	char	   *timezone;		/* TimeZone pinned at creation */
	char	   *expire_sql;		/* sliding window: deletes expired buckets */
	int64		expire_every_us;	/* sliding window: its step */
	char	   *notify;			/* NOTIFY channel per batch, or NULL */
	Oid			deltaid;		/* the delta batches append to, or Invalid:
								 * the view upserts (docs/internals.md) */
	char	   *compact_sql;	/* folds the delta into the matrel, or NULL */
	bool		has_ttl;		/* TTL deletes groups (and their delta rows) */
	char	   *query_sql;		/* the view's recorded definition (every name
								 * schema-qualified since 0.3) */
} ViewCatalogEntry;

/* is the extension installed in this database? */
extern bool stream_ext_installed(void);

extern bool catalog_is_stream(Oid relid);
extern bool catalog_is_matrel(Oid relid);
extern bool catalog_is_transform(Oid relid);
extern bool catalog_stream_has_views(Oid relid);
extern char *catalog_column_user(Oid relid, const char *attname);
extern void catalog_report_needs_update(const char *feature) pg_attribute_noreturn();
extern void catalog_require_table(const char *name, const char *feature);
extern char *catalog_view_in_schema(Oid nspid);
extern char *catalog_object_user(Oid classid, Oid objid, int32 subid);
extern char *catalog_schema_object_user(Oid nspid);
extern char *catalog_stream_named_by(Oid relid, Oid nspid);
extern bool catalog_stream_is_emit_output(Oid relid);
extern char *catalog_view_named_by_own_sql(Oid viewid);
extern Oid	catalog_view_emit_output(Oid viewid);
extern char *catalog_sink_key_user(Oid relid, const char *attname);
extern char *catalog_source_column_user(Oid relid, const char *attname);
extern List *catalog_views_naming_stream(Oid relid);
extern List *catalog_streams_in_schema(Oid nspid);
extern List *catalog_all_streams(void);
extern bool catalog_extension_is_current(void);
extern void catalog_set_view_definition(Oid viewid, const char *definition);
extern List *catalog_view_owners(Oid relid);
extern void catalog_insert_stream(Oid relid, bool retain);
extern void catalog_insert_view(Oid viewid, Oid streamid, Oid matrelid,
								List *aux_tables, const char *definition,
								const char *maintain_sql, List *distinct_sql);
extern void catalog_set_window(Oid viewid, const char *kind,
							   const char *size, const char *slide,
							   const char *step, const char *time_column,
							   const char *window_column,
							   const char *expire_sql);
extern bool catalog_has_delta(void);
extern void catalog_set_delta(Oid viewid, Oid deltaid, const char *compact_sql);
extern bool catalog_lookup_view_by_matrel(Oid matrelid,
										  ViewCatalogEntry *entry,
										  MemoryContext mcxt);
extern List *catalog_views_of_stream(Oid streamid, MemoryContext mcxt);
extern Oid	catalog_view_of_side_table(Oid auxid);
extern bool catalog_view_of_delta(Oid deltaid, ViewCatalogEntry *entry,
								  MemoryContext mcxt);
extern Oid	catalog_stream_of(Oid relid);
extern void catalog_read_latest_begin(void);
extern void catalog_read_latest_end(void);
extern bool catalog_lookup_view(Oid viewid, ViewCatalogEntry *entry,
								MemoryContext mcxt);
extern char *catalog_view_definition(Oid viewid, Oid *streamid);
extern void catalog_forget_view(Oid viewid);
extern List *catalog_view_parts(Oid relid);
extern bool catalog_view_has_ttl(Oid viewid);
extern bool catalog_view_has_lateness(Oid viewid);
extern void catalog_update_view_option(Oid viewid, const char *option, Oid type,
									   Datum value);
extern void catalog_get_view(Oid viewid, ViewCatalogEntry *entry, bool must_own);
/* TTL and retention (housekeeping/retention.c) */
extern void catalog_set_view_ttl(Oid viewid, Interval *ttl, const char *ttl_column,
								 const char *ttl_sql);
extern void catalog_set_stream_retention(Oid relid, Interval *retention);
/* returns the number of continuous views forgotten */
extern uint64 catalog_remove_orphans(void);

/*
 * One continuous view, as housekeeping sees it: stream_ext.run_maintenance()
 * (housekeeping/retention.c, whose HousekeepingViewTask says what is done
 * with it) and stream_ext.expire_sliding() (windows/windows.c).
 */
typedef struct HousekeepingView
{
	Oid			viewid;
	Oid			owner;
	char	   *timezone;
	Datum		ttl;			/* Interval *, or 0 */
	char	   *ttl_sql;		/* NULL: no TTL */
	char	   *expire_sql;		/* sliding window expiry (windows/windows.c), or NULL */
	bool		session;		/* a session window: compact its fragments */
} HousekeepingView;

extern List *catalog_housekeeping_views(Oid viewid);

/* A stream whose raw rows expire (stream_ext.set_retention()) */
typedef struct RetentionStream
{
	Oid			relid;
	Oid			owner;
	Datum		retention;		/* Interval * */
	char	   *qualname;
} RetentionStream;

extern List *catalog_streams_with_retention(void);


/* continuous transforms (maintain/transform.c) */
typedef struct TransformCatalogEntry
{
	Oid			transform;		/* the user-facing view */
	Oid			streamid;		/* the stream it reads */
	Oid			targetid;		/* its output stream or output table */
	Oid			owner;			/* owner of the view */
	char	   *columns;		/* the target's columns, quoted, comma-separated */
	char	   *select_sql;		/* over the transition table */
	char	   *notify;			/* NOTIFY channel per batch, or NULL */
	char	   *timezone;		/* TimeZone pinned at creation */
} TransformCatalogEntry;

extern void catalog_set_view_notify(Oid viewid, const char *channel);
extern void catalog_lock_transforms(void);
extern char *catalog_transform_path(Oid from, Oid to);
extern void catalog_insert_transform(Oid transform, Oid stream, Oid output_stream,
									 Oid output_table, const char *definition,
									 const char *columns, const char *select_sql,
									 const char *notify);
extern bool catalog_lookup_transform(Oid transform, TransformCatalogEntry *entry,
									 MemoryContext mcxt);

/* session windows (windows/sessions.c) */
extern void catalog_insert_session_view(Oid viewid, const char *time_column,
										const char *session_gap,
										const char *compact_sql);
extern char *catalog_session_compact_sql(Oid viewid);

/* allowed_lateness and watermarks (windows/lateness.c) */
typedef struct LatenessCatalogEntry
{
	Interval	lateness;
	char	   *late_sql;
	char	   *max_sql;
	char	   *emit_sql;		/* NULL unless emit = 'on_close' */
} LatenessCatalogEntry;

extern void catalog_insert_lateness_view(Oid viewid, const char *allowed_lateness,
										 const char *late_sql, const char *max_sql,
										 const char *emit_sql, Oid output_stream);
extern bool catalog_lookup_lateness(Oid viewid, LatenessCatalogEntry *entry,
									MemoryContext mcxt);
extern void catalog_raise_max_event_time(Oid viewid, Datum ts, bool isnull);
extern TimestampTz catalog_watermark(Oid viewid, bool lock, bool *isnull);

/* distributed views (query/distributed.c) */
typedef struct ViewDefinitionEntry
{
	char	   *definition;		/* the SELECT, schema-qualified */
	Oid			matrelid;
	Oid			streamid;
	bool		overlapping_window; /* a hopping or sliding window */
	bool		session;		/* a session window */
	bool		lateness;		/* allowed_lateness or emit = 'on_close' */
} ViewDefinitionEntry;

extern bool catalog_lookup_view_definition(Oid viewid, ViewDefinitionEntry *entry);

/* invalid views and transforms (maintain/privileges.c) */
extern void catalog_insert_invalid_object(Oid relid, const char *kind,
										  const char *reason);
extern Oid	catalog_invalid_objects_relid(void);

typedef enum CatalogScanResult
{
	CATALOG_SCAN_NO_TABLE,
	CATALOG_SCAN_BUSY,
	CATALOG_SCAN_DONE
} CatalogScanResult;

typedef struct InvalidObjectsReader
{
	void		(*locked) (void *arg);
	void		(*row) (Oid object, const char *kind, const char *reason, void *arg);
	void	   *arg;
} InvalidObjectsReader;

extern CatalogScanResult catalog_scan_invalid_objects(const InvalidObjectsReader *reader);

/* a continuous view or transform of a stream (ddl/restore.c) */
typedef struct StreamObject
{
	Oid			objid;			/* the user-facing view */
	bool		transform;		/* a continuous transform, not a view */
	Oid			relid;			/* a view's materialization, a transform's
								 * output table (or InvalidOid) */
	List	   *aux_tables;		/* a view's count(DISTINCT) side tables */
	Oid			deltaid;		/* a view's delta (it appends), or InvalidOid */
	char	   *sql;			/* maintenance statement or transform SELECT */
} StreamObject;

extern List *catalog_stream_objects(Oid streamid);
extern List *catalog_triggers_without_views(Oid funcid);

/* stream-stream joins (query/stream_joins.c) */
typedef struct StreamJoinEntry
{
	Oid			object;			/* the continuous view or transform */
	Oid			left_stream;	/* its catalog row's stream */
	Oid			right_stream;	/* the second stream */
	char	   *right_sql;		/* a batch of right_stream */
	List	   *right_distinct_sql; /* ... one more per count(DISTINCT) */
	bool		transform;		/* a continuous transform */
	Interval	window;			/* the join's window */
	Interval	retain;			/* what both streams must retain: the
								 * window, plus allowed_lateness for a
								 * LEFT JOIN */
	bool		left;			/* a LEFT JOIN (query/sjoin_left.c) */
} StreamJoinEntry;

extern void catalog_insert_stream_join(Oid object, Oid left_stream, Oid right_stream,
									   Interval *window, const char *right_sql,
									   List *right_distinct_sql);
extern List *catalog_stream_joins(Oid streamid, Oid object, MemoryContext mcxt);

/* LEFT JOINs of two streams (query/sjoin_left.c): stream_left_joins */
typedef struct LeftJoinEntry
{
	char	   *close_sql;		/* a batch of the second stream: NULL rows */
	List	   *close_distinct_sql; /* ... one more per count(DISTINCT) */
	char	   *late_sql;		/* its refused pairs */
	char	   *max_sql;		/* its newest and oldest time */
} LeftJoinEntry;

extern void catalog_insert_left_join(Oid object, Interval *lateness, const char *close_sql,
									 List *close_distinct_sql, const char *late_sql,
									 const char *max_sql, Datum max_time, bool max_isnull);
extern bool catalog_left_join(Oid object, LeftJoinEntry *entry, MemoryContext mcxt);
extern TimestampTz catalog_left_join_watermark(Oid object, bool *isnull);
extern TimestampTz catalog_left_join_advance(Oid object, Datum batch_max, bool max_isnull,
											 int64 late_pairs, bool *isnull);

/* shared storage (ddl/shared_storage.c, query/shared_plan.c) */
extern bool catalog_has_shared_storage(void);
extern char *catalog_shared_prefix(Oid viewid);
extern bool catalog_is_shared_table(Oid relid);
extern void catalog_insert_shared_storage(Oid matrelid, Oid deltaid, Oid streamid);
extern int	catalog_shared_take_member(Oid matrelid);
extern void catalog_insert_shared_member(Oid viewid, Oid matrelid, const char *prefix);
extern List *catalog_shared_members(Oid matrelid);
extern Oid	catalog_shared_delta(Oid matrelid);
extern Oid	catalog_shared_leader(Oid matrelid);
extern void catalog_set_view_statements(Oid viewid, const char *maintain_sql,
										const char *compact_sql);
extern List *catalog_shared_forget_dropped(void);
extern Oid	catalog_shared_forget_member(Oid viewid);
extern void catalog_delete_shared_storage(Oid matrelid);
extern void catalog_set_shared_compact(Oid matrelid, const char *compact_sql);
extern char *catalog_shared_compact(Oid matrelid);

#endif							/* STREAM_EXT_CATALOG_H */
