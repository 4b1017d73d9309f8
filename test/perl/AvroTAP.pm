
=pod

=head1 NAME

AvroTAP - Avro messages and a stand-in schema registry for TAP tests

=head1 SYNOPSIS

  use AvroTAP;

  my $reg = start_registry($node->basedir . '/registry.json');   # 1 test
  my $id = $reg->register('ev-value', $schema_json);
  my @files = avro_messages($schema_json, \@records, $dir, $id); # $id: Confluent framing
  produce_files($broker, 'ev', \@files, 0);
  $reg->stop; $reg->start;                                      # same port, same schemas

=head1 DESCRIPTION

Messages are encoded by test/tools/avro_encode.py (Avro binary by hand),
one file a message, produced with C<kcat -P -t TOPIC FILE...> (each file
one message, so binary payloads need no delimiter).  The registry is
test/tools/schema_registry.py (docs/testing.md): it answers like
Confluent's schema registry.

=cut

package AvroTAP;

use strict;
use warnings;

use Carp;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use IPC::Run;
use JSON::PP;
use Test::More;
use Time::HiRes;

use Exporter 'import';
our @EXPORT = qw(start_registry avro_messages produce_files tools_dir);

my @registries;

END
{
	# keep the test's exit status
	local $?;
	$_->stop for @registries;
}

=pod

=head2 FUNCTIONS

=over

=item tools_dir()

test/tools, next to this module's directory.

=cut

sub tools_dir
{
	return abs_path(dirname(__FILE__) . '/../tools');
}

=pod

=item start_registry($state_file [, @args ])

Starts test/tools/schema_registry.py on a free port of 127.0.0.1, keeping
its schemas in $state_file, and asserts that it serves (B<one test>).
Returns an AvroTAP::Registry: C<url>, C<port>, C<register($subject,
$schema_json)> (returns the id), C<get($path)> (decoded JSON), C<stop>,
C<start(@args)> (again, on the same port, with more arguments such as
C<'--fail', 503>), C<fail($status)> (answer every request with $status
from now on; 0: stop), C<redirect($url)> (answer schema requests with a
redirect to $url; undef: stop).

=cut

sub start_registry
{
	my ($state, @args) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $self = bless { state => $state, args => \@args, port => 0 },
	  'AvroTAP::Registry';
	for my $i (0 .. $#args - 1)
	{
		$self->{auth} = [ '-u', $args[ $i + 1 ] ] if $args[$i] eq '--user';
	}
	push @registries, $self;
	$self->start;
	ok($self->{port}, "schema registry serves at $self->{url}");
	return $self;
}

=pod

=item avro_messages($schema_json, \@records, $dir [, $confluent_id ])

Encodes each record (a Perl hash, or a JSON string) with the writer schema
into one file under $dir; with $confluent_id, in Confluent's wire format.
Returns the files, in order.

=cut

sub avro_messages
{
	my ($schema, $records, $dir, $id) = @_;
	make_path($dir);
	my $sfile = "$dir/schema.json";
	open(my $fh, '>', $sfile) or die "cannot write $sfile: $!";
	print $fh $schema;
	close $fh;
	my $in = join('', map { (ref $_ ? encode_json($_) : $_) . "\n" } @$records);
	my ($o, $e);
	my @cmd = ('python3', tools_dir() . '/avro_encode.py', $sfile, "$dir/msgs");
	push @cmd, '--confluent', $id if defined $id;
	IPC::Run::run(\@cmd, '<', \$in, '>', \$o, '2>', \$e)
	  or die "avro_encode.py failed: $e";
	my @files = sort glob("$dir/msgs/*.avro");
	unlink @files[ scalar(@$records) .. $#files ] if @files > @$records;
	return @files[ 0 .. $#$records ];
}

=pod

=item produce_files($broker, $topic, \@files [, $partition ])

Produces each file as one message (C<kcat -P -t $topic FILE...>), in order.

=cut

sub produce_files
{
	my ($broker, $topic, $files, $partition) = @_;
	my @cmd = ('kcat', '-P', '-b', $broker->bootstrap, '-t', $topic);
	push @cmd, '-p', $partition if defined $partition;
	my ($o, $e);
	while (my @chunk = splice(@$files, 0, 500))
	{
		IPC::Run::run([ @cmd, @chunk ], '>', \$o, '2>', \$e)
		  or die "kcat failed: $e";
	}
	return;
}

=pod

=back

=cut

package AvroTAP::Registry;

use strict;
use warnings;

# (again): @extra are more arguments, for this start only
sub start
{
	my ($self, @extra) = @_;
	my @cmd = ('python3', AvroTAP::tools_dir() . '/schema_registry.py',
		'--port', $self->{port}, '--state', $self->{state}, @{ $self->{args} }, @extra);
	$self->{out} = '';
	$self->{err} = '';
	$self->{h} = IPC::Run::start(\@cmd, '>', \$self->{out}, '2>', \$self->{err});
	my $deadline = time + 20;
	while ($self->{out} !~ /listening on (\d+)/ && time < $deadline)
	{
		$self->{h}->pump_nb;
		Time::HiRes::sleep(0.02);
	}
	($self->{port}) = $self->{out} =~ /listening on (\d+)/
	  or die "schema registry did not start: $self->{err}";
	$self->{url} = "http://127.0.0.1:$self->{port}";
	return $self;
}

sub stop
{
	my ($self) = @_;
	$self->{h}->kill_kill if $self->{h};
	delete $self->{h};
	return;
}

sub url { return $_[0]->{url} }

# curl, so that the test speaks HTTP the way any client would
sub _curl
{
	my ($self, @args) = @_;
	my ($o, $e);
	IPC::Run::run([ 'curl', '-sS', @args ], '>', \$o, '2>', \$e)
	  or die "curl failed: $e";
	return JSON::PP::decode_json($o);
}

sub register
{
	my ($self, $subject, $schema) = @_;
	my $body = JSON::PP::encode_json({ schema => $schema });
	my $r = $self->_curl('-X', 'POST', '-H',
		'Content-Type: application/vnd.schemaregistry.v1+json',
		'--data-binary', $body, "$self->{url}/subjects/$subject/versions",
		@{ $self->{auth} || [] });
	return $r->{id};
}

sub get
{
	my ($self, $path, @args) = @_;
	return $self->_curl("$self->{url}$path", @{ $self->{auth} || [] }, @args);
}

sub redirect
{
	my ($self, $location) = @_;
	return $self->_curl('-X', 'POST', '--data-binary',
		JSON::PP::encode_json({ location => $location }), "$self->{url}/_test/redirect");
}

sub fail
{
	my ($self, $status) = @_;
	return $self->_curl('-X', 'POST', '--data-binary', qq({"status": $status}),
		"$self->{url}/_test/fail");
}

1;
