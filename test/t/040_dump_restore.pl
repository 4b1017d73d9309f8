# pg_dump / pg_restore of a database with streams, continuous views (with
# count(DISTINCT) side tables, a keyless view, hopping, session and sliding
# windows, odd identifiers, a view owned by a non-superuser) and Kafka
# sources with stored offsets and dead letters: custom format through
# pg_restore and plain format through psql, each into a fresh database.
# After the restore stream_ext's catalog says the same, the views equal the
# oracle, keep being maintained as rows arrive, and the objects keep their
# dependencies (DROP VIEW takes the materialization along, DROP EXTENSION
# needs CASCADE).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use StreamExtTAP;

my $node = stream_ext_node('dump');

sub sql { my ($db, $q) = @_; return $node->safe_psql($db, $q); }

$node->safe_psql('postgres', 'CREATE ROLE alice LOGIN; CREATE DATABASE src;');
sql('src', q{
CREATE EXTENSION stream_ext;
CREATE SCHEMA "Sch ema" AUTHORIZATION alice;
SELECT stream_ext.create_stream('clicks', 'url text, uid int, ts timestamptz, v int');
CREATE VIEW per_url WITH (continuous) AS
  SELECT url, date_bin('1 hour', ts, '2000-01-01') AS hour, count(*) AS n, sum(v) AS s,
         avg(v) AS a, count(DISTINCT uid) AS users
    FROM clicks GROUP BY url, hour;
CREATE VIEW total WITH (continuous) AS
  SELECT count(*) AS n, max(v) AS mx, min(url) AS first_url FROM clicks;
CREATE VIEW per_url_hop WITH (continuous) AS
  SELECT url, w.window_start, count(*) AS n, sum(v) AS s
    FROM clicks, stream_ext.hop(ts, '1 hour', '20 minutes') AS w(window_start)
   GROUP BY url, w.window_start;
CREATE VIEW visits WITH (continuous, session_gap = '90 minutes', time_column = 'ts') AS
  SELECT uid, count(*) AS n, sum(v) AS s FROM clicks GROUP BY uid;
CREATE VIEW recent WITH (continuous, sliding_window = '1 day', step = '1 minute') AS
  SELECT url, count(*) AS n, max(v) AS mx FROM clicks GROUP BY url;
-- a stream-table join, as an aggregate view and as a transform into a table
CREATE TABLE pages (url text, section text);
INSERT INTO pages VALUES ('/p0', 'home'), ('/p1', 'shop'), ('/p1', 'sale');
CREATE VIEW per_section WITH (continuous) AS
  SELECT p.section, count(*) AS n, sum(c.v) AS s FROM clicks c JOIN pages p ON p.url = c.url
   GROUP BY p.section;
CREATE VIEW clicks_sections WITH (continuous) AS
  SELECT c.url, c.v, p.section FROM clicks c LEFT JOIN pages p ON p.url = c.url;
-- a view using a function (its maintenance statement names it)
CREATE FUNCTION url_group(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT upper($1)$$;
CREATE VIEW per_group WITH (continuous) AS
  SELECT url_group(url) AS g, count(*) AS n FROM clicks GROUP BY 1;
-- closed windows emitted into a stream
SELECT stream_ext.create_stream('closed_hours', 'url text, hour timestamptz, n bigint');
CREATE VIEW hourly WITH (continuous, allowed_lateness = '1 hour', emit = 'on_close',
                         output_stream = 'closed_hours') AS
  SELECT url, stream_ext.tumble(ts, '1 hour') AS hour, count(*) AS n FROM clicks GROUP BY 1, 2;
SET ROLE alice;
SELECT stream_ext.create_stream('"Sch ema"."Odd Stream"', '"Weird Col" text, n int');
CREATE VIEW "Sch ema"."Odd View" WITH (continuous) AS
  SELECT "Weird Col", count(*) AS c, sum(n) AS "Total"
    FROM "Sch ema"."Odd Stream" GROUP BY "Weird Col";
SELECT stream_ext.create_kafka_source('alice src', '"Sch ema"."Odd Stream"', 'localhost:1',
       'odd', 'csv', '{"columns": ["Weird Col", "n"]}');
RESET ROLE;
SELECT stream_ext.create_kafka_source('src_a', 'clicks', 'localhost:1', 'topic_a', 'json',
       '{"batch_size": 10}');
-- a stopped sink: every row inserted from now on waits in its queue
SELECT stream_ext.create_kafka_sink('sink_a', 'clicks', 'localhost:1', 'out', 'json', 'url');
-- what the workers would have stored
INSERT INTO stream_ext.kafka_offsets (source, partition, next_offset, high_watermark)
  VALUES ('src_a', 0, 42, 50), ('src_a', 1, 7, NULL), ('alice src', 0, 3, 3);
INSERT INTO stream_ext.dead_letters (source, partition, "offset", payload, error)
  VALUES ('src_a', 0, 41, 'oops', 'invalid input syntax for type json');
});

my $next = 1;

sub insert_rows
{
	my ($db, $n) = @_;
	my ($from, $to) = ($next, $next + $n - 1);
	$next += $n;
	sql($db, qq{
INSERT INTO clicks (url, uid, ts, v)
  SELECT '/p' || (i % 3), i % 7,
         '2024-01-01'::timestamptz + i * interval '10 minutes' + (i % 5) * interval '13 minutes', i
    FROM generate_series($from, $to) i;
SET ROLE alice;
INSERT INTO "Sch ema"."Odd Stream" ("Weird Col", n)
  SELECT CASE WHEN i % 4 = 0 THEN NULL ELSE 'it''s ' || (i % 4) END, i
    FROM generate_series($from, $to) i;
});
}

# each view and the same query as plain SQL over its stream
sub base_oracle
{
	return (
		'per_url' => q{SELECT url, date_bin('1 hour', ts, '2000-01-01'), count(*), sum(v), avg(v),
                              count(DISTINCT uid) FROM clicks GROUP BY 1, 2},
		'total' => q{SELECT count(*), max(v), min(url) FROM clicks},
		'per_url_hop' => q{SELECT url, w.window_start, count(*), sum(v)
                             FROM clicks, stream_ext.hop(ts, '1 hour', '20 minutes') AS w(window_start)
                            GROUP BY 1, 2},
		# gaps and islands (docs/session-windows.md)
		'visits' => q{SELECT uid, count(*), sum(v), min(ts), max(ts)
                        FROM (SELECT *, sum(brk) OVER (PARTITION BY uid ORDER BY ts) AS session
                                FROM (SELECT *, CASE WHEN ts - lag(ts) OVER (PARTITION BY uid ORDER BY ts)
                                                          <= '90 minutes' THEN 0 ELSE 1 END AS brk
                                        FROM clicks WHERE ts IS NOT NULL) a) b
                       GROUP BY uid, session},
		# sliding, by arrival time (docs/windows.md); one statement, one now()
		'recent' => q{SELECT url, count(*), max(v) FROM clicks
                       WHERE stream_ext.tumble(arrival_timestamp, '1 minute') >= now() - interval '1 day'
                       GROUP BY 1},
		'per_section' => q{SELECT p.section, count(*), sum(c.v) FROM clicks c JOIN pages p
                            ON p.url = c.url GROUP BY 1},
		'clicks_sections' => q{SELECT c.url, c.v, p.section FROM clicks c LEFT JOIN pages p ON p.url = c.url},
		'per_group' => q{SELECT url_group(url), count(*) FROM clicks GROUP BY 1},
		'"Sch ema"."Odd View"' =>
		  q{SELECT "Weird Col", count(*), sum(n) FROM "Sch ema"."Odd Stream" GROUP BY 1});
}
my %oracle = base_oracle();

# rows of a view that its query does not give, and back: none
sub check_oracle
{
	my ($db, $what, @views) = @_;
	@views = sort keys %oracle unless @views;
	for my $v (@views)
	{
		my $q = $oracle{$v};
		is( sql($db, qq{SELECT count(*) FROM ((TABLE $v EXCEPT ALL $q) UNION ALL
                                               ($q EXCEPT ALL TABLE $v)) d}),
			'0', "$db: $v equals its query over the stream $what");
	}
}

insert_rows('src', 300);
check_oracle('src', 'before the dump');

# everything stream_ext knows, by name
my $catalog_sql = q{
SELECT 'stream', stream::text FROM stream_ext.stream_catalog
UNION ALL
SELECT 'view', concat_ws(' | ', view::text, stream::text, matrel::text, aux_tables::text,
                         definition, maintain_sql, distinct_sql::text, timezone)
  FROM stream_ext.view_catalog
UNION ALL
SELECT 'source', concat_ws(' | ', id, name, stream::text, brokers, topic, format, options::text,
                           owner::text, state, last_error)
  FROM stream_ext.kafka_sources
UNION ALL
SELECT 'offset', concat_ws(' | ', source, partition, next_offset, high_watermark)
  FROM stream_ext.kafka_offsets
UNION ALL
SELECT 'dead letter', concat_ws(' | ', id, source, partition, "offset", payload, error)
  FROM stream_ext.dead_letters
UNION ALL
SELECT 'sink', concat_ws(' | ', id, name, stream::text, topic, format, key_column, owner::text, state)
  FROM stream_ext.kafka_sinks
UNION ALL
SELECT 'sink queue', concat_ws(' | ', count(*), min(seq), max(seq), count(DISTINCT payload))
  FROM stream_ext.sink_queue
ORDER BY 1, 2};
my $catalog = sql('src', $catalog_sql);
like($catalog, qr/source\|2 \| src_a \| clicks/, 'the catalog lists the sources');

my $dir = $PostgreSQL::Test::Utils::tmp_check;
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', "$dir/src.dump" ],
	'pg_dump -Fc');
$node->command_ok([ 'pg_dump', '-Fp', '-d', $node->connstr('src'), '-f', "$dir/src.sql" ],
	'pg_dump -Fp');

# the extension's own objects are not in the dump, only CREATE EXTENSION
# and the data of its configuration tables
my $plain = slurp_file("$dir/src.sql");
unlike($plain, qr/CREATE (TABLE|VIEW|FUNCTION) stream_ext\./, 'no extension member in the dump');
like($plain, qr/CREATE EXTENSION IF NOT EXISTS stream_ext/, 'CREATE EXTENSION in the dump');
like($plain, qr/COPY stream_ext\.view_catalog/, 'view_catalog rows in the dump');

sub run_quiet
{
	my ($what, @cmd) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	ok($ok && $err eq '', "$what succeeds without a message") or diag("$out\n$err");
}

$node->safe_psql('postgres', 'CREATE DATABASE custom; CREATE DATABASE plain;');
run_quiet('pg_restore', 'pg_restore', '-d', $node->connstr('custom'), "$dir/src.dump");
run_quiet('psql -f (plain dump)', 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d',
	$node->connstr('plain'), '-f', "$dir/src.sql");

my $saved_next = $next;
for my $db ('custom', 'plain')
{
	$next = $saved_next;
	%oracle = base_oracle();
	is(sql($db, $catalog_sql), $catalog, "$db: stream_ext's catalog is the same after the restore");
	# every maintenance and transform trigger goes with its view again, the
	# last one of each stream in the dump too
	is(sql($db, q{SELECT string_agg(tgname, ', ' ORDER BY tgname) FROM pg_trigger t
                   WHERE tgname ~ '^stream_ext_(maintain|transform)_'
                     AND NOT EXISTS (SELECT 1 FROM pg_depend d
                                      WHERE d.classid = 'pg_trigger'::regclass AND d.objid = t.oid
                                        AND d.deptype = 'a' AND d.refobjid <> t.tgrelid)}),
		'', "$db: every trigger of a view or transform depends on it");
	check_oracle($db, 'after the restore');

	insert_rows($db, 200);
	check_oracle($db, 'after more rows');
	is(sql($db, 'SELECT n FROM total'), $next - 1, "$db: total counts every row");
	is(sql($db, 'SELECT count(*) || \' \' || max(seq) FROM stream_ext.sink_queue'),
		($next - 1) . ' ' . ($next - 1),
		"$db: the sink's queue holds every row, numbered on from the restored sequence");

	# alice keeps her objects, and sees only her source
	is(sql($db, q{SELECT pg_get_userbyid(relowner) FROM pg_class
                   WHERE oid = '"Sch ema"."Odd View"'::regclass}), 'alice', "$db: alice owns her view");
	is(sql($db, 'SET ROLE alice; SELECT string_agg(name, \',\') FROM stream_ext.kafka_sources'),
		'alice src', "$db: alice sees only her source");

	# a new source does not collide with the restored ids
	sql($db, q{SELECT stream_ext.create_kafka_source('src_b', 'clicks', 'localhost:1', 't', 'json')});
	is(sql($db, q{SELECT id FROM stream_ext.kafka_sources WHERE name = 'src_b'}), '3',
		"$db: the sources' id sequence is restored");

	# a new view over the restored stream starts from the rows it holds
	sql($db, q{CREATE VIEW per_uid WITH (continuous) AS SELECT uid, count(*) AS n FROM clicks GROUP BY uid});
	$oracle{per_uid} = 'SELECT uid, count(*) FROM clicks GROUP BY uid';
	insert_rows($db, 50);
	check_oracle($db, 'with a view created after the restore');

	# the joined table cannot go without its views, nor the columns they read
	my ($ret, $out, $err) = $node->psql($db, 'DROP TABLE pages');
	like($err, qr/view per_section depends on table pages/, "$db: a restored joined view depends on its table");
	like($err, qr/view clicks_sections depends on table pages/, "$db: so does a restored joined transform");
	($ret, $out, $err) = $node->psql($db, 'ALTER TABLE pages DROP COLUMN section');
	like($err, qr/view per_section depends on column section of table pages/,
		"$db: and on the columns it reads");
	sql($db, 'DROP TABLE pages CASCADE');
	delete @oracle{qw(per_section clicks_sections)};
	is(sql($db, q{SELECT count(*) FROM pg_class WHERE relname LIKE 'per_section%' OR relname LIKE 'clicks_sections%'}),
		'0', "$db: DROP TABLE CASCADE takes the joined view and transform along");

	# the functions a view uses cannot go, nor be renamed
	($ret, $out, $err) = $node->psql($db, 'DROP FUNCTION url_group(text)');
	like($err, qr/view per_group depends on function url_group\(text\)/,
		"$db: a restored view depends on the functions it uses");
	($ret, $out, $err) = $node->psql($db, 'ALTER FUNCTION url_group(text) RENAME TO g2');
	like($err, qr/cannot rename function url_group\(text\): continuous view public\.per_group uses it/,
		"$db: which cannot be renamed either");

	# nor the stream closed windows go to
	($ret, $out, $err) = $node->psql($db, 'DROP TABLE closed_hours');
	like($err, qr/view hourly depends on table closed_hours/,
		"$db: a restored view emitting closed windows depends on its output stream");

	# dependencies: the view takes its materialization and trigger along
	sql($db, 'DROP VIEW total, per_url, per_url_hop, visits, recent, per_group');
	is(sql($db, q{SELECT count(*) FROM pg_class
                   WHERE relname LIKE 'total%' OR relname LIKE 'per_url%' OR relname LIKE 'visits%'
                      OR relname LIKE 'recent%'}),
		'0', "$db: DROP VIEW drops the materialization and side tables of a restored view");
	is(sql($db, q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'clicks'::regclass
                    AND tgname LIKE 'stream_ext_maintain%'}),
		'1', "$db: and their triggers");
	delete @oracle{qw(total per_url per_url_hop visits recent per_group)};
	insert_rows($db, 10);
	check_oracle($db, 'after dropping the other views');

	($ret, $out, $err) = $node->psql($db, 'DROP EXTENSION stream_ext');
	like($err, qr/other objects depend on it/, "$db: DROP EXTENSION needs CASCADE");
	like($err, qr/table clicks depends on extension stream_ext/, "$db: the streams depend on the extension");
	sql($db, 'DROP VIEW per_uid');
	delete $oracle{per_uid};
	sql($db, 'DROP EXTENSION stream_ext CASCADE');
	is(sql($db, q{SELECT count(*) FROM pg_class WHERE relname IN ('clicks', 'Odd Stream', 'Odd View')}),
		'0', "$db: DROP EXTENSION CASCADE drops the restored streams and views");
}

done_testing();
