"""A model replica's memory (weights, KV cache per token, blocks the HBM holds) and its GPUs'
links, from the model card and the resolved config (serve.engine)."""
import re

from .. import workloads
from ..workloads import serve_memory
from . import engine
from .stream import fail


def load_card(path):
    """The model card as the trace generator reads and checks it; decoder-only transformers."""
    try:
        card = workloads.load_card(path)
    except workloads.WorkloadError as e:  # the generator's own message, which names the file and key
        fail(str(e))
    if card.get("family") == "resnet" or card.get("encoder"):
        fail(f"{path}: serving needs a decoder-only transformer")
    return card


def stage_layers(c, pp):
    """Layers on the largest of pp pipeline stages of the card's whole stack."""
    return serve_memory.stage_layers(c["layers"], pp)


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
        # A GPU holds its TP share of the largest pipeline stage's layers, and of the embedding
        # (first stage) or the LM head (last stage), or of both without a pipeline; of the KV
        # cache, its share of the KV heads of its stage's layers (workloads.serve_memory, which
        # the generator's steps also carry as their memory_per_gpu).
        self.weights_per_gpu = serve_memory.weights_per_gpu(card, card["layers"], a.weights, a.tp, a.pp)
        self.kv_bytes_per_token = serve_memory.kv_bytes_per_token(card, card["layers"], a.kv, a.tp, a.pp)
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
