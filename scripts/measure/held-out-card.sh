#!/usr/bin/env bash
# The measurements that check a chip config the simulator was not fitted to, in one pass that
# fits a short lease: environment and device properties; square GEMMs by format, copy and read
# bandwidth, a BERT-base layer and 5 s of sustained 8192^3 GEMMs with board power and clock
# (gpu_microbench.py); the Llama-2-7B-shaped decode step at batch 1 and 32 (decode_step.py); the
# kernels cuBLAS picks (gemm_grids.py); load-to-use latencies (pointer_chase.cu, needs nvcc); the
# skinny and square GEMMs with operands out of HBM (serving_kernels.py). Parts run in that order,
# each after the last whatever it returned, and each writes its CSV as it ends; the whole is cut
# at LIMIT seconds (default 420) so that what finished is packed into OUT/results.tar.gz.
# nvidia-smi samples clocks, power and temperature every 500 ms throughout (clocks-trace.csv) and
# parts.log gives each part's start and end. Reads device state only; changes no setting.
# Usage: scripts/measure/held-out-card.sh [OUT] [LIMIT]
set -u
out=${1:-$OUT}
limit=${2:-420}
here=$(cd "$(dirname "$0")" && pwd)
res="$out/results"
mkdir -p "$res"
export PYTHONUNBUFFERED=1
start=$(date +%s)
{
  date -u
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,power.default_limit,memory.total --format=csv
  python3 -c "import torch; p = torch.cuda.get_device_properties(0); print('torch', torch.__version__, 'cuda', torch.version.cuda); print(p); print('L2 bytes', p.L2_cache_size, 'SMs', p.multi_processor_count)"
  which nvcc && nvcc --version
} > "$res/env.txt" 2>&1
cat "$res/env.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 500 > "$res/clocks-trace.csv" 2>&1 &
smi=$!

part() {  # part NAME COMMAND...: runs COMMAND within what is left of the limit
  local left=$((limit - ($(date +%s) - start)))
  if [ "$left" -le 5 ]; then echo "$1 skipped: out of time" | tee -a "$res/parts.log"; return; fi
  echo "$1 start $(date -u +%T)" | tee -a "$res/parts.log"
  timeout "$left" "${@:2}" > "$res/$1.log" 2>&1
  echo "$1 end $(date -u +%T) rc=$?" | tee -a "$res/parts.log"
  tail -3 "$res/$1.log"
}

part microbench python3 "$here/gpu_microbench.py" "$res"
part decode python3 "$here/decode_step.py" "$res/decode-step.csv" 1 32
part grids python3 "$here/gemm_grids.py" "$res/gemm-grids.csv"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
part chase bash -c "'$NVCC' -O2 -arch=sm_90 -o /tmp/pointer_chase '$here/pointer_chase.cu' && /tmp/pointer_chase > '$res/pointer-chase.csv'"
part serving python3 "$here/serving_kernels.py" "$res" skinny-cold square-cold

kill "$smi" 2>/dev/null
tar -C "$out" -czf "$out/results.tar.gz" results && rm -rf "$res"
ls -la "$out"
