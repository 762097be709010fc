#!/usr/bin/env bash
# Wall time of `xpusim serve` on issue 21's target: an hour of traffic at 10 requests/s on a
# Llama-3-70B TP=4 replica (fp8 weights and KV cache, continuous batching), from an empty step
# cache, once with fixed lengths (512 in / 128 out) and once with spread ones (normal 1024+-512
# in, 256+-128 out). Prints the wall seconds, the shapes simulated, the loop's share and the
# ratio to the 300 s target; asserts nothing (machines are shared and noisy).
#   scripts/bench-serve.sh [--duration S] [--jobs N]   (defaults 3600 s, the CPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=3600 jobs=0
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "bench-serve.sh: unknown option $1 (--duration S, --jobs N)" >&2; exit 2 ;;
  esac
done
[ -x build/xpusim ] || ./scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf "%-8s %9s %8s %9s %9s %9s %8s\n" lengths wall_s shapes sim_s loop_s requests target
for spec in "fixed|512|128" "spread|normal:1024:512|normal:256:128"; do
  IFS='|' read -r name prompt output <<<"$spec"
  t0=$(date +%s.%N)
  python3 scripts/xpusim-serve.py --config configs/systems/dgx-h100.yaml --model configs/models/llama-3-70b.yaml \
    --tp 4 --weights fp8 --kv fp8 --rate 10 --duration "$duration" --prompt-len "$prompt" --output-len "$output" \
    --jobs "$jobs" --out "$out/$name" -q
  t1=$(date +%s.%N)
  # The loop alone: the same run again, every shape now in the cache.
  python3 scripts/xpusim-serve.py --config configs/systems/dgx-h100.yaml --model configs/models/llama-3-70b.yaml \
    --tp 4 --weights fp8 --kv fp8 --rate 10 --duration "$duration" --prompt-len "$prompt" --output-len "$output" \
    --jobs "$jobs" --out "$out/$name" --overwrite -q
  t2=$(date +%s.%N)
  python3 - "$out/$name/summary.json" "$t0" "$t1" "$t2" "$name" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t0, t1, t2 = (float(x) for x in sys.argv[2:5])
wall, loop = t1 - t0, t2 - t1
print(f"{sys.argv[5]:<8} {wall:9.1f} {s['step_cache']['buckets']:8d} {wall - loop:9.1f} {loop:9.1f} "
      f"{s['requests']:9d} {wall / 300:7.2f}x")
PY
done
