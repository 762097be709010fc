#!/usr/bin/env python3
"""Fast fidelity against exact on the jobs users compare: the golden report's run, the traces of
docs/validation.md and the shipped sweeps. Runs each in both fidelities and prints the time and
energy error of fast against exact (the issue's bounds: 1% in time, 2% in energy) and the wall
time of each, as a Markdown table. Asserts nothing unless --check (then exits 1 on a miss).

  scripts/fidelity-check.py                 every job (about 30 minutes on 2 cores; exact runs take most)
  scripts/fidelity-check.py --quick         the golden run, two GEMMs and a decode step
  scripts/fidelity-check.py --only NAME     jobs whose name contains NAME
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXED = ["power.mode=fixed_clock"]
SUSTAINED = ["power.start=sustained"]

# name, config, trace, --set options; a trace "gen:ARGS" is made by xpusim-trace.py ARGS, one
# "imp:PROFILE" by import-torch-profile.py PROFILE.
RUNS = [
    ("golden gemm-small (fixed clock)", "configs/h100-sxm.yaml", "tests/data/gemm-small.yaml",
     FIXED + ["power.idle_floor=0 W", "energy.table=energy/tsmc-4n.yaml"]),
    ("h100 bf16 8192^3", "configs/h100-sxm.yaml", "traces/gemm/bf16-8192.yaml", []),
    ("h100 fp8 8192^3", "configs/h100-sxm.yaml", "traces/gemm/fp8-8192.yaml", []),
    ("h100 int8 8192^3", "configs/h100-sxm.yaml", "traces/gemm/int8-8192.yaml", []),
    ("h100 bf16 4096^3 x8 (sustained)", "configs/h100-sxm.yaml", "traces/gemm/bf16-4096-x8.yaml", SUSTAINED),
    ("b200 bf16 8192^3", "configs/b200.yaml", "traces/gemm/bf16-8192.yaml", []),
    ("b200 fp4 8192^3", "configs/b200.yaml", "traces/gemm/fp4-8192.yaml", []),
    ("h100 attention fa-d128-8k", "configs/h100-sxm.yaml", "traces/attention/fa-d128-8k-full.yaml", []),
    ("b200 attention fa-d128-8k", "configs/b200.yaml", "traces/attention/fa-d128-8k-full.yaml", []),
    ("h100 transformer-block", "configs/h100-sxm.yaml", "traces/examples/transformer-block.yaml", []),
    ("h100 llama-3-8b prefill 2 layers", "configs/h100-sxm.yaml", "traces/generated/llama-3-8b-prefill-2layers.yaml", []),
    ("h100 llama-3-8b decode b1", "configs/h100-sxm.yaml", "traces/generated/llama-3-8b-decode-b1-4layers.yaml", []),
    ("h100 llama-3-8b decode b8 w4a16", "configs/h100-sxm.yaml", "traces/generated/llama-3-8b-decode-b8-w4a16.yaml", []),
    ("h100 resnet-50 b8", "configs/h100-sxm.yaml", "traces/generated/resnet-50-b8.yaml", []),
    ("h100 add-bf16-1g", "configs/h100-sxm.yaml", "traces/elementwise/add-bf16-1g.yaml", []),
    ("h100 imported small-transformer", "configs/h100-sxm.yaml", "imp:traces/imported/small-transformer.trace.json", []),
    ("dgx-h100 llama-3-70b prefill layer tp8", "configs/systems/dgx-h100.yaml",
     "traces/generated/llama-3-70b-prefill-1layer-tp8.yaml", []),
    ("dgx-h100 llama-2-70b decode tp8 (representative)", "configs/systems/dgx-h100.yaml",
     "gen:configs/models/llama-2-70b.yaml --phase decode --tp 8", ["system.detail=representative"]),
    ("magnet bert-base layer", "configs/magnet-int4.yaml", "traces/examples/bert-base-layer.yaml", []),
]
QUICK = {"golden gemm-small (fixed clock)", "h100 bf16 8192^3", "b200 bf16 8192^3",
         "dgx-h100 llama-2-70b decode tp8 (representative)"}
SWEEPS = ["configs/sweeps/power-limit.yaml", "configs/sweeps/hbm-x-sms.yaml"]


def timed(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(" ".join(cmd) + " failed:\n" + p.stderr)
    return time.monotonic() - t0


def totals(out):
    t = json.load(open(os.path.join(out, "report.json")))["total"]
    return t["time_s"], t.get("energy", {}).get("total_j")


def err(f, e):
    return None if f is None or e is None or e == 0 else 100 * (f / e - 1)


def fmt(x):
    return "-" if x is None else f"{x:+.2f}%"


def run_job(xpusim, tmp, job):
    name, cfg, trace, sets = job
    tool = {"gen:": "scripts/xpusim-trace.py", "imp:": "scripts/import-torch-profile.py"}.get(trace[:4])
    if tool:
        path = os.path.join(tmp, f"trace-{abs(hash(name))}.yaml")
        subprocess.run([sys.executable, tool, *trace[4:].split(), "-o", path], check=True, cwd=ROOT, capture_output=True)
        trace = path
    res = {}
    for fid in ("exact", "fast"):
        out = os.path.join(tmp, f"{abs(hash(name))}-{fid}")
        cmd = [xpusim, "run", "-q", "--fidelity", fid, "-c", cfg, "-t", trace, "--out", out]
        for s in sets:
            cmd += ["--set", s]
        res[fid] = (timed(cmd), *totals(out))
    (we, te, ee), (wf, tf, ef) = res["exact"], res["fast"]
    return name, we, wf, err(tf, te), err(ef, ee)


def run_sweep(xpusim, tmp, spec):
    rows = {}
    walls = {}
    for fid in ("exact", "fast"):
        out = os.path.join(tmp, os.path.basename(spec) + "-" + fid)
        walls[fid] = timed([xpusim, "sweep", spec, "--fidelity", fid, "-o", out])
        with open(os.path.join(out, "results.csv")) as f:
            rows[fid] = {r["id"]: r for r in csv.DictReader(f)}
    worst_t = worst_e = 0.0  # the largest in size, with its sign
    for pid, e in rows["exact"].items():
        f = rows["fast"][pid]
        worst_t = max(worst_t, err(float(f["time_s"]), float(e["time_s"])), key=abs)
        if e.get("energy_j"):
            worst_e = max(worst_e, err(float(f["energy_j"]), float(e["energy_j"])), key=abs)
    name = f"sweep {os.path.basename(spec)} ({len(rows['exact'])} points, worst)"
    return name, walls["exact"], walls["fast"], worst_t, worst_e


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build/xpusim"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-sweeps", action="store_true")
    ap.add_argument("--check", action="store_true", help="exit 1 if a job misses 1%% in time or 2%% in energy")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    if not os.access(args.xpusim, os.X_OK):
        sys.exit(f"no simulator at {args.xpusim} (build it: scripts/build.sh)")
    os.environ["SYSTEMC_DISABLE_COPYRIGHT_MESSAGE"] = "1"
    jobs = [j for j in RUNS if (not args.quick or j[0] in QUICK) and args.only in j[0]]
    sweeps = [] if args.quick or args.no_sweeps else [s for s in SWEEPS if args.only in s or not args.only]
    if not jobs and not sweeps:
        sys.exit(f"no job matches --only {args.only!r}; the jobs: " + ", ".join(j[0] for j in RUNS) + ", " + ", ".join(SWEEPS))
    print("| job | exact wall s | fast wall s | speed-up | time error | energy error |")
    print("|---|---|---|---|---|---|")
    miss = False
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futures = [ex.submit(run_job, args.xpusim, tmp, j) for j in jobs]
        results = [f.result() for f in futures]
        # A sweep runs its points in parallel itself: one at a time.
        results += [run_sweep(args.xpusim, tmp, s) for s in sweeps]
        for name, we, wf, et, ee in results:
            print(f"| {name} | {we:.1f} | {wf:.1f} | {we / wf:.1f}x | {fmt(et)} | {fmt(ee)} |", flush=True)
            miss |= (et is not None and abs(et) > 1) or (ee is not None and abs(ee) > 2)
    if args.check and miss:
        sys.exit("fast fidelity missed 1% in time or 2% in energy on a job above")


if __name__ == "__main__":
    main()
