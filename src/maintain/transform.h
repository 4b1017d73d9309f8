/*-------------------------------------------------------------------------
 *
 * transform.h
 *	  The batch trigger of continuous transforms (continuous views without
 *	  aggregates).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_TRANSFORM_H
#define STREAM_EXT_TRANSFORM_H

#include "nodes/parsenodes.h"

/*
 * stream_ext.transform(), the batch trigger of a transform, is looked up
 * by name; creating a transform is ddl/create_transform.c's.
 */

#endif							/* STREAM_EXT_TRANSFORM_H */
