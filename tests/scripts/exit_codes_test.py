#!/usr/bin/env python3
"""One exit-status rule in every command (README, "Exit status"): 1 when what the command line
names is bad input, 2 when the command line itself cannot be read.

  tests/scripts/exit_codes_test.py build/xpusim
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
H100 = os.path.join(ROOT, "configs", "h100-sxm.yaml")
GEMM = os.path.join(ROOT, "traces", "gemm", "bf16-4096.yaml")
SPEC = os.path.join(ROOT, "configs", "sweeps", "hbm-x-sms.yaml")
BAD = os.path.join(ROOT, "tests", "data", "bad")

CASES = [  # (arguments, expected status)
    (["bogus"], 2),
    (["run", "--bogus"], 2), (["check", "--bogus"], 2), (["describe", "--bogus"], 2), (["sweep", "--bogus"], 2),
    (["compare", "--bogus"], 2), (["serve", "--bogus"], 2),
    (["run", "--config"], 2), (["run", "-c", H100], 2), (["run", "-c", H100, "-t", GEMM, "extra"], 2),
    (["run", "-c", H100, "-t", GEMM, "--fidelity", "medium"], 2),
    (["run", "-c", H100, "-t", GEMM, "--set", "sm.count"], 2), (["check", "-c", H100, "--set", "=3"], 2),
    (["run", "-c", H100, "-t", GEMM, "--limit", "opz=1"], 2), (["sweep", SPEC, "--limit", "ops=abc", "--dry-run"], 2),
    (["run", "-c", H100, "-t", GEMM, "--trace-set", "dtype"], 2), (["check", "-c", H100, "--trace-set", "dtype=fp8"], 2),
    (["compare"], 2), (["compare", "one-run"], 2), (["sweep"], 2), (["check"], 2),
    (["describe", "--format", "html"], 2),
    # the command line reads fine; what it names is bad
    (["check", "-c", os.path.join(BAD, "unknown-key.yaml")], 1),
    (["check", "-c", H100, "--set", "sm.cout=3"], 1), (["check", "-c", H100, "--set", "sm.count=-1"], 1),
    (["check", "-c", H100, "-t", GEMM, "--trace-set", "dtype=fp7"], 1),
    (["check", "-c", H100, "-t", GEMM, "--trace-set", "dtype=fp4"], 1),
    (["check", "-t", os.path.join(ROOT, "no-such-trace.yaml")], 1),
    (["compare", os.path.join(ROOT, "no-such-run"), os.path.join(ROOT, "no-such-run-2")], 1),
    (["sweep", os.path.join(BAD, "unknown-key.yaml"), "--dry-run"], 1),
    (["check", "-c", H100, "-t", GEMM, "--trace-set", "dtype=fp8"], 0),
]


def main():
    xpusim = sys.argv[1]
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    failed = 0
    for args, want in CASES:
        r = subprocess.run([xpusim, *args], capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
        ok = r.returncode == want and (want == 0 or "error" in r.stderr or "usage" in r.stderr)
        if not ok:
            failed += 1
            print(f"FAIL {' '.join(args)}: exit {r.returncode}, expected {want}\n{r.stderr.strip()}")
    print(f"{len(CASES)} command lines, {failed} with the wrong exit status")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
