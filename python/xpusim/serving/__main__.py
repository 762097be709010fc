"""python3 -m xpusim.serving ...: `xpusim serve` (docs/serving.md)."""
from .command import main

main()
