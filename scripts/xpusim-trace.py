#!/usr/bin/env python3
"""Generates an xpusim trace from a model card: the command line of xpusim.workloads
(python/xpusim/workloads/, whose help text lists every flag).

  scripts/xpusim-trace.py configs/models/llama-2-70b.yaml --phase decode --batch 32 \\
      --context 2048 --weights fp8 --kv fp8 -o llama70b-decode.yaml
"""
import os
import sys

# The source tree's package: its pure-Python modules need PyYAML only, not the built native part.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from xpusim.workloads import main  # noqa: E402

if __name__ == "__main__":
    main()
