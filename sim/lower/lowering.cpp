#include "sim/lower/lowering.h"

// The lowering's core: dispatch by op family (gemm.cpp, attention.cpp, streaming.cpp, rowwise.cpp,
// microbenchmarks.cpp), address allocation and occupancy.
#include <cmath>
#include <sstream>

#include "sim/config/units.h"
#include "sim/lower/lower_util.h"

namespace xpusim::lower {

using trace::Op;
using trace::OpKind;

Lowering::Lowering(const config::GpuConfig& gpu) : gpu_(gpu) {}

uint64_t Lowering::alloc(double bytes) {
  const uint64_t at = next_addr_;
  const uint64_t size = static_cast<uint64_t>(std::ceil(bytes));
  next_addr_ += div_up(size + 1, 4096) * 4096;  // page-aligned, never adjacent
  return at;
}

int Lowering::ctas_per_sm(const CtaResources& r) const { return occupancy(gpu_.sm, r); }

LoweredOp Lowering::finish(std::shared_ptr<KernelProgram> p, bool tensor, std::shared_ptr<KernelProgram> tail) {
  LoweredOp out;
  out.ctas_per_sm = ctas_per_sm(p->resources);
  out.waves = out.ctas_per_sm > 0 ? static_cast<double>(p->num_ctas()) / (gpu_.sm.count * out.ctas_per_sm) : 0;
  out.uses_tensor_cores = tensor;
  std::ostringstream os;
  os << p->description << ", ";
  // A persistent kernel's CTAs are its tiles, walked by as many CTAs as the SMs hold.
  if (p->hand_over)
    os << "persistent: " << gpu_.sm.count * out.ctas_per_sm << " CTAs, " << out.ctas_per_sm << " CTA/SM, over "
       << p->num_ctas() << " tiles (";
  else
    os << p->num_ctas() << " CTAs, " << out.ctas_per_sm << " CTA/SM, ";
  os << std::fixed;
  os.precision(2);
  os << out.waves << (p->hand_over ? " each)" : " waves");
  if (tail) {
    tail->description += ", " + std::to_string(tail->num_ctas()) + " CTAs";
    os << "; then " << tail->description;
    out.tail = std::move(tail);
  }
  p->description = os.str();
  out.program = std::move(p);
  return out;
}

LoweredOp Lowering::lower(const Op& op) {
  if (op.min_bytes() > gpu_.hbm.capacity_bytes)
    throw UserError(op.loc.str() + ": op '" + op.name + "' needs " + units::format(op.min_bytes(), units::Dim::Size) +
                    " of tensors but the chip has " + units::format(gpu_.hbm.capacity_bytes, units::Dim::Size) + " of HBM");
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::conv2d: return gemm(op);
    case OpKind::attention: return attention(op);
    case OpKind::pointer_chase:
    case OpKind::strided_read:
    case OpKind::instruction_loop: return microbenchmark(op);
    case OpKind::delay:
    case OpKind::host: return delay(op);
    case OpKind::layernorm: return row_norm_applies(op) ? row_norm(op) : streaming(op);
    case OpKind::softmax: return softmax_warp_applies(op) ? softmax_warp(op) : streaming(op);
    default: return streaming(op);
  }
}

}  // namespace xpusim::lower
