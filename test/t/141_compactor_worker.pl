# The background compactor (src/housekeeping/compactor.c), end to end:
# - the Kafka launcher's scanner starts one per database when views have
#   deltas, and compactor_status() shows it;
# - under a steady load it folds the deltas while the writers go on, the
#   lag shows in view_stats, and the deltas are empty soon after the load
#   stops; every view still equals its query over the stream;
# - a view it cannot compact (its materialization locked by a session; its
#   owner without USAGE on the schema, which proves it compacts as the
#   owner, not as the superuser it is connected as) is retried while the
#   other views are compacted, and the error shows in view_stats until the
#   cause goes away;
# - it comes back after SIGTERM, leaves a database DROP DATABASE wants, and
#   exits on DROP EXTENSION;
# - a writer's commit wakes it once stream_ext.compact_batch_rows delta rows
#   wait, and not before (else it naps stream_ext.compact_naptime).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

my $node = stream_ext_node('compactor',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1,
	'stream_ext.compact_naptime' => '200ms',
	'stream_ext.compact_batch_rows' => 500,
	'stream_ext.compact_lock_timeout' => '100ms');

sub sql { return $node->safe_psql($_[1] // 'postgres', $_[0]) }

my $compactors = q{SELECT count(*) FROM pg_stat_activity
  WHERE backend_type = 'stream_ext compactor' AND datname = current_database()};
my $stats = 'SELECT * FROM stream_ext.view_stats';

# a view equals its query over the stream (both ways, with multiplicity)
sub exact
{
	my ($view, $query, $db) = @_;
	return sql(qq{SELECT count(*) FROM ((SELECT * FROM $view EXCEPT ALL $query)
	                UNION ALL ($query EXCEPT ALL SELECT * FROM $view)) d}, $db);
}
my %oracle = (
	per_key => q{SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1, 2},
	totals => q{SELECT count(*) AS n, sum(v) AS s, max(v) AS mx FROM ev});

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int');
CREATE VIEW per_key WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1, 2;
CREATE VIEW totals WITH (continuous) AS SELECT count(*) AS n, sum(v) AS s, max(v) AS mx FROM ev;
});
is(sql(q{SELECT count(*) FROM stream_ext.view_catalog WHERE delta IS NOT NULL}), '2',
	'both views append to a delta');

# ---- it starts by itself ---------------------------------------------------
poll_ok($node, $compactors, '1', 'the launcher starts a compactor for the database');
is(sql('SELECT count(*) FROM stream_ext.compactor_status()'), '1', 'compactor_status() shows it');

# ---- steady load -------------------------------------------------------------
# 150 batches of 1000 rows, one transaction each, 20 ms apart
my $batch = 0;
sub batch_sql
{
	my ($rows) = @_;
	$batch++;
	return qq{INSERT INTO ev SELECT (hashint4(i + $batch * 100000) % 50 + 50) % 50,
	  timestamptz '2026-01-01 00:00+00' + ($batch * 1000 + i) * interval '20 ms', i % 97
	  FROM generate_series(1, $rows) i;\n};
}
my $script = PostgreSQL::Test::Utils::tempdir . '/load.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	join('', map { batch_sql(1000) . "SELECT pg_sleep(0.02);\n" } 1 .. 150));
my ($out, $err) = ('', '');
my $loader = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $script ],
	'<', \undef, '>', \$out, '2>', \$err);
my ($max_waiting, $compacted_during, $samples) = (0, 0, 0);
while ($loader->pumpable)
{
	my ($waiting, $compacted) = split /\|/,
	  sql('SELECT sum(delta_rows), sum(rows_compacted) FROM stream_ext.view_stats');
	$max_waiting = $waiting if $waiting > $max_waiting;
	$compacted_during = $compacted;
	$samples++;
	sleep 0.2;
	$loader->pump_nb;
}
$loader->finish or die "loader failed: $err";
my $appended = sql('SELECT sum(groups_updated) FROM stream_ext.view_stats');
note("load: $samples samples, at most $max_waiting delta rows waiting, $compacted_during of $appended compacted while loading");
cmp_ok($compacted_during, '>', 0, 'the compactor folds deltas while the writers load');
cmp_ok($max_waiting, '<', $appended / 2, 'the deltas never held half of what was appended');
poll_ok($node, 'SELECT sum(delta_rows) FROM stream_ext.view_stats', '0',
	'the deltas are empty soon after the load stops', $stats);
is(exact('per_key', $oracle{per_key}), '0', 'per_key equals its query over the stream');
is(exact('totals', $oracle{totals}), '0', 'totals equals its query over the stream');
is(sql(q{SELECT bool_and(rows_compacted > 0 AND compactions > 0 AND last_compacted_at IS NOT NULL
                AND oldest_delta_age IS NULL AND compaction_errors = 0)
           FROM stream_ext.view_stats}), 't',
	'view_stats: rows compacted, last compaction, no lag and no error left');

# ---- a view it cannot compact does not stop the others -----------------------
# (1) a session holds per_key's materialization: lock timeouts, retried
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe(q{LOCK TABLE per_key_mrel IN EXCLUSIVE MODE});
sql(batch_sql(1000));
poll_ok($node, q{SELECT delta_rows FROM stream_ext.view_stats WHERE view = 'totals'::regclass}, '0',
	'totals is compacted while per_key is locked', $stats);
poll_ok($node, q{SELECT compaction_errors > 0 AND last_compaction_error LIKE '%lock timeout%' AND delta_rows > 0
                 FROM stream_ext.view_stats WHERE view = 'per_key'::regclass}, 't',
	'per_key: its lock timeouts show in view_stats, its delta waits', $stats);
$locker->query_safe('COMMIT');
poll_ok($node, q{SELECT delta_rows = 0 AND last_compaction_error IS NULL
                 FROM stream_ext.view_stats WHERE view = 'per_key'::regclass}, 't',
	'per_key is compacted once the lock is gone, and its error cleared', $stats);

# (2) the owner of a view loses USAGE on the schema of its tables
sql(q{
CREATE ROLE alice LOGIN;
CREATE SCHEMA app;
GRANT USAGE, CREATE ON SCHEMA app TO alice;
SET ROLE alice;
SELECT stream_ext.create_stream('app.ev2', 'k int, v int');
CREATE VIEW app.alice_v WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM app.ev2 GROUP BY k;
RESET ROLE;
});
$locker->query_safe('BEGIN');
$locker->query_safe(q{LOCK TABLE app.alice_v_mrel IN EXCLUSIVE MODE});
sql(q{SET ROLE alice; INSERT INTO app.ev2 SELECT i % 7, i FROM generate_series(1, 100) i});
sql(q{REVOKE USAGE ON SCHEMA app FROM alice});
$locker->query_safe('COMMIT');
poll_ok($node, q{SELECT compaction_errors > 0 AND last_compaction_error LIKE '%permission denied%'
                 AND delta_rows IS NULL AND groups IS NULL AND (SELECT count(*) > 0 FROM app.alice_v_delta)
                 FROM stream_ext.view_stats WHERE view = 'app.alice_v'::regclass}, 't',
	'a view whose owner lost a privilege is not compacted: as the owner, not as the superuser', $stats);
sql(batch_sql(1000));
poll_ok($node, q{SELECT sum(delta_rows) FROM stream_ext.view_stats WHERE view IN ('per_key'::regclass, 'totals'::regclass)}, '0',
	'the other views are compacted meanwhile', $stats);
ok($node->log_contains(qr/compaction of continuous view app\.alice_v failed: permission denied/),
	'the failure is logged with the view');
sql(q{GRANT USAGE ON SCHEMA app TO alice});
poll_ok($node, q{SELECT delta_rows = 0 AND last_compaction_error IS NULL
                 FROM stream_ext.view_stats WHERE view = 'app.alice_v'::regclass}, 't',
	'compacted once the privilege is back', $stats);
is(exact('app.alice_v', q{SELECT k, count(*) AS n, sum(v) AS s FROM app.ev2 GROUP BY k}), '0',
	'and exact');
$locker->quit;

# ---- SIGTERM: it exits and the launcher starts a new one ---------------------
my $pid = sql(q{SELECT pid FROM stream_ext.compactor_status()});
sql(qq{SELECT pg_terminate_backend($pid)});
poll_ok($node, qq{SELECT count(*) FROM stream_ext.compactor_status() WHERE pid <> $pid}, '1',
	'after SIGTERM the launcher starts a new compactor');
sql(batch_sql(1000));
poll_ok($node, 'SELECT sum(delta_rows) FROM stream_ext.view_stats', '0', 'which compacts', $stats);

# ---- writers wake it --------------------------------------------------------------
# with an hour's nap, only a writer's commit can start a pass: one that
# brings stream_ext.compact_batch_rows (500) delta rows does, a small one not
sql(q{ALTER SYSTEM SET stream_ext.compact_naptime = '1h'; SELECT pg_reload_conf()});
sleep 1.5;    # its nap of 200 ms ends, it reads the new one
sql(q{INSERT INTO ev SELECT i % 10, timestamptz '2026-01-01 00:00+00', 1 FROM generate_series(1, 100) i});
sleep 3;
is(sql(q{SELECT delta_rows FROM stream_ext.view_stats WHERE view = 'per_key'::regclass}), '10',
	'a commit of 11 delta rows does not wake the compactor from its nap');
sql(q{INSERT INTO ev SELECT i, timestamptz '2026-01-01 00:00+00', 1 FROM generate_series(1000, 1999) i});
poll_ok($node, 'SELECT sum(delta_rows) FROM stream_ext.view_stats', '0',
	'a commit of 1001 delta rows wakes it (its nap is an hour)', $stats);
sql(q{ALTER SYSTEM RESET stream_ext.compact_naptime; SELECT pg_reload_conf()});

# ---- DROP DATABASE is not blocked by a compactor -------------------------------
sql('CREATE DATABASE other');
sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int');
CREATE VIEW c WITH (continuous) AS SELECT k, count(*) FROM ev GROUP BY k;
INSERT INTO ev SELECT i % 10 FROM generate_series(1, 100) i;
}, 'other');
poll_ok($node, q{SELECT count(*) FROM pg_stat_activity
                 WHERE backend_type = 'stream_ext compactor' AND datname = 'other'}, '1',
	'a compactor runs in the second database');
my $t = time;
my ($rc, $stdout, $stderr) = $node->psql('postgres', 'DROP DATABASE other');
is($rc, 0, 'DROP DATABASE succeeds: the compactor leaves the database') or diag($stderr);
note(sprintf('DROP DATABASE took %.1f s', time - $t));

# ---- DROP EXTENSION: it exits ----------------------------------------------------
sql('DROP EXTENSION stream_ext CASCADE');
poll_ok($node, $compactors, '0', 'DROP EXTENSION: the compactor exits');

$node->stop;
done_testing();
