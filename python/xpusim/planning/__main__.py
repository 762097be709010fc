"""python3 -m xpusim.planning ...: a training plan (docs/training.md, "Planning a run")."""
from .command import main

main()
