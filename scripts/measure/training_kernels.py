#!/usr/bin/env python3
"""Real-hardware measurements of the kernels a training step is made of (issue 49): the three
GEMMs of every linear layer (forward, data gradient, weight gradient) at the shapes of the
published training rows, fused attention's forward against its backward, AdamW's step, the fp8
casts and transposes a Transformer-Engine-style step adds, and a whole Llama-2-7B-shaped layer's
forward and backward kernel by kernel. Each part writes its CSV into OUT_DIR when it finishes; a
part that fails is recorded and the rest still run. Changes no device setting; samples SM clock
and board power through NVML around each part (clocks.csv).

  gemm-train.csv   bf16 (and fp8 for the Llama-2-7B shapes) GEMMs of each linear layer, for T
                   tokens of a microbatch, N outputs and K inputs, in its three roles:
                     fwd    Y[T,N]  = X[T,K] W[N,K]^T   (F.linear)
                     dgrad  dX[T,K] = dY[T,N] W[N,K]
                     wgrad  dW[N,K] = dY[T,N]^T X[T,K]
                   bf16 through torch.mm on the operands as autograd holds them (transposed
                   views, no copies); fp8 through torch._scaled_mm as Transformer Engine runs it
                   (every GEMM row-major A by column-major B after a cast-transpose; gradients in
                   e5m2), GPU time per call from a CUDA graph of 20 calls, and the cuBLAS kernel
  attention-train.csv  causal F.scaled_dot_product_attention (flash backend, bf16) forward and
                   forward+backward per call (CUDA events), and each kernel of both (profiler)
  attention-cudnn.csv  the same through cuDNN's fused attention (SDPBackend.CUDNN_ATTENTION)
  adam.csv         torch.optim.AdamW step (fused and foreach) over P fp32 parameters
  fp8-cast.csv     bf16 to e4m3 cast, transposed cast (.t().contiguous()) and amax, by size
  layer-train.csv  every kernel of an eager Llama-2-7B-shaped layer's forward and backward (bf16,
                   4096 tokens), the median over 4 stacked layers, and the layer's total
  wgrad-accum.csv  every linear layer's weight-gradient GEMM through cublasGemmEx as Megatron-LM's
                   gradient-accumulation fusion calls it (bf16 operands, fp32 C, beta 1: the
                   gradient added into the fp32 main_grad), against the same call writing bf16
                   or fp32 with beta 0, and the unfused form's main_grad.add_(grad); each call on
                   operands and gradient buffers not in the L2 (a cold copy per call)
  sustained.csv    Llama-2-7B's twelve layer GEMMs at 4096 tokens (forward, data gradient, and
                   weight gradient added into fp32 as above; bf16, then fp8 through
                   torch._scaled_mm with the weight gradient writing fp32) as one CUDA graph,
                   replayed back to back for 30 s each: the time of every ten replays, and SM
                   clock and board power through NVML every 0.1 s (what a training step's GEMMs
                   sustain at the card's shipped power limit)

Usage: python3 training_kernels.py OUT_DIR [part ...]   (parts: gemm-train attention-train
attention-cudnn adam fp8-cast layer-train wgrad-accum sustained; default all)"""
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_microbench import timed  # noqa: E402
from serving_kernels import cold, per_call_graph, run_parts  # noqa: E402

dev = torch.device("cuda")
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2

# (model, tokens of a microbatch, [(layer, N, K)]): the published training rows' layers per GPU
SHAPES = [
    ("llama-2-7b", 4096, [("qkv", 12288, 4096), ("o_proj", 4096, 4096), ("gate_up", 22016, 4096),
                          ("down", 4096, 11008)]),
    ("gpt-1.7b", 4096, [("qkv", 6144, 2048), ("o_proj", 2048, 2048), ("fc1", 8192, 2048),
                        ("fc2", 2048, 8192)]),
    ("gpt-22b-tp8", 8192, [("qkv", 2304, 6144), ("o_proj", 6144, 768), ("fc1", 3072, 6144),
                           ("fc2", 6144, 3072)]),
]


def med(v):
    return statistics.median(v) if v else float("nan")


def kernels_of(fn, iters=1):
    """(name, duration us) of every CUDA kernel of `iters` eager calls after a warm one."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    ev = sorted([(e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA])
    return [(n, b - a) for a, b, n in ev]


def names(fn):
    try:
        return " | ".join(n[:90] for n, _ in kernels_of(fn))
    except Exception as e:  # the profiler unavailable: the name is left out
        return "profiler: " + str(e)[:60]


def gemm_calls(dtype, T, N, K):
    """{role: callable} for one linear layer's three GEMMs."""
    if dtype == "bf16":
        bf = torch.bfloat16
        x = torch.randn(T, K, device=dev, dtype=bf)
        w = torch.randn(N, K, device=dev, dtype=bf) * 0.02
        dy = torch.randn(T, N, device=dev, dtype=bf)
        return {"fwd": lambda: torch.mm(x, w.t()), "dgrad": lambda: torch.mm(dy, w),
                "wgrad": lambda: torch.mm(dy.t(), x)}
    one = torch.tensor(1.0, device=dev)
    x = torch.randn(T, K, device=dev).to(E4M3)      # X, row-major
    xt = torch.randn(K, T, device=dev).to(E4M3)     # X^T from the cast-transpose
    w = torch.randn(N, K, device=dev).to(E4M3)      # W, row-major
    wt = torch.randn(K, N, device=dev).to(E4M3)     # W^T from the cast-transpose
    dy = torch.randn(T, N, device=dev).to(E5M2)
    dyt = torch.randn(N, T, device=dev).to(E5M2)

    def mm(a, b):
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return {"fwd": lambda: mm(x, w.t()),            # [T,K] x col-major [K,N]
            "dgrad": lambda: mm(dy, wt.t()),        # [T,N] x col-major [N,K]
            "wgrad": lambda: mm(dyt, xt.t())}       # [N,T] x col-major [T,K]


def gemm_train_rows():
    rows = []
    for model, T, layers in SHAPES:
        for dtype in (["bf16", "fp8"] if model == "llama-2-7b" else ["bf16"]):
            for layer, N, K in layers:
                try:
                    calls = gemm_calls(dtype, T, N, K)
                except Exception as e:
                    rows.append({"model": model, "dtype": dtype, "layer": layer, "error": str(e)[:200]})
                    continue
                for role, fn in calls.items():
                    m, n, k = {"fwd": (T, N, K), "dgrad": (T, K, N), "wgrad": (N, K, T)}[role]
                    row = {"model": model, "dtype": dtype, "layer": layer, "role": role, "m": m, "n": n, "k": k}
                    try:
                        best, mean = per_call_graph(fn)
                        row.update(best_us=round(best * 1e6, 2), mean_us=round(mean * 1e6, 2),
                                   tflops_best=round(2 * m * n * k / best / 1e12, 1), kernels=names(fn))
                    except Exception as e:
                        row["error"] = str(e)[:200]
                    rows.append(row)
                    print(row, flush=True)
                del calls
                torch.cuda.empty_cache()
    return rows


# (model, batch, heads per GPU, sequence, head dim)
ATTENTION = [("llama-2-7b", 1, 32, 4096, 128), ("gpt-1.7b", 1, 16, 4096, 128),
             ("gpt-22b-tp8", 4, 8, 2048, 96), ("gpt-175b-tp8", 1, 12, 2048, 128)]


def attention_train_rows(backend="flash"):
    """Causal attention through F.scaled_dot_product_attention with one backend: `flash`
    (PyTorch's FlashAttention-2, mma.sync) or `cudnn` (cuDNN's fused attention, the kernel
    Transformer Engine runs on Hopper)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    chosen = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    rows = []
    for model, B, H, S, d in ATTENTION:
        q, k, v = (torch.randn(B, H, S, d, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        do = torch.randn(B, H, S, d, device=dev, dtype=torch.bfloat16)

        def fwd():
            with sdpa_kernel(chosen):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def fwd_nograd():
            with torch.no_grad():
                return fwd()

        def step():
            o = fwd()
            q.grad = k.grad = v.grad = None
            o.backward(do)
        row = {"backend": backend, "model": model, "batch": B, "heads": H, "seq": S, "head_dim": d,
               "causal_flop_fwd": 2 * 2 * B * H * S * S * d // 2}
        try:
            f_best, f_mean = timed(fwd_nograd, min_s=0.3)
            s_best, s_mean = timed(step, min_s=0.3)
            row.update(fwd_best_us=round(f_best * 1e6, 1), fwd_mean_us=round(f_mean * 1e6, 1),
                       fwd_bwd_best_us=round(s_best * 1e6, 1), fwd_bwd_mean_us=round(s_mean * 1e6, 1),
                       bwd_over_fwd=round((s_best - f_best) / f_best, 3))
            ks = kernels_of(step, iters=3)
            per = {}
            for n, t in ks:
                per.setdefault(n, []).append(t)
            row["kernels"] = " | ".join(f"{n[:80]}: {med(t):.1f} us x{len(t) // 3}" for n, t in per.items())
        except Exception as e:
            row["error"] = str(e)[:200]
        rows.append(row)
        print(row, flush=True)
        torch.cuda.empty_cache()
    return rows


def adam_rows():
    rows = []
    for P in [2**24, 2**27, 2**28]:
        for mode in ["fused", "foreach"]:
            p = torch.zeros(P, device=dev, requires_grad=True)
            p.grad = torch.randn(P, device=dev) * 1e-3
            opt = torch.optim.AdamW([p], lr=1e-4, fused=mode == "fused", foreach=mode == "foreach")
            try:
                best, mean = timed(opt.step, min_s=0.3)
                rows.append({"params": P, "mode": mode, "best_us": round(best * 1e6, 1), "mean_us": round(mean * 1e6, 1),
                             "gb_per_s_at_28_bytes": round(28 * P / best / 1e9, 1), "kernels": names(opt.step)})
            except Exception as e:
                rows.append({"params": P, "mode": mode, "error": str(e)[:200]})
            print(rows[-1], flush=True)
            del p, opt
            torch.cuda.empty_cache()
    return rows


def fp8_cast_rows():
    rows = []
    for r, c in [(4096, 4096), (4096, 11008), (8192, 8192), (4096, 22016)]:
        x = torch.randn(r, c, device=dev, dtype=torch.bfloat16)
        calls = {"cast": lambda: x.to(E4M3), "cast_transpose": lambda: x.t().contiguous().to(E4M3),
                 "cast_of_transposed_view": lambda: x.t().to(E4M3).contiguous(),
                 "amax": lambda: x.abs().amax()}
        for what, fn in calls.items():
            try:
                best, mean = per_call_graph(fn)
                rows.append({"rows": r, "cols": c, "op": what, "best_us": round(best * 1e6, 2), "mean_us": round(mean * 1e6, 2),
                             "gb_per_s_read_bf16": round(2 * r * c / best / 1e9, 1), "kernels": names(fn)})
            except Exception as e:
                rows.append({"rows": r, "cols": c, "op": what, "error": str(e)[:200]})
            print(rows[-1], flush=True)
        torch.cuda.empty_cache()
    return rows


def layer_train_rows():
    """An eager Llama-2-7B-shaped layer (RMSNorm, fused QKV, RoPE, flash attention, O, SwiGLU
    MLP), bf16, 4096 tokens, 4 stacked: forward and backward, every kernel by the profiler."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.manual_seed(0)
    D, FF, H, S, L = 4096, 11008, 32, 4096, 4
    bf = torch.bfloat16
    mk = lambda *s: (torch.randn(*s, device=dev, dtype=bf) * 0.02).requires_grad_()  # noqa: E731
    W = [dict(qkv=mk(3 * D, D), o=mk(D, D), gu=mk(2 * FF, D), dn=mk(D, FF),
              n1=torch.ones(D, device=dev, dtype=bf, requires_grad=True),
              n2=torch.ones(D, device=dev, dtype=bf, requires_grad=True)) for _ in range(L)]
    pos = torch.arange(S, device=dev, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, 128, 2, device=dev, dtype=torch.float32) / 128))
    ang = torch.outer(pos, inv)
    cos, sin = ang.cos().to(bf), ang.sin().to(bf)

    def rope(t):  # t: [1, H, S, 128]
        a, b = t[..., :64], t[..., 64:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    def rms(x, w):
        return F.rms_norm(x, (D,), w, 1e-5)

    x0 = torch.randn(1, S, D, device=dev, dtype=bf, requires_grad=True)
    dout = torch.randn(1, S, D, device=dev, dtype=bf)

    def fwd():
        x = x0
        for w in W:
            q, k, v = F.linear(rms(x, w["n1"]), w["qkv"]).view(1, S, 3, H, 128).permute(2, 0, 3, 1, 4)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                a = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
            x = x + F.linear(a.transpose(1, 2).reshape(1, S, D), w["o"])
            g, u = F.linear(rms(x, w["n2"]), w["gu"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(g) * u, w["dn"])
        return x

    def step():
        for w in W:
            for t in w.values():
                t.grad = None
        x0.grad = None
        fwd().backward(dout)
    rows = []
    f_best, _ = timed(lambda: fwd().detach(), min_s=0.3)
    s_best, s_mean = timed(step, min_s=0.5)
    rows.append({"position": "total", "kernel": f"{L} layers", "fwd_us_per_layer": round(f_best * 1e6 / L, 1),
                 "fwd_bwd_us_per_layer": round(s_best * 1e6 / L, 1), "fwd_bwd_mean_us_per_layer": round(s_mean * 1e6 / L, 1)})
    print(rows[-1], flush=True)
    ks = kernels_of(step)
    rows.append({"position": "count", "kernel": f"{len(ks)} kernels in one step of {L} layers",
                 "sum_us_per_layer": round(sum(t for _, t in ks) / L, 1)})
    by = {}
    for i, (n, t) in enumerate(ks):
        by.setdefault(n, []).append(t)
    for n, t in sorted(by.items(), key=lambda kv: -sum(kv[1])):
        rows.append({"position": "kernel", "kernel": n[:140], "calls_per_layer": round(len(t) / L, 2),
                     "median_us": round(med(t), 2), "sum_us_per_layer": round(sum(t) / L, 1)})
        print(rows[-1], flush=True)
    return rows


def cublas_gemm_ex():
    """cublasGemmEx from the libcublas PyTorch has loaded, on PyTorch's handle (its stream and
    workspace), for the calls PyTorch does not expose: fp32 C from bf16 operands, beta 1."""
    import ctypes
    torch.mm(torch.zeros(8, 8, device=dev), torch.zeros(8, 8, device=dev))  # cuBLAS loaded
    path = None
    with open("/proc/self/maps") as f:
        for line in f:
            name = line.split()[-1]
            if "/libcublas.so" in name:
                path = name
                break
    lib = ctypes.CDLL(path or "libcublas.so")
    fn = lib.cublasGemmEx
    fn.restype = ctypes.c_int
    P, I = ctypes.c_void_p, ctypes.c_int
    fn.argtypes = [P, I, I, I, I, I, P, P, I, I, P, I, I, P, P, I, I, I, I]
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    R16BF, R32F, COMPUTE_32F, DEFAULT_TENSOR_OP = 14, 0, 68, 99

    def wgrad(x, dy, c, beta):
        """c[N,K] (row-major) = dy[T,N]^T x[T,K] + beta c: Megatron's wgrad_gemm_accum_fp32 call
        (column-major: C[K,N] = X[K,T] . dY[N,T]^T)."""
        T, K = x.shape
        N = dy.shape[1]
        st = fn(P(torch.cuda.current_blas_handle()), 0, 1, K, N, T, ctypes.byref(one), P(x.data_ptr()), R16BF, K,
                P(dy.data_ptr()), R16BF, N, ctypes.byref(one if beta else zero), P(c.data_ptr()),
                R32F if c.dtype == torch.float32 else R16BF, K, COMPUTE_32F, DEFAULT_TENSOR_OP)
        if st != 0:
            raise RuntimeError(f"cublasGemmEx status {st}")
    return wgrad


def wgrad_accum_rows():
    rows = []
    wgrad = cublas_gemm_ex()
    bf = torch.bfloat16
    for model, T, layers in SHAPES:
        for layer, N, K in layers:
            def make_gemm(out_dtype, beta):
                def make():
                    x = torch.randn(T, K, device=dev, dtype=bf)
                    dy = torch.randn(T, N, device=dev, dtype=bf)
                    c = torch.zeros(N, K, device=dev, dtype=out_dtype)
                    return lambda: wgrad(x, dy, c, beta)
                return make

            def make_add():
                g = torch.randn(N, K, device=dev, dtype=bf)
                c = torch.zeros(N, K, device=dev, dtype=torch.float32)
                return lambda: c.add_(g)
            variants = {"bf16_out": (make_gemm(bf, 0), 2 * (T * K + T * N + N * K)),
                        "fp32_out": (make_gemm(torch.float32, 0), 2 * (T * K + T * N) + 4 * N * K),
                        "fp32_accumulate": (make_gemm(torch.float32, 1), 2 * (T * K + T * N) + 4 * N * K),
                        "main_grad_add": (make_add, 10 * N * K)}
            for what, (make, nbytes) in variants.items():
                row = {"model": model, "layer": layer, "variant": what, "m": N, "n": K, "k": T}
                try:
                    fn, copies = cold(make, nbytes)
                    best, mean = per_call_graph(fn)
                    row.update(copies=copies, best_us=round(best * 1e6, 2), mean_us=round(mean * 1e6, 2),
                               tflops_best=round(2 * N * K * T / best / 1e12, 1) if what != "main_grad_add" else "",
                               gb_per_s=round(10 * N * K / best / 1e9, 1) if what == "main_grad_add" else "",
                               kernels=names(fn))
                    del fn
                except Exception as e:
                    row["error"] = str(e)[:200]
                rows.append(row)
                print(row, flush=True)
                torch.cuda.empty_cache()
    return rows


def layer_gemms(dtype, wgrad):
    """One callable running Llama-2-7B's twelve layer GEMMs at 4096 tokens in `dtype`, outputs
    preallocated (graph-capturable): forward, data gradient, weight gradient into fp32."""
    T, layers = SHAPES[0][1], SHAPES[0][2]
    calls = []
    for _, N, K in layers:
        if dtype == "bf16":
            bf = torch.bfloat16
            x, w, dy = (torch.randn(*s, device=dev, dtype=bf) for s in ((T, K), (N, K), (T, N)))
            y, dx = torch.empty(T, N, device=dev, dtype=bf), torch.empty(T, K, device=dev, dtype=bf)
            c = torch.zeros(N, K, device=dev)
            calls += [lambda x=x, w=w, y=y: torch.mm(x, w.t(), out=y), lambda dy=dy, w=w, dx=dx: torch.mm(dy, w, out=dx),
                      lambda x=x, dy=dy, c=c: wgrad(x, dy, c, 1)]
        else:
            one = torch.tensor(1.0, device=dev)
            x, w = torch.randn(T, K, device=dev).to(E4M3), torch.randn(N, K, device=dev).to(E4M3)
            xt, wt = torch.randn(K, T, device=dev).to(E4M3), torch.randn(K, N, device=dev).to(E4M3)
            dy, dyt = torch.randn(T, N, device=dev).to(E5M2), torch.randn(N, T, device=dev).to(E5M2)

            def mm(a, b, out_dtype=torch.bfloat16):
                return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=out_dtype)
            calls += [lambda x=x, w=w: mm(x, w.t()), lambda dy=dy, wt=wt: mm(dy, wt.t()),
                      lambda dyt=dyt, xt=xt: mm(dyt, xt.t(), torch.float32)]

    def step():
        for f in calls:
            f()
    return step


def sustained_rows(seconds=30.0):
    import threading
    import time
    from gpu_microbench import graph_of
    wgrad = cublas_gemm_ex()
    rows = []
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as e:  # NVML missing: the timings still stand
        h, rows = None, [{"kind": "nvml", "error": str(e)[:100]}]
    for dtype in ("bf16", "fp8"):
        try:
            g = graph_of(layer_gemms(dtype, wgrad), 1)
        except Exception as e:
            rows.append({"dtype": dtype, "kind": "error", "error": str(e)[:200]})
            continue
        stop, t0 = [False], time.time()

        def sample(dtype=dtype):
            while not stop[0] and h is not None:
                rows.append({"dtype": dtype, "kind": "nvml", "t_s": round(time.time() - t0, 2),
                             "sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                             "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,
                             "temp_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)})
                time.sleep(0.1)
        th = threading.Thread(target=sample)
        th.start()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        while time.time() - t0 < seconds:
            start.record()
            for _ in range(10):
                g.replay()
            end.record()
            end.synchronize()
            rows.append({"dtype": dtype, "kind": "replays", "t_s": round(time.time() - t0, 2),
                         "layer_ms": round(start.elapsed_time(end) / 10, 4)})
        stop[0] = True
        th.join()
        its = [r["layer_ms"] for r in rows if r.get("kind") == "replays" and r["dtype"] == dtype]
        print(dtype, "first", its[:3], "last", its[-3:], flush=True)
        del g
        torch.cuda.empty_cache()
        time.sleep(5)  # cool down a little between the formats
    return rows


PARTS = {"gemm-train": gemm_train_rows, "attention-train": attention_train_rows,
         "attention-cudnn": lambda: attention_train_rows("cudnn"), "adam": adam_rows,
         "fp8-cast": fp8_cast_rows, "layer-train": layer_train_rows, "wgrad-accum": wgrad_accum_rows,
         "sustained": sustained_rows}

if __name__ == "__main__":
    run_parts(PARTS, sys.argv[1], sys.argv[2:])
