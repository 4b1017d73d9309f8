# A writer's commit starts its database's compactor at once: with the
# launcher's scanner asleep for an hour (stream_ext.kafka_launcher_naptime),
# the first batch appended to a new view's delta still gets a compactor
# within seconds, and it empties the delta.  Many commits while it starts
# register one compactor, not one each (at most one start a second; a
# twin exits at once).  stream_ext.background_compaction = off: writers
# start none.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

my $node = stream_ext_node('compactor_start',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 3600,
	'stream_ext.compact_naptime' => '200ms');

sub sql { return $node->safe_psql($_[1] // 'postgres', $_[0]) }

my $compactors = q{SELECT count(*) FROM pg_stat_activity
  WHERE backend_type = 'stream_ext compactor' AND datname = current_database()};

# let the launcher's first scan (at start, no extension yet) go by
sleep(2);

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int');
CREATE VIEW per_k WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
});
# The launcher also wakes when DDL sends it many invalidations, and may
# have started a compactor for the new view by chance: stop any such
# compactor, and nothing restarts it for an hour but a writer.
sleep(3);
sql(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE backend_type = 'stream_ext compactor'});
poll_ok($node, $compactors, '0', 'no compactor before the first batch');
sleep(1.5);
is(sql($compactors), '0', 'and none comes back by itself');

# twenty small commits in a row: one compactor
sql("INSERT INTO ev SELECT g % 10, g FROM generate_series(1, 100) g") for 1 .. 20;
poll_ok($node, $compactors, '1', 'the first commits started the compactor');
poll_ok($node, 'SELECT count(*) FROM per_k_delta', '0',
	'it emptied the delta');
is(sql(q{SELECT count(*) FROM ((TABLE per_k EXCEPT ALL
           SELECT k, count(*), sum(v) FROM ev GROUP BY k)
        UNION ALL (SELECT k, count(*), sum(v) FROM ev GROUP BY k
           EXCEPT ALL TABLE per_k)) d}), '0', 'the view equals its query');
sleep(1.5);
is(sql($compactors), '1', 'still one compactor (twins exited)');

# background_compaction off: a writer starts none
$node->append_conf('postgresql.conf', 'stream_ext.background_compaction = off');
$node->reload;
poll_ok($node, $compactors, '0', 'the compactor leaves when turned off');
sleep(1.5);
sql("INSERT INTO ev SELECT g % 10, g FROM generate_series(1, 100) g") for 1 .. 3;
sleep(2);
is(sql($compactors), '0', 'no compactor started by writers while off');

$node->stop;
done_testing();
