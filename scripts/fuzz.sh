#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and fuzzes them.
#   scripts/fuzz.sh                      every target for 10 minutes, two at a time
#   scripts/fuzz.sh --time 3600 config   one target for an hour
#   scripts/fuzz.sh --build-only
# Targets: units, config, trace_yaml, trace_jsonl (tests/fuzz/). Each starts from its
# regression corpus (tests/fuzz/corpus/<target>) and the shipped files of its kind, and keeps
# what it learns in build-fuzz/corpus/<target>. Crashes, timeouts and out-of-memory inputs land in
# build-fuzz/artifacts/<target>/; minimise one (fuzz_<target> -minimize_crash=1 FILE), fix the
# cause, and add the input to tests/fuzz/corpus/<target>/ so that the test suite replays it.
# Needs clang and libclang-rt-14-dev (scripts/install-deps.sh --fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
time_s=600
jobs=2
build_only=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) time_s=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n 2,12p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    units|config|trace_yaml|trace_jsonl) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (targets: units config trace_yaml trace_jsonl; --time S, --jobs N, --build-only)" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(units config trace_yaml trace_jsonl)
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh --fuzz)" >&2; exit 2; }

CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXPUSIM_FUZZ=ON \
  -DXPUSIM_BUILD_TESTS=ON -DXPUSIM_MPI=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}")
[ "$build_only" = 1 ] && exit 0

seeds() {  # the shipped files a target starts from
  case "$1" in
    config) find configs -name '*.yaml' ;;
    trace_yaml) find traces tests/data -name '*.yaml' -size -64k ;;
    trace_jsonl) find traces -name '*.jsonl' -size -64k ;;
  esac
}

run_one() {
  local t=$1 work=build-fuzz/corpus/$1 art=build-fuzz/artifacts/$1/ log=build-fuzz/logs/$1.log
  mkdir -p "$work" "$art" build-fuzz/logs
  cp -n tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  seeds "$t" | while read -r f; do cp -n "$f" "$work/seed-$(echo "$f" | tr / _)"; done
  local dict=()
  [ -f tests/fuzz/"$t".dict ] && dict=(-dict=tests/fuzz/"$t".dict)
  ASAN_OPTIONS=detect_leaks=1 SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 build-fuzz/tests/fuzz/fuzz_"$t" "$work" \
    "${dict[@]}" -max_total_time="$time_s" -timeout=20 -rss_limit_mb=4096 -max_len=65536 \
    -artifact_prefix="$art" -print_final_stats=1 >"$log" 2>&1 || true
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "$t: ${time_s} s, $execs executions, corpus $(ls "$work" | wc -l) inputs, $(ls "$art" | wc -l) artifacts (log: $log)"
}

pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait
