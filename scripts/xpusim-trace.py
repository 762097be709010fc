#!/usr/bin/env python3
"""Generates an xpusim trace (format v1) from a model card (configs/models/*.yaml): a
transformer's prefill step, decode step or training step (fused or unfused attention), or a
ResNet's inference.

  scripts/xpusim-trace.py configs/models/llama-2-70b.yaml --phase decode --batch 32 \\
      --context 2048 --weights fp8 -o llama70b-decode.yaml

Per layer: norm, QKV projection, RoPE and the KV-cache append (RoPE models), attention (fused:
one op; unfused: QK^T, softmax, PV as batched GEMMs and a row-wise op), output projection,
residual add, norm, FFN (SwiGLU or GELU; MoE: router, then the active experts as one batched
GEMM each way), residual add. After the layers: final norm and the LM head for the last token of
each sequence. --fusion serving (default) emits the kernels serving engines run: each residual
add inside the next norm, RoPE with the KV-cache append in one pass, SwiGLU in one kernel;
--fusion none emits PyTorch eager's kernels (RMSNorm as eight, RoPE as five per tensor, K and V
copied into the cache, SiLU and the product apart, residual adds apart). Layers are a
`repeat` block. Decode reads the KV cache of `--context` tokens in the attention op.

Parallelism (Megatron-style), placed on GPUs for a system config (configs/systems/):
  --tp N  tensor parallel: each GPU of a group of N holds heads/N (and kv_heads/N, or one
          replicated KV head when kv_heads < N) and ffn/N; an all-reduce of the activations
          follows the output projection and the FFN down projection (and, in training, the
          data gradients of the QKV and FFN up projections). Ops run on all N GPUs (SPMD).
  --pp P  pipeline parallel (prefill and decode): the layers split into P stages of
          consecutive GPU groups; each of --microbatches M microbatches flows through the
          stages, activations passed on by send_recv on stream 1 (a GPipe forward schedule).
  --dp D  data parallel (train): D replicas of the TP group run the step on their own
          batches; each TP rank's gradients are all-reduced over the replicas before Adam.
GPU numbering: dp replica x (tp x pp) + stage x tp + tp rank, so TP groups are neighbours (one
NVLink domain). The trace's description says how many GPUs it needs.

Formats: weight GEMMs store their weights in --weights and compute in --math (default: the
weight format, i.e. the tensor cores take both operands in it, e.g. W8A8 fp8). A --math wider
than --weights is weight-only quantisation (e.g. --weights int4 --math bf16, W4A16; or
--weights mxfp4 --math fp8): the GEMMs get `weight_dtype` and the kernel converts the weights
before the MMA. mxfp4 and nvfp4 are block-scaled fp4 (math fp4 by default, which Blackwell's
tensor cores take as it is). Norms, activations and residual adds run in --activations,
attention and the KV cache in --kv.
"""
import argparse
import importlib.util
import json
import math
import os
import sys

import yaml


def _load_package_module(name):
    # python/xpusim/NAME.py by path: it needs PyYAML only, not the compiled package.
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "xpusim", name + ".py")
    spec = importlib.util.spec_from_file_location("xpusim_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RUNTIME = _load_package_module("runtime")
CLI = _load_package_module("cli")  # the command line as the binary's behaves

CARD_KEYS = {"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "gated", "vocab", "norm",
             "experts", "top_k", "encoder", "family", "rope", "context"}
RESNET_KEYS = {"name", "family", "blocks", "width", "image", "classes"}
FORMATS = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp8_e5m2", "int8", "int4", "fp4"}
BLOCK_SCALED = {"mxfp4", "nvfp4"}  # weights only: fp4 elements with a scale per 32 / 16


def vocab_shard(c, tp):
    """Columns of the LM head on one GPU. Split over TP GPUs, the vocabulary is padded to a
    multiple of 128 x TP, as Megatron-LM pads it (GPT-3's 50257 becomes 50304 at TP=4, Llama-2's
    32000 becomes 32256 at TP=4), so that every shard is a whole number of 128-column tiles."""
    if tp == 1:
        return c["vocab"]
    return -(-c["vocab"] // (128 * tp)) * 128


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):  # write shared shapes out in full, no YAML anchors
        return True


def dump(trace):
    return yaml.dump(trace, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=120)


def dump_jsonl(trace):
    """The trace as JSON Lines (docs/trace-format.md): the header on the first line, then one op
    or repeat block per line."""
    header = {k: v for k, v in trace.items() if k != "ops"}
    return "".join(json.dumps(x) + "\n" for x in [header] + trace["ops"])


def fail(msg):
    sys.exit(f"xpusim-trace: {msg}")


def load_card(path):
    try:
        with open(path) as f:
            text = f.read()
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        card = yaml.safe_load(text)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        fail(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}")
    except UnicodeDecodeError:
        fail(f"{path}: not UTF-8 text")
    if not isinstance(card, dict) or not isinstance(node, yaml.MappingNode):
        fail(f"{path}: expected a mapping of model parameters")
    # Each key's line, for the messages; a key given twice is refused (YAML would keep the last).
    line = {}
    for k, _ in node.value:
        if k.value in line:
            fail(f"{path}:{k.start_mark.line + 1}: key '{k.value}': given twice (first on line {line[k.value]})")
        line[k.value] = k.start_mark.line + 1

    def at(k):
        return f"{path}:{line[k]}: key '{k}'" if k in line else f"{path}: key '{k}'"

    if card.get("family", "transformer") == "resnet":
        for k in card:
            if k not in RESNET_KEYS:
                fail(f"{at(k)}: unknown key for a resnet (known: {', '.join(sorted(RESNET_KEYS))})")
        blocks = card.get("blocks")
        if not isinstance(blocks, list) or not blocks or not all(isinstance(b, int) and b > 0 for b in blocks):
            fail(f"{at('blocks')}: must be a list of positive block counts per stage")
        for k in ("width", "image", "classes"):
            if not isinstance(card.get(k), int) or isinstance(card.get(k), bool) or card[k] < 1:
                fail(f"{at(k)}: must be a positive whole number")
        card["name"] = card.get("name") or path
        return card
    if card.get("family", "transformer") != "transformer":
        fail(f"{at('family')}: must be transformer or resnet")
    for k in card:
        if k not in CARD_KEYS:
            fail(f"{at(k)}: unknown key (known: {', '.join(sorted(CARD_KEYS))})")
    for k in ("layers", "hidden", "heads", "ffn", "vocab"):
        if not isinstance(card.get(k), int) or isinstance(card.get(k), bool) or card[k] < 1:
            fail(f"{at(k)}: must be a positive whole number")
    for k in ("kv_heads", "head_dim", "experts", "top_k", "context"):
        if k in card and (not isinstance(card[k], int) or isinstance(card[k], bool) or card[k] < 1):
            fail(f"{at(k)}: must be a positive whole number")
    for k in ("gated", "encoder", "rope"):
        if k in card and not isinstance(card[k], bool):
            fail(f"{at(k)}: must be true or false")
    if "norm" in card and card["norm"] not in ("layernorm", "rmsnorm"):
        fail(f"{at('norm')}: must be layernorm or rmsnorm")
    card.setdefault("kv_heads", card["heads"])
    card.setdefault("head_dim", card["hidden"] // card["heads"])
    card.setdefault("gated", False)
    card.setdefault("experts", 1)
    card.setdefault("top_k", 1)
    card.setdefault("norm", "layernorm")
    card.setdefault("encoder", False)
    # Rotary position embeddings: the RMSNorm families (Llama, Mixtral) use them.
    card.setdefault("rope", card["norm"] == "rmsnorm")
    if card["heads"] % card["kv_heads"]:
        fail(f"{at('kv_heads') if 'kv_heads' in line else at('heads')}: heads ({card['heads']}) must be a multiple of kv_heads ({card['kv_heads']})")
    if not 1 <= card["top_k"] <= card["experts"]:
        fail(f"{at('top_k')}: must be between 1 and experts")
    card["name"] = card.get("name") or path
    return card


def gemm(name, m, n, k, dtype, batch=1, sparsity=None):
    op = {"name": name, "kind": "gemm", "m": m, "n": n, "k": k, "dtype": dtype}
    if batch > 1:
        op["batch"] = batch
    if sparsity:
        op["sparsity"] = sparsity
    return op


def weight_gemm(a, name, m, n, k, batch=1, sparse=True):
    """A GEMM against the model's weights: math in a.math, weights stored in a.weights (2:4
    sparse with --sparsity, except the LM head)."""
    op = gemm(name, m, n, k, a.math, batch=batch, sparsity=a.sparsity if sparse else None)
    if a.weights != a.math:
        op["weight_dtype"] = a.weights
    return op


BITS = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "fp8_e5m2": 8, "int8": 8, "int4": 4, "fp4": 4,
        "mxfp4": 4, "nvfp4": 4}


def act_bytes(fmt):
    return BITS[fmt] / 8


def all_reduce(name, nbytes, devices):
    return {"name": name, "kind": "all_reduce", "bytes": int(nbytes), "devices": devices}


def norm_ops(c, a, name, T, D, residual):
    """A norm over [T, D]. Fused (serving engines): one row-wise kernel, which with `residual`
    also adds the residual stream first and writes the sum back (inputs: 2). Unfused RMSNorm, as
    PyTorch eager runs Hugging Face's LlamaRMSNorm: x.float(), pow(2), mean, + eps, rsqrt,
    .to(dtype), x * r and * weight, one kernel each (LayerNorm is one kernel either way). x * r
    broadcasts r over the row, and * weight broadcasts the weight over the rows when there are
    several: PyTorch runs its legacy kernel for a broadcast operand (`contiguous: false`)."""
    act = a.activations
    if a.fusion != "none" or c["norm"] != "rmsnorm":
        op = {"name": name, "kind": "layernorm", "shape": [T, D], "dtype": act}
        if c["norm"] == "rmsnorm":
            op["norm"] = "rms"
        if residual:
            op["name"] = "residual_" + name
            op["inputs"] = 2
        return [op]
    ew = lambda n, shape, dtype, inputs=1: {"name": f"{name}_{n}", "kind": "elementwise", "shape": shape,  # noqa: E731
                                          "inputs": inputs, "dtype": dtype}
    scale, weight = ew("scale", [T, D], act, 2), ew("weight", [T, D], act, 2)
    scale["contiguous"] = False
    if T > 1:
        weight["contiguous"] = False
    return [ew("to_fp32", [T, D], "fp32"), ew("pow", [T, D], "fp32"),
            {"name": f"{name}_mean", "kind": "reduction", "shape": [T, D], "dtype": "fp32"},
            ew("add_eps", [T, 1], "fp32"), ew("rsqrt", [T, 1], "fp32"), ew("to_act", [T, 1], act), scale, weight]


def rope_ops(c, a, T, H, KV, d):
    """Rotary embeddings of q and k and the KV-cache append (decode and prefill of RoPE models).
    Fused (serving engines, e.g. TensorRT-LLM's bias-RoPE-KV-cache kernel): one elementwise pass
    over the QKV output. Unfused, as Hugging Face's apply_rotary_pos_emb in PyTorch eager: per
    tensor q*cos, the negated half, the concatenation, *sin and the sum (five kernels), then K
    and V copied into the cache. q and k are strided views of the QKV output and cos/sin
    broadcast over the heads, so the products, the negation and the cache copies run PyTorch's
    legacy elementwise kernel (`contiguous: false`); the concatenation and the sum do not."""
    if not c["rope"]:
        return []
    act = a.kv
    if a.fusion != "none":
        return [{"name": "rope_kv_append", "kind": "elementwise", "shape": [T, (H + 2 * KV) * d], "dtype": act,
                 "flops_per_element": 3}]
    ops = []
    for t, heads in (("q", H), ("k", KV)):
        full, half = [T, heads * d], [T, heads * d // 2]
        ops += [{"name": f"rope_{t}_cos", "kind": "elementwise", "shape": full, "inputs": 2, "dtype": act,
                 "contiguous": False},
                {"name": f"rope_{t}_neg", "kind": "elementwise", "shape": half, "dtype": act, "contiguous": False},
                {"name": f"rope_{t}_cat", "kind": "elementwise", "shape": full, "dtype": act},
                {"name": f"rope_{t}_sin", "kind": "elementwise", "shape": full, "inputs": 2, "dtype": act,
                 "contiguous": False},
                {"name": f"rope_{t}_add", "kind": "elementwise", "shape": full, "inputs": 2, "dtype": act}]
    ops += [{"name": f"{t}_cache_write", "kind": "elementwise", "shape": [T, KV * d], "dtype": act, "contiguous": False}
            for t in ("k", "v")]
    return ops


def layer_ops(c, a, devices=None):
    """The ops of one layer for `tokens` rows (prefill: batch x prompt; decode: batch), on one
    GPU of a tensor-parallel group of a.tp (heads, KV heads and FFN split a.tp ways)."""
    tp = a.tp
    B, d, D = a.batch, c["head_dim"], c["hidden"]
    H = c["heads"] // tp
    KV = c["kv_heads"] // tp if c["kv_heads"] >= tp else 1
    seq_q = 1 if a.phase == "decode" else a.prompt
    seq_kv = a.context if a.phase == "decode" else a.past + a.prompt
    # A decode step replayed from a CUDA graph runs its dense ops at the captured batch (the rows
    # padded up to it); attention runs over the real sequences.
    T = a.rows or B * seq_q
    act, kv = a.activations, a.kv
    unfused = a.fusion == "none"
    # Serving engines add the residual inside the next norm (fused add-RMSNorm), the last layer's
    # in the final norm. Layers repeat, so layer 0's first norm adds one too (the embedding's
    # row read twice: a negligible over-count).
    ops = norm_ops(c, a, "norm1", T, D, residual=not unfused)
    ops.append(weight_gemm(a, "qkv", T, (H + 2 * KV) * d, D))
    ops += rope_ops(c, a, T, H, KV, d)
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
        if a.kv_page:
            att["kv_page"] = a.kv_page
        ops.append(att)
    else:
        # As an unfused implementation runs it: the whole score matrix, masked, one head at a time.
        ops += [gemm("qk", seq_q, seq_kv, d, kv, batch=B * H),
                {"name": "softmax", "kind": "softmax", "shape": [B * H * seq_q, seq_kv], "dtype": kv},
                gemm("pv", seq_q, d, seq_kv, kv, batch=B * H)]
    ops.append(weight_gemm(a, "o_proj", T, D, H * d))
    if tp > 1:
        ops.append(all_reduce("o_proj_allreduce", T * D * act_bytes(act), devices))
    if unfused:
        ops.append({"name": "residual1", "kind": "elementwise", "shape": [T, D], "inputs": 2, "dtype": act})
    ops += norm_ops(c, a, "norm2", T, D, residual=not unfused)
    F = c["ffn"] // tp
    up_n = F * (2 if c["gated"] else 1)
    act_op = {"name": "activation", "kind": "elementwise", "shape": [T, F], "dtype": act,
              "inputs": 2 if c["gated"] else 1, "flops_per_element": 6 if c["gated"] else 8}
    if c["gated"] and unfused:
        # SiLU, then the product with the up half: two kernels. The halves are views of one output,
        # strided where there are several rows: PyTorch's legacy kernel then.
        act_op = [{"name": "silu", "kind": "elementwise", "shape": [T, F], "dtype": act, "flops_per_element": 5},
                  {"name": "gate_mul", "kind": "elementwise", "shape": [T, F], "inputs": 2, "dtype": act}]
        if T > 1:
            for o in act_op:
                o["contiguous"] = False
    else:
        act_op = [act_op]
    if c["experts"] == 1:
        ops += [weight_gemm(a, "ffn_up", T, up_n, D), *act_op, weight_gemm(a, "ffn_down", T, D, F)]
    else:
        # Routing balanced over the experts that receive tokens (a decode batch may touch few).
        E, k = c["experts"], c["top_k"]
        active = min(E, T * k)
        per = math.ceil(T * k / active)
        for o in act_op:
            o["shape"] = [active * per, F]
        ops += [gemm("router", T, E, D, act),
                weight_gemm(a, "expert_up", per, up_n, D, batch=active), *act_op,
                weight_gemm(a, "expert_down", per, D, F, batch=active)]
    if tp > 1:
        ops.append(all_reduce("ffn_allreduce", T * D * act_bytes(act), devices))
    if unfused:
        ops.append({"name": "residual2", "kind": "elementwise", "shape": [T, D], "inputs": 2, "dtype": act})
    if devices is not None:
        for op in ops:
            op["devices"] = devices
    return ops


def sampling_ops(c, a):
    """The sampler's kernels after the LM head, on the real sequences: the logits' shards
    gathered from the TP group, then the kernels of the sampling path a.sampler
    (python/xpusim/sampler.py) over the vocabulary."""
    B, V = a.batch, vocab_shard(c, a.tp) * a.tp
    ops = []
    if a.tp > 1:
        ops.append({"name": "logits_gather", "kind": "all_gather", "bytes": int(B * V * act_bytes(a.activations))})
    return ops + RUNTIME.sampler.sampler_ops(a.sampler, B, V, a.activations)


def runtime_step(trace, a, group):
    """The runtime's host work around the step (a `host` op: first on the step's stream, or on
    a stream of its own beside the kernels where the runtime overlaps it), and eager issue
    where the runtime runs this step without a CUDA graph."""
    rt = a.rt
    if a.phase == "decode":
        shape = dict(decode=a.batch)
        eager = rt.graph_batch(a.batch) is None
    else:
        shape = dict(prefill_seqs=a.batch, prefill_tokens=a.batch * a.prompt)
        eager = rt.prefill_eager
    host, beside = rt.step_host_s(**shape), rt.step_beside_s(**shape)
    ops = [{"name": "runtime_host", "kind": "host", "duration": f"{host * 1e6:.6g} us"}]
    if beside > 0:
        # After the serial part, beside the kernels on a stream of its own.
        ops.append({"name": "runtime_host_overlapped", "kind": "host", "duration": f"{beside * 1e6:.6g} us",
                    "stream": 1, "deps": ["runtime_host"]})
    for op in ops:
        if group:
            op["devices"] = dev(group)
    trace["ops"][0:0] = ops
    # From a graph, whatever the config's kernels.launch (as xpusim serve sets it).
    trace["eager_issue"] = f"{rt.eager_issue_s * 1e6:.6g} us" if eager else "0 us"
    graph = "" if eager else (f", a CUDA graph of {a.rows} rows" if a.rows else ", a CUDA graph")
    trace["description"] = trace["description"].replace(
        ". Generated by", f"; runtime {rt.name} {rt.version} ({rt.shown_path()}): {host * 1e6:.4g} us of host work before "
                          f"the kernels{f' and {beside * 1e6:.4g} us beside them' if beside > 0 else ''}{graph}"
                          f"{', kernels issued eagerly' if eager else ''}, {rt.sampling} sampling. Generated by")


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
    B, H, d = a.batch, c["heads"] // a.tp, c["head_dim"]
    S = a.prompt
    out = []
    for op in reversed(fwd):
        n = op["name"]
        if op["kind"] == "all_reduce":
            continue  # tensor parallel: the backward all-reduces follow the column-parallel dgrads
        if op["kind"] == "gemm":
            g = {k: v for k, v in op.items() if k not in ("name", "m", "n", "k")}
            out.append({"name": f"{n}_dgrad", **g, "kind": "gemm", "m": op["m"], "n": op["k"], "k": op["n"]})
            out.append({"name": f"{n}_wgrad", **g, "kind": "gemm", "m": op["k"], "n": op["n"], "k": op["m"]})
            if a.tp > 1 and n in ("qkv", "ffn_up", "expert_up"):
                out.append(all_reduce(f"{n}_dgrad_allreduce", op["m"] * op["k"] * act_bytes(a.activations),
                                      op["devices"]))
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
    if "devices" in fwd[0]:
        for op in out:
            op["devices"] = fwd[0]["devices"]
    return out


def dev(ids):
    """A `devices` value: a range "a-b" when consecutive, else the list."""
    ids = sorted(ids)
    if len(ids) > 2 and ids == list(range(ids[0], ids[-1] + 1)):
        return f"{ids[0]}-{ids[-1]}"
    return ids


def place(ops, groups):
    """Runs a layer's ops on every GPU of `groups` (SPMD); each TP all-reduce becomes one
    collective per group, named .r<replica> when there are several."""
    out = []
    everyone = dev([g for grp in groups for g in grp])
    for op in ops:
        if op["kind"] == "all_reduce":
            for r, grp in enumerate(groups):
                x = dict(op, devices=dev(grp))
                if len(groups) > 1:
                    x["name"] = f"{op['name']}.r{r}"
                out.append(x)
        else:
            out.append(dict(op, devices=everyone))
    return out


def build(c, a):
    layers = a.layers or c["layers"]
    if layers > c["layers"]:
        fail(f"--layers {layers}: the model has {c['layers']}")
    T = a.batch * (1 if a.phase == "decode" else a.prompt)
    past = f" after {a.past} cached tokens" if a.past else ""
    what = (f"prefill of {a.batch} x {a.prompt} tokens{past}" if a.phase == "prefill"
            else f"one decode step of {a.batch} sequences at context {a.context}")
    gpus = a.tp * a.pp * a.dp
    par = "" if gpus == 1 else f", TP={a.tp} PP={a.pp} DP={a.dp} on {gpus} GPUs"
    tag = "" if gpus == 1 else "".join(f"-{k}{v}" for k, v in (("tp", a.tp), ("pp", a.pp), ("dp", a.dp)) if v > 1)
    if a.phase == "train":
        groups = [list(range(r * a.tp, (r + 1) * a.tp)) for r in range(a.dp)]
        fwd = layer_ops(c, a, list(range(a.tp)) if gpus > 1 else None)
        params = sum(o["n"] * o["k"] * o.get("batch", 1) for o in fwd if o["kind"] == "gemm" and o["name"] != "router")
        params += sum(o["n"] * o["k"] for o in fwd if o["name"] == "router")
        bwd = backward_ops(fwd, c, a)
        if gpus > 1:
            fwd, bwd = place(fwd, groups), place(bwd, groups)
        ops = [{"repeat": layers, "name": "fwd", "ops": fwd},
               {"repeat": layers, "name": "bwd", "ops": bwd}]
        if a.dp > 1:
            # Each TP rank's gradients (its shard of every layer), over the replicas.
            for t in range(a.tp):
                ops.append({"name": f"grad_allreduce.t{t}" if a.tp > 1 else "grad_allreduce", "kind": "all_reduce",
                            "bytes": int(params * layers * act_bytes(a.weights)),
                            "devices": dev([r * a.tp + t for r in range(a.dp)])})
        adam = {"name": "adam", "kind": "elementwise", "shape": [params * layers], "inputs": 4, "flops_per_element": 12,
                "dtype": "fp32"}
        if gpus > 1:
            adam["devices"] = dev(range(gpus))
        ops.append(adam)
        return {"xpusim_trace": 1, "name": f"{c['name']}-train-b{a.batch}-{a.prompt}-{a.weights}{tag}",
                "description": (f"{c['name']}: one training step of {a.batch} x {a.prompt} tokens"
                                f"{' per replica' if a.dp > 1 else ''} over {layers} of {c['layers']} layers (forward, "
                                f"backward, Adam on fp32 master weights), GEMMs in {a.weights}{par}. "
                                f"Generated by scripts/xpusim-trace.py."),
                "tokens": T * a.dp, "ops": ops}
    fmt = a.weights if a.math == a.weights else f"w{a.weights}-{a.math}"
    length = (f"{a.prompt}" + (f"p{a.past}" if a.past else "")) if a.phase == "prefill" else a.context
    name = f"{c['name']}-{a.phase}-b{a.batch}-{length}-{fmt}{tag}"
    math = "" if a.math == a.weights else f" (math {a.math})"
    desc = (f"{c['name']}: {what}, {layers} of {c['layers']} layers, weights {a.weights}{math}, activations "
            f"{a.activations}, attention {a.attention} in {a.kv}{par}")
    tokens = T if a.phase == "prefill" else a.batch
    if a.pp == 1:
        group = list(range(a.tp)) if gpus > 1 else None
        ops = [{"repeat": layers, "name": "layer", "ops": layer_ops(c, a, dev(group) if group else None)}]
        if not c["encoder"]:
            ops += norm_ops(c, a, "final_norm", a.rows or T, c["hidden"], residual=a.fusion != "none")
            ops.append(weight_gemm(a, "lm_head", a.batch, vocab_shard(c, a.tp), c["hidden"], sparse=False))
            if a.sampler:
                ops += sampling_ops(c, a)
            if group:
                for op in ops[1:]:
                    op["devices"] = dev(group)
        trace = {"xpusim_trace": 1, "name": name, "description": desc + ". Generated by scripts/xpusim-trace.py.",
                 "tokens": tokens, "ops": ops}
        if a.rt:
            runtime_step(trace, a, group)
        return trace
    # Pipeline parallel: stages of consecutive layers; microbatches flow through them.
    M = a.microbatches
    mb = argparse.Namespace(**vars(a))
    mb.batch = a.batch // M
    Tm = mb.batch * (1 if a.phase == "decode" else a.prompt)
    per, extra = divmod(layers, a.pp)
    sizes = [per + (1 if s < extra else 0) for s in range(a.pp)]
    ops = []
    for m in range(M):
        for st in range(a.pp):
            group = dev(range(st * a.tp, (st + 1) * a.tp))
            body = layer_ops(c, mb, group)
            if st > 0:
                body[0]["deps"] = [f"mb{m}.send{st - 1}" + (f".t{t}" if a.tp > 1 else "") for t in range(a.tp)]
            ops.append({"repeat": sizes[st], "name": f"mb{m}.stage{st}", "ops": body})
            if st + 1 < a.pp:
                for t in range(a.tp):
                    ops.append({"name": f"mb{m}.send{st}" + (f".t{t}" if a.tp > 1 else ""), "kind": "send_recv",
                                "bytes": int(Tm * c["hidden"] * act_bytes(a.activations)),
                                "devices": [st * a.tp + t, (st + 1) * a.tp + t], "stream": 1,
                                "deps": [f"mb{m}.stage{st}[{sizes[st] - 1}].{body[-1]['name']}"]})
        if not c["encoder"]:
            last = dev(range((a.pp - 1) * a.tp, a.pp * a.tp))
            for op in norm_ops(c, a, f"mb{m}.final_norm", Tm, c["hidden"], residual=a.fusion != "none"):
                ops.append(dict(op, devices=last))
            ops.append(dict(weight_gemm(a, f"mb{m}.lm_head", mb.batch, vocab_shard(c, a.tp), c["hidden"], sparse=False), devices=last))
    return {"xpusim_trace": 1, "name": name,
            "description": desc + f", {M} microbatch{'es' if M > 1 else ''}. Generated by scripts/xpusim-trace.py.",
            "tokens": tokens, "ops": ops}


def main():
    ap = CLI.Parser(prog="xpusim-trace", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("model", help="model card, e.g. configs/models/llama-2-70b.yaml")
    ap.add_argument("--phase", choices=["prefill", "decode", "train"], default=None,
                    help="transformers: prefill, decode or train (required); a resnet runs inference")
    ap.add_argument("--batch", type=int, default=1, help="sequences (default 1)")
    ap.add_argument("--prompt", type=int, default=2048, help="prefill: prompt length (default 2048)")
    ap.add_argument("--context", type=int, default=2048, help="decode: tokens in the KV cache (default 2048)")
    ap.add_argument("--past", type=int, default=0,
                    help="prefill: tokens already in the KV cache before the prompt (a chunked prefill's later "
                         "chunk, or a cached prefix): attention reads them too (default 0)")
    ap.add_argument("--weights", default="bf16", help="weights' format, also mxfp4 or nvfp4 (default bf16)")
    ap.add_argument("--math", default=None,
                    help="weight GEMMs' tensor-core format (default: --weights; fp4 for mxfp4/nvfp4)")
    ap.add_argument("--activations", default="bf16", help="format of norms, activations, residuals (default bf16)")
    ap.add_argument("--kv", default=None, help="attention / KV-cache format (default: --activations)")
    ap.add_argument("--attention", choices=["fused", "unfused"], default="fused")
    ap.add_argument("--fusion", choices=["serving", "none"], default="serving",
                    help="serving (default): the fused kernels serving engines run (residual add inside the next "
                         "norm, RoPE with the KV-cache append, SwiGLU in one kernel); none: PyTorch eager's kernels "
                         "(RMSNorm as eight, RoPE as five per tensor, SiLU and the product apart)")
    ap.add_argument("--kv-page", type=int, default=0,
                    help="fused attention reads a paged KV cache of this many tokens per page, through a block "
                         "table, as vLLM (16) and TensorRT-LLM (64) keep it (default 0: contiguous)")
    ap.add_argument("--sparsity", choices=["2:4"], default=None, help="2:4 sparse weights")
    ap.add_argument("--max-context", type=int, default=None,
                    help="the longest sequence accepted (default: the card's `context`); xpusim serve's step model "
                         "simulates a chunk's attention kernel alone past it, to interpolate near the context")
    ap.add_argument("--layers", type=int, default=None, help="generate only the first N layers, N >= 1 (default all)")
    ap.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs (default 1)")
    ap.add_argument("--pp", type=int, default=1, help="pipeline stages, prefill and decode (default 1)")
    ap.add_argument("--dp", type=int, default=1, help="data-parallel replicas, train (default 1)")
    ap.add_argument("--microbatches", type=int, default=1, help="with --pp: microbatches the batch is split into")
    ap.add_argument("--runtime", default=None,
                    help="a serving runtime's profile (vllm, trtllm, sglang, or a path; configs/runtimes/): its host "
                         "work as a `host` op, the decode batch padded to its captured CUDA-graph size, its sampler's "
                         "kernels, and eager issue where it runs the step without a graph (prefill and decode, "
                         "without --pp)")
    ap.add_argument("--sampler", choices=RUNTIME.SAMPLERS, default=None,
                    help="add the sampler's kernels after the LM head (" + RUNTIME.SAMPLER_HELP + "); with --tp "
                         "the logits are all-gathered first (default: --runtime's, else none)")
    ap.add_argument("-o", "--out", default="-", help="output file, YAML or, if it ends in .jsonl, JSON Lines "
                    "(default: YAML on standard output)")
    a = ap.parse_args()
    a.kv = a.kv or a.activations
    a.math = a.math or ("fp4" if a.weights in BLOCK_SCALED else a.weights)
    for flag in ("weights", "activations", "kv", "math"):
        known = FORMATS | BLOCK_SCALED if flag == "weights" else FORMATS
        if getattr(a, flag) not in known:
            fail(f"--{flag} {getattr(a, flag)}: unknown format (known: {', '.join(sorted(known))})")
    if a.weights != a.math and BITS[a.weights] > BITS[a.math]:
        fail(f"--weights {a.weights} is wider than --math {a.math}: weight-only quantisation stores weights narrower")
    for flag in ("batch", "prompt", "context"):
        if getattr(a, flag) < 1:
            fail(f"--{flag} must be at least 1")
    if a.past < 0:
        fail("--past must be 0 or more tokens")
    if a.past and a.phase != "prefill":
        fail("--past applies to --phase prefill")
    if a.layers is not None and a.layers < 1:
        fail(f"--layers {a.layers}: must be at least 1 (leave it out for every layer)")
    if a.kv_page < 0:
        fail("--kv-page must be 0 (contiguous) or a page size in tokens")
    if a.kv_page and a.attention != "fused":
        fail("--kv-page: only the fused attention kernel reads a paged cache; use --attention fused")
    for flag in ("tp", "pp", "dp", "microbatches"):
        if getattr(a, flag) < 1:
            fail(f"--{flag} must be at least 1")
    c = load_card(a.model)
    if a.tp > 1 or a.pp > 1 or a.dp > 1:
        if c.get("family") == "resnet":
            fail("--tp/--pp/--dp: parallel placement is generated for transformers only")
        if c["heads"] % a.tp or c["ffn"] % a.tp:
            fail(f"--tp {a.tp} must divide heads ({c['heads']}) and ffn ({c['ffn']})")
        if c["kv_heads"] % a.tp and a.tp % c["kv_heads"]:
            fail(f"--tp {a.tp} and kv_heads ({c['kv_heads']}): one must divide the other")
        if a.dp > 1 and a.phase != "train":
            fail("--dp applies to --phase train (replicas of a serving step share nothing)")
        if a.pp > 1 and a.phase == "train":
            fail("--pp is generated for prefill and decode (a training pipeline schedule is not generated yet)")
        if a.pp > (a.layers or c["layers"]):
            fail(f"--pp {a.pp}: more stages than layers")
    if a.batch % a.microbatches:
        fail(f"--microbatches {a.microbatches} must divide --batch {a.batch}")
    if a.microbatches > 1 and a.pp == 1:
        fail("--microbatches applies with --pp")
    if c.get("family") != "resnet" and a.phase is None:
        fail("--phase prefill, decode or train is required for a transformer")
    if c.get("family") == "resnet" and a.phase not in (None, "prefill"):
        fail(f"--phase {a.phase}: a resnet runs inference (a forward pass) only; leave --phase out")
    if c.get("family") != "resnet" and c["encoder"] and a.phase == "decode":
        fail(f"{a.model}: an encoder has no decode phase")
    if a.max_context is not None and a.max_context < 1:
        fail("--max-context must be at least 1 token")
    limit = a.max_context or (c.get("context") if c.get("family") != "resnet" else None)
    if limit:
        # The card's longest sequence (max_position_embeddings): a longer one is not the model.
        longest = a.context if a.phase == "decode" else a.past + a.prompt
        what = "--context" if a.phase == "decode" else "--prompt" + (" + --past" if a.past else "")
        if longest > limit:
            key = "--max-context" if a.max_context else f"key 'context' in {a.model}"
            fail(f"{what} {longest} is beyond {c['name']}'s context of {limit} tokens ({key})")
    if a.weights != a.math and (c.get("family") == "resnet" or a.phase == "train"):
        fail("--math different from --weights (weight-only quantisation) is generated for transformer prefill and decode")
    # A serving step: a decoder's prefill or decode without a pipeline (where --runtime and --sampler apply).
    serving_step = c.get("family") != "resnet" and a.phase in ("prefill", "decode") and not c["encoder"] and a.pp == 1
    a.rt, a.rows = None, None  # a.rows: a decode's dense rows, padded up to its CUDA graph
    if a.runtime:
        if not serving_step:
            fail("--runtime applies to a decoder's --phase prefill or decode, without --pp (one runtime step per "
                 "pipeline stage is not generated yet)")
        try:
            a.rt = RUNTIME.load(a.runtime)
        except RUNTIME.RuntimeProfileError as e:
            fail(f"--runtime: {e}")
        if a.phase == "decode":
            padded = a.rt.graph_batch(a.batch)
            if padded and padded != a.batch:
                a.rows = padded
        a.sampler = a.sampler or a.rt.sampling
    if a.sampler and not serving_step:
        fail("--sampler applies to a decoder's --phase prefill or decode, without --pp")
    if c.get("family") == "resnet":
        trace = build_resnet(c, a)
    else:
        trace = build(c, a)
    text = dump_jsonl(trace) if a.out.endswith(".jsonl") else dump(trace)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(a.out, "w") as f:
                f.write(text)
        except OSError as e:
            fail(f"-o {a.out}: cannot write it ({e.strerror})")


if __name__ == "__main__":
    main()
