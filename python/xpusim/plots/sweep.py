"""A sweep's page (sweep.html) from the folder `xpusim sweep` wrote: its results.jsonl and
sweep.json (the sweep's name, description, kind and axes). For each trace (or served model): each
metric against each axis, a line per setting of the other axes, failed points as red crosses; the
Pareto front of two figures; then every point in a table with units."""
import json
import os

from .charts import Axis, Chart, Series, render
from .page import document, esc, table
from .units import fmt, parse_all

# What a sweep of each kind plots: the column its charts are grouped by, the metrics drawn against
# each axis, and the two figures of its Pareto chart, each (column, label, unit).
KINDS = {
    "run": {"group": "trace", "lines": [("time_s", "time", "s")],
            "pareto": (("time_s", "time", "s"), ("energy_j", "energy", "J"))},
    "serve": {"group": "model", "lines": [("output_tokens_per_s", "output tokens/s", ""),
                                          ("ttft_p99_s", "p99 time to first token", "s")],
              "pareto": (("ttft_p99_s", "p99 time to first token", "s"),
                         ("joules_per_output_token", "J per output token", "J"))},
}
# A results column's unit, by how its name ends ("time_s": seconds); "_per_" names are ratios.
SUFFIX_UNITS = [("_hz", "Hz"), ("_s", "s"), ("_j", "J"), ("_w", "W"), ("_bytes", "B"), ("_bandwidth", "B/s")]


class SweepPageError(ValueError):
    pass


def column_unit(name):
    if "_per_" in name:
        return ""
    for suffix, unit in SUFFIX_UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return unit
    return ""


def short_name(path):
    return os.path.splitext(os.path.basename(path or ""))[0]


def read(folder):
    """(meta, rows) from a sweep's folder; errors name the file and line."""
    meta_path, rows_path = os.path.join(folder, "sweep.json"), os.path.join(folder, "results.jsonl")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise SweepPageError(f"{meta_path}: not there: {folder} is not a folder `xpusim sweep` finished") from None
    except (OSError, ValueError) as e:
        raise SweepPageError(f"{meta_path}: {e}") from None
    if not isinstance(meta, dict) or meta.get("kind") not in KINDS or not isinstance(meta.get("axes"), list):
        raise SweepPageError(f"{meta_path}: not a sweep's description (kind one of {', '.join(KINDS)}, axes a list)")
    rows = []
    try:
        with open(rows_path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    raise SweepPageError(f"{rows_path}:{n}: not a result (a line cut short?)") from None
                if not isinstance(r, dict) or "status" not in r:
                    raise SweepPageError(f"{rows_path}:{n}: not a result (no status)")
                rows.append(r)
    except OSError as e:
        raise SweepPageError(f"{rows_path}: {e.strerror}") from None
    return meta, rows


def _number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _axis_chart(chart_id, metric, axis, axes, rows, ok, several_configs):
    column, label, unit = metric
    values = []
    for r in rows:  # failed points too: their place on the axis is marked
        if str(r.get(axis)) not in values:
            values.append(str(r.get(axis)))
    numeric = parse_all(values)
    if numeric:
        x_axis = Axis(axis, numeric[1])
        where = dict(zip(values, numeric[0]))
    else:
        x_axis = Axis(axis, categories=values)
        where = {v: i for i, v in enumerate(values)}
    lines = {}
    for r in ok:
        y = _number(r.get(column))
        if y is None:
            continue  # a figure the point does not have (no second token: no time per token)
        key = short_name(r.get("config")) if several_configs else ""
        for other in axes:
            if other != axis:
                key += (", " if key else "") + f"{other}={r.get(other)}"
        s = lines.setdefault(key, Series(key or axis, [], [], tips=[]))
        s.x.append(where[str(r.get(axis))])
        s.y.append(y)
        s.tips.append(f"{axis}={r.get(axis)}" + (f", {key}" if key else "") + f": {fmt(y, unit)}")
    failed_x, failed_tips = [], []
    for r in rows:
        if r.get("status") == "ok":
            continue
        tip = f"{axis}={r.get(axis)}" + "".join(f", {o}={r.get(o)}" for o in axes if o != axis)
        failed_x.append(where[str(r.get(axis))])
        failed_tips.append(f"{tip}: {r.get('status')}" + (f": {r['error']}" if r.get("error") else ""))
    title = f"{label} vs {axis}"
    return render(Chart(chart_id, title, x_axis, Axis(label, unit, from_zero=True), list(lines.values()),
                        failed_x, failed_tips))


def _pareto_chart(chart_id, pareto, axes, ok, several_configs):
    (cx, lx, ux), (cy, ly, uy) = pareto
    pts = []
    for r in ok:
        x, y = _number(r.get(cx)), _number(r.get(cy))
        if x is None or y is None:
            continue
        settings = " ".join(str(r.get(a)) for a in axes)
        name = (short_name(r.get("config")) + (" " + settings if settings else "")) if several_configs else settings
        tip = short_name(r.get("config")) + "".join(f", {a}={r.get(a)}" for a in axes)
        pts.append((x, y, name, f"{tip}: {fmt(x, ux)}, {fmt(y, uy)}"))
    if not pts:
        return None
    front, best = [], float("inf")
    for p in sorted(pts, key=lambda p: (p[0], p[1])):  # nothing else is better on both
        if p[1] < best:
            front.append(p)
            best = p[1]
    everything = Series("points", [p[0] for p in pts], [p[1] for p in pts], tips=[p[3] for p in pts], line=False,
                        colour="#4e79a7")
    joined = Series("Pareto front", [p[0] for p in front], [p[1] for p in front], tips=[p[3] for p in front],
                    labels=[p[2] for p in front], colour="#e15759")
    title = f"{lx} vs {ly} (Pareto front joined)"
    return render(Chart(chart_id, title, Axis(lx, ux), Axis(ly, uy), [everything, joined]))


def page(meta, rows):
    kind = KINDS[meta["kind"]]
    axes, group = meta["axes"], kind["group"]
    ok = [r for r in rows if r.get("status") == "ok"]
    several_configs = len({r.get("config") for r in ok}) > 1
    body = [f"<h1>Sweep {esc(meta.get('name', ''))}</h1>"]
    if meta.get("description"):
        body.append(f"<p>{esc(meta['description'])}</p>")
    body.append(f"<p>{len(ok)} of {len(rows)} points ok.</p>")
    failed = [r for r in rows if r.get("status") != "ok"]
    if failed:
        body.append("<p>Failed points (a red cross on the charts, a red row in the table):</p>\n<ul class=\"failures\">")
        for r in failed[:20]:
            where = short_name(r.get(group)) + "".join(f", {a}={r.get(a)}" for a in axes)
            body.append(f"<li>{esc(where)}: {esc(r.get('status'))}" + (f": {esc(r['error'])}" if r.get("error") else "") +
                        "</li>")
        if len(failed) > 20:
            body.append(f"<li>and {len(failed) - 20} more (results.jsonl)</li>")
        body.append("</ul>")
    groups = []
    for r in rows:  # those with failed points only too: their charts show the failures
        if r.get(group) not in groups:
            groups.append(r.get(group))
    used = set()
    for g in groups:
        name = short_name(g)
        if name in used:  # two traces of one file name in different folders: charts of their own
            name = next(f"{name}-{k}" for k in range(2, len(groups) + 2) if f"{name}-{k}" not in used)
        used.add(name)
        mine = [r for r in rows if r.get(group) == g]
        mine_ok = [r for r in ok if r.get(group) == g]
        body.append(f"<h2>{esc(name)}</h2>\n<div class=\"charts\">")
        for metric in kind["lines"]:
            for axis in axes:
                chart_id = "axis-" + (metric[0] + "-" if len(kind["lines"]) > 1 else "") + axis + "-" + name
                body.append(_axis_chart(chart_id, metric, axis, axes, mine, mine_ok, several_configs))
        pareto = _pareto_chart("pareto-" + name, kind["pareto"], axes, mine_ok, several_configs)
        if pareto:
            body.append(pareto)
        elif not mine_ok:
            body.append("<p class=\"muted\">No point of it ran: no Pareto chart.</p>")
        else:
            body.append(f"<p class=\"muted\">No {esc(kind['pareto'][1][1])} figures (the configs name no energy "
                        "table): no Pareto chart.</p>")
        body.append("</div>")
    # The table as one reads it: figures to four digits with their units, files by name, errors
    # cut (results.csv has every digit, the list above every error).
    columns = list(rows[0].keys()) if rows else []
    heads = []
    for c in columns:
        text = c in ("index", "id", "status", "error", "config", group, "out", "chip", "bound") or c in axes
        heads.append((c, None if text else column_unit(c)))
    shown = []
    for r in rows:
        row = []
        for c in columns:
            v = r.get(c)
            if c in ("config", group):
                v = short_name(v)
            elif c == "error" and isinstance(v, str) and len(v) > 60:
                v = v[:59] + "\u2026"
            elif c == "index":
                v = str(v)
            row.append(v)
        shown.append(row)
    status_at = columns.index("status") if "status" in columns else None
    body.append("<h2>Points</h2>")
    body.append(table(heads, shown, failed=(lambda row: status_at is not None and row[status_at] != "ok")))
    return document(f"Sweep {meta.get('name', '')}", "\n".join(body) + "\n")


def write(folder):
    """Draws folder/sweep.html from the folder's sweep.json and results.jsonl; returns its path."""
    meta, rows = read(folder)
    text = page(meta, rows)
    out = os.path.join(folder, "sweep.html")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    return out

