#!/usr/bin/env python3
"""`xpusim sweep` and `xpusim compare`: a killed or interrupted sweep resumes to the same results as
an uninterrupted one; an MPI run over 2 ranks equals the local run; a failing point is recorded
and does not stop the sweep; the HTML reports have their charts (and render in headless
Chromium when it is installed); the timeline is valid trace-event JSON with counter tracks. A
serve sweep runs `xpusim serve` per point, its points sharing one step cache, with the same
results, resume and MPI behaviour.
Run by ctest (scripts.sweep) with the binary as the first argument."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
XPUSIM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "xpusim")
ENV = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")

SPEC = f"""xpusim_sweep: 1
name: test
configs: [{ROOT}/configs/h100-sxm.yaml]
traces: [{ROOT}/tests/data/gemm-2k.yaml]
axes:
  sm.count: [66, 100, 132]
  trace.dtype: [bf16, fp8, fp4]   # fp4: H100's tensor cores have none, so those points fail
"""


def sweep(*args, check=True):
    r = subprocess.run([XPUSIM, "sweep", *args], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def read(path):
    with open(path) as f:
        return f.read()


def tick_labels(head, svg, which):
    """The tick labels a chart drew on its x axis (which="x") or y axis ("y"), from its figure's
    data-xticks, each checked to be text in its SVG."""
    labels = re.search(r'data-%sticks="([^"]*)"' % which, head).group(1).split("|")
    for t in labels:
        assert f">{t}</text>" in svg, t
    return labels


def legend_texts(svg):
    at = svg.find("-legend_1")
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg[at:]) if at >= 0 else []


class Sweep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="xpusim-sweep-")
        cls.spec = os.path.join(cls.tmp, "spec.yaml")
        with open(cls.spec, "w") as f:
            f.write(SPEC)
        cls.full = os.path.join(cls.tmp, "full")
        cls.out = sweep(cls.spec, "-o", cls.full, "-j", "2").stdout

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_every_point_has_a_row_and_failures_do_not_stop_it(self):
        lines = read(os.path.join(self.full, "results.jsonl")).splitlines()
        rows = [json.loads(x) for x in lines]
        self.assertEqual([r["index"] for r in rows], list(range(9)))
        failed = [r for r in rows if r["status"] == "failed"]
        self.assertEqual(len(failed), 3)
        for r in failed:
            self.assertEqual(r["trace.dtype"], "fp4")
            self.assertIn("do not support fp4", r["error"])
        ok = [r for r in rows if r["status"] == "ok"]
        for r in ok:
            self.assertGreater(r["time_s"], 0)
            self.assertEqual(r["sms"], int(r["sm.count"]))
        # fp8 is faster than bf16 at every SM count; more SMs are never slower.
        t = {(r["sm.count"], r["trace.dtype"]): r["time_s"] for r in ok}
        for sms in ["66", "100", "132"]:
            self.assertLess(t[(sms, "fp8")], t[(sms, "bf16")])
        self.assertLessEqual(t[("132", "bf16")], t[("66", "bf16")])
        csv = read(os.path.join(self.full, "results.csv")).splitlines()
        self.assertEqual(len(csv), 10)
        self.assertTrue(csv[0].startswith("index,id,status,error,config,trace,sm.count,trace.dtype,"))
        self.assertIn("6 of 9 points ok, 3 failed", self.out)

    def test_resume_after_kill_gives_the_same_results(self):
        out = os.path.join(self.tmp, "killed")
        p = subprocess.Popen([XPUSIM, "sweep", self.spec, "-o", out, "-j", "1"], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        jsonl = os.path.join(out, "results.jsonl")
        deadline = time.time() + 300
        while time.time() < deadline:
            if os.path.exists(jsonl) and len(read(jsonl).splitlines()) >= 2:
                break
            time.sleep(0.02)
        os.killpg(p.pid, signal.SIGKILL)  # the sweep and its running point, as a crash or kill -9
        p.wait()
        done = len(read(jsonl).splitlines())
        self.assertGreaterEqual(done, 2)
        self.assertLess(done, 9, "the sweep finished before it could be killed; make its points slower")
        # Without --resume the finished results are never overwritten.
        r = sweep(self.spec, "-o", out, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--resume", r.stderr)
        r = sweep(self.spec, "-o", out, "--resume", "-j", "2")
        self.assertIn(f"{done} already done, {9 - done} to run", r.stdout)
        self.assertEqual(read(os.path.join(out, "results.csv")), read(os.path.join(self.full, "results.csv")))
        self.assertEqual(read(jsonl), read(os.path.join(self.full, "results.jsonl")))
        # Nothing left: a second resume runs nothing and changes nothing.
        r = sweep(self.spec, "-o", out, "--resume")
        self.assertIn("9 already done, 0 to run", r.stdout)
        self.assertEqual(read(os.path.join(out, "results.csv")), read(os.path.join(self.full, "results.csv")))

    def test_interrupt_keeps_finished_points(self):
        out = os.path.join(self.tmp, "interrupted")
        p = subprocess.Popen([XPUSIM, "sweep", self.spec, "-o", out, "-j", "1"], env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        jsonl = os.path.join(out, "results.jsonl")
        while not (os.path.exists(jsonl) and read(jsonl).strip()):
            time.sleep(0.02)
        p.send_signal(signal.SIGINT)
        stdout, _ = p.communicate(timeout=120)
        if p.returncode == 0:
            self.skipTest("the sweep finished before the interrupt arrived")
        self.assertEqual(p.returncode, 130)
        self.assertIn("run again with --resume", stdout)
        sweep(self.spec, "-o", out, "--resume")
        self.assertEqual(read(os.path.join(out, "results.csv")), read(os.path.join(self.full, "results.csv")))

    def test_mpi_run_equals_the_local_run(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)")
        out = os.path.join(self.tmp, "mpi")
        r = subprocess.run([mpirun, "-np", "2", XPUSIM, "sweep", self.spec, "-o", out], env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        if "MPI ranks" not in r.stdout:
            self.skipTest("this xpusim was built without MPI")
        self.assertIn("on each of 2 MPI ranks", r.stdout)
        self.assertEqual(read(os.path.join(out, "results.csv")), read(os.path.join(self.full, "results.csv")))

    def test_parallelism_does_not_change_a_byte(self):
        # One point at a time against two (setUpClass): the same results and the same
        # report.json in every point's folder.
        out = os.path.join(self.tmp, "serial")
        sweep(self.spec, "-o", out, "-j", "1")
        for name in ("results.jsonl", "results.csv"):
            self.assertEqual(read(os.path.join(out, name)), read(os.path.join(self.full, name)), name)
        points = sorted(os.listdir(os.path.join(self.full, "points")))
        self.assertEqual(points, sorted(os.listdir(os.path.join(out, "points"))))
        compared = 0
        for p in points:
            a = os.path.join(self.full, "points", p, "report.json")
            if os.path.exists(a):
                self.assertEqual(read(a), read(os.path.join(out, "points", p, "report.json")), p)
                compared += 1
        self.assertGreater(compared, 3)

    def test_timeout_records_the_point_as_failed_and_goes_on(self):
        out = os.path.join(self.tmp, "timeout")
        r = sweep(self.spec, "-o", out, "-j", "2", "--timeout", "0.000001")
        self.assertIn("failed", r.stdout)
        rows = [json.loads(x) for x in read(os.path.join(out, "results.jsonl")).splitlines()]
        self.assertEqual(len(rows), len(read(os.path.join(self.full, "results.jsonl")).splitlines()))
        self.assertTrue(all("timed out" in x.get("error", "") for x in rows), rows)
        bad = sweep(self.spec, "-o", os.path.join(self.tmp, "t2"), "--timeout", "-1", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--timeout must be a positive number", bad.stderr)

    def test_html_reports_have_their_charts(self):
        html = read(os.path.join(self.full, "sweep.html"))
        for chart in ["axis-sm.count-gemm-2k", "axis-trace.dtype-gemm-2k", "pareto-gemm-2k"]:
            self.assertIn(f'<figure class="chart" id="{chart}"', html)
        self.assertNotIn("http://", re.sub(r'xmlns(:xlink)?="http://www.w3.org/[^"]*"', "", html))  # nothing fetched
        self.assertNotIn("<script", html)
        point = os.path.join(self.full, "points", sorted(os.listdir(os.path.join(self.full, "points")))[0])
        run = read(os.path.join(point, "report.html"))
        for chart in ["roofline", "energy", "op-times"]:
            self.assertIn(f'<svg id="{chart}"', run)
        self.assertIn("<circle", run)  # ops placed on the roofline
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            self.skipTest("chromium not installed: HTML not rendered")
        for page in [os.path.join(self.full, "sweep.html"), os.path.join(point, "report.html")]:
            png = page + ".png"
            r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                                f"--screenshot={png}", "file://" + page], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=120)
            self.assertTrue(os.path.exists(png), r.stderr)
            self.assertGreater(os.path.getsize(png), 20000, "a near-empty screenshot")

    def test_a_page_that_cannot_be_drawn_leaves_the_results_and_says_how_to_draw_it(self):
        # The page is drawn by Python (xpusim.plots); a Python without matplotlib stands in here.
        fake = os.path.join(self.tmp, "python-without-matplotlib")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho 'error: drawing needs matplotlib (python3-matplotlib)' >&2\nexit 1\n")
        os.chmod(fake, 0o755)
        spec = os.path.join(self.tmp, "one.yaml")
        with open(spec, "w") as f:
            f.write(f"xpusim_sweep: 1\nname: one\nconfigs: [{ROOT}/configs/h100-sxm.yaml]\n"
                    f"traces: [{ROOT}/tests/data/gemm-2k.yaml]\naxes:\n  sm.count: [132]\n")
        out = os.path.join(self.tmp, "no-page")
        r = subprocess.run([XPUSIM, "sweep", spec, "-o", out, "--fidelity", "fast"], env=dict(ENV, XPUSIM_PYTHON_EXE=fake),
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warning: sweep.html not drawn (drawing needs matplotlib (python3-matplotlib))", r.stderr)
        self.assertIn(f"xpusim plot sweep {out}", r.stderr)
        self.assertNotIn("sweep.html", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(out, "sweep.html")))
        self.assertEqual(len(read(os.path.join(out, "results.jsonl")).splitlines()), 1)
        # Drawn later from the folder, with the Python that has it.
        again = subprocess.run([XPUSIM, "plot", "sweep", out], env=ENV, capture_output=True, text=True, timeout=120)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn('<figure class="chart" id="axis-sm.count-gemm-2k"', read(os.path.join(out, "sweep.html")))
        bad = subprocess.run([XPUSIM, "plot", "sweep", os.path.join(self.tmp, "nothing-here")], env=ENV,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("sweep.json: not there", bad.stderr)
        self.assertNotIn("Traceback", bad.stderr)

    def test_sweep_charts_read_right(self):
        # Numeric axes are numeric (a unit read from the values: 300 W), log where they span two
        # decades; lines come in the spec's order; the Pareto front's points are labelled; tick
        # labels carry units, never an exponent.
        spec = os.path.join(self.tmp, "charts.yaml")
        values = ", ".join(f"{w} W" for w in range(300, 2700, 100))  # 24 power limits: a tall legend
        with open(spec, "w") as f:
            f.write(f"xpusim_sweep: 1\nname: charts\nconfigs: [{ROOT}/configs/h100-sxm.yaml]\n"
                    f"traces: [{ROOT}/tests/data/gemm-2k.yaml]\naxes:\n  sm.count: [1, 16, 132]\n  power.limit: [{values}]\n")
        out = os.path.join(self.tmp, "charts")
        sweep(spec, "-o", out, "-j", "2", "--fidelity", "fast")
        html = read(os.path.join(out, "sweep.html"))
        figures = dict(re.findall(r'<figure class="chart" id="([^"]+)"[^>]*>(.*?)</figure>', html, re.S))
        heads = dict(re.findall(r'<figure class="chart" id="([^"]+)"([^>]*)>', html))
        sm = figures["axis-sm.count-gemm-2k"]
        self.assertIn('data-xscale="log"', heads["axis-sm.count-gemm-2k"])  # 1 to 132: two decades
        head = heads["axis-sm.count-gemm-2k"]
        self.assertEqual(tick_labels(head, sm, "x"), ["1", "10", "100"])
        self.assertTrue(all(t.endswith("s") for t in tick_labels(head, sm, "y")), tick_labels(head, sm, "y"))
        self.assertEqual(legend_texts(sm), [f"power.limit={w} W" for w in range(300, 2700, 100)])  # the spec's order
        limits = figures["axis-power.limit-gemm-2k"]
        self.assertIn('data-xscale="linear"', heads["axis-power.limit-gemm-2k"])  # 300 to 2600 W: numeric, linear
        ticks = tick_labels(heads["axis-power.limit-gemm-2k"], limits, "x")
        self.assertLessEqual(len(ticks), 8)
        self.assertTrue(all(re.fullmatch(r"[0-9.]+ k?W", t) for t in ticks), ticks)
        self.assertIn("-label-", figures["pareto-gemm-2k"])  # the front's points name their settings
        visible = re.sub(r"<[^>]+>", " ", html)
        self.assertIsNone(re.search(r"\d\.?\d*e[+-]\d\d", visible))

    def test_timeline_is_valid_trace_events_with_counters(self):
        point = os.path.join(self.full, "points", sorted(os.listdir(os.path.join(self.full, "points")))[0])
        with open(os.path.join(point, "timeline.json")) as f:
            t = json.load(f)
        events = t["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        counters = [e for e in events if e["ph"] == "C"]
        self.assertEqual({e["name"] for e in slices}, {"gemm", "act"})
        for e in slices:
            for k in ["ts", "dur", "pid", "tid"]:
                self.assertIsInstance(e[k], (int, float), k)
        # The shipped H100 runs its power governor: its power and clock join the counters.
        self.assertEqual({e["name"] for e in counters},
                         {"HBM bandwidth", "tensor cores", "power", "power, time-constant average", "SM clock"})
        for e in counters:
            (v,) = e["args"].values()
            self.assertGreaterEqual(v, 0)
        busy = [e["args"]["busy %"] for e in counters if e["name"] == "tensor cores"]
        self.assertTrue(all(v <= 100 for v in busy) and max(busy) > 10)
        self.assertEqual([e["ts"] for e in counters], sorted(e["ts"] for e in counters))

    def test_compare_puts_runs_side_by_side(self):
        pts = sorted(os.listdir(os.path.join(self.full, "points")))
        a, b = (os.path.join(self.full, "points", p) for p in pts[:2])
        out = os.path.join(self.tmp, "cmp")
        r = subprocess.run([XPUSIM, "compare", a, b, "-o", out], env=ENV, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1.00x", r.stdout)
        self.assertIn("efficiency", r.stdout)
        self.assertRegex(r.stdout, r"[0-9.]+ TFLOP/s .* [0-9.]+ mJ .* [0-9.]+ GFLOPS/W")  # units with prefixes, no e-notation
        self.assertNotRegex(r.stdout, r"[0-9]e[-+][0-9]")
        self.assertEqual(len(read(os.path.join(out, "compare.csv")).splitlines()), 3)
        r = subprocess.run([XPUSIM, "compare", a], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("two or more runs", r.stderr)
        # A run that took no simulated time: no rates for it and no ratios to it, never 0x or NaN.
        trace = os.path.join(self.tmp, "nothing.yaml")
        with open(trace, "w") as f:
            f.write("xpusim_trace: 1\nname: nothing\nops:\n  - {name: d, kind: delay, duration: 0 s}\n")
        zero = os.path.join(self.tmp, "zero-run")
        subprocess.run([XPUSIM, "run", "-q", "-c", os.path.join(ROOT, "configs", "h100-sxm.yaml"), "-t", trace, "--out", zero],
                       env=ENV, check=True)
        for runs in ([zero, a], [a, zero]):
            r = subprocess.run([XPUSIM, "compare", *runs, "-o", out], env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotRegex(r.stdout, r"(?i)nan|\b0x\b|\binf")
            self.assertIn("zero-run took no simulated time", r.stdout)
            self.assertNotRegex(read(os.path.join(out, "compare.csv")), r"(?i)nan|inf")
        # A report.json with a string where a number belongs is bad input (exit 1), not an internal error.
        with open(os.path.join(a, "report.json")) as f:
            rep = json.load(f)
        rep["total"]["time_s"] = "abc"
        broken = os.path.join(self.tmp, "broken-report.json")
        with open(broken, "w") as f:
            json.dump(rep, f)
        r = subprocess.run([XPUSIM, "compare", broken, b], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("key 'total.time_s': expected a number (not an xpusim report.json", r.stderr)

    def test_bad_specs_are_refused_with_file_line_and_key(self):
        cases = [("xpusim_sweep: 1\nconfigs: [x.yaml]\ntraces: [y.yaml]\naxis: {}\n", "key 'axis': unknown key (did you mean 'axes'?)"),
                 (SPEC.replace("sm.count:", "sm.cout:"), "axis 'sm.cout'"),
                 (SPEC.replace("trace.dtype:", "trace.dtpye:"), "did you mean 'dtype'"),
                 (SPEC.replace("[bf16, fp8, fp4]", "[bf16, fp8]") + "mode: zip\n", "zip needs axes of one length"),
                 (SPEC + "mode: random\n", "random mode needs samples"),
                 (SPEC.replace("[66, 100, 132]", "[66, 66]"), "appears twice"),
                 ("xpusim_sweep: 2\n", "unsupported version"),
                 (SPEC.replace("name: test", "name: ../escape"), "'../escape' is not a plain name"),
                 (SPEC.replace("name: test", "name: /tmp/abs"), "'/tmp/abs' is not a plain name"),
                 # 10^9 points: refused as counted, before any is expanded (it used to fill the memory)
                 (SPEC + "".join(f"  {k}: [{', '.join(str(v) for v in range(1, 21))}]\n" for k in
                         ("hbm.stacks", "tensor_core.per_sm", "sm.max_warps", "sm.max_ctas", "sm.sub_partitions",
                          "noc.dies", "hbm.channels_per_stack")),
                  "points (1 config(s) x 1 trace(s) x 3 x 3 x 20 x 20 x 20 x 20 x 20 x 20 x 20), more than the 1000000")]
        for i, (text, msg) in enumerate(cases):
            spec = os.path.join(self.tmp, f"bad{i}.yaml")
            with open(spec, "w") as f:
                f.write(text)
            r = sweep(spec, "-o", os.path.join(self.tmp, f"bad{i}"), check=False)
            self.assertEqual(r.returncode, 1, (text, r.stderr))
            self.assertIn(msg, r.stderr)
            self.assertIn(f"bad{i}.yaml:", r.stderr)
        r = sweep(self.spec, "--jbos", "2", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean '--jobs'", r.stderr)

    def test_resume_after_an_edited_spec_keeps_what_still_stands_and_loses_nothing(self):
        # A value added in front shifts every point's index: the finished points are found by
        # their identity, and only the new ones run.
        out = os.path.join(self.tmp, "edited")
        shutil.copytree(self.full, out)
        spec = os.path.join(self.tmp, "edited.yaml")
        with open(spec, "w") as f:
            f.write(SPEC.replace("[66, 100, 132]", "[50, 66, 100, 132]"))
        r = sweep(spec, "-o", out, "--resume", "-j", "2")
        self.assertIn("9 already done, 3 to run", r.stdout)
        rows = [json.loads(x) for x in read(os.path.join(out, "results.jsonl")).splitlines()]
        self.assertEqual([x["index"] for x in rows], list(range(12)))
        before = {(x["sm.count"], x["trace.dtype"]): x["time_s"] for x in
                  (json.loads(y) for y in read(os.path.join(self.full, "results.jsonl")).splitlines())}
        for x in rows:
            if x["sm.count"] != "50":
                self.assertEqual(x["time_s"], before[(x["sm.count"], x["trace.dtype"])])
        # A value removed: resuming would delete its finished rows, so it is refused and the
        # files are left as they were.
        out = os.path.join(self.tmp, "shrunk")
        shutil.copytree(self.full, out)
        with open(spec, "w") as f:
            f.write(SPEC.replace("[66, 100, 132]", "[66, 100]"))
        kept = read(os.path.join(out, "results.jsonl"))
        r = sweep(spec, "-o", out, "--resume", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("3 finished rows are of points this spec no longer has", r.stderr)
        self.assertEqual(read(os.path.join(out, "results.jsonl")), kept)

    def test_random_samples_are_reproducible(self):
        spec = os.path.join(self.tmp, "random.yaml")
        with open(spec, "w") as f:
            f.write(SPEC.replace("[bf16, fp8, fp4]", "[bf16, fp8]").replace("[66, 100, 132]", "{min: 16, max: 132, integer: true}")
                    + "mode: random\nsamples: 5\nseed: 7\n")
        a = sweep(spec, "--dry-run").stdout
        b = sweep(spec, "--dry-run").stdout
        self.assertEqual(a, b)
        self.assertIn("5 points", a)

    def test_pandas_example_loads_the_results(self):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "sweep-pandas.py"),
                            os.path.join(self.full, "results.csv")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if "needs pandas" in r.stderr:
            self.skipTest("pandas not installed")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("3 failed point(s)", r.stdout)
        self.assertIn("sm.count: 66 -> 132", r.stdout)


SERVE_SPEC = f"""xpusim_sweep: 1
name: serve-test
config: {ROOT}/configs/h100-sxm.yaml
serve:
  model: {ROOT}/tests/data/models/tiny-llama.yaml   # the plumbing's test: steps in a fraction of a second
  duration: 2
  prompt-len: uniform:32:96
  output-len: 4
  max-context: 256
  bucket-ratio: 8
axes:
  serve.rate: [4, 16]
  serve.scheduler: [continuous, chunked]
"""


class ServeSweep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="xpusim-serve-sweep-")
        cls.spec = os.path.join(cls.tmp, "serve.yaml")
        with open(cls.spec, "w") as f:
            f.write(SERVE_SPEC)
        cls.full = os.path.join(cls.tmp, "full")
        cls.out = sweep(cls.spec, "-o", cls.full, "-j", "2").stdout

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def rows(self, out):
        return [json.loads(x) for x in read(os.path.join(out, "results.jsonl")).splitlines()]

    def with_cache(self, name):
        """A fresh output folder holding the first run's step cache: its points simulate nothing."""
        out = os.path.join(self.tmp, name)
        os.makedirs(out)
        shutil.copy(os.path.join(self.full, "step-cache.json"), out)
        return out

    def test_every_point_is_a_serving_run(self):
        self.assertIn("4 of 4 points ok", self.out)
        rows = self.rows(self.full)
        self.assertEqual([r["index"] for r in rows], [0, 1, 2, 3])
        header = read(os.path.join(self.full, "results.csv")).splitlines()[0]
        self.assertTrue(header.startswith("index,id,status,error,config,model,serve.rate,serve.scheduler,requests,"))
        for r in rows:
            self.assertEqual(r["status"], "ok", r)
            # The row is the point's own summary.
            with open(os.path.join(self.full, r["out"], "summary.json")) as f:
                s = json.load(f)
            self.assertEqual(r["finished"], s["finished"])
            self.assertEqual(r["ttft_p99_s"], s["ttft_s"]["p99"])
            self.assertEqual(r["joules_per_output_token"], s["joules_per_output_token"])
            self.assertEqual(s["setup"]["scheduler"], r["serve.scheduler"])
            self.assertEqual(r["finished"], r["requests"])
        by = {(r["serve.rate"], r["serve.scheduler"]): r for r in rows}
        for sched in ("continuous", "chunked"):
            self.assertGreater(by[("16", sched)]["throughput_rps"], 2 * by[("4", sched)]["throughput_rps"])

    def test_points_share_one_step_cache(self):
        with open(os.path.join(self.full, "step-cache.json")) as f:
            cache = json.load(f)
        simulated = 0
        for r in self.rows(self.full):
            with open(os.path.join(self.full, r["out"], "summary.json")) as f:
                simulated += json.load(f)["step_cache"]["simulated_now"]
            self.assertFalse(os.path.exists(os.path.join(self.full, r["out"], "step-cache.json")))
        # Every shape any point simulated is in the shared file (no point's writes lost).
        self.assertGreaterEqual(simulated, len(cache))
        self.assertTrue(all(len(v) == 5 for v in cache.values()))  # StepModel.VALUES per point
        self.assertEqual([f for f in os.listdir(self.full) if f.endswith((".tmp", ".lock"))], [])

    def test_one_at_a_time_and_mpi_give_the_same_bytes(self):
        out = self.with_cache("serial")
        sweep(self.spec, "-o", out, "-j", "1")
        for name in ("results.jsonl", "results.csv"):
            self.assertEqual(read(os.path.join(out, name)), read(os.path.join(self.full, name)), name)
        for r in self.rows(out):
            with open(os.path.join(out, r["out"], "summary.json")) as f:
                self.assertEqual(json.load(f)["step_cache"]["simulated_now"], 0)
        # Resumed when complete: nothing runs, nothing changes.
        before = read(os.path.join(out, "results.csv"))
        r = sweep(self.spec, "-o", out, "--resume")
        self.assertIn("4 already done, 0 to run", r.stdout)
        self.assertEqual(read(os.path.join(out, "results.csv")), before)
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("mpirun not installed")
        out = self.with_cache("mpi")
        r = subprocess.run([mpirun, "-np", "2", XPUSIM, "sweep", self.spec, "-o", out], env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        if "MPI ranks" not in r.stdout:
            self.skipTest("this xpusim was built without MPI")
        self.assertEqual(read(os.path.join(out, "results.csv")), read(os.path.join(self.full, "results.csv")))

    def test_html_plots_serving_figures(self):
        html = read(os.path.join(self.full, "sweep.html"))
        for chart in ["axis-output_tokens_per_s-serve.rate-tiny-llama", "axis-ttft_p99_s-serve.scheduler-tiny-llama",
                      "pareto-tiny-llama"]:
            self.assertIn(f'<figure class="chart" id="{chart}"', html)
        self.assertIn("J per output token", html)

    def test_bad_serve_specs_are_refused_before_anything_runs(self):
        cases = [(SERVE_SPEC.replace("serve.rate:", "serve.rat:"), "serve.yaml:12", "axis 'serve.rat'", "unknown option --rat (did you mean --rate?)"),
                 (SERVE_SPEC.replace("  duration: 2", "  duration: -2"), "serve.yaml:6:3: key 'serve.duration'",
                  "--duration -2.0: must be a positive, finite number"),
                 (SERVE_SPEC.replace("  duration: 2", "  max-seqs: 0"), "serve.yaml:6:3: key 'serve.max-seqs': ",
                  "--max-seqs must be at least 1"),
                 (SERVE_SPEC.replace("  duration: 2", "  rates: 1,2"), "serve.yaml:6:3", "key 'serve.rates'",
                  "sweep the arrival rate with an axis"),
                 (SERVE_SPEC.replace("[continuous, chunked]", "[continuous, fifo]"), "axis 'serve.scheduler'", "",
                  "--scheduler fifo: not one of continuous, chunked, static"),
                 (SERVE_SPEC + "  trace.dtype: [fp8]\n", "key 'axes.trace.dtype'", "", "a serve sweep has no trace"),
                 (SERVE_SPEC + f"traces: [{ROOT}/tests/data/gemm-2k.yaml]\n", "key 'traces'", "",
                  "runs model cards (serve.model), not traces"),
                 (SERVE_SPEC.replace("tiny-llama.yaml", "llama-9.yaml"), "serve.yaml:", "", "llama-9.yaml"),
                 (SERVE_SPEC.replace("max-context: 256", "tp: 1\n  max-context: 256").replace("serve.scheduler: [continuous, chunked]", "serve.tp: [1]"),
                  "key 'axes.serve.tp'", "", "also fixed under serve:"),
                 (SPEC + "  serve.rate: [1]\n", "key 'axes.serve.rate'", "", "belong to a serve sweep")]
        for i, (text, *msgs) in enumerate(cases):
            spec = os.path.join(self.tmp, "bad", str(i), "serve.yaml")
            os.makedirs(os.path.dirname(spec))
            with open(spec, "w") as f:
                f.write(text)
            out = os.path.join(self.tmp, "bad", str(i), "out")
            r = sweep(spec, "-o", out, check=False)
            self.assertEqual(r.returncode, 1, (text, r.stderr))
            for m in msgs:
                self.assertIn(m, r.stderr, text)
            self.assertFalse(os.path.exists(out), "refused before anything ran")
        r = sweep(self.spec, "--fidelity", "exact", "--dry-run", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--fidelity applies to `xpusim run` points", r.stderr)


if __name__ == "__main__":
    unittest.main()
