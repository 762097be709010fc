#!/usr/bin/env bash
# Configures, builds and runs the test suite.
#   scripts/test.sh             the fast tier: release-style build in build/ (warnings are errors)
#   scripts/test.sh --sanitize  the same tests built with AddressSanitizer + UBSan in build-asan/
#   scripts/test.sh --all       both, one after the other: what CI runs (.ci/run)
# SANITIZE=1 is the same as --sanitize.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=fast
[ "${SANITIZE:-0}" = 1 ] && mode=sanitize
case "${1:-}" in
  "") ;;
  --sanitize) mode=sanitize ;;
  --all) mode=all ;;
  -h|--help) sed -n 2,6p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown argument '$1' (--sanitize, --all)" >&2; exit 2 ;;
esac
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

fast() {
  ./scripts/build.sh -DXPUSIM_BUILD_TESTS=ON -DXPUSIM_WERROR=ON
  (cd build && ctest --output-on-failure -j"$(nproc)")
}

# ASan + UBSan (a report fails the test: -fno-sanitize-recover), LeakSanitizer on. The tests
# that drive the binary through
# Python scripts and Chromium are the same code paths as the CLI tests, only slower under ASan,
# and are left to the fast tier.
sanitize() {
  BUILD_DIR=build-asan ./scripts/build.sh -DXPUSIM_SANITIZE=ON -DXPUSIM_BUILD_TESTS=ON
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j"$(nproc)" -E '^(scripts\.|trace_gen\.|import\.run|system\.run)')
}

case "$mode" in
  fast) fast ;;
  sanitize) sanitize ;;
  all) fast && echo "== sanitizer tier (ASan + UBSan) ==" && sanitize ;;
esac
