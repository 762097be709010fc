#!/usr/bin/env python3
"""What a run writes reads right: ops.csv and compare.csv are RFC 4180 (names with commas and
quotes keep their columns), and report.json has the same bytes from any working directory.

  tests/scripts/outputs_test.py build/xpusim
"""
import csv
import filecmp
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
H100 = os.path.join(ROOT, "configs", "h100-sxm.yaml")
ENV = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")


def xpusim(*args, cwd=None):
    return subprocess.run([XPUSIM, *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300, check=True)


class Outputs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.trace = os.path.join(self.tmp, "odd.yaml")
        with open(self.tmp + "/odd.yaml", "w") as f:
            f.write('xpusim_trace: 1\nname: "odd, \\"quoted\\" trace"\nops:\n'
                    '  - {name: "qkv, \\"fused\\"", kind: gemm, m: 256, n: 256, k: 256, dtype: bf16}\n'
                    '  - {name: plain, kind: softmax, shape: [256, 256], dtype: bf16}\n')

    def test_csv_files_keep_their_columns(self):
        a, b = os.path.join(self.tmp, 'run "a", first'), os.path.join(self.tmp, "b")
        xpusim("run", "-q", "-c", H100, "-t", self.trace, "-o", a)
        xpusim("run", "-q", "-c", H100, "-t", self.trace, "-o", b)
        xpusim("compare", a, b, "-o", os.path.join(self.tmp, "cmp"))
        with open(os.path.join(a, "ops.csv"), newline="") as f:
            rows = list(csv.reader(f))
        self.assertEqual({len(r) for r in rows}, {len(rows[0])})
        self.assertEqual(rows[1][0], 'qkv, "fused"')
        self.assertEqual(rows[2][0], "plain")
        with open(os.path.join(self.tmp, "cmp", "compare.csv"), newline="") as f:
            rows = list(csv.reader(f))
        self.assertEqual({len(r) for r in rows}, {len(rows[0])})
        self.assertEqual(rows[1][0], 'run "a", first')
        self.assertEqual(rows[1][2], 'odd, "quoted" trace')

    def test_overrides_are_recorded_and_shown(self):
        a, b = os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b")
        xpusim("run", "-q", "-c", H100, "-t", self.trace, "-o", a, "--set", "sm.count=100", "--trace-set", "dtype=fp8")
        xpusim("run", "-q", "-c", H100, "-t", self.trace, "-o", b)
        with open(os.path.join(a, "report.json")) as f:
            r = json.load(f)
        self.assertEqual(r["config"]["set"], ["sm.count=100"])
        self.assertEqual(r["trace"]["set"], ["dtype=fp8"])
        with open(os.path.join(b, "report.json")) as f:
            self.assertNotIn("set", json.load(f)["config"])
        shown = "--set sm.count=100 --trace-set dtype=fp8"
        for page in ("summary.md", "report.html"):
            with open(os.path.join(a, page)) as f:
                self.assertIn(shown, f.read(), page)
        out = xpusim("compare", a, b, "-o", os.path.join(self.tmp, "cmp")).stdout
        self.assertIn(f"overrides of a: {shown}", out)
        with open(os.path.join(self.tmp, "cmp", "compare.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([x["overrides"] for x in rows], [shown, ""])

    def test_summary_md_keeps_its_columns(self):
        # A '|' in a name would add a column to summary.md's table, a backtick end its code span.
        trace = os.path.join(self.tmp, "pipes.yaml")
        with open(trace, "w") as f:
            f.write('xpusim_trace: 1\nname: "a | b"\nops:\n'
                    '  - {name: "q|k`v", kind: gemm, m: 256, n: 256, k: 256, dtype: bf16}\n'
                    '  - {name: plain, kind: softmax, shape: [256, 256], dtype: bf16}\n')
        out = os.path.join(self.tmp, "pipes")
        xpusim("run", "-q", "-c", H100, "-t", trace, "-o", out)
        with open(os.path.join(out, "summary.md")) as f:
            text = f.read()
        rows = [r for r in text.splitlines() if r.startswith("|")]
        cells = [len(re.split(r"(?<!\\)\|", r)) for r in rows]  # unescaped pipes
        self.assertEqual(set(cells), {cells[0]}, rows)
        self.assertIn("| q\\|k`v |", text)
        self.assertIn("- ``q|k`v``: ", text)

    def test_report_json_is_the_same_from_any_folder(self):
        outs = []
        for i, cwd in enumerate([ROOT, self.tmp, "/"]):
            out = os.path.join(self.tmp, f"from{i}")
            xpusim("run", "-q", "-c", H100, "-t", self.trace, "-o", out, cwd=cwd)
            outs.append(os.path.join(out, "report.json"))
        for other in outs[1:]:
            self.assertTrue(filecmp.cmp(outs[0], other, shallow=False), other)
        with open(outs[0]) as f:
            self.assertIn('"table": "energy/tsmc-4n-h100.yaml"', f.read())


if __name__ == "__main__":
    unittest.main()
