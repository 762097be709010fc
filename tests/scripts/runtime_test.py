#!/usr/bin/env python3
"""Serving runtime profiles (python/xpusim/runtime.py, configs/runtimes/): the shipped profiles
load, graph padding rounds a decode batch up to the captured sizes, a bad profile is refused
with its file, line and key (by the module, xpusim-trace.py and xpusim-serve.py), a generated
step with a runtime costs exactly its kernels plus the profile's host work on the engine, and a
served stream adds exactly the profile's per-step and per-request costs. Run by ctest
(scripts.runtime) with the xpusim binary."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
GEN = os.path.join(ROOT, "scripts", "xpusim-trace.py")
SERVE = os.path.join(ROOT, "scripts", "xpusim-serve.py")
ENV = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")


sys.path.insert(0, os.path.join(ROOT, "python"))  # the source tree's package, as the scripts run it
from xpusim import runtime  # noqa: E402
import xpusim.serving as serve  # noqa: E402

serve.engine.BINARY = XPUSIM

GOOD = """xpusim_runtime: 1
name: test
version: "1"
step:
  fixed: 500 us
  per_sequence: 10 us
  per_prefill_token: 0.5 us
graphs:
  decode: [1, 2, 4, 8, 16]
  prefill: eager
eager_issue: 8 us
sampling: greedy
request:
  arrival: 2 ms
  per_prompt_token: 1 us
  first_token: 1 ms
"""


CUSTOM_AR = """all_reduce:
  kernel: custom
  gpus: [2, 4, 8]
  takes_below: 8 MiB
  one_shot_below: {4: 512 KiB, 8: 256 KiB}
  eager_copy: true
"""


def profile(text=GOOD):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return f.name


class self_assert_raises:
    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            raise AssertionError("the profile was accepted")
        if not issubclass(kind, runtime.RuntimeProfileError):
            return False
        self.exception = value
        return True


class Profiles(unittest.TestCase):
    def test_shipped_profiles_load(self):
        names = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "configs", "runtimes")) if f.endswith(".yaml"))
        self.assertEqual(names, ["sglang", "trtllm", "vllm"])
        for n in names:
            rt = runtime.load(n)
            self.assertEqual(rt.name, n)
            self.assertGreater(rt.fixed_s, 0)
            self.assertEqual(rt.decode_graphs, sorted(set(rt.decode_graphs)))
            # Every value in a shipped profile says where it came from: a comment on its line or
            # in the lines just above it.
            import yaml
            with open(runtime.resolve(n)) as f:
                lines = f.read().splitlines()
            root = yaml.compose("\n".join(lines))

            def values(node, key=""):
                if isinstance(node, yaml.MappingNode):
                    for k, v in node.value:
                        yield from values(v, k.value)
                elif key not in ("xpusim_runtime", "name", "version", "description"):
                    yield key, node.start_mark.line
            for key, line in values(root):
                context = "\n".join(lines[max(0, line - 4):line + 1])
                self.assertIn("#", context, f"{n}.yaml:{line + 1}: '{key}' without its source")

    def test_graph_padding_rounds_up_to_the_captured_sizes(self):
        for n in ("vllm", "trtllm", "sglang"):
            rt = runtime.load(n)
            sizes = rt.decode_graphs
            for b in range(1, (sizes[-1] if sizes else 4) + 3):
                want = min((s for s in sizes if s >= b), default=None)
                self.assertEqual(rt.graph_batch(b), want, f"{n}: batch {b}")
                self.assertEqual(rt.engine_sets("decode", b)[0], "kernels.launch=" + ("graph" if want else "eager"))

    def test_step_costs_are_the_profile_values(self):
        rt = runtime.load(profile())
        self.assertAlmostEqual(rt.step_host_s(decode=3), 500e-6 + 3 * 10e-6, places=12)
        self.assertAlmostEqual(rt.step_host_s(prefill_seqs=2, prefill_tokens=100), 500e-6 + 2 * 10e-6 + 100 * 0.5e-6,
                               places=12)
        self.assertAlmostEqual(rt.step_s(1e-3, decode=3), 1e-3 + rt.step_host_s(decode=3), places=15)
        over = runtime.load(profile(GOOD.replace("graphs:", "overlapped:\n  fixed: 2 ms\n  per_sequence: 0 us\ngraphs:")))
        self.assertAlmostEqual(over.step_s(1e-3, decode=3), over.step_host_s(decode=3) + 2e-3, places=15)
        self.assertAlmostEqual(over.step_s(3e-3, decode=3), over.step_host_s(decode=3) + 3e-3, places=15)
        self.assertAlmostEqual(rt.arrival_path_s(100), 2e-3 + 100e-6, places=15)
        off = rt.offline()
        self.assertEqual((off.arrival_s, off.first_token_s), (0.0, 0.0))
        self.assertEqual(rt.arrival_s, 2e-3)

    def test_the_all_reduce_kernel_by_size_and_gpus(self):
        rt = runtime.load(profile(GOOD + CUSTOM_AR))
        cases = [(8, 128 * 1024, "one_shot"), (8, 256 * 1024, "two_shot"), (4, 300 * 1024, "one_shot"),
                 (2, 511 * 1024, "one_shot"), (2, 1 << 20, "two_shot"), (8, (8 << 20) - 16, "two_shot"),
                 (8, 8 << 20, None), (6, 1024, None)]
        for gpus, nbytes, want in cases:
            self.assertEqual(rt.all_reduce_algorithm(gpus, nbytes), want, f"{gpus} GPUs, {nbytes} B")
        self.assertIsNone(runtime.load(profile()).all_reduce_algorithm(8, 1024))  # NCCL's by default
        # The shipped vLLM profile as its source reads: one stage on 2 GPUs at any size it takes,
        # 6 GPUs under the 8-GPU threshold, NCCL's from 8 MiB.
        vllm = runtime.load("vllm")
        for gpus, nbytes, want in [(2, 4 << 20, "one_shot"), (4, 511 << 10, "one_shot"), (4, 512 << 10, "two_shot"),
                                   (6, 200 << 10, "one_shot"), (6, 300 << 10, "two_shot"), (8, 255 << 10, "one_shot"),
                                   (4, 8 << 20, None), (3, 1024, None)]:
            self.assertEqual(vllm.all_reduce_algorithm(gpus, nbytes), want, f"vllm: {gpus} GPUs, {nbytes} B")
        self.assertEqual(runtime.load(profile()).all_reduce_summary(), "nccl")
        self.assertEqual(rt.all_reduce_summary(), "custom gpus 2,4,8 below 8 MiB, one-shot below 4:512 KiB,8:256 KiB eager-copy")
        # The shipped TensorRT-LLM profile as its plugin's selectImplementation reads (decimal
        # sizes): one-shot on 2 GPUs up to the 16 MB workspace, below 1 MB on 4, 500 kB on 6 and 8,
        # two-shot up to 8 MB, then NCCL's; its kernel copies its input in itself.
        trt = runtime.load("trtllm")
        # Sizes a multiple of 16 bytes (x the GPU count for two-shot), as configurationSupported
        # requires: on 6 GPUs 301 rows of 8192 bf16 are not (300 are), and run NCCL's.
        for gpus, nbytes, want in [(2, 15_999_984, "one_shot"), (2, 16_000_000, "one_shot"), (2, 16_000_016, None),
                                   (4, 999_984, "one_shot"), (4, 1_000_000, "two_shot"), (4, 8_000_000, "two_shot"),
                                   (4, 8_000_064, None), (6, 499_984, "one_shot"), (6, 300 * 16384, "two_shot"),
                                   (6, 301 * 16384, None), (8, 500_096, "two_shot"), (8, 500_000, None),
                                   (3, 1024, None), (16, 1024, None)]:
            self.assertEqual(trt.all_reduce_algorithm(gpus, nbytes), want, f"trtllm: {gpus} GPUs, {nbytes} B")
        # SGLang (0.4.5 on) runs vLLM's kernel with vLLM's thresholds.
        self.assertEqual(runtime.load("sglang").all_reduce_summary(), vllm.all_reduce_summary())
        self.assertEqual((trt.all_reduce_copies_in(), vllm.all_reduce_copies_in(), rt.all_reduce_copies_in()),
                         (True, False, False))
        self.assertEqual(trt.all_reduce_summary(), "custom gpus 2,4,6,8 below 2:16000001 B,8:8000001 B, one-shot below "
                         "2:1 GiB,4:1 MB,8:500 kB align 16 B x GPUs for two-shot copy-in")
        self.assertIsNone(vllm.all_reduce_algorithm(8, 4104))  # not a multiple of 16 bytes: NCCL's

    def test_bad_profiles_name_file_line_and_key(self):
        cases = [
            (GOOD.replace("  fixed: 500 us", "  fixd: 500 us"), r":5:3: key 'step.fixd': unknown key \(did you mean 'fixed'\?\)"),
            (GOOD.replace("  fixed: 500 us", "  fixed: -5 us"), r":5:10: key 'step.fixed': '-5 us' is negative"),
            (GOOD.replace("  fixed: 500 us", "  fixed: 500"), r":5:10: key 'step.fixed': '500' is not a time with a unit"),
            (GOOD.replace("  fixed: 500 us", "  fixed: 500 furlongs"), r"key 'step.fixed': '500 furlongs': unknown unit"),
            (GOOD.replace("[1, 2, 4, 8, 16]", "[1, 4, 2]"), r":9:18: key 'graphs.decode': 2 after 4: sizes must increase"),
            (GOOD.replace("[1, 2, 4, 8, 16]", "[0, 4]"), r":9:12: key 'graphs.decode': '0' is not a batch size"),
            (GOOD.replace("sampling: greedy", "sampling: beam"), r":12:11: key 'sampling': 'beam' is not one of greedy, top_p, v0_greedy, v0_random"),
            (GOOD.replace("  first_token: 1 ms\n", ""), r":14:3: key 'request.first_token': missing"),
            (GOOD.replace("xpusim_runtime: 1", "xpusim_runtime: 2"), r":1:17: key 'xpusim_runtime': format '2'"),
            (GOOD.replace("eager_issue: 8 us", "eager_issue: [8 us]"), r":11:14: key 'eager_issue': expected a single value"),
            (GOOD + "extra: 1\n", r":17:1: key 'extra': unknown key"),
            (GOOD.replace("  per_sequence: 10 us", "  per_sequence: 10 us\n  per_sequence: 11 us"), r"key 'step.per_sequence': given twice"),
            ("xpusim_runtime: 1\nname: [unclosed\n", r":\d+:\d+: not valid YAML"),
            ("", r"empty"),
            ("? [a, b]\n: 1\n", r":1:3: key under '\(top\)': a key must be a name"),
            (GOOD + CUSTOM_AR.replace("  gpus: [2, 4, 8]\n", ""), r":18:3: key 'all_reduce.gpus': missing \(required with kernel: custom\)"),
            (GOOD + "all_reduce:\n  kernel: nccl\n  takes_below: 8 MiB\n", r":19:3: key 'all_reduce.takes_below': applies to kernel: custom only"),
            (GOOD + CUSTOM_AR.replace("8 MiB", "8 Mb"), r":20:16: key 'all_reduce.takes_below': '8 Mb' is not a size with a unit"),
            (GOOD + CUSTOM_AR.replace("8 MiB", "{8: 8 MiB, 4: 16 MiB}"), r":20:27: key 'all_reduce.takes_below': 4 after 8"),
            (GOOD + CUSTOM_AR.replace("8 MiB", "{2: 8 MiB, 4: 8 MiB}"), r":20:3: key 'all_reduce.takes_below': no size for 8 GPUs"),
            (GOOD + CUSTOM_AR + "  two_shot_align_per_gpu: true\n", r":23:3: key 'all_reduce.two_shot_align_per_gpu': needs all_reduce.align"),
            (GOOD + CUSTOM_AR + "  copy_in_kernel: true\n", r":23:3: key 'all_reduce.copy_in_kernel': a kernel that copies its input in needs no eager copy"),
            (GOOD + CUSTOM_AR.replace("eager_copy: true", "copy_in_kernel: yes"), r":22:19: key 'all_reduce.copy_in_kernel': 'yes' is not true or false"),
            (GOOD + CUSTOM_AR.replace("8 MiB", "0.5 B"), r"key 'all_reduce.takes_below': '0.5 B' is not a whole number of bytes"),
            (GOOD + CUSTOM_AR.replace("{4: 512 KiB, 8: 256 KiB}", "{8: 256 KiB, 4: 512 KiB}"), r":21:32: key 'all_reduce.one_shot_below': 4 after 8"),
            (GOOD + CUSTOM_AR.replace("{4: 512 KiB", "{1: 512 KiB"), r":21:20: key 'all_reduce.one_shot_below': '1' is not a GPU count"),
            (GOOD + CUSTOM_AR.replace("[2, 4, 8]", "[0, 4]"), r":19:10: key 'all_reduce.gpus': '0' is not a GPU count"),
            (GOOD + CUSTOM_AR.replace("kernel: custom", "kernel: nvls"), r":18:11: key 'all_reduce.kernel': 'nvls' is not one of nccl, custom"),
        ]
        for text, want in cases:
            with self.subTest(want=want):
                path = profile(text)
                with self_assert_raises() as ctx:
                    runtime.load(path)
                msg = str(ctx.exception)
                self.assertTrue(msg.startswith(path + ":"), msg)
                self.assertRegex(msg[len(path):], want)
        with self_assert_raises() as ctx:
            runtime.load("vlm")
        self.assertIn("did you mean 'vllm'", str(ctx.exception))

    def test_the_scripts_refuse_a_bad_profile(self):
        path = profile(GOOD.replace("  fixed: 500 us", "  fixed: -5 us"))
        for cmd in ([sys.executable, GEN, "configs/models/llama-3-8b.yaml", "--phase", "decode", "--runtime", path],
                    [sys.executable, SERVE, "--config", "configs/h100-sxm.yaml", "--model", "configs/models/llama-3-8b.yaml",
                     "--runtime", path, "--check", "--xpusim", XPUSIM]):
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=ENV)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn(f"{path}:5:10: key 'step.fixed': '-5 us' is negative", p.stderr)


def run_trace(trace_args, out):
    p = subprocess.run([sys.executable, GEN, "configs/models/llama-3-8b.yaml", "--layers", "1", "-o", out + ".yaml"]
                       + trace_args, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([XPUSIM, "run", "-q", "-c", "configs/h100-sxm.yaml", "-t", out + ".yaml", "-o", out,
                        "--set", "power.mode=fixed_clock"], cwd=ROOT, capture_output=True, text=True, env=ENV)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


class Samplers(unittest.TestCase):
    def sampler_ops(self, name, batch=8, tp=1):
        p = subprocess.run([sys.executable, GEN, "configs/models/llama-3-8b.yaml", "--layers", "1", "--phase", "decode",
                            "--batch", str(batch), "--tp", str(tp), "--sampler", name], cwd=ROOT, capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        import yaml
        ops = yaml.safe_load(p.stdout)["ops"]
        start = next(i for i, o in enumerate(ops) if o["name"] in ("logits_gather", "logits_fp32"))
        return ops[start:]

    def test_each_path_runs_its_kernels_over_the_vocabulary(self):
        greedy = self.sampler_ops("greedy")
        self.assertEqual([o["name"] for o in greedy], ["logits_fp32", "sample_pick"])
        self.assertEqual(greedy[0]["shape"], [8, 128256])
        self.assertEqual((greedy[0]["dtype"], greedy[0]["out_dtype"]), ("bf16", "fp32"))
        # vLLM V0: softmax and log-softmax always; the exponential race only with a temperature;
        # the sampled token's rank counted over int64 rows (two fp32 words an element).
        v0g = [o["name"] for o in self.sampler_ops("v0_greedy")]
        v0r = self.sampler_ops("v0_random")
        self.assertIn("sample_log_softmax", v0g)
        self.assertNotIn("sample_exponential", v0g)
        self.assertEqual(set(o["name"] for o in v0r) - set(v0g), {"sample_rows", "sample_exponential", "sample_race"})
        self.assertEqual(next(o for o in v0r if o["name"] == "rank_count")["shape"], [8, 2 * 128256])
        # Under TP the logits' shards are gathered first.
        self.assertEqual(self.sampler_ops("v0_greedy", tp=2)[0]["kind"], "all_gather")

    def test_an_unknown_sampler_is_refused(self):
        for script in (GEN, SERVE):
            p = subprocess.run([sys.executable, script, "configs/models/llama-3-8b.yaml", "--sampler", "v0_randon"],
                               cwd=ROOT, capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--sampler v0_randon: not one of greedy, top_p, v0_greedy, v0_random (did you mean v0_random?)", p.stderr)
            self.assertIn("v0_random", p.stderr)


class GeneratedStep(unittest.TestCase):
    def test_a_runtime_adds_exactly_its_host_work(self):
        tmp = tempfile.mkdtemp()
        rt_path = profile()
        rt = runtime.load(rt_path)
        # Batch 8 is a captured size: no padding, so the kernels are the same with and without.
        plain = run_trace(["--phase", "decode", "--batch", "8", "--context", "512", "--sampler", "greedy"],
                          os.path.join(tmp, "plain"))
        with_rt = run_trace(["--phase", "decode", "--batch", "8", "--context", "512", "--runtime", rt_path],
                            os.path.join(tmp, "rt"))
        host = rt.step_host_s(decode=8)
        self.assertAlmostEqual(with_rt["time_breakdown"]["host_s"], host, delta=1e-9)
        self.assertEqual(plain["time_breakdown"]["host_s"], 0)
        # The host op comes first and the kernels wait for it (the engine's kernel launch gap
        # between the two is the only other difference).
        self.assertAlmostEqual(with_rt["total"]["time_s"] - plain["total"]["time_s"], host, delta=2e-6)
        b = with_rt["time_breakdown"]
        self.assertAlmostEqual(b["kernels_s"] + b["collectives_s"] + b["host_s"] + b["idle_s"], with_rt["total"]["time_s"],
                               delta=1e-12)

    def test_a_decode_batch_pads_to_its_graph(self):
        rt_path = profile()
        p = subprocess.run([sys.executable, GEN, "configs/models/llama-3-8b.yaml", "--layers", "1", "--phase", "decode",
                            "--batch", "5", "--runtime", rt_path], cwd=ROOT, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        import yaml
        t = yaml.safe_load(p.stdout)
        layer = t["ops"][1]["ops"]
        qkv = next(o for o in layer if o["name"] == "qkv")
        att = next(o for o in layer if o["kind"] == "attention")
        self.assertEqual(qkv["m"], 8)          # the dense ops at the captured size
        self.assertEqual(att["batch"], 5)      # attention over the real sequences
        self.assertEqual(t["tokens"], 5)
        self.assertEqual(t["eager_issue"], "0 us")  # replayed from a graph
        # Above the largest captured size the step runs eagerly, unpadded.
        p = subprocess.run([sys.executable, GEN, "configs/models/llama-3-8b.yaml", "--layers", "1", "--phase", "decode",
                            "--batch", "17", "--runtime", rt_path], cwd=ROOT, capture_output=True, text=True)
        t = yaml.safe_load(p.stdout)
        self.assertEqual(t["eager_issue"], "8 us")
        self.assertEqual(next(o for o in t["ops"][1]["ops"] if o["name"] == "qkv")["m"], 17)

    def test_the_runtime_picks_its_all_reduce_kernel(self):
        import yaml
        rt_path = profile(GOOD + CUSTOM_AR)

        def reduces(*extra):
            p = subprocess.run([sys.executable, GEN, "configs/models/llama-3-8b.yaml", "--layers", "1", "--tp", "8",
                                *extra], cwd=ROOT, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            layer = next(o for o in yaml.safe_load(p.stdout)["ops"] if "repeat" in o)["ops"]
            return [(o["name"], o.get("algorithm")) for o in layer if o["name"].endswith(("allreduce", "allreduce_copy"))]
        # A decode of 8 rows of 4096 bf16 (64 KiB) from a graph: one-shot, no copy.
        self.assertEqual(reduces("--phase", "decode", "--batch", "8", "--runtime", rt_path),
                         [("o_proj_allreduce", "one_shot"), ("ffn_allreduce", "one_shot")])
        # A prefill of 64 tokens (512 KiB) runs eagerly: two-shot, after a copy into its buffer.
        self.assertEqual(reduces("--phase", "prefill", "--prompt", "64", "--runtime", rt_path),
                         [("o_proj_allreduce_copy", None), ("o_proj_allreduce", "two_shot"),
                          ("ffn_allreduce_copy", None), ("ffn_allreduce", "two_shot")])
        # From takes_below (1024 tokens of 4096 bf16: 8 MiB) NCCL's; --all-reduce nccl overrides the runtime's;
        # --all-reduce alone takes a profile's kernel without its host work.
        self.assertEqual(reduces("--phase", "prefill", "--prompt", "1024", "--runtime", rt_path),
                         [("o_proj_allreduce", None), ("ffn_allreduce", None)])
        self.assertEqual(reduces("--phase", "decode", "--batch", "8", "--runtime", rt_path, "--all-reduce", "nccl"),
                         [("o_proj_allreduce", None), ("ffn_allreduce", None)])
        self.assertEqual(reduces("--phase", "decode", "--batch", "8", "--all-reduce", rt_path),
                         [("o_proj_allreduce", "one_shot"), ("ffn_allreduce", "one_shot")])
        # A decode step run eagerly (xpusim serve's mixed steps say --launch eager): the copy first.
        self.assertEqual(reduces("--phase", "decode", "--batch", "8", "--all-reduce", rt_path, "--launch", "eager"),
                         [("o_proj_allreduce_copy", None), ("o_proj_allreduce", "one_shot"),
                          ("ffn_allreduce_copy", None), ("ffn_allreduce", "one_shot")])
        # TensorRT-LLM's kernel copies its input in itself: copy_in on the op, no copy before it,
        # although its steps run eagerly.
        p = subprocess.run([sys.executable, GEN, "configs/models/llama-3-8b.yaml", "--layers", "1", "--tp", "4",
                            "--phase", "prefill", "--prompt", "128", "--runtime", "trtllm"], cwd=ROOT, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        layer = next(o for o in yaml.safe_load(p.stdout)["ops"] if "repeat" in o)["ops"]
        self.assertEqual([(o["name"], o.get("algorithm"), o.get("copy_in")) for o in layer if "allreduce" in o["name"]],
                         [("o_proj_allreduce", "two_shot", True), ("ffn_allreduce", "two_shot", True)])
        p = subprocess.run([sys.executable, GEN, "configs/models/llama-3-8b.yaml", "--phase", "train", "--tp", "2",
                            "--all-reduce", rt_path], cwd=ROOT, capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--all-reduce applies to a decoder's --phase prefill or decode", p.stderr)

    def test_eager_issue_reaches_the_engine(self):
        tmp = tempfile.mkdtemp()
        # A short prefill of many small kernels: issued 8 us apart, the step cannot be faster
        # than its kernels' count x 8 us, and it is slower than from a graph.
        slow = profile(GOOD.replace("eager_issue: 8 us", "eager_issue: 200 us"))
        eager = run_trace(["--phase", "prefill", "--prompt", "16", "--runtime", slow], os.path.join(tmp, "e"))
        graph = run_trace(["--phase", "prefill", "--prompt", "16", "--sampler", "greedy"], os.path.join(tmp, "g"))
        kernels = len(eager["ops"]) - 1
        host = runtime.load(slow).step_host_s(prefill_seqs=1, prefill_tokens=16)
        # The host's serial work first, then every kernel issued 200 us after the last: the step
        # lasts at least both, far longer than its kernels from a graph.
        self.assertGreaterEqual(eager["total"]["time_s"], host + kernels * 200e-6)
        self.assertLess(graph["total"]["time_s"], kernels * 200e-6)


class Served(unittest.TestCase):
    def test_a_served_stream_adds_exactly_the_profile(self):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import serve_test
        rt = runtime.load(profile())
        a = serve_test.args(rate=4.0, duration=30.0, rt=rt)
        plain = serve_test.args(rate=4.0, duration=30.0)
        steps, seen = serve_test.AnalyticSteps(), []
        inner = steps.step

        def step(decode=None, prefills=()):
            seen.append((decode[0] if decode else 0, len(prefills), sum(n for n, _ in prefills)))
            return inner(decode, prefills)
        steps.step = step
        reqs = serve.generate_requests(a, 4096)
        server = serve.Server(a, serve_test.Replica(100000), steps)
        finished = server.run(reqs)
        rows, s = serve.summarise(a, reqs, finished, server, serve_test.Replica(100000), steps)
        host = sum(rt.step_host_s(decode=d, prefill_seqs=p, prefill_tokens=n) for d, p, n in seen)
        self.assertAlmostEqual(s["latency_breakdown"]["steps"]["host_s"], host, delta=1e-9)
        self.assertAlmostEqual(server.busy, sum(s["latency_breakdown"]["steps"][k] for k in
                                                ("kernels_s", "collectives_s", "host_s")), delta=1e-9)
        # Alone (one request at a time, far apart), a request's first token is the API server's
        # part, its prefill step with its host work, and the response path, exactly.
        alone = [{"id": str(i), "arrival": 10.0 * i, "prompt_tokens": 200, "output_tokens": 5, "priority": 0}
                 for i in range(3)]
        for aa, extra in ((a, rt.arrival_path_s(200) + rt.first_token_s), (plain, 0.0)):
            st = serve_test.AnalyticSteps()
            srv = serve.Server(aa, serve_test.Replica(100000), st)
            rows, s = serve.summarise(aa, alone, srv.run(alone), srv, serve_test.Replica(100000), st)
            prefill = st.step(None, [(200, 0)])[0]
            host = rt.step_host_s(prefill_seqs=1, prefill_tokens=200) if aa.rt else 0.0
            for r in rows:
                self.assertAlmostEqual(r["ttft_s"], extra + prefill + host, delta=1e-12)
                self.assertAlmostEqual(r["queued_s"], 0.0, delta=1e-12)

    def test_graph_padding_in_the_step_model(self):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import serve_test
        out = tempfile.mkdtemp()
        a = serve_test.args(out=out, max_context=8192, bucket_ratio=1.5, jobs=1, rt=runtime.load(profile()))
        m = serve_test.StepComposition.Fake(a, {"layers": 2}, out)
        # 13 sequences at context 1000 run the graph of 16: 16 rows, the same KV bytes.
        t, e, c = m.step((13, 1000))
        want = m.decode(16, round(1000 * 13 / 16))
        self.assertAlmostEqual(t, want[0], places=12)
        self.assertAlmostEqual(c, want[4], places=12)
        # Above the largest graph (16), no padding.
        self.assertAlmostEqual(m.step((17, 1000))[0], m.decode(17, 1000)[0], places=12)

    def test_closed_loop_keeps_its_clients_busy(self):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import serve_test
        rt = runtime.load(profile())
        for n in (1, 4):
            a = serve_test.args(concurrency=n, num_requests=20, prompt_len="300", output_len="20", rt=rt)
            reqs = serve.generate_requests(a, 4096)
            st = serve_test.AnalyticSteps()
            srv = serve.Server(a, serve_test.Replica(100000), st)
            finished = srv.run(reqs)
            rows, s = serve.summarise(a, reqs, finished, srv, serve_test.Replica(100000), st)
            self.assertEqual(len(rows), 20)
            # Each client's next request leaves when its last answer arrives: never more than n
            # in the system, and with one client never any queueing.
            events = sorted([(round(r["arrival_s"], 9), 1) for r in rows] +
                            [(round(r["arrival_s"] + r["e2e_s"], 9), -1) for r in rows])
            live = peak = 0
            for _, d in events:
                live += d
                peak = max(peak, live)
            self.assertEqual(peak, n)
            if n == 1:
                self.assertAlmostEqual(max(r["queued_s"] for r in rows), 0.0, delta=1e-12)


if __name__ == "__main__":
    unittest.main()
