"""`xpusim serve` (`python3 -m xpusim.serving`): the command line, checks before any work, and the
runs it makes: one stream, a sweep of arrival rates, the bucketing check."""
import argparse
import math
import os
import random
import re
import sys

from .. import cli as CLI
from .. import runtime as RUNTIME
from .. import workloads
from . import engine
from .cluster import Cluster
from .replica import Replica, load_card
from ..plots import PlotError
from .report import html_page, summarise, write
from .step_model import StepModel
from .stream import (MAX_REPLICAS, MAX_REQUESTS, ServeError, check_kv_fit, check_volume, fail, generate_requests,
                     load_requests)


def check_buckets(a, steps, n):
    """Simulate n shapes exactly and compare their modelled times: decode steps, prefills of a
    few sequences and, with chunked prefill, chunks after cached tokens."""
    rng = random.Random(a.seed + 1)
    kinds = ("decode", "prefill", "chunk") if a.scheduler == "chunked" else ("decode", "prefill")
    for i in range(n):
        kind = kinds[i % len(kinds)]
        top = max(65, min(a.max_context, 4096))
        past = 0
        if kind == "decode":
            b, length = rng.randint(1, min(a.max_seqs, 64)), rng.randint(64, top)
            exact = steps.exact("decode", *steps.padded((b, length)))[0]  # as the runtime's graph runs it
            model = steps.step((b, length))[0]
        elif kind == "prefill":
            b = rng.randint(1, 4)  # a step the scheduler could run: within the token budget
            length = rng.randint(64, max(64, min(top, a.max_batched_tokens // b)))
            exact = steps.exact("prefill", b, length)[0]
            model = steps.step(None, [(length, 0)] * b)[0]
        else:
            b, length = 1, rng.randint(64, min(a.max_batched_tokens, top))
            past = rng.randint(64, top)
            exact = steps.exact("prefill", 1, length, past)[0]
            model = steps.step(None, [(length, past)])[0]
        steps.bucket_checks.append({"phase": kind, "batch": b, "length": length, "past": past, "exact_s": exact,
                                    "bucket_s": model, "error": model / exact - 1})


def parse_rates(text):
    try:
        rates = [float(x) for x in text.split(",")]
    except ValueError:
        rates = []
    if not rates or any(not (r > 0 and math.isfinite(r)) for r in rates):
        fail(f"--rates {text}: expected positive requests per second, comma-separated (e.g. 1,2,4,8)")
    return sorted(set(rates))


def check_slos(a, steps, reqs):
    """An SLO no request could meet is an error: a time per output token under the decode step
    of one sequence, or a first-token time under the prefill of the shortest prompt alone."""
    n = min(r["prompt_tokens"] for r in reqs)
    rt = a.rt
    if a.slo_tpot is not None:
        t = steps.step((1, n + 1))[0]
        if rt:
            t = rt.step_s(t, decode=1)
        if a.slo_tpot < t:
            fail(f"--slo-tpot {CLI.ms_text(a.slo_tpot)}: impossible, a decode step of one sequence takes {t * 1e3:.2f} ms "
                 f"on this replica")
    if a.slo_ttft is not None:
        t = steps.step(None, [(n, 0)])[0]
        if rt:
            t = rt.arrival_path_s(n) + rt.step_s(t, prefill_seqs=1, prefill_tokens=n) + rt.first_token_s
        if a.slo_ttft < t:
            fail(f"--slo-ttft {CLI.ms_text(a.slo_ttft)}: impossible, a prefill of the shortest prompt ({n} tokens) alone takes "
                 f"{t * 1e3:.2f} ms on this replica")


def sweep_rates(a, rates, card, replica, steps):
    """One generated stream per arrival rate through the same replica and step cache."""
    base, results = a.out, []
    for rate in rates:
        a.rate = rate
        reqs = generate_requests(a, a.max_context)
        if not reqs:
            fail(f"no requests arrive within --duration at {rate} per second")
        check_kv_fit(reqs, (replica.blocks // a.pp, a.block_size), "--prompt-len/--output-len")
        check_slos(a, steps, reqs)
        server = Cluster(a, replica, steps)
        finished = server.run(reqs)
        rows, s = summarise(a, reqs, finished, server, replica, steps)
        a.out = os.path.join(base, f"rate-{rate:g}")
        write(a, rows, s)
        a.out = base
        results.append((rate, rows, s))
    keys = ["rate_rps", "throughput_rps", "output_tokens_per_s", "goodput_rps", "ttft_p50_s", "ttft_p99_s",
            "tpot_p50_s", "tpot_p99_s", "tbt_p99_s", "e2e_p50_s", "e2e_p99_s", "joules_per_output_token", "busy_fraction",
            "preemptions"]
    with open(os.path.join(base, "rates.csv"), "w") as f:
        f.write(",".join(keys) + "\n")
        for rate, _, s in results:
            vals = [rate, s["throughput_rps"], s["output_tokens_per_s"], s["goodput_rps"], s["ttft_s"]["p50"],
                    s["ttft_s"]["p99"], s["tpot_s"]["p50"], s["tpot_s"]["p99"], s["tbt_s"]["p99"], s["e2e_s"]["p50"], s["e2e_s"]["p99"],
                    s["joules_per_output_token"], s["busy_fraction"], s["preemptions"]]
            f.write(",".join("" if v is None else f"{v:.6g}" for v in vals) + "\n")
    page = os.path.join(base, "serve.html")
    try:
        text = html_page(a, results)
        with open(page, "w") as f:
            f.write(text)
    except PlotError as e:  # the figures stand in rates.csv and each rate's folder
        print(f"warning: {page} not drawn: {e}", file=sys.stderr)
        page = None
    lines = ["| rate (req/s) | served (req/s) | output tok/s | goodput | TTFT p50 / p99 | TPOT p50 / p99 | J/token |",
             "|---|---|---|---|---|---|---|"]
    for rate, _, s in results:
        lines.append(f"| {rate:g} | {s['throughput_rps'] or 0:.2f} | {s['output_tokens_per_s'] or 0:.0f} | "
                     f"{'-' if s['goodput_rps'] is None else format(s['goodput_rps'], '.2f')} | {1e3 * s['ttft_s']['p50']:.1f} / {1e3 * s['ttft_s']['p99']:.1f} ms | "
                     f"{1e3 * (s['tpot_s']['p50'] or 0):.1f} / {1e3 * (s['tpot_s']['p99'] or 0):.1f} ms | "
                     f"{s['joules_per_output_token'] or 0:.3f} |")
    a.progress.close()
    if not a.quiet:
        print("\n".join(lines))
        print(f"\nwrote {os.path.join(base, 'rates.csv')}" + (f" and {page}" if page else ""))


def main(argv=None):
    doc = sys.modules[__package__].__doc__  # the package's: what serving models, and examples
    ap = CLI.Parser(prog="xpusim-serve", description=doc.split("\n\n")[0], allow_abbrev=False,
                    formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc.split("\n\n", 1)[1])
    ap.add_argument("--config", required=True, help="system config (configs/systems/ for TP > 1)")
    ap.add_argument("--model", required=True, help="model card (configs/models/)")
    ap.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs of the replica (default 1)")
    ap.add_argument("--pp", type=int, default=1,
                    help="pipeline stages of the replica, each of --tp GPUs (default 1); the replica runs one "
                         "scheduler per stage, as vLLM does, each with its share of the KV cache")
    ap.add_argument("--weights", default="bf16", help="weights' format (default bf16; see xpusim-trace.py)")
    ap.add_argument("--math", default=None, help="weight GEMMs' tensor-core format (default --weights)")
    ap.add_argument("--kv", default="bf16", help="KV-cache format (default bf16; fp8 halves it)")
    ap.add_argument("--kv-page", type=int, default=0, help="attention reads the paged KV layout (see xpusim-trace.py)")
    ap.add_argument("--requests", help="JSON Lines request file (docs/serving.md)")
    ap.add_argument("--rate", type=float, default=1.0, help="generated requests per second (default 1)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of generated arrivals (default 60)")
    ap.add_argument("--rates", default=None,
                    help="comma-separated arrival rates: one generated stream per rate (the same lengths' seed), "
                         "OUT/rate-R/ each, OUT/rates.csv and OUT/serve.html (latency against throughput, CDFs)")
    ap.add_argument("--arrivals", choices=["poisson", "bursty"], default="poisson")
    ap.add_argument("--concurrency", type=int, default=0,
                    help="closed loop, as AIPerf, GenAI-Perf and vLLM's --max-concurrency run a benchmark: N clients, "
                         "each sending its next request when its last answer has reached it (--num-requests "
                         "requests of --prompt-len and --output-len, or --requests' lengths in order; default 0: "
                         "open loop at the requests' arrivals)")
    ap.add_argument("--num-requests", type=int, default=None, help="with --concurrency: requests in all (default 100)")
    ap.add_argument("--offline", action="store_true",
                    help="the runtime's engine in-process (vLLM's LLM class, a benchmark_latency run): no API "
                         "server, so no --runtime request path in or out")
    ap.add_argument("--prompt-len", default="512", help="N, uniform:MIN:MAX or normal:MEAN:SD (default 512)")
    ap.add_argument("--output-len", default="128", help="as --prompt-len (default 128)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scheduler", choices=["continuous", "chunked", "static"], default="continuous",
                    help="continuous (vLLM: a step prefills new requests or decodes), chunked (Sarathi-Serve: "
                         "decodes and prefill chunks share each step under the token budget) or static")
    ap.add_argument("--max-seqs", type=int, default=256, help="running requests at most (vLLM's max_num_seqs, 256)")
    ap.add_argument("--max-batched-tokens", type=int, default=None,
                    help="tokens per step at most: prompt tokens of a prefill step, or a chunked step's decodes and "
                         "chunks together (vLLM's max_num_batched_tokens; default 8192, 2048 with --scheduler chunked)")
    ap.add_argument("--jobs", type=int, default=0, help="step simulations run at once (default: the CPUs)")
    ap.add_argument("--step-cache", default=None,
                    help="the step cache's file (default OUT/step-cache.json); runs of one setup may share it")
    ap.add_argument("--no-kernel-cache", dest="kernel_cache", action="store_false",
                    help="simulate every kernel of a new step shape (default: a kernel an earlier step ran in the same "
                         "state replays its record from the kernel cache beside the step cache, STEP-CACHE.kernels)")
    ap.add_argument("--preemption", choices=["recompute", "swap"], default="recompute",
                    help="a preempted request's cache: dropped and recomputed (default), or swapped to host memory")
    ap.add_argument("--swap-space", type=float, default=4.0,
                    help="GiB of host memory per GPU for swapped caches (vLLM's swap_space, 4); beyond it, recompute")
    ap.add_argument("--swap-bandwidth", type=float, default=64.0,
                    help="GB/s of a swap copy, each way (default 64: PCIe Gen5 x16, the H100 SXM's host link, at peak)")
    ap.add_argument("--replicas", type=int, default=1, help="model replicas serving the stream (default 1)")
    ap.add_argument("--router", choices=["least-loaded", "round-robin"], default="least-loaded",
                    help="which replica an arrival goes to: the one with the fewest requests (default) or in turn")
    ap.add_argument("--disaggregate", default=None, metavar="P:D",
                    help="P prefill replicas hand each request's KV cache to D decode replicas (instead of --replicas)")
    ap.add_argument("--kv-link", choices=["nvlink", "network"], default="nvlink",
                    help="the path of a disaggregated KV cache: the GPUs' NVLink or their NIC (default nvlink)")
    ap.add_argument("--block-size", type=int, default=16, help="tokens per KV block (vLLM's default 16)")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9, help="share of HBM for weights and cache (0.9)")
    ap.add_argument("--activation-reserve", type=float, default=4.0, help="GiB per GPU kept for activations (default 4)")
    ap.add_argument("--kv-blocks", type=int, default=None,
                    help="override the KV cache's block count (at least 1; default: what the memory holds)")
    ap.add_argument("--max-context", type=int, default=0, help="longest request (default: the card's context, else 4096)")
    ap.add_argument("--bucket-ratio", type=float, default=1.5,
                    help="ratio of the length ladder whose points are simulated and interpolated between (default 1.5)")
    ap.add_argument("--check-buckets", type=int, default=0, help="simulate N shapes exactly to measure bucketing")
    ap.add_argument("--slo-ttft", type=CLI.time_value, default=None, metavar="TIME",
                    help="time to first token with its unit (e.g. 500ms): goodput counts the requests within it "
                         "and --slo-tpot (default: no SLO, no goodput)")
    ap.add_argument("--slo-tpot", type=CLI.time_value, default=None, metavar="TIME",
                    help="time per output token with its unit (e.g. 50ms), as --slo-ttft")
    ap.add_argument("--runtime", default=None,
                    help="the serving runtime around the kernels: vllm, trtllm, sglang (configs/runtimes/) or a "
                         "profile's path; its host work per step, CUDA-graph padding of decode batches, eager "
                         "prefill, sampler and request path (default: none, the kernels alone)")
    ap.add_argument("--sampler", choices=RUNTIME.SAMPLERS, default=None,
                    help="the sampler's kernels in every step (" + RUNTIME.SAMPLER_HELP + "); default: "
                         "--runtime's, else none")
    ap.add_argument("--set", action="append", default=[], help="config override passed to xpusim run")
    ap.add_argument("--check", action="store_true",
                    help="check the flags, model, requests and that the model fits, simulate nothing (what "
                         "`xpusim sweep` asks of each serve point before it runs any)")
    ap.add_argument("--xpusim", default=engine.BINARY,
                    help="the xpusim binary, where the package's native part is not built (default: the build's)")
    ap.add_argument("--out", default="serve-out",
                    help="the run's folder (default serve-out); one that holds a run's results is refused without "
                         "--overwrite")
    ap.add_argument("--overwrite", action="store_true", help="replace the results a run left in --out")
    ap.add_argument("-q", "--quiet", action="store_true", help="only errors: no progress, no summary")
    ap.add_argument("-v", "--verbose", action="store_true", help="each step shape's simulation as it ends")
    a = ap.parse_args(argv)
    if a.quiet and a.verbose:
        ap.error("-q and -v: give one of them")
    a.progress = CLI.Progress(-1 if a.quiet else 1 if a.verbose else 0)
    engine.BINARY = a.xpusim
    if a.max_batched_tokens is None:
        a.max_batched_tokens = 2048 if a.scheduler == "chunked" else 8192
    try:
        for flag in ("tp", "pp", "max_seqs", "max_batched_tokens", "block_size"):
            if getattr(a, flag) < 1:
                fail(f"--{flag.replace('_', '-')} must be at least 1")
        if a.jobs < 0:
            fail("--jobs must be 0 (the CPUs) or more")
        if not 1 <= a.replicas <= MAX_REPLICAS:
            fail(f"--replicas {a.replicas}: must be 1 to {MAX_REPLICAS}")
        for flag in ("rate", "duration"):
            if not (getattr(a, flag) > 0 and math.isfinite(getattr(a, flag))):
                fail(f"--{flag} {getattr(a, flag)}: must be a positive, finite number")
        if not a.requests and not a.concurrency:
            check_volume(f"--rates {a.rates}" if a.rates else f"--rate {a.rate}",
                                  max(parse_rates(a.rates)) if a.rates else a.rate, a.duration)
        if a.kv_blocks is not None and a.kv_blocks < 1:
            fail(f"--kv-blocks {a.kv_blocks}: must be at least 1 (leave it out for what the memory holds)")
        if a.swap_space < 0 or not a.swap_bandwidth > 0:
            fail("--swap-space must be 0 or more GiB and --swap-bandwidth a positive GB/s")
        if a.disaggregate is not None:
            m = re.match(r"^(\d+):(\d+)$", a.disaggregate)
            if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
                fail(f"--disaggregate {a.disaggregate}: expected P:D, prefill and decode replicas (at least 1 each)")
            if a.replicas != 1:
                fail("--disaggregate P:D sets the replicas; leave --replicas out")
            if a.scheduler == "static":
                fail("--disaggregate runs continuous or chunked batching on each pool, not static")
            a.disaggregate = (int(m.group(1)), int(m.group(2)))
            if sum(a.disaggregate) > MAX_REPLICAS:
                fail(f"--disaggregate {m.group(0)}: at most {MAX_REPLICAS} replicas in all")
        if not 0 < a.gpu_memory_utilization <= 1:
            fail("--gpu-memory-utilization must be in (0, 1]")
        if a.bucket_ratio <= 1:
            fail("--bucket-ratio must be above 1")
        for flag, known in (("weights", workloads.FORMATS | workloads.BLOCK_SCALED), ("kv", workloads.FORMATS)):
            if getattr(a, flag) not in known:
                fail(f"--{flag} {getattr(a, flag)}: unknown format (known: {', '.join(sorted(known))})")
        if not engine.in_process() and not os.path.exists(a.xpusim):
            fail(f"{a.xpusim}: no xpusim binary (build it, or pass --xpusim)")
        a.rt = None
        if a.runtime:
            try:
                a.rt = RUNTIME.load(a.runtime)
            except RUNTIME.RuntimeProfileError as e:
                fail(f"--runtime: {e}")
            if a.offline:
                a.rt = a.rt.offline()
        elif a.offline:
            fail("--offline leaves out a --runtime's request path; give --runtime")
        a.sampler = a.sampler or (a.rt.sampling if a.rt else None)
        if a.concurrency < 0:
            fail("--concurrency must be 0 (open loop) or a number of clients")
        if a.concurrency and a.rates:
            fail("--concurrency runs a closed loop; --rates sweeps open-loop arrival rates")
        if a.num_requests is not None and not a.concurrency:
            fail("--num-requests applies with --concurrency (an open loop's requests come from --rate and --duration, "
                 "or --requests)")
        a.num_requests = 100 if a.num_requests is None else a.num_requests
        if not 1 <= a.num_requests <= MAX_REQUESTS or a.concurrency > MAX_REQUESTS:
            fail(f"--num-requests and --concurrency: 1 to {MAX_REQUESTS} requests")
        card = load_card(a.model)
        if a.pp > card["layers"]:
            fail(f"--pp {a.pp}: more stages than {card['name']}'s {card['layers']} layers")
        a.max_context = a.max_context or card.get("context", 4096)
        rates = parse_rates(a.rates) if a.rates else None
        if rates and a.requests:
            fail("--rates sweeps generated arrivals; it does not apply to --requests")
        replica = Replica(a, card)
        kv = (replica.blocks // a.pp, a.block_size)  # one engine's cache (a pipeline's stages share it)

        def stream():
            if a.requests:
                return load_requests(a.requests, a.max_context, kv)
            reqs = generate_requests(a, a.max_context)
            check_kv_fit(reqs, kv, "--concurrency" if a.concurrency else "--prompt-len/--output-len")
            return reqs
        if a.check:
            n = len(stream())
            print(f"ok: {card['name']} fits with {replica.blocks} KV blocks of {a.block_size} tokens per replica; "
                  f"{n} requests")
            return 0
        done = [f for f in ("summary.json", "results.jsonl", "rates.csv") if os.path.exists(os.path.join(a.out, f))]
        if done and not a.overwrite:
            fail(f"{os.path.join(a.out, done[0])} exists: give --overwrite to replace that run's results, or another --out")
        os.makedirs(a.out, exist_ok=True)
        steps = StepModel(a, card, a.out)
        if rates:
            return sweep_rates(a, rates, card, replica, steps)
        reqs = stream()
        if not reqs:
            fail("no requests arrive within --duration at --rate")
        check_slos(a, steps, reqs)
        server = Cluster(a, replica, steps)
        finished = server.run(reqs)
        if a.check_buckets:
            check_buckets(a, steps, a.check_buckets)
        rows, s = summarise(a, reqs, finished, server, replica, steps)
        a.progress.close()
        text = write(a, rows, s)
        if not a.quiet:
            print(text)
    except ServeError as e:
        sys.exit(f"xpusim-serve: {e}")


if __name__ == "__main__":
    main()
