
# Copyright (c) stream_ext developers

=pod

=head1 NAME

StreamExtTAP - shared set-up for stream_ext's TAP tests (test/t/*.pl)

=head1 SYNOPSIS

  use PostgreSQL::Test::Cluster;
  use PostgreSQL::Test::Utils;
  use Test::More;
  use StreamExtTAP;

  # skip the whole file unless test/broker is built and kcat installed
  skip_unless_kafka();

  # the embedded broker (test/broker): arguments as on its command line;
  # asserts "embedded broker serves at HOST:PORT" (one test)
  my $broker = start_broker('--partitions', '4', '--topic', 'clicks');
  my $bootstrap = $broker->bootstrap;

  # a started node with stream_ext preloaded, plus settings in this order
  my $node = stream_ext_node('kafka', max_worker_processes => 16,
	'stream_ext.kafka_launcher_naptime' => 2);

  sub sql { $node->safe_psql('postgres', $_[0]) }
  sub wait_for { poll_ok($node, @_, 'SELECT * FROM stream_ext.source_status') }

  sql('CREATE EXTENSION stream_ext');
  create_sqlstate_of($node);
  ...
  $broker->produce('clicks', [ '{"url":"/a"}', '{"url":"/b"}' ], 0);
  wait_for(total_stored('clicks_src'), '2', 'both messages consumed');

  $node->stop;
  $broker->stop;
  done_testing();

=head1 DESCRIPTION

The plumbing the stream_ext TAP tests share: finding and starting the
embedded Kafka broker (test/broker/stream_ext_broker) and reading its
bootstrap address, producing and consuming messages with kcat, creating a
node with stream_ext in C<shared_preload_libraries>, polling a query with
a test name and a diagnostic on failure, and the per-partition checks of a
source's stored offsets.

test/run-tests.sh puts this directory on the include path (C<prove -I
perl>, and C<PERL5LIB>).  By hand, from test/:

  PERL5LIB=$(dirname $(pg_config --pgxs))/../test/perl prove -I perl t/020_kafka_ingest.pl

Every broker started with start_broker() is killed when the test ends,
however it ends.

=cut

package StreamExtTAP;

use strict;
use warnings;

use Carp;
use Cwd qw(abs_path);
use Exporter 'import';
use File::Basename qw(dirname);
use IPC::Run;
use Test::More;
use Time::HiRes ();

our @EXPORT = qw(
  skip_unless_kafka
  broker_path
  start_broker
  stream_ext_node
  kill9_postmaster
  create_sqlstate_of
  poll_ok
  total_stored
  offsets_ok
  partitions_ok
);

# every broker start_broker() started, killed at the end
my @brokers;

END
{
	# kill_kill reaps the child: keep the test's exit status
	local $?;
	$_->stop for @brokers;
}

=pod

=head1 FUNCTIONS

=over

=item broker_path()

The embedded broker's executable: C<$ENV{STREAM_EXT_BROKER}> (set by
run-tests.sh) if it is executable, else test/broker/stream_ext_broker next
to this module's directory.  Undef if neither is executable.

=cut

sub broker_path
{
	my $bin = $ENV{STREAM_EXT_BROKER};
	return $bin if $bin && -x $bin;
	$bin = abs_path(dirname(__FILE__) . '/../broker/stream_ext_broker');
	return $bin && -x $bin ? $bin : undef;
}

=pod

=item skip_unless_kafka()

C<plan skip_all> (the file passes, marked skipped) unless the embedded
broker is built and kcat is installed.  Call it before anything else.

=cut

sub skip_unless_kafka
{
	plan skip_all => "embedded broker not built (make -C test/broker)"
	  unless broker_path();
	plan skip_all => "kcat not installed"
	  unless system('sh', '-c', 'command -v kcat >/dev/null') == 0;
	return;
}

=pod

=item start_broker(@args)

Starts the embedded broker with command-line arguments @args (e.g.
C<'--partitions', 4, '--topic', 'ev'>: C<--partitions> applies to the
topics after it), waits up to 20 s for its C<bootstrap=HOST:PORT> line,
and asserts C<ok($bootstrap, "embedded broker serves at $bootstrap")>.
Returns a StreamExtTAP::Broker (methods below).

=cut

sub start_broker
{
	my @args = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	my $bin = broker_path() or croak 'embedded broker not built';
	my $self = bless { out => '', err => '' }, 'StreamExtTAP::Broker';
	$self->{h} =
	  IPC::Run::start([ $bin, @args ], '>', \$self->{out}, '2>', \$self->{err});
	push @brokers, $self;

	my $deadline = time + 20;
	while ($self->{out} !~ /bootstrap=(\S+)/ && time < $deadline)
	{
		$self->{h}->pump_nb;
		Time::HiRes::sleep(0.01);
	}
	($self->{bootstrap}) = $self->{out} =~ /bootstrap=(\S+)/;
	ok($self->{bootstrap},
		'embedded broker serves at ' . ($self->{bootstrap} // ''))
	  or diag("broker stderr:\n$self->{err}");
	return $self;
}

=pod

=item stream_ext_node($name, $setting => $value, ...)

A new PostgreSQL::Test::Cluster node, initialized, with
C<shared_preload_libraries = 'stream_ext'> and then each setting in the
order given appended to postgresql.conf, and started.

=cut

sub stream_ext_node
{
	my ($name, @settings) = @_;
	croak 'settings go in pairs' if @settings % 2;

	my $conf = "shared_preload_libraries = 'stream_ext'\n";
	while (my ($k, $v) = splice(@settings, 0, 2))
	{
		$conf .= "$k = $v\n";
	}
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
	return $node;
}

=pod

=item kill9_postmaster($node)

C<kill -9> of the node's postmaster, then waits up to 10 s for every child
process to notice and exit (an orphan would keep the shared memory and block
the restart); any still alive then are killed.  Returns the seconds the
slowest took and the pids that had to be killed (none, normally).  The
caller restarts the node with C<< $node->start >>.

=cut

sub kill9_postmaster
{
	my ($node) = @_;
	my $pm = $node->{_pid};
	my @kids;
	for my $stat (glob('/proc/[0-9]*/stat'))
	{
		open(my $fh, '<', $stat) or next;
		my $line = <$fh>;
		close $fh;
		next unless defined $line && $line =~ /^(\d+) \(.*\) \S+ (\d+)/;
		push @kids, $1 if $2 == $pm;
	}
	my $killed_at = Time::HiRes::time;
	$node->kill9;
	my $until = $killed_at + 10;
	Time::HiRes::sleep(0.02)
	  while grep({ kill(0, $_) } $pm, @kids) && Time::HiRes::time < $until;
	my $linger = Time::HiRes::time - $killed_at;
	my @left = grep { kill(0, $_) } $pm, @kids;
	if (@left)
	{
		kill 'KILL', @left;
		Time::HiRes::sleep(0.5);
	}
	return ($linger, @left);
}

=pod

=item create_sqlstate_of($node [, $dbname ])

Creates the SQL function C<sqlstate_of(q text)> in $dbname (default
postgres): it runs q and returns C<'ok'>, or the SQLSTATE of the error it
raised.

=cut

sub create_sqlstate_of
{
	my ($node, $dbname) = @_;
	$node->safe_psql($dbname // 'postgres', q{
CREATE FUNCTION sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS
$$ BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN others THEN RETURN SQLSTATE; END $$;
});
	return;
}

=pod

=item poll_ok($node, $query, $expected, $name [, $diag_query ])

One test: C<$node-E<gt>poll_query_until('postgres', $query, $expected)>
succeeds (within PostgreSQL::Test::Utils' timeout_default).  On failure,
diag()s the result of $diag_query if given (say, the source_status view).
Returns the test's result.

=cut

sub poll_ok
{
	my ($node, $query, $expected, $name, $diag_query) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	my $ok = ok($node->poll_query_until('postgres', $query, $expected), $name);
	diag($node->safe_psql('postgres', $diag_query))
	  if !$ok && defined $diag_query;
	return $ok;
}

=pod

=item total_stored($source)

The query giving the sum of source $source's stored next offsets (over
its partitions, 0 before any): the number of messages it has consumed
and committed.

=cut

sub total_stored
{
	my ($source) = @_;
	return "SELECT coalesce(sum(next_offset), 0) FROM stream_ext.kafka_offsets WHERE source = '$source'";
}

=pod

=item offsets_ok($node, $source, \@produced, $name)

One test: source $source's stored next offset of partition p equals
$produced[p] for every partition (nothing lost, nothing consumed twice).

=cut

sub offsets_ok
{
	my ($node, $source, $produced, $name) = @_;
	my $query =
	  qq{SELECT string_agg(format('%s:%s', partition, next_offset), ',' ORDER BY partition)
          FROM stream_ext.kafka_offsets WHERE source = '$source'};
	my @want = map { "$_:$produced->[$_]" } 0 .. $#$produced;
	return _query_is($node, $query, join(',', @want), $name);
}

=pod

=item partitions_ok($node, $view, \@produced, $name)

One test: $view, a continuous view with columns C<p> (the partition),
C<n> (count(*)) and C<last> (max of the offset column) grouped by p, has
C<n = $produced[p]> and C<last = $produced[p] - 1> for every partition:
each message applied exactly once.

=cut

sub partitions_ok
{
	my ($node, $view, $produced, $name) = @_;
	my $query =
	  qq{SELECT string_agg(format('%s:%s:%s', p, n, last), ',' ORDER BY p) FROM $view};
	my @want = map { "$_:$produced->[$_]:" . ($produced->[$_] - 1) } 0 .. $#$produced;
	return _query_is($node, $query, join(',', @want), $name);
}

# is() of a query's result on database postgres, reported at the caller's caller
sub _query_is
{
	my ($node, $query, $expected, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 2;
	return is($node->safe_psql('postgres', $query), $expected, $name);
}

=pod

=back

=cut

package StreamExtTAP::Broker;

use strict;
use warnings;

use IPC::Run;
use JSON::PP ();
use Time::HiRes ();

=pod

=head1 BROKER METHODS

start_broker() returns a StreamExtTAP::Broker:

=over

=item $broker->bootstrap()

The broker's bootstrap address, C<HOST:PORT>.

=cut

sub bootstrap
{
	my ($self) = @_;
	return $self->{bootstrap};
}

=pod

=item $broker->produce($topic, \@lines [, $partition ])

Produces each line as one message to $topic (partition $partition, or
kcat's default partitioner), with C<kcat -P>; dies if kcat fails.

=cut

sub produce
{
	my ($self, $topic, $lines, $partition) = @_;
	my $in = join('', map { "$_\n" } @$lines);
	my ($o, $e);
	IPC::Run::run([ $self->_kcat_produce($topic, $partition) ],
		'<', \$in, '>', \$o, '2>', \$e)
	  or die "kcat failed: $e";
	return;
}

=pod

=item $broker->produce_keyed($topic, \@messages [, $partition ])

Like produce(), each message with a key of its own ("key0", "key1", ...);
an undef message is a tombstone (a keyed message without a value, kcat -Z),
as Debezium writes after a delete.

=cut

sub produce_keyed
{
	my ($self, $topic, $msgs, $partition) = @_;
	my $i = 0;
	my $in = join('', map { 'key' . $i++ . "\t" . (defined $_ ? $_ : '') . "\n" } @$msgs);
	my ($o, $e);
	IPC::Run::run([ $self->_kcat_produce($topic, $partition), '-Z', '-K', "\t" ],
		'<', \$in, '>', \$o, '2>', \$e)
	  or die "kcat failed: $e";
	return;
}

=pod

=item $broker->produce_start($topic, \@lines, $partition, $file)

Like produce(), in the background: writes the lines to $file (IPC::Run
feeds a scalar only while the caller pumps) and starts kcat reading it.
Returns a handle for produce_finish().

=cut

sub produce_start
{
	my ($self, $topic, $lines, $partition, $file) = @_;
	open(my $fh, '>', $file) or die "cannot write $file: $!";
	print $fh map { "$_\n" } @$lines;
	close $fh or die "cannot write $file: $!";
	my $p = { out => '', err => '' };
	$p->{h} = IPC::Run::start([ $self->_kcat_produce($topic, $partition) ],
		'<', $file, '>', \$p->{out}, '2>', \$p->{err});
	return $p;
}

=pod

=item $broker->produce_finish(@handles)

Waits for the kcat of each handle of produce_start(); dies if one failed.

=cut

sub produce_finish
{
	my ($self, @handles) = @_;
	for my $p (@handles)
	{
		$p->{h}->finish or die "kcat failed: $p->{err}";
	}
	return;
}

sub _kcat_produce
{
	my ($self, $topic, $partition) = @_;
	my @cmd = ('kcat', '-P', '-b', $self->{bootstrap}, '-t', $topic);
	push @cmd, '-p', $partition if defined $partition;
	return @cmd;
}

=pod

=item $broker->consume($topic)

Every message of $topic now (C<kcat -C -e -J>), in partition and offset
order: a reference to an array of hashes with kcat's JSON fields
(C<partition>, C<offset>, C<key>, C<payload>, ...; key and payload are
Perl character strings, undef for NULL).

=cut

sub consume
{
	my ($self, $topic) = @_;
	my ($o, $e);
	IPC::Run::run([ 'kcat', '-C', '-b', $self->{bootstrap}, '-t', $topic, '-e', '-J', '-q' ],
		'>', \$o, '2>', \$e)
	  or die "kcat failed: $e";
	my @m = map { JSON::PP::decode_json($_) } grep { /\S/ } split /\n/, $o;
	@m = sort { $a->{partition} <=> $b->{partition} || $a->{offset} <=> $b->{offset} } @m;
	return \@m;
}

=pod

=item $broker->signal($signal, $word)

Sends $signal to the broker and waits up to 10 s for a new line C<$word>
on its output: C<signal('USR1', 'down')> takes it down (connections
closed and refused, topics kept), C<signal('USR2', 'up')> back up.
Returns true if the line came.

=cut

sub signal
{
	my ($self, $sig, $word) = @_;
	my $seen = () = $self->{out} =~ /^$word$/mg;
	$self->{h}->signal($sig);
	my $until = Time::HiRes::time() + 10;
	while (Time::HiRes::time() < $until)
	{
		$self->{h}->pump_nb;
		my $now = () = $self->{out} =~ /^$word$/mg;
		return 1 if $now > $seen;
		Time::HiRes::sleep(0.05);
	}
	return 0;
}

=pod

=item $broker->stop()

Kills the broker (done anyway at the end of the test).

=cut

sub stop
{
	my ($self) = @_;
	$self->{h}->kill_kill if $self->{h};
	delete $self->{h};
	return;
}

=pod

=back

=cut

1;
