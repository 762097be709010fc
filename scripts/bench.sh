#!/usr/bin/env bash
# Wall time of the simulator on the shipped jobs, and how the simulated results compare with the
# configured peaks. Prints measured ratios; asserts nothing (machines are shared and noisy).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/xpusim ] || ./scripts/build.sh
out=$(mktemp -d)
printf "%-34s %-10s %10s %12s %14s %10s\n" job config wall_s sim_time achieved "of peak"
for job in "h100-sxm traces/gemm/bf16-8192.yaml" "b200 traces/gemm/bf16-8192.yaml" \
           "h100-sxm traces/elementwise/add-bf16-1g.yaml" "b200 traces/elementwise/add-bf16-1g.yaml"; do
  set -- $job
  start=$(date +%s.%N)
  build/xpusim run -q --config "configs/$1.yaml" --trace "$2" --out "$out/$1"
  end=$(date +%s.%N)
  python3 - "$out/$1/report.json" "$1" "$2" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
op = r["ops"][0]
wall = float(sys.argv[5]) - float(sys.argv[4])
if op["kind"] == "gemm":
    achieved = f'{op["tflops"]:.1f} TFLOP/s'
    frac = op["fraction_of_peak"]
else:
    bw = op["memory"]["hbm_bandwidth"]
    achieved = f'{bw/1e12:.2f} TB/s'
    frac = bw / r["chip"]["hbm_peak_bandwidth"]
print(f'{sys.argv[3]:<34} {sys.argv[2]:<10} {wall:10.2f} {op["time_s"]*1e3:10.3f} ms {achieved:>14} {100*frac:9.1f}%')
PY
done
rm -rf "$out"
