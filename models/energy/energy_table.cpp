#include "models/energy/energy_table.h"

#include <cassert>
#include <cmath>

namespace xpusim::energy {

const char* class_name(Class c) {
  switch (c) {
    case Class::math: return "math";
    case Class::overhead: return "instruction_overhead";
    case Class::onchip_memory: return "onchip_memory";
    case Class::offchip_memory: return "offchip_memory";
    case Class::interconnect: return "interconnect";
  }
  return "?";
}

const std::vector<ActionSpec>& actions(const std::string& kind) {
  static const std::vector<ActionSpec> accel = {
      {"mac.int4", false, Class::math, "one 4-bit multiply-accumulate in a vector MAC unit"},
      {"mac.int8", false, Class::math, "one 8-bit multiply-accumulate (two 4-bit lanes)"},
      {"mac.gated", false, Class::math, "a MAC skipped because its input is zero (clock-gated residue)"},
      {"vsq.scale", false, Class::math, "one per-vector scale-factor multiply (VS-Quant)"},
      {"sfu.op", false, Class::math, "one special-function operation (exp, rsqrt, GELU, requantisation)"},
      {"collector.update", false, Class::onchip_memory, "one partial sum added in the accumulation collector"},
      {"wbuf.read", true, Class::onchip_memory, "weight-buffer bits read"},
      {"ibuf.read", true, Class::onchip_memory, "input-buffer bits read"},
      {"abuf.access", true, Class::onchip_memory, "accumulation-buffer bits read or written"},
      {"gbuf.access", true, Class::onchip_memory, "global-buffer bits read or written (includes the PE network)"},
      {"dram.access", true, Class::offchip_memory, "DRAM bits read or written, interface included"},
      {"control.pe_cycle", false, Class::overhead, "clocking and sequencing of one PE for one cycle"},
  };
  if (kind == "accelerator") return accel;
  static const std::vector<ActionSpec> a = {
      {"mac.tensor.tf32", false, Class::math, "one dense TF32 multiply-accumulate on a tensor core"},
      {"mac.tensor.fp16", false, Class::math, "one FP16 tensor-core MAC (fp32 accumulate)"},
      {"mac.tensor.bf16", false, Class::math, "one BF16 tensor-core MAC"},
      {"mac.tensor.fp8", false, Class::math, "one FP8 tensor-core MAC"},
      {"mac.tensor.int8", false, Class::math, "one INT8 tensor-core MAC"},
      {"mac.tensor.int4", false, Class::math, "one INT4 tensor-core MAC"},
      {"mac.tensor.fp4", false, Class::math, "one FP4 tensor-core MAC"},
      {"op.fp32", false, Class::math, "one FP32 lane operation (FFMA counts once)"},
      {"op.hfma", false, Class::math, "one FP16 fused multiply-add on a SIMT lane"},
      {"op.dp4a", false, Class::math, "one 4-way INT8 dot product with accumulate on a SIMT lane"},
      {"op.sfu", false, Class::math, "one special-function lane operation (exp, rsqrt)"},
      {"instruction.simt", false, Class::overhead, "fetch, decode, schedule and operand collection of one SIMT instruction, per active lane"},
      {"instruction.mem", false, Class::overhead, "the same for one load/store instruction, per lane"},
      {"instruction.mma", false, Class::overhead, "the same for one matrix instruction (a warp or warpgroup MMA)"},
      {"sm.active_cycle", false, Class::overhead, "clocking and control of one SM for one cycle in which it holds work", true},
      {"rf.access", true, Class::onchip_memory, "register-file bits read or written beyond operand collection"},
      {"smem.access", true, Class::onchip_memory, "shared-memory bits read or written"},
      {"l1.access", true, Class::onchip_memory, "L1 data-cache bits read"},
      {"l2.access", true, Class::onchip_memory, "L2 bits read or written (array access)"},
      {"noc.transfer", true, Class::interconnect, "bits carried between SMs and L2 slices"},
      {"d2d.transfer", true, Class::interconnect, "bits across the die-to-die link"},
      {"nvlink.transfer", true, Class::interconnect, "bits sent over NVLink"},
      {"dram.access", true, Class::offchip_memory, "DRAM bits read or written, I/O and PHY included"},
      {"dram.activate", false, Class::offchip_memory, "one row activate with its precharge"},
      {"dram.refresh", false, Class::offchip_memory, "one all-bank refresh of one pseudo-channel"},
  };
  return a;
}

bool on_core_rail(const std::string& action) {
  return action.rfind("dram.", 0) != 0 && action != "nvlink.transfer";
}

bool data_dependent(const std::string& action) {
  for (const char* p : {"mac.", "op.", "rf.", "smem.", "l1.", "l2.", "noc.", "d2d."})
    if (action.rfind(p, 0) == 0) return true;
  return false;
}

double dynamic_scale(const Table& t, double voltage) {
  const double r = voltage / t.nominal_voltage;
  return r * r;
}
double static_scale(const Table& t, double voltage) { return dynamic_scale(t, voltage); }

double max_clock(const Table& t, double nominal_clock, double voltage) {
  auto g = [&](double v) { return v <= t.threshold_voltage ? 0.0 : std::pow(v - t.threshold_voltage, t.alpha) / v; };
  const double gn = g(t.nominal_voltage);
  return gn > 0 ? nominal_clock * g(voltage) / gn : 0;
}

double Breakdown::core_rail_j() const {
  double s = 0;
  for (const auto& [name, j] : action_j)
    if (on_core_rail(name)) s += j;
  return s;
}

double Breakdown::dynamic_j() const {
  double s = 0;
  for (double v : class_j) s += v;
  return s;
}

Breakdown price(const OpCounters& c, double refreshes, double time_s, const Table& t, double voltage,
                double static_power_w) {
  return price(c, refreshes, time_s, t, Scaling{dynamic_scale(t, voltage), static_scale(t, voltage), 1}, static_power_w);
}

Breakdown price(const OpCounters& c, double refreshes, double time_s, const Table& t, const Scaling& s,
                double static_power_w) {
  auto count = [&](const std::string& name) -> double {
    if (name == "mac.tensor.tf32") return c.tensor_macs[static_cast<size_t>(Dtype::tf32)] + c.tensor_macs[static_cast<size_t>(Dtype::fp32)];
    if (name == "mac.tensor.fp16") return c.tensor_macs[static_cast<size_t>(Dtype::fp16)];
    if (name == "mac.tensor.bf16") return c.tensor_macs[static_cast<size_t>(Dtype::bf16)];
    if (name == "mac.tensor.fp8")
      return c.tensor_macs[static_cast<size_t>(Dtype::fp8_e4m3)] + c.tensor_macs[static_cast<size_t>(Dtype::fp8_e5m2)];
    if (name == "mac.tensor.int8") return c.tensor_macs[static_cast<size_t>(Dtype::int8)];
    if (name == "mac.tensor.int4") return c.tensor_macs[static_cast<size_t>(Dtype::int4)];
    if (name == "mac.tensor.fp4") return c.tensor_macs[static_cast<size_t>(Dtype::fp4)];
    if (name == "op.fp32") return c.fp32_ops;
    if (name == "op.hfma") return c.hfma_ops;
    if (name == "op.dp4a") return c.dp4a_ops;
    if (name == "op.sfu") return c.sfu_ops;
    if (name == "instruction.simt") return c.lane_instr_simt;
    if (name == "instruction.mem") return c.lane_instr_mem;
    if (name == "instruction.mma") return c.instr_mma;
    if (name == "sm.active_cycle") return c.sm_active_cycles;
    if (name == "rf.access") return 8 * c.rf_bytes;
    if (name == "smem.access") return 8 * (c.smem_read_bytes + c.smem_write_bytes);
    if (name == "l1.access") return 8 * c.l1_read_bytes;
    if (name == "l2.access") return 8 * (c.l2_read_bytes + c.l2_write_bytes);
    if (name == "noc.transfer") return 8 * c.noc_bytes;
    if (name == "d2d.transfer") return 8 * c.d2d_bytes;
    if (name == "nvlink.transfer") return 8 * c.nvlink_bytes;
    if (name == "dram.access") return 8 * (c.hbm_read_bytes + c.hbm_write_bytes);
    if (name == "dram.activate") return c.hbm_activates;
    if (name == "dram.refresh") return refreshes;
    assert(false && "an action without a counter");
    return 0;
  };
  Breakdown b;
  for (const ActionSpec& a : actions()) {
    const auto it = t.joules.find(a.name);
    if (it == t.joules.end() && a.optional) continue;
    assert(it != t.joules.end() && "tables are checked for every action when loaded");
    double j = count(a.name) * it->second;
    if (on_core_rail(a.name)) j *= s.core;
    if (data_dependent(a.name)) j *= 1 - t.data_dependent_share + t.data_dependent_share * s.switching;
    b.action_j[a.name] = j;
    b.class_j[static_cast<int>(a.cls)] += j;
  }
  b.static_j = static_power_w * s.leakage * time_s;
  return b;
}

RailWeights rail_weights(const Table& t, double switching) {
  constexpr size_t n = sizeof(OpCounters) / sizeof(double);
  RailWeights w;
  w.core.assign(n, 0);
  w.offcore.assign(n, 0);
  // Each field's weight is the price of one unit of it alone: price() stays the one place that
  // knows which count feeds which action.
  for (size_t i = 0; i < n; ++i) {
    OpCounters unit;
    reinterpret_cast<double*>(&unit)[i] = 1;
    const Breakdown b = price(unit, 0, 0, t, Scaling{1, 0, switching}, 0);
    w.core[i] = b.core_rail_j();
    w.offcore[i] = b.dynamic_j() - w.core[i];
  }
  return w;
}

namespace {
double dot(const std::vector<double>& w, const OpCounters& c) {
  const double* v = reinterpret_cast<const double*>(&c);
  double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += w[i] * v[i];
  return s;
}
}  // namespace

double RailWeights::core_j(const OpCounters& c) const { return dot(core, c); }
double RailWeights::offcore_j(const OpCounters& c) const { return dot(offcore, c); }

AccelCounters& AccelCounters::operator+=(const AccelCounters& o) {
  mac_int4 += o.mac_int4;
  mac_int8 += o.mac_int8;
  mac_gated += o.mac_gated;
  vsq_scale += o.vsq_scale;
  collector_updates += o.collector_updates;
  wbuf_bits += o.wbuf_bits;
  ibuf_bits += o.ibuf_bits;
  abuf_bits += o.abuf_bits;
  gbuf_bits += o.gbuf_bits;
  dram_bits += o.dram_bits;
  sfu_ops += o.sfu_ops;
  pe_cycles += o.pe_cycles;
  return *this;
}

Breakdown price(const AccelCounters& c, double time_s, const Table& t, double voltage) {
  const double k = dynamic_scale(t, voltage);
  const std::map<std::string, double> count = {
      {"mac.int4", c.mac_int4},       {"mac.int8", c.mac_int8},         {"mac.gated", c.mac_gated},
      {"vsq.scale", c.vsq_scale},     {"sfu.op", c.sfu_ops},            {"collector.update", c.collector_updates},
      {"wbuf.read", c.wbuf_bits},     {"ibuf.read", c.ibuf_bits},       {"abuf.access", c.abuf_bits},
      {"gbuf.access", c.gbuf_bits},   {"dram.access", c.dram_bits},     {"control.pe_cycle", c.pe_cycles},
  };
  Breakdown b;
  for (const ActionSpec& a : actions("accelerator")) {
    // The DRAM interface has its own supply: it does not scale with the array's voltage.
    const double j = count.at(a.name) * t.joules.at(a.name) * (on_core_rail(a.name) ? k : 1.0);
    b.action_j[a.name] = j;
    b.class_j[static_cast<int>(a.cls)] += j;
  }
  b.static_j = t.static_power_w * static_scale(t, voltage) * time_s;
  return b;
}

}  // namespace xpusim::energy
