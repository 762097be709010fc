#!/usr/bin/env python3
"""A training plan over parallel layouts: wraps python3 -m xpusim.planning (python/xpusim/planning/)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from xpusim.planning.command import main  # noqa: E402

main()
