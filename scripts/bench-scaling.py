#!/usr/bin/env python3
"""Wall time of the simulator against problem size, before and after the speed work: GEMMs
1024^3 to 16384^3, a GPT-3 175B prefill of 1 to 96 layers, and a Llama-2-70B decode step on 1
to 72 GPUs. "before" is the simulator as it was before (scripts/bench.sh builds it into
build-bench/, or pass --base), "exact" and "fast" are this one's fidelities. Writes
scaling.csv, a Markdown table and an SVG chart (log-log, one panel per axis) into --out, and
prints the table. Asserts nothing: the machine is shared and noisy, one run per point.

  scripts/bench-scaling.py --out docs/performance     (about an hour on 2 cores; the base's large points take most)
  scripts/bench-scaling.py --quick                    small points only

Each finished point is written to scaling.csv at once; --resume keeps the points already there
(an interrupted run loses no finished point).
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPT3 = "configs/models/gpt-3-175b.yaml --phase prefill --batch 8 --prompt 2048 --tp 4"
LLAMA = "configs/models/llama-2-70b.yaml --phase decode"
REP = ["system.detail=representative"]


def points(quick):
    # axis, x, config, trace (a path, or "gen:" xpusim-trace.py arguments), --set, variants
    gemm = [1024, 2048, 4096] if quick else [1024, 2048, 4096, 8192, 16384]
    for n in gemm:
        yield "GEMM size (N, N^3 bf16 on h100-sxm)", n, "configs/h100-sxm.yaml", f"gemm:{n}", [], ("before", "exact", "fast")
    layers = [1, 2, 4] if quick else [1, 2, 4, 12, 24, 48, 96]
    for n in layers:
        # Exact and before cost about a minute and a half a layer: the first layer only.
        v = ("before", "exact", "fast") if n == 1 else ("fast",)
        # Past about 77 layers a GPU's share (82 GiB of weights and 18 GiB of KV cache at 96) exceeds
        # an H100's 80 GiB, which the trace's memory_per_gpu makes the chip refuse; a speed
        # benchmark gives it the memory to run the same step.
        yield "GPT-3 175B prefill layers (8 x 2048 tokens, TP=4, dgx-h100 representative)", n, \
            "configs/systems/dgx-h100.yaml", f"gen:{GPT3} --layers {n}", REP + ["hbm.capacity=160GiB"], v
    # Pipeline stages run different layers on different GPUs, which one representative GPU
    # cannot mirror: the 72-GPU point (TP=8 x PP=9) simulates every GPU, and the simulator from
    # before the speed work is left out there (it would take hours).
    # One GPU cannot hold the 70B's 138 GB of bf16 weights (the trace's memory_per_gpu says so and
    # the chip refuses it); a speed benchmark gives it the memory to run the same step.
    gpus = [(1, "configs/h100-sxm.yaml", "--tp 1", ["hbm.capacity=160GiB"], ("before", "fast")),
            (2, "configs/systems/dgx-h100.yaml", "--tp 2", [], ("before", "fast")),
            (4, "configs/systems/dgx-h100.yaml", "--tp 4", [], ("before", "fast")),
            (8, "configs/systems/dgx-h100.yaml", "--tp 8", [], ("before", "fast")),
            (72, "configs/systems/gb200-nvl72.yaml", "--tp 8 --pp 9", ["system.detail=full"], ("fast",))]
    for n, cfg, par, sets, variants in gpus[:3] if quick else gpus:
        yield "GPUs (Llama-2-70B decode step, 80 layers; dgx-h100 at its default detail, 72: gb200-nvl72 TP=8 PP=9 in full)", n, \
            cfg, f"gen:{LLAMA} {par}", sets, variants


def make_trace(tmp, spec):
    if spec.startswith("gemm:"):
        n = int(spec[5:])
        path = os.path.join(tmp, f"gemm-{n}.yaml")
        with open(path, "w") as f:
            f.write(f"xpusim_trace: 1\nname: gemm-{n}\nops:\n  - {{name: gemm, kind: gemm, m: {n}, n: {n}, k: {n}, dtype: bf16}}\n")
        return path
    path = os.path.join(tmp, f"trace-{abs(hash(spec))}.yaml")
    subprocess.run([sys.executable, "scripts/xpusim-trace.py", *spec[4:].split(), "-o", path], check=True, cwd=ROOT)
    return path


def timed(binary, cfg, trace, sets, extra, out):
    cmd = [binary, "run", "-q", "-c", cfg, "-t", trace, "--out", out, *extra]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(" ".join(cmd) + " failed:\n" + p.stderr)
    return time.monotonic() - t0


def svg(rows, path):
    """Log-log panels, one per axis: wall seconds against size, a line per variant."""
    axes = []
    for r in rows:
        if r["axis"] not in axes:
            axes.append(r["axis"])
    colours = {"before": "#b03a2e", "exact": "#7d3c98", "fast": "#1f618d"}
    import math
    w, h, pad = 360, 260, 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * len(axes)}" height="{h + 40}" font-family="sans-serif" font-size="11">']
    for i, axis in enumerate(axes):
        pts = [r for r in rows if r["axis"] == axis]
        xs = [float(r["x"]) for r in pts]
        ys = [float(r[v]) for r in pts for v in colours if r.get(v)]
        x0, x1 = math.log10(min(xs)), math.log10(max(xs)) + 1e-9
        y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        ox = i * w
        px = lambda x: ox + pad + (math.log10(x) - x0) / (x1 - x0) * (w - pad - 20)
        py = lambda y: 20 + (y1 - math.log10(y)) / (y1 - y0) * (h - 40)
        parts.append(f'<text x="{ox + w / 2}" y="{h + 30}" text-anchor="middle">{axis.split(" (")[0]}</text>')
        parts.append(f'<line x1="{ox + pad}" y1="{h - 20}" x2="{ox + w - 20}" y2="{h - 20}" stroke="black"/>')
        parts.append(f'<line x1="{ox + pad}" y1="20" x2="{ox + pad}" y2="{h - 20}" stroke="black"/>')
        for e in range(int(y0), int(y1) + 1):
            parts.append(f'<text x="{ox + pad - 4}" y="{py(10 ** e) + 4}" text-anchor="end">{10 ** e:g} s</text>')
            parts.append(f'<line x1="{ox + pad}" y1="{py(10 ** e)}" x2="{ox + w - 20}" y2="{py(10 ** e)}" stroke="#ddd"/>')
        for x in xs:
            parts.append(f'<text x="{px(x)}" y="{h - 6}" text-anchor="middle">{x:g}</text>')
        for v, c in colours.items():
            line = [(px(float(r["x"])), py(float(r[v]))) for r in pts if r.get(v)]
            if len(line) > 1:
                parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in line)}"/>')
            for a, b in line:
                parts.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{c}"/>')
        if i == 0:
            for j, (v, c) in enumerate(colours.items()):
                parts.append(f'<text x="{ox + pad + 10}" y="{34 + 14 * j}" fill="{c}">{v}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build/xpusim"))
    ap.add_argument("--base", default=os.path.join(ROOT, "build-bench/base/build/xpusim"),
                    help="the simulator before the speed work (scripts/bench.sh builds it)")
    ap.add_argument("--out", default="bench-scaling")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--resume", action="store_true", help="keep the points already in --out/scaling.csv")
    args = ap.parse_args()
    for b in (args.xpusim, args.base):
        if not os.access(b, os.X_OK):
            sys.exit(f"no simulator at {b} (scripts/build.sh; scripts/bench.sh builds the base)")
    os.environ["SYSTEMC_DISABLE_COPYRIGHT_MESSAGE"] = "1"
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "scaling.csv")
    fields = ["axis", "x", "before", "exact", "fast"]
    done = {}
    if args.resume and os.path.exists(path):
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if not set(fields) <= set(reader.fieldnames or []):
                sys.exit(f"{path}:1: --resume: the header must name {', '.join(fields)} (not a scaling.csv this script wrote)")
            done = {(r["axis"], r["x"]): r for r in reader}
    rows = []

    def save():
        with open(path + ".tmp", "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=fields)
            wr.writeheader()
            wr.writerows(rows)
        os.replace(path + ".tmp", path)

    with tempfile.TemporaryDirectory() as tmp:
        for axis, x, cfg, spec, sets, variants in points(args.quick):
            row = done.get((axis, str(x)))
            if row is None:
                trace = make_trace(tmp, spec)
                row = {"axis": axis, "x": x}
                for v in variants:
                    binary = args.base if v == "before" else args.xpusim
                    extra = [] if v == "before" else ["--fidelity", v]
                    row[v] = f"{timed(binary, cfg, trace, sets, extra, os.path.join(tmp, 'out')):.2f}"
            rows.append(row)
            save()
            print(f"{axis.split(' (')[0]:<32} {x:>6} " + "  ".join(f"{v} {row.get(v) or '-':>8}" for v in ("before", "exact", "fast")), flush=True)
    svg(rows, os.path.join(args.out, "scaling.svg"))
    print(f"\nwrote {path} and {args.out}/scaling.svg")


if __name__ == "__main__":
    main()
