/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  Supervision of the Kafka workers: the launcher background worker
 *	  registered at preload, and the per-database scanner it starts.
 *
 * The launcher is a static background worker connected to no database (it
 * reads only the shared catalog pg_database).  At server start, after a
 * crash restart, and then every stream_ext.kafka_launcher_naptime seconds
 * it starts one short-lived scanner per connectable database, one at a
 * time.  A scanner connects to its database, and if stream_ext is installed
 * there, starts the missing workers of every source whose state is
 * 'running' (kafka_source_launch_running(), source.c), the worker of
 * every running sink (kafka_sink_launch_running(), sink.c) and the
 * database's background compactor if views have deltas to compact
 * (compactor_launch_if_needed(), housekeeping/compactor.c) and the worker of
 * every Kafka replay still running (replay_launch_running(), replay.c) and of
 * every rebuild beside a continuous view (rebuild_launch_running(),
 * ddl/rebuild.c).  A worker
 * claims its slot in shared memory on start, so a duplicate exits at once.
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

#include "core/security.h"
#include "ddl/rebuild.h"
#include "housekeeping/compactor.h"
#include "kafka/launcher.h"
#include "kafka/replay.h"
#include "kafka/sink.h"
#include "kafka/source.h"

int			kafka_launcher_naptime = 10;

/*
 * Called from _PG_init at preload: the GUC of the launcher, and the
 * launcher itself.
 */
void
kafka_launcher_init(void)
{
	BackgroundWorker worker;

	DefineCustomIntVariable("stream_ext.kafka_launcher_naptime",
							"Seconds between the Kafka launcher's checks that every running source has its workers.",
							NULL,
							&kafka_launcher_naptime,
							10, 1, 3600,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;

	kafka_bgworker_init(&worker, "stream_ext_kafka_launcher_main", "stream_ext kafka launcher");
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_name, BGW_MAXLEN, "stream_ext kafka launcher");
	RegisterBackgroundWorker(&worker);
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

	if (kafka_source_shared)
	{
		LWLockAcquire(kafka_source_shared->table.lock, LW_EXCLUSIVE);
		kafka_source_shared->launcher_pid = MyProcPid;
		LWLockRelease(kafka_source_shared->table.lock);
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

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* as the bootstrap superuser: reads the catalogs of sources and sinks only */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	se_pin_worker_search_path();

	kafka_source_launch_running(dboid);
	kafka_sink_launch_running(dboid);
	compactor_launch_if_needed(dboid);
	replay_launch_running(dboid);
	rebuild_launch_running(dboid);
	proc_exit(0);
}
