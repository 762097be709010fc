#!/usr/bin/env python3
"""Which ctest tests each tier of scripts/test.sh --all runs, as ctest numbers (-I 0,0,0,...).

  scripts/tiers.py sanitizer build-asan         the sanitizer tier: its tree's tests, but for
                                                 SANITIZER_SKIPS and the covered list
  scripts/tiers.py rest build-asan build        the fast tier's tests that the sanitizer tier
                                                 did not run

The sanitizer tier leaves out two kinds of test, which the fast tier runs:
- SANITIZER_SKIPS: the tests that drive the binary through Python scripts and Chromium. They are
  the CLI tests' code paths, only slower under ASan.
- tests/sanitizer-covered.txt: tests whose every line of sim/ and models/ a cheaper test of the
  tier runs (scripts/sanitizer-subset.py measures it with gcov).
A name in that list that the sanitizer tree does not hold is an error: the list is out of date.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
SANITIZER_SKIPS = r"^(scripts\.|trace_gen\.|import\.run|system\.run|docs\.examples)"
COVERED = os.path.join(ROOT, "tests", "sanitizer-covered.txt")


def listed(tree):
    """(number, name) of every test ctest holds in `tree`."""
    if not os.path.isfile(os.path.join(tree, "CTestTestfile.cmake")):
        sys.exit(f"tiers.py: {tree}: not a configured build folder (no CTestTestfile.cmake)")
    out = subprocess.run(["ctest", "-N"], cwd=tree, capture_output=True, text=True, check=True).stdout
    return [(int(n), name) for n, name in re.findall(r"^\s*Test\s+#(\d+): (.*)$", out, re.M)]


def covered(path=COVERED):
    """The test names tests/sanitizer-covered.txt lists (one a line; '#' starts a comment line)."""
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]


def sanitizer_kind(name):
    """Whether a test is of a kind the sanitizer tier runs (SANITIZER_SKIPS names the others)."""
    return not re.search(SANITIZER_SKIPS, name)


def sanitizer_tests(tree):
    """(number, name) of the tests the sanitizer tier runs in `tree`."""
    tests = [(n, name) for n, name in listed(tree) if sanitizer_kind(name)]
    names = {name for _, name in tests}
    left = covered()
    stale = [name for name in left if name not in names]
    if stale:
        sys.exit(f"tiers.py: {os.path.relpath(COVERED, ROOT)} names {len(stale)} test(s) the sanitizer tree "
                 f"({tree}) does not hold, first '{stale[0]}': rerun scripts/sanitizer-subset.py")
    left = set(left)
    return [(n, name) for n, name in tests if name not in left]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "sanitizer":
        print(",".join(str(n) for n, _ in sanitizer_tests(sys.argv[2])))
    elif len(sys.argv) == 4 and sys.argv[1] == "rest":
        ran = {name for _, name in sanitizer_tests(sys.argv[2])}
        print(",".join(str(n) for n, name in listed(sys.argv[3]) if name not in ran))
    else:
        sys.exit("usage: tiers.py sanitizer ASAN_TREE | tiers.py rest ASAN_TREE FAST_TREE")


if __name__ == "__main__":
    main()
