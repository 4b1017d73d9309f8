# The stream's one trigger for its continuous views (stream_ext_maintain,
# stream_ext.maintain_views()) through pg_dump/pg_restore and DROP OWNED:
# a restored database has it once per stream, its views share one
# aggregation as in the dumped one and stay exact as rows arrive; DROP
# OWNED of one owner's views keeps the trigger for the others, and the
# trigger goes with the stream's last view.  Two views of one owner share a
# storage; the function one of them uses is that view's dependency after
# the restore too: DROP FUNCTION ... CASCADE takes it and not the other.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use StreamExtTAP;

my $node = stream_ext_node('share');

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

$node->safe_psql('postgres', 'CREATE ROLE bob; CREATE DATABASE src;');
sql('src', q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int');
GRANT SELECT ON ev TO bob;
GRANT CREATE ON SCHEMA public TO bob;
CREATE VIEW per_min WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS s
    FROM ev GROUP BY k, minute;
CREATE VIEW range_min WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, min(v) AS lo, max(v) AS hi, count(DISTINCT v) AS d
    FROM ev GROUP BY k, minute;
CREATE FUNCTION twice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
SET ROLE bob;
CREATE VIEW bob_min WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, count(*) AS n FROM ev GROUP BY k, minute;
CREATE VIEW bob_twice WITH (continuous) AS
  SELECT k, date_trunc('minute', ts) AS minute, sum(twice(v)) AS s2 FROM ev GROUP BY k, minute;
RESET ROLE;
INSERT INTO ev SELECT i % 5, '2024-01-01'::timestamptz + i * interval '7 seconds', i % 31
  FROM generate_series(1, 1000) i;
});

# each view against its query over the stream: 0 rows differ
my %oracle = (
	per_min => q{SELECT k, date_trunc('minute', ts), count(*), sum(v) FROM ev GROUP BY 1, 2},
	range_min => q{SELECT k, date_trunc('minute', ts), min(v), max(v), count(DISTINCT v) FROM ev GROUP BY 1, 2},
	bob_min => q{SELECT k, date_trunc('minute', ts), count(*) FROM ev GROUP BY 1, 2},
	bob_twice => q{SELECT k, date_trunc('minute', ts), sum(twice(v)) FROM ev GROUP BY 1, 2});

sub check_views
{
	my ($db, $what, @views) = @_;
	for my $v (@views)
	{
		is(sql($db, "SELECT count(*) FROM (($oracle{$v} EXCEPT ALL TABLE $v) UNION ALL (TABLE $v EXCEPT ALL $oracle{$v})) d"),
			'0', "$db: $v equals its query $what");
	}
}

sub triggers
{
	my ($db) = @_;
	return sql($db, q{SELECT string_agg(tgname || ' ' || tgfoid::regproc, ', ' ORDER BY tgname)
                        FROM pg_trigger WHERE tgrelid = 'ev'::regclass AND NOT tgisinternal});
}

my $shared = q{SELECT count(*) FROM stream_ext.explain('per_min') AS line WHERE line LIKE 'Shared with 1 other%'};
is(sql('src', $shared), '1', 'src: per_min and range_min share one statement');

my $dir = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', "$dir/src.dump" ], 'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE dst;');
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'pg_restore', '-d', $node->connstr('dst'), "$dir/src.dump" ],
	'>', \$out, '2>', \$err);
ok($ok && $err eq '', 'pg_restore succeeds without a message') or diag("$out\n$err");

for my $db ('src', 'dst')
{
	is(triggers($db),
		'stream_ext_append_only stream_ext.reject_stream_modification, stream_ext_maintain stream_ext.maintain_views',
		"$db: one trigger for the stream's views");
	is(sql($db, $shared), '1', "$db: the views share one statement");
	sql($db, q{INSERT INTO ev SELECT i % 7, '2024-01-01'::timestamptz + i * interval '3 seconds', i % 17
                 FROM generate_series(1, 500) i});
	sql($db, q{INSERT INTO ev VALUES (NULL, NULL, NULL)});
	check_views($db, 'after new rows', qw(per_min range_min bob_min bob_twice));

	# bob's views share a storage; the function is bob_twice's alone
	is(sql($db, q{SELECT count(DISTINCT matrel) || ' ' || count(*) FROM stream_ext.view_catalog
                   WHERE view IN ('bob_min'::regclass, 'bob_twice'::regclass)}),
		'1 2', "$db: bob's views share one storage");
	sql($db, 'DROP FUNCTION twice(int) CASCADE');
	is(sql($db, q{SELECT to_regclass('bob_twice') IS NULL AND to_regclass('bob_min') IS NOT NULL}),
		't', "$db: DROP FUNCTION ... CASCADE takes only the view that uses it");
	sql($db, q{INSERT INTO ev VALUES (2, '2024-01-02', 5)});
	check_views($db, 'after DROP FUNCTION', qw(bob_min));

	# DROP OWNED of bob's view: the trigger stays for the others
	sql($db, 'DROP OWNED BY bob');
	is(sql($db, q{SELECT to_regclass('bob_min') IS NULL}), 't', "$db: DROP OWNED drops bob's view");
	like(triggers($db), qr/stream_ext_maintain stream_ext.maintain_views/, "$db: the trigger stays");
	sql($db, q{INSERT INTO ev SELECT 1, '2024-01-02', i FROM generate_series(1, 20) i});
	check_views($db, 'after DROP OWNED', qw(per_min range_min));

	# the last views: the trigger goes, inserts go on
	sql($db, 'DROP VIEW per_min, range_min');
	is(triggers($db), 'stream_ext_append_only stream_ext.reject_stream_modification',
		"$db: the trigger goes with the stream's last view");
	sql($db, q{INSERT INTO ev VALUES (1, '2024-01-03', 1)});
	is(sql($db, 'SELECT count(*) FROM stream_ext.continuous_views'), '0', "$db: no view left");
}

done_testing();
