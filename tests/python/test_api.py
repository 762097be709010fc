"""The Python API (docs/python.md): run, check, sweep, errors as exceptions, and a report that
round-trips through its JSON Schema. Run by ctest (python.api) with build/python on the path."""
import json
import os

import jsonschema
import pytest

import xpusim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
H100 = os.path.join(ROOT, "configs", "h100-sxm.yaml")
GEMM = {"xpusim_trace": 1, "name": "one-gemm", "ops": [{"name": "g", "kind": "gemm", "m": 2048, "n": 2048, "k": 2048}]}


def test_run_returns_the_report_as_a_dict():
    r = xpusim.run(H100, os.path.join(ROOT, "traces", "gemm", "bf16-4096.yaml"))
    assert r["xpusim_report"] == 1
    assert r["total"]["time_s"] > 0 and r["total"]["tflops"] > 100
    assert r["ops"][0]["name"] == "gemm"


def test_overrides_and_inputs_given_as_dicts():
    full = xpusim.run(H100, GEMM, set={"power.mode": "fixed_clock"})
    half = xpusim.run(H100, GEMM, set={"power.mode": "fixed_clock", "sm.count": 66})
    assert half["config"]["set"] == ["power.mode=fixed_clock", "sm.count=66"]
    assert half["total"]["time_s"] > 1.5 * full["total"]["time_s"]  # half the SMs
    fp8 = xpusim.run(H100, GEMM, set=["power.mode=fixed_clock"], trace_set={"dtype": "fp8"})
    assert fp8["trace"]["set"] == ["dtype=fp8"] and fp8["total"]["time_s"] < full["total"]["time_s"]
    mine = {"extends": H100, "name": "h100-66", "kind": "gpu", "sm": {"count": 66}, "power": {"mode": "fixed_clock"}}
    assert xpusim.run(mine, GEMM)["total"]["time_s"] == pytest.approx(half["total"]["time_s"], rel=1e-9)
    exact = xpusim.run(H100, GEMM, set={"power.mode": "fixed_clock"}, fidelity="exact")
    assert exact["total"]["time_s"] == pytest.approx(full["total"]["time_s"], rel=0.01)


def test_bad_input_raises_xpusim_error_with_file_line_and_key():
    with pytest.raises(xpusim.Error, match=r"key 'sm\.cout': unknown key .*did you mean 'sm\.count'"):
        xpusim.run(H100, GEMM, set={"sm.cout": 1})
    bad = {"xpusim_trace": 1, "ops": [{"name": "g", "kind": "gemm", "m": -1, "n": 8, "k": 8}]}
    with pytest.raises(xpusim.Error, match=r"trace\.yaml:[0-9]+:[0-9]+: key 'ops\[0\]\.m': value -1 is out of range"):
        xpusim.check(trace=bad)
    with pytest.raises(xpusim.Error, match=r"do not support fp4"):
        xpusim.check(H100, GEMM, trace_set={"dtype": "fp4"})
    with pytest.raises(ValueError):  # xpusim.Error is a ValueError
        xpusim.run(H100, GEMM, fidelity="medium")
    with pytest.raises(TypeError):
        xpusim.run(H100, 42)
    xpusim.check(H100, GEMM)  # good input: nothing raised


def test_sweep_returns_rows(tmp_path):
    spec = {"xpusim_sweep": 1, "name": "api", "configs": [H100], "traces": [os.path.join(ROOT, "tests", "data", "gemm-2k.yaml")],
            "axes": {"sm.count": [66, 132]}}
    rows = xpusim.sweep(spec, out=tmp_path / "sweep", jobs=2)
    records = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert sorted(int(r["sm.count"]) for r in records) == [66, 132]
    assert all(r["status"] == "ok" for r in records)
    with pytest.raises(xpusim.Error, match="unknown key"):
        xpusim.sweep({**spec, "axis": {}}, out=tmp_path / "bad")


def test_a_report_round_trips_through_its_schema(tmp_path):
    r = xpusim.run(H100, GEMM, set={"sm.count": 100})
    with open(os.path.join(ROOT, "docs", "schemas", "report.schema.json")) as f:
        schema = json.load(f)
    jsonschema.validate(r, schema, cls=jsonschema.Draft202012Validator)
    again = json.loads(json.dumps(r))
    assert again == r
    jsonschema.validate(again, schema, cls=jsonschema.Draft202012Validator)


def test_execution_traces_by_path_and_their_errors():
    # A Chakra trace (a rank's .et file names them all) runs like any trace; a truncated one is an
    # error naming the node, and nothing is simulated.
    imported = os.path.join(ROOT, "traces", "imported")
    assert xpusim.check(H100, os.path.join(imported, "llama-3-8b-prefill-2layers.0.et")) is None  # it lowers
    with pytest.raises(xpusim.Error, match=r"the message after node 2 'aten::mm' is 85 bytes long but the file ends"):
        xpusim.run(H100, os.path.join(ROOT, "tests", "data", "bad", "trace-chakra-truncated.0.et"))
