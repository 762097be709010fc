"""xpusim serve's outputs: the summary of a served stream (percentiles, throughput, goodput,
energy, the latency breakdown), its files (results.jsonl, summary.json, summary.md) and the
rate sweep's page (serve.html). scripts/xpusim-serve.py runs the stream and calls these; they
read its Server and Cluster objects' figures and its parsed arguments. The page is drawn by
xpusim.plots (matplotlib); the rest needs the standard library only."""
import json
import math
import os


TBT_BINS = 200  # bins per factor of e: a percentile of the times between tokens within 0.5%


def tbt_bin(gap):
    return int(math.floor(math.log(max(gap, 1e-9)) * TBT_BINS))


def hist_percentile(hist, q):
    """The q-th percentile of a tbt_bin histogram (the bin's middle)."""
    total = sum(hist.values())
    if not total:
        return None
    seen = 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= q / 100 * total:
            return math.exp((b + 0.5) / TBT_BINS)


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def latency_breakdown(finished, servers, ingress, egress):
    """Where a token's latency goes. The steps' time (every replica's, summed) as kernels,
    collectives no kernel hides and the runtime's host work the kernels do not hide; and a first
    token's mean time as the API server's ingress, queueing (until the step that starts its
    prefill), its prefill steps, and the response path."""
    parts = {k: sum(s.time_parts[k] for s in servers) for k in ("kernels_s", "collectives_s", "host_s")}
    total = sum(parts.values())
    n = len(finished)
    mean = (lambda f: sum(f(r) for r in finished) / n) if n else (lambda f: None)
    return {
        "steps": parts | {"shares": {k[:-2]: (v / total if total > 0 else None) for k, v in parts.items()}},
        "ttft_mean_s": {"ingress": mean(lambda r: ingress(r.prompt)),
                        "queueing": mean(lambda r: r.admitted - r.arrival - ingress(r.prompt)),
                        "prefill": mean(lambda r: r.first_token - r.admitted),
                        "response": egress if n else None},
    }


def summarise(a, reqs, finished, server, replica, steps):
    servers = getattr(server, "servers", [server])
    # The runtime's request path: the API server before the scheduler sees a request, and the
    # response path from each token's step to the client (every token's, so TPOT keeps its value).
    ingress = a.rt.arrival_path_s if a.rt else (lambda prompt: 0.0)
    egress = a.rt.first_token_s if a.rt else 0.0
    rows = []
    for r in sorted(finished, key=lambda r: r.arrival):
        tpot = (r.finish - r.first_token) / (r.output - 1) if r.output > 1 else None
        rows.append({"id": r.id, "arrival_s": r.arrival, "prompt_tokens": r.prompt, "output_tokens": r.output,
                     "ttft_s": r.first_token + egress - r.arrival, "tpot_s": tpot,
                     "e2e_s": r.finish + egress - r.arrival, "preemptions": r.preemptions,
                     "queued_s": r.admitted - r.arrival - ingress(r.prompt)})
    span = max(r.finish for r in finished) - min(r.arrival for r in finished) if finished else 0
    out_tokens = sum(r.output for r in finished)
    ttft = [x["ttft_s"] for x in rows]
    tpot = [x["tpot_s"] for x in rows if x["tpot_s"] is not None]
    e2e = [x["e2e_s"] for x in rows]

    def pcts(xs):
        return {f"p{q}": percentile(xs, q) for q in (50, 90, 99)} | {"mean": sum(xs) / len(xs) if xs else None}

    good = [x for x in rows if (a.slo_ttft is None or x["ttft_s"] <= a.slo_ttft) and
            (a.slo_tpot is None or x["tpot_s"] is None or x["tpot_s"] <= a.slo_tpot)]
    # A closed loop's arrivals are its clients' (the requests' own times are not used): no rate.
    arrivals = 0 if a.concurrency else max(r["arrival"] for r in reqs) - min(r["arrival"] for r in reqs)
    s = {
        "requests": len(reqs), "finished": len(finished), "span_s": span,
        "arrival_rate_rps": len(reqs) / arrivals if arrivals > 0 else None,
        "throughput_rps": len(finished) / span if span > 0 else None,
        "output_tokens_per_s": out_tokens / span if span > 0 else None,
        # Goodput counts the requests within an SLO; without one there is none to count.
        "goodput_rps": len(good) / span if span > 0 and (a.slo_ttft or a.slo_tpot) else None,
        "slo": {"ttft_s": a.slo_ttft, "tpot_s": a.slo_tpot, "met": len(good)},
        "ttft_s": pcts(ttft), "tpot_s": pcts(tpot), "e2e_s": pcts(e2e),
        "tbt_s": {f"p{q}": hist_percentile(server.tbt, q) for q in (50, 90, 99)} |
                 {"max": hist_percentile(server.tbt, 100), "tokens": sum(server.tbt.values())},
        "energy_j": server.energy, "joules_per_output_token": server.energy / out_tokens if out_tokens else None,
        "average_power_w": server.energy / server.now if server.now > 0 else None,
        # Over the time the replicas ran steps (a replica's draw while it works), beside the span's.
        "average_busy_power_w": server.energy / server.busy if server.busy > 0 else None,
        "busy_s": server.busy, "busy_fraction": server.busy / (server.now * len(servers)) if server.now > 0 else None,
        "replicas": [{"name": x.name, "role": x.role, "requests": x.arrived, "finished": len(x.done), "busy_s": x.busy,
                      "energy_j": x.energy, "steps": x.step_count, "preemptions": x.preemptions, "swaps": x.swaps,
                      "swap_s": x.swap_s} for x in servers],
        "swaps": sum(x.swaps for x in servers), "swap_s": sum(x.swap_s for x in servers),
        "kv_transfer_s": getattr(server, "transfer_s", 0.0),
        "mean_in_system": server.in_system_area / server.now if server.now > 0 else None,
        "steps": server.step_count, "preemptions": sum(r.preemptions for r in finished),
        "kv_cache": {"blocks": replica.blocks, "block_tokens": a.block_size, "max_used_blocks": server.max_used,
                     "bytes_per_token_per_gpu": replica.kv_bytes_per_token,
                     "weights_per_gpu_bytes": replica.weights_per_gpu},
        "step_cache": {"buckets": steps.own(), "simulated_now": steps.simulated, "fingerprint": steps.fingerprint,
                       "bucketing_error": steps.bucket_checks},
        "pipeline": {"stages": a.pp, "send_s": sum(p.send_s for p in getattr(server, "pipes", []))},
        "latency_breakdown": latency_breakdown(finished, servers, ingress, egress),
        "runtime": a.rt.summary() if a.rt else None,
        "setup": {"config": a.config, "model": a.model, "tp": a.tp, "pp": a.pp, "weights": a.weights, "math": a.math or a.weights,
                  "kv": a.kv, "scheduler": a.scheduler, "max_seqs": a.max_seqs,
                  "replicas": len(servers), "router": a.router,
                  "disaggregate": a.disaggregate, "kv_link": a.kv_link,
                  "max_batched_tokens": a.max_batched_tokens},
    }
    return rows, s


def write(a, rows, s):
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(s, f, indent=2)

    def ms(x):
        return "-" if x is None else f"{x * 1e3:.1f} ms"

    within = " and ".join(f"{k} {ms(v)}" for k, v in (("TTFT", a.slo_ttft), ("TPOT", a.slo_tpot)) if v)
    slo = (f"goodput {s['goodput_rps'] or 0:.2f}/s within {within}" if within else
           "no SLO given, so no goodput: --slo-ttft and --slo-tpot set one")

    lines = [f"# Serving: {os.path.basename(a.model)} on {os.path.basename(a.config)}, TP={a.tp}"
             f"{f' PP={a.pp}' if a.pp > 1 else ''}, {a.scheduler} batching",
             "", f"{s['finished']} of {s['requests']} requests in {s['span_s']:.1f} s of simulated time; "
             f"{s['output_tokens_per_s'] or 0:.0f} output tokens/s, {s['throughput_rps'] or 0:.2f} requests/s "
             f"({slo}); "
             f"{s['joules_per_output_token'] or 0:.3f} J per output token at {s['average_power_w'] or 0:.0f} W "
             f"on average ({s['average_busy_power_w'] or 0:.0f} W while busy); busy {100 * (s['busy_fraction'] or 0):.0f}% of the time; {s['preemptions']} preemptions.",
             "", "| latency | p50 | p90 | p99 | mean |", "|---|---|---|---|---|"]
    for k, label in (("ttft_s", "time to first token"), ("tpot_s", "time per output token"),
                     ("tbt_s", "time between tokens"), ("e2e_s", "end to end")):
        v = s[k]
        last = ms(v["mean"]) if "mean" in v else f"max {ms(v['max'])}"
        lines.append(f"| {label} | {ms(v['p50'])} | {ms(v['p90'])} | {ms(v['p99'])} | {last} |")
    lb = s["latency_breakdown"]
    sh, tt = lb["steps"]["shares"], lb["ttft_mean_s"]
    if sh["kernels"] is not None and tt["prefill"] is not None:
        rt = s["runtime"]
        which = f"{rt['name']} {rt['version']}" if rt else "none: no --runtime"
        lines += ["", f"Where the time goes: the steps are {100 * sh['kernels']:.1f}% kernels, "
                  f"{100 * sh['collectives']:.1f}% collectives and {100 * sh['host']:.1f}% host runtime ({which}); "
                  f"a first token takes on average {ms(tt['ingress'])} in the API server, {ms(tt['queueing'])} "
                  f"queueing, {ms(tt['prefill'])} in its prefill steps and {ms(tt['response'])} on its way out."]
    c = s["step_cache"]
    mixed = f", {s['steps']['mixed']} mixed" if s["steps"].get("mixed") else ""
    lines += ["", f"Steps: {s['steps']['prefill']} prefill, {s['steps']['decode']} decode{mixed}; {c['buckets']} bucketed "
              f"shapes simulated ({c['simulated_now']} in this run). KV cache: {s['kv_cache']['blocks']} blocks of "
              f"{a.block_size} tokens, at most {s['kv_cache']['max_used_blocks']} in use."]
    if c["bucketing_error"]:
        errs = [abs(x["error"]) for x in c["bucketing_error"]]
        lines.append(f"Bucketing error over {len(errs)} exact shapes: mean {100 * sum(errs) / len(errs):.1f}%, "
                     f"worst {100 * max(errs):.1f}%.")
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def html_page(a, results):
    """serve.html: the rate sweep's table, latency against served throughput and the CDFs of time
    to first token and end-to-end latency per arrival rate (xpusim.plots: matplotlib)."""
    from ..plots import Axis, Chart, Series, document, esc, render, table

    def cdf(xs):
        xs = sorted(x for x in xs if x is not None)
        return xs, [(i + 1) / len(xs) for i in range(len(xs))]

    tput = [s["throughput_rps"] or 0 for _, _, s in results]
    latency = [Series(f"{name} {q}", tput, [s[key][q] for _, _, s in results])
               for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s")) for q in ("p50", "p99")]
    charts = [render(Chart("latency", "Latency against served throughput", Axis("requests per second served"),
                           Axis("latency", "s"), latency))]
    for chart_id, key, what in (("ttft-cdf", "ttft_s", "Time to first token"), ("e2e-cdf", "e2e_s", "End-to-end latency")):
        lines = [Series(f"{rate:g} req/s", *cdf([r[key] for r in rows]), markers=False) for rate, rows, _ in results]
        charts.append(render(Chart(chart_id, f"{what}, CDF per arrival rate", Axis(what[0].lower() + what[1:], "s"),
                                   Axis("share of requests", scale="linear", from_zero=True), lines)))
    columns = [("arrivals (req/s)", ""), ("served (req/s)", ""), ("output tokens/s", ""), ("goodput (req/s)", ""),
               ("TTFT p50", "s"), ("TTFT p99", "s"), ("TPOT p50", "s"), ("TPOT p99", "s"), ("energy per output token", "J"),
               ("preemptions", "")]
    rows = [[rate, s["throughput_rps"], s["output_tokens_per_s"], s["goodput_rps"], s["ttft_s"]["p50"], s["ttft_s"]["p99"],
             s["tpot_s"]["p50"], s["tpot_s"]["p99"], s["joules_per_output_token"], s["preemptions"]]
            for rate, _, s in results]
    title = (f"Serving {os.path.basename(a.model)} on {os.path.basename(a.config)}, TP={a.tp}"
             f"{f' PP={a.pp}' if a.pp > 1 else ''}, {a.scheduler} batching")
    body = (f"<h1>{esc(title)}</h1>\n<p>Arrivals {esc(a.arrivals)} for {a.duration:g} s per rate; prompts "
            f"{esc(a.prompt_len)}, outputs {esc(a.output_len)} tokens; weights {esc(a.weights)}, KV cache {esc(a.kv)}. "
            "Step times and energy from xpusim (docs/serving.md).</p>\n" + table(columns, rows) +
            '<div class="charts">\n' + "".join(charts) + "</div>\n")
    return document(f"xpusim serve: {os.path.basename(a.model)}", body)
