/*-------------------------------------------------------------------------
 *
 * hostlist.h
 *	  Parsing and matching of host[:port] lists and patterns (hostlist.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_HOSTLIST_H
#define STREAM_EXT_KAFKA_HOSTLIST_H

#include "nodes/pg_list.h"
#include "utils/guc.h"

extern const char *se_skip_space(const char *p);
extern bool se_split_host_ports(const char *list, bool pattern,
								List **hosts, List **ports);
extern bool se_host_matches(const char *host, int port, int default_port,
							const char *phost, int pport);

extern bool se_check_host_patterns(char **newval, void **extra, GucSource source);

#endif							/* STREAM_EXT_KAFKA_HOSTLIST_H */
