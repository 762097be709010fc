// report.json and ops.csv.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "models/energy/energy_table.h"
#include "sim/io/csv.h"
#include "sim/report/fidelity.h"
#include "sim/report/json_writer.h"
#include "sim/report/power.h"
#include "sim/report/report_detail.h"
#include "sim/version.h"

namespace xpusim::report {
using namespace detail;

namespace detail {

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
    w.field("algorithm", m.algorithm).field("protocol", m.protocol).field("bytes", m.coll_bytes);
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

}  // namespace detail

namespace {

void write_scope(JsonWriter& w, const Scope& s) {
  w.field("gpus", static_cast<long long>(s.gpus)).field("flops", s.flops).field("tflops", s.tflops);
  w.field("hbm_bytes", s.hbm_bytes).field("hbm_bandwidth", s.hbm_bandwidth).field("hbm_peak_bandwidth", s.hbm_peak);
  w.field("hbm_fraction_of_peak", s.hbm_peak > 0 ? s.hbm_bandwidth / s.hbm_peak : 0);
  w.field("nvlink_bytes", s.nvlink_bytes);
  if (s.has_energy) w.field("energy_j", s.energy_j).field("average_power_w", s.power_w);
}

}  // namespace

std::string to_json(const Report& rep) {
  JsonWriter w;
  w.begin_object();
  w.field("xpusim_report", 1LL).field("version", rep.version);
  auto overrides = [&w](const std::vector<std::string>& given) {  // "set": the overrides, when any
    if (given.empty()) return;
    w.key("set").begin_array();
    for (const std::string& s : given) w.value(s);
    w.end_array();
  };
  w.key("config").begin_object().field("name", rep.config_name).field("file", rep.config_file);
  overrides(rep.config_overrides);
  w.end_object();
  w.key("trace").begin_object().field("name", rep.trace_name).field("file", rep.trace_file)
      .field("ops", static_cast<long long>(rep.ops.size()));
  overrides(rep.trace_overrides);
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
  if (rep.gpus > 1) {
    // The whole system's, and its share of one GPU.
    w.field("scope", "system").field("gpus", static_cast<long long>(rep.gpus)).field("nvlink_bytes", rep.total.nvlink_bytes);
    w.key("per_gpu").begin_object();
    write_scope(w, rep.per_gpu);
    w.end_object();
  }
  write_metrics(w, rep.total);
  w.end_object();
  const Report::TimeBreakdown& b = rep.time_breakdown;
  w.key("time_breakdown").begin_object().field("kernels_s", b.kernels_s).field("collectives_s", b.collectives_s)
      .field("host_s", b.host_s).field("idle_s", b.idle_s).end_object();
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
      // The metrics below are one of its GPUs'; "system" sums them over all of them.
      w.field("scope", "per GPU");
      w.key("system").begin_object();
      write_scope(w, o.system);
      w.end_object();
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
  auto q = [](const std::string& s) { return io::csv_quoted(s); };
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

}  // namespace xpusim::report
