#!/usr/bin/env bash
# Configures, builds and runs the test suite (the fast tier CI runs).
#   scripts/test.sh             release-style build in build/
#   SANITIZE=1 scripts/test.sh  AddressSanitizer + UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SANITIZE:-0}" = 1 ]; then
  BUILD_DIR=build-asan ./scripts/build.sh -DXPUSIM_SANITIZE=ON -DXPUSIM_BUILD_TESTS=ON
  cd build-asan
else
  ./scripts/build.sh -DXPUSIM_BUILD_TESTS=ON -DXPUSIM_WERROR=ON
  cd build
fi
ctest --output-on-failure -j"$(nproc)"
