/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  Supervision of Kafka source workers: the GUCs, the launch of a source
 *	  worker, the launcher background worker registered at preload, and the
 *	  per-database scanner it starts.
 *
 * The launcher is a static background worker connected to no database (it
 * reads only the shared catalog pg_database).  At server start, after a
 * crash restart, and then every stream_ext.kafka_launcher_naptime seconds
 * it starts one short-lived scanner per connectable database, one at a
 * time.  A scanner connects to its database, and if stream_ext is installed
 * there, starts the missing workers of every source whose state is
 * 'running' (and, through sink.c, the worker of every running
 * sink).  A worker claims its (database, source, worker) slot in shared
 * memory on start, so a duplicate exits at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "kafka/launcher.h"
#include "kafka/sink.h"
#include "kafka/source.h"

KafkaShared *kafka_shared = NULL;

int			kafka_max_workers = 16;
int			kafka_launcher_naptime = 10;

/*
 * Called from _PG_init: GUCs always; the launcher only when loaded through
 * shared_preload_libraries (the shared memory: common.c).
 */
void
stream_ext_launcher_init(void)
{
	BackgroundWorker worker;

	DefineCustomIntVariable("stream_ext.kafka_max_workers",
							"Maximum number of Kafka source workers (all databases).",
							"Each worker takes a background worker slot too: raise max_worker_processes accordingly.",
							&kafka_max_workers,
							16, 1, 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("stream_ext.kafka_launcher_naptime",
							"Seconds between the Kafka launcher's checks that every running source has its workers.",
							NULL,
							&kafka_launcher_naptime,
							10, 1, 3600,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("stream_ext");

	if (!process_shared_preload_libraries_in_progress)
		return;

	kafka_bgworker_init(&worker, "stream_ext_kafka_launcher_main", "stream_ext kafka launcher");
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_name, BGW_MAXLEN, "stream_ext kafka launcher");
	RegisterBackgroundWorker(&worker);
}

/* register a dynamic source worker */
bool
kafka_launch_worker(const KafkaWorkerArgs *args, bool error_on_failure)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	kafka_bgworker_init(&worker, "stream_ext_kafka_worker_main", "stream_ext kafka worker");
	snprintf(worker.bgw_name, BGW_MAXLEN, "stream_ext kafka source %d worker %d",
			 args->source_id, args->worker);
	memcpy(worker.bgw_extra, args, sizeof(KafkaWorkerArgs));

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(error_on_failure ? ERROR : WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start worker %d of Kafka source %d: no free background worker slot",
						args->worker, args->source_id),
				 errhint("Raise max_worker_processes (and stream_ext.kafka_max_workers).")));
		return false;
	}
	return true;
}

/* ----------------------------------------------------------------
 * Launcher
 * ----------------------------------------------------------------
 */

static List *
connectable_databases(void)
{
	List	   *dbs = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext outer = CurrentMemoryContext;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		if (!db->datallowconn || db->datistemplate)
			continue;
		old = MemoryContextSwitchTo(outer);
		dbs = lappend_oid(dbs, db->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return dbs;
}

static void
run_scanner(Oid dboid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	pid_t		pid;

	kafka_bgworker_init(&worker, "stream_ext_kafka_scanner_main", "stream_ext kafka scanner");
	snprintf(worker.bgw_name, BGW_MAXLEN, "stream_ext kafka scanner");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(LOG,
				(errmsg("stream_ext kafka launcher: no free background worker slot for a scanner"),
				 errhint("Raise max_worker_processes.")));
		return;
	}
	if (WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		return;
	(void) WaitForBackgroundWorkerShutdown(handle);
}

void
stream_ext_kafka_launcher_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* no database: only shared catalogs */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	if (kafka_shared)
	{
		LWLockAcquire(kafka_shared->table.lock, LW_EXCLUSIVE);
		kafka_shared->launcher_pid = MyProcPid;
		LWLockRelease(kafka_shared->table.lock);
	}
	ereport(DEBUG1, (errmsg("stream_ext kafka launcher started")));

	for (;;)
	{
		List	   *dbs;
		ListCell   *lc;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		dbs = connectable_databases();
		foreach(lc, dbs)
		{
			CHECK_FOR_INTERRUPTS();
			run_scanner(lfirst_oid(lc));
		}
		list_free(dbs);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 (long) kafka_launcher_naptime * 1000L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* ----------------------------------------------------------------
 * Scanner: one database, then exit
 * ----------------------------------------------------------------
 */

void
stream_ext_kafka_scanner_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	List	   *todo = NIL;
	ListCell   *lc;
	MemoryContext outer = CurrentMemoryContext;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* as the bootstrap superuser: reads the source catalog only */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("stream_ext", true)))
	{
		int			ret;
		uint64		i;

		SPI_connect();
		ret = SPI_execute("SELECT id, owner::oid, options FROM stream_ext.kafka_sources "
						  "WHERE state = 'running' ORDER BY id", true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(ret));
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			KafkaOptions opts;
			KafkaWorkerArgs *wargs;
			int			w;

			PG_TRY();
			{
				kafka_parse_options(DatumGetJsonbP(SPI_getbinval(tup, desc, 3, &isnull)),
									&opts);
			}
			PG_CATCH();
			{
				/* cannot happen for a validated source; keep scanning */
				FlushErrorState();
				opts.workers = 1;
			}
			PG_END_TRY();

			for (w = 0; w < opts.workers; w++)
			{
				MemoryContext old = MemoryContextSwitchTo(outer);

				wargs = palloc0(sizeof(KafkaWorkerArgs));
				wargs->dboid = dboid;
				wargs->catalog_relid = kafka_catalog_table(&kafka_source_kind, false);
				wargs->source_id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
				wargs->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
				wargs->worker = w;
				wargs->nworkers = opts.workers;
				wargs->wait_xid = InvalidTransactionId;
				todo = lappend(todo, wargs);
				MemoryContextSwitchTo(old);
			}
		}
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	foreach(lc, todo)
	{
		KafkaWorkerArgs *wargs = lfirst(lc);

		if (kafka_slot_is_live(&kafka_source_kind, wargs->dboid, wargs->catalog_relid,
							   wargs->source_id, wargs->worker))
			continue;
		ereport(LOG,
				(errmsg("stream_ext: starting worker %d of Kafka source %d",
						wargs->worker, wargs->source_id)));
		kafka_launch_worker(wargs, false);
	}
	/* and the worker of every running sink (sink.c) */
	kafka_sink_launch_running(dboid);
	proc_exit(0);
}
