#!/usr/bin/env python3
"""The names LKFT would give kselftest's nested results: Linaro's
test-definitions (automated/linux/kselftest/parse-output.py) reads the
output with tap.py's parser (PyPI tap.py), each test's `# ` lines being
its children's TAP; it flattens the names to `parent_child`, keeps a skip's
reason in its name, sanitises each to [A-Za-z0-9_-] and appends `_dupN` to
a name seen before. Those rules, restated here on top of tap.py's own
parser, print one `NAME RESULT` line per result, children first, as that
script prints them.

  lkft_names.py FILE      the names and results
  lkft_names.py --self-test

Exit 0, or 1 when a name was made unique with _dupN (two results that LKFT
could not tell apart) or the file has no result.
"""
import re
import sys

from tap import parser


def slugify(line):
    line = re.sub(r"\[\d{1,5}\]", "", line)
    line = re.sub(r"[^A-Za-z0-9_-]+", "_", line)
    return re.sub(r"_-", "__", re.sub(r"(^_|_$)", "", line))


def name_of(description, directive, ok, skip):
    if description.startswith("selftests:"):
        description = description[len("selftests:"):]
    if ok and skip and directive.lower().startswith("skip"):
        directive = directive[4:]
    else:
        directive = ""
    name = f"{description} {directive}".strip() or "<unknown>"
    return slugify(name)


def parse(text):
    """[(name, result, children)] of one level of TAP, nested levels being
    the `#` lines before each result."""
    results, children = [], ""
    for line in parser.Parser().parse_text(text):
        if line.category == "test":
            results.append((
                name_of(line.description, line.directive.text, line.ok, line.skip),
                ("skip" if line.skip else "pass") if line.ok else "fail",
                parse(children),
            ))
            children = ""
        elif line.category == "diagnostic":
            t = line.text
            children += (t[1:].strip() if t.startswith("#") else t) + "\n"
    return results


def flatten(prefix, results):
    out = []
    for name, result, children in results:
        full = prefix + name
        out += flatten(full + "_", children) + [[full, result]]
    return out


def unique(flat):
    """Appends _dupN as parse-output.py does; returns the names it changed."""
    seen, dups = {}, []
    for r in flat:
        seen[r[0]] = seen.get(r[0], 0) + 1
        if seen[r[0]] > 1:
            r[0] += f"_dup{seen[r[0]]}"
            dups.append(r[0])
    return dups


def names(text):
    flat = flatten("", parse(text))
    return flat, unique(flat)


def self_test():
    text = "\n".join([
        "TAP version 13", "1..1", "# selftests: c: t.sh",
        "# KTAP version 1", "# 1..4",
        "# ok 1 kprobe.multi", "# ok 2 kprobe-multi",
        "# ok 3 fentry # SKIP no BTF (CONFIG_DEBUG_INFO_BTF)",
        "# not ok 4 kprobe.multi",
        "ok 1 selftests: c: t.sh", "",
    ])
    flat, dups = names(text)
    assert flat == [
        ["c_t_sh_kprobe_multi", "pass"],
        ["c_t_sh_kprobe-multi", "pass"],
        ["c_t_sh_fentry_no_BTF_CONFIG_DEBUG_INFO_BTF", "skip"],
        ["c_t_sh_kprobe_multi_dup2", "fail"],
        ["c_t_sh", "pass"],
    ], flat
    assert dups == ["c_t_sh_kprobe_multi_dup2"], dups
    print("lkft_names.py: self-test ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], errors="backslashreplace") as f:
        flat, dups = names(f.read())
    for name, result in flat:
        print(name, result)
    for d in dups:
        print(f"lkft_names.py: {d}: a name LKFT would see twice", file=sys.stderr)
    return 1 if dups or not flat else 0


if __name__ == "__main__":
    sys.exit(main())
