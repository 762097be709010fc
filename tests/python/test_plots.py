"""xpusim.plots: the pages' charts are numeric where their values are numbers (units read from the
values), log where those span decades, and their ticks and tables carry units, never an exponent."""
import json
import re
import sys

import pytest

from xpusim import plots
from xpusim.plots import __main__ as plot_cli
from xpusim.plots import sweep as sweep_page


def test_quantities_read_and_written_with_their_units():
    assert plots.fmt(1.13, "s") == "1.13 s"          # not "1.13e+03 ms"
    assert plots.fmt(1130.0, "s") == "1130 s"        # seconds never go above "s"
    assert plots.fmt(0.002468, "s") == "2.468 ms"
    assert plots.fmt(3.35e12, "B/s") == "3.35 TB/s"
    assert plots.fmt(80 * 2 ** 30, "B") == "80 GiB"
    assert plots.fmt(12500, "") == "12.5 k"
    assert plots.fmt(None, "s") == "-"
    assert plots.parse("5.23 GT/s") == (5.23e9, "T/s")
    assert plots.parse("300 W") == (300.0, "W")
    assert plots.parse("50 MiB") == (50 * 2 ** 20, "B")
    assert plots.parse("bf16") is None
    assert plots.parse_all(["3.2 GT/s", "8 GT/s"]) == ([3.2e9, 8e9], "T/s")
    assert plots.parse_all(["300 W", "2 GHz"]) is None  # two units: categories


def rows_for(axis, values, times):
    return [{"index": i, "id": f"p{i}", "status": "ok", "error": "", "config": "/c/h100.yaml", "trace": "/t/gemm.yaml",
             axis: v, "time_s": t, "energy_j": t * 500} for i, (v, t) in enumerate(zip(values, times))]


def figure(page, chart_id):
    m = re.search(r'<figure class="chart" id="%s"([^>]*)>(.*?)</figure>' % re.escape(chart_id), page, re.S)
    assert m, chart_id
    return dict(re.findall(r'data-(\w+)="([^"]*)"', m.group(1))), m.group(2)


def marker_x(svg, gid):
    group = re.search(r'<g id="%s">(.*?)</g>\s*</g>' % re.escape(gid), svg, re.S).group(1)
    return [float(x) for x in re.findall(r'<use [^>]*x="([-0-9.]+)"', group)]


def test_a_numeric_axis_with_a_unit_is_spaced_by_value():
    # HBM transfer rates 3.2, 5.23 and 8 GT/s: evenly spaced categories would put 5.23 midway.
    page = sweep_page.page({"name": "hbm", "kind": "run", "axes": ["hbm.rate"]},
                           rows_for("hbm.rate", ["3.2 GT/s", "5.23 GT/s", "8 GT/s"], [3e-3, 2e-3, 1.5e-3]))
    data, svg = figure(page, "axis-hbm.rate-gemm")
    assert data["xscale"] == "linear"
    assert all(t.endswith("GT/s") for t in data["xticks"].split("|")), data["xticks"]
    x = marker_x(svg, "axis-hbm.rate-gemm-points-0")
    assert len(x) == 3
    assert (x[1] - x[0]) / (x[2] - x[1]) == pytest.approx((5.23 - 3.2) / (8 - 5.23), rel=1e-3)


def test_values_over_decades_are_on_a_log_axis_with_unit_ticks():
    page = sweep_page.page({"name": "sms", "kind": "run", "axes": ["sm.count"]},
                           rows_for("sm.count", ["1", "10", "132"], [1e-2, 1e-3, 8e-5]))
    data, _ = figure(page, "axis-sm.count-gemm")
    assert (data["xscale"], data["yscale"]) == ("log", "log")
    assert data["xticks"] == "1|10|100"
    assert data["yticks"] == "100 us|1 ms|10 ms"
    visible = re.sub(r"<[^>]+>", " ", page)
    assert not re.search(r"\d\.?\d*e[+-]\d\d", visible)
    assert "<td>1 ms</td>" in page  # the table's figures in the units the ticks use


def test_a_category_axis_keeps_the_spec_order():
    page = sweep_page.page({"name": "dt", "kind": "run", "axes": ["trace.dtype"]},
                           rows_for("trace.dtype", ["fp8", "bf16", "fp32"], [1e-3, 2e-3, 8e-3]))
    data, _ = figure(page, "axis-trace.dtype-gemm")
    assert data["xscale"] == "category"
    assert data["xticks"] == "fp8|bf16|fp32"


def test_drawing_without_matplotlib_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it fails
    chart = plots.Chart("c", "t", plots.Axis("x"), plots.Axis("y"), [plots.Series("s", [1, 2], [1, 2])])
    with pytest.raises(plots.PlotError, match="python3-matplotlib"):
        plots.render(chart)


def test_plot_command_names_what_is_missing(tmp_path, capsys):
    assert plot_cli.main(["sweep", str(tmp_path)]) == 1
    assert "sweep.json: not there" in capsys.readouterr().err
    (tmp_path / "sweep.json").write_text(json.dumps({"name": "x", "kind": "run", "axes": ["a"]}))
    (tmp_path / "results.jsonl").write_text('{"index": 0, "status": "ok"}\n{"index": 1, "sta')
    assert plot_cli.main(["sweep", str(tmp_path)]) == 1
    assert "results.jsonl:2: not a result" in capsys.readouterr().err


def test_failed_points_beyond_the_working_ones_are_inside_the_chart():
    rows = rows_for("sm.count", ["8", "16", "32"], [4e-3, 2e-3, 1e-3])
    rows += [dict(rows[0], index=3, id="p3", status="failed", error="boom", **{"sm.count": "1000", "time_s": None}),
             dict(rows[0], index=4, id="p4", status="failed", error="bang", **{"sm.count": "1000", "time_s": None})]
    page = sweep_page.page({"name": "f", "kind": "run", "axes": ["sm.count"]}, rows)
    data, svg = figure(page, "axis-sm.count-gemm")
    width = float(re.search(r'viewBox="0 0 ([0-9.]+) ', svg).group(1))
    group = re.search(r'<g id="axis-sm.count-gemm-failed">(.*?)</g>\s*</g>', svg, re.S).group(1)
    crosses = re.findall(r'<use [^>]*x="([-0-9.]+)"[^>]*><title>([^<]*)</title>', group)
    assert len(crosses) == 1  # the two failures at 1000 share a cross, both in its tooltip
    assert "boom" in crosses[0][1] and "bang" in crosses[0][1]
    assert 0 < float(crosses[0][0]) < width
    assert "1000" in data["xticks"].split("|")
    # A group where every point failed still shows its crosses on an axis of their values.
    page = sweep_page.page({"name": "f", "kind": "run", "axes": ["sm.count"]}, rows[3:])
    data, svg = figure(page, "axis-sm.count-gemm")
    assert float(re.search(r'<g id="axis-sm.count-gemm-failed">.*?<use [^>]*x="([-0-9.]+)"', svg, re.S).group(1)) < \
        float(re.search(r'viewBox="0 0 ([0-9.]+) ', svg).group(1))
    assert "No point of it ran" in page


def test_close_values_get_the_digits_that_tell_their_ticks_apart():
    chart = plots.Chart("close", "t", plots.Axis("time", "s"), plots.Axis("energy", "J"),
                        [plots.Series("s", [2.36001e-3, 2.36004e-3], [0.31501, 0.31504])])
    data = dict(re.findall(r'data-(\w+)="([^"]*)"', plots.render(chart).split(">", 1)[0]))
    for axis in ("xticks", "yticks"):
        ticks = data[axis].split("|")
        assert len(set(ticks)) == len(ticks) > 1, ticks


def test_drawing_leaves_the_callers_matplotlib_settings_alone():
    import matplotlib
    before = (matplotlib.get_backend(), matplotlib.rcParams["font.size"], matplotlib.rcParams["axes.grid"])
    plots.render(plots.Chart("c", "t", plots.Axis("x"), plots.Axis("y"), [plots.Series("s", [1, 2], [1, 2])]))
    assert (matplotlib.get_backend(), matplotlib.rcParams["font.size"], matplotlib.rcParams["axes.grid"]) == before


def test_an_id_from_any_file_name_is_safe_and_counts_as_a_number_only_with_a_unit_it_scales():
    assert plots.Chart('a "b" & c.yaml', "t", plots.Axis("x"), plots.Axis("y")).id == "a--b----c.yaml"
    assert plots.parse("8 GPUs") == (8.0, "GPUs")
    assert plots.parse("1k") == (1000.0, "")


def test_labels_that_would_overlap_are_left_out():
    xs = [1.0, 1.001, 1.002, 2.0]
    chart = plots.Chart("lab", "t", plots.Axis("x"), plots.Axis("y"),
                        [plots.Series("front", xs, [1.0, 1.0, 1.0, 2.0], tips=list("abcd"),
                                      labels=["first", "second", "third", "far"])])
    page = plots.render(chart)
    shown = re.findall(r'<g id="lab-label-0-\d+">\s*<text[^>]*>([^<]*)</text>', page)
    assert shown == ["first", "far"]
    assert page.count("<title>") == 4  # every point keeps its tooltip
