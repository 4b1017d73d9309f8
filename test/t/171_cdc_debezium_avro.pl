# Format debezium-avro (docs/kafka.md, docs/changelog.md): Debezium envelopes
# in Confluent's wire format with schemas from the stand-in registry
# (test/tools/schema_registry.py), into a changelog stream.  The value schema
# evolves (v2 adds a column with a default): older events give NULL for it.
# The continuous view equals the same query over the table's final rows
# (CdcTAP.pm); bad envelopes (unknown op, an update without its old row, a
# truncated payload, a schema id the registry lacks) are dead letters with
# their reasons.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;
use AvroTAP;
use CdcTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'cdc');
my $node = stream_ext_node(
	'cdc_avro',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);
my $tmp = $node->basedir;
my $reg = start_registry("$tmp/registry.json");
my $url = $reg->url;

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

# Debezium's envelope, as its Avro converter registers it
sub envelope_schema
{
	my ($extra) = @_;
	return qq({"type": "record", "name": "Envelope", "namespace": "db.public.inv", "fields": [
  {"name": "before", "type": ["null", {"type": "record", "name": "Value", "fields": [
      {"name": "id", "type": "int"},
      {"name": "k", "type": "string"},
      {"name": "qty", "type": ["null", "int"], "default": null},
      {"name": "price", "type": ["null", "string"], "default": null}$extra]}], "default": null},
  {"name": "after", "type": ["null", "Value"], "default": null},
  {"name": "source", "type": {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql",
      "fields": [{"name": "connector", "type": "string"}, {"name": "table", "type": "string"}, {"name": "lsn", "type": ["null", "long"], "default": null}]}},
  {"name": "op", "type": "string"},
  {"name": "ts_ms", "type": ["null", "long"], "default": null},
  {"name": "transaction", "type": ["null", {"type": "record", "name": "block", "namespace": "event",
      "fields": [{"name": "id", "type": "string"}, {"name": "total_order", "type": "long"}]}], "default": null}]});
}
my %v = (1 => envelope_schema(''),
	2 => envelope_schema(qq(,\n      {"name": "note", "type": ["null", "string"], "default": null})));
my %id = map { $_ => $reg->register('db.public.inv-value', $v{$_}) } 1, 2;

sql(q{CREATE EXTENSION stream_ext;});
sql(qq{
SELECT stream_ext.create_stream('inv', 'id int, item text, qty int, price numeric, note text', changelog => true);
CREATE VIEW inv_by_item WITH (continuous) AS
  SELECT item, count(*) AS n, count(qty) AS nq, sum(qty) AS qty, avg(price) AS price, count(note) AS notes
    FROM inv GROUP BY item;
SELECT stream_ext.start_source(stream_ext.create_kafka_source('cdc_src', 'inv',
  '${\ $broker->bootstrap}', 'cdc', 'debezium-avro',
  jsonb_build_object('schema_registry', '$url', 'paths', '{"item": "k"}'::jsonb)));
});

my %table;
my @v1 = cdc_events(\%table, 300, 171, snapshot => 20);
# v2: the same table, its rows now with a note (rows written before keep none)
my @v2 = cdc_events(\%table, 300, 1711, note => 1);
my @files = avro_messages($v{1}, \@v1, "$tmp/v1", $id{1});
my @bad = (
	[ avro_messages($v{1}, [ { before => undef, after => { id => 1, k => 'k1' }, source => { connector => 'x', table => 'inv' }, op => 'x' } ], "$tmp/b1", $id{1}) ],
	[ avro_messages($v{1}, [ { before => undef, after => { id => 1, k => 'k1' }, source => { connector => 'x', table => 'inv' }, op => 'u' } ], "$tmp/b2", $id{1}) ],
	[ avro_messages($v{1}, [ { before => undef, after => { id => 1, k => 'k1' }, source => { connector => 'x', table => 'inv' }, op => 'c' } ], "$tmp/b3", 42) ]);
my $bytes = do { local $/; open(my $fh, '<:raw', $files[-1]) or die; <$fh> };
open(my $fh, '>:raw', "$tmp/truncated.avro") or die;
print $fh substr($bytes, 0, 9);
close $fh;
my $first_bad = scalar @files;
push @files, map { @$_ } @bad;
push @files, "$tmp/truncated.avro";
push @files, avro_messages($v{2}, \@v2, "$tmp/v2", $id{2});
my $total = scalar @files;
produce_files($broker, 'cdc', \@files, 0);
wait_for(total_stored('cdc_src'), $total, 'debezium-avro: every message consumed');

# rows carry their note (v2) or NULL (v1), like the table's final rows
sql(oracle_sql('oracle', \%table));
my $by_item = q{
  SELECT k AS item, count(*) AS n, count(qty) AS nq, sum(qty) AS qty, avg(price) AS price, count(note) AS notes
    FROM oracle GROUP BY k};
is( sql(qq{SELECT count(*) FROM ((TABLE inv_by_item EXCEPT ALL $by_item)
                                 UNION ALL ($by_item EXCEPT ALL TABLE inv_by_item)) d}),
	'0', 'debezium-avro across a schema change: the view equals its query over the table')
  or diag(sql('TABLE inv_by_item ORDER BY 1') . "\n--\n" . sql("$by_item ORDER BY 1"));
is(sql(q{SELECT count(*) > 0 FROM oracle WHERE note IS NOT NULL}), 't', '(some rows have a note)');

is( sql(qq{SELECT "offset" - $first_bad || ' ' || error FROM stream_ext.dead_letters
            WHERE source = 'cdc_src' ORDER BY "offset"}),
	join("\n",
		'0 unknown Debezium operation "x"',
		'1 Debezium update event has no "before" row',
		'2 schema id 42 is not in the schema registry',
		'3 invalid Avro payload at byte 4: truncated'),
	'bad envelopes are dead letters with their reasons, nothing else is');

$node->stop;
$reg->stop;
$broker->stop;
done_testing();
