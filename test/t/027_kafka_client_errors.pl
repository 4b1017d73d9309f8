# A Kafka source shows librdkafka's own error text in source_status as soon
# as librdkafka reports it, not a generic "Broker transport failure" after
# the 5 s metadata timeout: a SASL mechanism the broker does not support
# (the embedded broker, librdkafka's mock cluster, has no SASL: "SASL
# Handshake not supported by broker"), and a port where nothing listens
# ("Connection refused").  While failing, the source is 'retrying', never
# 'running'.  The error stays specific after the metadata wait gives up.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use StreamExtTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'ev');
my $bootstrap = $broker->bootstrap;
my $node = stream_ext_node('client_errors', max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1);

sub sql { $node->safe_psql('postgres', $_[0]) }

# a port nothing listens on: bind one, note it, close it
my $dead_port = do {
	require IO::Socket::INET;
	my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1', LocalPort => 0)
	  or die "cannot bind: $!";
	my $p = $s->sockport;
	close $s;
	$p;
};

sql(qq{CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'n int');
SELECT stream_ext.create_kafka_source('sasl', 'ev', '$bootstrap', 'ev', 'json',
       '{"kafka": {"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-256",
                   "sasl.username": "u", "sasl.password": "p"}}');
SELECT stream_ext.create_kafka_source('refused', 'ev', '127.0.0.1:$dead_port', 'ev', 'json');});

# Start a source and poll its status every 50 ms for up to $limit s until
# last_error matches $re; returns the seconds it took (undef: never), and
# the states seen before.
sub time_to_error
{
	my ($source, $re, $limit) = @_;
	my %states;
	sql(qq{SELECT stream_ext.start_source('$source')});
	my $t0 = time;
	while (time - $t0 < $limit)
	{
		my $row = sql(qq{SELECT state || '|' || coalesce(last_error, '')
			FROM stream_ext.source_status WHERE source = '$source'});
		my ($state, $error) = split /\|/, $row, 2;
		$states{$state}++;
		return (time - $t0, \%states, $error) if $error =~ $re;
		usleep(50_000);
	}
	return (undef, \%states, '');
}

# generous under load, well below librdkafka's 5 s metadata timeout
my $prompt = 3.5;

# one test per expectation: shown at all, shown promptly, never 'running'
sub error_shown_ok
{
	my ($source, $re, $what) = @_;
	my ($secs, $states, $error) = time_to_error($source, $re, 20);
	ok(defined $secs, "$what: librdkafka's error text in last_error")
	  or diag(sql('SELECT * FROM stream_ext.source_status'));
	note("$what: shown after " . ($secs // 'never') . " s: $error");
	ok(defined $secs && $secs < $prompt, "$what: shown within $prompt s");
	ok(!$states->{running}, "$what: never shown as running meanwhile")
	  or diag(explain $states);
}

error_shown_ok('sasl', qr/SASL Handshake not supported/, 'SASL mismatch');
# after the metadata wait gave up and the worker rebuilt its client, the
# error still names the cause
sleep 6;
like(sql(q{SELECT last_error FROM stream_ext.source_status WHERE source = 'sasl'}),
	qr/SASL/, 'still the SASL error after the metadata timeout');
is(sql(q{SELECT state FROM stream_ext.source_status WHERE source = 'sasl'}), 'retrying',
	'state retrying');
sql(q{SELECT stream_ext.stop_source('sasl')});

error_shown_ok('refused', qr/Connection refused/, 'unreachable port');
sql(q{SELECT stream_ext.stop_source('refused')});

# a healthy source still starts and consumes
$broker->produce('ev', [ map { qq({"n":$_}) } 1 .. 5 ], 0);
sql(qq{SELECT stream_ext.create_kafka_source('ok', 'ev', '$bootstrap', 'ev', 'json');
SELECT stream_ext.start_source('ok');});
poll_ok($node, total_stored('ok'), '5', 'a reachable broker: consumed',
	'SELECT * FROM stream_ext.source_status');
poll_ok($node, q{SELECT state || ' ' || coalesce(last_error, '-') FROM stream_ext.source_status WHERE source = 'ok'},
	'running -', 'running, no error', 'SELECT * FROM stream_ext.source_status');

$node->stop;
$broker->stop;
done_testing();
