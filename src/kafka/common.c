/*-------------------------------------------------------------------------
 *
 * common.c
 *	  What Kafka sources and sinks share: the shared memory of their
 *	  workers' slots; parsing of the options jsonb and of librdkafka
 *	  properties; the librdkafka configuration; the checks and catalog
 *	  statements of the SQL functions (create, start, stop, drop, status);
 *	  and, in a worker, claiming its slot, reporting its state and errors,
 *	  catalog statements as the catalog's owner, librdkafka's error
 *	  callback, error recovery and the backoff of its main loop.
 *
 * Sources (source.c, source_worker.c) and sinks (sink.c,
 * sink_worker.c) differ in a KafkaKind: the words of their messages,
 * their catalog table and their table of slots.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "core/security.h"
#include "core/util.h"
#include "kafka/common.h"
#include "kafka/decode.h"
#include "kafka/hostlist.h"

#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	30000

/* ----------------------------------------------------------------
 * Shared memory: one table of slots per kind
 * ----------------------------------------------------------------
 */

/* the kinds whose tables of slots live in shared memory (their _init()) */
static const KafkaKind *kafka_kinds[2];
static int	kafka_nkinds = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
slot_table_size(const KafkaKind *kind)
{
	return add_size(kind->header_size, mul_size(kind->slot_size, *kind->max_slots));
}

static void
kafka_shmem_request(void)
{
	int			i;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (i = 0; i < kafka_nkinds; i++)
	{
		RequestAddinShmemSpace(slot_table_size(kafka_kinds[i]));
		RequestNamedLWLockTranche(kafka_kinds[i]->tranche, 1);
	}
}

static void
kafka_shmem_startup(void)
{
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	for (i = 0; i < kafka_nkinds; i++)
	{
		const KafkaKind *kind = kafka_kinds[i];
		Size		size = slot_table_size(kind);
		KafkaSlotTable *table;
		bool		found;

		table = ShmemInitStruct(kind->shmem_name, size, &found);
		if (!found)
		{
			memset(table, 0, size);
			table->lock = &(GetNamedLWLockTranche(kind->tranche))->lock;
			table->nslots = *kind->max_slots;
		}
		*kind->shared = table;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Called from _PG_init (before the sources' and sinks' own _init()): the
 * GUC stream_ext.allowed_brokers.
 */
void
kafka_common_init(void)
{
	DefineCustomStringVariable("stream_ext.allowed_brokers",
							   "Kafka brokers that sources and sinks of non-superusers may connect to.",
							   "Comma-separated host[:port] patterns (a host may be * or *.domain); empty: any broker.",
							   &kafka_allowed_brokers,
							   "",
							   PGC_SUSET, GUC_LIST_INPUT,
							   se_check_host_patterns, NULL, NULL);
}

/*
 * Called from a kind's _init() (kafka_source_init(), kafka_sink_init()) at
 * preload: defines its GUC max_slots, and its table of slots is allocated
 * in shared memory when the server starts.
 */
void
kafka_slot_table_register(const KafkaKind *kind)
{
	DefineCustomIntVariable(kind->slot_guc,
							kind->max_slots_desc,
							kind->max_slots_long_desc,
							kind->max_slots,
							kind->max_slots_default, 1, 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	if (kafka_nkinds >= lengthof(kafka_kinds))
		elog(ERROR, "too many kinds of Kafka slot tables");
	kafka_kinds[kafka_nkinds++] = kind;
	if (kafka_nkinds > 1)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = kafka_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = kafka_shmem_startup;
}

/* slot i of kind's table in shared memory */
static KafkaSlot *
shared_slot(const KafkaKind *kind, int i)
{
	return (KafkaSlot *) ((char *) *kind->shared + kind->header_size +
						  (Size) i * kind->slot_size);
}

/* is a live worker holding slot (dboid, catalog_relid, id, worker)? */
bool
kafka_slot_is_live(const KafkaKind *kind, Oid dboid, Oid catalog_relid,
				   int32 id, int32 worker)
{
	KafkaSlotTable *table = *kind->shared;
	bool		live = false;
	int			i;

	if (table == NULL)
		return false;
	LWLockAcquire(table->lock, LW_SHARED);
	for (i = 0; i < table->nslots; i++)
	{
		KafkaSlot  *slot = shared_slot(kind, i);

		if (slot->in_use && slot->dboid == dboid &&
			slot->catalog_relid == catalog_relid &&
			slot->id == id && slot->worker == worker)
		{
			live = true;
			break;
		}
	}
	LWLockRelease(table->lock);
	return live;
}

/* a palloc'd copy of kind's slots, taken under the lock (NULL: none) */
void *
kafka_slot_snapshot(const KafkaKind *kind, int *nslots)
{
	KafkaSlotTable *table = *kind->shared;
	Size		size;
	void	   *copy;

	*nslots = 0;
	if (table == NULL)
		return NULL;
	size = mul_size(kind->slot_size, table->nslots);
	copy = palloc(size);
	LWLockAcquire(table->lock, LW_SHARED);
	memcpy(copy, (char *) table + kind->header_size, size);
	*nslots = table->nslots;
	LWLockRelease(table->lock);
	return copy;
}

/*
 * The body of a status function of kind (a set-returning function): rows
 * adds the rows of each slot the current user may see.
 */
void
kafka_slot_srf(FunctionCallInfo fcinfo, const KafkaKind *kind, KafkaSlotRows rows)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *slots;
	int			nslots;
	Oid			relid;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	slots = kafka_slot_snapshot(kind, &nslots);
	relid = kafka_catalog_table(kind, true);
	for (i = 0; i < nslots; i++)
	{
		KafkaSlot  *slot = (KafkaSlot *) (slots + i * kind->slot_size);

		if (kafka_slot_visible(slot, relid))
			rows(slot, rsinfo);
	}
}

/* the index of name (case-insensitive) in names[0..nnames), or -1 */
int
kafka_name_index(const char *name, const char *const *names, int nnames)
{
	int			i;

	for (i = 0; i < nnames; i++)
		if (pg_strcasecmp(name, names[i]) == 0)
			return i;
	return -1;
}

/* does a status view show this slot to the current user? */
bool
kafka_slot_visible(const KafkaSlot *slot, Oid catalog_relid)
{
	return slot->in_use && slot->dboid == MyDatabaseId &&
		slot->catalog_relid == catalog_relid &&
		(superuser() || has_privs_of_role(GetUserId(), slot->owner));
}

const char *
kafka_state_name(KafkaWorkerState state)
{
	switch (state)
	{
		case KWS_STARTING:
			return "starting";
		case KWS_RUNNING:
			return "running";
		case KWS_RETRYING:
			return "retrying";
		default:
			return "stopped";
	}
}

/*
 * The last four columns of a worker's status: last_error, last_error_time,
 * last_batch_time, started_at.
 */
void
kafka_slot_status(const KafkaSlot *slot, Datum *values, bool *nulls)
{
	if (slot->last_error[0])
		values[0] = CStringGetTextDatum(slot->last_error);
	else
		nulls[0] = true;
	values[1] = TimestampTzGetDatum(slot->last_error_time);
	nulls[1] = slot->last_error_time == 0;
	values[2] = TimestampTzGetDatum(slot->last_batch_time);
	nulls[2] = slot->last_batch_time == 0;
	values[3] = TimestampTzGetDatum(slot->started_at);
	nulls[3] = slot->started_at == 0;
}

/* ----------------------------------------------------------------
 * Options
 * ----------------------------------------------------------------
 */

char *
kafka_opt_string(JsonbValue *v, const char *key)
{
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a string", key)));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/*
 * The integer options of sources and sinks and their bounds, as
 * docs/kafka.md lists them.
 */
static const KafkaIntOption kafka_int_options[] = {
	{"source", "start_offset", 0, PG_INT64_MAX},
	{"source", "start_timestamp", 0, PG_INT64_MAX},
	{"source", "batch_size", 1, 1000000},
	{"source", "max_wait_ms", 1, 60000},
	{"source", "workers", 1, KAFKA_MAX_WORKERS_PER_SOURCE},
	{"source", "max_message_bytes", 1, MaxAllocSize - 1},
	{"source", "node", 0, KAFKA_MAX_NODES - 1},
	{"source", "nodes", 1, KAFKA_MAX_NODES},
	{"source", "partitions", 0, PG_INT32_MAX},
	{"source", "start_offsets", 0, PG_INT64_MAX},
	{"source", "registry_timeout_ms", 100, 600000},
	{"sink", "batch_size", 1, 100000},
	{"sink", "poll_interval_ms", 10, 60000},
};

/*
 * Integer option key of a source or sink (kind), given as a JSON number or
 * string, within its bounds in kafka_int_options[].
 */
int64
kafka_opt_int(JsonbValue *v, const KafkaKind *kind, const char *key)
{
	char	   *s;
	char	   *end;
	int64		val;
	int64		min = 0;
	int64		max = -1;
	int			i;

	for (i = 0; i < lengthof(kafka_int_options); i++)
		if (strcmp(kafka_int_options[i].noun, kind->noun) == 0 &&
			strcmp(kafka_int_options[i].key, key) == 0)
		{
			min = kafka_int_options[i].min;
			max = kafka_int_options[i].max;
			break;
		}
	if (i == lengthof(kafka_int_options))
		elog(ERROR, "no bounds for Kafka %s option \"%s\"", kind->noun, key);

	if (v->type == jbvNumeric)
		s = DatumGetCString(DirectFunctionCall1(numeric_out,
												NumericGetDatum(v->val.numeric)));
	else if (v->type == jbvString)
		s = pnstrdup(v->val.string.val, v->val.string.len);
	else
		s = NULL;
	if (s != NULL)
	{
		errno = 0;
		val = strtoll(s, &end, 10);
		if (errno == 0 && end != s && *end == '\0' && val >= min && val <= max)
			return val;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("option \"%s\" must be an integer between " INT64_FORMAT " and " INT64_FORMAT,
					key, min, max)));
	return 0;
}

/* a JSON array of column names, as a List of char * (maybe NIL) */
List *
kafka_opt_names(JsonbValue *v, const char *key)
{
	List	   *names = NIL;
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;

	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be an array of column names", key)));
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		if (tok == WJB_ELEM)
			names = lappend(names, kafka_opt_string(&e, key));
	return names;
}

static void
add_property(List **keys, List **values, const char *key, JsonbValue *v)
{
	if (v->type != jbvString && v->type != jbvNumeric && v->type != jbvBool)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a string, number or boolean", key)));
	*keys = lappend(*keys, pstrdup(key));
	*values = lappend(*values, kafka_jsonb_value_text(v));
}

/*
 * Walk the options object of a source or sink (NULL: none).  librdkafka
 * properties -- the members of "kafka", and keys containing a dot -- are
 * appended to prop_keys/prop_values (in CurrentMemoryContext); every other
 * key goes to handler.
 */
void
kafka_parse_option_object(Jsonb *options, KafkaOptionHandler handler, void *arg,
						  List **prop_keys, List **prop_values)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;

	if (options == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a JSON object")));

	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			continue;
		}
		if (tok != WJB_VALUE)
			continue;

		if (strcmp(key, "kafka") == 0)
		{
			JsonbIterator *it2;
			JsonbValue	e;
			JsonbIteratorToken t2;
			char	   *prop = NULL;

			if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"kafka\" must be an object of librdkafka properties")));
			it2 = JsonbIteratorInit(v.val.binary.data);
			while ((t2 = JsonbIteratorNext(&it2, &e, true)) != WJB_DONE)
			{
				if (t2 == WJB_KEY)
					prop = pnstrdup(e.val.string.val, e.val.string.len);
				else if (t2 == WJB_VALUE)
					add_property(prop_keys, prop_values, prop, &e);
			}
		}
		else if (strchr(key, '.') != NULL)
			add_property(prop_keys, prop_values, key, &v);
		else
			handler(key, &v, arg);
	}
}

/* ----------------------------------------------------------------
 * Who may set which librdkafka property, and connect to which brokers
 * ----------------------------------------------------------------
 */

/* stream_ext.allowed_brokers: host[:port] patterns; empty = any broker */
char	   *kafka_allowed_brokers = NULL;

/*
 * What setting a librdkafka property takes.  Anything not in the table --
 * including properties librdkafka itself does not know -- is for
 * superusers only: the table is an allow-list (see "Who may set which
 * property" in docs/kafka.md).
 */
typedef enum KafkaPropertyClass
{
	KP_ANYONE,					/* tuning, SASL PLAIN/SCRAM, inline TLS */
	KP_MECHANISM,				/* sasl.mechanism(s): depends on the value */
	KP_READ_FILES,				/* names a file the server reads */
	KP_EXECUTE					/* runs a program or loads a library */
} KafkaPropertyClass;

typedef struct KafkaPropertyRule
{
	const char *name;
	KafkaPropertyClass class;
} KafkaPropertyRule;

static const KafkaPropertyRule kafka_property_rules[] = {
	/* connection and protocol tuning */
	{"client.id", KP_ANYONE},
	{"client.rack", KP_ANYONE},
	{"message.max.bytes", KP_ANYONE},
	{"message.copy.max.bytes", KP_ANYONE},
	{"receive.message.max.bytes", KP_ANYONE},
	{"max.in.flight.requests.per.connection", KP_ANYONE},
	{"max.in.flight", KP_ANYONE},
	{"topic.metadata.refresh.interval.ms", KP_ANYONE},
	{"metadata.max.age.ms", KP_ANYONE},
	{"topic.metadata.refresh.fast.interval.ms", KP_ANYONE},
	{"topic.metadata.refresh.sparse", KP_ANYONE},
	{"topic.metadata.propagation.max.ms", KP_ANYONE},
	{"socket.timeout.ms", KP_ANYONE},
	{"socket.send.buffer.bytes", KP_ANYONE},
	{"socket.receive.buffer.bytes", KP_ANYONE},
	{"socket.keepalive.enable", KP_ANYONE},
	{"socket.nagle.disable", KP_ANYONE},
	{"socket.max.fails", KP_ANYONE},
	{"socket.connection.setup.timeout.ms", KP_ANYONE},
	{"broker.address.ttl", KP_ANYONE},
	{"broker.address.family", KP_ANYONE},
	{"connections.max.idle.ms", KP_ANYONE},
	{"reconnect.backoff.ms", KP_ANYONE},
	{"reconnect.backoff.max.ms", KP_ANYONE},
	{"api.version.request", KP_ANYONE},
	{"api.version.request.timeout.ms", KP_ANYONE},
	{"api.version.fallback.ms", KP_ANYONE},
	{"broker.version.fallback", KP_ANYONE},
	{"allow.auto.create.topics", KP_ANYONE},
	{"request.timeout.ms", KP_ANYONE},
	/* security: SASL PLAIN/SCRAM and TLS with inline keys and certificates */
	{"security.protocol", KP_ANYONE},
	{"sasl.mechanism", KP_MECHANISM},
	{"sasl.mechanisms", KP_MECHANISM},
	{"sasl.username", KP_ANYONE},
	{"sasl.password", KP_ANYONE},
	{"ssl.cipher.suites", KP_ANYONE},
	{"ssl.curves.list", KP_ANYONE},
	{"ssl.sigalgs.list", KP_ANYONE},
	{"ssl.key.password", KP_ANYONE},
	{"ssl.key.pem", KP_ANYONE},
	{"ssl.certificate.pem", KP_ANYONE},
	{"ssl.ca.pem", KP_ANYONE},
	{"ssl.keystore.password", KP_ANYONE},
	{"ssl.endpoint.identification.algorithm", KP_ANYONE},
	{"enable.ssl.certificate.verification", KP_ANYONE},
	/* consumer */
	{"group.id", KP_ANYONE},
	{"auto.offset.reset", KP_ANYONE},
	{"queued.min.messages", KP_ANYONE},
	{"queued.max.messages.kbytes", KP_ANYONE},
	{"fetch.wait.max.ms", KP_ANYONE},
	{"fetch.message.max.bytes", KP_ANYONE},
	{"max.partition.fetch.bytes", KP_ANYONE},
	{"fetch.max.bytes", KP_ANYONE},
	{"fetch.min.bytes", KP_ANYONE},
	{"fetch.error.backoff.ms", KP_ANYONE},
	{"fetch.queue.backoff.ms", KP_ANYONE},
	{"isolation.level", KP_ANYONE},
	{"check.crcs", KP_ANYONE},
	/* producer */
	{"queue.buffering.max.messages", KP_ANYONE},
	{"queue.buffering.max.kbytes", KP_ANYONE},
	{"queue.buffering.max.ms", KP_ANYONE},
	{"linger.ms", KP_ANYONE},
	{"message.send.max.retries", KP_ANYONE},
	{"retries", KP_ANYONE},
	{"retry.backoff.ms", KP_ANYONE},
	{"retry.backoff.max.ms", KP_ANYONE},
	{"queue.buffering.backpressure.threshold", KP_ANYONE},
	{"compression.codec", KP_ANYONE},
	{"compression.type", KP_ANYONE},
	{"compression.level", KP_ANYONE},
	{"batch.num.messages", KP_ANYONE},
	{"batch.size", KP_ANYONE},
	{"sticky.partitioning.linger.ms", KP_ANYONE},
	{"message.timeout.ms", KP_ANYONE},
	{"delivery.timeout.ms", KP_ANYONE},
	{"partitioner", KP_ANYONE},
	/* files the server reads: pg_read_server_files */
	{"ssl.ca.location", KP_READ_FILES},
	{"ssl.crl.location", KP_READ_FILES},
	{"ssl.key.location", KP_READ_FILES},
	{"ssl.certificate.location", KP_READ_FILES},
	{"ssl.keystore.location", KP_READ_FILES},
	{"sasl.kerberos.keytab", KP_READ_FILES},
	/* programs and libraries: pg_execute_server_program */
	{"sasl.kerberos.kinit.cmd", KP_EXECUTE},
	{"plugin.library.paths", KP_EXECUTE},
	{"ssl.engine.location", KP_EXECUTE},
	{"ssl.engine.id", KP_EXECUTE},
	{"ssl.providers", KP_EXECUTE},
};

/* SASL mechanisms anyone may use: they send only the given credentials */
static bool
public_sasl_mechanism(const char *value)
{
	return pg_strcasecmp(value, "PLAIN") == 0 ||
		pg_strcasecmp(value, "SCRAM-SHA-256") == 0 ||
		pg_strcasecmp(value, "SCRAM-SHA-512") == 0;
}

/*
 * May role set librdkafka property key to value?  ereports with 42501
 * naming the property and what it takes.  Needs a transaction (catalog
 * lookups of role membership).
 */
static void
check_property_privilege(Oid role, const char *key, const char *value)
{
	KafkaPropertyClass class = KP_ANYONE;
	bool		known = false;
	const char *rolename;
	int			i;

	if (superuser_arg(role))
		return;
	for (i = 0; i < lengthof(kafka_property_rules); i++)
		if (strcmp(kafka_property_rules[i].name, key) == 0)
		{
			class = kafka_property_rules[i].class;
			known = true;
			break;
		}
	if (known && class == KP_MECHANISM)
	{
		if (public_sasl_mechanism(value))
			return;
		/* GSSAPI runs sasl.kerberos.kinit.cmd; OAUTHBEARER: superusers */
		if (pg_strcasecmp(value, "GSSAPI") == 0)
			class = KP_EXECUTE;
		else
			known = false;
	}
	if (known && class == KP_ANYONE)
		return;
	if (known && class == KP_READ_FILES &&
		has_privs_of_role(role, ROLE_PG_READ_SERVER_FILES))
		return;
	if (known && class == KP_EXECUTE &&
		has_privs_of_role(role, ROLE_PG_EXECUTE_SERVER_PROGRAM))
		return;

	rolename = GetUserNameFromId(role, false);
	if (strncmp(key, "sasl.mechanism", 14) == 0)
		key = psprintf("%s\" to \"%s", key, value);	/* name the value too */
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to set librdkafka property \"%s\"", key),
			 !known ?
			 errdetail("Only superusers may set it; role \"%s\" is not one.", rolename) :
			 class == KP_READ_FILES ?
			 errdetail("It names a file the server reads: only superusers and members of pg_read_server_files may set it; role \"%s\" is neither.",
					   rolename) :
			 errdetail("It makes the server run a program or load a library: only superusers and members of pg_execute_server_program may set it; role \"%s\" is neither.",
					   rolename),
			 errhint("See \"Who may set which property\" in stream_ext's docs/kafka.md.")));
}

/* the brokers argument: a comma-separated host:port list */
void
kafka_check_brokers(const char *brokers)
{
	List	   *hosts;
	List	   *ports;

	if (*se_skip_space(brokers) == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("brokers must not be empty"),
				 errhint("Give a bootstrap list such as 'localhost:9092'.")));
	if (!se_split_host_ports(brokers, false, &hosts, &ports))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid Kafka broker list \"%s\"", brokers),
				 errhint("Give a comma-separated list of host:port pairs, such as 'kafka1:9092,kafka2:9092'.")));
}

/*
 * May role connect to these brokers?  Superusers may connect anywhere;
 * others only to brokers stream_ext.allowed_brokers lists (if it is set).
 */
static void
check_brokers_allowed(Oid role, const char *brokers)
{
	List	   *hosts,
			   *ports,
			   *phosts,
			   *pports;
	ListCell   *lh,
			   *lp;

	if (kafka_allowed_brokers == NULL || *se_skip_space(kafka_allowed_brokers) == '\0' ||
		superuser_arg(role))
		return;
	if (!se_split_host_ports(brokers, false, &hosts, &ports))
		kafka_check_brokers(brokers);	/* ereports */
	if (!se_split_host_ports(kafka_allowed_brokers, true, &phosts, &pports))
		elog(ERROR, "invalid stream_ext.allowed_brokers");	/* check hook */
	forboth(lh, hosts, lp, ports)
	{
		ListCell   *ph,
				   *pp;
		bool		allowed = false;

		forboth(ph, phosts, pp, pports)
			if (se_host_matches(lfirst(lh), lfirst_int(lp), 9092, lfirst(ph), lfirst_int(pp)))
			{
				allowed = true;
				break;
			}
		if (!allowed)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to connect to Kafka broker \"%s\"",
							(char *) lfirst(lh)),
					 errdetail("stream_ext.allowed_brokers does not list it: role \"%s\" may connect only to the brokers listed there, as it is not a superuser.",
							   GetUserNameFromId(role, false)),
					 errhint("A superuser can add it to stream_ext.allowed_brokers.")));
	}
}

/* ----------------------------------------------------------------
 * librdkafka configuration
 * ----------------------------------------------------------------
 */

/* set a property; on failure destroy conf and ereport */
void
kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value)
{
	char		errstr[512];

	if (rd_kafka_conf_set(conf, key, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
	{
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid librdkafka property \"%s\": %s", key, errstr)));
	}
}

/*
 * stream_ext sets these itself, for every source and sink: the brokers
 * come from the brokers argument only (validated, and checked against
 * stream_ext.allowed_brokers).
 */
static const char *const common_managed_properties[] = {
	"bootstrap.servers", "metadata.broker.list", NULL
};

/* ereport if key is in the NULL-terminated list managed */
static void
check_not_managed(const char *key, const char *const *managed, const char *detail)
{
	const char *const *m;

	for (m = managed; *m != NULL; m++)
		if (strcmp(key, *m) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("librdkafka property \"%s\" is managed by stream_ext", key),
					 errdetail("%s", detail)));
}

/*
 * A configuration with the brokers, stream_ext's client.id and the user's
 * properties, in their order; a property in the NULL-terminated list
 * managed is refused (with managed_detail).  role is the one whose rights
 * apply -- the caller of create, the owner in a worker: it must be allowed
 * to connect to the brokers and to set every property (so this needs a
 * transaction).  The caller adds its own properties.
 */
rd_kafka_conf_t *
kafka_conf_new(const char *brokers, List *keys, List *values,
			   const char *const *managed, const char *managed_detail,
			   Oid role)
{
	rd_kafka_conf_t *conf;
	ListCell   *lk,
			   *lv;

	forboth(lk, keys, lv, values)
	{
		check_not_managed(lfirst(lk), common_managed_properties,
						  "Give the brokers in the brokers argument.");
		check_not_managed(lfirst(lk), managed, managed_detail);
		check_property_privilege(role, lfirst(lk), lfirst(lv));
	}
	check_brokers_allowed(role, brokers);

	conf = rd_kafka_conf_new();
	kafka_conf_set(conf, "bootstrap.servers", brokers);
	kafka_conf_set(conf, "client.id", "stream_ext");
	forboth(lk, keys, lv, values)
		kafka_conf_set(conf, (const char *) lfirst(lk), (const char *) lfirst(lv));
	return conf;
}

/* did the user set librdkafka property key? */
bool
kafka_property_given(List *keys, const char *key)
{
	ListCell   *lc;

	foreach(lc, keys)
		if (strcmp((const char *) lfirst(lc), key) == 0)
			return true;
	return false;
}

/* ----------------------------------------------------------------
 * Catalog and SQL functions
 * ----------------------------------------------------------------
 */

/* OID of kind's catalog table (InvalidOid if missing and missing_ok) */
Oid
kafka_catalog_table(const KafkaKind *kind, bool missing_ok)
{
	Oid			nsp = get_namespace_oid("stream_ext", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid(kind->table, nsp) : InvalidOid;

	if (!OidIsValid(relid) && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("stream_ext.%s does not exist", kind->table),
				 errhint("%s", kind->missing_hint)));
	return relid;
}

/* run one statement as role (SPI connected) and insist on its result code */
void
kafka_exec_as(Oid role, const char *sql, int nargs, Oid *argtypes, Datum *args,
			  const char *nulls, bool read_only, long tcount, int expected)
{
	SeRunAs		runas;
	int			ret;

	se_run_as_role(&runas, role);
	ret = SPI_execute_with_args(sql, nargs, argtypes, args, nulls, read_only, tcount);
	se_restore(&runas);
	if (ret != expected)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
}

/* run one statement as the owner of kind's catalog (SPI connected) */
void
kafka_catalog_exec(const KafkaKind *kind, const char *sql, int nargs,
				   Oid *argtypes, Datum *args, const char *nulls,
				   bool read_only, int expected)
{
	kafka_exec_as(se_relation_owner(kafka_catalog_table(kind, false)),
				  sql, nargs, argtypes, args, nulls, read_only, 0, expected);
}

/*
 * Fetch and lock the catalog row of a source or sink (SPI connected).
 * Returns false if it is missing and missing_ok.
 */
bool
kafka_fetch_row(const KafkaKind *kind, const char *name, KafkaCatalogRow *row,
				bool missing_ok)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;

	args[0] = CStringGetTextDatum(name);
	kafka_catalog_exec(kind,
					   psprintf("SELECT id, name, stream::oid, owner::oid, state, options "
								"FROM stream_ext.%s WHERE name = $1 FOR UPDATE",
								kind->table),
					   1, argtypes, args, NULL, false, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		if (missing_ok)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("Kafka %s \"%s\" does not exist", kind->noun, name),
				 errhint("See stream_ext.%s for the existing %ss.", kind->table, kind->noun)));
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	row->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	row->name = SPI_getvalue(tup, desc, 2);
	row->stream = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	row->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
	row->state = SPI_getvalue(tup, desc, 5);
	row->options = DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 6, &isnull));
	return true;
}

static void
check_name(const KafkaKind *kind, const char *name)
{
	const char *p;

	if (name == NULL || name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("Kafka %s name must not be empty", kind->noun)));
	if (strlen(name) > KAFKA_NAME_MAXLEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("Kafka %s name \"%s\" is too long", kind->noun, name),
				 errdetail("Names are limited to %d bytes.", KAFKA_NAME_MAXLEN)));
	for (p = name; *p; p++)
		if ((unsigned char) *p < 0x20)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("Kafka %s name must not contain control characters",
							kind->noun)));
}

/*
 * The arguments of create_kafka_source/sink that they share: the name, the
 * brokers, the topic, and the stream, on which the caller needs
 * stream_privilege.
 */
void
kafka_check_definition(const KafkaKind *kind, const char *name, Oid stream,
					   const char *brokers, const char *topic,
					   AclMode stream_privilege)
{
	char		relkind;
	AclResult	aclresult;

	check_name(kind, name);
	kafka_check_brokers(brokers);
	if (topic[0] == '\0' || strlen(topic) > 249)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid Kafka topic name \"%s\"", topic)));

	relkind = get_rel_relkind(stream);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or stream", get_rel_name(stream))));
	aclresult = pg_class_aclcheck(stream, GetUserId(), stream_privilege);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(stream));
}

/* ereport if a source or sink of that name exists (SPI connected) */
void
kafka_check_new_name(const KafkaKind *kind, const char *name)
{
	KafkaCatalogRow existing;

	if (kafka_fetch_row(kind, name, &existing, true))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("Kafka %s \"%s\" already exists", kind->noun, name)));
}

/* only the owner (a member of the owner role) or a superuser */
void
kafka_check_owner(const KafkaKind *kind, const KafkaCatalogRow *row)
{
	if (!superuser() && !has_privs_of_role(GetUserId(), row->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of Kafka %s \"%s\"", kind->noun, row->name),
				 errhint("Only the owner of a %s or a superuser can start it; the owner of its stream can also stop or drop it.",
						 kind->noun)));
}

/*
 * stop and drop: the owner, a superuser, or the owner of the stream the
 * source or sink is attached to -- who can always detach what is attached
 * to their stream, even a sink whose owner lost its privileges.
 */
static void
check_owner_or_stream_owner(const KafkaKind *kind, const KafkaCatalogRow *row)
{
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(row->stream)) &&
		pg_class_ownercheck(row->stream, GetUserId()))
		return;
	kafka_check_owner(kind, row);
}

/* workers connect as the owner: it must still exist and be able to log in */
void
kafka_check_owner_login(const KafkaKind *kind, const KafkaCatalogRow *row)
{
	HeapTuple	roletup;
	bool		canlogin;

	roletup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(row->owner));
	if (!HeapTupleIsValid(roletup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("owner of Kafka %s \"%s\" no longer exists", kind->noun, row->name)));
	canlogin = ((Form_pg_authid) GETSTRUCT(roletup))->rolcanlogin;
	ReleaseSysCache(roletup);
	if (!canlogin)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("owner \"%s\" of Kafka %s \"%s\" cannot log in",
						GetUserNameFromId(row->owner, false), kind->noun, row->name),
				 errdetail("%s", kind->login_detail),
				 errhint("ALTER ROLE %s LOGIN", quote_identifier(GetUserNameFromId(row->owner, false)))));
}

/* start_source/start_sink: mark running, clear the last error (SPI connected) */
void
kafka_set_running(const KafkaKind *kind, int32 id)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	args[0] = Int32GetDatum(id);
	kafka_catalog_exec(kind,
					   psprintf("UPDATE stream_ext.%s "
								"SET state = 'running', last_error = NULL, updated_at = now() "
								"WHERE id = $1", kind->table),
					   1, argtypes, args, NULL, false, SPI_OK_UPDATE);
}

/* stop_source/stop_sink(name): mark stopped; the workers see it and exit */
void
kafka_stop(const KafkaKind *kind, const char *name)
{
	KafkaCatalogRow row;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	SPI_connect();
	kafka_fetch_row(kind, name, &row, false);
	check_owner_or_stream_owner(kind, &row);
	args[0] = Int32GetDatum(row.id);
	kafka_catalog_exec(kind,
					   psprintf("UPDATE stream_ext.%s "
								"SET state = 'stopped', updated_at = now() WHERE id = $1",
								kind->table),
					   1, argtypes, args, NULL, false, SPI_OK_UPDATE);
	SPI_finish();
}

/*
 * drop_source/drop_sink(name, if_exists), up to the owner check: connects
 * SPI and fetches the row.  Returns false (with a NOTICE, SPI finished) if
 * it does not exist and if_exists; then there is nothing to drop.
 */
bool
kafka_drop_begin(const KafkaKind *kind, FunctionCallInfo fcinfo,
				 KafkaCatalogRow *row)
{
	char	   *name;
	bool		if_exists = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s name must not be null", kind->noun)));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	SPI_connect();
	if (!kafka_fetch_row(kind, name, row, if_exists))
	{
		ereport(NOTICE,
				(errmsg("Kafka %s \"%s\" does not exist, skipping", kind->noun, name)));
		SPI_finish();
		return false;
	}
	check_owner_or_stream_owner(kind, row);
	return true;
}

/* delete the row kafka_drop_begin fetched, and finish SPI */
void
kafka_drop_end(const KafkaKind *kind, const KafkaCatalogRow *row)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	args[0] = Int32GetDatum(row->id);
	kafka_catalog_exec(kind,
					   psprintf("DELETE FROM stream_ext.%s WHERE id = $1", kind->table),
					   1, argtypes, args, NULL, false, SPI_OK_DELETE);
	SPI_finish();
}

/*
 * A background worker of stream_ext's that connects to a database and is
 * not restarted; the caller names it and adds its arguments.
 */
void
kafka_bgworker_init(BackgroundWorker *worker, const char *function, const char *type)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker->bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker->bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker->bgw_library_name, BGW_MAXLEN, "stream_ext");
	snprintf(worker->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(worker->bgw_type, BGW_MAXLEN, "%s", type);
	worker->bgw_notify_pid = 0;
}

/*
 * Register a dynamic worker (kafka_bgworker_init()) named name, with extra
 * (extra_size bytes) in its bgw_extra.  Without a free background worker
 * slot: ERROR if error_on_failure, else WARNING and false.  what names the
 * worker in that message, hint says what to raise.
 */
bool
kafka_bgworker_launch(const char *function, const char *type, const char *name,
					  const void *extra, Size extra_size, bool error_on_failure,
					  const char *what, const char *hint)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	kafka_bgworker_init(&worker, function, type);
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", name);
	Assert(extra_size <= BGW_EXTRALEN);
	memcpy(worker.bgw_extra, extra, extra_size);

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(error_on_failure ? ERROR : WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start %s: no free background worker slot", what),
				 errhint("%s", hint)));
		return false;
	}
	return true;
}

/* append a worker to start to list: its id, worker number and bgw_extra */
void
kafka_launch_add(KafkaLaunchList *list, int32 id, int32 worker,
				 const void *args, Size args_size)
{
	MemoryContext old = MemoryContextSwitchTo(list->cxt);
	KafkaLaunch *launch = palloc(sizeof(KafkaLaunch));

	launch->id = id;
	launch->worker = worker;
	launch->args = palloc(args_size);
	memcpy(launch->args, args, args_size);
	list->items = lappend(list->items, launch);
	MemoryContextSwitchTo(old);
}

/*
 * Called by the launcher's scanner (connected to dboid, no transaction):
 * if stream_ext and kind's catalog table are there, read the running rows
 * with sql, let row list the workers of each, and after the transaction
 * start every one whose slot is not live.
 */
void
kafka_launch_running(const KafkaKind *kind, Oid dboid, const char *sql,
					 KafkaRunningRow row, KafkaStartWorker start)
{
	KafkaLaunchList list;
	ListCell   *lc;

	if (*kind->shared == NULL)
		return;
	list.cxt = CurrentMemoryContext;
	list.dboid = dboid;
	list.catalog_relid = InvalidOid;
	list.items = NIL;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("stream_ext", true)) &&
		OidIsValid(list.catalog_relid = kafka_catalog_table(kind, true)))
	{
		int			ret;
		uint64		i;

		SPI_connect();
		ret = SPI_execute(sql, true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(ret));
		for (i = 0; i < SPI_processed; i++)
			row(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, &list);
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	foreach(lc, list.items)
	{
		KafkaLaunch *launch = lfirst(lc);

		if (!kafka_slot_is_live(kind, dboid, list.catalog_relid,
								launch->id, launch->worker))
			start(launch);
	}
}

/*
 * The first arguments of create_kafka_source() and create_kafka_sink():
 * name, stream, brokers, topic (none may be null) and format.
 */
void
kafka_definition_args(FunctionCallInfo fcinfo, KafkaDefinition *def)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name, stream, brokers and topic must not be null")));
	def->name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	def->stream = PG_GETARG_OID(1);
	def->brokers = text_to_cstring(PG_GETARG_TEXT_PP(2));
	def->topic = text_to_cstring(PG_GETARG_TEXT_PP(3));
	def->format = PG_ARGISNULL(4) ? "json" : text_to_cstring(PG_GETARG_TEXT_PP(4));
}

/* $1 .. $4 of the catalog INSERT: name, stream, brokers, topic */
void
kafka_definition_datums(const KafkaDefinition *def, Datum *args)
{
	args[0] = CStringGetTextDatum(def->name);
	args[1] = ObjectIdGetDatum(def->stream);
	args[2] = CStringGetTextDatum(def->brokers);
	args[3] = CStringGetTextDatum(def->topic);
}

/*
 * The beginning of start_source() and start_sink(), after SPI_connect():
 * the kind needs its slots (preload); read the row of name, which the
 * current user must own.
 */
void
kafka_start_fetch_row(const KafkaKind *kind, const char *name, KafkaCatalogRow *row)
{
	if (*kind->shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("Kafka %ss need stream_ext in shared_preload_libraries", kind->noun),
				 errhint("Add stream_ext to shared_preload_libraries in postgresql.conf and restart the server.")));
	kafka_fetch_row(kind, name, row, false);
	kafka_check_owner(kind, row);
}

/* ----------------------------------------------------------------
 * In a worker (one source worker or sink worker per process)
 * ----------------------------------------------------------------
 */

static const KafkaKind *my_kind = NULL;
static KafkaSlot *my_slot = NULL;
static Oid	my_catalog_relid = InvalidOid;
static int32 my_id = 0;
static Oid	my_catalog_owner = InvalidOid;

/* set by librdkafka's error callback (runs in this process' poll calls) */
static char rk_error[KAFKA_ERRMSG_LEN];
static volatile bool rk_error_pending = false;

static KafkaSlotTable *
my_table(void)
{
	return (KafkaSlotTable *) *my_kind->shared;
}

/* claim a free slot; false if a twin already holds key's */
static bool
claim_slot(const KafkaSlot *key)
{
	KafkaSlotTable *table = my_table();
	int			i;
	int			free_slot = -1;

	LWLockAcquire(table->lock, LW_EXCLUSIVE);
	for (i = 0; i < table->nslots; i++)
	{
		KafkaSlot  *s = shared_slot(my_kind, i);

		if (s->in_use)
		{
			if (s->dboid == key->dboid && s->catalog_relid == key->catalog_relid &&
				s->id == key->id && s->worker == key->worker)
			{
				LWLockRelease(table->lock);
				return false;	/* a twin is already running */
			}
		}
		else if (free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
	{
		LWLockRelease(table->lock);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("all %d Kafka %s slots are in use", table->nslots, my_kind->slot_noun),
				 errhint("Raise %s.", my_kind->slot_guc)));
	}
	my_slot = shared_slot(my_kind, free_slot);
	memset(my_slot, 0, my_kind->slot_size);
	my_slot->in_use = true;
	my_slot->pid = MyProcPid;
	my_slot->dboid = key->dboid;
	my_slot->catalog_relid = key->catalog_relid;
	my_slot->owner = key->owner;
	my_slot->id = key->id;
	my_slot->worker = key->worker;
	my_slot->state = KWS_STARTING;
	my_slot->started_at = GetCurrentTimestamp();
	LWLockRelease(table->lock);
	return true;
}

static void
release_slot(int code, Datum arg)
{
	if (my_slot == NULL)
		return;
	LWLockAcquire(my_table()->lock, LW_EXCLUSIVE);
	memset(my_slot, 0, my_kind->slot_size);
	LWLockRelease(my_table()->lock);
	my_slot = NULL;
}

/*
 * A worker's start: set its signal handlers (SIGHUP: reload the
 * configuration; SIGTERM: sigterm), connect to dboid as owner (every
 * statement runs as the owner), claim the slot of (dboid,
 * catalog_relid, id, worker) -- exit if a twin holds it -- and wait until
 * the transaction wait_xid that started the worker is over.
 */
KafkaSlot *
kafka_worker_attach(const KafkaKind *kind, pqsigfunc sigterm, Oid dboid,
					Oid catalog_relid, Oid owner, int32 id, int32 worker,
					TransactionId wait_xid)
{
	KafkaSlot	key;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, sigterm);
	BackgroundWorkerUnblockSignals();

	my_kind = kind;
	if (*kind->shared == NULL)
		ereport(FATAL,
				(errmsg("stream_ext is not in shared_preload_libraries")));

	/*
	 * As the owner, with the owner's settings (search_path too): its inserts
	 * run the stream's defaults and triggers as a session of the owner's
	 * would.  stream_ext's own statements pin search_path themselves.
	 */
	BackgroundWorkerInitializeConnectionByOid(dboid, owner, 0);

	memset(&key, 0, sizeof(key));
	key.dboid = dboid;
	key.catalog_relid = catalog_relid;
	key.owner = owner;
	key.id = id;
	key.worker = worker;
	if (!claim_slot(&key))
		proc_exit(0);
	before_shmem_exit(release_slot, (Datum) 0);
	my_catalog_relid = catalog_relid;
	my_id = id;

	/* the starting transaction must be over before we read the catalog */
	while (TransactionIdIsValid(wait_xid) && TransactionIdIsInProgress(wait_xid))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(0);
	}
	return my_slot;
}

/*
 * Begin a transaction and read the worker's row of its catalog table with
 * sql, a SELECT of one row with $1 the id of the source or sink.  Returns
 * the row (in SPI's memory), or NULL, the transaction committed, when the
 * source or sink is no longer running.  The caller commits.
 */
HeapTuple
kafka_worker_read_row(const char *sql, TupleDesc *desc)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];

	kafka_begin_xact();
	if (!kafka_worker_is_running(false))
	{
		kafka_commit_xact();
		return NULL;
	}
	args[0] = Int32GetDatum(my_id);
	kafka_worker_exec(sql, 1, argtypes, args, NULL, true, 1, SPI_OK_SELECT);
	if (SPI_processed != 1)
		elog(ERROR, "could not read Kafka %s %d", my_kind->noun, my_id);
	*desc = SPI_tuptable->tupdesc;
	return SPI_tuptable->vals[0];
}

/*
 * After kafka_worker_read_row() and the worker's own reading of the row:
 * commit, and show the source's or sink's name as the application name.
 */
void
kafka_worker_loaded(const char *name)
{
	kafka_commit_xact();
	pgstat_report_appname(psprintf("stream_ext %s %s", my_kind->noun, name));
}

void
kafka_worker_set_state(KafkaWorkerState state)
{
	if (my_slot->state == state)
		return;
	LWLockAcquire(my_table()->lock, LW_EXCLUSIVE);
	my_slot->state = state;
	LWLockRelease(my_table()->lock);
}

/* show msg as the worker's last error; with count, count it in errors */
void
kafka_worker_set_error(const char *msg, KafkaWorkerState state, bool count)
{
	LWLockAcquire(my_table()->lock, LW_EXCLUSIVE);
	strlcpy(my_slot->last_error, msg, KAFKA_ERRMSG_LEN);
	my_slot->last_error_time = GetCurrentTimestamp();
	if (count)
		my_slot->errors++;
	my_slot->state = state;
	LWLockRelease(my_table()->lock);
}

/*
 * Run one statement on stream_ext's own tables as their owner, and insist
 * on its result code (SPI connected; the caller manages the transaction).
 */
void
kafka_worker_exec(const char *sql, int nargs, Oid *argtypes, Datum *args,
				  const char *nulls, bool read_only, long tcount, int expected)
{
	if (!OidIsValid(my_catalog_owner))
		my_catalog_owner = se_relation_owner(my_catalog_relid);
	kafka_exec_as(my_catalog_owner, sql, nargs, argtypes, args, nulls,
				  read_only, tcount, expected);
}

/*
 * Is the worker's source or sink still there and running (in a
 * transaction)?  With lock, take FOR KEY SHARE, so that a drop waits for
 * the batch being applied.
 */
bool
kafka_worker_is_running(bool lock)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	char	   *state;

	/* the extension dropped, or dropped and created again? */
	if (!OidIsValid(get_extension_oid("stream_ext", true)) ||
		kafka_catalog_table(my_kind, true) != my_catalog_relid)
		return false;
	args[0] = Int32GetDatum(my_id);
	kafka_worker_exec(psprintf("SELECT state FROM stream_ext.%s WHERE id = $1%s",
							   my_kind->table, lock ? " FOR KEY SHARE" : ""),
					  1, argtypes, args, NULL, false, 1, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return strcmp(state, "running") == 0;
}

/* the same, not in a transaction: in one of its own */
bool
kafka_worker_is_running_xact(void)
{
	bool		running;

	kafka_begin_xact();
	running = kafka_worker_is_running(false);
	kafka_commit_xact();
	return running;
}

void
kafka_begin_xact(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
kafka_commit_xact(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
}

/*
 * librdkafka's error callback: kept for kafka_pending_error().  "All
 * brokers are down" follows each broker's own error (connection refused,
 * SASL handshake failed, ...): it does not replace one not yet shown.
 */
void
kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN && rk_error_pending)
		return;
	snprintf(rk_error, sizeof(rk_error), "%s: %s",
			 rd_kafka_err2name((rd_kafka_resp_err_t) err), reason);
	rk_error_pending = true;
}

/*
 * A consumer from conf (which it takes over), its errors reported through
 * kafka_error_cb() (one pending from an earlier client is dropped), its
 * events on the consumer queue: the source worker's and the replay's.
 */
rd_kafka_t *
kafka_new_consumer(rd_kafka_conf_t *conf)
{
	rd_kafka_t *rk;
	char		errstr[512];

	rd_kafka_conf_set_error_cb(conf, kafka_error_cb);
	(void) kafka_pending_error();
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (rk == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("cannot create Kafka consumer: %s", errstr)));
	rd_kafka_poll_set_consumer(rk);
	return rk;
}

/* the error librdkafka reported since the last call, or NULL */
const char *
kafka_pending_error(void)
{
	if (!rk_error_pending)
		return NULL;
	rk_error_pending = false;
	return rk_error;
}

/* at the top of a worker's main loop (and of the Kafka replay's, replay_worker.c) */
void
kafka_check_interrupts(void)
{
	/*
	 * The loop waits in librdkafka, not on a latch, so nothing else notices
	 * the postmaster's death: an orphan would go on consuming and keep the
	 * shared memory, and a new postmaster refuses to start while it is
	 * attached.  (Cheap: a flag set by a signal on Linux.)
	 */
	if (!PostmasterIsAlive())
		proc_exit(1);
	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

/*
 * In the PG_CATCH of a worker's main loop: report the error, abort the
 * transaction, and return the error's text (in TopMemoryContext, which is
 * current again).
 */
static char *
recover(void)
{
	ErrorData  *edata;
	char	   *msg;

	HOLD_INTERRUPTS();
	EmitErrorReport();
	MemoryContextSwitchTo(TopMemoryContext);
	edata = CopyErrorData();
	FlushErrorState();
	msg = pstrdup(edata->message ? edata->message : "unknown error");
	FreeErrorData(edata);
	AbortOutOfAnyTransaction();
	MemoryContextSwitchTo(TopMemoryContext);
	RESUME_INTERRUPTS();
	return msg;
}

/* wait before the next attempt: 100 ms, doubled up to 30 s */
static void
backoff_sleep(int *backoff_ms)
{
	*backoff_ms = *backoff_ms == 0 ? BACKOFF_MIN_MS : Min(*backoff_ms * 2, BACKOFF_MAX_MS);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 *backoff_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}

/*
 * The start of a worker that resumes stored work (a rebuild's backfill,
 * a Kafka replay): one worker per tag (the lock taken, else exit), and
 * only once the transaction wait_xid that started it is over (it may
 * still be writing the catalog rows the worker reads).
 */
void
kafka_bgworker_claim(const LOCKTAG *tag, TransactionId wait_xid)
{
	if (LockAcquire(tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		proc_exit(0);
	while (TransactionIdIsValid(wait_xid) && TransactionIdIsInProgress(wait_xid))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The main loop of such a worker: attempt() until it returns.  After an
 * error -- reported, the transaction aborted, teardown() (if not NULL)
 * run -- a shutdown (57P01) ends the worker; any other error is recorded
 * with record_error(message), and attempt() runs again, from what it
 * stored, after a back-off of 100 ms doubled up to 30 s (attempt() sets
 * *backoff_ms to 0 whenever it makes progress).
 */
void
kafka_bgworker_retry_loop(void (*attempt) (void), void (*teardown) (void),
						  void (*record_error) (const char *message),
						  int *backoff_ms)
{
	for (;;)
	{
		volatile bool finished = false;

		PG_TRY();
		{
			attempt();
			finished = true;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			HOLD_INTERRUPTS();
			MemoryContextSwitchTo(TopMemoryContext);
			edata = CopyErrorData();
			EmitErrorReport();
			FlushErrorState();
			AbortOutOfAnyTransaction();
			RESUME_INTERRUPTS();
			if (teardown)
				teardown();
			/* a shutdown is no error of the work */
			if (edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
				proc_exit(1);
			record_error(edata->message);
			FreeErrorData(edata);
		}
		PG_END_TRY();
		if (finished)
			break;

		/* back off, then start again from what was stored */
		backoff_sleep(backoff_ms);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * A worker's main loop: loop->iteration() until it returns false (with
 * loop->recheck_on_exit, only if the source or sink is not running by
 * then) or SIGTERM asks for a shutdown.  An error is shown as the worker's
 * last error, loop->teardown() drops the Kafka client, and the worker
 * backs off before every new client (loop->has_client() false).
 */
void
kafka_worker_main_loop(const KafkaWorkerLoop *loop)
{
	while (!ShutdownRequestPending)
	{
		bool		keep_going = true;

		kafka_check_interrupts();

		PG_TRY();
		{
			keep_going = loop->iteration();
		}
		PG_CATCH();
		{
			char	   *msg = recover();

			kafka_worker_set_error(msg, KWS_RETRYING, loop->count_errors);
			pfree(msg);
			/* nothing of the batch stuck: rebuild the client and retry */
			loop->teardown();
			keep_going = true;
		}
		PG_END_TRY();

		/* stopped, but started again in the meantime? then carry on */
		if (!keep_going &&
			(!loop->recheck_on_exit || ShutdownRequestPending ||
			 !kafka_worker_is_running_xact()))
			break;
		if (!loop->has_client() && !ShutdownRequestPending)
			backoff_sleep(loop->backoff_ms);
	}
}
