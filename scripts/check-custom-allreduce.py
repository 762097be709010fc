#!/usr/bin/env python3
"""A serving runtime's own all-reduce against published timings: vLLM's custom all-reduce on
H100s (docs/validation/published/custom-allreduce-h100.csv), held out (no parameter was set from
them). Each row is what its harness ran: a copy of the unregistered input into the kernel's
registered buffer, then the one-stage or two-stage kernel that configs/runtimes/vllm.yaml's
all_reduce section picks for its size and GPU count, on the first GPUs of a DGX H100. Prints a
Markdown table with each row's error, and the mean from 1 MiB (below it the harness's timing, a
Python loop without synchronisation, sits on the host's floor of two launches).

  scripts/check-custom-allreduce.py [--xpusim build/xpusim]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from xpusim import runtime  # noqa: E402

PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "custom-allreduce-h100.csv")
SYSTEM = os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml")
FLOOR_BELOW = 1 << 20  # bytes: the rows under it are the harness's host floor


def simulate(xpusim, row, algo, tmp):
    gpus, n = int(row["gpus"]), int(row["elements"])
    devices = list(range(gpus))
    trace = os.path.join(tmp, "car.yaml")
    with open(trace, "w") as f:
        f.write("xpusim_trace: 1\nops:\n"
                f"  - {{name: copy, kind: elementwise, shape: [1, {n}], dtype: {row['dtype']}, flops_per_element: 0, "
                f"devices: {devices}}}\n"
                f"  - {{name: ar, kind: all_reduce, bytes: {row['bytes']}, algorithm: {algo}, devices: {devices}}}\n")
    out = os.path.join(tmp, "out")
    p = subprocess.run([xpusim, "run", "-q", "-c", SYSTEM, "-t", trace, "--out", out], capture_output=True, text=True,
                       env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    if p.returncode != 0:
        sys.exit(f"check-custom-allreduce: {gpus} GPUs, {row['bytes']} B: {p.stderr.strip()}")
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    return rep["total"]["time_s"] * 1e6, next(o for o in rep["ops"] if o["name"] == "ar")["time_s"] * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    a = ap.parse_args()
    if not os.access(a.xpusim, os.X_OK):
        sys.exit(f"check-custom-allreduce: no simulator at {a.xpusim} (build it: scripts/build.sh)")
    vllm = runtime.load("vllm")
    print("| GPUs | size | kernel | published | xpusim (copy + kernel) | the kernel alone | error |")
    print("|---|---|---|---|---|---|---|")
    errors = []
    with tempfile.TemporaryDirectory() as tmp, open(PUBLISHED) as f:
        for row in csv.DictReader(f):
            gpus, nbytes, want = int(row["gpus"]), int(row["bytes"]), float(row["published_us"])
            algo = vllm.all_reduce_algorithm(gpus, nbytes)
            total, kernel = simulate(a.xpusim, row, algo, tmp)
            err = total / want - 1
            if nbytes >= FLOOR_BELOW:
                errors.append(err)
            size = f"{nbytes // 1024} KiB" if nbytes < 1 << 20 else f"{nbytes >> 20} MiB"
            print(f"| {gpus} | {size} | {algo} | {want:.1f} us | {total:.1f} us | {kernel:.1f} us | {100 * err:+.0f}%"
                  f"{' (host floor)' if nbytes < FLOOR_BELOW else ''} |")
    mean = sum(abs(e) for e in errors) / len(errors)
    print(f"\nFrom 1 MiB, {len(errors)} rows: mean absolute error {100 * mean:.0f}%, "
          f"{sum(abs(e) <= 0.10 for e in errors)} within 10%, worst {100 * max(errors, key=abs):+.0f}%.")


if __name__ == "__main__":
    main()
