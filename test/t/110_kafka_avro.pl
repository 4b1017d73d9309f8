# Avro sources against the embedded broker and the stand-in schema registry
# (test/tools/schema_registry.py): format "avro" with the writer schema in
# the options (nested records, unions with null, logical types), format
# "avro-confluent" with schemas fetched by id and resolved against a reader
# schema (a field added with a default, a field removed, a newer writer),
# bad messages to dead letters with their reasons, the per-worker schema
# cache, basic auth, and a registry that is down: the batch is retried, no
# message is dead-lettered, the rows arrive once it is back.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;
use AvroTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'plain', '--topic',
	'orders', '--topic', 'down', '--topic', 'authed', '--topic', 'dec');
my $node = stream_ext_node(
	'avro',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);
my $tmp = $node->basedir;
my $reg = start_registry("$tmp/registry.json");
my $url = $reg->url;

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

sql(q{CREATE EXTENSION stream_ext;});

# ---- format avro: the schema in the options ---------------------------------
my $click_schema = q({
  "type": "record", "name": "Click", "namespace": "shop",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "user", "type": {"type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"},
        {"name": "country", "type": ["null", "string"], "default": null}]}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "ts_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["view", "buy"]}},
    {"name": "score", "type": "double"},
    {"name": "ok", "type": "boolean"},
    {"name": "raw", "type": "bytes"}
  ]});
(my $schema_sql = $click_schema) =~ s/'/''/g;
sql(qq{
SELECT stream_ext.create_stream('clicks',
  'id bigint, name text, country text, amount numeric(10,2), ts timestamptz,
   ts_us timestamptz, day date, uid uuid, tags jsonb, kind text, score float8,
   ok boolean, raw bytea, part int');
CREATE VIEW clicks_by_kind WITH (continuous) AS
  SELECT kind, count(*) AS n, sum(amount) AS amount, max(ts) AS last FROM clicks GROUP BY kind;
SELECT stream_ext.create_kafka_source('clicks_src', 'clicks', '${\ $broker->bootstrap}', 'plain', 'avro',
  jsonb_build_object('schema', '$schema_sql'::jsonb,
                     'paths', '{"name": "user.name", "country": "user.country"}'::jsonb,
                     'partition_column', 'part'));
SELECT stream_ext.start_source('clicks_src');
});

my @clicks = (
	{
		id => 1, user => { name => 'ann', country => 'fr' }, amount => '12345',
		ts => 1700000000123, ts_us => 1700000000123456, day => 19675,
		uid => '1b4e28ba-2fa1-11d2-883f-0016d3cca427', tags => [ 'a', 'b' ],
		kind => 'buy', score => 0.5, ok => JSON::PP::true, raw => "\x00\xff"
	},
	{
		id => 2, user => { name => "b\x{e9}a", country => undef }, amount => '-5',
		ts => 0, ts_us => undef, day => -1,
		uid => '00000000-0000-0000-0000-000000000000', tags => [],
		kind => 'view', score => -1e300, ok => JSON::PP::false, raw => ''
	},
	{
		id => 3, user => { name => 'cy', country => 'de' }, amount => '99999999',
		ts => -1000, ts_us => 1, day => 0,
		uid => 'ffffffff-ffff-ffff-ffff-ffffffffffff', tags => ['x'],
		kind => 'buy', score => 3, ok => JSON::PP::true, raw => 'z'
	});
produce_files($broker, 'plain', [ avro_messages($click_schema, \@clicks, "$tmp/clicks") ], 0);
wait_for(total_stored('clicks_src'), '3', 'format avro: all messages consumed');
is( sql(q{SELECT id, name, coalesce(country, '-'), amount, ts AT TIME ZONE 'UTC',
                 coalesce((ts_us AT TIME ZONE 'UTC')::text, '-'), day, uid, tags, kind, score, ok, raw, part
            FROM clicks ORDER BY id}),
	join("\n",
		"1|ann|fr|123.45|2023-11-14 22:13:20.123|2023-11-14 22:13:20.123456|2023-11-14|1b4e28ba-2fa1-11d2-883f-0016d3cca427|[\"a\", \"b\"]|buy|0.5|t|\\x00ff|0",
		"2|b\xc3\xa9a|-|-0.05|1970-01-01 00:00:00|-|1969-12-31|00000000-0000-0000-0000-000000000000|[]|view|-1e+300|f|\\x|0",
		"3|cy|de|999999.99|1969-12-31 23:59:59|1970-01-01 00:00:00.000001|1970-01-01|ffffffff-ffff-ffff-ffff-ffffffffffff|[\"x\"]|buy|3|t|\\x7a|0"),
	'format avro: nested fields, unions with null, logical types, enum, array into the columns');
is( sql(q{SELECT kind, n, amount, last AT TIME ZONE 'UTC' FROM clicks_by_kind ORDER BY kind}),
	"buy|2|1000123.44|2023-11-14 22:13:20.123\nview|1|-0.05|1970-01-01 00:00:00",
	'format avro: the continuous view equals the expected rows');

# decimals at numeric's limits: scale 1000 (the largest numeric holds), and
# a scale beyond it, which is no decimal PostgreSQL can hold: the logical
# type is ignored, as Avro says of invalid ones, and the bytes stay bytes
my $dec_schema = q({"type": "record", "name": "D", "fields": [
  {"name": "tiny", "type": {"type": "bytes", "logicalType": "decimal", "precision": 1200, "scale": 1000}},
  {"name": "big", "type": {"type": "fixed", "name": "F16", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 0}},
  {"name": "odd", "type": {"type": "bytes", "logicalType": "decimal", "precision": 3000, "scale": 2000}}]});
(my $dec_sql = $dec_schema) =~ s/'/''/g;
sql(qq{
SELECT stream_ext.create_stream('decs', 'tiny numeric, big numeric, odd bytea');
SELECT stream_ext.start_source(stream_ext.create_kafka_source('dec_src', 'decs', '${\ $broker->bootstrap}', 'dec', 'avro',
  jsonb_build_object('schema', '$dec_sql'::jsonb)));
});
produce_files($broker, 'dec', [ avro_messages($dec_schema,
	[ { tiny => '-7', big => '-170141183460469231731687303715884105728', odd => '1' } ], "$tmp/dec") ], 0);
wait_for(total_stored('dec_src'), '1', 'decimals: consumed');
is( sql(q{SELECT tiny::text = '-0.' || repeat('0', 999) || '7', length(tiny::text), big, odd FROM decs}),
	't|1003|-170141183460469231731687303715884105728|\\x01',
	'decimals: scale 1000, 16-byte two\'s complement, a scale beyond numeric\'s is bytes');

# ---- format avro-confluent: schema evolution -------------------------------
my %v;
$v{1} = q({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
  {"name": "note", "type": "string"}]});
# v2: "note" removed, "qty" added with a default
$v{2} = q({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
  {"name": "qty", "type": "int", "default": 1}]});
# v3, newer than the reader: "price" added, "qty" promoted int -> long in
# the writer would be incompatible, so it stays int
$v{3} = q({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "int"}, {"name": "item", "type": "string"},
  {"name": "qty", "type": "int", "default": 1},
  {"name": "price", "type": "double", "default": 0}]});
# incompatible: id is a string; and one lacking "item", which has no default
$v{4} = q({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "string"}, {"name": "item", "type": "string"}]});
$v{5} = q({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "long"}, {"name": "qty", "type": "int"}]});
my %id = map { $_ => $reg->register('orders-value', $v{$_}) } 1 .. 5;
is_deeply([ map { $id{$_} } 1 .. 5 ], [ 1 .. 5 ], 'five schema versions registered');
is($reg->get('/subjects/orders-value/versions/latest')->{id}, 5, 'registry: latest version');
is($reg->get('/schemas/ids/2')->{schema}, $v{2}, 'registry: schema by id, as registered');

(my $reader_sql = $v{2}) =~ s/'/''/g;
sql(qq{
SELECT stream_ext.create_stream('orders', 'id bigint, item text, qty int, off bigint');
SELECT stream_ext.create_stream('orders_loose', 'id bigint, item text, qty int, note text');
CREATE VIEW qty_by_item WITH (continuous) AS
  SELECT item, count(*) AS n, sum(qty) AS qty FROM orders GROUP BY item;
SELECT stream_ext.start_source(stream_ext.create_kafka_source('orders_src', 'orders',
  '${\ $broker->bootstrap}', 'orders', 'avro-confluent',
  jsonb_build_object('schema_registry', '$url', 'reader_schema', '$reader_sql'::jsonb,
                     'offset_column', 'off')));
-- no reader schema: the columns' mapping is the reader, missing fields are NULL
SELECT stream_ext.start_source(stream_ext.create_kafka_source('orders_loose_src', 'orders_loose',
  '${\ $broker->bootstrap}', 'orders', 'avro-confluent',
  jsonb_build_object('schema_registry', '$url/')));
});

my @msgs;
push @msgs, avro_messages($v{1}, [ { id => 1, item => 'pen', note => 'old' } ], "$tmp/o1", 1);
push @msgs, avro_messages($v{2}, [ { id => 2, item => 'pen', qty => 5 } ], "$tmp/o2", 2);
push @msgs, avro_messages($v{3}, [ { id => 3, item => 'ink', qty => 2, price => 9.5 } ], "$tmp/o3", 3);
push @msgs, avro_messages($v{4}, [ { id => 'four', item => 'pen' } ], "$tmp/o4", 4);
push @msgs, avro_messages($v{5}, [ { id => 5, qty => 1 } ], "$tmp/o5", 5);
# unknown schema id; truncated; trailing garbage; not the wire format
push @msgs, avro_messages($v{2}, [ { id => 6, item => 'x', qty => 1 } ], "$tmp/o6", 99);
my ($good) = avro_messages($v{2}, [ { id => 7, item => 'a long item name', qty => 1 } ], "$tmp/o7", 2);
sub write_file_bytes
{
	my ($file, $bytes) = @_;
	open(my $fh, '>:raw', $file) or die;
	print $fh $bytes;
	close $fh;
	return $file;
}
my $bytes = do { local $/; open(my $fh, '<:raw', $good) or die; <$fh> };
push @msgs, write_file_bytes("$tmp/o8.avro", substr($bytes, 0, 12));
push @msgs, write_file_bytes("$tmp/o9.avro", $bytes . "\x01\x02");
push @msgs, write_file_bytes("$tmp/o10.avro", '{"id": 10}');
push @msgs, write_file_bytes("$tmp/o11.avro", "\x00\x00\x00");
# and good ones again, with the cached schemas
push @msgs, avro_messages($v{1}, [ { id => 12, item => 'ink', note => '' } ], "$tmp/o12", 1);
push @msgs, avro_messages($v{2}, [ { id => 13, item => 'ink', qty => 7 } ], "$tmp/o13", 2);
produce_files($broker, 'orders', \@msgs, 0);

wait_for(total_stored('orders_src'), '12', 'avro-confluent: all messages consumed');
is( sql(q{SELECT id, item, qty, off FROM orders ORDER BY id}),
	"1|pen|1|0\n2|pen|5|1\n3|ink|2|2\n12|ink|1|10\n13|ink|7|11",
	'schema evolution: older writer (removed field ignored, added field takes its default), newer writer');
is(sql(q{SELECT item, n, qty FROM qty_by_item ORDER BY item}),
	"ink|3|10\npen|2|6", 'avro-confluent: the continuous view equals the expected rows');
is( sql(q{SELECT "offset", error FROM stream_ext.dead_letters WHERE source = 'orders_src' ORDER BY "offset"}),
	join("\n",
		'3|cannot decode a message written with schema id 4: field "id": the writer\'s type cannot be read as the reader\'s: Cannot store string into long',
		'4|cannot decode a message written with schema id 5: field "item" of the reader schema is not in the writer schema and has no default',
		'5|schema id 99 is not in the schema registry',
		'6|invalid Avro payload at byte 2: truncated',
		'7|invalid Avro payload at byte 19: 2 bytes after the record',
		'8|message does not start with the Confluent wire format\'s magic byte 0 (it starts with 123)',
		'9|message of 3 bytes is too short for the Confluent wire format'),
	'bad messages are dead letters with their reasons');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'orders_src' AND payload IS NOT NULL}),
	'7', 'dead letters keep their payloads');

wait_for(total_stored('orders_loose_src'), '12', 'avro-confluent without a reader schema: all consumed');
is( sql(q{SELECT id, coalesce(item, '-'), coalesce(qty::text, '-'), coalesce(note, '-') FROM orders_loose ORDER BY id}),
	"1|pen|-|old\n2|pen|5|-\n3|ink|2|-\n5|-|1|-\n12|ink|-|\n13|ink|7|-",
	'without a reader schema, fields a writer lacks are NULL');
is( sql(q{SELECT "offset", error FROM stream_ext.dead_letters WHERE source = 'orders_loose_src' AND "offset" < 5}),
	qq(3|invalid input syntax for type bigint: "four"),
	'without a reader schema, a value its column cannot take is a dead letter');

# each worker fetched each schema id once: 5 ids (1..5, 99) by two workers
my $fetches = $reg->get('/_test/requests');
# (and the test itself read id 2 above)
is_deeply($fetches->{by_id}, { (map { $_ => 2 } 1 .. 5, 99), 2 => 3 },
	'each of two workers fetched each schema id once')
  or diag explain $fetches;
$fetches = $fetches->{ids};
produce_files($broker, 'orders',
	[ avro_messages($v{2}, [ map { { id => 100 + $_, item => 'ink', qty => 1 } } 1 .. 20 ], "$tmp/o14", 2) ], 0);
wait_for(total_stored('orders_src'), '32', 'more messages with a cached schema');
is($reg->get('/_test/requests')->{ids}, $fetches, 'a cached schema is not fetched again');

# ---- the registry down: retried, never dead letters -----------------------
sql(qq{
SELECT stream_ext.create_stream('down', 'id bigint, item text, qty int');
SELECT stream_ext.start_source(stream_ext.create_kafka_source('down_src', 'down',
  '${\ $broker->bootstrap}', 'down', 'avro-confluent',
  jsonb_build_object('schema_registry', '$url', 'registry_timeout_ms', 1000)));
});
$reg->stop;
produce_files($broker, 'down',
	[ avro_messages($v{2}, [ map { { id => $_, item => 'x', qty => $_ } } 1 .. 50 ], "$tmp/d1", 2) ], 0);
wait_for(q{SELECT state = 'retrying' AND last_error LIKE 'schema registry unavailable fetching schema id 2:%'
             FROM stream_ext.source_status WHERE source = 'down_src'},
	't', 'registry down: the source retries the batch, saying why');
sleep 2;
is(sql(q{SELECT count(*) FROM down}), '0', 'registry down: no rows yet');
$reg->start('--fail', 503);
wait_for(q{SELECT last_error LIKE 'schema registry unavailable fetching schema id 2: HTTP status 503'
             FROM stream_ext.source_status WHERE source = 'down_src'},
	't', 'registry answering 503: the source retries, saying why');
is(sql(q{SELECT count(*) FROM down}), '0', 'registry answering 503: no rows yet');
$reg->fail(0);
wait_for(q{SELECT count(*), sum(qty) FROM down}, '50|1275', 'registry back: every row arrives once');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'down_src'}), '0',
	'registry down: no dead letters');

# ---- basic auth ------------------------------------------------------------
my $areg = start_registry("$tmp/registry_auth.json", '--user', 'reader:s3cret');
my $aurl = $areg->url;
is($areg->register('authed-value', $v{2}), 1, 'schema registered with credentials');
sql(qq{
SELECT stream_ext.create_stream('authed', 'id bigint, item text, qty int');
SELECT stream_ext.create_stream('unauthed', 'id bigint, item text, qty int');
SELECT stream_ext.start_source(stream_ext.create_kafka_source('authed_src', 'authed',
  '${\ $broker->bootstrap}', 'authed', 'avro-confluent',
  jsonb_build_object('schema_registry', '$aurl', 'registry_user', 'reader', 'registry_password', 's3cret')));
SELECT stream_ext.start_source(stream_ext.create_kafka_source('unauthed_src', 'unauthed',
  '${\ $broker->bootstrap}', 'authed', 'avro-confluent',
  jsonb_build_object('schema_registry', '$aurl', 'registry_user', 'reader', 'registry_password', 'wrong-pw')));
});
produce_files($broker, 'authed',
	[ avro_messages($v{2}, [ { id => 1, item => 'a', qty => 2 } ], "$tmp/a1", 1) ], 0);
wait_for(total_stored('authed_src'), '1', 'basic auth: consumed');
is(sql(q{SELECT id, item, qty FROM authed}), '1|a|2', 'basic auth: decoded with the registry\'s schema');
wait_for(total_stored('unauthed_src'), '1', 'wrong password: consumed');
is(sql(q{SELECT error FROM stream_ext.dead_letters WHERE source = 'unauthed_src'}),
	'schema registry refused schema id 1: HTTP status 401',
	'wrong password: a dead letter naming the status, not the password');
is( sql(q{SELECT count(*) FROM pg_stat_activity, stream_ext.source_status
           WHERE coalesce(last_error, '') LIKE '%wrong-pw%'}),
	'0', 'the password is in no status');
# (the test's own statements are logged: log_statement = all)
ok(!grep({ /wrong-pw|s3cret/ && !/statement:|^\s/ } split /\n/, slurp_file($node->logfile)),
	'the password is in no message of the server log');

$node->stop;
$broker->stop;
done_testing();
