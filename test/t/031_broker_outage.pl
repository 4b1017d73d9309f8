# Broker outage during Kafka ingest (issue #8): the embedded broker goes
# down mid-ingest (SIGUSR1: connections closed and refused, as when a
# broker stops; topics and messages are kept) for STREAM_EXT_OUTAGE_SECS
# seconds (default 15 under make test; the issue's full outage is
# STREAM_EXT_OUTAGE_SECS=60), then comes back (SIGUSR2).
#
# During the outage: source_status shows the source 'retrying' with the
# broker's error, the worker retries in place (the same pid the whole
# time, one worker, a bounded number of attempts: backoff, no crash loop)
# and the backlog waits on the broker.  After it: ingestion resumes by
# itself and every message is applied exactly once (views equal the
# oracle, stored offsets equal the produced count of every partition).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

skip_unless_kafka();

my $outage = $ENV{STREAM_EXT_OUTAGE_SECS} || 15;
my $NPART = 2;
my $t0 = time;
note("outage of $outage s (STREAM_EXT_OUTAGE_SECS)");

# ---- broker ---------------------------------------------------------------
my $broker = start_broker('--partitions', $NPART, '--topic', 'ev');
my $bootstrap = $broker->bootstrap;

# ---- messages and the oracle ----------------------------------------------
my $produced = 0;
my @part_count = (0) x $NPART;
my (%n, %s);

sub produce
{
	my ($count) = @_;
	my @lines = map { [] } 1 .. $NPART;
	for (1 .. $count)
	{
		my $i = ++$produced;
		my ($k, $v) = ($i % 20, $i % 100);
		push @{ $lines[ $i % $NPART ] }, "$k,$v";
		$n{$k}++;
		$s{$k} += $v;
	}
	for my $p (0 .. $NPART - 1)
	{
		$broker->produce('ev', $lines[$p], $p);
		$part_count[$p] += @{ $lines[$p] };
	}
}

# ---- cluster --------------------------------------------------------------
my $node = stream_ext_node(
	'outage',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);

sub sql { $node->safe_psql('postgres', $_[0]) }

# A small prefetch (64 kB) and small batches: the backlog stays on the
# broker, so the worker needs it to go on.  A statement trigger that sleeps
# 20 ms per batch holds the worker to about 10,000 messages/s, so that the
# broker reliably goes down mid-ingest (unthrottled, the worker can take
# all 100,000 before the signal).
sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int, p int, o bigint');
CREATE FUNCTION slow_batch() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN PERFORM pg_sleep(0.02); RETURN NULL; END $$;
CREATE TRIGGER slow_batch AFTER INSERT ON ev
  FOR EACH STATEMENT EXECUTE FUNCTION slow_batch();
CREATE VIEW ev_by_key WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
CREATE VIEW ev_by_part WITH (continuous) AS
  SELECT p, count(*) AS n, max(o) AS last FROM ev GROUP BY p;
});
sql(q{SELECT stream_ext.create_kafka_source('ev_src', 'ev', '} . $bootstrap . q{', 'ev', 'csv',
      '{"columns": ["k", "v"], "partition_column": "p", "offset_column": "o", "batch_size": 200,
        "queued.max.messages.kbytes": "64", "fetch.message.max.bytes": "8192"}')});
sql(q{SELECT stream_ext.start_source('ev_src')});

my $stored_sql = total_stored('ev_src');
my $status_sql = q{SELECT state, workers, last_error FROM stream_ext.source_status WHERE source = 'ev_src'};
my $worker_sql = q{SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'stream_ext kafka worker'};

# ---- mid-ingest, the broker goes down ----------------------------------------
produce(100000);
poll_ok($node, "SELECT ($stored_sql) >= 2000", 't', 'ingest is under way');
ok($broker->signal('USR1', 'down'), 'the broker goes down');
my $down_at = time;
my $stored_down = sql($stored_sql);
note("stored at the outage: $stored_down of $produced");
cmp_ok($stored_down, '<', $produced, 'the outage begins mid-ingest');
my $pid = sql($worker_sql);

poll_ok($node, "SELECT state FROM stream_ext.source_status WHERE source = 'ev_src'", 'retrying',
	'source_status shows the source retrying during the outage');
note('status during the outage: ' . sql($status_sql));
like(sql(q{SELECT last_error FROM stream_ext.source_status WHERE source = 'ev_src'}),
	qr/(?i)transport|connect|refused|metadata|down|timed out/, "and the broker's error");

# sample the workers until the outage is over
my ($samples, $bad_samples, $retrying_samples) = (0, 0, 0);
while (time < $down_at + $outage)
{
	my ($state, $workers) = split /\|/,
	  sql(q{SELECT state, workers FROM stream_ext.source_status WHERE source = 'ev_src'});
	$samples++;
	$bad_samples++ if sql($worker_sql) ne $pid || $workers ne '1';
	$retrying_samples++ if $state eq 'retrying';
	sleep 0.5;
}
my $stored_end = sql($stored_sql);
my $status_end = sql($status_sql);
ok($broker->signal('USR2', 'up'), "the broker comes back after $outage s");
my $up_at = time;
note("stored at the end of the outage: $stored_end of $produced; status: $status_end");

is($bad_samples, 0, "one worker, the same pid ($pid), all through the outage ($samples samples)");
cmp_ok($retrying_samples, '>=', $samples / 2, "state 'retrying' during the outage ($retrying_samples of $samples samples)");
cmp_ok($stored_end, '<', $produced, 'the backlog waits on the broker');

# the attempts during the outage (each failed one is a LOG line of the
# worker): some, but a bounded number (exponential backoff, no busy loop)
my $log = slurp_file($node->logfile);
my $attempts = () = $log =~ /ERROR:  cannot (?:get metadata|query offsets|create Kafka consumer)/g;
note("failed attempts logged: $attempts");
cmp_ok($attempts, '>=', 1, 'the worker retried');
cmp_ok($attempts, '<=', int($outage / 2) + 3, 'with backoff (a bounded number of attempts)');

# ---- after the outage ---------------------------------------------------------
poll_ok($node, $stored_sql, $produced, 'after the outage ingestion resumes by itself and stores every offset',
	$status_sql);
my $recovered = time - $up_at;
note(sprintf('caught up %.1f s after the broker came back', $recovered));
produce(5000);
poll_ok($node, $stored_sql, $produced, 'and goes on with new messages');
poll_ok($node, "SELECT state FROM stream_ext.source_status WHERE source = 'ev_src'", 'running',
	'the source is running again');
is(sql($worker_sql), $pid, 'still the same worker');
ok( sql(q{SELECT last_error_time < now() - interval '1 second' * }
		  . sprintf('%.0f', time - $up_at - 1)
		  . q{ FROM stream_ext.source_status WHERE source = 'ev_src'}),
	'source_status keeps the outage error and its time');

offsets_ok($node, 'ev_src', \@part_count, 'stored offsets = produced count of every partition');
partitions_ok($node, 'ev_by_part', \@part_count, 'each partition applied exactly once (0 lost, 0 duplicated)');
is(sql(q{SELECT string_agg(format('%s:%s:%s', k, n, s), ',' ORDER BY k) FROM ev_by_key}),
	join(',', map { "$_:$n{$_}:$s{$_}" } sort { $a <=> $b } keys %n),
	'the view equals the oracle over exactly the produced messages');
is(sql(q{SELECT count(*) FROM ev}), $produced, 'and so does the stream (no crash here)');
note(sprintf('total %.1f s', time - $t0));

$node->stop;
$broker->stop;
done_testing();
