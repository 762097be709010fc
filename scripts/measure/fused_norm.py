#!/usr/bin/env python3
"""The residual add + RMSNorm that serving engines fuse, as torch.compile fuses it into one Triton
kernel (hidden 8192, fp16, as fusion.csv of 2026-11-24): for T = 1-8192 tokens, the kernel's
name, grid, block, registers and shared memory, and its duration from the profiler's timestamps
with the L2 flushed before each call and warm (as row_kernels.py times them). For the model of a
fused norm's launch geometry. Changes no device setting.

Usage: python3 fused_norm.py OUT.csv"""
import csv
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from row_kernels import profile_graph  # noqa: E402

dev = torch.device("cuda")
HIDDEN = 8192


def add_rms(x, r, w):
    h = x + r
    v = h.float().pow(2).mean(-1, keepdim=True)
    return (h.float() * torch.rsqrt(v + 1e-5)).to(x.dtype) * w, h


def main():
    out = sys.argv[1]
    torch._dynamo.config.automatic_dynamic_shapes = False  # one kernel per token count, as measured before
    fused = torch.compile(add_rms)
    junk = torch.randn(32 * 2**20, device=dev)  # 128 MiB, over twice the L2
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["tokens", "operands", "kernel", "median_us", "min_us", "count", "grid", "block",
                                          "regs", "smem"])
        w.writeheader()
        for t in [1, 16, 64, 256, 2048, 8192]:
            x = torch.randn(t, HIDDEN, device=dev, dtype=torch.float16)
            r = torch.randn(t, HIDDEN, device=dev, dtype=torch.float16)
            g = torch.randn(HIDDEN, device=dev, dtype=torch.float16)
            for _ in range(3):
                fused(x, r, g)
            torch.cuda.synchronize()
            for mode in ["flushed", "warm"]:
                fn = (lambda: (junk.max(), fused(x, r, g))) if mode == "flushed" else (lambda: fused(x, r, g))
                ks, _ = profile_graph(fn)
                for k in ks:
                    row = {"tokens": t, "operands": mode, **k}
                    w.writerow(row)
                    print(row, flush=True)
                f.flush()


if __name__ == "__main__":
    main()
