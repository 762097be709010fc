#!/usr/bin/env python3
"""One decode step of a Llama-2-7B-shaped model (random fp16 weights: 32 layers, hidden 4096,
32 heads, SwiGLU 11008, vocabulary 32000) with a KV cache of `context` tokens, written as
PyTorch eager code (RMSNorm as Hugging Face's LlamaRMSNorm computes it, SDPA attention), timed
from a CUDA graph: the per-token latency the GPU itself allows, for comparison with
`scripts/xpusim-trace.py configs/models/llama-2-7b.yaml --phase decode --fusion none`.
--rope applies rotary embeddings to q and k as Hugging Face's apply_rotary_pos_emb does;
--eager also times the step launched op by op from Python.
Usage: python3 decode_step.py OUT.csv [--rope] [--eager] [batch ...]"""
import csv
import sys

import torch
import torch.nn.functional as F

from gpu_microbench import graph_of

L, D, H, FF, V, DH = 32, 4096, 32, 11008, 32000, 128
dev, dt = torch.device("cuda"), torch.float16


def rms(x, w):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * w


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def main(out, batches, context=2048, rope=False, eager=False):
    torch.manual_seed(0)
    W = [dict(qkv=torch.randn(3 * D, D, device=dev, dtype=dt) * 0.01, o=torch.randn(D, D, device=dev, dtype=dt) * 0.01,
              gu=torch.randn(2 * FF, D, device=dev, dtype=dt) * 0.01, dn=torch.randn(D, FF, device=dev, dtype=dt) * 0.01,
              n1=torch.ones(D, device=dev, dtype=dt), n2=torch.ones(D, device=dev, dtype=dt)) for _ in range(L)]
    head = torch.randn(V, D, device=dev, dtype=dt) * 0.01
    rows = []
    for B in batches:
        kc = [torch.randn(B, H, context, DH, device=dev, dtype=dt) for _ in range(L)]
        vc = [torch.randn(B, H, context, DH, device=dev, dtype=dt) for _ in range(L)]
        x0 = torch.randn(B, 1, D, device=dev, dtype=dt)
        cos = torch.randn(1, 1, 1, DH, device=dev, dtype=dt)  # this position's rotary angles
        sin = torch.randn(1, 1, 1, DH, device=dev, dtype=dt)

        def step():
            x = x0
            for l in range(L):
                w = W[l]
                q, k, v = F.linear(rms(x, w["n1"]), w["qkv"]).view(B, 1, 3, H, DH).permute(2, 0, 3, 1, 4)
                if rope:
                    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
                kc[l][:, :, -1:] = k  # write the new token's K and V into the cache
                vc[l][:, :, -1:] = v
                a = F.scaled_dot_product_attention(q, kc[l], vc[l]).transpose(1, 2).reshape(B, 1, D)
                x = x + F.linear(a, w["o"])
                g, u = F.linear(rms(x, w["n2"]), w["gu"]).chunk(2, dim=-1)
                x = x + F.linear(F.silu(g) * u, w["dn"])
            return F.linear(x, head)

        with torch.no_grad():
            g = graph_of(step, 1)
            for _ in range(3):
                g.replay()
            torch.cuda.synchronize()
            times = []
            for _ in range(20):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                g.replay()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) / 1e3)
        weights = sum(t.numel() for w in W for t in w.values()) * 2 + head.numel() * 2
        kv = 2 * L * B * H * context * DH * 2
        model = "llama-2-7b shape, fp16" + (", rope" if rope else "")
        rows.append({"model": model, "launch": "cuda graph", "batch": B, "context": context, "best_s": min(times),
                     "median_s": sorted(times)[len(times) // 2], "weight_bytes": weights, "kv_bytes": kv})
        print(rows[-1], flush=True)
        if eager:
            with torch.no_grad():
                for _ in range(3):
                    step()
                torch.cuda.synchronize()
                times = []
                for _ in range(20):
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    step()
                    b.record()
                    b.synchronize()
                    times.append(a.elapsed_time(b) / 1e3)
            rows.append({"model": model, "launch": "eager", "batch": B, "context": context, "best_s": min(times),
                         "median_s": sorted(times)[len(times) // 2], "weight_bytes": weights, "kv_bytes": kv})
            print(rows[-1], flush=True)
        del kc, vc
        torch.cuda.empty_cache()
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    flags = [x for x in sys.argv[2:] if x.startswith("--")]
    sizes = [int(x) for x in sys.argv[2:] if not x.startswith("--")]
    main(sys.argv[1], sizes or [1, 32], rope="--rope" in flags, eager="--eager" in flags)
