// What an op is and costs, apart from reading it: kind names, FLOPs, compulsory bytes, storage
// bits per weight, and the shape as reports print it. (Loading and checking traces is trace.cpp.)
#include <string>
#include <vector>

#include "sim/config/units.h"
#include "sim/trace/trace.h"

namespace xpusim::trace {

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::gemm: return "gemm";
    case OpKind::elementwise: return "elementwise";
    case OpKind::reduction: return "reduction";
    case OpKind::softmax: return "softmax";
    case OpKind::layernorm: return "layernorm";
    case OpKind::attention: return "attention";
    case OpKind::conv2d: return "conv2d";
    case OpKind::pointer_chase: return "pointer_chase";
    case OpKind::strided_read: return "strided_read";
    case OpKind::instruction_loop: return "instruction_loop";
    case OpKind::delay: return "delay";
    case OpKind::host: return "host";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::all_gather: return "all_gather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::all_to_all: return "all_to_all";
    case OpKind::broadcast: return "broadcast";
    case OpKind::send_recv: return "send_recv";
  }
  return "?";
}

RowwiseCost rowwise_cost(OpKind k) {
  switch (k) {
    case OpKind::reduction: return {1, 0};  // one add per element
    case OpKind::softmax: return {4, 1};    // running max, subtract, running sum, scale; one exp
    case OpKind::layernorm: return {7, 0};  // sum, sum of squares (FMA), subtract mean, multiply by
                                            // rstd, gamma, beta (FMA), convert; rsqrt once per row
    default: return {0, 0};
  }
}

int64_t Op::elements() const {
  int64_t p = 1;
  for (int64_t d : shape) p *= d;
  return p;
}
int64_t Op::cols() const { return shape.empty() ? 0 : shape.back(); }
int64_t Op::rows() const { return cols() ? elements() / cols() : 0; }

double Op::attention_pairs() const {
  const double sq = static_cast<double>(seq_q), skv = static_cast<double>(seq_kv);
  if (!causal) return sq * skv;
  // Query i (0-based) sits at position skv - sq + i and sees keys 0..that position.
  const double offset = skv - sq;
  return sq * (offset + 1) + sq * (sq - 1) / 2;
}

double Op::flops() const {
  const double b = static_cast<double>(batch);
  switch (kind) {
    case OpKind::gemm: return 2.0 * b * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    case OpKind::elementwise: return flops_per_element * static_cast<double>(elements());
    case OpKind::reduction:
    case OpKind::softmax:
    case OpKind::layernorm: {
      const RowwiseCost c = rowwise_cost(kind);
      // A layernorm of several inputs first adds them (a fused residual add).
      const double adds = kind == OpKind::layernorm ? static_cast<double>(inputs - 1) : 0;
      return (c.fp32 + c.sfu + adds) * static_cast<double>(elements());
    }
    case OpKind::attention:
      return 4.0 * b * static_cast<double>(heads) * attention_pairs() * static_cast<double>(head_dim);
    case OpKind::conv2d:
      return 2.0 * b * static_cast<double>(conv_p() * conv_q()) * static_cast<double>(k) *
             static_cast<double>(c * r * s);
    case OpKind::pointer_chase:
    case OpKind::strided_read:
    case OpKind::delay:
    case OpKind::host: return 0;
    case OpKind::all_reduce:
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_to_all:
    case OpKind::broadcast:
    case OpKind::send_recv: return 0;  // communication (an all-reduce's additions are not counted)
    case OpKind::instruction_loop: {
      const double n = static_cast<double>(count) * static_cast<double>(warps);
      if (instruction == "hmma" || instruction == "imma") return 2.0 * n * static_cast<double>(macs_per_instruction);
      // A DP4A is 4 MACs, an HFMA2 two FMAs.
      return n * 32.0 * (instruction == "hdp4a" ? 8.0 : instruction == "hfma2" ? 4.0 : 2.0);
    }
  }
  return 0;
}

double Op::min_bytes() const {
  const double ei = dtype_bytes(dtype), eo = dtype_bytes(out_dtype);
  const double b = static_cast<double>(batch);
  switch (kind) {
    case OpKind::gemm: {
      const double weights = static_cast<double>(k) * static_cast<double>(n) * weight_bits() / 8.0;
      return b * (static_cast<double>(m) * static_cast<double>(k) * ei + weights +
                  (accumulate ? 2.0 : 1.0) * static_cast<double>(m) * static_cast<double>(n) * eo);
    }
    case OpKind::elementwise: return static_cast<double>(elements()) * (inputs * ei + outputs * eo);
    case OpKind::reduction: return static_cast<double>(elements()) * ei + static_cast<double>(rows()) * eo;
    case OpKind::softmax: return static_cast<double>(elements()) * (ei + eo);
    // Several inputs: their sum is written back beside the normalised output (fused residual add).
    case OpKind::layernorm: return static_cast<double>(elements()) * (inputs * ei + (inputs > 1 ? 2 : 1) * eo);
    case OpKind::attention:
      return b * static_cast<double>(head_dim) *
             (static_cast<double>(seq_q * heads) * (ei + eo) + 2.0 * static_cast<double>(seq_kv * kv_heads) * ei);
    case OpKind::conv2d:
      return b * static_cast<double>(h * w * c) * ei + static_cast<double>(k * r * s * c) * weight_bits() / 8.0 +
             b * static_cast<double>(conv_p() * conv_q() * k) * eo;
    case OpKind::pointer_chase: return static_cast<double>(footprint / stride) * 8.0;  // one pointer per element
    case OpKind::strided_read: return static_cast<double>(footprint / stride) * static_cast<double>(access);
    case OpKind::instruction_loop:
    case OpKind::delay:
    case OpKind::host: return 0;
    case OpKind::all_reduce:
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_to_all:
    case OpKind::broadcast:
    case OpKind::send_recv: return 0;  // what crosses the links is in the report
  }
  return 0;
}

double Op::weight_bits() const {
  double bits = dtype_bits(b_dtype());
  if (weight_only() && weight_group > 0) bits += static_cast<double>(weight_scale_bits) / static_cast<double>(weight_group);
  // 2:4 sparse weights keep half the elements plus 2 bits of position metadata per kept one.
  return sparse_2_4 ? bits * 0.5 + 1.0 : bits;
}

std::string Op::devices_text() const {
  if (all_devices) return "all";
  bool range = devices.size() > 2;
  for (size_t i = 1; i < devices.size(); ++i) range = range && devices[i] == devices[i - 1] + 1;
  if (range) return std::to_string(devices.front()) + "-" + std::to_string(devices.back());
  std::string s;
  for (int d : devices) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

std::string Op::shape_text() const {
  auto j = [](std::initializer_list<int64_t> v) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : "x") + std::to_string(x);
    return s;
  };
  switch (kind) {
    case OpKind::gemm: return (batch > 1 ? std::to_string(batch) + "*" : "") + j({m, n, k});
    case OpKind::attention:
      return "b" + std::to_string(batch) + " h" + std::to_string(heads) + "/" + std::to_string(kv_heads) + " q" +
             std::to_string(seq_q) + " kv" + std::to_string(seq_kv) + " d" + std::to_string(head_dim) + (causal ? " causal" : "");
    case OpKind::pointer_chase:
      return "footprint " + std::to_string(footprint) + " stride " + std::to_string(stride) + " loads " + std::to_string(loads) + (warmup ? "" : " cold");
 case OpKind::instruction_loop:
      return std::to_string(warps) + " warps x " + std::to_string(count) + " " + instruction;
    case OpKind::delay:
    case OpKind::host: return units::format(duration_s, units::Dim::Time);
    case OpKind::all_reduce:
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_to_all:
    case OpKind::broadcast:
    case OpKind::send_recv: return units::format(bytes, units::Dim::Size) + " on " + devices_text();
    case OpKind::strided_read:
      return "footprint " + std::to_string(footprint) + " access " + std::to_string(access) + " stride " +
             std::to_string(stride) + (passes > 1 ? " passes " + std::to_string(passes) : "");
    case OpKind::conv2d:
      return "n" + std::to_string(batch) + " " + j({h, w, c}) + " k" + std::to_string(k) + " " + j({r, s}) + "/" +
             std::to_string(stride);
    default: {
      std::string s;
      for (int64_t x : shape) s += (s.empty() ? "" : "x") + std::to_string(x);
      return s;
    }
  }
}

}  // namespace xpusim::trace
