# A chain of roll-ups (docs/continuous-views.md#views-over-views) through
# pg_dump/pg_restore: the restored chain has its triggers on the deltas (and
# on the side tables feeding its exact count(DISTINCT)) once,
# every dependency back (DROP of the upstream still needs CASCADE and takes
# the chain along), and each view goes on equalling its query over the stream
# as rows arrive, with a roll-up owned by another role.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use StreamExtTAP;

my $node = stream_ext_node('rollup');

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

$node->safe_psql('postgres', 'CREATE ROLE bob; CREATE DATABASE src;');
sql('src', q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int');
GRANT CREATE ON SCHEMA public TO bob;
CREATE VIEW per_min WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS s, avg(v) AS a, max(v) AS hi,
         count(DISTINCT v) AS dv
    FROM ev GROUP BY k, minute;
INSERT INTO ev SELECT i % 5, '2024-01-01'::timestamptz + i * interval '7 seconds', i % 31
  FROM generate_series(1, 1000) i;
CREATE VIEW per_hour WITH (continuous) AS
  SELECT k, date_trunc('hour', minute) AS hour, sum(n) AS n, sum(s) AS s,
         stream_ext.combine(a) AS a, max(hi) AS hi, stream_ext.combine(dv) AS dv
    FROM per_min GROUP BY 1, 2;
CREATE VIEW per_day WITH (continuous) AS
  SELECT date_trunc('day', hour) AS day, sum(n) AS n, stream_ext.combine(a) AS a,
         stream_ext.combine(dv) AS dv
    FROM per_hour GROUP BY 1;
GRANT SELECT ON per_min TO bob;
SET ROLE bob;
CREATE VIEW bob_per_hour WITH (continuous) AS
  SELECT date_trunc('hour', minute) AS hour, sum(n) AS n FROM per_min GROUP BY 1;
RESET ROLE;
INSERT INTO ev SELECT i % 3, '2024-01-01 02:00'::timestamptz + i * interval '11 seconds', i % 17
  FROM generate_series(1, 700) i;
SELECT stream_ext.compact('per_min'), stream_ext.compact('per_hour');
INSERT INTO ev VALUES (NULL, '2024-01-01 05:00', NULL);
});

my %oracle = (
	per_min => q{SELECT k, date_trunc('minute', ts), count(*), sum(v), round(avg(v), 10), max(v), count(DISTINCT v) FROM ev GROUP BY 1, 2},
	per_hour => q{SELECT k, date_trunc('hour', ts), count(*), sum(v), round(avg(v), 10), max(v), count(DISTINCT v) FROM ev GROUP BY 1, 2},
	per_day => q{SELECT date_trunc('day', ts), count(*), round(avg(v), 10), count(DISTINCT v) FROM ev GROUP BY 1},
	bob_per_hour => q{SELECT date_trunc('hour', ts), count(*) FROM ev GROUP BY 1});
my %cols = (
	per_min => 'k, minute, n, s, round(a, 10), hi, dv',
	per_hour => 'k, hour, n, s, round(a, 10), hi, dv',
	per_day => 'day, n, round(a, 10), dv',
	bob_per_hour => 'hour, n');

sub check_views
{
	my ($db, $what) = @_;
	for my $v (sort keys %oracle)
	{
		my $t = "SELECT $cols{$v} FROM $v";
		is(sql($db, "SELECT count(*) FROM (($oracle{$v} EXCEPT ALL $t) UNION ALL ($t EXCEPT ALL $oracle{$v})) d"),
			'0', "$db: $v equals its query $what");
	}
}

sub rollup_triggers
{
	my ($db) = @_;
	return sql($db, q{SELECT string_agg(tgrelid || ' ' || tgargs, ', ' ORDER BY tgrelid, tgargs)
                        FROM (SELECT tgrelid::regclass::text AS tgrelid,
                                     replace(encode(tgargs, 'escape'), '\000', '') AS tgargs
                                FROM pg_trigger WHERE tgfoid = 'stream_ext.maintain_rollup'::regproc) t});
}

check_views('src', 'before the dump');
my $triggers = rollup_triggers('src');
is($triggers, 'per_hour_delta public.per_day_mrel, per_hour_distinct_count_5_mrel public.per_day_distinct_count_3_mrel, '
	. 'per_min_delta public.bob_per_hour_mrel, per_min_delta public.per_hour_mrel, '
	. 'per_min_distinct_count_5_mrel public.per_hour_distinct_count_5_mrel',
	'src: one trigger per roll-up on its upstream\'s delta');

my $dir = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', "$dir/src.dump" ], 'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE dst;');
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'pg_restore', '-d', $node->connstr('dst'), "$dir/src.dump" ],
	'>', \$out, '2>', \$err);
ok($ok && $err eq '', 'pg_restore succeeds without a message') or diag("$out\n$err");

is(rollup_triggers('dst'), $triggers, 'dst: the same roll-up triggers');
check_views('dst', 'after the restore');

# the dependencies pg_dump does not keep are back
is(sql('dst', q{SELECT count(*) FROM pg_depend
                 WHERE classid = 'pg_class'::regclass AND objid = 'per_hour_mrel'::regclass
                   AND refobjid IN ('per_hour'::regclass, 'per_min_delta'::regclass)}),
	'2', 'dst: the roll-up\'s materialization depends on its view and on its upstream\'s delta');
is(sql('dst', q{SELECT count(*) FROM pg_depend d JOIN pg_trigger t ON t.oid = d.objid
                 WHERE d.classid = 'pg_trigger'::regclass AND t.tgfoid = 'stream_ext.maintain_rollup'::regproc
                   AND d.deptype = 'a' AND d.refobjid IN ('per_hour'::regclass, 'per_day'::regclass, 'bob_per_hour'::regclass)}),
	'5', 'dst: each roll-up trigger goes with its roll-up');

for my $db ('src', 'dst')
{
	sql($db, q{INSERT INTO ev SELECT i % 7, '2024-01-01'::timestamptz + i * interval '3 seconds', i % 13
                 FROM generate_series(1, 2000) i});
	sql($db, q{INSERT INTO ev VALUES (2, '2024-01-02', 5)});
	check_views($db, 'after new rows');

	my ($rc, $o, $e) = $node->psql($db, 'DROP VIEW per_min');
	like($e, qr/cannot drop view per_min because other objects depend on it/, "$db: DROP of the upstream needs CASCADE");
	sql($db, 'DROP VIEW per_min CASCADE');
	is(sql($db, 'SELECT count(*) FROM stream_ext.continuous_views'), '0', "$db: CASCADE drops the chain");
	is(sql($db, q{SELECT count(*) FROM pg_trigger WHERE tgfoid = 'stream_ext.maintain_rollup'::regproc}),
		'0', "$db: and its triggers");
	sql($db, q{INSERT INTO ev VALUES (1, '2024-01-03', 1)});
}

done_testing();
