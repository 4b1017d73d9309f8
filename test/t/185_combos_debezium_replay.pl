# backfill = 'kafka' of a view over a changelog stream fed by a
# debezium-json source (docs/changelog.md, docs/continuous-views.md#backfill):
# the replay decodes the envelopes into signed rows as the live source does
# -- an update is a retraction and an insert, a tombstone nothing -- so once
# the replay is done the view equals its query over the table's final rows.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use StreamExtTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'cdc');
my $node = stream_ext_node('combos_dbz_replay', max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);
sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for
{
	my ($q, $want, $name) = @_;
	return poll_ok($node, $q, $want, $name,
		'SELECT * FROM stream_ext.backfill_progress; SELECT * FROM stream_ext.source_status');
}

my $json = JSON::PP->new->canonical;
my (%table, @msgs);
for my $i (1 .. 300)
{
	$table{$i} = { id => $i, k => $i % 5, v => $i };
	push @msgs, $json->encode({ op => 'c', before => undef, after => { %{ $table{$i} } } });
}
for my $i (1 .. 100)    # updates, moving every row to another group
{
	my $new = { id => $i, k => ($i + 1) % 5, v => $i + 1000 };
	push @msgs, $json->encode({ op => 'u', before => { %{ $table{$i} } }, after => $new });
	$table{$i} = $new;
}
for my $i (101 .. 160)    # deletes, each followed by its tombstone; group 0 loses most rows
{
	push @msgs, $json->encode({ op => 'd', before => { %{ $table{$i} } }, after => undef }), undef;
	delete $table{$i};
}
my (%n, %s);
for my $r (values %table) { $n{ $r->{k} }++; $s{ $r->{k} } += $r->{v}; }
my $expected = join("\n", map { "$_|$n{$_}|$s{$_}" } sort { $a <=> $b } keys %n);

sql(qq{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('inv', 'id int, k int, v int', retain => false, changelog => true);
SELECT stream_ext.start_source(stream_ext.create_kafka_source('cdc_src', 'inv',
  '${\ $broker->bootstrap}', 'cdc', 'debezium-json', '{"batch_size": 50, "max_wait_ms": 100}'));
});
$broker->produce_keyed('cdc', \@msgs, 0);
wait_for(total_stored('cdc_src'), scalar(@msgs), 'the source consumed every message');
is(sql('SELECT count(*) FROM inv'), '0', 'the stream keeps none of it');

sql(q{CREATE VIEW by_k WITH (continuous, backfill = 'kafka') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM inv GROUP BY k;});
wait_for(q{SELECT state FROM stream_ext.backfill_progress WHERE view = 'by_k'::regclass}, 'done',
	'the replay is done');
is(sql('SELECT k, n, s FROM by_k ORDER BY k'), $expected,
	'the replayed view equals its query over the table: updates retract, tombstones apply nothing');
is(sql(q{SELECT format('%s %s', messages, skipped) FROM stream_ext.backfill_progress WHERE view = 'by_k'::regclass}),
	scalar(@msgs) . ' 0', 'progress counts messages (tombstones too), not rows; none skipped');

# live changes after the hand-over reach it through its trigger
$broker->produce_keyed('cdc', [ $json->encode({ op => 'd', before => { %{ $table{200} } }, after => undef }), undef ], 0);
$n{ $table{200}{k} }--;
$s{ $table{200}{k} } -= $table{200}{v};
wait_for(total_stored('cdc_src'), scalar(@msgs) + 2, 'the source consumed the live delete');
is(sql('SELECT k, n, s FROM by_k ORDER BY k'),
	join("\n", map { "$_|$n{$_}|$s{$_}" } sort { $a <=> $b } keys %n),
	'a live delete after the replay applies once');

$node->stop;
$broker->stop;
done_testing();
