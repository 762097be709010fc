#!/usr/bin/env python3
"""Row-wise kernels on the GPU: F.layer_norm, F.rms_norm, softmax and a row sum over M x N
fp16 rows, for the model of the block-wide reduction between a norm's two passes (issue 20).
Each shape runs 20 calls from a CUDA graph and the PyTorch profiler's GPU timestamps give each
kernel's duration: the median over 60 calls. The kernel's name, grid and block come from the
profiler's trace. Operands:
  cold     each call on a different copy of its input, up to 200 copies and three L2s of them in
           turn: small inputs (under ~250 KB a call) stay in the L2 all the same
  warm     one input, repeated
  flushed  (--flush) one input, each call after a read of 128 MiB of another buffer (a max, whose
           kernel is left out of the table), so that it finds its input in HBM
Writes OUT_DIR/rows.csv (OUT_DIR/rows-flushed.csv with --flush) as it goes. Changes no device
setting; samples SM clock and power through NVML at the start and end.

Usage: python3 row_kernels.py OUT_DIR [--flush]"""
import csv
import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_microbench import graph_of  # noqa: E402
from serving_kernels import CLOCKS, cold, nvml_sample  # noqa: E402

dev = torch.device("cuda")
MS = [1, 8, 64, 512, 2048, 8192]
NS = [256, 768, 1024, 4096, 8192]


def ops(m, n):
    """name -> make(): a callable with fresh operands."""
    def ln():
        x = torch.randn(m, n, device=dev, dtype=torch.float16)
        w = torch.randn(n, device=dev, dtype=torch.float16)
        b = torch.randn(n, device=dev, dtype=torch.float16)
        return lambda: F.layer_norm(x, (n,), w, b)

    def rms():
        x = torch.randn(m, n, device=dev, dtype=torch.float16)
        w = torch.randn(n, device=dev, dtype=torch.float16)
        return lambda: F.rms_norm(x, (n,), w, 1e-5)

    def sm():
        x = torch.randn(m, n, device=dev, dtype=torch.float16)
        return lambda: torch.softmax(x, dim=-1)

    def rsum():
        x = torch.randn(m, n, device=dev, dtype=torch.float16)
        return lambda: x.sum(dim=-1)

    def add():  # an elementwise kernel of the same size, for comparison (in place: read, write)
        x = torch.randn(m, n, device=dev, dtype=torch.float16)
        return lambda: x.add_(1)
    return {"layer_norm": ln, "rms_norm": rms, "softmax": sm, "sum": rsum, "add": add}


def kernel_events(fn, reps=20, replays=3):
    """The profiler's kernel events of `replays` replays of a CUDA graph of `reps` calls of `fn`
    (after three untimed ones), in the order they ran."""
    from torch.profiler import ProfilerActivity, profile
    g = graph_of(fn, reps)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            g.replay()
        torch.cuda.synchronize()
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f).get("traceEvents", [])
    os.remove(path)
    return sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: float(e["ts"]))


def profile_graph(fn, reps=20, replays=3):
    ks = [e for e in kernel_events(fn, reps, replays) if "MaxNan" not in e["name"]]  # not the flush
    by_name = {}
    for e in ks:
        by_name.setdefault(e["name"], []).append(e)
    out = []
    for name, es in by_name.items():
        d = sorted(float(e["dur"]) for e in es)
        a = es[0].get("args", {})
        out.append({"kernel": name[:120], "count": len(es), "median_us": d[len(d) // 2], "min_us": d[0],
                    "grid": str(a.get("grid", "")), "block": str(a.get("block", "")),
                    "regs": a.get("registers per thread", ""), "smem": a.get("shared memory", "")})
    return out, len(ks) / (reps * replays)


def main():
    out = sys.argv[1]
    flush = "--flush" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "rows-flushed.csv" if flush else "rows.csv")
    junk = torch.randn(32 * 2**20, device=dev) if flush else None  # 128 MiB, over twice the L2
    fields = ["op", "m", "n", "operands", "kernels_per_call", "kernel", "median_us", "min_us", "count", "grid", "block", "regs", "smem"]
    nvml_sample("rows", "start")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        shapes = [(1, 1, "add")] + [(m, n, None) for n in NS for m in MS]
        for m, n, only in shapes:
            for name, make in ops(m, n).items():
                if only and name != only:
                    continue
                for mode in (["flushed"] if flush else ["cold", "warm"]):
                    fn = None
                    try:
                        if mode == "flushed":
                            op = make()
                            fn = (lambda op: lambda: (junk.max(), op()))(op)
                        elif mode == "cold":
                            fn, _ = cold(make, 2 * m * n, budget=2 * 2**30)
                        else:
                            fn = make()
                        ks, per = profile_graph(fn)
                        for k in ks:
                            row = {"op": name, "m": m, "n": n, "operands": mode, "kernels_per_call": per, **k}
                            w.writerow(row)
                            print(row, flush=True)
                        f.flush()
                    except Exception as e:  # one failed shape leaves the others
                        print("failed", name, m, n, mode, e, flush=True)
                    del fn
                    torch.cuda.empty_cache()
    nvml_sample("rows", "end")
    write_clocks(os.path.join(out, "rows-flushed-clocks.csv" if flush else "rows-clocks.csv"))


def write_clocks(path):
    """The NVML samples taken so far (serving_kernels.CLOCKS), as a CSV."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=sorted({k for r in CLOCKS for k in r}))
        w.writeheader()
        w.writerows(CLOCKS)


if __name__ == "__main__":
    main()
