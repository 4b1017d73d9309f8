
# Copyright (c) stream_ext developers

=pod

=head1 NAME

ReplayTAP - the messages and the expected view of the Kafka replay TAP
tests (test/t/18*_kafka_replay*.pl)

=head1 SYNOPSIS

  use ReplayTAP;

  $broker->produce('ev', replay_msgs(1, 500));
  is(sql('SELECT k, n, s, nd FROM per_k ORDER BY k'), replay_expected(1, 500));

=head1 DESCRIPTION

Message i of the topic is C<{"k": i % 7, "v": i % 101}>; the tests' view
is C<SELECT k, count(*) AS n, sum(v) AS s, count(DISTINCT v) AS nd ... GROUP
BY k>.  replay_msgs($from, $to) gives messages $from..$to;
replay_expected($from, $to) gives the view's rows over them as psql prints
them ordered by k: C<k|n|s|nd> lines.

=cut

package ReplayTAP;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(replay_msgs replay_expected);

sub replay_msgs
{
	my ($from, $to) = @_;
	return [ map { sprintf('{"k":%d,"v":%d}', $_ % 7, $_ % 101) } $from .. $to ];
}

sub replay_expected
{
	my ($from, $to) = @_;
	my (%n, %s, %d);
	for my $i ($from .. $to)
	{
		my ($k, $v) = ($i % 7, $i % 101);
		$n{$k}++;
		$s{$k} += $v;
		$d{$k}{$v} = 1;
	}
	return join("\n",
		map { join('|', $_, $n{$_}, $s{$_}, scalar(keys %{ $d{$_} })) }
		  sort { $a <=> $b } keys %n);
}

1;
