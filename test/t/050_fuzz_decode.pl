# Fuzzing of the Kafka message decoder (src/kafka/decode.c) with libFuzzer, for a
# bounded time (STREAM_EXT_FUZZ_SECONDS, default 60), inside a single-user
# backend (see test/fuzz/fuzz_decode.c and docs/testing.md "Fuzzing").
# Passes iff libFuzzer ran to its time limit without a finding: no crash,
# no hang, no error outside the classes a bad message may raise, no
# failing output function, no runaway memory per message.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use StreamExtTAP;
use File::Path qw(make_path);
use File::Basename qw(dirname);
use Cwd qw(abs_path);

my $root = $ENV{STREAM_EXT_ROOT} || abs_path(dirname(__FILE__) . '/../..');
my $fuzzdir = "$root/test/fuzz";
my $seconds = $ENV{STREAM_EXT_FUZZ_SECONDS} || 60;

# ---- build the harness ------------------------------------------------------
my ($mout, $merr) = ('', '');
my $built = IPC::Run::run(
	[ 'make', '-s', '-C', $fuzzdir, "PG_CONFIG=" . ($ENV{PG_CONFIG} || 'pg_config') ],
	'>', \$mout, '2>', \$merr);
ok($built, 'libFuzzer harness builds') or diag("$mout\n$merr");
my $so = "$fuzzdir/stream_ext_fuzz.so";
BAIL_OUT('no harness') unless $built && -f $so;

# ---- a cluster with the streams the decoders target ---------------------------
my $node = stream_ext_node('fuzz');
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION stream_ext;
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
SELECT stream_ext.create_stream('fz_wide',
  'i int, b bigint, f float8, n numeric(10,2), t text, v varchar(8), flag boolean,
   ts timestamptz, d date, j jsonb, arr int[], p posint');
SELECT stream_ext.create_stream('fz_meta',
  'id int, a text, deep numeric, k text, part int, off bigint, mts timestamptz, raw bytea');
SELECT stream_ext.create_stream('fz_avro',
  'id bigint, name text, country text, amount numeric(10,2), ts timestamptz, day date,
   uid uuid, tags jsonb, kind text, score float8, ok boolean, raw bytea, small int,
   p posint, m jsonb, fx numeric, tu timestamptz');
SELECT stream_ext.create_stream('fz_avro2', 'id bigint, small int, score float8, extra text, zip int');
SELECT stream_ext.create_stream('fz_cdc', 'id int, name text, amount numeric(10,2), ts timestamptz, p posint',
                                changelog => true);
CREATE FUNCTION fuzz_decode(regclass[], text[], jsonb[], text, text[]) RETURNS void
  AS '$so', 'stream_ext_fuzz_decode' LANGUAGE C STRICT;
});
$node->stop;

# ---- fuzz ---------------------------------------------------------------------
# under log/: run-tests.sh keeps it in test/tmp/tap/log/fuzz/
my $work = "$PostgreSQL::Test::Utils::log_path/fuzz";
make_path("$work/corpus", "$work/artifacts");

my @args = (
	"-max_total_time=$seconds", '-timeout=10', '-max_len=4096',
	'-print_final_stats=1', "-dict=$fuzzdir/decode.dict",
	"-artifact_prefix=$work/artifacts/",
	# PostgreSQL keeps its own handlers for these
	'-handle_usr1=0', '-handle_usr2=0', '-handle_int=0', '-handle_term=0',
	'-handle_fpe=0',
	"$work/corpus", "$fuzzdir/corpus");
my $arr = join(', ', map { "'$_'" } @args);
my $csv_custom = q('{"csv_delimiter": ";", "csv_quote": "''", "csv_escape": "\\\\", "csv_null": "NULL"}');
my $meta = q('{"paths": {"deep": ["x", "y", "z"], "a": ["arr"]}, "key_column": "k",)
  . q( "partition_column": "part", "offset_column": "off", "timestamp_column": "mts"}');
# Avro: the writer schema of test/fuzz/avro_writer.json, read as it is and
# resolved against test/fuzz/avro_reader.json (defaults, promotions)
sub schema_file { my $s = slurp_file("$fuzzdir/$_[0]"); $s =~ s/'/''/g; $s =~ s/\n/ /g; return $s }
my $avro = q('{"paths": {"name": "user.name", "country": "user.country"}, "schema": )
  . schema_file('avro_writer.json') . q(}');
my $avro2 = q('{"paths": {"zip": "user.zip"}, "schema": ) . schema_file('avro_writer.json')
  . q(, "reader_schema": ) . schema_file('avro_reader.json') . q(}');
my $sql =
    "SELECT fuzz_decode(ARRAY['fz_wide', 'fz_meta', 'fz_wide', 'fz_wide', 'fz_wide', 'fz_meta', 'fz_wide', 'fz_wide', 'fz_avro', 'fz_avro2', 'fz_cdc']::regclass[], "
  . "ARRAY['json', 'json', 'csv', 'csv', 'text', 'bytea', 'json', 'csv', 'avro', 'avro', 'debezium-json'], "
  . "ARRAY['{}', $meta, '{}', $csv_custom, '{\"column\": \"j\"}', '{\"column\": \"raw\", \"key_column\": \"k\"}', "
  . "'{\"epoch_unit\": \"ms\"}', '{\"epoch_unit\": \"s\"}', $avro, $avro2, '{\"paths\": {\"name\": \"user.name\"}}']::jsonb[], "
  . "'$work/artifacts', ARRAY[$arr])\n";
note $sql;

my ($out, $err) = ('', '');
my $t0 = time;
my $ok = IPC::Run::run(
	[ 'postgres', '--single', '-D', $node->data_dir, '-F', 'postgres' ],
	'<', \$sql, '>', \$out, '2>', \$err,
	IPC::Run::timeout($seconds + 300));
my $elapsed = time - $t0;
note "libFuzzer output:\n$err";
note "backend output:\n$out";

ok($ok, "libFuzzer ran for ${seconds}s without a finding (exit code " . ($? >> 8) . ", ${elapsed}s)");
my @found = glob("$work/artifacts/*");
is(scalar(@found), 0, 'no crash, timeout or failing input saved')
  or diag(join("\n", map { "$_: " . slurp_file($_) } @found));
like($err, qr/Done \d+ runs in \d+ second/, 'libFuzzer finished its run');

my ($runs) = $err =~ /Done (\d+) runs/;
my ($cov) = $err =~ /cov: (\d+) ft:/;
my ($inputs, $decoded, $optsets, $optvalid, $e22, $e23, $e54, $maxmem) = $err =~
  /stream_ext fuzz: (\d+) inputs, (\d+) decoded, (\d+) option sets, (\d+) valid, (\d+) errors of class 22, (\d+) of class 23, (\d+) of class 54, max (\d+) bytes/;
ok(defined $inputs && $inputs > 1000, 'more than 1000 inputs decoded or refused')
  or diag("inputs: " . ($inputs // 'none'));
ok(($decoded // 0) > 0, 'some inputs decoded into tuples');
ok(($optvalid // 0) > 0 && ($optsets // 0) > ($optvalid // 0),
	'some option sets built decoders, some were refused');
ok(($e22 // 0) > 0, 'some inputs refused with a data exception (22)');
ok(($e23 // 0) > 0, 'the domain check refused some (23)');
ok(defined $cov && $cov > 50, 'src/kafka/decode.c is instrumented (coverage counters move)')
  or diag("cov: " . ($cov // 'none'));
diag(sprintf("fuzz: %d runs in %ds, cov %d; %d decoded, %d of %d option sets valid, refused %d/%d/%d (22/23/54), max %d bytes per input",
		$runs // 0, $elapsed, $cov // 0, $decoded // 0, $optvalid // 0, $optsets // 0,
		$e22 // 0, $e23 // 0, $e54 // 0, $maxmem // 0));

done_testing();
