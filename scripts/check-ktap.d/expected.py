#!/usr/bin/env python3
"""What a KTAP parser should find in the KTAP of a bpf-overhead result
document (--save, --format json): the plan, every mechanism's result and,
unless --no-reasons, the skip reasons (on one line, as the KTAP carries
them), in the form of tap_summary.pl and kunit_summary.py.

Usage: expected.py [--no-reasons] RESULT.json
"""
import json
import sys


def main() -> None:
    args = sys.argv[1:]
    reasons = "--no-reasons" not in args
    path = [a for a in args if a != "--no-reasons"][0]
    with open(path) as f:
        doc = json.load(f)
    word = {"ok": "ok", "skipped": "skip", "failed": "fail"}
    lines = []
    for m in doc["mechanisms"]:
        result = word[m["status"]]
        line = f"{result} {m['name']}"
        if result == "skip" and reasons:
            line += ": " + " ".join((m["reason"] or "not supported").split())
        lines.append((m["name"], line))
    print(f"plan {len(lines)}")
    for _, line in sorted(lines):
        print(line)
    for result in ("ok", "skip", "fail"):
        count = sum(1 for m in doc["mechanisms"] if word[m["status"]] == result)
        print(f"{'pass' if result == 'ok' else result} {count}")
    failed = any(m["status"] == "failed" for m in doc["mechanisms"])
    print(f"verdict {'fail' if failed else 'pass'}")


if __name__ == "__main__":
    main()
