"""Generates an xpusim trace (format v1) from a model card (configs/models/*.yaml): a
transformer's prefill step, decode step or training step (fused or unfused attention), or a
ResNet's inference.

  scripts/xpusim-trace.py configs/models/llama-2-70b.yaml --phase decode --batch 32 \\
      --context 2048 --weights fp8 --kv fp8 -o llama70b-decode.yaml

Per layer: norm, QKV projection, RoPE and the KV-cache append (RoPE models), attention (fused:
one op; unfused: QK^T, softmax, PV as batched GEMMs and a row-wise op), output projection,
residual add, norm, FFN (SwiGLU or GELU; MoE: router, then the active experts as one batched
GEMM each way), residual add. After the layers: final norm and the LM head for the last token of
each sequence. --fusion serving (default) emits the kernels serving engines run: each residual
add inside the next norm, RoPE with the KV-cache append in one pass, SwiGLU in one kernel;
--fusion none emits PyTorch eager's kernels (RMSNorm as eight, RoPE as five per tensor, K and V
copied into the cache, SiLU and the product apart, residual adds apart). Layers are a
`repeat` block. Decode reads the KV cache of `--context` tokens in the attention op.

Parallelism (Megatron-style), placed on GPUs for a system config (configs/systems/):
  --tp N  tensor parallel: each GPU of a group of N holds heads/N (and kv_heads/N, or one
          replicated KV head when kv_heads < N) and ffn/N; an all-reduce of the activations
          follows the output projection and the FFN down projection (and, in training, the
          data gradients of the QKV and FFN up projections). Ops run on all N GPUs (SPMD).
  --pp P  pipeline parallel: the layers split into P stages of consecutive GPU groups; each of
          --microbatches M microbatches flows through the stages, activations passed on by
          send_recv (prefill and decode: a GPipe forward schedule; train: --schedule).
  --dp D  data parallel (train): D replicas run the step on their own batches; each TP rank's
          gradients are reduced over the replicas (--zero) before the optimiser step.
GPU numbering: dp replica x (tp x pp) + stage x tp + tp rank, so TP groups are neighbours (one
NVLink domain). The trace's description says how many GPUs it needs.

Training (--phase train; docs/training.md): --schedule 1f1b, interleaved (--virtual-stages V)
or gpipe; --sequence-parallel; --zero 0-3; --recompute none, selective or full; the step's
memory per GPU goes into the trace (`memory_per_gpu`), and a chip with less HBM refuses it.

Formats: weight GEMMs store their weights in --weights and compute in --math (default: the
weight format, i.e. the tensor cores take both operands in it, e.g. W8A8 fp8). A --math wider
than --weights is weight-only quantisation (e.g. --weights int4 --math bf16, W4A16; or
--weights mxfp4 --math fp8): the GEMMs get `weight_dtype` and the kernel converts the weights
before the MMA. mxfp4 and nvfp4 are block-scaled fp4 (math fp4 by default, which Blackwell's
tensor cores take as it is). Norms, activations and residual adds run in --activations,
attention and the KV cache in --kv.

As a module: `python3 -m xpusim.workloads CARD ...` (scripts/xpusim-trace.py wraps it), or
generate(["CARD", "--phase", "decode", ...]) for the trace as a dict.
"""
import argparse
import sys

from .. import cli as CLI
from .. import runtime as RUNTIME
from .cards import (BITS, BLOCK_SCALED, CARD_KEYS, FORMATS, RESNET_KEYS, WorkloadError, act_bytes, dump, dump_jsonl,
                    fail, load_card, vocab_shard)
from .resnet import build_resnet
from . import training as TRAINING
from .transformer import build, layer_ops

__all__ = ["generate", "main", "load_card", "dump", "dump_jsonl", "WorkloadError", "FORMATS", "BLOCK_SCALED", "BITS",
           "CARD_KEYS", "RESNET_KEYS", "act_bytes", "vocab_shard", "build", "build_resnet", "layer_ops"]


def parser():
    ap = CLI.Parser(prog="xpusim-trace", description=__doc__.splitlines()[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("model", help="model card, e.g. configs/models/llama-2-70b.yaml")
    ap.add_argument("--phase", choices=["prefill", "decode", "train"], default=None,
                    help="transformers: prefill, decode or train (required); a resnet runs inference")
    ap.add_argument("--batch", type=int, default=1, help="sequences (default 1)")
    ap.add_argument("--prompt", type=int, default=2048, help="prefill: prompt length (default 2048)")
    ap.add_argument("--context", type=int, default=2048, help="decode: tokens in the KV cache (default 2048)")
    ap.add_argument("--past", type=int, default=0,
                    help="prefill: tokens already in the KV cache before the prompt (a chunked prefill's later "
                         "chunk, or a cached prefix): attention reads them too (default 0)")
    ap.add_argument("--weights", default="bf16", help="weights' format, also mxfp4 or nvfp4 (default bf16)")
    ap.add_argument("--math", default=None,
                    help="weight GEMMs' tensor-core format (default: --weights; fp4 for mxfp4/nvfp4)")
    ap.add_argument("--activations", default="bf16", help="format of norms, activations, residuals (default bf16)")
    ap.add_argument("--kv", default=None, help="attention / KV-cache format (default: --activations)")
    ap.add_argument("--attention", choices=["fused", "unfused"], default="fused")
    ap.add_argument("--fusion", choices=["serving", "none"], default="serving",
                    help="serving (default): the fused kernels serving engines run (residual add inside the next "
                         "norm, RoPE with the KV-cache append, SwiGLU in one kernel); none: PyTorch eager's kernels "
                         "(RMSNorm as eight, RoPE as five per tensor, SiLU and the product apart)")
    ap.add_argument("--kv-page", type=int, default=0,
                    help="fused attention reads a paged KV cache of this many tokens per page, through a block "
                         "table, as vLLM (16) and TensorRT-LLM (64) keep it (default 0: contiguous)")
    ap.add_argument("--sparsity", choices=["2:4"], default=None, help="2:4 sparse weights")
    ap.add_argument("--max-context", type=int, default=None,
                    help="the longest sequence accepted (default: the card's `context`); xpusim serve's step model "
                         "simulates a chunk's attention kernel alone past it, to interpolate near the context")
    ap.add_argument("--layers", type=int, default=None, help="generate only the first N layers, N >= 1 (default all)")
    ap.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs (default 1)")
    ap.add_argument("--pp", type=int, default=1, help="pipeline stages (default 1)")
    ap.add_argument("--dp", type=int, default=1, help="data-parallel replicas, train (default 1)")
    ap.add_argument("--microbatches", type=int, default=1,
                    help="microbatches the batch is split into: with --pp, or in training (gradient accumulation)")
    tr = ap.add_argument_group("training (--phase train; docs/training.md)")
    tr.add_argument("--schedule", choices=TRAINING.SCHEDULES, default="1f1b",
                    help="pipeline schedule with --pp: 1f1b (default), interleaved (with --virtual-stages) or gpipe")
    tr.add_argument("--virtual-stages", type=int, default=1,
                    help="--schedule interleaved: model chunks per pipeline stage (default 1)")
    tr.add_argument("--sequence-parallel", action="store_true",
                    help="with --tp: norms and residuals on 1/tp of the tokens, reduce-scatter and all-gather in "
                         "place of each all-reduce")
    tr.add_argument("--zero", type=int, choices=[0, 1, 2, 3], default=0,
                    help="with --dp: 0 all-reduces the gradients (default); 1 and 2 reduce-scatter them and "
                         "all-gather the parameters after the step, sharding the optimiser state (1) and the "
                         "gradients (2); 3 also shards the weights and all-gathers each layer's before its forward "
                         "and backward")
    tr.add_argument("--recompute", choices=TRAINING.RECOMPUTE, default="none",
                    help="activation recomputation: none (default), selective (the attention core) or full (each "
                         "layer's forward again before its backward)")
    tr.add_argument("--ep", type=int, default=1,
                    help="MoE cards: expert-parallel GPUs (dividing --dp): each holds experts/ep experts, tokens "
                         "reach them by all-to-all (default 1)")
    tr.add_argument("--capacity-factor", type=float, default=None,
                    help="MoE: each expert computes capacity-factor x its balanced share of the routed tokens, "
                         "padded (default: dropless and balanced)")
    tr.add_argument("--mirror-replicas", action="store_true",
                    help="with --dp: the tensor-parallel collectives, all-to-alls and pipeline sends of the first "
                         "replica only, standing for every replica's, and the data-parallel collectives of TP rank 0 "
                         "only, standing for every rank's (`mirrors`); with system.detail representative a step on "
                         "thousands of GPUs simulates one replica's traffic and one rank's data-parallel collectives "
                         "over all replicas")
    tr.add_argument("--grad-accumulation", choices=TRAINING.GRAD_ACCUMULATION, default="fused",
                    help="how each weight gradient reaches the fp32 gradient buffer: fused (default; the "
                         "weight-gradient GEMM adds into it, Megatron-LM's gradient-accumulation fusion and "
                         "Transformer Engine's), add (the GEMM writes the gradient, an add kernel accumulates "
                         "it, Megatron-LM's 2021 hooks), none (not modelled)")
    tr.add_argument("--grad-reduce", choices=["fp32", "bf16"], default="fp32",
                    help="format the gradients are reduced in over the replicas (default fp32, as Megatron-LM "
                         "accumulates and reduces them with bf16 training)")
    ap.add_argument("--runtime", default=None,
                    help="a serving runtime's profile (vllm, trtllm, sglang, or a path; configs/runtimes/): its host "
                         "work as a `host` op, the decode batch padded to its captured CUDA-graph size, its sampler's "
                         "kernels, and eager issue where it runs the step without a graph (prefill and decode, "
                         "without --pp)")
    ap.add_argument("--all-reduce", default=None, metavar="KERNEL",
                    help="the kernel of tensor parallelism's all-reduces: nccl (NCCL's, the engine's auto), or a "
                         "runtime's profile (vllm, trtllm, sglang, or a path) whose all_reduce section picks its own "
                         "one-shot or two-shot kernel by size and GPU count (default: --runtime's, else nccl)")
    ap.add_argument("--launch", choices=["graph", "eager"], default=None,
                    help="how the step's kernels are launched, for what the --all-reduce kernel needs outside a CUDA "
                         "graph (a copy into its buffer): default as --runtime (else the --all-reduce profile) runs "
                         "the phase")
    ap.add_argument("--sampler", choices=RUNTIME.SAMPLERS, default=None,
                    help="add the sampler's kernels after the LM head (" + RUNTIME.SAMPLER_HELP + "); with --tp "
                         "the logits are all-gathered first (default: --runtime's, else none)")
    ap.add_argument("-o", "--out", default="-", help="output file, YAML or, if it ends in .jsonl, JSON Lines "
                    "(default: YAML on standard output)")
    return ap


def generate(argv):
    """The trace the command line `argv` (without the program's name) asks for, as a dict. A flag
    or value the parser cannot take raises cli.UsageError, bad input WorkloadError."""
    ap = parser()
    ap.raise_usage = True
    ap.allow_abbrev = False  # a caller's misspelt option is an error, not a guess
    if any(x in ("-h", "--help") for x in argv):
        raise CLI.UsageError("help is not an option here (the generator's --help lists its flags)")
    return _build(ap.parse_args(argv))


def _build(a):
    a.kv = a.kv or a.activations
    a.math = a.math or ("fp4" if a.weights in BLOCK_SCALED else a.weights)
    for flag in ("weights", "activations", "kv", "math"):
        known = FORMATS | BLOCK_SCALED if flag == "weights" else FORMATS
        if getattr(a, flag) not in known:
            fail(f"--{flag} {getattr(a, flag)}: unknown format (known: {', '.join(sorted(known))})")
    if a.weights != a.math and BITS[a.weights] > BITS[a.math]:
        fail(f"--weights {a.weights} is wider than --math {a.math}: weight-only quantisation stores weights narrower")
    for flag in ("batch", "prompt", "context"):
        if getattr(a, flag) < 1:
            fail(f"--{flag} must be at least 1")
    if a.past < 0:
        fail("--past must be 0 or more tokens")
    if a.past and a.phase != "prefill":
        fail("--past applies to --phase prefill")
    if a.layers is not None and a.layers < 1:
        fail(f"--layers {a.layers}: must be at least 1 (leave it out for every layer)")
    if a.kv_page < 0:
        fail("--kv-page must be 0 (contiguous) or a page size in tokens")
    if a.kv_page and a.attention != "fused":
        fail("--kv-page: only the fused attention kernel reads a paged cache; use --attention fused")
    for flag in ("tp", "pp", "dp", "microbatches", "ep"):
        if getattr(a, flag) < 1:
            fail(f"--{flag} must be at least 1")
    c = load_card(a.model)
    if a.tp > 1 or a.pp > 1 or a.dp > 1:
        if c.get("family") == "resnet":
            fail("--tp/--pp/--dp: parallel placement is generated for transformers only")
        if c["heads"] % a.tp or c["ffn"] % a.tp:
            fail(f"--tp {a.tp} must divide heads ({c['heads']}) and ffn ({c['ffn']})")
        if c["kv_heads"] % a.tp and a.tp % c["kv_heads"]:
            fail(f"--tp {a.tp} and kv_heads ({c['kv_heads']}): one must divide the other")
        if a.dp > 1 and a.phase != "train":
            fail("--dp applies to --phase train (replicas of a serving step share nothing)")
        if a.pp > (a.layers or c["layers"]):
            fail(f"--pp {a.pp}: more stages than layers")
    if a.batch % a.microbatches:
        fail(f"--microbatches {a.microbatches} must divide --batch {a.batch}")
    if a.microbatches > 1 and a.pp == 1 and a.phase != "train":
        fail("--microbatches applies with --pp, or in training")
    if a.phase != "train":
        defaults = {"schedule": "1f1b", "virtual_stages": 1, "sequence_parallel": False, "zero": 0,
                    "recompute": "none", "grad_reduce": "fp32", "grad_accumulation": "fused", "ep": 1, "capacity_factor": None,
                    "mirror_replicas": False}
        for k, v in defaults.items():
            if getattr(a, k) != v:
                fail(f"--{k.replace('_', '-')} applies to --phase train")
    if c.get("family") != "resnet" and a.phase is None:
        fail("--phase prefill, decode or train is required for a transformer")
    if c.get("family") == "resnet" and a.phase not in (None, "prefill"):
        fail(f"--phase {a.phase}: a resnet runs inference (a forward pass) only; leave --phase out")
    if c.get("family") != "resnet" and c["encoder"] and a.phase == "decode":
        fail(f"{a.model}: an encoder has no decode phase")
    if a.max_context is not None and a.max_context < 1:
        fail("--max-context must be at least 1 token")
    limit = a.max_context or (c.get("context") if c.get("family") != "resnet" else None)
    if limit:
        # The card's longest sequence (max_position_embeddings): a longer one is not the model.
        longest = a.context if a.phase == "decode" else a.past + a.prompt
        what = "--context" if a.phase == "decode" else "--prompt" + (" + --past" if a.past else "")
        if longest > limit:
            key = "--max-context" if a.max_context else f"key 'context' in {a.model}"
            fail(f"{what} {longest} is beyond {c['name']}'s context of {limit} tokens ({key})")
    if a.weights != a.math and (c.get("family") == "resnet" or a.phase == "train"):
        fail("--math different from --weights (weight-only quantisation) is generated for transformer prefill and decode")
    # A serving step: a decoder's prefill or decode without a pipeline (where --runtime and --sampler apply).
    serving_step = c.get("family") != "resnet" and a.phase in ("prefill", "decode") and not c["encoder"] and a.pp == 1
    a.rt, a.rows = None, None  # a.rows: a decode's dense rows, padded up to its CUDA graph
    if a.runtime:
        if not serving_step:
            fail("--runtime applies to a decoder's --phase prefill or decode, without --pp (one runtime step per "
                 "pipeline stage is not generated yet)")
        try:
            a.rt = RUNTIME.load(a.runtime)
        except RUNTIME.RuntimeProfileError as e:
            fail(f"--runtime: {e}")
        if a.phase == "decode":
            padded = a.rt.graph_batch(a.batch)
            if padded and padded != a.batch:
                a.rows = padded
        a.sampler = a.sampler or a.rt.sampling
    a.ar = None  # the Runtime whose all_reduce section picks the all-reduces' kernel
    if a.all_reduce not in (None, "nccl"):
        if not serving_step:
            fail("--all-reduce applies to a decoder's --phase prefill or decode, without --pp")
        try:
            a.ar = RUNTIME.load(a.all_reduce)
        except RUNTIME.RuntimeProfileError as e:
            fail(f"--all-reduce: {e} (or nccl, NCCL's)")
    elif a.all_reduce is None:
        a.ar = a.rt
    if a.sampler and not serving_step:
        fail("--sampler applies to a decoder's --phase prefill or decode, without --pp")
    if c.get("family") == "resnet":
        return build_resnet(c, a)
    return TRAINING.build(c, a) if a.phase == "train" else build(c, a)


def main(argv=None):
    """`xpusim-trace` (scripts/xpusim-trace.py, `python3 -m xpusim.workloads`): the trace written
    to -o, or to standard output; an error is one line, `xpusim-trace: ...`, and exit 1."""
    a = parser().parse_args(argv)
    try:
        trace = _build(a)
        text = dump_jsonl(trace) if a.out.endswith(".jsonl") else dump(trace)
        if a.out == "-":
            sys.stdout.write(text)
        else:
            try:
                with open(a.out, "w") as f:
                    f.write(text)
            except OSError as e:
                fail(f"-o {a.out}: cannot write it ({e.strerror})")
    except WorkloadError as e:
        sys.exit(f"xpusim-trace: {e}")
