"""python3 -m xpusim.plots sweep OUT: (re)draws OUT/sweep.html from the folder `xpusim sweep`
wrote (`xpusim sweep` runs this when it finishes)."""
import argparse
import sys

from .charts import PlotError
from .sweep import SweepPageError, write


def main(argv=None):
    ap = argparse.ArgumentParser(prog="xpusim plot", description="Draw a page of xpusim's from the results a command "
                                 "left in a folder: `sweep OUT` draws OUT/sweep.html from a sweep's results.")
    ap.add_argument("what", choices=["sweep"], help="the page: sweep (OUT/sweep.html)")
    ap.add_argument("folder", help="the folder the command wrote (xpusim sweep's --out)")
    a = ap.parse_args(argv)
    try:
        print(f"wrote {write(a.folder)}")
    except (SweepPageError, PlotError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
