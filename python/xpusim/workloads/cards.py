"""Model cards (configs/models/*.yaml) as the trace generator reads and checks them, the formats
it knows, and a trace's YAML and JSON Lines text. Errors are WorkloadError, naming the file, line
and key."""
import json

import yaml


class WorkloadError(Exception):
    """Bad input to the generator: the message names the card's file, line and key, or the flag."""


CARD_KEYS = {"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "gated", "vocab", "norm",
             "experts", "top_k", "encoder", "family", "rope", "context", "dropout"}
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
    raise WorkloadError(msg)


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
    for k in ("gated", "encoder", "rope", "dropout"):
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
    card.setdefault("dropout", False)  # training only: see workloads/training.py, forward_layer
    # Rotary position embeddings: the RMSNorm families (Llama, Mixtral) use them.
    card.setdefault("rope", card["norm"] == "rmsnorm")
    if card["heads"] % card["kv_heads"]:
        fail(f"{at('kv_heads') if 'kv_heads' in line else at('heads')}: heads ({card['heads']}) must be a multiple of kv_heads ({card['kv_heads']})")
    if not 1 <= card["top_k"] <= card["experts"]:
        fail(f"{at('top_k')}: must be between 1 and experts")
    card["name"] = card.get("name") or path
    return card


BITS = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "fp8_e5m2": 8, "int8": 8, "int4": 4, "fp4": 4,
        "mxfp4": 4, "nvfp4": 4}


def act_bytes(fmt):
    return BITS[fmt] / 8
