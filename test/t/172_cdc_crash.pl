# kill -9 of the postmaster in the middle of a CDC load (docs/changelog.md):
# a debezium-json source loads a snapshot and 30000 changes of a table,
# keyed by row over 4 partitions,
# (50% inserts, 40% updates, 10% deletes) into a changelog stream; the
# postmaster is killed three times while the source ingests.  Afterwards the
# source resumes by itself and the continuous views equal the same queries
# over the table's final rows (CdcTAP.pm): a batch applied twice or lost
# would leave retractions without their rows, or rows without their
# retractions.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use JSON::PP;
use StreamExtTAP;
use CdcTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '4', '--topic', 'cdc');
my $node = stream_ext_node(
	'cdc_crash',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1,
	restart_after_crash => 'on');

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('inv', 'id int, k text, qty int, price numeric', changelog => true);
CREATE VIEW inv_by_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(qty) AS qty, avg(price) AS price FROM inv GROUP BY k;
CREATE VIEW inv_total WITH (continuous) AS
  SELECT count(*) AS n, sum(qty) AS qty, sum(price) AS price FROM inv;
});
sql(qq{SELECT stream_ext.start_source(stream_ext.create_kafka_source('cdc_src', 'inv',
  '${\ $broker->bootstrap}', 'cdc', 'debezium-json', '{"batch_size": 500}'))});

my %table;
my $json = JSON::PP->new->canonical;
# keyed by the row's id, as Debezium keys events: one partition per row, in
# order (4 partitions: the embedded broker keeps at most 5 MB of each)
my @lines = map { ($_->{after} // $_->{before})->{id} . "\t" . $json->encode($_) }
  cdc_events(\%table, 30000, 172, snapshot => 500);
my $total = scalar @lines;

# kcat produces the events in four parts: the kills come while the source
# ingests the part just produced, so each lands in the middle of the load
# however fast the source catches up after a restart (on a loaded machine a
# poll could otherwise see the whole load consumed before the kill).
sub produce
{
	my ($lo, $hi) = @_;
	my $file = $node->basedir . "/cdc_$lo.txt";
	open(my $fh, '>', $file) or die;
	print $fh map { "$_\n" } @lines[ $lo .. $hi - 1 ];
	close $fh;
	my ($kout, $kerr) = ('', '');
	IPC::Run::run([ 'kcat', '-P', '-K', "\t", '-b', $broker->bootstrap, '-t', 'cdc' ],
		'<', $file, '>', \$kout, '2>', \$kerr)
	  or die "kcat failed: $kerr";
}

my $mid = 0;
my $produced = 0;
for my $frac (0.1, 0.3, 0.5)
{
	my $upto = int($total * ($frac + 0.2));
	produce($produced, $upto);
	$produced = $upto;
	my $target = int($total * $frac);
	my $until = time + 120;
	my $stored = 0;
	while (time < $until)
	{
		$stored = sql(total_stored('cdc_src'));
		last if $stored >= $target;
		sleep 0.05;
	}
	$mid++ if $stored >= $target && $stored < $total;
	diag("kill -9 at $stored of $total messages stored ($produced produced, target $target)");
	kill9_postmaster($node);
	$node->start;
}
produce($produced, $total);
is($mid, 3, 'each kill -9 came in the middle of the load');

wait_for(total_stored('cdc_src'), $total, 'after the crashes the source consumed every message');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters}), '0', 'no dead letters');

sql(oracle_sql('oracle', \%table));
my $by_k = q{SELECT k, count(*) AS n, sum(qty) AS qty, avg(price) AS price FROM oracle GROUP BY k};
is( sql(qq{SELECT count(*) FROM ((TABLE inv_by_k EXCEPT ALL $by_k)
                                 UNION ALL ($by_k EXCEPT ALL TABLE inv_by_k)) d}),
	'0', 'after kill -9 in a CDC load: the grouped view equals its query over the table')
  or diag(sql('TABLE inv_by_k ORDER BY 1') . "\n--\n" . sql("$by_k ORDER BY 1"));
is(sql(q{TABLE inv_total}), sql(q{SELECT count(*), sum(qty), sum(price) FROM oracle}),
	'after kill -9 in a CDC load: the keyless view equals its query over the table');

$node->stop;
$broker->stop;
done_testing();
