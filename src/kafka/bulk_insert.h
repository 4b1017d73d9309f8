/*-------------------------------------------------------------------------
 *
 * bulk_insert.h
 *	  Bulk insertion of already-decoded tuples into a stream.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_BULK_INSERT_H
#define STREAM_EXT_KAFKA_BULK_INSERT_H

#include "access/htup.h"
#include "access/tupdesc.h"

extern bool kafka_bulk_insert(Oid relid, TupleDesc srcdesc,
							   const AttrNumber *attnums,
							   HeapTuple *tuples, int ntuples);

#endif							/* STREAM_EXT_KAFKA_BULK_INSERT_H */
