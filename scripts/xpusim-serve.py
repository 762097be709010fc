#!/usr/bin/env python3
"""LLM serving on the cycle-approximate engine: the command line of xpusim.serving
(python/xpusim/serving/, whose help text lists every flag; `xpusim serve` runs the same).

  scripts/xpusim-serve.py --config configs/systems/dgx-h100.yaml --model configs/models/llama-3-70b.yaml \\
      --tp 4 --weights fp8 --kv fp8 --rate 2 --duration 60 --out serve-out
"""
import os
import sys

# The source tree's package: its pure-Python modules, with the native part built beside the
# --xpusim binary (build/python) where there is one, else the binary itself (serve.engine).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from xpusim.serving import main  # noqa: E402

if __name__ == "__main__":
    main()
