"""A model replica's memory (weights, KV cache per token, blocks the HBM holds) and its GPUs'
links, from the model card and the resolved config (serve.engine)."""
import re

from .. import workloads
from . import engine
from .stream import fail

# Block scales stored beside fp4 weights, bits per element: an E8M0 per 32 (MXFP4), an E4M3 per 16 (NVFP4).
SCALE_BITS = {"mxfp4": 8 / 32, "nvfp4": 8 / 16}


def format_bytes(fmt):
    """Bytes an element of this format takes in HBM, its block scales included."""
    return (workloads.BITS[fmt] + SCALE_BITS.get(fmt, 0)) / 8


def load_card(path):
    """The model card as the trace generator reads and checks it; decoder-only transformers."""
    try:
        card = workloads.load_card(path)
    except workloads.WorkloadError as e:  # the generator's own message, which names the file and key
        fail(str(e))
    if card.get("family") == "resnet" or card.get("encoder"):
        fail(f"{path}: serving needs a decoder-only transformer")
    return card


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


def stage_layers(c, pp):
    """Layers on the largest of pp pipeline stages (consecutive layers, the first stages one more
    where they do not divide, as xpusim-trace.py splits them)."""
    return -(-c["layers"] // pp)


def size_bytes(text):
    m = re.match(r"^([\d.]+)\s*([KMGT]i?B|B)$", text)
    if not m:
        fail(f"cannot read the size {text!r}")
    scale = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40, "KB": 1e3, "MB": 1e6, "GB": 1e9,
             "TB": 1e12}[m.group(2)]
    return float(m.group(1)) * scale


class Replica:
    """What one model replica holds in HBM and how many KV blocks that leaves."""

    def __init__(self, a, card):
        self.card = card
        self.tp = a.tp
        hbm = size_bytes(engine.value(a.config, a.set, "hbm.capacity"))
        kv_heads = card.get("kv_heads", card["heads"])
        head_dim = card.get("head_dim", card["hidden"] // card["heads"])
        # A GPU holds its TP share of the largest pipeline stage's layers, and of the embedding
        # (first stage) or the LM head (last stage), or of both without a pipeline.
        layers = stage_layers(card, a.pp)
        ends = 2 if a.pp == 1 else 1
        self.weights_per_gpu = (layers * layer_params(card) + ends * card["vocab"] * card["hidden"]) * \
            format_bytes(a.weights) / a.tp
        # Each GPU keeps its share of the KV heads (all of them replicated where there are fewer
        # than GPUs) of its stage's layers.
        self.kv_bytes_per_token = 2 * layers * max(1, kv_heads // a.tp) * head_dim * format_bytes(a.kv)
        usable = hbm * a.gpu_memory_utilization - self.weights_per_gpu - a.activation_reserve * 2 ** 30
        if a.kv_blocks is not None:
            self.blocks = a.kv_blocks
        else:
            if usable <= 0:
                fail(f"{card['name']} does not fit: {self.weights_per_gpu / 2 ** 30:.1f} GiB of weights per GPU "
                     f"(--weights {a.weights}, --tp {a.tp}, --pp {a.pp}) and {a.activation_reserve} GiB of activations exceed "
                     f"{a.gpu_memory_utilization:.0%} of the {hbm / 2 ** 30:.0f} GiB of HBM")
            self.blocks = int(usable // (a.block_size * self.kv_bytes_per_token))
        if self.blocks < 1:
            fail(f"{card['name']}: no room for a single KV block of {a.block_size} tokens")
        self.hbm = hbm


def kv_link(a, path):
    """(bytes per second, seconds of latency) of one GPU's path to another GPU, for a KV cache
    handed from a prefill replica to a decode replica or activations from one pipeline stage to
    the next: NVLink (all its links, at the config's efficiency) or the network (its NIC)."""
    def value(key):
        return engine.value(a.config, a.set, key)
    if path == "nvlink":
        bw = float(value("nvlink.links")) * rate_bytes(value("nvlink.link_bandwidth")) * float(value("nvlink.efficiency"))
        return bw, time_seconds(value("nvlink.latency"))
    bw = rate_bytes(value("nic.bandwidth")) * float(value("nic.efficiency"))
    return bw, time_seconds(value("nic.latency"))


def stage_path(a):
    """The link between pipeline stages: NVLink while the replica's TP x PP GPUs fit in one of
    the system's NVLink domains (or the config is a single GPU's, as for --tp), else the network."""
    domain = int(engine.value(a.config, a.set, "system.gpus_per_domain"))
    return "network" if 1 < domain < a.tp * a.pp else "nvlink"


def rate_bytes(text):
    if not text.endswith("/s"):
        fail(f"cannot read the bandwidth {text!r}")
    return size_bytes(text[:-2].strip())


def time_seconds(text):
    m = re.match(r"^([\d.eE+-]+)\s*(s|ms|us|ns)$", text)
    if not m:
        fail(f"cannot read the time {text!r}")
    return float(m.group(1)) * {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[m.group(2)]
