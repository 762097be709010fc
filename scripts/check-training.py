#!/usr/bin/env python3
"""Published training throughputs against xpusim: each case generates a training step with the
layout its source ran (python/xpusim/workloads/training.py), simulates it on the source's
system, and sets the simulated step time beside the published one, in the source's own unit
(seconds per step, TFLOP/s per GPU in model or hardware FLOPs, tokens per second per GPU).

None of these figures sets a parameter: they are validation (docs/validation.md, "Training
steps"). Finished cases are kept in OUT/results.jsonl and not run again (an interrupted run
loses no finished case); --only picks cases by id.

  scripts/check-training.py --xpusim build/xpusim --out out/check-training
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from xpusim.workloads import generate, load_card, training as TRAINING  # noqa: E402
from xpusim.workloads.cards import dump_jsonl  # noqa: E402

A100_PEAK, H100_PEAK = 312e12, 989.4e12  # dense bf16 tensor FLOP/s (datasheets)

# id, source, card, system config and its --set, generator flags, published value and unit.
# unit: step_s (seconds per step), model_tflops (model FLOPs per second per GPU, no
# recomputation counted), hw_tflops_full (FLOPs with full recomputation, Narayanan et al.'s eq. 3),
# tokens (tokens per second per GPU).
# The Llama 3 paper's 16,384-GPU layout (its Table 4), shared by the two cases that run it.
LLAMA3_16K = ["--prompt", "8192", "--batch", "16", "--microbatches", "16", "--tp", "8", "--pp", "16", "--dp", "128",
              "--sequence-parallel", "--recompute", "none", "--attention", "fused", "--zero", "2", "--mirror-replicas"]

CASES = [
    {"id": "22b-tp8-sp-selective", "source": "Korthikanti et al. 2022, Table 5 (Present Work)",
     "card": "gpt-22b", "config": "systems/dgx-a100.yaml", "sets": [],
     "args": ["--prompt", "2048", "--batch", "4", "--tp", "8", "--sequence-parallel", "--recompute", "selective",
              "--attention", "unfused"],
     "published": 1.10, "unit": "step_s"},
    {"id": "22b-tp8-full-recompute", "source": "Korthikanti et al. 2022, Table 5 (Full Recompute)",
     "card": "gpt-22b", "config": "systems/dgx-a100.yaml", "sets": [],
     "args": ["--prompt", "2048", "--batch", "4", "--tp", "8", "--recompute", "full", "--attention", "unfused"],
     "published": 1.42, "unit": "step_s"},
    {"id": "1.7b-dp32", "source": "Narayanan et al. 2021, Table 1 (1.7B, 32 GPUs)",
     "card": "gpt-1.7b", "config": "systems/dgx-a100.yaml", "sets": ["system.domains=4"],
     # Batch 512 over 32 replicas; the microbatch size is not published (assumed 4). Megatron-LM
     # of 2021 added each weight gradient into its fp32 main_grad with a hook (an add kernel);
     # the fused accumulation arrived in 2022.
     "args": ["--prompt", "2048", "--batch", "16", "--microbatches", "4", "--dp", "32", "--recompute", "full",
              "--attention", "unfused", "--grad-accumulation", "add"],
     "published": 137, "unit": "hw_tflops_full"},
    {"id": "llama2-7b-fp8-dp8", "source": "NVIDIA NeMo 24.07 performance summary (LLAMA2-7B, 8 GPUs, FP8)",
     "card": "llama-2-7b", "config": "systems/dgx-h100.yaml", "sets": [],
     # GBS 128, MBS 1, TP 1, PP 1 on 8 GPUs: DP 8, 16 microbatches per replica; NeMo's distributed
     # optimiser (ZeRO-1); recomputation not stated (none assumed).
     "args": ["--prompt", "4096", "--batch", "16", "--microbatches", "16", "--dp", "8", "--zero", "1",
              "--weights", "fp8"],
     "published": 16934, "unit": "tokens"},
    {"id": "1.7b-4k-dp48-h100", "source": "Megatron-LM README, H100 weak scaling (1.7B, 48 GPUs)",
     "card": "gpt-1.7b-4k", "config": "systems/dgx-h100.yaml", "sets": ["system.domains=6"],
     # Batch 192 over 48 replicas; microbatch size, recomputation and precision not published
     # (assumed 1, none, bf16; the distributed optimiser as the README's flags suggest).
     "args": ["--prompt", "4096", "--batch", "4", "--microbatches", "4", "--dp", "48", "--zero", "1"],
     "published": 408.8, "unit": "model_tflops"},
    {"id": "175b-tp8-pp8-v3", "source": "Korthikanti et al. 2022, Table 5 (175B, 64 GPUs, Present Work)",
     "card": "gpt-175b-megatron", "config": "systems/dgx-a100.yaml", "sets": ["system.domains=8"],
     "args": ["--prompt", "2048", "--batch", "64", "--microbatches", "64", "--tp", "8", "--pp", "8", "--schedule",
              "interleaved", "--virtual-stages", "3", "--sequence-parallel", "--recompute", "selective",
              "--attention", "unfused"],
     "run": ["--limit", "cta_steps=1e11"], "published": 13.75, "unit": "step_s"},
    {"id": "175b-1024-megascale", "source": "MegaScale (Jiang et al. 2024), Table 2 (Megatron-LM, 1024 GPUs)",
     "card": "gpt-175b-megascale", "config": "systems/dgx-a100.yaml", "sets": ["system.domains=128"],
     # Batch 768 over DP 16, microbatch 1 (assumed), 6 virtual stages, SP and ZeRO-2 as the
     # paper describes its runs; selective recomputation assumed (not stated).
     "args": ["--prompt", "2048", "--batch", "48", "--microbatches", "48", "--tp", "8", "--pp", "8", "--dp", "16",
              "--schedule", "interleaved", "--virtual-stages", "6", "--sequence-parallel", "--recompute", "selective",
              "--attention", "unfused", "--zero", "2", "--mirror-replicas"],
     "run": ["--limit", "cta_steps=1e11"], "published": 11.9, "unit": "step_s"},
    {"id": "405b-16384-llama3", "source": "Llama 3 (Llama Team 2024), Table 4 (16,384 GPUs, 8K sequence)",
     "card": "llama-3-405b", "config": "systems/dgx-h100-superpod.yaml", "sets": ["system.domains=2048"],
     # TP 8 x PP 16 x DP 128, 16 sequences of 8192 per replica (16M tokens a step), no activation
     # recomputation, bf16, FSDP sharding gradients and optimiser state with the parameters kept
     # from forward to backward (ZeRO-2's traffic: a reduce-scatter and an all-gather a step), as
     # section 3.3.2 describes. Assumed: microbatch 1 and 1F1B (the paper's interleaved schedule
     # with its flexible N gives no V), the generator's layer split (the 14 first stages 8 layers,
     # the last two 7, where the paper has 7 on the first and the last), the SuperPOD's
     # non-blocking fat tree (the paper's cluster is 1:7 oversubscribed above pods of 3,072 GPUs).
     "args": LLAMA3_16K,
     "run": ["--limit", "cta_steps=1e11"], "published": 400, "unit": "model_tflops"},
    {"id": "405b-16384-llama3-v2", "source": "Llama 3 (Llama Team 2024), Table 4 (16,384 GPUs, 8K sequence)",
     "card": "llama-3-405b", "config": "systems/dgx-h100-superpod.yaml", "sets": ["system.domains=2048"],
     # As above with the interleaved schedule the paper runs, at 2 virtual stages: the paper does
     # not give V; 2 is its Figure 6's and the fewest that interleave (chosen after the 1F1B case
     # had run: docs/validation.md reports both).
     "args": LLAMA3_16K + ["--schedule", "interleaved", "--virtual-stages", "2"],
     "run": ["--limit", "cta_steps=1e11"], "published": 400, "unit": "model_tflops"},
]


def arg(flag, args, default=None):
    return type(default)(args[args.index(flag) + 1]) if flag in args else default


def hardware_flops_full(c, seq, tokens):
    """Narayanan et al. 2021, eq. 3: 96 B s l h^2 (1 + s / 6h + V / 16lh), the FLOPs of a step
    with full recomputation (B s = tokens)."""
    h, L, V = c["hidden"], c["layers"], c["vocab"]
    return 96 * tokens * L * h * h * (1 + seq / (6 * h) + V / (16 * L * h))


def measure(case, xpusim, out):
    card = os.path.join(ROOT, "configs", "models", case["card"] + ".yaml")
    c = load_card(card)
    args = [card, "--phase", "train"] + case["args"]
    trace = generate(args)
    folder = os.path.join(out, case["id"])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "trace.jsonl")  # JSON Lines: a pipeline's tens of thousands of ops load fast
    with open(path, "w") as f:
        f.write(dump_jsonl(trace))
    cmd = [xpusim, "run", "-q", "--config", os.path.join(ROOT, "configs", case["config"]), "--trace", path,
           "--out", os.path.join(folder, "run"), "--set", "system.detail=representative"]
    for s in case["sets"]:
        cmd += ["--set", s]
    cmd += case.get("run", [])
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    if r.returncode:
        sys.exit(f"check-training: {case['id']}: {r.stderr.strip()}")
    with open(os.path.join(folder, "run", "report.json")) as f:
        rep = json.load(f)
    step = rep["total"]["time_s"]
    gpus = rep.get("system", {}).get("gpus", 1)
    seq = arg("--prompt", case["args"], 2048)
    tokens = trace["tokens"]
    value = {"step_s": step,
             "model_tflops": TRAINING.model_flops(c, seq, tokens) / step / gpus / 1e12,
             "hw_tflops_full": hardware_flops_full(c, seq, tokens) / step / gpus / 1e12,
             "tokens": tokens / step / gpus}[case["unit"]]
    peak = A100_PEAK if "a100" in case["config"] else H100_PEAK
    return {"id": case["id"], "source": case["source"], "gpus": gpus, "unit": case["unit"],
            "published": case["published"], "simulated": value, "step_s": step,
            "mfu": TRAINING.model_flops(c, seq, tokens) / step / gpus / peak,
            "error": (value - case["published"]) / case["published"],
            "wall_s": time.time() - t0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"), help="the xpusim binary")
    ap.add_argument("--out", default="out/check-training", help="folder for traces, reports and results.jsonl")
    ap.add_argument("--only", action="append", default=[], help="run only this case id (repeatable)")
    a = ap.parse_args()
    ids = {c["id"] for c in CASES}
    for x in a.only:
        if x not in ids:
            ap.error(f"--only {x}: no such case (cases: {', '.join(sorted(ids))})")
    os.makedirs(a.out, exist_ok=True)
    results_path = os.path.join(a.out, "results.jsonl")
    done = {}
    if os.path.exists(results_path):
        with open(results_path) as f:
            for line in f:
                r = json.loads(line)
                done[r["id"]] = r
    for case in CASES:
        if (a.only and case["id"] not in a.only) or case["id"] in done:
            continue
        r = measure(case, a.xpusim, a.out)
        done[r["id"]] = r
        with open(results_path, "a") as f:
            f.write(json.dumps(r) + "\n")
        print(f"{r['id']}: {r['simulated']:.4g} against {r['published']:.4g} ({r['error']:+.1%}), "
              f"{r['wall_s']:.0f} s", flush=True)
    units = {"step_s": "s/step", "model_tflops": "model TFLOP/s/GPU", "hw_tflops_full": "TFLOP/s/GPU (full recompute)",
             "tokens": "tokens/s/GPU"}
    print("\n| case | source | GPUs | published | xpusim | error | xpusim MFU | wall |")
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES:
        r = done.get(case["id"])
        if r:
            print(f"| {r['id']} | {r['source']} | {r['gpus']} | {r['published']:.4g} {units[r['unit']]} | "
                  f"{r['simulated']:.4g} | {r['error']:+.1%} | {r['mfu']:.1%} | {r['wall_s']:.0f} s |")
    errs = [abs(r["error"]) for r in done.values()]
    if errs:
        print(f"\n{len(errs)} cases: mean |error| {sum(errs) / len(errs):.1%}, "
              f"{sum(e <= 0.10 for e in errs)} within 10%")


if __name__ == "__main__":
    main()
