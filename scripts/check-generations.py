#!/usr/bin/env python3
"""GEMMs of the chips before Hopper against published measurements: cuBLAS SGEMM on a K40
(clBLAS's performance pages), DeepBench's cuBLAS GEMMs on a V100 (fp32 on the lanes, fp16 on
the tensor cores), a P100 (fp32), a T4 at its 70 W limit (fp32, fp16) and a Titan Xp (GP102,
the P40's chip: fp32, int8 by DP4A), an A100 at its 400 W limit on random and on zero inputs,
and a forum's T4 figure, from docs/validation/published/pre-hopper-gemm.csv; then the K40's whole
cuBLAS 7.0 SGEMM curve (k40-sgemm-curve.csv beside it, 180 sizes), summarised by size band, and
DeepBench's whole V100 GEMM list (deepbench-v100-gemm.csv, 320 shapes), summarised by format,
size and layout. Each shape runs as one GEMM with the row's config overrides (`set`) and trace
overrides (`trace_set`), as many at once as there are cores, and a run that repeats (the same
GEMM in another layout or file) only once. Nothing in the configs was set from these figures.
Prints a Markdown table with each row's error and a summary per system and format (split into
shapes with m and n both at least 512 and the rest, where a group has both); asserts nothing.

  scripts/check-generations.py
  scripts/check-generations.py --system V100 --fidelity exact
  scripts/check-generations.py --one-per-group   (one shape per system and format: a smoke run)
  scripts/check-generations.py --check   (the test's run: fails where docs/validation/check-generations.md,
                                          or a row or summary docs/validation.md quotes from it, is out of date)
"""
import argparse
import collections
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from xpusim.cli import counted_map  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LARGE = 512  # both m and n at least this: a shape that fills the chip with tiles (the summary's split)
TARGET = 0.15  # the error the summary counts shapes within
PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "pre-hopper-gemm.csv")
# clBLAS's whole K40 SGEMM curve (m = n = k, 32 to 5760 in steps of 32), summarised by size band
# rather than row by row; the table's four K40 rows are four of its points.
CURVE = os.path.join(ROOT, "docs", "validation", "published", "k40-sgemm-curve.csv")
CURVE_BANDS = [(32, 480), (512, 992), (1024, 2016), (2048, 5760)]
# DeepBench's whole GEMM list on the V100 (160 shapes in fp32 and in fp16, three layouts),
# summarised by format, size and layout; the table's fourteen V100 rows are among them.
DEEPBENCH_V100 = os.path.join(ROOT, "docs", "validation", "published", "deepbench-v100-gemm.csv")
STORED = os.path.join(ROOT, "docs", "validation", "check-generations.md")  # the whole output, as committed
QUOTING = os.path.join(ROOT, "docs", "validation.md")  # quotes rows and summaries of it


def is_large(row):
    """Both m and n at least LARGE: the summaries' split."""
    return int(row["m"]) >= LARGE and int(row["n"]) >= LARGE


def group(row):
    """The row's system and format, the format naming its trace overrides: `fp16 (switching=zeros)`."""
    return row["system"], row["dtype"] + "".join(f" ({t})" for t in filter(None, row.get("trace_set", "").split(";")))


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
    ap.add_argument("--one-per-group", action="store_true",
                    help="only the first row of each system, format and trace override (a quick smoke run)")
    ap.add_argument("--check", action="store_true",
                    help=f"every row, compared with {os.path.relpath(STORED, ROOT)} and the rows docs/validation.md quotes; "
                         "exit 1 where they differ")
    a = ap.parse_args()
    if not os.path.exists(a.xpusim):
        sys.exit(f"check-generations: {a.xpusim}: no xpusim binary (build it, or pass --xpusim)")
    rows = [r for r in csv.DictReader(open(PUBLISHED)) if a.system in r["system"]]
    if a.check and (a.system or a.one_per_group or a.fidelity != "fast"):
        sys.exit("check-generations: --check compares the whole table at fast fidelity; it takes no --system, --one-per-group or --fidelity")
    if a.one_per_group:
        firsts = {}
        for r in rows:
            firsts.setdefault(group(r), r)
        rows = list(firsts.values())
    if not rows:
        sys.exit(f"check-generations: no row of {PUBLISHED} names a system with '{a.system}'")
    lines = ["| system | format | m x n x k | kernel | published TFLOP/s | simulated | error |", "|---|---|---|---|---|---|---|"]
    groups = collections.defaultdict(list)
    for r, (sim, kernel) in zip(rows, simulate_all(a.xpusim, rows, a.fidelity)):
        pub = float(r["tflops"])
        err = sim / pub - 1
        system, fmt = group(r)
        groups[(system, fmt)].append((err, is_large(r)))
        lines.append(f"| {system} | {fmt} | {r['m']}x{r['n']}x{r['k']} | {kernel} | {pub:.3g} | {sim:.3g} | {err:+.0%} |")
    lines.append("")
    for (system, dtype), shapes in groups.items():
        parts = [("", [e for e, _ in shapes])]
        if any(large for _, large in shapes) and not all(large for _, large in shapes):
            parts += [(f" (m, n >= {LARGE})", [e for e, large in shapes if large]),
                      (" (the rest)", [e for e, large in shapes if not large])]
        for label, errs in parts:
            lines.append(summary(f"{system}, {dtype}{label}", errs, "shapes"))
    if not a.one_per_group and a.system in "Tesla K40":
        lines += curve_lines(a.xpusim, a.fidelity)
    if not a.one_per_group and a.system in "Tesla V100 SXM2 (DGX-1)":
        lines += deepbench_lines(a.xpusim, a.fidelity)
    print("\n".join(lines))
    if a.check:
        sys.exit(check(lines))


SIMULATED = {}  # (what simulate() reads of a row, fidelity): its result, for rows that repeat a run


def run_key(row, fidelity):
    """What decides a row's simulation: the same GEMM in another layout (which the model does not
    distinguish) or in another file is the same run."""
    return tuple(row.get(f, "") for f in ("config", "set", "trace_set", "dtype", "m", "n", "k")) + (fidelity,)


def simulate_all(xpusim, rows, fidelity):
    """simulate() of each row, in the rows' order: each distinct run once, as many at a time as
    there are cores, the largest first."""
    keys = [run_key(r, fidelity) for r in rows]
    first = {k: r for k, r in zip(keys, rows) if k not in SIMULATED}
    todo = list(first)
    todo.sort(key=lambda k: -int(first[k]["m"]) * int(first[k]["n"]) * int(first[k]["k"]))
    results = counted_map("check-generations: simulating GEMMs", os.cpu_count() or 1,
                          lambda k: simulate(xpusim, first[k], fidelity), todo)
    SIMULATED.update(zip(todo, results))
    return [SIMULATED[k] for k in keys]


def summary(name, errs, what, median=False):
    """One summary line: `name: mean absolute error E over N <what>, worst W, K within 15%`, with
    the median signed error after the mean where `median` (a bias shows there)."""
    within = sum(abs(e) <= TARGET for e in errs)
    mid = f" (median {sorted(errs)[len(errs) // 2]:+.0%})" if median else ""
    return (f"- {name}: mean absolute error {sum(abs(e) for e in errs) / len(errs):.0%}{mid} over {len(errs)} {what}, "
            f"worst {max(errs, key=abs):+.0%}, {within} within {TARGET:.0%}")


def curve_lines(xpusim, fidelity):
    """The K40's whole published SGEMM curve, simulated size by size and summarised per band."""
    rows = list(csv.DictReader(open(CURVE)))
    errs = {int(r["m"]): sim / float(r["tflops"]) - 1 for r, (sim, _) in zip(rows, simulate_all(xpusim, rows, fidelity))}
    sizes = sorted(errs)
    lines = ["", f"clBLAS's whole K40 curve ({os.path.relpath(CURVE, ROOT)}: cuBLAS 7.0 SGEMM, m = n = k from "
                 f"{sizes[0]} to {sizes[-1]}, {len(sizes)} sizes, the four above among them):", ""]
    for lo, hi in CURVE_BANDS:
        band = [errs[n] for n in sizes if lo <= n <= hi]
        if band:
            lines.append(summary(f"Tesla K40, fp32, m = n = k from {lo} to {hi}", band, "sizes"))
    lines.append(summary("Tesla K40, fp32, the whole curve", [errs[n] for n in sizes], "sizes"))
    return lines


def layout(row):
    """The row's layout as BLAS names it, from its note: NN, TN or NT."""
    return "".join("T" if f"{x} transposed" in row["note"] else "N" for x in ("A", "B"))


def deepbench_lines(xpusim, fidelity):
    """DeepBench's whole V100 GEMM list, simulated shape by shape and summarised per format: shapes
    with m and n at least LARGE (and those per layout) and the rest, the rest again split where
    DeepBench's time per call was under 30 us (where a host's time to issue a call bounds it)."""
    rows = list(csv.DictReader(open(DEEPBENCH_V100)))
    results = [(r, sim / float(r["tflops"]) - 1) for r, (sim, _) in zip(rows, simulate_all(xpusim, rows, fidelity))]
    lines = ["", f"DeepBench's whole GEMM list on the V100 ({os.path.relpath(DEEPBENCH_V100, ROOT)}: {len(rows)} shapes, "
                 "the fourteen above among them; the model does not distinguish the layouts):", ""]
    for g in dict.fromkeys(group(r) for r, _ in results):
        mine = [(r, e) for r, e in results if group(r) == g]
        large = [(r, e) for r, e in mine if is_large(r)]
        rest = [(r, e) for r, e in mine if not is_large(r)]
        name = f"{g[0]}, {g[1]}, DeepBench's list"
        lines.append(summary(f"{name} (m, n >= {LARGE})", [e for _, e in large], "shapes", median=True))
        for lay in dict.fromkeys(layout(r) for r, _ in large):
            lines.append(summary(f"{name} (m, n >= {LARGE}, {lay})", [e for r, e in large if layout(r) == lay], "shapes", median=True))
        lines.append(summary(f"{name} (the rest)", [e for _, e in rest], "shapes", median=True))
        quick = [e for r, e in rest if float(r["time_ms"]) < 0.03]
        if quick:
            lines.append(summary(f"{name} (the rest, under 30 us a call)", quick, "shapes", median=True))
    return lines


def key(line):
    """What names a table row (system, format, shape) or a summary line (its group), else None."""
    if line.startswith("| ") and not line.startswith("| system "):
        cells = [c.strip() for c in line.strip("|").split("|")]
        return tuple(cells[:3]) if len(cells) == 7 else None
    if line.startswith("- ") and ": mean absolute error " in line:
        return line.split(": mean absolute error ")[0]
    return None


def check(lines):
    """0 where the stored output equals this run's and every row or summary docs/validation.md
    quotes from it is this run's; otherwise 1, with each difference named."""
    problems = []
    stored = open(STORED).read().splitlines()
    if stored != lines:
        changed = [f"  stored:    {o}\n  simulated: {n}" for o, n in zip(stored, lines) if o != n]
        if len(stored) != len(lines):
            changed.append(f"  {len(stored)} lines stored, {len(lines)} simulated")
        problems.append(f"{os.path.relpath(STORED, ROOT)} is out of date (run scripts/check-generations.py > it):\n" +
                        "\n".join(changed[:10]))
    now = {k: l for l in lines if (k := key(l))}
    for n, line in enumerate(open(QUOTING).read().splitlines(), 1):
        k = key(line)
        if k in now and line != now[k]:
            problems.append(f"{os.path.relpath(QUOTING, ROOT)}:{n}: quotes\n  {line}\nwhere this run gives\n  {now[k]}")
    for p in problems:
        print(f"check-generations: {p}", file=sys.stderr)
    if not problems:
        print(f"check-generations: {os.path.relpath(STORED, ROOT)} and the rows docs/validation.md quotes match this run")
    return 1 if problems else 0


if __name__ == "__main__":
    main()
