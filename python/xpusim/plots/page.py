"""The frame of xpusim's pages: one stylesheet, a table whose figures carry their units, and the
self-contained HTML document (nothing is fetched: charts are inline SVG)."""
import html

from .units import fmt

STYLE = """body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#f4f4f4} td.text{text-align:left}
tr.failed td{background:#fde8e8;color:#a00}
.charts{display:flex;flex-wrap:wrap;gap:1em} figure.chart{margin:0.5em 0}
figure.chart svg{max-width:100%;height:auto}
div.table{overflow-x:auto} .muted{color:#777} ul.failures{color:#a00}"""


def esc(x):
    return html.escape(str(x))


def table(columns, rows, failed=None):
    """An HTML table. columns: [(heading, unit)] where unit is the unit of that column's numbers
    (fmt's), None for text; rows: lists of values; failed(row) marks a row red."""
    head = "".join(f"<th>{esc(h)}</th>" for h, _ in columns)
    body = []
    for r in rows:
        cells = []
        for (_, unit), v in zip(columns, r):
            if unit is None or isinstance(v, str) or v is None:
                cells.append(f'<td class="text">{esc("-" if v is None else v)}</td>')
            else:
                cells.append(f"<td>{esc(fmt(v, unit))}</td>")
        cls = ' class="failed"' if failed and failed(r) else ""
        body.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return f'<div class="table"><table><tr>{head}</tr>\n' + "\n".join(body) + "\n</table></div>\n"


def document(title, body):
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>\n'
            f"<style>{STYLE}</style></head><body>\n{body}</body></html>\n")
