#!/usr/bin/env python3
"""One GEMM at a time under the power governor's two benchmark modes, against the H100's measured
steady state: each size looped for 4 s (docs/validation/measured/h100-sxm-2026-11-27-power/
gemm-steady.csv: a CUDA graph of 20 calls, 3 from 4096 up, replayed back to back; throughput,
SM clock and board power after the first second), and the earlier sweep's short intervals
(h100-sxm-2026-11-22/gemm.csv: at least 0.2 s; `best` the fastest interval, `mean` their
average).

  sustained  the trace is a slice of a long run: its first control window runs at boost to
             measure the load, then the average stands at the limit (a kernel shorter than the
             governor's 1 ms time constant can average above the limit);
  steady     the trace is one period of a loop of itself: simulated once beforehand to measure
             its load, its clock starts where that load meets the limit.

Prints a Markdown table (simulated throughput, mean SM clock and mean chip power per mode, and
the throughput's error against the 4-s loop); asserts nothing.

  scripts/check-power-steady.py [-c configs/h100-sxm.yaml] [--sizes 1024 2048 4096 8192]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURED = os.path.join(ROOT, "docs/validation/measured/h100-sxm-2026-11-22/gemm.csv")
LOOPS = os.path.join(ROOT, "docs/validation/measured/h100-sxm-2026-11-27-power/gemm-steady.csv")


def simulate(xpusim, config, dtype, size, start, tmp):
    trace = os.path.join(tmp, f"{dtype}-{size}.yaml")
    with open(trace, "w") as f:
        f.write(f"xpusim_trace: 1\nname: gemm-{dtype}-{size}\nops:\n"
                f"  - {{name: g, kind: gemm, m: {size}, n: {size}, k: {size}, dtype: {dtype}}}\n")
    out = os.path.join(tmp, f"out-{dtype}-{size}-{start}")
    cmd = [xpusim, "run", "-q", "-c", config, "-t", trace, "--set", f"power.start={start}", "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    if p.returncode:
        sys.exit(" ".join(cmd) + " failed:\n" + p.stderr)
    r = json.load(open(os.path.join(out, "report.json")))
    t = r["total"]
    return t["tflops"], t["power"]["sm_clock_hz"] / 1e6, t["energy"]["average_power_w"], r["chip"]["power"]["limit_w"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    ap.add_argument("-c", "--config", default=os.path.join(ROOT, "configs", "h100-sxm.yaml"))
    ap.add_argument("--measured", default=MEASURED, help="gemm.csv of the card the config describes")
    ap.add_argument("--loops", default=LOOPS, help="gemm-steady.csv of the card the config describes")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    ap.add_argument("--dtypes", nargs="+", default=["bf16", "fp8"])
    a = ap.parse_args()
    measured = {(r["dtype"], int(r["m"])): r for r in csv.DictReader(open(a.measured)) if r["m"] == r["n"] == r["k"]}
    loops = {(r["dtype"], int(r["size"])): r for r in csv.DictReader(open(a.loops)) if r.get("tflops_after_1s")}
    print("| GEMM (one call) | measured, short intervals: best, mean TFLOP/s | measured, 4-s loop: TFLOP/s, clock, power | "
          "sustained: TFLOP/s, clock, power | error | steady: TFLOP/s, clock, power | error |")
    print("|---|---|---|---|---|---|---|")
    over = []
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in a.dtypes:
            for size in a.sizes:
                m, lp = measured.get((dtype, size)), loops.get((dtype, size))
                mean = float(lp["tflops_after_1s"]) if lp else None
                cells = [f"{dtype} {size}^3", f"{float(m['tflops_best']):.0f}, {float(m['tflops_mean']):.0f}" if m else "not measured",
                         f"{mean:.0f}, {float(lp['avg_sm_clock_mhz']):.0f} MHz, {float(lp['avg_power_w']):.0f} W" if lp else "not measured"]
                for start in ("sustained", "steady"):
                    tf, mhz, w, limit = simulate(a.xpusim, a.config, dtype, size, start, tmp)
                    if start == "steady" and w > limit * 1.005:
                        over.append(f"{dtype} {size}^3: {w:.0f} W")
                    cells += [f"{tf:.0f}, {mhz:.0f} MHz, {w:.0f} W", f"{(tf / mean - 1) * 100:+.0f}%" if mean else ""]
                print("| " + " | ".join(cells) + " |", flush=True)
    print()
    print("steady mode over the limit: " + (", ".join(over) if over else "none"))


if __name__ == "__main__":
    main()
