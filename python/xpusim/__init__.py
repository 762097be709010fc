"""xpusim from Python: simulate a trace on a chip and get the report as a dict, check inputs,
and run sweeps (docs/python.md).

    import xpusim
    report = xpusim.run("configs/h100-sxm.yaml", "traces/gemm/bf16-8192.yaml", set={"sm.count": 100})
    print(report["total"]["time_s"], report["total"]["tflops"])

A config or a trace is a path, or a dict holding what its YAML file would (it is written to a
temporary file, so its errors name that file). Bad input raises xpusim.Error (a ValueError)
with the message the CLI prints: file, line, column and key.
"""
import json
import os
import subprocess
import tempfile

import yaml

from ._xpusim import Error
from . import _xpusim

__all__ = ["Error", "run", "check", "sweep"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _assignments(values, what):
    """{"sm.count": 100} or ["sm.count=100"] -> ["sm.count=100"]."""
    if values is None:
        return []
    if isinstance(values, dict):
        out = []
        for k, v in values.items():
            if isinstance(v, bool):
                v = "true" if v else "false"
            out.append(f"{k}={v}")
        return out
    if isinstance(values, (list, tuple)):
        return [str(v) for v in values]
    raise TypeError(f"{what} must be a dict (key: value) or a list of 'key=value' strings, not {type(values).__name__}")


class _Inputs:
    """Paths for configs and traces given as paths or as dicts (dicts go to temporary YAML files)."""

    def __init__(self):
        self._tmp = None

    def path(self, x, what):
        if x is None:
            return ""
        if isinstance(x, (str, os.PathLike)):
            return os.fspath(x)
        if isinstance(x, dict):
            if self._tmp is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="xpusim-")
            path = os.path.join(self._tmp.name, f"{what}.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(x, f, sort_keys=False)
            return path
        raise TypeError(f"{what} must be a path or a dict, not {type(x).__name__}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._tmp is not None:
            self._tmp.cleanup()


def run(config, trace, set=None, trace_set=None, fidelity="fast", tolerance=0.01):
    """Simulates `trace` on `config`; returns the report (report.json, docs/report-format.md) as a dict.

    set: config overrides, {"sm.count": 100} or ["sm.count=100"] (as --set); trace_set: trace
    overrides such as {"dtype": "fp8"} (as --trace-set); fidelity: "fast" or "exact"."""
    with _Inputs() as inputs:
        text = _xpusim.run(inputs.path(config, "config"), inputs.path(trace, "trace"), _assignments(set, "set"),
                           _assignments(trace_set, "trace_set"), fidelity, float(tolerance))
    return json.loads(text)


def check(config=None, trace=None, set=None, trace_set=None):
    """Loads and checks a config, a trace or both (with both, that every op lowers onto the chip);
    raises xpusim.Error on bad input, returns None."""
    if config is None and trace is None:
        raise TypeError("check() needs a config, a trace or both")
    with _Inputs() as inputs:
        _xpusim.check(inputs.path(config, "config"), inputs.path(trace, "trace"), _assignments(set, "set"),
                      _assignments(trace_set, "trace_set"))


def _cli():
    """The xpusim binary built beside this package (build/xpusim), or XPUSIM_BIN."""
    path = os.environ.get("XPUSIM_BIN") or os.path.join(_HERE, "..", "..", "xpusim")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no xpusim binary at {path} (set XPUSIM_BIN)")
    return path


def sweep(spec, out=None, jobs=None, resume=False):
    """Runs a sweep spec (a path or a dict, docs/sweeps.md) with `xpusim sweep`; returns its rows
    (results.jsonl) as a pandas DataFrame when pandas is installed, else as a list of dicts."""
    with _Inputs() as inputs:
        path = inputs.path(spec, "sweep")
        if isinstance(spec, dict) and out is None:
            raise TypeError("sweep() of a spec given as a dict needs out= (a folder for its results)")
        cmd = [_cli(), "sweep", path, "-q"]
        if out is not None:
            cmd += ["-o", os.fspath(out)]
        if jobs is not None:
            cmd += ["-j", str(int(jobs))]
        if resume:
            cmd += ["--resume"]
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            lines = [l for l in r.stderr.splitlines() if l.startswith("error: ")]
            raise Error(lines[0][len("error: "):] if lines else r.stderr.strip())
        folder = os.fspath(out) if out is not None else os.path.join("sweep-out", yaml.safe_load(open(path)).get("name", ""))
        with open(os.path.join(folder, "results.jsonl")) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)
