"""The request stream of `xpusim serve`: generated (Poisson or uniform arrivals, lengths from a
distribution), a closed loop of clients, or read from a JSON Lines file, every field checked
and the file's size bounded before anything is simulated. Errors are ServeError naming the file,
line and field, or the flag; a request that could never fit one engine's KV cache is refused
when the stream is read (as `--check` reads it), not when the scheduler meets it.

Needs nothing beyond the standard library."""
import json
import math
import random

REQUEST_FIELDS = {"id", "arrival", "prompt_tokens", "output_tokens", "priority"}
# Bounds on the work a run may ask for, checked before any of it starts.
MAX_REQUESTS = 10_000_000  # requests in a stream, generated or read
MAX_REPLICAS = 4096        # model replicas (or prefill plus decode replicas)
MAX_LINE = 1 << 20         # bytes in one line of a request file


class ServeError(Exception):
    pass


def fail(msg):
    raise ServeError(msg)



def parse_length(text, flag):
    """A length distribution: N (fixed), uniform:A:B, or normal:MEAN:SD (clipped at 1)."""
    parts = text.split(":")
    try:
        if len(parts) == 1:
            n = int(parts[0])
            if n < 1:
                raise ValueError
            return lambda rng: n
        kind, a, b = parts
        a, b = float(a), float(b)
        if kind == "uniform" and 1 <= a <= b:
            return lambda rng: rng.randint(int(a), int(b))
        if kind == "normal" and a >= 1 and b >= 0:
            return lambda rng: max(1, int(round(rng.gauss(a, b))))
    except ValueError:
        pass
    fail(f"{flag} {text}: expected a token count, uniform:MIN:MAX or normal:MEAN:SD (lengths of at least 1)")


def check_volume(shown, rate, duration):
    """The stream `rate` x `duration` makes is bounded (`shown` names the flags that set the rate)."""
    if rate * duration > MAX_REQUESTS:
        fail(f"{shown} x --duration {duration}: more than {MAX_REQUESTS} requests (about {rate * duration:.3g})")


def _lengths(a, max_context):
    """A draw of (prompt, output) tokens from --prompt-len and --output-len, clipped to the context."""
    prompt, output = parse_length(a.prompt_len, "--prompt-len"), parse_length(a.output_len, "--output-len")

    def draw(rng):
        p, o = prompt(rng), output(rng)
        if p + o > max_context:
            p = max(1, max_context - o)
            o = min(o, max_context - p)
        return p, o
    return draw


def generate_requests(a, max_context):
    if a.concurrency:
        return closed_loop_requests(a, max_context)
    if not (a.rate > 0 and a.duration > 0 and math.isfinite(a.rate * a.duration)):
        fail("--rate and --duration must be positive and finite")
    check_volume(f"--rate {a.rate}", a.rate, a.duration)  # every caller's bound, --rates' points included
    rng = random.Random(a.seed)
    lengths = _lengths(a, max_context)
    reqs, t = [], 0.0
    while True:
        if a.arrivals == "poisson":
            t += rng.expovariate(a.rate)
        else:  # bursty: gamma inter-arrival times with a coefficient of variation of 2, the same mean rate
            t += rng.gammavariate(0.25, 4.0 / a.rate)
        if t >= a.duration:
            break
        p, o = lengths(rng)
        reqs.append({"id": str(len(reqs)), "arrival": t, "prompt_tokens": p, "output_tokens": o, "priority": 0})
        if len(reqs) > MAX_REQUESTS:  # bursty arrivals run past the mean
            fail(f"--rate {a.rate:g} x --duration {a.duration:g}: more than {MAX_REQUESTS} requests")
    return reqs


def closed_loop_requests(a, max_context):
    """--num-requests requests for --concurrency clients (arrivals set as clients send them)."""
    if a.num_requests < 1:
        fail("--num-requests must be at least 1")
    rng = random.Random(a.seed)
    lengths = _lengths(a, max_context)
    reqs = []
    for i in range(a.num_requests):
        p, o = lengths(rng)
        reqs.append({"id": str(i), "arrival": 0.0, "prompt_tokens": p, "output_tokens": o, "priority": 0})
    return reqs


def kv_need(tokens, block_size):
    """KV blocks a request of `tokens` (prompt and output) holds at its last step."""
    return -(-tokens // block_size)


def _check_fits(rid, n, kv, what):
    blocks, size = kv
    if kv_need(n, size) > blocks:
        fail(f"{what}: request {rid}'s {n} tokens need {kv_need(n, size)} KV blocks of {size}, more than "
             f"the {blocks} one engine's cache holds (--kv-blocks, --gpu-memory-utilization, --max-context)")


def check_kv_fit(reqs, kv, what):
    """Every request fits one engine's KV cache alone, so it can always be admitted: kv is
    (blocks, block size). `what` names where the requests came from."""
    for r in reqs:
        _check_fits(r["id"], r["prompt_tokens"] + r["output_tokens"], kv, what)


def load_requests(path, max_context, kv=None):
    reqs, seen = [], {}
    lines = []  # (line number, text) of the lines that are requests: not blank, not comments
    try:
        with open(path, "rb") as f:
            for n, raw in enumerate(iter(lambda: f.readline(MAX_LINE + 1), b""), 1):
                if len(raw) > MAX_LINE:
                    fail(f"{path}:{n}: a line longer than {MAX_LINE} bytes is not a request")
                s = raw.decode("utf-8", "replace").strip()
                if s and not s.startswith("#"):
                    lines.append((n, s))
                    if len(lines) > MAX_REQUESTS:
                        fail(f"{path}:{n}: more than {MAX_REQUESTS} requests")
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    for n, s in lines:
        where = f"{path}:{n}"
        def unique(pairs):
            keys = [k for k, _ in pairs]
            for k in keys:
                if keys.count(k) > 1:
                    fail(f"{where}: field '{k}' appears twice in one request")
            return dict(pairs)

        def no_constant(name):
            fail(f"{where}: {name} is not a JSON number")

        try:
            r = json.loads(s, object_pairs_hook=unique, parse_constant=no_constant)
        except json.JSONDecodeError as e:
            fail(f"{where}: not a JSON object ({e.msg} at column {e.colno})")
        if not isinstance(r, dict):
            fail(f"{where}: a request is a JSON object, got {type(r).__name__}")
        for k in r:
            if k not in REQUEST_FIELDS:
                fail(f"{where}: unknown field '{k}' (known: {', '.join(sorted(REQUEST_FIELDS))})")
        for k in ("arrival", "prompt_tokens", "output_tokens"):
            if k not in r:
                fail(f"{where}: missing field '{k}'")
        if not isinstance(r["arrival"], (int, float)) or isinstance(r["arrival"], bool) or r["arrival"] < 0 \
                or not math.isfinite(r["arrival"]):
            fail(f"{where}: field 'arrival' must be a time in seconds, at least 0")
        for k in ("prompt_tokens", "output_tokens"):
            if not isinstance(r[k], int) or isinstance(r[k], bool) or r[k] < 1:
                fail(f"{where}: field '{k}' must be a whole number of tokens, at least 1")
        if "priority" in r and (not isinstance(r["priority"], int) or isinstance(r["priority"], bool)):
            fail(f"{where}: field 'priority' must be an integer")
        if r["prompt_tokens"] + r["output_tokens"] > max_context:
            fail(f"{where}: prompt_tokens + output_tokens = {r['prompt_tokens'] + r['output_tokens']} exceeds the "
                 f"model's context of {max_context} tokens (--max-context)")
        if kv:
            _check_fits(r.get("id", len(reqs)), r["prompt_tokens"] + r["output_tokens"], kv, where)
        rid = str(r.get("id", len(reqs)))
        if rid in seen:
            fail(f"{where}: field 'id' {rid!r} repeats line {seen[rid]}")
        seen[rid] = n
        reqs.append({"id": rid, "arrival": float(r["arrival"]), "prompt_tokens": r["prompt_tokens"],
                     "output_tokens": r["output_tokens"], "priority": r.get("priority", 0)})
    if not reqs:
        fail(f"{path}: no requests")
    reqs.sort(key=lambda r: r["arrival"])
    return reqs
