"""A plan's outputs: plan.md (every layout, the front first) and plan.html (step time against
energy per step, one point per simulated layout, the Pareto front joined; then the table). The
page is self-contained: inline SVG, no scripts, no network."""
import html

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


def _svg(results, front):
    pts = [r for r in results if r["status"] == "simulated"]
    W, H, L, B = 640, 400, 70, 50
    if not pts:
        return "<p>No layout was simulated: every one was refused or does not fit.</p>"
    xs = [r["step_s"] * 1e3 for r in pts]
    ys = [r["energy_j"] for r in pts]

    def span(v):
        lo, hi = min(v), max(v)
        pad = (hi - lo) * 0.08 or max(abs(hi), 1e-9) * 0.1
        return lo - pad, hi + pad

    (x0, x1), (y0, y1) = span(xs), span(ys)

    def px(x):
        return L + (x - x0) / (x1 - x0) * (W - L - 20)

    def py(y):
        return H - B - (y - y0) / (y1 - y0) * (H - B - 20)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img" '
           'aria-label="step time against energy per step">',
           f'<line x1="{L}" y1="{H - B}" x2="{W - 10}" y2="{H - B}" stroke="#333"/>',
           f'<line x1="{L}" y1="10" x2="{L}" y2="{H - B}" stroke="#333"/>',
           f'<text x="{(L + W) / 2}" y="{H - 12}" text-anchor="middle" font-size="13">step time (ms)</text>',
           f'<text x="16" y="{(H - B) / 2}" text-anchor="middle" font-size="13" '
           f'transform="rotate(-90 16 {(H - B) / 2})">energy per step (J)</text>']
    for k in range(5):
        xv, yv = x0 + (x1 - x0) * k / 4, y0 + (y1 - y0) * k / 4
        out.append(f'<text x="{px(xv):.1f}" y="{H - B + 16}" text-anchor="middle" font-size="11">{xv:.4g}</text>')
        out.append(f'<text x="{L - 6}" y="{py(yv) + 4:.1f}" text-anchor="end" font-size="11">{yv:.4g}</text>')
    fr = sorted((r for r in pts if r["id"] in front), key=lambda r: r["step_s"])
    if len(fr) > 1:
        path = " ".join(f"{px(r['step_s'] * 1e3):.1f},{py(r['energy_j']):.1f}" for r in fr)
        out.append(f'<polyline points="{path}" fill="none" stroke="#c0392b" stroke-width="1.5"/>')
    for r in pts:
        on = r["id"] in front
        mfu = f", MFU {r['mfu']:.1%}" if r.get("mfu") is not None else ""
        out.append(f'<circle class="{"front" if on else "layout"}" cx="{px(r["step_s"] * 1e3):.1f}" '
                   f'cy="{py(r["energy_j"]):.1f}" r="{5 if on else 4}" fill="{"#c0392b" if on else "#2c7fb8"}">'
                   f'<title>{html.escape(r["id"])}: {r["step_s"] * 1e3:.1f} ms, {r["energy_j"]:.4g} J{mfu}</title>'
                   '</circle>')
    out.append("</svg>")
    return "\n".join(out)


def write_page(path, results, front, a):
    rows = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in _row(r, front)) + "</tr>"
                     for r in _ordered(results, front))
    counts = {s: sum(r["status"] == s for r in results) for s in ("simulated", "does not fit", "refused")}
    best = [r for r in results if r["status"] == "simulated"]
    best_line = ""
    if best:
        fastest = min(best, key=lambda r: r["step_s"])
        leanest = min(best, key=lambda r: r["energy_j"])
        best_line = (f"<p>Fastest: <b>{html.escape(fastest['id'])}</b>, {fastest['step_s'] * 1e3:.1f} ms a step. "
                     f"Least energy: <b>{html.escape(leanest['id'])}</b>, {leanest['energy_j']:.4g} J a step.</p>")
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(_title(a))}</title>
<style>body{{font-family:sans-serif;margin:24px;max-width:1100px}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}td:first-child,td:last-child{{text-align:left}}</style>
</head><body>
<h1>{html.escape(_title(a))}</h1>
<p>{counts['simulated']} layouts simulated, {counts['does not fit']} over the chip's HBM, {counts['refused']} refused by
the trace generator. Each point is one layout's training step; the red line joins the Pareto front (no other
layout is both faster and lower in energy). Hover a point for its layout.</p>
{best_line}
{_svg(results, front)}
<table><thead><tr>{''.join(f'<th>{c}</th>' for c in COLUMNS)}</tr></thead>
<tbody>
{rows}
</tbody></table>
</body></html>
"""
    with open(path, "w") as f:
        f.write(doc)

