#!/usr/bin/env python3
"""The simulator's collectives across nodes against published multi-node NCCL figures.

Reads docs/validation/published/nccl-multinode.csv (each row: its source, the system config and
`--set` overrides that stand for the measured cluster, the collective, the algorithm and
protocol NCCL ran, the size, and the published figure: a time in us, a bus bandwidth in GB/s, or
a bus bandwidth per NIC), runs each row as one collective over every GPU of the system, and
prints a Markdown table with the error per row. No parameter of the simulator was set from these
rows: they are held out. Asserts nothing.

With --tuner CONFIG, it instead runs an all-reduce of each size from 8 KiB to 1 GiB over every
GPU of CONFIG as the tuner picks it and as every algorithm and protocol that can run it, and
prints how much slower the tuner's pick ran than the fastest of them.

  scripts/check-nccl-nodes.py [--xpusim build/xpusim] [--only ID]
  scripts/check-nccl-nodes.py --tuner configs/systems/dgx-a100.yaml [--set system.domains=2 ...]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "nccl-multinode.csv")
UNITS = {"time_us": "us", "busbw_GBs": "GB/s", "busbw_per_nic_GBs": "GB/s a NIC"}


def simulate(xpusim, row, out):
    """The row's collective simulated: (time in s, bus bandwidth in B/s, algorithm/protocol, GPUs)."""
    extra = "" if row["algorithm"] == "auto" else f", algorithm: {row['algorithm']}"
    extra += "" if row["protocol"] == "auto" else f", protocol: {row['protocol']}"
    trace = os.path.join(out, "trace.yaml")
    with open(trace, "w") as f:
        f.write(f"xpusim_trace: 1\nops:\n  - {{name: c, kind: {row['collective']}, bytes: {row['bytes']}{extra}}}\n")
    cmd = [xpusim, "run", "-q", "--config", os.path.join(ROOT, "configs", "systems", row["system"]),
           "--trace", trace, "--out", out]
    for s in filter(None, row["sets"].split(";")):
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check-nccl-nodes: row {row['id']}: xpusim failed: {r.stderr.strip()}")
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    op = rep["ops"][0]
    c = op["collective"]
    with open(os.path.join(out, "resolved-config.yaml")) as f:
        per_domain = yaml.safe_load(f)["system"]["gpus_per_domain"]
    return op["time_s"], c["busbw"], f"{c['algorithm']}/{c['protocol']}", rep["system"]["gpus"], per_domain


ALGOS = [("ring", "simple"), ("ring", "ll128"), ("ring", "ll"), ("tree", "simple"), ("tree", "ll128"),
         ("tree", "ll"), ("nvls_tree", "simple"), ("collnet", "simple")]


def tuner(xpusim, config, sets):
    """The tuner's pick against every algorithm and protocol, per size: a Markdown table."""
    sizes = [8 << 10 << (2 * i) for i in range(9)]  # 8 KiB, 32 KiB, ... 512 MiB
    sizes.append(1 << 30)
    overrides = [x for s in sets for x in ("--set", s)]
    with tempfile.TemporaryDirectory() as out:
        # An algorithm this system cannot run is refused before anything runs: leave those out.
        trace = os.path.join(out, "trace.yaml")
        usable = []
        for a, p in ALGOS:
            with open(trace, "w") as f:
                f.write(f"xpusim_trace: 1\nops:\n  - {{name: c, kind: all_reduce, bytes: 1024, algorithm: {a}, protocol: {p}}}\n")
            if subprocess.run([xpusim, "check", "--config", config, "--trace", trace] + overrides,
                              capture_output=True).returncode == 0:
                usable.append((a, p))
        ops = []
        for b in sizes:
            ops.append(f"  - {{name: auto-{b}, kind: all_reduce, bytes: {b}}}")
            ops += [f"  - {{name: {a}-{p}-{b}, kind: all_reduce, bytes: {b}, algorithm: {a}, protocol: {p}}}"
                    for a, p in usable]
        with open(trace, "w") as f:
            f.write("xpusim_trace: 1\nops:\n" + "\n".join(ops) + "\n")
        r = subprocess.run([xpusim, "run", "-q", "--config", config, "--trace", trace, "--out", out] + overrides,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"check-nccl-nodes: xpusim failed: {r.stderr.strip()}")
        with open(os.path.join(out, "report.json")) as f:
            ops = {o["name"]: o for o in json.load(f)["ops"]}
    print("| size | tuner's pick | its time (us) | fastest | its time (us) | pick slower by |")
    print("|---|---|---|---|---|---|")
    worst = []
    for b in sizes:
        pick = ops[f"auto-{b}"]
        rivals = [ops[f"{a}-{p}-{b}"] for a, p in usable]
        best = min(rivals, key=lambda o: o["time_s"])
        lost = pick["time_s"] / best["time_s"] - 1
        worst.append(lost)
        c, bc = pick["collective"], best["collective"]
        print(f"| {b:,} | {c['algorithm']}/{c['protocol']} | {pick['time_s'] * 1e6:.1f} | "
              f"{bc['algorithm']}/{bc['protocol']} | {best['time_s'] * 1e6:.1f} | {lost * 100:+.1f}% |")
    print()
    print(f"mean {sum(worst) / len(worst) * 100:.1f}%, worst {max(worst) * 100:+.1f}% over {len(worst)} sizes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    ap.add_argument("--only", help="run one row, by its id")
    ap.add_argument("--tuner", metavar="CONFIG", help="compare the tuner's picks on CONFIG with every algorithm")
    ap.add_argument("--set", action="append", default=[], help="config override (with --tuner)")
    a = ap.parse_args()
    if not os.access(a.xpusim, os.X_OK):
        sys.exit(f"check-nccl-nodes: no simulator at {a.xpusim} (build it, or pass --xpusim)")
    if a.tuner:
        return tuner(a.xpusim, a.tuner, a.set)
    with open(PUBLISHED, newline="") as f:
        rows = list(csv.DictReader(f))
    if a.only:
        rows = [r for r in rows if r["id"] == a.only]
        if not rows:
            sys.exit(f"check-nccl-nodes: no row '{a.only}' in {os.path.relpath(PUBLISHED, ROOT)}")
    print("| row | GPUs | size (B) | NCCL ran | xpusim ran | published | xpusim | error |")
    print("|---|---|---|---|---|---|---|---|")
    errs = []
    for row in rows:
        with tempfile.TemporaryDirectory() as out:
            t, busbw, ran, gpus, per_domain = simulate(a.xpusim, row, out)
        metric = row["metric"]
        if metric == "time_us":
            sim = t * 1e6
        elif metric == "busbw_GBs":
            sim = busbw / 1e9
        elif metric == "busbw_per_nic_GBs":
            sim = busbw / 1e9 / per_domain  # one NIC a GPU
        else:
            sys.exit(f"check-nccl-nodes: row {row['id']}: unknown metric '{metric}'")
        pub = float(row["value"])
        err = sim / pub - 1
        errs.append(err)
        nccl = f"{row['algorithm']}/{row['protocol']}"
        print(f"| {row['id']} | {gpus} | {int(row['bytes']):,} | {nccl} | {ran} | {pub:g} {UNITS[metric]} | "
              f"{sim:.4g} | {err * 100:+.1f}% |")
    print()
    print(f"mean |error| {sum(abs(e) for e in errs) / len(errs) * 100:.1f}% over {len(errs)} rows, "
          f"{sum(abs(e) <= 0.10 for e in errs)} within 10%")


if __name__ == "__main__":
    main()
