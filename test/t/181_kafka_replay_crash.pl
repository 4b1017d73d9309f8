# Crashes in the middle of a Kafka replay (backfill = 'kafka',
# docs/kafka.md#replay): the replay stores its offsets in the transaction
# of each batch it folds into the view, so after kill -9 -- of the
# postmaster, or of the replay worker alone, which makes the postmaster
# reinitialize -- the worker the launcher starts again resumes exactly
# where the last committed batch ended.  The Kafka source goes on loading
# new messages meanwhile (crashing with it).  At every restart, in one
# snapshot, the view counts exactly the messages replayed plus those the
# source loaded since the hand-over; once the replay is done it equals its
# query over every message of the topic.  STREAM_EXT_REPLAY_CRASHES
# crashes (default 4); STREAM_EXT_CRASH_SEED also applies.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use StreamExtTAP;
use ReplayTAP;

skip_unless_kafka();
my $crashes = $ENV{STREAM_EXT_REPLAY_CRASHES} || 4;
my $seed = $ENV{STREAM_EXT_CRASH_SEED} || int(time * 1000) % 1000000;
srand($seed);
note("crashes $crashes, seed $seed");

my $broker = start_broker('--partitions', '2', '--topic', 'ev');
my $bootstrap = $broker->bootstrap;
my $node = stream_ext_node('replay_crash', max_worker_processes => 16,
	restart_after_crash => 'on',
	'stream_ext.kafka_launcher_naptime' => 1);
sub sql { return $node->safe_psql('postgres', $_[0]) }
sub wait_for
{
	my ($q, $want, $name) = @_;
	return poll_ok($node, $q, $want, $name,
		'SELECT * FROM stream_ext.backfill_progress; SELECT * FROM stream_ext.source_status');
}


sql(qq{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int', retain => false);
SELECT stream_ext.create_kafka_source('ev_src', 'ev', '$bootstrap', 'ev', 'json',
  '{"batch_size": 5, "max_wait_ms": 50}');
SELECT stream_ext.start_source('ev_src');
});
my $history = 30000;
$broker->produce('ev', replay_msgs(1, $history / 2), 0);
$broker->produce('ev', replay_msgs($history / 2 + 1, $history), 1);
wait_for(total_stored('ev_src'), $history, 'the source loaded the history');

sql(q{CREATE VIEW per_k WITH (continuous, backfill = 'kafka') AS
  SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT v) AS nd FROM ev GROUP BY k;});

# in one snapshot: the view's rows = replayed + loaded since the hand-over
my $invariant = q{SELECT (SELECT sum(n) FROM per_k)
  = (SELECT messages FROM stream_ext.backfills)
  + (SELECT sum(next_offset) FROM stream_ext.kafka_offsets)
  - (SELECT sum(end_offset) FROM stream_ext.backfill_offsets)};
my $replayed = q{SELECT messages FROM stream_ext.backfill_progress};

my $next = $history + 1;
for my $c (1 .. $crashes)
{
	# live messages, and a random moment in the replay's middle
	$broker->produce('ev', replay_msgs($next, $next + 499), $c % 2);
	$next += 500;
	# the c-th of $crashes equal slices of the history, at a random point in it
	my $slice = int($history * 0.9 / $crashes);
	my $target = ($c - 1) * $slice + int(rand($slice)) + 1;
	my $deadline = time + 60;
	my $at = 0;
	while (time < $deadline)
	{
		$at = sql($replayed);
		last if $at >= $target || $at >= $history;
		sleep(0.02);
	}
	if ($at >= $history)
	{
		note("crash $c: the replay finished before the crash");
		last;
	}
	if ($c % 2)
	{
		my ($linger, @left) = kill9_postmaster($node);
		ok(!@left, "crash $c: kill -9 of the postmaster after $at replayed messages");
		$node->start;
	}
	else
	{
		my $pid = sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext kafka replay'});
		$at = sql($replayed);
		my $offset = -s $node->logfile;
		ok($pid && kill('KILL', $pid), "crash $c: kill -9 of the replay worker after $at replayed messages");
		$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
		wait_for('SELECT 1', '1', "crash $c: the server is back");
	}
	is(sql($invariant), 't', "crash $c: the view counts each replayed and each loaded message once");
	my $after = sql($replayed);
	cmp_ok($after, '>=', $at, "crash $c: no committed batch of the replay lost ($at -> $after)");
}

$broker->produce('ev', replay_msgs($next, $next + 999), 0);
$next += 1000;
wait_for(total_stored('ev_src'), $next - 1, 'the source loaded every live message');
wait_for(q{SELECT state FROM stream_ext.backfill_progress}, 'done', 'the replay finished after the crashes');
is(sql(q{SELECT format('%s %s', messages, offsets_done) FROM stream_ext.backfill_progress}),
	"$history $history", 'every message up to the hand-over replayed once');
is(sql('SELECT k, n, s, nd FROM per_k ORDER BY k'), replay_expected(1, $next - 1),
	'the view equals its query over every message of the topic');

$node->stop;
done_testing();
