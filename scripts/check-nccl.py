#!/usr/bin/env python3
"""The simulator's collectives against published nccl-tests runs on H100 NVSwitch systems.

Reads docs/validation/published/nccl-tests-h100.csv (each row: its source, GPUs, collective,
the algorithm and protocol NCCL ran, the size and out-of-place time, and the harness that timed
it), runs every row as one collective on the first N GPUs of configs/systems/dgx-h100.yaml with
the same algorithm (and protocol where the run forced one), and prints a Markdown table with the
error per row and a summary per curve. No parameter of the simulator was set from these rows:
they are held out.

Two harnesses timed them. nccl-tests (-g N: one thread launches every GPU's kernel, eagerly,
iteration after iteration) puts a floor of 17-25 us under its small sizes: the host's issue
rate, not the GPUs'. A CUDA graph replayed by one process per GPU (torch-graph rows) has no
such floor; it is what xpusim's `kernels.launch: graph` models. For nccl-tests rows the table
also gives max(floor, xpusim): the host issuing ahead of the GPUs, as `kernels.launch: eager`
models it, with the floor taken as the median of the curve's rows up to 64 KiB. Those rows fit
the floor and stay out of the summary. Asserts nothing.

  scripts/check-nccl.py [--xpusim build/xpusim] [--config CONFIG] [--from BYTES] [--set KEY=VALUE ...]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "nccl-tests-h100.csv")
FLOOR_UP_TO = 64 << 10  # rows up to this size set a nccl-tests curve's host floor


def size_text(b):
    for unit, s in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit and b % unit == 0:
            return f"{b // unit} {s}"
    return f"{b} B"


def pct(e):
    return f"{e * 100:+.0f}%"


def summary(errs):
    within = sum(abs(e) <= 0.10 for e in errs)
    worst = max(errs, key=abs)
    return f"{sum(abs(e) for e in errs) / len(errs) * 100:.1f}%, {within} within 10%, worst {pct(worst)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml"))
    ap.add_argument("--from", dest="from_bytes", type=int, default=1 << 20,
                    help="smallest size counted in the summary (default 1 MiB)")
    ap.add_argument("--set", action="append", default=[], help="config override passed to xpusim")
    a = ap.parse_args()
    if a.from_bytes <= 0:
        ap.error(f"--from must be a positive size in bytes, not {a.from_bytes}")
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

    # One curve per source file; a nccl-tests curve's floor is the median of its smallest rows.
    def curve(r):
        return (r["source"], r["gpus"], r["collective"], r["algorithm"], r["protocol"])
    small = {}
    for r in rows:
        if r["harness"] == "nccl-tests" and int(r["bytes"]) <= FLOOR_UP_TO:
            small.setdefault(curve(r), []).append(float(r["time_us"]))
    floor = {c: statistics.median(t) for c, t in small.items()}

    print("| GPUs | collective | harness | NCCL ran | size | published (us) | xpusim (us) | xpusim ran | error "
          "| with the host floor (us) | error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    groups = {}
    for i, r in enumerate(rows):
        o = ops[f"r{i}"]
        sim_us = o["time_s"] * 1e6
        meas = float(r["time_us"])
        err = sim_us / meas - 1
        ran = r["algorithm"] + (f"/{r['protocol']}" if r["protocol"] != "auto" else "")
        xran = f"{o['collective']['algorithm']}/{o['collective']['protocol']}"
        harness = r["harness"] + (", quiet" if r["harness"] == "nccl-tests" and "/quiet/" in r["source"] else "")
        fl = floor.get(curve(r))
        fitted = fl is not None and int(r["bytes"]) <= FLOOR_UP_TO
        if fl is None:
            floored, ferr = "-", None
        elif fitted:
            floored, ferr = f"{fl:.1f} (fit)", None
        else:
            ferr = max(fl, sim_us) / meas - 1
            floored = f"{max(fl, sim_us):.1f}"
        print(f"| {r['gpus']} | {r['collective']} | {harness} | {ran} | {size_text(int(r['bytes']))} | {meas:.1f} | "
              f"{sim_us:.1f} | {xran} | {pct(err)} | {floored} | {pct(ferr) if ferr is not None else '-'} |")
        if fitted:
            continue
        part = "from" if int(r["bytes"]) >= a.from_bytes else "below floored" if fl is not None else "below"
        g = groups.setdefault((f"{r['gpus']} GPUs {r['collective']} {ran}, {harness}", part), ([], []))
        g[0].append(err)
        g[1].append(ferr if ferr is not None else err)
    print()
    print("| curve | sizes | rows | xpusim: mean abs error, within 10%, worst | with the host floor |")
    print("|---|---|---|---|---|")
    every, every_floored = [], []
    for (g, part), (errs, ferrs) in sorted(groups.items()):
        if part == "from":
            every += errs
            every_floored += ferrs
        label = {"from": f">= {size_text(a.from_bytes)}", "below": f"< {size_text(a.from_bytes)}",
                 "below floored": f"{size_text(FLOOR_UP_TO * 2)} - {size_text(a.from_bytes // 2)}"}[part]
        print(f"| {g} | {label} | {len(errs)} | {summary(errs)} | {summary(ferrs)} |")
    if every:
        print(f"\nFrom {size_text(a.from_bytes)} up, {len(every)} rows: xpusim {summary(every)}; "
              f"with the host floor under nccl-tests rows {summary(every_floored)}.")


if __name__ == "__main__":
    main()
