#!/usr/bin/env python3
"""What part of a small GEMM kernel's fixed cost is a cold start: the same cuBLAS GEMM timed
after an L2 flush (a max over 128 MiB of another buffer) in four conditions within one call of a
CUDA graph, by the profiler's GPU timestamps:
  position 0  first GEMM after the flush: its code, its constants and its operands all out of
              the L2 (what gemm_kernel_costs.py times)
  position 1  the same kernel at once on other operands, also flushed: code warm, operands cold
  position 2  position 1's GEMM again: code and operands warm
and, in a second call, the first GEMM after the flush with its operands read back into the L2 by
two sums first (`touched`: code cold, operands warm). A 1-element add is timed the same way, for
a kernel whose work is nothing. Each kernel's row: its position, name, median and minimum over
60 calls, and the gap from the previous kernel's end to its start. Changes no device setting;
samples SM clock and power through NVML at the start and end.

Usage: python3 gemm_cold_parts.py OUT.csv"""
import csv
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from row_kernels import kernel_events, write_clocks  # noqa: E402
from serving_kernels import nvml_sample  # noqa: E402

dev = torch.device("cuda")
SHAPES = [("bf16", 64, 64, 64), ("bf16", 64, 64, 1024), ("bf16", 128, 128, 256), ("bf16", 256, 256, 256),
          ("bf16", 512, 512, 512), ("bf16", 1024, 1024, 1024), ("bf16", 2048, 2048, 2048),
          ("fp8", 64, 64, 64), ("fp8", 256, 256, 256), ("fp8", 1024, 1024, 1024), ("add", 1, 1, 1)]


def operands(dt, m, n, k):
    """(call, tensors it reads): a GEMM as gpu_microbench.gemm_fn runs it, or a 1-element add."""
    if dt == "add":
        x = torch.randn(1, device=dev)
        return (lambda: x.add_(1)), [x]
    if dt == "bf16":
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        return (lambda: torch.mm(a, b)), [a, b]
    a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0, device=dev)
    return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), [a, b]


def profile_positions(fn):
    """Kernels of each call in order after the flush: {position: {name, [durations], [gaps]}}."""
    slots = {}
    pos, prev_end = -1, None
    for e in kernel_events(fn):
        ts, dur = float(e["ts"]), float(e["dur"])
        if "MaxNan" in e["name"]:
            pos = 0
        elif pos >= 0:
            s = slots.setdefault(pos, {"name": e["name"][:120], "dur": [], "gap": []})
            s["dur"].append(dur)
            if prev_end is not None:
                s["gap"].append(ts - prev_end)
            pos += 1
        prev_end = ts + dur
    return slots


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else ""


def main():
    out = sys.argv[1]
    junk = torch.randn(32 * 2**20, device=dev)  # 128 MiB, over twice the L2
    fields = ["dtype", "m", "n", "k", "call", "position", "condition", "kernel", "median_us", "min_us", "count", "gap_us"]
    cold_names = ["code and operands cold", "code warm, operands cold", "code and operands warm"]
    nvml_sample("gemm-cold-parts", "start")
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for dt, m, n, k in SHAPES:
            try:
                first, _ = operands(dt, m, n, k)
                second, _ = operands(dt, m, n, k)
                third, ts = operands(dt, m, n, k)
                calls = {"cold": lambda: (junk.max(), first(), second(), second()),
                         "touched": lambda: (junk.max(), ts[0].float().sum(), ts[-1].float().sum(), third())}
                if dt == "add":  # no sums: the element is read by the add itself
                    calls["touched"] = lambda: (junk.max(), ts[0].add_(0), third())
                for call, fn in calls.items():
                    slots = profile_positions(fn)
                    last = max(slots, default=0)
                    for pos, s in sorted(slots.items()):
                        if call == "cold":
                            cond = cold_names[pos] if pos < len(cold_names) else ""
                        else:  # the GEMM last, after the kernels that read its operands
                            cond = "code cold, operands warm" if pos == last else "reads of the operands"
                        row = {"dtype": dt, "m": m, "n": n, "k": k, "call": call, "position": pos,
                               "condition": cond, "kernel": s["name"],
                               "median_us": median(s["dur"]), "min_us": min(s["dur"]), "count": len(s["dur"]),
                               "gap_us": median(s["gap"])}
                        w.writerow(row)
                        print(row, flush=True)
                    f.flush()
            except Exception as e:  # one failed shape leaves the others
                print("failed", dt, m, n, k, e, flush=True)
            torch.cuda.empty_cache()
    nvml_sample("gemm-cold-parts", "end")
    write_clocks(os.path.splitext(out)[0] + "-clocks.csv")


if __name__ == "__main__":
    main()
