"""python3 -m xpusim.serve ...: `xpusim serve` (docs/serving.md)."""
from .command import main

main()
