#include "sim/report/report_detail.h"

#include <algorithm>
#include <cmath>

#include "models/energy/energy_table.h"
#include "sim/report/power.h"

namespace xpusim::report::detail {
namespace {

void add_accel_energy(Metrics& m, const energy::AccelCounters& c, const energy::Table& t, double voltage) {
  set_energy(m, energy::price(c, m.time_s, t, voltage), "accelerator", 0);  // a dataflow array issues no instructions
}

}  // namespace

// The accelerator's report: the same schema, with the MAC array in the tensor-core columns and
// its DRAM in the HBM ones.
Report build_accelerator(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r) {
  const AcceleratorParams& a = cfg.chip.accel.accelerator;
  Report rep = header(cfg, t);
  rep.accelerator = true;
  rep.clock_hz = a.clock_hz;
  rep.hbm_peak = rep.hbm_sustained = cfg.chip.accel.dram.bandwidth;
  rep.tensor_peak_tflops = {{"int4", 2.0 * a.macs_per_cycle(4) * a.clock_hz / 1e12},
                            {"int8", 2.0 * a.macs_per_cycle(8) * a.clock_hz / 1e12}};
  rep.sfu_peak_tops = a.sfu_lanes * a.clock_hz / 1e12;
  const energy::Table* table = cfg.energy_table.get();
  if (table) {
    rep.energy_table = table_as_named(cfg);
    rep.energy_node = table->node;
    rep.voltage = a.voltage_v;
    rep.nominal_voltage = table->nominal_voltage;
    rep.max_clock_at_voltage = accelerator_max_clock(a, a.voltage_v);
    rep.static_power = table->static_power_w * energy::static_scale(*table, a.voltage_v);
    rep.idle_power = table->idle_power_w;
  }
  // Power management (power.mode capped): the governor's clock over each op's span; its energy
  // priced at the voltage its core energy ran at on average.
  const PowerParams& pw = cfg.chip.accel.power;
  const bool capped = pw.capped() && table && !r.power_tracks.empty();
  if (capped) rep.power = power_info(pw, {0}, r.power_tracks);
  auto voltage_of = [&](double core_scale) { return capped ? table->nominal_voltage * std::sqrt(core_scale) : a.voltage_v; };
  energy::AccelCounters total_c;
  double total_flops = 0, total_bytes = 0, total_busy = 0, total_dram_busy = 0, total_core = 0, total_scaled = 0;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const trace::Op& op = t.ops[i];
    const accel::AccelOp& x = r.accel_ops[i];
    const SpanPower span = capped ? over_span(r.power_tracks.front(), x.start_s, x.end_s, table->nominal_voltage) : SpanPower{};
    const double clk = capped && span.clock_hz > 0 ? span.clock_hz : a.clock_hz;
    OpReport o = describe_op(op);
    o.lowering = x.description;
    o.mappings = x.gemms;
    o.devices = {0};
    o.ctas = static_cast<long long>(x.tiles);
    Metrics& m = o.m;
    m.start_s = x.start_s;
    m.end_s = x.end_s;
    m.time_s = x.end_s - x.start_s;
    m.cycles = m.time_s * a.clock_hz;
    m.flops = 2 * x.macs > 0 ? 2 * x.macs : op.flops();
    const double tt = m.time_s > 0 ? m.time_s : 1e-30;
    m.tflops = m.flops / tt / 1e12;
    m.peak_tflops = x.macs > 0 ? 2.0 * a.macs_per_cycle(x.bits) * a.clock_hz / 1e12 : 0;
    if (x.macs > 0) o.roof = "int" + std::to_string(x.bits) + " MAC array";
    m.fraction_of_peak = m.peak_tflops > 0 ? m.tflops / m.peak_tflops : 0;
    m.min_bytes = op.min_bytes();
    m.tensor_util = x.mac_cycles / clk / tt;
    m.simt_util = x.sfu_cycles / clk / tt;
    m.hbm_read_bytes = x.counters.dram_bits / 8;
    m.hbm_bandwidth = m.hbm_read_bytes / tt;
    m.hbm_bandwidth_util = m.hbm_bandwidth / cfg.chip.accel.dram.bandwidth;
    m.hbm_busy = x.dram_busy_s / tt;
    {
      const double busiest = std::max({m.tensor_util, m.simt_util, m.hbm_busy});
      if (busiest < 0.5) m.bound = "latency";
      else if (busiest == m.tensor_util) m.bound = "compute (MAC array)";
      else if (busiest == m.simt_util) m.bound = "compute (special-function units)";
      else m.bound = "DRAM bandwidth";
    }
    if (capped) set_power(m, span);
    if (table) add_accel_energy(m, x.counters, *table, voltage_of(x.core_scale));
    const double core_j = core_rail_j(m);
    total_core += core_j;
    total_scaled += core_j * x.core_scale;
    rep.ops.push_back(o);
    total_c += x.counters;
    total_flops += m.flops;
    total_bytes += m.hbm_read_bytes;
    total_busy += x.mac_cycles / clk;
    total_dram_busy += x.dram_busy_s;
  }
  Metrics& m = rep.total;
  m.end_s = m.time_s = r.end_s;
  m.cycles = m.time_s * a.clock_hz;
  m.flops = total_flops;
  const double tt = m.time_s > 0 ? m.time_s : 1e-30;
  m.tflops = total_flops / tt / 1e12;
  m.hbm_read_bytes = total_bytes;
  m.hbm_bandwidth = total_bytes / tt;
  m.hbm_bandwidth_util = m.hbm_bandwidth / cfg.chip.accel.dram.bandwidth;
  m.tensor_util = total_busy / tt;
  m.hbm_busy = total_dram_busy / tt;
  m.bound = m.tensor_util >= m.hbm_busy ? "compute (MAC array)" : "DRAM bandwidth";
  if (capped) set_power(m, over_span(r.power_tracks.front(), 0, r.end_s, table->nominal_voltage));
  if (table) {
    add_accel_energy(m, total_c, *table, voltage_of(total_core > 0 ? total_scaled / total_core : 1));
    if (t.tokens > 0) m.joules_per_token = m.energy_j / t.tokens;
  }
  rep.time_breakdown = time_breakdown(t, rep.ops, r.end_s);
  return rep;
}

}  // namespace xpusim::report::detail
