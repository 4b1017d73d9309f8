/*-------------------------------------------------------------------------
 *
 * read_order.h
 *	  Reads of appending views in the reader's order (query/read_order.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_QUERY_READ_ORDER_H
#define STREAM_EXT_QUERY_READ_ORDER_H

extern void read_order_init(void);

#endif							/* STREAM_EXT_QUERY_READ_ORDER_H */
