# Format debezium-json (docs/kafka.md, docs/changelog.md) against the embedded
# broker: a snapshot then creates, updates (of the group key, to and from
# NULL) and deletes of a table, as Debezium envelopes bare and wrapped in
# {"schema", "payload"}, with tombstones and a logical-decoding message in
# between, into a changelog stream; the continuous views equal the same
# queries over the table's final rows (computed in Perl: CdcTAP.pm).  Bad
# envelopes are dead letters with their reasons -- an update whose new row
# the stream refuses wholly, its retraction too --, and a plain stream is
# refused.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use StreamExtTAP;
use CdcTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'cdc');
my $node = stream_ext_node(
	'cdc_json',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

my $json = JSON::PP->new->canonical;

# an event as Debezium's JSON converter writes it: column k is "item" in the
# stream (option paths); every third wrapped as with schemas.enable = true
my $n = 0;
sub envelope
{
	my ($ev) = @_;
	my %e = %$ev;
	for my $half (qw(before after))
	{
		next unless $e{$half};
		$e{$half} = { %{ $e{$half} } };
	}
	return $json->encode(++$n % 3 == 0 ? { schema => { type => 'struct', optional => JSON::PP::false }, payload => \%e } : \%e);
}

sql(q{CREATE EXTENSION stream_ext;});
sql(q{
SELECT stream_ext.create_stream('inv', 'id int, item text, qty int CHECK (qty < 1000), price numeric', changelog => true);
SELECT stream_ext.create_stream('plain_inv', 'id int, item text, qty int, price numeric');
CREATE VIEW inv_by_item WITH (continuous) AS
  SELECT item, count(*) AS n, count(qty) AS nq, sum(qty) AS qty, avg(price) AS price
    FROM inv GROUP BY item;
CREATE VIEW inv_total WITH (continuous) AS
  SELECT count(*) AS n, sum(qty) AS qty, sum(price) AS price FROM inv;
});

# a plain stream cannot take signed rows
my ($rc, $out, $err) = $node->psql('postgres', qq{
SELECT stream_ext.create_kafka_source('plain_src', 'plain_inv', '${\ $broker->bootstrap}', 'cdc', 'debezium-json')});
like($err, qr/format "debezium-json" needs a changelog stream, and "plain_inv" is not one/,
	'debezium-json into a plain stream is refused at create');
($rc, $out, $err) = $node->psql('postgres', qq{
SELECT stream_ext.create_kafka_source('x_src', 'inv', '${\ $broker->bootstrap}', 'cdc', 'debezium-json',
  '{"schema_registry": "http://127.0.0.1:1"}')});
like($err, qr/do not apply to format "debezium-json"/, 'Avro options are refused for debezium-json');

sql(qq{
SELECT stream_ext.start_source(stream_ext.create_kafka_source('cdc_src', 'inv',
  '${\ $broker->bootstrap}', 'cdc', 'debezium-json', '{"paths": {"item": "k"}}'));
});

my %table;
my @events = cdc_events(\%table, 600, 170, snapshot => 30);
my @msgs;
my %bad;    # offset => expected dead letter reason (a pattern)
for my $i (0 .. $#events)
{
	push @msgs, envelope($events[$i]);
	# Kafka's tombstone after a delete, as Debezium writes it
	push @msgs, undef if $events[$i]{op} eq 'd';
	if ($i == 100)
	{
		push @msgs, $json->encode({ op => 'm', message => { prefix => 'x', content => 'eA==' } });
		my @b = (
			[ 'not json', qr/^invalid input syntax for type json/ ],
			[ '[1, 2]', qr/^JSON message is not an object$/ ],
			[ '{"before": null, "after": {"id": 1}}', qr/^message is not a Debezium change event: it has no field "op"$/ ],
			[ '{"op": "x", "after": {"id": 1}}', qr/^unknown Debezium operation "x"$/ ],
			[ '{"op": "u", "before": null, "after": {"id": 1, "k": "k1", "qty": 1}}', qr/^Debezium update event has no "before" row$/ ],
			[ '{"op": "d", "before": null}', qr/^Debezium delete event has no "before" row$/ ],
			[ '{"op": "c", "after": null}', qr/^Debezium create event has no "after" row$/ ],
			[ '{"payload": {"op": "t", "before": null, "after": null}}', qr/^Debezium truncate event cannot be applied to a changelog stream$/ ],
			[ '{"op": "c", "after": {"id": 900, "k": "k1", "qty": "many"}}', qr/^invalid input syntax for type integer: "many"$/ ],
			# the stream refuses the new row: the old one is not retracted either
			[ '{"op": "u", "before": {"id": 901, "k": "k1", "qty": 1}, "after": {"id": 901, "k": "k1", "qty": 5000}}',
			  qr/^new row for relation "inv" violates check constraint "inv_qty_check"$/ ]);
		for my $b (@b)
		{
			$bad{ scalar @msgs } = $b->[1];
			push @msgs, $b->[0];
		}
	}
}
$broker->produce_keyed('cdc', \@msgs, 0);
wait_for(total_stored('cdc_src'), scalar(@msgs), 'debezium-json: every message consumed');

sql(oracle_sql('oracle', \%table));
my $by_item = q{
  SELECT k AS item, count(*) AS n, count(qty) AS nq, sum(qty) AS qty, avg(price) AS price
    FROM oracle GROUP BY k};
is( sql(qq{SELECT count(*) FROM ((TABLE inv_by_item EXCEPT ALL $by_item)
                                 UNION ALL ($by_item EXCEPT ALL TABLE inv_by_item)) d}),
	'0', 'debezium-json: the grouped view equals its query over the table');
is( sql(q{TABLE inv_total}),
	sql(q{SELECT count(*), sum(qty), sum(price) FROM oracle}),
	'debezium-json: the keyless view equals its query over the table');
is(sql(q{SELECT count(*) > 100 FROM oracle}), 't', '(the table is not empty)');

# the stream got one row per create/read/delete, two per update
my %ops;
$ops{ $_->{op} }++ for @events;
is( sql(q{SELECT count(*) FILTER (WHERE stream_ext_sign = 1), count(*) FILTER (WHERE stream_ext_sign = -1) FROM inv}),
	($ops{c} + $ops{r} + $ops{u}) . '|' . ($ops{d} + $ops{u}),
	'debezium-json: +after per create/read/update, -before per update/delete');

my $dead = sql(q{SELECT "offset" || ' ' || error FROM stream_ext.dead_letters WHERE source = 'cdc_src' ORDER BY "offset"});
my @dead = split /\n/, $dead;
is(scalar(@dead), scalar(keys %bad), 'bad envelopes are dead letters, nothing else is')
  or diag $dead;
for my $d (@dead)
{
	my ($off, $reason) = $d =~ /^(\d+) (.*)$/;
	like($reason, $bad{$off} // qr/^UNEXPECTED$/, "dead letter at offset $off");
}

# plain json into a changelog stream: the sign is not a payload column, and
# takes its default (+1)
sql(qq{
SELECT stream_ext.create_stream('inv_json', 'id int, item text, qty int', changelog => true);
CREATE VIEW inv_json_by_item WITH (continuous) AS
  SELECT item, count(*) AS n, sum(qty) AS qty FROM inv_json GROUP BY item;
SELECT stream_ext.start_source(stream_ext.create_kafka_source('json_src', 'inv_json',
  '${\ $broker->bootstrap}', 'plainjson', 'json'));
});
$broker->produce_keyed('plainjson', [ '{"id": 1, "item": "a", "qty": 5}', '{"id": 2, "item": "a", "qty": 7, "stream_ext_sign": -1}' ], 0);
wait_for(total_stored('json_src'), '2', 'format json into a changelog stream: consumed');
is(sql(q{TABLE inv_json_by_item}), 'a|2|12', 'format json into a changelog stream: every row adds');

$node->stop;
$broker->stop;
done_testing();
