#!/usr/bin/env python3
"""Huang's law from mechanism: one inference workload (a BERT-large encoder layer, batch 8 x 384
tokens, attention as GEMMs and a softmax) on every GPU generation the project has a config for,
each in its best number format, and the gain attributed on the newest fully modelled chip (the
H100) by changing one factor at a time: sparsity, number format, instruction complexity
(tensor cores against the SIMT lanes) and the process's energy table. What the factors leave of
the end-to-end gain is the rest (SM count, clock, memory, and everything else between the
chips). The same layer then runs in int4 on the MAGNet-style accelerator, per joule against the
GPUs. Writes docs/huangs-law.md (the tables and the seed's factors beside the simulated ones)
and its chart, docs/huangs-law.svg, unless --out names another file (the chart beside it).

  scripts/huangs-law.py                 (about a minute on 2 cores)
  scripts/huangs-law.py --out /tmp/h.md
  scripts/huangs-law.py --out /tmp/h.md --check   (the test's run: exit 1 where the committed study is out of date)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))  # xpusim.plots draws the chart
GENERATOR = os.path.join(ROOT, "scripts", "xpusim-trace.py")
MODEL = os.path.join(ROOT, "configs", "models", "bert-large.yaml")
BATCH, TOKENS = 8, 384

# Each generation in its best format: (config, chip, year, process, generator flags, note).
GENERATIONS = [
    ("k40", "Kepler K40", 2013, "28 nm", ["--weights", "fp32", "--activations", "fp32", "--kv", "fp32"], "fp32, FFMA"),
    ("p100", "Pascal P100", 2016, "16 nm", ["--weights", "fp16", "--activations", "fp16", "--kv", "fp16"], "fp16, HFMA2"),
    ("p40", "Pascal P40", 2016, "16 nm", ["--weights", "int8", "--activations", "fp32", "--kv", "int8"], "int8, DP4A"),
    ("v100", "Volta V100", 2017, "12 nm", ["--weights", "fp16", "--activations", "fp16", "--kv", "fp16"], "fp16, HMMA"),
    ("t4", "Turing T4", 2018, "12 nm", ["--weights", "int8", "--activations", "fp16", "--kv", "int8"], "int8, IMMA"),
    ("a100", "Ampere A100", 2020, "7 nm", ["--weights", "int8", "--activations", "fp16", "--kv", "int8", "--sparsity", "2:4"],
     "int8, IMMA, 2:4 sparse"),
    ("h100-sxm", "Hopper H100", 2022, "4N", ["--weights", "fp8", "--activations", "bf16", "--kv", "fp8", "--sparsity", "2:4"],
     "fp8, wgmma, 2:4 sparse"),
    ("b200", "Blackwell B200", 2024, "4NP", ["--weights", "nvfp4", "--activations", "bf16", "--kv", "fp8", "--sparsity", "2:4"],
     "fp4 weights (NVFP4), tcgen05, 2:4 sparse"),
]
BASE, NEWEST = "k40", "h100-sxm"

# Beyond the GPUs: the MAGNet-style INT4 accelerator (configs/magnet-int4.yaml) on the same layer in
# int4, at its nominal operating point and at the lowest voltage of its published range.
MAGNET = "magnet-int4"
MAGNET_FLAGS = ["--weights", "int4", "--activations", "int4", "--kv", "int4"]
MAGNET_POINTS = [("0.67 V, 724 MHz (nominal)", []),
                 ("0.46 V, 152 MHz", ["accelerator.voltage=0.46 V", "accelerator.clock=152 MHz"])]

# The seed's decomposition of ~1000x in single-chip inference (Kepler to Hopper).
SEED = {"number format": 16.0, "instruction complexity": 12.5, "process": 2.5, "sparsity": 2.0}


# Every run is a slice of a long one: chips with a power governor (the A100, H100, B200) run at the
# clock their limit sustains, not on the headroom of an idle card.
SUSTAINED = ["power.start=sustained"]
# The layer's FFN up-projection alone (8 x 384 tokens, 1024 -> 4096): the factors on math alone.
GEMM = (BATCH * TOKENS, 4096, 1024)


def run(xpusim, config, flags, sets=(), tmp="."):
    """(seconds, joules, FLOPs) on the config of one layer of the workload (generator flags), or of
    the FFN GEMM alone (flags = ("gemm", dtype, sparse))."""
    t = run_total(xpusim, config, flags, sets, tmp)
    return t["time_s"], t["energy"]["total_j"], t["tflops"] * 1e12 * t["time_s"]


_TOTALS = {}  # (config, flags, sets) -> the report's total: a setup met twice runs once


def run_total(xpusim, config, flags, sets=(), tmp="."):
    """The report's total for run()'s workload (the same setup is simulated once)."""
    key = (config, tuple(flags), tuple(sets))
    if key not in _TOTALS:
        _TOTALS[key] = _simulate(xpusim, config, flags, sets, tmp)
    return _TOTALS[key]


def _simulate(xpusim, config, flags, sets, tmp):
    trace = os.path.join(tmp, f"{config}-{abs(hash((tuple(flags), tuple(sets))))}.yaml")
    if flags[0] == "gemm":
        _, dtype, sparse = flags
        m, n, k = GEMM
        with open(trace, "w") as f:
            f.write(f"xpusim_trace: 1\nops:\n  - {{name: ffn_up, kind: gemm, m: {m}, n: {n}, k: {k}, dtype: {dtype}"
                    + (', sparsity: "2:4"' if sparse else "") + "}\n")
    else:
        cmd = [sys.executable, GENERATOR, MODEL, "--phase", "prefill", "--batch", str(BATCH), "--prompt", str(TOKENS),
               "--layers", "1", "--attention", "unfused", "-o", trace] + flags
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"huangs-law: {config}: {p.stderr.strip()}")
    out = trace + ".out"
    cmd = [xpusim, "run", "-q", "-c", os.path.join(ROOT, "configs", config + ".yaml"), "-t", trace, "--out", out]
    for s in SUSTAINED + list(sets):
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    if p.returncode != 0:
        sys.exit(f"huangs-law: {config} {' '.join(sets)}: {p.stderr.strip()}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)["total"]


def magnet_section(magnet, gens):
    """Markdown lines: the MAGNet-style accelerator on the same layer, against the K40 and the H100 per joule."""
    k40_e, h100_e, h100_t = gens[BASE][1], gens[NEWEST][1], gens[NEWEST][0]
    h100_ops = gens[NEWEST][2]
    lines = ["## Beyond the GPU: a MAGNet-style INT4 accelerator", "",
             "The same layer in int4 (weights, activations and KV) on `configs/magnet-int4.yaml`, a 0.153 mm^2 "
             "5 nm VS-Quant test chip of 1024 4-bit MACs per clock. It is a thousandth of a GPU's area, so its time per "
             "layer says nothing about the architecture; its energy per inference does.", "",
             "| operating point | time per layer | TOPS | energy per layer | of it DRAM | TOPS/W (chip + DRAM) | TOPS/W on chip "
             "| DRAM read per layer | inferences per joule over the K40 | over the H100 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for label, t in magnet:
        e = t["energy"]
        dram = e["classes"]["offchip_memory"]
        lines.append(f"| {label} | {t['time_s'] * 1e3:.1f} ms | {t['tflops']:.2f} | {e['total_j'] * 1e3:.1f} mJ | "
                     f"{dram / e['total_j']:.0%} | {e['tops_per_w']:.1f} | {e['tops_per_w_on_chip']:.1f} | "
                     f"{t['memory']['hbm_read_bytes'] / 1e6:.0f} MB | {k40_e / e['total_j']:.0f}x | "
                     f"{h100_e / e['total_j']:.1f}x |")
    nominal = magnet[0][1]
    e = nominal["energy"]
    on_chip = e["total_j"] - e["classes"]["offchip_memory"]
    # Compulsory traffic: the layer's int4 weights (Q, K, V, output and the two FFN matrices) and
    # its input and output activations, each read or written once.
    tokens, ffn, hidden = GEMM
    compulsory = (4 * hidden * hidden + 2 * hidden * ffn + 2 * tokens * hidden) * 0.5
    read = nominal["memory"]["hbm_read_bytes"]
    lines += ["", f"The H100 runs the layer at {h100_ops / h100_e / 1e12:.2f} TOPS/W (fp8, 2:4 sparse, 700 W governor, "
              f"{h100_t * 1e3:.3f} ms). Per joule the accelerator's gain comes from what it leaves out: no instruction "
              f"fetch or decode per MAC (instruction overhead is {e['classes']['instruction_overhead'] / on_chip:.1%} of "
              "its on-chip energy, against a GPU's per-warp-instruction cost), 4-bit multipliers, operands reused out of "
              "per-PE buffers, and a 0.67 V supply. Its own limit is the DRAM: the buffers (8 KiB of weights and 2 KiB "
              f"of inputs per PE, assumptions) hold little of a BERT-large layer, so it reads "
              f"{read / 1e6:.0f} MB per layer, {read / compulsory:.0f}x the {compulsory / 1e6:.1f} MB of int4 weights "
              f"and input and output activations, and the DRAM is {e['classes']['offchip_memory'] / e['total_j']:.0%} of its "
              "energy. On chip it runs at the efficiency its table was calibrated to (38.7 TOPS/W on a BERT-base layer "
              "at 0.67 V, `scripts/calibrate-magnet.py`), so the on-chip column at the nominal point is near a fitted "
              "figure, not a prediction; at 0.46 V it is the model's prediction of the published 95.6 TOPS/W GEMM "
              "point's trend (docs/validation.md, \"Accelerator\").", ""]
    return lines


def svg_bars(rows):
    """The gain over the first row per generation as bars on a log scale (xpusim.plots), standalone SVG."""
    from xpusim.plots import Axis, bars
    return bars("huangs-law", "Gain over the K40 per generation", [r[0] for r in rows], [r[1] for r in rows],
                Axis("inferences per second over the K40", scale="log"), text=lambda v: f"{v:.0f}x").rstrip("\n")


def chart_data(lines):
    """The lines of a chart's <desc> (a label and its figure each), or all its lines without one."""
    m = re.search(r"<desc[^>]*>(.*?)</desc>", "\n".join(lines), re.S)
    return m.group(1).splitlines() if m else lines


DOC = os.path.join(ROOT, "docs", "huangs-law.md")  # the committed study, which --check compares with


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "huangs-law.md"))
    ap.add_argument("--check", action="store_true",
                    help="after writing --out (elsewhere than docs/), exit 1 where it or its chart differs from "
                         "docs/huangs-law.md and docs/huangs-law.svg")
    a = ap.parse_args()
    if not os.path.exists(a.xpusim):
        sys.exit(f"huangs-law: {a.xpusim}: no xpusim binary (build it, or pass --xpusim)")
    if a.check and os.path.abspath(a.out) == DOC:
        sys.exit("huangs-law: --check compares a fresh run with docs/huangs-law.md; pass --out elsewhere (e.g. /tmp/h.md)")
    out_dir = os.path.dirname(os.path.abspath(a.out))
    if not os.path.isdir(out_dir):
        sys.exit(f"huangs-law: --out {a.out}: the folder {out_dir} does not exist")
    with tempfile.TemporaryDirectory() as tmp:
        gens = {}
        for config, chip, year, node, flags, note in GENERATIONS:
            gens[config] = run(a.xpusim, config, flags, tmp=tmp) + (chip, year, node, note)
            print(f"{chip}: {gens[config][0] * 1e3:.3f} ms", file=sys.stderr)
        best = dict((c, f) for c, _, _, _, f, _ in GENERATIONS)[NEWEST]
        dense = [x for x in best if x not in ("--sparsity", "2:4")]
        fp16 = ["--weights", "fp16", "--activations", "fp16", "--kv", "fp16"]
        fp32 = ["--weights", "fp32", "--activations", "fp32", "--kv", "fp32"]
        lanes = ["tensor_core.macs_per_clock.fp16=0"]
        at28 = ["energy.table=energy/tsmc-4n-h100-at-28nm.yaml"]
        # Each factor: (setup without it, setup with it), on the layer and on its FFN GEMM alone.
        experiments = {
            "sparsity": ((dense, []), (best, []), (("gemm", "fp8", False), []), (("gemm", "fp8", True), [])),
            "number format": ((fp32, []), (dense, []), (("gemm", "fp32", False), []), (("gemm", "fp8", False), [])),
            "instruction complexity": ((fp16, lanes), (fp16, []), (("gemm", "fp16", False), lanes),
                                       (("gemm", "fp16", False), [])),
            "process": ((best, at28), (best, []), (("gemm", "fp8", True), at28), (("gemm", "fp8", True), [])),
        }
        measured = {}
        for name, (lw, lo, gw, go) in experiments.items():
            runs = [run(a.xpusim, NEWEST, f, st, tmp=tmp) for f, st in (lw, lo, gw, go)]
            measured[name] = runs
            print(f"{name}: layer {runs[0][0] / runs[1][0]:.2f}x, GEMM {runs[2][0] / runs[3][0]:.2f}x", file=sys.stderr)
        # Sparsity at a fixed clock: what the governor has to do with it.
        fixed = ["power.mode=fixed_clock"]
        sparse_fixed = run(a.xpusim, NEWEST, ("gemm", "fp8", False), fixed, tmp=tmp)[0] / \
            run(a.xpusim, NEWEST, ("gemm", "fp8", True), fixed, tmp=tmp)[0]
        gemm_k40 = run(a.xpusim, BASE, ("gemm", "fp32", False), tmp=tmp)
        gemm_h100 = run(a.xpusim, NEWEST, ("gemm", "fp8", True), tmp=tmp)
        magnet = [(label, run_total(a.xpusim, MAGNET, MAGNET_FLAGS, sets, tmp=tmp)) for label, sets in MAGNET_POINTS]
    k = gens[BASE]
    lines = ["# Huang's law from mechanism", "",
             f"Generated by `scripts/huangs-law.py` (do not edit by hand). One BERT-large encoder layer, batch "
             f"{BATCH} x {TOKENS} tokens, attention as GEMMs and a softmax (`xpusim-trace.py --attention unfused`, the "
             "form every generation runs), on each GPU generation's config in its best format. Each chip runs as its "
             "config says: the T4, the A100, the H100 and the B200 under their power governors, sustained; the others at the "
             "clock their config names (the K40 its 745 MHz base, the rest their boost).", "",
             "## The generations", "",
             "| chip | year | process | format | time per layer | TFLOP/s | gain over K40 | energy per layer | gain in inferences per joule |",
             "|---|---|---|---|---|---|---|---|---|"]
    bars = []
    for config, chip, year, node, _, note in GENERATIONS:
        t, e, flops, *_ = gens[config]
        lines.append(f"| {chip} | {year} | {node} | {note} | {t * 1e3:.3f} ms | {flops / t / 1e12:.1f} | {k[0] / t:.0f}x | "
                     f"{e * 1e3:.1f} mJ | {k[1] / e:.0f}x |")
        bars.append((chip, k[0] / t))
    total = k[0] / gens[NEWEST][0]
    total_gemm = gemm_k40[0] / gemm_h100[0]
    chart = os.path.splitext(a.out)[0] + ".svg"
    with open(chart, "w") as fh:
        fh.write(svg_bars(bars) + "\n")
    lines += ["", f"![Gain over the K40 per generation]({os.path.basename(chart)})", "",
              "## Attribution on the H100", "",
              f"From the K40 to the H100 the layer runs {total:.0f}x faster, and its FFN GEMM alone "
              f"({GEMM[0]}x{GEMM[1]}x{GEMM[2]}; fp32 on the K40, fp8 2:4 sparse on the H100) {total_gemm:.0f}x. On the H100, "
              "one factor is changed at a time, each between two setups that differ in it alone; the factor is the "
              "ratio of their times (and of their energies):", "",
              "| factor | the two setups on the H100 | layer | layer energy | FFN GEMM | GEMM energy | the seed's | GEMM within 1.5x |",
              "|---|---|---|---|---|---|---|---|"]
    how = {
        "sparsity": "dense against 2:4 sparse weights (fp8)",
        "number format": "fp32 throughout (GEMMs at the TF32 rate) against fp8 weights and KV with bf16 activations, dense",
        "instruction complexity": "fp16 GEMMs on the lanes (HFMA2; `tensor_core.macs_per_clock.fp16=0`) against fp16 on "
                                  "the tensor cores",
        "process": "its logic at 28 nm (`energy/tsmc-4n-h100-at-28nm.yaml`: every on-chip dynamic energy 2.7x) against "
                   "4N, both under the 700 W governor (fp8, 2:4 sparse)",
    }
    product = {"layer": 1.0, "gemm": 1.0}
    for name, runs in measured.items():
        lt, le = runs[0][0] / runs[1][0], runs[0][1] / runs[1][1]
        gt, ge = runs[2][0] / runs[3][0], runs[2][1] / runs[3][1]
        product["layer"] *= lt
        product["gemm"] *= gt
        seed = SEED[name]
        ok = "yes" if max(gt, seed) / min(gt, seed) <= 1.5 else "no"
        lines.append(f"| {name} | {how[name]} | {lt:.2f}x | {le:.2f}x | {gt:.2f}x | {ge:.2f}x | {seed:g}x | {ok} |")
    lines += [f"| rest | the end-to-end gain over the product of the four | {total / product['layer']:.1f}x | | "
              f"{total_gemm / product['gemm']:.1f}x | | | |",
              f"| end to end | K40 in fp32 against the H100 at its best | {total:.0f}x | | {total_gemm:.0f}x | | about "
              "1000x (Kepler ~4 to Hopper ~4000 int8-equivalent TOPS) | |", "",
              "The end-to-end gain is the product of the four factors and the rest by construction; the rest is what "
              "the one-factor changes do not cover: the SM count, the clock, the memory system and the kernels each "
              "chip runs.", "",
              "## Against the seed's factors, from the mechanism", "",
              f"- **Sparsity** ({measured['sparsity'][2][0] / measured['sparsity'][3][0]:.2f}x on the GEMM, "
              f"{measured['sparsity'][0][0] / measured['sparsity'][1][0]:.2f}x on the layer): 2:4 sparse tensor cores "
              f"double the MAC rate of the weight GEMMs only. The GEMM gains less than 2x ({sparse_fixed:.2f}x at a fixed "
              "clock too, so not the governor) because it is short: its operand loads, its epilogue and the kernel's "
              "start and end do not halve. The layer gains less still because its attention GEMMs, norms and softmax are not sparse.",
              f"- **Number format** ({measured['number format'][2][0] / measured['number format'][3][0]:.2f}x on the GEMM): "
              "the seed's 16x is the multiplier's cost, which grows about with the square of the operand width (fp32 to "
              "int8: 4x fewer bits, about 16x cheaper), spent by the designer on more MACs. A config fixes the MACs per "
              "clock each format gets, as the datasheet does (the H100: TF32 to FP8 is 4x), so the simulator sees the "
              "4x the H100 was built with, less the parts of the GEMM that do not speed up, and the energy per GEMM "
              f"falling {measured['number format'][2][1] / measured['number format'][3][1]:.1f}x. The 16x is a design "
              "choice across chips, not a mechanism inside one.",
              f"- **Instruction complexity** ({measured['instruction complexity'][2][0] / measured['instruction complexity'][3][0]:.2f}x "
              "on the GEMM): fp16 on the lanes (HFMA2, one instruction per two multiply-adds per lane) against the "
              "tensor cores (wgmma, one instruction per 64 x N x 16 block), at the H100's 8x peak ratio. The "
              f"energy falls {measured['instruction complexity'][2][1] / measured['instruction complexity'][3][1]:.1f}x: "
              "the instruction overhead (fetch, decode, operand fetch: 30 pJ per lane instruction at 45 nm in the priors, "
              "10.6 pJ on the H100 as fitted to its SGEMM) is amortised over more work. The "
              "seed's 12.5x spans FFMA to IMMA across generations, format included.",
              f"- **Process** ({measured['process'][2][0] / measured['process'][3][0]:.2f}x in time, "
              f"{measured['process'][2][1] / measured['process'][3][1]:.2f}x in energy on the GEMM): the energy table "
              "puts 2.7x between 28 nm and 4N on every on-chip dynamic action (the chain in "
              "`configs/energy/tsmc-16nm.yaml`, set from the seed's 2.5-3x, so not a prediction). Under the 700 W "
              "limit the H100's governor turns that energy into a lower clock, as far as the work is power-bound; "
              "the leakage, idle power and DRAM energy the table keeps dilute it.",
              "",
              *magnet_section(magnet, gens),
              "## Caveats", "",
              "- Energy across generations mixes tables: the H100's is fitted to measured power (`tsmc-4n-h100.yaml`), "
              "the B200's is built on it, and the A100's carries the H100's fitted factor across (`tsmc-7nm-a100.yaml`; "
              "its power-limited GEMM is a held-out check within 2%, docs/validation.md), as the T4's does "
              "(`tsmc-12nm-t4.yaml`, with Turing's voltage floor in its V/f curve; its held-out fp16 GEMMs on zeros "
              "are 9-16% fast at three large shapes of four against DeepBench, 36% at the fourth, and 18% fast against "
              "a forum's figure on random data; its fp32 ones -11% to +10%), as the V100's "
              "does (`tsmc-12nm-v100.yaml`; its held-out SGEMMs at the 300 W limit within 7% at large shapes). Each "
              "carries both of the H100's factors: k on every on-chip action, and z on a SIMT lane instruction's "
              "overhead (fitted on the H100's SGEMM, which k alone priced at 1.9x the card's limit). The K40, P100 "
              "and P40 keep unfitted priors. Their energies, and so every per-joule gain over the K40, are the least "
              "certain column here.",
              "- The older chips' GEMM times carry their validation errors (`scripts/check-generations.py`, "
              "docs/validation.md): the K40's large SGEMMs are within a few percent of cuBLAS's, its schedulers' issue "
              "limit modelled, but its small ones run faster than cuBLAS 7.0's did; the V100's fp16 GEMMs are "
              "also fast, the P100's fp32 close, and the P40's chip (as the Titan Xp) within 5% in fp32 and 11% in int8 "
              "on large shapes.",
              "- The K40, P100 and P40 run at a fixed clock (no V/f curve or power fit for them); the V100, T4, "
              "A100, H100 and B200 under their power governors, sustained. The T4's IMMA kernels are the model's; the "
              "cuBLAS of its day ran int8 GEMMs in the plain row- and column-major layouts on DP4A-class kernels "
              "(DeepBench's T4 inference GEMMs: 22-23 TOPS), so this row is what the tensor cores allow, not what "
              "a 2018 library delivered.",
              "- The B200 row is the extension to fp4: its weights in NVFP4, beside fp8 KV."]
    text = "\n".join(lines) + "\n"
    with open(a.out, "w") as fh:
        fh.write(text)
    print(text)
    if a.check:
        stale = []
        doc_chart = os.path.splitext(DOC)[0] + ".svg"
        for made, kept in ((a.out, DOC), (chart, doc_chart)):
            with open(made) as fm, open(kept) as fk:
                # The page links its chart by the name written beside it.
                made_lines = fm.read().replace(f"]({os.path.basename(chart)})", f"]({os.path.basename(doc_chart)})").splitlines()
                kept_lines = fk.read().splitlines()
            if made == chart:  # the chart's figures (its <desc>), not matplotlib's coordinates
                made_lines, kept_lines = (chart_data(x) for x in (made_lines, kept_lines))
            if made_lines != kept_lines:
                first = next((i for i, (m, k) in enumerate(zip(made_lines, kept_lines)) if m != k),
                             min(len(made_lines), len(kept_lines)))
                stale.append(f"{os.path.relpath(kept, ROOT)} differs from this run from line {first + 1} "
                             "(run scripts/huangs-law.py to regenerate it)")
        for line in stale:
            print(f"huangs-law: {line}", file=sys.stderr)
        if stale:
            sys.exit(1)
        print("huangs-law: docs/huangs-law.md and its chart match this run")


if __name__ == "__main__":
    main()
