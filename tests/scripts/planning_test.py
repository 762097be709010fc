#!/usr/bin/env python3
"""The training planner (python/xpusim/planning): the layouts of a space, refusals with their
reasons and memory, a simulated plan with its Pareto front and page, resumption, and bad input.

  tests/scripts/planning_test.py [XPUSIM]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
sys.path.insert(0, os.path.join(ROOT, "python"))
from xpusim import planning as P  # noqa: E402

PLAN = os.path.join(ROOT, "scripts", "xpusim-plan.py")
DGX = os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml")
TINY = """name: tiny
layers: 4
hidden: 512
heads: 8
kv_heads: 8
ffn: 2048
gated: false
vocab: 256
norm: layernorm
rope: false
"""
SPACE = ["--gpus", "4", "--global-batch", "8", "--prompt", "256", "--tp", "1,2", "--pp", "1,2", "--micro-batch", "1,2",
         "--recompute", "none"]


def plan(card, out, *extra):
    return subprocess.run([sys.executable, PLAN, card, "--config", DGX, "--out", out, "--xpusim", XPUSIM, *extra],
                          capture_output=True, text=True)


def read(path):
    with open(path) as f:
        return f.read()


def results(out):
    with open(os.path.join(out, "results.jsonl")) as f:
        return [json.loads(x) for x in f if x.strip()]


class Layouts(unittest.TestCase):
    def space(self, **kw):
        s = {"tp": [1, 2, 4], "pp": [1, 2], "micro_batch": [1], "recompute": ["none"], "zero": [0, 1],
             "schedule": ["1f1b", "gpipe"], "ep": [1]}
        s.update(kw)
        return s

    def test_every_layout_once_and_what_does_not_divide_says_why(self):
        got = list(P.layouts(self.space(), 8, 16))
        ok = [p for p, why in got if why is None]
        ids = [P.point_id(p) for p in ok]
        self.assertEqual(len(ids), len(set(ids)))
        for p in ok:
            self.assertEqual(p["tp"] * p["pp"] * p["dp"], 8)
            if p["dp"] == 1:
                self.assertEqual(p["zero"], 0)  # ZeRO needs replicas to shard over
            if p["pp"] == 1:
                self.assertEqual(p["schedule"], "1f1b")  # a schedule orders stages
        # ZeRO 0 and 1 and two schedules where PP > 1; neither where they do not apply.
        self.assertIn("tp4-pp2-dp1-mb1-none-z0-1f1b", ids)
        self.assertIn("tp4-pp2-dp1-mb1-none-z0-gpipe", ids)
        self.assertNotIn("tp4-pp2-dp1-mb1-none-z1-1f1b", ids)
        why = dict((P.point_id(p) if why is None else f"{p['tp']}x{p['pp']}", why) for p, why in
                   P.layouts(self.space(tp=[3]), 8, 16))
        self.assertIn("does not divide 8 GPUs", why["3x1"])
        bad_batch = [why for p, why in P.layouts(self.space(tp=[1], pp=[1], micro_batch=[3]), 8, 16) if why]
        self.assertTrue(bad_batch and "microbatches of 3" in bad_batch[0])

    def test_the_front_is_what_nothing_beats_on_time_and_energy(self):
        rs = [{"id": "a", "status": "simulated", "step_s": 1.0, "energy_j": 9.0},
              {"id": "b", "status": "simulated", "step_s": 2.0, "energy_j": 5.0},
              {"id": "c", "status": "simulated", "step_s": 3.0, "energy_j": 6.0},  # b beats it on both
              {"id": "d", "status": "simulated", "step_s": 4.0, "energy_j": 1.0},
              {"id": "e", "status": "does not fit", "reason": "x"}]
        self.assertEqual(P.pareto(rs), ["a", "b", "d"])


class Plan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = tempfile.mkdtemp()
        cls.card = os.path.join(cls.d, "tiny.yaml")
        with open(cls.card, "w") as f:
            f.write(TINY)
        cls.out = os.path.join(cls.d, "plan")
        cls.first = plan(cls.card, cls.out, *SPACE)

    def test_a_plan_simulates_every_layout_and_draws_its_front(self):
        self.assertEqual(self.first.returncode, 0, self.first.stderr)
        rs = results(self.out)
        self.assertEqual(len(rs), 8)  # TP 1,2 x PP 1,2 x microbatch 1,2 on 4 GPUs
        for r in rs:
            self.assertEqual(r["status"], "simulated", r)
            self.assertGreater(r["step_s"], 0)
            self.assertGreater(r["energy_j"], 0)
            self.assertTrue(0 < r["mfu"] < 1, r)
        # Larger microbatches fill the GEMMs better: never slower at this size.
        by = {r["id"]: r for r in rs}
        self.assertLess(by["tp1-pp1-dp4-mb2-none-z1-1f1b"]["step_s"], by["tp1-pp1-dp4-mb1-none-z1-1f1b"]["step_s"])
        front = P.pareto(rs)
        self.assertTrue(front)
        for i in front:  # nothing beats a front layout on both
            r = by[i]
            self.assertFalse(any(o["step_s"] < r["step_s"] and o["energy_j"] < r["energy_j"] for o in rs))
        page = read(os.path.join(self.out, "plan.html"))
        def markers(k):  # a series' points, each with its layout as a tooltip
            m = re.search(r'<g id="plan-points-%d">(.*?)</g>\s*</g>' % k, page, re.S)
            return re.findall(r"<use [^>]*><title>([^<]*)</title></use>", m.group(1)) if m else []
        self.assertEqual(len(markers(0)) + len(markers(1)), 8)
        self.assertEqual(sorted(t.split(":")[0] for t in markers(1)), sorted(front))
        table = read(os.path.join(self.out, "plan.md"))
        self.assertIn(f"{front[0]} (front)", table)

    def test_a_second_run_reuses_the_results_and_another_plan_is_refused(self):
        self.assertEqual(self.first.returncode, 0, self.first.stderr)
        before = read(os.path.join(self.out, "results.jsonl"))
        again = plan(self.card, self.out, *SPACE)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(read(os.path.join(self.out, "results.jsonl")), before)  # nothing run again
        other = plan(self.card, self.out, *[x if x != "8" else "16" for x in SPACE])  # another global batch
        self.assertNotEqual(other.returncode, 0)
        self.assertIn("another plan's results", other.stderr)
        self.assertNotIn("Traceback", other.stderr)

    def test_a_truncated_results_file_is_an_error_naming_its_line(self):
        out = os.path.join(self.d, "truncated")
        os.makedirs(out)
        with open(os.path.join(out, "results.jsonl"), "w") as f:
            f.write('{"id": "tp1-pp1-dp4-mb1-none-z1-1f1b", "status": "simulated", "step_s": 0.001, "energy_j": 1}\n'
                    '{"id": "tp1-pp1-dp4-mb2-none-z1-1f1b", "sta')
        r = plan(self.card, out, *SPACE)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("results.jsonl:2: not a result", r.stderr)
        self.assertNotIn("Traceback", r.stderr)


class Refusals(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.card = os.path.join(self.d, "tiny.yaml")
        with open(self.card, "w") as f:
            f.write(TINY)

    def test_a_layout_over_hbm_names_its_memory_and_is_not_simulated(self):
        out = os.path.join(self.d, "small-hbm")
        r = plan(self.card, out, "--gpus", "2", "--global-batch", "2", "--prompt", "256", "--tp", "1", "--pp", "1",
                 "--micro-batch", "1", "--recompute", "none", "--set", "hbm.capacity=1 GiB")
        self.assertEqual(r.returncode, 0, r.stderr)
        (res,) = results(out)
        self.assertEqual(res["status"], "does not fit")
        self.assertRegex(res["reason"], r"GiB per GPU of 1 GiB \(weights .* activations .*\)")
        self.assertNotIn("step_s", res)

    def test_the_generator_refusal_is_the_reason(self):
        r = plan(self.card, os.path.join(self.d, "tp3"), "--gpus", "3", "--global-batch", "3", "--prompt", "256",
                 "--tp", "3", "--pp", "1", "--micro-batch", "1", "--recompute", "none", "--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("refused: --tp 3 must divide heads (8)", r.stdout)

    def test_bad_input_is_one_line_and_a_nonzero_exit(self):
        base = ["--gpus", "4", "--global-batch", "8"]
        for args, says in (([*base, "--tp", "0"], "every value must be 1 or more"),
                           ([*base, "--tpp", "2"], "did you mean --tp?"),
                           ([*base, "--recompute", "most"], "not one of none, selective, full"),
                           ([*base, "--zero", "4"], "ZeRO stages are 0 to 3"),
                           (["--gpus", "0", "--global-batch", "8"], "--gpus 0: must be 1 or more"),
                           ([*base, "--tp", "8", "--pp", "1"], "no point of the space is a layout"),
                           ([*base, "--tp", "1", "--pp", "1", "--generator=--weigths=fp8"],
                            "the trace generator cannot read --generator --weigths=fp8"),
                           ([*base, "--config", os.path.join(ROOT, "configs", "magnet-int4.yaml")], "not a GPU config")):
            with self.subTest(args=args):
                r = plan(self.card, os.path.join(self.d, "bad"), *args)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(says, r.stderr)
                self.assertNotIn("Traceback", r.stderr)
        r = plan(os.path.join(self.d, "missing.yaml"), os.path.join(self.d, "bad"), *base)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("missing.yaml", r.stderr)
        self.assertNotIn("Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main()
