/*-------------------------------------------------------------------------
 *
 * stream_ext.c
 *	  Module entry point: _PG_init installs the hooks and GUCs of every
 *	  subsystem.  Nothing else lives here, and nothing calls back into it:
 *	  the preload flag it sets lives in core/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "core/util.h"
#include "ddl/create_view.h"
#include "ddl/rebuild.h"
#include "ddl/utility.h"
#include "housekeeping/compactor.h"
#include "housekeeping/retention.h"
#include "kafka/common.h"
#include "kafka/launcher.h"
#include "kafka/sink.h"
#include "kafka/source.h"
#include "maintain/compact.h"
#include "maintain/lock_guard.h"
#include "maintain/maintain.h"
#include "maintain/privileges.h"
#include "maintain/stats.h"
#include "query/aggsupport.h"
#include "query/key_read.h"
#include "query/reads.h"
#include "query/shared_plan.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(stream_ext_assert_preloaded);

void		_PG_init(void);

void
_PG_init(void)
{
	stream_ext_preloaded = process_shared_preload_libraries_in_progress;

	/*
	 * Loaded on first use in a backend of a server without the preload
	 * (CREATE EXTENSION, LOAD, a function call): define and install nothing.
	 * PGC_POSTMASTER variables, shared memory and background workers can
	 * only be set up while the postmaster starts (defining such a variable
	 * now is FATAL), and hooks in this backend alone would maintain views
	 * in some sessions only.  The install script's _assert_preloaded()
	 * then reports the missing preload as an ordinary error.
	 */
	if (!stream_ext_preloaded)
		return;

	ddl_init();
	ddl_define_gucs();
	rebuild_define_gucs();
	aggsupport_define_gucs();
	maintain_init();
	privileges_init();
	lock_guard_init();
	stats_init();
	compact_init();
	kafka_common_init();
	kafka_source_init();
	kafka_sink_init();
	retention_init();
	compactor_init();
	kafka_launcher_init();
	reads_init();
	key_read_init();
	shared_plan_define_gucs();
	MarkGUCPrefixReserved("stream_ext");
}

/*
 * Called by the install script: continuous views are maintained by hooks
 * that every backend must have, so the module has to be preloaded.
 */
Datum
stream_ext_assert_preloaded(PG_FUNCTION_ARGS)
{
	if (!stream_ext_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stream_ext must be loaded via shared_preload_libraries"),
				 errhint("Add stream_ext to shared_preload_libraries in postgresql.conf and restart the server.")));
	PG_RETURN_VOID();
}
