"""The serving step cache's keys and file (`xpusim serve --step-cache`, OUT/step-cache.json).

A cached step time is only as good as what it was simulated from, so every key starts with a
fingerprint of everything a step's time depends on that its key does not spell out:

  - the resolved hardware config with the run's --set overrides (serving.engine.resolved: its
    values by key, and for a value naming a file, such as the energy table, that file's content;
    so an included config, an override or an edit in place all change it, and moving the files
    does not);
  - the model card's content;
  - the engine (the bytes of the native part, or of the xpusim binary where steps run through
    it), and the sources that make the steps (xpusim.workloads, xpusim.serving, the runtime
    profiles' and samplers' modules).

The rest of the key (phase, rows, lengths, formats, sampler, engine overrides) is readable text.
Entries whose fingerprint differs are never used; they stay in the file for the runs they belong
to. A file that is not a JSON object, or an entry that is not a list of finite, non-negative
numbers, is an error naming the file (and the key): a cache is never silently rewritten.

Needs nothing beyond the standard library."""
import hashlib
import json
import math
import os


class StepCacheError(ValueError):
    pass


def _file_digest(h, path):
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)


def fingerprint(resolved, model_path, engine_path, sources):
    """A 16-hex-digit digest of the resolved config ({dotted key: value text}), the model card's
    bytes, the engine's bytes and the source files that make the steps."""
    h = hashlib.sha256()
    values = []
    for key, value in sorted(resolved.items()):
        # A value naming a file (the energy table: resolved to an absolute path) stands for the
        # file's content, not its path.
        if os.path.isabs(value) and os.path.isfile(value):
            inner = hashlib.sha256()
            _file_digest(inner, value)
            value = inner.hexdigest()
        values.append(f"{key}: {value}")
    h.update("\n".join(values).encode())
    for path in [model_path, engine_path] + list(sources):
        h.update(b"\0" + os.path.basename(path).encode() + b"\0")
        _file_digest(h, path)
    return h.hexdigest()[:16]


def load(path):
    """The cache file's entries, checked: {} when there is none yet."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise StepCacheError(f"{path}: cannot read the step cache: {e.strerror}") from None
    try:
        got = json.loads(text)
    except json.JSONDecodeError as e:
        raise StepCacheError(f"{path}:{e.lineno}:{e.colno}: the step cache is not valid JSON ({e.msg}; "
                             f"truncated?): delete it, or name another with --step-cache") from None
    if not isinstance(got, dict):
        raise StepCacheError(f"{path}: the step cache is not a JSON object of step keys")
    for key, v in got.items():
        if not isinstance(v, list) or not v or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0 for x in v):
            raise StepCacheError(f"{path}: step '{key}': {json.dumps(v)[:80]} is not a list of finite, "
                                 f"non-negative times and energies: delete the file, or name another with --step-cache")
    return got
