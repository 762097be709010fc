"""A transformer's training step as Megatron-LM-style frameworks run it: tensor parallelism (with
sequence parallelism), a pipeline schedule (GPipe, 1F1B or interleaved 1F1B over virtual
stages), data parallelism with ZeRO stage 0-3 (gradients all-reduced, or reduce-scattered and
the parameters all-gathered), activation recomputation (none, selective, full), and the memory
each GPU needs for it.

Nothing here states how long a step takes or how big its bubble is: the trace orders each
stage's forward and backward blocks as its schedule runs them, passes activations and gradients
between stages by send_recv, and the simulator's dependencies and streams make the bubbles.

GPU numbering: replica r, stage s, TP rank t is GPU r x (tp x pp) + s x tp + t. Streams: 0 the
compute and the blocking TP collectives; 1 the TP collectives Megatron overlaps with a weight
gradient (SP's re-gather of a layer input, the data gradient's reduction); 2 the data-parallel
gradient reduction, overlapped with the backward pass; 3 and up the pipeline's sends, one stream
per stage and direction (so a stage's sends to its successor queue only behind each other).
"""
from .cards import act_bytes, fail, vocab_shard
from .pipeline import SCHEDULES, Layout, bubble_fraction, in_flight, schedule
from .train_layers import (GRAD_ACCUMULATION, RECOMPUTE, accumulate_wgrad, backward_layer, forward_layer, fp8_layers, layer_params,
                           recompute_ops)
from .train_memory import PARAM_BYTES, _gib, activation_bytes, memory, model_flops
from .transformer import dev, gemm, norm_ops

__all__ = ["SCHEDULES", "RECOMPUTE", "GRAD_ACCUMULATION", "Layout", "schedule", "bubble_fraction", "in_flight", "model_flops",
           "activation_bytes", "build"]


def check(c, a, layers):
    if layers > c["layers"]:
        fail(f"--layers {layers}: the model has {c['layers']}")
    if a.schedule == "interleaved":
        if a.pp < 2:
            fail("--schedule interleaved needs --pp 2 or more")
        if a.virtual_stages < 2:
            fail("--schedule interleaved needs --virtual-stages 2 or more (model chunks per stage)")
        if a.microbatches % a.pp:
            fail(f"--schedule interleaved: --microbatches {a.microbatches} must be a multiple of --pp {a.pp} "
                 "(as Megatron-LM requires)")
    elif a.virtual_stages != 1:
        fail("--virtual-stages applies to --schedule interleaved")
    if a.pp * a.virtual_stages > layers:
        fail(f"--pp {a.pp} x --virtual-stages {a.virtual_stages}: more model chunks than layers ({layers})")
    if a.sequence_parallel and a.tp == 1:
        fail("--sequence-parallel needs --tp 2 or more")
    if a.sequence_parallel and a.prompt % a.tp:
        fail(f"--sequence-parallel: --tp {a.tp} must divide the sequence (--prompt {a.prompt})")
    if a.zero and a.dp == 1:
        fail(f"--zero {a.zero} shards over data-parallel replicas: it needs --dp 2 or more")
    if a.mirror_replicas and a.dp == 1:
        fail("--mirror-replicas needs --dp 2 or more")
    if a.ep > 1:
        if c["experts"] == 1:
            fail(f"--ep {a.ep}: {c['name']} has no experts")
        if a.dp % a.ep or c["experts"] % a.ep:
            fail(f"--ep {a.ep} must divide --dp ({a.dp}) and the experts ({c['experts']}): expert parallelism "
                 "spreads the experts over data-parallel replicas")
        if a.tp > 1:
            fail("--ep with --tp is not generated (each expert whole on one GPU: --tp 1)")
    if a.capacity_factor is not None and (c["experts"] == 1 or a.capacity_factor <= 0):
        fail("--capacity-factor needs a MoE card and a factor above 0")


def build_training(c, a):
    layers = a.layers or c["layers"]
    check(c, a, layers)
    lay = Layout(a, layers)
    mb = type(a)(**vars(a))
    mb.batch = a.batch // a.microbatches
    T, D = mb.batch * a.prompt, c["hidden"]
    fwd = forward_layer(c, a, mb)
    bwd = backward_layer(fwd, c, a, mb)
    re = recompute_ops(fwd, a)
    lp = layer_params(fwd)
    lp_expert = layer_params(fwd, experts=True)
    lp_dense = lp - lp_expert
    per_layer_act = activation_bytes(c, a, mb)
    full = type(a)(**vars(a))
    full.recompute = "none"
    full_act = activation_bytes(c, full, mb)
    V = vocab_shard(c, a.tp)
    head_params = V * D
    stage_params = []
    for s in range(lay.pp):
        p = lp * sum(lay.chunk_layers[j] for j in range(lay.chunks) if lay.stage_of(j) == s)
        if s == 0:
            p += head_params  # the embedding (tied to the LM head: a copy on the first and last stage)
        if s == lay.pp - 1:
            p += head_params if lay.pp > 1 else 0
        stage_params.append(p)
    stage_experts = [lp_expert * sum(lay.chunk_layers[j] for j in range(lay.chunks) if lay.stage_of(j) == s)
                     for s in range(lay.pp)]
    orders = [schedule(a.schedule, lay.pp, lay.v, lay.M, s) for s in range(lay.pp)]
    mem, worst = memory(c, a, lay, stage_params, stage_experts, lp, per_layer_act, full_act, T, orders)
    grad_bytes = 4 if a.grad_reduce == "fp32" else 2
    act = a.activations
    zero_tag = {0: "all_reduce", 1: "reduce_scatter", 2: "reduce_scatter", 3: "reduce_scatter"}[a.zero]
    # --mirror-replicas: the TP collectives, all-to-alls and pipeline sends of replica 0 only, each
    # standing for the other replicas' identical ones (`mirrors`).
    replicas = 1 if a.mirror_replicas else lay.dp

    def placed(ops, s):
        """Compute on every GPU of the stage; each TP collective once per replica's group."""
        everyone = dev(lay.stage_gpus(s))
        groups = lay.tp_groups(s)
        names = {o["name"] for o in ops if o["kind"] in COLLECTIVES and a.tp > 1 and replicas > 1}
        out = []
        for op in ops:
            deps = op.get("deps")
            if deps and names:
                deps = [x for d in deps for x in ([f"{d}.r{r}" for r in range(lay.dp)] if d in names else [d])]
            if op["kind"] == "all_to_all":
                groups_ep = lay.dp // a.ep
                for g in range(1 if a.mirror_replicas else groups_ep):
                    for t in range(a.tp):
                        x = dict(op, devices=dev([lay.gpu(r, s, t) for r in range(g * a.ep, (g + 1) * a.ep)]))
                        x["name"] = op["name"] + (f".g{g}" if groups_ep > 1 and not a.mirror_replicas else "") + (
                            f".t{t}" if a.tp > 1 else "")
                        if a.mirror_replicas and groups_ep > 1:
                            x["mirrors"] = groups_ep - 1
                        out.append(x)
            elif op["kind"] in COLLECTIVES:
                if a.tp == 1:
                    continue
                for r, grp in enumerate(groups[:replicas]):
                    x = dict(op, devices=dev(grp))
                    if replicas > 1:
                        x["name"] = f"{op['name']}.r{r}"
                    elif lay.dp > 1:
                        x["mirrors"] = lay.dp - 1
                    if deps:
                        x["deps"] = deps
                    out.append(x)
            else:
                x = dict(op, devices=everyone)
                if deps:
                    x["deps"] = deps
                out.append(x)
        return out

    def dp_reduce(s, nbytes, after, name, expert_bytes=0):
        """The stage's gradients of `nbytes` per TP rank reduced over the replicas, on stream 2;
        with expert parallelism the experts' `expert_bytes` over the replicas that hold the same
        experts (one group per EP rank)."""
        out = []
        if lay.dp > 1 and nbytes:
            out += _per_tp_rank(a, [{"name": f"{name}.t{t}" if a.tp > 1 else name, "kind": zero_tag, "bytes": int(nbytes),
                                     "devices": dev(lay.dp_group(s, t)), "stream": 2, "deps": after}
                                    for t in _tp_ranks(a)])
        if lay.dp // a.ep > 1 and expert_bytes:
            out += _per_tp_rank(a, [{"name": f"{name}_experts.e{e}.t{t}", "kind": zero_tag, "bytes": int(expert_bytes),
                                     "devices": dev([lay.gpu(r, s, t) for r in range(e, lay.dp, a.ep)]), "stream": 2,
                                     "deps": after}
                                    for e in range(a.ep) for t in _tp_ranks(a)])
        return out

    def gather_params(s, nbytes, name):
        if lay.dp == 1:
            return []
        return _per_tp_rank(a, [{"name": f"{name}.t{t}" if a.tp > 1 else name, "kind": "all_gather", "bytes": int(nbytes),
                                 "devices": dev(lay.dp_group(s, t))} for t in _tp_ranks(a)])

    last_chunk = lay.chunks - 1
    # The last backward of each (stage, chunk): its layers' gradients are reduced then.
    last_b = {}
    for s, order in enumerate(orders):
        for phase, m, cl in order:
            if phase == "B":
                last_b[(s, cl)] = m
    ops = []
    dp_tail = {s: [] for s in range(lay.pp)}  # the last DP collective names per stage
    # The last residual add is in the final norm, or in the last layer's bias-dropout-add.
    rows = T // (a.tp if a.sequence_parallel and a.tp > 1 else 1)  # the norms' and embedding's tokens
    head_fwd = norm_ops(c, a, "final_norm", rows, D,
                        residual=a.fusion != "none" and not c["dropout"])
    if a.sequence_parallel and a.tp > 1:
        head_fwd.append({"name": "head_ag", "kind": "all_gather", "bytes": int(T * D * act_bytes(act))})
    # The output layer is Megatron's own ColumnParallelLinear, not a Transformer Engine module:
    # with fp8 layers it still runs in the activations' format.
    head_w = act if fp8_layers(a) else a.weights
    head_fwd += [gemm("lm_head", T, V, D, head_w),
                 {"name": "loss", "kind": "softmax", "shape": [T, V], "dtype": act}]
    head_bwd = [{"name": "loss_grad", "kind": "elementwise", "shape": [T, V], "inputs": 2, "dtype": act},
                gemm("lm_head_dgrad", T, D, V, head_w)] + accumulate_wgrad(gemm("lm_head_wgrad", V, D, T, head_w), a)
    if a.sequence_parallel and a.tp > 1:
        head_bwd.append({"name": "head_grad_rs", "kind": "reduce_scatter", "bytes": int(T * D * act_bytes(act))})
    elif a.tp > 1:
        head_bwd.append({"name": "head_grad_allreduce", "kind": "all_reduce", "bytes": int(T * D * act_bytes(act))})
    head_bwd_last = [o["name"] for o in head_bwd if o["name"].startswith("lm_head_")][-1]  # its gradient's last op
    head_bwd += [dict(o, name=o["name"] + "_grad") for o in head_fwd if o["kind"] == "layernorm"]
    embed = {"name": "embedding", "kind": "elementwise", "shape": [rows, D], "dtype": act}
    p2p = int(T * D * act_bytes(act) / a.tp)  # Megatron sends each TP rank's 1/tp of the activations

    def send(kind, m, j, s_from, s_to, after):
        direction = 0 if kind == "F" else 1
        out = [{"name": f"{kind}{m}.c{j}.send" + (f".t{t}" if a.tp > 1 else "") + (f".r{r}" if replicas > 1 else ""),
                "kind": "send_recv", "bytes": p2p, "devices": [lay.gpu(r, s_from, t), lay.gpu(r, s_to, t)],
                "stream": 3 + 2 * s_from + direction, "deps": after}
               for r in range(replicas) for t in range(a.tp)]
        if replicas < lay.dp:
            for x in out:
                x["mirrors"] = lay.dp - 1
        return out

    def recv_names(kind, m, j):
        return [f"{kind}{m}.c{j}.send" + (f".t{t}" if a.tp > 1 else "") + (f".r{r}" if replicas > 1 else "")
                for r in range(replicas) for t in range(a.tp)]

    zero3 = a.zero == 3 and lay.dp > 1
    for s, order in enumerate(orders):
        for phase, m, cl in order:
            j = cl * lay.pp + s
            n = lay.chunk_layers[j]
            name = f"{phase}{m}.c{j}"
            if phase == "F":
                body = list(fwd)
                if zero3:
                    body = [{"name": "param_ag", "kind": "all_gather_dp", "bytes": lp * PARAM_BYTES}] + body
                pre = [dict(embed, name=f"{name}.embedding")] if j == 0 else []
                block = {"repeat": n, "name": name, "ops": _expand(placed(body, s), lay, s, a)}
                first = (pre or block["ops"])[0]
                if j > 0:
                    first["deps"] = first.get("deps", []) + recv_names("F", m, j - 1)
                for op in pre:
                    op["devices"] = dev(lay.stage_gpus(s))
                ops += pre + [block]
                if j == last_chunk:
                    ops += [dict(o, name=f"{name}.{o['name']}") for o in placed(head_fwd, s)]
                    tail = f"{name}.loss"
                else:
                    base = _base(block["ops"][-1]["name"])
                    tails = [f"{name}[{n - 1}].{o['name']}" for o in block["ops"] if _base(o["name"]) == base]
                    ops += send("F", m, j, s, lay.stage_of(j + 1), tails)
            else:
                pre = []
                if j == last_chunk:
                    pre = [dict(o, name=f"{name}.{o['name']}") for o in placed(head_bwd, s)]
                    if (s, cl) in last_b and last_b[(s, cl)] == m:
                        pre += dp_reduce(s, head_params * grad_bytes, [f"{name}.{head_bwd_last}"], f"{name}.head_grad_reduce")
                body = re + list(bwd)
                if zero3:
                    body = [{"name": "param_ag", "kind": "all_gather_dp", "bytes": lp * PARAM_BYTES}] + body
                body = _expand(placed(body, s), lay, s, a)
                if zero3 or last_b.get((s, cl)) == m:
                    wg = [o["name"] for o in body if o["name"].endswith(("_wgrad", "_grad_accum"))][-1]
                    if a.ep > 1:
                        body += dp_reduce(s, lp_dense * grad_bytes, [wg], "grad_reduce", lp_expert * grad_bytes)
                    else:
                        body += dp_reduce(s, lp * grad_bytes, [wg], "grad_reduce")
                block = {"repeat": n, "name": name, "ops": body}
                first = (pre or block["ops"])[0]
                if j < last_chunk:
                    first["deps"] = first.get("deps", []) + recv_names("B", m, j + 1)
                ops += pre + [block]
                if lay.dp > 1 and (zero3 or last_b.get((s, cl)) == m):
                    dp_tail[s] = [f"{name}[{n - 1}].{o['name']}" for o in body if o.get("stream") == 2]
                compute = [o["name"] for o in body if o.get("stream", 0) == 0]
                tail = f"{name}[{n - 1}].{compute[-1]}"
                if j == 0:
                    ops.append({"name": f"{name}.embedding_grad", "kind": "elementwise",
                                "shape": embed["shape"], "inputs": 2, "dtype": act, "devices": dev(lay.stage_gpus(s))})
                    if lay.dp > 1 and lay.pp > 1 and last_b.get((s, cl)) == m:
                        # The embedding's gradients (one pipeline stage only: the LM head's copy,
                        # reduced with the last stage's, is the same tensor).
                        reduce = dp_reduce(s, head_params * grad_bytes, [f"{name}.embedding_grad"], f"{name}.embed_grad_reduce")
                        ops += reduce
                        dp_tail[s] = [o["name"] for o in reduce]
                else:
                    ops += send("B", m, j, s, lay.stage_of(j - 1), [tail])
    # The optimiser step on each stage once its gradients are reduced, as Megatron-LM's fused Adam
    # runs it (one multi-tensor kernel reading the fp32 master parameter, its gradient and both
    # moments, writing the parameter and both moments), then the copy of the fp32 master
    # parameters into the bf16 ones the layers use; ZeRO 1 and 2 then gather those.
    for s in range(lay.pp):
        E = stage_experts[s]
        P = ((stage_params[s] - E) / lay.dp + E / (lay.dp // a.ep)) if a.zero >= 1 else stage_params[s]
        tag = f".s{s}" if lay.pp > 1 else ""
        adam = {"name": "adam" + tag, "kind": "elementwise", "shape": [int(P)], "inputs": 4, "outputs": 3,
                "flops_per_element": 12, "dtype": "fp32", "devices": dev(lay.stage_gpus(s))}
        if dp_tail[s]:
            adam["deps"] = dp_tail[s]
        ops.append(adam)
        ops.append({"name": "param_copy" + tag, "kind": "elementwise", "shape": [int(P)], "dtype": "fp32", "out_dtype": act,
                    "devices": dev(lay.stage_gpus(s)), "deps": [adam["name"]]})
        if a.zero in (1, 2):
            ops += gather_params(s, stage_params[s] * PARAM_BYTES, f"param_gather.s{s}" if lay.pp > 1 else "param_gather")
    if lay.tp * lay.pp * lay.dp == 1:
        _strip_devices(ops)
    return lay, ops, mem, worst, stage_params


COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def _base(name):
    """An op's name without the replica suffix `.r<i>` that placement adds."""
    head, _, tail = name.rpartition(".r")
    return head if head and tail.isdigit() else name


def _tp_ranks(a):
    """The TP ranks whose data-parallel collectives the trace holds: every one, or with
    --mirror-replicas rank 0's alone (_per_tp_rank)."""
    return range(1) if a.mirror_replicas else range(a.tp)


def _per_tp_rank(a, ops):
    """With --mirror-replicas, rank 0's data-parallel collectives stand for the other TP ranks'
    (`mirrors`): those run the same bytes at the same time over their own GPUs, ports and NICs
    (GPU t of each replica's stage), which no other rank's collective shares."""
    if a.mirror_replicas and a.tp > 1:
        for op in ops:
            op["mirrors"] = a.tp - 1
    return ops


def _expand(ops, lay, s, a):
    """ZeRO-3's parameter all-gather (a placeholder `all_gather_dp` in the body): one per TP
    rank over the replicas, inline before the layer's compute (not prefetched)."""
    out = []
    for op in ops:
        if op["kind"] == "all_gather_dp":
            out += _per_tp_rank(a, [{"name": f"param_ag.t{t}" if a.tp > 1 else "param_ag", "kind": "all_gather",
                                     "bytes": int(op["bytes"]), "devices": dev(lay.dp_group(s, t))} for t in _tp_ranks(a)])
        else:
            out.append(op)
    return out


def _strip_devices(ops):
    for op in ops:
        op.pop("devices", None)
        for o in op.get("ops", []):
            o.pop("devices", None)


def build(c, a):
    """The training step's trace."""
    layers = a.layers or c["layers"]
    lay, ops, mem, worst, stage_params = build_training(c, a)
    gpus = lay.tp * lay.pp * lay.dp
    tokens = a.batch * a.prompt * lay.dp
    par = (f"TP={lay.tp}{' with sequence parallelism' if a.sequence_parallel and lay.tp > 1 else ''}, PP={lay.pp}"
           f"{f' x {lay.v} virtual stages' if lay.v > 1 else ''} ({a.schedule}), DP={lay.dp}"
           f"{f' ZeRO-{a.zero}' if a.zero else ''} on {gpus} GPUs")
    tag = "".join(f"-{k}{v}" for k, v in (("tp", lay.tp), ("pp", lay.pp), ("dp", lay.dp)) if v > 1)
    if lay.v > 1:
        tag += f"-v{lay.v}"
    if a.zero:
        tag += f"-z{a.zero}"
    if a.recompute != "none":
        tag += f"-rc{a.recompute[0]}"
    mflops = model_flops(c, a.prompt, tokens, layers)
    parts = ", ".join(f"{k} {_gib(v)}" for k, v in mem.items())
    desc = (f"{c['name']}: one training step of {a.batch} x {a.prompt} tokens per replica in {lay.M} microbatch"
            f"{'es' if lay.M > 1 else ''} over {layers} of {c['layers']} layers (forward, backward"
            f"{', full recomputation' if a.recompute == 'full' else ', selective recomputation' if a.recompute == 'selective' else ''}"
            f", Adam on fp32 master weights), GEMMs in {a.weights}, gradients accumulated in fp32 ({a.grad_accumulation}) and reduced in {a.grad_reduce}, {par}. "
            f"Memory per GPU (stage {worst}): {parts}; {_gib(sum(mem.values()))} in all. "
            + f"Model FLOPs {mflops:.4g}. "
            + "Generated by scripts/xpusim-trace.py.")
    trace = {"xpusim_trace": 1, "name": f"{c['name']}-train-b{a.batch}-{a.prompt}-{a.weights}{tag}",
             "description": desc, "tokens": tokens,
             "memory_per_gpu": {k: f"{v / 2**20:.1f} MiB" for k, v in mem.items()}, "ops": ops}
    return trace
