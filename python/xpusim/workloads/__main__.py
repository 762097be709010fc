"""python3 -m xpusim.workloads CARD --phase ...: the trace generator (scripts/xpusim-trace.py)."""
from . import main

main()
