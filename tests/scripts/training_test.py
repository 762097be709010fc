#!/usr/bin/env python3
"""The training step generator (python/xpusim/workloads/training.py): pipeline schedules whose
simulated bubbles match their closed forms on a uniform pipeline, ZeRO stages that move the
bytes their definitions say, sequence parallelism's collectives, recomputation's extra forward,
per-GPU memory refused with its numbers, and representative detail over pipeline stages. Run by
ctest (scripts.training) with the path of the xpusim binary."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
sys.path.insert(0, os.path.join(ROOT, "python"))
from xpusim.workloads import WorkloadError, generate, training as T  # noqa: E402
from xpusim.workloads.cards import dump  # noqa: E402

DGX = os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml")
ENV = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
# A uniform pipeline: four identical layers per stage, a vocabulary small enough that the LM
# head and loss on the last stage are a sliver of a stage's work.
UNIFORM = """name: uniform
layers: 16
hidden: 2048
heads: 16
kv_heads: 16
ffn: 8192
gated: false
vocab: 256
norm: layernorm
rope: false
"""


def ops_of(trace):
    """Every op of the trace, repeat blocks unrolled, as (name, op)."""
    for o in trace["ops"]:
        if "repeat" in o:
            for i in range(o["repeat"]):
                for x in o["ops"]:
                    yield f"{o['name']}[{i}].{x['name']}", x
        else:
            yield o["name"], o


def run(trace, config=DGX, sets=()):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "trace.yaml")
    with open(path, "w") as f:
        f.write(dump(trace))
    args = [XPUSIM, "run", "-q", "--config", config, "--trace", path, "--out", os.path.join(d, "out")]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    if r.returncode:
        return r.returncode, r.stderr
    with open(os.path.join(d, "out", "report.json")) as f:
        return 0, json.load(f)


def uniform(trace):
    """The generated schedule with each layer's kernels as fixed delays (a backward op twice a
    forward op's), the LM head and loss as next to nothing, and small sends: a uniform pipeline
    whose bubbles the closed forms describe, simulated in a moment."""
    def timed(op, us):
        keep = {k: v for k, v in op.items() if k in ("name", "devices", "deps", "stream")}
        return dict(keep, kind="delay", duration=f"{us} us")

    for o in trace["ops"]:
        if "repeat" in o:
            us = 200 if o["name"].startswith("F") else 400
            o["ops"] = [x if x["kind"] in ("all_reduce", "all_gather", "reduce_scatter") else timed(x, us)
                        for x in o["ops"]]
        elif o["kind"] == "send_recv":
            o["bytes"] = 1024
        elif o["kind"] not in ("all_reduce", "all_gather", "reduce_scatter"):
            o.update(timed(o, 0.1))
            for k in [k for k in o if k not in ("name", "devices", "deps", "stream", "kind", "duration")]:
                del o[k]
    return trace


def busy(intervals):
    total, end = 0.0, -1.0
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


class Schedules(unittest.TestCase):
    def test_every_microbatch_runs_forward_then_backward_once_per_chunk(self):
        for kind, v in (("gpipe", 1), ("1f1b", 1), ("interleaved", 3)):
            for s in range(4):
                order = T.schedule(kind, 4, v, 8, s)
                self.assertEqual(sorted(order), sorted([(p, m, c) for p in "FB" for m in range(8) for c in range(v)]))
                done = set()
                for p, m, c in order:
                    if p == "B":
                        self.assertIn((m, c), done, (kind, s))
                    else:
                        done.add((m, c))

    def test_1f1b_holds_at_most_pp_minus_stage_microbatches(self):
        for s in range(4):
            self.assertEqual(T.in_flight(T.schedule("1f1b", 4, 1, 8, s)), 4 - s)
        self.assertEqual(T.in_flight(T.schedule("gpipe", 4, 1, 8, 0)), 8)
        # Interleaved, stage 0: (pp - 1) x 2 + (v - 1) x pp warm-up chunks, then one more in flight.
        self.assertEqual(T.in_flight(T.schedule("interleaved", 4, 2, 8, 0)), 3 * 2 + 4 + 1)

    def test_simulated_bubbles_match_the_closed_forms(self):
        d = tempfile.mkdtemp()
        card = os.path.join(d, "uniform.yaml")
        with open(card, "w") as f:
            f.write(UNIFORM)
        for kind, v in (("gpipe", 1), ("1f1b", 1), ("interleaved", 2)):
            with self.subTest(kind):
                args = [card, "--phase", "train", "--prompt", "2048", "--batch", "8", "--pp", "4", "--microbatches", "8",
                        "--schedule", kind]
                if v > 1:
                    args += ["--virtual-stages", str(v)]
                trace = uniform(generate(args))
                rc, rep = run(trace, sets=["system.detail=representative"])
                self.assertEqual(rc, 0, rep)
                ops = [o for o in rep["ops"] if o["kind"] not in ("send_recv",) and not o["name"].startswith(("adam", "param_copy"))]
                start = min(o["start_s"] for o in ops)
                end = max(o["end_s"] for o in ops)
                fractions = []
                for s in range(4):
                    mine = [(o["start_s"], o["end_s"]) for o in ops if o["devices"][0] == s]
                    work = busy(mine)
                    fractions.append((end - start - work) / work)
                closed = T.bubble_fraction(kind, 4, v, 8)
                # The bubble each stage sees: idle time over its work. The closed form assumes
                # free sends; each send here costs a few microseconds of a chunk's milliseconds.
                for f in fractions:
                    self.assertAlmostEqual(f / closed, 1.0, delta=0.02, msg=fractions)


class Collectives(unittest.TestCase):
    CARD = os.path.join(ROOT, "configs", "models", "llama-2-7b.yaml")
    BASE = [CARD, "--phase", "train", "--prompt", "256", "--batch", "4", "--layers", "4", "--tp", "2", "--dp", "4"]

    def dp_bytes(self, trace):
        """Bytes of the data-parallel collectives (over the replicas: stream 2, or the
        parameter gathers) by kind."""
        out = {}
        for name, o in ops_of(trace):
            if o["kind"] in ("all_reduce", "reduce_scatter", "all_gather") and (
                    o.get("stream") == 2 or name.startswith(("param_ag", "param_gather")) or ".param_ag" in name):
                out[o["kind"]] = out.get(o["kind"], 0) + o["bytes"]
        return out

    def test_zero_stages_move_the_bytes_their_definitions_say(self):
        M = 2
        psi = None
        for zero in range(4):
            t = generate(self.BASE + ["--microbatches", str(M), "--zero", str(zero)])
            adam = [o for n, o in ops_of(t) if n == "adam"][0]
            if zero == 0:
                psi = adam["shape"][0]  # one TP rank's parameters, the whole model's layers and head
            else:
                self.assertEqual(adam["shape"][0], psi // 4)  # the optimiser on a quarter of them
            got = self.dp_bytes(t)
            tp = 2  # each TP rank's group reduces its own shard: tp collectives of psi each
            if zero == 0:
                self.assertEqual(got, {"all_reduce": tp * psi * 4})  # fp32 gradients, all-reduced once
            elif zero in (1, 2):
                self.assertEqual(got, {"reduce_scatter": tp * psi * 4, "all_gather": tp * psi * 2})
            else:
                # ZeRO-3: each microbatch gathers each layer's bf16 weights for its forward and
                # again for its backward, and reduce-scatters its gradients.
                head = [o for n, o in ops_of(t) if ".head_grad_reduce" in n][0]["bytes"] // 4
                layers = psi - head  # the LM head (tied to the embedding) is reduced once, at the end
                self.assertEqual(got["all_gather"], tp * M * 2 * layers * 2)
                self.assertEqual(got["reduce_scatter"], tp * (M * layers * 4 + head * 4))

    def test_sequence_parallel_splits_each_all_reduce(self):
        plain = generate(self.BASE)
        sp = generate(self.BASE + ["--sequence-parallel"])
        fwd = lambda t: [o for o in t["ops"] if o.get("repeat") and o["name"].startswith("F")][0]["ops"]  # noqa: E731
        ar = [o for o in fwd(plain) if o["kind"] == "all_reduce"]
        rs = [o for o in fwd(sp) if o["kind"] == "reduce_scatter"]
        ag = [o for o in fwd(sp) if o["kind"] == "all_gather"]
        self.assertEqual(len(ar), 2 * 4)  # two per layer, per replica
        self.assertEqual(sorted(o["bytes"] for o in rs), sorted(o["bytes"] for o in ar))
        self.assertEqual(sorted(o["bytes"] for o in ag), sorted(o["bytes"] for o in ar))
        norms = [o for o in fwd(sp) if o["kind"] == "layernorm"]
        self.assertTrue(all(o["shape"][0] == 4 * 256 // 2 for o in norms))

    def test_full_recomputation_runs_the_forward_again(self):
        def gemm_flops(t):
            return sum(2 * o.get("batch", 1) * o["m"] * o["n"] * o["k"] for n, o in ops_of(t)
                       if o["kind"] == "gemm" and ".c0[" in n)
        none = generate(self.BASE)
        full = generate(self.BASE + ["--recompute", "full"])
        fwd = sum(2 * o.get("batch", 1) * o["m"] * o["n"] * o["k"] for n, o in ops_of(none)
                  if o["kind"] == "gemm" and n.startswith("F0.c0["))
        self.assertEqual(gemm_flops(full) - gemm_flops(none), fwd)
        self.assertLess(full["memory_per_gpu"]["activations"], none["memory_per_gpu"]["activations"])


    def test_dropout_as_megatron_fuses_it(self):
        card = os.path.join(ROOT, "configs", "models", "gpt-22b.yaml")
        base = [card, "--phase", "train", "--prompt", "256", "--layers", "2", "--tp", "2", "--attention", "unfused"]
        t = generate(base + ["--recompute", "selective"])
        fwd = [o for o in t["ops"] if o.get("name") == "F0.c0"][0]["ops"]
        names = [o["name"] for o in fwd]
        # After the softmax; after each row-parallel output's all-reduce, adding the residual
        # there, so the norms add none.
        self.assertEqual(names.index("attn_dropout"), names.index("softmax") + 1)
        self.assertEqual(names.index("bias_dropout_add1"), names.index("o_proj_allreduce") + 1)
        self.assertEqual(names[-1], "bias_dropout_add2")
        self.assertTrue(all(o.get("inputs", 1) == 1 for o in fwd if o["kind"] == "layernorm"))
        bwd = [o for o in t["ops"] if o.get("name") == "B0.c0"][0]["ops"]
        self.assertIn("re_attn_dropout", [o["name"] for o in bwd])  # selective recomputation redoes it
        # Its masks and the dropped-out probabilities are kept without recomputation.
        plain = generate(base)
        mib = lambda t: float(t["memory_per_gpu"]["activations"].split()[0])  # noqa: E731
        self.assertGreater(mib(plain), mib(t))


    def test_expert_all_to_alls_carry_the_routed_tokens(self):
        card = os.path.join(ROOT, "configs", "models", "mixtral-8x7b.yaml")
        base = [card, "--phase", "train", "--prompt", "256", "--batch", "2", "--layers", "2", "--dp", "8"]
        D, T, k, E = 4096, 512, 2, 8
        for ep, cf in ((4, None), (8, None), (4, 1.25)):
            t = generate(base + ["--ep", str(ep)] + (["--capacity-factor", str(cf)] if cf else []))
            fwd = [o for o in t["ops"] if o.get("name") == "F0.c0"][0]["ops"]
            a2a = [o for o in fwd if o["kind"] == "all_to_all"]
            # Two per layer (dispatch, combine) per expert-parallel group of ep GPUs.
            self.assertEqual(len(a2a), 2 * 8 // ep)
            self.assertEqual(a2a[0]["devices"], f"0-{ep - 1}")
            slots = T * k if cf is None else E * -(-int(cf * T * k) // E)
            self.assertTrue(all(o["bytes"] == slots * D * 2 for o in a2a))
            up = [o for o in fwd if o["name"] == "expert_up"][0]
            # Each GPU's experts / ep experts compute the slots every GPU of the group sends them.
            self.assertEqual(up["batch"], E // ep)
            self.assertEqual(up["batch"] * up["m"], slots * ep * (E // ep) // E)
            bwd = [o for o in t["ops"] if o.get("name") == "B0.c0"][0]["ops"]
            self.assertEqual(sum(o["kind"] == "all_to_all" for o in bwd), len(a2a))
            # Expert gradients reduce over the replicas that hold the same experts.
            experts = [o for o in bwd if "_experts" in o["name"]]
            self.assertEqual(len(experts), ep if ep < 8 else 0)
        for bad, msg in [(["--ep", "3"], "must divide --dp"), (["--ep", "2", "--tp", "2"], "--tp 1")]:
            with self.assertRaises(WorkloadError) as e:
                generate(base + bad)
            self.assertIn(msg, str(e.exception))


class Kernels(unittest.TestCase):
    """What runs around the GEMMs: Transformer Engine's fp8 casts, fused attention's backward
    kernels, the optimiser's step."""
    LLAMA = os.path.join(ROOT, "configs", "models", "llama-2-7b.yaml")
    BASE = [LLAMA, "--phase", "train", "--prompt", "512", "--layers", "1"]

    def block(self, t, name):
        return [o for o in t["ops"] if o.get("name") == name][0]["ops"]

    def test_fp8_layers_cast_each_gemm_input_and_output_gradient(self):
        t = generate(self.BASE + ["--weights", "fp8"])
        fwd, bwd = self.block(t, "F0.c0"), self.block(t, "B0.c0")
        gemms = [o for o in fwd if o["kind"] == "gemm"]
        self.assertTrue(gemms and all(o["dtype"] == "fp8" and o["out_dtype"] == "bf16" for o in gemms))
        names = [o["name"] for o in fwd]
        for g in gemms:
            cast = fwd[names.index(g["name"]) - 1]
            self.assertEqual(cast["shape"], [g["m"], g["k"]], cast)
            if g["name"] == "o_proj":  # the attention's bf16 output: one kernel writes both fp8 copies
                self.assertEqual((cast["name"], cast["dtype"], cast["out_dtype"], cast["outputs"]),
                                 ("o_proj_input_cast", "bf16", "fp8", 2))
            else:  # a norm's or the activation's output, written in fp8 by its kernel: its transpose
                self.assertEqual((cast["name"], cast["dtype"]), (g["name"] + "_input_t", "fp8"))
        bnames = [o["name"] for o in bwd]
        for g in gemms:
            casts = [o for o in bwd if o["name"] == g["name"] + "_grad_cast"]
            if g["name"] == "ffn_up":  # the activation's fused backward casts its gradient
                self.assertEqual(casts, [])
                continue
            self.assertEqual(len(casts), 1)
            self.assertEqual((casts[0]["shape"], casts[0]["outputs"]), ([g["m"], g["n"]], 2))
            self.assertEqual(bnames.index(g["name"] + "_dgrad"), bnames.index(casts[0]["name"]) + 1)
        self.assertFalse([n for n in bnames if n.endswith(("_input_t", "_input_cast"))])
        # The output layer is not a TE module; bf16 layers cast nothing.
        self.assertEqual([o for o in t["ops"] if o.get("name") == "F0.c0.lm_head"][0]["dtype"], "bf16")
        plain = generate(self.BASE)
        self.assertFalse([o for _, o in ops_of(plain) if "cast" in o["name"] or o["name"].endswith("_input_t")])

    def test_fused_attention_backward_runs_its_row_sums_and_dq_conversion(self):
        t = generate(self.BASE)
        bwd = self.block(t, "B0.c0")
        names = [o["name"] for o in bwd]
        i = names.index("attn_bwd_dot_do_o")
        self.assertEqual(names[i:i + 5], ["attn_bwd_dot_do_o", "attn_bwd", "attn_bwd_dkdv", "attn_bwd_half", "attn_bwd_convert_dq"])
        att = [o for o in self.block(t, "F0.c0") if o["kind"] == "attention"][0]
        rows = att["batch"] * att["seq_q"] * att["heads"]
        self.assertEqual(bwd[i]["shape"], [rows, 2 * att["head_dim"]])  # dO and O, one fp32 sum a row
        self.assertEqual((bwd[i]["kind"], bwd[i]["out_dtype"]), ("reduction", "fp32"))
        conv = bwd[i + 4]
        self.assertEqual(conv["shape"], [att["batch"] * att["seq_q"], att["heads"] * att["head_dim"]])
        self.assertEqual((conv["dtype"], conv["out_dtype"]), ("fp32", "bf16"))

    def test_weight_gradients_accumulate_into_fp32_as_grad_accumulation_says(self):
        # fused (the default): every weight gradient's GEMM adds into fp32; attention's products
        # of activations (unfused qk, pv) are not weights.
        card = [self.LLAMA, "--phase", "train", "--prompt", "256", "--batch", "2", "--layers", "1", "--attention", "unfused"]
        fused = [o for _, o in ops_of(generate(card)) if o["name"].endswith("_wgrad")]
        weights = [o for o in fused if o["name"].split(".")[-1] not in ("qk_wgrad", "pv_wgrad")]
        self.assertTrue(len(weights) >= 5 and len(weights) < len(fused))  # a layer's four GEMMs and the LM head
        for o in fused:
            self.assertEqual(o.get("accumulate", False), o in weights, o)
            self.assertEqual(o.get("out_dtype", "bf16"), "fp32" if o in weights else "bf16", o)
        # add: the GEMM writes bf16 and an add kernel reads fp32 + bf16 and writes fp32 after it.
        added = list(ops_of(generate(card + ["--grad-accumulation", "add"])))
        names = [n for n, _ in added]
        for w in weights:
            n = [n for n, o in added if o["name"] == w["name"]][0]
            g, acc = added[names.index(n)][1], added[names.index(n) + 1][1]
            self.assertNotIn("accumulate", g)
            self.assertEqual(acc["name"], w["name"][:-len("_wgrad")] + "_grad_accum")
            self.assertEqual(acc["shape"], [g["m"] * g["n"]])
            # 4 + 2 bytes read, 4 written per gradient element
            self.assertEqual((acc["inputs"] * 2, 4), (6, {"fp32": 4}[acc["out_dtype"]]))
        none = [o for _, o in ops_of(generate(card + ["--grad-accumulation", "none"]))]
        self.assertFalse([o for o in none if o.get("accumulate") or o["name"].endswith("_grad_accum")])
        # The data-parallel reductions (the layers' and the LM head's) wait for the last accumulation.
        dp = [o for _, o in ops_of(generate(card + ["--dp", "2", "--grad-accumulation", "add"]))
              if "grad_reduce" in o["name"] and "embed" not in o["name"]]
        self.assertTrue(any("head_grad_reduce" in o["name"] for o in dp), [o["name"] for o in dp])
        self.assertTrue(any(o["name"].startswith("grad_reduce") for o in dp), [o["name"] for o in dp])
        self.assertTrue(all(any(d.endswith("_grad_accum") for d in o["deps"]) for o in dp), dp)

    def test_adam_reads_four_tensors_and_writes_three_then_copies_the_parameters(self):
        t = generate(self.BASE)
        adam = [o for o in t["ops"] if o.get("name") == "adam"][0]
        copy = [o for o in t["ops"] if o.get("name") == "param_copy"][0]
        self.assertEqual((adam["inputs"], adam["outputs"], adam["dtype"]), (4, 3, "fp32"))
        self.assertEqual((copy["shape"], copy["dtype"], copy["out_dtype"], copy["deps"]), (adam["shape"], "fp32", "bf16", ["adam"]))
        # Simulated (over 2^24 parameters), the step moves 28 bytes a parameter, the copy 6.
        P = 2**24
        small = {"xpusim_trace": 1, "name": "optimiser", "ops": [dict(adam, shape=[P]), dict(copy, shape=[P])]}
        rc, rep = run(small, config=os.path.join(ROOT, "configs", "h100-sxm.yaml"))
        self.assertEqual(rc, 0, rep)
        ops = {o["name"]: o for o in rep["ops"]}
        for name, per in (("adam", 28), ("param_copy", 6)):
            o = ops[name]
            self.assertEqual(o["min_bytes"], per * P)
            moved = o["memory"]["l2_read_bytes"] + o["memory"]["l2_write_bytes"]
            self.assertAlmostEqual(moved / (per * P), 1.0, delta=0.05)


class Memory(unittest.TestCase):
    def test_a_layout_that_does_not_fit_is_refused_with_its_numbers(self):
        card = os.path.join(ROOT, "configs", "models", "gpt-3-175b.yaml")
        t = generate([card, "--phase", "train", "--prompt", "2048", "--batch", "1", "--layers", "8"])
        rc, err = run(t, config=os.path.join(ROOT, "configs", "h100-sxm.yaml"))
        self.assertEqual(rc, 1)
        for part in ("memory_per_gpu", "weights", "gradients", "optimizer", "activations", "of HBM"):
            self.assertIn(part, err)
        # 8 layers of 1.8 G parameters each at 18 bytes a parameter: far past 80 GB.
        self.assertIn("GiB on each GPU", err)

    def test_memory_components_follow_the_zero_stage(self):
        card = os.path.join(ROOT, "configs", "models", "llama-2-7b.yaml")
        base = [card, "--phase", "train", "--prompt", "256", "--layers", "4", "--dp", "8"]
        mem = {z: generate(base + ["--zero", str(z)])["memory_per_gpu"] for z in range(4)}
        mib = lambda s: float(s.split()[0])  # noqa: E731
        self.assertAlmostEqual(mib(mem[1]["optimizer"]) * 8, mib(mem[0]["optimizer"]), delta=0.5)
        self.assertEqual(mem[1]["gradients"], mem[0]["gradients"])
        self.assertAlmostEqual(mib(mem[2]["gradients"]) * 8, mib(mem[0]["gradients"]), delta=0.5)
        self.assertLess(mib(mem[3]["weights"]), mib(mem[0]["weights"]))

    def test_bad_layouts_are_refused(self):
        card = os.path.join(ROOT, "configs", "models", "llama-2-7b.yaml")
        base = [card, "--phase", "train", "--layers", "8"]
        for bad, msg in [(["--schedule", "interleaved", "--pp", "2", "--microbatches", "2", "--batch", "2"],
                          "--virtual-stages 2 or more"),
                         (["--schedule", "interleaved", "--pp", "4", "--virtual-stages", "2", "--microbatches", "2",
                           "--batch", "2"], "multiple of --pp"),
                         (["--virtual-stages", "2"], "applies to --schedule interleaved"),
                         (["--sequence-parallel"], "needs --tp 2"),
                         (["--zero", "1"], "needs --dp 2"),
                         (["--pp", "4", "--virtual-stages", "4", "--schedule", "interleaved", "--microbatches", "4",
                           "--batch", "4"], "more model chunks than layers")]:
            with self.assertRaises(WorkloadError) as e:
                generate(base + bad)
            self.assertIn(msg, str(e.exception))
        with self.assertRaises(WorkloadError) as e:
            generate([card, "--phase", "prefill", "--zero", "1"])
        self.assertIn("applies to --phase train", str(e.exception))


class Representative(unittest.TestCase):
    def test_pipeline_stages_mirror_their_replicas(self):
        d = tempfile.mkdtemp()
        card = os.path.join(d, "uniform.yaml")
        with open(card, "w") as f:
            f.write(UNIFORM.replace("hidden: 2048", "hidden: 512").replace("ffn: 8192", "ffn: 2048"))
        self.args = [card, "--phase", "train", "--prompt", "128", "--batch", "4", "--layers", "2", "--tp", "2",
                     "--pp", "2", "--dp", "2", "--microbatches", "2"]
        t = generate(self.args)
        rc, full = run(t)
        self.assertEqual(rc, 0, full)
        rc, rep = run(t, sets=["system.detail=representative"])
        self.assertEqual(rc, 0, rep)
        self.assertEqual(rep["system"]["simulated_gpus"], [0, 2])  # one GPU per stage
        self.assertEqual(len(full["system"]["simulated_gpus"]), 8)
        self.assertAlmostEqual(rep["total"]["time_s"] / full["total"]["time_s"], 1.0, delta=0.02)
        self.assertAlmostEqual(rep["total"]["flops"] / full["total"]["flops"], 1.0, delta=1e-9)
        # The first replica's TP collectives and sends standing for both replicas', and TP rank
        # 0's data-parallel collectives for rank 1's: the same step, the same traffic, half the
        # collectives simulated.
        m = generate(self.args + ["--mirror-replicas"])
        mirrored = [o for _, o in ops_of(m) if o.get("mirrors")]
        replica = [o for o in mirrored if max(o["devices"]) < 4]  # the first replica's GPUs, 0-3
        rank0 = [o for o in mirrored if max(o["devices"]) >= 4]  # over both replicas: TP rank 0's GPUs
        self.assertTrue(replica and all(o["mirrors"] == 1 for o in replica))
        self.assertTrue(rank0 and all(o["mirrors"] == 1 and all(g % 2 == 0 for g in o["devices"]) for o in rank0))
        self.assertFalse([o for _, o in ops_of(m) if o["kind"] in ("reduce_scatter", "all_gather", "all_reduce")
                          and max(o["devices"]) >= 4 and not o.get("mirrors")])  # no TP rank 1's left
        rc, mir = run(m, sets=["system.detail=representative"])
        self.assertEqual(rc, 0, mir)
        self.assertAlmostEqual(mir["total"]["time_s"] / rep["total"]["time_s"], 1.0, delta=0.02)
        self.assertAlmostEqual(mir["total"]["nvlink_bytes"] / rep["total"]["nvlink_bytes"], 1.0,
                               delta=0.01)


if __name__ == "__main__":
    unittest.main()
