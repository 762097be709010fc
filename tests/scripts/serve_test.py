#!/usr/bin/env python3
"""scripts/xpusim-serve.py: the scheduler's bookkeeping against an analytic step model (Little's
law, no request lost or counted twice, throughput within the step-time bound, a full KV cache
preempting rather than overflowing, static against continuous batching), bad inputs, and one
small run end to end on the engine. Run by ctest (scripts.serve) with the xpusim binary."""
import argparse
import json
import os
import re
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
SCRIPT = os.path.join(ROOT, "scripts", "xpusim-serve.py")
# A 4-layer Llama-shaped card whose steps simulate in a fraction of a second: the engine's plumbing.
MODEL_TINY = os.path.join(ROOT, "tests", "data", "models", "tiny-llama.yaml")
sys.path.insert(0, os.path.join(ROOT, "python"))  # the source tree's package, as the script and `xpusim serve` run it
import xpusim.serving as serve  # noqa: E402
from xpusim.workloads.serve_memory import kv_bytes_per_token, layer_params  # noqa: E402

serve.engine.BINARY = XPUSIM  # and the engine beside it (its build's native part), as --xpusim gives it


class AnalyticSteps:
    """Step times that grow with the batch and its tokens, as the engine's do."""

    def __init__(self):
        self.cache, self.simulated, self.bucket_checks, self.fingerprint = {}, 0, [], "analytic"

    def own(self):
        return len(self.cache)

    @staticmethod
    def time(phase, batch, length):
        if phase == "prefill":
            return 1e-3 + 4e-5 * batch * length
        return 5e-3 + 3e-5 * batch + 2e-9 * batch * length

    def step(self, decode=None, prefills=()):
        t = self.time("decode", *decode) if decode else 0.0
        for n, past in prefills:
            t += self.time("prefill", 1, n) + 1e-9 * n * past
        return t, 600.0 * t, 0.0


class Replica:
    def __init__(self, blocks):
        self.blocks, self.kv_bytes_per_token, self.weights_per_gpu = blocks, 1, 1
        self.card = {"name": "m", "hidden": 4096, "layers": 32}


def args(**kw):
    a = argparse.Namespace(block_size=16, scheduler="continuous", max_seqs=64, max_batched_tokens=8192,
                           slo_ttft=None, slo_tpot=None, config="c", model="m", tp=1, pp=1, weights="bf16", math=None,
                           kv="bf16", rate=8.0, duration=120.0, arrivals="poisson", prompt_len="uniform:32:1024",
                           output_len="uniform:8:256", seed=3, rates=None, out=None, max_context=4096, replicas=1,
                           router="least-loaded", disaggregate=None, kv_link="nvlink", preemption="recompute",
                           swap_space=4.0, swap_bandwidth=64.0, jobs=0, step_cache=None, set=[], kv_page=0,
                           rt=None, sampler=None, concurrency=0, num_requests=None, quiet=True,
                           progress=serve.CLI.Progress(-1))
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def run(a, blocks=100000, reqs=None):
    reqs = reqs if reqs is not None else serve.generate_requests(a, 4096)
    steps = AnalyticSteps()
    server = serve.Server(a, Replica(blocks), steps)
    finished = server.run(reqs)
    rows, s = serve.summarise(a, reqs, finished, server, Replica(blocks), steps)
    return reqs, finished, server, rows, s


class Scheduler(unittest.TestCase):
    def test_no_request_is_lost_or_counted_twice(self):
        for sched in ("continuous", "chunked", "static"):
            reqs, finished, _, rows, _ = run(args(scheduler=sched))
            self.assertGreater(len(reqs), 500)
            self.assertEqual(sorted(r["id"] for r in reqs), sorted(r["id"] for r in rows))
            for row in rows:
                self.assertGreaterEqual(row["ttft_s"], 0)
                self.assertGreaterEqual(row["e2e_s"], row["ttft_s"])

    def test_littles_law_on_a_steady_run(self):
        # The mean number in the system, integrated step by step as the scheduler saw it, equals
        # the arrival rate times the mean time in the system.
        for sched in ("continuous", "chunked"):
            _, finished, server, rows, s = run(args(rate=6.0, duration=300.0, scheduler=sched))
            lam = len(rows) / server.now
            w = sum(r["e2e_s"] for r in rows) / len(rows)
            self.assertAlmostEqual(s["mean_in_system"], lam * w, delta=0.01 * lam * w)

    def test_throughput_never_exceeds_the_step_time_bound(self):
        a = args(rate=50.0, duration=60.0, max_seqs=32)
        _, finished, server, rows, s = run(a)
        # No decode step emits more than max_seqs tokens, and none is faster than the analytic
        # step at its batch: tokens per second stay under the best batch's rate.
        bound = max(b / AnalyticSteps.time("decode", b, 1) for b in range(1, a.max_seqs + 1))
        self.assertLessEqual(s["output_tokens_per_s"], bound)
        self.assertGreater(s["output_tokens_per_s"], 0.3 * bound)  # and a saturated server gets near it

    def test_a_full_kv_cache_preempts_rather_than_overflows(self):
        for sched in ("continuous", "chunked"):
            a = args(rate=20.0, duration=30.0, prompt_len="uniform:200:400", output_len="uniform:200:400",
                     scheduler=sched, max_batched_tokens=512 if sched == "chunked" else 8192)
            blocks = 200  # 3,200 tokens: room for about five requests at a time
            reqs, finished, server, rows, s = run(a, blocks=blocks)
            self.assertGreater(s["preemptions"], 0)
            self.assertLessEqual(server.max_used, blocks)
            self.assertEqual(len(finished), len(reqs))
            self.assertEqual(server.free, blocks)  # every block back at the end

    def test_swapped_requests_keep_their_work(self):
        kw = dict(rate=20.0, duration=30.0, prompt_len="uniform:200:400", output_len="uniform:200:400")
        steps, prefilled = AnalyticSteps(), []
        inner = steps.step

        def step(decode=None, prefills=()):
            prefilled.append(sum(n for n, _ in prefills))
            return inner(decode, prefills)
        steps.step = step
        a = args(preemption="swap", **kw)
        reqs = serve.generate_requests(a, 4096)
        server = serve.Server(a, Replica(200), steps)
        finished = server.run(reqs)
        self.assertEqual(len(finished), len(reqs))
        self.assertGreater(server.swaps, 0)
        self.assertEqual(server.swaps, server.preemptions)  # host memory to spare: never recomputed
        # Every prompt prefilled once: a swapped request comes back with its cache.
        self.assertEqual(sum(prefilled), sum(r["prompt_tokens"] for r in reqs))
        self.assertEqual(server.free, 200)
        self.assertEqual(server.swap_free, 4 * 2 ** 30)  # every swapped cache came back
        # Each swap copies out and back: 16 tokens x 1 byte per block (the test replica), at 64 GB/s.
        self.assertGreater(server.swap_s, 2 * server.swaps * 16 / 64e9 * 0.99)
        # Without host memory the same run recomputes.
        a = args(preemption="swap", swap_space=0, **kw)
        server = serve.Server(a, Replica(200), AnalyticSteps())
        server.run(reqs)
        self.assertEqual(server.swaps, 0)
        self.assertGreater(server.preemptions, 0)

    def test_chunked_steps_keep_to_the_token_budget(self):
        a = args(rate=30.0, duration=20.0, scheduler="chunked", max_batched_tokens=512,
                 prompt_len="uniform:100:3000")
        steps, seen = AnalyticSteps(), []
        inner = steps.step

        def step(decode=None, prefills=()):
            seen.append(((decode[0] if decode else 0), [n for n, _ in prefills], [p for _, p in prefills]))
            return inner(decode, prefills)
        steps.step = step
        reqs = serve.generate_requests(a, 4096)
        finished = serve.Server(a, Replica(100000), steps).run(reqs)
        self.assertEqual(len(finished), len(reqs))
        self.assertTrue(all(b + sum(chunks) <= 512 for b, chunks, _ in seen))
        self.assertTrue(any(b and chunks for b, chunks, _ in seen), "no step mixed decodes and a chunk")
        self.assertTrue(any(p > 0 for _, _, pasts in seen for p in pasts), "no chunk came after an earlier one")
        # Every prompt token prefilled exactly once (no preemption here).
        self.assertEqual(sum(sum(chunks) for _, chunks, _ in seen), sum(r["prompt_tokens"] for r in reqs))

    def test_chunked_prefill_keeps_decodes_going(self):
        # Long prompts stall every running decode for a whole prefill under continuous batching;
        # in chunks they cost the decodes a chunk's time per step (Sarathi-Serve's point).
        kw = dict(rate=3.0, duration=200.0, prompt_len="uniform:3000:3800", output_len="uniform:32:64")
        _, _, _, _, cont = run(args(**kw))
        _, _, _, rows, chunk = run(args(scheduler="chunked", max_batched_tokens=512, **kw))
        self.assertLess(chunk["tbt_s"]["p99"], 0.5 * cont["tbt_s"]["p99"])
        self.assertLess(chunk["tbt_s"]["max"], 0.5 * cont["tbt_s"]["max"])
        # The decodes' tokens all counted: one gap per output token after each request's first.
        self.assertEqual(chunk["tbt_s"]["tokens"], sum(r["output_tokens"] - 1 for r in rows))
        self.assertGreater(chunk["ttft_s"]["p50"], cont["ttft_s"]["p50"])  # and first tokens come later

    def test_static_batching_waits_where_continuous_batching_admits(self):
        _, _, _, _, cont = run(args(rate=4.0, duration=120.0))
        _, _, _, _, stat = run(args(rate=4.0, duration=120.0, scheduler="static"))
        self.assertGreater(stat["ttft_s"]["mean"], 2 * cont["ttft_s"]["mean"])

    def test_a_request_the_cache_cannot_hold_is_an_error(self):
        reqs = [{"id": "big", "arrival": 0.0, "prompt_tokens": 1000, "output_tokens": 10, "priority": 0}]
        with self.assertRaises(serve.ServeError) as e:
            run(args(), blocks=10, reqs=reqs)
        self.assertIn("request big", str(e.exception))


def run_cluster(a, blocks=100000, link=(50e9, 5e-6)):
    reqs = serve.generate_requests(a, 4096)
    steps = AnalyticSteps()
    where = serve.cluster  # the module Cluster looks its links up in
    saved = where.kv_link, where.stage_path
    where.kv_link = lambda _a, _path: link  # the config's NVLink, without the engine
    where.stage_path = lambda _a: "nvlink"
    try:
        cluster = serve.Cluster(a, Replica(blocks), steps)
        finished = cluster.run(reqs)
    finally:
        where.kv_link, where.stage_path = saved
    rows, s = serve.summarise(a, reqs, finished, cluster, Replica(blocks), steps)
    return reqs, cluster, rows, s


class Replicas(unittest.TestCase):
    def test_a_pipeline_interleaves_its_engines_steps(self):
        # Under load a replica of two stages runs two engines' batches at once, each through
        # both stages: about twice the throughput where the batch limit binds, never more.
        kw = dict(rate=60.0, duration=60.0, max_seqs=16, output_len="uniform:64:256")
        reqs, one, _, s1 = run_cluster(args(**kw))
        reqs, two, rows, s2 = run_cluster(args(pp=2, **kw))
        self.assertEqual(sorted(r["id"] for r in reqs), sorted(r["id"] for r in rows))
        ratio = s2["output_tokens_per_s"] / s1["output_tokens_per_s"]
        self.assertGreater(ratio, 1.6)
        self.assertLessEqual(ratio, 2.0)
        self.assertEqual([x["name"] for x in s2["replicas"]], ["0.0", "0.1"])
        # The first stage takes one step at a time: its busy time fits in the run, and it is
        # nearly always busy when the stream saturates both engines.
        pipe, = two.pipes
        self.assertLessEqual(pipe.occupied, two.now + 1e-9)
        self.assertGreater(pipe.occupied / two.now, 0.8)
        # Each engine has half the cache; the activations crossed the link at every step.
        for e in two.servers:
            self.assertEqual(e.blocks, 50000)
            self.assertLessEqual(e.max_used, e.blocks)
        steps = sum(sum(e.step_count.values()) for e in two.servers)
        self.assertGreater(s2["pipeline"]["send_s"], steps * 5e-6)
        # Little's law across the engines.
        self.assertAlmostEqual(s2["mean_in_system"] / (s2["throughput_rps"] * s2["e2e_s"]["mean"]), 1.0, delta=0.05)

    def test_a_pipeline_does_not_speed_up_one_request(self):
        reqs = [{"id": "a", "arrival": 0.0, "prompt_tokens": 500, "output_tokens": 100}]
        one = serve.Cluster(args(), Replica(100000), AnalyticSteps())
        where = serve.cluster
        saved = where.kv_link, where.stage_path
        where.kv_link, where.stage_path = (lambda _a, _p: (50e9, 5e-6)), (lambda _a: "nvlink")
        try:
            two = serve.Cluster(args(pp=2), Replica(100000), AnalyticSteps())
        finally:
            where.kv_link, where.stage_path = saved
        r1, = one.run(reqs)
        r2, = two.run(reqs)
        # Alone, a request's steps cross both stages one after the other, plus a hand-off each.
        extra = r2.finish - r1.finish
        self.assertGreater(extra, 100 * 5e-6)
        self.assertLess(extra, 100 * (5e-6 + 4096 * 2 / 50e9) * 1.01 + 500 * 4096 * 2 / 50e9)

    def test_two_replicas_serve_what_one_cannot(self):
        kw = dict(rate=40.0, duration=60.0, max_seqs=16)
        reqs, one, rows1, s1 = run_cluster(args(**kw))
        reqs, two, rows2, s2 = run_cluster(args(replicas=2, **kw))
        for rows in (rows1, rows2):
            self.assertEqual(sorted(r["id"] for r in reqs), sorted(r["id"] for r in rows))
        self.assertGreater(s2["throughput_rps"], 1.5 * s1["throughput_rps"])
        self.assertLess(s2["e2e_s"]["p50"], s1["e2e_s"]["p50"])
        self.assertEqual(len(s2["replicas"]), 2)
        self.assertEqual(sum(x["requests"] for x in s2["replicas"]), len(reqs))
        lam, w = len(rows2) / two.now, sum(r["e2e_s"] for r in rows2) / len(rows2)
        self.assertAlmostEqual(s2["mean_in_system"], lam * w, delta=0.01 * lam * w)

    def test_round_robin_takes_turns(self):
        reqs, cluster, rows, s = run_cluster(args(replicas=3, router="round-robin", rate=5.0, duration=30.0))
        counts = [x["requests"] for x in s["replicas"]]
        self.assertLessEqual(max(counts) - min(counts), 1)

    def test_disaggregated_prefill_and_decode(self):
        kw = dict(rate=3.0, duration=200.0, prompt_len="uniform:3000:3800", output_len="uniform:32:64")
        link = (50e9, 5e-6)
        reqs, cluster, rows, s = run_cluster(args(disaggregate=(1, 1), **kw), link=link)
        self.assertEqual(sorted(r["id"] for r in reqs), sorted(r["id"] for r in rows))
        pre, dec = s["replicas"]
        self.assertEqual((pre["role"], dec["role"]), ("prefill", "decode"))
        self.assertEqual(pre["steps"]["decode"] + pre["steps"]["mixed"], 0)  # prefill replicas only prefill
        self.assertEqual(dec["steps"]["prefill"] + dec["steps"]["mixed"], 0)  # and decode ones only decode
        # Each request's cache crossed the link once: its prompt and first token, at the link's rate.
        kv = Replica(1).kv_bytes_per_token
        want = sum(link[1] + (r["prompt_tokens"] + 1) * kv / link[0] for r in reqs if r["output_tokens"] > 1)
        self.assertAlmostEqual(s["kv_transfer_s"], want, delta=1e-9 * len(reqs))
        # Little's law over the whole system, requests in flight between the pools included.
        lam, w = len(rows) / cluster.now, sum(r["e2e_s"] for r in rows) / len(rows)
        self.assertAlmostEqual(s["mean_in_system"], lam * w, delta=0.01 * lam * w)
        # The decodes no longer wait behind prefills: the longest time between tokens stays near
        # a decode step where two colocated replicas stall theirs for whole prompts.
        _, _, _, both = run_cluster(args(replicas=2, **kw))
        self.assertLess(s["tbt_s"]["max"], 0.1 * both["tbt_s"]["max"])
        self.assertLess(s["tpot_s"]["p99"], 0.5 * both["tpot_s"]["p99"])


class StepComposition(unittest.TestCase):
    """StepModel's algebra on a fake engine: points as simulated, parts added as documented."""

    class Fake(serve.StepModel):
        def content_fingerprint(self):
            return "fake"

        def simulate(self, phase, batch, length, past=0, kernels_in=None, kernels_out=None):
            # The collectives take a tenth of the dense part's time.
            if phase == "decode":
                attn = 1e-7 * batch * length
                return [0.01 + 1e-4 * batch + attn, 7.0 * (0.01 + 1e-4 * batch) + 9.0 * attn, attn, 9.0 * attn,
                        0.1 * (0.01 + 1e-4 * batch)]
            attn = 1e-9 * batch * length * (length / 2 + past)
            if phase == "attention":  # the kernel alone
                return [attn, 9.0 * attn, attn, 9.0 * attn, 0.0]
            dense = 0.01 + 2e-5 * batch * length
            return [dense + attn, 7.0 * dense + 9.0 * attn, attn, 9.0 * attn, 0.1 * dense]

    def model(self, jobs=2):
        out = tempfile.mkdtemp()
        a = args(out=out, max_context=8192, bucket_ratio=1.5, jobs=jobs)
        return self.Fake(a, {"layers": 2}, out)

    def test_points_and_parts(self):
        m = self.model()
        n = m.lengths[5]
        # On the ladders' points a step is its simulated point.
        t, e, c = m.step((16, n))
        self.assertAlmostEqual(c, m.simulate("decode", 16, n)[4], places=12)
        self.assertAlmostEqual(t, m.simulate("decode", 16, n)[0], places=12)
        self.assertAlmostEqual(e, m.simulate("decode", 16, n)[1], places=12)
        self.assertAlmostEqual(m.step(None, [(n, 0)])[0], m.simulate("prefill", 1, n)[0], places=12)
        # Between them, linear: halfway between batch points 16 and 24.
        self.assertAlmostEqual(m.step((20, n))[0], (m.step((16, n))[0] + m.step((24, n))[0]) / 2, places=12)
        # A prefill of two sequences: the dense part at their rows, each one's attention.
        a1 = m.simulate("prefill", 1, n)
        dense2 = m.step(None, [(2 * n, 0)])[0] - m.attention(2 * n, 0)[0]
        self.assertAlmostEqual(m.step(None, [(n, 0), (n, 0)])[0], dense2 + 2 * a1[2], places=12)
        # A chunk after cached tokens: its attention as the kernel alone adds for the past
        # (here n x (n / 2 + past) pairs: three times the causal block's).
        self.assertAlmostEqual(m.attention(n, n)[0], 3 * a1[2], places=12)
        self.assertAlmostEqual(m.attention(n, n)[1], 27 * a1[2], places=12)
        # Between the ladders' points an attention goes with its query-key pairs, so the fake's
        # (pairs x 1 ns) comes back exactly off the points too.
        n2, past2 = (m.lengths[5] + m.lengths[6]) // 2, (m.lengths[3] + m.lengths[4]) // 2
        self.assertAlmostEqual(m.attention(n2, 0)[0], 1e-9 * n2 * n2 / 2, places=12)
        self.assertAlmostEqual(m.attention(n2, past2)[0], 1e-9 * n2 * (n2 / 2 + past2), places=12)
        # Beyond the ladder's top, extended along its last two points (rows grow linearly).
        top = m.lengths[-1]
        self.assertAlmostEqual(m.dense(2 * top)[0], 0.01 + 2e-5 * 2 * top, places=9)
        # A mixed step: the decode step, the dense part's growth, the chunk's attention.
        b = 8
        mixed = m.step((b, n), [(n, 0)])[0]
        growth = (m.line(b + n)[0] - m.line(b + n)[2]) - (m.line(b)[0] - m.line(b)[2])
        self.assertAlmostEqual(mixed, m.step((b, n))[0] + growth + a1[2], places=12)
        self.assertGreater(mixed, m.step((b, n))[0])

    def test_each_point_simulated_once_in_parallel(self):
        m = self.model(jobs=4)
        for b in (3, 17, 40):
            m.step((b, 1000), [(300, 200)])
        count = m.simulated
        self.assertTrue(any(k.split()[1] == "attention" for k in m.cache))
        self.assertEqual(count, len(m.cache))
        for b in (3, 17, 40):
            m.step((b, 1000), [(300, 200)])
        self.assertEqual(m.simulated, count)
        # The cache file holds every point, and a new model on the same folder simulates none.
        again = self.Fake(m.a, {"layers": 2}, m.out)
        again.step((17, 1000), [(300, 200)])
        self.assertEqual(again.simulated, 0)


class RateSweep(unittest.TestCase):
    def test_rates_csv_and_a_self_contained_page(self):
        out = tempfile.mkdtemp()
        a = args(rates="2,8,30", duration=60.0, out=out, max_context=4096)
        steps = AnalyticSteps()
        serve.sweep_rates(a, serve.parse_rates(a.rates), {"name": "m"}, Replica(100000), steps)
        with open(os.path.join(out, "rates.csv")) as f:
            rows = f.read().splitlines()
        self.assertEqual(len(rows), 4)
        cols = rows[0].split(",")
        data = [dict(zip(cols, r.split(","))) for r in rows[1:]]
        self.assertEqual([float(d["rate_rps"]) for d in data], [2, 8, 30])
        # Heavier traffic: more served, and the tail of the first-token latency no shorter.
        served = [float(d["throughput_rps"]) for d in data]
        self.assertLess(served[0], served[1])
        self.assertGreaterEqual(float(data[2]["ttft_p99_s"]), float(data[0]["ttft_p99_s"]))
        for rate in ("2", "8", "30"):
            self.assertTrue(os.path.exists(os.path.join(out, f"rate-{rate}", "results.jsonl")))
        with open(os.path.join(out, "serve.html")) as f:
            page = f.read()
        figures = dict(re.findall(r'<figure class="chart" id="([^"]+)"[^>]*>(.*?)</figure>', page, re.S))
        self.assertEqual(list(figures), ["latency", "ttft-cdf", "e2e-cdf"])
        # Four latency lines with a marker per rate; a CDF line per rate twice, each in its legend.
        self.assertEqual(len(re.findall(r'<g id="latency-points-\d">', figures["latency"])), 4)
        legend = lambda svg: re.findall(r"<text[^>]*>([^<]*)</text>", svg[svg.find("-legend_1"):])
        self.assertEqual(legend(figures["ttft-cdf"]), ["2 req/s", "8 req/s", "30 req/s"])
        self.assertEqual(legend(figures["latency"]), ["TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"])
        self.assertRegex(re.search(r'data-yticks="([^"]*)"', page).group(1), r"^[0-9.]+ [mu]?s(\|[0-9.]+ [mu]?s)*$")
        self.assertNotIn("http://", re.sub(r'xmlns(:xlink)?="http://www.w3.org/[^"]*"', "", page))  # nothing fetched
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            self.skipTest("chromium not installed: HTML not rendered")
        png = os.path.join(out, "serve.png")
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                            f"--screenshot={png}", "file://" + os.path.join(out, "serve.html")],
                           capture_output=True, timeout=120)
        self.assertTrue(os.path.exists(png), r.stderr)
        self.assertGreater(os.path.getsize(png), 20000, "a near-empty screenshot")

    def test_bad_rates(self):
        with self.assertRaises(serve.ServeError):
            serve.parse_rates("1,x")
        with self.assertRaises(serve.ServeError):
            serve.parse_rates("0,2")


class StepCacheFile(unittest.TestCase):
    """The step cache is keyed by content (python/xpusim/serving/step_cache.py) and its file is checked."""

    def fingerprint(self, config, model, sets=()):
        serve.engine.resolved.cache_clear()
        return serve.StepModel.content_fingerprint(argparse.Namespace(a=args(config=config, model=model, set=list(sets))))

    def test_an_edit_in_place_changes_the_key(self):
        tmp = tempfile.mkdtemp()
        card, config = os.path.join(tmp, "llama.yaml"), os.path.join(tmp, "gpu.yaml")
        shutil.copy(os.path.join(ROOT, "configs", "models", "llama-3-8b.yaml"), card)
        shutil.copy(os.path.join(ROOT, "configs", "h100-sxm.yaml"), config)
        shutil.copytree(os.path.join(ROOT, "configs", "energy"), os.path.join(tmp, "energy"))
        first = self.fingerprint(config, card)
        self.assertEqual(self.fingerprint(config, card), first)
        # The same card and config elsewhere (only where each value came from changes): the same key.
        elsewhere = os.path.join(tmp, "copy")
        os.mkdir(elsewhere)
        shutil.copy(card, elsewhere)
        shutil.copy(config, elsewhere)
        shutil.copytree(os.path.join(tmp, "energy"), os.path.join(elsewhere, "energy"))
        self.assertEqual(self.fingerprint(os.path.join(elsewhere, "gpu.yaml"), os.path.join(elsewhere, "llama.yaml")), first)
        # The card edited in place (32 layers to 2), the config edited, or an override: new keys.
        with open(card) as f:
            text = f.read()
        with open(card, "w") as f:
            f.write(text.replace("layers: 32", "layers: 2"))
        self.assertNotEqual(self.fingerprint(config, card), first)
        with open(card, "w") as f:
            f.write(text)
        self.assertEqual(self.fingerprint(config, card), first)
        self.assertNotEqual(self.fingerprint(config, card, ["sm.count=66"]), first)
        with open(config) as f:
            text = f.read()
        with open(config, "w") as f:
            f.write(text.replace("count: 132", "count: 114", 1))
        self.assertNotEqual(self.fingerprint(config, card), first)
        with open(config, "w") as f:
            f.write(text)
        self.assertEqual(self.fingerprint(config, card), first)
        # The energy table it names, edited: a new key (cached steps carry their energy).
        table = os.path.join(tmp, "energy", "tsmc-4n-h100.yaml")
        with open(table) as f:
            energy = f.read()
        with open(table, "w") as f:
            f.write(energy + "\n# edited\n")
        self.assertNotEqual(self.fingerprint(config, card), first)

    def bad_cache(self, text):
        out = tempfile.mkdtemp()
        path = os.path.join(out, "step-cache.json")
        with open(path, "w") as f:
            f.write(text)
        a = args(out=out, max_context=8192, bucket_ratio=1.5, step_cache=path)
        with self.assertRaises(serve.ServeError) as e:
            StepComposition.Fake(a, {"layers": 2}, out)
        self.assertIn(path, str(e.exception))
        return str(e.exception)

    def test_a_step_that_is_not_finite_is_never_cached(self):
        class NaNSteps(StepComposition.Fake):
            def simulate(self, phase, batch, length, past=0, kernels_in=None, kernels_out=None):
                return [float("nan"), 1.0, 0.0, 0.0, 0.0]
        out = tempfile.mkdtemp()
        m = NaNSteps(args(out=out, max_context=8192, bucket_ratio=1.5), {"layers": 2}, out)
        with self.assertRaises(serve.ServeError) as e:
            m.step((4, 1000))
        self.assertIn("not finite and non-negative, so not cached", str(e.exception))
        self.assertFalse(os.path.exists(m.path))

    def test_a_damaged_cache_is_an_error_naming_it(self):
        good = StepComposition.Fake(args(out=tempfile.mkdtemp(), max_context=8192, bucket_ratio=1.5), {"layers": 2},
                                    tempfile.mkdtemp())
        good.step((4, 1000))
        with open(good.path) as f:
            text = f.read()
        self.assertIn("not valid JSON", self.bad_cache(text[: len(text) // 2]))  # truncated
        self.assertIn("not a JSON object", self.bad_cache("[1, 2]"))
        for value in ("NaN", "-0.5", "Infinity", '"1 ms"', "[]"):
            msg = self.bad_cache('{"fake decode b4 n1024": [%s, 1, 0, 0, 0]}' % value if value != "[]" else
                                 '{"fake decode b4 n1024": []}')
            self.assertIn("fake decode b4 n1024", msg)
            self.assertIn("finite, non-negative", msg)


class BadInputs(unittest.TestCase):
    def run_serve(self, *extra):
        return subprocess.run([sys.executable, SCRIPT, "--xpusim", XPUSIM, "--config",
                               os.path.join(ROOT, "configs", "h100-sxm.yaml"), "--model",
                               os.path.join(ROOT, "configs", "models", "llama-3-8b.yaml"), "--out",
                               tempfile.mkdtemp(), *extra], capture_output=True, text=True)

    def requests_file(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        f.write(text)
        f.close()
        return f.name

    def test_errors_name_the_file_line_and_field(self):
        cases = [
            ('{"arrival": 0, "prompt_tokens": 10, "output_tokens": 5}\n{"arrival": 1, "prompt_tokens": 10,\n',
             ":2: not a JSON object"),
            ('{"arrival": 0, "prompt_tokens": 10, "output_tokens": 5, "prompt": 3}\n', ":1: unknown field 'prompt'"),
            ('{"arrival": 0, "prompt_tokens": 10}\n', ":1: missing field 'output_tokens'"),
            ('{"arrival": -1, "prompt_tokens": 10, "output_tokens": 5}\n', ":1: field 'arrival'"),
            ('{"arrival": 0, "prompt_tokens": 0, "output_tokens": 5}\n', ":1: field 'prompt_tokens'"),
            ('{"arrival": 0, "prompt_tokens": 8000, "output_tokens": 500}\n', ":1: prompt_tokens + output_tokens = 8500"),
            ('{"id": "a", "arrival": 0, "prompt_tokens": 1, "output_tokens": 1}\n'
             '{"id": "a", "arrival": 1, "prompt_tokens": 1, "output_tokens": 1}\n', ":2: field 'id' 'a' repeats line 1"),
        ]
        for text, want in cases:
            path = self.requests_file(text)
            p = self.run_serve("--requests", path)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn(path + want, p.stderr)
            self.assertNotIn("Traceback", p.stderr)

    def test_unbounded_or_empty_inputs_are_refused_before_any_work(self):
        # Each of these ran until memory ran out, hung, or read zero as "not given".
        for extra, want in ((["--rate", "nan"], "--rate nan: must be a positive, finite number"),
                            (["--duration", "inf"], "--duration inf: must be a positive, finite number"),
                            (["--rate", "-1"], "--rate -1.0: must be"),
                            (["--rate", "1e6", "--duration", "1e6"], "more than 10000000"),
                            (["--rates", "1,1e9", "--duration", "100"], "--rates 1,1e9 x --duration 100.0: more than"),
                            (["--replicas", "1000000"], "--replicas 1000000: must be 1 to 4096"),
                            (["--disaggregate", "4000:4000"], "at most 4096 replicas"),
                            (["--kv-blocks", "0"], "--kv-blocks 0: must be at least 1"),
                            (["--concurrency", "4", "--num-requests", "0"], "--num-requests and --concurrency"),
                            (["--requests", "/dev/zero"], "/dev/zero:1: a line longer than")):
            p = self.run_serve(*extra)
            self.assertEqual(p.returncode, 1, (extra, p.stderr))
            self.assertIn(want, p.stderr)
            self.assertNotIn("Traceback", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_a_request_the_cache_cannot_hold_is_refused_when_read(self):
        # 40 blocks of 16 tokens hold 640 tokens: a 700-token request passed --check before and
        # failed in the scheduler; now --check (and a run) refuse it, naming its line.
        path = self.requests_file('{"arrival": 0, "prompt_tokens": 100, "output_tokens": 10}\n'
                                  '{"arrival": 1, "prompt_tokens": 650, "output_tokens": 50}\n')
        for extra in (["--check"], []):
            p = self.run_serve("--requests", path, "--kv-blocks", "40", *extra)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(path + ":2: request 1's 700 tokens need 44 KV blocks of 16, more than the 40", p.stderr)
        p = self.run_serve("--kv-blocks", "40", "--prompt-len", "uniform:600:700", "--output-len", "uniform:8:16",
                           "--check")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("--prompt-len/--output-len: request", p.stderr)
        p = self.run_serve("--requests", path, "--kv-blocks", "44", "--check")
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_an_impossible_slo(self):
        a = args(slo_tpot=1e-3)  # the analytic decode step takes at least 5 ms
        reqs = serve.generate_requests(a, 4096)
        with self.assertRaises(serve.ServeError) as e:
            serve.check_slos(a, AnalyticSteps(), reqs)
        self.assertIn("--slo-tpot 1 ms: impossible", str(e.exception))
        a = args(slo_ttft=1e-4)
        with self.assertRaises(serve.ServeError) as e:
            serve.check_slos(a, AnalyticSteps(), reqs)
        self.assertIn("--slo-ttft 0.1 ms: impossible", str(e.exception))
        serve.check_slos(args(slo_ttft=1.0, slo_tpot=0.1), AnalyticSteps(), reqs)  # possible ones pass

    def test_a_model_that_does_not_fit(self):
        p = subprocess.run([sys.executable, SCRIPT, "--xpusim", XPUSIM, "--config",
                            os.path.join(ROOT, "configs", "h100-sxm.yaml"), "--model",
                            os.path.join(ROOT, "configs", "models", "llama-3-70b.yaml"), "--out", tempfile.mkdtemp()],
                           capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("does not fit", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_a_pipeline_holds_what_one_stage_cannot(self):
        # Llama-3-70B in bf16 is 141 GB, more than one H100's 80; two stages hold half each.
        base = ["--config", os.path.join(ROOT, "configs", "h100-sxm.yaml"), "--model",
                os.path.join(ROOT, "configs", "models", "llama-3-70b.yaml"), "--check"]
        p = subprocess.run([sys.executable, SCRIPT, "--xpusim", XPUSIM, *base], capture_output=True, text=True)
        self.assertIn("does not fit", p.stderr)
        p = subprocess.run([sys.executable, SCRIPT, "--xpusim", XPUSIM, *base, "--pp", "2"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ok: llama-3-70b fits", p.stdout)
        a = args(tp=1, pp=2, config=base[1], weights="bf16", kv="bf16", gpu_memory_utilization=0.9,
                 activation_reserve=4.0, kv_blocks=None, set=[])
        card = serve.load_card(base[3])
        pipe, tp2 = serve.Replica(a, card), serve.Replica(args(**{**vars(a), "tp": 2, "pp": 1}), card)
        # A stage's GPU holds 40 layers' weights and KV heads and one end (the embedding or the
        # LM head): what a GPU of TP 2 holds as half of all 80 layers and both ends.
        self.assertAlmostEqual(pipe.weights_per_gpu,
                               (40 * serve.layer_params(card) + card["vocab"] * card["hidden"]) * 2, delta=1)
        self.assertAlmostEqual(pipe.weights_per_gpu, tp2.weights_per_gpu, delta=1)
        self.assertEqual(pipe.kv_bytes_per_token, 2 * 40 * 8 * 128 * 2)
        self.assertEqual(pipe.kv_bytes_per_token, tp2.kv_bytes_per_token)

    def test_bad_flags(self):
        for extra, want in ((["--tp", "0"], "--tp must be at least 1"), (["--kv", "fp9"], "--kv fp9: unknown format"),
                            (["--prompt-len", "uniform:9"], "--prompt-len uniform:9"),
                            (["--slo-ttft", "-1 s"], "must be a positive time"), (["--replicas", "0"], "--replicas 0: must be 1 to"),
                            (["--disaggregate", "2"], "--disaggregate 2: expected P:D"),
                            (["--disaggregate", "1:1", "--scheduler", "static"], "not static"),
                            (["--pp", "0"], "--pp must be at least 1"), (["--pp", "33"], "--pp 33: more stages than"),
                            (["--rat", "2"], "unknown option --rat (did you mean --rate?)")):
            p = self.run_serve(*extra)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn(want, p.stderr)

    def test_flags_as_the_other_commands_take_them(self):
        # A mistyped flag or choice: one line naming it and what it may have meant, exit 2 (usage).
        for extra, want in ((["--schedular", "chunked"], "unknown option --schedular (did you mean --scheduler?)"),
                            (["--scheduler", "chunkd"], "--scheduler chunkd: not one of continuous, chunked, static "
                                                        "(did you mean chunked?)"),
                            (["--slo-ttft", "0.5"], "'0.5': a time needs its unit"),
                            (["--slo-tpot", "50 mins"], "unknown unit 'mins'"),
                            (["--slo-ttft", "0 ms"], "must be a positive time"),
                            (["--slo-ttft", "inf s"], "expected a time with its unit"),
                            (["-q", "-v"], "-q and -v: give one of them")):
            p = self.run_serve(*extra)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(want, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)  # no usage dump
        # Times take their units, as every other command's do.
        a = serve.CLI
        self.assertEqual([a.time_value(x) for x in ("500ms", "0.5 s", "200us", "1e3 ns")], [0.5, 0.5, 2e-4, 1e-6])

    def test_a_replica_is_billed_for_its_own_gpus(self):
        # A TP=1 replica on an 8-GPU system config simulates one GPU, so its steps' energy is that
        # GPU's, not eight GPUs' with seven idle; TP=4 simulates four.
        steps = serve.StepModel.__new__(serve.StepModel)
        steps.a = args(tp=1, set=["hbm.capacity=80GB"])
        self.assertEqual(steps.sets(), ["hbm.capacity=80GB", "system.gpus_per_domain=1", "system.domains=1"])
        steps.a = args(tp=4)
        self.assertEqual(steps.sets(), ["system.gpus_per_domain=4", "system.domains=1", "system.detail=representative"])

    def test_goodput_only_under_an_slo(self):
        a = args(rate=4.0, duration=10.0)
        _, _, _, _, s = run(a)
        self.assertIsNone(s["goodput_rps"])  # no SLO: no goodput, rather than the throughput under another name
        self.assertGreater(s["average_busy_power_w"], s["average_power_w"] * 0.999)
        _, _, _, _, s = run(args(rate=4.0, duration=10.0, slo_ttft=10.0))
        self.assertAlmostEqual(s["goodput_rps"], s["throughput_rps"])


class Command(unittest.TestCase):
    def test_xpusim_serve_runs_the_driver_with_this_binary(self):
        p = subprocess.run([XPUSIM, "serve", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("--requests", p.stdout)
        self.assertIn("serve", subprocess.run([XPUSIM, "--help"], capture_output=True, text=True).stdout)
        p = subprocess.run([XPUSIM, "serve", "--config", os.path.join(ROOT, "configs", "h100-sxm.yaml"), "--model",
                            os.path.join(ROOT, "configs", "models", "llama-3-8b.yaml"), "--max-seqs", "0"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--max-seqs must be at least 1", p.stderr)


class KernelLeaders(unittest.TestCase):
    """Points simulated with the kernel cache: a decode point waits for the first point of its
    phase and batch and reuses its kernels; the others wait for none."""
    def test_leaders(self):
        m = serve.StepModel.__new__(serve.StepModel)
        m.kernels = "k"
        todo = [("decode", 8, 16, 0), ("decode", 8, 24, 0), ("prefill", 1, 16, 0), ("prefill", 1, 24, 0),
                ("decode", 16, 16, 0), ("decode_mixed", 8, 16, 0), ("decode", 16, 24, 0), ("decode", 8, 32, 0)]
        self.assertEqual(m.leaders(todo), [None, 0, None, None, None, None, 4, 0])
        m.kernels = None  # without the kernel cache, none
        self.assertEqual(m.leaders(todo), [None] * 8)


class EndToEnd(unittest.TestCase):
    def test_a_small_stream_on_the_engine(self):
        out = tempfile.mkdtemp()
        reqs = [{"id": f"r{i}", "arrival": 0.01 * i, "prompt_tokens": 48 + 8 * i, "output_tokens": 4} for i in range(4)]
        path = os.path.join(out, "requests.jsonl")
        with open(path, "w") as f:
            f.write("\n".join(json.dumps(r) for r in reqs) + "\n")
        p = subprocess.run([sys.executable, SCRIPT, "--xpusim", XPUSIM, "--config",
                            os.path.join(ROOT, "configs", "h100-sxm.yaml"), "--model",
                            MODEL_TINY, "--requests", path,
                            "--bucket-ratio", "8", "--out", out], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))]
        self.assertEqual(sorted(r["id"] for r in rows), [f"r{i}" for i in range(4)])
        s = json.load(open(os.path.join(out, "summary.json")))
        self.assertEqual(s["finished"], 4)
        # A decode step reads the layers' weights and the LM head (bf16) at no more than the H100's
        # 3.35 TB/s, and a 4-layer model's step is tens of kernels: microseconds, not milliseconds.
        with open(MODEL_TINY) as f:
            card = yaml.safe_load(f)
        floor = (card["layers"] * layer_params(card) + card["vocab"] * card["hidden"]) * 2 / 3.35e12
        self.assertGreater(s["tpot_s"]["p50"], floor)
        self.assertLess(s["tpot_s"]["p50"], 0.5e-3)
        self.assertGreater(s["joules_per_output_token"], 0)
        self.assertGreater(s["step_cache"]["buckets"], 0)
        # The steps' kernels went to the kernel cache beside the step cache.
        kernels = os.path.join(out, "step-cache.kernels")
        with open(kernels, "rb") as f:
            recorded = f.read()
        self.assertTrue(recorded.startswith(b"xpusim kernel cache 1\n") and len(recorded) > 1000)
        # Cut short (a run killed while writing it), it is one line naming it, and left as it is;
        # --no-kernel-cache runs without it.
        out2 = tempfile.mkdtemp()
        with open(os.path.join(out2, "step-cache.kernels"), "wb") as f:
            f.write(recorded[:-3])
        cut = [out2 if x == out else x for x in p.args]
        bad = subprocess.run(cut, capture_output=True, text=True)
        self.assertEqual(bad.returncode, 1, bad.stderr)
        self.assertEqual(len(bad.stderr.strip().splitlines()), 1, bad.stderr)
        self.assertIn(os.path.join(out2, "step-cache.kernels") + ": the kernel cache's record at byte", bad.stderr)
        self.assertIn("cut short", bad.stderr)
        ok = subprocess.run(cut + ["--no-kernel-cache", "--overwrite", "-q"], capture_output=True, text=True)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        with open(os.path.join(out2, "step-cache.kernels"), "rb") as f:
            self.assertEqual(f.read(), recorded[:-3])
        # The folder now holds a run's results: the same command is refused, naming them.
        again = subprocess.run(p.args, capture_output=True, text=True)
        self.assertEqual(again.returncode, 1)
        self.assertIn(os.path.join(out, "summary.json") + " exists: give --overwrite", again.stderr)
        # A second run reuses the cache and simulates nothing; -q prints nothing.
        p = subprocess.run(p.args + ["--overwrite", "-q"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual((p.stdout, p.stderr), ("", ""))
        self.assertEqual(json.load(open(os.path.join(out, "summary.json")))["step_cache"]["simulated_now"], 0)
        # Disaggregated on the same steps: the KV cache crosses the config's NVLink.
        p = subprocess.run(p.args + ["--disaggregate", "1:1"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual(s["finished"], 4)
        self.assertEqual(s["step_cache"]["simulated_now"], 0)
        # Four caches of 49-73 tokens (2 KiB each) over 18 links of 25 GB/s a direction: at least
        # each transfer's latency (0.5 us or more) and the bytes at twice that rate, well under 1 ms.
        kv = kv_bytes_per_token(card, card["layers"], "bf16", 1, 1)
        self.assertGreater(s["kv_transfer_s"], len(reqs) * 0.5e-6 + sum(r["prompt_tokens"] + 1 for r in reqs) * kv / 900e9)
        self.assertLess(s["kv_transfer_s"], 1e-3)
        # Two pipeline stages on the same steps: each step's activations cross the NVLink once.
        p = subprocess.run(p.args[:-2] + ["--pp", "2"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual((s["finished"], s["step_cache"]["simulated_now"], s["setup"]["pp"]), (4, 0, 2))
        steps = sum(s["steps"].values())
        # At least a latency a step, and the prompts' activations (bf16 rows of the hidden size).
        self.assertGreater(s["pipeline"]["send_s"],
                           steps * 0.5e-6 + sum(r["prompt_tokens"] for r in reqs) * card["hidden"] * 2 / 900e9)
        self.assertLess(s["pipeline"]["send_s"], steps * 20e-6)
        self.assertIn("TP=1 PP=2", open(os.path.join(out, "summary.md")).read())


if __name__ == "__main__":
    random.seed(0)
    unittest.main()
