#!/usr/bin/env python3
"""Writes the shipped execution-trace fixtures under traces/imported/: the operators PyTorch runs
in eager mode for Llama-3-8B's prefill (Hugging Face's LlamaForCausalLM: RMSNorm as pow, mean,
rsqrt and muls; separate q, k, v, gate and up projections; RoPE as muls, neg and cat; SDPA with
GQA), recorded the way each format records them:

  llama-3-8b-prefill-2layers.et.json   PyTorch ExecutionTraceObserver JSON (schema 1.0.4): nested
                                       calls (aten::linear calls aten::t and aten::matmul, which
                                       calls aten::view, aten::mm, aten::_unsafe_view), views,
                                       module scopes
  llama-3-8b-prefill-2layers.0.et      Chakra (one rank): a flat graph of nodes with data_deps
  llama-3-8b-tp2-prefill-2layers.{0,1}.et  Chakra, tensor-parallel over 2 ranks, with the two
                                       all-reduces per layer as COMM_COLL_NODEs of process group 'tp'

No GPU was at hand to record real traces: these are written from the published formats (the
Chakra schema, et_def.proto; PyTorch's execution_trace.cpp), with the shapes the model's code
gives its operators, so that the readers and the generator's native trace can be compared on the
same model (tests/scripts/et_test.py). The layer structure is taken from the generator's unfused
trace (scripts/xpusim-trace.py --fusion none), split where Hugging Face's code runs separate
operators. Chakra nodes that xpusim does not model carry a duration (an embedding's index copy).

  /usr/bin/python3 scripts/make-et-fixtures.py        (needs protoc and python3-protobuf)
  /usr/bin/python3 scripts/make-et-fixtures.py --bad  the malformed ones in tests/data/bad/
"""
import importlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "traces", "imported")
MODEL = os.path.join(ROOT, "configs", "models", "llama-3-8b.yaml")
PROMPT, LAYERS = 512, 2
TYPES = {"bf16": "Tensor(c10::BFloat16)", "fp32": "Tensor(float)", "int64": "Tensor(long int)"}


def native(tp):
    """The generator's unfused ops, repeat blocks expanded, and the attention's head counts."""
    out = tempfile.mktemp(suffix=".jsonl")
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "xpusim-trace.py"), MODEL, "--phase", "prefill", "--prompt", str(PROMPT),
           "--layers", str(LAYERS), "--fusion", "none", "-o", out] + (["--tp", str(tp)] if tp > 1 else [])
    subprocess.run(cmd, check=True)
    ops = []
    with open(out) as f:
        for line in f:
            o = json.loads(line)
            if "repeat" in o:
                for i in range(o["repeat"]):
                    ops += [dict(x, layer=i) for x in o["ops"]]
            elif "kind" in o:
                ops.append(o)
    os.unlink(out)
    return ops


class Calls:
    """Operator calls in order: (name, input shapes and types and values, output shapes and types, depth)."""

    def __init__(self):
        self.calls = []

    def call(self, name, ins=(), outs=(), depth=1, values=None):
        shapes = [s for s, _ in ins]
        types = [t for _, t in ins]
        vals = values if values is not None else ["<tensor>" if t.startswith("Tensor") else "" for t in types]
        self.calls.append({"name": name, "depth": depth, "in": (shapes, types, vals),
                           "out": ([s for s, _ in outs], [t for _, t in outs])})


def lower(ops, c):
    """Each generator op as the aten calls Hugging Face's Llama makes for it."""
    att = next(o for o in ops if o["kind"] == "attention")
    hd, heads, kvh = att["head_dim"], att["heads"], att["kv_heads"]
    T = PROMPT
    t = lambda s, d="bf16": (s, TYPES[d])  # noqa: E731
    c.call("aten::embedding", [t([128256, 4096]), t([1, T], "int64")], [t([1, T, 4096])])
    for o in ops:
        name, kind = o["name"], o["kind"]
        if kind == "gemm":
            m, n, k = o["m"], o["n"], o["k"]
            parts = {"qkv": [heads * hd, kvh * hd, kvh * hd], "ffn_up": [n // 2, n // 2]}.get(name, [n])
            if name == "lm_head":
                c.call("aten::slice", [t([1, T, k])], [t([1, 1, k])])
            for p in parts:  # linear(x, W) = matmul(x, W.t())
                c.call("aten::linear", [t([1, m, k]), t([p, k])], [t([1, m, p])])
                c.call("aten::t", [t([p, k])], [t([k, p])], depth=2)
                c.call("aten::matmul", [t([1, m, k]), t([k, p])], [t([1, m, p])], depth=2)
                c.call("aten::view", [t([1, m, k])], [t([m, k])], depth=3)
                c.call("aten::mm", [t([m, k]), t([k, p])], [t([m, p])], depth=3)
                c.call("aten::_unsafe_view", [t([m, p])], [t([1, m, p])], depth=3)
            if name == "qkv":
                for h in (heads, kvh, kvh):
                    c.call("aten::view", [t([1, T, h * hd])], [t([1, T, h, hd])])
                    c.call("aten::transpose", [t([1, T, h, hd])], [t([1, h, T, hd])])
        elif kind == "attention":
            q, kv = [1, heads, T, hd], [1, kvh, o.get("seq_kv", T), hd]
            ins = [t(q), t(kv), t(kv), ([], "None"), ([], "Double"), ([], "Bool"), ([], "None"), ([], "Bool")]
            c.call("aten::scaled_dot_product_attention", ins, [t(q)],
                   values=["<tensor>", "<tensor>", "<tensor>", None, 0.0, True, None, True])
            c.call("aten::_scaled_dot_product_flash_attention",
                   [t(q), t(kv), t(kv), ([], "Double"), ([], "Bool"), ([], "Bool"), ([], "None")], [t(q)], depth=2,
                   values=["<tensor>", "<tensor>", "<tensor>", 0.0, True, False, None])
            c.call("aten::transpose", [t(q)], [t([1, T, heads, hd])])
            c.call("aten::reshape", [t([1, T, heads, hd])], [t([1, T, heads * hd])])
        elif kind == "reduction":
            c.call("aten::mean", [t(o["shape"], o["dtype"]), ([], "GenericList[Int]"), ([], "Bool")],
                   [t(o["shape"][:-1] + [1], o["dtype"])], values=["<tensor>", [-1], True, ])
        elif kind == "all_reduce":
            c.call("nccl:all_reduce", [], [], values=[o["bytes"]])
        elif kind == "elementwise":
            shape, d = o["shape"], o["dtype"]
            if name.endswith("to_fp32") or name.endswith("to_act"):
                src = "bf16" if d == "fp32" else "fp32"
                c.call("aten::to", [t(shape, src)], [t(shape, d)])
                c.call("aten::_to_copy", [t(shape, src)], [t(shape, d)], depth=2)
            elif name.endswith("_pow"):
                c.call("aten::pow", [t(shape, d), ([], "Int")], [t(shape, d)], values=["<tensor>", 2])
            elif name.endswith("add_eps"):
                c.call("aten::add", [t(shape, d), ([], "Double")], [t(shape, d)], values=["<tensor>", 1e-5])
            elif name.endswith("rsqrt"):
                c.call("aten::rsqrt", [t(shape, d)], [t(shape, d)])
            elif name.endswith("_scale"):
                c.call("aten::mul", [t(shape, d), t(shape[:-1] + [1], d)], [t(shape, d)])
            elif name.endswith("_weight"):
                c.call("aten::mul", [t(shape[-1:], d), t(shape, d)], [t(shape, d)])
            elif name.endswith("_neg"):
                c.call("aten::slice", [t(shape[:-1] + [shape[-1] * 2], d)], [t(shape, d)])
                c.call("aten::neg", [t(shape, d)], [t(shape, d)])
            elif name.endswith("_cat"):
                half = shape[:-1] + [shape[-1] // 2]
                c.call("aten::cat", [([half, half], "GenericList[Tensor(c10::BFloat16),Tensor(c10::BFloat16)]")], [t(shape, d)])
            elif name.endswith("cache_write"):
                c.call("aten::copy_", [t(shape, d), t(shape, d)], [t(shape, d)])
            elif name.startswith("residual"):
                c.call("aten::add", [t(shape, d), t(shape, d)], [t(shape, d)])
            elif name == "silu":
                c.call("aten::silu", [t(shape, d)], [t(shape, d)])
            else:  # the remaining products: RoPE's cos and sin terms, the gate
                c.call("aten::mul", [t(shape, d), t(shape, d)], [t(shape, d)])
        else:
            raise SystemExit(f"make-et-fixtures: no aten form for {kind} op {name}")


def write_torch_et(calls, path):
    nodes = [{"id": 1, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 0,
              "inputs": {"values": [], "shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []},
              "attrs": [{"name": "rf_id", "type": "uint64", "value": 0}]},
             {"id": 2, "name": "## forward ##", "ctrl_deps": 1,
              "inputs": {"values": [], "shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []},
              "attrs": []}]
    parents = {0: 2}
    for c in calls:
        if c["name"].startswith("nccl:"):
            continue
        nid = len(nodes) + 1
        shapes, types, values = c["in"]
        nodes.append({"id": nid, "name": c["name"], "ctrl_deps": parents[c["depth"] - 1],
                      "inputs": {"values": values, "shapes": shapes, "types": types},
                      "outputs": {"values": ["<tensor>"] * len(c["out"][0]), "shapes": c["out"][0], "types": c["out"][1]},
                      "attrs": [{"name": "rf_id", "type": "uint64", "value": nid}, {"name": "tid", "type": "uint64", "value": 1}]})
        parents[c["depth"]] = nid
    doc = {"schema": "1.0.4-chakra.0.0.4", "pid": 1, "time": "2026-11-24 00:00:00", "start_ts": 0, "nodes": nodes, "finish_ts": 1}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def write_chakra(pb, calls, path):
    """One rank's file (every rank of a tensor-parallel step runs the same calls): GlobalMetadata, then one node per call, each depending on the one before."""
    def msg(m):
        b = m.SerializeToString()
        return varint(len(b)) + b

    meta = pb.GlobalMetadata(version="0.0.4")
    meta.attr.add(name="schema", string_val="xpusim fixture of the Chakra 0.0.4 format")
    data = msg(meta)
    prev = None
    for i, c in enumerate(calls):
        n = pb.Node(id=i + 1, name=c["name"])
        if prev:
            n.data_deps.append(prev)
        if c["name"].startswith("nccl:"):
            n.type = pb.COMM_COLL_NODE
            n.attr.add(name="comm_type", int64_val=pb.ALL_REDUCE)
            n.attr.add(name="comm_size", int64_val=int(c["in"][2][0]))
            n.attr.add(name="pg_name", string_val="tp")
            n.attr.add(name="is_cpu_op", bool_val=False)
        else:
            n.type = pb.COMP_NODE
            shapes, types, values = c["in"]
            n.inputs.shapes = json.dumps(shapes).replace(" ", "")
            n.inputs.types = "[" + ",".join(types) + "]"
            n.inputs.values = "[" + ",".join("" if v is None else str(v) for v in values) + "]"
            n.outputs.shapes = json.dumps(c["out"][0]).replace(" ", "")
            n.outputs.types = "[" + ",".join(c["out"][1]) + "]"
            n.attr.add(name="is_cpu_op", bool_val=False)
            if c["name"] == "aten::embedding":  # recorded as its kernel: an index copy xpusim keeps as a gap
                n.name = "indexSelectLargeIndex"
                n.duration_micros = 9
        data += msg(n)
        prev = n.id
    with open(path, "wb") as f:
        f.write(data)


def flatten(calls):
    """The calls a Chakra graph keeps: the outermost ones, except that a call which only wraps
    others (aten::to around aten::_to_copy) gives way to what it calls."""
    out, wrapper = [], False
    for c in calls:
        if c["depth"] == 1:
            wrapper = c["name"] == "aten::to"
            if not wrapper:
                out.append(c)
        elif c["depth"] == 2 and wrapper:
            out.append(dict(c, depth=1))
    return out


def proto_module():
    tmp = tempfile.mkdtemp()
    subprocess.run(["protoc", f"--proto_path={os.path.join(ROOT, 'sim')}", f"--python_out={tmp}", "trace/chakra_et.proto"], check=True)
    sys.path.insert(0, os.path.join(tmp, "trace"))
    return importlib.import_module("chakra_et_pb2")


def write_bad(pb):
    """Malformed execution traces for tests/data/bad (tests/scripts/bad_inputs_test.py)."""
    bad = os.path.join(ROOT, "tests", "data", "bad")

    def msg(m):
        b = m.SerializeToString()
        return varint(len(b)) + b

    def gemm(i, deps=(), name="aten::mm", shapes="[[64,64],[64,64]]"):
        n = pb.Node(id=i, name=name, type=pb.COMP_NODE)
        n.data_deps.extend(deps)
        n.inputs.shapes, n.inputs.types = shapes, "[Tensor(c10::BFloat16),Tensor(c10::BFloat16)]"
        return n

    def write(name, nodes, meta=True):
        data = msg(pb.GlobalMetadata(version="0.0.4")) if meta else b""
        for n in nodes:
            data += msg(n)
        with open(os.path.join(bad, name), "wb") as f:
            f.write(data)
        return data

    whole = write("trace-chakra-truncated.0.et", [gemm(1), gemm(2, [1]), gemm(3, [2])])
    with open(os.path.join(bad, "trace-chakra-truncated.0.et"), "wb") as f:
        f.write(whole[:-7])  # the last node cut short
    odd = gemm(2, [1])
    odd.type = 42
    write("trace-chakra-unknown-node-type.0.et", [gemm(1), odd])
    for r in range(2):  # two ranks, run on the one-GPU h100-sxm
        write(f"trace-chakra-two-ranks.{r}.et", [gemm(1), gemm(2, [1])])
    write("trace-chakra-cycle.0.et", [gemm(1, [3]), gemm(2, [1]), gemm(3, [2])])
    write("trace-chakra-missing-dep.0.et", [gemm(1), gemm(2, [7])])
    write("trace-chakra-gemm-shapes.0.et", [gemm(1, shapes="[[64,64],[32,64]]")])
    write("trace-chakra-no-metadata.0.et", [gemm(1), gemm(2, [1])], meta=False)
    write("trace-chakra-metadata-only.0.et", [])
    node1 = gemm(1).SerializeToString()
    with open(os.path.join(bad, "trace-chakra-length-past-4gib.0.et"), "wb") as f:
        f.write(msg(pb.GlobalMetadata(version="0.0.4")) + varint((1 << 32) + len(node1)) + node1)  # read mod 2^32: a node
    coll = pb.Node(id=2, name="allreduce", type=pb.COMM_COLL_NODE)
    coll.data_deps.append(1)
    coll.attr.add(name="comm_type", int64_val=pb.ALL_REDUCE)
    write("systrace-chakra-no-comm-size.0.et", [gemm(1), coll])
    write("systrace-chakra-no-comm-size.1.et", [gemm(1), coll])
    sized = pb.Node()
    sized.CopyFrom(coll)
    sized.attr.add(name="comm_size", int64_val=1 << 20)
    write("systrace-chakra-unmatched-collective.0.et", [gemm(1), sized, gemm(3, [2])])
    sized4 = pb.Node()
    sized4.CopyFrom(sized)
    sized4.id = 4
    del sized4.data_deps[:]
    sized4.data_deps.append(3)
    write("systrace-chakra-unmatched-collective.1.et", [gemm(1), sized, gemm(3, [2]), sized4])

    def et(name, nodes, schema="1.0.4-chakra.0.0.4"):
        with open(os.path.join(bad, name), "w") as f:
            json.dump({"schema": schema, "pid": 1, "nodes": nodes}, f)
            f.write("\n")

    def node(i, parent, name="aten::mm", shapes=((64, 64), (64, 64)), values=None):
        return {"id": i, "name": name, "ctrl_deps": parent,
                "inputs": {"values": values or [], "shapes": [list(x) for x in shapes],
                           "types": ["Tensor(c10::BFloat16)"] * len(shapes)},
                "outputs": {"values": [], "shapes": [], "types": []}}
    et("trace-torch-et-cycle.json", [node(1, 0, "## forward ##", ()), node(2, 3, "## block ##", ()), node(3, 2, "aten::linear")])
    et("trace-torch-et-linear-shapes.json", [node(1, 0, "## forward ##", ()), node(2, 1, "aten::linear", ((512, 4096), (1024, 2048)))])
    et("trace-torch-et-no-id.json", [{"name": "aten::mm"}])
    fwd = node(1, 0, "## forward ##", ())
    et("trace-torch-et-self-parent.json", [fwd, node(2, 2)])
    et("trace-torch-et-missing-parent.json", [fwd, node(2, 7)])
    et("trace-torch-et-negative-parent.json", [fwd, node(2, -1)])
    et("trace-torch-et-schema-2.json", [fwd, node(2, 1)], schema="2.0.0")
    et("trace-torch-et-mm-three-inputs.json", [fwd, node(2, 1, shapes=((64, 64), (64, 64), (32, 32)))])  # not an out= buffer
    qkv = ((1, 8, 128, 64),) * 3
    et("trace-torch-et-causal-not-boolean.json",
       [fwd, node(2, 1, "aten::scaled_dot_product_attention", qkv, values=["", "", "", "", "0.0", "maybe"])])


def main():
    if "--bad" in sys.argv:
        write_bad(proto_module())
        print("wrote the malformed execution traces in tests/data/bad/")
        return
    pb = proto_module()
    one = Calls()
    lower(native(1), one)
    # Depth-1 calls of the aten ops are flat in Chakra (the converter keeps the GPU-side ops).
    flat = flatten(one.calls)
    write_torch_et(one.calls, os.path.join(OUT, "llama-3-8b-prefill-2layers.et.json"))
    write_chakra(pb, flat, os.path.join(OUT, "llama-3-8b-prefill-2layers.0.et"))
    two = Calls()
    lower(native(2), two)
    flat2 = flatten(two.calls)
    for r in range(2):
        write_chakra(pb, flat2, os.path.join(OUT, f"llama-3-8b-tp2-prefill-2layers.{r}.et"))
    print("wrote", ", ".join(["llama-3-8b-prefill-2layers.et.json", "llama-3-8b-prefill-2layers.0.et",
                              "llama-3-8b-tp2-prefill-2layers.{0,1}.et"]), "in traces/imported/")


if __name__ == "__main__":
    main()
