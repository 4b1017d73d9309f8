/*-------------------------------------------------------------------------
 *
 * ddl.h
 *	  The utility hook: CREATE VIEW ... WITH (continuous) and DDL guards.
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_DDL_H
#define STREAM_EXT_DDL_H

extern void ddl_init(void);
extern void ddl_define_gucs(void);

#endif							/* STREAM_EXT_DDL_H */
