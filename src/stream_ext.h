/*-------------------------------------------------------------------------
 *
 * stream_ext.h
 *	  Declarations shared across stream_ext's subsystems.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_H
#define STREAM_EXT_H

/* true when loaded through shared_preload_libraries */
extern bool stream_ext_preloaded;

#endif							/* STREAM_EXT_H */
