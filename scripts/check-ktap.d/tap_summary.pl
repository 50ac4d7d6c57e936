#!/usr/bin/perl
# What TAP::Parser (the parser behind prove) understood of a (K)TAP file,
# in the form scripts/check-ktap compares:
#
#   plan 18                  (or "plan none")
#   ok base                  one line per test result, sorted by name:
#   skip kprobe: <reason>    ok, skip (with the SKIP explanation), fail
#   pass 13 / skip 5 / fail 0
#   verdict pass|fail        fail when TAP::Parser has problems: a failed
#                            test, a parse error (plan and tests disagree)
# Usage: tap_summary.pl FILE
use strict;
use warnings;
use TAP::Parser;

my ($file) = @ARGV or die "usage: tap_summary.pl FILE\n";
open my $fh, '<', $file or die "tap_summary.pl: cannot read $file: $!\n";
my $tap = do { local $/; <$fh> };
close $fh;

my $parser = TAP::Parser->new({ tap => $tap });
my (%line, $pass, $skip, $fail);
($pass, $skip, $fail) = (0, 0, 0);
while (my $result = $parser->next) {
    next unless $result->is_test;
    my $name = $result->description;
    $name =~ s/^\s*-\s*//;
    $name =~ s/\s+$//;
    if (!$result->is_actual_ok) {
        $line{$name} = "fail $name";
        $fail++;
    } elsif ($result->has_skip) {
        $line{$name} = "skip $name: " . $result->explanation;
        $skip++;
    } else {
        $line{$name} = "ok $name";
        $pass++;
    }
}
my $plan = $parser->tests_planned // 'none';
print "plan $plan\n";
print "$line{$_}\n" for sort keys %line;
print "pass $pass\nskip $skip\nfail $fail\n";
print "verdict ", ($parser->has_problems ? "fail" : "pass"), "\n";
for my $error ($parser->parse_errors) {
    print STDERR "tap_summary.pl: $file: $error\n";
}
