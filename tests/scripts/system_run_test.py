#!/usr/bin/env python3
"""A tensor-parallel layer on a DGX H100, end to end through the binary: the report shows the
all-reduces on all 8 GPUs between the projections and what follows them, and the timeline is
valid Chrome trace-event JSON with a track per GPU carrying every op. Run by ctest
(system.run.tp8_layer) with the path of the xpusim binary. A failed run into the same folder leaves
the earlier run's files as they were."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
TRACE = os.path.join(ROOT, "traces", "generated", "llama-3-70b-prefill-1layer-tp8.yaml")
CONFIG = os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml")


class SystemRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp()
        env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
        r = subprocess.run([XPUSIM, "run", "--config", CONFIG, "--trace", TRACE, "--out", cls.out,
                            "--set", "system.detail=representative"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert r.returncode == 0, r.stderr
        cls.stdout = r.stdout
        with open(os.path.join(cls.out, "report.json")) as f:
            cls.report = json.load(f)
        with open(os.path.join(cls.out, "timeline.json")) as f:
            cls.timeline = json.load(f)
        with open(os.path.join(cls.out, "summary.md")) as f:
            cls.summary = f.read()
        with open(os.path.join(cls.out, "report.html")) as f:
            cls.html = f.read()

    def test_a_failed_run_leaves_the_earlier_runs_files_as_they_were(self):
        files = ("report.json", "resolved-config.yaml", "summary.md")
        before = {}
        for name in files:
            with open(os.path.join(self.out, name)) as f:
                before[name] = f.read()
        r = subprocess.run([XPUSIM, "run", "-q", "--config", CONFIG, "--trace", TRACE, "--out", self.out,
                            "--set", "system.detail=representative", "--set", "power.limit=650 W", "--trace-set", "dtype=fp4"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("do not support fp4", r.stderr)
        for name in files:
            with open(os.path.join(self.out, name)) as f:
                self.assertEqual(f.read(), before[name], name)

    def test_report_shows_the_all_reduces(self):
        ops = {o["name"]: o for o in self.report["ops"]}
        ar = ops["layer[0].o_proj_allreduce"]
        self.assertEqual(ar["kind"], "all_reduce")
        self.assertEqual(ar["devices"], list(range(8)))
        self.assertEqual(ar["collective"]["algorithm"], "nvls")
        self.assertGreater(ar["collective"]["busbw"], 0)
        self.assertGreaterEqual(ar["start_s"], ops["layer[0].o_proj"]["end_s"])
        self.assertGreaterEqual(ops["layer[0].residual1"]["start_s"], ar["end_s"])
        self.assertEqual(self.report["system"]["gpus"], 8)
        self.assertIn("o_proj_allreduce", self.stdout)

    def test_per_gpu_and_system_figures_add_up(self):
        t = self.report["total"]
        g = t["per_gpu"]
        self.assertEqual((t["scope"], t["gpus"], g["gpus"]), ("system", 8, 1))
        close = lambda a, b: self.assertAlmostEqual(a, b, delta=1e-6 * max(abs(a), abs(b), 1))  # noqa: E731
        # One GPU's share times the GPUs is the system's.
        close(8 * g["flops"], t["flops"])
        close(8 * g["hbm_bytes"], t["memory"]["hbm_read_bytes"] + t["memory"]["hbm_write_bytes"])
        close(8 * g["energy_j"], t["energy"]["total_j"])
        close(8 * g["nvlink_bytes"], t["nvlink_bytes"])
        close(g["hbm_peak_bandwidth"], self.report["chip"]["hbm_peak_bandwidth"])
        # Each op's metrics are one GPU's; its "system" is them over its GPUs, and the ops'
        # systems add up to the total (energy: the total also has the idle time between ops).
        for o in self.report["ops"]:
            self.assertEqual(o["scope"], "per GPU")
            n = o["system"]["gpus"]
            self.assertEqual(n, len(o["devices"]))
            close(o["system"]["flops"], n * o["flops"])
            close(o["system"]["energy_j"], n * o["energy"]["total_j"])
        close(sum(o["system"]["flops"] for o in self.report["ops"]), t["flops"])
        close(sum(o["system"]["hbm_bytes"] for o in self.report["ops"]),
              t["memory"]["hbm_read_bytes"] + t["memory"]["hbm_write_bytes"])
        close(sum(o["system"]["nvlink_bytes"] for o in self.report["ops"]), t["nvlink_bytes"])
        ops_j = sum(o["system"]["energy_j"] for o in self.report["ops"])
        self.assertLessEqual(ops_j, t["energy"]["total_j"] * (1 + 1e-9))
        self.assertGreater(ops_j, 0.9 * t["energy"]["total_j"])
        # A collective's energy is one participant's, as a compute op's is one GPU's.
        ar = [o for o in self.report["ops"] if o["kind"] == "all_reduce"][0]
        close(ar["system"]["nvlink_bytes"], 8 * ar["collective"]["nvlink_bytes"])

    def test_outputs_label_per_gpu_and_system(self):
        self.assertIn("total, whole system of 8 GPUs", self.stdout)
        self.assertIn("per GPU (1 of 8)", self.stdout)
        self.assertIn("of 8 x ", self.stdout)
        self.assertIn("ops: per GPU", self.stdout)
        self.assertIn("whole system of 8 GPUs", self.summary)
        self.assertIn("per GPU (1 of 8)", self.summary)
        self.assertIn("<b>8 GPUs</b>", self.html)
        env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
        r = subprocess.run([XPUSIM, "check", "--config", CONFIG, "--trace", TRACE], stdout=subprocess.PIPE, text=True, env=env)
        self.assertIn("TFLOP per GPU summed over the ops", r.stdout)
        line = [l for l in r.stdout.splitlines() if "TFLOP per GPU" in l][0]
        per = float(line.split(" ops, ")[1].split(" TFLOP")[0])
        system = float(line.split("summed over the ops, ")[1].split(" TFLOP")[0])
        self.assertAlmostEqual(system, 8 * per, delta=1e-4 * system)  # printed to 6 digits

    def test_timeline_hbm_counter_is_each_gpus_own(self):
        # The HBM counter of GPU 0 while an op runs alone is that op's per-GPU bandwidth.
        ops = {o["name"]: o for o in self.report["ops"]}
        qkv = ops["layer[0].qkv"]
        counters = [e for e in self.timeline["traceEvents"] if e["ph"] == "C" and e["pid"] == 0 and e["name"] == "HBM bandwidth"]
        at = [e for e in counters if abs(e["ts"] - qkv["start_s"] * 1e6) < 1e-3]
        self.assertTrue(at)
        self.assertAlmostEqual(at[-1]["args"]["GB/s"], qkv["memory"]["hbm_bandwidth"] / 1e9, delta=1e-3 * at[-1]["args"]["GB/s"])

    def test_timeline_has_a_track_per_gpu_simulated_with_every_op(self):
        # Representative detail: GPU 0 is simulated and the other seven mirror it, so the
        # timeline has GPU 0's track alone (a track per mirroring GPU would repeat it).
        events = self.timeline["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        names = {e["args"]["name"] for e in events if e["ph"] == "M"}
        simulated = self.report["system"]["simulated_gpus"]
        self.assertEqual(simulated, [0])
        self.assertEqual(len(names), 1)
        self.assertEqual({e["pid"] for e in slices}, {0})
        for gpu in simulated:
            mine = [e["name"] for e in slices if e["pid"] == gpu]
            self.assertEqual(len(mine), len(self.report["ops"]), gpu)
            self.assertIn("layer[0].ffn_allreduce", mine)
        for e in slices:
            self.assertGreaterEqual(e["dur"], 0)
            self.assertIn(e["cat"], {o["kind"] for o in self.report["ops"]})


if __name__ == "__main__":
    unittest.main()
