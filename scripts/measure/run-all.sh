#!/usr/bin/env bash
# Runs every real-hardware measurement into OUT (default $OUT): environment, GEMM and bandwidth
# microbenchmarks, pointer-chase latencies (needs nvcc), and a small PyTorch profile. Each part
# runs even if an earlier one fails. Reads device state only; changes no setting.
set -u
out=${1:-$OUT}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{
  date -u
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,memory.total --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  python3 -c "import triton; print('triton', triton.__version__)" 2>&1
  which nvcc && nvcc --version
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$NVCC" -O2 -arch=sm_90 -o /tmp/pointer_chase "$here/pointer_chase.cu" && /tmp/pointer_chase | tee "$out/pointer-chase.csv"
else
  echo "no nvcc: pointer chase skipped" | tee "$out/pointer-chase.csv"
fi
python3 "$here/profile_model.py" "$out/small-transformer.trace.json" > "$out/profile-summary.txt" 2>&1; tail -30 "$out/profile-summary.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$out/clocks-before.txt" 2>&1
python3 "$here/gpu_microbench.py" "$out" 2>&1 | tee "$out/microbench.log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$out/clocks-after.txt" 2>&1
ls -la "$out"
