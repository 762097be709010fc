#!/usr/bin/env python3
"""Prints the memory microbenchmark results of one or more report.json files as a table:
latency (cycles) for pointer chases, bandwidths for reads and copies.
Usage: scripts/microbench-table.py OUT_DIR [OUT_DIR...]"""
import json
import sys


def main(dirs):
    for d in dirs:
        r = json.load(open(f"{d}/report.json"))
        print(f"# {r['config']['name']}: {r['trace']['name']}")
        print("| op | time | latency (cycles) | timed bandwidth | HBM bandwidth | L1 hit | L2 hit | row hit |")
        print("|---|---|---|---|---|---|---|---|")
        for o in r["ops"]:
            mb = o.get("microbenchmark", {})
            m = o["memory"]
            lat = f"{mb['access_latency_cycles']:.1f}" if mb and o["kind"] == "pointer_chase" else ""
            tb = f"{mb['timed_bandwidth'] / 1e12:.2f} TB/s" if mb and o["kind"] == "strided_read" else ""
            print(f"| {o['name']} | {o['time_s'] * 1e6:.1f} us | {lat} | {tb} | {m['hbm_bandwidth'] / 1e12:.2f} TB/s "
                  f"| {m['l1_hit_rate']:.2f} | {m['l2_hit_rate']:.2f} | {m['hbm_row_hit_rate']:.2f} |")
        print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
