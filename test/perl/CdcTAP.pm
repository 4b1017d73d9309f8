
# Copyright (c) stream_ext developers

=pod

=head1 NAME

CdcTAP - change data capture events for the TAP tests of the formats
debezium-json and debezium-avro (test/t/17*_cdc_*.pl)

=head1 SYNOPSIS

  use CdcTAP;

  my %table;                    # the source table: id => {id, k, qty, price}
  my @events = cdc_events(\%table, 1000, 170, snapshot => 20);
  # ... produce them as Debezium envelopes, then:
  $node->safe_psql('postgres', oracle_sql('oracle', \%table));

=head1 DESCRIPTION

cdc_events() makes a sequence of changes to a table kept in a Perl hash
(50% inserts, 40% updates, 10% deletes after an optional snapshot of
reads): each a Debezium envelope C<{op, before, after, ...}> as a Perl hash
with rows C<{id, k, qty, price}> (and C<note> with the option note); updates change the group key k, the
values, and set or clear NULLs.  oracle_sql() gives the SQL that fills a
plain table with the hash's final rows: the oracle the views are compared
with.

=cut

package CdcTAP;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(cdc_events oracle_sql);

sub _row
{
	my ($id, $note) = @_;
	my $r = {
		id => $id,
		k => 'k' . int(rand(12)),
		qty => (rand() < 0.1 ? undef : int(rand(100)) - 20),
		price => (rand() < 0.1 ? undef : sprintf('%.2f', rand(500)))
	};
	$r->{note} = ($id % 2 ? "n$id" : undef) if $note;
	return $r;
}

sub cdc_events
{
	my ($table, $n, $seed, %opt) = @_;
	my @events;
	srand($seed);
	my @ids = sort { $a <=> $b } keys %$table;
	my $next = 1 + (@ids ? $ids[-1] : 0);
	for (1 .. ($opt{snapshot} // 0))
	{
		my $r = _row($next++, $opt{note});
		$table->{ $r->{id} } = $r;
		push @ids, $r->{id};
		push @events, { op => 'r', before => undef, after => {%$r},
			source => { connector => 'postgresql', table => 'inv', lsn => undef } };
	}
	for my $i (1 .. $n)
	{
		my $x = rand();
		if ($x < 0.5 || !@ids)
		{
			my $r = _row($next++, $opt{note});
			$table->{ $r->{id} } = $r;
			push @ids, $r->{id};
			push @events, { op => 'c', before => undef, after => {%$r} };
		}
		elsif ($x < 0.9)
		{
			my $old = $table->{ $ids[ int(rand(@ids)) ] };
			my $new = _row($old->{id}, $opt{note});
			$new->{k} = $old->{k} if rand() < 0.5;
			$table->{ $new->{id} } = $new;
			push @events, { op => 'u', before => {%$old}, after => {%$new} };
		}
		else
		{
			# the id at a random place leaves; the last one takes its place
			my $j = int(rand(@ids));
			my $old = delete $table->{ $ids[$j] };
			$ids[$j] = $ids[-1];
			pop @ids;
			push @events, { op => 'd', before => {%$old}, after => undef };
		}
		$events[-1]{ts_ms} = 1700000000000 + $i;
		$events[-1]{source} = { connector => 'postgresql', table => 'inv', lsn => $i };
		$events[-1]{transaction} = { id => 'tx' . int($i / 3), total_order => $i };
	}
	return @events;
}

sub oracle_sql
{
	my ($name, $table) = @_;
	my $q = sub { defined $_[0] ? "'$_[0]'" : 'NULL' };
	my @rows = map {
		my $r = $table->{$_};
		"($r->{id}, '$r->{k}', " . $q->($r->{qty}) . ', ' . $q->($r->{price}) . ', ' . $q->($r->{note}) . ')'
	} sort { $a <=> $b } keys %$table;
	my $sql = "CREATE TABLE $name (id int PRIMARY KEY, k text, qty int, price numeric, note text);";
	$sql .= "INSERT INTO $name VALUES " . join(', ', @rows) . ';' if @rows;
	return $sql;
}

1;
