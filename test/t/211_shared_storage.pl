# Shared storage (src/ddl/shared_storage.c): three continuous views of one
# stream keep their states in one materialization and one delta.
# 1. A compaction of the storage killed with kill -9 inside its statement
#    (blocked on a materialization row another session holds): after the
#    restart every view equals its query over a logged copy of everything
#    committed, and again once the compactor has emptied the delta.
# 2. pg_dump/pg_restore of the database: the restored views are exact,
#    still share their storage (one materialization, one delta, one
#    compaction), go on with new rows, and DROP VIEW of a member keeps the
#    tables for the others (the restored dependencies are the stream's).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

my $node = stream_ext_node('shared_storage',
	restart_after_crash => 'on',
	'stream_ext.compact_naptime' => '100ms',
	'stream_ext.compact_lock_timeout' => 0);

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

my %oracle = (
	v_sum => q{SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s FROM ev_copy GROUP BY 1, 2},
	v_range => q{SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, min(v) AS lo, max(v) AS hi FROM ev_copy GROUP BY 1, 2},
	v_avg => q{SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, avg(v) AS a, count(v) AS nv FROM ev_copy GROUP BY 1, 2});

sub differing
{
	my ($db, @views) = @_;
	return sql($db, 'SELECT ' . join(' + ', map {
		qq{(SELECT count(*) FROM ((SELECT * FROM $_ EXCEPT ALL $oracle{$_})
		     UNION ALL ($oracle{$_} EXCEPT ALL SELECT * FROM $_)) d)}
	} (@views ? @views : sort keys %oracle)));
}

my $batch = 0;
sub batch_sql
{
	my ($rows) = @_;
	$batch++;
	return qq{WITH r AS (SELECT (hashint4(i + $batch * 100000) % 30 + 30) % 30 AS k,
	  timestamptz '2026-01-01 00:00+00' + ((i + $batch * 17) % 2400) * interval '50 ms' AS ts,
	  CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7 + $batch) % 101 END AS v FROM generate_series(1, $rows) i),
	  a AS (INSERT INTO ev SELECT * FROM r) INSERT INTO ev_copy SELECT * FROM r;};
}
sub load { my ($db, $n, $rows) = @_; sql($db, join("\n", map { batch_sql($rows) } 1 .. $n)) }

sub compactor
{
	my ($on) = @_;
	sql('postgres', "ALTER SYSTEM SET stream_ext.background_compaction = $on; SELECT pg_reload_conf()");
	poll_ok($node, q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'stream_ext compactor'},
		$on eq 'on' ? '1' : '0', "background compactor $on");
}

sub sharing
{
	my ($db) = @_;
	return sql($db, q{SELECT (SELECT count(*) FROM stream_ext.shared_storage) || ' '
	  || (SELECT count(*) FROM stream_ext.shared_storage_members) || ' '
	  || (SELECT count(DISTINCT matrel) || ' ' || count(DISTINCT delta) || ' '
	      || count(*) FILTER (WHERE compact_sql IS NOT NULL) FROM stream_ext.view_catalog)});
}

compactor('off');
sql('postgres', q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int');
CREATE TABLE ev_copy (k int, ts timestamptz, v int);
CREATE VIEW v_sum WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1, 2;
CREATE VIEW v_range WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, min(v) AS lo, max(v) AS hi FROM ev GROUP BY 1, 2;
CREATE VIEW v_avg WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, avg(v) AS a, count(v) AS nv FROM ev GROUP BY 1, 2;
});
is(sharing('postgres'), '1 3 1 1 1', 'one storage: three members, one materialization, one delta, one compaction');
load('postgres', 5, 300);
is(sql('postgres', 'SELECT stream_ext.compact(\'v_range\') > 0'), 't', 'compaction through a member');
is(differing('postgres'), '0', 'views exact after a compaction');

# 1. kill -9 inside a compaction of the storage
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
my $k = sql('postgres', 'SELECT k FROM v_sum_mrel WHERE k IS NOT NULL ORDER BY k LIMIT 1');
$locker->query_safe("SELECT 1 FROM v_sum_mrel WHERE k = $k FOR UPDATE");
load('postgres', 10, 300);
my $session = $node->background_psql('postgres');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/sent/, "\\echo sent\nSELECT stream_ext.compact('v_avg');\n");
my $until = time + 60;
my $blocked = '';
do
{
	$blocked = sql('postgres', qq{SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid = $pid});
	sleep 0.05 unless $blocked;
} while (!$blocked && time < $until);
ok($blocked, 'the compaction of the storage blocks inside its statement');
my $log_offset = -s $node->logfile;
kill 'KILL', $pid or die "cannot kill $pid: $!";
$node->wait_for_log(qr/all server processes terminated; reinitializing.*database system is ready to accept connections/s,
	$log_offset);
eval { $locker->quit };
eval { $session->quit };
is(differing('postgres'), '0', 'after the crash every member equals its query over what was committed');
compactor('on');
poll_ok($node, 'SELECT count(*) FROM v_sum_delta', '0', 'the compactor empties the shared delta');
is(differing('postgres'), '0', 'and again once the compactor emptied it');
load('postgres', 3, 200);
is(differing('postgres'), '0', 'and after more batches');
compactor('off');

# 2. pg_dump / pg_restore
my $dir = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('postgres'), '-f', "$dir/shared.dump" ], 'pg_dump -Fc');
sql('postgres', 'CREATE DATABASE dst');
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'pg_restore', '-d', $node->connstr('dst'), "$dir/shared.dump" ],
	'>', \$out, '2>', \$err);
ok($ok && $err eq '', 'pg_restore succeeds without a message') or diag("$out\n$err");
is(differing('dst'), '0', 'restored: every member exact');
is(sharing('dst'), '1 3 1 1 1', 'restored: still one storage of three members');
is(sql('dst', q{SELECT count(*) FROM stream_ext.explain('v_sum') AS line WHERE line LIKE '%Insert on%'}),
	'1', 'restored: the writer appends with one INSERT');
load('dst', 3, 300);
is(differing('dst'), '0', 'restored: exact after new rows');
is(sql('dst', q{SELECT stream_ext.compact('v_range') > 0}), 't', 'restored: the storage compacts');
is(differing('dst'), '0', 'restored: exact after compaction');
sql('dst', 'DROP VIEW v_sum');
is(sql('dst', q{SELECT to_regclass('v_sum_mrel') IS NOT NULL AND to_regclass('v_sum_delta') IS NOT NULL}),
	't', 'restored: DROP VIEW of the first member keeps the tables');
load('dst', 2, 300);
is(differing('dst', qw(v_range v_avg)), '0', 'restored: the others exact after the drop');
is(sql('dst', q{SELECT stream_ext.compact('v_avg') > 0}), 't', 'restored: the storage compacts after the drop');
is(differing('dst', qw(v_range v_avg)), '0', 'restored: exact after that compaction');
sql('dst', 'DROP VIEW v_range, v_avg');
is(sql('dst', q{SELECT (SELECT count(*) FROM stream_ext.shared_storage) || ' ' || (to_regclass('v_sum_mrel') IS NULL)}),
	'0 true', 'restored: the last member takes the tables along');

$node->stop;
done_testing();
