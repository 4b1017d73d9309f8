/*-------------------------------------------------------------------------
 *
 * compact.h
 *	  Compaction of the deltas of continuous views that append
 *	  (docs/internals.md, "Append mode").
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_COMPACT_H
#define STREAM_EXT_COMPACT_H

#include "core/catalog.h"

extern void compact_init(void);

/*
 * Fold up to max_rows rows (all when max_rows <= 0) of the delta of view
 * viewid into its materialization, as the view's owner; returns the number
 * of delta rows folded (0 for a view that upserts, and 0 at once when
 * another transaction is compacting the view).  One statement: call it
 * in a transaction of its own to make the work visible (it commits with
 * that transaction).
 */
extern int64 se_compact_view(Oid viewid, int64 max_rows);
extern int64 se_compact_view_entry(ViewCatalogEntry *cat, int64 max_rows);

/* after a batch appended to cat's delta: compact inline when over threshold */
extern void compact_after_batch(ViewCatalogEntry *cat);

#endif							/* STREAM_EXT_COMPACT_H */
