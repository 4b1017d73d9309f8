# Two workers of one source and a client writing to the same groups
# (issue #14, item 5): every batch holds bad rows the stream refuses (a
# CHECK), so every batch takes the failure path that looks for them, while
# the other worker and a client that inserts one group at a time in
# descending key order, in transactions, lock the same groups of the
# continuous views.  Deadlocks may happen; each one must cost a retry of
# the whole batch, never a message: only the bad rows are dead letters,
# every valid message is in the views exactly once.
#
# Before the fix the rows of a refused batch were retried one statement
# each, so a worker held its groups' locks in message order, deadlocked
# with the others, and dead-lettered valid rows with "deadlock detected".
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use StreamExtTAP;

skip_unless_kafka();

my $NPART = 4;
my $PER_PART = 2500;
my $KEYS = 50;
my $BAD_EVERY = 50;
my $broker = start_broker('--partitions', $NPART, '--topic', 'ev');
my $bootstrap = $broker->bootstrap;
my $node = stream_ext_node(
	'contention',
	max_worker_processes => 16,
	deadlock_timeout => "'100ms'",
	'stream_ext.kafka_launcher_naptime' => 1);

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, v int CHECK (v >= 0), p int, o bigint');
CREATE VIEW ev_by_key WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM ev GROUP BY k;
CREATE VIEW ev_by_part WITH (continuous) AS
  SELECT p, count(*) AS n, max(o) AS last FROM ev GROUP BY p;
});
sql(q{SELECT stream_ext.create_kafka_source('ev_src', 'ev', '} . $bootstrap . q{', 'ev', 'csv',
      '{"columns": ["k", "v"], "partition_column": "p", "offset_column": "o",
        "batch_size": 200, "workers": 2}')});

# messages: keys scattered in message order; every BAD_EVERY-th is refused
my (@good, @last_good);
my $nbad = 0;
for my $p (0 .. $NPART - 1)
{
	my @lines;
	($good[$p], $last_good[$p]) = (0, -1);
	for my $o (0 .. $PER_PART - 1)
	{
		my $k = ($o * 7 + $p * 13) % $KEYS;
		if ($o % $BAD_EVERY == $BAD_EVERY / 2)
		{
			push @lines, "$k,-1";
			$nbad++;
			next;
		}
		push @lines, "$k,1";
		$good[$p]++;
		$last_good[$p] = $o;
	}
	$broker->produce('ev', \@lines, $p);
}

# the client: 100 transactions, each inserting one row per group in
# descending key order, one statement each (partition -1); a transaction
# that is a deadlock victim is rolled back (its rows counted nowhere)
my $client = $node->background_psql('postgres');
$client->query_until(qr/started/, qq{\\echo started
DO \$\$
BEGIN
  FOR i IN 1 .. 100 LOOP
    BEGIN
      FOR k IN REVERSE $KEYS - 1 .. 0 LOOP
        INSERT INTO ev VALUES (k, 1, -1, i);
      END LOOP;
    EXCEPTION WHEN deadlock_detected THEN NULL;
    END;
    COMMIT;
  END LOOP;
END
\$\$;
});

my $t0 = time;
sql(q{SELECT stream_ext.start_source('ev_src')});

# until every message is consumed, or a valid one is a dead letter (what
# happened before the fix: then fail at once, not after a timeout)
my $N = $NPART * $PER_PART;
my ($stored, $wrong) = (0, 0);
while (time < $t0 + $PostgreSQL::Test::Utils::timeout_default)
{
	($stored, $wrong) = split /\|/, sql('SELECT (' . total_stored('ev_src') . q{),
	  (SELECT count(*) FROM stream_ext.dead_letters WHERE error NOT LIKE '%violates check constraint%')});
	last if $stored == $N || $wrong > 0;
	usleep(200_000);
}
is($wrong, '0', 'no valid message is a dead letter')
  or diag(sql(q{SELECT error, count(*) FROM stream_ext.dead_letters GROUP BY 1}));
is($stored, $N, 'every message is consumed');
note(sprintf('consumed in %.1f s', time - $t0));
# the client may be stuck behind the workers (before the fix): end it then
sql(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'DO%'})
  if $stored != $N;
$client->quit;

is(sql(q{SELECT count(*) FILTER (WHERE error LIKE '%violates check constraint%') || '/' || count(*)
          FROM stream_ext.dead_letters}),
	"$nbad/$nbad", 'the dead letters are the refused rows, and only they');
my @want = map { "$_:$good[$_]:$last_good[$_]" } 0 .. $NPART - 1;
is(sql(q{SELECT string_agg(format('%s:%s:%s', p, n, last), ',' ORDER BY p) FROM ev_by_part WHERE p >= 0}),
	join(',', @want), 'every valid message is in the view exactly once');
offsets_ok($node, 'ev_src', [ ($PER_PART) x $NPART ], 'stored offsets');
is(sql(q{SELECT (SELECT sum(n) FROM ev_by_key) = (SELECT sum(n) FROM ev_by_part)
           AND (SELECT sum(s) FROM ev_by_key) = (SELECT sum(n) FROM ev_by_part)}),
	't', 'the view by key agrees with the view by partition');
my $log = slurp_file($node->logfile);
my $retries = () = $log =~ /retrying a batch of \d+ messages .*deadlock detected/g;
note("batches retried after a deadlock: $retries");

$node->stop;
$broker->stop;
done_testing();
