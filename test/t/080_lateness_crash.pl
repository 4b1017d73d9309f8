# emit = 'on_close' across crashes (issue #23): a hopping and a session view
# emit their closed windows into output streams, and a continuous view over
# each output stream counts how often every window arrived.  Out-of-order
# batches are inserted, with an immediate shutdown (crash recovery on the
# next start) between them, STREAM_EXT_LATENESS_CRASHES times (default 8).
#
# Streams are UNLOGGED: crash recovery empties them, output streams too, but
# the views over them are logged.  After every crash and at the end: every
# window the view has closed arrived downstream exactly once (none lost,
# none repeated), with the view's final values; none still open did.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;

my $crashes = $ENV{STREAM_EXT_LATENESS_CRASHES} || 8;
my $per_crash = 6;    # batches between two crashes

my $node = stream_ext_node('lateness_crash');

sub sql { return $node->safe_psql('postgres', $_[0]) }

sql(q{
CREATE EXTENSION stream_ext;
SET TimeZone = 'UTC';
SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int');
SELECT stream_ext.create_stream('hop_out', 'k int, window_start timestamptz, n bigint, s bigint');
SELECT stream_ext.create_stream('ses_out', 'k int, n bigint, s bigint, session_start timestamptz, session_end timestamptz');
CREATE VIEW hop_v WITH (continuous, allowed_lateness = '2 minutes', emit = 'on_close', output_stream = 'hop_out') AS
  SELECT k, w.window_start, count(*) AS n, sum(v) AS s
    FROM ev, stream_ext.hop(ts, '6 minutes', '2 minutes') AS w(window_start)
   GROUP BY k, w.window_start;
CREATE VIEW ses_v WITH (continuous, session_gap = '3 minutes', time_column = 'ts',
                        allowed_lateness = '2 minutes', emit = 'on_close', output_stream = 'ses_out') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
-- what arrived downstream, and how often
CREATE VIEW hop_seen WITH (continuous) AS
  SELECT k, window_start, count(*) AS times, sum(n) AS n, sum(s) AS s FROM hop_out GROUP BY 1, 2;
CREATE VIEW ses_seen WITH (continuous) AS
  SELECT k, session_start, count(*) AS times, sum(n) AS n, sum(s) AS s, max(session_end) AS session_end
    FROM ses_out GROUP BY 1, 2;
});

# batch b: 1-60 rows, times drifting 30 s a batch with 4 minutes of
# disorder; keys 0-1, 2-3 and 4-5 take turns every 10 batches (sessions close)
sub batch
{
	my ($b) = @_;
	sql(qq{
INSERT INTO ev
SELECT ((($b / 10) % 3) * 2 + (hashint4($b * 100 + i) % 2 + 2) % 2),
       timestamptz '2026-01-01 00:00+00' + $b * interval '30 seconds'
         - ((hashint4(-$b * 100 - i) % 240 + 240) % 240) * interval '1 second',
       ($b * 7 + i) % 13
  FROM generate_series(1, 1 + (hashint4($b) % 60 + 60) % 60) i});
}

# every closed window arrived once with its final values; no open one did
my $check_sql = q{
SELECT (SELECT count(*) FROM (
          (SELECT v.k, v.window_start, 1::bigint, v.n, v.s FROM hop_v v, stream_ext.lateness l
            WHERE l.view = 'hop_v'::regclass AND v.window_start + interval '6 minutes' <= l.watermark
           EXCEPT ALL SELECT k, window_start, times, n, s FROM hop_seen)
          UNION ALL
          (SELECT k, window_start, times, n, s FROM hop_seen
           EXCEPT ALL SELECT v.k, v.window_start, 1::bigint, v.n, v.s FROM hop_v v, stream_ext.lateness l
            WHERE l.view = 'hop_v'::regclass AND v.window_start + interval '6 minutes' <= l.watermark)) d)
       || '|' ||
       (SELECT count(*) FROM (
          (SELECT v.k, v.session_start, 1::bigint, v.n, v.s, v.session_end FROM ses_v v, stream_ext.lateness l
            WHERE l.view = 'ses_v'::regclass AND v.session_end + interval '3 minutes' <= l.watermark
           EXCEPT ALL SELECT k, session_start, times, n, s, session_end FROM ses_seen)
          UNION ALL
          (SELECT k, session_start, times, n, s, session_end FROM ses_seen
           EXCEPT ALL SELECT v.k, v.session_start, 1::bigint, v.n, v.s, v.session_end FROM ses_v v, stream_ext.lateness l
            WHERE l.view = 'ses_v'::regclass AND v.session_end + interval '3 minutes' <= l.watermark)) d)
       || '|' || (SELECT count(*) FROM hop_seen) || '|' || (SELECT count(*) FROM ses_seen)
};

my $b = 0;
my ($hop_windows, $sessions) = (0, 0);
for my $c (1 .. $crashes)
{
	batch(++$b) for 1 .. $per_crash;
	my ($before_hop, $before_ses) = (split /\|/, sql($check_sql))[ 2, 3 ];
	$node->stop('immediate');
	$node->start;
	my ($dh, $ds, $nh, $ns) = split /\|/, sql($check_sql);
	is("$dh|$ds", '0|0', "crash $c: every closed window emitted once, none open");
	is("$nh|$ns", "$before_hop|$before_ses", "crash $c: nothing emitted was lost");
	($hop_windows, $sessions) = ($nh, $ns);
}
is(sql('SELECT count(*) FROM ev'), 0, 'crash recovery emptied the unlogged stream');

# an idle stream's clock closes the rest; still once each
sql(q{SELECT stream_ext.advance_watermark('hop_v', '2026-01-02'), stream_ext.advance_watermark('ses_v', '2026-01-02')});
my ($dh, $ds, $nh, $ns) = split /\|/, sql($check_sql);
is("$dh|$ds", '0|0', 'after advance_watermark: every window emitted once');
is(sql('SELECT (SELECT count(*) FROM hop_v) || \'|\' || (SELECT count(*) FROM ses_v)'), "$nh|$ns",
	'every window of both views arrived downstream');
cmp_ok($hop_windows, '>', 20, "hopping windows emitted before the end ($hop_windows)");
cmp_ok($sessions, '>', 3, "sessions emitted before the end ($sessions)");
cmp_ok(sql(q{SELECT count(*) FROM stream_ext.late_rows}), '>', 0, 'some rows were late');

$node->stop;
done_testing();
