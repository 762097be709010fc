"""The example in docs/python.md runs as written and prints what the page says it does."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_example_runs():
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1
    r = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, XPUSIM_ROOT=ROOT))
    assert r.returncode == 0, r.stderr
    times = [float(x) for x in re.findall(r"SMs: +([0-9.]+) us", r.stdout)]
    assert len(times) == 3 and times[0] > times[1] > times[2]
    assert "refused: --set sm.cout: key 'sm.cout': unknown key" in r.stdout
