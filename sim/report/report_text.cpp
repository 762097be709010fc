// The terminal table, its total line, and summary.md.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "sim/config/units.h"
#include "sim/report/report_detail.h"

namespace xpusim::report {
using namespace detail;

namespace {

// An op's name with every repeat index as '*' (layer[*].ffn_up): the name its instances share.
std::string group_key(const std::string& name) {
  std::string k;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '[') {
      size_t j = i + 1;
      while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
      if (j > i + 1 && j < name.size() && name[j] == ']') {
        k += "[*]";
        i = j;
        continue;
      }
    }
    k += name[i];
  }
  return k;
}

// Ops that differ only in repeat indices as one row each, as Nsight sums a kernel's instances:
// "layer[*].ffn_up x32" with their summed time, rates over that time and the time-weighted means
// of the shares; the bound of the instance that took longest. An op of its own stays as it is.
std::vector<OpReport> grouped_ops(const Report& rep) {
  std::vector<OpReport> out;
  std::map<std::string, size_t> at;
  std::vector<size_t> count;
  std::vector<double> longest;
  for (const OpReport& o : rep.ops) {
    const std::string k = group_key(o.name);
    const auto [it, fresh] = at.emplace(k, out.size());
    if (fresh) {
      out.push_back(o);
      count.push_back(1);
      longest.push_back(o.m.time_s);
      continue;
    }
    OpReport& g = out[it->second];
    Metrics& m = g.m;
    const Metrics& x = o.m;
    const double t = m.time_s, u = x.time_s, sum = t + u;
    auto mean = [&](double a, double b) { return sum > 0 ? (a * t + b * u) / sum : a; };
    m.fraction_of_peak = mean(m.fraction_of_peak, x.fraction_of_peak);
    m.tensor_util = mean(m.tensor_util, x.tensor_util);
    m.simt_util = mean(m.simt_util, x.simt_util);
    m.l2_hit_rate = mean(m.l2_hit_rate, x.l2_hit_rate);
    m.hbm_bandwidth = mean(m.hbm_bandwidth, x.hbm_bandwidth);
    m.busbw = mean(m.busbw, x.busbw);
    m.nvlink_util = mean(m.nvlink_util, x.nvlink_util);
    m.nic_util = mean(m.nic_util, x.nic_util);
    m.flops += x.flops;
    m.time_s = sum;
    m.tflops = sum > 0 ? m.flops / sum / 1e12 : 0;
    if (g.shape != o.shape) g.shape = "various";
    if (g.dtype != o.dtype || g.weight_dtype != o.weight_dtype) g.dtype = "various", g.weight_dtype.clear();
    if (x.time_s > longest[it->second]) longest[it->second] = x.time_s, m.bound = x.bound;
    ++count[it->second];
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (count[i] > 1) out[i].name = group_key(out[i].name) + " x" + std::to_string(count[i]);
  return out;
}

// The table's rows: every one of `ops` (the report's, or grouped_ops'), or the `max_ops` longest
// where there are more.
std::vector<std::vector<std::string>> rows(const Report& rep, const std::vector<OpReport>& ops, size_t max_ops) {
  std::vector<const OpReport*> order;
  for (const auto& o : ops) order.push_back(&o);
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
      out.push_back({o->name, o->kind, m.algorithm + "/" + m.protocol, o->shape, units::format(m.time_s, units::Dim::Time),
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

// A system of several GPUs: the total is the whole system's, and the line after it one GPU's
// share; the ops' rows are per GPU.
std::string per_gpu_line(const Report& rep) {
  const Scope& s = rep.per_gpu;
  std::ostringstream os;
  os << "per GPU (1 of " << rep.gpus << "): " << fmt("%.1f", s.tflops) << " TFLOP/s, HBM "
     << units::format(s.hbm_bandwidth, units::Dim::Bandwidth) << " ("
     << pct(s.hbm_peak > 0 ? s.hbm_bandwidth / s.hbm_peak : 0) << " of " << units::format(s.hbm_peak, units::Dim::Bandwidth)
     << " peak), NVLink " << units::format(s.nvlink_bytes, units::Dim::Size);
  if (s.has_energy)
    os << ", energy " << units::format(s.energy_j, units::Dim::Energy) << " (" << fmt(s.power_w >= 10 ? "%.0f" : "%.3g", s.power_w) << " W average)";
  return os.str();
}

std::string total_line(const Report& rep) {
  const Metrics& m = rep.total;
  std::ostringstream os;
  os << (rep.gpus > 1 ? "total, whole system of " + std::to_string(rep.gpus) + " GPUs: " : std::string("total: "))
     << units::format(m.time_s, units::Dim::Time) << " (" << fmt("%.0f", m.cycles) << " cycles), ";
  if (rep.accelerator)
    os << fmt("%.3g", m.tflops) << " TOPS, MAC array " << pct(m.tensor_util) << " busy, DRAM "
       << units::format(m.hbm_bandwidth, units::Dim::Bandwidth) << " (" << pct(m.hbm_bandwidth_util) << " of "
       << units::format(rep.hbm_peak, units::Dim::Bandwidth) << ")";
  else
    os << fmt("%.1f", m.tflops) << " TFLOP/s, tensor cores " << pct(m.tensor_util) << " busy, HBM "
       << units::format(m.hbm_bandwidth, units::Dim::Bandwidth) << " (" << pct(m.hbm_bandwidth_util) << " of "
       << (rep.gpus > 1 ? std::to_string(rep.gpus) + " x " : std::string())
       << units::format(rep.hbm_peak, units::Dim::Bandwidth) << " peak), L2 hit rate " << pct(m.l2_hit_rate);
  os << ", bound: " << m.bound;
  if (m.has_power)
    os << "; SM clock" << (rep.gpus > 1 ? " (GPU " + std::to_string(rep.power.gpus.empty() ? 0 : rep.power.gpus.front()) + ")" : std::string())
       << " " << fmt("%.0f", m.clock_hz / 1e6) << " MHz on average (" << pct(m.throttled_share)
       << " of the time held below boost by the " << fmt("%.0f", rep.power.limit_w) << " W limit)";
  if (m.has_power && rep.power.unheld_w > 0)
    os << "; the " << fmt("%.3g", rep.power.limit_w) << " W limit cannot be held: at the lowest clock, "
       << fmt("%.0f", rep.power.lowest_clock_hz / 1e6) << " MHz, the chip drew up to " << fmt("%.3g", rep.power.unheld_w) << " W";
  if (m.has_energy) {
    os << "; energy " << units::format(m.energy_j, units::Dim::Energy) << " (" << fmt(m.power_w >= 10 ? "%.0f" : "%.3g", m.power_w) << " W average, "
       << fmt("%.2f", m.energy_j > 0 ? m.ops / m.energy_j / 1e12 : 0) << " TOPS/W";
    const double on_chip = m.energy_j - m.class_j[static_cast<int>(energy::Class::offchip_memory)];
    if (rep.accelerator && on_chip > 0) os << ", " << fmt("%.1f", m.ops / on_chip / 1e12) << " on chip";
    os << ")";
  }
  if (rep.gpus > 1) os << "\n" << per_gpu_line(rep);
  return os.str();
}

const char* kPerGpuNote = "ops: per GPU (each op's figures on one of the GPUs it ran on; report.json's \"system\" sums them)";

}  // namespace

std::string terminal_table(const Report& rep, size_t max_ops) {
  // A trace longer than the table groups the instances of repeated ops, so that the table is not
  // twenty copies of one layer's longest kernel.
  const bool group = rep.ops.size() > max_ops;
  std::vector<OpReport> groups;
  if (group) groups = grouped_ops(rep);
  const size_t shown_of = group ? groups.size() : rep.ops.size();
  const auto r = rows(rep, group ? groups : rep.ops, max_ops);
  std::vector<size_t> width(r[0].size(), 0);
  for (const auto& row : r)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::ostringstream os;
  os << rep.config_name << " running " << rep.trace_name << " (" << rep.ops.size() << " ops)\n";
  if (!rep.system_note.empty()) os << rep.system_note << "\n";
  if (!rep.accelerator) os << "Fidelity: " << rep.fidelity.note << "\n";
  if (rep.gpus > 1) os << kPerGpuNote << "\n";
  for (const auto& row : r) {
    for (size_t i = 0; i < row.size(); ++i) {
      os << row[i];
      if (i + 1 < row.size()) os << std::string(width[i] - row[i].size() + 2, ' ');
    }
    os << '\n';
  }
  if (group && shown_of == rep.ops.size()) {
    os << "(" << max_ops << " longest of " << rep.ops.size() << " ops shown)\n";
  } else if (group) {
    os << "(" << std::min(max_ops, shown_of) << (shown_of > max_ops ? " longest" : "") << " of " << shown_of
       << " rows shown, the " << rep.ops.size() << " ops with the instances of each repeated op summed ([*] for the "
          "repeat index, xN for their count); every op is in ops.csv and summary.md)\n";
  }
  os << total_line(rep) << '\n';
  return os.str();
}

namespace {

// A table cell: a '|' in a name would start a new column.
std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
  return o;
}

// Inline code: fenced with more backticks than the text holds in a row, so that a name with a
// backtick stays one span.
std::string md_code(const std::string& s) {
  size_t run = 0, longest = 0;
  for (char c : s) run = c == '`' ? run + 1 : 0, longest = std::max(longest, run);
  const std::string fence(longest + 1, '`');
  const bool pad = !s.empty() && (s.front() == '`' || s.back() == '`');
  return fence + (pad ? " " : "") + s + (pad ? " " : "") + fence;
}

}  // namespace

std::string to_markdown(const Report& rep, double wall_s) {
  std::ostringstream os;
  os << "# xpusim report: " << rep.config_name << " running " << rep.trace_name << "\n\n";
  os << "Config " << md_code(rep.config_file) << ", trace " << md_code(rep.trace_file) << ", xpusim " << rep.version << ".\n\n";
  if (const std::string o = overrides_text(rep); !o.empty()) os << "Overrides: " << md_code(o) << ".\n\n";
  if (!rep.system_note.empty()) os << "System: " << rep.system_note << ".\n\n";
  if (!rep.accelerator) os << "Fidelity: " << rep.fidelity.note << ".\n\n";
  std::string total = total_line(rep);
  for (size_t at = total.find('\n'); at != std::string::npos; at = total.find('\n', at)) total.replace(at, 1, ".\n\n"), at += 3;
  os << total << ".\n\n";
  if (rep.gpus > 1) os << kPerGpuNote << ".\n\n";
  if (const auto& b = rep.time_breakdown; b.host_s > 0 || b.collectives_s > 0)
    os << "Time: kernels " << units::format(b.kernels_s, units::Dim::Time) << ", collectives "
       << units::format(b.collectives_s, units::Dim::Time) << ", host runtime " << units::format(b.host_s, units::Dim::Time)
       << ", idle between them " << units::format(b.idle_s, units::Dim::Time) << ".\n\n";
  const auto r = rows(rep, rep.ops, 200);
  for (size_t i = 0; i < r.size(); ++i) {
    os << "|";
    for (const auto& c : r[i]) os << ' ' << md_cell(c) << " |";
    os << '\n';
    if (i == 0) {
      os << "|";
      for (size_t j = 0; j < r[i].size(); ++j) os << "---|";
      os << '\n';
    }
  }
  os << "\nLowering:\n\n";
  for (const auto& o : rep.ops) os << "- " << md_code(o.name) << ": " << o.lowering << "\n";
  os << "\nSimulated in " << fmt("%.2f", wall_s) << " s of wall time.\n";
  return os.str();
}

}  // namespace xpusim::report
