"""xpusim's pages drawn in one style (matplotlib, as inline SVG): the sweep page (sweep.html), the
serving rate sweep's (serve.html), the training plan's (plan.html) and the scripts' pages
(scripts/huangs-law.py, scripts/bench-scaling.py).

    python3 -m xpusim.plots sweep OUT     # (re)draw OUT/sweep.html from a sweep's folder

Numeric axes are numeric (units read: "300 W", "5.23 GT/s"), log where their values span two
decades or more; ticks and tables carry units with SI prefixes (units.fmt)."""
from .charts import Axis, Chart, PlotError, Series, bars, render, spans_decades, svg_file
from .page import document, esc, table
from .units import fmt, parse, parse_all

__all__ = ["Axis", "Chart", "PlotError", "Series", "bars", "render", "spans_decades", "svg_file", "document", "esc", "table", "fmt",
           "parse", "parse_all"]
