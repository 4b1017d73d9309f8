# Kafka ingest end to end, against the embedded broker (test/broker):
# the oracle (views equal plain SQL over exactly the N messages produced),
# dead letters, formats, stop/start, restart and crash mid-stream
# (exactly-once through the stored offsets), two sources into one stream,
# parallelism 2 over 4 partitions, owner rights, errors, broker down.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;

skip_unless_kafka();

# ---- broker ---------------------------------------------------------------
my $broker = start_broker(
	'--partitions', '4', '--topic', 'clicks', '--topic',
	'par', '--partitions', '1', '--topic', 'csvt', '--topic', 'textt',
	'--topic', 'two_a', '--topic', 'two_b', '--topic', 'stopper', '--topic', 'checked',
	'--missing-topic', 'no_such_topic');
my $bootstrap = $broker->bootstrap;

# ---- cluster --------------------------------------------------------------
my $node = stream_ext_node(
	'kafka',
	max_worker_processes => 32,
	'stream_ext.kafka_launcher_naptime' => 2,
	restart_after_crash => 'on');

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('clicks', 'url text, user_id int, amount numeric, country text');
CREATE VIEW clicks_by_url WITH (continuous) AS
  SELECT url, count(*) AS hits, sum(user_id) AS users, sum(amount) AS amount
    FROM clicks GROUP BY url;
CREATE VIEW clicks_by_country WITH (continuous) AS
  SELECT country, count(*) AS hits FROM clicks GROUP BY country;
-- the oracle: the same messages, decoded by plain SQL
CREATE TABLE oracle (payload text);
});
create_sqlstate_of($node);

# N messages, spread over the 4 partitions, each message once
my $next_id = 1;

sub messages
{
	my ($n) = @_;
	my @m;
	for (1 .. $n)
	{
		my $i = $next_id++;
		push @m,
		  sprintf('{"url":"/p%d","user_id":%d,"amount":%d.25,"geo":{"country":"c%d"}}',
			$i % 7, $i, $i % 13, $i % 3);
	}
	return \@m;
}

sub produce_clicks
{
	my ($msgs, $no_oracle) = @_;
	my @parts = ([], [], [], []);
	push @{ $parts[ $_ % 4 ] }, $msgs->[$_] for 0 .. $#$msgs;
	$broker->produce('clicks', $parts[$_], $_) for 0 .. 3;
	add_to_oracle($msgs) unless $no_oracle;
}

sub add_to_oracle
{
	my ($msgs) = @_;
	my $vals = join(',', map { "('$_')" } @$msgs);
	sql("INSERT INTO oracle VALUES $vals");
}

my $oracle_check = q{
SELECT (SELECT count(*) FROM (
          SELECT url, hits, users, amount FROM clicks_by_url
          EXCEPT
          SELECT j->>'url', count(*), sum((j->>'user_id')::int), sum((j->>'amount')::numeric)
            FROM (SELECT payload::jsonb AS j FROM oracle) o GROUP BY 1) d)
     + (SELECT count(*) FROM (
          SELECT j->>'url', count(*), sum((j->>'user_id')::int), sum((j->>'amount')::numeric)
            FROM (SELECT payload::jsonb AS j FROM oracle) o GROUP BY 1
          EXCEPT
          SELECT url, hits, users, amount FROM clicks_by_url) d)
     + (SELECT count(*) FROM (
          SELECT country, hits FROM clicks_by_country
          EXCEPT
          SELECT j->'geo'->>'country', count(*)
            FROM (SELECT payload::jsonb AS j FROM oracle) o GROUP BY 1) d)
};

# ---- 1. the oracle, with malformed messages -----------------------------
sql(q{SELECT stream_ext.create_kafka_source('clicks_src', 'clicks', '} . $bootstrap . q{', 'clicks', 'json',
      '{"paths": {"country": "geo.country"}, "batch_size": 500}')});
sql(q{SELECT stream_ext.start_source('clicks_src')});

my $N = 3000;
produce_clicks(messages($N));
# three bad messages on partition 1
$broker->produce('clicks', [ 'not json at all', '{"url":"/bad","user_id":"abc"}', '[1,2,3]' ], 1);
my $produced = $N + 3;

wait_for(total_stored('clicks_src'), $produced, "all $produced messages consumed and their offsets stored");
is(sql($oracle_check), '0', 'every view equals the oracle over exactly the N messages');
is(sql('SELECT count(*) FROM clicks'), $N, 'the stream got exactly the N good messages');
is( sql(q{SELECT string_agg(error, ' | ' ORDER BY "offset") FROM stream_ext.dead_letters
        WHERE source = 'clicks_src' AND partition = 1}),
	'invalid input syntax for type json | invalid input syntax for type integer: "abc" | JSON message is not an object',
	'malformed messages land in dead letters with their errors');
is( sql(q{SELECT string_agg(convert_from(payload, 'UTF8'), ',' ORDER BY "offset") FROM stream_ext.dead_letters
        WHERE source = 'clicks_src'}),
	'not json at all,{"url":"/bad","user_id":"abc"},[1,2,3]',
	'dead letters keep the payload');
is( sql(q{SELECT state, workers, messages, errors, dead_letters, lag, batches > 0
          FROM stream_ext.source_status WHERE source = 'clicks_src'}),
	"running|1|$produced|3|3|0|t", 'source_status counts messages, errors, lag');
is(sql(q{SELECT count(*) FROM stream_ext.source_partitions WHERE source = 'clicks_src' AND lag = 0}),
	'4', 'lag per partition');

# ---- 2. stop / start ------------------------------------------------------
sql(q{SELECT stream_ext.stop_source('clicks_src')});
wait_for(q{SELECT workers FROM stream_ext.source_status WHERE source = 'clicks_src'}, '0', 'stop_source stops the workers');
is(sql(q{SELECT state FROM stream_ext.source_status WHERE source = 'clicks_src'}), 'stopped', 'state is stopped');
produce_clicks(messages(400));
$produced += 400;
sleep 1;
is(sql('SELECT count(*) FROM clicks'), $N, 'nothing is consumed while stopped');
sql(q{SELECT stream_ext.start_source('clicks_src')});
wait_for(total_stored('clicks_src'), $produced, 'start_source resumes from the stored offsets');
is(sql($oracle_check), '0', 'views equal the oracle after stop/start (no loss, no duplicate)');

# ---- 3. restart mid-stream --------------------------------------------------
my $msgs = messages(20000);
produce_clicks($msgs, 1);
$produced += 20000;
note('stored at restart: ' . sql(total_stored('clicks_src')) . " of $produced");
$node->restart(mode => 'fast');
add_to_oracle($msgs);
wait_for(total_stored('clicks_src'), $produced, 'after a restart mid-stream the launcher resumes the source');
is(sql($oracle_check), '0', 'views equal the oracle after a restart mid-stream (exactly once)');

# ---- 4. crash mid-stream ---------------------------------------------------
$msgs = messages(20000);
my $pid = sql(q{SELECT pid FROM stream_ext.kafka_worker_stats() LIMIT 1});
produce_clicks($msgs, 1);
$produced += 20000;
my $log_offset = -s $node->logfile;
kill 'KILL', $pid;
# the postmaster resets every backend after a worker's crash: wait for that,
# or a query may connect just before the reset and be cut off
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
note('stored at crash: about ' . $node->safe_psql('postgres', total_stored('clicks_src')) . " of $produced")
  if $node->poll_query_until('postgres', 'SELECT 1', '1');
add_to_oracle($msgs);
wait_for(total_stored('clicks_src'), $produced, 'after a crash the launcher restarts the source');
is(sql($oracle_check), '0', 'views equal the oracle after a crash mid-stream (exactly once)');
isnt(sql(q{SELECT pid FROM stream_ext.kafka_worker_stats() LIMIT 1}), $pid, 'a new worker runs');

# ---- 5. CSV and text formats, metadata columns --------------------------
sql(q{
SELECT stream_ext.create_stream('rows', 'a int, b text, c numeric, k text, p int, o bigint, t timestamptz');
SELECT stream_ext.create_stream('lines', 'line text');
SELECT stream_ext.create_kafka_source('csv_src', 'rows', '} . $bootstrap . q{', 'csvt', 'csv',
  '{"key_column": "k", "partition_column": "p", "offset_column": "o", "timestamp_column": "t"}');
SELECT stream_ext.create_kafka_source('text_src', 'lines', '} . $bootstrap . q{', 'textt', 'text');
SELECT stream_ext.start_source('csv_src');
SELECT stream_ext.start_source('text_src');
});
$broker->produce('csvt', [ '1,plain,1.5', '2,"quoted, comma",2', '3,,3', '4,"",4', 'x,bad,1', '5,a,1,extra', '6,"a ""q""",6' ]);
$broker->produce('textt', [ 'hello world', 'line two' ]);
wait_for(total_stored('csv_src'), '7', 'csv messages consumed');
wait_for(total_stored('text_src'), '2', 'text messages consumed');
is( sql(q{SELECT string_agg(format('%s|%s|%s|%s|%s|%s', a, coalesce(b, 'NULL'), c, p, o, t IS NOT NULL), ';' ORDER BY a) FROM rows}),
	'1|plain|1.5|0|0|t;2|quoted, comma|2|0|1|t;3|NULL|3|0|2|t;4||4|0|3|t;6|a "q"|6|0|6|t',
	'CSV follows COPY rules; partition/offset/timestamp columns are filled');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'csv_src'}), '2', 'bad CSV records are dead-lettered');
is(sql(q{SELECT string_agg(line, ',' ORDER BY line) FROM lines}), 'hello world,line two', 'text format');

# ---- 6. two sources into one stream ----------------------------------------
sql(q{
SELECT stream_ext.create_stream('two', 'src text, n int');
CREATE VIEW two_v WITH (continuous) AS SELECT src, count(*) AS c, sum(n) AS s FROM two GROUP BY src;
SELECT stream_ext.create_kafka_source('two_a', 'two', '} . $bootstrap . q{', 'two_a');
SELECT stream_ext.create_kafka_source('two_b', 'two', '} . $bootstrap . q{', 'two_b');
SELECT stream_ext.start_source('two_a');
SELECT stream_ext.start_source('two_b');
});
$broker->produce('two_a', [ map { qq({"src":"a","n":$_}) } 1 .. 1000 ]);
$broker->produce('two_b', [ map { qq({"src":"b","n":$_}) } 1 .. 700 ]);
wait_for(q{SELECT string_agg(format('%s:%s:%s', src, c, s), ',' ORDER BY src) FROM two_v},
	'a:1000:500500,b:700:245350', 'two sources feed one stream and its view');

# ---- 7. parallelism 2 over 4 partitions --------------------------------------
sql(q{
SELECT stream_ext.create_stream('par', 'n int');
CREATE VIEW par_v WITH (continuous) AS SELECT count(*) AS c, sum(n) AS s FROM par;
SELECT stream_ext.create_kafka_source('par_src', 'par', '} . $bootstrap . q{', 'par', 'json', '{"workers": 2}');
SELECT stream_ext.start_source('par_src');
});
for my $p (0 .. 3) { $broker->produce('par', [ map { qq({"n":$_}) } grep { $_ % 4 == $p } 1 .. 2000 ], $p); }
wait_for(q{SELECT format('%s:%s', c, s) FROM par_v}, '2000:2001000', 'two workers consume all 4 partitions');
is(sql(q{SELECT workers FROM stream_ext.source_status WHERE source = 'par_src'}), '2', 'two workers run');
is( sql(q{SELECT string_agg(format('%s:%s', partition, worker), ',' ORDER BY partition)
          FROM stream_ext.source_partitions WHERE source = 'par_src'}),
	'0:0,1:1,2:0,3:1', 'partitions are spread across the workers');

# ---- 8. owner rights ------------------------------------------------------
sql(q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
SELECT stream_ext.create_stream('alice_s', 'v text');
GRANT INSERT, SELECT ON alice_s TO alice;
});
is(sql(q{SET ROLE bob; SELECT sqlstate_of($$SELECT stream_ext.create_kafka_source('b', 'alice_s', 'x:1', 't')$$)}),
	'42501', 'creating a source needs INSERT on the stream');
sql(q{SET ROLE alice; SELECT stream_ext.create_kafka_source('alice_src', 'alice_s', '} . $bootstrap . q{', 'stopper', 'text');
    SELECT stream_ext.start_source('alice_src');});
wait_for(q{SELECT count(*) FROM pg_stat_activity WHERE usename = 'alice' AND backend_type = 'stream_ext kafka worker'},
	'1', "the worker runs as the source's owner");
is(sql(q{SET ROLE bob; SELECT sqlstate_of($$SELECT stream_ext.stop_source('alice_src')$$)}), '42501', 'others cannot stop it');
is(sql(q{SET ROLE bob; SELECT count(*) FROM stream_ext.source_status WHERE source = 'alice_src'}), '0', 'nor see it');
sql(q{SET ROLE alice; SELECT stream_ext.stop_source('alice_src'); SELECT stream_ext.drop_source('alice_src');});
is(sql(q{SELECT count(*) FROM stream_ext.kafka_sources WHERE name = 'alice_src'}), '0', 'the owner can drop it');

# ---- 9. errors --------------------------------------------------------------
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.start_source('nope')$$)}), '42704', 'unknown source: undefined_object');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_source('f', 'lines', 'x:1', 't', 'xml')$$)}),
	'22023', 'bad format: invalid_parameter_value');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_source('f', 'lines', 'x:1', 't', 'text', '{"bogus": 1}')$$)}),
	'22023', 'unknown option: invalid_parameter_value');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_source('f', 'lines', 'x:1', 't', 'text', '{"socket.timeout.ms": "abc"}')$$)}),
	'22023', 'bad librdkafka property: invalid_parameter_value');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_source('text_src', 'lines', 'x:1', 't', 'text')$$)}),
	'42710', 'duplicate source: duplicate_object');
is(sql(q{SELECT count(*) FROM stream_ext.kafka_sources WHERE name = 'f'}), '0', 'nothing half-created');

# ---- 10. broker down, topic missing -------------------------------------------
sql(q{SELECT stream_ext.create_kafka_source('down', 'lines', '127.0.0.1:1', 't', 'text');
    SELECT stream_ext.start_source('down');
    SELECT stream_ext.create_kafka_source('missing', 'lines', '} . $bootstrap . q{', 'no_such_topic', 'text');
    SELECT stream_ext.start_source('missing');});
wait_for(q{SELECT state, last_error IS NOT NULL FROM stream_ext.source_status WHERE source = 'down'}, "retrying|t",
	'broker down: the source retries and reports the error');
wait_for(q{SELECT state, last_error LIKE '%no_such_topic%' FROM stream_ext.source_status WHERE source = 'missing'}, "retrying|t",
	'topic missing: the source retries and reports the error');
my $p1 = sql(q{SELECT pid FROM stream_ext.kafka_worker_stats() w JOIN stream_ext.kafka_sources s ON s.id = w.source_id WHERE s.name = 'down'});
sleep 2;
is(sql(q{SELECT pid FROM stream_ext.kafka_worker_stats() w JOIN stream_ext.kafka_sources s ON s.id = w.source_id WHERE s.name = 'down'}),
	$p1, 'the worker retries in place (no crash loop)');
sql(q{SELECT stream_ext.stop_source('down'); SELECT stream_ext.drop_source('missing');});
wait_for(q{SELECT workers FROM stream_ext.source_status WHERE source = 'down'}, '0',
	'a retrying worker exits when its source is stopped');
wait_for(q{SELECT count(*) FROM stream_ext.kafka_worker_stats() w
            WHERE NOT EXISTS (SELECT 1 FROM stream_ext.kafka_sources s WHERE s.id = w.source_id AND s.state = 'running')}, '0',
	'and so does one whose source is dropped');
sql(q{SELECT stream_ext.drop_source('down')});

# ---- 11. on_error = 'stop' and 'skip' -------------------------------------------
sql(q{SELECT stream_ext.create_stream('strict', 'n int');
    SELECT stream_ext.create_kafka_source('strict_src', 'strict', '} . $bootstrap . q{', 'stopper', 'json', '{"on_error": "stop"}');
    SELECT stream_ext.start_source('strict_src');});
$broker->produce('stopper', [ '{"n":1}', '{"n":"x"}', '{"n":3}' ]);
wait_for(q{SELECT state FROM stream_ext.source_status WHERE source = 'strict_src'}, 'failed',
	"on_error 'stop' marks the source failed");
is(sql(q{SELECT count(*) FROM strict}) . '|' . sql(total_stored('strict_src')), '0|0',
	'the failed batch is not applied and its offsets are not stored');
like(sql(q{SELECT last_error FROM stream_ext.kafka_sources WHERE name = 'strict_src'}), qr/invalid input syntax/, 'and the error is kept');
sql(q{SELECT stream_ext.drop_source('strict_src');
    SELECT stream_ext.create_kafka_source('lax_src', 'strict', '} . $bootstrap . q{', 'stopper', 'json', '{"on_error": "skip"}');
    SELECT stream_ext.start_source('lax_src');});
wait_for(total_stored('lax_src'), '3', "on_error 'skip' goes on");
is(sql(q{SELECT string_agg(n::text, ',' ORDER BY n) FROM strict}) . '|'
	  . sql(q{SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'lax_src'}),
	'1,3|0', 'and writes no dead letter');

# ---- 12. a row the stream refuses: the batch is split to find it -----------
sql(q{SELECT stream_ext.create_stream('checked', 'n int CHECK (n > 0)');
    CREATE VIEW checked_v WITH (continuous) AS SELECT count(*) AS c, sum(n) AS s FROM checked;
    SELECT stream_ext.create_kafka_source('checked_src', 'checked', '} . $bootstrap . q{', 'checked', 'json');
    SELECT stream_ext.start_source('checked_src');});
$broker->produce('checked', [ '{"n":1}', '{"n":-5}', '{"n":2}', '{"n":3}' ]);
wait_for(total_stored('checked_src'), '4', 'a batch with a row the stream refuses is consumed');
is(sql(q{SELECT format('%s:%s', c, s) FROM checked_v}), '3:6', 'the other rows of the batch are applied once');
like(sql(q{SELECT format('%s:%s', "offset", error) FROM stream_ext.dead_letters WHERE source = 'checked_src'}),
	qr/^1:.*violates check constraint/, 'the refused row is a dead letter with its offset and reason');

$node->stop;
$broker->stop;
done_testing();
