"""A transformer's ops as the generator emits them: a layer's kernels (fused as serving engines
run them, or PyTorch eager's), the sampler's, a runtime's host work, and a prefill or decode
step's placement on the GPUs of a tensor- and pipeline-parallel layout (build). Training steps
are training.py's."""
import argparse
import math

from .. import runtime as RUNTIME
from .cards import act_bytes, fail, vocab_shard
from .serve_memory import step_memory


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


def all_reduce(a, name, T, D, dtype, devices):
    """A tensor-parallel all-reduce of a [T, D] activation: NCCL's (the engine's `auto`), or the
    runtime's own kernel where its profile's all_reduce section takes it (--all-reduce), after a
    copy into its registered buffer where it runs outside a CUDA graph and the profile says so, or
    copying its input in itself (copy_in) where the profile's kernel does."""
    nbytes = T * D * act_bytes(dtype)
    op = {"name": name, "kind": "all_reduce", "bytes": int(nbytes), "devices": devices}
    ar = getattr(a, "ar", None)
    algo = ar.all_reduce_algorithm(a.tp, nbytes) if ar else None
    if not algo:
        return [op]
    op["algorithm"] = algo
    if ar.all_reduce_copies_in():
        op["copy_in"] = True
    if ar.all_reduce.get("eager_copy") and ar_eager(a):
        return [{"name": name + "_copy", "kind": "elementwise", "shape": [T, D], "dtype": dtype, "flops_per_element": 0,
                 "devices": devices}, op]
    return [op]


def ar_eager(a):
    """Whether this step runs outside a CUDA graph: --launch where given (xpusim serve says how it
    runs each step, a mixed step eagerly), else as the runtime that launches it (--runtime, else
    the --all-reduce profile) runs this phase."""
    if getattr(a, "launch", None):
        return a.launch == "eager"
    return (a.rt or a.ar).eager(a.phase, a.batch)


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
        ops += all_reduce(a, "o_proj_allreduce", T, D, act, devices)
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
        ops += all_reduce(a, "ffn_allreduce", T, D, act, devices)
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
    else:
        shape = dict(prefill_seqs=a.batch, prefill_tokens=a.batch * a.prompt)
    eager = rt.eager(a.phase, a.batch)
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


def dev(ids):
    """A `devices` value: a range "a-b" when consecutive, else the list."""
    ids = sorted(ids)
    if len(ids) > 2 and ids == list(range(ids[0], ids[-1] + 1)):
        return f"{ids[0]}-{ids[-1]}"
    return ids


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
    fmt = a.weights if a.math == a.weights else f"w{a.weights}-{a.math}"
    length = (f"{a.prompt}" + (f"p{a.past}" if a.past else "")) if a.phase == "prefill" else a.context
    name = f"{c['name']}-{a.phase}-b{a.batch}-{length}-{fmt}{tag}"
    math = "" if a.math == a.weights else f" (math {a.math})"
    desc = (f"{c['name']}: {what}, {layers} of {c['layers']} layers, weights {a.weights}{math}, activations "
            f"{a.activations}, attention {a.attention} in {a.kv}{par}")
    tokens = T if a.phase == "prefill" else a.batch
    # What each GPU holds beside the ops' buffers, so that a chip with less HBM refuses the step.
    memory = {k: f"{v / 2**20:.1f} MiB" for k, v in step_memory(c, a, layers).items() if v > 0}
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
                 "tokens": tokens, "memory_per_gpu": memory, "ops": ops}
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
            "tokens": tokens, "memory_per_gpu": memory, "ops": ops}
