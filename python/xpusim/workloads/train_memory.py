"""What a training step needs: the memory each GPU holds (weights, gradients, optimiser state,
activations by the schedule's microbatches in flight) and the model FLOPs its throughput is
quoted in."""
from .cards import act_bytes, vocab_shard
from .pipeline import in_flight

# Bytes per parameter a GPU keeps, mixed precision with bf16 parameters and fp32 gradient
# buffers, as Megatron-LM's distributed-optimizer documentation tabulates them
# (docs/source/api-guide/dist_optimizer.md, "fp16/bf16 param, fp32 grads": 18 bytes without the
# distributed optimizer, 6 + 12/d with it): 2 (bf16 weights) + 4 (fp32 gradient accumulation
# buffer) + 12 (fp32 master weights, Adam's two moments). ZeRO stage 2 shards the gradients
# too and stage 3 the weights (Rajbhandari et al., "ZeRO", 2020, Figure 1).
PARAM_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 4, 12
# Assumption (not measured): the CUDA context, cuBLAS workspaces and NCCL's buffers on each GPU.
RESERVED_BYTES = 2 * 2**30


def activation_bytes(c, a, mb):
    """Activation bytes one layer keeps for its backward per microbatch on one GPU: the inputs
    its backward reads, counted as Korthikanti et al. (2022, section 4) count them, without
    dropout masks (the generated models have none): the two norms' inputs and the QKV and FFN-up
    inputs (each T x D; split over TP with sequence parallelism), Q, K, V and the attention
    output, the FFN's up-projection output and the down projection's input, and, unfused and
    not recomputed, the score matrix's softmax (and with dropout its dropped-out copy and mask);
    with dropout, its masks. Full recomputation keeps the layer's input only."""
    T, D, tp = mb.batch * mb.prompt, c["hidden"], a.tp
    sp = tp if a.sequence_parallel else 1
    if a.recompute == "full":
        return T * D / sp * act_bytes(a.activations)
    d = c["head_dim"]
    H = c["heads"] // tp
    KV = c["kv_heads"] // tp if c["kv_heads"] >= tp else 1
    F = c["ffn"] // tp
    up = F * (2 if c["gated"] else 1)
    if c["experts"] > 1:
        up, F = up * c["top_k"], F * c["top_k"]
    elems = 4 * T * D / sp + T * (2 * H + 2 * KV) * d + T * (up + F)
    masks = 2 * T * D / sp if c["dropout"] else 0  # the hidden dropouts' masks, a byte each
    if a.attention == "unfused" and a.recompute == "none":
        scores = mb.batch * H * mb.prompt ** 2
        elems += scores * (2 if c["dropout"] else 1)  # the softmax, and the dropout's output
        masks += scores if c["dropout"] else 0
    return elems * act_bytes(a.activations) + masks


def model_flops(c, seq, tokens, layers=None):
    """Model FLOPs of a training step (forward and backward, no recomputation) as Megatron-LM
    counts them (Narayanan et al. 2021, appendix: 72 B s l h^2 (1 + s / 6h + V / 12hl) for GPT):
    6 FLOPs per weight per token for every weight GEMM and the LM head, and 12 s h per token
    per layer for attention's two score-matrix products at the full (unmasked) matrix."""
    d, D = c["head_dim"], c["hidden"]
    qkv = D * (c["heads"] + 2 * c["kv_heads"]) * d
    ffn = D * c["ffn"] * (3 if c["gated"] else 2) * (c["top_k"] if c["experts"] > 1 else 1)
    L = layers or c["layers"]
    weights = (qkv + c["heads"] * d * D + ffn) * L + D * c["vocab"]
    return 6 * tokens * weights + 12 * tokens * seq * c["heads"] * d * L


def _gib(x):
    return f"{x / 2**30:.1f} GiB"


def memory(c, a, lay, stage_params, stage_experts, lp, act, full_act, T, orders):
    """Per GPU, the most loaded stage's bytes ({component: bytes}) and that stage. lp: one
    layer's weights per GPU; act: a layer's activations kept per microbatch, full_act without
    recomputation; T: a microbatch's tokens."""
    best = None
    for s in range(lay.pp):
        z = a.zero

        def sharded(per_param, stage):
            # Dense parameters shard over every replica, experts over those that hold them.
            E = stage_experts[s]
            if z < stage:
                return per_param * stage_params[s]
            return per_param * ((stage_params[s] - E) / lay.dp + E / (lay.dp // a.ep))

        weights = sharded(PARAM_BYTES, 3)
        grads = sharded(GRAD_BYTES, 2)
        opt = sharded(OPTIMIZER_BYTES, 1)
        if z >= 3:
            weights += 2 * PARAM_BYTES * lp  # a gathered layer, and the next one's
        chunks = in_flight(orders[s])
        acts = chunks * max(lay.chunk_layers[j] for j in range(lay.chunks) if lay.stage_of(j) == s) * act
        if a.recompute == "full":
            acts += full_act  # one layer's activations while its backward runs
        mem = {"weights": weights, "gradients": grads, "optimizer": opt, "activations": acts}
        if s == lay.pp - 1:
            mem["logits"] = T * vocab_shard(c, lay.tp) * (act_bytes(a.activations) + 4)
        mem["reserved"] = RESERVED_BYTES
        total = sum(mem.values())
        if best is None or total > best[0]:
            best = (total, s, mem)
    return best[2], best[1]

