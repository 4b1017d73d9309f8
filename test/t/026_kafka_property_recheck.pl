# A Kafka worker checks the librdkafka properties and brokers of its source
# or sink again, as the owner, whenever it builds its client: a property
# stored by a member of pg_read_server_files who has since lost that
# membership is refused (the error shows in source_status, nothing is
# consumed), and so is a broker that stream_ext.allowed_brokers stopped
# listing; once allowed again, the source consumes.  Sinks likewise.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'ev', '--topic', 'out');
my $bootstrap = $broker->bootstrap;
my ($bhost, $bport) = split /:/, $bootstrap;
my $node = stream_ext_node('recheck', max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

sql(qq{CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'n int');
CREATE ROLE alice LOGIN IN ROLE pg_read_server_files;
GRANT INSERT, SELECT ON ev TO alice;
SET ROLE alice;
-- a file property, harmless with plaintext (librdkafka reads it only for TLS)
SELECT stream_ext.create_kafka_source('files', 'ev', '$bootstrap', 'ev', 'json',
       '{"kafka": {"ssl.ca.location": "/nonexistent/ca.pem"}}');
SELECT stream_ext.create_kafka_source('plain', 'ev', '$bootstrap', 'ev', 'json');
SELECT stream_ext.create_kafka_sink('out', 'ev', '$bootstrap', 'out', 'json', NULL,
       '{"kafka": {"ssl.crl.location": "/nonexistent/crl.pem"}}');
RESET ROLE;
REVOKE pg_read_server_files FROM alice;});
$broker->produce('ev', [ map { qq({"n":$_}) } 1 .. 10 ], 0);

# ---- the membership is gone: the worker refuses the property ----------------
sql(q{SET ROLE alice; SELECT stream_ext.start_source('files');});
wait_for(q{SELECT last_error FROM stream_ext.source_status WHERE source = 'files'},
	'permission denied to set librdkafka property "ssl.ca.location"',
	'worker refuses a file property its owner may no longer set');
is(sql(q{SELECT state FROM stream_ext.source_status WHERE source = 'files'}), 'retrying',
	'and shows the source retrying');
is(sql(q{SELECT coalesce(sum(next_offset), 0) FROM stream_ext.kafka_offsets WHERE source = 'files'}),
	'0', 'nothing consumed');
is(sql('SELECT count(*) FROM ev'), '0', 'nothing inserted');
sql(q{SELECT stream_ext.stop_source('files')});

sql(q{SET ROLE alice; SELECT stream_ext.start_sink('out');});
poll_ok($node, q{SELECT last_error FROM stream_ext.sink_status WHERE sink = 'out'},
	'permission denied to set librdkafka property "ssl.crl.location"',
	'sink worker refuses it too', 'SELECT * FROM stream_ext.sink_status');
sql(q{SELECT stream_ext.stop_sink('out')});

# ---- allowed_brokers changed after create: refused at worker start ------------
my $other_port = $bport == 1 ? 2 : $bport - 1;
sql(qq{ALTER SYSTEM SET stream_ext.allowed_brokers = '$bhost:$other_port'; SELECT pg_reload_conf();});
sql(q{SET ROLE alice; SELECT stream_ext.start_source('plain');});
wait_for(q{SELECT last_error FROM stream_ext.source_status WHERE source = 'plain'},
	qq{permission denied to connect to Kafka broker "$bhost"},
	'worker refuses a broker allowed_brokers no longer lists');
is(sql('SELECT count(*) FROM ev'), '0', 'nothing inserted from it');

# allowed again: the worker's next attempt consumes
sql(qq{ALTER SYSTEM SET stream_ext.allowed_brokers = '$bhost:$bport'; SELECT pg_reload_conf();});
wait_for(total_stored('plain'), '10', 'consumes once the broker is allowed');
is(sql('SELECT sum(n) FROM ev'), '55', 'each message once');

# a superuser's source is not bound by allowed_brokers
sql(qq{ALTER SYSTEM SET stream_ext.allowed_brokers = 'nowhere:1'; SELECT pg_reload_conf();
SELECT stream_ext.create_kafka_source('su', 'ev', '$bootstrap', 'ev', 'json');
SELECT stream_ext.start_source('su');});
wait_for(total_stored('su'), '10', 'superuser source consumes from any broker');

$node->stop;
$broker->stop;
done_testing();
