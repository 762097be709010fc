#!/usr/bin/env python3
"""xpusim serve against published serving latencies: time to first token, inter-token latency and
end-to-end latency of production runtimes (docs/validation/published/serving-latency.csv).

Each row names its source, the runtime and harness that measured it, the system and the config
that stands for it, the model card, TP, formats, the runtime profile (configs/runtimes/), whether
the engine ran in-process (`offline`: no API server), the sampler, the scheduler and its token
budget, the input and output lengths, the concurrency (clients in a closed loop, as AIPerf,
GenAI-Perf and benchmark_latency run: a batch of N at once is N clients of one request each),
the request count, the metric (ttft_mean, itl_mean: xpusim's mean time per output token,
e2e_mean) and the published value. Rows of one setup share one run. Each setup runs twice: with
its runtime profile and without one (the kernels alone), so the table shows what the runtime
adds. No parameter of the simulator was set from these rows: they are held out. Prints a
Markdown table with each row's error and the mean absolute error; asserts nothing.

  scripts/check-serving-latency.py [--xpusim build/xpusim] [--rows 0,2] [--jobs N] [--out DIR] [--runtime-only]

--runtime-only skips the kernels-alone runs (their column says "not run"): for re-running rows
after a change to a runtime profile, which moves only the other column.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "serving-latency.csv")
SERVE = os.path.join(ROOT, "scripts", "xpusim-serve.py")
SETUP = ("config", "model", "tp", "weights", "kv", "runtime", "offline", "sampler", "scheduler", "max_batched_tokens",
         "isl", "osl", "concurrency", "requests")
METRICS = {"ttft_mean": ("ttft_s", "TTFT"), "itl_mean": ("tpot_s", "ITL"), "e2e_mean": ("e2e_s", "end to end")}


def run(setup, with_runtime, a, out):
    s = dict(setup)
    cmd = [sys.executable, SERVE, "--config", os.path.join(ROOT, s["config"]), "--model", os.path.join(ROOT, s["model"]),
           "--tp", s["tp"], "--weights", s["weights"], "--kv", s["kv"], "--scheduler", s["scheduler"],
           "--max-batched-tokens", s["max_batched_tokens"], "--prompt-len", s["isl"], "--output-len", s["osl"],
           "--concurrency", s["concurrency"], "--num-requests", s["requests"], "--sampler", s["sampler"],
           "--max-seqs", str(max(256, int(s["concurrency"]))), "--xpusim", a.xpusim, "--jobs", str(a.jobs),
           "--step-cache", os.path.join(a.out, "step-cache.json"), "--out", out, "--overwrite"]
    if with_runtime:
        cmd += ["--runtime", s["runtime"]] + (["--offline"] if s["offline"] == "true" else [])
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    if p.returncode != 0:
        sys.exit(f"check-serving-latency: xpusim-serve failed on {out}:\n{p.stderr.strip()}")
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xpusim", default=os.path.join(ROOT, "build", "xpusim"))
    ap.add_argument("--rows", default=None, help="comma-separated row numbers (default: every row)")
    ap.add_argument("--jobs", type=int, default=0, help="step simulations at once (default: the CPUs)")
    ap.add_argument("--out", default="check-serving-latency-out")
    ap.add_argument("--runtime-only", action="store_true", help="skip the kernels-alone runs")
    a = ap.parse_args()
    with open(PUBLISHED) as f:
        rows = list(csv.DictReader(f))
    pick = range(len(rows))
    if a.rows:
        try:
            pick = [int(x) for x in a.rows.split(",")]
        except ValueError:
            sys.exit(f"check-serving-latency: --rows {a.rows}: expected comma-separated row numbers")
        bad = [i for i in pick if not 0 <= i < len(rows)]
        if bad:
            sys.exit(f"check-serving-latency: --rows: no row {bad[0]} (the file has rows 0 to {len(rows) - 1})")
    if not os.path.exists(a.xpusim):
        sys.exit(f"check-serving-latency: {a.xpusim}: no xpusim binary (build it, or pass --xpusim)")
    os.makedirs(a.out, exist_ok=True)
    setups = {}
    for i in pick:
        key = tuple((k, rows[i][k]) for k in SETUP)
        setups.setdefault(key, []).append(i)
    results = {}
    for n, (key, idx) in enumerate(setups.items()):
        for with_rt in ((True,) if a.runtime_only else (True, False)):
            out = os.path.join(a.out, f"setup{n}-{'runtime' if with_rt else 'kernels'}")
            results[(key, with_rt)] = run(key, with_rt, a, out)
    lines = ["| # | runtime (harness) | system, model, TP, format | ISL/OSL, concurrency | metric | published | "
             "xpusim, kernels alone | xpusim with the runtime | error |", "|---|---|---|---|---|---|---|---|---|"]
    errs = []
    for key, idx in setups.items():
        for i in idx:
            r = rows[i]
            field, label = METRICS[r["metric"]]
            pub = float(r["published_ms"])
            got = results[(key, True)][field]["mean"] * 1e3
            bare = results[(key, False)][field]["mean"] * 1e3 if (key, False) in results else None
            err = got / pub - 1
            errs.append(abs(err))
            offline = ", offline" if r["offline"] == "true" else ""
            lines.append(f"| {i} | {r['runtime_label']} ({r['harness']}) | {r['system']}, "
                         f"{os.path.basename(r['model'])[:-5]}, TP{r['tp']}, {r['weights']} | {r['isl']}/{r['osl']}, "
                         f"{r['concurrency']} | {label} | {pub:.4g} ms | "
                         f"{'not run' if bare is None else f'{bare:.4g} ms ({100 * (bare / pub - 1):+.0f}%)'} | "
                         f"{got:.4g} ms ({r['runtime']}{offline}) | {100 * err:+.1f}% |")
    lines.append("")
    lines.append(f"Mean absolute error over {len(errs)} rows: {100 * sum(errs) / len(errs):.1f}% with the runtime; "
                 f"{sum(e <= 0.10 for e in errs)} of {len(errs)} within 10%.")
    text = "\n".join(lines)
    with open(os.path.join(a.out, "check-serving-latency.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
