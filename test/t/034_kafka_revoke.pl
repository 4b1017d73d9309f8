# Kafka ingest into a stream other roles build on (docs/security.md): a
# reader's continuous view in a schema the stream's owner cannot use does not
# send the owner's source messages to the dead letters, and after REVOKE the
# view is marked invalid while every message still reaches the stream.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'rv');
my $bootstrap = $broker->bootstrap;

my $node = stream_ext_node(
	'kafka_revoke',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

sql(qq{
CREATE EXTENSION stream_ext;
CREATE ROLE owner_r LOGIN;
CREATE ROLE reader_r;
CREATE SCHEMA app AUTHORIZATION owner_r;
CREATE SCHEMA reader_s AUTHORIZATION reader_r;
GRANT USAGE ON SCHEMA app TO reader_r;
SET ROLE owner_r;
SELECT stream_ext.create_stream('app.rv', 'n int');
GRANT SELECT ON app.rv TO reader_r;
SELECT stream_ext.create_kafka_source('rv_src', 'app.rv', '$bootstrap', 'rv', 'json',
  '{"batch_size": 100, "max_wait_ms": 200}');
SET ROLE reader_r;
CREATE VIEW reader_s.total WITH (continuous) AS SELECT count(*) AS c, sum(n) AS s FROM app.rv;
SET ROLE owner_r;
SELECT stream_ext.start_source('rv_src');
});

$broker->produce('rv', [ map { qq({"n":$_}) } 1 .. 300 ]);
wait_for(total_stored('rv_src'), '300', 'the first 300 messages are consumed');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters}), '0',
	'no dead letters: the source inserts although its owner cannot use the view\'s schema');
is(sql(q{SELECT count(*) FROM app.rv}), '300', 'the stream has every message');
is(sql(q{SELECT format('%s:%s', c, s) FROM reader_s.total}), '300:45150', 'the reader\'s view has every row');

sql(q{REVOKE SELECT ON app.rv FROM reader_r});
$broker->produce('rv', [ map { qq({"n":$_}) } 301 .. 600 ]);
wait_for(total_stored('rv_src'), '600', 'the next 300 messages are consumed');
is(sql(q{SELECT count(*) FROM stream_ext.dead_letters}), '0', 'still no dead letters after REVOKE');
is(sql(q{SELECT count(*) FROM app.rv}), '600', 'the stream has every message');
is(sql(q{SELECT reason FROM stream_ext.invalid_objects WHERE object = 'reader_s.total'::regclass}),
	'role "reader_r" has no SELECT on column n of table app.rv', 'the reader\'s view is marked invalid');
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT * FROM reader_s.total');
like($err, qr/continuous view "total" is invalid/, 'reading the view fails');

$node->stop;
$broker->stop;
done_testing();
