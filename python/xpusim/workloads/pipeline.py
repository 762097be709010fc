"""Pipeline-parallel training's layout and schedules: which GPU runs which stage, and the order
in which a stage runs its microbatches' forward and backward blocks (GPipe, 1F1B, interleaved
1F1B over virtual stages), with their closed-form bubbles for the tests to compare against."""

SCHEDULES = ("1f1b", "interleaved", "gpipe")


class Layout:
    """Where a training step runs: tp x pp x dp GPUs, v model chunks per stage."""

    def __init__(self, a, layers):
        self.tp, self.pp, self.dp, self.v = a.tp, a.pp, a.dp, a.virtual_stages
        self.M = a.microbatches
        self.chunks = self.pp * self.v
        per, extra = divmod(layers, self.chunks)
        self.chunk_layers = [per + (1 if j < extra else 0) for j in range(self.chunks)]

    def gpu(self, r, s, t):
        return r * self.tp * self.pp + s * self.tp + t

    def stage_gpus(self, s):
        return [self.gpu(r, s, t) for r in range(self.dp) for t in range(self.tp)]

    def tp_groups(self, s):
        return [[self.gpu(r, s, t) for t in range(self.tp)] for r in range(self.dp)]

    def dp_group(self, s, t):
        return [self.gpu(r, s, t) for r in range(self.dp)]

    def stage_of(self, chunk):
        return chunk % self.pp


def schedule(kind, pp, v, M, s):
    """Stage s's order of work: ("F" or "B", microbatch, local chunk) entries, as Megatron-LM's
    schedules run them (megatron/core/pipeline_parallel/schedules.py). GPipe: every forward,
    then every backward. 1F1B: pp - s - 1 warm-up forwards, then one forward and one backward
    in turn, then the remaining backwards. Interleaved: the same over M x v virtual
    microbatches, with (pp - s - 1) x 2 + (v - 1) x pp warm-up forwards; virtual microbatch k
    is microbatch (k // (pp v)) pp + k % pp of chunk (k // pp) % v (backward: v - 1 minus
    that)."""
    if kind == "gpipe":
        return [("F", m, 0) for m in range(M)] + [("B", m, 0) for m in range(M)]
    total = M * v
    if kind == "1f1b":
        warm = min(pp - s - 1, total)
    else:
        warm = min((pp - s - 1) * 2 + (v - 1) * pp, total)

    def entry(k, phase):
        chunk = (k // pp) % v
        return (phase, (k // (pp * v)) * pp + k % pp, chunk if phase == "F" else v - 1 - chunk)

    order = [entry(k, "F") for k in range(warm)]
    for i in range(total - warm):
        order += [entry(warm + i, "F"), entry(i, "B")]
    return order + [entry(k, "B") for k in range(total - warm, total)]


def bubble_fraction(kind, pp, v, M):
    """The pipeline bubble's closed form as a fraction of the ideal (bubble-free) time, with
    uniform stages and free communication: (pp - 1) / M for GPipe and 1F1B, (pp - 1) / (v M)
    interleaved (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
    Clusters Using Megatron-LM", 2021, section 2.2)."""
    return (pp - 1) / (M * (v if kind == "interleaved" else 1))


def in_flight(order):
    """The most forward chunks whose backward has not run yet, over a stage's order: the
    activations the stage holds at its peak, in chunks of one microbatch."""
    live = peak = 0
    for phase, _, _ in order:
        live += 1 if phase == "F" else -1
        peak = max(peak, live)
    return peak

