#!/usr/bin/env python3
"""Chooses the sanitizer tier's tests by the lines of the simulator they run.

The sanitizer tier (scripts/test.sh --sanitize) checks memory and undefined behaviour on the lines
its tests run. A long test that runs only lines that shorter tests already run adds inputs to
that check but no code: most of the tier's long tests are physics tests, which run the code of a
small GEMM on large ones, many times over. This script measures which those are. In a coverage
build (build-cov, cmake -DXPUSIM_COVERAGE=ON, built here when missing) it runs every test of the
sanitizer tier alone and takes from gcov the lines of sim/ and models/ that each test runs, the
simulation children it forks included. Then it takes the tests shortest first: a test is kept when
it is shorter than --min-seconds or runs a line no test kept before it runs. The rest, each taking
at least --min-seconds, are written to tests/sanitizer-covered.txt. The sanitizer tier leaves those
tests to the fast tier (scripts/tiers.py). The fuzz replays are always kept: they are run for their
inputs, not their lines. The list can go stale without a word when a change adds code that only a
listed test reaches: rerun it after such a change.

  scripts/sanitizer-subset.py              # measure; write tests/sanitizer-covered.txt
  scripts/sanitizer-subset.py --dry-run    # measure; print the choice only
  scripts/sanitizer-subset.py --reuse --min-seconds 1 --dry-run
                                           # choose again from the last measurement
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiers  # noqa: E402

ROOT = tiers.ROOT
SOURCES = ("sim/", "models/")  # the simulator's code; the tests' own lines do not count


def die(msg):
    print(f"sanitizer-subset.py: {msg}", file=sys.stderr)
    sys.exit(1)


def build(tree):
    if not os.path.exists(os.path.join(tree, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", tree, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DXPUSIM_COVERAGE=ON",
                        "-DXPUSIM_BUILD_TESTS=ON"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", tree, f"-j{os.cpu_count() or 1}"], check=True, stdout=subprocess.DEVNULL)


def test_commands(tree):
    """name -> (command, working directory, environment) of each test of the sanitizer tier."""
    shown = json.loads(subprocess.run(["ctest", "--show-only=json-v1"], cwd=tree, capture_output=True, text=True,
                                      check=True).stdout)
    out = {}
    for t in shown["tests"]:
        if not tiers.sanitizer_kind(t["name"]):
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = kv.partition("=")
            env[k] = v
        out[t["name"]] = (t["command"], props.get("WORKING_DIRECTORY", tree), env,
                          props.get("PASS_REGULAR_EXPRESSION"), props.get("WILL_FAIL", False))
    return out


def lines_run(tree, prefix):
    """The (file, line) pairs of sim/ and models/ with a count in the .gcda files under `prefix`."""
    gcdas = []
    for d, _, files in os.walk(prefix):
        for f in files:
            if f.endswith(".gcda"):
                gcda = os.path.join(d, f)
                # gcov reads the notes file beside the counts: link the build's in.
                gcno = os.path.join("/", os.path.relpath(gcda, prefix))[:-len(".gcda")] + ".gcno"
                if not os.path.exists(gcno):
                    die(f"{gcno}: missing (the coverage build is out of date: rebuild {tree})")
                os.symlink(gcno, gcda[:-len(".gcda")] + ".gcno")
                gcdas.append(gcda)
    if not gcdas:
        return set()
    p = subprocess.run(["gcov", "--json-format", "--stdout", *gcdas], cwd=prefix, capture_output=True, text=True)
    if p.returncode != 0:
        die(f"gcov failed: {p.stderr.strip()[:500]}")
    run = set()
    for doc in p.stdout.splitlines():
        if not doc.startswith("{"):
            continue
        for f in json.loads(doc)["files"]:
            path = os.path.relpath(os.path.realpath(f["file"]), ROOT)
            if path.startswith(SOURCES):
                run.update((path, ln["line_number"]) for ln in f["lines"] if ln["count"] > 0)
    return run


def measure(tree, index, name, command, cwd, env, pass_regex, will_fail, scratch):
    """(name, seconds, passed, lines run) of one test, run alone as ctest runs it."""
    prefix = os.path.join(scratch, str(index))
    os.makedirs(prefix)
    env = dict(env, GCOV_PREFIX=prefix, GCOV_PREFIX_STRIP="0")
    t0 = time.monotonic()
    p = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, errors="replace",
                       stdin=subprocess.DEVNULL)
    secs = time.monotonic() - t0
    if pass_regex:
        passed = any(re.search(r, p.stdout + p.stderr) for r in pass_regex)
    else:
        passed = (p.returncode == 0) != bool(will_fail)
    lines = lines_run(tree, prefix)
    shutil.rmtree(prefix)
    return name, secs, passed, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build-cov"), help="the coverage build (default build-cov)")
    ap.add_argument("--min-seconds", type=float, default=0.5,
                    help="a test shorter than this (in the coverage build) is always kept (default 0.5)")
    ap.add_argument("--dry-run", action="store_true", help="print the choice; leave tests/sanitizer-covered.txt")
    ap.add_argument("--reuse", action="store_true",
                    help="choose again from the last measurement (build-cov/sanitizer-subset.json), running nothing")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    if args.jobs < 1 or not args.min_seconds >= 0:
        die("--jobs must be at least 1 and --min-seconds at least 0")
    if shutil.which("gcov") is None:
        die("no gcov on the PATH (Debian's gcc package has it)")
    saved = os.path.join(args.build_dir, "sanitizer-subset.json")
    if args.reuse:
        if not os.path.exists(saved):
            die(f"--reuse: no measurement at {saved} (run without --reuse first)")
        with open(saved) as f:
            results = [(name, secs, passed, {tuple(x) for x in lines}) for name, secs, passed, lines in json.load(f)]
    else:
        build(args.build_dir)
        commands = test_commands(args.build_dir)
        results = []
        with tempfile.TemporaryDirectory(dir=args.build_dir) as scratch, concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(measure, args.build_dir, i, name, *c, scratch)
                       for i, (name, c) in enumerate(commands.items())]
            for i, f in enumerate(concurrent.futures.as_completed(futures), 1):
                results.append(f.result())
                print(f"\r{i} of {len(futures)} tests measured", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        with open(saved, "w") as f:
            json.dump([[name, secs, passed, sorted(lines)] for name, secs, passed, lines in results], f)
    failed = [name for name, _, passed, _ in results if not passed]
    empty = [name for name, _, _, lines in results if not lines]
    if empty:
        die(f"{len(empty)} test(s) ran no line of sim/ or models/, first '{empty[0]}': the coverage was not collected")
    if failed:
        die(f"{len(failed)} test(s) failed in the coverage build, first '{failed[0]}': fix them first")
    seen, kept, covered = set(), [], []
    for name, secs, _, lines in sorted(results, key=lambda r: (r[1], r[0])):
        new = lines - seen
        if secs < args.min_seconds or new or name.startswith("fuzz."):
            kept.append((name, secs, len(new)))
            seen |= lines
        else:
            covered.append((name, secs))
    total = sum(r[1] for r in results)
    left = sum(s for _, s in covered)
    print(f"{len(results)} tests run {len(seen)} lines of sim/ and models/ in {total:.0f} s (coverage build); "
          f"{len(covered)} of them, {left:.0f} s, add none to the tests shorter than them:")
    for name, secs in sorted(covered, key=lambda c: -c[1]):
        print(f"  {secs:6.1f} s  {name}")
    print("the longest tests kept, with the lines only they (or longer ones) run:")
    for name, secs, new in sorted(kept, key=lambda k: -k[1])[:10]:
        print(f"  {secs:6.1f} s  {new:5d} lines  {name}")
    if args.dry_run:
        return
    with open(tiers.COVERED, "w") as f:
        f.write("# The sanitizer tier's tests whose lines of sim/ and models/ shorter tests of the tier all run\n"
                "# (scripts/sanitizer-subset.py; written by it): the sanitizer tier leaves them to the fast tier.\n")
        for name, _ in sorted(covered):
            f.write(name + "\n")
    print(f"wrote {os.path.relpath(tiers.COVERED, ROOT)}")


if __name__ == "__main__":
    main()
