"""The Python API (docs/python.md): run, check, sweep, errors as exceptions, and a report that
round-trips through its JSON Schema. Run by ctest (python.api) with build/python on the path."""
import importlib
import json
import os
import subprocess

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


def test_a_kernel_cache_replays_an_earlier_runs_kernels(tmp_path):
    card = os.path.join(ROOT, "tests", "data", "models", "tiny-llama.yaml")
    t = xpusim.trace(card, phase="decode", batch=4, context=512, layers=1)
    cache = tmp_path / "run.kernels"
    first = xpusim.run(H100, t, kernel_cache=cache)
    assert first["fidelity"].get("cached_ops", 0) == 0 and cache.stat().st_size > 0
    again = xpusim.run(H100, t, kernel_cache=cache)
    assert again["fidelity"]["cached_ops"] == len(again["ops"])
    assert again["total"]["time_s"] == first["total"]["time_s"]
    # Through the binary (out=): another engine's bytes, so its own records, then replayed.
    for n, out in enumerate((tmp_path / "a", tmp_path / "b")):
        by_binary = xpusim.run(H100, t, kernel_cache=cache, out=out)
        assert by_binary["fidelity"].get("cached_ops", 0) == n * len(by_binary["ops"])
        assert by_binary["total"]["time_s"] == first["total"]["time_s"]
    with pytest.raises(ValueError, match="kernel_cache applies to fidelity='fast'"):
        xpusim.run(H100, t, fidelity="exact", kernel_cache=cache)
    (tmp_path / "bad.kernels").write_text("not a cache\n")
    with pytest.raises(xpusim.Error, match="bad.kernels: not a kernel cache"):
        xpusim.run(H100, t, kernel_cache=tmp_path / "bad.kernels")


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
    with pytest.raises(TypeError, match="trace must be a path or a dict, not int"):
        xpusim.run(H100, 42)
    # None is no path: the argument is named, not read as an empty file name.
    with pytest.raises(TypeError, match="config must be a path or a dict, not NoneType"):
        xpusim.run(None, GEMM)
    with pytest.raises(TypeError, match="trace must be a path or a dict, not NoneType"):
        xpusim.run(H100, None)
    with pytest.raises(TypeError, match="sweep must be a path or a dict, not NoneType"):
        xpusim.sweep(None)
    xpusim.check(H100, GEMM)  # good input: nothing raised


def test_sweep_returns_rows(tmp_path):
    spec = {"xpusim_sweep": 1, "name": "api", "configs": [H100], "traces": [os.path.join(ROOT, "tests", "data", "gemm-2k.yaml")],
            "axes": {"sm.count": [66, 132]}}
    rows = xpusim.sweep(spec, out=tmp_path / "sweep", jobs=2)
    records = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    # An axis's column holds numbers (a sort orders 66 before 132, not "132" before "66").
    assert sorted(r["sm.count"] for r in records) == [66, 132]
    assert all(type(r["sm.count"]) is int for r in records)
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


def test_version_is_the_binarys():
    out = subprocess.run([xpusim._cli(), "--version"], capture_output=True, text=True).stdout
    assert xpusim.__version__ and out.startswith(f"xpusim {xpusim.__version__} ")


def test_reports_in_a_folder_and_runs_compared(tmp_path):
    a = xpusim.run(H100, GEMM, set={"power.mode": "fixed_clock"}, out=tmp_path / "h100")
    assert {"report.json", "report.html", "summary.md", "timeline.json"} <= set(os.listdir(tmp_path / "h100"))
    assert a == json.load(open(tmp_path / "h100" / "report.json"))
    xpusim.run(H100, GEMM, set={"power.mode": "fixed_clock", "sm.count": 66}, out=tmp_path / "half")
    rows = xpusim.compare([tmp_path / "h100", tmp_path / "half"], out=tmp_path / "cmp")
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert [r["run"] for r in rows] == ["h100", "half"] and rows[0]["time_ratio"] == 1
    assert rows[1]["time_ratio"] > 1.5 and rows[1]["time_s"] == pytest.approx(a["total"]["time_s"] * rows[1]["time_ratio"], rel=1e-4)
    assert os.path.exists(tmp_path / "cmp" / "compare.md")
    with pytest.raises(xpusim.Error, match=r"sm\.cout.*did you mean 'sm\.count'"):
        xpusim.run(H100, GEMM, set={"sm.cout": 1}, out=tmp_path / "bad")
    with pytest.raises(xpusim.Error, match="no report"):
        xpusim.compare([tmp_path / "h100", tmp_path / "none"])
    with pytest.raises(TypeError, match="tolerance must be a number"):
        xpusim.run(H100, GEMM, tolerance="1%")


def test_a_generated_trace_runs_and_a_served_stream_fits_its_schema(tmp_path):
    card = os.path.join(ROOT, "tests", "data", "models", "tiny-llama.yaml")  # steps in a fraction of a second
    t = xpusim.trace(card, phase="decode", batch=4, context=512, layers=1)
    assert t["xpusim_trace"] == 1 and any(o.get("name") == "lm_head" for o in t["ops"])
    assert xpusim.run(H100, t)["total"]["time_s"] > 0
    with pytest.raises(xpusim.Error, match=r"--phase decod: not one of .*did you mean decode"):
        xpusim.trace(card, phase="decod")
    importlib.import_module("xpusim.serving")  # the serving package beside the function must not replace it
    assert callable(xpusim.serve)
    with pytest.raises(xpusim.Error, match="help is not an option"):
        xpusim.trace(card, phase="decode", help=True)
    with pytest.raises(xpusim.Error, match="unknown option --batc"):
        xpusim.trace(card, phase="decode", batc=8)  # no abbreviations in process
    s = xpusim.serve(H100, card, tmp_path / "serve", rate=4, duration=1, prompt_len=64, output_len=4, max_context=256,
                     bucket_ratio=8, slo_ttft="1s")
    with open(os.path.join(ROOT, "docs", "schemas", "serve-summary.schema.json")) as f:
        schema = json.load(f)
    jsonschema.validate(s, schema, cls=jsonschema.Draft202012Validator)
    for defect in ({"goodput_rps": -1.0}, {"steps": {"decode": 3}}, {"extra": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**s, **defect}, schema, cls=jsonschema.Draft202012Validator)
    assert s["finished"] == s["requests"] > 0 and s["goodput_rps"] is not None
    with pytest.raises(xpusim.Error, match="summary.json exists: give --overwrite"):
        xpusim.serve(H100, card, tmp_path / "serve", rate=4, duration=1)
    with pytest.raises(xpusim.Error, match="unknown option --rat .did you mean --rate"):
        xpusim.serve(H100, card, tmp_path / "serve2", rat=4)


def test_ctrl_c_stops_a_run_within_a_second():
    # A signal sent to the interpreter alone (a notebook's interrupt; a terminal's Ctrl-C also
    # reaches the child) raises KeyboardInterrupt at once and leaves no simulation running.
    import signal
    import threading
    import time
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            # Every CTA of an 8192^3 GEMM: about 20 s on this machine.
            xpusim.run(H100, os.path.join(ROOT, "traces", "gemm", "bf16-8192.yaml"), fidelity="exact")
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 5
