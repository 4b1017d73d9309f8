/*-------------------------------------------------------------------------
 *
 * stream_ext.h
 *	  Declarations shared across stream_ext's subsystems.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_H
#define STREAM_EXT_H

/* stream_ext_preloaded: core/util.h */
#include "core/util.h"

#endif							/* STREAM_EXT_H */
