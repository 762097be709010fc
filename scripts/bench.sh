#!/usr/bin/env bash
# Wall time of the simulator on the jobs of docs/performance.md, in one run against the simulator
# as it was before the speed work (BASE_REF, built once into build-bench/), fast and exact
# fidelity side by side, with the fast run's error against exact. Prints measured ratios;
# asserts nothing (machines are shared and noisy).
#   scripts/bench.sh            every job (about 15 minutes; the base takes most of it)
#   scripts/bench.sh --quick    the GEMM and the decode step only
#   BASE_REF=<commit>           the reference simulator (default: the commit before issue 19's work)
#   BASE_BIN=<path>             or a reference binary already built
set -euo pipefail
cd "$(dirname "$0")/.."
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
BASE_REF=${BASE_REF:-df07632}
quick=0
[ "${1:-}" = "--quick" ] && quick=1
[ -x build/xpusim ] || ./scripts/build.sh
base=${BASE_BIN:-build-bench/base/build/xpusim}  # BASE_BIN: a reference binary built elsewhere
if [ ! -x "$base" ]; then
  echo "building the reference simulator ($BASE_REF) into build-bench/base ..."
  rm -rf build-bench/base && mkdir -p build-bench
  git worktree add -f --detach build-bench/base "$BASE_REF" >/dev/null
  (cd build-bench/base && cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build build -j"$(nproc)" --target xpusim >/dev/null)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Each trace twice: from today's generator, and for the reference simulator from the generator of
# its own commit and model card (today's traces may carry keys it does not know, such as a norm's
# `norm: rms`); where that fails, the reference runs today's trace.
gen() {
  local o=$1 card=$2; shift 2
  python3 scripts/xpusim-trace.py "$card" "$@" -o "$out/$o"
  if [ -z "${BASE_BIN:-}" ] && [ -f build-bench/base/scripts/xpusim-trace.py ] && [ -f "build-bench/base/$card" ]; then
    (cd build-bench/base && python3 scripts/xpusim-trace.py "$card" "$@" -o "$out/base-$o" 2>/dev/null) || rm -f "$out/base-$o"
  fi
}
gen llama70b-decode-tp8.yaml configs/models/llama-2-70b.yaml --phase decode --tp 8
gen gpt3-prefill-1layer.yaml configs/models/gpt-3-175b.yaml --phase prefill --batch 8 --prompt 2048 --tp 4 --layers 1
gen gpt3-prefill-96layers.yaml configs/models/gpt-3-175b.yaml --phase prefill --batch 8 --prompt 2048 --tp 4
rep="--set system.detail=representative"
# GPT-3's 96 layers at TP=4 hold 82 GiB of weights and 18 GiB of KV cache on each GPU, more than an
# H100's 80 GiB (the trace's memory_per_gpu says so and the chip refuses it): a speed benchmark
# gives the GPUs the memory to run the same step.
big="--set hbm.capacity=160GiB"

# job: name | config | trace | extra options | run the base too (1/0)
jobs=("gemm-8192 | configs/h100-sxm.yaml | traces/gemm/bf16-8192.yaml | | 1"
      "llama-2-70b-decode-tp8 | configs/systems/dgx-h100.yaml | $out/llama70b-decode-tp8.yaml | $rep | 1")
if [ $quick = 0 ]; then
  jobs+=("gpt-3-prefill-1-layer | configs/systems/dgx-h100.yaml | $out/gpt3-prefill-1layer.yaml | $rep | 1"
         "gpt-3-prefill-96-layers | configs/systems/dgx-h100.yaml | $out/gpt3-prefill-96layers.yaml | $rep $big | 0")
fi

timed() {  # timed NAME BINARY ARGS...: wall seconds of one run, or "failed" (its error on stderr)
  local name=$1 bin=$2; shift 2
  local t0 t1
  t0=$(date +%s.%N)
  if ! "$bin" run -q "$@" --out "$out/$name" >/dev/null; then
    echo failed
    return
  fi
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}
# The reference simulator reads the configs of its own commit (today's may have keys it does not
# know); a BASE_BIN built elsewhere reads today's.
base_cfg() { if [ -z "${BASE_BIN:-}" ] && [ -f "build-bench/base/$1" ]; then echo "build-bench/base/$1"; else echo "$1"; fi; }
base_trace() { local b="$(dirname "$1")/base-$(basename "$1")"; if [ -f "$b" ]; then echo "$b"; else echo "$1"; fi; }

printf "%-26s %9s %9s %9s %8s %8s %10s %10s\n" job base_s exact_s fast_s exact/f base/f "time err" "energy err"
for j in "${jobs[@]}"; do
  IFS='|' read -r name cfg trace extra with_base <<<"$j"
  name=$(echo $name); cfg=$(echo $cfg); trace=$(echo $trace); with_base=$(echo $with_base)
  b="-"; e="-"
  [ "$with_base" = 1 ] && b=$(timed "$name-base" "$base" -c "$(base_cfg "$cfg")" -t "$(base_trace "$trace")" $extra)
  # Exact fidelity of the 96-layer prefill takes hours; its error is measured on fewer layers.
  [ "$with_base" = 1 ] && e=$(timed "$name-exact" build/xpusim -c "$cfg" -t "$trace" $extra --fidelity exact)
  f=$(timed "$name-fast" build/xpusim -c "$cfg" -t "$trace" $extra --fidelity fast)
  python3 - "$out" "$name" "$b" "$e" "$f" <<'PY'
import json, os, sys
out, name, b, e, f = sys.argv[1:]
def total(kind):
    p = os.path.join(out, f"{name}-{kind}", "report.json")
    return json.load(open(p))["total"] if os.path.exists(p) else None
ratio = lambda x: f"{float(x) / float(f):.1f}x" if x not in ("-", "failed") else "-"
fe, ex = total("fast"), total("exact")
terr = f"{100 * (fe['time_s'] / ex['time_s'] - 1):+.2f}%" if ex else "-"
eerr = f"{100 * (fe['energy']['total_j'] / ex['energy']['total_j'] - 1):+.2f}%" if ex and "energy" in ex else "-"
print(f"{name:<26} {b:>9} {e:>9} {f:>9} {ratio(e):>8} {ratio(b):>8} {terr:>10} {eerr:>10}")
PY
done
