#!/usr/bin/env python3
"""A mutation fuzzer for the PyTorch-profile importer (scripts/import-torch-profile.py), which is
Python and so out of libFuzzer's reach. It mutates the shipped profile's JSON (structure-aware:
events dropped, duplicated, fields deleted or given other types and extreme values, shapes
rewritten; and byte-level: truncation, flipped bytes), runs the importer on each in a child
process, and counts as a finding a Python traceback, a timeout, or an output trace that
`xpusim check` answers with anything but success or a clean error.

  tests/fuzz/fuzz_import_profile.py --xpusim build/xpusim --time 600       fuzz for 10 minutes
  tests/fuzz/fuzz_import_profile.py --replay tests/fuzz/corpus/import_profile   the regression corpus

Findings are written to build-fuzz/artifacts/import_profile/ (add them to the corpus once fixed).
"""
import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMPORTER = os.path.join(ROOT, "scripts", "import-torch-profile.py")
SEED = os.path.join(ROOT, "traces", "imported", "small-transformer.trace.json")
EXTREMES = [None, True, 0, -1, 1 << 63, 1e308, -1e-9, "", "x", "nan", [], {}, [[]], [0], [-5, 3], [[1 << 40, 1 << 40]],
            [[2, 3], [3]], "((((((((((", "[" * 200, [[1, 2, 3, 4]] * 3, {"a": 1}]
KEYS = ["name", "ph", "cat", "ts", "dur", "tid", "pid", "args"]
ARGS = ["Input Dims", "Input type", "Concrete Inputs", "External id"]


def mutate(profile, rng):
    p = copy.deepcopy(profile)
    ev = p["traceEvents"]
    for _ in range(rng.randint(1, 6)):
        if not ev:
            break
        i = rng.randrange(len(ev))
        e = ev[i]
        r = rng.random()
        if r < 0.1:
            del ev[i]
        elif r < 0.2:
            ev.insert(rng.randrange(len(ev) + 1), copy.deepcopy(e))
        elif r < 0.3 and isinstance(e, dict):
            e.pop(rng.choice(KEYS), None)
        elif r < 0.5 and isinstance(e, dict):
            e[rng.choice(KEYS)] = rng.choice(EXTREMES)
        elif r < 0.8 and isinstance(e, dict) and isinstance(e.get("args"), dict):
            e["args"][rng.choice(ARGS)] = rng.choice(EXTREMES)
        elif r < 0.9 and isinstance(e, dict) and isinstance(e.get("args"), dict) and isinstance(e["args"].get("Input Dims"), list):
            dims = e["args"]["Input Dims"]
            if dims:
                j = rng.randrange(len(dims))
                dims[j] = rng.choice(EXTREMES)
        else:
            ev[i] = rng.choice(EXTREMES)
    text = json.dumps(p)
    r = rng.random()
    if r < 0.05:
        text = text[: rng.randrange(len(text))]
    elif r < 0.1:
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    return text.encode()


def run_one(data, xpusim, workdir, importer=IMPORTER):
    """What is wrong with the importer's handling of `data`, or None."""
    src = os.path.join(workdir, "profile.json")
    out = os.path.join(workdir, "imported.yaml")
    with open(src, "wb") as f:
        f.write(data)
    if os.path.exists(out):
        os.remove(out)
    try:
        r = subprocess.run([sys.executable, importer, src, "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "importer timed out"
    if "Traceback" in r.stderr:
        return "importer crashed:\n" + r.stderr[-2000:]
    if r.returncode != 0:
        return None if r.stderr.startswith("import-torch-profile:") else f"importer exit {r.returncode} without a clear error: {r.stderr[-500:]}"
    if xpusim:
        env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
        c = subprocess.run([xpusim, "check", "--config", os.path.join(ROOT, "configs", "h100-sxm.yaml"), "--trace", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60, env=env)
        if c.returncode not in (0, 1) or (c.returncode == 1 and not c.stderr.startswith("error: ")):
            return f"xpusim check of the imported trace: exit {c.returncode}: {c.stderr[-1000:]}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--xpusim", help="check each imported trace with this binary")
    ap.add_argument("--time", type=float, default=60, help="seconds to fuzz")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay", help="run every file of this folder once instead of fuzzing")
    ap.add_argument("--importer", default=IMPORTER, help="the importer to fuzz (default: the shipped one)")
    ap.add_argument("--artifacts", default=os.path.join(ROOT, "build-fuzz", "artifacts", "import_profile"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="xpusim-fuzz-import-") as work:
        if a.replay:
            files = sorted(os.listdir(a.replay))
            bad = 0
            for name in files:
                with open(os.path.join(a.replay, name), "rb") as f:
                    problem = run_one(f.read(), a.xpusim, work, a.importer)
                if problem:
                    bad += 1
                    print(f"FAIL {name}: {problem}")
            print(f"replay: {len(files)} inputs, " + ("no crash" if not bad else f"{bad} failed"))
            return 1 if bad or not files else 0
        with open(SEED) as f:
            profile = json.load(f)
        rng = random.Random(a.seed)
        start, runs, found = time.time(), 0, 0
        while time.time() - start < a.time:
            data = mutate(profile, rng)
            runs += 1
            problem = run_one(data, a.xpusim if runs % 10 == 0 else None, work, a.importer)
            if problem:
                found += 1
                os.makedirs(a.artifacts, exist_ok=True)
                path = os.path.join(a.artifacts, f"finding-{a.seed}-{runs}.json")
                with open(path, "wb") as f:
                    f.write(data)
                print(f"finding {found} (run {runs}): {problem.splitlines()[-1]} -> {path}", flush=True)
        print(f"import_profile: {time.time() - start:.0f} s, {runs} executions, {found} findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
