#!/usr/bin/env python3
"""xpusim serve against published in-flight-batching throughput (TensorRT-LLM's trtllm-bench).

Reads docs/validation/published/trtllm-throughput.csv (each row: its source, the system and the
config that stands for it, model card, TP, formats, config overrides, input and output lengths,
the request count and the published total output tokens per second) and runs each row as
trtllm-bench runs it: every request queued at time 0 with the same lengths, batched in flight
(`--scheduler chunked`: decodes and prefills in the same steps under a token budget), with the
batch and token limits trtllm-bench derives from the KV cache that fits (below) and 95% of the
memory left after the weights for the cache. No parameter of the simulator was set from these
rows: they are held out. Prints a Markdown table with the error per row; asserts nothing.

trtllm-bench's limits (tensorrt_llm/bench/build/tuning.py): R = the requests whose KV cache of
ISL + OSL tokens fits in 95% of the memory the weights leave; max batch size = min(R, 4096)
rounded up (to 32 under 256, 128 under 1024, else 256; at least 64); max tokens per step =
min(that batch x (1 + ISL / OSL), 32768) rounded up (to 256 under 4096, at least 2048; 512
under 8192; else 1024).

  scripts/check-serving.py [--xpusim build/xpusim] [--rows 0,3,6] [--requests N] [--out DIR]
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "trtllm-throughput.csv")
SERVE = os.path.join(ROOT, "scripts", "xpusim-serve.py")


def round_up(x, quantum):
    return quantum * math.ceil(x / quantum)


def bench_limits(kv_requests, isl, osl):
    """trtllm-bench's max batch size and max tokens per step for R requests' worth of KV cache."""
    bs = min(kv_requests, 4096)
    max_bs = max(64, round_up(bs, 32)) if bs < 256 else round_up(bs, 128 if bs < 1024 else 256)
    tokens = min(bs * (1 + isl / osl), 32768)
    max_tokens = max(2048, round_up(tokens, 256)) if tokens < 4096 else round_up(tokens, 512 if tokens < 8192 else 1024)
    return max_bs, max_tokens


def load_serve():
    """xpusim.serving from the source tree (python/), its engine the --xpusim binary's build."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import xpusim.serving as serve
    return serve


def replica_figures(serve, row):
    """Weights and KV bytes per token per GPU, and HBM per GPU, as xpusim-serve reckons them."""
    a = argparse.Namespace(config=os.path.join(ROOT, row["config"]), set=row["sets"], tp=int(row["tp"]), pp=1,
                           weights=row["weights"], kv=row["kv"], gpu_memory_utilization=0.95,
                           activation_reserve=0.0, kv_blocks=None, block_size=16)
    r = serve.Replica(a, serve.load_card(os.path.join(ROOT, row["model"])))
    return r.hbm, r.weights_per_gpu, r.kv_bytes_per_token


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    ap.add_argument("--rows", default=None, help="comma-separated row numbers (from 0) to run (default all)")
    ap.add_argument("--requests", type=int, default=0, help="requests per row (default the published count)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "check-serving"))
    ap.add_argument("--jobs", type=int, default=0, help="passed to xpusim-serve (default: the CPUs)")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(PUBLISHED)))
    pick = range(len(rows)) if a.rows is None else [int(x) for x in a.rows.split(",")]
    serve = load_serve()
    serve.engine.BINARY = a.xpusim
    out_rows = []
    for i in pick:
        row = rows[i]
        row["sets"] = [s for s in row["set"].split(";") if s]
        isl, osl = int(row["isl"]), int(row["osl"])
        hbm, weights, kv_per_token = replica_figures(serve, row)
        kv_requests = (hbm - weights) * 0.95 / (kv_per_token * (isl + osl))
        max_bs, max_tokens = bench_limits(kv_requests, isl, osl)
        n = a.requests or int(row["requests"])
        out = os.path.join(a.out, f"row{i}")
        os.makedirs(out, exist_ok=True)
        # One step cache per setup: the rows of a system share their steps.
        setup = "-".join(os.path.basename(row[k]).replace(".yaml", "") for k in ("config", "model", "tp", "weights", "kv"))
        cache = os.path.join(a.out, f"steps-{setup}{'-' + row['set'] if row['set'] else ''}.json".replace("=", "")
                             .replace(";", "-"))
        reqs = os.path.join(out, "requests.jsonl")
        with open(reqs, "w") as f:
            for k in range(n):
                f.write(json.dumps({"id": str(k), "arrival": 0, "prompt_tokens": isl, "output_tokens": osl}) + "\n")
        cmd = [sys.executable, SERVE, "--xpusim", a.xpusim, "--config", os.path.join(ROOT, row["config"]),
               "--model", os.path.join(ROOT, row["model"]), "--tp", row["tp"], "--weights", row["weights"],
               "--kv", row["kv"], "--requests", reqs, "--scheduler", "chunked", "--max-seqs", str(max_bs),
               "--max-batched-tokens", str(max_tokens), "--gpu-memory-utilization", "0.95",
               "--activation-reserve", "2", "--jobs", str(a.jobs), "--out", out, "--step-cache", cache, "--overwrite"]
        for s in row["sets"]:
            cmd += ["--set", s]
        print(f"row {i}: {row['system']}, {os.path.basename(row['model'])} TP{row['tp']} {row['weights']}, "
              f"{isl}/{osl}, {n} requests, max batch {max_bs}, {max_tokens} tokens per step ...", flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"row {i}: xpusim-serve failed:\n{p.stderr.strip()}")
        s = json.load(open(os.path.join(out, "summary.json")))
        sim = s["output_tokens_per_s"]
        pub = float(row["output_tok_s"])
        out_rows.append((i, row, max_bs, max_tokens, n, pub, sim, s))
        print(f"  published {pub:,.0f} output tok/s, simulated {sim:,.0f} ({sim / pub - 1:+.1%}); "
              f"{s['step_cache']['simulated_now']} step shapes simulated", flush=True)
    print("\n| system | model, TP, weights | ISL/OSL | max batch / tokens | published tok/s | simulated | error |")
    print("|---|---|---|---|---|---|---|")
    errs = []
    for i, row, bs, tok, n, pub, sim, s in out_rows:
        errs.append(sim / pub - 1)
        print(f"| {row['system']} | {os.path.basename(row['model'])[:-5]} TP{row['tp']} {row['weights']} | "
              f"{row['isl']}/{row['osl']} | {bs} / {tok} | {pub:,.0f} | {sim:,.0f} | {sim / pub - 1:+.1%} |")
    if errs:
        print(f"\nmean absolute error {sum(abs(e) for e in errs) / len(errs):.1%} over {len(errs)} rows; "
              f"{sum(abs(e) <= 0.15 for e in errs)} within 15%")


if __name__ == "__main__":
    main()
