# Deferred count(DISTINCT) (query/analyze.c, "Deferred count(DISTINCT)")
# through crashes and pg_dump/pg_restore.  A compaction inserts the pairs of
# the delta's arrays into the side table before it stores the counts: it is
# blocked there (a session holds a row of the materialization) and the
# postmaster is killed with kill -9; after the restart the half-done
# compaction has left nothing (its pairs are not in the side table, so no
# value is lost or counted twice), the view equals its query over a logged
# copy of what was committed, and again once the restarted compactor has
# emptied the delta.  Then a dump taken while the delta holds arrays is
# restored into another database: the restored view reads them, and
# compacts them, exactly.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

my $node = stream_ext_node('w2_distinct_crash',
	restart_after_crash => 'on',
	'stream_ext.kafka_launcher_naptime' => 1,
	'stream_ext.compact_naptime' => '100ms',
	'stream_ext.compact_batch_rows' => 50,
	'stream_ext.compact_lock_timeout' => 0);

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

my %oracle = (
	dv => q{SELECT k, count(*), count(DISTINCT v) FROM ev_copy GROUP BY 1},
	dt => q{SELECT count(DISTINCT v), count(DISTINCT k) FROM ev_copy},
	dv_up => q{SELECT k % 2, count(DISTINCT v) FROM ev_copy GROUP BY 1});

sql('postgres', q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v bigint');
CREATE TABLE ev_copy (k int, v bigint);
CREATE VIEW dv WITH (continuous) AS SELECT k, count(*) AS n, count(DISTINCT v) AS nd FROM ev GROUP BY k;
CREATE VIEW dt WITH (continuous) AS SELECT count(DISTINCT v) AS nd, count(DISTINCT k) AS nk FROM ev;
CREATE VIEW dv_up WITH (continuous) AS SELECT k % 2 AS p, stream_ext.combine(nd) AS nd FROM dv GROUP BY 1;
});
is(sql('postgres', q{SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                      WHERE c.relname IN ('dv_delta', 'dt_delta') AND a.attname LIKE '%\_values'}),
	'dt_delta,dt_delta,dv_delta', 'dv and dt defer their count(DISTINCT)s');

sub differing
{
	my ($db) = @_;
	return sql($db, 'SELECT ' . join(' + ', map {
		qq{(SELECT count(*) FROM ((TABLE $_ EXCEPT ALL $oracle{$_}) UNION ALL ($oracle{$_} EXCEPT ALL TABLE $_)) d)}
	} sort keys %oracle));
}

my $batch = 0;
sub load
{
	my ($db, $batches, $rows) = @_;
	my $sql = '';
	for (1 .. $batches)
	{
		$batch++;
		# new values and values seen before, NULL keys and values
		my $q = qq{SELECT nullif(i % 13, 0), nullif((i * 7 + $batch * 3) % 400, 5) FROM generate_series(1, $rows) i};
		$sql .= "BEGIN; INSERT INTO ev $q; INSERT INTO ev_copy $q; COMMIT;\n";
	}
	sql($db, $sql);
}

my $compactor = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext compactor'};
my $delta_rows = q{SELECT (SELECT count(*) FROM dv_delta) + (SELECT count(*) FROM dt_delta)};
poll_ok($node, "SELECT count(*) FROM ($compactor) c", '1', 'a compactor runs');
load('postgres', 5, 300);
poll_ok($node, $delta_rows, '0', 'first batches compacted');
is(differing('postgres'), '0', 'exact after the first batches');

for my $it (1 .. 3)
{
	# the compactor stops inside dv's compaction statement, after the side
	# table's inserts, at the store into the locked row
	my $locker = $node->background_psql('postgres');
	$locker->query_safe('BEGIN');
	$locker->query_safe(q{SELECT 1 FROM dv_mrel WHERE k = 3 FOR UPDATE});
	load('postgres', 10, 300);
	my $pid;
	my $until = time + 60;
	do
	{
		$pid = sql('postgres', qq{SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext compactor'
		                          AND xact_start IS NOT NULL AND wait_event_type = 'Lock' AND query ~ 'view (public[.])?dv\$'});
		sleep 0.05 unless $pid;
	} while (!$pid && time < $until);
	ok($pid, "crash $it: the compactor waits inside dv's compaction")
	  or diag(sql('postgres', q{SELECT wait_event_type, wait_event, xact_start IS NOT NULL, query FROM pg_stat_activity
	                            WHERE backend_type = 'stream_ext compactor'}) . ' / delta rows ' . sql('postgres', $delta_rows));
	my ($linger, @left) = kill9_postmaster($node);
	diag("still alive 10 s after the postmaster's kill -9: @left") if @left;
	$locker->quit;
	$node->start;
	is(differing('postgres'), '0', "crash $it: every view equals its query after the restart");
	poll_ok($node, $delta_rows, '0', "crash $it: the restarted compactor empties the deltas");
	is(differing('postgres'), '0', "crash $it: and after the compaction");
}

# a dump taken while the deltas hold arrays
sql('postgres', 'ALTER SYSTEM SET stream_ext.background_compaction = off; SELECT pg_reload_conf()');
sleep 1;
load('postgres', 4, 200);
cmp_ok(sql('postgres', 'SELECT count(*) FROM dv_delta'), '>', 0,
	'the delta holds arrays at the dump');
my $dir = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('postgres'), '-f', "$dir/w2.dump" ], 'pg_dump -Fc');
sql('postgres', 'CREATE DATABASE dst');
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'pg_restore', '-d', $node->connstr('dst'), "$dir/w2.dump" ], '>', \$out, '2>', \$err);
ok($ok && $err eq '', 'pg_restore succeeds without a message') or diag("$out\n$err");
is(differing('dst'), '0', 'dst: every view equals its query, with the arrays still in the delta');
load('dst', 3, 200);
is(differing('dst'), '0', 'dst: and after new batches');
sql('dst', q{SELECT stream_ext.compact('dv'), stream_ext.compact('dt'), stream_ext.compact('dv_up')});
is(sql('dst', 'SELECT count(*) FROM dv_delta'), '0', 'dst: compacted');
is(differing('dst'), '0', 'dst: and after compaction');

$node->stop;
done_testing();
