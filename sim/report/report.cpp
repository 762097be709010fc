#include "sim/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "models/energy/energy_table.h"
#include "models/interconnect/collective.h"
#include "sim/config/units.h"
#include "sim/report/fidelity.h"
#include "sim/report/json_writer.h"
#include "sim/report/power.h"
#include "sim/version.h"

namespace xpusim::report {
namespace {

// Below this share of time on its busiest unit, an op is waiting rather than saturating
// anything: launch, latency, tail or occupancy bound.
constexpr double kSaturated = 0.5;

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

// `devices`: GPUs the counters cover; capacities (SMs, slices, channels) are multiplied by it.
Metrics metrics(const OpCounters& c, double start, double end, double flops, double peak_tflops, double min_bytes,
                double resident_capacity, const config::GpuConfig& g, double devices = 1) {
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

void write_metrics(JsonWriter& w, const Metrics& m) {
  w.field("start_s", m.start_s).field("end_s", m.end_s).field("time_s", m.time_s).field("cycles", m.cycles);
  w.field("flops", m.flops).field("tflops", m.tflops).field("peak_tflops", m.peak_tflops);
  w.field("fraction_of_peak", m.fraction_of_peak).field("min_bytes", m.min_bytes);
  w.key("utilisation").begin_object();
  w.field("tensor_cores", m.tensor_util).field("simt", m.simt_util).field("sm_slots", m.sm_util);
  w.field("l2_bandwidth", m.l2_bandwidth_util).field("hbm_bandwidth", m.hbm_bandwidth_util);
  w.field("l2_busy", m.l2_busy).field("hbm_busy", m.hbm_busy);
  w.end_object();
  w.key("memory").begin_object();
  w.field("l1_read_bytes", m.l1_read_bytes).field("l1_hit_rate", m.l1_hit_rate).field("smem_bytes", m.smem_bytes);
  w.field("noc_bytes", m.noc_bytes).field("d2d_bytes", m.d2d_bytes);
  w.field("l2_read_bytes", m.l2_read_bytes).field("l2_write_bytes", m.l2_write_bytes);
  w.field("l2_hit_rate", m.l2_hit_rate);
  w.field("hbm_read_bytes", m.hbm_read_bytes).field("hbm_write_bytes", m.hbm_write_bytes);
  w.field("hbm_row_hit_rate", m.hbm_row_hit_rate).field("hbm_activates", m.hbm_activates);
  w.field("l2_bandwidth", m.l2_bandwidth).field("hbm_bandwidth", m.hbm_bandwidth);
  w.end_object();
  if (m.access_latency_s >= 0) {
    w.key("microbenchmark").begin_object();
    w.field("access_latency_s", m.access_latency_s).field("access_latency_cycles", m.access_latency_s * m.cycles / (m.time_s > 0 ? m.time_s : 1));
    w.field("timed_bandwidth", m.timed_bandwidth);
    w.end_object();
  }
  if (m.collective) {
    w.key("collective").begin_object();
    w.field("algorithm", m.algorithm).field("bytes", m.coll_bytes);
    w.field("algbw", m.algbw).field("busbw", m.busbw).field("bus_factor", m.bus_factor);
    w.field("link_payload_bandwidth", m.link_payload_bw);
    w.field("nvlink_port_utilisation", m.nvlink_util).field("nic_utilisation", m.nic_util);
    w.field("nvlink_bytes", m.nvlink_bytes).field("nic_bytes", m.nic_bytes).field("transfers", m.transfers);
    w.field("dependent_hops", static_cast<long long>(m.steps)).field("slices_per_chunk", static_cast<long long>(m.slices));
    w.field("channels", static_cast<long long>(m.channels));
    w.end_object();
  }
  w.field("bound", m.bound);
  write_power_metrics(w, m);
  if (m.has_energy) {
    w.key("energy").begin_object();
    w.field("total_j", m.energy_j).field("dynamic_j", m.dynamic_j).field("static_j", m.static_j);
    w.field("average_power_w", m.power_w);
    w.field("tops_per_w", m.energy_j > 0 ? m.ops / m.energy_j / 1e12 : 0);
    const double on_chip = m.energy_j - m.class_j[static_cast<int>(energy::Class::offchip_memory)];
    w.field("tops_per_w_on_chip", on_chip > 0 ? m.ops / on_chip / 1e12 : 0);
    w.field("pj_per_op", m.ops > 0 ? m.energy_j / m.ops * 1e12 : 0);
    w.field("instructions", m.instructions);
    w.field("pj_per_instruction", m.instructions > 0 ? m.dynamic_j / m.instructions * 1e12 : 0);
    const double math = m.class_j[static_cast<int>(energy::Class::math)];
    w.field("overhead_per_math", math > 0 ? m.class_j[static_cast<int>(energy::Class::overhead)] / math : 0);
    if (m.joules_per_token > 0) w.field("joules_per_token", m.joules_per_token);
    w.key("classes").begin_object();
    for (int c = 0; c < 5; ++c) w.field(energy::class_name(static_cast<energy::Class>(c)), m.class_j[c]);
    w.field("static", m.static_j);
    if (m.uncore_j > 0) w.field("uncore", m.uncore_j);
    w.end_object();
    w.key("actions").begin_object();
    for (const auto& [name, j] : m.action_j) w.field(name, j);
    w.end_object();
    w.end_object();
  }
}

// The energy fields of `m` from a priced breakdown, actions in the order of `kind`'s list.
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

// `uncore_w`: power.idle_floor (times GPUs), drawn whatever runs.
// The dynamic energy of m's actions on the core supply (energy::on_core_rail): what the
// governor's voltage scales. DRAM and NVLink are off it.
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

}  // namespace

namespace {

OpReport describe_op(const trace::Op& op) {
  OpReport o;
  o.name = op.name;
  o.kind = trace::op_kind_name(op.kind);
  o.dtype = dtype_name(op.dtype);
  o.out_dtype = dtype_name(op.out_dtype);
  o.weight_dtype = op.weight_format;
  o.shape = op.shape_text();
  o.stream = op.stream;
  return o;
}

void add_accel_energy(Metrics& m, const energy::AccelCounters& c, const energy::Table& t, double voltage) {
  set_energy(m, energy::price(c, m.time_s, t, voltage), "accelerator", 0);  // a dataflow array issues no instructions
}

// What every report starts with: versions and the inputs' names.
Report header(const config::LoadedConfig& cfg, const trace::Trace& t) {
  Report rep;
  rep.version = kVersion;
  rep.config_name = cfg.chip.name;
  rep.config_file = cfg.file;
  rep.trace_name = t.name;
  rep.tokens = t.tokens;
  rep.trace_file = t.file;
  return rep;
}

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
  const energy::Table* table = cfg.energy_table.get();
  if (table) {
    rep.energy_table = std::filesystem::proximate(table->file).string();
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
  return rep;
}

}  // namespace

Report build(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r) {
  if (cfg.chip.kind == "accelerator") return build_accelerator(cfg, t, r);
  const config::GpuConfig& g = cfg.chip.gpu;
  Report rep = header(cfg, t);
  rep.sms = g.sm.count;
  rep.clock_hz = g.sm.clock_hz;
  rep.hbm_peak = g.hbm.peak_bandwidth();
  rep.hbm_sustained = g.hbm.refresh_bound_bandwidth();
  rep.l2_peak = g.l2.bandwidth;
  rep.fp32_peak_tflops = 2.0 * g.sm.count * g.sm.fp32_lanes * g.sm.clock_hz / 1e12;
  auto tensor_peak = [&](Dtype d, bool sparse) {
    const double rate = g.tensor_core.per_sm * g.tensor_core.macs_per_clock.of(d) * (sparse ? 2 : 1);
    return 2.0 * g.sm.count * rate * g.sm.clock_hz / 1e12;
  };
  for (Dtype d : {Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8_e4m3, Dtype::int8, Dtype::int4, Dtype::fp4})
    rep.tensor_peak_tflops.emplace_back(d == Dtype::fp8_e4m3 ? "fp8" : dtype_name(d), tensor_peak(d, false));

  rep.gpus = r.gpus;
  rep.simulated_gpus = r.simulated_gpus;
  rep.representative = r.representative;
  if (r.gpus > 1) {
    std::ostringstream note;
    note << r.gpus << " GPUs (" << g.system.domains << " NVLink domain" << (g.system.domains > 1 ? "s" : "") << " of "
         << g.system.gpus_per_domain << "); ";
    if (r.representative)
      note << "GPU " << (r.simulated_gpus.empty() ? 0 : r.simulated_gpus.front())
           << " simulated in detail, the others mirror it (system.detail: representative); collectives over every link";
    else
      note << r.simulated_gpus.size() << " GPU" << (r.simulated_gpus.size() == 1 ? "" : "s")
           << " with compute simulated in detail; collectives over every link";
    rep.system_note = note.str();
  }
  const Topology topo = engine::topology(g);

  OpCounters total;
  double total_flops = 0, total_min_bytes = 0, total_resident_capacity = 0;
  std::vector<OpCounters> op_counters(t.ops.size());  // what each op's energy is priced on
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const trace::Op& op = t.ops[i];
    const engine::OpResult& res = r.ops[i];
    OpReport o = describe_op(op);
    o.devices = res.devices;
    if (res.collective) {
      const CollectiveRun& c = res.coll;
      o.lowering = c.description;
      Metrics& m = o.m;
      m.start_s = res.start_s;
      m.end_s = res.end_s;
      m.time_s = res.end_s - res.start_s;
      m.cycles = m.time_s * g.sm.clock_hz;
      m.collective = true;
      m.algorithm = collective_algo_name(c.algo);
      m.coll_bytes = op.bytes;
      const int n = static_cast<int>(res.devices.size());
      m.bus_factor = bus_factor(res.job.kind, n);
      m.algbw = m.time_s > 0 ? op.bytes / m.time_s : 0;
      m.busbw = m.algbw * m.bus_factor;
      bool cross = false;
      m.link_payload_bw = std::numeric_limits<double>::infinity();
      for (int d : res.devices) {
        cross = cross || topo.domain_of(d) != topo.domain_of(res.devices.front());
        m.link_payload_bw = std::min(m.link_payload_bw, topo.nvlink_rate(d));
      }
      if (cross) m.link_payload_bw = std::min(m.link_payload_bw, topo.nic_rate() * c.channels);
      m.nvlink_bytes = c.traffic.nvlink_bytes;
      m.nic_bytes = c.traffic.nic_bytes;
      m.transfers = c.transfers;
      m.steps = c.steps;
      m.slices = c.slices;
      m.channels = c.channels;
      // The busiest direction of any participant's ports or NIC. (In-switch reduction moves
      // (1 + 1/n) x size per port rather than the 2(n-1)/n the bus factor assumes, so its busbw
      // may exceed the links' rate while its ports are not full.)
      const double tt = m.time_s > 0 ? m.time_s : 1e-30;
      auto busiest = [&](const std::vector<double>& v, bool nvlink) {
        double u = 0;
        for (size_t d = 0; d < v.size(); ++d) {
          const double rate = nvlink ? topo.nvlink_rate(static_cast<int>(d)) : topo.nic_rate();
          if (rate > 0) u = std::max(u, v[d] / tt / rate);
        }
        return u;
      };
      m.nvlink_util = std::max(busiest(c.traffic.nvlink_tx, true), busiest(c.traffic.nvlink_rx, true));
      m.nic_util = std::max(busiest(c.traffic.nic_tx, false), busiest(c.traffic.nic_rx, false));
      m.bound = std::max(m.nvlink_util, m.nic_util) < kSaturated ? "latency"
                : m.nic_util >= m.nvlink_util                    ? "network (NIC) bandwidth"
                                                                 : "NVLink bandwidth";
      op_counters[i].nvlink_bytes = c.traffic.nvlink_bytes;
      total.nvlink_bytes += c.traffic.nvlink_bytes;
      rep.ops.push_back(o);
      continue;
    }
    o.lowering = res.lowered.program->description;
    o.ctas = static_cast<long long>(res.lowered.program->num_ctas());
    o.waves = res.lowered.waves;
    o.ctas_per_sm = res.lowered.ctas_per_sm;
    const double peak = res.lowered.uses_tensor_cores ? tensor_peak(op.dtype, op.sparse_2_4) : rep.fp32_peak_tflops;
    const double capacity = static_cast<double>(g.sm.count) * std::max(1, res.lowered.ctas_per_sm);
    // A kernel's time runs from its launch to its completion: its grid's start and end costs
    // (kernels.kernel_start, kernel_end) with its CTAs' work between, as a profiler times it.
    const bool costs = op.kind != trace::OpKind::delay;
    const double k_start = res.run.submit_s - (costs ? g.kernels.kernel_start_s : 0);
    const double k_end = res.run.end_s + (costs ? g.kernels.kernel_end_s : 0);
    o.m = metrics(res.run.counters, k_start, k_end, op.flops(), peak, op.min_bytes(), capacity, g);
    const KernelProgram& prog = *res.lowered.program;
    if (prog.timed_step >= 0 && res.run.timed_start_s >= 0 && prog.timed_accesses > 0) {
      const double timed = res.run.end_s - res.run.timed_start_s;
      o.m.access_latency_s = timed / prog.timed_accesses;
      o.m.timed_bandwidth = timed > 0 ? prog.timed_bytes / timed : 0;
    }
    rep.ops.push_back(o);
    op_counters[i] = res.run.counters;
    const double copies = static_cast<double>(res.devices.size());
    total += res.all_devices;
    total_flops += op.flops() * copies;
    total_min_bytes += op.min_bytes() * copies;
    total_resident_capacity = std::max(total_resident_capacity, capacity);
  }
  // Whole-run utilisation of SM slots is not meaningful across kernels of different occupancy;
  // the total reports it against the largest. Capacities are the whole system's.
  rep.total = metrics(total, 0, r.end_s, total_flops, 0, total_min_bytes, total_resident_capacity, g, r.gpus);

  // Power management: each op over its span on its first GPU; the total on the first simulated GPU.
  std::vector<SpanPower> spans(t.ops.size());
  SpanPower total_span;
  if (g.power.capped() && cfg.energy_table && !r.power_tracks.empty()) {
    const double vn = cfg.energy_table->nominal_voltage;
    rep.power = power_info(g.power, r.simulated_gpus, r.power_tracks);
    for (size_t i = 0; i < t.ops.size(); ++i) {
      if (r.ops[i].collective || r.ops[i].devices.empty()) continue;
      const auto it = std::find(r.simulated_gpus.begin(), r.simulated_gpus.end(), r.ops[i].devices.front());
      const size_t k = it == r.simulated_gpus.end() ? 0 : static_cast<size_t>(it - r.simulated_gpus.begin());
      spans[i] = over_span(r.power_tracks[k], rep.ops[i].m.start_s, rep.ops[i].m.end_s, vn);
      set_power(rep.ops[i].m, spans[i]);
    }
    total_span = over_span(r.power_tracks.front(), 0, r.end_s, vn);
    set_power(rep.total, total_span);
  }
  if (cfg.energy_table) {
    const energy::Table& table = *cfg.energy_table;
    rep.energy_table = std::filesystem::proximate(table.file).string();
    rep.energy_node = table.node;
    rep.nominal_voltage = table.nominal_voltage;
    rep.voltage = g.energy.voltage_v > 0 ? g.energy.voltage_v : table.nominal_voltage;
    rep.max_clock_at_voltage = energy::max_clock(table, g.sm.clock_hz, rep.voltage);
    rep.static_power = table.static_power_w * g.noc.dies * energy::static_scale(table, rep.voltage);
    rep.idle_power = table.idle_power_w * g.noc.dies;
    // DRAM refresh of the simulated GPUs; GPUs not simulated refresh as much.
    double refreshes = 0;
    for (const Stat& st : r.stats.all())
      if (st.name.size() > 10 && st.name.rfind(".refreshes") == st.name.size() - 10) refreshes += st.value;
    if (!r.simulated_gpus.empty()) refreshes *= static_cast<double>(r.gpus) / static_cast<double>(r.simulated_gpus.size());
    const double static_w = table.static_power_w * g.noc.dies;
    const double uncore_w = g.power.idle_floor_w;
    // At a fixed clock the configured voltage prices everything; under the governor each op's
    // core-rail energy is priced at the voltages it ran (and its leakage at their mean).
    const energy::Scaling fixed{energy::dynamic_scale(table, rep.voltage), energy::static_scale(table, rep.voltage), 1};
    double weight = 0, core_sum = 0, switching_sum = 0;
    // Refresh belongs to no kernel: each op gets the share of its own duration (per GPU).
    for (size_t i = 0; i < rep.ops.size(); ++i) {
      Metrics& m = rep.ops[i].m;
      const double per_gpu = r.end_s > 0 ? refreshes / r.gpus * m.time_s / r.end_s : 0;
      // A collective's energy is its links' and its participants' leakage; a compute op's is one GPU's.
      const double gpus_here = r.ops[i].collective ? static_cast<double>(r.ops[i].devices.size()) : 1.0;
      energy::Scaling s = fixed;
      if (rep.power.capped) s = {r.ops[i].core_scale, spans[i].leakage_scale, 1};
      s.switching = t.ops[i].switching;
      add_energy(m, op_counters[i], r.ops[i].collective ? 0 : per_gpu, table, s, static_w * gpus_here, uncore_w * gpus_here);
      const double core_j = core_rail_j(m);  // the weights: what the voltage scaled
      weight += core_j;
      core_sum += core_j * s.core;
      switching_sum += core_j * s.switching;
    }
    // The whole run's counters at the dynamic-energy-weighted means of the ops' scalings.
    energy::Scaling s = fixed;
    if (rep.power.capped) s = {weight > 0 ? core_sum / weight : 1, total_span.leakage_scale, 1};
    if (weight > 0) s.switching = switching_sum / weight;
    add_energy(rep.total, total, refreshes, table, s, static_w * r.gpus, uncore_w * r.gpus);
    if (t.tokens > 0) rep.total.joules_per_token = rep.total.energy_j / t.tokens;
  }
  for (const Stat& s : r.stats.all()) {
    rep.stat_values.emplace_back(s.name, s.value);
    rep.stat_units.emplace_back(s.name, s.unit);
  }
  set_fidelity(rep, t, r);
  return rep;
}

std::string to_json(const Report& rep) {
  JsonWriter w;
  w.begin_object();
  w.field("xpusim_report", 1LL).field("version", rep.version);
  w.key("config").begin_object().field("name", rep.config_name).field("file", rep.config_file).end_object();
  w.key("trace").begin_object().field("name", rep.trace_name).field("file", rep.trace_file)
      .field("ops", static_cast<long long>(rep.ops.size()));
  if (rep.tokens > 0) w.field("tokens", rep.tokens);
  w.end_object();
  w.key("chip").begin_object();
  w.field("sms", static_cast<long long>(rep.sms)).field("sm_clock_hz", rep.clock_hz);
  w.field("hbm_peak_bandwidth", rep.hbm_peak).field("hbm_sustained_bandwidth", rep.hbm_sustained);
  w.field("l2_bandwidth", rep.l2_peak).field("fp32_peak_tflops", rep.fp32_peak_tflops);
  if (rep.power.capped) write_power_settings(w, rep.power);
  if (!rep.energy_table.empty()) {
    w.key("energy").begin_object();
    w.field("table", rep.energy_table).field("node", rep.energy_node);
    w.field("voltage", rep.voltage).field("nominal_voltage", rep.nominal_voltage);
    w.field("max_clock_at_voltage_hz", rep.max_clock_at_voltage);
    w.field("static_power_w", rep.static_power).field("idle_power_w", rep.idle_power);
    w.end_object();
  }
  w.key("tensor_peak_tflops").begin_object();
  for (const auto& [d, v] : rep.tensor_peak_tflops) w.field(d, v);
  w.end_object();
  w.end_object();
  if (rep.gpus > 1) {
    w.key("system").begin_object();
    w.field("gpus", static_cast<long long>(rep.gpus));
    w.field("detail", rep.representative ? "representative" : "full");
    w.key("simulated_gpus").begin_array();
    for (int d : rep.simulated_gpus) w.value(static_cast<long long>(d));
    w.end_array();
    w.field("note", rep.system_note);
    w.end_object();
  }
  if (!rep.accelerator) write_fidelity(w, rep.fidelity);
  w.key("total").begin_object();
  write_metrics(w, rep.total);
  w.end_object();
  w.key("ops").begin_array();
  for (const OpReport& o : rep.ops) {
    w.begin_object();
    w.field("name", o.name).field("kind", o.kind).field("dtype", o.dtype).field("out_dtype", o.out_dtype);
    if (!o.weight_dtype.empty()) w.field("weight_dtype", o.weight_dtype);
    w.field("shape", o.shape).field("stream", static_cast<long long>(o.stream));
    if (rep.gpus > 1) {
      w.key("devices").begin_array();
      for (int d : o.devices) w.value(static_cast<long long>(d));
      w.end_array();
    }
    w.key("lowering").begin_object().field("description", o.lowering).field("ctas", o.ctas)
        .field("ctas_per_sm", static_cast<long long>(o.ctas_per_sm)).field("waves", o.waves).end_object();
    write_op_fidelity(w, rep, o);
    if (!o.mappings.empty()) {
      w.key("mapping").begin_array();
      for (const auto& p : o.mappings) {
        const accel::Mapping& mp = p.mapping;
        w.begin_object().field("gemm", p.name).field("batch", static_cast<long long>(p.shape.batch));
        w.field("m", static_cast<long long>(p.shape.m)).field("n", static_cast<long long>(p.shape.n)).field("k", static_cast<long long>(p.shape.k));
        w.field("dataflow", mp.weight_stationary ? "weight-stationary" : "output-stationary");
        w.field("outer_loop", mp.n_outer ? "n" : "m");
        w.key("global_buffer_tile").begin_object().field("m", static_cast<long long>(mp.mg)).field("n", static_cast<long long>(mp.ng))
            .field("k", static_cast<long long>(mp.kg)).end_object();
        w.field("pe_output_columns", static_cast<long long>(mp.np)).field("input_rows_per_weight_load", static_cast<long long>(mp.mi));
        w.field("tiles", static_cast<long long>(mp.tiles)).field("cycles", mp.cycles);
        w.field("dram_read_bytes", mp.dram_read_bytes).field("dram_write_bytes", mp.dram_write_bytes);
        w.field("compulsory_dram_bytes", accel::compulsory_dram_bytes(p.shape));
        w.end_object();
      }
      w.end_array();
    }
    write_metrics(w, o.m);
    w.end_object();
  }
  w.end_array();
  w.key("stats").begin_object();
  for (size_t i = 0; i < rep.stat_values.size(); ++i) {
    w.key(rep.stat_values[i].first).begin_object().field("value", rep.stat_values[i].second)
        .field("unit", rep.stat_units[i].second).end_object();
  }
  w.end_object();
  w.end_object();
  return w.str();
}

std::string to_json(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r) {
  return to_json(build(cfg, t, r));
}

std::string to_csv(const Report& rep) {
  std::ostringstream os;
  os << "name,kind,dtype,shape,start_s,time_s,cycles,flops,tflops,fraction_of_peak,tensor_util,simt_util,"
        "sm_slot_util,l2_bandwidth_util,hbm_bandwidth_util,l2_hit_rate,hbm_read_bytes,hbm_write_bytes,ctas,waves,bound\n";
  auto q = [](const std::string& s) { return "\"" + s + "\""; };
  for (const OpReport& o : rep.ops) {
    const Metrics& m = o.m;
    os << q(o.name) << ',' << o.kind << ',' << o.dtype << ',' << q(o.shape) << ',' << JsonWriter::number(m.start_s) << ','
       << JsonWriter::number(m.time_s) << ',' << JsonWriter::number(m.cycles) << ',' << JsonWriter::number(m.flops) << ','
       << JsonWriter::number(m.tflops) << ',' << JsonWriter::number(m.fraction_of_peak) << ','
       << JsonWriter::number(m.tensor_util) << ',' << JsonWriter::number(m.simt_util) << ','
       << JsonWriter::number(m.sm_util) << ',' << JsonWriter::number(m.l2_bandwidth_util) << ','
       << JsonWriter::number(m.hbm_bandwidth_util) << ',' << JsonWriter::number(m.l2_hit_rate) << ','
       << JsonWriter::number(m.hbm_read_bytes) << ',' << JsonWriter::number(m.hbm_write_bytes) << ',' << o.ctas << ','
       << JsonWriter::number(o.waves) << ',' << q(m.bound) << '\n';
  }
  return os.str();
}

namespace {

std::vector<std::vector<std::string>> rows(const Report& rep, size_t max_ops) {
  std::vector<const OpReport*> order;
  for (const auto& o : rep.ops) order.push_back(&o);
  if (order.size() > max_ops) {
    std::stable_sort(order.begin(), order.end(), [](const OpReport* a, const OpReport* b) { return a->m.time_s > b->m.time_s; });
    order.resize(max_ops);
  }
  std::vector<std::vector<std::string>> out;
  if (rep.accelerator)
    out.push_back({"op", "kind", "dtype", "shape", "time", "TOPS", "of peak", "MAC util", "SFU util", "DRAM", "bound"});
  else
    out.push_back({"op", "kind", "dtype", "shape", "time", "TFLOP/s", "of peak", "TC util", "HBM", "L2 hit", "bound"});
  for (const OpReport* o : order) {
    const Metrics& m = o->m;
    if (m.collective) {
      // A collective has no FLOPs: its bus bandwidth takes the throughput column, its busiest
      // link's use the utilisation column.
      out.push_back({o->name, o->kind, m.algorithm, o->shape, units::format(m.time_s, units::Dim::Time),
                     "bus " + units::format(m.busbw, units::Dim::Bandwidth), "-",
                     "link " + pct(std::max(m.nvlink_util, m.nic_util)), "-", "-", m.bound});
      continue;
    }
    if (rep.accelerator)
      out.push_back({o->name, o->kind, o->dtype, o->shape, units::format(m.time_s, units::Dim::Time), fmt("%.3g", m.tflops),
                     pct(m.fraction_of_peak), pct(m.tensor_util), pct(m.simt_util),
                     units::format(m.hbm_bandwidth, units::Dim::Bandwidth), m.bound});
    else
      out.push_back({o->name, o->kind, o->weight_dtype.empty() ? o->dtype : o->dtype + "/w" + o->weight_dtype, o->shape,
                     units::format(m.time_s, units::Dim::Time), fmt("%.1f", m.tflops),
                     pct(m.fraction_of_peak), pct(m.tensor_util), units::format(m.hbm_bandwidth, units::Dim::Bandwidth),
                     pct(m.l2_hit_rate), m.bound});
  }
  return out;
}

std::string total_line(const Report& rep) {
  const Metrics& m = rep.total;
  std::ostringstream os;
  os << "total: " << units::format(m.time_s, units::Dim::Time) << " (" << fmt("%.0f", m.cycles) << " cycles), ";
  if (rep.accelerator)
    os << fmt("%.3g", m.tflops) << " TOPS, MAC array " << pct(m.tensor_util) << " busy, DRAM "
       << units::format(m.hbm_bandwidth, units::Dim::Bandwidth) << " (" << pct(m.hbm_bandwidth_util) << " of "
       << units::format(rep.hbm_peak, units::Dim::Bandwidth) << ")";
  else
    os << fmt("%.1f", m.tflops) << " TFLOP/s, tensor cores " << pct(m.tensor_util) << " busy, HBM "
       << units::format(m.hbm_bandwidth, units::Dim::Bandwidth) << " (" << pct(m.hbm_bandwidth_util) << " of "
       << units::format(rep.hbm_peak, units::Dim::Bandwidth) << " peak), L2 hit rate " << pct(m.l2_hit_rate);
  os << ", bound: " << m.bound;
  if (m.has_power)
    os << "; SM clock " << fmt("%.0f", m.clock_hz / 1e6) << " MHz on average (" << pct(m.throttled_share)
       << " of the time held below boost by the " << fmt("%.0f", rep.power.limit_w) << " W limit)";
  if (m.has_energy) {
    os << "; energy " << fmt("%.4g", m.energy_j) << " J (" << fmt(m.power_w >= 10 ? "%.0f" : "%.3g", m.power_w) << " W average, "
       << fmt("%.2f", m.energy_j > 0 ? m.ops / m.energy_j / 1e12 : 0) << " TOPS/W";
    const double on_chip = m.energy_j - m.class_j[static_cast<int>(energy::Class::offchip_memory)];
    if (rep.accelerator && on_chip > 0) os << ", " << fmt("%.1f", m.ops / on_chip / 1e12) << " on chip";
    os << ")";
  }
  return os.str();
}

}  // namespace

std::string terminal_table(const Report& rep, size_t max_ops) {
  const auto r = rows(rep, max_ops);
  std::vector<size_t> width(r[0].size(), 0);
  for (const auto& row : r)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::ostringstream os;
  os << rep.config_name << " running " << rep.trace_name << " (" << rep.ops.size() << " ops)\n";
  if (!rep.system_note.empty()) os << rep.system_note << "\n";
  if (!rep.accelerator) os << "Fidelity: " << rep.fidelity.note << "\n";
  for (const auto& row : r) {
    for (size_t i = 0; i < row.size(); ++i) {
      os << row[i];
      if (i + 1 < row.size()) os << std::string(width[i] - row[i].size() + 2, ' ');
    }
    os << '\n';
  }
  if (rep.ops.size() > max_ops) os << "(" << max_ops << " longest of " << rep.ops.size() << " ops shown)\n";
  os << total_line(rep) << '\n';
  return os.str();
}

std::string to_markdown(const Report& rep, double wall_s) {
  std::ostringstream os;
  os << "# xpusim report: " << rep.config_name << " running " << rep.trace_name << "\n\n";
  os << "Config `" << rep.config_file << "`, trace `" << rep.trace_file << "`, xpusim " << rep.version << ".\n\n";
  if (!rep.system_note.empty()) os << "System: " << rep.system_note << ".\n\n";
  if (!rep.accelerator) os << "Fidelity: " << rep.fidelity.note << ".\n\n";
  os << total_line(rep) << ".\n\n";
  const auto r = rows(rep, 200);
  for (size_t i = 0; i < r.size(); ++i) {
    os << "|";
    for (const auto& c : r[i]) os << ' ' << c << " |";
    os << '\n';
    if (i == 0) {
      os << "|";
      for (size_t j = 0; j < r[i].size(); ++j) os << "---|";
      os << '\n';
    }
  }
  os << "\nLowering:\n\n";
  for (const auto& o : rep.ops) os << "- `" << o.name << "`: " << o.lowering << "\n";
  os << "\nSimulated in " << fmt("%.2f", wall_s) << " s of wall time.\n";
  return os.str();
}

}  // namespace xpusim::report
