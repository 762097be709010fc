#!/usr/bin/env bash
# Configures, builds and runs the test suite.
#   scripts/test.sh             the fast tier: release-style build in build/ (warnings are errors)
#   scripts/test.sh --sanitize  the same tests built with AddressSanitizer + UBSan in build-asan/
#   scripts/test.sh --all       both: what CI runs (.ci/run); a test both trees hold runs once, in the
#                               sanitizer tier unless tests/sanitizer-covered.txt leaves it to the fast one
# SANITIZE=1 is the same as --sanitize.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=fast
[ "${SANITIZE:-0}" = 1 ] && mode=sanitize
case "${1:-}" in
  "") ;;
  --sanitize) mode=sanitize ;;
  --all) mode=all ;;
  -h|--help) sed -n 2,7p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown argument '$1' (--sanitize, --all)" >&2; exit 2 ;;
esac
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

# The fast tier's build keeps line tables (-g1) rather than full debug information: the tests need
# neither, and it compiles in about three quarters of the time (a build for a debugger:
# scripts/build.sh in another folder, BUILD_DIR=build-debug). It is a unity build, eight sources
# to a compiler run, which parses the headers they share once: 130 s against 234 s on two cores
# (with make; scripts/build.sh uses Ninja, 102 s).
# The sanitizer build compiles each library source alone (with the sanitizers a unity build saves
# nothing there; the input and report layers at -O0, sim/CMakeLists.txt), so one that compiles
# only beside others still fails the suite. File-local names must differ across a library's
# sources. The test sources are a unity build in both trees (here, and tests/CMakeLists.txt for
# the sanitizer build): no build compiles them alone.
fast_build() {
  ./scripts/build.sh -DXPUSIM_BUILD_TESTS=ON -DXPUSIM_WERROR=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8
}
fast() {
  fast_build
  (cd build && ctest --output-on-failure -j"$(nproc)")
}

# --all: the fast tier's tests that the sanitizer tier did not run (the scripts, the [heavy]
# Catch2 tests, the Python module's, the tests tests/sanitizer-covered.txt lists; scripts/tiers.py
# chooses them). A test both trees hold checks the same assertions on the
# same code in both: -O1 against -O2 moves no result on x86-64, where GCC rounds every
# floating-point operation alike at either level (SSE2, no fused multiply-add without -march),
# and the sanitizer build adds its checks; run in both, those tests cost about a minute of the
# fast tier on two cores.
fast_rest() {
  local numbers
  numbers=$(python3 scripts/tiers.py rest build-asan build) || return 1
  [ -n "$numbers" ] || { echo "test.sh: the sanitizer tier ran every test of build/"; return 0; }
  echo "== the fast tier's tests the sanitizer tier did not run ($(tr , '\n' <<<"$numbers" | wc -l)) =="
  (cd build && ctest --output-on-failure -j"$(nproc)" -I "0,0,0,$numbers")
}

# ASan + UBSan (a report fails the test: -fno-sanitize-recover), LeakSanitizer on. The tests
# that drive the binary through Python scripts and Chromium are the same code paths as the CLI
# tests, only slower under ASan, and are left to the fast tier, as are the Catch2 tests tagged
# [heavy] (tests/CMakeLists.txt) and the tests whose every line of the simulator shorter tests run
# (tests/sanitizer-covered.txt, measured by scripts/sanitizer-subset.py); scripts/tiers.py lists
# the rest.
#
# LeakSanitizer's stop-the-world tracer crashed at process exit ("Tracer caught signal 11 ...
# LeakSanitizer has encountered a fatal error") in up to half the runs of some short tests:
# SystemC runs its processes on QuickThreads stacks with guard pages, and after those switches the
# sanitizer takes a coroutine stack for the main thread's (its log says "stack pointer not in
# stack range") and faults on a guard page while scanning it. use_stacks=0 leaves thread stacks
# out of the scan (the leak check runs after main has returned; heap, globals and TLS are still
# scanned). Should the tracer crash anyway (google/sanitizers#1353 has other causes), a failed test
# whose output carries that signature, and nothing else failed, is run again (twice at most); any
# other failure fails the tier at once.
sanitize() {
  BUILD_DIR=build-asan ./scripts/build.sh -DXPUSIM_SANITIZE=ON -DXPUSIM_BUILD_TESTS=ON || return 1
  local numbers
  numbers=$(python3 scripts/tiers.py sanitizer build-asan) || return 1
  [ -n "$numbers" ] || { echo "test.sh: the sanitizer tree holds no test to run" >&2; return 1; }
  cd build-asan
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
  export LSAN_OPTIONS=use_stacks=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}
  ctest --output-on-failure -j"$(nproc)" -I "0,0,0,$numbers" && return 0
  for attempt in 1 2; do
    only_tracer_crashes Testing/Temporary/LastTest.log Testing/Temporary/LastTestsFailed.log || return 1
    echo "== rerunning the tests above that failed only on LeakSanitizer's tracer crash (retry $attempt of 2) =="
    ctest --output-on-failure --rerun-failed && return 0
  done
  return 1
}

# True when every test listed as failed in $2 failed with the LeakSanitizer tracer crash, judged
# from its output in ctest's log $1.
only_tracer_crashes() {
  python3 - "$1" "$2" <<'PY'
import re, sys
log, failed = open(sys.argv[1], errors="replace").read(), open(sys.argv[2]).read().splitlines()
names = [f.split(":", 1)[1] for f in failed if ":" in f]
ok = bool(names)
for name in names:
    m = re.search(r"Test: " + re.escape(name) + r"\n.*?\nOutput:\n-+\n(.*?)<end of output>", log, re.S)
    crash = bool(m) and "Tracer caught signal" in m.group(1) and "LeakSanitizer has encountered a fatal error" in m.group(1)
    print(f"{name}: {'LeakSanitizer tracer crash' if crash else 'a real failure'}")
    ok = ok and crash
sys.exit(0 if ok else 1)
PY
}

case "$mode" in
  fast) fast ;;
  sanitize) sanitize ;;
  all) fast_build && echo "== sanitizer tier (ASan + UBSan) ==" && (sanitize) && fast_rest ;;
esac
