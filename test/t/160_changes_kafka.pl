# EMIT CHANGES end to end (docs/changes.md): Kafka source -> stream ->
# continuous view with changes = true -> Kafka sinks with "emit": "changes"
# (json and csv) -> topics read back with kcat.  The latest message per key
# is the view's row of that key (a compacted topic holds the view); a group
# that left the view (HAVING) ends in a tombstone; keys are the group key,
# NULL keys included; nothing of a rolled-back batch; errors.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use StreamExtTAP;

my $J = JSON::PP->new->canonical;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'clicks_in',
	'--partitions', '3', '--topic', 'hits_json', '--topic', 'hits_csv');
my $bootstrap = $broker->bootstrap;

my $node = stream_ext_node('changes', max_worker_processes => 32,
	'stream_ext.kafka_launcher_naptime' => 2);
sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.sink_status') }

sql(q{
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('clicks', 'url text, n int');
CREATE VIEW hits WITH (continuous, changes = true) AS
  SELECT url, count(*) AS clicks, sum(n) AS total FROM clicks GROUP BY url HAVING sum(n) > 0;
});
create_sqlstate_of($node);
sql(qq{SELECT stream_ext.create_kafka_source('cin', 'clicks', '$bootstrap', 'clicks_in', 'json', '{"batch_size": 25}');
       SELECT stream_ext.create_kafka_sink('hj', stream_ext.changes('hits'), '$bootstrap', 'hits_json', 'json',
                                           options => '{"emit": "changes", "batch_size": 10}');
       SELECT stream_ext.create_kafka_sink('hc', stream_ext.changes('hits'), '$bootstrap', 'hits_csv', 'csv',
                                           options => '{"emit": "changes"}');
       SELECT stream_ext.start_sink('hj'); SELECT stream_ext.start_sink('hc');
       SELECT stream_ext.start_source('cin');});

# 300 messages over 12 urls and a NULL url, in rounds; /u0 and /u1 go
# negative at the end (they leave the view: tombstones)
my @in;
for my $i (1 .. 300)
{
	my $u = $i % 13 == 0 ? 'null' : '"/u' . ($i % 12) . '"';
	push @in, qq({"url":$u,"n":$i});
}
push @in, '{"url":"/u0","n":-100000}', '{"url":"/u1","n":-100000}';
$broker->produce('clicks_in', [ @in[0 .. 99] ]);
$broker->produce('clicks_in', [ @in[100 .. $#in] ]);
# a rolled-back batch inserted directly: nothing reaches the topics
sql(q{BEGIN; INSERT INTO clicks VALUES ('/rolled-back', 1); ROLLBACK;});
wait_for(q{SELECT count(*) FROM clicks}, scalar(@in), 'the source loaded every message');
my $done = q{SELECT bool_and(queued_rows = 0 AND state = 'running') FROM stream_ext.sink_status};
wait_for($done, 't', 'the sinks delivered every change');

my $changes = sql(q{SELECT count(*) FROM hits_changes});
ok($changes > 13, "the view's change stream has $changes changes");
is(sql(q{SELECT count(*) FROM hits_changes WHERE change_op = 'delete'}), '2', 'two groups left the view');

# the view, keyed as the sink keys it
my %view_json;
for my $line (split /\n/, sql(q{SELECT row_to_json(k)::text || E'\t' || row_to_json(v)::text
                                 FROM hits v CROSS JOIN LATERAL (SELECT v.url) k}))
{
	my ($k, $v) = split /\t/, $line;
	$view_json{ $J->encode($J->decode($k)) } = $J->decode($v);
}
is(scalar(keys %view_json), 11, 'the view has 11 groups (10 urls and NULL)');

# json: the latest message per key is the view's row, deleted keys end in a tombstone
my $msgs = $broker->consume('hits_json');
is(scalar(@$msgs), $changes, 'hits_json has one message per change');
my (%latest, %part);
my $bad_part = 0;
for my $m (@$msgs)
{
	my $k = $J->encode($J->decode($m->{key}));
	$latest{$k} = defined $m->{payload} ? $J->decode($m->{payload}) : undef;
	$bad_part++ if defined $part{$k} && $part{$k} != $m->{partition};
	$part{$k} = $m->{partition};
}
is($bad_part, 0, 'json: one partition per key');
my @live = grep { defined $latest{$_} } keys %latest;
my @dead = grep { !defined $latest{$_} } keys %latest;
is_deeply({ map { $_ => $latest{$_} } @live }, \%view_json,
	'json: latest value per key == the view (NULL key included)');
is_deeply([ sort @dead ], [ '{"url":"/u0"}', '{"url":"/u1"}' ], 'json: deleted keys end in a tombstone');
ok(!(grep { ($_->{key} // '') =~ /rolled-back/ } @$msgs), 'nothing of a rolled-back batch');

# csv: the same, keys and rows as csv lines
my %view_csv = map { my ($k, $v) = split /\t/; ($k => $v) }
  split /\n/, sql(q{SELECT coalesce(url, '') || E'\t' || coalesce(url, '') || ',' || clicks || ',' || total FROM hits});
my %latest_csv;
$latest_csv{ $_->{key} // '' } = $_->{payload} for @{ $broker->consume('hits_csv') };
is_deeply({ map { $_ => $latest_csv{$_} } grep { defined $latest_csv{$_} } keys %latest_csv }, \%view_csv,
	'csv: latest value per key == the view');
is_deeply([ sort grep { !defined $latest_csv{$_} } keys %latest_csv ], [ '/u0', '/u1' ],
	'csv: deleted keys end in a tombstone');

# errors
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', 'clicks', 'localhost:1', 't', 'json',
                                options => '{"emit": "changes"}')$$)}), '22023',
	'"emit": "changes" needs a change stream');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', stream_ext.changes('hits'), 'localhost:1', 't', 'text',
                                options => '{"emit": "changes"}')$$)}), '22023', 'not format text');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', stream_ext.changes('hits'), 'localhost:1', 't', 'json',
                                'url', '{"emit": "changes"}')$$)}), '22023', 'no key_column');
is(sql(q{SELECT sqlstate_of($$SELECT stream_ext.create_kafka_sink('x', 'clicks', 'localhost:1', 't', 'json',
                                options => '{"emit": "rows"}')$$)}), '22023', 'emit is "changes" only');

sql(q{SELECT stream_ext.drop_source('cin'); SELECT stream_ext.drop_sink('hj'); SELECT stream_ext.drop_sink('hc');});
$node->stop;
$broker->stop;
done_testing();
