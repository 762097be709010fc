#!/usr/bin/env python3
"""Runs one trace on several chips, each in its own number format, and prints a side-by-side
table: time, throughput, energy, TOPS/W and where the energy goes.

The default is the issue's comparison: the BERT-base encoder layer
(traces/examples/bert-base-layer.yaml) on h100-sxm in int8 and in fp8, on b200 in fp4 and on
magnet-int4 in int4. A run is CONFIG:FORMAT. On the GPUs the format applies to the matrix ops
(gemm, conv2d, attention) and the other ops (layernorm, GELU, softmax) run in bf16; the
accelerator computes every op in its format (VS-Quant int4/int8, special-function units for the
rest). --batch N scales the token dimension (gemm m, attention batch, the first dimension of a
shape, the trace's tokens), which is what a GPU needs to fill its SMs.

--set KEY=VALUE passes a config override to every run (e.g. power.start=sustained, as benchmarks
that repeat a kernel measure it). --published RUN=TFLOPS puts a published throughput beside a
run, and the published ratio to the first run beside the simulated one (docs/validation.md,
"Hopper against Blackwell").

The table is `xpusim compare`'s (one implementation: ratios to the first run, TOPS for integer
formats, units with prefixes, where the energy goes): this script writes the runs' traces, runs
them, and hands the run folders to it. Writes OUT/compare.md (with the published table, when
given) and OUT/compare.csv, and each run's report under OUT/RUN/.
Usage: scripts/compare.py [--trace T] [--batch N] [--set K=V ...] [--published RUN=TFLOPS ...] [--out DIR] [CONFIG:FORMAT ...]"""
import argparse
import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_RUNS = ["h100-sxm:int8", "h100-sxm:fp8", "b200:fp4", "magnet-int4:int4"]
MATRIX_KINDS = {"gemm", "conv2d", "attention"}


def rewrite(trace, fmt, accelerator, batch):
    t = dict(trace)
    t["ops"] = []
    for op in trace["ops"]:
        o = dict(op)
        if "dtype" in o:
            o["dtype"] = fmt if accelerator or o["kind"] in MATRIX_KINDS else "bf16"
        if batch > 1:
            if o["kind"] == "gemm":
                o["m"] = o["m"] * batch
            elif o["kind"] == "attention":
                o["batch"] = o.get("batch", 1) * batch
            elif "shape" in o:
                o["shape"] = [o["shape"][0] * batch] + list(o["shape"][1:])
            else:
                sys.exit(f"--batch: do not know how to scale op '{o['name']}' of kind {o['kind']}")
        t["ops"].append(o)
    if batch > 1:
        t["name"] = f"{trace['name']}-b{batch}"
        if "tokens" in t:
            t["tokens"] = t["tokens"] * batch
    return t


def run(xpusim, config, trace_file, out, sets=()):
    cmd = [xpusim, "run", "-q", "-c", config, "-t", trace_file, "-o", out]
    for kv in sets:
        cmd += ["--set", kv]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return json.load(open(os.path.join(out, "report.json")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", default=DEFAULT_RUNS, help="CONFIG:FORMAT, CONFIG a name in configs/ or a path")
    ap.add_argument("--trace", default=os.path.join(ROOT, "traces/examples/bert-base-layer.yaml"))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", default="compare-out")
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build/xpusim"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override for every run")
    ap.add_argument("--published", action="append", default=[], metavar="RUN=TFLOPS",
                    help="published throughput of a run (RUN as the table names it, e.g. b200-bf16)")
    args = ap.parse_args()
    if args.batch < 1:
        sys.exit("--batch must be at least 1")
    published = {}
    for p in args.published:
        label, _, value = p.partition("=")
        try:
            published[label] = float(value)
        except ValueError:
            sys.exit(f"--published '{p}': expected RUN=TFLOPS, e.g. b200-bf16=1420")
    trace = yaml.safe_load(open(args.trace))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for spec in args.runs:
        if ":" not in spec:
            sys.exit(f"run '{spec}': expected CONFIG:FORMAT, e.g. h100-sxm:fp8")
        name, fmt = spec.rsplit(":", 1)
        config = name if name.endswith(".yaml") else os.path.join(ROOT, "configs", name + ".yaml")
        if not os.path.exists(config):
            sys.exit(f"run '{spec}': no config {config}")
        accelerator = yaml.safe_load(open(config)).get("kind") == "accelerator"
        label = f"{os.path.basename(config)[:-5]}-{fmt}"
        out = os.path.join(args.out, label)
        os.makedirs(out, exist_ok=True)
        tfile = os.path.join(out, "trace.yaml")
        with open(tfile, "w") as f:
            yaml.safe_dump(rewrite(trace, fmt, accelerator, args.batch), f, sort_keys=False)
        rep = run(args.xpusim, config, tfile, out, args.set)
        rows.append({"run": label, "out": out, "tflops": rep["total"]["tflops"], "published_tflops": published.get(label, 0)})
        print(f"ran {label}: {rep['total']['time_s'] * 1e6:.4g} us", file=sys.stderr)

    unknown = set(published) - {r["run"] for r in rows}
    if unknown:
        sys.exit(f"--published names no run: {', '.join(sorted(unknown))} (runs: {', '.join(r['run'] for r in rows)})")
    # The side-by-side table, its CSV and the energy shares: xpusim compare's.
    cmd = [args.xpusim, "compare", *[r["out"] for r in rows], "--out", args.out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    with open(os.path.join(args.out, "compare.md")) as f:
        table = f.read()
    lines = [f"# {trace['name']}" + (f" x batch {args.batch}" if args.batch > 1 else ""), "", table.rstrip("\n")]
    if published:
        base = rows[0]
        lines += ["", f"Against published throughput (ratios to {base['run']}):", "",
                  "| run | simulated TFLOP/s | published TFLOP/s | error | simulated ratio | published ratio |",
                  "|---|---|---|---|---|---|"]
        pb = base["published_tflops"]
        for row in rows:
            p = row["published_tflops"]
            sim_ratio = f"{row['tflops'] / base['tflops']:.3g}x"
            if p:
                err = f"{100 * (row['tflops'] / p - 1):+.1f}%"
                pr = f"{p / pb:.3g}x" if pb else "-"
                lines.append(f"| {row['run']} | {row['tflops']:.4g} | {p:.4g} | {err} | {sim_ratio} | {pr} |")
            else:
                lines.append(f"| {row['run']} | {row['tflops']:.4g} | - | - | {sim_ratio} | - |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "compare.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
