"""Charts for xpusim's pages, drawn with matplotlib as inline SVG: one look for every page.

An axis is numeric wherever its values are numbers (with or without a unit), on a log scale where
they span two decades or more, and its ticks carry the unit with an SI prefix ("200 ms", "1.5 s",
"80 GiB"), as the tables beside them do (units.py). A chart's points can carry tooltips (an SVG
<title>, shown on hover) and its failed points are red crosses on the x axis."""
import contextlib
import functools
import html
import io
import math
import re
from dataclasses import dataclass, field

from .units import fmt

COLOURS = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f",
           "#bab0ac"]
FAILED = "#d62728"
LOG_RATIO = 100  # an axis whose positive values span this factor or more is drawn on a log scale


class PlotError(RuntimeError):
    """A page cannot be drawn (matplotlib is missing): the message says what to install."""


RC = {
    "svg.fonttype": "none",        # text as text: the browser's fonts, searchable, small
    "svg.hashsalt": "xpusim",      # the same ids on every run: pages are reproducible
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "axes.axisbelow": True,
    "legend.frameon": False,
}


@contextlib.contextmanager
def _figure(width, height, rows=1, columns=1):
    """A matplotlib figure and its axes (a rows x columns array) under the pages' style, drawn
    to SVG: neither pyplot's state nor the caller's settings (a notebook's) are touched."""
    try:
        import matplotlib
        from matplotlib.backends.backend_svg import FigureCanvasSVG
        from matplotlib.figure import Figure
    except ImportError as e:
        raise PlotError("drawing xpusim's pages needs matplotlib (Debian: apt-get install python3-matplotlib; "
                        "scripts/install-deps.sh installs it)") from e
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(width, height))
        FigureCanvasSVG(fig)
        axes = fig.subplots(rows, columns, squeeze=False)
        yield fig, axes


@dataclass
class Axis:
    """A chart's axis: its label, the unit of its values (base units: s, J, W, B, B/s, Hz, or ''),
    and its scale: 'log', 'linear' or None (log where the values span LOG_RATIO or more).
    Categories (strings, in order) make it categorical; the values are then their indices."""
    label: str
    unit: str = ""
    scale: str = None
    categories: list = None
    from_zero: bool = False  # a linear axis that starts at 0


@dataclass
class Series:
    name: str
    x: list
    y: list
    tips: list = None     # a tooltip per point
    line: bool = True     # joined in x order; else markers alone
    labels: list = None   # a text beside each point (a Pareto front's settings)
    colour: str = None
    markers: bool = True  # a marker per point (with its tooltip); a CDF of many points is a line alone


@dataclass
class Chart:
    id: str
    title: str
    x: Axis
    y: Axis
    series: list = field(default_factory=list)
    failed_x: list = field(default_factory=list)     # failed points: a red cross on the x axis
    failed_tips: list = field(default_factory=list)

    def __post_init__(self):
        self.id = safe_id(self.id)


def safe_id(text):
    """An HTML and SVG id from any text (a trace's file name): letters, digits, '_', '.' and '-'."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", str(text)) or "chart"


def spans_decades(values, ratio=LOG_RATIO):
    v = [x for x in values if x is not None and math.isfinite(x)]
    return bool(v) and min(v) > 0 and max(v) / min(v) >= ratio


def _scale(axis, values):
    if axis.categories is not None:
        return "linear"
    return axis.scale or ("log" if spans_decades(values) else "linear")


def _ticks(ax_axis, axis, scale, values=()):
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator
    if axis.categories is not None:
        n = len(axis.categories)
        step = max(1, math.ceil(n / 8))  # at most eight labels: many categories are thinned
        ax_axis.set_major_locator(FixedLocator(list(range(0, n, step))))
        ax_axis.set_major_formatter(FuncFormatter(
            lambda v, _: axis.categories[int(round(v))] if 0 <= int(round(v)) < n else ""))
        return
    if scale == "log":
        v = [x for x in values if x is not None and x > 0 and math.isfinite(x)]
        few = not v or max(v) / min(v) < 30  # under a decade and a half: 1, 2 and 5 of each decade
        ax_axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if few else (1.0,), numticks=12))
        ax_axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10)), numticks=12))
        ax_axis.set_minor_formatter(NullFormatter())
    else:
        ax_axis.set_major_locator(MaxNLocator(nbins=6))
        ax_axis.set_minor_locator(NullLocator())
    ax_axis.set_major_formatter(_unit_formatter_class()(axis.unit))


@functools.lru_cache(maxsize=None)
def _unit_formatter_class():
    """The tick formatter's class, made once: matplotlib is imported only when a page is drawn."""
    from matplotlib.ticker import Formatter

    class UnitFormatter(Formatter):
        """Ticks with their unit, to as few digits (three or more) as keep them apart: close
        values (2.3601 and 2.3602 ms) are not all written "2.36 ms"."""
        def __init__(self, unit):
            self.unit, self.digits = unit, 3

        def set_locs(self, locs):
            super().set_locs(locs)
            self.digits = 3
            while self.digits < 9 and len({fmt(v, self.unit, self.digits) for v in locs}) < len(set(locs)):
                self.digits += 1

        def __call__(self, v, pos=None):
            return fmt(v, self.unit, self.digits)
    return UnitFormatter


def _add_titles(svg, groups):
    """Puts <title>tip</title> into each marker (<use>) of the groups {gid: [tip, ...]}."""
    for gid, tips in groups.items():
        m = re.search(r'<g id="%s">(.*?)</g>\s*</g>' % re.escape(gid), svg, re.S)
        if not m:
            continue
        uses = iter(tips)

        def put(u):
            t = next(uses, None)
            return u.group(0) if t is None else u.group(0)[:-2] + "><title>" + html.escape(t) + "</title></use>"
        body = re.sub(r"<use [^>]*/>", put, m.group(1))
        svg = svg[:m.start(1)] + body + svg[m.end(1):]
    return svg


def _own_ids(svg, prefix):
    """matplotlib's ids (xtick_1, clip paths, markers) made the chart's own, so that several
    charts on one page never share one; the ids given as gid (the chart's) stay as they are."""
    ids = [i for i in re.findall(r' id="([^"]+)"', svg) if not i.startswith(prefix + "-")]
    if not ids:
        return svg
    alt = "|".join(map(re.escape, sorted(set(ids), key=len, reverse=True)))
    names = re.compile(r'(?<=id=")(?:%s)(?=")|(?<=#)(?:%s)(?=[)"])' % (alt, alt))
    return names.sub(lambda m: f"{prefix}-{m.group(0)}", svg)


def _draw(ax, chart):
    """Draws the chart on the axes; returns its tooltips {gid: [tip, ...]} and its two scales."""
    xs = [v for s in chart.series for v in s.x if v is not None] + list(chart.failed_x)
    ys = [v for s in chart.series for v, x in zip(s.y, s.x) if v is not None and x is not None]
    xscale, yscale = _scale(chart.x, xs), _scale(chart.y, ys)
    ax.set_title(chart.title, loc="left", fontsize=10)
    ax.set_xlabel(chart.x.label)
    ax.set_ylabel(chart.y.label)
    ax.set_xscale(xscale)
    ax.set_yscale(yscale)
    tips, labels = {}, []
    for k, s in enumerate(chart.series):
        pts = [(x, y, (s.tips or [None] * len(s.x))[i], (s.labels or [None] * len(s.x))[i])
               for i, (x, y) in enumerate(zip(s.x, s.y))
               if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
               and (xscale != "log" or x > 0) and (yscale != "log" or y > 0)]
        if s.line:
            pts.sort(key=lambda p: p[0])
        c = s.colour or COLOURS[k % len(COLOURS)]
        px, py = [p[0] for p in pts], [p[1] for p in pts]
        if s.line and len(pts) > 1:
            ax.plot(px, py, color=c, linewidth=1.6, label=s.name)
            label = None
        else:
            label = s.name
        if s.markers or not s.line or len(pts) == 1:
            gid = f"{chart.id}-points-{k}"
            ax.scatter(px, py, s=18, color=c, zorder=3, label=label, gid=gid)
            if s.tips:
                tips[gid] = [p[2] or "" for p in pts]
        labels += [(p[3], p[0], p[1], f"{chart.id}-label-{k}-{i}") for i, p in enumerate(pts) if p[3]]
    failed = {}  # failed points at one x share a cross, their tooltips one below another
    for i, x in enumerate(chart.failed_x):
        if x is not None and math.isfinite(x) and (xscale != "log" or x > 0):
            failed.setdefault(x, []).append(chart.failed_tips[i] if i < len(chart.failed_tips) else "")
    if failed:
        gid = f"{chart.id}-failed"
        ax.scatter(list(failed), [0] * len(failed), marker="x", s=40, color=FAILED, zorder=4,
                   transform=ax.get_xaxis_transform(), clip_on=False, label="failed", gid=gid)
        tips[gid] = ["\n".join(t) for t in failed.values()]
        # The crosses' transform leaves them out of the data limits: the x range is widened to hold them.
        ax.update_datalim([(x, 0) for x in failed], updatey=False)
        if not any(s.x for s in chart.series):
            ax.set_ylim(0, 1)
        ax.autoscale_view(scaley=False)
    if yscale == "linear" and chart.y.from_zero and chart.y.categories is None:
        ax.set_ylim(bottom=0)
    if chart.x.categories is not None:
        ax.set_xlim(-0.5, len(chart.x.categories) - 0.5)
    _ticks(ax.xaxis, chart.x, xscale, xs)
    _ticks(ax.yaxis, chart.y, yscale, ys)
    _place_labels(ax, labels)
    handles, _ = ax.get_legend_handles_labels()
    if len(handles) > 1:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, ncol=1 if len(handles) <= 16 else 2)
    return tips, xscale, yscale


def _place_labels(ax, labels, size=7):
    """Writes each point's label beside it, in order, leaving out one that would overlap a label
    already written (its point keeps its tooltip)."""
    if not labels:
        return
    ax.get_xlim(), ax.get_ylim()  # the limits settled, so that points map to where they are drawn
    dpi = ax.figure.dpi
    char_w, line_h, gap = 0.6 * size * dpi / 72, 1.3 * size * dpi / 72, 4 * dpi / 72
    written = []
    for text, x, y, gid in labels:
        px, py = ax.transData.transform((x, y))
        left, bottom = px + gap, py + gap
        right, top = left + char_w * len(text), bottom + line_h
        if any(left < r and l < right and bottom < t and b < top for l, b, r, t in written):
            continue
        written.append((left, bottom, right, top))
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=size, color="#444", gid=gid)


def _shown_ticks(ax):
    """The tick labels drawn (within the axes' limits), "|" between: for a reader of the source."""
    out = {}
    for n, a, lim in (("x", ax.xaxis, ax.get_xlim()), ("y", ax.yaxis, ax.get_ylim())):
        lo, hi = min(lim), max(lim)
        out[n] = "|".join(html.escape(t.get_text()) for t, v in zip(a.get_ticklabels(), a.get_ticklocs())
                          if t.get_text() and lo - 1e-9 * abs(hi) <= v <= hi + 1e-9 * abs(hi))
    return out


def _svg_text(fig):
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]  # no XML prolog or DOCTYPE: it goes inside HTML, or stands alone
    return re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.S)  # matplotlib's RDF credits


def render(chart, width=5.6, height=3.3):
    """The chart as an HTML <figure> holding its SVG, with data-xscale and data-yscale saying
    which scales it chose and data-xticks and data-yticks the tick labels it drew ("|" between)."""
    with _figure(width, height) as (fig, axes):
        ax = axes[0][0]
        tips, xscale, yscale = _draw(ax, chart)
        svg = _svg_text(fig)
        shown = _shown_ticks(ax)
    svg = _own_ids(_add_titles(svg, tips), chart.id)
    names = ["category" if a.categories is not None else sc for a, sc in ((chart.x, xscale), (chart.y, yscale))]
    return (f'<figure class="chart" id="{html.escape(chart.id)}" data-xscale="{names[0]}" data-yscale="{names[1]}" '
            f'data-xticks="{shown["x"]}" data-yticks="{shown["y"]}">\n{svg}</figure>\n')


def svg_file(charts, columns=None, width=4.4, height=3.3):
    """Charts side by side (a row of panels, or `columns` a row) as one standalone SVG file, for
    the docs."""
    columns = columns or len(charts)
    rows = math.ceil(len(charts) / columns)
    with _figure(width * columns, height * rows, rows, columns) as (fig, axes):
        tips = {}
        for ax, chart in zip(axes.flat, charts):
            tips.update(_draw(ax, chart)[0])
        for ax in list(axes.flat)[len(charts):]:
            ax.set_visible(False)
        fig.tight_layout()
        svg = _svg_text(fig)
    return _add_titles(svg, tips)


def bars(chart_id, title, labels, values, axis, text=None, colour=COLOURS[0]):
    """Horizontal bars, one per label (top to bottom), their length on `axis` (log where the values
    span two decades), each value written at its bar's end (as text(value) says, else with its
    unit); standalone SVG text."""
    with _figure(6.4, 0.5 + 0.32 * len(labels)) as (fig, axes):
        ax = axes[0][0]
        scale = _scale(axis, values)
        ax.set_xscale(scale)
        ys = list(range(len(labels)))[::-1]
        left = min(values) / 2 if scale == "log" else 0
        ax.barh(ys, [v - left for v in values], left=left, color=colour, height=0.6, gid=f"{chart_id}-bars")
        for y, v in zip(ys, values):
            ax.annotate(text(v) if text else fmt(v, axis.unit, 3), (v, y), textcoords="offset points", xytext=(3, -3), fontsize=8)
        ax.set_yticks(ys)
        ax.set_yticklabels(labels)
        ax.grid(axis="y", visible=False)
        ax.set_title(title, loc="left", fontsize=10)
        ax.set_xlabel(axis.label)
        _ticks(ax.xaxis, axis, scale, values)
        ax.set_xlim(left=left, right=max(values) * (3 if scale == "log" else 1.15))
        svg = _svg_text(fig)
    # The figures drawn, as text: what a check of the chart compares (its coordinates depend on
    # matplotlib's version and the fonts).
    data = "\n".join(f"{html.escape(str(k))}: {v:.6g}" for k, v in zip(labels, values))
    at = svg.index(">", svg.index("<svg")) + 1
    return svg[:at] + f'\n <desc id="{safe_id(chart_id)}-data">{data}</desc>' + svg[at:]
