// Memory and instruction microbenchmarks, and timed gaps.
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

// ---------------------------------------------------------------------------------------------
// Memory microbenchmarks, written as the classic CUDA kernels are.
// Pointer chase: one warp, one thread active, each load's address comes from the previous
// load, so each step waits for the full load-to-use latency. A first lap over the footprint
// warms the caches (and TLB-free here); the `loads` after it are timed.
class PointerChaseProgram : public KernelProgram {
 public:
  uint64_t base = 0;
  int64_t elements = 0, stride = 0, loads = 0, warm = 0;

  uint64_t num_ctas() const override { return 1; }
  uint64_t steps(uint64_t) const override { return static_cast<uint64_t>(warm + loads); }
  void step(uint64_t, uint64_t s, StepWork& w) const override {
    const uint64_t i = static_cast<uint64_t>(s) % static_cast<uint64_t>(elements);
    w.cached_loads.push_back({base + i * static_cast<uint64_t>(stride), 1, 8, 0});
    w.instr_mem = 1;
    w.instr_simt = 1;  // the address arithmetic of the next hop
  }
  void epilogue(uint64_t, StepWork&) const override {}
};

// Instruction loop: warps that issue one kind of instruction `count` times (the energy
// microbenchmarks: per-instruction energy and overhead share).
class InstructionLoopProgram : public KernelProgram {
 public:
  std::string instruction;
  int64_t count = 0, warps = 0, warps_per_cta = 4;
  double macs_per_mma = 0;
  uint64_t num_ctas() const override { return static_cast<uint64_t>((warps + warps_per_cta - 1) / warps_per_cta); }
  uint64_t steps(uint64_t) const override { return 1; }
  void step(uint64_t cta, uint64_t, StepWork& w) const override {
    const int64_t in_cta = std::min(warps_per_cta, warps - static_cast<int64_t>(cta) * warps_per_cta);
    const double n = static_cast<double>(count * in_cta);  // warp instructions
    if (instruction == "hmma" || instruction == "imma") {
      w.instr_mma = n;
      w.tensor_macs = n * macs_per_mma;
      w.tensor_dtype = instruction == "hmma" ? Dtype::fp16 : Dtype::int8;
      w.tensor_per_warp = true;  // HMMA and IMMA are warp instructions (mma.sync)
      return;
    }
    w.instr_simt = n;
    w.lane_pairs = true;  // independent instructions on few registers: dual-issued where the SM can
    if (instruction == "ffma") w.fp32_ops = 32 * n;
    if (instruction == "hfma") w.hfma_ops = 32 * n;
    if (instruction == "hfma2") w.hfma_ops = 64 * n;  // two packed fp16 FMAs per lane
    if (instruction == "hdp4a") w.dp4a_ops = 32 * n;
  }
  void epilogue(uint64_t, StepWork&) const override {}
};

// Delay: one CTA busy for a known time (an imported kernel the trace does not describe).
class DelayProgram : public KernelProgram {
 public:
  double duration_s = 0;
  uint64_t num_ctas() const override { return 1; }
  uint64_t steps(uint64_t) const override { return 1; }
  void step(uint64_t, uint64_t, StepWork& w) const override { w.fixed_s = duration_s; }
  void epilogue(uint64_t, StepWork&) const override {}
};

// Strided read: a grid-stride loop in which each thread reads `access` bytes every `stride`
// bytes; `passes` sweeps over the footprint, the ones after the first timed.
class StridedReadProgram : public KernelProgram {
 public:
  uint64_t base = 0;
  int64_t accesses = 0;     // per pass
  int64_t access = 0, stride = 0;
  int64_t per_step = 0;     // accesses per CTA step
  int64_t passes = 1;
  uint64_t grid = 0;

  int64_t chunks() const { return (accesses + per_step - 1) / per_step; }
  int64_t chunks_of(uint64_t cta) const {
    const int64_t c = static_cast<int64_t>(cta), n = chunks();
    return c >= n ? 0 : (n - 1 - c) / static_cast<int64_t>(grid) + 1;
  }
  uint64_t num_ctas() const override { return grid; }
  uint64_t steps(uint64_t cta) const override { return static_cast<uint64_t>(chunks_of(cta) * passes); }
  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    const int64_t per_pass = chunks_of(cta);
    const int64_t pass = static_cast<int64_t>(s) / per_pass;
    const int64_t chunk = static_cast<int64_t>(cta) + (static_cast<int64_t>(s) % per_pass) * static_cast<int64_t>(grid);
    const int64_t n = std::min(per_step, accesses - chunk * per_step);
    // Each pass shifts the work by one chunk, so a CTA reads what another SM read before: the
    // passes after the first measure the L2 (or DRAM), not this SM's L1.
    int64_t first = (chunk + pass) % chunks() * per_step;
    int64_t left = n;
    while (left > 0) {
      const int64_t take = std::min(left, accesses - first);
      w.cached_loads.push_back({base + static_cast<uint64_t>(first * stride), static_cast<uint64_t>(take),
                                static_cast<uint64_t>(access), static_cast<uint64_t>(stride)});
      left -= take;
      first = 0;
    }
    w.instr_mem = std::ceil(static_cast<double>(n) * std::ceil(static_cast<double>(access) / 16.0) / 32.0);
  }
  void epilogue(uint64_t, StepWork&) const override {}
};

}  // namespace

LoweredOp Lowering::microbenchmark(const Op& op) {
  const KernelLibParams& kl = gpu_.kernels;
  if (op.kind == OpKind::instruction_loop) {
    auto p = std::make_shared<InstructionLoopProgram>();
    p->instruction = op.instruction;
    p->count = op.count;
    p->warps = op.warps;
    p->macs_per_mma = static_cast<double>(op.macs_per_instruction);
    const bool mma = op.instruction == "hmma" || op.instruction == "imma";
    if (mma && gpu_.tensor_core.per_sm * gpu_.tensor_core.macs_per_clock.of(op.instruction == "hmma" ? Dtype::fp16 : Dtype::int8) <= 0)
      throw UserError(op.loc.str() + ": op '" + op.name + "': the tensor cores of this chip do not run " + op.instruction);
    if ((op.instruction.rfind("hfma", 0) == 0 && gpu_.sm.hfma_per_lane <= 0) || (op.instruction == "hdp4a" && gpu_.sm.dp4a_per_lane <= 0))
      throw UserError(op.loc.str() + ": op '" + op.name + "': the SMs of this chip have no " + op.instruction + " (sm." +
                      (op.instruction == "hdp4a" ? "dp4a_per_lane" : "hfma_per_lane") + " is 0)");
    p->stages = 1;
    const int cta_warps = static_cast<int>(std::min(p->warps, p->warps_per_cta));  // fewer warps: one CTA of them
    p->resources = CtaResources{32 * cta_warps, 32 * 32 * cta_warps, 0};
    std::ostringstream os;
    os << p->warps << " warps x " << p->count << " " << p->instruction << (mma ? " (" + std::to_string(op.macs_per_instruction) + " MACs each)" : "");
    p->description = os.str();
    return finish(p, mma);
  }
  if (op.kind == OpKind::pointer_chase) {
    auto p = std::make_shared<PointerChaseProgram>();
    p->elements = op.footprint / op.stride;
    p->stride = op.stride;
    p->loads = op.loads;
    p->base = alloc(static_cast<double>(op.footprint));
    p->stages = 1;  // each load depends on the one before
    p->resources = CtaResources{32, 32 * 32, 0};
    p->warm = op.warmup ? p->elements : 0;
    p->timed_step = p->warm;
    p->timed_accesses = static_cast<double>(p->loads);
    p->timed_bytes = p->timed_accesses * 8;
    std::ostringstream os;
    os << "one thread, " << p->warm << " pointers warmed, " << p->loads << " timed dependent loads";
    p->description = os.str();
    return finish(p, false);
  }
  auto p = std::make_shared<StridedReadProgram>();
  p->accesses = op.footprint / op.stride;
  p->access = op.access;
  p->stride = op.stride;
  p->passes = op.passes;
  // Each thread keeps `simt.stages` loads of up to 16 bytes in flight.
  const int64_t per_thread = std::max<int64_t>(1, static_cast<int64_t>(kl.simt_bytes_per_thread) / std::max<int64_t>(1, op.access));
  p->per_step = std::max<int64_t>(1, kl.simt_threads * per_thread);
  p->stages = kl.simt_stages;
  p->resources = CtaResources{kl.simt_threads, 32 * kl.simt_threads, 0};
  const int cps = ctas_per_sm(p->resources);
  if (cps < 1) throw UserError("kernels.simt.threads: a CTA of " + std::to_string(kl.simt_threads) + " threads does not fit on an SM");
  p->grid = std::min<uint64_t>(static_cast<uint64_t>(p->chunks()), static_cast<uint64_t>(gpu_.sm.count) * static_cast<uint64_t>(cps));
  p->base = alloc(static_cast<double>(op.footprint));
  if (p->passes > 1) {
    p->timed_step = p->chunks_of(0);  // CTA 0 starts its second pass
    p->timed_accesses = static_cast<double>(p->accesses * (p->passes - 1));
    p->timed_bytes = p->timed_accesses * static_cast<double>(op.access);
  }
  std::ostringstream os;
  os << "grid-stride, " << p->per_step << " accesses per CTA step, " << p->passes << " pass" << (p->passes > 1 ? "es" : "");
  p->description = os.str();
  return finish(p, false);
}

LoweredOp Lowering::delay(const Op& op) {
  auto p = std::make_shared<DelayProgram>();
  p->duration_s = op.duration_s;
  p->stages = 1;
  p->resources = CtaResources{32, 32 * 32, 0};
  p->description = std::string(op.kind == trace::OpKind::host ? "waiting for the host for " : "timed gap of ") +
                   units::format(op.duration_s, units::Dim::Time);
  return finish(p, false);
}

}  // namespace xpusim::lower
