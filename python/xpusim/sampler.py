"""The sampler's kernels after the LM head, one entry per sampling path.

A path is the list of kernels a runtime launches to turn a step's logits (B rows of V, in the
activations' format) into B token ids. A new path is one function and one line in SAMPLERS;
runtime profiles (`sampling:`), `xpusim-trace.py --sampler` and `xpusim serve --sampler` take
its name. Paths whose kernels come from a runtime's source name that source; their measured
totals on an H100 are in docs/validation/measured/h100-sxm-2026-11-27/ (`sampler-v0.csv`),
which set no parameter here.

Needs nothing beyond the standard library."""


def _ew(name, B, V, dtype="fp32", out=None, inputs=1, **extra):
    op = {"name": name, "kind": "elementwise", "shape": [B, V], "dtype": dtype, "inputs": inputs}
    if out and out != dtype:
        op["out_dtype"] = out
    op.update(extra)
    return op


def _row(name, kind, B, V, dtype="fp32"):
    return {"name": name, "kind": kind, "shape": [B, V], "dtype": dtype}


def _cast(B, V, act):
    return _ew("logits_fp32", B, V, act, out="fp32")


def greedy(B, V, act):
    """An argmax over the float logits (TensorRT-LLM's and SGLang's greedy: one pass)."""
    return [_cast(B, V, act), _row("sample_pick", "reduction", B, V)]


def top_p(B, V, act):
    """A fused sampler: a softmax, a top-p pass over the probabilities and the draw (FlashInfer's
    and TensorRT-LLM's top-p sampling kernels, one pass each)."""
    return [_cast(B, V, act), _row("sample_softmax", "softmax", B, V),
            _row("sample_top_p", "reduction", B, V), _row("sample_pick", "reduction", B, V)]


def _v0(B, V, act, random):
    # vLLM V0 (vllm/model_executor/layers/sampler.py, Sampler.forward with no penalties, top-k,
    # top-p or min-p): logits.to(torch.float); logits.div_(temperatures); torch.softmax and
    # torch.log_softmax over the vocabulary; _sample_with_torch: greedy, torch.argmax(logprobs);
    # random, _multinomial(probs[sample_indices]): a row gather, q = empty_like(probs).exponential_(),
    # probs.div_(q).argmax(dim=1); then _get_logprobs's rank of each sampled token, _get_ranks:
    # logprobs[query_indices] (a row gather), x > vals[:, None], .sum(1).add_(1).
    ops = [_cast(B, V, act), _ew("sample_temperature", B, V),
           _row("sample_softmax", "softmax", B, V), _row("sample_log_softmax", "softmax", B, V)]
    if random:
        ops += [_ew("sample_rows", B, V), _ew("sample_exponential", B, V, inputs=0, flops_per_element=24),
                _ew("sample_race", B, V, inputs=2)]
    # The sum of a bool tensor is taken in int64: PyTorch writes the comparison out as int64
    # and reduces that (a copy kernel, then the reduction, in the profile of `sampler-kernels.csv`).
    # Traces have no 8-byte format, so the int64 rows are [B, 2V] of fp32: the same bytes.
    ops += [_row("sample_pick", "reduction", B, V), _ew("rank_rows", B, V),
            _ew("rank_compare", B, V, out="int8"), _ew("rank_int64", B, 2 * V, inputs=0),
            _row("rank_count", "reduction", B, 2 * V)]
    return ops


def v0_greedy(B, V, act):
    """vLLM V0's sampler at temperature 0: softmax and log-softmax, an argmax, the sampled token's rank."""
    return _v0(B, V, act, False)


def v0_random(B, V, act):
    """vLLM V0's sampler at a temperature without top-k/top-p (benchmark_latency.py's temperature
    1.0, top_p 1.0): softmax and log-softmax, the exponential race, the sampled token's rank."""
    return _v0(B, V, act, True)


SAMPLERS = {
    "greedy": (greedy, "an argmax"),
    "top_p": (top_p, "a fused softmax, top-p pass and draw"),
    "v0_greedy": (v0_greedy, "vLLM V0's torch path at temperature 0 (softmax, log-softmax, argmax, rank)"),
    "v0_random": (v0_random, "vLLM V0's torch path with a temperature (softmax, log-softmax, exponential race, rank)"),
}


def describe():
    """One phrase per path, for help texts."""
    return "; ".join(f"{k}: {h}" for k, (_, h) in SAMPLERS.items())


def sampler_ops(name, B, V, act):
    """The kernels of path `name` over B rows of V logits in format `act`."""
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler '{name}' (choose from {', '.join(SAMPLERS)})")
    return SAMPLERS[name][0](B, V, act)
