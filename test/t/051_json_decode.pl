# The JSON decoder (src/kafka/decode.c) against PostgreSQL's jsonb: every
# valid message, decoded by a Kafka source, equals the same message's
# values taken by jsonb's own operators (->> and #>>) and cast to the
# column types; every invalid one is a dead letter.  The messages are the
# corner cases of a one-pass parser: repeated keys (at the top and along a
# path), paths through arrays and scalars, numbers in every JSON form,
# escapes in values and in keys, objects and arrays as values, nesting
# deeper than any path.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'j');
my $node = stream_ext_node('json', 'stream_ext.kafka_launcher_naptime' => 2);

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

my @good = (
	'{"s": "plain", "n": 1, "i": 2, "b": true, "o": {"b": 1, "a": [ ]}, "x": {"y": {"z": "deep"}}, "a": {"b": [1, 2]}}',
	'{"s": "dup first", "s": "dup last", "n": 1e3, "i": 1E3}',
	'{"x": {"y": {"z": "first"}}, "x": {"y": {"z": "second"}}}',
	'{"x": {"y": {"z": "gone"}}, "x": {"q": 2}}',
	'{"x": {"y": {"z": 1}, "y": 7}}',
	'{"n": -0, "i": -0, "o": -0.0}',
	'{"n": 0.50, "o": 1.5E-3, "i": -12}',
	'{"n": -0.5, "o": 123456789012345678901234567890}',
	'{"s": "esc \"q\" \\\\ \/ \t tab \u00e9 \ud83d\ude00", "o": "\u0041"}',
	'{"\u0073": "key by escape", "b": false}',
	'{"a": [{"b": 1}], "x": [{"y": {"z": 3}}]}',
	'{"a": 5, "x": {"y": "scalar, not an object"}}',
	'{"o": [1, {"b": 2, "a": 1}, "t", null, true], "b": null}',
	'{"o": {}, "s": null, "n": null}',
	'{"q": {"w": {"e": {"r": {"t": [1, {"y": 2}]}}}}, "s": "deep nesting elsewhere"}',
	'{"o": {"x": {"y": {"z": "not at the root"}}}}',
	'{}',
	'{"i": "42", "n": "7.5", "b": "yes"}',
	'{"s": "", "o": ""}',
	'{"a": {"b": {"c": {"d": 1}}, "b": {"e": [ {"f": {}} ]}}}',
	'  {"s":"whitespace around"}  ',
);
my @bad = (
	'{"s": 1',
	'[1, 2]',
	'"just a string"',
	'5',
	'{"i": 1.5}',
	'{"i": 99999999999999999999}',
	'{"s": "\u0000"}',
	'{"s": "x"} trailing',
	'{"s": "a", "o": [1, 2}',
	'{s: 1}',
);

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('j', 's text, n numeric, i int8, b boolean, o text, deep text, arr text');
CREATE TABLE msgs (pos int, payload text);
});
my $pos = 0;
for my $m (@good)
{
	$pos++;
	my $q = $m =~ s/'/''/gr;
	sql("INSERT INTO msgs VALUES ($pos, '$q')");
}
# every good message is valid JSON for jsonb too, with an object at the root
is(sql(q{SELECT count(*) FROM msgs WHERE jsonb_typeof(payload::jsonb) = 'object'}),
	scalar(@good), 'the good messages are JSON objects for jsonb');

sql(q{SELECT stream_ext.create_kafka_source('src', 'j', '} . $broker->bootstrap . q{', 'j', 'json',
      '{"paths": {"deep": "x.y.z", "arr": "a.b"}, "batch_size": 100}')});
sql(q{SELECT stream_ext.start_source('src')});
$broker->produce('j', [ @good, @bad ], 0);
my $total = @good + @bad;
wait_for(total_stored('src'), $total, "all $total messages consumed");

my $oracle = q{
  SELECT p->>'s', (p->>'n')::numeric, (p->>'i')::int8, (p->>'b')::boolean, p->>'o',
         p #>> '{x,y,z}', p #>> '{a,b}'
    FROM (SELECT payload::jsonb AS p FROM msgs) m};
my $stream = q{SELECT s, n, i, b, o, deep, arr FROM j};
is(sql("SELECT count(*) FROM ($stream EXCEPT ALL $oracle) d"), '0', 'no decoded row that jsonb would not give');
is(sql("SELECT count(*) FROM ($oracle EXCEPT ALL $stream) d"), '0', 'every row jsonb gives was decoded');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'src'}), scalar(@bad),
	'every invalid message is a dead letter');
is( sql(q{SELECT string_agg(DISTINCT regexp_replace(error, ':.*', ''), ' | ' ORDER BY regexp_replace(error, ':.*', ''))
          FROM stream_ext.dead_letters WHERE source = 'src'}),
	'JSON message is not an object | invalid input syntax for type bigint | invalid input syntax for type json | unsupported Unicode escape sequence | value "99999999999999999999" is out of range for type bigint',
	'with the reasons jsonb and the input functions give');
# spot checks that say what the oracle means
is(sql(q{SELECT o FROM j WHERE s = 'plain'}), '{"a": [], "b": 1}', 'an object value in jsonb text form');
is(sql(q{SELECT s FROM j WHERE s LIKE 'dup%'}), 'dup last', 'a repeated key counts by its last value');
is(sql(q{SELECT count(*) FROM j WHERE deep = 'second'}), '1', 'a repeated key along a path: the last one');
is(sql(q{SELECT n || '/' || i || '/' || o FROM j WHERE n = 0 AND i = 0}), '0/0/0.0', 'negative zeros as numeric_out writes them');
is(sql(q{SELECT s FROM j WHERE b = false}), 'key by escape', 'escaped keys match');

done_testing();
