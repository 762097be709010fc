#!/usr/bin/env bash
# Regenerates tests/golden/ from the current model. Run it only when a model change is meant to
# move the golden figures, and say in the commit why they moved.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target xpusim -j"$(nproc)" >/dev/null
build/xpusim run -q --config configs/h100-sxm.yaml --trace tests/data/gemm-small.yaml --out build/golden-h100
cp build/golden-h100/report.json tests/golden/h100-gemm-small.json
echo "updated tests/golden/h100-gemm-small.json"
