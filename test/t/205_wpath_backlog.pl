# The writer's backpressure (issue #16): after a batch, a writer compacts a
# view's delta itself only when more than stream_ext.compact_threshold rows
# wait in it.  The count comes from view_stats' shared table -- rows
# appended minus rows folded, each counted when its transaction commits --
# and not from PostgreSQL's cumulative statistics, whose live-tuple count
# drifts up for good whenever a compaction's deletions are flushed before
# the inserts of the batches it folded (PostgreSQL clamps the count at
# zero).  Each round below makes exactly that happen: a writer commits a
# batch and, before it flushes its statistics, another session compacts the
# delta and flushes first.  With the drifting count the writers compacted
# nearly empty deltas; with the backlog they never do, and the backpressure
# still engages when rows really pile up.  Rolled-back batches count for
# nothing.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use StreamExtTAP;

# no background compactor: only writers and stream_ext.compact() compact
my $node = stream_ext_node('wpath_backlog',
	'stream_ext.background_compaction' => 'off',
	'stream_ext.compact_threshold' => 200);

sub sql { return $node->safe_psql('postgres', $_[0]) }

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int');
CREATE VIEW v WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
});
my $delta = sql(q{SELECT delta::regclass FROM stream_ext.view_catalog WHERE view = 'v'::regclass});
sub waiting { return sql("SELECT count(*) FROM $delta") }

# ---- 1. a compaction flushed before the batches it folded ---------------------
# Two writer sessions (with a threshold of their own, over the 300 rows)
# each commit 150 new groups and stay busy (pg_sleep in
# the same message: a backend flushes its statistics only between messages);
# meanwhile stream_ext.compact() folds the 300 rows in a fresh session, which
# flushes at once: PostgreSQL's count goes to max(0 - 300, 0), then up by the
# writers' 300 when they flush.
my @writers;
for my $w (0, 1)
{
	my ($out, $err) = ('', '');
	my $from = $w * 1000 + 1;
	my $to = $w * 1000 + 150;
	push @writers, IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
		  "SET stream_ext.compact_threshold = 1000; BEGIN; INSERT INTO ev SELECT i, 1 FROM generate_series($from, $to) i; COMMIT; SELECT pg_sleep(5)" ],
		'>', \$out, '2>', \$err);
}
$node->poll_query_until('postgres', 'SELECT count(*) FROM ev', '300')
  or die 'the writers did not commit';
is(sql(q{SELECT stream_ext.compact('v')}), '300',
	'the writers left their 300 delta rows to compact()');
$_->finish for @writers;
# the premise: PostgreSQL's count drifted far above the threshold (the
# writers' backends flush as they exit, after their clients are gone)
poll_ok($node,
	qq{SELECT n_live_tup > 200 FROM pg_stat_user_tables WHERE relid = '$delta'::regclass}, 't',
	'the cumulative statistics count more live delta rows than the threshold',
	qq{SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = '$delta'::regclass});

sql(q{INSERT INTO ev SELECT i, 1 FROM generate_series(100001, 100005) i});
is(waiting(), '5', 'a small batch does not compact an almost empty delta');

# ---- 2. the backpressure still engages -------------------------------------------
sql(q{INSERT INTO ev SELECT i, 1 FROM generate_series(200001, 200080) i});
sql(q{INSERT INTO ev SELECT i, 1 FROM generate_series(200101, 200180) i});
is(waiting(), '165', '165 rows waiting: under the threshold, no compaction');
sql(q{INSERT INTO ev SELECT i, 1 FROM generate_series(200201, 200280) i});
is(waiting(), '0', 'the batch that takes the delta over the threshold compacts it');

# ---- 3. rolled-back batches count for nothing --------------------------------
sql(q{BEGIN; INSERT INTO ev SELECT i, 1 FROM generate_series(300001, 300150) i; ROLLBACK;});
sql(q{BEGIN; INSERT INTO ev SELECT i, 1 FROM generate_series(300001, 300100) i;
      SAVEPOINT s; INSERT INTO ev SELECT i, 1 FROM generate_series(310001, 310090) i;
      ROLLBACK TO s; COMMIT;});
sql(q{INSERT INTO ev SELECT i, 1 FROM generate_series(400001, 400040) i});
is(waiting(), '140', 'a rolled-back batch or savepoint does not count towards the threshold');

# ---- the view equals its query --------------------------------------------------
is(sql(q{SELECT count(*) FROM ((TABLE v EXCEPT ALL SELECT k, count(*), sum(v) FROM ev GROUP BY k)
          UNION ALL (SELECT k, count(*), sum(v) FROM ev GROUP BY k EXCEPT ALL TABLE v)) d}),
	'0', 'the view equals its query');

done_testing();
