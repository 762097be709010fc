// An op's or a run's metrics from its counters and their energy (report_detail.h).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/report/report_detail.h"

namespace xpusim::report::detail {
const char* classify(const Metrics& m) {
  struct Candidate { double v; const char* name; };
  const Candidate c[] = {{m.tensor_util, "compute (tensor cores)"},
                         {m.simt_util, "compute (SIMT)"},
                         {m.l2_busy, "L2 bandwidth"},
                         {m.hbm_busy, "HBM bandwidth"}};
  const Candidate* best = &c[0];
  for (const auto& x : c)
    if (x.v > best->v) best = &x;
  return best->v >= kSaturated ? best->name : "latency";
}

Metrics metrics(const OpCounters& c, double start, double end, double flops, double peak_tflops, double min_bytes,
                double resident_capacity, const config::GpuConfig& g, double devices) {
  Metrics m;
  m.start_s = start;
  m.end_s = end;
  m.time_s = end - start;
  m.cycles = m.time_s * g.sm.clock_hz;
  m.flops = flops;
  m.min_bytes = min_bytes;
  const double t = m.time_s > 0 ? m.time_s : 1e-30;
  m.tflops = flops / t / 1e12;
  m.peak_tflops = peak_tflops;
  m.fraction_of_peak = peak_tflops > 0 ? m.tflops / peak_tflops : 0;
  m.tensor_util = c.tensor_busy_s / (t * g.sm.count * devices);
  m.simt_util = c.simt_busy_s / (t * g.sm.count * devices);
  m.sm_util = resident_capacity > 0 ? c.cta_resident_s / (t * resident_capacity * devices) : 0;
  m.l2_read_bytes = c.l2_read_bytes;
  m.l2_write_bytes = c.l2_write_bytes;
  m.hbm_read_bytes = c.hbm_read_bytes;
  m.hbm_write_bytes = c.hbm_write_bytes;
  m.l2_bandwidth = (c.l2_read_bytes + c.l2_write_bytes) / t;
  m.hbm_bandwidth = (c.hbm_read_bytes + c.hbm_write_bytes) / t;
  m.l2_bandwidth_util = m.l2_bandwidth / (g.l2.bandwidth * devices);
  m.hbm_bandwidth_util = m.hbm_bandwidth / (g.hbm.peak_bandwidth() * devices);
  m.l2_busy = c.l2_busy_s / (t * g.l2.slices * devices);
  m.hbm_busy = c.hbm_busy_s / (t * g.hbm.channel_count() * devices);
  m.nvlink_bytes = c.nvlink_bytes;
  const double sectors = c.l2_read_hit_sectors + c.l2_read_miss_sectors;
  m.l2_hit_rate = sectors > 0 ? c.l2_read_hit_sectors / sectors : 0;
  const double l1_sectors = c.l1_hit_sectors + c.l1_miss_sectors;
  m.l1_hit_rate = l1_sectors > 0 ? c.l1_hit_sectors / l1_sectors : 0;
  m.hbm_row_hit_rate = c.hbm_bursts > 0 ? c.hbm_row_hit_bursts / c.hbm_bursts : 0;
  m.hbm_activates = c.hbm_activates;
  m.l1_read_bytes = c.l1_read_bytes;
  m.smem_bytes = c.smem_read_bytes + c.smem_write_bytes;
  m.noc_bytes = c.noc_bytes;
  m.d2d_bytes = c.d2d_bytes;
  m.bound = classify(m);
  return m;
}

void set_energy(Metrics& m, const energy::Breakdown& b, const std::string& kind, double instructions) {
  m.has_energy = true;
  m.dynamic_j = b.dynamic_j();
  m.static_j = b.static_j;
  m.energy_j = b.total_j();
  m.power_w = m.time_s > 0 ? m.energy_j / m.time_s : 0;
  for (int i = 0; i < 5; ++i) m.class_j[i] = b.class_j[i];
  for (const auto& a : energy::actions(kind))
    if (const auto it = b.action_j.find(a.name); it != b.action_j.end()) m.action_j.emplace_back(a.name, it->second);
  m.instructions = instructions;
  m.ops = m.flops;
}

double core_rail_j(const Metrics& m) {
  double s = 0;
  for (const auto& [name, j] : m.action_j)
    if (energy::on_core_rail(name)) s += j;
  return s;
}

void add_energy(Metrics& m, const OpCounters& c, double refreshes, const energy::Table& t, const energy::Scaling& s,
                double static_w, double uncore_w) {
  set_energy(m, energy::price(c, refreshes, m.time_s, t, s, static_w), "gpu",
             c.lane_instr_simt + c.lane_instr_mem + c.instr_mma);
  m.uncore_j = uncore_w * m.time_s;
  m.energy_j += m.uncore_j;
  m.power_w = m.time_s > 0 ? m.energy_j / m.time_s : 0;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pct(double v) { return fmt("%.1f%%", 100 * v); }

}  // namespace xpusim::report::detail
