#!/usr/bin/env python3
"""A tensor-parallel layer on a DGX H100, end to end through the binary: the report shows the
all-reduces on all 8 GPUs between the projections and what follows them, and the timeline is
valid Chrome trace-event JSON with a track per GPU carrying every op. Run by ctest
(system.run.tp8_layer) with the path of the xpusim binary."""
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

    def test_timeline_has_a_track_per_gpu_with_every_op(self):
        events = self.timeline["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        names = {e["args"]["name"] for e in events if e["ph"] == "M"}
        self.assertEqual(len(names), 8)
        for gpu in range(8):
            mine = [e["name"] for e in slices if e["pid"] == gpu]
            self.assertEqual(len(mine), len(self.report["ops"]), gpu)
            self.assertIn("layer[0].ffn_allreduce", mine)
        for e in slices:
            self.assertGreaterEqual(e["dur"], 0)
            self.assertIn(e["cat"], {o["kind"] for o in self.report["ops"]})


if __name__ == "__main__":
    unittest.main()
