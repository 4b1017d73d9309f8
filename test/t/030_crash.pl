# Crashes during Kafka ingest (issue #8): kill -9 of the postmaster and,
# alternately, kill -9 of the source worker (which makes the postmaster
# reinitialize: crash recovery either way), at random moments while a
# source ingests into a stream with three continuous views.
#
# After every crash, in one snapshot: the views agree with the stored
# offsets (they are committed together), and the UNLOGGED stream holds
# only what was committed since the crash (crash recovery emptied it)
# while the views kept everything before (they are logged).
# At the end: ingestion resumed by itself, every view equals the oracle
# computed in Perl over exactly the produced messages, and the stored
# offsets equal the produced count of every partition: 0 lost, 0
# duplicated.
#
# STREAM_EXT_CRASH_ITERATIONS (default 20) crashes of
# STREAM_EXT_CRASH_CHUNK (default 15000) messages each;
# STREAM_EXT_CRASH_SEED fixes the random moments (the seed is printed).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use StreamExtTAP;

skip_unless_kafka();

my $iterations = $ENV{STREAM_EXT_CRASH_ITERATIONS} || 20;
my $chunk = $ENV{STREAM_EXT_CRASH_CHUNK} || 15000;
my $seed = $ENV{STREAM_EXT_CRASH_SEED} || int(time * 1000) % 1000000;
srand($seed);
note("iterations $iterations, chunk $chunk, seed $seed (STREAM_EXT_CRASH_SEED=$seed repeats the moments)");
my $NPART = 4;
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $t0 = time;

# ---- broker ---------------------------------------------------------------
my $broker = start_broker('--partitions', $NPART, '--topic', 'ev');
my $bootstrap = $broker->bootstrap;

# ---- messages and the oracle ----------------------------------------------
# message i (from 1) goes to partition i % NPART; CSV "k,u,v"
my $produced = 0;
my @part_count = (0) x $NPART;
my (%n, %s, %users, %all_users);
my ($total_s) = (0);

# start producing a chunk (one kcat per partition, in the background);
# returns the handles for finish_chunk
sub start_chunk
{
	my ($count) = @_;
	my @lines = map { [] } 1 .. $NPART;
	for (1 .. $count)
	{
		my $i = ++$produced;
		my ($k, $u, $v) = ($i % 50, ($i * 37) % 2003, $i % 1000);
		push @{ $lines[ $i % $NPART ] }, "$k,$u,$v";
		$n{$k}++;
		$s{$k} += $v;
		$users{$k}{$u} = 1;
		$all_users{$u} = 1;
		$total_s += $v;
	}
	my @h;
	for my $p (0 .. $NPART - 1)
	{
		push @h, $broker->produce_start('ev', $lines[$p], $p, "$tmp/chunk_$p");
		$part_count[$p] += @{ $lines[$p] };
	}
	return \@h;
}

sub finish_chunk { $broker->produce_finish(@{ $_[0] }) }

# ---- cluster --------------------------------------------------------------
my $node = stream_ext_node(
	'crash',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1,
	restart_after_crash => 'on');

sub sql { $node->safe_psql('postgres', $_[0]) }

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, u int, v int, p int, o bigint');
CREATE VIEW ev_by_key WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT u) AS users FROM ev GROUP BY k;
CREATE VIEW ev_total WITH (continuous) AS
  SELECT count(*) AS n, sum(v) AS s, count(DISTINCT u) AS users FROM ev;
CREATE VIEW ev_by_part WITH (continuous) AS
  SELECT p, count(*) AS n, max(o) AS last FROM ev GROUP BY p;
});
sql(q{SELECT stream_ext.create_kafka_source('ev_src', 'ev', '} . $bootstrap . q{', 'ev', 'csv',
      '{"columns": ["k", "u", "v"], "partition_column": "p", "offset_column": "o", "batch_size": 1000}')});
sql(q{SELECT stream_ext.start_source('ev_src')});

my $stored_sql = total_stored('ev_src');

# stored offsets (sum, and per partition), rows in the stream, the worker
my $state_sql = q{
SELECT coalesce(sum(next_offset), 0),
       string_agg(next_offset::text, ',' ORDER BY partition),
       (SELECT count(*) FROM ev),
       (SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext kafka worker' LIMIT 1)
  FROM stream_ext.kafka_offsets WHERE source = 'ev_src'
};

# Views and offsets agree, in one snapshot: each partition's count and
# last offset in ev_by_part match its stored next offset, and ev_total
# counts their sum.
my $consistent_sql = q{
SELECT count(*) FILTER (WHERE coalesce(v.n, 0) <> o.next_offset
                           OR coalesce(v.last + 1, 0) <> o.next_offset)
       || '|' || (SELECT coalesce(sum(n), 0) FROM ev_total)
                  - (SELECT sum(next_offset) FROM stream_ext.kafka_offsets WHERE source = 'ev_src')
  FROM stream_ext.kafka_offsets o LEFT JOIN ev_by_part v ON v.p = o.partition
 WHERE o.source = 'ev_src'
};

# The stream after a crash, in one snapshot: per partition its rows are
# exactly the offsets [first, next_offset) with first >= the offset stored
# before the crash (what came before is gone; no gap, no duplicate).
sub stream_after_crash_sql
{
	my ($before) = @_;
	my $case = join(' ', map { "WHEN $_ THEN $before->[$_]" } 0 .. $NPART - 1);
	return qq{
SELECT count(*) FILTER (WHERE s.c <> s.last - s.first + 1 OR s.last + 1 <> o.next_offset
                           OR s.first < CASE s.p $case END)
       || '|' || coalesce(sum(s.c), 0)
  FROM (SELECT p, count(*) AS c, min(o) AS first, max(o) AS last FROM ev GROUP BY p) s
  JOIN stream_ext.kafka_offsets o ON o.source = 'ev_src' AND o.partition = s.p
};
}

sub wait_for_worker
{
	my $pid;
	my $until = time + 60;
	while (time < $until)
	{
		$pid = $node->safe_psql('postgres',
			q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext kafka worker'});
		return $pid if $pid;
		sleep 0.05;
	}
	return undef;
}

ok(wait_for_worker(), 'the source worker runs');

# ---- crash loop -------------------------------------------------------------
my ($mid_ingest, $bad_consistency, $bad_stream, $stream_rows_before) = (0, 0, 0, 0);
my ($orphans, $max_linger) = (0, 0);
my @worker_pids;
for my $it (1 .. $iterations)
{
	my $start = $produced;
	my $producing = start_chunk($chunk);

	# a random moment of the ingest: once 5% to 95% of the chunk is stored.
	# One query gives the stored offsets, the stream's row count and the
	# worker, so the kill follows at once.
	my $target = $start + int($chunk * (0.05 + rand(0.9)));
	my $until = time + 20;
	my ($before_sum, $before, $stream_rows, $wpid);
	do
	{
		my ($sum, $offs, $rows, $pid) = split /\|/, sql($state_sql);
		($before_sum, $before, $stream_rows, $wpid) = ($sum, [ split /,/, $offs ], $rows, $pid);
	} while (($before_sum < $target || !$wpid) && time < $until);

	my $mode = $it % 2 ? 'postmaster' : 'worker';
	$stream_rows_before += $stream_rows;
	$mid_ingest++ if $before_sum < $produced;
	push @worker_pids, $wpid;
	if ($mode eq 'postmaster')
	{
		# every child must notice the postmaster's death and exit (an
		# orphan would keep the shared memory and block the restart)
		my ($linger, @left) = kill9_postmaster($node);
		$max_linger = $linger if $linger > $max_linger;
		if (@left)
		{
			$orphans++;
			diag("still alive 10 s after the postmaster's kill -9: @left");
		}
		$node->start;
	}
	else
	{
		# the postmaster notices the crash, ends every backend, runs crash
		# recovery and accepts connections again
		my $log_offset = -s $node->logfile;
		kill 'KILL', $wpid or die "cannot kill worker $wpid: $!";
		$node->wait_for_log(qr/all server processes terminated; reinitializing.*database system is ready to accept connections/s,
			$log_offset);
	}

	# right after the restart: consistent views/offsets, emptied stream
	my $c = sql($consistent_sql);
	my ($after_stream) = sql(stream_after_crash_sql($before));
	my ($bad, $rows) = split /\|/, $after_stream;
	$bad_consistency++ if $c ne '0|0';
	$bad_stream++ if $bad ne '0';
	note(sprintf('crash %2d (%-10s): stored %6d of %6d, stream %5d rows before; after: views-offsets %s, stream %s, %.1f s',
			$it, $mode, $before_sum, $produced, $stream_rows, $c, $after_stream, time - $t0));
	finish_chunk($producing);
}
is($orphans, 0, sprintf('after a kill -9 of the postmaster every child exits by itself (slowest: %.2f s)', $max_linger));
is($bad_consistency, 0, "after each of $iterations crashes the views agree with the stored offsets");
is($bad_stream, 0,
	'after each crash the unlogged stream holds only rows committed since the crash, contiguous up to the stored offsets');
cmp_ok($stream_rows_before, '>', 0, "the stream held $stream_rows_before rows at the crashes: none survived them");
cmp_ok($mid_ingest, '>=', int($iterations / 4), "crashes hit mid-ingest ($mid_ingest of $iterations)");

# ---- ingestion resumes by itself; the oracle --------------------------------
finish_chunk(start_chunk($chunk));
poll_ok($node, $stored_sql, $produced, "ingestion resumes by itself and stores all $produced offsets",
	'SELECT * FROM stream_ext.source_status');
my $pids = join(',', grep { defined } @worker_pids);
is(sql(qq{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'stream_ext kafka worker' AND pid NOT IN ($pids)}),
	'1', 'one worker runs, a new one');

offsets_ok($node, 'ev_src', \@part_count, 'stored offsets = produced count of every partition');
partitions_ok($node, 'ev_by_part', \@part_count,
	'ev_by_part: each partition counted exactly once (0 lost, 0 duplicated)');
is(sql(q{SELECT string_agg(format('%s:%s:%s:%s', k, n, s, users), ',' ORDER BY k) FROM ev_by_key}),
	join(',', map { "$_:$n{$_}:$s{$_}:" . scalar(keys %{ $users{$_} }) } sort { $a <=> $b } keys %n),
	'ev_by_key (count, sum, count(DISTINCT) by key) equals the oracle');
is(sql(q{SELECT format('%s:%s:%s', n, s, users) FROM ev_total}),
	"$produced:$total_s:" . scalar(keys %all_users),
	'ev_total (count, sum, count(DISTINCT)) equals the oracle');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters}), '0', 'no dead letters');
is(sql(q{SELECT state FROM stream_ext.source_status WHERE source = 'ev_src'}), 'running', 'the source is running');
cmp_ok(sql('SELECT count(*) FROM ev'), '<', $produced,
	'the stream lost the rows before the last crash (unlogged) while the views kept them');
note(sprintf('total %.1f s, %d messages', time - $t0, $produced));

$node->stop;
$broker->stop;
done_testing();
