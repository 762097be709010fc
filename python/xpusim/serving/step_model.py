"""Step times and energies from the engine at the points of a batch ladder and a length ladder,
cached by content (serve.step_cache), interpolated and composed for any step the scheduler runs."""
import bisect
import concurrent.futures
import fcntl
import json
import math
import os
import tempfile
import time

from . import engine
from . import step_cache as STEPCACHE
from .stream import fail


def ladder(lo, ratio, top):
    out, x = [], float(lo)
    while x < top * ratio:
        v = int(math.ceil(x))
        if not out or v > out[-1]:
            out.append(v)
        x *= ratio
    return out


class StepModel:
    """Step times and energies from xpusim at the points of two ladders, cached.

    A step is split as the engine's report splits it: the attention kernels, and everything else
    (the dense part: GEMMs against the weights, norms, activations, all-reduces), whose work
    depends only on how many token rows the step carries. So:
      - a decode step of B sequences at mean context C is simulated as such, at the points of a
        batch ladder (1, 2, 4, 8, multiples of 8 to 128, then eight points per doubling) and a
        length ladder, and interpolated bilinearly;
      - a prefill of sequences of n_i new tokens after p_i cached ones costs the dense part at
        N = sum n_i rows plus each sequence's attention, both from prefills of one sequence at the
        length ladder's points: dense(N) = t(N) - attention(N), and a sequence's attention a(n)
        (interpolated in its query-key pairs, n^2 / 2) plus, after p cached tokens, what they add
        to the attention kernel simulated alone at the points of the length and past ladders
        around (n, p);
      - a mixed step (chunked prefill: B decodes and prefill chunks) is the decode step plus the
        dense part's growth from B to B + N rows plus the chunks' attention.
    Points missing from the cache are simulated --jobs at a time."""

    # Per point: time, energy, the attention kernels' time and energy, and the collectives' time
    # where no kernel runs beside them (the report's time_breakdown.collectives_s).
    VALUES = 5

    def __init__(self, a, card, out):
        self.a, self.card, self.out = a, card, out
        self.path = a.step_cache or os.path.join(out, "step-cache.json")
        # Kernels recorded by earlier steps (sim/engine/kernel_cache.h), beside the step cache.
        self.kernels = os.path.splitext(self.path)[0] + ".kernels" if getattr(a, "kernel_cache", True) else None
        self.cache = {}
        self.fingerprint = self.content_fingerprint()
        self.merge_file()
        self.lengths = ladder(16, a.bucket_ratio, max(a.max_context, a.max_batched_tokens))
        # No point beyond the model's context (one sequence that long is not the model): the
        # ladder ends at the context, and steps of more rows extend along its last two points.
        cap = card.get("context")
        if cap and self.lengths[-1] > cap:
            below = [x for x in self.lengths if x < cap]
            if below and cap / below[-1] < math.sqrt(a.bucket_ratio):
                below.pop()  # too close to the cap to extend a slope from
            self.lengths = below + [cap]
        self.pasts = [0] + self.lengths  # tokens cached before a chunk
        self.jobs = max(1, a.jobs or os.cpu_count() or 1)
        self.simulated = 0
        self.bucket_checks = []

    def content_fingerprint(self):
        """What a step's time depends on beyond its key's text: the resolved config, the model
        card, the engine, and the sources that make the steps (the trace generator, the runtime
        profiles and samplers, this package) (serve.step_cache)."""
        a = self.a
        here = os.path.dirname(os.path.abspath(__file__))
        package = os.path.dirname(here)
        sources = sorted(os.path.join(d, f) for d in (here, os.path.join(package, "workloads"))
                         for f in os.listdir(d) if f.endswith(".py"))
        sources += [os.path.join(package, f) for f in ("runtime.py", "sampler.py")]
        try:
            return STEPCACHE.fingerprint(engine.resolved(a.config, tuple(a.set)), a.model, engine.engine_file(), sources)
        except OSError as e:
            fail(f"{e.filename}: cannot read it for the step cache's fingerprint: {e.strerror}")

    @staticmethod
    def batch_bracket(b):
        """The batch ladder's points on either side of b: 1, 2, 4, 8, multiples of 8 up to 128,
        then eight points per doubling (multiples of 16 to 256, of 32 to 512, ...)."""
        for lo, hi in ((1, 1), (1, 2), (2, 4), (4, 8)):
            if b <= hi:
                return (hi, hi) if b == hi else (lo, hi)
        step = max(8, 2 ** (b.bit_length() - 1) // 8)
        lo = b // step * step
        return (lo, lo) if lo == b else (lo, lo + step)

    def length_bracket(self, n, ladder=None):
        """The ladder's points on either side of n: the same point when n is on it or below it,
        the last two above it (extrapolated: step times grow linearly with rows and context)."""
        lad = ladder or self.lengths
        i = bisect.bisect_left(lad, n)
        if i == 0:
            return lad[0], lad[0]
        if i == len(lad):
            return lad[-2], lad[-1]
        return lad[i - 1], lad[i]

    def key(self, phase, batch, length, past=0):
        a = self.a
        where = f" past{past}" if past else ""
        rt = f" sampler-{a.sampler}" if a.sampler else ""
        rt += "".join(f" {s}" for s in self.runtime_sets(phase, batch))
        if a.rt and a.tp > 1:
            rt += f" all-reduce {a.rt.all_reduce_summary()}"
        if not self.kernels:
            rt += " every-kernel"  # simulated without the kernel cache
        return (f"{self.fingerprint} {phase} b{batch} n{length}{where} tp{a.tp} w{a.weights} m{a.math or a.weights} "
                f"kv{a.kv} page{a.kv_page} {os.path.basename(a.model)} {os.path.basename(a.config)} {' '.join(a.set)}{rt}")

    def runtime_sets(self, phase, batch):
        """The runtime's engine overrides for a point: eager issue where it runs the step without
        a CUDA graph (a prefill's attention kernel alone runs as its prefill does; the decode part
        of a mixed step, `decode_mixed`, as a prefill step: graphs hold decode-only batches)."""
        if not self.a.rt:
            return []
        return self.a.rt.engine_sets("decode" if phase == "decode" else "prefill", batch)

    # -- the points -------------------------------------------------------------------------

    def merge_file(self):
        """Take in the points the cache file has (another run sharing it may have added some);
        a file or entry that is not a step cache's is an error naming it, never rewritten."""
        try:
            got = STEPCACHE.load(self.path)
        except STEPCACHE.StepCacheError as e:
            fail(str(e))
        for k, v in got.items():
            self.cache.setdefault(k, v)

    def own(self):
        """This run's entries: those with its fingerprint."""
        return sum(1 for k in self.cache if k.startswith(self.fingerprint + " "))

    def missing(self, points):
        todo = []
        for p in points:
            k = self.key(*p)
            if (k not in self.cache or len(self.cache[k]) != self.VALUES) and p not in todo:
                todo.append(p)
        return todo

    def ensure(self, points):
        """Simulate the points (phase, batch, length, past) not yet in the cache, --jobs at once.
        Runs may share a cache file (the points of an `xpusim sweep` do): it is read again before
        simulating and merged under a lock when written, so that no run's points are lost."""
        if not self.missing(points):
            return
        self.merge_file()
        todo = self.missing(points)
        if not todo:
            return
        progress = self.a.progress
        progress.start(len(todo))

        lead = self.leaders(todo)
        # The cache's records as this call found them, read once for every follower.
        base = self.kernel_bodies([self.kernels]) if any(x is not None for x in lead) else []
        with tempfile.TemporaryDirectory(prefix="xpusim-kernels-") as tmp:
            def out(i):
                return os.path.join(tmp, f"{i}.kernels")
            futures = {}

            def one(i):
                p = todo[i]
                reads = self.kernels
                if lead[i] is not None:  # after its leader, with the leader's new kernels
                    futures[lead[i]].result()
                    reads = os.path.join(tmp, f"{i}.in")
                    self.combine_kernels(reads, base + self.kernel_bodies([out(lead[i])]))
                t0 = time.monotonic()
                v = self.simulate(*p, kernels_in=reads, kernels_out=out(i))
                progress.done(f"{p[0]} step, batch {p[1]}, length {p[2]}" + (f" after {p[3]}" if p[3] else ""),
                              time.monotonic() - t0)
                return v
            order = sorted(range(len(todo)), key=lambda i: lead[i] is not None)  # leaders first
            if len(todo) == 1 or self.jobs == 1:
                for i in order:
                    futures[i] = concurrent.futures.Future()
                    futures[i].set_result(one(i))
            else:
                # Leaders are queued first, so a follower waiting for its leader never holds the
                # worker its leader needs.
                with concurrent.futures.ThreadPoolExecutor(min(self.jobs, len(todo))) as pool:
                    for i in order:
                        futures[i] = pool.submit(one, i)
            results = [futures[i].result() for i in range(len(todo))]
            self.merge_kernels([out(i) for i in range(len(todo))])
        progress.end()
        for p, v in zip(todo, results):
            if not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in v):
                fail(f"xpusim gave a {p[0]} step (batch {p[1]}, length {p[2]}) the times and energies {v}: "
                     f"not finite and non-negative, so not cached")
            self.cache[self.key(*p)] = v
        self.simulated += len(todo)
        folder = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)  # the cache's folder is the lock: no lock file left behind
            self.merge_file()
            tmp = f"{self.path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump(self.cache, f, indent=0, allow_nan=False)
            os.replace(tmp, self.path)
        finally:
            os.close(folder)  # and the lock with it

    def leaders(self, todo):
        """Per point to simulate (an index into todo), the point whose kernels it waits for, or
        None. A point reuses the kernels of earlier runs and of its leader alone, never those of
        another point simulated beside it, so its result does not depend on which finished
        first: a decode point waits for the first point of its phase and batch (whose dense
        kernels it then replays); the others wait for none."""
        lead, first = [None] * len(todo), {}
        for i, (phase, batch, _, _) in enumerate(todo):
            if self.kernels and phase.startswith("decode"):
                lead[i] = first.setdefault((phase, batch), i)
                if lead[i] == i:
                    lead[i] = None
        return lead

    MAGIC = b"xpusim kernel cache 1\n"

    def kernel_bodies(self, files):
        """The records of each kernel cache file that exists and is not empty (its bytes after
        the magic line), each read under a shared lock (writers append under an exclusive one)."""
        parts = []
        for f in files:
            try:
                with open(f, "rb") as fh:
                    fcntl.flock(fh, fcntl.LOCK_SH)
                    data = fh.read()
            except FileNotFoundError:
                continue  # a run that recorded nothing new, or no cache yet
            except OSError as e:
                fail(f"{f}: cannot read the kernel cache: {e.strerror}")
            if data and not data.startswith(self.MAGIC):
                fail(f"{f}: not a kernel cache (it does not start with 'xpusim kernel cache 1'): name another "
                     f"--step-cache, or give --no-kernel-cache")
            parts.append(data[len(self.MAGIC):])
        return parts

    def combine_kernels(self, dest, parts):
        """A kernel cache holding the records `parts` (kernel_bodies), in order (a follower's: the
        cache's, then its leader's new kernels)."""
        try:
            with open(dest, "wb") as f:
                f.write(self.MAGIC + b"".join(parts))
        except OSError as e:
            fail(f"{dest}: cannot write a kernel cache for a step: {e.strerror}")

    def merge_kernels(self, files):
        """Appends the kernels the points' runs recorded to the kernel cache, in the points'
        order, under the cache file's lock (which the engine takes to read it). A failed write is
        undone (a record cut short would make the file unreadable)."""
        if not self.kernels:
            return
        parts = self.kernel_bodies(files)
        if not any(parts):
            return
        try:
            with open(self.kernels, "ab", buffering=0) as out:
                fcntl.flock(out, fcntl.LOCK_EX)
                size = os.fstat(out.fileno()).st_size  # after the lock: another run may have written
                if size:
                    with open(self.kernels, "rb") as head:
                        if head.read(len(self.MAGIC)) != self.MAGIC:
                            fail(f"{self.kernels}: not a kernel cache (it does not start with 'xpusim kernel cache "
                                 f"1'): name another --step-cache, or give --no-kernel-cache")
                try:
                    data = memoryview((b"" if size else self.MAGIC) + b"".join(parts))
                    while data:
                        data = data[os.write(out.fileno(), data):]
                    os.fsync(out.fileno())
                except OSError:
                    os.ftruncate(out.fileno(), size)
                    raise
        except OSError as e:
            fail(f"{self.kernels}: cannot write the kernel cache: {e.strerror}")

    def value(self, phase, batch, length, past=0):
        k = self.key(phase, batch, length, past)
        if k not in self.cache or len(self.cache[k]) != self.VALUES:  # step() asks for its points at once
            self.ensure([(phase, batch, length, past)])
        return self.cache[k]

    def decode_points(self, batch, context, phase="decode"):
        return [(phase, b, n, 0) for b in set(self.batch_bracket(batch)) for n in set(self.length_bracket(context))]

    def line_points(self, n):
        return [("prefill", 1, x, 0) for x in set(self.length_bracket(n))]

    def past_points(self, n, past):
        if not past:
            return []
        return [("attention", 1, x, p) for x in set(self.length_bracket(n))
                for p in set(self.length_bracket(past, self.pasts)) | {0}]

    # -- interpolation ----------------------------------------------------------------------

    def along(self, lo, hi, x, f, g=lambda x: x):
        """f at x, linear in g(x) between the ladder's points lo and hi (held below lo, extended
        above hi). g is what the cost grows with: the rows (default) or an attention's pairs."""
        v0 = f(lo)
        if hi == lo:
            return v0
        v1 = f(hi)
        w = (g(max(x, lo)) - g(lo)) / (g(hi) - g(lo))
        return [u + w * (v - u) for u, v in zip(v0, v1)]

    def decode(self, batch, context, phase="decode"):
        """(time, energy, attention time, attention energy, collectives' time) of a decode step
        (`decode_mixed`: a mixed step's decode part, under the prefill's launch mode)."""
        def at_batch(b):
            lo, hi = self.length_bracket(context)
            return self.along(lo, hi, context, lambda n: self.value(phase, b, n))
        blo, bhi = self.batch_bracket(batch)
        return self.along(blo, bhi, batch, at_batch)

    def line(self, n):
        """(time, energy, attention time, attention energy, collectives' time) of a prefill of one
        sequence of n tokens."""
        lo, hi = self.length_bracket(n)
        return self.along(lo, hi, n, lambda x: self.value("prefill", 1, x))

    def dense(self, rows):
        """(time, energy, collectives' time) of the dense part of a step of `rows` token rows."""
        if rows <= 0:
            return 0.0, 0.0, 0.0
        t, e, ta, ea, tc = self.line(rows)
        return t - ta, e - ea, tc

    def attention(self, n, past):
        """The attention kernels of a prefill of n tokens after `past` cached ones: those of the
        one-sequence prefill of n tokens, plus what the past adds to the kernel simulated alone
        at the points of the two ladders around (n, past)."""
        lo, hi = self.length_bracket(n)
        # Between lengths, linear in the query-key pairs (n^2 / 2 causal, n p more after p cached).
        _, _, ta, ea, _ = self.along(lo, hi, n, lambda x: self.value("prefill", 1, x), lambda x: x * x)
        if not past:
            return ta, ea

        def alone(p):
            plo, phi = self.length_bracket(p, self.pasts)
            return self.along(plo, phi, p, lambda q: self.along(lo, hi, n, lambda x: self.value("attention", 1, x, q),
                                                                 lambda x: x * (x / 2 + q)))
        (t1, e1), (t0, e0) = alone(past)[:2], alone(0)[:2]
        return ta + t1 - t0, ea + e1 - e0

    def step(self, decode=None, prefills=()):
        """(seconds, joules, the collectives' seconds) of a step's kernels: `decode` = (batch, mean
        context) of the sequences that decode a token, or None; `prefills` = [(new tokens, tokens
        already cached), ...]. With a runtime whose CUDA graphs hold the decode batch, the decode
        runs at the captured size: its rows padded up, the same KV bytes read over the padded batch."""
        rt = self.a.rt
        # With a runtime, a decode-only step replays a graph (padded); a mixed step's decode part
        # runs as its prefill does (graphs hold decode-only batches).
        dphase = "decode_mixed" if rt and prefills else "decode"
        if decode and rt and not prefills:
            decode = self.padded(decode)
        rows = sum(n for n, _ in prefills)
        pts = []
        if decode:
            pts += self.decode_points(*decode, phase=dphase)
            if prefills:
                pts += self.line_points(decode[0])
        if prefills:
            pts += self.line_points((decode[0] if decode else 0) + rows)
            for n, past in prefills:
                pts += self.line_points(n) + self.past_points(n, past)
        self.ensure(pts)
        t = e = tc = 0.0
        if decode:
            v = self.decode(*decode, phase=dphase)
            t, e, tc = v[0], v[1], v[4]
        if prefills:
            b = decode[0] if decode else 0
            (t1, e1, c1), (t0, e0, c0) = self.dense(b + rows), self.dense(b)
            t, e, tc = t + t1 - t0, e + e1 - e0, tc + c1 - c0
            for n, past in prefills:
                ta, ea = self.attention(n, past)
                t, e = t + ta, e + ea
        return t, e, tc

    def padded(self, decode):
        """(batch, context) of a decode step as its runtime's CUDA graph runs it: the batch padded
        up to the captured size, the same KV bytes over it."""
        padded = self.a.rt.graph_batch(decode[0]) if self.a.rt else None
        if padded and padded != decode[0]:
            return padded, max(1, round(decode[1] * decode[0] / padded))
        return decode

    def exact(self, phase, batch, length, past=0):
        """(seconds, joules) of a step of this uniform shape, simulated as it is."""
        self.ensure([(phase, batch, length, past)])
        return self.value(phase, batch, length, past)[:2]

    # -- one point on the engine ------------------------------------------------------------

    def simulate(self, phase, batch, length, past=0, kernels_in=None, kernels_out=None):
        """Two layers simulated; the second one's span and energy stand for every further layer's
        (layers repeat, and the first meets the caches cold). Returns the step's time and energy
        and those of its attention kernels. Phase `attention`: a prefill's attention kernel
        alone, one layer's times the layers."""
        a = self.a
        L = self.card["layers"]
        alone = phase == "attention"
        layers = 1 if alone else min(2, L)
        gen_phase = "prefill" if alone else "decode" if phase.startswith("decode") else phase
        argv = [a.model, "--phase", gen_phase, "--batch", str(batch), "--context" if gen_phase == "decode" else "--prompt",
                str(length), "--layers", str(layers), "--weights", a.weights, "--kv", a.kv, "--tp", str(a.tp)]
        if past:
            argv += ["--past", str(past)]
        if alone:
            # The attention kernel alone at a ladder point may lie past the model's context
            # (a chunk near it is bracketed by points on either side).
            argv += ["--max-context", str(length + past)]
        if a.math:
            argv += ["--math", a.math]
        if a.kv_page:
            argv += ["--kv-page", str(a.kv_page)]
        if a.sampler and not alone:
            argv += ["--sampler", a.sampler]
        if a.rt:
            eager = "kernels.launch=eager" in self.runtime_sets(phase, batch)
            argv += ["--all-reduce", a.rt.path, "--launch", "eager" if eager else "graph"]
        t = engine.generate(argv)
        if alone:
            t["ops"] = [o for block in t["ops"] for o in block.get("ops", [block]) if o.get("kind") == "attention"]
        rep = engine.simulate(a.config, t, self.sets() + self.runtime_sets(phase, batch),
                              f"a {phase} step (batch {batch}, length {length})",
                              kernels=(kernels_in, kernels_out) if self.kernels and kernels_in else None)
        total_t, total_e = rep["total"]["time_s"], rep["total"]["energy"]["total_j"]
        # The layers' all-reduces, and once per step the sampler's gather of the logits.
        coll_t = rep["time_breakdown"]["collectives_s"]
        gather_t = sum(o["end_s"] - o["start_s"] for o in rep["ops"] if o["name"] == "logits_gather")
        if alone:
            return [total_t * L, total_e * L, total_t * L, total_e * L, 0.0]
        ops = rep["ops"]
        ops_e = sum(o["energy"]["total_j"] for o in ops)
        gaps = total_e / ops_e if ops_e > 0 else 1  # the gaps' share of the energy (leakage between ops)
        last = f"layer[{layers - 1}]."
        second = [i for i, o in enumerate(ops) if o["name"].startswith(last)]
        attn = [i for i in second if o_kind(ops[i]) == "attention"]
        attn_t = sum(ops[i]["end_s"] - ops[i]["start_s"] for i in attn) * L
        attn_e = sum(ops[i]["energy"]["total_j"] for i in attn) * gaps * L
        if L <= 2:
            every = [i for i, o in enumerate(ops) if o["name"].startswith("layer[") and o_kind(o) == "attention"]
            attn_t = sum(ops[i]["end_s"] - ops[i]["start_s"] for i in every)
            attn_e = sum(ops[i]["energy"]["total_j"] for i in every) * gaps
            return [total_t, total_e, attn_t, attn_e, coll_t]
        after = ops[second[-1] + 1]["start_s"] if second[-1] + 1 < len(ops) else rep["total"]["end_s"]
        span = after - ops[second[0]]["start_s"]
        layer_e = sum(ops[i]["energy"]["total_j"] for i in second) * gaps
        # Each layer's collectives as the simulated layers' mean; the logits' gather once.
        return [total_t + (L - 2) * span, total_e + (L - 2) * layer_e, attn_t, attn_e,
                max(0.0, coll_t - gather_t) * L / layers + gather_t]

    def sets(self):
        a = self.a
        # Exactly the replica's GPUs, so that a step's energy is theirs (a TP=1 replica on an
        # 8-GPU system config is one GPU, not eight with seven idle); beyond one, one simulated in
        # detail (the step is SPMD).
        s = list(a.set) + [f"system.gpus_per_domain={a.tp}", "system.domains=1"]
        if a.tp > 1:
            s += ["system.detail=representative"]
        return s


def o_kind(op):
    return op.get("kind", "")
