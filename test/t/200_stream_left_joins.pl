# A LEFT JOIN of two streams (query/sjoin_left.c) through crashes and a
# pg_dump / pg_restore.  Every row is also logged, in the same transaction,
# to an ordinary (logged) table with the crash epoch it was inserted in, so
# the oracle survives what crash recovery empties (the streams are
# UNLOGGED; the view, its watermark and late_pairs are logged):
#   - a pair counts iff both rows are of one epoch and its first-stream row
#     came second or was still open (ts + 3 min >= the watermark before the
#     second-stream row's batch: its newest time so far minus 1 minute);
#   - a first-stream row gets its NULL row iff the watermark at the end of
#     its epoch had closed it and it has no counted pair (a row lost in a
#     crash before its window closed never gets one: docs/joins.md).
# Batches out of order, both streams interleaved, an immediate shutdown
# between some of them; the view equals the oracle after every crash (no
# NULL row emitted twice, none lost), and late_pairs the refused pairs.
# Then pg_dump -Fc / pg_restore: the watermark and late_pairs come along,
# the view equals the oracle in the copy and keeps doing so under more
# batches there (a lost watermark would close rows a second time).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use StreamExtTAP;

my $crashes = $ENV{STREAM_EXT_SJLEFT_CRASHES} || 4;
my $node = stream_ext_node('sjleft');

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

$node->safe_psql('postgres', 'CREATE DATABASE src;');
sql('src', q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('orders', 'k int, qty int, ts timestamptz, bn int, id bigint');
SELECT stream_ext.create_stream('ships', 'k int, w int, ts timestamptz, bn int');
CREATE TABLE epoch (e int);
INSERT INTO epoch VALUES (1);
CREATE TABLE orders_log (k int, qty int, ts timestamptz, bn int, id bigint, epoch int);
CREATE TABLE ships_log (k int, w int, ts timestamptz, bn int, epoch int, max_before timestamptz);
CREATE SEQUENCE bn;
CREATE VIEW shipped WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT o.k, count(*) AS n, count(s.w) AS shipments, sum(s.w) AS sw
    FROM orders o LEFT JOIN ships s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '2 minutes' AND o.ts + interval '3 minutes'
   GROUP BY o.k;
-- batch of side at minute m (times up to 8 minutes before it, out of order)
CREATE FUNCTION ins(side text, n int, m int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  b int := nextval('bn');
  e int := (SELECT e FROM epoch);
  mb timestamptz := (SELECT max(ts) FROM ships_log);
BEGIN
  IF side = 'a' THEN
    INSERT INTO orders_log
      SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7 + b) % 20 END, i % 9,
             timestamptz '2024-01-01 00:00:00+00' + m * interval '1 minute'
               - ((i * 37 + b * 11) % 480) * interval '1 second', b, b * 100000 + i, e
        FROM generate_series(1, n) i;
    INSERT INTO orders SELECT k, qty, ts, bn, id FROM orders_log WHERE bn = b;
  ELSE
    INSERT INTO ships_log
      SELECT CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 3 + b) % 20 END, (i * b) % 7,
             timestamptz '2024-01-01 00:00:00+00' + m * interval '1 minute'
               - ((i * 53 + b * 7) % 480) * interval '1 second', b, e, mb
        FROM generate_series(1, n) i;
    INSERT INTO ships SELECT k, w, ts, bn FROM ships_log WHERE bn = b;
  END IF;
END $$;
CREATE FUNCTION oracle_pairs() RETURNS TABLE (id bigint, k int, w int) LANGUAGE sql AS $$
  SELECT o.id, o.k, s.w FROM orders_log o JOIN ships_log s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '2 minutes' AND o.ts + interval '3 minutes'
   WHERE o.epoch = s.epoch
     AND (o.bn > s.bn OR s.max_before IS NULL
          OR o.ts + interval '3 minutes' >= s.max_before - interval '1 minute')
$$;
CREATE FUNCTION oracle() RETURNS TABLE (k int, n bigint, shipments bigint, sw bigint) LANGUAGE sql AS $$
  WITH p AS (SELECT * FROM oracle_pairs()),
  r AS (SELECT p.k, p.w FROM p
        UNION ALL
        SELECT o.k, NULL FROM orders_log o
         WHERE (o.ts IS NULL OR o.ts + interval '3 minutes' <
                (SELECT max(s.ts) - interval '1 minute' FROM ships_log s WHERE s.epoch <= o.epoch))
           AND NOT EXISTS (SELECT 1 FROM p WHERE p.id = o.id))
  SELECT k, count(*), count(w), sum(w) FROM r GROUP BY k
$$;
CREATE FUNCTION refused() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM orders_log o JOIN ships_log s
      ON o.k = s.k AND s.ts BETWEEN o.ts - interval '2 minutes' AND o.ts + interval '3 minutes'
   WHERE o.epoch = s.epoch AND o.bn < s.bn
     AND o.ts + interval '3 minutes' < s.max_before - interval '1 minute'
$$;
});

my $check = q{
SELECT (SELECT count(*) FROM ((TABLE shipped EXCEPT ALL SELECT * FROM oracle())
                              UNION ALL (SELECT * FROM oracle() EXCEPT ALL TABLE shipped)) d)
       || '|' || ((SELECT late_pairs FROM stream_ext.stream_left_joins) = refused())
       || '|' || (SELECT coalesce(sum(n) - sum(shipments), 0) FROM shipped)};

my $m = 0;
sub load
{
	my ($db, $batches) = @_;
	for (1 .. $batches)
	{
		$m++;
		# sizes 1 to 300, the second stream every other batch
		my $n = 1 + ($m * 37) % 300;
		sql($db, "SELECT ins('a', $n, $m)");
		sql($db, "SELECT ins('b', " . (1 + ($m * 53) % 200) . ", $m)") if $m % 2 == 0;
	}
}

load('src', 10);
my ($d, $l, $nulls) = split /\|/, sql('src', $check);
is("$d|$l", '0|true', 'src: the view equals the oracle before any crash');
cmp_ok($nulls, '>', 0, "src: rows without a shipment were emitted ($nulls)");

for my $c (1 .. $crashes)
{
	load('src', 6);
	$node->stop('immediate');
	$node->start;
	is(sql('src', 'SELECT count(*) FROM orders'), '0', "crash $c: recovery emptied the unlogged stream");
	sql('src', 'UPDATE epoch SET e = e + 1');
	($d, $l) = split /\|/, sql('src', $check);
	is("$d|$l", '0|true', "crash $c: the view equals the oracle (each row closed once, none lost)");
}
load('src', 8);
($d, $l, $nulls) = split /\|/, sql('src', $check);
is("$d|$l", '0|true', 'src: the view equals the oracle after the crashes');
cmp_ok(sql('src', 'SELECT late_pairs FROM stream_ext.stream_left_joins'), '>', 0,
	'some pairs were refused');

# pg_dump / pg_restore
my $wm_sql = q{SELECT object, allowed_lateness, max_time, late_pairs, md5(close_sql), md5(late_sql)
                 FROM stream_ext.stream_left_joins};
my $wm = sql('src', $wm_sql);
my $dir = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', "$dir/sjleft.dump" ],
	'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE dst;');
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'pg_restore', '-d', $node->connstr('dst'), "$dir/sjleft.dump" ],
	'>', \$out, '2>', \$err);
ok($ok && $err eq '', 'pg_restore succeeds without a message') or diag("$out\n$err");
is(sql('dst', $wm_sql), $wm, 'dst: the watermark, late_pairs and statements came along');
($d, $l) = split /\|/, sql('dst', $check);
is("$d|$l", '0|true', 'dst: the view equals the oracle after the restore');
load('dst', 10);
($d, $l) = split /\|/, sql('dst', $check);
is("$d|$l", '0|true', 'dst: batches of both streams after the restore keep it equal');
sql('dst', 'DROP VIEW shipped');
is(sql('dst', 'SELECT count(*) FROM stream_ext.stream_left_joins'), '0', 'dst: DROP VIEW takes its row along');
sql('dst', q{SELECT ins('b', 5, 100), ins('a', 5, 100)});

$node->stop;
done_testing();
