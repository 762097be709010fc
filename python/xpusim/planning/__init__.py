"""A training plan: every parallel layout of one model on a number of GPUs, each refused where it
cannot run or does not fit, the rest simulated, with step time, model-FLOPs utilisation and
energy per step, and the layouts no other beats on both time and energy (the Pareto front).

  python3 -m xpusim.planning configs/models/llama-2-7b.yaml --config configs/systems/dgx-h100.yaml \\
      --gpus 16 --global-batch 64 --prompt 4096 --out out/plan

The space is TP x PP x DP (DP = GPUs / (TP x PP)) x microbatch size x recomputation (x ZeRO
stage, x pipeline schedule, x EP for MoE cards), each axis a comma-separated list. A layout is
refused, with the reason, where the trace generator refuses it (heads or layers that do not
divide, a schedule that needs more microbatches) or where its memory per GPU (weights,
gradients, optimiser state, activations of the microbatches in flight; the generator's
`memory_per_gpu`) passes the chip's HBM. The rest run through the engine in process, one GPU
simulated per pipeline stage (`system.detail: representative`). Finished layouts are appended
to OUT/results.jsonl as they finish and are not run again: an interrupted plan loses nothing.
OUT/plan.html plots step time against energy per step with the front, and OUT/plan.md lists every
layout. docs/training.md ("Planning a run") describes it.
"""
import itertools
import json
import math
import os

from .. import cli as CLI
from .. import workloads
from ..serving.replica import size_bytes
from ..workloads import training as TRAINING
from ..workloads.train_memory import _gib

AXES = ("tp", "pp", "micro_batch", "recompute", "zero", "schedule", "ep")


class PlanError(Exception):
    pass


class FlagError(PlanError):
    """A --generator flag the generator cannot read: it would refuse every layout, so the plan stops."""


def layouts(space, gpus, global_batch):
    """Every point of the space as (point, reason): reason is None where the point is a layout
    of `gpus` GPUs and `global_batch` sequences, else why it is not one."""
    seen = set()
    for values in itertools.product(*(space[a] for a in AXES)):
        p = dict(zip(AXES, values))
        tp_pp = p["tp"] * p["pp"]
        p["dp"] = gpus // tp_pp if gpus % tp_pp == 0 else gpus / tp_pp
        # ZeRO shards over replicas and a schedule orders stages: without either they do not apply.
        if p["dp"] == 1:
            p["zero"] = 0
        if p["pp"] == 1:
            p["schedule"] = "1f1b"
        if p["ep"] > 1 and p["dp"] == 1:
            p["ep"] = 1
        key = tuple(p[a] for a in AXES)
        if key in seen:
            continue
        seen.add(key)
        reason = None
        if gpus % tp_pp:
            reason = f"TP x PP = {tp_pp} does not divide {gpus} GPUs"
        elif global_batch % p["dp"]:
            reason = f"DP {p['dp']} does not divide the global batch of {global_batch}"
        elif (global_batch // p["dp"]) % p["micro_batch"]:
            reason = (f"microbatches of {p['micro_batch']} do not divide a replica's {global_batch // p['dp']} "
                      "sequences")
        yield p, reason


def point_id(p):
    return (f"tp{p['tp']}-pp{p['pp']}-dp{p['dp']}-mb{p['micro_batch']}-{p['recompute']}-z{p['zero']}-{p['schedule']}"
            + (f"-ep{p['ep']}" if p["ep"] > 1 else ""))


def generator_args(card, p, global_batch, prompt, extra):
    per_replica = global_batch // p["dp"]
    args = [card, "--phase", "train", "--prompt", str(prompt), "--batch", str(per_replica), "--microbatches",
            str(per_replica // p["micro_batch"]), "--tp", str(p["tp"]), "--pp", str(p["pp"]), "--dp", str(p["dp"]),
            "--recompute", p["recompute"], "--zero", str(p["zero"])]
    if p["schedule"] == "interleaved":
        args += ["--schedule", "interleaved", "--virtual-stages", "2"]
    else:
        args += ["--schedule", p["schedule"]]
    if p["tp"] > 1:
        args.append("--sequence-parallel")  # as Megatron-LM runs TP
    if p["ep"] > 1:
        args += ["--ep", str(p["ep"])]
    if p["dp"] > 1:
        args.append("--mirror-replicas")  # one replica's traffic stands for the rest
    return args + list(extra)


def memory_line(mem):
    return ", ".join(f"{k} {_gib(v)}" for k, v in mem.items())


def result_of(p, **fields):
    """A layout's result line: its id and axes, then `fields`."""
    return {"id": point_id(p), **{a: p[a] for a in AXES}, "dp": p["dp"], **fields}


def evaluate(p, card_path, card, global_batch, prompt, extra, hbm, peak, simulate=None):
    """The result of one layout: refused (the generator's reason), over HBM (its memory), or
    simulated (step time, MFU, energy); without `simulate(trace) -> report`, "fits" where it
    would be simulated."""
    r = result_of(p)
    try:
        trace = workloads.generate(generator_args(card_path, p, global_batch, prompt, extra))
    except CLI.UsageError as e:  # a flag the generator cannot read: every layout would be refused
        raise FlagError(f"the trace generator cannot read --generator {' '.join(extra)}: {e}")
    except (workloads.WorkloadError, ValueError) as e:
        return dict(r, status="refused", reason=str(e).removeprefix("error: "))
    mem = {k: size_bytes(v) for k, v in trace.get("memory_per_gpu", {}).items()}
    total = sum(mem.values())
    r["memory_gib"] = total / 2**30
    if total > hbm:
        return dict(r, status="does not fit",
                    reason=f"{total / 2**30:.1f} GiB per GPU of {hbm / 2**30:.0f} GiB ({memory_line(mem)})")
    if simulate is None:
        return dict(r, status="fits")
    rep = simulate(trace)
    step = rep["total"]["time_s"]
    gpus = p["tp"] * p["pp"] * p["dp"]
    layers = next((int(x.split("=", 1)[1]) for x in extra if x.startswith("--layers=")), card["layers"])
    flops = TRAINING.model_flops(card, prompt, trace["tokens"], layers)
    return dict(r, status="simulated", step_s=step, energy_j=rep["total"]["energy"]["total_j"],
                mfu=flops / step / gpus / peak if peak else None, tokens_per_s=trace["tokens"] / step,
                breakdown=rep.get("time_breakdown", {}))


def pareto(results):
    """The simulated layouts that no other beats on both step time and energy per step."""
    pts = [r for r in results if r.get("status") == "simulated"]
    front = []
    for r in pts:
        dominated = any(o is not r and o["step_s"] <= r["step_s"] and o["energy_j"] <= r["energy_j"]
                        and (o["step_s"] < r["step_s"] or o["energy_j"] < r["energy_j"]) for o in pts)
        if not dominated:
            front.append(r["id"])
    return sorted(front, key=lambda i: next(r["step_s"] for r in pts if r["id"] == i))


def read_results(path):
    """Finished layouts of an earlier run of the same plan, by id. A line that is not a result
    (an interrupted write) is an error naming the file and line, not silently dropped."""
    done = {}
    if not os.path.exists(path):
        return done
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise PlanError(f"{path}:{n}: not a result ({e.msg}); remove the line to run that layout again")
            if not isinstance(r, dict) or "id" not in r or "status" not in r:
                raise PlanError(f"{path}:{n}: not a result (no id or status)")
            if r["status"] == "simulated" and not all(
                    isinstance(r.get(k), (int, float)) and math.isfinite(r[k]) and r[k] >= 0
                    for k in ("step_s", "energy_j")):
                raise PlanError(f"{path}:{n}: {r['id']}: step_s and energy_j must be finite and non-negative")
            done[r["id"]] = r
    return done
