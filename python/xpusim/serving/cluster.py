"""Several engines serving one stream: replicas behind a router, prefill and decode pools with the
KV cache handed over a link, and pipeline stages (one scheduler each)."""
import heapq

from .replica import kv_link, stage_path
from .scheduler import Request, Server, blocks_for
from .stream import fail


class Pipeline:
    """A replica's pipeline stages (--pp P), shared by its P virtual engines. As vLLM runs a
    pipeline, each engine schedules its own batches with a 1/P share of the KV blocks, and the
    engines' steps follow one another through the stages. A step holds the first stage for 1/P of
    its compute time (the stages taken as balanced); the next step, any engine's, enters after
    that. It leaves the last stage after its whole compute time plus P - 1 hand-offs of its
    activations (rows x hidden, bf16) over the GPUs' link."""

    def __init__(self, a, card, link):
        self.pp = a.pp
        self.bandwidth, self.latency = link
        self.row_bytes = card["hidden"] * 2
        self.free = 0.0  # when the first stage can take the next step
        self.occupied = 0.0  # the first stage's busy time
        self.send_s = 0.0

    def enter(self, now, t, rows):
        """A step of t seconds over all layers, entering at `now`: the time until it leaves the
        last stage."""
        self.free = now + t / self.pp
        self.occupied += t / self.pp
        send = (self.pp - 1) * (self.latency + rows * self.row_bytes / self.bandwidth)
        self.send_s += send
        return t + send


class Cluster:
    """The replicas serving one stream, in time order: arrivals routed to a replica (round robin
    or the least loaded), each replica stepping when its clock is the earliest; with
    --disaggregate P:D, prefill replicas hand each request's KV cache over the link to the
    least-loaded decode replica. With --pp P a replica is P engines (Servers) sharing one
    Pipeline, and an arrival goes to the least-loaded engine."""

    def __init__(self, a, replica, steps, servers=None):
        self.a, self.replica = a, replica
        self.transfers = []  # (time the KV cache lands, sequence, request)
        self.transfer_s = 0.0
        self.link = None
        self.pipes = []
        stage_link = kv_link(a, stage_path(a)) if a.pp > 1 else None

        def pool(n, role, prefix, handoff=None):
            """n replicas, each one engine, or with --pp P its P engines sharing a Pipeline."""
            out = []
            for i in range(n):
                if a.pp == 1:
                    out.append(Server(a, replica, steps, role, handoff, f"{prefix}{i}", group=i))
                    continue
                pipe = Pipeline(a, replica.card, stage_link)
                self.pipes.append(pipe)
                out += [Server(a, replica, steps, role, handoff, f"{prefix}{i}.{j}", pipe, i) for j in range(a.pp)]
            return out
        if servers:
            self.entry, self.decoders = servers, servers
        elif a.disaggregate:
            p, d = a.disaggregate
            self.link = kv_link(a, a.kv_link)
            self.entry = pool(p, "prefill", "p", self.transfer)
            self.decoders = pool(d, "decode", "d")
        else:
            self.entry = self.decoders = pool(a.replicas, "both", "")
        self.servers = self.entry + [s for s in self.decoders if s not in self.entry]
        self.turn = 0

    def transfer(self, r, t):
        """r's KV cache leaves a prefill replica at t; every GPU of the TP group sends its share."""
        bandwidth, latency = self.link
        dt = latency + r.context() * self.replica.kv_bytes_per_token / bandwidth
        self.transfer_s += dt
        r.kv_ready = True
        heapq.heappush(self.transfers, (t + dt, r.seq, r))

    def route(self, pool):
        """The engine an arrival goes to: the least loaded (vLLM gives a request to the virtual
        engine with the fewest unfinished), within the next replica in turn for round robin."""
        if self.a.router == "round-robin" and pool is self.entry:
            group = self.turn % (pool[-1].group + 1)
            self.turn += 1
            pool = [s for s in pool if s.group == group]
        return min(pool, key=lambda s: (s.load(), s.now))

    def run(self, requests):
        reqs = [Request(r) for r in requests]
        for i, r in enumerate(reqs):
            r.seq = i
        inf = float("inf")
        a = self.a
        # The API server's part (HTTP, tokenisation) before the scheduler sees a request.
        ingress = a.rt.arrival_path_s if a.rt else (lambda prompt: 0.0)
        egress = a.rt.first_token_s if a.rt else 0.0  # a token's way back to the client
        # Open loop: every request at its arrival. Closed loop (--concurrency N): N clients, each
        # sending its next request when its last answer has reached it.
        closed = a.concurrency
        for r in reqs[:closed]:
            r.arrival = 0.0  # the clients' first requests, together
        pending = [(r.arrival + ingress(r.prompt), r.seq, r) for r in (reqs[:closed] if closed else reqs)]
        heapq.heapify(pending)
        later = iter(reqs[closed:] if closed else ())
        while True:
            t_arr = pending[0][0] if pending else inf
            t_kv = self.transfers[0][0] if self.transfers else inf
            busy = [s for s in self.servers if s.waiting or s.running]
            s = min(busy, key=lambda s: s.now) if busy else None
            t_step = s.now if s else inf
            if t_kv <= t_arr and t_kv <= t_step and t_kv < inf:
                t, _, r = heapq.heappop(self.transfers)
                self.route(self.decoders).arrive(r, t)
            elif t_arr <= t_step and t_arr < inf:
                self.route(self.entry).arrive(heapq.heappop(pending)[2], t_arr)
            elif s is None:
                break
            elif closed:
                before = len(s.done)
                if not s.step():
                    self.stuck(s)
                for r in s.done[before:]:
                    nxt = next(later, None)
                    if nxt is not None:
                        nxt.arrival = r.finish + egress
                        heapq.heappush(pending, (nxt.arrival + ingress(nxt.prompt), nxt.seq, nxt))
            elif not s.step():
                self.stuck(s)
        end = max(s.now for s in self.servers)
        for s in self.servers:  # idle to the end, so that every replica's clock spans the run
            s.advance(end - s.now, None, 0)
        return [r for s in self.servers for r in s.done]

    def stuck(self, s):
        """A replica whose first waiting request can never be admitted."""
        r = s.waiting[0]
        fail(f"request {r.id}: its {r.context() + 1} tokens need "
             f"{blocks_for(r.context() + 1, self.a.block_size)} KV blocks, more than the cache's "
             f"{s.blocks}" + (f" (the replica's {self.replica.blocks} shared by --pp {self.a.pp} engines)"
                              if self.a.pp > 1 else ""))

    # The figures summarise() reads, over the replicas.
    @property
    def now(self):
        return max(s.now for s in self.servers)

    @property
    def energy(self):
        return sum(s.energy for s in self.servers)

    @property
    def busy(self):
        return sum(s.busy for s in self.servers)

    @property
    def in_system_area(self):
        return sum(s.in_system_area for s in self.servers) + self.transfer_s

    @property
    def max_used(self):
        return max(s.max_used for s in self.servers)

    def summed(self, attr):
        """A per-replica count (a dict) added up key by key."""
        out = {}
        for s in self.servers:
            for k, v in getattr(s, attr).items():
                out[k] = out.get(k, 0) + v
        return out

    @property
    def step_count(self):
        return self.summed("step_count")

    @property
    def tbt(self):
        return self.summed("tbt")

    @property
    def free(self):
        return sum(s.free for s in self.servers)
