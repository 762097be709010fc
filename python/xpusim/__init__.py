"""xpusim from Python: simulate a trace on a chip and get the report as a dict, check inputs,
generate LLM traces, serve a request stream, compare runs and run sweeps (docs/python.md).

    import xpusim
    report = xpusim.run("configs/h100-sxm.yaml", "traces/gemm/bf16-8192.yaml", set={"sm.count": 100})
    print(report["total"]["time_s"], report["total"]["tflops"])

A config or a trace is a path, or a dict holding what its YAML file would (it is written to a
temporary file, so its errors name that file). Bad input raises xpusim.Error (a ValueError)
with the message the CLI prints: file, line, column and key.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import yaml

try:
    from . import _xpusim
    from ._xpusim import Error
except ImportError:  # the source tree's python/ folder: its pure-Python modules (serving, workloads) work
    _xpusim = None   # without the native part, which run() and check() need

    class Error(ValueError):
        """Bad input: the message names the file, line, column and key."""

__all__ = ["Error", "run", "check", "trace", "serve", "compare", "sweep", "__version__"]
__version__ = _xpusim.__version__ if _xpusim else "unknown (the native part is not built here)"


def _native():
    if _xpusim is None:
        raise ImportError(f"xpusim's native part is not beside {_HERE}: build the project (scripts/build.sh) and put "
                          "build/python on PYTHONPATH, or install it (cmake --install build)")
    return _xpusim

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

    def path(self, x, what, optional=False):
        """`x` as a path; None is "not given" (an empty path) where `optional`, else an error naming `what`."""
        if x is None and optional:
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


def run(config, trace, set=None, trace_set=None, fidelity="fast", tolerance=None, out=None, kernel_cache=None):
    """Simulates `trace` on `config`; returns the report (report.json, docs/report-format.md) as a dict.

    set: config overrides, {"sm.count": 100} or ["sm.count=100"] (as --set); trace_set: trace
    overrides such as {"dtype": "fp8"} (as --trace-set); fidelity: "fast" or "exact"; out: a
    folder for the reports `xpusim run --out` writes (report.html, summary.md, timeline.json, ...);
    kernel_cache: a file of kernels earlier runs simulated, replayed where met again, and this
    run's new ones appended (as --kernel-cache; docs/performance.md)."""
    if tolerance is not None and fidelity == "exact":
        raise ValueError("tolerance applies to fidelity='fast' (how steady a state must be to extrapolate it); "
                         "fidelity='exact' simulates every CTA")
    if kernel_cache is not None and fidelity == "exact":
        raise ValueError("kernel_cache applies to fidelity='fast' (kernels replayed from a record); "
                         "fidelity='exact' simulates every kernel")
    kernels = "" if kernel_cache is None else _path(kernel_cache, "kernel_cache")
    if kernel_cache is not None and not kernels:
        raise ValueError("kernel_cache names a file; it is empty")
    tolerance = 0.01 if tolerance is None else _number(tolerance, "tolerance")
    with _Inputs() as inputs:
        c, t = inputs.path(config, "config"), inputs.path(trace, "trace")
        sets, trace_sets = _assignments(set, "set"), _assignments(trace_set, "trace_set")
        if out is None:
            text = _native().run(c, t, sets, trace_sets, fidelity, tolerance, kernels)
            return json.loads(text)
        cmd = [_cli(), "run", "-q", "--config", c, "--trace", t, "--out", _path(out, "out"), "--fidelity", str(fidelity)]
        if fidelity == "fast":  # the binary refuses a tolerance with exact fidelity, where nothing is extrapolated
            cmd += ["--tolerance", repr(tolerance)]
        if kernels:
            cmd += ["--kernel-cache", kernels]
        cmd += sum((["--set", x] for x in sets), []) + sum((["--trace-set", x] for x in trace_sets), [])
        _command(cmd)
    with open(os.path.join(os.fspath(out), "report.json")) as f:
        return json.load(f)


def check(config=None, trace=None, set=None, trace_set=None):
    """Loads and checks a config, a trace or both (with both, that every op lowers onto the chip);
    raises xpusim.Error on bad input, returns None."""
    if config is None and trace is None:
        raise TypeError("check() needs a config, a trace or both")
    with _Inputs() as inputs:
        _native().check(inputs.path(config, "config", True), inputs.path(trace, "trace", True), _assignments(set, "set"),
                      _assignments(trace_set, "trace_set"))


def _number(x, what):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{what} must be a number, not {type(x).__name__}")
    return float(x)


def _path(x, what):
    if not isinstance(x, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path, not {type(x).__name__}")
    return os.fspath(x)


def _command(cmd):
    """Runs one of xpusim's commands; its error line (file, line, key) becomes xpusim.Error."""
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    # The binary's Python commands (serve, the sweep's page) run in this interpreter, which has
    # the packages this script has (a virtual environment's), unless the caller chose another.
    env.setdefault("XPUSIM_PYTHON_EXE", sys.executable)
    r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    if r.returncode != 0:
        prefixes = ("error: ", "xpusim-serve: ", "xpusim-trace: ")
        lines = [l for l in r.stderr.splitlines() if l.startswith(prefixes)]
        msg = lines[0] if lines else r.stderr.strip() or f"{os.path.basename(cmd[0])} exited with {r.returncode}"
        for p in prefixes:
            msg = msg[len(p):] if msg.startswith(p) else msg
        raise Error(msg)
    return r.stdout


def _flags(options):
    """Keyword options as a command's flags: slo_ttft="500ms" -> --slo-ttft 500ms, offline=True ->
    --offline (False and None leave a flag out), set={"k": v} or a list -> --set k=v each."""
    out = []
    for k, v in options.items():
        flag = "--" + k.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            out.append(flag)
        elif k == "set":
            out += sum(([flag, x] for x in _assignments(v, "set")), [])
        elif isinstance(v, (list, tuple)):
            out += [flag, ",".join(str(x) for x in v)]
        else:
            out += [flag, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    return out


def trace(model, out=None, **options):
    """Generates an LLM trace from a model card (xpusim.workloads, which scripts/xpusim-trace.py
    wraps; docs/workloads.md); returns it as a dict, which run() takes as it is. options are the
    generator's flags: trace("configs/models/llama-3-8b.yaml", phase="decode", batch=8,
    context=1024, tp=2). out: a file to write it to as well (YAML, or JSON Lines for .jsonl)."""
    from . import cli, workloads
    argv = [_path(model, "model")] + _flags(options)
    try:
        t = workloads.generate(argv)
    except (workloads.WorkloadError, cli.UsageError) as e:
        raise Error(str(e)) from None
    if out is not None:
        text = workloads.dump_jsonl(t) if os.fspath(out).endswith(".jsonl") else workloads.dump(t)
        with open(_path(out, "out"), "w") as f:
            f.write(text)
    return t


def serve(config, model, out, **options):
    """Serves a request stream on a model replica with `xpusim serve` (docs/serving.md); returns
    summary.json as a dict (out/results.jsonl has a line per request). options are its flags:
    serve(cfg, card, "serve-out", requests="reqs.jsonl", tp=2, slo_ttft="500ms", runtime="vllm")."""
    _command([_cli(), "serve", "-q", "--config", _path(config, "config"), "--model", _path(model, "model"),
              "--out", _path(out, "out")] + _flags(options))
    with open(os.path.join(os.fspath(out), "summary.json")) as f:
        return json.load(f)


def compare(runs, out=None):
    """Puts runs side by side as `xpusim compare` does (each an output folder of run(out=...) or its
    report.json); returns a row per run (compare.csv: time, throughput, energy, ratios to the
    first, bound, the energy's shares) as a pandas DataFrame when pandas is installed, else dicts.
    out: a folder for compare.md and compare.csv."""
    if isinstance(runs, (str, os.PathLike)) or len(runs) < 2:
        raise TypeError("compare() needs a list of two or more runs")
    import csv
    with tempfile.TemporaryDirectory(prefix="xpusim-") as tmp:
        folder = _path(out, "out") if out is not None else tmp
        _command([_cli(), "compare", "-q", *[_path(r, "a run") for r in runs], "--out", folder])
        with open(os.path.join(folder, "compare.csv")) as f:
            rows = [{k: _typed(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return _frame(rows)


def _typed(v):
    """A CSV or sweep cell as the number it spells, else as it is."""
    if not isinstance(v, str):
        return v
    try:
        x = float(v)
    except ValueError:
        return v
    if not math.isfinite(x):
        return v
    return int(x) if x.is_integer() and "." not in v and "e" not in v.lower() else x


def _frame(rows):
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


def _cli():
    """The xpusim binary: XPUSIM_BIN, else the one built beside this package (build/xpusim), else
    the one installed with it (PREFIX/bin/xpusim for PREFIX/lib/python3.X/dist-packages/xpusim),
    else the PATH's."""
    import shutil
    env = os.environ.get("XPUSIM_BIN")
    if env:
        if not os.path.exists(env):
            raise FileNotFoundError(f"XPUSIM_BIN={env}: no such file")
        return env
    for path in (os.path.join(_HERE, "..", "..", "xpusim"), os.path.join(_HERE, "..", "..", "..", "..", "bin", "xpusim")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    found = shutil.which("xpusim")
    if not found:
        raise FileNotFoundError("no xpusim binary beside the package, installed with it or on the PATH (set XPUSIM_BIN)")
    return found


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
        if out is not None:
            folder = os.fspath(out)
        else:  # the CLI's default: sweep-out/<the spec's name, else its file's stem>
            with open(path) as f:
                name = (yaml.safe_load(f) or {}).get("name")
            folder = os.path.join("sweep-out", str(name) if name else os.path.splitext(os.path.basename(path))[0])
        with open(os.path.join(folder, "results.jsonl")) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    # An axis's values are written as the spec spells them (sm.count "66"): columns whose every
    # value is a number become numbers, so that a sort or a pivot orders 66, 100, 132.
    text = {"id", "status", "error", "config", "model", "trace", "chip", "bound", "out"}
    for col in {k for r in rows for k in r} - text:
        vals = [r[col] for r in rows if r.get(col) not in (None, "")]
        if vals and all(isinstance(_typed(v), (int, float)) for v in vals):
            for r in rows:
                if r.get(col) not in (None, ""):
                    r[col] = _typed(r[col])
    return _frame(rows)
