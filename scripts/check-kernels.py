#!/usr/bin/env python3
"""The simulator against measured serving kernels: skinny bf16 GEMMs (Llama-2 projections,
M = 1..1024), fp8 GEMMs on DeepSeek-V3 shapes, square GEMMs 256-2048 and decode attention, as
`scripts/measure/serving_kernels.py` and `gpu_microbench.py` measured them on an H100 (each
timed as calls back to back from a CUDA graph, each call on a different copy of its operands so
that it meets them in HBM, as a model's layers do: the `*-cold.csv` files). Each shape runs as
three dependent calls in one trace (each op has its own operands), and the simulated time per
call is a kernel and its launch gap. The `rows` group: LayerNorm, RMSNorm, softmax, row sums and
adds over M x N as `scripts/measure/row_kernels.py --flush` timed them (each after an L2 flush,
kernel durations by the profiler's timestamps), against the second call's kernel time; the
`fused` group likewise, torch.compile's fused residual add + RMSNorm (`fused_norm.py`); the
`fused_graph` group the same kernel per call from a CUDA graph (`fusion.csv`); the `gemm_costs`
group, small GEMM kernels alone against K, after an L2 flush (`gemm_kernel_costs.py`); the
`gemm_parts` group, the same kernels back to back after a flush (`gemm_cold_parts.py`: each GEMM
the second of its call, its code warm and its operands in HBM, as the simulated second call),
whose bf16 64^3 row set `kernels.gemm.cta_setup` (marked "fitted"; the others are held out). The
`train_*` groups, a training step's kernels measured on an H200 (`scripts/measure/
training_kernels.py`, docs/validation/measured/h200-2026-11-27, all held out; run them with
`-c configs/h200.yaml`): `train_gemm`, every linear layer's three GEMMs; `train_attention`,
cuDNN's fused attention forward and backward; `train_attention_fa2`, PyTorch's FlashAttention-2
(not the kernel modelled); `train_adam`, fused AdamW; `train_wgrad_accum` (measured on an H100,
docs/validation/measured/h100-sxm-2026-11-27-training), the weight-gradient GEMMs writing bf16,
writing fp32 and adding into an fp32 gradient (Megatron-LM's gradient-accumulation fusion), and
the unfused form's add. Prints a Markdown table with the error of
each shape and a summary per group; asserts nothing.

  scripts/check-kernels.py                         h100-sxm against docs/validation/measured/h100-sxm-2026-11-24
  scripts/check-kernels.py --group skinny --set kernels.gemm.split_k=false
  scripts/check-kernels.py -c configs/h200.yaml --measured docs/validation/measured/h200-2026-11-25
                                                   every file from one directory (another card's)
  scripts/check-kernels.py -c configs/h200.yaml --group train_gemm --group train_attention
  scripts/check-kernels.py --group train_wgrad_accum
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from xpusim.workloads.train_layers import backward_layer, grad_accumulation_add  # noqa: E402
MEASURED = "docs/validation/measured/h100-sxm-2026-11-24"
# Row-wise kernels (scripts/measure/row_kernels.py --flush): kernel durations by the profiler's
# timestamps, each call after the L2 was flushed, as the simulator's fresh operands start in HBM.
ROWS = "docs/validation/measured/h100-sxm-2026-11-25/rows-flushed.csv"
# torch.compile's fused residual add + RMSNorm over hidden 8192 (scripts/measure/fused_norm.py),
# timed as the row-wise kernels are.
FUSED = "docs/validation/measured/h100-sxm-2026-11-25/fused-norm.csv"
# Small GEMM kernels alone against K (scripts/measure/gemm_kernel_costs.py).
GEMM_COSTS = "docs/validation/measured/h100-sxm-2026-11-26/gemm-kernel-costs.csv"
# The same kernels back to back after a flush (scripts/measure/gemm_cold_parts.py).
GEMM_PARTS = "docs/validation/measured/h100-sxm-2026-11-26/gemm-cold-parts.csv"
# The row kernels.gemm.cta_setup was fitted to (configs/h100-sxm.yaml).
GEMM_PARTS_FITTED = {("bf16", 64, 64, 64)}
# The decode steps' projections of the published serving rows (Llama-3-8B bf16, Llama-3-70B fp8
# TP2), 1-64 sequences, weights cold (scripts/measure/serving_kernels.py decode-*-cold).
DECODE = "docs/validation/measured/h100-sxm-2026-11-27"
# A training step's GEMMs in their three roles and fused attention's forward and backward, at the
# published training rows' shapes (scripts/measure/training_kernels.py), measured on an H200.
TRAIN = "docs/validation/measured/h200-2026-11-27"
# The weight gradients into an fp32 gradient buffer, measured on an H100.
TRAIN_H100 = "docs/validation/measured/h100-sxm-2026-11-27-training"
ROW_KINDS = {"layer_norm": "layernorm", "rms_norm": "layernorm", "softmax": "softmax", "sum": "reduction", "add": "elementwise"}
CALLS = 3


# Each group's measurements, by file name in a card's directory.
GROUP_FILES = {"skinny": "skinny-cold.csv", "fp8": "fp8-cold.csv", "square": "square-cold.csv",
               "attention": "attention-cold.csv", "rows": "rows-flushed.csv", "fused": "fused-norm.csv",
               "fused_graph": "fusion.csv", "gemm_costs": "gemm-kernel-costs.csv", "gemm_parts": "gemm-cold-parts.csv",
               "decode_skinny": "decode-skinny-cold.csv", "decode_fp8": "decode-fp8-cold.csv",
               "train_gemm": "gemm-train.csv", "train_attention": "attention-cudnn.csv",
               "train_attention_fa2": "attention-train.csv", "train_adam": "adam.csv",
               "train_wgrad_accum": "wgrad-accum.csv"}
GROUPS = list(GROUP_FILES)


def gemm_op(dtype, m, n, k):
    """A GEMM op of the measured format as the trace names it: PyTorch's fp8 GEMMs
    (torch._scaled_mm) are e4m3 with a bf16 output."""
    op = dict(kind="gemm", m=int(m), n=int(n), k=int(k), dtype={"fp8": "fp8_e4m3"}.get(dtype, dtype))
    if dtype == "fp8":
        op["out_dtype"] = "bf16"
    return op


def cases(groups, files):
    """(group, label, op fields without name and deps, measured seconds per call). `files` maps
    each group to its CSV, relative to the repository."""
    for g in [g for g in ("skinny", "decode_skinny") if g in groups]:
        for r in csv.DictReader(open(os.path.join(ROOT, files[g]))):
            yield g, f"{r['model']} {r['proj']} {r['m']}x{r['n']}x{r['k']}", \
                dict(kind="gemm", m=int(r["m"]), n=int(r["n"]), k=int(r["k"]), dtype="bf16"), float(r["best_s"])
    for g in [g for g in ("fp8", "decode_fp8") if g in groups]:
        for r in csv.DictReader(open(os.path.join(ROOT, files[g]))):
            yield g, f"fp8 {r['m']}x{r['n']}x{r['k']}", \
                dict(kind="gemm", m=int(r["m"]), n=int(r["n"]), k=int(r["k"]), dtype="fp8_e4m3", out_dtype="bf16"), float(r["best_s"])
    if "square" in groups:
        for r in csv.DictReader(open(os.path.join(ROOT, files["square"]))):
            if r["dtype"] in ("bf16", "fp16", "fp8") and int(r["m"]) <= 2048 and r.get("best_s"):
                yield "square", f"{r['dtype']} {r['m']}^3", gemm_op(r["dtype"], r["m"], r["n"], r["k"]), float(r["best_s"])
    if "attention" in groups:
        for r in csv.DictReader(open(os.path.join(ROOT, files["attention"]))):
            if r["phase"] != "decode" or not r.get("best_s"):
                continue
            yield "attention", f"decode {r['model']} b{r['batch']} kv{r['kv_len']}", \
                dict(kind="attention", batch=int(r["batch"]), heads=int(r["q_heads"]), kv_heads=int(r["kv_heads"]),
                     seq_q=1, seq_kv=int(r["kv_len"]), head_dim=128, dtype="fp16"), float(r["best_s"])
    if "rows" in groups:
        for r in csv.DictReader(open(os.path.join(ROOT, files["rows"]))):
            op = dict(kind=ROW_KINDS[r["op"]], shape=f"[{r['m']}, {r['n']}]", dtype="fp16")
            if r["op"] == "rms_norm":
                op["norm"] = "rms"
            yield "rows", f"{r['op']} {r['m']}x{r['n']}", op, float(r["median_us"]) * 1e-6
    if "fused" in groups:
        for r in csv.DictReader(open(os.path.join(ROOT, files["fused"]))):
            if r["operands"] != "flushed":
                continue
            op = dict(kind="layernorm", shape=f"[{r['tokens']}, 8192]", inputs=2, norm="rms", dtype="fp16")
            yield "fused", f"add + rms_norm {r['tokens']}x8192", op, float(r["median_us"]) * 1e-6
    if "gemm_costs" in groups:
        # Small GEMM kernels alone against K (scripts/measure/gemm_kernel_costs.py): each call after
        # an L2 flush, the kernel durations by the profiler's timestamps, split-K's two kernels
        # summed (the gap between them left out, where the simulated op has it).
        per = {}
        for r in csv.DictReader(open(os.path.join(ROOT, files["gemm_costs"]))):
            key = (r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]))
            per.setdefault(key, []).append(r)
        for (dt, m, n, k), rs in per.items():
            two = " (2 kernels)" if len(rs) > 1 else ""
            yield "gemm_costs", f"{dt} {m}x{n}x{k}{two}", gemm_op(dt, m, n, k), sum(float(r["median_us"]) for r in rs) * 1e-6
    if "gemm_parts" in groups:
        # The second kernel of each call (code warm, operands cold); a 1-element add beside them.
        for r in csv.DictReader(open(os.path.join(ROOT, files["gemm_parts"]))):
            if r["call"] != "cold" or r["position"] != "1":
                continue
            dt, m, n, k = r["dtype"], int(r["m"]), int(r["n"]), int(r["k"])
            if dt == "add":
                yield "gemm_parts", "add 1 element", dict(kind="elementwise", shape="[1]", dtype="fp32"), float(r["median_us"]) * 1e-6
                continue
            fitted = " (fitted)" if (dt, m, n, k) in GEMM_PARTS_FITTED else ""
            yield "gemm_parts", f"{dt} {m}x{n}x{k}{fitted}", gemm_op(dt, m, n, k), float(r["median_us"]) * 1e-6
    if "fused_graph" in groups:
        # The same kernel in bf16 from a CUDA graph, one tensor set repeated (partly L2-warm on the
        # card): fusion.csv of 2026-11-24, per call as the GEMM groups are timed.
        for r in csv.DictReader(open(os.path.join(ROOT, files["fused_graph"]))):
            if r["mode"] != "torch.compile" or not r["op"].startswith("residual add + rmsnorm"):
                continue
            op = dict(kind="layernorm", shape=f"[{r['tokens']}, 8192]", inputs=2, norm="rms", dtype="bf16")
            yield "fused_graph", f"add + rms_norm {r['tokens']}x8192 (graph)", op, float(r["best_s"])


def train_cases(groups, files):
    """The training groups: each GEMM per call from a CUDA graph of 20 (`best_us`); each fused
    attention's forward kernel and its backward's three (the dO.O row sums, the dQ/dK/dV loop,
    dQ's conversion) by the profiler's timestamps, cuDNN's (the kernel Transformer Engine runs,
    of the FlashAttention-3 kind the simulator models) and PyTorch's FlashAttention-2 (mma.sync,
    which the simulator does not model: shown for contrast). The backward is simulated as the
    training generator emits it (python/xpusim/workloads/train_layers.py backward_layer)."""
    if "train_gemm" in groups:
        for r in csv.DictReader(open(os.path.join(ROOT, files["train_gemm"]))):
            if not r.get("best_us"):
                continue
            yield "train_gemm", f"{r['model']} {r['dtype']} {r['layer']} {r['role']} {r['m']}x{r['n']}x{r['k']}", \
                gemm_op(r["dtype"], r["m"], r["n"], r["k"]), float(r["best_us"]) * 1e-6
    if "train_adam" in groups:
        # PyTorch's fused AdamW (one multi-tensor kernel) against the generator's adam op.
        for r in csv.DictReader(open(os.path.join(ROOT, files["train_adam"]))):
            if r["mode"] == "fused" and r.get("best_us"):
                op = dict(kind="elementwise", shape=f"[{r['params']}]", inputs=4, outputs=3, flops_per_element=12, dtype="fp32")
                yield "train_adam", f"AdamW, {r['params']} fp32 parameters", op, float(r["best_us"]) * 1e-6
    if "train_wgrad_accum" in groups:
        # cublasGemmEx as Megatron-LM's wgrad_gemm_accum_fp32 calls it (beta 1 into fp32), the same
        # call with beta 0 writing bf16 or fp32, and main_grad.add_(grad) as the generator emits it.
        for r in csv.DictReader(open(os.path.join(ROOT, files["train_wgrad_accum"]))):
            if not r.get("best_us"):
                continue
            v = r["variant"]
            if v == "main_grad_add":
                op = {k: val for k, val in grad_accumulation_add("g", int(r["m"]), int(r["n"]), "bf16").items() if k != "name"}
            else:
                op = dict(gemm_op("bf16", r["m"], r["n"], r["k"]), out_dtype="bf16" if v == "bf16_out" else "fp32")
                if v == "fp32_accumulate":
                    op["accumulate"] = True
            yield "train_wgrad_accum", f"{r['model']} {r['layer']} {v} {r['m']}x{r['n']}x{r['k']}", op, float(r["best_us"]) * 1e-6
    for g, backend in (("train_attention", "cudnn"), ("train_attention_fa2", "flash")):
        if g not in groups:
            continue
        for r in csv.DictReader(open(os.path.join(ROOT, files[g]))):
            if not r.get("kernels"):
                continue
            ks = {}
            for part in r["kernels"].split(" | "):
                name, us = part.rsplit(": ", 1)
                ks[name] = float(us.split(" us")[0])
            fwd = sum(t for n, t in ks.items() if "fprop" in n or "flash_fwd" in n)
            bwd = sum(t for n, t in ks.items() if any(w in n for w in ("bprop", "flash_bwd", "dot_do_o", "convert_dq")))
            B, H, S, d = int(r["batch"]), int(r["heads"]), int(r["seq"]), int(r["head_dim"])
            op = dict(name="attn", kind="attention", batch=B, heads=H, seq_q=S, seq_kv=S, head_dim=d, causal=True, dtype="bf16")
            # The backward as the training generator emits it, every kernel of it.
            bwd_ops = backward_layer([op], {"hidden": H * d}, SimpleNamespace(activations="bf16", weights="bf16", tp=1, sequence_parallel=False),
                                     SimpleNamespace(batch=B, prompt=S))
            label = f"{backend} {r['model']} b{B} h{H} s{S} d{d}"
            fields = lambda o: {k: v for k, v in o.items() if k not in ("name", "deps")}  # noqa: E731 (each call names its own)
            yield g, label + " forward", fields(op), fwd * 1e-6
            yield g, label + f" backward ({len(bwd_ops)} kernels)", [fields(o) for o in bwd_ops], bwd * 1e-6


def flow(d):
    """An op as a YAML flow mapping (booleans as YAML writes them)."""
    return "{" + ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in d.items()) + "}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build/xpusim"))
    ap.add_argument("-c", "--config", default="configs/h100-sxm.yaml")
    ap.add_argument("--measured", help="a directory holding every group's CSV (default: the H100's files of "
                    "2026-11-24 and, for rows/fused/gemm_costs/gemm_parts/decode_*, those named at the top of this script)")
    ap.add_argument("--group", action="append", choices=GROUPS,
                    help="groups to run (repeatable; default all)")
    ap.add_argument("--set", action="append", default=[], help="passed to xpusim run --set")
    args = ap.parse_args()
    groups = args.group or ["skinny", "fp8", "square", "attention", "rows", "fused", "fused_graph"]
    files = {g: os.path.join(args.measured or MEASURED, f) for g, f in GROUP_FILES.items()}
    if not args.measured:
        files.update({g: os.path.join(TRAIN, GROUP_FILES[g]) for g in ("train_gemm", "train_attention", "train_attention_fa2", "train_adam")})
        files["train_wgrad_accum"] = os.path.join(TRAIN_H100, GROUP_FILES["train_wgrad_accum"])
        files.update(rows=ROWS, fused=FUSED, gemm_costs=GEMM_COSTS, gemm_parts=GEMM_PARTS,
                     decode_skinny=os.path.join(DECODE, GROUP_FILES["decode_skinny"]),
                     decode_fp8=os.path.join(DECODE, GROUP_FILES["decode_fp8"]))
    for g in groups:
        if not os.path.exists(os.path.join(ROOT, files[g])):
            sys.exit(f"check-kernels.py: group {g} needs {files[g]}, which does not exist")
    todo = list(cases(groups, files)) + list(train_cases(groups, files))
    if not todo:
        sys.exit("no measured cases found")
    lines = ["xpusim_trace: 1", "name: check-kernels", "ops:"]
    prev = None
    for i, (_, _, op, _) in enumerate(todo):
        for c in range(CALLS):
            for j, part in enumerate(op if isinstance(op, list) else [op]):  # a call of several kernels
                name = f"c{i}_{c}" + (f"_p{j}" if j else "")
                fields = dict(name=name, **part)
                if prev:
                    fields["deps"] = f"[{prev}]"
                lines.append(f"  - {flow(fields)}")
                prev = name
    lines.append(f"  - {{name: end, kind: delay, duration: 1 ns, deps: [{prev}]}}")
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.yaml")
        with open(trace, "w") as f:
            f.write("\n".join(lines) + "\n")
        cmd = [args.xpusim, "run", "-q", "-c", args.config, "-t", trace, "--out", os.path.join(tmp, "out")]
        for s in args.set:
            cmd += ["--set", s]
        env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            sys.exit(" ".join(cmd) + " failed:\n" + p.stderr)
        ops = {o["name"]: o for o in json.load(open(os.path.join(tmp, "out", "report.json")))["ops"]}
    print("| group | shape | measured us | simulated us | error | kernel as lowered |")
    print("|---|---|---|---|---|---|")
    errs = {}
    for i, (group, label, _, meas) in enumerate(todo):
        if group in ("rows", "fused", "gemm_costs", "gemm_parts"):  # measured: the kernel alone, by the profiler's timestamps
            sim = ops[f"c{i}_1"]["time_s"]
        else:  # per call: from the start of the second call to the start of the one after the third
            nxt = ops[f"c{i + 1}_0"] if f"c{i + 1}_0" in ops else ops["end"]
            sim = (nxt["start_s"] - ops[f"c{i}_1"]["start_s"]) / (CALLS - 1)
        err = sim / meas - 1
        errs.setdefault(group, []).append(err)
        desc = ops[f"c{i}_1"]["lowering"]["description"]
        if isinstance(todo[i][2], list):  # a call of several kernels: the longest one's
            parts = [ops[f"c{i}_1"]] + [ops[f"c{i}_1_p{j}"] for j in range(1, len(todo[i][2]))]
            desc = max(parts, key=lambda o: o["time_s"])["lowering"]["description"] + f" (the longest of {len(parts)})"
        print(f"| {group} | {label} | {meas * 1e6:.2f} | {sim * 1e6:.2f} | {err * 100:+.0f}% | {desc} |")
    print()
    print("| group | shapes | mean abs error | worst | within 15% |")
    print("|---|---|---|---|---|")
    for g, e in errs.items():
        worst = max(e, key=abs)
        print(f"| {g} | {len(e)} | {sum(abs(x) for x in e) / len(e) * 100:.0f}% | {worst * 100:+.0f}% | "
              f"{sum(abs(x) <= 0.15 for x in e)} of {len(e)} |")


if __name__ == "__main__":
    main()
