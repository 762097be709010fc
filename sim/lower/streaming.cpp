// Elementwise and row-wise kernels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/config/units.h"
#include "sim/lower/lower_util.h"
#include "sim/lower/lowering.h"

namespace xpusim::lower {
namespace {

using trace::Op;
using trace::OpKind;

// Shared memory a block gets without an opt-in, less the block reduction's scratch (a float per
// warp of 1024 threads): the longest row cunn_SoftMaxForwardSmem takes.
constexpr double kSoftmaxSmemBytes = 48.0 * 1024 - 32 * 4;

// ---------------------------------------------------------------------------------------------
// Elementwise and row-wise kernels: a grid-stride loop over "units" (a chunk of elements, or a
// group of whole rows), each thread keeping `stages` loads of `access_bytes` in flight.
class StreamingProgram : public KernelProgram {
 public:
  double access_bytes = 16;  // per thread per load or store instruction (16: one 128-bit access)
  int64_t total = 0;       // elements
  int64_t unit = 0;        // elements per unit of work (whole rows for row-wise ops)
  int64_t step_elems = 0;  // elements per CTA step
  int64_t row = 0;         // row length (row-wise), 0 for elementwise
  uint64_t grid = 0;
  int inputs = 1;
  int in_bits = 16, out_bits = 16;
  std::vector<uint64_t> more_out;  // an elementwise op's outputs after the first (an optimiser's moments)
  bool reduce = false;     // one output per row
  int passes = 1;          // reads of each unit; the output is stored in the last
  double fp32_per_elem = 0, sfu_per_elem = 0;
  std::vector<uint64_t> in_base;
  uint64_t out_base = 0;
  uint64_t sum_base = 0;  // a layernorm of several inputs also writes their sum here (0: none)

  int64_t units() const { return static_cast<int64_t>(div_up(static_cast<uint64_t>(total), static_cast<uint64_t>(unit))); }
  int64_t steps_per_pass() const { return static_cast<int64_t>(div_up(static_cast<uint64_t>(unit), static_cast<uint64_t>(step_elems))); }
  int64_t steps_per_unit() const { return passes * steps_per_pass(); }
  uint64_t num_ctas() const override { return grid; }
  uint64_t steps(uint64_t cta) const override {
    const int64_t u = units(), c = static_cast<int64_t>(cta);
    if (c >= u) return 0;
    return static_cast<uint64_t>(((u - 1 - c) / static_cast<int64_t>(grid) + 1) * steps_per_unit());
  }
  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    const int64_t spu = steps_per_unit();
    const int64_t u = static_cast<int64_t>(cta) + (static_cast<int64_t>(s) / spu) * static_cast<int64_t>(grid);
    const int64_t pass = (static_cast<int64_t>(s) % spu) / steps_per_pass();
    const int64_t j = (static_cast<int64_t>(s) % spu) % steps_per_pass();
    const bool last = pass == passes - 1;
    const int64_t unit_end = std::min((u + 1) * unit, total);
    const int64_t lo = u * unit + j * step_elems;
    const int64_t hi = std::min(lo + step_elems, unit_end);
    if (hi <= lo) return;
    const uint64_t n = static_cast<uint64_t>(hi - lo);
    for (int i = 0; i < inputs; ++i)
      w.cached_loads.push_back({in_base[static_cast<size_t>(i)] + bytes_of(static_cast<uint64_t>(lo), in_bits), 1, bytes_of(n, in_bits), 0});
    if (last && !reduce) {
      w.stores.push_back({out_base + bytes_of(static_cast<uint64_t>(lo), out_bits), 1, bytes_of(n, out_bits), 0});
      if (sum_base) w.stores.push_back({sum_base + bytes_of(static_cast<uint64_t>(lo), out_bits), 1, bytes_of(n, out_bits), 0});
      for (uint64_t base : more_out) w.stores.push_back({base + bytes_of(static_cast<uint64_t>(lo), out_bits), 1, bytes_of(n, out_bits), 0});
    } else if (last && hi == unit_end) {
      const int64_t first_row = u * unit / row, rows = (unit_end - u * unit + row - 1) / row;
      w.stores.push_back({out_base + bytes_of(static_cast<uint64_t>(first_row), out_bits), 1,
                          bytes_of(static_cast<uint64_t>(rows), out_bits), 0});
    }
    const double dn = static_cast<double>(n) / passes;  // a row's arithmetic, spread over its passes
    w.fp32_ops = dn * fp32_per_elem;
    w.sfu_ops = dn * sfu_per_elem;
    w.instr_simt = std::ceil(dn / 32.0) * (fp32_per_elem + sfu_per_elem);
    // One access instruction per warp per 32 x access_bytes.
    w.instr_mem = std::ceil(static_cast<double>(total_bytes(w.cached_loads) + total_bytes(w.stores)) / (32.0 * access_bytes));
  }
  void epilogue(uint64_t, StepWork&) const override {}
  // Stored in its steps, in address order across the grid: the output's last max_bytes.
  void written(double max_bytes, std::vector<Strided>& out) const override {
    // Several outputs are stored side by side, step by step: each holds its share of the tail.
    const double share = max_bytes / static_cast<double>(1 + more_out.size());
    written_tail(out_base, bytes_of(static_cast<uint64_t>(reduce ? total / row : total), out_bits), share, out);
    for (uint64_t base : more_out) written_tail(base, bytes_of(static_cast<uint64_t>(total), out_bits), share, out);
  }
};

// Operands not in one dense layout (a transposed view, a broadcast operand): PyTorch's
// gpu_kernel_impl_nocast (ATen/native/cuda/CUDALoops.cuh) runs launch_legacy_kernel<128, unroll>
// instead of the vectorised kernel: a CTA of 128 threads per 128 x unroll elements, no grid-stride
// loop, each thread handling one element per iteration through an offset calculator, with one
// scalar access per operand. An iteration loads through char pointers after the previous one
// stored through them; the compiler cannot prove they do not alias, so the loads wait for that
// store and every iteration is a round trip of its own (stages = 1). The operands are modelled
// as coalesced, which a transposed one is not (a warp's load touches a sector per thread there).
void strided_elementwise(StreamingProgram& p, const KernelLibParams& kl) {
  const int unroll = p.out_bits >= 32 ? std::max(1, kl.strided_unroll / 2) : kl.strided_unroll;
  p.access_bytes = static_cast<double>(p.in_bits) / 8.0;
  p.step_elems = kl.strided_threads;
  p.unit = p.step_elems * unroll;
  p.stages = 1;
  p.resources = CtaResources{kl.strided_threads, 32 * kl.strided_threads, 0};
  std::ostringstream os;
  os << "strided operands: legacy kernel, " << kl.strided_threads << " threads x " << unroll
     << " elements per CTA in dependent iterations";
  p.description = os.str();
}

}  // namespace

LoweredOp Lowering::streaming(const Op& op, uint64_t out_at) {
  const KernelLibParams& kl = gpu_.kernels;
  auto p = std::make_shared<StreamingProgram>();
  p->in_bits = dtype_bits(op.dtype);
  p->out_bits = dtype_bits(op.out_dtype);
  p->total = op.elements();
  p->step_elems = std::max<int64_t>(1, static_cast<int64_t>(kl.simt_threads * kl.simt_bytes_per_thread * 8 / p->in_bits));
  p->stages = kl.simt_stages;
  p->resources = CtaResources{kl.simt_threads, 32 * kl.simt_threads, 0};
  const bool strided = op.kind == OpKind::elementwise && !op.contiguous;
  if (op.kind == OpKind::elementwise) {
    p->inputs = op.inputs;
    p->fp32_per_elem = op.flops_per_element;
    p->unit = p->step_elems;
    if (strided) strided_elementwise(*p, kl);
  } else {
    const trace::RowwiseCost c = trace::rowwise_cost(op.kind);
    p->fp32_per_elem = c.fp32;
    if (op.kind == OpKind::layernorm) {
      p->inputs = op.inputs;  // a fused residual add: the inputs' sum, normalised
      p->fp32_per_elem += op.inputs - 1;
    }
    p->sfu_per_elem = c.sfu;
    p->row = op.cols();
    p->reduce = op.kind == OpKind::reduction;
    // PyTorch's softmax and log-softmax over rows of more than about 48 KiB (a vocabulary of logits)
    // run cunn_SoftMaxForward (ATen/native/cuda/SoftMax.cu): the row fits neither the registers
    // of cunn_SoftMaxForwardReg nor the 48 KiB of shared memory a block gets without opting in
    // (cunn_SoftMaxForwardSmem), so the block reads it from memory three times, for the max,
    // the sum of exponentials and the output (the kernel names and times of
    // docs/validation/measured/h100-sxm-2026-11-27/sampler-kernels.csv). The second and third
    // reads hit the L2 where the rows in flight fit it.
    if (op.kind == OpKind::softmax && static_cast<double>(p->row) * p->in_bits / 8.0 > kSoftmaxSmemBytes) p->passes = 3;
    // Short rows are grouped so a CTA step still moves a full tile; long rows span steps.
    p->unit = p->row >= p->step_elems ? p->row : (p->step_elems / p->row) * p->row;
  }
  p->step_period = static_cast<uint64_t>(p->steps_per_unit());
  const int cps = ctas_per_sm(p->resources);
  if (cps < 1)
    throw UserError(std::string(strided ? "kernels.simt.strided_threads" : "kernels.simt.threads") + ": a CTA of " +
                    std::to_string(p->resources.threads) + " threads does not fit on an SM");
  // The legacy kernel launches a CTA per unit; the others loop over the units with the CTAs that fit.
  const uint64_t units = static_cast<uint64_t>(p->units());
  p->grid = strided ? units : std::min<uint64_t>(units, static_cast<uint64_t>(gpu_.sm.count) * static_cast<uint64_t>(cps));
  for (int i = 0; i < p->inputs; ++i) p->in_base.push_back(alloc(static_cast<double>(p->total) * p->in_bits / 8.0));
  p->out_base = out_at ? out_at : alloc(static_cast<double>(p->reduce ? op.rows() : p->total) * p->out_bits / 8.0);
  if (op.kind == OpKind::layernorm && p->inputs > 1) p->sum_base = alloc(static_cast<double>(p->total) * p->out_bits / 8.0);
  if (op.kind == OpKind::elementwise)
    for (int i = 1; i < op.outputs; ++i) p->more_out.push_back(alloc(static_cast<double>(p->total) * p->out_bits / 8.0));
  if (!strided) {
    std::ostringstream os;
    os << "grid-stride, " << p->step_elems << " elements per CTA step, " << p->stages << " loads in flight";
    if (p->passes > 1) os << ", each row read " << p->passes << " times (cunn_SoftMaxForward)";
    p->description = os.str();
  }
  return finish(p, false);
}

}  // namespace xpusim::lower
