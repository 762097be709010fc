#!/usr/bin/env python3
"""Real-hardware microbenchmarks with PyTorch: dense GEMM throughput by size and format, copy
and read bandwidth by size, and a BERT-base encoder layer forward (fp16) at batch 1 and 32.
Writes CSV files into the output directory. Changes no device setting.
Usage: python3 gpu_microbench.py OUT_DIR            every part
       python3 gpu_microbench.py OUT_DIR gemm       the GEMM sweep alone
       python3 gpu_microbench.py OUT_DIR power tf32,fp16   sustained GEMMs of these formats (gemm-power-FORMATS.csv)
       python3 gpu_microbench.py OUT_DIR steady bf16,fp8 1024,2048,4096,8192
                                                    each size looped for 4 s: throughput, clock, power (gemm-steady.csv)"""
import csv
import os
import sys
import time

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
dev = torch.device("cuda")


def timed(fn, min_s=0.2, max_iters=200):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    iters, total = 0, 0.0
    best = float("inf")
    while total < min_s and iters < max_iters:
        start.record()
        fn()
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end)
        best = min(best, ms)
        total += ms / 1e3
        iters += 1
    return best / 1e3, total / iters


def graph_of(fn, reps):
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    return g


def gemm_fn(dtype, m, n, k):
    """A callable running one m x n x k GEMM in `dtype` the way PyTorch users do: torch.mm
    (bf16, fp16, tf32 with allow_tf32, fp32), torch._scaled_mm (fp8 e4m3, column-major B, bf16
    out), torch._int_mm (int8)."""
    if dtype in ("bf16", "fp16", "fp32", "tf32"):
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype, torch.float32)
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        a = torch.randn(m, k, device=dev, dtype=dt)
        b = torch.randn(k, n, device=dev, dtype=dt)
        return lambda: torch.mm(a, b)
    if dtype == "fp8":
        a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major B
        one = torch.tensor(1.0, device=dev)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    a = torch.randint(-8, 8, (m, k), device=dev, dtype=torch.int8)
    b = torch.randint(-8, 8, (n, k), device=dev, dtype=torch.int8).t()
    return lambda: torch._int_mm(a, b)


def gemm_rows():
    rows = []
    sizes = [256, 512, 1024, 2048, 4096, 8192, 16384]
    for dtype in ["bf16", "fp16", "fp8", "int8", "tf32", "fp32"]:
        for s in sizes:
            m = n = k = s
            try:
                fn = gemm_fn(dtype, m, n, k)
                # Kernels back to back from a CUDA graph: GPU time, not the launch rate of Python.
                reps = 20 if s <= 4096 else 3
                g = graph_of(fn, reps)
                best, mean = timed(g.replay)
                best, mean = best / reps, mean / reps
                rows.append({"dtype": dtype, "m": m, "n": n, "k": k, "reps_per_graph": reps, "best_s": best, "mean_s": mean,
                             "tflops_best": 2 * m * n * k / best / 1e12, "tflops_mean": 2 * m * n * k / mean / 1e12})
                print(rows[-1], flush=True)
            except Exception as e:  # a format this torch build cannot run
                rows.append({"dtype": dtype, "m": m, "n": n, "k": k, "error": str(e)[:200]})
                print(dtype, s, "error", str(e)[:200], flush=True)
                break
            finally:
                torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def bandwidth_rows():
    rows = []
    for mib in [8, 32, 64, 512, 4096]:
        n = mib * 2**20 // 4
        a = torch.empty(n, device=dev, dtype=torch.float32).fill_(1.0)
        b = torch.empty_like(a)
        best, mean = timed(lambda: b.copy_(a))
        rows.append({"test": "copy", "bytes_in": n * 4, "best_s": best, "mean_s": mean,
                     "gbps_best": 2 * n * 4 / best / 1e9, "gbps_mean": 2 * n * 4 / mean / 1e9})
        print(rows[-1], flush=True)
        best, mean = timed(lambda: torch.sum(a))
        rows.append({"test": "read (sum)", "bytes_in": n * 4, "best_s": best, "mean_s": mean,
                     "gbps_best": n * 4 / best / 1e9, "gbps_mean": n * 4 / mean / 1e9})
        print(rows[-1], flush=True)
        del a, b
        torch.cuda.empty_cache()
    return rows


class Layer(torch.nn.Module):
    """BERT-base encoder layer as traces/examples/bert-base-layer.yaml writes it."""

    def __init__(self, d=768, heads=12, ffn=3072):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.ln1 = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, ffn)
        self.down = torch.nn.Linear(ffn, d)
        self.ln2 = torch.nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.out(a))
        return self.ln2(x + self.down(F.gelu(self.up(x))))


def bert_rows():
    """Eager (Python launches in the loop, CPU-bound at small sizes) and replayed from a CUDA
    graph (GPU time of the kernels back to back)."""
    rows = []
    layer = Layer().to(dev).half().eval()
    with torch.no_grad():
        for batch in [1, 32]:
            x = torch.randn(batch, 128, 768, device=dev, dtype=torch.float16)
            flops = 2 * batch * 128 * 768 * (2304 + 768 + 3072 + 3072) + 4 * batch * 12 * 128 * 128 * 64
            best, mean = timed(lambda: layer(x))
            rows.append({"workload": "bert-base layer fp16 seq128", "mode": "eager", "batch": batch, "best_s": best,
                         "mean_s": mean, "tflops_best": flops / best / 1e12})
            print(rows[-1], flush=True)
            g = graph_of(lambda: layer(x), 1)
            reps = 20  # replays per timed call, so launch of the graph itself is amortised
            best, mean = timed(lambda: [g.replay() for _ in range(reps)])
            rows.append({"workload": "bert-base layer fp16 seq128", "mode": "cuda graph", "batch": batch,
                         "best_s": best / reps, "mean_s": mean / reps, "tflops_best": flops * reps / best / 1e12})
            print(rows[-1], flush=True)
    return rows


def power_rows(dtypes=("bf16", "fp8", "int8")):
    """Board power and SM clock (nvidia-smi, sampled every 100 ms) while an 8192^3 GEMM runs for
    about 5 s back to back, per format: the measured side of TOPS/W."""
    import subprocess
    rows = []
    m = n = k = 8192
    for dtype in dtypes:
        try:
            fn = gemm_fn(dtype, m, n, k)
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            smi = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw,clocks.sm", "--format=csv,noheader,nounits",
                                    "-lms", "100"], stdout=subprocess.PIPE, text=True)
            t0 = time.time()
            iters = 0
            while time.time() - t0 < 5:
                for _ in range(10):
                    fn()
                torch.cuda.synchronize()
                iters += 10
            dt = time.time() - t0
            smi.terminate()
            samples = [l.split(",") for l in smi.communicate()[0].strip().splitlines() if "," in l]
            watts = [float(p) for p, _ in samples[5:]] or [0]  # skip the first half second
            clocks = [float(c) for _, c in samples[5:]] or [0]
            tflops = 2 * m * n * k * iters / dt / 1e12
            w = sum(watts) / len(watts)
            rows.append({"dtype": dtype, "size": m, "seconds": dt, "tflops": tflops, "avg_power_w": w,
                         "max_power_w": max(watts), "avg_sm_clock_mhz": sum(clocks) / len(clocks),
                         "tops_per_w": tflops / w if w else 0, "samples": len(samples)})
            print(rows[-1], flush=True)
        except Exception as e:
            rows.append({"dtype": dtype, "error": str(e)[:200]})
            print(dtype, "error", e, flush=True)
        torch.cuda.empty_cache()
    return rows


def steady_rows(dtypes, sizes, seconds=4.0):
    """Each size's GEMM as a CUDA graph of 20 calls (3 from 4096 up) replayed back to back for
    `seconds`, board power and SM clock sampled by nvidia-smi every 100 ms: the steady state of a
    benchmark loop of one kernel at the card's shipped limit (the first second left out)."""
    import subprocess
    rows = []
    for dtype in dtypes:
        for s in sizes:
            try:
                reps = 20 if s < 4096 else 3
                g = graph_of(gemm_fn(dtype, s, s, s), reps)
                g.replay()
                torch.cuda.synchronize()
                smi = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw,clocks.sm", "--format=csv,noheader,nounits",
                                        "-lms", "100"], stdout=subprocess.PIPE, text=True)
                t0 = time.time()
                marks = []  # (wall s, replays so far) after each synchronize
                calls = 0
                while time.time() - t0 < seconds:
                    for _ in range(max(1, int(2e-3 * 1e12 / (2 * s ** 3 * reps)))):  # about 2 ms of work at 1 PFLOP/s
                        g.replay()
                        calls += reps
                    torch.cuda.synchronize()
                    marks.append((time.time() - t0, calls))
                smi.terminate()
                samples = [l.split(",") for l in smi.communicate()[0].strip().splitlines() if "," in l]
                late = [m for m in marks if m[0] >= 1.0]
                first = next(m for m in marks if m[0] >= 1.0) if late else marks[0]
                dt, n = marks[-1][0] - first[0], marks[-1][1] - first[1]
                watts = [float(p) for p, _ in samples[10:]] or [0]
                clocks = [float(c) for _, c in samples[10:]] or [0]
                rows.append({"dtype": dtype, "size": s, "calls_per_graph": reps, "seconds": round(marks[-1][0], 2),
                             "tflops_after_1s": round(2 * s ** 3 * n / dt / 1e12, 1) if dt > 0 else "",
                             "avg_power_w": round(sum(watts) / len(watts), 1), "avg_sm_clock_mhz": round(sum(clocks) / len(clocks)),
                             "min_sm_clock_mhz": min(clocks), "max_sm_clock_mhz": max(clocks), "samples": len(samples)})
                print(rows[-1], flush=True)
            except Exception as e:
                rows.append({"dtype": dtype, "size": s, "error": str(e)[:200]})
                print(dtype, s, "error", e, flush=True)
            torch.cuda.empty_cache()
            time.sleep(1)
    return rows


def write(name, rows):
    keys = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with open(os.path.join(OUT, name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    if len(sys.argv) > 2 and sys.argv[2] == "gemm":
        write("gemm.csv", gemm_rows())
        sys.exit(0)
    if len(sys.argv) > 4 and sys.argv[2] == "steady":  # OUT steady bf16,fp8 1024,2048,4096,8192
        write("gemm-steady.csv", steady_rows(sys.argv[3].split(","), [int(x) for x in sys.argv[4].split(",")]))
        sys.exit(0)
    if len(sys.argv) > 3 and sys.argv[2] == "power":
        write("gemm-power-" + sys.argv[3].replace(",", "-") + ".csv", power_rows(sys.argv[3].split(",")))
        sys.exit(0)
    print(torch.__version__, torch.cuda.get_device_name(0), flush=True)
    t0 = time.time()
    write("gemm.csv", gemm_rows())
    write("bandwidth.csv", bandwidth_rows())
    write("bert-layer.csv", bert_rows())
    write("gemm-power.csv", power_rows())
    print(f"done in {time.time() - t0:.0f} s")
