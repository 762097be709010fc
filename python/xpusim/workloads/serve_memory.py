"""What a GPU holds to serve a transformer: its share of the weights and of the KV cache. The
trace generator writes it into prefill and decode traces (`memory_per_gpu`), so that `xpusim run`
and `check` refuse a step whose weights and cache exceed a GPU's HBM; xpusim serve sizes its KV
block pool from the same figures."""
from .cards import BITS

# Block scales stored beside fp4 weights, bits per element: an E8M0 per 32 (MXFP4), an E4M3 per 16 (NVFP4).
SCALE_BITS = {"mxfp4": 8 / 32, "nvfp4": 8 / 16}
# 2:4 structured sparsity keeps two values of every four and a 2-bit position for each (the
# compressed layout of NVIDIA's sparse tensor cores: "Accelerating Sparse Deep Neural Networks",
# Mishra et al., 2021, section 3).
SPARSE_INDEX_BITS = 2


def format_bytes(fmt):
    """Bytes an element of this format takes in HBM, its block scales included."""
    return (BITS[fmt] + SCALE_BITS.get(fmt, 0)) / 8


def layer_params(c):
    """Parameters of one layer's weights: attention and FFN (every expert)."""
    d, h = c["hidden"], c["heads"]
    kv, hd = c.get("kv_heads", h), c.get("head_dim", d // h)
    attn = d * (h + 2 * kv) * hd + h * hd * d
    ffn = (3 if c.get("gated") else 2) * d * c["ffn"] * c.get("experts", 1)
    return attn + ffn


def card_params(c):
    """Parameters of the weights: the layers, the embedding and the LM head."""
    return c["layers"] * layer_params(c) + 2 * c["vocab"] * c["hidden"]


def stage_layers(layers, pp):
    """Layers on the largest of pp pipeline stages (consecutive layers, the first stages one more
    where they do not divide, as the generator splits them)."""
    return -(-layers // pp)


def layer_params_per_gpu(c, tp):
    """Parameters of one layer's weights on one GPU of a TP group of tp: a tp-th of each, but the
    K and V projections of a GPU's KV heads, which are replicated where there are fewer KV heads
    than GPUs (each GPU keeps one, as the generator's attention and the cache do)."""
    h = c["heads"]
    kv, hd = c.get("kv_heads", h), c.get("head_dim", c["hidden"] // h)
    return layer_params(c) / tp + 2 * c["hidden"] * hd * (max(1, kv // tp) - kv / tp)


def weights_per_gpu(c, layers, weights, tp, pp, sparsity=None):
    """Bytes of weights on the GPU holding the most: its TP share of the largest pipeline stage's
    layers (layer_params_per_gpu), and of the embedding (first stage) or the LM head (last stage),
    or of both without a pipeline (an encoder has no LM head)."""
    ends = 1 if pp > 1 or c.get("encoder") else 2
    fb = format_bytes(weights)
    dense = 1 if sparsity != "2:4" else (fb / 2 + SPARSE_INDEX_BITS / 8 / 2) / fb  # the layers' share kept
    return (stage_layers(layers, pp) * layer_params_per_gpu(c, tp) * dense + ends * c["vocab"] * c["hidden"] / tp) * fb


def kv_bytes_per_token(c, layers, kv, tp, pp):
    """KV-cache bytes a token takes on one GPU: its share of the KV heads (all of them replicated
    where there are fewer than GPUs) of its stage's layers."""
    kv_heads = c.get("kv_heads", c["heads"])
    head_dim = c.get("head_dim", c["hidden"] // c["heads"])
    return 2 * stage_layers(layers, pp) * max(1, kv_heads // tp) * head_dim * format_bytes(kv)


def step_memory(c, a, layers):
    """{component: bytes} one GPU holds for a prefill or decode step of the generator's arguments
    `a` over `layers` layers: the weights and the batch's KV cache (the prompt and what was
    cached before it, or the decode's context; an encoder keeps none). Activations and workspaces are the ops' own."""
    tokens = 0 if c.get("encoder") else a.batch * (a.past + a.prompt if a.phase == "prefill" else a.context)
    return {"weights": weights_per_gpu(c, layers, a.weights, a.tp, a.pp, a.sparsity),
            "kv_cache": tokens * kv_bytes_per_token(c, layers, a.kv, a.tp, a.pp)}
