#!/usr/bin/env python3
"""The PyTorch-profile importer on the shipped real profile and on small synthetic ones: every
matmul of the real profile is mapped, every kernel becomes an op in the order it ran, strided
operands are marked, unknown ops with GPU work become timed gaps with a warning that counts
them, and bad files are refused. Run by ctest (scripts.import_profile)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMPORTER = os.path.join(ROOT, "scripts", "import-torch-profile.py")
PROFILE = os.path.join(ROOT, "traces", "imported", "small-transformer.trace.json")


def run(path):
    r = subprocess.run([sys.executable, IMPORTER, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return r.returncode, r.stdout, r.stderr


def write_profile(events):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"traceEvents": events}, f)
    f.close()
    return f.name


def cpu_op(name, ts, dur, ext, dims, types):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"External id": ext, "Input Dims": dims, "Input type": types}}


def kernel(ext, ts, dur):
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": {"External id": ext}}


class ImportProfile(unittest.TestCase):
    def test_shipped_profile_maps_every_matmul(self):
        rc, out, err = run(PROFILE)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("warning", err)  # no unknown op with GPU work, matmul or other
        ops = yaml.safe_load(out)["ops"]
        kinds = [o["kind"] for o in ops]
        self.assertEqual(kinds.count("gemm"), 12)  # 9 linear, 2 matmul (unfused attention), 1 bmm
        self.assertEqual(kinds.count("attention"), 1)
        self.assertEqual(kinds.count("conv2d"), 1)
        self.assertNotIn("delay", kinds)
        att = next(o for o in ops if o["kind"] == "attention")
        self.assertEqual((att["batch"], att["heads"], att["seq_q"], att["head_dim"], att["causal"]), (2, 4, 256, 64, True))
        conv = next(o for o in ops if o["kind"] == "conv2d")
        self.assertEqual((conv["c"], conv["k"], conv["r"], conv["stride"]), (3, 256, 4, 4))
        qk = next(o for o in ops if o["name"] == "matmul1")
        self.assertEqual((qk["batch"], qk["m"], qk["n"], qk["k"]), (8, 256, 256, 64))
        self.assertTrue(all(o["dtype"] == "fp16" for o in ops))
        # One op per kernel the profile ran (36), in the order they ran: the convolution's bias
        # add, a kernel of its own, right after it; each layer_norm's contiguous copy before it.
        self.assertEqual(len(ops), 36)
        self.assertEqual(ops[1]["name"], "add_1")
        names = [o["name"] for o in ops]
        self.assertLess(names.index("contiguous1"), names.index("layer_norm1"))
        # Operands in one dense layout run the vectorised kernel; a broadcast bias, a residual add
        # of a transposed view and the copies of strided views run the legacy one.
        layout = {o["name"]: o.get("contiguous", True) for o in ops if o["kind"] == "elementwise"}
        self.assertTrue(layout["gelu1"] and layout["mul1"])
        strided = [n for n, c in layout.items() if not c]
        self.assertEqual(len(strided), 13)  # the bias add, 4 residual adds, 4 contiguous() and 4 clones
        self.assertIn("add_1", strided)
        self.assertIn("add1", strided)
        self.assertTrue(all(o["inputs"] == 1 for o in ops if o["name"].startswith(("clone", "contiguous"))))

    def test_unknown_ops_become_timed_gaps_and_are_counted(self):
        path = write_profile([
            cpu_op("aten::linear", 0, 10, 1, [[4, 8], [16, 8], [16]], ["float", "float", "float"]),
            cpu_op("aten::addmm", 1, 5, 2, [[16], [4, 8], [8, 16]], ["float", "float", "float"]),  # inside linear
            cpu_op("aten::cumsum", 20, 5, 3, [[4, 16], []], ["float", "Scalar"]),
            cpu_op("aten::cumsum", 30, 5, 4, [[4, 16], []], ["float", "Scalar"]),
            cpu_op("aten::view", 40, 1, 5, [[4, 16], []], ["float", ""]),
            kernel(2, 100, 3.0), kernel(3, 110, 2.5), kernel(4, 120, 1.5)])
        rc, out, err = run(path)
        self.assertEqual(rc, 0, err)
        ops = yaml.safe_load(out)["ops"]
        self.assertEqual([o["kind"] for o in ops], ["gemm", "delay", "delay"])
        self.assertEqual((ops[0]["m"], ops[0]["n"], ops[0]["k"], ops[0]["dtype"]), (4, 16, 8, "fp32"))
        self.assertEqual([o["duration"] for o in ops[1:]], ["2.500 us", "1.500 us"])
        self.assertIn("2 ops of unknown kind kept as timed gaps", err)
        self.assertIn("aten::cumsum x2", err)
        self.assertIn("aten::view x1", err)  # no GPU work: listed, not in the trace

    def test_operand_layouts_by_the_recorded_strides(self):
        def add(ts, ext, strides, dims=([4, 8], [4, 8])):
            e = cpu_op("aten::add", ts, 1, ext, [*map(list, dims), []], ["float", "float", "Scalar"])
            e["args"]["Input Strides"] = [*strides, []]
            return e
        path = write_profile([
            add(0, 1, [[8, 1], [8, 1]]),                      # both contiguous: vectorised
            add(10, 2, [[1, 4], [1, 4]]),                     # both transposed alike: one dense layout
            add(20, 3, [[8, 1], [1, 4]]),                     # one transposed: legacy
            add(30, 4, [[8, 1], [0, 1]], ([4, 8], [1, 8])),   # a broadcast row: legacy
            add(40, 5, [[16, 1], [8, 1]]),                    # a strided view with gaps: legacy
            *[kernel(i, 100 + 10 * i, 1.0) for i in range(1, 6)]])
        rc, out, err = run(path)
        self.assertEqual(rc, 0, err)
        self.assertEqual([o.get("contiguous", True) for o in yaml.safe_load(out)["ops"]], [True, True, False, False, False])

    def test_bad_files_are_refused(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('{"traceEvents": [\n  {"ph": "X",,}\n]}')
        rc, _, err = run(f.name)
        self.assertNotEqual(rc, 0)
        self.assertIn(":2:", err)
        rc, _, err = run(write_profile([cpu_op("aten::mm", 0, 1, 1, [], [])]))
        self.assertNotEqual(rc, 0)
        self.assertIn("record_shapes=True", err)
        rc, _, err = run(os.path.join(ROOT, "no-such-profile.json"))
        self.assertNotEqual(rc, 0)


if __name__ == "__main__":
    unittest.main()
