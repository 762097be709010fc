#!/usr/bin/env python3
"""report.html and sweep.html read right, for each kind of page: a GPU run, a multi-GPU system run,
an accelerator run and a sweep with failed points.

- The roofline draws each op against its own format's roof, names every roof (with the SIMT and SFU
  ones) and colours each op as its roof.
- An accelerator's page speaks of its MAC array, DRAM and TOPS, not of tensor cores and HBM.
- Collectives are listed with their bus bandwidth; ops come in execution order beside the longest-first
  view; time and energy are summed per op kind and per layer, and the sums match report.json.
- Nothing is drawn outside its chart, no legend is cut where it fits, no figure is written as 1e+03.
- A sweep's failed points are listed, crossed on the charts and flagged in the table.
- Headless Chromium renders each page, and the screenshot shows the colours the charts use.

  tests/scripts/html_test.py build/xpusim
"""
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
ENV = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")

TRACE = """xpusim_trace: 1
name: two layers and a head
ops:
  - repeat: 2
    name: layer
    ops:
      - {name: norm, kind: layernorm, shape: [512, 4096], dtype: bf16}
      - {name: qkv, kind: gemm, m: 512, n: 6144, k: 4096, dtype: bf16, deps: [norm]}
      - {name: scores, kind: softmax, shape: [4096, 2048], dtype: bf16, deps: [qkv]}
      - {name: add, kind: elementwise, shape: [512, 4096], dtype: bf16, deps: [scores]}
  - {name: head, kind: gemm, m: 512, n: 16384, k: 4096, dtype: fp8}
"""


def run(*args):
    return subprocess.run([XPUSIM, *args], env=ENV, capture_output=True, text=True, timeout=600, check=True)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def svgs(page):
    return {m.group(1): m.group(0) for m in re.finditer(r'<svg id="([^"]+)".*?</svg>', page, re.S)}


def legend(svg):
    """Legend entries of an XY chart: (full name, colour)."""
    out = []
    for m in re.finditer(r'<rect x="[^"]+" y="[^"]+" width="10" height="10" fill="([^"]+)"/><text [^>]*class="legend">'
                         r'(?:<title>([^<]*)</title>)?([^<]*)</text>', svg):
        out.append((html.unescape(m.group(2) or m.group(3)), m.group(1)))
    return out


def png_colours(path):
    """The set of RGB colours in a PNG (8-bit RGB or RGBA, not interlaced), from its bytes."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for i in range(0, stride, bpp):
            colours.add(bytes(line[i:i + 3]))
        prev = line
    return colours


def hex_rgb(c):
    return bytes(int(c[i:i + 2], 16) for i in (1, 3, 5))


class Pages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        trace = os.path.join(cls.tmp, "layers.yaml")
        with open(trace, "w") as f:
            f.write(TRACE)
        cls.gpu = os.path.join(cls.tmp, "gpu")
        run("run", "-q", "-c", os.path.join(ROOT, "configs", "h100-sxm.yaml"), "-t", trace, "-o", cls.gpu)
        cls.system = os.path.join(cls.tmp, "system")
        run("run", "-q", "-c", os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml"), "-t",
            os.path.join(ROOT, "traces", "generated", "llama-3-70b-prefill-1layer-tp8.yaml"), "-o", cls.system,
            "--set", "system.detail=representative")
        cls.accel = os.path.join(cls.tmp, "accel")
        run("run", "-q", "-c", os.path.join(ROOT, "configs", "magnet-int4.yaml"), "-t",
            os.path.join(ROOT, "traces", "microbench", "accel-gemm.yaml"), "-o", cls.accel)
        spec = os.path.join(cls.tmp, "sweep.yaml")
        with open(spec, "w") as f:
            f.write(f"xpusim_sweep: 1\nname: some fail\nconfigs: [{ROOT}/configs/h100-sxm.yaml]\n"
                    f"traces: [{ROOT}/tests/data/gemm-2k.yaml]\naxes:\n  sm.count: [16, 132]\n  trace.dtype: [bf16, fp4]\n")
        cls.sweep = os.path.join(cls.tmp, "sweep")
        subprocess.run([XPUSIM, "sweep", spec, "-o", cls.sweep, "-j", "2", "--fidelity", "fast"], env=ENV,
                       capture_output=True, text=True, timeout=600)  # exits non-zero: two points fail
        cls.pages = {"gpu": os.path.join(cls.gpu, "report.html"), "system": os.path.join(cls.system, "report.html"),
                     "accelerator": os.path.join(cls.accel, "report.html")}
        cls.sweep_page = os.path.join(cls.sweep, "sweep.html")  # drawn by xpusim.plots (matplotlib)

    def report(self, folder):
        with open(os.path.join(folder, "report.json")) as f:
            return json.load(f)

    def test_roofline_has_a_roof_per_format_and_colours_ops_as_their_roof(self):
        chart = svgs(read(self.pages["gpu"]))["roofline"]
        roofs = dict(legend(chart))
        names = list(roofs)
        for want in ("bf16 tensor cores", "fp8_e4m3 tensor cores", "SIMT fp32", "SFU", "HBM"):
            self.assertTrue(any(n.startswith(want) for n in names), (want, names))
        rep = self.report(self.gpu)
        peaks = {o["name"]: o["peak_tflops"] for o in rep["ops"]}
        # Each roof's flat line is at its format's peak in report.json: the bf16 one at the qkv's.
        bf16 = next(n for n in names if n.startswith("bf16 tensor cores"))
        self.assertIn(f"{peaks['layer[0].qkv']:.3g}", bf16)
        # Each op's point has its roof's colour, and its tooltip names the roof.
        points = re.findall(r'<circle [^>]*fill="([^"]+)" class="pt"><title>([^<]*)</title>', chart)
        self.assertGreaterEqual(len(points), 4)
        for colour, tip in points:
            tip = html.unescape(tip)
            roof = next(n for n in names if n.split(" ")[0] in tip and ("tensor" in n) == ("tensor cores" in tip)
                        and not n.startswith("HBM"))
            self.assertEqual(roofs[roof], colour, tip)

    def test_accelerator_speaks_of_its_own_units(self):
        page = read(self.pages["accelerator"])
        chart = svgs(page)["roofline"]
        names = [n for n, _ in legend(chart)]
        self.assertTrue(any(n.startswith("DRAM") for n in names), names)
        self.assertTrue(any(n.startswith("int4 MAC array") and n.endswith("TOPS") for n in names), names)
        self.assertIn("achieved TOPS", chart)
        self.assertIn("FLOP per DRAM byte", chart)
        head = re.search(r"<h2>Ops</h2>.*?</tr>", page, re.S).group(0)
        self.assertIn("<th>MAC array</th>", head)
        self.assertIn("<th>DRAM</th>", head)
        self.assertNotIn("tensor cores", head)
        self.assertNotIn("HBM", head)
        self.assertIn(" TOPS", re.search(r"<p>[^<]*bound", page).group(0))
        # The mapping search's choice for every GEMM, as report.json has it (not only summary.md's).
        rep = self.report(self.accel)
        chosen = [(o["name"], m["gemm"], m["dataflow"], m["tiles"]) for o in rep["ops"] for m in o.get("mapping", [])]
        self.assertGreater(len(chosen), 2)
        table = re.search(r"<h2>Mapping</h2>.*?</table>", page, re.S).group(0)
        rows = re.findall(r"<tr><td>\d+</td><td>([^<]+)</td><td>([^<]+)</td><td>[^<]+</td><td>([^<]+)</td>"
                          r"<td>[^<]+</td><td>[^<]+</td><td>(\d+)</td>", table)
        self.assertEqual(sorted((a, b, c, int(d)) for a, b, c, d in rows), sorted(chosen))
        self.assertNotIn("<h2>Mapping</h2>", read(self.pages["gpu"]))

    def test_collectives_with_bus_bandwidth(self):
        page = read(self.pages["system"])
        rep = self.report(self.system)
        table = re.search(r"<h2>Collectives</h2>.*?</table>", page, re.S).group(0)
        rows = re.findall(r"<tr><td>(\d+)</td><td>([^<]+)</td><td>([^<]+)</td>(.*?)</tr>", table)
        colls = [o for o in rep["ops"] if "collective" in o]
        self.assertEqual(sorted(r[1] for r in rows), sorted(o["name"] for o in colls))
        for o in colls:
            busbw = o["collective"]["busbw"]
            row = next(r for r in rows if r[1] == o["name"])
            self.assertIn(f"{busbw / 1e9:.4g} GB/s", row[3])
        self.assertIn("8 GPUs", page)

    def test_execution_order_and_sums_per_kind_and_layer(self):
        page = read(self.pages["gpu"])
        charts = svgs(page)
        rep = self.report(self.gpu)
        order = re.findall(r'class="tick" text-anchor="end"><title>([^<]+)</title>', charts["op-order"])
        by_start = [o["name"] for o in sorted(rep["ops"], key=lambda o: o["start_s"])]
        self.assertEqual(order, by_start)
        longest = re.findall(r'class="tick" text-anchor="end"><title>([^<]+)</title>', charts["op-times"])
        times = {o["name"]: o["time_s"] for o in rep["ops"]}
        self.assertEqual([times[n] for n in longest], sorted(times.values(), reverse=True))

        def sums(chart):
            out = {}
            for m in re.finditer(r'<title>([^<]+)</title>([^<]*)</text>\n<rect[^>]*><title>[^<]*</title></rect>\n'
                                 r'<text [^>]*class="tick">([^<]+)</text>', chart):
                out[html.unescape(m.group(1))] = m.group(3)
            return out

        def fmt(seconds):
            for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
                if seconds >= scale:
                    return f"{seconds / scale:.4g} {unit}"
            return f"{seconds / 1e-12:.4g} ps"

        kinds = {}
        for o in rep["ops"]:
            kinds[o["kind"]] = kinds.get(o["kind"], 0) + o["time_s"]
        self.assertEqual(sums(charts["kinds-time"]), {k: fmt(v) for k, v in kinds.items()})
        layers = {}
        for o in rep["ops"]:
            key = o["name"].split(".")[0] if "[" in o["name"] else "outside repeat blocks"
            layers[key] = layers.get(key, 0) + o["time_s"]
        self.assertEqual(sums(charts["layers-time"]), {k: fmt(v) for k, v in layers.items()})
        self.assertIn("kinds-energy", charts)
        self.assertIn("layers-energy", charts)

    def test_nothing_drawn_outside_its_chart_and_no_exponents(self):
        for kind, path in self.pages.items():
            page = read(path)
            for name, svg in svgs(page).items():
                width = float(re.search(r'width="([0-9.]+)"', svg).group(1))
                height = float(re.search(r'height="([0-9.]+)"', svg).group(1))
                for m in re.finditer(r'<text x="([-0-9.e]+)" y="([-0-9.e]+)"[^>]*>(?:<title>[^<]*</title>)?([^<]*)<', svg):
                    x, y, text = float(m.group(1)), float(m.group(2)), html.unescape(m.group(3))
                    self.assertTrue(0 <= y <= height, (kind, name, text, y, height))
                    anchor_end = 'text-anchor="end"' in m.group(0)
                    left, right = (x - 6.2 * len(text), x) if anchor_end else (x, x + 6.2 * len(text))
                    if 'text-anchor="middle"' in m.group(0):
                        left, right = x - 3.1 * len(text), x + 3.1 * len(text)
                    self.assertGreaterEqual(left, -1, (kind, name, text))
                    self.assertLessEqual(right, width + 1, (kind, name, text, x, width))
            visible = re.sub(r"<[^>]+>", " ", page)
            self.assertIsNone(re.search(r"\d\.?\d*e[+-]\d\d", visible), (kind, re.search(r".{40}\d\.?\d*e[+-]\d\d.{20}", visible)))

    def test_sweep_marks_failed_points(self):
        page = read(self.sweep_page)
        self.assertIn("2 of 4 points ok", page)
        failures = re.search(r'<ul class="failures">(.*?)</ul>', page, re.S).group(1)
        self.assertEqual(failures.count("<li>"), 2)
        self.assertIn("trace.dtype=fp4", failures)
        self.assertIn("do not support fp4", failures)
        charts = dict(re.findall(r'<figure class="chart" id="([^"]+)"[^>]*>(.*?)</figure>', page, re.S))

        def crosses(name):  # the failed points' markers, each with its point's settings as a tooltip
            group = re.search(r'<g id="%s-failed">(.*?)</g>' % re.escape(name), charts[name], re.S).group(1)
            return re.findall(r"<use [^>]*><title>([^<]*)</title></use>", group)
        # On the time-vs-sm.count chart each failed point is a cross at its sm.count.
        self.assertEqual(len(crosses("axis-sm.count-gemm-2k")), 2)
        # On the dtype chart both failed at fp4: one cross, both points in its tooltip.
        self.assertEqual([t.count("trace.dtype=fp4") for t in crosses("axis-trace.dtype-gemm-2k")], [2])
        self.assertTrue(all("trace.dtype=fp4" in t for t in crosses("axis-sm.count-gemm-2k")))
        self.assertIn(">fp4</text>", charts["axis-trace.dtype-gemm-2k"])  # a category with failures only keeps its place
        self.assertEqual(page.count('<tr class="failed">'), 2)
        visible = re.sub(r"<[^>]+>", " ", page)
        self.assertIsNone(re.search(r"\d\.?\d*e[+-]\d\d", visible))

    def test_chromium_renders_each_page_with_its_chart_colours(self):
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            self.skipTest("chromium not installed: HTML not rendered")
        want = {
            "gpu": ["#4e79a7", "#59a14f", "#e15759"],  # a roof, the SIMT roof, HBM-bound ops
            "system": ["#b07aa1", "#edc948"],          # NVLink-bound collectives, power-bound GEMMs
            "accelerator": ["#4e79a7", "#f28e2b"],     # the int4 and int8 roofs
            "sweep": ["#4e79a7", "#e15759", "#d62728"],  # lines, the Pareto front, failed points
        }
        for kind, path in list(self.pages.items()) + [("sweep", self.sweep_page)]:
            png = os.path.join(self.tmp, kind + ".png")
            r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                "--window-size=1400,1200", f"--screenshot={png}", "file://" + path],
                               capture_output=True, timeout=120)
            self.assertTrue(os.path.exists(png), r.stderr)
            colours = png_colours(png)
            self.assertGreater(len(colours), 50, kind)  # text and charts, not a blank page
            for c in want[kind]:
                self.assertIn(hex_rgb(c), colours, (kind, c))


if __name__ == "__main__":
    unittest.main()
