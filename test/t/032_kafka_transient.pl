# Transient errors in a Kafka source's batch (issue #14, item 5): a lock
# timeout or a deadlock is never a message's fault.  The batch is rolled
# back and applied again, whole, after a backoff; only messages that are
# bad themselves become dead letters.
#
# A source with two workers over four partitions, owned by a role whose
# sessions have lock_timeout = 100ms, feeds a continuous view.
#
# 1. Lock timeout (55P03): a client holds a SHARE lock on the view's
#    materialization table while messages arrive, so each attempt of the
#    workers' batches times out.  Mixed in: one message the stream refuses
#    (CHECK) and one that does not decode.  After the client commits, every
#    valid message is in the view exactly once and only the two bad ones are
#    dead letters, each with its reason (before the fix, the row-by-row
#    retry timed out on every row and dead-lettered them all).
# 2. Deadlock (40P01): with lock_timeout off, the client holds the
#    materialization table, waits until a worker's batch waits for it, and
#    then asks for the stream the worker has inserted into: the worker is
#    the deadlock victim (the client's deadlock_timeout is far longer).  The
#    whole batch is retried and applied once; the retries are logged.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;

skip_unless_kafka();

my $NPART = 4;
my $broker = start_broker('--partitions', $NPART, '--topic', 'ev');
my $bootstrap = $broker->bootstrap;
my $node = stream_ext_node(
	'transient',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);

sub sql { $node->safe_psql('postgres', $_[0]) }
my $status_sql = 'SELECT * FROM stream_ext.source_status';
sub wait_for { poll_ok($node, @_, $status_sql) }

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int CHECK (v >= 0), p int, o bigint');
CREATE VIEW ev_by_part WITH (continuous) AS
  SELECT p, count(*) AS n, max(o) AS last FROM ev GROUP BY p;
CREATE ROLE ingest LOGIN;
GRANT INSERT, SELECT ON ev TO ingest;
ALTER ROLE ingest SET lock_timeout = '100ms';
});
# the table the view's batches write: its delta (the view appends,
# docs/internals.md, "Append mode")
my $matrel = sql(q{SELECT coalesce(delta, matrel) FROM stream_ext.view_catalog WHERE view = 'ev_by_part'::regclass});
sql(q{SET ROLE ingest; SELECT stream_ext.create_kafka_source('ev_src', 'ev', '} . $bootstrap . q{', 'ev', 'csv',
      '{"columns": ["k", "v"], "partition_column": "p", "offset_column": "o",
        "batch_size": 50, "workers": 2}')});

# what was produced to each partition, and what the view must hold
my @produced = (0) x $NPART;
my @good = (0) x $NPART;
my @last_good = (-1) x $NPART;

# $bad{offset} = payload, for messages of partition $p
sub produce
{
	my ($p, $count, %bad) = @_;
	my @lines;
	for my $i (0 .. $count - 1)
	{
		my $off = $produced[$p] + $i;
		if (exists $bad{$i})
		{
			push @lines, $bad{$i};
			next;
		}
		push @lines, ($off % 7) . ",$off";
		$good[$p]++;
		$last_good[$p] = $off;
	}
	$broker->produce('ev', \@lines, $p);
	$produced[$p] += $count;
}

sub view_ok
{
	my ($name) = @_;
	my @want = map { "$_:$good[$_]:$last_good[$_]" } 0 .. $NPART - 1;
	is(sql(q{SELECT string_agg(format('%s:%s:%s', p, n, last), ',' ORDER BY p) FROM ev_by_part}),
		join(',', @want), $name);
}

my $waiting_sql = q{SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
  WHERE NOT l.granted AND a.backend_type = 'stream_ext kafka worker'};

# ---- 1. lock timeouts ------------------------------------------------------
sql(q{SELECT stream_ext.start_source('ev_src')});
wait_for(q{SELECT workers FROM stream_ext.source_status}, '2', 'two workers run');

my $bg = $node->background_psql('postgres');
$bg->query_safe("BEGIN; LOCK TABLE $matrel IN SHARE MODE");
produce(0, 50);
produce(1, 50, 20 => '3,-1', 30 => '3,abc');
produce(2, 50);
produce(3, 50);
wait_for(q{SELECT count(*) FROM stream_ext.source_status WHERE last_error LIKE '%lock timeout%'},
	'1', 'the batches time out waiting for the lock');
sleep 1;
is(sql(total_stored('ev_src')), '0', 'nothing is stored while the lock is held');
$bg->query_safe('COMMIT');

wait_for(total_stored('ev_src'), '200', 'every message is consumed after the lock goes');
is( sql(q{SELECT string_agg(format('%s:%s:%s', partition, "offset", error), E'\n' ORDER BY partition, "offset")
          FROM stream_ext.dead_letters}),
	qq{1:20:new row for relation "ev" violates check constraint "ev_v_check"\n}
	  . qq{1:30:invalid input syntax for type integer: "abc"},
	'only the two bad messages are dead letters, each with its reason');
view_ok('every valid message is in the view exactly once');
offsets_ok($node, 'ev_src', \@produced, 'stored offsets: every message consumed once');
ok($node->log_contains(qr/Kafka source "ev_src" worker \d: retrying a batch of \d+ messages .*lock timeout/),
	'the retries are logged');
is(sql(q{SELECT state FROM stream_ext.source_status}), 'running', 'the source runs again');

# ---- 2. a deadlock ---------------------------------------------------------
# lock_timeout off; the worker's deadlock check after 1 s (the default), the
# client's after 60 s: the worker is the victim
sql(q{ALTER ROLE ingest RESET lock_timeout; SELECT stream_ext.stop_source('ev_src')});
wait_for(q{SELECT workers FROM stream_ext.source_status}, '0', 'stopped');
sql(q{SELECT stream_ext.start_source('ev_src')});
wait_for(q{SELECT workers FROM stream_ext.source_status}, '2', 'started again without lock_timeout');
my $log_offset = -s $node->logfile;

$bg->query_safe("BEGIN; SET LOCAL deadlock_timeout = '60s'; LOCK TABLE $matrel IN SHARE MODE");
produce(0, 30);
wait_for($waiting_sql, '1', "a worker's batch waits for the client's lock");
# the worker holds the stream: the client now waits for it, a deadlock
$bg->query_until(qr/locked/, "LOCK TABLE ev IN SHARE MODE; SELECT 'locked';\n");
pass('the worker was the deadlock victim: the client got the stream');
$bg->query_safe('COMMIT');
$bg->quit;

wait_for(total_stored('ev_src'), '230', 'the batch is applied after the deadlock');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters}), '2', 'no new dead letters');
view_ok('the view counts every message of the deadlocked batch once');
offsets_ok($node, 'ev_src', \@produced, 'stored offsets after the deadlock');
ok($node->log_contains(qr/Kafka source "ev_src" worker 0: retrying a batch of 30 messages .*deadlock detected/,
		$log_offset),
	'the deadlock retry is logged');

$node->stop;
$broker->stop;
done_testing();
