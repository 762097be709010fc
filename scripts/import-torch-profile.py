#!/usr/bin/env python3
"""Converts a PyTorch profiler trace (the Chrome trace JSON that torch.profiler writes with
record_shapes=True) into an xpusim trace.

  scripts/import-torch-profile.py traces/imported/small-transformer.trace.json -o imported.yaml

Each outermost aten op that xpusim knows becomes one op with its input shapes and number format:
mm, addmm, bmm, matmul, linear -> gemm; scaled_dot_product_attention (and its flash, efficient
and cuDNN variants) -> attention; conv2d/convolution -> conv2d; layer_norm, softmax -> row-wise
ops; mean/sum -> reduction; add, mul, sub, div, gelu, silu, relu, tanh, sigmoid and the like ->
elementwise. Ops under a mapped op (aten::t under aten::linear, the kernels of a convolution)
belong to it, except elementwise ops under a GEMM, convolution, attention or row-wise op (the
copies that reshape, contiguous and matmul make of strided inputs; a convolution's bias add),
which are kernels of their own and become ops of their own. An elementwise op whose operands are
not in one dense layout (a transposed view, a broadcast operand, by the recorded strides) is
marked `contiguous: false`: PyTorch runs its legacy kernel for it. Any other op that ran GPU
kernels is kept as a `delay` op lasting its kernels' measured time, and listed in a warning with
its count; ops with no GPU work (views, reshapes) are counted in the summary. Ops run in the
order of their first kernels on stream 0.
"""
import argparse
import ast
import json
import math
import sys
from collections import Counter, defaultdict

import yaml

DTYPES = {"c10::Half": "fp16", "c10::BFloat16": "bf16", "float": "fp32", "double": "fp32",
          "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8_e5m2", "signed char": "int8", "int": "int8"}
GEMMS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear", "aten::baddbmm"}
ATTENTION = {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
             "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention"}
CONV = {"aten::conv2d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution"}
ROWWISE = {"aten::layer_norm": "layernorm", "aten::native_layer_norm": "layernorm", "aten::rms_norm": "layernorm",
           "aten::_fused_rms_norm": "layernorm",
           "aten::softmax": "softmax", "aten::_softmax": "softmax", "aten::log_softmax": "softmax"}
REDUCTIONS = {"aten::mean", "aten::sum", "aten::amax", "aten::max"}
ELEMENTWISE = {"aten::add", "aten::add_", "aten::mul", "aten::mul_", "aten::sub", "aten::div", "aten::gelu",
               "aten::silu", "aten::relu", "aten::tanh", "aten::sigmoid", "aten::neg", "aten::exp", "aten::pow",
               "aten::rsqrt", "aten::where", "aten::masked_fill", "aten::dropout", "aten::copy_", "aten::clone",
               "aten::contiguous", "aten::to", "aten::_to_copy"}


def prod(v):
    return math.prod(v) if v else 1


def concrete(e, i):
    c = e["args"].get("Concrete Inputs") or []
    if i >= len(c) or c[i] in ("", None):
        return None
    try:
        return ast.literal_eval(c[i])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return c[i]


def dtype_of(e, i=0):
    types = e["args"].get("Input type") or []
    t = types[i] if i < len(types) else ""
    return DTYPES.get(t)


def tensor_dims(e):
    return [d for d in (e["args"].get("Input Dims") or []) if isinstance(d, list) and d]


def convert(e, name):
    """One xpusim op for aten op `e`, or None if its inputs do not describe one."""
    dims, op = e["args"].get("Input Dims") or [], e["name"]
    dt = dtype_of(e, 1 if op == "aten::addmm" else 0) or "fp32"
    base = {"name": name, "dtype": dt}
    if op in GEMMS:
        if op == "aten::linear":
            x, w = dims[0], dims[1]
            return {**base, "kind": "gemm", "m": prod(x[:-1]), "n": w[0], "k": w[1]}
        if op in ("aten::addmm",):
            a, b = dims[1], dims[2]
        elif op == "aten::baddbmm":
            a, b = dims[1], dims[2]
        else:
            a, b = dims[0], dims[1]
        if len(a) < 2 or len(b) < 1:
            return None
        if len(b) == 1:  # matrix-vector
            return {**base, "kind": "gemm", "m": prod(a[:-1]), "n": 1, "k": a[-1]}
        if len(b) == 2:
            return {**base, "kind": "gemm", "m": prod(a[:-1]), "n": b[1], "k": b[0]}
        batch = max(prod(a[:-2]), prod(b[:-2]))
        g = {**base, "kind": "gemm", "m": a[-2], "n": b[-1], "k": a[-1]}
        if batch > 1:
            g["batch"] = batch
        return g
    if op in ATTENTION:
        q, k = dims[0], dims[1]
        if len(q) != 4 or len(k) != 4:
            return None
        att = {**base, "kind": "attention", "batch": q[0], "heads": q[1], "seq_q": q[2], "head_dim": q[3]}
        if k[1] != q[1]:
            att["kv_heads"] = k[1]
        if k[2] != q[2]:
            att["seq_kv"] = k[2]
        if concrete(e, 5) is True or concrete(e, 5) == "True":
            att["causal"] = True
        return att
    if op in CONV:
        x, w = dims[0], dims[1]
        if len(x) != 4 or len(w) != 4:
            return None
        stride, pad = concrete(e, 3) or [1, 1], concrete(e, 4) or [0, 0]
        c = {**base, "kind": "conv2d", "batch": x[0], "c": x[1], "h": x[2], "w": x[3], "k": w[0], "r": w[2], "s": w[3]}
        if isinstance(stride, list) and stride[0] != 1:
            c["stride"] = stride[0]
        if isinstance(pad, list) and pad[0] != 0:
            c["pad"] = pad[0]
        return c
    if op in ROWWISE:
        x = dims[0]
        row = {**base, "kind": ROWWISE[op], "shape": [prod(x[:-1]), x[-1]] if len(x) > 1 else x}
        if op in ("aten::rms_norm", "aten::_fused_rms_norm"):
            row["norm"] = "rms"
        return row
    if op in REDUCTIONS:
        x = dims[0]
        axes = concrete(e, 1)
        axes = axes if isinstance(axes, list) and axes else list(range(len(x)))
        red = prod([x[a] for a in axes])
        return {**base, "kind": "reduction", "shape": [max(1, prod(x) // red), red]}
    if op in ELEMENTWISE:
        t = tensor_dims(e)
        if not t:
            return None
        out = max(t, key=prod)
        inputs = sum(1 for d in t if prod(d) == prod(out))
        if op == "aten::copy_":
            inputs = 1  # the source; the destination is written
        ew = {**base, "kind": "elementwise", "shape": [prod(out)], "inputs": max(1, inputs)}
        if not contiguous_operands(e, out):
            ew["contiguous"] = False
        return ew
    return None


def dense_layout(dims, strides):
    """The order of dims, outermost first, in which (dims, strides) is a dense tensor; None if it
    has gaps, overlaps or a broadcast (stride-0) dimension. Dimensions of size 1 are left out."""
    d = sorted(((st, n, i) for i, (n, st) in enumerate(zip(dims, strides)) if n != 1), reverse=True)
    expect = 1
    for st, n, _ in reversed(d):
        if st != expect:
            return None
        expect *= n
    return [i for _, _, i in d]


def contiguous_operands(e, out):
    """False when PyTorch's TensorIterator would find the op's tensor operands not in one dense
    layout (is_contiguous() false: a transposed or strided view, a broadcast operand), so that it
    runs the legacy elementwise kernel; True when they are, or when the profile has no strides."""
    dims, strides = e["args"].get("Input Dims") or [], e["args"].get("Input Strides")
    if not isinstance(strides, list):
        return True
    copy = e["name"] in ("aten::clone", "aten::contiguous", "aten::copy_", "aten::to", "aten::_to_copy")
    layouts = []
    for i, (d, st) in enumerate(zip(dims, strides)):
        if not (isinstance(d, list) and d and isinstance(st, list) and len(st) == len(d)):
            continue  # a scalar or a non-tensor argument
        if e["name"] == "aten::copy_" and i == 0:
            continue  # the destination: the copy's output
        if prod(d) != prod(out):
            return False  # broadcast to the output's shape (a one-element tensor too: only
            #               Python numbers, recorded without dims, are passed as scalars)
        layout = dense_layout(d, st)
        if layout is None:
            return False
        layouts.append(layout)
    if copy:  # the copy's output is a new contiguous tensor
        layouts.append(dense_layout(out, [prod(out[j + 1:]) for j in range(len(out))]))
    return all(lay == layouts[0] for lay in layouts)


def known(name):
    return name in GEMMS or name in ATTENTION or name in CONV or name in ROWWISE or name in REDUCTIONS or name in ELEMENTWISE


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        sys.exit(f"import-torch-profile: {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        sys.exit(f"import-torch-profile: {path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}")
    except UnicodeDecodeError as e:
        sys.exit(f"import-torch-profile: {path}: not UTF-8 text (byte {e.start})")
    except RecursionError:
        sys.exit(f"import-torch-profile: {path}: JSON nested too deeply to be a profile")
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        sys.exit(f"import-torch-profile: {path}: no 'traceEvents' list: not a PyTorch profiler trace")
    return events


def check_events(events, path):
    """Refuses events this importer reads that lack what it reads: a clear error, not a traceback."""
    def bad(i, what):
        sys.exit(f"import-torch-profile: {path}: traceEvents[{i}]: {what}")
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            bad(i, "not a JSON object")
        if e.get("ph") != "X" or e.get("cat") not in ("cpu_op", "kernel", "gpu_memcpy", "gpu_memset"):
            continue
        if not isinstance(e.get("name"), str):
            bad(i, "'name' must be a string")
        for key in ("ts", "dur"):
            v = e.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (key == "dur" and v < 0):
                bad(i, f"'{key}' must be a finite number{' not below 0' if key == 'dur' else ''}, not {v!r}")
        if isinstance(e.get("tid"), bool) or not isinstance(e.get("tid"), (int, str)):
            bad(i, "'tid' must be a number or a string")
        args = e.setdefault("args", {})
        if not isinstance(args, dict):
            bad(i, "'args' must be a JSON object")
        ext = args.get("External id")
        if ext is not None and (isinstance(ext, bool) or not isinstance(ext, (int, str))):
            bad(i, "'External id' must be a number or a string")
    return events


def import_profile(events):
    # Threads named by numbers and by strings sort apart rather than compare.
    ops = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"),
                 key=lambda e: (isinstance(e["tid"], str), e["tid"], e["ts"], -e["dur"]))
    if not ops:
        sys.exit("import-torch-profile: no cpu_op events: was the profile taken with torch.profiler?")
    if not any((e["args"].get("Input Dims") for e in ops)):
        sys.exit("import-torch-profile: no input shapes in the profile: take it with record_shapes=True")
    parent, stack = {}, []
    for i, e in enumerate(ops):
        while stack and (ops[stack[-1]]["tid"] != e["tid"] or ops[stack[-1]]["ts"] + ops[stack[-1]]["dur"] < e["ts"] + e["dur"]):
            stack.pop()
        parent[i] = stack[-1] if stack else None
        stack.append(i)
    # The op each one belongs to: its outermost known ancestor (or itself), else its root; but an
    # elementwise op under a mapped op of another kind (the contiguous copy a reshape, layer_norm
    # or matmul makes of a strided input; a convolution's bias add) runs kernels of its own, so
    # the outermost such op under it owns what is under it.
    owner = {}
    for i in range(len(ops)):
        chain, j = [], i
        while j is not None:
            chain.append(j)
            j = parent[j]
        mapped = [j for j in chain if known(ops[j]["name"])]
        owner[i] = mapped[-1] if mapped else chain[-1]
        if mapped and ops[mapped[-1]]["name"] not in ELEMENTWISE:
            inner = [j for j in chain[:chain.index(mapped[-1])] if ops[j]["name"] in ELEMENTWISE]
            if inner:
                owner[i] = inner[-1]
    by_ext = {}
    for i, e in enumerate(ops):
        ext = e["args"].get("External id")
        if ext is not None:
            by_ext.setdefault(ext, i)
    gpu_us = defaultdict(float)
    first_kernel = {}  # an owner's first kernel's start: the order its op runs in
    unattributed = 0.0
    for k in events:
        if k.get("ph") == "X" and k.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            i = by_ext.get(k.get("args", {}).get("External id"))
            if i is None:
                unattributed += k.get("dur", 0)
            else:
                gpu_us[owner[i]] += k.get("dur", 0)
                first_kernel[owner[i]] = min(first_kernel.get(owner[i], k["ts"]), k["ts"])
    out, mapped_count, unknown, idle, unreadable = [], Counter(), Counter(), Counter(), Counter()
    names = Counter()
    # Kernels run on the GPU in launch order; an op launched inside another (a copy inside a
    # layer_norm) runs before the other's own kernel. Ops with no kernel keep their place.
    for i in sorted(set(owner.values()), key=lambda i: (first_kernel.get(i, ops[i]["ts"]), ops[i]["ts"])):
        e = ops[i]
        short = e["name"].split("::")[-1]
        names[short] += 1
        name = f"{short}{names[short]}"
        try:
            op = convert(e, name) if known(e["name"]) else None
        except (IndexError, KeyError, TypeError, ValueError):
            op = None  # shapes that do not describe the op: kept as a timed gap, listed below
            unreadable[e["name"]] += 1
        if op is not None:
            out.append(op)
            mapped_count[e["name"]] += 1
        elif gpu_us[i] > 0:
            out.append({"name": name, "kind": "delay", "duration": f"{gpu_us[i]:.3f} us"})
            unknown[e["name"]] += 1
        else:
            idle[e["name"]] += 1
    return out, mapped_count, unknown, idle, unreadable, unattributed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("profile", help="Chrome trace JSON from torch.profiler (record_shapes=True)")
    ap.add_argument("-o", "--out", default="-", help="output trace (default standard output)")
    ap.add_argument("--name", default=None, help="trace name (default: the profile's file name)")
    a = ap.parse_args()
    ops, mapped, unknown, idle, unreadable, unattributed = import_profile(check_events(load(a.profile), a.profile))
    name = a.name or a.profile.rsplit("/", 1)[-1].split(".")[0]
    trace = {"xpusim_trace": 1, "name": name,
             "description": f"Imported from {a.profile} by scripts/import-torch-profile.py: "
                            f"{sum(mapped.values())} mapped ops, {sum(unknown.values())} kept as timed gaps.",
             "ops": ops}
    text = yaml.safe_dump(trace, sort_keys=False, default_flow_style=None, width=120)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)
    print("mapped: " + ", ".join(f"{k} x{v}" for k, v in sorted(mapped.items())), file=sys.stderr)
    if unknown:
        print(f"warning: {sum(unknown.values())} ops of unknown kind kept as timed gaps (their kernels' measured time): "
              + ", ".join(f"{k} x{v}" for k, v in sorted(unknown.items())), file=sys.stderr)
    if unreadable:
        print(f"warning: {sum(unreadable.values())} ops whose recorded shapes do not fit their kind, kept as timed gaps "
              "or left out: " + ", ".join(f"{k} x{v}" for k, v in sorted(unreadable.items())), file=sys.stderr)
    if idle:
        print(f"no GPU work, not in the trace: " + ", ".join(f"{k} x{v}" for k, v in sorted(idle.items())), file=sys.stderr)
    if unattributed:
        print(f"warning: {unattributed:.1f} us of kernels could not be attributed to an op", file=sys.stderr)


if __name__ == "__main__":
    main()
