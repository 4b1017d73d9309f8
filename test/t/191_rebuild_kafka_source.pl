# A rebuild beside a continuous view (CREATE OR REPLACE with backfill =
# 'stream', docs/continuous-views.md#changing-a-view) while a Kafka source
# goes on loading the stream: the source is not held by the backfill (its
# batches commit while the rebuild runs), the old view stays exact until
# the swap, and once swapped in the view equals its new query over every
# message of the topic -- none missed, none counted twice across the
# hand-over or the swap.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use StreamExtTAP;
use ReplayTAP;

skip_unless_kafka();
my $broker = start_broker('--partitions', '2', '--topic', 'ev');
my $bootstrap = $broker->bootstrap;
my $node = stream_ext_node('rebuild_kafka', max_worker_processes => 16,
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
SELECT stream_ext.create_stream('ev', 'k int, v int');
SELECT stream_ext.create_kafka_source('ev_src', 'ev', '$bootstrap', 'ev', 'json',
  '{"batch_size": 100, "max_wait_ms": 20}');
CREATE VIEW per_k WITH (continuous) AS SELECT k, count(*) AS n FROM ev GROUP BY k;
SELECT stream_ext.start_source('ev_src');
});
my $history = 30000;
$broker->produce('ev', replay_msgs(1, $history / 2), 0);
$broker->produce('ev', replay_msgs($history / 2 + 1, $history), 1);
wait_for(total_stored('ev_src'), $history, 'the source loaded the history');

# live messages while the view is rebuilt beside itself
my $total = 60000;
my $live = $broker->produce_start('ev', replay_msgs($history + 1, $total), 0,
	"$PostgreSQL::Test::Utils::tmp_check/live.txt");
sql(q{SET stream_ext.rebuild_batch_blocks = 1;
CREATE OR REPLACE VIEW per_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT v) AS nd FROM ev GROUP BY k;});

# while it runs: the source commits batches, the old view is exact
my ($first, $last, $exact, $samples) = (undef, undef, 1, 0);
my $deadline = time + 120;
while (time < $deadline)
{
	my ($state, $stored, $ok) = split(/\|/, sql(q{SELECT (SELECT state FROM stream_ext.rebuilds),
	  (SELECT sum(next_offset) FROM stream_ext.kafka_offsets),
	  (SELECT sum(n) FROM per_k) = (SELECT count(*) FROM ev)}));
	last if $state ne 'running';
	$first //= $stored;
	$last = $stored;
	$exact &&= ($ok eq 't');
	$samples++;
	sleep(0.05);
}
note("$samples samples during the backfill, the source stored $first -> $last");
ok($samples > 0 && $last > $first, 'the source went on loading during the backfill')
  or diag("the backfill finished before it could be observed ($samples samples)");
ok($exact, 'the old view stayed exact during the rebuild');

$broker->produce_finish($live);
wait_for(total_stored('ev_src'), $total, 'the source loaded the live messages');
is(sql(q{SELECT stream_ext.wait_backfill('per_k', '5 minutes')}), 'done', 'the rebuild was swapped in');
is(sql('SELECT k, n, s, nd FROM per_k ORDER BY k'), replay_expected(1, $total),
	'the view equals its new query over every message of the topic');
is(sql(qq{SELECT rows_done BETWEEN $history AND $total FROM stream_ext.backfill_progress WHERE kind = 'rebuild'}), 't',
	'the backfill read the history, the rows after the hand-over came live');
$broker->produce('ev', replay_msgs($total + 1, $total + 500), 1);
wait_for(total_stored('ev_src'), $total + 500, 'more live messages loaded');
is(sql('SELECT k, n, s, nd FROM per_k ORDER BY k'), replay_expected(1, $total + 500),
	'after the swap the view is maintained alone, each batch once');

$node->stop;
$broker->stop;
done_testing();
