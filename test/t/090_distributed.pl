# Scale-out (docs/scale-out.md): three PostgreSQL nodes each consume their
# share of a 6-partition topic ("node"/"nodes"); a coordinator (node 0)
# reads one exact view over all three through postgres_fdw
# (create_distributed_view).  Then node 2 is stopped mid-ingest and its
# partitions are moved to node 1 by the documented procedure (stop_source,
# wait for its workers, read its offsets, start_offsets on node 1): the
# combined view equals the oracle over every message, nothing lost or twice.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '6', '--topic', 'ev');
my $bootstrap = $broker->bootstrap;

my @nodes = map {
	stream_ext_node("n$_", max_worker_processes => 16,
		'stream_ext.kafka_launcher_naptime' => 2)
} 0 .. 2;
my $coord = $nodes[0];

my $view_sql = q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int');
CREATE VIEW ev_by_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS mx
    FROM ev GROUP BY k;
};
for my $i (0 .. 2)
{
	$nodes[$i]->safe_psql('postgres', $view_sql
		  . qq{SELECT stream_ext.start_source(stream_ext.create_kafka_source('ev_src', 'ev',
               '$bootstrap', 'ev', 'json', '{"node": $i, "nodes": 3, "batch_size": 500}'));});
}

# the coordinator: a foreign server per node, and the distributed view
$coord->safe_psql('postgres', 'CREATE EXTENSION postgres_fdw');
for my $i (0 .. 2)
{
	my $port = $nodes[$i]->port;
	my $host = $nodes[$i]->host;
	$coord->safe_psql('postgres', qq{
CREATE SERVER node$i FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$host', port '$port', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER node$i;});
}
$coord->safe_psql('postgres', q{
SELECT stream_ext.create_distributed_view('ev_all', 'ev_by_k', ARRAY['node0', 'node1', 'node2']);});
create_sqlstate_of($coord);

# messages: i -> {"k": i mod 40, "v": i mod 997}, round robin over 6 partitions
my (%n, %s, %mx);
my @produced = (0) x 6;
my $next = 1;

sub produce_batch
{
	my ($count, $background) = @_;
	my @parts = map { [] } 0 .. 5;
	for (1 .. $count)
	{
		my ($i, $k, $v) = ($next, $next % 40, $next % 997);
		$next++;
		push @{ $parts[ $i % 6 ] }, qq({"k":$k,"v":$v});
		$n{$k}++;
		$s{$k} += $v;
		$mx{$k} = $v if !defined $mx{$k} || $v > $mx{$k};
	}
	$produced[$_] += scalar @{ $parts[$_] } for 0 .. 5;
	return map {
		$broker->produce_start('ev', $parts[$_], $_,
			"${PostgreSQL::Test::Utils::tmp_check}/ev_${next}_$_.txt")
	} 0 .. 5 if $background;
	$broker->produce('ev', $parts[$_], $_) for 0 .. 5;
	return;
}

sub oracle
{
	return join("\n",
		map { sprintf('%d|%d|%d|%d', $_, $n{$_}, $s{$_}, $mx{$_}) } sort { $a <=> $b } keys %n);
}
my $read = 'SELECT k, n, s, mx FROM ev_all ORDER BY k';

sub stored { my ($node) = @_; return $node->safe_psql('postgres', total_stored('ev_src')) }

# ---- phase 1: every node consumes its share ------------------------------
produce_batch(12000);
ok( $coord->poll_query_until('postgres', q{SELECT coalesce(sum(n), 0) = 12000 FROM ev_all}),
	'the nodes consumed every message');
is($coord->safe_psql('postgres', $read), oracle(), 'coordinator view equals the oracle');
for my $i (0 .. 2)
{
	is(stored($nodes[$i]), $produced[$i] + $produced[ $i + 3 ],
		"node $i consumed exactly its share (partitions $i and " . ($i + 3) . ')');
}
is( $coord->safe_psql('postgres',
		q{SELECT round(a, 6) = round(s::numeric / n, 6) FROM ev_all WHERE k = 7}),
	't', 'avg() combined from states, not averaged averages');
like(
	$coord->safe_psql('postgres', q{EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM ev_all WHERE k = 7}),
	qr/Remote SQL: .*WHERE \(\(k = 7\)\)/,
	'a filter on the group key is pushed down to the nodes');

# ---- phase 2: node 2 stops mid-ingest, its partitions move to node 1 -----
my $share2_before = $produced[2] + $produced[5];
my @h = produce_batch(12000, 1);
ok( $nodes[2]->poll_query_until('postgres',
		'SELECT (' . total_stored('ev_src') . ') > ' . ($share2_before + 500)),
	'node 2 is ingesting the second batch');
# the move procedure (docs/scale-out.md): stop, wait for the workers, read
$nodes[2]->safe_psql('postgres', q{SELECT stream_ext.stop_source('ev_src')});
ok( $nodes[2]->poll_query_until('postgres',
		q{SELECT workers = 0 FROM stream_ext.source_status WHERE source = 'ev_src'}),
	'node 2: its workers exited after stop_source');
my $offsets = $nodes[2]->safe_psql('postgres', q{SELECT stream_ext.source_offsets('ev_src')});
my $stored2 = stored($nodes[2]);
$nodes[2]->stop('fast');
$broker->produce_finish(@h);
# more messages after the move: the moved partitions surely continue on node 1
produce_batch(6000);
cmp_ok($stored2, '<', $produced[2] + $produced[5],
	"node 2 stopped mid-ingest (stored $stored2 of " . ($produced[2] + $produced[5]) . ')');
$nodes[1]->safe_psql('postgres', qq{
SELECT stream_ext.start_source(stream_ext.create_kafka_source('ev_from_n2', 'ev', '$bootstrap', 'ev',
         'json', jsonb_build_object('partitions', '2,5', 'batch_size', 500, 'start_offsets', '$offsets'::jsonb)));});

ok( $nodes[1]->poll_query_until('postgres',
		'SELECT (' . total_stored('ev_src') . ') + (' . total_stored('ev_from_n2') . ') = '
		  . ($produced[1] + $produced[4] + $produced[2] + $produced[5])),
	'node 1 consumed its own share and the moved one to the end');
is( $nodes[1]->safe_psql('postgres',
		q{SELECT string_agg(format('%s:%s', partition, next_offset), ',' ORDER BY partition)
            FROM stream_ext.kafka_offsets WHERE source = 'ev_from_n2'}),
	"2:$produced[2],5:$produced[5]", 'the moved partitions end where the topic ends');
is($coord->safe_psql('postgres', "SELECT sqlstate_of('$read')"),
	'08001', 'a node that is down makes the view fail, not return a smaller result');

$nodes[2]->start;
is($coord->safe_psql('postgres', $read), oracle(),
	'after the move: coordinator view equals the oracle over all 30000 messages');
is($coord->safe_psql('postgres', 'SELECT sum(n) FROM ev_all'), '30000', 'nothing lost, nothing twice');
is($nodes[2]->safe_psql('postgres', q{SELECT state FROM stream_ext.kafka_sources WHERE name = 'ev_src'}),
	'stopped', 'the old owner stays stopped after its restart');

# refusals
is( $coord->safe_psql('postgres', q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_source('bad', 'ev', 'x:1', 'ev', 'json', '{"partitions": "0-1", "start_offsets": {"4": 10}}')$$)}),
	'22023', 'start_offsets outside the share is refused');
$coord->safe_psql('postgres', q{CREATE VIEW ev_d WITH (continuous) AS SELECT k, count(DISTINCT v) AS d FROM ev GROUP BY k});
is( $coord->safe_psql('postgres', q{SELECT sqlstate_of($$SELECT stream_ext.create_distributed_view('ev_d_all', 'ev_d', ARRAY['node0'])$$)}),
	'0A000', 'count(DISTINCT) across nodes is refused');

$_->stop for @nodes;
done_testing();
