# pg_dump / pg_restore of a database with joins of two streams
# (query/stream_joins.c): a continuous view and a transform into a table.
# After the restore (custom format) stream_ext.stream_joins says the same,
# the view and the transform equal the plain join, keep being maintained
# by batches of either stream, and the second stream's triggers go with
# their objects again: DROP VIEW of the transform takes its trigger on the
# second stream along, DROP VIEW of the last join view the views trigger
# of the second stream; inserts go on.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use StreamExtTAP;

my $node = stream_ext_node('sjoin_dump');

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

my $window = q{o.k = s.k AND s.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '5 minutes'};

$node->safe_psql('postgres', 'CREATE DATABASE src;');
sql('src', qq{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('orders', 'k int, qty int, ts timestamptz');
SELECT stream_ext.create_stream('ships', 'k int, w int, ts timestamptz');
-- the examples of docs/joins.md
CREATE VIEW pairs_per_key WITH (continuous) AS
  SELECT o.k, count(*) AS pairs, sum(o.qty * s.w) AS weighted, count(DISTINCT s.w) AS ws
    FROM orders o JOIN ships s ON $window GROUP BY o.k;
CREATE VIEW order_ships WITH (continuous) AS
  SELECT o.k, o.qty, s.w, o.ts AS ots, s.ts AS sts FROM orders o JOIN ships s ON $window;
});

my $seed = 0;

sub load
{
	my ($db) = @_;
	for my $side ('orders', 'ships')
	{
		$seed++;
		my $col = $side eq 'orders' ? 'qty' : 'w';
		sql($db, qq{INSERT INTO $side (k, $col, ts)
		  SELECT (i * 7 + $seed) % 20, i % 9,
		         timestamptz '2024-01-01 00:00:00+00' + ((i * 37 + $seed * 11) % 1800) * interval '1 second'
		    FROM generate_series(1, 300) i});
	}
}

my $check = qq{
SELECT (SELECT count(*) FROM (
          (TABLE pairs_per_key EXCEPT ALL
           SELECT o.k, count(*), sum(o.qty * s.w), count(DISTINCT s.w)
             FROM orders o JOIN ships s ON $window GROUP BY o.k)
          UNION ALL
          (SELECT o.k, count(*), sum(o.qty * s.w), count(DISTINCT s.w)
             FROM orders o JOIN ships s ON $window GROUP BY o.k
           EXCEPT ALL TABLE pairs_per_key)) d)
     + (SELECT count(*) FROM (
          (TABLE order_ships EXCEPT ALL
           SELECT o.k, o.qty, s.w, o.ts, s.ts FROM orders o JOIN ships s ON $window)
          UNION ALL
          (SELECT o.k, o.qty, s.w, o.ts, s.ts FROM orders o JOIN ships s ON $window
           EXCEPT ALL TABLE order_ships)) d)
       AS differing,
       (SELECT count(*) FROM order_ships) > 0 AS pairs};

load('src');
load('src');
is(sql('src', $check), '0|t', 'src: view and transform equal the plain join');
my $joins_sql = q{SELECT object, left_stream, right_stream, join_window, md5(right_sql)
                    FROM stream_ext.stream_joins ORDER BY object::text};
my $joins = sql('src', $joins_sql);

my $dir = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', "$dir/sjoin.dump" ],
	'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE dst;');
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'pg_restore', '-d', $node->connstr('dst'), "$dir/sjoin.dump" ],
	'>', \$out, '2>', \$err);
ok($ok && $err eq '', 'pg_restore succeeds without a message') or diag("$out\n$err");

is(sql('dst', $joins_sql), $joins, 'dst: stream_ext.stream_joins is the same');
is(sql('dst', $check), '0|t', 'dst: view and transform equal the plain join after the restore');
load('dst');
load('dst');
is(sql('dst', $check), '0|t', 'dst: batches of both streams maintain them after the restore');

# the transform's trigger on the second stream depends on the transform again
sql('dst', 'DROP VIEW order_ships');
is(sql('dst', q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'ships'::regclass
                  AND tgname LIKE 'stream_ext_transform_%'}),
	'0', 'dst: DROP VIEW of the transform drops its trigger on the second stream');
sql('dst', 'DROP VIEW pairs_per_key');
is(sql('dst', q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'ships'::regclass
                  AND tgname = 'stream_ext_maintain'}),
	'0', 'dst: the second stream\'s views trigger goes with the last join view');
load('dst');
is(sql('dst', 'SELECT count(*) FROM stream_ext.stream_joins'), '0', 'dst: no join left in the catalog');

done_testing();
