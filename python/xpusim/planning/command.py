"""The planning sweep's command line: python3 -m xpusim.planning (scripts/xpusim-plan.py)."""
import hashlib
import json
import math
import os
import sys
import time

from .. import cli as CLI
from .. import workloads
from ..serving import engine
from ..serving import step_cache as STEPCACHE
from ..serving.stream import ServeError
from ..serving.replica import size_bytes
from . import AXES, FlagError, PlanError, evaluate, layouts, pareto, point_id, read_results, result_of
from ..plots import PlotError
from .page import write_page, write_table

SCHEDULES = ("1f1b", "interleaved", "gpipe")
RECOMPUTE = ("none", "selective", "full")
MAX_POINTS = 10000  # a bound on the space before anything is generated


def int_list(text):
    try:
        xs = [int(x) for x in text.split(",")]
    except ValueError:
        raise CLI.argparse.ArgumentTypeError(f"{text!r}: expected whole numbers separated by commas, e.g. 1,2,4")
    if not xs or any(x < 1 for x in xs):
        raise CLI.argparse.ArgumentTypeError(f"{text!r}: every value must be 1 or more")
    return sorted(set(xs))


def choice_list(choices):
    def parse(text):
        xs = text.split(",")
        for x in xs:
            if x not in choices:
                raise CLI.argparse.ArgumentTypeError(f"{x!r}: not one of {', '.join(choices)}")
        return list(dict.fromkeys(xs))
    return parse


def zero_list(text):
    try:
        xs = sorted({int(x) for x in text.split(",")})
    except ValueError:
        raise CLI.argparse.ArgumentTypeError(f"{text!r}: expected ZeRO stages 0-3 separated by commas")
    if any(x < 0 or x > 3 for x in xs):
        raise CLI.argparse.ArgumentTypeError(f"{text!r}: ZeRO stages are 0 to 3")
    return xs


def parser():
    ap = CLI.Parser(prog="xpusim-plan", description=__doc__.split("\n")[0],
                    epilog=sys.modules[__package__].__doc__, formatter_class=CLI.argparse.RawDescriptionHelpFormatter)
    ap.add_argument("card", help="model card (configs/models/*.yaml)")
    ap.add_argument("--config", required=True, help="system config (configs/systems/*.yaml)")
    ap.add_argument("--gpus", type=int, required=True, help="GPUs the run takes (system.domains is set to hold them)")
    ap.add_argument("--global-batch", type=int, required=True, help="sequences per step over all replicas")
    ap.add_argument("--prompt", type=int, default=2048, help="sequence length (default 2048)")
    ap.add_argument("--tp", type=int_list, default=[1, 2, 4, 8], help="tensor-parallel sizes (default 1,2,4,8)")
    ap.add_argument("--pp", type=int_list, default=[1, 2, 4], help="pipeline stages (default 1,2,4)")
    ap.add_argument("--micro-batch", type=int_list, default=[1, 2], help="sequences per microbatch (default 1,2)")
    ap.add_argument("--recompute", type=choice_list(RECOMPUTE), default=["none", "selective"],
                    help="activation recomputation (default none,selective)")
    ap.add_argument("--zero", type=zero_list, default=[1], help="ZeRO stages, applied where DP > 1 (default 1)")
    ap.add_argument("--schedule", type=choice_list(SCHEDULES), default=["1f1b"],
                    help="pipeline schedules, applied where PP > 1 (default 1f1b; interleaved runs 2 virtual stages)")
    ap.add_argument("--ep", type=int_list, default=[1], help="expert-parallel sizes for MoE cards (default 1)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override, as xpusim run's")
    ap.add_argument("--generator", action="append", default=[], metavar="FLAG",
                    help="a flag passed on to the trace generator, e.g. --generator=--weights=fp8 (repeatable)")
    ap.add_argument("--out", required=True, help="folder for results.jsonl, plan.md and plan.html")
    ap.add_argument("--check", action="store_true", help="list the layouts and what refuses each; simulate nothing")
    ap.add_argument("--xpusim", default=engine.BINARY, help="the xpusim binary, where the native part is not built")
    return ap


def fingerprint(a, values):
    """What makes two plans the same, so that results of another are never reused: the resolved
    config, the model card, the engine and the generator's sources (serving.step_cache's digest
    of them), the GPUs, batch, sequence and generator flags."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sources = sorted(os.path.join(package, "workloads", f) for f in os.listdir(os.path.join(package, "workloads"))
                     if f.endswith(".py"))
    try:
        digest = STEPCACHE.fingerprint(values, a.card, engine.engine_file(), sources)
    except OSError as e:
        raise PlanError(f"{e.filename}: cannot read it for the plan's fingerprint: {e.strerror}")
    return hashlib.sha256(json.dumps([digest, a.gpus, a.global_batch, a.prompt, a.generator]).encode()).hexdigest()[:16]


def simulator(config, sets):
    return lambda trace: engine.simulate(config, trace, sets, trace["name"], jsonl=True)


def plan(a, say=print):
    for flag, v in (("--gpus", a.gpus), ("--global-batch", a.global_batch), ("--prompt", a.prompt)):
        if v < 1:
            raise PlanError(f"{flag} {v}: must be 1 or more")
    try:
        card = workloads.load_card(a.card)
    except workloads.WorkloadError as e:
        raise PlanError(str(e))
    space = {"tp": a.tp, "pp": a.pp, "micro_batch": a.micro_batch, "recompute": a.recompute, "zero": a.zero,
             "schedule": a.schedule, "ep": a.ep}
    n_points = math.prod(len(space[ax]) for ax in AXES)
    if n_points > MAX_POINTS:
        raise PlanError(f"the space has {n_points} points, over {MAX_POINTS}: narrow an axis")
    values = engine.resolved(a.config, tuple(a.set))
    if "hbm.capacity" not in values or "system.gpus_per_domain" not in values:
        raise PlanError(f"{a.config}: not a GPU config (no hbm.capacity or system section): a training plan places "
                        "a model on GPUs")
    hbm = size_bytes(values["hbm.capacity"])
    per_domain = int(values["system.gpus_per_domain"])
    sets = list(a.set)
    if not any(s.startswith("system.domains=") for s in sets):
        sets.append(f"system.domains={-(-a.gpus // per_domain)}")
    sets.append("system.detail=representative")
    peak = None
    results_path = os.path.join(a.out, "results.jsonl")
    done = {}
    if not a.check:  # --check writes nothing and reads no earlier results
        os.makedirs(a.out, exist_ok=True)
        fp = fingerprint(a, values)
        done = read_results(results_path)
        stale = [r["id"] for r in done.values() if r.get("plan") != fp]
        if stale:
            raise PlanError(f"{results_path} holds another plan's results ({stale[0]} and {len(stale) - 1} more: the "
                            "model, config, GPUs, batch, generator flags, generator or engine differ): use another "
                            "--out or remove it")
    simulate = simulator(a.config, sets)
    results, t0 = [], time.time()
    points = [p for p, reason in layouts(space, a.gpus, a.global_batch) if reason is None]
    if not points:
        raise PlanError(f"no point of the space is a layout of {a.gpus} GPUs and a global batch of {a.global_batch}: "
                        "widen --tp, --pp or --micro-batch")
    for i, p in enumerate(points):
        pid = point_id(p)
        if pid in done and done[pid]["status"] != "failed":  # a failed simulation runs again
            results.append(done[pid])
            continue
        if a.check:
            r = evaluate(p, a.card, card, a.global_batch, a.prompt, a.generator, hbm, None)
        else:
            if peak is None:
                peak = chip_peak(a, simulate)
            try:
                r = evaluate(p, a.card, card, a.global_batch, a.prompt, a.generator, hbm, peak, simulate)
            except FlagError:
                raise
            except (PlanError, ServeError) as e:  # a stall, a refusal the HBM check did not foresee
                r = result_of(p, status="failed", reason=str(e))
            r["plan"] = fp
            with open(results_path, "a") as f:
                f.write(json.dumps(r) + "\n")
        results.append(r)
        say(line(r, i + 1, len(points), time.time() - t0))
    if not a.check:
        front = pareto(results)
        write_table(os.path.join(a.out, "plan.md"), results, front, a)
        page = os.path.join(a.out, "plan.html")
        try:
            write_page(page, results, front, a)
        except PlotError as e:  # plan.md and results.jsonl hold every figure
            print(f"warning: {page} not drawn: {e}", file=sys.stderr)
        say(f"{len(results)} layouts: {sum(r['status'] == 'simulated' for r in results)} simulated, "
            f"{sum(r['status'] == 'does not fit' for r in results)} over HBM, "
            f"{sum(r['status'] == 'refused' for r in results)} refused"
            + (f", {sum(r['status'] == 'failed' for r in results)} failed to simulate" if any(
                r["status"] == "failed" for r in results) else "") + f"; Pareto front: {', '.join(front) or 'none'}; "
            f"{os.path.join(a.out, 'plan.html')}")
    return results


def chip_peak(a, simulate):
    """Dense tensor FLOP/s of the chip in the plan's GEMM format (MFU's denominator, bf16 unless
    --generator=--weights=... or --math=... says otherwise; block-scaled fp4 at fp4's), from a
    report's chip section."""
    fmt = "bf16"
    for g in a.generator:
        if g.startswith("--weights=") or g.startswith("--math="):
            fmt = g.split("=", 1)[1]
    fmt = {"mxfp4": "fp4", "nvfp4": "fp4", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}.get(fmt, fmt)
    tiny = {"xpusim_trace": 1, "name": "peak", "ops": [{"name": "g", "kind": "gemm", "m": 64, "n": 64, "k": 64,
                                                        "dtype": "bf16", "devices": [0]}]}
    peaks = simulate(tiny)["chip"]["tensor_peak_tflops"]
    if not peaks.get(fmt):
        raise PlanError(f"{a.config}: no dense tensor peak in {fmt} to count MFU against")
    return peaks[fmt] * 1e12


def line(r, i, n, elapsed):
    head = f"[{i}/{n}] {r['id']}: "
    if r["status"] == "simulated":
        mfu = f", MFU {r['mfu']:.1%}" if r.get("mfu") is not None else ""
        return head + f"{r['step_s'] * 1e3:.1f} ms a step, {r['energy_j']:.4g} J{mfu} ({elapsed:.0f} s so far)"
    if r["status"] == "fits":
        return head + f"fits ({r['memory_gib']:.1f} GiB per GPU)"
    return head + f"{r['status']}: {r['reason']}"


def main(argv=None):
    a = parser().parse_args(argv)
    engine.BINARY = a.xpusim
    try:
        plan(a)
    except (PlanError, ServeError, OSError) as e:
        sys.exit(f"error: xpusim-plan: {e}")
    except KeyboardInterrupt:
        sys.exit("xpusim-plan: interrupted; finished layouts are in results.jsonl and are not run again")
