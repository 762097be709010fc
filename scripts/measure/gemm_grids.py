#!/usr/bin/env python3
"""The launch geometry cuBLAS picks for GEMMs on this GPU: for square bf16/tf32/fp8 GEMMs and the
DeepSeek-V3 fp8 shapes of fp8-cold.csv, each kernel's name, grid, block, registers, shared
memory and duration, from the PyTorch profiler's trace (one call after warm-up). A grid of about
the SM count for a GEMM of many more tiles is a persistent kernel, whose CTAs walk the tiles.
Changes no device setting.

Usage: python3 gemm_grids.py OUT.csv"""
import csv
import json
import os
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_microbench import gemm_fn  # noqa: E402

SHAPES = [("bf16", s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)] + \
         [("tf32", s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)] + \
         [("fp8", s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)] + \
         [("fp8", m, n, k) for m in (64, 128, 4096) for n, k in ((2112, 7168), (24576, 1536), (32768, 512),
                                                                 (7168, 16384), (4096, 7168), (7168, 2048))]


def launched_kernels(fn):
    """The kernels one call of `fn` launches, from the PyTorch profiler's trace: each one's name,
    grid, block, registers per thread, shared memory and duration."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    events = json.load(open(path)).get("traceEvents", [])
    os.remove(path)
    for e in events:
        if e.get("cat") != "kernel":
            continue
        a = e.get("args", {})
        yield {"kernel": e["name"][:200], "grid": str(a.get("grid", "")), "block": str(a.get("block", "")),
               "regs": a.get("registers per thread", ""), "smem": a.get("shared memory", ""), "dur_us": e.get("dur")}


def main():
    out = sys.argv[1]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["dtype", "m", "n", "k", "sms", "kernel", "grid", "block", "regs", "smem", "dur_us"])
        w.writeheader()
        for dt, m, n, k in SHAPES:
            fn = gemm_fn(dt, m, n, k)
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            for kern in launched_kernels(fn):
                row = {"dtype": dt, "m": m, "n": n, "k": k, "sms": sms, **kern}
                w.writerow(row)
                print(row, flush=True)
            del fn
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
