# The schema registry as a network destination of a non-superuser's source:
# stream_ext.allowed_registries is checked at create as the caller and
# before every registry request as the owner (a registry struck from the
# list serves no new schema to the source: those messages become dead
# letters saying so, also after the worker restarts), and a registry's
# redirect is never followed (the redirect's target sees no request).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use StreamExtTAP;
use AvroTAP;

skip_unless_kafka();

my $broker = start_broker('--partitions', '1', '--topic', 'ev');
my $tmpdir = PostgreSQL::Test::Utils::tempdir();
my $reg = start_registry("$tmpdir/registry.json");
my $other = start_registry("$tmpdir/other.json");
my $port = $reg->{port};
my $node = stream_ext_node(
	'avroreg',
	max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 1,
	'stream_ext.allowed_registries' => "'127.0.0.1:$port'");

sub sql { $node->safe_psql('postgres', $_[0]) }
sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

my %v;
$v{$_} = qq({"type": "record", "name": "Ev", "fields": [
  {"name": "n", "type": "long"}, {"name": "v$_", "type": "int", "default": 0}]}) for 1 .. 3;
is($reg->register('ev-value', $v{$_}), $_, "schema $_ registered") for 1 .. 3;

sql(q{
CREATE EXTENSION stream_ext;
CREATE ROLE alice LOGIN;
SELECT stream_ext.create_stream('ev', 'n bigint');
ALTER TABLE ev OWNER TO alice;
});
create_sqlstate_of($node);
my $bs = $broker->bootstrap;
my $url = $reg->url;
my $other_url = $other->url;

# at create, as the caller: only the listed registry
is( sql(qq{SET ROLE alice; SELECT sqlstate_of(\$\$SELECT stream_ext.create_kafka_source('x', 'ev', '$bs', 'ev',
      'avro-confluent', '{"schema_registry": "$other_url"}')\$\$)}),
	'42501', 'a registry not in allowed_registries is refused at create');
sql(q{SELECT stream_ext.create_stream('evc', 'n bigint', changelog => true); ALTER TABLE evc OWNER TO alice;});
is( sql(qq{SET ROLE alice; SELECT sqlstate_of(\$\$SELECT stream_ext.create_kafka_source('xc', 'evc', '$bs', 'ev',
      'debezium-avro', '{"schema_registry": "$other_url"}')\$\$)}),
	'42501', 'debezium-avro: a registry not in allowed_registries is refused at create');
sql(qq{SET ROLE alice; SELECT stream_ext.start_source(stream_ext.create_kafka_source('alice_src', 'ev', '$bs', 'ev',
      'avro-confluent', '{"schema_registry": "$url"}'))});

my $n = 0;
sub produce_v
{
	my ($id, $name) = @_;
	$n++;
	produce_files($broker, 'ev', [ avro_messages($v{$id}, [ { n => $n } ], "$tmpdir/$name", $id) ], 0);
	return $n;
}
produce_v(1, 'm1');
wait_for(total_stored('alice_src'), '1', 'allowed registry: consumed');
is(sql(q{SELECT n FROM ev}), '1', 'allowed registry: decoded');

# struck from the list: the next request, as the owner, is refused
sql(q{ALTER SYSTEM SET stream_ext.allowed_registries = 'registry.example.com'; SELECT pg_reload_conf();});
sleep 1;
produce_v(2, 'm2');
produce_v(1, 'm3');
wait_for(total_stored('alice_src'), '3', 'after the change: consumed');
is( sql(q{SELECT "offset", error FROM stream_ext.dead_letters WHERE source = 'alice_src'}),
	'1|permission denied to connect to schema registry "127.0.0.1"',
	'a new schema id is not fetched from a registry no longer allowed');
is(sql(q{SELECT string_agg(n::text, ',' ORDER BY n) FROM ev}), '1,3',
	'a schema fetched while allowed stays cached');
is($reg->get('/_test/requests')->{by_id}{2}, undef, 'the registry saw no request for id 2');

# a worker started while its registry is not allowed still runs: the
# messages whose schemas it would have to fetch are the dead letters
sql(q{SET ROLE alice; SELECT stream_ext.stop_source('alice_src');});
wait_for(q{SELECT count(*) FROM stream_ext.kafka_worker_stats()}, '0', 'worker stopped');
sql(q{SET ROLE alice; SELECT stream_ext.start_source('alice_src');});
produce_v(1, 'm4');
wait_for(total_stored('alice_src'), '4', 'restarted worker: consumed');
is( sql(q{SELECT s.state, d.error FROM stream_ext.source_status s, stream_ext.dead_letters d
           WHERE s.source = 'alice_src' AND d.source = 'alice_src' AND d."offset" = 3}),
	'running|permission denied to connect to schema registry "127.0.0.1"',
	'a restarted worker runs, and a schema it has not cached is a dead letter');

# a redirect is not followed, whatever it points to
sql(q{ALTER SYSTEM RESET stream_ext.allowed_registries; SELECT pg_reload_conf();});
sleep 1;
$reg->redirect($other_url);
produce_v(3, 'm5');
wait_for(total_stored('alice_src'), '5', 'redirect: consumed');
is( sql(q{SELECT error FROM stream_ext.dead_letters WHERE source = 'alice_src' AND "offset" = 4}),
	'schema registry refused schema id 3: HTTP status 302',
	'a redirect is a refusal');
is($other->get('/_test/requests')->{ids}, 0, 'the redirect target saw no request');

$node->stop;
$broker->stop;
done_testing();
