#!/usr/bin/env bash
# Wall time of `xpusim serve` on issue 21's target: an hour of traffic at 10 requests/s on a
# Llama-3-70B TP=4 replica (fp8 weights and KV cache, continuous batching), from an empty step
# cache, once with fixed lengths (512 in / 128 out) and once with spread ones (normal 1024+-512
# in, 256+-128 out). Prints the wall seconds, the shapes simulated, the loop's share and the
# ratio to the 300 s target; asserts nothing (machines are shared and noisy).
# With --worked: instead, docs/serving.md's worked example (two minutes of the Azure trace on
# Llama-3-8B, one H100) from an empty cache, with the kernel cache and with every kernel
# simulated (--no-kernel-cache), and the ratio of the two wall times and of their figures.
#   scripts/bench-serve.sh [--duration S] [--jobs N] [--worked]   (defaults 3600 s, the CPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=3600 jobs=0 worked=0
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --worked) worked=1; shift ;;
    *) echo "bench-serve.sh: unknown option $1 (--duration S, --jobs N, --worked)" >&2; exit 2 ;;
  esac
done
[ -x build/xpusim ] || ./scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ "$worked" = 1 ]; then
  for mode in kernel-cache no-kernel-cache; do
    extra=()
    [ "$mode" = no-kernel-cache ] && extra=(--no-kernel-cache)
    t0=$(date +%s.%N)
    python3 scripts/xpusim-serve.py --config configs/h100-sxm.yaml --model configs/models/llama-3-8b.yaml \
      --requests traces/serving/azure-conv-2023-2min.jsonl --slo-ttft 1s --slo-tpot 50ms --jobs "$jobs" \
      --out "$out/$mode" -q "${extra[@]}"
    t1=$(date +%s.%N)
    echo "$t0 $t1" >"$out/$mode/wall"
  done
  python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
row = {}
for mode in ("kernel-cache", "no-kernel-cache"):
    t0, t1 = (float(x) for x in open(os.path.join(out, mode, "wall")).read().split())
    row[mode] = (t1 - t0, json.load(open(os.path.join(out, mode, "summary.json"))))
(w1, s1), (w0, s0) = row["kernel-cache"], row["no-kernel-cache"]
print(f"worked example, first run: {w1:.1f} s with the kernel cache, {w0:.1f} s without ({w0 / w1:.2f}x); "
      f"{s1['step_cache']['buckets']} shapes")
for name, get in (("TPOT p50", lambda s: s["tpot_s"]["p50"]), ("TTFT p50", lambda s: s["ttft_s"]["p50"]),
                  ("TTFT p90", lambda s: s["ttft_s"]["p90"]), ("J per output token", lambda s: s["joules_per_output_token"])):
    print(f"  {name}: {get(s1):.6g} against {get(s0):.6g} ({(get(s1) / get(s0) - 1) * 100:+.2f}%)")
PY
  exit 0
fi
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
