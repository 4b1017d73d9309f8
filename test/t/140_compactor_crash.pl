# Crashes in the middle of background compaction (issue #16): a delta is
# folded into its materialization in many short transactions, and the
# postmaster -- or, alternately, the compactor alone, which makes the
# postmaster reinitialize -- is killed with kill -9:
# - on odd crashes at a moment when the compactor is blocked inside a
#   compaction statement (a session holds a row of the materialization it
#   must update, so it has folded part of its batch and waits);
# - on even crashes at a random moment while it compacts.
# After every restart each view equals its query over a logged copy of
# everything committed (the stream itself is UNLOGGED: crash recovery
# empties it, the views and their deltas are logged), and again once the
# restarted compactor has emptied the deltas: nothing lost, nothing counted
# twice.  STREAM_EXT_COMPACTOR_CRASHES crashes (default 6).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

my $crashes = $ENV{STREAM_EXT_COMPACTOR_CRASHES} || 6;
my $seed = $ENV{STREAM_EXT_CRASH_SEED} || int(time * 1000) % 1000000;
srand($seed);
note("crashes $crashes, seed $seed");

my $node = stream_ext_node('compactor_crash',
	max_worker_processes => 16,
	restart_after_crash => 'on',
	'stream_ext.kafka_launcher_naptime' => 1,
	'stream_ext.compact_naptime' => '100ms',
	'stream_ext.compact_batch_rows' => 20,
	'stream_ext.compact_lock_timeout' => 0);

sub sql { return $node->safe_psql('postgres', $_[0]) }

my %oracle = (
	per_key => q{SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s FROM ev_copy GROUP BY 1, 2},
	by_bucket => q{SELECT k % 5 AS b, count(*) AS n, avg(v) AS a, max(v) AS mx, count(DISTINCT v) AS dv FROM ev_copy GROUP BY 1},
	totals => q{SELECT count(*) AS n, sum(v) AS s, min(ts) AS first FROM ev_copy});

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int');
CREATE TABLE ev_copy (k int, ts timestamptz, v int);
CREATE VIEW per_key WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY 1, 2;
CREATE VIEW by_bucket WITH (continuous) AS
  SELECT k % 5 AS b, count(*) AS n, avg(v) AS a, max(v) AS mx, count(DISTINCT v) AS dv FROM ev GROUP BY 1;
CREATE VIEW totals WITH (continuous) AS SELECT count(*) AS n, sum(v) AS s, min(ts) AS first FROM ev;
});

# every view against its query over the logged copy: differing rows, and
# the delta rows waiting as the same snapshot saw them
sub differing
{
	return split /\|/, sql('SELECT ' . join(' + ', map {
		qq{(SELECT count(*) FROM ((SELECT * FROM $_ EXCEPT ALL $oracle{$_})
		     UNION ALL ($oracle{$_} EXCEPT ALL SELECT * FROM $_)) d)}
	} sort keys %oracle) . ", (SELECT sum(delta_rows) FROM stream_ext.view_stats)");
}

# one batch, into the stream and the logged copy in one transaction
my $batch = 0;
sub load
{
	my ($batches, $rows) = @_;
	my $sql = '';
	for (1 .. $batches)
	{
		$batch++;
		# the same minutes in every batch: the groups of the materialization
		# are updated (and can be held by a session's row lock)
		my $q = qq{SELECT (hashint4(i + $batch * 100000) % 40 + 40) % 40,
		  timestamptz '2026-01-01 00:00+00' + ((i + $batch * 17) % 2400) * interval '50 ms', (i * 7 + $batch) % 101
		  FROM generate_series(1, $rows) i};
		$sql .= "BEGIN; INSERT INTO ev $q; INSERT INTO ev_copy $q; COMMIT;\n";
	}
	sql($sql);
}

my $compactor = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext compactor'};
my $delta_rows = 'SELECT sum(delta_rows) FROM stream_ext.view_stats';
poll_ok($node, "SELECT count(*) FROM ($compactor) c", '1', 'a compactor runs');
load(5, 500);
poll_ok($node, $delta_rows, '0', 'first batches compacted');

my ($bad_after_crash, $bad_after_drain, $mid_statement, $mid_compaction) = (0, 0, 0, 0);
for my $it (1 .. $crashes)
{
	my $blocked = $it % 2;
	my $locker;
	# hold the compactor off while the deltas fill up: a session locks the
	# materialization of per_key (blocked crashes: one row only, so the
	# compactor stops inside its statement there)
	$locker = $node->background_psql('postgres');
	$locker->query_safe('BEGIN');
	if ($blocked)
	{
		my $k = int(rand(40));
		$locker->query_safe(qq{SELECT 1 FROM per_key_mrel WHERE k = $k FOR UPDATE});
	}
	else
	{
		$locker->query_safe('LOCK TABLE per_key_mrel IN EXCLUSIVE MODE');
	}
	load(20, 500);
	my $waiting = sql($delta_rows);

	my $pid;
	if ($blocked)
	{
		# wait until the compactor waits for the locked row inside a
		# compaction transaction
		my $until = time + 60;
		do
		{
			$pid = sql(qq{SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext compactor'
			              AND xact_start IS NOT NULL AND wait_event_type = 'Lock'
			              AND query LIKE '%per_key%'});
			sleep 0.05 unless $pid;
		} while (!$pid && time < $until);
		$mid_statement++ if $pid;
	}
	else
	{
		# release it and crash once 10% to 90% of the rows waiting are folded
		my $target = int($waiting * (0.1 + rand(0.8)));
		$locker->query_safe('COMMIT');
		my $until = time + 60;
		my $left;
		do
		{
			($left, $pid) = split /\|/, sql("SELECT ($delta_rows), ($compactor)");
		} while ($left > $waiting - $target && time < $until);
		$mid_compaction++ if $left > 0 && $left < $waiting;
	}
	$pid ||= sql($compactor);

	my $mode = $it % 4 < 2 ? 'postmaster' : 'compactor';
	if ($mode eq 'postmaster')
	{
		my ($linger, @left) = kill9_postmaster($node);
		diag("still alive 10 s after the postmaster's kill -9: @left") if @left;
		$locker->quit;
		$node->start;
	}
	else
	{
		my $log_offset = -s $node->logfile;
		kill 'KILL', $pid or die "cannot kill compactor $pid: $!";
		$node->wait_for_log(qr/all server processes terminated; reinitializing.*database system is ready to accept connections/s,
			$log_offset);
		$locker->quit;
	}
	my ($after, $left_after) = differing();
	$bad_after_crash++ if $after ne '0';
	poll_ok($node, $delta_rows, '0', "crash $it: the restarted compactor empties the deltas",
		'SELECT * FROM stream_ext.view_stats');
	my ($drained) = differing();
	$bad_after_drain++ if $drained ne '0';
	note(sprintf('crash %d (%s, %s): %d delta rows waiting, %s at the check after the restart; differing rows after restart %s, after compaction %s',
			$it, $mode, $blocked ? 'inside a statement' : 'random moment', $waiting,
			$left_after, $after, $drained));
}
is($mid_statement, int(($crashes + 1) / 2), 'every blocked crash hit the compactor inside a compaction statement');
cmp_ok($mid_compaction, '>=', 1, 'random crashes hit a compaction under way');
is($bad_after_crash, 0, "after each of $crashes crashes every view equals its query over what was committed");
is($bad_after_drain, 0, 'and again once the restarted compactor emptied the deltas');

$node->stop;
done_testing();
