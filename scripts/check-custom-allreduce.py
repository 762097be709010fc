#!/usr/bin/env python3
"""A serving runtime's own all-reduce against published timings on H100s
(docs/validation/published/custom-allreduce-h100.csv), held out (no parameter was set from
them). Each row is what its harness ran:
- vLLM's kernel on an unregistered input: a copy into the kernel's registered buffer, then the
  one-stage or two-stage kernel configs/runtimes/vllm.yaml's all_reduce section picks;
- sgl-kernel's port of TensorRT-LLM's kernels: one kernel that copies its input in itself
  (the trace's copy_in), one-shot or two-shot as sgl-kernel's SelectImplementation picks;
- vLLM's kernel on a registered buffer (no copy), and NCCL's all-reduce beside it.
All on the first GPUs of a DGX H100. Prints a Markdown table with each row's error and each
table's mean: for the Python-loop harness (no synchronisation) from 1 MiB only, since below it
the loop's host time per call is what it measures.

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


def sgl_trt_algorithm(gpus, nbytes):
    """sgl-kernel's SelectImplementation (sgl-kernel/include/trt_reduce_internal.cuh, from
    TensorRT-LLM 0.14's plugin): one-shot on up to 2 GPUs, below 1 MiB on up to 4, below 512 KiB
    above; two-shot otherwise."""
    if gpus <= 2 or nbytes < (1 << 20 if gpus <= 4 else 512 << 10):
        return "one_shot"
    return "two_shot"


def simulate(xpusim, row, algo, tmp):
    """(total us, the all-reduce's us) of the row's harness: `algo` None is NCCL's auto."""
    gpus, n = int(row["gpus"]), int(row["elements"])
    devices = list(range(gpus))
    ops = []
    if row["input"] == "unregistered":
        ops.append(f"  - {{name: copy, kind: elementwise, shape: [1, {n}], dtype: {row['dtype']}, flops_per_element: 0, "
                   f"devices: {devices}}}\n")
    extra = (f", algorithm: {algo}" if algo else "") + (", copy_in: true" if row["input"] == "copy_in" else "")
    ops.append(f"  - {{name: ar, kind: all_reduce, bytes: {row['bytes']}{extra}, devices: {devices}}}\n")
    trace = os.path.join(tmp, "car.yaml")
    with open(trace, "w") as f:
        f.write("xpusim_trace: 1\nops:\n" + "".join(ops))
    out = os.path.join(tmp, "out")
    p = subprocess.run([xpusim, "run", "-q", "-c", SYSTEM, "-t", trace, "--out", out], capture_output=True, text=True,
                       env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    if p.returncode != 0:
        sys.exit(f"check-custom-allreduce: {gpus} GPUs, {row['bytes']} B: {p.stderr.strip()}")
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    ar = next(o for o in rep["ops"] if o["name"] == "ar")
    c = ar["collective"]
    return rep["total"]["time_s"] * 1e6, ar["time_s"] * 1e6, f"{c['algorithm']}/{c['protocol']}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    a = ap.parse_args()
    if not os.access(a.xpusim, os.X_OK):
        sys.exit(f"check-custom-allreduce: no simulator at {a.xpusim} (build it: scripts/build.sh)")
    vllm = runtime.load("vllm")
    print("| table | GPUs | size | kernel | published | xpusim (as the harness ran it) | the all-reduce alone | error |")
    print("|---|---|---|---|---|---|---|---|")
    tables = {}  # (source, kernel, input) -> errors counted in its mean
    with tempfile.TemporaryDirectory() as tmp, open(PUBLISHED) as f:
        for row in csv.DictReader(f):
            gpus, nbytes, want = int(row["gpus"]), int(row["bytes"]), float(row["published_us"])
            kernel = row["kernel"]
            algo = (vllm.all_reduce_algorithm(gpus, nbytes) if kernel == "vllm"
                    else sgl_trt_algorithm(gpus, nbytes) if kernel == "trtllm" else None)
            total, alone, ran = simulate(a.xpusim, row, algo, tmp)
            err = total / want - 1
            floor = row["input"] != "registered" and nbytes < FLOOR_BELOW
            name = ("PR 8558" if "8558" in row["source"] else "PR 2904") + f" {kernel}, {row['input']}"
            tables.setdefault(name, [])
            if not floor:
                tables[name].append(err)
            size = f"{nbytes} B" if nbytes % 1024 else f"{nbytes // 1024} KiB" if nbytes < 1 << 20 else f"{nbytes >> 20} MiB"
            print(f"| {name} | {gpus} | {size} | {ran} | {want:.2f} us | {total:.2f} us | {alone:.2f} us | {100 * err:+.0f}%"
                  f"{' (host floor)' if floor else ''} |")
    print()
    for name, errors in tables.items():
        mean = sum(abs(e) for e in errors) / len(errors)
        print(f"{name}: {len(errors)} rows{'' if name.endswith(', registered') else ' from 1 MiB'}: mean absolute error "
              f"{100 * mean:.0f}%, {sum(abs(e) <= 0.10 for e in errors)} within 10%, worst {100 * max(errors, key=abs):+.0f}%.")


if __name__ == "__main__":
    main()
