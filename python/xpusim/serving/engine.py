"""The engine as serving uses it: a config's resolved values, and a step's trace simulated into a
report. In process through the package's native part (xpusim._xpusim) where it is built: the
package's own, else the one built beside the binary (BINARY's folder/python/xpusim, as `xpusim
serve` runs the source tree's modules with its build's). Else through the binary (a sanitizer
build has no native part), whose `describe --config` gives the same values and `run` the same
report."""
import functools
import glob
import importlib.util
import json
import os
import re
import subprocess
import tempfile

from .. import workloads
from .stream import fail

# The binary: `xpusim serve` passes its own (--xpusim); the build tree's by default.
BINARY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                      "build", "xpusim")
_native = []  # [module or None], once looked for


def native():
    """The native part, or None: looked for once, at first use (after --xpusim is known)."""
    if not _native:
        try:
            from .. import _xpusim as found  # None where the package's own is not built (xpusim/__init__.py)
        except ImportError:
            found = None
        if found is None:
            for so in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(BINARY)), "python", "xpusim",
                                                    "_xpusim*.so"))):
                spec = importlib.util.spec_from_file_location("xpusim._xpusim", so)
                try:
                    found = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(found)
                    break
                except ImportError:  # built for another Python
                    found = None
        _native.append(found)
    return _native[0]


def _run(cmd):
    """The binary's run of cmd; one that cannot start is an error naming it, not a traceback."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True,
                              env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    except OSError as e:
        fail(f"{cmd[0]}: cannot run it ({e.strerror}); build it, or pass --xpusim")


def in_process():
    return native() is not None


def engine_file():
    """The engine's file, whose bytes a step cache's fingerprint includes."""
    return native().__file__ if native() else BINARY


@functools.lru_cache(maxsize=None)
def resolved(config, sets):
    """{dotted key: value text} of the config with the --set overrides `sets` (a tuple)."""
    n = native()
    if n:
        try:
            return dict(n.resolved(config, list(sets)))
        except (n.Error, RuntimeError) as e:
            fail(str(e))  # the loader's message names the file, line and key
    cmd = [BINARY, "describe", "-q", "--config", config] + sum((["--set", s] for s in sets), [])
    p = _run(cmd)
    if p.returncode != 0:
        fail(p.stderr.strip().removeprefix("error: "))  # it names the file, line and key
    out, path = {}, []
    for line in p.stdout.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        m = re.match(r"^\s*([\w.]+):\s*(.*?)\s*(?:#\s(?:<default>|--set \S+|\S+:\d+:\d+))?$", line)
        if not m:
            continue
        del path[depth:]
        if m.group(2) == "":
            path.append(m.group(1))  # a section
            continue
        text = m.group(2)
        if len(text) >= 2 and text[0] == text[-1] == '"':
            text = json.loads(text)  # a quoted string, as YAML's double quotes escape it
        out[".".join(path + [m.group(1)])] = text
    return out


def value(config, sets, key):
    """One resolved value as text."""
    got = resolved(config, tuple(sets))
    if key not in got:
        fail(f"{config}: no {key} in its resolved values")
    return got[key]


def generate(argv):
    """A step's trace from the generator (xpusim.workloads), in process."""
    from .. import cli
    try:
        return workloads.generate(argv)
    except (workloads.WorkloadError, cli.UsageError) as e:
        fail(f"the trace generator refused {' '.join(argv)}: {e}")


def simulate(config, trace, sets, what, jsonl=False, kernels=None):
    """report.json of `trace` (a dict) simulated on `config` with --set `sets`, as a dict. `what`
    names the step in an error. jsonl: pass the trace as JSON Lines (a training step's tens of
    thousands of ops load faster than as YAML). kernels: (kernel cache file whose records the
    run reuses, file its new records go to), or None (sim/engine/kernel_cache.h)."""
    with tempfile.TemporaryDirectory(prefix="xpusim-serve-") as tmp:
        path = os.path.join(tmp, "step.jsonl" if jsonl else "step.yaml")
        with open(path, "w") as f:
            f.write(workloads.dump_jsonl(trace) if jsonl else workloads.dump(trace))
        n = native()
        if n:
            try:
                return json.loads(n.run(config, path, list(sets), [], "fast", 0.01, *(kernels or ("", ""))))
            except (n.Error, RuntimeError) as e:  # bad input, a stalled simulation, a child that died
                fail(f"xpusim failed on {what}: {e}")
        out = os.path.join(tmp, "out")
        cmd = [BINARY, "run", "-q", "-c", config, "-t", path, "--out", out] + sum((["--set", s] for s in sets), [])
        if kernels:
            cmd += ["--kernel-cache", kernels[0], "--kernel-cache-out", kernels[1]]
        p = _run(cmd)
        if p.returncode != 0:
            fail(f"xpusim run failed on {what}:\n{p.stderr.strip()}")
        with open(os.path.join(out, "report.json")) as f:
            return json.load(f)
