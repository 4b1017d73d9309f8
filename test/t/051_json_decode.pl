# The JSON decoder (src/kafka/decode.c) against PostgreSQL's jsonb: every
# valid message, decoded by a Kafka source, equals the same message's
# values taken by jsonb's own operators (->> and #>>) and cast to the
# column types; every invalid one is a dead letter.  The messages are the
# corner cases of a one-pass parser: repeated keys (at the top and along a
# path), paths through arrays and scalars, numbers in every JSON form,
# escapes in values and in keys, objects and arrays as values, nesting
# deeper than any path.
# Then timestamps (src/kafka/time_input.c): ISO 8601 strings read directly
# equal timestamptz_in()'s result in every form, fast or not, and Unix
# time with the epoch_unit option (JSON numbers, unquoted CSV numbers).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'j', '--topic', 'times', '--topic', 'epochs', '--topic', 'epochcsv');
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

# ---- timestamps -------------------------------------------------------------
# A zone that is not UTC, so that strings without an offset (read by the
# input function, with the session's TimeZone) differ from UTC.
sql(q{ALTER DATABASE postgres SET timezone = 'America/New_York'});
my @times = (
	'2024-05-01T12:00:00Z', '2024-05-01 12:00:00+02', '2024-05-01T12:00:00.123456+05:30',
	'2024-05-01T12:00:00.1-0800', '2024-02-29T23:59:59.999999Z', '2024-05-01 12:00:00',
	'2024-05-01T24:00:00Z', '2024-05-01T12:00:60Z', '2024-05-01T12:00:00.1234567Z',
	'May 1 2024 12:00 UTC', '2024-05-01T12:00:00+15:59', '2024-05-01T12:00:00z',
	'1999-12-31T23:59:59.5-00:30', '9999-12-31T23:59:59Z', '2024-11-03T01:30:00',
	'2024-05-01T12:00:00.000Z', '2024-05-01T07:00:00-05');
sql(q{
SELECT stream_ext.create_stream('times', 'id int, tz timestamptz, ts timestamp, tz3 timestamptz(3)');
CREATE TABLE time_msgs (id int, s text);
});
my $id = 0;
my @tmsgs;
for my $t (@times)
{
	$id++;
	sql("INSERT INTO time_msgs VALUES ($id, '$t')");
	push @tmsgs, sprintf('{"id": %d, "tz": "%s", "ts": "%s", "tz3": "%s"}', $id, $t, $t, $t);
}
sql(q{SELECT stream_ext.create_kafka_source('times_src', 'times', '} . $broker->bootstrap . q{', 'times', 'json')});
sql(q{SELECT stream_ext.start_source('times_src')});
$broker->produce('times', [ @tmsgs, '{"id": 99, "tz": "2023-02-29T00:00:00Z"}' ], 0);
wait_for(total_stored('times_src'), scalar(@tmsgs) + 1, 'the timestamp messages consumed');
my $toracle = q{SELECT id, s::timestamptz, s::timestamp, s::timestamptz(3) FROM time_msgs};
my $tstream = q{SELECT id, tz, ts, tz3 FROM times};
is(sql("SELECT count(*) FROM (($tstream EXCEPT ALL $toracle) UNION ALL ($toracle EXCEPT ALL $tstream)) d"), '0',
	'ISO 8601 strings give what timestamptz_in and timestamp_in give, in every form');
is(sql(q{SELECT error FROM stream_ext.dead_letters WHERE source = 'times_src'}),
	'date/time field value out of range: "2023-02-29T00:00:00Z"', 'an impossible date is still refused');

# Unix time: JSON numbers with epoch_unit
sql(q{
SELECT stream_ext.create_stream('epochs', 'id int, tz timestamptz, ts timestamp, d date, txt text, tzs timestamptz');
CREATE TABLE epoch_msgs (id int, n numeric);
});
my @epochs = ('1714564800123', '0', '-1000', '1714564800123.5004', '1.7145648001235E12', '253402300799999');
my @emsgs;
$id = 0;
for my $n (@epochs)
{
	$id++;
	sql("INSERT INTO epoch_msgs VALUES ($id, $n)");
	push @emsgs, sprintf('{"id": %d, "tz": %s, "ts": %s, "d": %s, "txt": %s, "tzs": "2024-05-01T12:00:00Z"}', $id, $n, $n, $n, $n);
}
sql(q{SELECT stream_ext.create_kafka_source('epochs_src', 'epochs', '} . $broker->bootstrap . q{', 'epochs', 'json',
      '{"epoch_unit": "ms"}')});
sql(q{SELECT stream_ext.start_source('epochs_src')});
$broker->produce('epochs', [ @emsgs, '{"id": 99, "tz": 1e300}', '{"id": 98, "tz": 9300000000000000}' ], 0);
wait_for(total_stored('epochs_src'), scalar(@emsgs) + 2, 'the epoch messages consumed');
# exact: whole seconds and microseconds apart (interval * a large factor is float8)
my $at = q{(e.t + floor(round(n * 1000) / 1000000) * interval '1 second' + mod(round(n * 1000), 1000000) * interval '1 microsecond')};
my $eoracle = qq{SELECT id, $at, ($at AT TIME ZONE 'UTC'), ($at AT TIME ZONE 'UTC')::date, n::text, '2024-05-01T12:00:00Z'::timestamptz
                   FROM epoch_msgs, (SELECT 'epoch'::timestamptz AS t) e};
my $estream = q{SELECT id, tz, ts, d, txt, tzs FROM epochs};
is(sql("SELECT count(*) FROM (($estream EXCEPT ALL $eoracle) UNION ALL ($eoracle EXCEPT ALL $estream)) d"), '0',
	'JSON numbers are Unix time in milliseconds with epoch_unit ms; text columns and strings unchanged');
is(sql(q{SELECT string_agg(error, ' | ' ORDER BY "offset") FROM stream_ext.dead_letters WHERE source = 'epochs_src'}),
	'Unix time out of range: "1e300" | Unix time out of range: "9300000000000000"', 'out of range Unix times are refused');

# CSV, seconds: unquoted numbers only
sql(q{SELECT stream_ext.create_stream('epochcsv', 'id int, tz timestamptz, note text')});
sql(q{SELECT stream_ext.create_kafka_source('epochcsv_src', 'epochcsv', '} . $broker->bootstrap . q{', 'epochcsv', 'csv',
      '{"epoch_unit": "s"}')});
sql(q{SELECT stream_ext.start_source('epochcsv_src')});
$broker->produce('epochcsv', [ '1,1714564800,10', '2,1714564800.25,20', '3,2024-05-01T12:00:00Z,30', '4,"1714564800",40' ], 0);
wait_for(total_stored('epochcsv_src'), 4, 'the CSV epoch messages consumed');
is(sql(q{SELECT string_agg(id || '=' || (tz AT TIME ZONE 'UTC')::text || '/' || note, ' ' ORDER BY id) FROM epochcsv}),
	'1=2024-05-01 12:00:00/10 2=2024-05-01 12:00:00.25/20 3=2024-05-01 12:00:00/30',
	'unquoted CSV numbers are Unix time in seconds');
like(sql(q{SELECT error FROM stream_ext.dead_letters WHERE source = 'epochcsv_src'}),
	qr/^date\/time field value out of range: "1714564800"/, 'a quoted number is text for the input function');

# the option is checked at create
my ($rc, $out, $err) = $node->psql('postgres',
	q{SELECT stream_ext.create_kafka_source('bad_unit', 'epochs', '} . $broker->bootstrap . q{', 'epochs', 'json', '{"epoch_unit": "minutes"}')});
like($err, qr/invalid value for option "epoch_unit": "minutes"/, 'an unknown epoch_unit is refused');
($rc, $out, $err) = $node->psql('postgres',
	q{SELECT stream_ext.create_kafka_source('bad_fmt', 'epochs', '} . $broker->bootstrap . q{', 'epochs', 'text', '{"epoch_unit": "s", "column": "txt"}')});
like($err, qr/option "epoch_unit" applies only to formats "json", "csv" and "debezium-json"/, 'epoch_unit only for json, csv and debezium-json');

done_testing();
