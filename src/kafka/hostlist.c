/*-------------------------------------------------------------------------
 *
 * hostlist.c
 *	  Lists of "host[:port]" and of host patterns: the brokers argument of
 *	  sources and sinks, and the allow-lists stream_ext.allowed_brokers
 *	  (common.c) and stream_ext.allowed_registries (registry.c) that bound
 *	  where the workers of non-superusers may connect.
 *
 * A pattern's host may be "*" (any host) or "*.domain" (any host in the
 * domain); a pattern without a port matches any port.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "nodes/pg_list.h"
#include "utils/guc.h"

#include "kafka/hostlist.h"

/* skip blanks */
const char *
se_skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/*
 * Parse one "[scheme://]host[:port]" (a broker) or "host[:port]" pattern
 * (of stream_ext.allowed_brokers, where host may also be "*" or
 * "*.domain") from *p up to a comma or the end.  Returns false if it is
 * malformed; else the host (palloc'd, without IPv6 brackets) and the port
 * (0: none given), and *p after it.
 */
static bool
parse_host_port(const char **p, bool pattern, char **host, int *port)
{
	const char *s = se_skip_space(*p);
	const char *h;
	size_t		hlen;

	*port = 0;
	if (!pattern)
	{
		/* an optional protocol prefix such as SASL_SSL:// */
		const char *q = s;

		while (isalnum((unsigned char) *q) || *q == '_')
			q++;
		if (q > s && strncmp(q, "://", 3) == 0)
			s = q + 3;
	}
	if (*s == '[')
	{
		h = ++s;
		while (isxdigit((unsigned char) *s) || *s == ':' || *s == '.')
			s++;
		if (*s != ']' || s == h)
			return false;
		hlen = s - h;
		s++;
	}
	else
	{
		h = s;
		if (pattern && *s == '*')
		{
			s++;
			if (*s == '.')
				s++;
			else if (*s != ':' && *s != ',' && *s != '\0' && *s != ' ')
				return false;
		}
		while (isalnum((unsigned char) *s) || *s == '.' || *s == '-' || *s == '_')
			s++;
		hlen = s - h;
		if (hlen == 0 || h[hlen - 1] == '.')
			return false;
	}
	if (*s == ':')
	{
		long		n = 0;
		const char *d = ++s;

		while (isdigit((unsigned char) *s) && s - d < 6)
			n = n * 10 + (*s++ - '0');
		if (s == d || n < 1 || n > 65535)
			return false;
		*port = (int) n;
	}
	s = se_skip_space(s);
	if (*s != ',' && *s != '\0')
		return false;
	*host = pnstrdup(h, hlen);
	*p = s;
	return true;
}

/*
 * Split a comma-separated list of brokers (pattern false) or of
 * allowed_brokers patterns into hosts and ports; false if malformed.
 */
bool
se_split_host_ports(const char *list, bool pattern, List **hosts, List **ports)
{
	const char *p = list;

	*hosts = NIL;
	*ports = NIL;
	for (;;)
	{
		char	   *host;
		int			port;

		if (!parse_host_port(&p, pattern, &host, &port))
			return false;
		*hosts = lappend(*hosts, host);
		*ports = lappend_int(*ports, port);
		if (*p == '\0')
			return true;
		p++;					/* the comma */
	}
}


/*
 * Does host:port (port 0: the default, default_port) match pattern
 * phost:pport (pport 0: any port)?
 */
bool
se_host_matches(const char *host, int port, int default_port,
				const char *phost, int pport)
{
	if (pport != 0 && pport != (port == 0 ? default_port : port))
		return false;
	if (strcmp(phost, "*") == 0)
		return true;
	if (strncmp(phost, "*.", 2) == 0)
	{
		size_t		hl = strlen(host);
		size_t		sl = strlen(phost + 1);	/* ".domain" */

		return hl > sl && pg_strcasecmp(host + hl - sl, phost + 1) == 0;
	}
	return pg_strcasecmp(host, phost) == 0;
}


/* GUC check hook of a list of host[:port] patterns (the allow-lists) */
bool
se_check_host_patterns(char **newval, void **extra, GucSource source)
{
	List	   *hosts;
	List	   *ports;

	if (*newval == NULL || (*se_skip_space(*newval)) == '\0')
		return true;
	if (!se_split_host_ports(*newval, true, &hosts, &ports))
	{
		GUC_check_errdetail("List host[:port] patterns separated by commas; a host may be \"*\" or begin with \"*.\".");
		return false;
	}
	list_free_deep(hosts);
	list_free(ports);
	return true;
}
