# Non-retaining streams (create_stream(..., retain => false)) beyond one
# session: a Kafka source loading one through the bulk-insert path
# (table_multi_insert, src/kafka/bulk_insert.c), pg_dump / pg_restore (the
# dump names the access method stream_ext_discard; the stream and its views
# come back and keep being maintained), a crash (the unlogged stream's
# files are reset from their init fork), and ALTER EXTENSION UPDATE from
# 0.2 followed by a new non-retaining stream.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use StreamExtTAP;

my $kafka = broker_path() && system('sh', '-c', 'command -v kcat >/dev/null') == 0;
my $broker;
$broker = start_broker('--partitions', '2', '--topic', 'ev') if $kafka;

my $node = stream_ext_node('noretain', max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

$node->safe_psql('postgres', 'CREATE DATABASE src;');
sql('src', q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int', retain => false);
SELECT stream_ext.create_stream('kept', 'k int, v int');
CREATE VIEW per_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT v) AS nd FROM ev GROUP BY k;
-- a transform from the non-retaining stream into a retaining one: the oracle
CREATE VIEW ev_copy WITH (continuous, output_stream = 'kept') AS SELECT k, v FROM ev;
});

my $oracle = q{SELECT k, count(*), sum(v), count(DISTINCT v) FROM kept GROUP BY k};
sub view_ok
{
	my ($db, $what) = @_;
	is(sql($db, qq{SELECT count(*) FROM ((TABLE per_k EXCEPT ALL $oracle) UNION ALL
                                        ($oracle EXCEPT ALL TABLE per_k)) d}),
		'0', "$db: the view equals its query over the rows $what");
	is(sql($db, 'SELECT count(*) FROM ev'), '0', "$db: the stream stores no rows $what");
}

my $next = 1;
sub insert_rows
{
	my ($db, $n) = @_;
	my ($from, $to) = ($next, $next + $n - 1);
	$next += $n;
	sql($db, qq{INSERT INTO ev SELECT i % 5, i % 17 FROM generate_series($from, $to) i});
}

# ---- Kafka: the source's bulk insert into a stream that keeps nothing -------
SKIP:
{
	skip 'embedded broker not built or kcat not installed', 4 unless $kafka;
	my $bootstrap = $broker->bootstrap;
	sql('src', qq{
SELECT stream_ext.create_kafka_source('ev_src', 'ev', '$bootstrap', 'ev', 'json',
  '{"batch_size": 500, "max_wait_ms": 200}');
SELECT stream_ext.start_source('ev_src');});
	$broker->produce('ev', [ map { sprintf('{"k":%d,"v":%d}', $_ % 5, $_ % 17) } 1 .. 2000 ], 0);
	$broker->produce('ev', [ map { sprintf('{"k":%d,"v":null}', $_ % 3) } 1 .. 1000 ], 1);
	ok($node->poll_query_until('src', total_stored('ev_src'), '3000'), 'src: all messages consumed')
	  or diag(sql('src', 'SELECT * FROM stream_ext.source_status'));
	sql('src', q{SELECT stream_ext.stop_source('ev_src')});
	is(sql('src', q{SELECT sum(n) FROM per_k}), '3000', 'src: the view counts every message once');
	view_ok('src', 'loaded from Kafka');
}

insert_rows('src', 500);
view_ok('src', 'inserted');

# ---- pg_dump / pg_restore -------------------------------------------------------
my $dir = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', "$dir/src.dump" ],
	'pg_dump -Fc');
$node->command_ok([ 'pg_dump', '-Fp', '-d', $node->connstr('src'), '-f', "$dir/src.sql" ],
	'pg_dump -Fp');
like(slurp_file("$dir/src.sql"),
	qr/SET default_table_access_method = stream_ext_discard;(?:(?!SET default_table_access_method).)*CREATE UNLOGGED TABLE public\.ev \(/s,
	'the dump creates the stream with the access method stream_ext_discard');

$node->safe_psql('postgres', 'CREATE DATABASE custom; CREATE DATABASE plain;');
for my $cmd ([ 'pg_restore', '-d', $node->connstr('custom'), "$dir/src.dump" ],
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('plain'), '-f', "$dir/src.sql" ])
{
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run($cmd, '>', \$out, '2>', \$err);
	ok($ok && $err eq '', "$cmd->[0] succeeds without a message") or diag("$out\n$err");
}

my $saved_next = $next;
for my $db ('custom', 'plain')
{
	$next = $saved_next;
	is(sql($db, q{SELECT a.amname || ' ' || s.retain || ' ' || coalesce(s.retention::text, '-')
                    FROM stream_ext.stream_catalog s JOIN pg_class c ON c.oid = s.stream
                    JOIN pg_am a ON a.oid = c.relam WHERE s.stream = 'ev'::regclass}),
		'stream_ext_discard false -', "$db: the stream still stores nothing, retain false, no retention");
	view_ok($db, 'after the restore');
	insert_rows($db, 700);
	view_ok($db, 'inserted after the restore');
	my ($ret, $out, $err) = $node->psql($db, 'DROP EXTENSION stream_ext');
	like($err, qr/cannot drop extension stream_ext because other objects depend on it/,
		"$db: DROP EXTENSION needs CASCADE");
}

# ---- a crash: the unlogged stream's files are reset, views are intact ---------
my $before = sql('custom', 'SELECT sum(n) FROM per_k');
$node->stop('immediate');
$node->start;
is(sql('custom', 'SELECT sum(n) FROM per_k'), $before, 'custom: the view survived the crash');
# (the oracle, stream kept, is unlogged too: emptied by the crash)
insert_rows('custom', 300);
is(sql('custom', 'SELECT sum(n) FROM per_k'), $before + 300, 'custom: maintained after the crash');
is(sql('custom', 'SELECT count(*) FROM ev'), '0', 'custom: the stream still stores nothing');

# ---- ALTER EXTENSION UPDATE from 0.2, then a new non-retaining stream --------
$node->safe_psql('postgres', 'CREATE DATABASE old;');
sql('old', q{
SET client_min_messages = warning;
CREATE EXTENSION stream_ext VERSION '0.2';
SELECT stream_ext.create_stream('ev0', 'k int');
ALTER EXTENSION stream_ext UPDATE;
SELECT stream_ext.create_stream('ev1', 'k int', retain => false);
CREATE VIEW n1 WITH (continuous) AS SELECT count(*) AS n FROM ev1;
INSERT INTO ev1 SELECT generate_series(1, 1234);
INSERT INTO ev0 VALUES (1);});
is(sql('old', q{SELECT (SELECT n FROM n1) || ' ' || (SELECT count(*) FROM ev1) || ' '
                || (SELECT count(*) FROM ev0)
                || ' ' || (SELECT string_agg(stream::text || '=' || retain, ',' ORDER BY stream::text)
                             FROM stream_ext.stream_catalog)}),
	'1234 0 1 ev0=true,ev1=false', 'old: after the update, old streams keep rows and new ones need not');

$node->stop;
$broker->stop if $broker;
done_testing();
