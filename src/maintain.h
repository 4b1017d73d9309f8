/*-------------------------------------------------------------------------
 *
 * maintain.h
 *	  Incremental maintenance of continuous views.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_MAINTAIN_H
#define STREAM_EXT_MAINTAIN_H

/*
 * > 0 while stream_ext runs maintenance statements: the planner hook turns
 * stream_ext.partial() calls into partial aggregates, and the guard trigger
 * of materializations lets writes through.
 */
extern int	stream_ext_maintenance_depth;

extern void maintain_init(void);

#endif							/* STREAM_EXT_MAINTAIN_H */
