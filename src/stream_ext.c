/*-------------------------------------------------------------------------
 *
 * stream_ext.c
 *	  Module entry point: _PG_init installs the hooks and GUCs of every
 *	  subsystem.  Nothing else lives here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "launcher.h"
#include "stream_ext.h"

PG_MODULE_MAGIC;

bool		stream_ext_preloaded = false;

void
_PG_init(void)
{
	stream_ext_preloaded = process_shared_preload_libraries_in_progress;

	stream_ext_launcher_init();
}
