#!/usr/bin/env python3
"""What a small GEMM kernel costs besides its math: cuBLAS kernels of one to a few CTAs, timed
alone by the profiler's GPU timestamps, against K. For M = N = 64 and 128 (one or a few output
tiles) and K = 64-8192, in bf16 (`torch.mm`) and fp8 (`torch._scaled_mm`), each call after an L2
flush (a max over 128 MiB of another buffer, left out of the table) so that the operands come
from HBM as a model's do. The intercept over K is the kernel's fixed cost (launch, prologue,
first loads, epilogue); the slope, what each K step of one CTA costs when a tile's work is
latency-bound, not throughput-bound. Also M = N = 256, 512 and 1024 at their own K (the square
shapes of square-cold.csv), flushed, for the same kernels timed alone. Samples SM clock and
power through NVML at the start and end; changes no device setting.

Usage: python3 gemm_kernel_costs.py OUT.csv"""
import csv
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_microbench import gemm_fn  # noqa: E402
from row_kernels import profile_graph, write_clocks  # noqa: E402
from serving_kernels import nvml_sample  # noqa: E402

dev = torch.device("cuda")
KS = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
SHAPES = [(dt, mn, mn, k) for dt in ("bf16", "fp8") for mn in (64, 128) for k in KS] + \
         [(dt, s, s, s) for dt in ("bf16", "fp8") for s in (256, 512, 1024)]


def main():
    out = sys.argv[1]
    junk = torch.randn(32 * 2**20, device=dev)  # 128 MiB, over twice the L2
    fields = ["dtype", "m", "n", "k", "operands", "kernels_per_call", "kernel", "median_us", "min_us", "count",
              "grid", "block", "regs", "smem"]
    nvml_sample("gemm-costs", "start")
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for dt, m, n, k in SHAPES:
            fn = None
            try:
                op = gemm_fn(dt, m, n, k)
                fn = (lambda op: lambda: (junk.max(), op()))(op)
                ks, per = profile_graph(fn)
                for kr in ks:
                    row = {"dtype": dt, "m": m, "n": n, "k": k, "operands": "flushed", "kernels_per_call": per, **kr}
                    w.writerow(row)
                    print(row, flush=True)
                f.flush()
            except Exception as e:  # one failed shape leaves the others
                print("failed", dt, m, n, k, e, flush=True)
            del fn
            torch.cuda.empty_cache()
    nvml_sample("gemm-costs", "end")
    write_clocks(os.path.splitext(out)[0] + "-clocks.csv")


if __name__ == "__main__":
    main()
