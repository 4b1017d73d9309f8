# stream_ext on a server without shared_preload_libraries: CREATE EXTENSION
# (and LOAD) fail with an ordinary ERROR, SQLSTATE 55000 and the hint the
# docs promise, and the session goes on; nothing is left behind.  After the
# hint's advice (preload, restart) the same statement works.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('no_preload');
$node->init;
$node->start;

my ($ret, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
CREATE EXTENSION stream_ext;
SELECT 'alive', count(*) FROM pg_extension WHERE extname = 'stream_ext';
SELECT count(*) FROM pg_namespace WHERE nspname = 'stream_ext';
}, on_error_stop => 0);
like($err, qr/ERROR:  55000: stream_ext must be loaded via shared_preload_libraries/,
	'CREATE EXTENSION: ERROR 55000');
like($err, qr/HINT:  Add stream_ext to shared_preload_libraries in postgresql\.conf and restart the server\./,
	'with the hint');
unlike($err, qr/FATAL|server closed the connection/, 'no FATAL, the session survives');
is($out, "alive|0\n0", 'the session goes on; no extension, no schema left');

# LOAD, then the statements again in the same session: still no FATAL
($ret, $out, $err) = $node->psql('postgres', q{
LOAD 'stream_ext';
CREATE EXTENSION stream_ext;
SELECT 'alive';
}, on_error_stop => 0);
like($err, qr/ERROR:  stream_ext must be loaded via shared_preload_libraries/,
	'after LOAD: the same ERROR');
unlike($err, qr/FATAL/, 'after LOAD: no FATAL');
is($out, 'alive', 'after LOAD: the session goes on');

my $log = slurp_file($node->logfile);
unlike($log, qr/FATAL|terminated by signal/, 'no FATAL and no crash in the server log');

# following the hint works
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'stream_ext'\n");
$node->restart;
is($node->safe_psql('postgres', q{
SET client_min_messages = warning;
CREATE EXTENSION stream_ext;
SELECT extversion <> '' FROM pg_extension WHERE extname = 'stream_ext';}),
	't', 'with the preload CREATE EXTENSION works');

$node->stop;
done_testing();
