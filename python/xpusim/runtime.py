"""Serving runtime profiles: the host's work around a step's kernels (configs/runtimes/*.yaml).

A serving engine's step is more than its kernels: the host schedules the batch, prepares its
inputs (block tables, positions), launches the kernels (one at a time without a CUDA graph, or
one graph replay whose batch is padded up to the next captured size), samples, and processes the
outputs (detokenisation, stop checks, the streamed response). A profile gives those costs for one
runtime, each value cited or measured, and this module applies them:

    from xpusim import runtime
    rt = runtime.load("vllm")                       # or a path to a profile
    rt.graph_batch(13)                              # 16: the captured size a 13-sequence decode pads to
    rt.step_host_s(decode=13, prefill_seqs=0, prefill_tokens=0)   # host seconds the GPU waits for

Both `xpusim serve` (xpusim.serving) and the trace generator (xpusim.workloads, --runtime) use it,
so a step costs the same whichever way it is run. It needs PyYAML only, not the package's
native part. Errors name the file, line, column and key (RuntimeProfileError, a ValueError).
"""
import bisect
import os
import re

import yaml

from . import sampler

SAMPLERS = list(sampler.SAMPLERS)
SAMPLER_HELP = sampler.describe()


def _profiles_dir():
    """configs/runtimes of the checkout this file is in (python/xpusim/, or its copy in
    build/python/xpusim/): the nearest folder above that has one; installed (cmake --install),
    the source tree's the package was built from."""
    d = os.path.dirname(os.path.abspath(__file__))
    for _ in range(5):
        d = os.path.dirname(d)
        if os.path.isdir(os.path.join(d, "configs", "runtimes")):
            return os.path.join(d, "configs", "runtimes")
    try:
        from . import _xpusim  # None where the package's native part is not built (xpusim/__init__.py)
    except ImportError:
        _xpusim = None
    if _xpusim is not None:
        return os.path.join(_xpusim.source_dir, "configs", "runtimes")
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs",
                        "runtimes")


PROFILES = _profiles_dir()
FORMAT = 1

_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


class RuntimeProfileError(ValueError):
    """A runtime profile that cannot be used: the message names the file, line, column and key."""


# key: (kind, required, description). Kinds: "time" (a duration with its unit, at least 0),
# "text", "sizes" (captured batch sizes: positive integers, increasing; "counts" the same of GPU
# counts), "bytes" (a size with its unit: B, kB and MB of 1000, KiB, MiB and GiB of 1024),
# "bytes_by_gpus" (a mapping of GPU counts to sizes), "bytes_or_by_gpus" (either), "bool",
# "choice:a|b", and a dict for a section.
SCHEMA = {
    "xpusim_runtime": ("format", True, "the profile format, 1"),
    "name": ("text", True, "the runtime's name"),
    "version": ("text", True, "the runtime version the values describe"),
    "description": ("text", False, "what the profile stands for, and its sources"),
    "step": ({
        "fixed": ("time", True, "host time of every engine step that the GPU waits for: scheduling, preparing "
                                "the inputs, launching"),
        "per_sequence": ("time", True, "the same per sequence in the step (its block table and positions, its "
                                       "sampling parameters)"),
        "per_prefill_token": ("time", False, "the same per prompt token a step prefills (token ids, positions, "
                                             "slot mapping)"),
    }, True, "host work serialised with each engine step: the GPU idles while it runs"),
    "overlapped": ({
        "fixed": ("time", True, "host time of every step done while the GPU runs a step (an overlap or async "
                                "scheduler preparing step N+1, or step N-1's outputs processed under step N)"),
        "per_sequence": ("time", True, "the same per sequence in the step (detokenising and checking its token)"),
    }, False, "host work beside each step's kernels: a step lasts its serial host work plus the longer of its "
              "kernels and this"),
    "graphs": ({
        "decode": ("sizes", True, "batch sizes captured as CUDA graphs for decode steps: a decode of B sequences "
                                  "runs the graph of the smallest captured size >= B (rows padded up to it); "
                                  "above the largest, or with [] (no graphs), it runs eagerly"),
        "prefill": ("choice:eager|graph", True, "whether steps that prefill run eagerly (kernels issued one at a "
                                                "time by the host) or from a graph"),
    }, True, "CUDA graphs"),
    "eager_issue": ("time", True, "host time to issue one kernel when a step runs eagerly (the GPU idles when "
                                  "kernels are shorter): the engine's kernels.eager_issue"),
    "sampling": ("choice:" + "|".join(SAMPLERS), True, "the sampler's GPU work per step, a path of "
                                                       "python/xpusim/sampler.py: " + SAMPLER_HELP),
    "all_reduce": ({
        "kernel": ("choice:nccl|custom", True, "nccl: tensor parallelism's all-reduces run NCCL's (the engine's "
                                              "`auto`); custom: the runtime's own peer-to-peer kernel "
                                              "(algorithm one_shot or two_shot) where `gpus` and `takes_below` "
                                              "allow, NCCL's otherwise"),
        "gpus": ("counts", False, "with custom: the GPU counts the kernel runs on (others run NCCL's)"),
        "takes_below": ("bytes_or_by_gpus", False, "with custom: it takes all-reduces smaller than this (the rest "
                                                   "run NCCL's): a size, or sizes by GPU count as one_shot_below"),
        "one_shot_below": ("bytes_by_gpus", False, "with custom: by GPU count, all-reduces smaller than this run "
                                                   "one-shot, the rest two-shot; a count takes the value of the "
                                                   "first key at or above it (none: two-shot)"),
        "align": ("bytes", False, "with custom: it takes only sizes that are a multiple of this (the rest run "
                                  "NCCL's)"),
        "two_shot_align_per_gpu": ("bool", False, "with custom and align: two-shot takes only multiples of align x "
                                                  "the GPU count (else NCCL's), as each GPU's part must be aligned"),
        "eager_copy": ("bool", False, "with custom: outside a CUDA graph the input is first copied into the "
                                      "kernel's registered buffer (one more kernel)"),
        "copy_in_kernel": ("bool", False, "with custom: the kernel itself copies its input into its shared buffer "
                                          "before its first barrier, and its one-shot ends without a closing "
                                          "barrier (the trace's copy_in: TensorRT-LLM's kernels); not with "
                                          "eager_copy"),
    }, False, "the all-reduces of tensor parallelism (default: NCCL's)"),
    "request": ({
        "arrival": ("time", True, "from a request's arrival to the scheduler seeing it: the API server's HTTP "
                                  "handling and hand-off to the engine"),
        "per_prompt_token": ("time", False, "the same per prompt token: tokenisation"),
        "first_token": ("time", True, "from the step that makes the first token to the client receiving it: "
                                      "detokenisation and the streamed response"),
    }, True, "a request's path in and out, outside the steps"),
}


def _mark(node):
    m = node.start_mark
    return f"{m.line + 1}:{m.column + 1}"


def parse_time(text):
    """'250 us' -> 2.5e-4. A bare number, another unit or a negative time raises ValueError."""
    m = re.fullmatch(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-z]+)\s*", str(text))
    if not m:
        raise ValueError(f"'{text}' is not a time with a unit (e.g. '250 us'; units {', '.join(_TIME)})")
    if m.group(2) not in _TIME:
        raise ValueError(f"'{text}': unknown unit '{m.group(2)}' (units {', '.join(_TIME)})")
    v = float(m.group(1)) * _TIME[m.group(2)]
    if v < 0:
        raise ValueError(f"'{text}' is negative: a time is at least 0")
    if v > 60:
        raise ValueError(f"'{text}' is over a minute: not a per-step or per-request cost")
    return v


_BYTES = {"B": 1, "kB": 1000, "KiB": 1024, "MB": 1000 ** 2, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


def parse_bytes(text):
    """'512 KiB' -> 524288. A bare number, another unit, a fraction of a byte or a size of 0 or
    over 1 GiB raises ValueError."""
    m = re.fullmatch(r"\s*(\d+\.?\d*|\.\d+)\s*([A-Za-z]+)\s*", str(text))
    if not m or m.group(2) not in _BYTES:
        raise ValueError(f"'{text}' is not a size with a unit (e.g. '512 KiB'; units {', '.join(_BYTES)})")
    v = float(m.group(1)) * _BYTES[m.group(2)]
    if v != int(v) or v < 1 or v > 1024 ** 3:
        raise ValueError(f"'{text}' is not a whole number of bytes from 1 B to 1 GiB")
    return int(v)


def _bytes_by_gpus(path, node, full):
    """A mapping {GPU count: size}, counts increasing: [(count, bytes), ...]."""
    if not isinstance(node, yaml.MappingNode) or not node.value:
        raise RuntimeProfileError(f"{path}:{_mark(node)}: key '{full}': expected a mapping of GPU counts to sizes, "
                                  f"e.g. {{4: 512 KiB, 8: 256 KiB}}")
    out = []
    for k, v in node.value:
        if not (isinstance(k, yaml.ScalarNode) and re.fullmatch(r"\d+", k.value)) or int(k.value) < 2:
            raise RuntimeProfileError(f"{path}:{_mark(k)}: key '{full}': '{getattr(k, 'value', '')}' is not a GPU "
                                      f"count (a whole number, at least 2)")
        n = int(k.value)
        if out and n <= out[-1][0]:
            raise RuntimeProfileError(f"{path}:{_mark(k)}: key '{full}': {n} after {out[-1][0]}: counts must increase")
        try:
            if not isinstance(v, yaml.ScalarNode):
                raise ValueError("expected a size such as '256 KiB'")
            out.append((n, parse_bytes(v.value)))
        except ValueError as e:
            raise RuntimeProfileError(f"{path}:{_mark(v)}: key '{full}.{n}': {e}") from None
    return out


def _close(word, words):
    import difflib
    m = difflib.get_close_matches(word, list(words), n=1)
    return f" (did you mean '{m[0]}'?)" if m else ""


def _read(path, node, schema, prefix):
    """The mapping `node` checked against `schema`: {key: value}, values converted."""
    if not isinstance(node, yaml.MappingNode):
        raise RuntimeProfileError(f"{path}:{_mark(node)}: key '{prefix or '(top)'}': expected a mapping of keys")
    out, seen = {}, set()
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise RuntimeProfileError(f"{path}:{_mark(k)}: key under '{prefix or '(top)'}': a key must be a name")
        key = k.value
        full = f"{prefix}.{key}" if prefix else key
        if key not in schema:
            raise RuntimeProfileError(f"{path}:{_mark(k)}: key '{full}': unknown key{_close(key, schema)}; "
                                      f"known: {', '.join(schema)}")
        if key in seen:
            raise RuntimeProfileError(f"{path}:{_mark(k)}: key '{full}': given twice")
        seen.add(key)
        kind = schema[key][0]
        where = f"{path}:{_mark(v)}: key '{full}'"
        if isinstance(kind, dict):
            out[key] = _read(path, v, kind, full)
            continue
        if kind == "bytes_by_gpus" or (kind == "bytes_or_by_gpus" and isinstance(v, yaml.MappingNode)):
            out[key] = _bytes_by_gpus(path, v, full)
            continue
        if not isinstance(v, yaml.ScalarNode) and kind not in ("sizes", "counts"):
            raise RuntimeProfileError(f"{where}: expected a single value")
        if kind == "time":
            try:
                out[key] = parse_time(v.value)
            except ValueError as e:
                raise RuntimeProfileError(f"{where}: {e}") from None
        elif kind in ("bytes", "bytes_or_by_gpus"):
            try:
                out[key] = parse_bytes(v.value)
            except ValueError as e:
                raise RuntimeProfileError(f"{where}: {e}") from None
        elif kind == "format":
            if v.value != str(FORMAT):
                raise RuntimeProfileError(f"{where}: format '{v.value}' is not known (this xpusim reads {FORMAT})")
            out[key] = FORMAT
        elif kind == "text":
            if not v.value.strip():
                raise RuntimeProfileError(f"{where}: empty")
            out[key] = v.value
        elif kind == "bool":
            if v.value not in ("true", "false"):
                raise RuntimeProfileError(f"{where}: '{v.value}' is not true or false")
            out[key] = v.value == "true"
        elif kind.startswith("choice:"):
            choices = kind.split(":", 1)[1].split("|")
            if v.value not in choices:
                raise RuntimeProfileError(f"{where}: '{v.value}' is not one of {', '.join(choices)}"
                                          f"{_close(v.value, choices)}")
            out[key] = v.value
        elif kind in ("sizes", "counts"):
            noun = "batch size" if kind == "sizes" else "GPU count"
            if not isinstance(v, yaml.SequenceNode):
                raise RuntimeProfileError(f"{where}: expected a list of {noun}s, e.g. [1, 2, 4, 8] ([] for none)")
            sizes = []
            for item in v.value:
                if not (isinstance(item, yaml.ScalarNode) and re.fullmatch(r"\d+", item.value)) or int(item.value) < 1:
                    raise RuntimeProfileError(f"{path}:{_mark(item)}: key '{full}': '{getattr(item, 'value', '')}' "
                                              f"is not a {noun} (a whole number, at least 1)")
                n = int(item.value)
                if sizes and n <= sizes[-1]:
                    raise RuntimeProfileError(f"{path}:{_mark(item)}: key '{full}': {n} after {sizes[-1]}: "
                                              f"{'sizes' if kind == 'sizes' else 'counts'} must increase")
                sizes.append(n)
            out[key] = sizes
    for key, (kind, required, _) in schema.items():
        if required and key not in out:
            raise RuntimeProfileError(f"{path}:{_mark(node)}: key '{prefix + '.' if prefix else ''}{key}': missing "
                                      f"(required)")
    return out


def resolve(name):
    """A profile's path from a name (`vllm` is configs/runtimes/vllm.yaml) or a path."""
    if os.sep in name or name.endswith((".yaml", ".yml")):
        return name
    path = os.path.join(PROFILES, name + ".yaml")
    if not os.path.exists(path):
        known = sorted(f[:-5] for f in os.listdir(PROFILES) if f.endswith(".yaml")) if os.path.isdir(PROFILES) else []
        raise RuntimeProfileError(f"runtime '{name}': no profile {path}; known: {', '.join(known)}"
                                  f"{_close(name, known)} (or give a profile's path)")
    return path


class Runtime:
    """A loaded profile. Times in seconds."""

    def __init__(self, path, values):
        self.path = path
        self.values = values
        self.name = values["name"]
        self.version = values["version"]
        step = values["step"]
        self.fixed_s = step["fixed"]
        self.per_sequence_s = step["per_sequence"]
        self.per_prefill_token_s = step.get("per_prefill_token", 0.0)
        beside = values.get("overlapped", {})
        self.beside_fixed_s = beside.get("fixed", 0.0)
        self.beside_per_sequence_s = beside.get("per_sequence", 0.0)
        self.decode_graphs = values["graphs"]["decode"]
        self.prefill_eager = values["graphs"]["prefill"] == "eager"
        self.eager_issue_s = values["eager_issue"]
        self.sampling = values["sampling"]
        self.arrival_s = values["request"]["arrival"]
        self.per_prompt_token_s = values["request"].get("per_prompt_token", 0.0)
        self.first_token_s = values["request"]["first_token"]
        self.all_reduce = values.get("all_reduce", {"kernel": "nccl"})

    def shown_path(self):
        """The profile's path as reports show it: configs/runtimes/NAME.yaml for a shipped one
        (the same bytes on every machine), else as given."""
        if os.path.dirname(os.path.abspath(self.path)) == os.path.abspath(PROFILES):
            return "configs/runtimes/" + os.path.basename(self.path)
        return self.path

    def graph_batch(self, batch):
        """The captured size a decode of `batch` sequences runs at, or None (eager: above the largest)."""
        i = bisect.bisect_left(self.decode_graphs, batch)
        return self.decode_graphs[i] if i < len(self.decode_graphs) else None

    def step_host_s(self, decode=0, prefill_seqs=0, prefill_tokens=0):
        """Serial host seconds of one engine step (the GPU waits) with `decode` decoding sequences
        and `prefill_seqs` sequences prefilling `prefill_tokens` prompt tokens between them."""
        return (self.fixed_s + self.per_sequence_s * (decode + prefill_seqs)
                + self.per_prefill_token_s * prefill_tokens)

    def step_beside_s(self, decode=0, prefill_seqs=0, prefill_tokens=0):
        """Host seconds of one step done beside the kernels (overlapped)."""
        return self.beside_fixed_s + self.beside_per_sequence_s * (decode + prefill_seqs)

    def step_s(self, kernels_s, decode=0, prefill_seqs=0, prefill_tokens=0):
        """A step's wall time: its serial host work, then the longer of its kernels and the
        host work beside them."""
        shape = dict(decode=decode, prefill_seqs=prefill_seqs, prefill_tokens=prefill_tokens)
        return self.step_host_s(**shape) + max(kernels_s, self.step_beside_s(**shape))

    def arrival_path_s(self, prompt_tokens):
        """From a request's arrival to the scheduler seeing it."""
        return self.arrival_s + self.per_prompt_token_s * prompt_tokens

    def all_reduce_algorithm(self, gpus, nbytes):
        """The trace's `algorithm` for a tensor-parallel all-reduce of `nbytes` over `gpus` GPUs:
        one_shot or two_shot where the runtime's own kernel takes it, else None (NCCL's `auto`)."""
        ar = self.all_reduce
        if ar["kernel"] != "custom" or gpus not in ar["gpus"] or nbytes >= _for_gpus(ar["takes_below"], gpus):
            return None
        align = ar.get("align", 1)
        algo = "one_shot" if nbytes < _for_gpus(ar["one_shot_below"], gpus) else "two_shot"
        if algo == "two_shot" and ar.get("two_shot_align_per_gpu"):
            align *= gpus
        return algo if nbytes % align == 0 else None

    def all_reduce_copies_in(self):
        """Whether the runtime's own all-reduce kernel copies its input in itself (the trace's copy_in)."""
        return self.all_reduce.get("copy_in_kernel", False)

    def eager(self, phase, batch=1):
        """Whether the runtime runs a step of this phase (prefill, else decode) of `batch`
        sequences without a CUDA graph."""
        return self.prefill_eager if phase == "prefill" else self.graph_batch(batch) is None

    def engine_sets(self, phase, batch=1):
        """The config overrides (--set) under which a step of this phase runs its kernels:
        eager issue where the runtime runs that step without a graph."""
        if not self.eager(phase, batch):
            return ["kernels.launch=graph"]
        return ["kernels.launch=eager", f"kernels.eager_issue={self.eager_issue_s * 1e6:.6g} us"]

    def offline(self):
        """The same runtime with its engine in-process (no API server): no request path."""
        import copy
        rt = copy.copy(self)
        rt.arrival_s = rt.first_token_s = rt.per_prompt_token_s = 0.0
        rt.version = self.version + ", offline"
        return rt

    def all_reduce_summary(self):
        """The all_reduce section as text, the same for the same values (step-cache keys use it)."""
        ar = self.all_reduce
        if ar["kernel"] != "custom":
            return "nccl"
        def sizes(v):
            return _size_text(v) if isinstance(v, int) else ",".join(f"{n}:{_size_text(b)}" for n, b in v)
        align = f" align {_size_text(ar['align'])}{' x GPUs for two-shot' if ar.get('two_shot_align_per_gpu') else ''}" \
            if "align" in ar else ""
        return (f"custom gpus {','.join(map(str, ar['gpus']))} below {sizes(ar['takes_below'])}, one-shot below "
                f"{sizes(ar['one_shot_below'])}{align}{' eager-copy' if ar.get('eager_copy') else ''}"
                f"{' copy-in' if ar.get('copy_in_kernel') else ''}")

    def summary(self):
        return {"name": self.name, "version": self.version, "path": self.shown_path(), "fixed_s": self.fixed_s,
                "per_sequence_s": self.per_sequence_s, "per_prefill_token_s": self.per_prefill_token_s,
                "overlapped_fixed_s": self.beside_fixed_s, "overlapped_per_sequence_s": self.beside_per_sequence_s,
                "decode_graphs": self.decode_graphs,
                "prefill": "eager" if self.prefill_eager else "graph", "eager_issue_s": self.eager_issue_s,
                "sampling": self.sampling, "all_reduce": self.all_reduce_summary(), "arrival_s": self.arrival_s, "per_prompt_token_s": self.per_prompt_token_s,
                "first_token_s": self.first_token_s}


def _for_gpus(value, gpus):
    """A size, or the size a [(count, bytes), ...] list gives `gpus` GPUs: the first count at or
    above it (0 where none is)."""
    if isinstance(value, int):
        return value
    return next((b for n, b in value if n >= gpus), 0)


def _size_text(b):
    for unit, f in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("MB", 1000 ** 2), ("KiB", 1024), ("kB", 1000)):
        if b % f == 0:
            return f"{b // f} {unit}"
    return f"{b} B"


def load(name_or_path):
    """The Runtime of a profile name or path; RuntimeProfileError naming file, line and key."""
    path = resolve(name_or_path)
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise RuntimeProfileError(f"{path}: cannot read it ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise RuntimeProfileError(f"{path}: not UTF-8 text (byte {e.start})") from None
    try:
        node = yaml.compose(text)
    except yaml.YAMLError as e:
        m = getattr(e, "problem_mark", None)
        where = f"{path}:{m.line + 1}:{m.column + 1}" if m else path
        raise RuntimeProfileError(f"{where}: not valid YAML ({getattr(e, 'problem', None) or e})") from None
    if node is None:
        raise RuntimeProfileError(f"{path}: empty; a runtime profile starts with 'xpusim_runtime: {FORMAT}'")
    values = _read(path, node, SCHEMA, "")
    _check_all_reduce(path, node, values)
    return Runtime(path, values)


def _check_all_reduce(path, node, values):
    """kernel: custom needs its thresholds; kernel: nccl takes none."""
    ar = values.get("all_reduce")
    if not ar:
        return
    section = next(v for k, v in node.value if k.value == "all_reduce")

    def refuse(key, why):
        at = next(k for k, _ in section.value if k.value == key)
        raise RuntimeProfileError(f"{path}:{_mark(at)}: key 'all_reduce.{key}': {why}")
    if ar["kernel"] == "custom":
        for key in ("gpus", "takes_below", "one_shot_below"):
            if key not in ar:
                raise RuntimeProfileError(f"{path}:{_mark(section)}: key 'all_reduce.{key}': missing (required with "
                                          f"kernel: custom)")
        takes = ar["takes_below"]
        if not isinstance(takes, int) and takes[-1][0] < max(ar["gpus"]):
            refuse("takes_below", f"no size for {max(ar['gpus'])} GPUs (its counts end at {takes[-1][0]}; gpus lists "
                                  f"{max(ar['gpus'])})")
        if ar.get("two_shot_align_per_gpu") and "align" not in ar:
            refuse("two_shot_align_per_gpu", "needs all_reduce.align")
        if ar.get("eager_copy") and ar.get("copy_in_kernel"):
            refuse("copy_in_kernel", "a kernel that copies its input in needs no eager copy before it (eager_copy is true)")
        return
    for k, v in section.value:
        if k.value != "kernel":
            raise RuntimeProfileError(f"{path}:{_mark(k)}: key 'all_reduce.{k.value}': applies to kernel: custom only")


def describe():
    """The profile's keys as Markdown rows: key, required, meaning."""
    rows = []

    def walk(schema, prefix):
        for key, (kind, required, text) in schema.items():
            full = f"{prefix}.{key}" if prefix else key
            if isinstance(kind, dict):
                walk(kind, full)
            else:
                rows.append(f"| `{full}` | {'yes' if required else 'no'} | {text} |")
    walk(SCHEMA, "")
    return "\n".join(rows)
