#!/usr/bin/env python3
"""The JSON Schemas in docs/schemas/ hold for what xpusim reads and writes: every shipped trace
(YAML read as JSON) and a generated JSON Lines trace line by line against trace.schema.json; the
report.json of runs on a GPU, a multi-GPU system and the accelerator against report.schema.json;
every row of a sweep's results.jsonl (points that ran and points that failed) against
results-row.schema.json. Each schema also refuses a document with a defect, so that it checks
something. Uses python3-jsonschema (Debian), which scripts/install-deps.sh installs.

  tests/scripts/schema_test.py build/xpusim
"""
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

try:
    import jsonschema
except ImportError:
    sys.exit("schema_test: python3-jsonschema is not installed (scripts/install-deps.sh installs it)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
ENV = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")


def validator(name):
    with open(os.path.join(ROOT, "docs", "schemas", name)) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(v, doc):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in v.iter_errors(doc)]


def xpusim(*args):
    return subprocess.run([XPUSIM, *args], env=ENV, capture_output=True, text=True, timeout=600)


class Schemas(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()

    def test_every_shipped_trace_and_a_generated_jsonl_trace(self):
        v = validator("trace.schema.json")
        files = sorted(glob.glob(os.path.join(ROOT, "traces", "**", "*.yaml"), recursive=True))
        self.assertGreater(len(files), 20)
        for f in files:
            with open(f) as fh:
                doc = yaml.safe_load(fh)
            self.assertEqual(problems(v, doc), [], f)
        jsonl = os.path.join(self.tmp, "gen.jsonl")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "xpusim-trace.py"),
                        os.path.join(ROOT, "configs", "models", "llama-3-8b.yaml"), "--phase", "decode", "--batch", "8",
                        "--layers", "2", "--tp", "2", "--fusion", "none", "-o", jsonl], check=True, capture_output=True)
        part = {"$schema": v.schema["$schema"], "$defs": v.schema["$defs"]}  # one definition of the schema as its root
        header = jsonschema.Draft202012Validator({**part, "$ref": "#/$defs/header"})
        entry = jsonschema.Draft202012Validator({**part, "$ref": "#/$defs/entry"})
        with open(jsonl) as fh:
            lines = [json.loads(line) for line in fh if line.strip()]
        self.assertGreaterEqual(len(lines), 3)  # the header, the layers as a repeat block, the rest
        self.assertEqual(xpusim("check", "-c", os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml"), "-t", jsonl).returncode, 0)
        self.assertEqual(problems(header, lines[0]), [])
        for i, op in enumerate(lines[1:], 2):
            self.assertEqual(problems(entry, op), [], f"line {i}")
        with open(jsonl) as fh:
            self.assertIn('"contiguous": false', fh.read())  # PyTorch eager's strided operands, in the schema
        # A training step: its memory per GPU in the header, mirrored collectives and sends.
        train = os.path.join(self.tmp, "train.jsonl")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "xpusim-trace.py"),
                        os.path.join(ROOT, "configs", "models", "llama-3-8b.yaml"), "--phase", "train", "--prompt", "256",
                        "--layers", "2", "--batch", "2", "--tp", "2", "--pp", "2", "--dp", "2", "--microbatches", "2", "--mirror-replicas",
                        "-o", train], check=True, capture_output=True)
        with open(train) as fh:
            lines = [json.loads(line) for line in fh if line.strip()]
        self.assertIn("memory_per_gpu", lines[0])
        self.assertEqual(problems(header, lines[0]), [])
        self.assertTrue(any(op.get("mirrors") for op in lines[1:]))
        for i, op in enumerate(lines[1:], 2):
            self.assertEqual(problems(entry, op), [], f"line {i}")
        # The schema refuses what the loader refuses.
        bad = {"xpusim_trace": 1, "ops": [{"name": "g", "kind": "gemm", "m": 64, "n": 64, "kk": 64}]}
        self.assertNotEqual(problems(v, bad), [])
        bad = {"xpusim_trace": 1, "ops": [{"name": "g", "kind": "gemm", "m": "64", "n": 64, "k": 64}]}
        self.assertNotEqual(problems(v, bad), [])
        self.assertEqual(xpusim("check", "-t", os.path.join(ROOT, "tests", "data", "bad", "trace-unknown-key.yaml")).returncode, 1)

    # Bad traces of tests/data/bad whose defect a JSON Schema cannot see: the YAML layer (duplicate
    # keys, a second document, YAML 1.1's yes/no, which a JSON reading takes for booleans, and
    # .nan), what only the whole trace or the chip decides (names that clash, dependencies and
    # cycles, a size that overflows or exceeds the chip's memory, formats the chip lacks, a
    # collective on one GPU, limits on work), and relations between fields.
    NOT_FOR_A_SCHEMA = {
        "trace-duplicate-key.yaml", "trace-header-duplicate-key.yaml", "trace-repeat-duplicate-key.yaml",
        "trace-second-document.yaml", "trace-bool-yes.yaml", "trace-contiguous-no.yaml", "trace-nan-density.yaml",
        "trace-duplicate-name.yaml", "trace-repeat-name-clash.yaml", "trace-missing-dep.yaml", "trace-self-dep.yaml",
        "trace-dep-cycle.yaml", "trace-cycle-in-repeat.yaml", "trace-stream-cycle.yaml", "trace-overflowing-shape.yaml",
        "trace-larger-than-hbm.yaml", "trace-fp4-on-h100.yaml", "trace-int4-on-h100.yaml", "trace-on-missing-gpu.yaml",
        "trace-allreduce-on-one-gpu.yaml", "trace-days-to-simulate.yaml", "trace-delay-too-long.yaml",
        "trace-repeat-huge.yaml", "trace-kv-heads-not-divide.yaml", "trace-weight-wider.yaml",
        "trace-bytes-fractional.yaml", "trace-bad-device-range.yaml",
    }

    def test_the_trace_schema_refuses_what_the_reader_refuses_in_a_field(self):
        # (That the reader refuses each of these files is cli.bad_inputs' test.)
        v = validator("trace.schema.json")
        judged = 0
        for f in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "bad", "trace-*.yaml"))):
            name = os.path.basename(f)
            try:
                with open(f, "rb") as fh:
                    doc = next(yaml.safe_load_all(fh))
            except yaml.YAMLError:
                continue  # not YAML at all: no document for a schema
            if name in self.NOT_FOR_A_SCHEMA:
                continue
            judged += 1
            self.assertNotEqual(problems(v, doc), [], f"{name}: the reader refuses it, the schema lets it through")
        self.assertGreaterEqual(judged, 25)
        def reader_accepts(op, *config):
            """Whether `xpusim check` takes a JSON Lines trace of the one op."""
            path = os.path.join(self.tmp, "probe.jsonl")
            with open(path, "w") as fh:
                fh.write(json.dumps({"xpusim_trace": 1}) + "\n" + json.dumps(op) + "\n")
            return xpusim("check", *config, "-t", path).returncode == 0

        # Values at the reader's bounds, one field at a time: the schema and the reader agree.
        good = {"xpusim_trace": 1, "name": "t", "ops": [{"name": "g", "kind": "gemm", "m": 64, "n": 64, "k": 64}]}
        probes = [({"stream": 1023}, True), ({"stream": 1024}, False), ({"device": 131071}, True), ({"device": 131072}, False),
                  ({"devices": [0, 1]}, True), ({"devices": [1, 1]}, False), ({"devices": []}, False),
                  ({"devices": [131072]}, False), ({"devices": "0-7"}, True), ({"devices": "all"}, True),
                  ({"devices": "some"}, False), ({"devices": "0-131071"}, True), ({"devices": "0-131072"}, False),
                  ({"devices": "131060-131071"}, True), ({"devices": "99999-100000"}, True), ({"devices": "0-999999"}, False), ({"name": "g\x07"}, False), ({"name": "g\x7f"}, False),
                  ({"name": "g\u00e9"}, True), ({"name": ""}, False)]
        for change, ok in probes:
            doc = copy.deepcopy(good)
            doc["ops"][0].update(change)
            self.assertEqual(reader_accepts(doc["ops"][0]), ok, f"the reader on {change}")
            self.assertEqual(problems(v, doc) == [], ok, f"the schema on {change}")
        # copy_in (a runtime's own kernel copying its input in): with one_shot or two_shot only.
        for change, ok in [({"algorithm": "one_shot", "copy_in": True}, True), ({"algorithm": "two_shot", "copy_in": True}, True),
                           ({"algorithm": "ring", "copy_in": False}, True), ({"copy_in": True}, False),
                           ({"algorithm": "ring", "copy_in": True}, False), ({"algorithm": "one_shot", "copy_in": "yes"}, False)]:
            op = dict({"name": "ar", "kind": "all_reduce", "bytes": 65536, "devices": [0, 1]}, **change)
            self.assertEqual(reader_accepts(op, "-c", os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml")), ok,
                             f"the reader on {change}")
            self.assertEqual(problems(v, dict(good, ops=[op])) == [], ok, f"the schema on {change}")
        # A range whose first index is past its last: the reader refuses it; the schema cannot
        # compare two numbers in a string and lets it through (its $comment says so).
        doc = copy.deepcopy(good)
        doc["ops"][0]["devices"] = "7-0"
        self.assertFalse(reader_accepts(doc["ops"][0]))
        for header, ok in [({"name": "t\n"}, False), ({"name": "t\u00e9"}, True)]:
            doc = dict(copy.deepcopy(good), **header)
            self.assertEqual(problems(v, doc) == [], ok, f"the schema on the header {header}")

    def test_reports_of_a_gpu_a_system_and_the_accelerator(self):
        v = validator("report.schema.json")
        # The first: transformer-block.yaml's op kinds at a size that runs in a second (the
        # example itself takes half a minute, and the schema asks what a report holds).
        runs = [("h100-sxm.yaml", "tests/data/block-small.yaml", []),
                ("systems/dgx-h100.yaml", "traces/microbench/nccl-sweep.yaml", []),
                ("magnet-int4.yaml", "traces/examples/bert-base-layer.yaml", []),
                ("h100-sxm.yaml", "traces/gemm/bf16-4096.yaml", ["--set", "power.mode=fixed_clock", "--trace-set", "dtype=fp8"])]
        for i, (cfg, trace, extra) in enumerate(runs):
            out = os.path.join(self.tmp, f"run{i}")
            r = xpusim("run", "-q", "-c", os.path.join(ROOT, "configs", cfg), "-t", os.path.join(ROOT, trace), "-o", out, *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(out, "report.json")) as f:
                rep = json.load(f)
            self.assertEqual(problems(v, rep), [], cfg)
        broken = copy.deepcopy(rep)
        del broken["total"]["time_s"]
        broken["surprise"] = 1
        self.assertEqual(len(problems(v, broken)), 2)

    def test_sweep_rows_that_ran_and_that_failed(self):
        v = validator("results-row.schema.json")
        spec = os.path.join(self.tmp, "sweep.yaml")
        with open(spec, "w") as f:
            f.write(f"xpusim_sweep: 1\nname: schema\nconfigs: [{ROOT}/configs/h100-sxm.yaml]\n"
                    f"traces: [{ROOT}/tests/data/gemm-2k.yaml]\naxes:\n  sm.count: [66, 132]\n"
                    "  trace.dtype: [bf16, fp4]   # fp4: the H100 has none, so those points fail\n")
        out = os.path.join(self.tmp, "sweep")
        xpusim("sweep", spec, "-o", out, "-q")
        with open(os.path.join(out, "results.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        self.assertEqual(sorted(r["status"] for r in rows), ["failed", "failed", "ok", "ok"])
        for row in rows:
            self.assertEqual(problems(v, row), [], row["id"])
        self.assertNotEqual(problems(v, {**rows[0], "status": "maybe"}), [])


if __name__ == "__main__":
    unittest.main()
