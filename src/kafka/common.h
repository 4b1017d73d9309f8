/*-------------------------------------------------------------------------
 *
 * common.h
 *	  What Kafka sources and sinks share: parsing of the options jsonb and of
 *	  librdkafka properties, the librdkafka configuration, the checks and
 *	  catalog statements of the SQL functions, the shared-memory slots of the
 *	  workers, and the parts of the workers' main loops that are the same.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_COMMON_H
#define STREAM_EXT_KAFKA_COMMON_H

#include "postgres.h"
#include <librdkafka/rdkafka.h>

#include "access/htup.h"
#include "access/transam.h"
#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "libpq/pqsignal.h"
#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "postmaster/bgworker.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#define KAFKA_NAME_MAXLEN			63
#define KAFKA_ERRMSG_LEN			256

/* ---- timing of the workers (ms) ---- */

#define KAFKA_STATE_CHECK_MS		1000	/* re-read the catalog state of
											 * the source or sink */
#define KAFKA_REQUEST_TIMEOUT_MS	5000	/* a request to the cluster that
											 * waits for its answer
											 * (metadata, offsets) */
#define KAFKA_PROBE_TIMEOUT_MS		1000	/* after broker errors: does the
											 * cluster answer again? */

/* ---- shared memory ---- */

typedef enum KafkaWorkerState
{
	KWS_FREE = 0,
	KWS_STARTING,
	KWS_RUNNING,
	KWS_RETRYING
} KafkaWorkerState;

/*
 * The part of a worker's shared-memory slot that sources and sinks share:
 * the first member of KafkaSourceSlot (source.h) and KafkaSinkSlot
 * (sink.h).
 */
typedef struct KafkaSlot
{
	bool		in_use;
	pid_t		pid;
	Oid			dboid;
	Oid			catalog_relid;	/* OID of the catalog table: tells apart
								 * incarnations of the extension */
	Oid			owner;
	int32		id;				/* source or sink id */
	int32		worker;			/* a source's worker number; sinks: 0 */
	KafkaWorkerState state;
	uint64		errors;
	TimestampTz started_at;
	TimestampTz last_batch_time;
	TimestampTz last_error_time;
	char		last_error[KAFKA_ERRMSG_LEN];
} KafkaSlot;

/* the head of a table of slots in shared memory (KafkaSourceShared, KafkaSinkShared) */
typedef struct KafkaSlotTable
{
	LWLock	   *lock;
	int			nslots;
} KafkaSlotTable;

/*
 * Sources and sinks, as the code they share tells them apart: the words of
 * their messages, their catalog table, their table of slots.
 */
typedef struct KafkaKind
{
	const char *noun;			/* "source", "sink" */
	const char *table;			/* catalog table in schema stream_ext */
	const char *missing_hint;	/* hint when that table does not exist */
	const char *login_detail;	/* detail when the owner cannot log in */

	/* the table of slots */
	void	  **shared;			/* where it is attached (kafka_source_shared...) */
	const char *shmem_name;
	const char *tranche;
	int		   *max_slots;		/* its GUC slot_guc, defined from: */
	int			max_slots_default;
	const char *max_slots_desc;
	const char *max_slots_long_desc;
	Size		header_size;	/* offset of the first slot */
	Size		slot_size;
	const char *slot_noun;		/* "all %d Kafka <slot_noun> slots are in use" */
	const char *slot_guc;		/* raise it then */
} KafkaKind;

extern void kafka_common_init(void);
extern void kafka_slot_table_register(const KafkaKind *kind);
extern bool kafka_slot_is_live(const KafkaKind *kind, Oid dboid, Oid catalog_relid,
							   int32 id, int32 worker);
extern void *kafka_slot_snapshot(const KafkaKind *kind, int *nslots);
extern bool kafka_slot_visible(const KafkaSlot *slot, Oid catalog_relid);
extern const char *kafka_state_name(KafkaWorkerState state);
extern void kafka_slot_status(const KafkaSlot *slot, Datum *values, bool *nulls);

/* the rows of one visible slot in a status function (kafka_slot_srf()) */
typedef void (*KafkaSlotRows) (const KafkaSlot *slot, ReturnSetInfo *rsinfo);

extern void kafka_slot_srf(FunctionCallInfo fcinfo, const KafkaKind *kind,
						   KafkaSlotRows rows);
extern int	kafka_name_index(const char *name, const char *const *names, int nnames);

/* ---- options ---- */

/*
 * Handles one option of a source or sink (neither "kafka" nor a key with a
 * dot: those are librdkafka properties), or ereports it as unknown.
 */
typedef void (*KafkaOptionHandler) (const char *key, JsonbValue *v, void *arg);

extern void kafka_parse_option_object(Jsonb *options, KafkaOptionHandler handler,
									  void *arg, List **prop_keys,
									  List **prop_values);
/* the bounds of an integer option (kafka_int_options[], common.c) */
typedef struct KafkaIntOption
{
	const char *noun;			/* of its KafkaKind: "source", "sink" */
	const char *key;
	int64		min;
	int64		max;
} KafkaIntOption;

#define KAFKA_MAX_WORKERS_PER_SOURCE 64
#define KAFKA_MAX_NODES 1024			/* option "nodes" of a source */
#define KAFKA_MAX_SHARE_ITEMS 10000	/* ranges in "partitions", entries in "start_offsets" */

extern char *kafka_opt_string(JsonbValue *v, const char *key);
extern int64 kafka_opt_int(JsonbValue *v, const KafkaKind *kind, const char *key);
extern List *kafka_opt_names(JsonbValue *v, const char *key);

/* ---- librdkafka configuration ---- */

extern char *kafka_allowed_brokers;

extern void kafka_check_brokers(const char *brokers);
extern rd_kafka_conf_t *kafka_conf_new(const char *brokers, List *keys, List *values,
									   const char *const *managed,
									   const char *managed_detail, Oid role);
extern void kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value);
extern bool kafka_property_given(List *keys, const char *key);

/* ---- catalog and SQL functions ---- */

/* the columns of a source's or sink's catalog row the SQL functions use */
typedef struct KafkaCatalogRow
{
	int32		id;
	char	   *name;
	Oid			stream;
	Oid			owner;
	char	   *state;
	Jsonb	   *options;
} KafkaCatalogRow;

/* the arguments create_kafka_source() and create_kafka_sink() share */
typedef struct KafkaDefinition
{
	char	   *name;
	Oid			stream;
	char	   *brokers;
	char	   *topic;
	char	   *format;			/* "json" when null */
} KafkaDefinition;

extern void kafka_definition_args(FunctionCallInfo fcinfo, KafkaDefinition *def);
extern void kafka_definition_datums(const KafkaDefinition *def, Datum *args);
extern void kafka_start_fetch_row(const KafkaKind *kind, const char *name,
								  KafkaCatalogRow *row);
extern Oid	kafka_catalog_table(const KafkaKind *kind, bool missing_ok);
extern void kafka_exec_as(Oid role, const char *sql, int nargs, Oid *argtypes,
						  Datum *args, const char *nulls, bool read_only,
						  long tcount, int expected);
extern void kafka_catalog_exec(const KafkaKind *kind, const char *sql, int nargs,
							   Oid *argtypes, Datum *args, const char *nulls,
							   bool read_only, int expected);
extern bool kafka_fetch_row(const KafkaKind *kind, const char *name,
							KafkaCatalogRow *row, bool missing_ok);
extern void kafka_check_definition(const KafkaKind *kind, const char *name,
								   Oid stream, const char *brokers,
								   const char *topic, AclMode stream_privilege);
extern void kafka_check_new_name(const KafkaKind *kind, const char *name);
extern void kafka_check_owner(const KafkaKind *kind, const KafkaCatalogRow *row);
extern void kafka_check_owner_login(const KafkaKind *kind, const KafkaCatalogRow *row);
extern void kafka_set_running(const KafkaKind *kind, int32 id);
extern void kafka_stop(const KafkaKind *kind, const char *name);
extern bool kafka_drop_begin(const KafkaKind *kind, FunctionCallInfo fcinfo,
							 KafkaCatalogRow *row);
extern void kafka_drop_end(const KafkaKind *kind, const KafkaCatalogRow *row);
extern void kafka_bgworker_init(BackgroundWorker *worker, const char *function,
								const char *type);
/* the workers the launcher's scanner found for one kind (kafka_launch_running()) */
typedef struct KafkaLaunchList
{
	MemoryContext cxt;			/* of items and their args */
	Oid			dboid;
	Oid			catalog_relid;
	List	   *items;			/* of KafkaLaunch */
} KafkaLaunchList;

typedef struct KafkaLaunch
{
	int32		id;				/* source or sink */
	int32		worker;			/* a source's worker number; sinks: 0 */
	void	   *args;			/* for the worker's bgw_extra */
} KafkaLaunch;

/* a running row of the kind's catalog table: kafka_launch_add() its workers */
typedef void (*KafkaRunningRow) (HeapTuple tup, TupleDesc desc, KafkaLaunchList *list);

/* start a worker that is not running: log it and kafka_bgworker_launch() it */
typedef void (*KafkaStartWorker) (const KafkaLaunch *launch);

extern void kafka_launch_add(KafkaLaunchList *list, int32 id, int32 worker,
							 const void *args, Size args_size);
extern void kafka_launch_running(const KafkaKind *kind, Oid dboid, const char *sql,
								 KafkaRunningRow row, KafkaStartWorker start);
extern bool kafka_bgworker_launch(const char *function, const char *type,
								  const char *name, const void *extra,
								  Size extra_size, bool error_on_failure,
								  const char *what, const char *hint);

/* ---- in a worker ---- */

extern void kafka_bgworker_claim(const LOCKTAG *tag, TransactionId wait_xid);
extern void kafka_bgworker_retry_loop(void (*attempt) (void), void (*teardown) (void),
									  void (*record_error) (const char *message),
									  int *backoff_ms);

/* a worker's main loop (kafka_worker_main_loop) */
typedef struct KafkaWorkerLoop
{
	bool		(*iteration) (void);	/* one pass: false to exit */
	void		(*teardown) (void); /* drop the Kafka client after an error */
	bool		(*has_client) (void);	/* else back off, then build one */
	bool		recheck_on_exit;	/* exit only if no longer running */
	bool		count_errors;	/* count errors in the slot's errors */
	int		   *backoff_ms;
} KafkaWorkerLoop;

extern KafkaSlot *kafka_worker_attach(const KafkaKind *kind, pqsigfunc sigterm,
									  Oid dboid, Oid catalog_relid, Oid owner,
									  int32 id, int32 worker,
									  TransactionId wait_xid);
extern HeapTuple kafka_worker_read_row(const char *sql, TupleDesc *desc);
extern void kafka_worker_loaded(const char *name);
extern void kafka_worker_set_state(KafkaWorkerState state);
extern void kafka_worker_set_error(const char *msg, KafkaWorkerState state,
								   bool count);
extern void kafka_worker_exec(const char *sql, int nargs, Oid *argtypes,
							  Datum *args, const char *nulls, bool read_only,
							  long tcount, int expected);
extern bool kafka_worker_is_running(bool lock);
extern bool kafka_worker_is_running_xact(void);
extern void kafka_begin_xact(void);
extern void kafka_commit_xact(void);
extern void kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque);
extern const char *kafka_pending_error(void);
extern rd_kafka_t *kafka_new_consumer(rd_kafka_conf_t *conf);
extern void kafka_worker_main_loop(const KafkaWorkerLoop *loop);
extern void kafka_check_interrupts(void);

#endif							/* STREAM_EXT_KAFKA_COMMON_H */
