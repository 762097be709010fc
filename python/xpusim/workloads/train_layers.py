"""A transformer layer's training ops on one GPU: the forward as the generator's layer with
training's changes (sequence parallelism, dropout, experts over GPUs), its backward, and what
recomputation runs again. Collectives come without devices; training.py places them."""
import math

from .cards import act_bytes, fail
from .transformer import layer_ops

RECOMPUTE = ("none", "selective", "full")


def _sp_forward(ops, a, T, D):
    """Sequence parallelism (Korthikanti et al., "Reducing Activation Recomputation in Large
    Transformer Models", 2022): the norms and residual adds run on T/tp rows; each TP
    all-reduce becomes a reduce-scatter and an all-gather of the activations comes before the
    QKV and FFN-up projections."""
    nbytes = int(T * D * act_bytes(a.activations))
    out = []
    for op in ops:
        if op["kind"] in ("layernorm", "elementwise") and op.get("shape", [0])[0] == T and (
                "norm" in op["name"] or op["name"].startswith(("residual", "bias_dropout_add"))):
            op = dict(op, shape=[T // a.tp] + op["shape"][1:])
        if op["name"] in ("qkv", "ffn_up", "router"):  # a MoE layer gathers once, before its router
            out.append({"name": "qkv_ag" if op["name"] == "qkv" else "ffn_ag", "kind": "all_gather", "bytes": nbytes})
        if op["kind"] == "all_reduce":
            op = {"name": op["name"].replace("allreduce", "rs"), "kind": "reduce_scatter", "bytes": op["bytes"]}
        out.append(op)
    return out


def _dropout(ops, a, T, D):
    """Dropout as Megatron-LM's GPT trains with it (a card's `dropout: true`; its
    --attention-dropout and --hidden-dropout default to 0.1): over the unfused attention's
    probabilities after the softmax, and after the attention and FFN outputs as one fused
    bias-dropout-add kernel that also adds the residual, which the next norm then no longer
    does. The masks' byte per element is not counted. (A fused attention kernel drops out
    inside itself.)"""
    out = []
    for op in ops:
        if op["kind"] == "layernorm" and op["name"].startswith("residual_"):
            op = dict(op, name=op["name"][len("residual_"):])
            op.pop("inputs", None)
        out.append(op)
        if op["name"] == "softmax":
            out.append({"name": "attn_dropout", "kind": "elementwise", "shape": op["shape"], "dtype": op["dtype"]})
    for after, name in (("o_proj", "bias_dropout_add1"), ("ffn_down", "bias_dropout_add2")):
        i = max(i for i, o in enumerate(out) if o["name"] == after)
        if i + 1 < len(out) and out[i + 1]["kind"] in ("all_reduce", "reduce_scatter"):
            i += 1
        out.insert(i + 1, {"name": name, "kind": "elementwise", "shape": [T, D], "inputs": 2, "dtype": a.activations})
    return out


def forward_layer(c, a, mb):
    """One layer's forward ops on one GPU of a TP group for a microbatch (mb.batch sequences of
    mb.prompt tokens); collectives without devices (placed later)."""
    ops = layer_ops(c, mb, None)
    for op in ops:
        if op["name"] == "rope_kv_append":
            op["name"] = "rope"  # training keeps no KV cache: RoPE of q and k in one pass
    T = mb.batch * mb.prompt
    if c["dropout"]:
        if a.fusion == "none":
            fail("a card with dropout is generated with --fusion serving (Megatron's fused kernels)")
        ops = _dropout(ops, a, T, c["hidden"])
    if a.sequence_parallel and a.tp > 1:
        ops = _sp_forward(ops, a, T, c["hidden"])
    if c["experts"] > 1:
        ops = _experts(ops, c, a, T)
    if fp8_layers(a):
        ops = _fp8_forward(ops, a)
    return ops


FP8_EXEMPT = ("qk", "pv", "router")  # GEMMs a Transformer Engine layer keeps in bf16


def fp8_layers(a):
    """Whether the layers' GEMMs run in fp8 (either format), as Transformer Engine's modules."""
    return a.weights.startswith("fp8")


def _fp8_gemm(op):
    return op["kind"] == "gemm" and str(op.get("dtype", "")).startswith("fp8") and op["name"] not in FP8_EXEMPT


def _fp8_forward(ops, a):
    """fp8 training as Transformer Engine runs its layers (te.Linear, LayerNormLinear,
    LayerNormMLP with delayed scaling): each fp8 GEMM writes bf16, and its activation input is
    cast to e4m3 with a transposed copy for the weight gradient. Where a norm or the MLP's
    activation produces that input, TE's kernel writes it in fp8 and a transpose follows (here:
    a 1-byte transpose after the producer, which is left writing bf16); elsewhere (the attention's
    output into its projection) one cast-transpose kernel reads bf16 and writes both fp8 copies.
    The amax of each cast is computed inside its kernel. The weights' casts, once a step with
    Megatron's is_first_microbatch, are not emitted."""
    out = []
    producer = None
    for op in ops:
        if _fp8_gemm(op):
            op = dict(op, out_dtype=op.get("out_dtype", a.activations))
            rows = op["m"] * op.get("batch", 1)
            if producer is not None and (producer["kind"] == "layernorm" or producer["name"] in ("activation", "gelu", "swiglu")):
                out.append({"name": f"{op['name']}_input_t", "kind": "elementwise", "shape": [rows, op["k"]], "dtype": "fp8"})
            else:
                out.append({"name": f"{op['name']}_input_cast", "kind": "elementwise", "shape": [rows, op["k"]],
                            "dtype": a.activations, "out_dtype": "fp8", "outputs": 2})
        out.append(op)
        if op["kind"] not in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
            producer = op
    return out


def expert_tokens(c, a, T):
    """Token slots each local expert computes in a microbatch of T tokens: the T x top_k routed
    copies of every GPU of the expert-parallel group spread evenly over the experts (dropless
    and balanced), or the capacity each expert is padded to (--capacity-factor F: F x T x top_k
    / experts per sending GPU, as GShard and Switch Transformer dispatch)."""
    per_rank = T * c["top_k"] / c["experts"]
    if a.capacity_factor:
        per_rank = math.ceil(a.capacity_factor * per_rank)
    return math.ceil(per_rank * a.ep)


def _experts(ops, c, a, T):
    """A MoE layer's experts over --ep GPUs (expert parallelism across data-parallel replicas,
    as Megatron-Core's MoE layer runs it): after the router, an all-to-all dispatches each
    token's top_k copies (T x top_k x hidden per GPU, or each expert's capacity) to the GPUs of
    their experts; each GPU runs its experts / ep experts as one batched (grouped) GEMM each way
    over the token slots they receive; a second all-to-all returns them, and the top_k outputs
    of each token are summed with their router weights."""
    E, k, D = c["experts"], c["top_k"], c["hidden"]
    local = E // a.ep
    per = expert_tokens(c, a, T)
    slots = T * k if not a.capacity_factor else E * math.ceil(a.capacity_factor * T * k / E)
    nbytes = int(slots * D * act_bytes(a.activations))
    out = []
    for op in ops:
        if op["name"] in ("expert_up", "expert_down"):
            op = dict(op, m=per, batch=local)
        elif op["kind"] == "elementwise" and op["name"] in ("activation", "silu", "gate_mul"):
            op = dict(op, shape=[local * per, op["shape"][1]])
        if op["name"] == "expert_up" and a.ep > 1:
            out.append({"name": "dispatch_a2a", "kind": "all_to_all", "bytes": nbytes})
        out.append(op)
        if op["name"] == "expert_down":
            if a.ep > 1:
                out.append({"name": "combine_a2a", "kind": "all_to_all", "bytes": nbytes})
            out.append({"name": "expert_combine", "kind": "elementwise", "shape": [T, D], "inputs": k,
                        "dtype": a.activations})
    return out


GRAD_ACCUMULATION = ("fused", "add", "none")
NOT_WEIGHTS = ("qk", "pv")  # unfused attention's products of two activations


def grad_accumulation_add(name, rows, cols, grad_dtype, batch=1):
    """The unfused accumulation of a weight gradient into Megatron-LM's fp32 `main_grad`
    (`main_grad.add_(grad)`): reads the fp32 buffer and the gradient, writes the buffer, as one
    elementwise op of three 2-byte-sized inputs (4 + 2 bytes read) writing fp32; a gradient of 4
    bytes reads as four 2-byte ones."""
    inputs = 2 + (2 if grad_dtype == "fp32" else 1)
    return {"name": name, "kind": "elementwise", "shape": [batch * rows * cols], "dtype": "bf16", "inputs": inputs,
            "out_dtype": "fp32"}


def accumulate_wgrad(wgrad, a):
    """A weight gradient as --grad-accumulation says it reaches the fp32 gradient buffer:
    `fused` (Megatron-LM's gradient-accumulation fusion, its default since 2022, and Transformer
    Engine's fuse_wgrad_accumulation: the GEMM adds into the fp32 buffer, cuBLAS's beta 1), `add`
    (the GEMM writes the gradient and an add kernel accumulates it, as Megatron-LM's 2021 hooks
    did), `none` (not modelled). Returns the ops to emit in its place."""
    mode = a.grad_accumulation
    if mode == "fused":
        return [dict(wgrad, out_dtype="fp32", accumulate=True)]
    if mode == "add":
        name = wgrad["name"][:-len("_wgrad")] + "_grad_accum"
        add = grad_accumulation_add(name, wgrad["m"], wgrad["n"], wgrad.get("out_dtype", wgrad.get("dtype", "bf16")),
                                    wgrad.get("batch", 1))
        if "stream" in wgrad:
            add["stream"] = wgrad["stream"]  # after its GEMM, in stream order
        return [wgrad, add]
    return [wgrad]


def backward_layer(fwd, c, a, mb):
    """One layer's backward, in reverse: each GEMM C = A B as its data gradient dA = dC B^T and
    weight gradient dB = A^T dC (unfused attention's QK^T and PV too, its softmax and dropout
    as elementwise gradients); fused attention's backward as FlashAttention-2 runs it (2.5
    forward passes' work, between its dO.O row sums and dQ's conversion); norms and elementwise ops again at their shapes, reading their
    output's gradient too. Tensor parallelism: the data gradients
    of the column-parallel projections (QKV, FFN up) are all-reduced (SP: reduce-scattered) on
    stream 1 beside the weight gradient, which Megatron overlaps; with SP the row-parallel
    projections' output gradient is all-gathered first, and the column-parallel input is
    gathered again for its weight gradient (on stream 1, beside the data gradient). Each weight
    gradient reaches the fp32 gradient buffer as --grad-accumulation says (accumulate_wgrad)."""
    T, D = mb.batch * mb.prompt, c["hidden"]
    nbytes = int(T * D * act_bytes(a.activations))
    tp, sp = a.tp > 1, a.sequence_parallel and a.tp > 1
    out, waits = [], []  # waits: stream-1 collectives the next compute op depends on
    for op in reversed(fwd):
        n, kind = op["name"], op["kind"]
        if kind in ("all_reduce", "all_gather"):
            continue  # identity backward (all-reduce), or handled at its GEMM (all-gather)
        if kind == "all_to_all":  # the gradients go back the way the tokens came
            out.append({"name": f"{n}_grad", "kind": "all_to_all", "bytes": op["bytes"]})
            continue
        if kind == "reduce_scatter":
            out.append({"name": n.replace("_rs", "_grad_ag"), "kind": "all_gather", "bytes": nbytes})
            continue
        if kind == "elementwise" and n.endswith(("_input_t", "_input_cast")):
            continue  # fp8 casts: the forward's own; the backward casts its output gradients
        if kind == "gemm":
            g = {k: v for k, v in op.items() if k not in ("name", "m", "n", "k", "deps")}
            if fp8_layers(a) and _fp8_gemm(op) and n not in ("ffn_up", "expert_up"):
                # TE casts the output gradient to e5m2 with its transpose (the MLP's first GEMM
                # gets both from its activation's fused backward instead).
                cast = {"name": f"{n}_grad_cast", "kind": "elementwise", "shape": [op["m"] * op.get("batch", 1), op["n"]],
                        "dtype": a.activations, "out_dtype": "fp8", "outputs": 2}
                if waits:
                    cast["deps"] = waits
                    waits = []
                out.append(cast)
            dgrad = {"name": f"{n}_dgrad", **g, "kind": "gemm", "m": op["m"], "n": op["k"], "k": op["n"]}
            wgrad = {"name": f"{n}_wgrad", **g, "kind": "gemm", "m": op["k"], "n": op["n"], "k": op["m"]}
            column = n in ("qkv", "ffn_up", "router") and tp
            if waits:
                dgrad["deps"] = waits
                waits = []
            if column and sp:
                out.append({"name": f"{n}_input_ag", "kind": "all_gather", "bytes": nbytes, "stream": 1})
                wgrad["deps"] = [f"{n}_input_ag"]
            out.append(dgrad)
            if column and n != "router":
                red = {"name": f"{n}_dgrad_{'rs' if sp else 'allreduce'}", "kind": "reduce_scatter" if sp else "all_reduce",
                       "bytes": int(op["m"] * op["k"] * act_bytes(a.activations)), "stream": 1, "deps": [f"{n}_dgrad"]}
                out.append(red)
                waits = [red["name"]]
            out += accumulate_wgrad(wgrad, a) if n not in NOT_WEIGHTS else [wgrad]
        elif kind == "attention":
            # FlashAttention-2's backward: QK^T again, then dV, dP, dQ and dK, five products of the
            # forward's shape to its two, the score matrix never in memory: as 2.5 forward passes of
            # the fused kernel (the third on half the heads, or half the sequences).
            half = dict(op)
            if op["batch"] > 1:
                half["batch"] = op["batch"] // 2
            else:
                half["heads"] = max(1, op["heads"] // 2)
                kv = op.get("kv_heads", op["heads"])
                if kv != op["heads"]:
                    half["kv_heads"] = max(1, kv // 2) if half["heads"] % max(1, kv // 2) == 0 else 1
            # Around it, the two memory-bound kernels every FlashAttention backward runs (FA2's
            # compute_dot_do_o and convert_dQ, FA3's and cuDNN's likewise): first the row sums
            # D = rowsum(dO * O), one fp32 per query row and head, reading dO and O (as a
            # reduction over rows of both); last, dQ from its fp32 accumulator to the format.
            rows = op["batch"] * op["seq_q"] * op["heads"]
            width = op["heads"] * op["head_dim"]
            dt = op.get("dtype", "bf16")
            out += [{"name": "attn_bwd_dot_do_o", "kind": "reduction", "shape": [rows, 2 * op["head_dim"]], "dtype": dt,
                     "out_dtype": "fp32"},
                    dict(op, name="attn_bwd"), dict(op, name="attn_bwd_dkdv"), dict(half, name="attn_bwd_half"),
                    {"name": "attn_bwd_convert_dq", "kind": "elementwise", "shape": [op["batch"] * op["seq_q"], width],
                     "dtype": "fp32", "out_dtype": dt}]
            for o in out[-5:]:
                o.pop("deps", None)
            if waits:
                out[-5]["deps"] = waits
                waits = []
        else:
            b = {k: v for k, v in op.items() if k != "deps"}
            b["name"] = f"{n}_grad"
            if b["kind"] == "elementwise":
                b["inputs"] = b.get("inputs", 1) + 1
            if waits:
                b["deps"] = waits
                waits = []
            out.append(b)
    return out


def recompute_ops(fwd, a):
    """What runs again before a layer's backward: full recomputation, the whole forward (its
    TP collectives too); selective, the attention core where it is unfused (QK^T, softmax, its
    dropout, PV; a fused attention kernel recomputes inside its backward)."""
    if a.recompute == "full":
        keep = fwd
    elif a.recompute == "selective":
        keep = [o for o in fwd if o["name"] in ("qk", "softmax", "attn_dropout", "pv")]
    else:
        keep = []
    out = []
    for op in keep:
        x = dict(op, name="re_" + op["name"])
        if "deps" in x:
            x["deps"] = ["re_" + d for d in x["deps"]]
        out.append(x)
    return out


def layer_params(fwd, experts=None):
    """Weights of one layer on one GPU (its GEMMs against weights: every GEMM but attention's);
    experts=True: the experts' only, False: the rest."""
    return sum(o["n"] * o["k"] * o.get("batch", 1) for o in fwd
               if o["kind"] == "gemm" and o["name"] not in ("qk", "pv")
               and (experts is None or o["name"].startswith("expert_") == experts))

