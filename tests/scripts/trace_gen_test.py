#!/usr/bin/env python3
"""The transformer trace generator: FLOPs of the generated GEMMs equal the closed-form counts of
the model card, and bad input is refused with a message. Run by ctest (scripts.trace_gen)."""
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "scripts", "xpusim-trace.py")


def generate(*args):
    r = subprocess.run([sys.executable, GEN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return r.returncode, r.stdout, r.stderr


def gemm_flops(trace):
    total = 0
    for op in trace["ops"]:
        reps, ops = (op["repeat"], op["ops"]) if "repeat" in op else (1, [op])
        for o in ops:
            if o["kind"] == "gemm":
                total += reps * 2 * o.get("batch", 1) * o["m"] * o["n"] * o["k"]
    return total


def card(name):
    with open(os.path.join(ROOT, "configs", "models", name + ".yaml")) as f:
        return yaml.safe_load(f)


class TraceGen(unittest.TestCase):
    def test_decode_flops_are_two_per_parameter_per_token(self):
        for name in ["llama-2-70b", "llama-2-7b", "llama-3-8b", "gpt-3-175b"]:
            c = card(name)
            d = c["hidden"] // c["heads"]
            per_layer = (c["hidden"] * (c["heads"] + 2 * c["kv_heads"]) * d + c["heads"] * d * c["hidden"]
                         + c["hidden"] * c["ffn"] * (3 if c["gated"] else 2))
            params = c["layers"] * per_layer + c["hidden"] * c["vocab"]  # LM head; embeddings do no math
            for batch in [1, 8]:
                rc, out, err = generate(os.path.join(ROOT, "configs/models", name + ".yaml"), "--phase", "decode",
                                        "--batch", str(batch), "--attention", "fused")
                self.assertEqual(rc, 0, err)
                # Fused attention is its own op, so the GEMMs are exactly the parameters' work.
                self.assertEqual(gemm_flops(yaml.safe_load(out)), 2 * params * batch, name)

    def test_decode_bytes_are_the_weights_and_the_kv_cache(self):
        # Weights read by the GEMMs, and K/V read by attention, match the closed form in each format.
        c = card("llama-2-70b")
        d = c["hidden"] // c["heads"]
        params = c["layers"] * (c["hidden"] * (c["heads"] + 2 * c["kv_heads"]) * d + c["heads"] * d * c["hidden"]
                                + 3 * c["hidden"] * c["ffn"]) + c["hidden"] * c["vocab"]
        for fmt, size in [("bf16", 2), ("fp8", 1)]:
            for batch, ctx in [(1, 2048), (32, 4096)]:
                rc, out, err = generate(os.path.join(ROOT, "configs/models/llama-2-70b.yaml"), "--phase", "decode",
                                        "--batch", str(batch), "--context", str(ctx), "--weights", fmt, "--kv", fmt)
                self.assertEqual(rc, 0, err)
                t = yaml.safe_load(out)
                weights = kv = 0
                for op in t["ops"]:
                    reps, ops = (op["repeat"], op["ops"]) if "repeat" in op else (1, [op])
                    for o in ops:
                        sz = {"bf16": 2, "fp8": 1}[o["dtype"]]
                        if o["kind"] == "gemm":
                            weights += reps * o.get("batch", 1) * o["k"] * o["n"] * sz
                        if o["kind"] == "attention":
                            self.assertEqual((o["seq_q"], o["seq_kv"], o["kv_heads"]), (1, ctx, c["kv_heads"]))
                            kv += reps * o["batch"] * 2 * o["seq_kv"] * o["kv_heads"] * o["head_dim"] * sz
                self.assertEqual(weights, params * size)
                self.assertEqual(kv, c["layers"] * batch * 2 * ctx * c["kv_heads"] * d * size)

    def test_steps_carry_the_weights_and_kv_cache_each_gpu_holds(self):
        # memory_per_gpu, which `xpusim run` and `check` hold against hbm.capacity: a GPU's share of
        # the generated layers' weights, the embedding and the LM head, and of the batch's KV cache.
        c = card("llama-2-70b")
        D, V, L, d = c["hidden"], c["vocab"], 3, c["hidden"] // c["heads"]
        layer = D * (c["heads"] + 2 * c["kv_heads"]) * d + c["heads"] * d * D + 3 * D * c["ffn"]
        mib = 2 ** 20

        def memory(*args):
            rc, out, err = generate(os.path.join(ROOT, "configs/models/llama-2-70b.yaml"), "--layers", str(L), *args)
            self.assertEqual(rc, 0, err)
            m = yaml.safe_load(out)["memory_per_gpu"]
            return {k: float(v.split()[0]) * mib for k, v in m.items()}

        for tp, fmt, size in [(1, "bf16", 2), (8, "fp8", 1)]:
            m = memory("--phase", "decode", "--batch", "4", "--context", "1000", "--tp", str(tp), "--weights", fmt, "--kv", fmt)
            self.assertAlmostEqual(m["weights"], (L * layer + 2 * V * D) * size / tp, delta=0.05 * mib)
            kv_heads = max(1, c["kv_heads"] // tp)  # 8 KV heads: one a GPU at TP=8
            self.assertAlmostEqual(m["kv_cache"], 4 * 1000 * 2 * L * kv_heads * d * size, delta=0.05 * mib)
        # With fewer KV heads than GPUs (8 at TP=16) each GPU keeps one, so its K and V projections
        # are a sixteenth of the layer's plus the replicated half head's: 2 x D x d x (1 - 8/16) more.
        m = memory("--phase", "decode", "--batch", "4", "--context", "1000", "--tp", "16")
        self.assertAlmostEqual(m["weights"], (L * (layer / 16 + 2 * D * d * (1 - 8 / 16)) + 2 * V * D / 16) * 2,
                               delta=0.05 * mib)
        # A prefill caches its prompt and what was cached before it; a pipeline's largest stage holds
        # ceil(3/2) = 2 layers and one end (embedding or LM head); 2:4 keeps half the layers' values
        # and a 2-bit position for each.
        m = memory("--phase", "prefill", "--batch", "2", "--prompt", "300", "--past", "200", "--pp", "2")
        self.assertAlmostEqual(m["weights"], (2 * layer + V * D) * 2, delta=0.05 * mib)
        self.assertAlmostEqual(m["kv_cache"], 2 * 500 * 2 * 2 * c["kv_heads"] * d * 2, delta=0.05 * mib)
        m = memory("--phase", "decode", "--sparsity", "2:4")
        self.assertAlmostEqual(m["weights"], L * layer * (1 + 0.125) + 2 * V * D * 2, delta=0.05 * mib)
        # An encoder keeps no KV cache.
        rc, out, err = generate(os.path.join(ROOT, "configs/models/bert-large.yaml"), "--phase", "prefill", "--prompt", "128")
        self.assertEqual(rc, 0, err)
        self.assertEqual(list(yaml.safe_load(out)["memory_per_gpu"]), ["weights"])

    def test_weight_only_formats_mark_the_weight_gemms(self):
        # int4 weights under fp16 math: every weight GEMM (LM head included) stores int4, computes
        # fp16; the FLOPs are unchanged; attention keeps its own format.
        m = os.path.join(ROOT, "configs/models/llama-2-7b.yaml")
        rc, out, err = generate(m, "--phase", "decode", "--weights", "int4", "--math", "fp16", "--layers", "2")
        self.assertEqual(rc, 0, err)
        t = yaml.safe_load(out)
        rc, ref, err = generate(m, "--phase", "decode", "--weights", "fp16", "--layers", "2")
        self.assertEqual(gemm_flops(t), gemm_flops(yaml.safe_load(ref)))
        self.assertIn("wint4-fp16", t["name"])
        gemms = [o for op in t["ops"] for o in (op["ops"] if "repeat" in op else [op]) if o["kind"] == "gemm"]
        self.assertEqual({o["name"] for o in gemms}, {"qkv", "o_proj", "ffn_up", "ffn_down", "lm_head"})
        for o in gemms:
            self.assertEqual((o["dtype"], o["weight_dtype"]), ("fp16", "int4"), o["name"])
        # Block-scaled fp4 computes in fp4 by default (no weight_dtype conversion needed but kept
        # for the scales); --math fp8 converts.
        rc, out, err = generate(m, "--phase", "decode", "--weights", "mxfp4", "--layers", "1")
        self.assertEqual(rc, 0, err)
        q = yaml.safe_load(out)["ops"][0]["ops"][1]
        self.assertEqual((q["dtype"], q["weight_dtype"]), ("fp4", "mxfp4"))
        rc, out, err = generate(m, "--phase", "decode", "--weights", "mxfp4", "--math", "fp8", "--layers", "1")
        q = yaml.safe_load(out)["ops"][0]["ops"][1]
        self.assertEqual((q["dtype"], q["weight_dtype"]), ("fp8", "mxfp4"))
        # Same format: no weight_dtype at all.
        rc, out, err = generate(m, "--phase", "decode", "--weights", "fp8", "--layers", "1")
        self.assertNotIn("weight_dtype", out)
        for bad, msg in [(["--weights", "bf16", "--math", "int4"], "wider than --math"),
                         (["--weights", "int4", "--math", "fp16", "--phase", "train"], "weight-only"),
                         (["--math", "mxfp4"], "unknown format")]:
            args = ["--phase", "decode"] + bad if "--phase" not in bad else bad
            rc, _, err = generate(m, *args)
            self.assertNotEqual(rc, 0, bad)
            self.assertIn(msg, err)

    def test_moe_decode_touches_top_k_experts_per_token(self):
        c = card("mixtral-8x7b")
        rc, out, err = generate(os.path.join(ROOT, "configs/models/mixtral-8x7b.yaml"), "--phase", "decode")
        self.assertEqual(rc, 0, err)
        t = yaml.safe_load(out)
        up = next(o for o in t["ops"][0]["ops"] if o["name"] == "expert_up")
        self.assertEqual(up["batch"] * up["m"], c["top_k"])  # batch 1: two experts, one token each

    def test_unfused_attention_adds_the_score_gemms(self):
        base = ["--phase", "prefill", "--prompt", "128", "--layers", "1"]
        m = os.path.join(ROOT, "configs/models/llama-2-7b.yaml")
        _, fused, _ = generate(m, *base)
        _, unfused, _ = generate(m, *base, "--attention", "unfused")
        c = card("llama-2-7b")
        extra = 2 * 2 * c["heads"] * 128 * 128 * (c["hidden"] // c["heads"])  # QK^T and PV, full matrix
        self.assertEqual(gemm_flops(yaml.safe_load(unfused)) - gemm_flops(yaml.safe_load(fused)), extra)

    def test_resnet50_has_its_published_work(self):
        rc, out, err = generate(os.path.join(ROOT, "configs/models/resnet-50.yaml"), "--batch", "2")
        self.assertEqual(rc, 0, err)
        t = yaml.safe_load(out)
        macs = 0
        convs = [o for o in t["ops"] if o["kind"] == "conv2d"]
        for o in convs:
            st, pad = o.get("stride", 1), o.get("pad", 0)
            p = (o["h"] + 2 * pad - o["r"]) // st + 1
            q = (o["w"] + 2 * pad - o["s"]) // st + 1
            macs += o["batch"] * p * q * o["k"] * o["c"] * o["r"] * o["s"]
        macs += sum(o["m"] * o["n"] * o["k"] for o in t["ops"] if o["kind"] == "gemm")
        self.assertEqual(len(convs), 1 + 3 * 16 + 4)  # stem, 16 bottlenecks of 3, 4 downsamples
        # About 4.1 GMACs per 224x224 image (He et al. 2016; torchvision lists 4.09 G).
        self.assertAlmostEqual(macs / 2 / 4.09e9, 1.0, delta=0.01)

    def test_training_gemms_are_three_times_the_forward(self):
        m = os.path.join(ROOT, "configs/models/llama-2-7b.yaml")
        args = ["--batch", "2", "--prompt", "256", "--layers", "2"]
        _, fwd, _ = generate(m, "--phase", "prefill", *args)
        rc, train, err = generate(m, "--phase", "train", *args)
        self.assertEqual(rc, 0, err)
        t = yaml.safe_load(train)
        self.assertNotIn("&id", train)  # no YAML anchors
        f = yaml.safe_load(fwd)
        f["ops"] = f["ops"][:1]  # the layers, without the LM head of inference (last tokens only)
        flops = lambda ops: sum(2 * o.get("batch", 1) * o["m"] * o["n"] * o["k"] for o in ops if o["kind"] == "gemm")  # noqa: E731
        blocks = {o["name"]: o for o in t["ops"] if "repeat" in o}
        self.assertEqual(blocks["F0.c0"]["repeat"] * flops(blocks["F0.c0"]["ops"]), gemm_flops(f))
        self.assertEqual(flops(blocks["B0.c0"]["ops"]), 2 * flops(blocks["F0.c0"]["ops"]))
        # Fused attention's backward: 2.5 forward passes (FlashAttention-2's five products to two).
        att = lambda ops: sum(o["batch"] * o["heads"] for o in ops if o["kind"] == "attention")  # noqa: E731
        self.assertEqual(2 * att(blocks["B0.c0"]["ops"]), 5 * att(blocks["F0.c0"]["ops"]))
        # The LM head over every token: forward, then its data and weight gradients.
        head = {o["name"]: o for o in t["ops"] if "lm_head" in o.get("name", "")}
        self.assertEqual(flops(head[n] for n in ("B0.c0.lm_head_dgrad", "B0.c0.lm_head_wgrad")),
                         2 * flops([head["F0.c0.lm_head"]]))
        self.assertEqual(head["F0.c0.lm_head"]["m"], 2 * 256)
        adam = [o for o in t["ops"] if o.get("name") == "adam"][0]
        c = card("llama-2-7b")
        per_layer = (c["hidden"] * (c["heads"] + 2 * c["kv_heads"]) * 128 + c["heads"] * 128 * c["hidden"]
                     + 3 * c["hidden"] * c["ffn"])
        self.assertEqual(adam["shape"], [2 * per_layer + c["vocab"] * c["hidden"]])

    def test_tensor_parallel_shards_the_work_and_all_reduces_the_activations(self):
        m = os.path.join(ROOT, "configs/models/llama-3-70b.yaml")
        base = ["--phase", "prefill", "--prompt", "512", "--layers", "2"]
        _, one, _ = generate(m, *base)
        rc, out, err = generate(m, *base, "--tp", "8")
        self.assertEqual(rc, 0, err)
        t1, t8 = yaml.safe_load(one), yaml.safe_load(out)
        # Each GPU does an eighth of the layers' GEMM work (the KV projection: 8 KV heads over 8
        # GPUs); the LM head an eighth of the vocabulary padded to a multiple of 128 x 8.
        head = lambda t: [o for o in t["ops"] if o.get("name") == "lm_head"][0]  # noqa: E731
        h1, h8 = head(t1), head(t8)
        self.assertEqual(h8["n"], -(-card("llama-3-70b")["vocab"] // 1024) * 128)
        self.assertEqual(8 * (gemm_flops(t8) - 2 * h8["m"] * h8["n"] * h8["k"]), gemm_flops(t1) - 2 * h1["m"] * h1["n"] * h1["k"])
        layer = t8["ops"][0]["ops"]
        ars = [o for o in layer if o["kind"] == "all_reduce"]
        # Two per layer (after the row-parallel projections), of the bf16 activations, over the group.
        self.assertEqual([o["name"] for o in ars], ["o_proj_allreduce", "ffn_allreduce"])
        c = card("llama-3-70b")
        self.assertTrue(all(o["bytes"] == 512 * c["hidden"] * 2 and o["devices"] == "0-7" for o in ars))
        self.assertTrue(all(o["devices"] == "0-7" for o in layer))
        self.assertEqual(layer.index(ars[0]), [o["name"] for o in layer].index("o_proj") + 1)

    def test_data_parallel_all_reduces_each_ranks_gradients(self):
        m = os.path.join(ROOT, "configs/models/llama-2-7b.yaml")
        rc, out, err = generate(m, "--phase", "train", "--prompt", "256", "--layers", "2", "--tp", "2", "--dp", "4")
        self.assertEqual(rc, 0, err)
        t = yaml.safe_load(out)
        bwd = [o for o in t["ops"] if o.get("name") == "B0.c0"][0]
        # Each layer's gradients, per TP rank over the replicas, on stream 2 beside the backward pass.
        grads = [o for o in bwd["ops"] if o.get("stream") == 2]
        self.assertEqual([o["devices"] for o in grads], [[0, 2, 4, 6], [1, 3, 5, 7]])
        self.assertTrue(all(o["kind"] == "all_reduce" for o in grads))
        head = [o for o in t["ops"] if o.get("stream") == 2]
        adam = [o for o in t["ops"] if o.get("name") == "adam"][0]
        # A TP rank's fp32 gradients: the layers' and the LM head's (tied to the embedding).
        self.assertEqual(bwd["repeat"] * grads[0]["bytes"] + head[0]["bytes"], adam["shape"][0] * 4)
        # The forward's TP all-reduces are one collective per replica, on its own pair of GPUs.
        fwd_ars = [o for o in t["ops"][1]["ops"] if o["kind"] == "all_reduce"]
        self.assertEqual(len(fwd_ars), 2 * 4)
        self.assertEqual(fwd_ars[0]["devices"], [0, 1])
        bwd_ars = [o for o in bwd["ops"] if o["kind"] == "all_reduce" and o.get("stream") == 1]
        self.assertEqual(len(bwd_ars), 2 * 4)  # after the QKV and FFN-up data gradients

    def test_pipeline_stages_pass_activations_by_send_recv(self):
        m = os.path.join(ROOT, "configs/models/llama-3-8b.yaml")
        rc, out, err = generate(m, "--phase", "decode", "--batch", "8", "--layers", "6", "--pp", "3",
                                "--microbatches", "2")
        self.assertEqual(rc, 0, err)
        t = yaml.safe_load(out)
        stages = [o for o in t["ops"] if "repeat" in o]
        self.assertEqual([o["repeat"] for o in stages], [2, 2, 2] * 2)
        sends = [o for o in t["ops"] if o.get("kind") == "send_recv"]
        self.assertEqual([o["devices"] for o in sends], [[0, 1], [1, 2]] * 2)
        self.assertTrue(all(o["bytes"] == 4 * card("llama-3-8b")["hidden"] * 2 for o in sends))
        self.assertEqual(stages[1]["ops"][0]["deps"], ["mb0.send0"])
        # Every stage does its share: the layers' GEMMs add up to the unpipelined step.
        _, one, _ = generate(m, "--phase", "decode", "--batch", "8", "--layers", "6")
        self.assertEqual(gemm_flops(t), gemm_flops(yaml.safe_load(one)))
        for bad, msg in [(["--tp", "3"], "must divide heads"), (["--dp", "2"], "applies to --phase train"),
                         (["--pp", "2", "--microbatches", "3"], "must divide --batch")]:
            rc, _, err = generate(m, "--phase", "decode", "--batch", "8", *bad)
            self.assertNotEqual(rc, 0)
            self.assertIn(msg, err)

    def test_fusion_modes_run_the_same_gemms_in_fewer_kernels(self):
        m = os.path.join(ROOT, "configs/models/llama-2-7b.yaml")
        _, fused, _ = generate(m, "--phase", "decode", "--batch", "4")
        _, unfused, _ = generate(m, "--phase", "decode", "--batch", "4", "--fusion", "none")
        f, u = yaml.safe_load(fused), yaml.safe_load(unfused)
        self.assertEqual(gemm_flops(f), gemm_flops(u))
        fl, ul = f["ops"][0]["ops"], u["ops"][0]["ops"]
        kinds = lambda ops: [o["kind"] for o in ops if o["kind"] != "gemm"]  # noqa: E731
        # Fused: add+norm twice (inputs 2), RoPE with the KV append, attention, SwiGLU.
        self.assertEqual(kinds(fl), ["layernorm", "elementwise", "attention", "layernorm", "elementwise"])
        self.assertTrue(all(o.get("inputs") == 2 for o in fl if o["kind"] == "layernorm"))
        # Unfused: RMSNorm as eight kernels twice, RoPE five per tensor, two cache copies, the
        # residual adds and SiLU apart: 37 kernels a layer against 9.
        self.assertEqual(sum(o["name"].startswith("norm1_") for o in ul), 8)
        self.assertEqual(sum(o["name"].startswith("rope_") for o in ul), 10)
        self.assertEqual(len(ul), 37)
        self.assertEqual(len(fl), 9)
        # PyTorch eager's strided operands (legacy kernels): x * rsqrt broadcasts over the row, the
        # weight over the rows, RoPE's products and negation and the cache copies take views of the
        # QKV output, SiLU and the product the halves of the gate/up output. The fused kernels have none.
        strided = sorted(o["name"] for o in ul if o.get("contiguous") is False)
        self.assertEqual(strided, sorted(["norm1_scale", "norm1_weight", "norm2_scale", "norm2_weight", "rope_q_cos",
                                          "rope_q_neg", "rope_q_sin", "rope_k_cos", "rope_k_neg", "rope_k_sin",
                                          "k_cache_write", "v_cache_write", "silu", "gate_mul"]))
        self.assertFalse(any("contiguous" in o for o in fl))
        # One sequence: the weight and the gate/up halves are dense, as PyTorch finds them.
        _, one, _ = generate(m, "--phase", "decode", "--batch", "1", "--fusion", "none")
        one_strided = {o["name"] for o in yaml.safe_load(one)["ops"][0]["ops"] if o.get("contiguous") is False}
        self.assertEqual(one_strided, set(strided) - {"norm1_weight", "norm2_weight", "silu", "gate_mul"})
        # A card without RoPE (GPT-3) gets no RoPE op; LayerNorm stays one kernel unfused.
        _, g, _ = generate(os.path.join(ROOT, "configs/models/gpt-3-175b.yaml"), "--phase", "decode", "--fusion", "none")
        gl = yaml.safe_load(g)["ops"][0]["ops"]
        self.assertFalse(any("rope" in o["name"] for o in gl))
        self.assertEqual(sum(o["kind"] == "layernorm" for o in gl), 2)

    def test_every_model_card_shards_at_tp_2_4_8(self):
        # The LM head's vocabulary is padded to a multiple of 128 x TP (Megatron), so every card
        # shards; the shards add up to the padded vocabulary.
        for path in sorted(os.listdir(os.path.join(ROOT, "configs", "models"))):
            c = card(path[:-5])
            if c.get("family") == "resnet":
                continue
            phase = "prefill" if c.get("encoder") else "decode"
            for tp in (2, 4, 8):
                rc, out, err = generate(os.path.join(ROOT, "configs", "models", path), "--phase", phase,
                                        "--layers", "1", "--prompt", "128", "--tp", str(tp))
                self.assertEqual(rc, 0, f"{path} --tp {tp}: {err}")
                if c.get("encoder"):
                    continue
                head = [o for o in yaml.safe_load(out)["ops"] if o.get("name") == "lm_head"][0]
                self.assertEqual(head["n"] * tp % (128 * tp), 0, f"{path} --tp {tp}")
                self.assertGreaterEqual(head["n"] * tp, c["vocab"])
                self.assertLess(head["n"] * tp, c["vocab"] + 128 * tp)

    def test_a_prefill_after_cached_tokens_reads_them_in_attention_only(self):
        m = os.path.join(ROOT, "configs/models/llama-3-8b.yaml")
        base = ["--phase", "prefill", "--prompt", "512", "--layers", "1"]
        rc0, plain, err0 = generate(m, *base)
        rc1, chunk, err1 = generate(m, *base, "--past", "1536")
        self.assertEqual((rc0, rc1), (0, 0), err0 + err1)
        plain, chunk = yaml.safe_load(plain), yaml.safe_load(chunk)
        self.assertEqual(gemm_flops(plain), gemm_flops(chunk))  # the same rows through the weights
        att = [o for o in chunk["ops"][0]["ops"] if o["kind"] == "attention"][0]
        self.assertEqual((att["seq_q"], att["seq_kv"], att["causal"]), (512, 2048, True))
        self.assertNotIn("seq_kv", [o for o in plain["ops"][0]["ops"] if o["kind"] == "attention"][0])
        for extra, want in ((["--past", "-1"], "--past must be 0 or more"),):
            rc, _, err = generate(m, *base, *extra)
            self.assertNotEqual(rc, 0)
            self.assertIn(want, err)
        rc, _, err = generate(m, "--phase", "decode", "--past", "8")
        self.assertIn("--past applies to --phase prefill", err)

    def test_bad_input_is_refused(self):
        m = os.path.join(ROOT, "configs/models/llama-2-7b.yaml")
        rc, _, err = generate(m, "--phase", "decode", "--weights", "fp9")
        self.assertNotEqual(rc, 0)
        self.assertIn("unknown format", err)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("layers: 2\nhidden: 64\nheads: 3\nkv_heads: 2\nffn: 128\nvocab: 10\n")
        rc, _, err = generate(f.name, "--phase", "decode")
        self.assertNotEqual(rc, 0)
        self.assertIn("multiple of kv_heads", err)
        with open(f.name, "w") as g:
            g.write("layers: 2\nhiden: 64\n")
        rc, _, err = generate(f.name, "--phase", "decode")
        self.assertIn(":2: key 'hiden': unknown key", err)  # the line and the key
        rc, _, err = generate(os.path.join(ROOT, "configs/models/bert-large.yaml"), "--phase", "decode")
        self.assertIn("no decode phase", err)
        # --layers 0 is not "every layer" in disguise, and -o into a missing folder is no traceback.
        rc, _, err = generate(m, "--phase", "decode", "--layers", "0")
        self.assertEqual(rc, 1)
        self.assertIn("--layers 0: must be at least 1", err)
        rc, _, err = generate(m, "--phase", "decode", "--layers", "1", "-o", os.path.join(tempfile.gettempdir(), "no-such-dir", "t.yaml"))
        self.assertEqual(rc, 1)
        self.assertIn("cannot write it (No such file or directory)", err)
        self.assertNotIn("Traceback", err)
        # A sequence beyond the card's context is not the model; a resnet has no phases to pick.
        rc, _, err = generate(m, "--phase", "prefill", "--prompt", "3000", "--past", "2000", "--layers", "1")
        self.assertEqual(rc, 1)
        self.assertIn("--prompt + --past 5000 is beyond llama-2-7b's context of 4096 tokens", err)
        rc, _, err = generate(m, "--phase", "decode", "--context", "4097", "--layers", "1")
        self.assertIn("--context 4097 is beyond", err)
        rc, _, err = generate(os.path.join(ROOT, "configs/models/resnet-50.yaml"), "--phase", "decode")
        self.assertEqual(rc, 1)
        self.assertIn("a resnet runs inference (a forward pass) only", err)


if __name__ == "__main__":
    unittest.main()
