/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  Client of a Confluent-compatible schema registry, for the Kafka source
 *	  format "avro-confluent" (avro_decode.c): GET {url}/schemas/ids/{id}
 *	  over HTTP or HTTPS with libcurl, answering {"schema": "<schema JSON>"}.
 *
 * The registry URL is a network destination that a non-superuser chooses,
 * so it is held to the same rule as broker addresses:
 *
 *	- only http:// and https:// (CURLOPT_PROTOCOLS_STR), no user:password@
 *	  in the URL (credentials go in the options registry_user and
 *	  registry_password, which never appear in an error message), no query
 *	  or fragment;
 *	- no redirects at all, no proxy from the server's environment, a
 *	  connect and a total timeout, an answer of at most 4 MB;
 *	- the GUC stream_ext.allowed_registries (host[:port] patterns, like
 *	  stream_ext.allowed_brokers; empty: any) bounds where the sources of
 *	  non-superusers may connect.  It is checked at create_kafka_source and
 *	  again, as the source's owner, before every request a worker makes;
 *	- an error never quotes the registry's answer (a URL pointing at some
 *	  other HTTP service must not be a way to read it), only its status.
 *
 * Errors: a registry that cannot be reached, times out, or answers 5xx,
 * 408 or 429 is transient -- ERRCODE_CONNECTION_FAILURE (class 08), which
 * the source worker treats like a deadlock: the whole batch is retried
 * after a backoff, no message becomes a dead letter.  Any other failure
 * (404: an unknown schema id; another status; an answer that is not a
 * registry's) is about the message that named the id: an ordinary error,
 * so that message becomes a dead letter.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>

#include "common/jsonapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#include "kafka/hostlist.h"
#include "kafka/registry.h"

#define REGISTRY_MAX_ANSWER		(4 * 1024 * 1024)
#define REGISTRY_CONNECT_TIMEOUT_MS	3000

/* stream_ext.allowed_registries: host[:port] patterns; empty = any */
char	   *se_allowed_registries = NULL;

static CURL *registry_curl = NULL;

/* called from _PG_init (through kafka_source_init()) */
void
se_registry_init(void)
{
	DefineCustomStringVariable("stream_ext.allowed_registries",
							   "Schema registries that Kafka sources of non-superusers may fetch Avro schemas from.",
							   "Comma-separated host[:port] patterns (a host may be * or *.domain); empty: any registry.",
							   &se_allowed_registries,
							   "",
							   PGC_SUSET, GUC_LIST_INPUT,
							   se_check_host_patterns, NULL, NULL);
}

/* a CURLU part, strdup'd by libcurl (NULL if absent) */
static char *
url_part(CURLU *u, CURLUPart what)
{
	char	   *part = NULL;

	if (curl_url_get(u, what, &part, 0) != CURLUE_OK)
		return NULL;
	return part;
}

/*
 * Check a registry URL: syntax, scheme, no credentials, and for a
 * non-superuser role the allow-list (role InvalidOid: the syntax only).
 * ereports 22023 or 42501.
 */
void
se_registry_check_url(const char *url, Oid role)
{
	CURLU	   *u = curl_url();
	char	   *scheme = NULL,
			   *host = NULL,
			   *port = NULL,
			   *user = NULL,
			   *query = NULL,
			   *fragment = NULL;
	bool		ok;
	char	   *phost;
	int			nport;
	bool		https;

	if (u == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	ok = curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK;
	if (ok)
	{
		scheme = url_part(u, CURLUPART_SCHEME);
		host = url_part(u, CURLUPART_HOST);
		port = url_part(u, CURLUPART_PORT);
		user = url_part(u, CURLUPART_USER);
		query = url_part(u, CURLUPART_QUERY);
		fragment = url_part(u, CURLUPART_FRAGMENT);
	}
	/* copy out what we need, then free libcurl's strings before any ereport */
	https = scheme && pg_strcasecmp(scheme, "https") == 0;
	ok = ok && scheme && host && host[0] &&
		(https || pg_strcasecmp(scheme, "http") == 0) &&
		strncmp(url, scheme, strlen(scheme)) == 0;	/* no scheme guessing */
	phost = host ? pstrdup(host) : NULL;
	nport = port ? atoi(port) : 0;
	{
		bool		has_user = user != NULL;
		bool		has_extra = query != NULL || fragment != NULL;

		curl_free(scheme);
		curl_free(host);
		curl_free(port);
		curl_free(user);
		curl_free(query);
		curl_free(fragment);
		curl_url_cleanup(u);

		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid schema registry URL"),
					 errdetail("The URL must be http://host[:port][/path] or https://host[:port][/path]."),
					 errhint("Option \"schema_registry\", e.g. \"http://registry:8081\".")));
		if (has_user)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schema registry URL must not contain credentials"),
					 errhint("Give them in the options \"registry_user\" and \"registry_password\".")));
		if (has_extra)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schema registry URL must not have a query or fragment")));
	}

	if (OidIsValid(role) &&
		se_allowed_registries != NULL && *se_skip_space(se_allowed_registries) != '\0' &&
		!superuser_arg(role))
	{
		List	   *phosts,
				   *pports;
		ListCell   *ph,
				   *pp;
		char	   *bare = phost;
		size_t		len = strlen(phost);

		/* libcurl gives IPv6 hosts in brackets; patterns hold them bare */
		if (len > 2 && phost[0] == '[' && phost[len - 1] == ']')
			bare = pnstrdup(phost + 1, len - 2);
		if (!se_split_host_ports(se_allowed_registries, true, &phosts, &pports))
			elog(ERROR, "invalid stream_ext.allowed_registries");	/* check hook */
		forboth(ph, phosts, pp, pports)
			if (se_host_matches(bare, nport, https ? 443 : 80, lfirst(ph), lfirst_int(pp)))
				return;
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to connect to schema registry \"%s\"", bare),
				 errdetail("stream_ext.allowed_registries does not list it: role \"%s\" may connect only to the registries listed there, as it is not a superuser.",
						   GetUserNameFromId(role, false)),
				 errhint("A superuser can add it to stream_ext.allowed_registries.")));
	}
}

/* libcurl write callback: append to a StringInfo, at most REGISTRY_MAX_ANSWER */
static size_t
registry_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	StringInfo	buf = (StringInfo) userdata;
	size_t		n = size * nmemb;

	if (buf->len + n > REGISTRY_MAX_ANSWER)
		return 0;				/* aborts the transfer: CURLE_WRITE_ERROR */
	appendBinaryStringInfo(buf, ptr, (int) n);
	return n;
}

/* libcurl progress callback: give up when the backend is told to stop */
static int
registry_progress(void *clientp, curl_off_t dltotal, curl_off_t dlnow,
				  curl_off_t ultotal, curl_off_t ulnow)
{
	return InterruptPending ? 1 : 0;
}

static void
registry_transient(const char *what, int32 id)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("schema registry unavailable fetching schema id %d: %s", id, what),
			 errdetail("The batch is retried until the registry answers.")));
}

/*
 * Fetch the schema JSON of schema id from the registry (palloc'd).
 * ereports as the header comment says.  role: the source's owner, whose
 * right to connect is checked first.
 */
char *
se_registry_fetch_schema(const SeRegistryConf *conf, int32 id, Oid role)
{
	StringInfoData url;
	StringInfoData body;
	CURLcode	rc;
	long		status = 0;
	char		errbuf[CURL_ERROR_SIZE];
	size_t		ulen = strlen(conf->url);
	Jsonb	   *jb;
	JsonbValue	v;

	se_registry_check_url(conf->url, role);

	if (registry_curl == NULL)
	{
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
			(registry_curl = curl_easy_init()) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not initialize libcurl")));
	}
	else
		curl_easy_reset(registry_curl);

	initStringInfo(&url);
	appendStringInfoString(&url, conf->url);
	if (ulen > 0 && conf->url[ulen - 1] == '/')
		url.len--, url.data[url.len] = '\0';
	appendStringInfo(&url, "/schemas/ids/%d", id);
	initStringInfo(&body);
	errbuf[0] = '\0';

	curl_easy_setopt(registry_curl, CURLOPT_URL, url.data);
	curl_easy_setopt(registry_curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(registry_curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(registry_curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(registry_curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(registry_curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(registry_curl, CURLOPT_CONNECTTIMEOUT_MS,
					 (long) Min(conf->timeout_ms, REGISTRY_CONNECT_TIMEOUT_MS));
	curl_easy_setopt(registry_curl, CURLOPT_TIMEOUT_MS, (long) conf->timeout_ms);
	curl_easy_setopt(registry_curl, CURLOPT_WRITEFUNCTION, registry_write);
	curl_easy_setopt(registry_curl, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(registry_curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(registry_curl, CURLOPT_XFERINFOFUNCTION, registry_progress);
	curl_easy_setopt(registry_curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(registry_curl, CURLOPT_USERAGENT, "stream_ext");
	if (conf->user)
	{
		curl_easy_setopt(registry_curl, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
		curl_easy_setopt(registry_curl, CURLOPT_USERNAME, conf->user);
		curl_easy_setopt(registry_curl, CURLOPT_PASSWORD,
						 conf->password ? conf->password : "");
	}

	rc = curl_easy_perform(registry_curl);
	/* the password stays in libcurl's handle no longer than the request */
	curl_easy_setopt(registry_curl, CURLOPT_USERNAME, NULL);
	curl_easy_setopt(registry_curl, CURLOPT_PASSWORD, NULL);
	CHECK_FOR_INTERRUPTS();

	if (rc == CURLE_WRITE_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("schema registry answer for schema id %d exceeds %d bytes",
						id, REGISTRY_MAX_ANSWER)));
	if (rc != CURLE_OK)
		/* errbuf names the host and the failure, never the credentials */
		registry_transient(errbuf[0] ? errbuf : curl_easy_strerror(rc), id);

	curl_easy_getinfo(registry_curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 500 || status == 408 || status == 429)
		registry_transient(psprintf("HTTP status %ld", status), id);
	if (status == 404)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("schema id %d is not in the schema registry", id),
				 errdetail("The registry answered HTTP status 404.")));
	if (status != 200)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("schema registry refused schema id %d: HTTP status %ld", id, status),
				 status == 401 || status == 403 ?
				 errhint("Check the options \"registry_user\" and \"registry_password\".") : 0));

	/* {"schema": "...", "schemaType": "AVRO" (absent for Avro)} */
	jb = NULL;
	if (body.len > 0 && body.data[0] == '{' &&
		pg_verify_mbstr(GetDatabaseEncoding(), body.data, body.len, true))
	{
		JsonLexContext *lex = makeJsonLexContextCstringLen(body.data, body.len,
															 GetDatabaseEncoding(), true);

		/* parse first without throwing: an answer that is not JSON is not quoted */
		if (pg_parse_json(lex, &nullSemAction) == JSON_SUCCESS)
			jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(body.data)));
	}
	if (jb != NULL && JB_ROOT_IS_OBJECT(jb) &&
		getKeyJsonValueFromContainer(&jb->root, "schemaType", 10, &v) &&
		!(v.type == jbvString && v.val.string.len == 4 &&
		  strncmp(v.val.string.val, "AVRO", 4) == 0))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("schema id %d in the schema registry is not an Avro schema", id)));
	if (jb == NULL || !JB_ROOT_IS_OBJECT(jb) ||
		!getKeyJsonValueFromContainer(&jb->root, "schema", 6, &v) ||
		v.type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("schema registry answer for schema id %d has no \"schema\" string", id)));
	return pnstrdup(v.val.string.val, v.val.string.len);
}
