"""A plan's outputs: plan.md (every layout, the front first) and plan.html (step time against
energy per step, one point per simulated layout, the Pareto front joined; then the table). The
page is self-contained (xpusim.plots: inline SVG, no scripts, no network)."""

COLUMNS = ("layout", "TP", "PP", "DP", "microbatch", "recompute", "ZeRO", "schedule", "step (ms)", "MFU",
           "energy (J)", "tokens/s", "memory/GPU (GiB)", "status")


def _row(r, front):
    sim = r["status"] == "simulated"
    mem = r.get("memory_gib")
    return [r["id"] + (" (front)" if r["id"] in front else ""), r["tp"], r["pp"], r["dp"], r["micro_batch"],
            r["recompute"], r["zero"], r["schedule"],
            f"{r['step_s'] * 1e3:.4g}" if sim else "-",
            f"{r['mfu']:.1%}" if sim and r.get("mfu") is not None else "-",
            f"{r['energy_j']:.4g}" if sim else "-",
            f"{r['tokens_per_s']:.0f}" if sim else "-",
            f"{mem:.1f}" if mem is not None else "-",
            "simulated" if sim else f"{r['status']}: {r['reason']}"]


def _ordered(results, front):
    sim = sorted((r for r in results if r["status"] == "simulated"), key=lambda r: (r["id"] not in front, r["step_s"]))
    return sim + [r for r in results if r["status"] != "simulated"]


def _title(a):
    return (f"Training plan: {a.card} on {a.gpus} GPUs of {a.config}, global batch {a.global_batch} x {a.prompt} "
            "tokens")


def write_table(path, results, front, a):
    lines = [f"# {_title(a)}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in _ordered(results, front):
        lines.append("| " + " | ".join(str(x) for x in _row(r, front)) + " |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _chart(results, front):
    from ..plots import Axis, Chart, Series, render
    pts = [r for r in results if r["status"] == "simulated"]
    if not pts:
        return "<p>No layout was simulated: every one was refused or does not fit.</p>"

    def tip(r):
        mfu = f", MFU {r['mfu']:.1%}" if r.get("mfu") is not None else ""
        return f"{r['id']}: {r['step_s'] * 1e3:.1f} ms, {r['energy_j']:.4g} J{mfu}"
    others = [r for r in pts if r["id"] not in front]
    fr = sorted((r for r in pts if r["id"] in front), key=lambda r: r["step_s"])
    series = [Series("layout", [r["step_s"] for r in others], [r["energy_j"] for r in others],
                     tips=[tip(r) for r in others], line=False, colour="#2c7fb8"),
              Series("Pareto front", [r["step_s"] for r in fr], [r["energy_j"] for r in fr], tips=[tip(r) for r in fr],
                     colour="#c0392b")]
    return render(Chart("plan", "Step time against energy per step", Axis("step time", "s"),
                        Axis("energy per step", "J"), series), width=6.4, height=4.0)


def write_page(path, results, front, a):
    from ..plots import document, esc
    rows = "\n".join("<tr>" + "".join(f'<td class="text">{esc(x)}</td>' for x in _row(r, front)) + "</tr>"
                     for r in _ordered(results, front))
    counts = {s: sum(r["status"] == s for r in results) for s in ("simulated", "does not fit", "refused")}
    best = [r for r in results if r["status"] == "simulated"]
    best_line = ""
    if best:
        fastest = min(best, key=lambda r: r["step_s"])
        leanest = min(best, key=lambda r: r["energy_j"])
        best_line = (f"<p>Fastest: <b>{esc(fastest['id'])}</b>, {fastest['step_s'] * 1e3:.1f} ms a step. "
                     f"Least energy: <b>{esc(leanest['id'])}</b>, {leanest['energy_j']:.4g} J a step.</p>")
    body = f"""<h1>{esc(_title(a))}</h1>
<p>{counts['simulated']} layouts simulated, {counts['does not fit']} over the chip's HBM, {counts['refused']} refused by
the trace generator. Each point is one layout's training step; the red line joins the Pareto front (no other
layout is both faster and lower in energy). Hover a point for its layout.</p>
{best_line}
{_chart(results, front)}
<div class="table"><table><tr>{''.join(f'<th>{esc(c)}</th>' for c in COLUMNS)}</tr>
{rows}
</table></div>
"""
    with open(path, "w") as f:
        f.write(document(_title(a), body))
