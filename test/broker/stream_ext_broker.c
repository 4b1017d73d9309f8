/*
 * stream_ext_broker.c
 *	  Embedded Kafka broker for stream_ext's tests, demo and benchmarks.
 *
 * Built on librdkafka's mock cluster (rdkafka_mock.h): it speaks the Kafka
 * protocol on loopback, so kcat and stream_ext's consumers can use it like
 * a real broker.  It creates the requested topics, prints one line
 *
 *     bootstrap=127.0.0.1:PORT[,127.0.0.1:PORT...]
 *
 * on stdout, and serves until it receives SIGINT or SIGTERM.
 *
 * Outages: SIGUSR1 takes every broker down (open connections are closed
 * and new ones are refused, as when a broker stops) and SIGUSR2 brings
 * them up again, on the same ports and with every topic, message and
 * offset kept (a restart of the program would lose them: the mock cluster
 * lives in memory).  Each transition prints "down" or "up" on stdout.
 *
 * Usage: stream_ext_broker [--brokers N] [--partitions N] [--topic T]...
 *                          [--missing-topic T]... [--bootstrap-file PATH]
 *
 * --topic may be repeated; --partitions applies to the topics that follow
 * it (and is also the partition count of auto-created topics' default).
 * --missing-topic T makes metadata requests for T answer "unknown topic"
 * (the mock cluster otherwise auto-creates every topic asked for), so tests
 * can exercise a missing topic.  With --bootstrap-file the bootstrap line is also written to PATH
 * (atomically) so scripts can wait for it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static volatile sig_atomic_t stop_requested = 0;
static volatile sig_atomic_t down_requested = 0;
static volatile sig_atomic_t up_requested = 0;

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		down_requested = 1;
	else if (sig == SIGUSR2)
		up_requested = 1;
	else
		stop_requested = 1;
}

static void
usage(const char *prog)
{
	fprintf(stderr,
			"usage: %s [--brokers N] [--partitions N] [--topic NAME]... "
			"[--missing-topic NAME]... [--bootstrap-file PATH]\n", prog);
	exit(2);
}

int
main(int argc, char **argv)
{
	char		errstr[512];
	int			brokers = 1;
	int			partitions = 1;
	const char *bootstrap_file = NULL;
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	rd_kafka_mock_cluster_t *mc;
	const char *bootstraps;
	int			i;

	/* first pass: --brokers must be known before the cluster exists */
	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--brokers") == 0 && i + 1 < argc)
			brokers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			usage(argv[0]);
	}
	if (brokers < 1)
		usage(argv[0]);

	conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
		fprintf(stderr, "warning: %s\n", errstr);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk)
	{
		fprintf(stderr, "stream_ext_broker: cannot create handle: %s\n", errstr);
		return 1;
	}

	mc = rd_kafka_mock_cluster_new(rk, brokers);
	if (!mc)
	{
		fprintf(stderr, "stream_ext_broker: cannot create mock cluster\n");
		return 1;
	}

	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--brokers") == 0 && i + 1 < argc)
			i++;
		else if (strcmp(argv[i], "--partitions") == 0 && i + 1 < argc)
		{
			partitions = atoi(argv[++i]);
			if (partitions < 1)
				usage(argv[0]);
		}
		else if (strcmp(argv[i], "--topic") == 0 && i + 1 < argc)
		{
			rd_kafka_resp_err_t err;

			err = rd_kafka_mock_topic_create(mc, argv[++i], partitions,
											 brokers < 3 ? brokers : 3);
			if (err)
			{
				fprintf(stderr, "stream_ext_broker: cannot create topic %s: %s\n",
						argv[i], rd_kafka_err2str(err));
				return 1;
			}
		}
		else if (strcmp(argv[i], "--missing-topic") == 0 && i + 1 < argc)
			rd_kafka_mock_topic_set_error(mc, argv[++i],
										  RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
		else if (strcmp(argv[i], "--bootstrap-file") == 0 && i + 1 < argc)
			bootstrap_file = argv[++i];
		else
			usage(argv[0]);
	}

	bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
	printf("bootstrap=%s\n", bootstraps);
	fflush(stdout);

	if (bootstrap_file)
	{
		char		tmp[4096];
		FILE	   *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", bootstrap_file);
		f = fopen(tmp, "w");
		if (!f || fprintf(f, "%s\n", bootstraps) < 0 || fclose(f) != 0 ||
			rename(tmp, bootstrap_file) != 0)
		{
			fprintf(stderr, "stream_ext_broker: cannot write %s: %s\n",
					bootstrap_file, strerror(errno));
			return 1;
		}
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGUSR1, on_signal);
	signal(SIGUSR2, on_signal);
	signal(SIGPIPE, SIG_IGN);

	while (!stop_requested)
	{
		rd_kafka_poll(rk, 100);
		if (down_requested)
		{
			down_requested = 0;
			rd_kafka_mock_broker_set_down(mc, -1);
			printf("down\n");
			fflush(stdout);
		}
		if (up_requested)
		{
			up_requested = 0;
			rd_kafka_mock_broker_set_up(mc, -1);
			printf("up\n");
			fflush(stdout);
		}
	}

	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}
