#!/usr/bin/env python3
"""The simulator's collectives against published nccl-tests runs on H100 NVSwitch systems.

Reads docs/validation/published/nccl-tests-h100.csv (each row: its source, GPUs, collective,
the algorithm and protocol NCCL ran, nccl-tests' size and out-of-place time), runs every row as
one collective on the first N GPUs of configs/systems/dgx-h100.yaml with the same algorithm
(and protocol where the run forced one), and prints a Markdown table with the error per row and
a summary per group. No parameter of the simulator was set from these rows: they are held out.

Below about 2 MiB the published times sit on a floor of 17-23 us that nccl-tests' single
process puts there (it launches every GPU's kernel from one thread, eagerly); the summary
counts rows from --from (default 4 MiB) up and lists the smaller ones apart. Asserts nothing.

  scripts/check-nccl.py [--xpusim build/xpusim] [--config CONFIG] [--from BYTES] [--set KEY=VALUE ...]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "nccl-tests-h100.csv")


def size_text(b):
    for unit, s in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit and b % unit == 0:
            return f"{b // unit} {s}"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml"))
    ap.add_argument("--from", dest="from_bytes", type=int, default=4 << 20,
                    help="smallest size counted in the summary (default 4 MiB)")
    ap.add_argument("--set", action="append", default=[], help="config override passed to xpusim")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(PUBLISHED)))
    lines = ["xpusim_trace: 1", "name: nccl-published", "ops:"]
    for i, r in enumerate(rows):
        devices = ", ".join(str(d) for d in range(int(r["gpus"])))
        lines.append(f"  - {{name: r{i}, kind: {r['collective']}, bytes: {r['bytes']}, devices: [{devices}], "
                     f"algorithm: {r['algorithm']}, protocol: {r['protocol']}}}")
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.yaml")
        with open(trace, "w") as f:
            f.write("\n".join(lines) + "\n")
        cmd = [a.xpusim, "run", "--config", a.config, "--trace", trace, "--out", os.path.join(tmp, "out")]
        for s in a.set:
            cmd += ["--set", s]
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"check-nccl: xpusim failed:\n{p.stderr}")
        ops = {o["name"]: o for o in json.load(open(os.path.join(tmp, "out", "report.json")))["ops"]}
    print("| GPUs | collective | NCCL ran | size | published (us) | xpusim (us) | xpusim ran | error |")
    print("|---|---|---|---|---|---|---|---|")
    groups = {}
    for i, r in enumerate(rows):
        o = ops[f"r{i}"]
        sim_us = o["time_s"] * 1e6
        meas = float(r["time_us"])
        err = sim_us / meas - 1
        ran = f"{r['algorithm']}" + (f"/{r['protocol']}" if r["protocol"] != "auto" else "")
        xran = f"{o['collective']['algorithm']}/{o['collective']['protocol']}"
        print(f"| {r['gpus']} | {r['collective']} | {ran} | {size_text(int(r['bytes']))} | {meas:.1f} | {sim_us:.1f} | "
              f"{xran} | {err * 100:+.0f}% |")
        small = int(r["bytes"]) < a.from_bytes
        key = (f"{r['gpus']} GPUs {r['collective']} {ran}", "below" if small else "from")
        groups.setdefault(key, []).append(err)
    print()
    print(f"| group | sizes | rows | mean abs error | worst |")
    print("|---|---|---|---|---|")
    every = []
    for (g, part), errs in sorted(groups.items()):
        if part == "from":
            every += errs
        worst = max(errs, key=abs)
        label = f">= {size_text(a.from_bytes)}" if part == "from" else f"< {size_text(a.from_bytes)} (host floor)"
        print(f"| {g} | {label} | {len(errs)} | {sum(abs(e) for e in errs) / len(errs) * 100:.1f}% | {worst * 100:+.0f}% |")
    if every:
        within = sum(abs(e) <= 0.10 for e in every)
        print(f"\nFrom {size_text(a.from_bytes)} up: {len(every)} rows, mean |error| "
              f"{sum(abs(e) for e in every) / len(every) * 100:.1f}%, {within} within 10%.")


if __name__ == "__main__":
    main()
