#!/usr/bin/env python3
"""What the kernel's KTAP parser (tools/testing/kunit/kunit_parser.py)
understood of a KTAP file, in the form scripts/check-ktap compares:

  plan 18                 the plan it found, or "plan none"
  ok base                 one line per test, sorted by name: ok, skip, fail
  pass 13 / skip 5 / fail 0
  verdict pass|fail       pass when the run's status is SUCCESS or SKIPPED

kunit_parser keeps no skip reasons, so the lines carry none. Its own
progress output goes to stderr.

Usage: kunit_summary.py KUNIT_DIR FILE OUT
"""
import contextlib
import sys


def main() -> None:
    kunit_dir, path, out = sys.argv[1:4]
    sys.path.insert(0, kunit_dir)
    with contextlib.redirect_stdout(sys.stderr):
        import kunit_parser  # imported here: it binds stdout on import

        with open(path, errors="backslashreplace") as f:
            test = kunit_parser.parse_run_tests(f.read().splitlines())
    status = kunit_parser.TestStatus
    word = {status.SUCCESS: "ok", status.SKIPPED: "skip"}
    lines = sorted(
        (t.name.strip(), word.get(t.status, "fail")) for t in test.subtests
    )
    counts = test.counts
    plan = "none" if test.expected_count is None else test.expected_count
    with open(out, "w") as f:
        print(f"plan {plan}", file=f)
        for name, result in lines:
            print(f"{result} {name}", file=f)
        print(f"pass {counts.passed}", file=f)
        print(f"skip {counts.skipped}", file=f)
        print(f"fail {counts.failed + counts.crashed}", file=f)
        ok = test.status in (status.SUCCESS, status.SKIPPED)
        print(f"verdict {'pass' if ok else 'fail'}", file=f)


if __name__ == "__main__":
    main()
