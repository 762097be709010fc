#!/usr/bin/env bash
# From a fresh Debian 12 machine: install dependencies, build, and run the main job
# (an 8192^3 bf16 GEMM on the H100 SXM config), printing its report.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh -DXPUSIM_BUILD_TESTS=OFF
build/xpusim run --config configs/h100-sxm.yaml --trace traces/gemm/bf16-8192.yaml
if [ -d build/python/xpusim ]; then
  echo
  echo "Python API (docs/python.md): export PYTHONPATH=$PWD/build/python, then import xpusim"
fi
