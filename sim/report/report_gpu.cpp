#include "sim/report/report_detail.h"

#include "sim/engine/simulate.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "models/energy/energy_table.h"
#include "models/interconnect/collective.h"
#include "sim/report/fidelity.h"
#include "sim/report/power.h"

namespace xpusim::report::detail {
namespace {

// The other side of each figure on a system of several GPUs: each op's figures over all its GPUs
// (its per-GPU figures times them; the HBM bytes summed over them as simulated) and the total's
// share of one GPU.
void set_scopes(Report& rep, const config::GpuConfig& g, const engine::SimResult& r) {
  const double hbm_peak = g.hbm.peak_bandwidth();
  for (size_t i = 0; i < rep.ops.size(); ++i) {
    OpReport& o = rep.ops[i];
    const Metrics& m = o.m;
    Scope& sys = o.system;
    sys.gpus = std::max<int>(1, static_cast<int>(o.devices.size()));
    const double n = sys.gpus;
    sys.flops = m.flops * n;
    sys.tflops = m.tflops * n;
    sys.hbm_bytes = r.ops[i].collective ? 0 : r.ops[i].all_devices.hbm_read_bytes + r.ops[i].all_devices.hbm_write_bytes;
    sys.hbm_bandwidth = m.time_s > 0 ? sys.hbm_bytes / m.time_s : 0;
    sys.hbm_peak = hbm_peak * n;
    sys.nvlink_bytes = m.nvlink_bytes * n;
    sys.has_energy = m.has_energy;
    sys.energy_j = m.energy_j * n;
    sys.power_w = m.power_w * n;
  }
  const Metrics& t = rep.total;
  Scope& one = rep.per_gpu;
  one.gpus = 1;
  const double n = std::max(1, rep.gpus);
  one.flops = t.flops / n;
  one.tflops = t.tflops / n;
  one.hbm_bytes = (t.hbm_read_bytes + t.hbm_write_bytes) / n;
  one.hbm_bandwidth = t.hbm_bandwidth / n;
  one.hbm_peak = hbm_peak;
  one.nvlink_bytes = t.nvlink_bytes / n;
  one.has_energy = t.has_energy;
  one.energy_j = t.energy_j / n;
  one.power_w = t.power_w / n;
}

}  // namespace

Report build_gpu(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r) {
  const config::GpuConfig& g = cfg.chip.gpu;
  Report rep = header(cfg, t);
  rep.sms = g.sm.count;
  rep.clock_hz = g.sm.clock_hz;
  rep.hbm_peak = g.hbm.peak_bandwidth();
  rep.hbm_sustained = g.hbm.refresh_bound_bandwidth();
  rep.l2_peak = g.l2.bandwidth;
  rep.fp32_peak_tflops = 2.0 * g.sm.count * g.sm.fp32_lanes * g.sm.clock_hz / 1e12;
  rep.sfu_peak_tops = static_cast<double>(g.sm.count) * g.sm.sfu_lanes * g.sm.clock_hz / 1e12;
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
      note << (r.simulated_gpus.size() == 1 ? "GPU " + std::to_string(r.simulated_gpus.front()) + " simulated in detail, the others mirror it"
                                            : std::to_string(r.simulated_gpus.size()) + " GPUs simulated in detail, one per set of GPUs "
                                                                                     "that run the same ops, the others mirror them")
           << " (system.detail: representative); collectives over every link";
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
      m.protocol = collective_proto_name(c.proto);
      m.coll_bytes = op.bytes;
      const int n = static_cast<int>(res.devices.size());
      m.bus_factor = bus_factor(res.job.kind, n);
      m.algbw = m.time_s > 0 ? op.bytes / m.time_s : 0;
      m.busbw = m.algbw * m.bus_factor;
      bool cross = false;
      int first_domain = 0;  // the participants in the first one's domain: their NICs leave it
      m.link_payload_bw = std::numeric_limits<double>::infinity();
      for (int d : res.devices) {
        cross = cross || topo.domain_of(d) != topo.domain_of(res.devices.front());
        first_domain += topo.domain_of(d) == topo.domain_of(res.devices.front());
        m.link_payload_bw = std::min(m.link_payload_bw, topo.nvlink_rate(d));
      }
      if (cross) m.link_payload_bw = std::min(m.link_payload_bw, topo.nic_rate() * first_domain);
      // Per GPU, as a compute op's figures are: each participant's share of the traffic.
      m.nvlink_bytes = c.traffic.nvlink_bytes / n;
      m.nic_bytes = c.traffic.nic_bytes / n;
      m.transfers = c.transfers;
      m.steps = c.steps;
      m.slices = c.slices;
      m.channels = c.channels;
      // The busiest direction of any participant's ports or NIC. (In-switch reduction moves
      // (1 + 1/n) x size per port rather than the 2(n-1)/n the bus factor assumes, so its busbw
      // may exceed the links' rate while its ports are not full.)
      const double tt = m.time_s > 0 ? m.time_s : 1e-30;
      auto busiest = [&](const PerIndex& v, bool nvlink) {
        double u = 0;
        v.for_each([&](int d, double bytes) {
          const double rate = nvlink ? topo.nvlink_rate(d) : topo.nic_rate();
          if (rate > 0) u = std::max(u, bytes / tt / rate);
        });
        return u;
      };
      m.nvlink_util = std::max(busiest(c.traffic.nvlink_tx, true), busiest(c.traffic.nvlink_rx, true));
      m.nic_util = std::max(busiest(c.traffic.nic_tx, false), busiest(c.traffic.nic_rx, false));
      // A fat tree's leaf uplinks, where traffic climbed to the spine.
      double spine_util = 0;
      if (topo.fat_tree())
        for (const PerIndex* v : {&c.traffic.leaf_up, &c.traffic.leaf_down})
          v->for_each([&](int, double b) { spine_util = std::max(spine_util, b / tt / topo.uplink_rate()); });
      m.bound = std::max({m.nvlink_util, m.nic_util, spine_util}) < kSaturated ? "latency"
                : spine_util > std::max(m.nic_util, m.nvlink_util)            ? "network (spine) bandwidth"
                : m.nic_util >= m.nvlink_util                                 ? "network (NIC) bandwidth"
                                                                              : "NVLink bandwidth";
      // Mirrored copies (`mirrors`) move what this one moved on their own GPUs.
      const double copies = 1.0 + op.mirrors;
      op_counters[i].nvlink_bytes = c.traffic.nvlink_bytes / n * copies;
      total.nvlink_bytes += c.traffic.nvlink_bytes * copies;
      rep.ops.push_back(o);
      continue;
    }
    o.lowering = res.lowered.program->description;
    o.ctas = static_cast<long long>(res.lowered.program->num_ctas());
    o.waves = res.lowered.waves;
    o.ctas_per_sm = res.lowered.ctas_per_sm;
    const bool simt_gemm = !res.lowered.uses_tensor_cores && (op.kind == trace::OpKind::gemm || op.kind == trace::OpKind::conv2d);
    const double peak = res.lowered.uses_tensor_cores ? tensor_peak(op.dtype, op.sparse_2_4)
                        : simt_gemm                   ? lower::simt_gemm_peak_tflops(g, res.lowered.lane_dtype)
                                                      : rep.fp32_peak_tflops;
    o.roof = res.lowered.uses_tensor_cores ? o.dtype + (op.sparse_2_4 ? " 2:4 sparse" : "") + " tensor cores"
             : simt_gemm                   ? "SIMT " + std::string(dtype_name(res.lowered.lane_dtype))
                                           : "SIMT fp32";
    const double capacity = static_cast<double>(g.sm.count) * std::max(1, res.lowered.ctas_per_sm);
    // A kernel's time runs from its launch to its completion: its grid's start and end costs
    // (kernels.kernel_start, kernel_end) with its CTAs' work between, as a profiler times it.
    const bool costs = !op.is_timed_gap();
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
    rep.energy_table = table_as_named(cfg);
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
      // One GPU's, compute op or collective (its share of the links' traffic and its leakage).
      energy::Scaling s = fixed;
      if (rep.power.capped) s = {r.ops[i].core_scale, spans[i].leakage_scale, 1};
      s.switching = t.ops[i].switching;
      add_energy(m, op_counters[i], r.ops[i].collective ? 0 : per_gpu, table, s, static_w, uncore_w);
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
  set_scopes(rep, g, r);
  rep.time_breakdown = time_breakdown(t, rep.ops, r.end_s);
  for (const Stat& s : r.stats.all()) {
    rep.stat_values.emplace_back(s.name, s.value);
    rep.stat_units.emplace_back(s.name, s.unit);
  }
  set_fidelity(rep, t, r);
  return rep;
}

}  // namespace xpusim::report::detail
