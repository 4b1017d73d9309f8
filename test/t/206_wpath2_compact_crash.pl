# Crashes inside the compaction statement that deletes a view's delta rows
# below a ctid bound (src/query/analyze.c, cv_compact_sql()) and the
# view's compaction lock that serializes compactions of one view
# (src/maintain/compact.c).  Each round, a session holds one row of a
# materialization, so a compaction of that view deletes its delta rows,
# then blocks in the upsert, still inside its statement; the compaction is
# in turn the background compactor's, a writer's backpressure
# (compact_threshold 0) and stream_ext.compact()'s.  While it is blocked:
# it holds the view's compaction lock, and a writer whose backpressure
# would compact the same view commits at once (it skips the view).  Then
# the blocked process is killed with kill -9 (the postmaster
# reinitializes).  After the restart every view equals its query over a
# logged copy of everything committed (the stream is UNLOGGED; the views and
# their deltas are logged), and again once the compactor has emptied the
# deltas -- also after a VACUUM of the delta, when new rows land in the
# pages below earlier compactions' bounds.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

my $rounds = $ENV{STREAM_EXT_WPATH2_CRASHES} || 3;

my $node = stream_ext_node('wpath2_compact_crash',
	max_worker_processes => 16,
	restart_after_crash => 'on',
	'stream_ext.kafka_launcher_naptime' => 1,
	'stream_ext.compact_naptime' => '100ms',
	'stream_ext.compact_batch_rows' => 30,
	'stream_ext.compact_lock_timeout' => 0);

sub sql { return $node->safe_psql('postgres', $_[0]) }

my %oracle = (
	per_key => q{SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s FROM ev_copy GROUP BY 1, 2},
	totals => q{SELECT count(*) AS n, sum(v) AS s, max(v) AS mx FROM ev_copy});

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int');
CREATE TABLE ev_copy (k int, ts timestamptz, v int);
CREATE VIEW per_key WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1, 2;
CREATE VIEW totals WITH (continuous) AS SELECT count(*) AS n, sum(v) AS s, max(v) AS mx FROM ev;
});

# rows differing between every view and its query over the logged copy
sub differing
{
	return sql('SELECT ' . join(' + ', map {
		qq{(SELECT count(*) FROM ((SELECT * FROM $_ EXCEPT ALL $oracle{$_})
		     UNION ALL ($oracle{$_} EXCEPT ALL SELECT * FROM $_)) d)}
	} sort keys %oracle));
}

# one batch into the stream and the logged copy, in one statement
my $batch = 0;
sub batch_sql
{
	my ($rows) = @_;
	$batch++;
	return qq{WITH r AS (SELECT (hashint4(i + $batch * 100000) % 40 + 40) % 40 AS k,
	  timestamptz '2026-01-01 00:00+00' + ((i + $batch * 17) % 2400) * interval '50 ms' AS ts,
	  (i * 7 + $batch) % 101 AS v FROM generate_series(1, $rows) i),
	  a AS (INSERT INTO ev SELECT * FROM r) INSERT INTO ev_copy SELECT * FROM r;};
}
sub load { my ($n, $rows) = @_; sql(join("\n", map { batch_sql($rows) } 1 .. $n)) }

my $compactor = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext compactor'};
my $delta_rows = q{SELECT (SELECT count(*) FROM per_key_delta) + (SELECT count(*) FROM totals_delta)};
# the holder of per_key's compaction lock (an advisory tag, field4 0x5345)
my $lock_holder = q{SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21317
  AND classid = 'per_key'::regclass::oid AND granted};

sub compactor
{
	my ($on) = @_;
	sql("ALTER SYSTEM SET stream_ext.background_compaction = $on; SELECT pg_reload_conf()");
	poll_ok($node, "SELECT count(*) FROM ($compactor) c", $on eq 'on' ? '1' : '0',
		"background compactor $on");
}

load(5, 300);
poll_ok($node, $delta_rows, '0', 'first batches compacted');

my @kinds = ('background compactor', 'writer backpressure', 'stream_ext.compact()');
my ($bad_after_crash, $bad_after_drain, $bad_after_reuse) = (0, 0, 0);
for my $it (1 .. $rounds)
{
	my $kind = $kinds[($it - 1) % 3];
	compactor($kind eq 'background compactor' ? 'on' : 'off');

	# a session holds one group of per_key's materialization
	my $locker = $node->background_psql('postgres');
	$locker->query_safe('BEGIN');
	my $k = sql('SELECT k FROM per_key_mrel ORDER BY random() LIMIT 1');
	$locker->query_safe("SELECT 1 FROM per_key_mrel WHERE k = $k FOR UPDATE");
	load(10, 300);

	my ($pid, $session);
	if ($kind ne 'background compactor')
	{
		$session = $node->background_psql('postgres');
		$pid = $session->query_safe('SELECT pg_backend_pid()');
		my $q = $kind eq 'writer backpressure'
		  ? 'SET stream_ext.compact_threshold = 0; ' . batch_sql(300)
		  : q{SELECT stream_ext.compact('per_key');};
		$session->query_until(qr/sent/, "\\echo sent\n$q\n");
	}
	# wait until the compaction waits for the held row inside its statement
	my $until = time + 60;
	my $blocked = '';
	do
	{
		$blocked = sql(qq{SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'
		  AND xact_start IS NOT NULL AND backend_type IN ('stream_ext compactor', 'client backend')
		  AND pid <> pg_backend_pid() AND (query LIKE '%per_key%' OR query LIKE '%INSERT INTO ev %')
		  } . ($pid ? "AND pid = $pid" : ''));
		sleep 0.05 unless $blocked;
	} while (!$blocked && time < $until);
	ok($blocked, "round $it ($kind): the compaction blocks inside its statement");
	$pid ||= $blocked;
	is(sql($lock_holder), $pid, "round $it: it holds per_key's compaction lock");

	# a writer whose backpressure would compact per_key skips it: it commits now
	my $t0 = time;
	sql('SET stream_ext.compact_threshold = 0; ' . batch_sql(200));
	cmp_ok(time - $t0, '<', 30, "round $it: a backpressure writer does not wait for it");

	my $log_offset = -s $node->logfile;
	kill 'KILL', $pid or die "cannot kill $pid: $!";
	$node->wait_for_log(qr/all server processes terminated; reinitializing.*database system is ready to accept connections/s,
		$log_offset);
	# their backends are gone: psql may have exited already
	eval { $locker->quit };
	eval { $session->quit } if $session;

	my $after = differing();
	$bad_after_crash++ if $after ne '0';
	is(sql($lock_holder), '', "round $it: no compaction lock survives the crash");
	compactor('on');
	poll_ok($node, $delta_rows, '0', "round $it: the compactor empties the deltas");
	my $drained = differing();
	$bad_after_drain++ if $drained ne '0';

	# new rows in the pages freed below earlier bounds, folded in chunks
	sql('VACUUM per_key_delta, totals_delta');
	load(10, 300);
	poll_ok($node, $delta_rows, '0', "round $it: and the rows written after a VACUUM");
	my $reuse = differing();
	$bad_after_reuse++ if $reuse ne '0';
	note("round $it ($kind): differing rows after the restart $after, after compaction $drained, after reuse $reuse");
}
is($bad_after_crash, 0, "after each of $rounds crashes every view equals its query over what was committed");
is($bad_after_drain, 0, 'and again once the compactor emptied the deltas');
is($bad_after_reuse, 0, 'and after rows landed below earlier compactions\' bounds');

$node->stop;
done_testing();
