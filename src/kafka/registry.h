/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  Client of a Confluent-compatible schema registry (registry.c): the
 *	  writer schemas of format "avro-confluent", fetched by id over HTTP(S).
 *
 *-------------------------------------------------------------------------
 */
#ifndef STREAM_EXT_KAFKA_REGISTRY_H
#define STREAM_EXT_KAFKA_REGISTRY_H

/* where and how to ask (the source's options; strings owned by the caller) */
typedef struct SeRegistryConf
{
	const char *url;			/* http(s)://host[:port][/path], no userinfo */
	const char *user;			/* basic auth, or NULL */
	const char *password;
	int			timeout_ms;		/* whole request */
} SeRegistryConf;

extern char *se_allowed_registries;	/* GUC stream_ext.allowed_registries */

extern void se_registry_init(void);
extern void se_registry_check_url(const char *url, Oid role);
extern char *se_registry_fetch_schema(const SeRegistryConf *conf, int32 id,
									  Oid role);

#endif							/* STREAM_EXT_KAFKA_REGISTRY_H */
