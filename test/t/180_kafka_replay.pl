# backfill = 'kafka' (docs/continuous-views.md#backfill, docs/kafka.md#replay):
# a continuous view created over a stream that keeps no rows (retain =>
# false), fed by a Kafka source, replays the source's topic up to the
# offsets the source had stored at CREATE, while the source goes on loading
# new messages into the stream.  Once the replay is done the view equals
# its query over ALL good messages of the topic: nothing before the
# hand-over missed, nothing after it counted twice.  Bad messages are
# skipped by the replay and not dead-lettered again.  Then: cancel stops a
# replay and leaves the view readable, DROP VIEW during a replay stops its
# worker, and a replay of a view whose owner loses the right to read the
# stream stops applying.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;
use ReplayTAP;

skip_unless_kafka();
my $broker = start_broker('--partitions', '2', '--topic', 'ev', '--topic', 'big');
my $bootstrap = $broker->bootstrap;

my $node = stream_ext_node('replay', max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);
sub sql { return $node->safe_psql('postgres', $_[0]) }
sub wait_for
{
	my ($q, $want, $name) = @_;
	return poll_ok($node, $q, $want, $name,
		'SELECT * FROM stream_ext.backfill_progress; SELECT * FROM stream_ext.source_status');
}

my $view_rows = 'SELECT k, n, s, nd FROM per_k ORDER BY k';

sql(qq{
CREATE EXTENSION stream_ext;
CREATE ROLE app LOGIN;
GRANT CREATE ON SCHEMA public TO app;
SET ROLE app;
SELECT stream_ext.create_stream('ev', 'k int, v int', retain => false);
SELECT stream_ext.create_kafka_source('ev_src', 'ev', '$bootstrap', 'ev', 'json',
  '{"batch_size": 200, "max_wait_ms": 100}');
SELECT stream_ext.start_source('ev_src');
});

# history: 4000 good messages and 3 bad ones, loaded and gone (the stream keeps nothing)
$broker->produce('ev', [ 'not json', @{ replay_msgs(1, 2000) } ], 0);
$broker->produce('ev', [ @{ replay_msgs(2001, 4000) }, '{"k": "x"}', '[' ], 1);
wait_for(total_stored('ev_src'), '4003', 'the source loaded the history');
is(sql('SELECT count(*) FROM ev'), '0', 'the stream keeps none of it');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'ev_src'}), '3',
	'the source made the 3 bad messages dead letters');

# new messages keep coming while the view is created and replays
my $live = $broker->produce_start('ev', replay_msgs(4001, 10000), 0,
	"$PostgreSQL::Test::Utils::tmp_check/live.txt");
sql(q{SET ROLE app;
CREATE VIEW per_k WITH (continuous, backfill = 'kafka') AS
  SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT v) AS nd FROM ev GROUP BY k;});
my $handover = sql(q{SELECT sum(end_offset) FROM stream_ext.backfill_offsets});
cmp_ok($handover, '>=', 4003, 'the hand-over is at or after the loaded history');
note("hand-over at $handover of 10003 messages: the rest reached the view through its trigger");
$broker->produce_finish($live);
wait_for(total_stored('ev_src'), '10003', 'the source loaded the live messages');
wait_for(q{SELECT state FROM stream_ext.backfill_progress WHERE view = 'per_k'::regclass}, 'done',
	'the replay is done');
is(sql($view_rows), replay_expected(1, 10000),
	'the view equals its query over every good message of the topic');
is(sql(q{SELECT format('%s %s %s %s', messages + skipped = offsets_total, skipped, offsets_done = offsets_total, partitions)
           FROM stream_ext.backfill_progress}), 't 3 t 2',
	'progress: every offset up to the hand-over done, the 3 bad messages skipped');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'ev_src'}), '3',
	'no dead letter twice');
$broker->produce('ev', replay_msgs(10001, 10500), 1);
wait_for(total_stored('ev_src'), '10503', 'more live messages loaded');
is(sql($view_rows), replay_expected(1, 10500), 'after the replay, the trigger alone maintains the view');
wait_for(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'stream_ext kafka replay'}, '0',
	'the replay worker exited');

# ---- CREATE OR REPLACE with backfill = 'kafka': the new query over the whole topic
$live = $broker->produce_start('ev', replay_msgs(10501, 14000), 1,
	"$PostgreSQL::Test::Utils::tmp_check/live2.txt");
sql(q{SET ROLE app;
CREATE OR REPLACE VIEW per_k WITH (continuous, backfill = 'kafka') AS
  SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT v) AS nd, max(v) AS mx FROM ev GROUP BY k;});
$broker->produce_finish($live);
wait_for(total_stored('ev_src'), '14003', 'the source loaded the messages produced during the replace');
wait_for(q{SELECT state FROM stream_ext.backfill_progress WHERE view = 'per_k'::regclass}, 'done',
	'the replay of the replaced view is done');
is(sql($view_rows), replay_expected(1, 14000), 'the replaced view equals its new query over every message');
is(sql('SELECT count(*) FROM per_k WHERE mx = 100'), '7', 'including its new column');
my ($n, $secs, $rate) = split /\|/, sql(q{SELECT messages, round(extract(epoch FROM finished_at - started_at)::numeric, 2),
  round(messages / greatest(extract(epoch FROM finished_at - started_at), 0.001))
  FROM stream_ext.backfill_progress WHERE view = 'per_k'::regclass});
note("replayed $n messages in $secs s since CREATE: $rate messages/s (batch_size 200)");

# ---- cancel and DROP VIEW during a replay -------------------------------------
sql(qq{SET ROLE app;
SELECT stream_ext.create_stream('big', 'k int, v int', retain => false);
SELECT stream_ext.create_kafka_source('big_src', 'big', '$bootstrap', 'big', 'json',
  '{"batch_size": 20, "max_wait_ms": 50}');
SELECT stream_ext.start_source('big_src');});
$broker->produce('big', replay_msgs(1, 20000), 0);
wait_for(total_stored('big_src'), '20000', 'the source loaded the big topic');
sql(q{SET ROLE app;
CREATE VIEW big_c WITH (continuous, backfill = 'kafka') AS SELECT k, count(*) AS n FROM big GROUP BY k;});
wait_for(q{SELECT messages > 0 FROM stream_ext.backfill_progress WHERE view = 'big_c'::regclass}, 't',
	'the replay of big_c started');
is(sql(q{SET ROLE app; SELECT stream_ext.cancel_backfill('big_c')}), 't', 'cancel_backfill()');
my $at_cancel = sql(q{SELECT messages FROM stream_ext.backfill_progress WHERE view = 'big_c'::regclass});
cmp_ok($at_cancel, '<', 20000, "cancelled in the middle ($at_cancel of 20000 messages)");
is(sql('SELECT sum(n) FROM big_c'), $at_cancel, 'the view holds exactly the replayed batches, and is readable');
sleep(2);
is(sql(q{SELECT format('%s %s', state, messages) FROM stream_ext.backfill_progress WHERE view = 'big_c'::regclass}),
	"cancelled $at_cancel", 'nothing applied after the cancel');
wait_for(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'stream_ext kafka replay'}, '0',
	'the cancelled replay worker exited');

sql(q{SET ROLE app;
CREATE VIEW big_d WITH (continuous, backfill = 'kafka') AS SELECT k, count(*) AS n FROM big GROUP BY k;});
wait_for(q{SELECT messages > 0 FROM stream_ext.backfill_progress WHERE view = 'big_d'::regclass}, 't',
	'the replay of big_d started');
sql(q{SET ROLE app; DROP VIEW big_d;});
is(sql(q{SELECT count(*) FROM stream_ext.backfills WHERE source = 'big_src' AND state = 'running'}), '0',
	'DROP VIEW took its replay along');
wait_for(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'stream_ext kafka replay'}, '0',
	'the worker of the dropped view exited');

# ---- CREATE OR REPLACE in place (same OID) while its replay runs: the running
# worker starts over with the new query, nothing of the old one stays
sql(q{SET ROLE app;
CREATE VIEW big_e WITH (continuous, backfill = 'kafka') AS SELECT k, count(*) AS n FROM big GROUP BY k;});
wait_for(q{SELECT messages > 0 FROM stream_ext.backfill_progress WHERE view = 'big_e'::regclass}, 't',
	'the replay of big_e started');
sql(q{SET ROLE app;
CREATE OR REPLACE VIEW big_e WITH (continuous, backfill = 'kafka') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM big GROUP BY k;});
wait_for(q{SELECT state FROM stream_ext.backfill_progress WHERE view = 'big_e'::regclass}, 'done',
	'the replay of the view replaced during its replay is done');
my $big = replay_expected(1, 20000);
$big =~ s/^(\d+\|\d+\|\d+)\|\d+$/$1/mg;
is(sql('SELECT k, n, s FROM big_e ORDER BY k'), $big,
	'the view replaced during its replay equals its new query over the topic');

# ---- the owner's rights are checked at every batch -----------------------------
sql(q{SET ROLE app;
CREATE VIEW big_r WITH (continuous, backfill = 'kafka') AS SELECT k, count(*) AS n FROM big GROUP BY k;});
wait_for(q{SELECT messages > 0 FROM stream_ext.backfill_progress WHERE view = 'big_r'::regclass}, 't',
	'the replay of big_r started');
sql(q{ALTER TABLE big OWNER TO postgres; REVOKE ALL ON big FROM app;});
wait_for(q{SELECT last_error LIKE '%may no longer read stream%' FROM stream_ext.backfill_progress WHERE view = 'big_r'::regclass}, 't',
	'after REVOKE the replay stops applying, with the reason in backfill_progress');
my $stopped = sql(q{SELECT messages FROM stream_ext.backfill_progress WHERE view = 'big_r'::regclass});
sleep(1);
is(sql(q{SELECT messages FROM stream_ext.backfill_progress WHERE view = 'big_r'::regclass}), $stopped,
	'and applies nothing more');
sql(q{SELECT stream_ext.cancel_backfill('big_r')});

$node->stop;
done_testing();
