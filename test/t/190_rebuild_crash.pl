# Restarts and crashes in the middle of a rebuild beside a continuous view
# (CREATE OR REPLACE, docs/continuous-views.md#changing-a-view).  The
# rebuild's worker stores the block it reached in the transaction of each
# batch it folds into the shadow, so after a clean restart it resumes
# exactly there and ends exact: in one snapshot the shadow counts the rows
# backfilled plus those inserted since the hand-over, and once swapped in
# the view equals its new query.  A crash (kill -9 of the postmaster)
# empties the stream, an unlogged table, so the history not yet folded in
# is gone: the rebuild is abandoned ('failed', shadow dropped) and the view
# is exactly as it was, still maintained.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

my $node = stream_ext_node('rebuild_crash', max_worker_processes => 16,
	restart_after_crash => 'on',
	'stream_ext.kafka_launcher_naptime' => 1);
sub sql { return $node->safe_psql('postgres', $_[0]) }
sub progress { return sql(q{SELECT format('%s %s', state, rows_done) FROM stream_ext.backfill_progress WHERE kind = 'rebuild'}) }
sub wait_rows
{
	my ($target) = @_;
	my $deadline = time + 120;
	my $at = 0;
	while (time < $deadline)
	{
		$at = sql(q{SELECT rows_done FROM stream_ext.rebuilds WHERE state = 'running'});
		return $at if $at ne '' && $at >= $target;
		sleep(0.02);
	}
	return $at;
}

my $history = 300000;
sql(qq{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int');
CREATE VIEW per_k WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
INSERT INTO ev SELECT g % 10, g FROM generate_series(1, $history) g;
});

# 1. a clean restart in the middle: the rebuild resumes where it was
sql(q{SET stream_ext.rebuild_batch_blocks = 2;
CREATE OR REPLACE VIEW per_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT v % 977) AS nd FROM ev GROUP BY k;});
my $at = wait_rows($history / 10);
ok($at > 0 && $at < $history, "the rebuild is under way ($at rows)");
sql('INSERT INTO ev SELECT g % 10, g FROM generate_series(1, 1000) g');
$node->restart;
my $after = sql(q{SELECT rows_done FROM stream_ext.rebuilds});
cmp_ok($after, '>=', $at, "no committed batch of the backfill lost ($at -> $after)");
my $invariant = q{SELECT (SELECT sum(n) FROM per_k_rebuild)
  = (SELECT rows_done FROM stream_ext.rebuilds) + (SELECT count(*) FROM ev)
  - (SELECT count(*) FROM ev WHERE stream_ext._xid_visible_in(xmin, (SELECT handover FROM stream_ext.rebuilds)))};
is(sql($invariant), 't', 'the shadow counts each backfilled and each live row once');
sql('INSERT INTO ev SELECT g % 10, g FROM generate_series(1, 500) g');
is(sql(q{SELECT stream_ext.wait_backfill('per_k', '5 minutes')}), 'done', 'the rebuild finished after the restart');
is(progress(), "done $history", 'every row of the hand-over backfilled once');
is(sql(q{SELECT count(*) FROM (
  (SELECT k, n, s, nd FROM per_k EXCEPT ALL SELECT k, count(*), sum(v), count(DISTINCT v % 977) FROM ev GROUP BY k)
  UNION ALL
  (SELECT k, count(*), sum(v), count(DISTINCT v % 977) FROM ev GROUP BY k EXCEPT ALL SELECT k, n, s, nd FROM per_k)) d}),
	'0', 'the view equals its new query over every row');

# 2. kill -9 in the middle: the rebuild is abandoned, the view untouched
my $parts_q = q{SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relname LIKE 'per\_k%'};
my $parts = sql($parts_q);
sql(q{SET stream_ext.rebuild_batch_blocks = 2;
CREATE OR REPLACE VIEW per_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT v % 977) AS nd, max(v) AS top FROM ev GROUP BY k;});
$at = wait_rows($history / 10);
ok($at > 0 && $at < $history, "the second rebuild is under way ($at rows)");
my $before = sql('SELECT k, n, s, nd FROM per_k ORDER BY k');
my $def = sql(q{SELECT pg_get_viewdef('per_k'::regclass)});
my ($linger, @left) = kill9_postmaster($node);
ok(!@left, "kill -9 of the postmaster after $at backfilled rows");
$node->start;
ok($node->poll_query_until('postgres', q{SELECT state FROM stream_ext.rebuilds}, 'failed'),
	'the rebuild is abandoned');
like(sql(q{SELECT last_error FROM stream_ext.backfill_progress WHERE kind = 'rebuild'}),
	qr/crash emptied the stream/, 'it says why');
is(sql('SELECT k, n, s, nd FROM per_k ORDER BY k'), $before, 'the view holds what it held');
is(sql(q{SELECT pg_get_viewdef('per_k'::regclass)}), $def, 'with its old definition');
is(sql($parts_q), $parts, "the shadow and its parts are gone ($parts left)");
is(sql(q{SELECT count(*) FROM stream_ext.view_catalog}), '1', 'one catalog row');
my $n1 = sql('SELECT n FROM per_k WHERE k = 1');
sql('INSERT INTO ev VALUES (1, 5), (1, 6)');
is(sql('SELECT n FROM per_k WHERE k = 1'), $n1 + 2, 'the view is still maintained');

$node->stop;
done_testing();
