#!/usr/bin/env python3
"""Generates an xpusim trace (format v1) from a model card (configs/models/*.yaml): a
transformer's prefill step, decode step or training step (fused or unfused attention), or a
ResNet's inference.

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
             "experts", "top_k", "encoder", "family"}
RESNET_KEYS = {"name", "family", "blocks", "width", "image", "classes"}
FORMATS = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp8_e5m2", "int8", "int4", "fp4"}


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):  # write shared shapes out in full, no YAML anchors
        return True


def dump(trace):
    return yaml.dump(trace, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=120)


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
    if card.get("family", "transformer") == "resnet":
        for k in card:
            if k not in RESNET_KEYS:
                fail(f"{path}: unknown key '{k}' for a resnet (known: {', '.join(sorted(RESNET_KEYS))})")
        blocks = card.get("blocks")
        if not isinstance(blocks, list) or not blocks or not all(isinstance(b, int) and b > 0 for b in blocks):
            fail(f"{path}: key 'blocks' must be a list of positive block counts per stage")
        for k in ("width", "image", "classes"):
            if not isinstance(card.get(k), int) or card[k] < 1:
                fail(f"{path}: key '{k}' must be a positive whole number")
        card["name"] = card.get("name") or path
        return card
    if card.get("family", "transformer") != "transformer":
        fail(f"{path}: key 'family' must be transformer or resnet")
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
    seq_q = 1 if a.phase == "decode" else a.prompt
    seq_kv = a.context if a.phase == "decode" else a.prompt
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


def conv(name, b, h, w, c, k, r, stride, dtype):
    op = {"name": name, "kind": "conv2d", "batch": b, "h": h, "w": w, "c": c, "k": k, "r": r, "s": r, "dtype": dtype}
    if stride > 1:
        op["stride"] = stride
    if r > 1:
        op["pad"] = r // 2
    return op


def build_resnet(c, a):
    """Inference of a bottleneck ResNet (batch norm folded): convolutions as implicit GEMMs."""
    B, dt, act = a.batch, a.weights, a.activations
    hw = c["image"] // 2  # after the 7x7/2 stem
    ops = [conv("stem", B, c["image"], c["image"], 3, c["width"], 7, 2, dt),
           {"name": "stem_relu", "kind": "elementwise", "shape": [B * hw * hw * c["width"]], "dtype": act}]
    hw //= 2  # 3x3/2 max pool, as a reduction of 9 taps per output
    ops.append({"name": "maxpool", "kind": "reduction", "shape": [B * hw * hw * c["width"], 9], "dtype": act})
    ch = c["width"]
    for si, n in enumerate(c["blocks"]):
        width = c["width"] * 2 ** si
        for bi in range(n):
            stride = 2 if bi == 0 and si > 0 else 1
            p = f"s{si + 1}b{bi + 1}"
            out_hw = hw // stride
            ops += [conv(f"{p}.conv1", B, hw, hw, ch, width, 1, 1, dt),
                    conv(f"{p}.conv2", B, hw, hw, width, width, 3, stride, dt),
                    conv(f"{p}.conv3", B, out_hw, out_hw, width, 4 * width, 1, 1, dt)]
            if bi == 0:
                ops.append(conv(f"{p}.downsample", B, hw, hw, ch, 4 * width, 1, stride, dt))
            ops.append({"name": f"{p}.add_relu", "kind": "elementwise", "shape": [B * out_hw * out_hw * 4 * width],
                        "inputs": 2, "dtype": act})
            ch, hw = 4 * width, out_hw
    ops += [{"name": "avgpool", "kind": "reduction", "shape": [B * ch, hw * hw], "dtype": act},
            gemm("fc", B, c["classes"], ch, dt)]
    return {"xpusim_trace": 1, "name": f"{c['name']}-b{B}-{dt}",
            "description": f"{c['name']} inference, batch {B}, {dt}. Generated by scripts/xpusim-trace.py.",
            "ops": ops}


def backward_ops(fwd, c, a):
    """The backward pass of one layer, in reverse: for each GEMM C[m,n] = A[m,k] B[k,n], the
    data gradient dA = dC B^T (m x k, inner n) and the weight gradient dB = A^T dC (k x n, inner
    m); attention backward as its recompute-free matrix products (dV, dP, dQ, dK: QK^T-sized and
    PV-sized batched GEMMs, the full score matrix) and a softmax-gradient elementwise pass; norms
    and elementwise ops once more at their shapes (their gradients read what they wrote)."""
    B, H, d = a.batch, c["heads"], c["head_dim"]
    S = a.prompt
    out = []
    for op in reversed(fwd):
        n = op["name"]
        if op["kind"] == "gemm":
            g = {k: v for k, v in op.items() if k not in ("name", "m", "n", "k")}
            out.append({"name": f"{n}_dgrad", **g, "kind": "gemm", "m": op["m"], "n": op["k"], "k": op["n"]})
            out.append({"name": f"{n}_wgrad", **g, "kind": "gemm", "m": op["k"], "n": op["n"], "k": op["m"]})
        elif op["kind"] == "attention":
            out += [gemm("attn_dv", S, d, S, a.kv, batch=B * H), gemm("attn_dp", S, S, d, a.kv, batch=B * H),
                    {"name": "attn_dsoftmax", "kind": "elementwise", "shape": [B * H * S * S], "inputs": 2,
                     "flops_per_element": 3, "dtype": a.kv},
                    gemm("attn_dq", S, d, S, a.kv, batch=B * H), gemm("attn_dk", S, d, S, a.kv, batch=B * H)]
        else:
            b = dict(op)
            b["name"] = f"{n}_grad"
            if b["kind"] == "elementwise":
                b["inputs"] = b.get("inputs", 1) + 1
            out.append(b)
    return out


def build(c, a):
    layers = a.layers or c["layers"]
    if layers > c["layers"]:
        fail(f"--layers {layers}: the model has {c['layers']}")
    T = a.batch * (1 if a.phase == "decode" else a.prompt)
    what = (f"prefill of {a.batch} x {a.prompt} tokens" if a.phase == "prefill"
            else f"one decode step of {a.batch} sequences at context {a.context}")
    if a.phase == "train":
        fwd = layer_ops(c, a)
        params = sum(o["n"] * o["k"] * o.get("batch", 1) for o in fwd if o["kind"] == "gemm" and o["name"] != "router")
        params += sum(o["n"] * o["k"] for o in fwd if o["name"] == "router")
        ops = [{"repeat": layers, "name": "fwd", "ops": fwd},
               {"repeat": layers, "name": "bwd", "ops": backward_ops(fwd, c, a)},
               {"name": "adam", "kind": "elementwise", "shape": [params * layers], "inputs": 4, "flops_per_element": 12,
                "dtype": "fp32"}]
        return {"xpusim_trace": 1, "name": f"{c['name']}-train-b{a.batch}-{a.prompt}-{a.weights}",
                "description": (f"{c['name']}: one training step of {a.batch} x {a.prompt} tokens over {layers} of "
                                f"{c['layers']} layers (forward, backward, Adam on fp32 master weights), GEMMs in "
                                f"{a.weights}. Generated by scripts/xpusim-trace.py."),
                "tokens": T, "ops": ops}
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
    ap.add_argument("--phase", choices=["prefill", "decode", "train"], default=None,
                    help="transformers: prefill, decode or train (required); a resnet runs inference")
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
    if c.get("family") != "resnet" and a.phase is None:
        fail("--phase prefill, decode or train is required for a transformer")
    if c.get("family") == "resnet":
        trace = build_resnet(c, a)
    elif c["encoder"] and a.phase == "decode":
        fail(f"{a.model}: an encoder has no decode phase")
    else:
        trace = build(c, a)
    text = dump(trace)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
