#!/usr/bin/env python3
"""Host memory follows what a run touches, not the simulated chip's size: a 1x1x1 GEMM on an
H100 with a 64 GiB L2 (inside the documented range; its tags are 10 GiB) runs in a few tens of
megabytes, because the tag arrays are mapped on demand.

  tests/scripts/host_memory_test.py build/xpusim
"""
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    xpusim = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "tiny.yaml")
        with open(trace, "w") as f:
            f.write("xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: 1, n: 1, k: 1, dtype: bf16}\n")
        r = subprocess.run([xpusim, "run", "-q", "-c", os.path.join(ROOT, "configs", "h100-sxm.yaml"), "-t", trace,
                            "--set", "l2.size=64 GiB", "--out", os.path.join(tmp, "out")],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"l2.size=64 GiB, 1x1x1 GEMM: exit {r.returncode}, peak RSS {peak_mib:.0f} MiB")
    if r.returncode != 0:
        print(r.stderr)
        return 1
    if peak_mib > 512:  # it was 13 GB before the tags were mapped on demand
        print("FAIL: host memory grows with the simulated L2's size")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
