#!/usr/bin/env python3
"""GEMMs of the chips before Hopper against published measurements: cuBLAS SGEMM on a K40
(clBLAS's performance pages), DeepBench's cuBLAS GEMMs on a V100 (fp32 on the lanes, fp16 on
the tensor cores) and a P100 (fp32), an A100 at its 400 W limit on random and on zero
inputs, and a T4 at its 70 W limit, from docs/validation/published/pre-hopper-gemm.csv. Each shape runs as one GEMM with
the row's config overrides (`set`) and trace overrides (`trace_set`). Nothing in the configs was
set from these figures. Prints a Markdown table with each row's error and a summary per system
and format; asserts nothing.

  scripts/check-generations.py
  scripts/check-generations.py --system V100 --fidelity exact
"""
import argparse
import collections
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "pre-hopper-gemm.csv")


def simulate(xpusim, row, fidelity):
    """Simulated TFLOP/s of the row's GEMM on its config."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "gemm.yaml")
        with open(trace, "w") as f:
            f.write(f"xpusim_trace: 1\nops:\n  - {{name: g, kind: gemm, m: {row['m']}, n: {row['n']}, k: {row['k']}, "
                    f"dtype: {row['dtype']}}}\n")
        cmd = [xpusim, "run", "-q", "-c", os.path.join(ROOT, row["config"]), "-t", trace, "--out", os.path.join(tmp, "out"),
               "--fidelity", fidelity]
        for s in filter(None, row["set"].split(";")):
            cmd += ["--set", s]
        for s in filter(None, row.get("trace_set", "").split(";")):
            cmd += ["--trace-set", s]
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
        if p.returncode != 0:
            sys.exit(f"check-generations: {row['system']} {row['m']}x{row['n']}x{row['k']}: {p.stderr.strip()}")
        with open(os.path.join(tmp, "out", "report.json")) as f:
            op = json.load(f)["ops"][0]
        clock = op.get("power", {}).get("sm_clock_hz")
        kernel = op["lowering"]["description"].split(",")[0]
        return op["tflops"], kernel + (f" at {clock / 1e6:.0f} MHz" if clock else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    ap.add_argument("--system", default="", help="only rows whose system contains this text")
    ap.add_argument("--fidelity", choices=["fast", "exact"], default="fast")
    a = ap.parse_args()
    if not os.path.exists(a.xpusim):
        sys.exit(f"check-generations: {a.xpusim}: no xpusim binary (build it, or pass --xpusim)")
    rows = [r for r in csv.DictReader(open(PUBLISHED)) if a.system in r["system"]]
    if not rows:
        sys.exit(f"check-generations: no row of {PUBLISHED} names a system with '{a.system}'")
    print("| system | format | m x n x k | kernel | published TFLOP/s | simulated | error |")
    print("|---|---|---|---|---|---|---|")
    groups = collections.defaultdict(list)
    for r in rows:
        sim, kernel = simulate(a.xpusim, r, a.fidelity)
        pub = float(r["tflops"])
        err = sim / pub - 1
        fmt = r["dtype"] + "".join(f" ({t})" for t in filter(None, r.get("trace_set", "").split(";")))
        groups[(r["system"], fmt)].append(err)
        print(f"| {r['system']} | {fmt} | {r['m']}x{r['n']}x{r['k']} | {kernel} | {pub:.3g} | {sim:.3g} | {err:+.0%} |")
    print()
    for (system, dtype), errs in groups.items():
        print(f"- {system}, {dtype}: mean absolute error {sum(abs(e) for e in errs) / len(errs):.0%} over {len(errs)} shapes, "
              f"worst {max(errs, key=abs):+.0%}")


if __name__ == "__main__":
    main()
