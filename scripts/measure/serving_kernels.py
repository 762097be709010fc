#!/usr/bin/env python3
"""Real-hardware measurements of the kernels an LLM serving step is made of, for issue 20's
model of per-kernel costs, skinny GEMMs, decode attention and fusions. Each part writes its own
CSV into OUT_DIR as soon as it finishes; a part that fails is recorded and the rest still run.
Changes no device setting; samples SM clock and board power through NVML around each part.

  launch.csv     per-kernel cost of a 1-element kernel: eager (CPU launch rate) and from a CUDA
                 graph (GPU back-to-back), and of a 64^3 GEMM, the smallest cuBLAS kernel
  skinny.csv     bf16 F.linear (x @ W^T, W row-major N x K as serving engines keep weights) for
                 M = 1..1024 on Llama-2-70B TP=8 and Llama-2-7B projection shapes, with the kernel
                 names cuBLAS ran (a split-K GEMM shows a separate reduction kernel or 'splitK')
  fp8.csv        torch._scaled_mm (per-tensor scale, bf16 out) on DeepSeek-V3 projection shapes
  attention.csv  decode attention (one query per sequence) with the KV cache of L tokens, GQA,
                 and causal prefill attention, through F.scaled_dot_product_attention
  prefill.csv    a Llama-2-7B-shaped prefill (32 layers, fp16) at batch 1: time to first token
  fusion.csv     RMSNorm and SwiGLU as eager ops (one kernel each) against torch.compile's fused
                 kernel, by token count
  anatomy.csv    kernel durations and the gaps between kernels from the profiler's GPU timestamps,
                 from a CUDA graph and eager, for tiny kernels, small GEMMs and skinny linears
  clocks.csv     SM clock, memory clock and board power when each part started and ended

  decode-*-cold.csv  the same for the decode steps of the published serving rows: Llama-3-8B
                 (bf16, TP1) and Llama-3-70B (fp8, TP2) projections at 1-64 sequences

  *-cold.csv     the GEMMs and decode attention again with fresh operands for each call (a
                 different copy of the weights or KV cache, more than three L2s of them in
                 turn), as a model's successive layers meet them

Usage: python3 serving_kernels.py OUT_DIR [part ...]   (parts: launch skinny fp8 attention
prefill fusion skinny-cold fp8-cold square-cold attention-cold decode-skinny-cold decode-fp8-cold;
default all)"""
import csv
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_microbench import graph_of, timed  # noqa: E402

dev = torch.device("cuda")
CLOCKS = []


def nvml_sample(part, when):
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        CLOCKS.append({"part": part, "when": when,
                       "sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                       "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                       "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,
                       "temp_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)})
    except Exception as e:  # NVML missing: the timings still stand
        CLOCKS.append({"part": part, "when": when, "error": str(e)[:100]})


def per_call_graph(fn, reps=20):
    """GPU time of one call: `reps` calls captured in a CUDA graph, best replay / reps."""
    g = graph_of(fn, reps)
    best, mean = timed(g.replay)
    return best / reps, mean / reps


L2_BYTES = torch.cuda.get_device_properties(0).L2_cache_size if torch.cuda.is_available() else 50 * 2**20  # 50 MB on an H100


def cold(make, bytes_per_call, budget=8 * 2**30):
    """A callable whose successive calls use different copies of their operands, enough copies
    (up to 200 and `budget` bytes) that together they exceed three L2s: each call finds its
    weights in HBM, as a model's layers do, where repeating one call would find them in the L2.
    `make()` returns a fresh callable with fresh operands. Returns (callable, copies)."""
    copies = int(min(200, max(2, -(-3 * L2_BYTES // max(1, bytes_per_call))), max(2, budget // max(1, bytes_per_call))))
    fns = [make() for _ in range(copies)]
    state = [0]

    def call():
        f = fns[state[0] % copies]
        state[0] += 1
        return f()
    return call, copies


def kernel_names(fn):
    """The CUDA kernels one eager call launches, in order, from the PyTorch profiler."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return " | ".join(n[:90] for n in names)


def launch_rows():
    rows = []
    x = torch.zeros(1, device=dev)
    n = 2000

    def eager():
        for _ in range(n):
            x.add_(1)
    for _ in range(3):
        eager()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        eager()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n)
    rows.append({"test": "1-element add, eager, back to back", "per_kernel_s": best, "calls": n})
    b, m = per_call_graph(lambda: x.add_(1), reps=n)
    rows.append({"test": "1-element add, CUDA graph, back to back", "per_kernel_s": b, "mean_s": m, "calls": n})
    # One replay of a graph holding one kernel: graph launch plus one kernel, CPU to GPU.
    g1 = graph_of(lambda: x.add_(1), 1)
    b, m = timed(g1.replay)
    rows.append({"test": "graph of one 1-element add, one replay, event to event", "per_kernel_s": b, "mean_s": m, "calls": 1})
    for s in [64, 128]:
        a = torch.randn(s, s, device=dev, dtype=torch.bfloat16)
        w = torch.randn(s, s, device=dev, dtype=torch.bfloat16)
        b, m = per_call_graph(lambda: torch.mm(a, w), reps=200)
        rows.append({"test": f"bf16 GEMM {s}^3, CUDA graph, back to back", "per_kernel_s": b, "mean_s": m, "calls": 200,
                     "kernels": kernel_names(lambda: torch.mm(a, w))})
    for r in rows:
        print(r, flush=True)
    return rows


# (model, projection, N, K): weights N x K, y = x @ W^T
SKINNY_SHAPES = [
    ("llama-2-70b tp8", "qkv", 1280, 8192), ("llama-2-70b tp8", "o", 8192, 1024),
    ("llama-2-70b tp8", "gate_up", 7168, 8192), ("llama-2-70b tp8", "down", 8192, 3584),
    ("llama-2-7b", "qkv", 12288, 4096), ("llama-2-7b", "o", 4096, 4096),
    ("llama-2-7b", "gate_up", 22016, 4096), ("llama-2-7b", "down", 4096, 11008),
]

# The decode steps of the published serving rows (docs/validation/published/serving-latency.csv):
# Llama-3-8B at TP1 (bf16) and Llama-3-70B at TP2 (fp8), each GPU's share of the projections.
LLAMA3_BF16_SHAPES = [
    ("llama-3-8b", "qkv", 6144, 4096), ("llama-3-8b", "o", 4096, 4096),
    ("llama-3-8b", "gate_up", 28672, 4096), ("llama-3-8b", "down", 4096, 14336),
]
LLAMA3_FP8_SHAPES = [(5120, 8192), (8192, 4096), (28672, 8192), (8192, 14336)]
DECODE_MS = [1, 8, 16, 32, 64]


def skinny_rows(weights="warm", shapes=None, ms=None):
    """warm: one weight matrix, called back to back (it stays in the L2 where it fits); cold:
    a different copy each call (see cold())."""
    rows = []
    for model, proj, n, k in shapes or SKINNY_SHAPES:
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        for m in ms or [1, 8, 16, 32, 64, 128, 256, 512, 1024]:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            byt = 2 * (n * k + m * k + m * n)
            copies = 1
            if weights == "cold":
                def make():
                    wc, xc = torch.randn(n, k, device=dev, dtype=torch.bfloat16), torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                    return lambda: F.linear(xc, wc)
                fn, copies = cold(make, byt)
            else:
                fn = lambda: F.linear(x, w)  # noqa: E731
            b, mean = per_call_graph(fn, reps=max(20, copies))
            rows.append({"model": model, "proj": proj, "m": m, "n": n, "k": k, "weights": weights, "copies": copies,
                         "best_s": b, "mean_s": mean, "tflops": 2 * m * n * k / b / 1e12, "gbps_min_bytes": byt / b / 1e9,
                         "kernels": kernel_names(fn)})
            print(rows[-1], flush=True)
            del fn
            torch.cuda.empty_cache()
        del w
        torch.cuda.empty_cache()
    return rows


FP8_SHAPES = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]


def fp8_rows(weights="warm", shapes=None, ms=None):
    rows = []
    one = torch.tensor(1.0, device=dev)
    for n, k in shapes or FP8_SHAPES:
        wt = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major B
        for m in ms or [64, 128, 4096]:
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            try:  # cuBLASLt's fp8 GEMMs refuse some shapes (rows not a multiple of 16)
                torch._scaled_mm(a, wt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            except RuntimeError as e:
                print(f"fp8 {m}x{n}x{k} skipped: {str(e)[:160]}", flush=True)
                continue
            byt = n * k + m * k + 2 * m * n
            copies = 1
            if weights == "cold":
                def make():
                    wc = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
                    ac = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
                    return lambda: torch._scaled_mm(ac, wc, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                fn, copies = cold(make, byt)
            else:
                fn = lambda: torch._scaled_mm(a, wt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
            b, mean = per_call_graph(fn, reps=max(20, copies))
            rows.append({"m": m, "n": n, "k": k, "weights": weights, "copies": copies, "best_s": b, "mean_s": mean,
                         "tflops": 2 * m * n * k / b / 1e12, "gbps_min_bytes": byt / b / 1e9, "kernels": kernel_names(fn)})
            del fn
            torch.cuda.empty_cache()
            print(rows[-1], flush=True)
        del wt
        torch.cuda.empty_cache()
    return rows


def square_cold_rows():
    """Square GEMMs 256-2048 (bf16, fp16, fp8) with fresh operands each call: gemm.csv's sizes
    as a model's layers meet them, out of HBM."""
    from gpu_microbench import gemm_fn
    rows = []
    for dtype in ["bf16", "fp16", "fp8"]:
        for sz in [256, 512, 1024, 2048]:
            byt = 3 * sz * sz * (1 if dtype == "fp8" else 2)
            fn, copies = cold(lambda: gemm_fn(dtype, sz, sz, sz), byt)
            b, mean = per_call_graph(fn, reps=max(20, copies))
            rows.append({"dtype": dtype, "m": sz, "n": sz, "k": sz, "weights": "cold", "copies": copies, "best_s": b,
                         "mean_s": mean, "tflops": 2 * sz ** 3 / b / 1e12})
            print(rows[-1], flush=True)
            del fn
            torch.cuda.empty_cache()
    return rows


def attention_cold_rows():
    """Decode attention with a different KV cache each call (as each layer has its own)."""
    rows = []
    dt, dh = torch.float16, 128
    for model, hq, hkv in [("llama-2-70b tp8", 8, 1), ("llama-2-7b", 32, 32), ("llama-2-70b tp1", 64, 8)]:
        for bsz in [1, 8, 32, 64]:
            for L in [1024, 4096, 16384]:
                kv = 2 * bsz * hkv * L * dh * 2
                if kv > 24 * 2**30:
                    continue

                def make():
                    q = torch.randn(bsz, hq, 1, dh, device=dev, dtype=dt)
                    k = torch.randn(bsz, hkv, L, dh, device=dev, dtype=dt)
                    v = torch.randn(bsz, hkv, L, dh, device=dev, dtype=dt)
                    return lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=hq != hkv)
                fn, copies = cold(make, kv, budget=24 * 2**30)
                b, mean = per_call_graph(fn, reps=max(20, copies))
                rows.append({"phase": "decode", "model": model, "batch": bsz, "q_heads": hq, "kv_heads": hkv, "q_len": 1,
                             "kv_len": L, "kv": "cold", "copies": copies, "best_s": b, "mean_s": mean, "kv_bytes": kv,
                             "gbps_kv": kv / b / 1e9})
                print(rows[-1], flush=True)
                del fn
                torch.cuda.empty_cache()
    return rows


def attention_rows():
    rows = []
    dt, dh = torch.float16, 128
    # Decode: one query per sequence against a cache of L tokens.
    for model, hq, hkv in [("llama-2-70b tp8", 8, 1), ("llama-2-7b", 32, 32), ("llama-2-70b tp1", 64, 8)]:
        for bsz in [1, 8, 32, 64]:
            for L in [1024, 4096, 16384]:
                kv = 2 * bsz * hkv * L * dh * 2
                if kv > 24 * 2**30:
                    continue
                q = torch.randn(bsz, hq, 1, dh, device=dev, dtype=dt)
                k = torch.randn(bsz, hkv, L, dh, device=dev, dtype=dt)
                v = torch.randn(bsz, hkv, L, dh, device=dev, dtype=dt)
                fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=hq != hkv)  # noqa: E731
                try:
                    b, mean = per_call_graph(fn)
                    rows.append({"phase": "decode", "model": model, "batch": bsz, "q_heads": hq, "kv_heads": hkv,
                                 "q_len": 1, "kv_len": L, "best_s": b, "mean_s": mean, "kv_bytes": kv,
                                 "gbps_kv": kv / b / 1e9, "kernels": kernel_names(fn)})
                except Exception as e:
                    rows.append({"phase": "decode", "model": model, "batch": bsz, "kv_len": L, "error": str(e)[:200]})
                print(rows[-1], flush=True)
                del q, k, v
                torch.cuda.empty_cache()
    # Prefill: causal attention over S tokens, 32 heads of 128 (Llama-2-7B).
    for S in [512, 2048, 8192]:
        q, k, v = (torch.randn(1, 32, S, dh, device=dev, dtype=dt) for _ in range(3))
        fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
        b, mean = per_call_graph(fn, reps=10)
        flops = 4 * 32 * S * S * dh / 2  # causal: half the score matrix
        rows.append({"phase": "prefill causal", "model": "llama-2-7b", "batch": 1, "q_heads": 32, "kv_heads": 32,
                     "q_len": S, "kv_len": S, "best_s": b, "mean_s": mean, "tflops": flops / b / 1e12,
                     "kernels": kernel_names(fn)})
        print(rows[-1], flush=True)
    return rows


def rms(x, w):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * w


def prefill_rows():
    """Time to first token of a Llama-2-7B-shaped model (fp16, random weights) at batch 1: the
    whole prefill forward, from a CUDA graph, logits of the last token only."""
    L, D, H, FF, V, DH = 32, 4096, 32, 11008, 32000, 128
    dt = torch.float16
    torch.manual_seed(0)
    W = [dict(qkv=torch.randn(3 * D, D, device=dev, dtype=dt) * 0.01, o=torch.randn(D, D, device=dev, dtype=dt) * 0.01,
              gu=torch.randn(2 * FF, D, device=dev, dtype=dt) * 0.01, dn=torch.randn(D, FF, device=dev, dtype=dt) * 0.01,
              n1=torch.ones(D, device=dev, dtype=dt), n2=torch.ones(D, device=dev, dtype=dt)) for _ in range(L)]
    head = torch.randn(V, D, device=dev, dtype=dt) * 0.01
    rows = []
    for S in [128, 512, 2048]:
        x0 = torch.randn(1, S, D, device=dev, dtype=dt)

        def fwd():
            x = x0
            for l in range(L):
                w = W[l]
                q, k, v = F.linear(rms(x, w["n1"]), w["qkv"]).view(1, S, 3, H, DH).permute(2, 0, 3, 1, 4)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(1, S, D)
                x = x + F.linear(a, w["o"])
                g, u = F.linear(rms(x, w["n2"]), w["gu"]).chunk(2, dim=-1)
                x = x + F.linear(F.silu(g) * u, w["dn"])
            return F.linear(x[:, -1:], head)
        with torch.no_grad():
            b, mean = per_call_graph(fwd, reps=1)
        flops = 2 * S * L * D * (3 * D + D + 3 * FF) + 2 * L * 2 * S * S * D + 2 * D * V
        rows.append({"model": "llama-2-7b shape, fp16", "batch": 1, "prompt": S, "best_s": b, "mean_s": mean,
                     "tflops": flops / b / 1e12})
        print(rows[-1], flush=True)
    del W, head
    torch.cuda.empty_cache()
    return rows


def fusion_rows():
    rows = []
    dt = torch.bfloat16

    def swiglu(gu):
        g, u = gu.chunk(2, dim=-1)
        return F.silu(g) * u

    def add_rms(x, r, w):
        h = x + r
        return rms(h, w), h
    c_rms = torch.compile(add_rms)
    c_swiglu = torch.compile(swiglu)
    for tokens in [1, 16, 64, 256, 2048, 8192]:
        x = torch.randn(tokens, 8192, device=dev, dtype=dt)
        r = torch.randn(tokens, 8192, device=dev, dtype=dt)
        w = torch.ones(8192, device=dev, dtype=dt)
        gu = torch.randn(tokens, 2 * 3584, device=dev, dtype=dt)
        for name, f, args, byt in [("residual add + rmsnorm, hidden 8192", add_rms, (x, r, w), 4 * tokens * 8192 * 2),
                                   ("swiglu, 2 x 3584 -> 3584", swiglu, (gu,), 3 * tokens * 3584 * 2)]:
            for mode, fn in [("eager ops", f), ("torch.compile", c_rms if f is add_rms else c_swiglu)]:
                try:
                    call = lambda: fn(*args)  # noqa: E731
                    for _ in range(3):
                        call()
                    b, mean = per_call_graph(call)
                    rows.append({"op": name, "mode": mode, "tokens": tokens, "best_s": b, "mean_s": mean,
                                 "min_bytes": byt, "gbps_min_bytes": byt / b / 1e9, "kernels": kernel_names(call)})
                except Exception as e:
                    rows.append({"op": name, "mode": mode, "tokens": tokens, "error": str(e)[:200]})
                print(rows[-1], flush=True)
    return rows


def write(out, name, rows):
    keys = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with open(os.path.join(out, name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def anatomy_rows():
    """Per-kernel anatomy from the profiler's GPU timestamps: for each workload, 20 calls
    (fresh operands each, see cold()) captured in a CUDA graph and replayed, and the same calls
    launched eagerly from Python; the median kernel duration and the median gap from one
    kernel's end to the next one's start."""
    from torch.profiler import ProfilerActivity, profile
    from gpu_microbench import gemm_fn
    rows = []
    work = [("1-element add", lambda: (lambda x: (lambda: x.add_(1)))(torch.zeros(1, device=dev)), 4)]
    for sz in [64, 256, 1024]:
        work.append((f"bf16 GEMM {sz}^3", (lambda sz: lambda: gemm_fn("bf16", sz, sz, sz))(sz), 3 * sz * sz * 2))
    for m, n, k in [(1, 1280, 8192), (1, 8192, 1024)]:
        def mk(m=m, n=n, k=k):
            w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            return lambda: F.linear(x, w)
        work.append((f"bf16 linear {m}x{n}x{k}", mk, 2 * n * k))
    for name, make, byt in work:
        for mode in ["cuda graph", "eager"]:
            fn, copies = cold(make, byt, budget=2 * 2**30)
            reps = 20
            if mode == "cuda graph":
                g = graph_of(fn, reps)
                run = g.replay
            else:
                def run():
                    for _ in range(reps):
                        fn()
            for _ in range(3):
                run()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    run()
                torch.cuda.synchronize()
            ev = sorted([(e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                         if e.device_type == torch.autograd.DeviceType.CUDA and "Memset" not in e.name])
            durs = sorted(b - a for a, b, _ in ev)
            gaps = sorted(ev[i + 1][0] - ev[i][1] for i in range(len(ev) - 1))
            per = len(ev) / (5 * reps)
            med = lambda v: v[len(v) // 2] if v else float("nan")  # noqa: E731
            rows.append({"workload": name, "mode": mode, "kernels_per_call": per, "kernels_seen": len(ev),
                         "median_kernel_us": med(durs), "min_kernel_us": durs[0] if durs else "",
                         "median_gap_us": med(gaps), "p10_gap_us": gaps[len(gaps) // 10] if gaps else "",
                         "kernel": ev[0][2][:80] if ev else ""})
            print(rows[-1], flush=True)
            del fn
            torch.cuda.empty_cache()
    return rows


PARTS = {"anatomy": anatomy_rows, "launch": launch_rows, "skinny": skinny_rows, "fp8": fp8_rows, "attention": attention_rows,
         "prefill": prefill_rows, "fusion": fusion_rows, "skinny-cold": lambda: skinny_rows("cold"),
         "fp8-cold": lambda: fp8_rows("cold"),
         "decode-skinny-cold": lambda: skinny_rows("cold", LLAMA3_BF16_SHAPES, DECODE_MS),
         "decode-fp8-cold": lambda: fp8_rows("cold", LLAMA3_FP8_SHAPES, DECODE_MS), "square-cold": square_cold_rows, "attention-cold": attention_cold_rows}

def run_parts(parts_table, out, parts):
    """Run the named parts (all by default) into OUT, each writing its CSV as it finishes; a
    part that fails is recorded and the rest still run. Clocks and power around each part."""
    parts = parts or list(parts_table)
    os.makedirs(out, exist_ok=True)
    print(torch.__version__, torch.cuda.get_device_name(0), flush=True)
    for p in parts:
        t0 = time.time()
        nvml_sample(p, "start")
        try:
            rows = parts_table[p]()
        except Exception as e:
            import traceback
            traceback.print_exc()
            rows = [{"part": p, "error": str(e)[:300]}]
            print(p, "failed:", e, flush=True)
        nvml_sample(p, "end")
        write(out, p + ".csv", rows)
        write(out, "clocks.csv", CLOCKS)
        print(f"== {p}: {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    run_parts(PARTS, sys.argv[1], sys.argv[2:])
