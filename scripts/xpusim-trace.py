#!/usr/bin/env python3
"""Generates an xpusim trace (format v1) for a transformer from a model card
(configs/models/*.yaml): one prefill or one decode step, fused or unfused attention.

  scripts/xpusim-trace.py configs/models/llama-2-70b.yaml --phase decode --batch 32 \\
      --context 2048 --weights fp8 -o llama70b-decode.yaml

Per layer: norm, QKV projection, attention (fused: one op; unfused: QK^T, softmax, PV as
batched GEMMs and a row-wise op), output projection, residual add, norm, FFN (SwiGLU or GELU;
MoE: router, then the active experts as one batched GEMM each way), residual add. After the
layers: final norm and the LM head for the last token of each sequence. Layers are a
`repeat` block. Decode reads the KV cache of `--context` tokens in the attention op.

Formats: GEMMs run in the weight format (--weights: the tensor cores take both operands in
it, e.g. W8A8 fp8); norms, activations and residual adds in --activations; attention in --kv.
Weight-only quantisation (int4 weights, bf16 math) is not expressible as one op format yet.
"""
import argparse
import math
import sys

import yaml

CARD_KEYS = {"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "gated", "vocab", "norm",
             "experts", "top_k", "encoder"}
FORMATS = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp8_e5m2", "int8", "int4", "fp4"}


def fail(msg):
    sys.exit(f"xpusim-trace: {msg}")


def load_card(path):
    try:
        with open(path) as f:
            card = yaml.safe_load(f)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except yaml.YAMLError as e:
        fail(f"{path}: not valid YAML: {e}")
    if not isinstance(card, dict):
        fail(f"{path}: expected a mapping of model parameters")
    for k in card:
        if k not in CARD_KEYS:
            fail(f"{path}: unknown key '{k}' (known: {', '.join(sorted(CARD_KEYS))})")
    for k in ("layers", "hidden", "heads", "ffn", "vocab"):
        if not isinstance(card.get(k), int) or card[k] < 1:
            fail(f"{path}: key '{k}' must be a positive whole number")
    card.setdefault("kv_heads", card["heads"])
    card.setdefault("head_dim", card["hidden"] // card["heads"])
    card.setdefault("gated", False)
    card.setdefault("experts", 1)
    card.setdefault("top_k", 1)
    card.setdefault("norm", "layernorm")
    card.setdefault("encoder", False)
    if card["heads"] % card["kv_heads"]:
        fail(f"{path}: heads ({card['heads']}) must be a multiple of kv_heads ({card['kv_heads']})")
    if not 1 <= card["top_k"] <= card["experts"]:
        fail(f"{path}: top_k must be between 1 and experts")
    card["name"] = card.get("name") or path
    return card


def gemm(name, m, n, k, dtype, batch=1, sparsity=None):
    op = {"name": name, "kind": "gemm", "m": m, "n": n, "k": k, "dtype": dtype}
    if batch > 1:
        op["batch"] = batch
    if sparsity:
        op["sparsity"] = sparsity
    return op


def layer_ops(c, a):
    """The ops of one layer for `tokens` rows (prefill: batch x prompt; decode: batch)."""
    B, H, KV, d, D = a.batch, c["heads"], c["kv_heads"], c["head_dim"], c["hidden"]
    seq_q = a.prompt if a.phase == "prefill" else 1
    seq_kv = a.prompt if a.phase == "prefill" else a.context
    T = B * seq_q
    w, act, kv, sp = a.weights, a.activations, a.kv, a.sparsity
    ops = [{"name": "norm1", "kind": "layernorm", "shape": [T, D], "dtype": act},
           gemm("qkv", T, (H + 2 * KV) * d, D, w, sparsity=sp)]
    causal = not c["encoder"]
    if a.attention == "fused":
        att = {"name": "attention", "kind": "attention", "batch": B, "heads": H, "seq_q": seq_q, "head_dim": d,
               "dtype": kv}
        if KV != H:
            att["kv_heads"] = KV
        if seq_kv != seq_q:
            att["seq_kv"] = seq_kv
        if causal:
            att["causal"] = True
        ops.append(att)
    else:
        # As an unfused implementation runs it: the whole score matrix, masked, one head at a time.
        ops += [gemm("qk", seq_q, seq_kv, d, kv, batch=B * H),
                {"name": "softmax", "kind": "softmax", "shape": [B * H * seq_q, seq_kv], "dtype": kv},
                gemm("pv", seq_q, d, seq_kv, kv, batch=B * H)]
    ops += [gemm("o_proj", T, D, H * d, w, sparsity=sp),
            {"name": "residual1", "kind": "elementwise", "shape": [T, D], "inputs": 2, "dtype": act},
            {"name": "norm2", "kind": "layernorm", "shape": [T, D], "dtype": act}]
    F, up_n = c["ffn"], c["ffn"] * (2 if c["gated"] else 1)
    act_op = {"name": "activation", "kind": "elementwise", "shape": [T, F], "dtype": act,
              "inputs": 2 if c["gated"] else 1, "flops_per_element": 6 if c["gated"] else 8}
    if c["experts"] == 1:
        ops += [gemm("ffn_up", T, up_n, D, w, sparsity=sp), act_op, gemm("ffn_down", T, D, F, w, sparsity=sp)]
    else:
        # Routing balanced over the experts that receive tokens (a decode batch may touch few).
        E, k = c["experts"], c["top_k"]
        active = min(E, T * k)
        per = math.ceil(T * k / active)
        act_op["shape"] = [active * per, F]
        ops += [gemm("router", T, E, D, act),
                gemm("expert_up", per, up_n, D, w, batch=active, sparsity=sp), act_op,
                gemm("expert_down", per, D, F, w, batch=active, sparsity=sp)]
    ops.append({"name": "residual2", "kind": "elementwise", "shape": [T, D], "inputs": 2, "dtype": act})
    return ops


def build(c, a):
    layers = a.layers or c["layers"]
    if layers > c["layers"]:
        fail(f"--layers {layers}: the model has {c['layers']}")
    T = a.batch * (a.prompt if a.phase == "prefill" else 1)
    what = (f"prefill of {a.batch} x {a.prompt} tokens" if a.phase == "prefill"
            else f"one decode step of {a.batch} sequences at context {a.context}")
    trace = {
        "xpusim_trace": 1,
        "name": f"{c['name']}-{a.phase}-b{a.batch}-{a.prompt if a.phase == 'prefill' else a.context}-{a.weights}",
        "description": (f"{c['name']}: {what}, {layers} of {c['layers']} layers, weights {a.weights}, activations "
                        f"{a.activations}, attention {a.attention} in {a.kv}. Generated by scripts/xpusim-trace.py."),
        "tokens": T if a.phase == "prefill" else a.batch,
        "ops": [{"repeat": layers, "name": "layer", "ops": layer_ops(c, a)}],
    }
    if not c["encoder"]:
        trace["ops"] += [{"name": "final_norm", "kind": "layernorm", "shape": [T, c["hidden"]], "dtype": a.activations},
                         gemm("lm_head", a.batch, c["vocab"], c["hidden"], a.weights)]
    return trace


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("model", help="model card, e.g. configs/models/llama-2-70b.yaml")
    ap.add_argument("--phase", choices=["prefill", "decode"], required=True)
    ap.add_argument("--batch", type=int, default=1, help="sequences (default 1)")
    ap.add_argument("--prompt", type=int, default=2048, help="prefill: prompt length (default 2048)")
    ap.add_argument("--context", type=int, default=2048, help="decode: tokens in the KV cache (default 2048)")
    ap.add_argument("--weights", default="bf16", help="GEMM format (default bf16)")
    ap.add_argument("--activations", default="bf16", help="format of norms, activations, residuals (default bf16)")
    ap.add_argument("--kv", default=None, help="attention / KV-cache format (default: --activations)")
    ap.add_argument("--attention", choices=["fused", "unfused"], default="fused")
    ap.add_argument("--sparsity", choices=["2:4"], default=None, help="2:4 sparse weights")
    ap.add_argument("--layers", type=int, default=0, help="generate only the first N layers (default all)")
    ap.add_argument("-o", "--out", default="-", help="output file (default standard output)")
    a = ap.parse_args()
    a.kv = a.kv or a.activations
    for flag in ("weights", "activations", "kv"):
        if getattr(a, flag) not in FORMATS:
            fail(f"--{flag} {getattr(a, flag)}: unknown format (known: {', '.join(sorted(FORMATS))})")
    for flag in ("batch", "prompt", "context"):
        if getattr(a, flag) < 1:
            fail(f"--{flag} must be at least 1")
    if a.layers < 0:
        fail("--layers must be positive")
    c = load_card(a.model)
    if c["encoder"] and a.phase == "decode":
        fail(f"{a.model}: an encoder has no decode phase")
    text = yaml.safe_dump(build(c, a), sort_keys=False, default_flow_style=None, width=120)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
