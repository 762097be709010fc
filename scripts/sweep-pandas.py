#!/usr/bin/env python3
"""Loads a sweep's results.csv into pandas, for users who prefer their own tables and plots.

  build/xpusim sweep configs/sweeps/hbm-x-sms.yaml -o sweep-out/hbm-x-sms
  scripts/sweep-pandas.py sweep-out/hbm-x-sms/results.csv

Prints, per trace, the time in ms as a table of the first two axes (a pivot), and how much the
time moves when each axis goes from its lowest to its highest value. With --plot FILE.png (and
matplotlib) it also draws time against the first axis, a line per value of the second.
Needs python3-pandas (Debian); python3-matplotlib for --plot."""
import argparse
import sys

FIXED = {"index", "id", "status", "error", "config", "trace", "chip", "time_s", "tflops", "energy_j", "tops_per_w",
         "power_w", "joules_per_token", "tokens_per_s", "bound", "tensor_util", "hbm_bandwidth",
         "hbm_peak_bandwidth", "l2_hit_rate", "sms", "sm_clock_hz", "out"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="a sweep's results.csv")
    ap.add_argument("--plot", help="also write a PNG (needs matplotlib)")
    a = ap.parse_args()  # before pandas, so that --help works without it
    try:
        import pandas as pd
    except ImportError:
        sys.exit("sweep-pandas: needs pandas (apt-get install python3-pandas)")
    df = pd.read_csv(a.results)
    failed = df[df["status"] != "ok"]
    if len(failed):
        print(f"{len(failed)} failed point(s):")
        print(failed[["index", "error"]].to_string(index=False))
    df = df[df["status"] == "ok"].copy()
    axes = [c for c in df.columns if c not in FIXED]
    df["time_ms"] = df["time_s"] * 1e3
    df["trace_name"] = df["trace"].str.rsplit("/", n=1).str[-1].str.replace(".yaml", "", regex=False)
    for trace, g in df.groupby("trace_name"):
        print(f"\n== {trace}: time (ms)")
        if len(axes) >= 2:
            print(g.pivot_table(index=axes[0], columns=axes[1], values="time_ms").round(3).to_string())
        elif axes:
            print(g.set_index(axes[0])["time_ms"].round(3).to_string())
        for ax in axes:
            by = g.groupby(ax)["time_ms"].mean()
            lo, hi = by.index.min(), by.index.max()
            print(f"  {ax}: {lo} -> {hi} changes the mean time by {by[hi] / by[lo]:.2f}x")
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        traces = sorted(df["trace_name"].unique())
        fig, axs = plt.subplots(1, len(traces), figsize=(6 * len(traces), 4), squeeze=False)
        for axp, trace in zip(axs[0], traces):
            g = df[df["trace_name"] == trace]
            for v, h in g.groupby(axes[1]) if len(axes) > 1 else [("", g)]:
                h = h.sort_values(axes[0])
                axp.plot(h[axes[0]], h["time_ms"], marker="o", label=f"{axes[1]}={v}" if len(axes) > 1 else None)
            axp.set_title(trace)
            axp.set_xlabel(axes[0])
            axp.set_ylabel("time (ms)")
            if len(axes) > 1:
                axp.legend()
        fig.tight_layout()
        fig.savefig(a.plot)
        print(f"wrote {a.plot}")


if __name__ == "__main__":
    main()
