"""The scheduler of one engine: requests through continuous, chunked or static batching and a
paged KV cache, preemption by recompute or swap, each step's time from the step model."""
from .report import tbt_bin


class Request:
    __slots__ = ("id", "arrival", "prompt", "output", "priority", "done", "blocks", "first_token", "finish",
                 "preemptions", "admitted", "todo", "last", "kv_ready", "seq", "swapped")

    def __init__(self, r):
        self.id, self.arrival, self.prompt, self.output = r["id"], r["arrival"], r["prompt_tokens"], r["output_tokens"]
        self.priority = r.get("priority", 0)
        self.done = 0  # output tokens generated
        self.todo = 0  # tokens of the context still to prefill (a chunked prefill takes them in steps)
        self.blocks = 0
        self.first_token = None
        self.finish = None
        self.preemptions = 0
        self.admitted = None
        self.last = None  # when its latest token came
        self.kv_ready = False  # its KV cache came from a prefill replica
        self.swapped = 0  # bytes of its KV cache (per GPU) in host memory after a preemption by swap
        self.seq = 0

    def context(self):
        return self.prompt + self.done


def blocks_for(tokens, size):
    return -(-tokens // size)


class Server:
    """One replica's scheduler. `running` holds the admitted requests in admission order: those
    whose context is all in the KV cache decode, a chunked prefill's others are still filling.
    A `prefill` replica of a disaggregated pair hands each request on after its prefill
    (`handoff(request, time)`); a `decode` replica takes requests whose KV cache came with them."""

    def __init__(self, a, replica, steps, role="both", handoff=None, name="0", pipe=None, group=0):
        self.a, self.replica, self.steps = a, replica, steps
        self.role, self.handoff, self.name = role, handoff, name
        self.pipe, self.group = pipe, group  # with --pp: the replica's stages, shared by its engines
        self.blocks = replica.blocks // pipe.pp if pipe else replica.blocks
        self.free = self.blocks
        self.now = 0.0
        self.energy = 0.0
        self.busy = 0.0
        self.step_count = {"prefill": 0, "decode": 0, "mixed": 0}
        self.max_used = 0
        self.in_system_area = 0.0  # integral of the number of requests in the system over time
        self.arrived = 0
        self.preemptions = 0
        self.tbt = {}  # times between tokens: a histogram, TBT_BINS bins per factor of e
        self.waiting, self.running, self.done = [], [], []
        self.swap_free = a.swap_space * 2 ** 30  # host memory per GPU for swapped caches
        self.pending_io = 0.0  # seconds of swap copies the next step waits for
        self.swaps = 0
        self.swap_s = 0.0
        # Where the steps' time went: kernels, collectives no kernel hides, and the runtime's host
        # work the kernels do not hide (summarise: the latency breakdown).
        self.time_parts = {"kernels_s": 0.0, "collectives_s": 0.0, "host_s": 0.0}

    def load(self):
        return len(self.waiting) + len(self.running)

    def advance(self, dt, t_energy, in_system):
        self.in_system_area += in_system * dt
        self.now += dt
        if t_energy is not None:
            self.busy += dt
            self.energy += t_energy

    def arrive(self, r, t):
        """r joins the queue at time t: idle until then, or, if a step is under way, waiting for
        its end (counted in the system from t)."""
        if self.now < t:
            if self.waiting or self.running:
                raise AssertionError("a busy replica fell behind the clock")
            self.advance(t - self.now, None, 0)
        else:
            self.in_system_area += self.now - t
        self.waiting.append(r)
        self.arrived += 1

    def run(self, requests):
        """This replica alone on a request stream; the requests finished."""
        from .cluster import Cluster  # a cluster of one (the cluster module builds on this one)
        return Cluster(self.a, self.replica, self.steps, servers=[self]).run(requests)

    def step(self):
        """One scheduler iteration from now: a step, or only preemptions. False if nothing can run."""
        a = self.a
        waiting, running = self.waiting, self.running
        in_system = len(waiting) + len(running)
        if self.pipe and self.pipe.free > self.now:
            # The first stage is busy with another engine's step: this engine's batch forms when it frees.
            self.advance(self.pipe.free - self.now, None, in_system)
            return True
        preempted = self.preemptions
        if a.scheduler == "chunked":
            decoding, chunks = self.chunked_step(waiting, running)
        else:
            batch = self.admit(waiting, running)
            chunks = [(r, r.todo) for r in batch if r.todo]
            decoding = [] if chunks else self.grow(running, waiting) if running else []
        if not decoding and not chunks:
            if self.preemptions > preempted:
                return True  # blocks given back: admit again
            if running:
                raise AssertionError("a replica with running requests had nothing to run")
            return False
        self.max_used = max(self.max_used, self.blocks - self.free)
        dec = (len(decoding), sum(r.context() for r in decoding) // len(decoding)) if decoding else None
        t, e, coll = self.steps.step(dec, [(n, r.context() - r.todo) for r, n in chunks])
        wall = t
        if a.rt:
            wall = a.rt.step_s(t, decode=len(decoding), prefill_seqs=len(chunks),
                               prefill_tokens=sum(n for _, n in chunks))
        self.time_parts["kernels_s"] += t - coll
        self.time_parts["collectives_s"] += coll
        self.time_parts["host_s"] += wall - t
        t = wall
        if self.pipe:
            t = self.pipe.enter(self.now, t, len(decoding) + sum(n for _, n in chunks))
        t, self.pending_io = t + self.pending_io, 0.0  # the step waits for the swap copies before it
        self.step_count["mixed" if dec and chunks else "decode" if dec else "prefill"] += 1
        self.advance(t, e, in_system)
        gaps = {}
        for r in decoding:
            gaps[r.last] = gaps.get(r.last, 0) + 1
            r.last = self.now
            r.done += 1
            if r.done >= r.output:
                self.retire(r)
        for r, n in chunks:
            r.todo -= n
            if r.todo == 0:  # the prefill's last chunk gives the first token
                r.done += 1
                if r.first_token is None:
                    r.first_token = self.now
                elif r.last is not None:  # recomputed after a preemption: a token after a gap
                    gaps[r.last] = gaps.get(r.last, 0) + 1
                r.last = self.now
                if r.done >= r.output:
                    self.retire(r)
                elif self.role == "prefill":
                    running.remove(r)
                    self.free += r.blocks
                    r.blocks = 0
                    self.handoff(r, self.now)
        for last, n in gaps.items():
            b = tbt_bin(self.now - last)
            self.tbt[b] = self.tbt.get(b, 0) + n
        if self.free < 0 or self.free > self.blocks:
            raise AssertionError("KV block accounting broke")
        return True

    def retire(self, r):
        r.finish = self.now
        if r in self.running:
            self.running.remove(r)
        self.free += r.blocks
        r.blocks = 0
        self.done.append(r)

    def grow(self, running, waiting):
        """The requests that decode a token this step. One crossing into a new block needs one,
        and the newest admitted requests give theirs back (recompute) until it fits."""
        for r in list(running):
            if r.todo or r not in running:  # still prefilling, or preempted
                continue
            need = blocks_for(r.context() + 1, self.a.block_size) - r.blocks
            while need > self.free and running[-1] is not r:
                self.preempt(running.pop(), waiting)
            if need > self.free:  # r is the newest: it waits for the others
                running.remove(r)
                self.preempt(r, waiting)
                continue
            self.free -= need
            r.blocks += need
        return [r for r in running if not r.todo]

    def take(self, r, waiting, running):
        """Admit r if its context's blocks (and the next token's) fit; it runs from now on, its
        context to prefill."""
        need = blocks_for(r.context() + 1, self.a.block_size)
        if need > self.free:
            return False
        self.free -= need
        r.blocks = need
        waiting.remove(r)
        running.append(r)
        if r.swapped:  # its cache comes back from host memory: the prefill it had done is kept
            self.swap_io(r.swapped)
            self.swap_free += r.swapped
            r.swapped = 0
        else:
            r.todo = 0 if r.kv_ready else r.context()
        if r.admitted is None:
            r.admitted = self.now
        return True

    def admit(self, waiting, running):
        """The requests whose prefill runs now: vLLM's order (first come, first served; a
        preempted request first), as many as the batch and token limits and free blocks allow.
        Static batching admits only when nothing runs."""
        a = self.a
        if not waiting or (a.scheduler == "static" and running):
            return []
        batch, tokens = [], 0
        for r in list(waiting):
            if len(running) >= a.max_seqs:
                break
            if tokens + r.context() > a.max_batched_tokens and batch:
                break
            if not self.take(r, waiting, running):
                break
            tokens += r.todo
            batch.append(r)
        return batch

    def chunked_step(self, waiting, running):
        """Sarathi-Serve's stall-free batching (vLLM's chunked prefill): every decoding request's
        token first, then prefill chunks in the rest of the token budget, the prefills already
        under way before new requests (first come, first served), the last one cut to fit."""
        a = self.a
        decoding = self.grow(running, waiting)
        budget = a.max_batched_tokens - len(decoding)
        chunks = []
        for r in running:
            if budget <= 0:
                break
            if r.todo:
                n = min(r.todo, budget)
                chunks.append((r, n))
                budget -= n
        while budget > 0 and waiting and len(running) < a.max_seqs:
            r = waiting[0]
            if not self.take(r, waiting, running):
                break
            if r.todo:
                n = min(r.todo, budget)
                chunks.append((r, n))
                budget -= n
        return decoding, chunks

    def swap_io(self, nbytes):
        dt = nbytes / (self.a.swap_bandwidth * 1e9)
        self.pending_io += dt
        self.swap_s += dt

    def preempt(self, r, waiting):
        """The request's blocks go back and it waits at the head of the queue. Recompute: its
        prompt and the tokens it has so far are prefilled again. Swap (where host memory is left):
        its cache is copied to host memory and back when it is admitted again, each copy over
        --swap-bandwidth before the next step."""
        nbytes = r.blocks * self.a.block_size * self.replica.kv_bytes_per_token
        self.free += r.blocks
        r.blocks = 0
        if self.a.preemption == "swap" and 0 < nbytes <= self.swap_free:
            self.swap_free -= nbytes
            r.swapped = nbytes
            self.swap_io(nbytes)
            self.swaps += 1
            r.preemptions += 1
            self.preemptions += 1
            waiting.insert(0, r)
            return
        r.todo = 0
        r.kv_ready = False  # its cache is gone: recomputed where it runs
        r.preemptions += 1
        self.preemptions += 1
        waiting.insert(0, r)
