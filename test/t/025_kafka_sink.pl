# Kafka sinks end to end, against the embedded broker (test/broker), read
# back with kcat: the topic holds exactly the committed rows (count,
# content, keys, order per partition), nothing of a rolled-back transaction
# or savepoint; a clean restart mid-way re-sends nothing and loses nothing;
# a crash of the worker re-sends at most the rows not yet recorded; stop,
# start and drop; the acknowledged-but-unrecorded window made deterministic
# with a lock (exactly those rows are sent again); csv and text formats; an
# unreachable broker; a Kafka source feeding a sink; owner rights; errors.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use StreamExtTAP;

# kcat -J lines are UTF-8 bytes; the payloads inside them are then characters
my $J = JSON::PP->new;

skip_unless_kafka();

# ---- broker ---------------------------------------------------------------
my $broker = start_broker(
	'--partitions', '3', '--topic', 'events_out',
	'--partitions', '1', '--topic', 'csv_out', '--topic', 'text_out',
	'--topic', 'alice_out', '--topic', 'views_out', '--topic', 'chain_in',
	'--topic', 'chain_out');
my $bootstrap = $broker->bootstrap;

# ---- cluster --------------------------------------------------------------
my $node = stream_ext_node(
	'sink',
	max_worker_processes => 32,
	'stream_ext.kafka_launcher_naptime' => 2,
	restart_after_crash => 'on');

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.sink_status') }

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('events', 'id int, user_id int, note text');
});
create_sqlstate_of($node);

my $sink_done = q{SELECT queued_rows = 0 AND state = 'running' FROM stream_ext.sink_status WHERE sink = 'ev'};

# ---- 1. exactly the committed rows ------------------------------------------
sql(qq{SELECT stream_ext.create_kafka_sink('ev', 'events', '$bootstrap', 'events_out', 'json', 'user_id',
       '{"batch_size": 40}')});
# rows appended before start_sink are queued too
sql(q{INSERT INTO events SELECT i, i % 7, 'n' || i FROM generate_series(1, 50) i});
sql(q{SELECT stream_ext.start_sink('ev')});
sql(q{INSERT INTO events SELECT i, i % 7, 'n' || i FROM generate_series(51, 120) i});
sql(q{BEGIN; INSERT INTO events SELECT i, i % 7, 'rolled back' FROM generate_series(9001, 9050) i; ROLLBACK;});
sql(q{BEGIN;
      INSERT INTO events SELECT i, i % 7, 'n' || i FROM generate_series(121, 150) i;
      SAVEPOINT s;
      INSERT INTO events SELECT i, i % 7, 'rolled back' FROM generate_series(9101, 9120) i;
      ROLLBACK TO s;
      INSERT INTO events SELECT i, i % 7, 'n' || i FROM generate_series(151, 200) i;
      COMMIT;});
# one row at a time too, NULLs and characters JSON must escape
sql(q{INSERT INTO events VALUES (201, NULL, NULL)});
sql(q{INSERT INTO events VALUES (202, 3, E'quote " backslash \\\\ tab \\t é')});
wait_for($sink_done, 't', 'sink delivered every queued row');

# the expected messages, in seq order
my @expected;
push @expected, { id => $_, user_id => $_ % 7, note => "n$_" } for 1 .. 200;
push @expected, { id => 201, user_id => undef, note => undef };
push @expected, { id => 202, user_id => 3, note => "quote \" backslash \\ tab \t \x{e9}" };

sub check_topic
{
	my ($msgs, $n, $what) = @_;
	is(scalar(@$msgs), $n, "$what: topic holds $n messages");
	my (%seen, %part_of_key, $bad_key, $bad_order, $dup);
	my %last_in_part;
	my %want = map { $_->{id} => $_ } @expected;
	my $mismatch = 0;
	for my $m (@$msgs)
	{
		my $row = $J->decode($m->{payload});
		$dup++ if $seen{ $row->{id} }++;
		my $w = $want{ $row->{id} };
		if (!$w || join('|', sort keys %$row) ne 'id|note|user_id'
			|| (defined $w->{note} ? ($row->{note} // "\0") ne $w->{note} : defined $row->{note})
			|| (defined $w->{user_id} ? ($row->{user_id} // -1) != $w->{user_id} : defined $row->{user_id}))
		{
			$mismatch++;
			diag("unexpected message: $m->{payload}") if $mismatch < 5;
		}
		my $key = $m->{key};
		$bad_key++ if (defined $row->{user_id} ? ($key // '') ne "$row->{user_id}" : defined $key);
		if (defined $key)
		{
			$part_of_key{$key} //= $m->{partition};
			$bad_key++ if $part_of_key{$key} != $m->{partition};
		}
		$bad_order++ if defined $last_in_part{ $m->{partition} }
		  && $last_in_part{ $m->{partition} } > $row->{id};
		$last_in_part{ $m->{partition} } = $row->{id};
	}
	is($mismatch, 0, "$what: every message is one committed row, exactly (JSON of the row)");
	is($dup // 0, 0, "$what: no row delivered twice");
	is(scalar(keys %seen), $n, "$what: every committed row delivered");
	is($bad_key // 0, 0, "$what: key is user_id, NULL for a NULL user_id; one partition per key");
	is($bad_order // 0, 0, "$what: rows in insert order within each partition");
}

my $msgs = $broker->consume('events_out');
check_topic($msgs, 202, 'first rows');
ok(!(grep { $_->{payload} =~ /rolled back/ } @$msgs), 'nothing of a rolled-back transaction or savepoint');
is((grep { $_->{payload} =~ /^\{"id":1,/ } @$msgs)[0]{payload}, '{"id":1,"user_id":1,"note":"n1"}',
	'payload is row_to_json of the row without arrival_timestamp');
is(sql(q{SELECT rows_delivered, delivered_seq > 0, batches >= 6, errors, last_error IS NULL
           FROM stream_ext.sink_status WHERE sink = 'ev'}), '202|t|t|0|t',
	'sink_status counts the delivered rows and batches');

# ---- 2. clean restart mid-way ----------------------------------------------
sql(q{INSERT INTO events SELECT i, i % 7, 'n' || i FROM generate_series(203, 1200) i});
push @expected, { id => $_, user_id => $_ % 7, note => "n$_" } for 203 .. 1200;
note('queued at restart: ' . sql(q{SELECT queued_rows FROM stream_ext.sink_status}));
$node->restart(mode => 'fast');
wait_for($sink_done, 't', 'after a restart the launcher resumes the sink');
check_topic($broker->consume('events_out'), 1200, 'after a clean restart');
is(sql(q{SELECT rows_delivered FROM stream_ext.kafka_sinks WHERE name = 'ev'}), '1200',
	'rows_delivered survives the restart');

# ---- 3. crash of the worker mid-delivery -------------------------------------
sql(q{INSERT INTO events SELECT i, i % 7, 'n' || i FROM generate_series(1201, 3200) i});
push @expected, { id => $_, user_id => $_ % 7, note => "n$_" } for 1201 .. 3200;
$node->poll_query_until('postgres',
	q{SELECT rows_delivered > 1300 FROM stream_ext.kafka_sinks WHERE name = 'ev'});
my $pid = sql(q{SELECT pid FROM stream_ext.sink_status WHERE sink = 'ev'});
my $at_crash = sql(q{SELECT rows_delivered FROM stream_ext.kafka_sinks WHERE name = 'ev'});
kill 'KILL', $pid;
note("recorded at crash: $at_crash of 3200");
$node->poll_query_until('postgres', 'SELECT 1', '1');
wait_for($sink_done, 't', 'after a crash the launcher restarts the sink');
$msgs = $broker->consume('events_out');
my %count;
$count{ $J->decode($_->{payload})->{id} }++ for @$msgs;
is(scalar(grep { !$count{$_} } 1 .. 3200), 0, 'after a crash no row is lost');
is(scalar(grep { $count{$_} > 1 } 1 .. 1200), 0, 'rows recorded before the crash are not re-sent');
my @dups = grep { $count{$_} > 1 } 1 .. 3200;
note('re-sent after the crash (acknowledged, not recorded): ' . scalar(@dups));
ok(scalar(@dups) <= 40, 're-sent at most the rows of the batch in flight (batch_size 40)');
is(sql(q{SELECT rows_delivered FROM stream_ext.kafka_sinks WHERE name = 'ev'}), '3200',
	'rows_delivered counts every row once');

# ---- 3b. acknowledged but not recorded: exactly those rows are sent again ----
# Hold the sink's catalog row so the worker, having its acknowledgements,
# blocks in the transaction that records them; then crash it.
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{BEGIN; SELECT 1 FROM stream_ext.kafka_sinks WHERE name = 'ev' FOR UPDATE});
sql(q{INSERT INTO events SELECT i, i % 7, 'n' || i FROM generate_series(3301, 3330) i});
push @expected, { id => $_, user_id => $_ % 7, note => "n$_" } for 3301 .. 3330;
wait_for(q{SELECT count(*) FROM pg_stat_activity
            WHERE application_name = 'stream_ext sink ev' AND wait_event_type = 'Lock'}, '1',
	'the worker has its acknowledgements and waits to record them');
my %before;
$before{ $J->decode($_->{payload})->{id} }++ for @{ $broker->consume('events_out') };
is(scalar(grep { ($before{$_} // 0) == 1 } 3301 .. 3330), 30, 'the 30 rows are in the topic once');
kill 'KILL', sql(q{SELECT pid FROM stream_ext.sink_status WHERE sink = 'ev'});
eval { $bg->quit };
$node->poll_query_until('postgres', 'SELECT 1', '1');
wait_for($sink_done, 't', 'after the crash the sink resumes');
$msgs = $broker->consume('events_out');
%count = ();
$count{ $J->decode($_->{payload})->{id} }++ for @$msgs;
is(scalar(grep { $count{$_} == 2 } 3301 .. 3330), 30,
	'the acknowledged but unrecorded rows are sent again, once more');
is(scalar(grep { $count{$_} != ($before{$_} // 0) } 1 .. 3200), 0, 'nothing else is sent again');
is(sql(q{SELECT rows_delivered FROM stream_ext.kafka_sinks WHERE name = 'ev'}), '3230',
	'rows_delivered counts the recorded delivery only');

# ---- 4. stop, start, drop ----------------------------------------------------
sql(q{SELECT stream_ext.stop_sink('ev')});
wait_for(q{SELECT count(*) FROM stream_ext.kafka_sink_worker_stats()}, '0', 'stop_sink: the worker exits');
sql(q{INSERT INTO events SELECT i, i % 7, 'n' || i FROM generate_series(3201, 3210) i});
is(sql(q{SELECT state, queued_rows FROM stream_ext.sink_status WHERE sink = 'ev'}), 'stopped|10',
	'a stopped sink keeps queuing');
sql(q{SELECT stream_ext.start_sink('ev')});
wait_for($sink_done, 't', 'start_sink delivers what was queued');
is(scalar(@{ $broker->consume('events_out') }), scalar(@$msgs) + 10, 'the ten rows queued while stopped, once');
sql(q{SELECT stream_ext.drop_sink('ev')});
is(sql(q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'stream_ext_sink_%'}), '0',
	'drop_sink drops the queue trigger');
sql(q{INSERT INTO events VALUES (9999, 1, 'after drop')});
is(sql(q{SELECT count(*) FROM stream_ext.sink_queue}), '0', 'after drop_sink nothing is queued');
wait_for(q{SELECT count(*) FROM stream_ext.kafka_sink_worker_stats()}, '0', 'the worker of a dropped sink exits');

# ---- 5. csv and text ----------------------------------------------------------
sql(q{SELECT stream_ext.create_stream('lines', 'k text, a text, b numeric, t timestamptz')});
sql(qq{SELECT stream_ext.create_kafka_sink('csv', 'lines', '$bootstrap', 'csv_out', 'csv', 'k')});
sql(qq{SELECT stream_ext.create_kafka_sink('txt', 'lines', '$bootstrap', 'text_out', 'text', NULL,
       '{"columns": ["a"]}')});
sql(qq{SELECT stream_ext.create_kafka_sink('lj', 'lines', '$bootstrap', 'views_out', 'json', NULL,
       '{"columns": ["t", "k"]}')});
sql(q{SELECT stream_ext.start_sink('csv'); SELECT stream_ext.start_sink('txt'); SELECT stream_ext.start_sink('lj');});
sql(q{SET TimeZone = 'Europe/Paris';
      INSERT INTO lines VALUES ('k1', 'plain', 1.5, '2026-01-02 03:04:05+00'),
        ('k2', 'with,comma', NULL, NULL), (NULL, 'say "hi"', 2, NULL),
        ('k4', E'two\nlines', 3, NULL), ('k5', '', 4, NULL), ('k6', NULL, 5, NULL)});
wait_for(q{SELECT bool_and(queued_rows = 0 AND rows_delivered = 6) FROM stream_ext.sink_status}, 't',
	'csv, text and json sinks delivered');
is($broker->consume('views_out')->[0]{payload}, '{"t":"2026-01-02T03:04:05+00:00","k":"k1"}',
	'json: the columns of option "columns" in their order, timestamps in UTC');
my $csv = $broker->consume('csv_out');
is_deeply([ map { $_->{payload} } @$csv ],
	[ 'k1,plain,1.5,2026-01-02 03:04:05+00', 'k2,"with,comma",,', ',"say ""hi""",2,', qq{k4,"two\nlines",3,}, 'k5,"",4,', 'k6,,5,' ],
	'csv: one RFC 4180 line per row, NULL empty, timestamps in UTC');
is_deeply([ map { $_->{key} } @$csv ], [ 'k1', 'k2', undef, 'k4', 'k5', 'k6' ], 'csv: keys');
is_deeply([ map { $_->{payload} } @{ $broker->consume('text_out') } ],
	[ 'plain', 'with,comma', 'say "hi"', "two\nlines", '', undef ],
	'text: the column as text, NULL a tombstone');

# ---- 5b. broker unreachable: the rows wait in the queue ------------------------
sql(q{SELECT stream_ext.create_stream('dn', 'x int')});
sql(q{SELECT stream_ext.create_kafka_sink('down', 'dn', '127.0.0.1:1', 'nowhere', 'json', NULL,
       '{"message.timeout.ms": 1000}')});
sql(q{SELECT stream_ext.start_sink('down')});
sql(q{INSERT INTO dn SELECT generate_series(1, 3)});
wait_for(q{SELECT state = 'retrying' AND errors > 0 AND last_error IS NOT NULL
                  AND queued_rows = 3 AND rows_delivered = 0
             FROM stream_ext.sink_status WHERE sink = 'down'}, 't',
	'broker unreachable: state retrying, last_error set, rows stay queued');
sql(q{SELECT stream_ext.drop_sink('down')});
wait_for(q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'stream_ext sink down'}, '0',
	'a retrying sink worker exits when its sink is dropped');

# ---- 5c. chained: Kafka source -> stream -> Kafka sink -------------------------
# The source worker's batch INSERT fires the sink's trigger: what comes out
# of chain_out is what went into chain_in, once, in order.
sql(q{SELECT stream_ext.create_stream('chain', 'id int, name text')});
sql(qq{SELECT stream_ext.create_kafka_source('cin', 'chain', '$bootstrap', 'chain_in', 'json', '{"batch_size": 30}')});
sql(qq{SELECT stream_ext.create_kafka_sink('cout', 'chain', '$bootstrap', 'chain_out', 'json', 'name')});
sql(q{SELECT stream_ext.start_sink('cout'); SELECT stream_ext.start_source('cin');});
my @in = map { qq({"id":$_,"name":"x$_"}) } 1 .. 100;
$broker->produce('chain_in', \@in);
wait_for(q{SELECT rows_delivered FROM stream_ext.sink_status WHERE sink = 'cout'}, '100',
	'chained: the sink delivers what the source loaded');
my $out = $broker->consume('chain_out');
is_deeply([ map { $_->{payload} } @$out ], \@in, 'chained: chain_out holds chain_in, once, in order');
is_deeply([ map { $_->{key} } @$out ], [ map { "x$_" } 1 .. 100 ], 'chained: keys');
sql(q{SELECT stream_ext.drop_source('cin'); SELECT stream_ext.drop_sink('cout');});

# ---- 6. owner rights and errors -------------------------------------------------
sql(q{CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN; GRANT SELECT ON events TO alice;});
$node->safe_psql('postgres', qq{SELECT stream_ext.create_kafka_sink('alice_sink', 'events', '$bootstrap', 'alice_out', 'json', 'id');
                               SELECT stream_ext.start_sink('alice_sink')}, extra_params => [ '-U', 'alice' ]);
sql(q{INSERT INTO events VALUES (5001, 1, 'for alice')});
wait_for(q{SELECT rows_delivered FROM stream_ext.sink_status WHERE sink = 'alice_sink'}, '1',
	'a sink owned by a plain role with SELECT delivers');
is($broker->consume('alice_out')->[0]{payload}, '{"id":5001,"user_id":1,"note":"for alice"}', 'its message');
is(sql(q{SELECT usename FROM pg_stat_activity WHERE application_name = 'stream_ext sink alice_sink'}), 'alice',
	'the sink worker runs as the sink owner');
is($node->safe_psql('postgres', q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('b', 'events', 'x:1', 't')$$)},
	extra_params => [ '-U', 'bob' ]), '42501', 'creating a sink needs SELECT on the stream');
is($node->safe_psql('postgres', q{SELECT sqlstate_of($$SELECT stream_ext.stop_sink('alice_sink')$$)},
	extra_params => [ '-U', 'bob' ]), '42501', 'only the owner stops a sink');
is($node->safe_psql('postgres', q{SELECT count(*) FROM stream_ext.sink_status}, extra_params => [ '-U', 'bob' ]),
	'0', 'sink_status shows a role only its own sinks');
sql(q{REVOKE SELECT ON events FROM alice});
is(sql(q{SELECT sqlstate_of($$INSERT INTO events VALUES (5002, 1, 'x')$$)}), 'ok',
	'the stream takes rows its sink owner may no longer read (docs/security.md)');
is(sql(q{SELECT state FROM stream_ext.sink_status WHERE sink = 'alice_sink'}), 'failed',
	'... and the sink is marked failed instead of queuing them');
sql(q{SELECT stream_ext.drop_sink('alice_sink')});

is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', 'events', 'h:1', 't', 'avro')$$)}), '22023',
	'unknown format');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', 'events', 'h:1', 't', 'text')$$)}), '22023',
	'text needs exactly one column');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', 'events', 'h:1', 't', 'json', 'nope')$$)}), '42703',
	'unknown key column');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', 'events', 'h:1', 't', 'json', NULL, '{"enable.idempotence": false}')$$)}),
	'22023', 'enable.idempotence is managed');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', 'events', 'h:1', 't', 'json', NULL, '{"bogus": 1}')$$)}),
	'22023', 'unknown option');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('csv', 'events', 'h:1', 't')$$)}), '42710',
	'duplicate name');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.start_sink('nope')$$)}), '42704', 'unknown sink');

$node->stop;
$broker->stop;
done_testing();
