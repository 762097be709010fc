#!/usr/bin/env bash
# The SASS of PyTorch's own CUDA kernels whose names match a pattern, from the installed
# libtorch_cuda.so: every sm_90 cubin is extracted, the ones naming the pattern are disassembled,
# and the matching functions kept. Usage: torch_sass.sh OUT_DIR PATTERN [ARCH]
#   torch_sass.sh out 'softmax_warp_forward|cunn_SoftMaxForwardReg|vectorized_layer_norm_kernel'
set -euo pipefail
out=$1 pat=$2 arch=${3:-sm_90}
export PATH=$PATH:/usr/local/cuda/bin
lib=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libtorch_cuda.so'))")
work=$(mktemp -d)
cd "$work"
cuobjdump -xelf all "$lib" > /dev/null
mkdir -p "$out"
for f in $(grep -l -E "$pat" ./*"$arch"*.cubin 2>/dev/null); do
  cuobjdump -sass "$f" | awk -v p="$pat" '/Function : /{keep = ($0 ~ p)} keep'
done > "$out/torch-sass.txt"
ls -la "$out"
rm -rf "$work"
