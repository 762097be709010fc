#include "sim/lower/accel_lowering.h"

#include <cmath>
#include <stdexcept>

#include "models/accelerator/mapping.h"

namespace xpusim::lower {
namespace {

using trace::Op;
using trace::OpKind;

int bits_of(const Op& op) {
  if (op.dtype == Dtype::int4) return 4;
  if (op.dtype == Dtype::int8) return 8;
  throw UserError(op.loc.str() + ": op '" + op.name + "': the accelerator computes in int4 or int8 (VS-Quant), not " +
                  dtype_name(op.dtype));
}

accel::AccelOp gemm_op(const Op& op, const accel::GemmShape& g, const config::LoadedConfig& cfg, const energy::Table* table,
                       const std::string& part) {
  const auto& a = cfg.chip.accel.accelerator;
  accel::Mapping m;
  try {
    m = accel::map_gemm(g, a, cfg.chip.accel.dram, table);
  } catch (const std::invalid_argument& e) {
    throw UserError(op.loc.str() + ": op '" + op.name + "': " + e.what());
  }
  accel::AccelOp o;
  o.description = m.describe() + ", " + std::to_string(m.tiles) + " tiles";
  o.tiles = static_cast<double>(m.tiles);
  o.tile_dram_bytes = (m.dram_read_bytes + m.dram_write_bytes) / o.tiles;
  o.tile_cycles = m.cycles / o.tiles;
  o.mac_cycles = m.cycles;
  o.macs = m.macs;
  o.bits = g.bits;
  o.counters = m.counters;
  o.gemms.push_back({part, g, m});
  return o;
}

// Rows on the special-function units: `ops` operations per element, each element read and
// written once at `bits`.
accel::AccelOp sfu_op(double elements, double ops_per_element, double bytes, const config::LoadedConfig& cfg,
                      const std::string& what) {
  const auto& a = cfg.chip.accel.accelerator;
  accel::AccelOp o;
  o.description = what + " on " + std::to_string(a.sfu_lanes) + " special-function lanes";
  o.tiles = 1;
  o.tile_dram_bytes = bytes;
  o.tile_cycles = std::ceil(elements * ops_per_element / a.sfu_lanes);
  o.sfu_cycles = o.tile_cycles;
  o.counters.sfu_ops = elements * ops_per_element;
  o.counters.gbuf_bits = 8 * 2 * bytes;
  o.counters.dram_bits = 8 * bytes;
  o.counters.pe_cycles = 0;
  return o;
}

void append(accel::AccelOp& into, const accel::AccelOp& part) {
  // Parts of one trace op run back to back: merge their work into one op of equal tiles.
  const double t0 = into.tiles * into.tile_cycles + part.tiles * part.tile_cycles;
  const double b0 = into.tiles * into.tile_dram_bytes + part.tiles * part.tile_dram_bytes;
  into.tiles += part.tiles;
  into.tile_cycles = t0 / into.tiles;
  into.tile_dram_bytes = b0 / into.tiles;
  into.macs += part.macs;
  into.mac_cycles += part.mac_cycles;
  into.sfu_cycles += part.sfu_cycles;
  into.counters += part.counters;
  into.gemms.insert(into.gemms.end(), part.gemms.begin(), part.gemms.end());
  into.description += "; " + part.description;
}

}  // namespace

std::vector<accel::AccelOp> lower_accelerator(const config::LoadedConfig& cfg, const trace::Trace& t) {
  const energy::Table* table = cfg.energy_table.get();
  std::vector<accel::AccelOp> out;
  for (const Op& op : t.ops) {
    if (op.min_bytes() > cfg.chip.accel.dram.capacity_bytes)
      throw UserError(op.loc.str() + ": op '" + op.name + "' needs more memory than the accelerator's DRAM");
    if (!op.is_collective() && (op.all_devices || op.devices != std::vector<int>{0}))
      throw UserError(op.loc.str() + ": op '" + op.name + "' is placed on device " + op.devices_text() +
                      "; the accelerator model is one chip (device 0)");
    const double eb = dtype_bytes(op.dtype);
    switch (op.kind) {
      case OpKind::gemm:
      case OpKind::conv2d: {
        if (op.weight_only())
          throw UserError(op.loc.str() + ": op '" + op.name + "': weight_dtype " + op.weight_format +
                          ": the accelerator stores weights and activations in one VS-Quant format (give it as dtype)");
        if (op.accumulate)
          throw UserError(op.loc.str() + ": op '" + op.name + "': accumulate (C = A x B + C) is not modelled on the accelerator");
        accel::GemmShape g;
        g.bits = bits_of(op);
        g.input_density = op.input_density;
        if (op.kind == OpKind::gemm) {
          g.batch = op.batch;
          g.m = op.m;
          g.n = op.n;
          g.k = op.k;
        } else {
          g.m = op.batch * op.conv_p() * op.conv_q();
          g.n = op.k;
          g.k = op.c * op.r * op.s;
        }
        out.push_back(gemm_op(op, g, cfg, table, op.kind == OpKind::gemm ? "gemm" : "implicit GEMM"));
        break;
      }
      case OpKind::attention: {
        const int bits = bits_of(op);
        accel::GemmShape qk{op.batch * op.heads, op.seq_q, op.seq_kv, op.head_dim, bits, 1.0};
        accel::GemmShape pv{op.batch * op.heads, op.seq_q, op.head_dim, op.seq_kv, bits, 1.0};
        accel::AccelOp o = gemm_op(op, qk, cfg, table, "QK^T");
        const double scores = static_cast<double>(op.batch * op.heads) * op.seq_q * op.seq_kv;
        append(o, sfu_op(scores, trace::rowwise_cost(OpKind::softmax).fp32 + trace::rowwise_cost(OpKind::softmax).sfu, 0, cfg, "softmax"));
        append(o, gemm_op(op, pv, cfg, table, "PV"));
        o.description = "QK^T, softmax, PV: " + o.description;
        out.push_back(o);
        break;
      }
      case OpKind::elementwise:
      case OpKind::reduction:
      case OpKind::softmax:
      case OpKind::layernorm: {
        const double per = op.kind == OpKind::elementwise ? std::max(1.0, op.flops_per_element)
                                                          : trace::rowwise_cost(op.kind).fp32 + trace::rowwise_cost(op.kind).sfu;
        (void)eb;
        out.push_back(sfu_op(static_cast<double>(op.elements()), per, op.min_bytes(), cfg, trace::op_kind_name(op.kind)));
        break;
      }
      case OpKind::delay:
      case OpKind::host: {
        accel::AccelOp o;
        o.description = "timed gap";
        o.tile_cycles = std::ceil(op.duration_s * cfg.chip.accel.accelerator.clock_hz);
        out.push_back(o);
        break;
      }
      default:
        if (op.is_collective())
          throw UserError(op.loc.str() + ": op '" + op.name + "': kind " + trace::op_kind_name(op.kind) +
                          " is a collective between GPUs; the accelerator model is one chip without links");
        throw UserError(op.loc.str() + ": op '" + op.name + "': kind " + trace::op_kind_name(op.kind) +
                        " is a GPU microbenchmark; the accelerator does not run it");
    }
  }
  return out;
}

}  // namespace xpusim::lower
