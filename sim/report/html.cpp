#include "sim/report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include "models/accelerator/mapping.h"
#include "models/energy/energy_table.h"
#include "sim/config/units.h"
#include "sim/report/svg_chart.h"

namespace xpusim::report {
namespace {

// The chart primitives (svg_chart.h), by their short names.
using svg::Bars;
using svg::bound_color;
using svg::bound_legend;
using svg::color;
using svg::esc;
using svg::num;
using svg::page;
using svg::quantity;
using svg::render;
using svg::Series;
using svg::table_html;
using svg::XY;

bool integer_format(const std::string& dtype) { return dtype.rfind("int", 0) == 0; }

// Time and energy summed over a group of ops (a kind, a layer).
struct Group {
  std::string name;
  int ops = 0;
  double time_s = 0;
  Metrics energy;  // energy_j, class_j, static_j, uncore_j summed
};

void add_to(Group& g, const OpReport& o) {
  ++g.ops;
  g.time_s += o.m.time_s;
  if (!o.m.has_energy) return;
  g.energy.has_energy = true;
  g.energy.energy_j += o.m.energy_j;
  for (int c = 0; c < 5; ++c) g.energy.class_j[c] += o.m.class_j[c];
  g.energy.static_j += o.m.static_j;
  g.energy.uncore_j += o.m.uncore_j;
}

// The layer an op belongs to: its outermost repeat iteration ("layer[3]" of "layer[3].qkv").
std::string layer_of(const std::string& name) {
  const size_t dot = name.find('.');
  return dot == std::string::npos || name.find('[') > dot ? std::string() : name.substr(0, dot);
}

// Energy by class, one stacked bar per label.
Bars energy_bars(const std::string& id, const std::string& title, bool uncore,
                 const std::vector<std::pair<std::string, const Metrics*>>& rows) {
  Bars e;
  e.id = id;
  e.title = title;
  e.dim = units::Dim::Energy;
  for (int c = 0; c < 5; ++c) e.segment_names.push_back(energy::class_name(static_cast<energy::Class>(c)));
  e.segment_names.push_back("static");
  if (uncore) e.segment_names.push_back("uncore");
  for (const auto& [label, m] : rows) {
    e.labels.push_back(label);
    std::vector<double> v(m->class_j, m->class_j + 5);
    v.push_back(m->static_j);
    if (uncore) v.push_back(m->uncore_j);
    e.values.push_back(v);
    std::vector<std::string> cols;
    for (size_t j = 0; j < v.size(); ++j) cols.push_back(color(j));
    e.colors.push_back(cols);
  }
  return e;
}


}  // namespace

std::string run_html(const Report& rep) {
  // An accelerator's units are a MAC array and DRAM; a GPU's tensor cores and HBM.
  const std::string mac = rep.accelerator ? "MAC array" : "tensor cores";
  const std::string mem = rep.accelerator ? "DRAM" : "HBM";
  double int_flops = 0, all_flops = 0;
  for (const OpReport& o : rep.ops) {
    all_flops += o.m.flops;
    if (integer_format(o.dtype)) int_flops += o.m.flops;
  }
  const bool integer_run = all_flops > 0 && int_flops > all_flops / 2;  // as compare counts it
  const std::string run_rate = integer_run ? "TOPS" : "TFLOP/s";
  auto op_rate = [](const OpReport& o) { return integer_format(o.dtype) ? "TOPS" : "TFLOP/s"; };

  std::ostringstream b;
  b << "<h1>" << esc(rep.trace_name) << " on " << esc(rep.config_name) << "</h1>\n";
  if (const std::string o = overrides_text(rep); !o.empty()) b << "<p>Overrides: <code>" << esc(o) << "</code></p>\n";
  const Metrics& t = rep.total;
  if (rep.gpus > 1)
    b << "<p><b>" << rep.gpus << " GPUs</b>: " << esc(rep.system_note) << ". The totals below are the whole system's; "
      << "the charts and each op's figures are per GPU (one of the GPUs the op ran on).</p>\n";
  b << "<p>" << (rep.gpus > 1 ? "Whole system: " : "") << units::format(t.time_s, units::Dim::Time) << ", " << num(t.tflops) << " "
    << run_rate << ", bound: " << esc(t.bound);
  if (t.has_energy)
    b << "; " << units::format(t.energy_j, units::Dim::Energy) << ", " << units::format(t.power_w, units::Dim::Power) << " average";
  if (rep.gpus > 1) {
    const Scope& g = rep.per_gpu;
    b << ". Per GPU: " << num(g.tflops) << " " << run_rate << ", " << mem << " " << units::format(g.hbm_bandwidth, units::Dim::Bandwidth);
    if (g.has_energy)
      b << ", " << units::format(g.energy_j, units::Dim::Energy) << ", " << units::format(g.power_w, units::Dim::Power) << " average";
  }
  b << ". <span class=\"muted\">" << (rep.accelerator ? "A dataflow accelerator: its MAC array and DRAM stand where a GPU's tensor "
                                                        "cores and HBM do. "
                                                      : "")
    << "xpusim " << esc(rep.version) << "; " << rep.ops.size() << " ops"
    << (rep.gpus > 1 ? "; " + std::to_string(rep.gpus) + " GPUs" : std::string()) << ".</span></p>\n<div class=\"charts\">\n";

  // Roofline: every op with FLOPs and memory traffic at (FLOP per byte, achieved rate), against
  // the roof of its own unit and format: the memory slope, then its format's peak. The SIMT and
  // SFU roofs are drawn too, whether or not an op ran on them.
  XY roof;
  roof.id = "roofline";
  roof.title = "Roofline: each op against its own format's roof";
  roof.xlabel = "arithmetic intensity (FLOP per " + mem + " byte)";
  roof.ylabel = integer_run ? "achieved TOPS" : int_flops > 0 ? "achieved TFLOP/s (TOPS for integer formats)" : "achieved TFLOP/s";
  roof.xlog = roof.ylog = true;
  roof.width = 780;
  roof.legend_width = 280;
  std::vector<std::string> roof_order;  // roofs as the ops first name them
  std::map<std::string, double> roof_peak;
  std::map<std::string, Series> points;
  double xmin = 1e300, xmax = 0, ymax = 0;
  size_t drawn = 0;
  for (const OpReport& o : rep.ops) {
    const double bytes = o.m.hbm_read_bytes + o.m.hbm_write_bytes;
    if (o.m.flops <= 0 || bytes <= 0 || o.m.tflops <= 0) continue;
    const std::string r = o.roof.empty() ? "other" : o.roof;
    if (!roof_peak.count(r)) roof_order.push_back(r), roof_peak[r] = o.m.peak_tflops;
    const double ai = o.m.flops / bytes;
    Series& s = points[r];
    s.x.push_back(ai);
    s.y.push_back(o.m.tflops);
    s.tips.push_back(o.name + " (" + o.kind + " " + o.shape + ", " + r + "): " + num(o.m.tflops) + " " + op_rate(o) + ", " +
                     num(ai) + " FLOP/B, " + num(o.m.fraction_of_peak * 100) + "% of its roof; bound: " + o.m.bound);
    xmin = std::min(xmin, ai), xmax = std::max(xmax, ai), ymax = std::max(ymax, o.m.tflops);
    ++drawn;
  }
  if (xmax > 0 && rep.hbm_peak > 0) {
    double top = ymax;
    for (const auto& [_, p] : roof_peak) top = std::max(top, p);
    top = std::max({top, rep.fp32_peak_tflops, rep.sfu_peak_tops});
    xmin = std::min(xmin / 2, top * 1e12 / rep.hbm_peak / 100);
    xmax = std::max(xmax * 2, top * 1e12 / rep.hbm_peak * 10);
    Series slope;
    slope.name = mem + " " + units::format(rep.hbm_peak, units::Dim::Bandwidth);
    slope.color = "#333";
    slope.line = true;
    slope.points = false;
    slope.x = {xmin, top * 1e12 / rep.hbm_peak};
    slope.y = {rep.hbm_peak * xmin / 1e12, top};
    roof.series.push_back(slope);
    auto flat = [&](const std::string& name, double peak, const std::string& colour, bool dashed) {
      Series h;
      h.name = name;
      h.color = colour;
      h.line = true;
      h.points = false;
      h.dashed = dashed;
      h.x = {peak * 1e12 / rep.hbm_peak, xmax};
      h.y = {peak, peak};
      roof.series.push_back(h);
    };
    // Each roof its own colour: the palette less SIMT's green and the SFU roof's teal.
    static const size_t kRoofColours[] = {0, 2, 4, 1, 6, 7, 9};
    size_t k = 0;
    for (const std::string& r : roof_order) {
      const std::string colour = r == "SIMT fp32" ? "#59a14f" : color(kRoofColours[k++ % (sizeof kRoofColours / sizeof kRoofColours[0])]);
      const double peak = roof_peak[r];
      const std::string unit = r.rfind("int", 0) == 0 ? " TOPS" : " TFLOP/s";
      if (peak > 0) flat(r + " " + num(peak) + unit, peak, colour, false);
      Series& s = points[r];
      s.color = colour;
      if (peak <= 0) s.name = r;  // no roof of its own: named by its points
    }
    if (rep.fp32_peak_tflops > 0 && !roof_peak.count("SIMT fp32"))
      flat("SIMT fp32 " + num(rep.fp32_peak_tflops) + " TFLOP/s", rep.fp32_peak_tflops, "#59a14f", true);
    if (rep.sfu_peak_tops > 0) flat("SFU " + num(rep.sfu_peak_tops) + " TOPS (exp, rsqrt)", rep.sfu_peak_tops, "#76b7b2", true);
    for (const std::string& r : roof_order) roof.series.push_back(points[r]);
  }
  b << render(roof);

  // Power management: chip power and SM clock over time, on the first simulated GPU.
  if (rep.power.capped && !rep.power.tracks.empty() && !rep.power.tracks.front().empty()) {
    const std::vector<PowerSample>& track = rep.power.tracks.front();
    // Steps over equal bins of time (at most 300, two points each), windows averaged into them.
    const double end = track.back().end_s;
    const size_t bins = std::min<size_t>(track.size(), 300);
    std::vector<double> tsum(bins, 0), p(bins, 0), avg(bins, 0), clk(bins, 0);
    for (const PowerSample& s : track) {
      const size_t i = std::min(bins - 1, static_cast<size_t>(s.start_s / end * static_cast<double>(bins)));
      const double dt = s.end_s - s.start_s;
      tsum[i] += dt, p[i] += s.power_w * dt, avg[i] += s.filtered_w * dt, clk[i] += s.clock_hz * dt;
    }
    // A window's draw may pass the limit (a burst on the average's headroom, up to
    // power.peak_ratio x it); the limit applies to the average.
    Series pw{"power per window", "#e15759", {}, {}, {}, true, false, false};
    Series av{"average (the limit's)", "#4e79a7", {}, {}, {}, true, false, false};
    Series ck{rep.accelerator ? "clock" : "SM clock", "#59a14f", {}, {}, {}, true, false, false};
    for (size_t i = 0; i < bins; ++i) {
      if (tsum[i] <= 0) continue;
      for (double edge : {0.0, 1.0}) {
        const double x = (static_cast<double>(i) + edge) * end / static_cast<double>(bins) * 1e3;
        pw.x.push_back(x), pw.y.push_back(p[i] / tsum[i]);
        av.x.push_back(x), av.y.push_back(avg[i] / tsum[i]);
        ck.x.push_back(x), ck.y.push_back(clk[i] / tsum[i] / 1e6);
      }
    }
    XY pc;
    pc.id = "power";
    pc.title = "Chip power over time (limit " + num(rep.power.limit_w) + " W, on the " +
               units::format(rep.power.time_constant_s, units::Dim::Time) + " average; a window may draw more)";
    pc.xlabel = "time (ms)";
    pc.ylabel = "W";
    Series lim{"limit", "#333", {0, end * 1e3}, {rep.power.limit_w, rep.power.limit_w}, {}, true, false, true};
    pc.series = {pw, av, lim};
    b << render(pc);
    XY cc;
    cc.id = "clock";
    cc.title = rep.accelerator ? "Clock the governor chose" : "SM clock the governor chose";
    cc.xlabel = "time (ms)";
    cc.ylabel = "MHz";
    Series boost{"boost clock", "#333", {0, end * 1e3}, {rep.power.boost_clock_hz / 1e6, rep.power.boost_clock_hz / 1e6}, {}, true, false, true};
    cc.series = {ck, boost};
    b << render(cc);
  }

  // Ops in the order they ran, then the longest first; both coloured by what bound them.
  std::vector<const OpReport*> in_order;
  for (const OpReport& o : rep.ops) in_order.push_back(&o);
  std::stable_sort(in_order.begin(), in_order.end(), [](const OpReport* a, const OpReport* c) { return a->m.start_s < c->m.start_s; });
  std::map<const OpReport*, size_t> position;
  for (size_t i = 0; i < in_order.size(); ++i) position[in_order[i]] = i + 1;
  std::vector<std::string> bounds;
  for (const OpReport& o : rep.ops) bounds.push_back(o.m.bound);
  const double t0 = in_order.empty() ? 0 : in_order.front()->m.start_s;
  Bars order;
  order.id = "op-order";
  order.title = in_order.size() > 40 ? "Ops in execution order (the first 40 of " + std::to_string(in_order.size()) + "), start to end"
                                     : "Ops in execution order, start to end";
  order.offset_first = true;
  for (size_t i = 0; i < std::min<size_t>(40, in_order.size()); ++i) {
    const OpReport& o = *in_order[i];
    order.labels.push_back(o.name);
    order.values.push_back({o.m.start_s - t0, o.m.time_s});
    order.colors.push_back({"none", bound_color(o.m.bound)});
  }
  bound_legend(order, bounds);
  b << render(order);

  std::vector<const OpReport*> ops = in_order;
  std::stable_sort(ops.begin(), ops.end(), [](const OpReport* a, const OpReport* c) { return a->m.time_s > c->m.time_s; });
  Bars tb;
  tb.id = "op-times";
  tb.title = "Time per op (longest 25), coloured by bound";
  for (size_t i = 0; i < std::min<size_t>(25, ops.size()); ++i) {
    tb.labels.push_back(ops[i]->name);
    tb.values.push_back({ops[i]->m.time_s});
    tb.colors.push_back({bound_color(ops[i]->m.bound)});
  }
  bound_legend(tb, bounds);
  b << render(tb);

  // Energy by class, for the whole run and the ops that spend the most.
  if (t.has_energy) {
    const bool uncore = t.uncore_j > 0;
    std::vector<std::pair<std::string, const Metrics*>> rows{{"total", &t}};
    std::vector<const OpReport*> spenders;
    for (const OpReport& o : rep.ops)
      if (o.m.has_energy) spenders.push_back(&o);
    std::stable_sort(spenders.begin(), spenders.end(), [](const OpReport* a, const OpReport* c) { return a->m.energy_j > c->m.energy_j; });
    for (size_t i = 0; i < std::min<size_t>(8, spenders.size()); ++i) rows.emplace_back(spenders[i]->name, &spenders[i]->m);
    b << render(energy_bars("energy", rep.gpus > 1 ? "Energy by class (total: the whole system's; ops: per GPU)" : "Energy by class",
                            uncore, rows));
  }

  // Time and energy per op kind and per layer (the outermost repeat iteration), summed over ops.
  auto grouped = [&](const std::string& what, const std::string& id, auto key_of) {
    std::vector<Group> groups;
    for (const OpReport* o : in_order) {
      const std::string k = key_of(*o);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.name == k; });
      if (it == groups.end()) groups.push_back(Group{k, 0, 0, {}}), it = groups.end() - 1;
      add_to(*it, *o);
    }
    if (groups.size() < 2) return std::string();
    const size_t shown = std::min<size_t>(groups.size(), 48);
    std::ostringstream o;
    Bars tg;
    tg.id = id + "-time";
    tg.title = "Time per " + what + (shown < groups.size() ? " (the first 48)" : "") + ", op times summed";
    for (size_t i = 0; i < shown; ++i) {
      tg.labels.push_back(groups[i].name);
      tg.values.push_back({groups[i].time_s});
      tg.colors.push_back({color(0)});
    }
    o << render(tg);
    if (t.has_energy) {
      std::vector<std::pair<std::string, const Metrics*>> rows;
      for (size_t i = 0; i < shown; ++i) rows.emplace_back(groups[i].name, &groups[i].energy);
      o << render(energy_bars(id + "-energy", "Energy per " + what + (shown < groups.size() ? " (the first 48)" : ""), t.uncore_j > 0, rows));
    }
    return o.str();
  };
  b << grouped("op kind", "kinds", [](const OpReport& o) { return o.kind; });
  b << grouped("layer", "layers", [](const OpReport& o) {
    const std::string l = layer_of(o.name);
    return l.empty() ? std::string("outside repeat blocks") : l;
  });
  b << "</div>\n";

  // Collectives in nccl-tests' terms: algorithm bandwidth (size / time) and bus bandwidth.
  std::vector<std::vector<std::string>> coll;
  for (const OpReport* o : in_order)
    if (o->m.collective)
      coll.push_back({std::to_string(position[o]), o->name, o->kind, units::format(o->m.coll_bytes, units::Dim::Size),
                      std::to_string(o->devices.size()), o->m.algorithm, o->m.protocol, std::to_string(o->m.channels),
                      units::format(o->m.time_s, units::Dim::Time), units::format(o->m.algbw, units::Dim::Bandwidth),
                      units::format(o->m.busbw, units::Dim::Bandwidth), num(o->m.bus_factor), o->m.bound});
  if (!coll.empty())
    b << "<h2>Collectives</h2>\n<p class=\"muted\">Bus bandwidth is the algorithm bandwidth (size / time) times the bus factor, "
         "as nccl-tests reports it.</p>\n"
      << table_html({"#", "op", "kind", "size", "GPUs", "algorithm", "protocol", "channels", "time", "algbw", "busbw", "bus factor", "bound"},
                    coll);

  // The accelerator's mapping search: each GEMM's chosen dataflow and tiling (report.json's ops[].mapping).
  std::vector<std::vector<std::string>> maps;
  for (const OpReport* o : in_order)
    for (const auto& p : o->mappings) {
      const accel::Mapping& mp = p.mapping;
      const auto dim = [](int64_t v) { return std::to_string(v); };
      maps.push_back({std::to_string(position[o]), o->name, p.name,
                      (p.shape.batch > 1 ? dim(p.shape.batch) + " x " : std::string()) + dim(p.shape.m) + "x" + dim(p.shape.n) + "x" + dim(p.shape.k),
                      mp.weight_stationary ? "weight-stationary" : "output-stationary", mp.n_outer ? "N" : "M",
                      dim(mp.mg) + "x" + dim(mp.ng) + "x" + dim(mp.kg), dim(mp.tiles), num(mp.cycles),
                      units::format(mp.dram_read_bytes + mp.dram_write_bytes, units::Dim::Size),
                      units::format(accel::compulsory_dram_bytes(p.shape), units::Dim::Size)});
    }
  if (!maps.empty())
    b << "<h2>Mapping</h2>\n<p class=\"muted\">Each GEMM's mapping onto the PE array, the legal one of least estimated "
         "energy x delay: the dataflow, the outer DRAM loop (N tiles outside M, or M outside N), the global-buffer tile "
         "(M x N x K), its tiles and compute cycles, and the DRAM traffic against the compulsory bytes.</p>\n"
      << table_html({"#", "op", "GEMM", "shape", "dataflow", "outer loop", "buffer tile", "tiles", "cycles", "DRAM", "compulsory"},
                    maps);

  b << "<h2>Ops</h2>\n<p class=\"muted\"># is the op's place in execution order; the table runs longest first.</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < std::min<size_t>(200, ops.size()); ++i) {
    const OpReport& o = *ops[i];
    const bool math = o.m.flops > 0;  // a collective or a copy has no rate of its own here (busbw: Collectives)
    rows.push_back({std::to_string(position[&o]), o.name, o.kind, o.dtype, o.shape, quantity(o.m.start_s - t0, units::Dim::Time),
                    units::format(o.m.time_s, units::Dim::Time), math ? num(o.m.tflops) + " " + op_rate(o) : "", math ? o.roof : "",
                    math && o.m.peak_tflops > 0 ? num(o.m.fraction_of_peak * 100) + "%" : "", num(o.m.tensor_util * 100) + "%",
                    units::format(o.m.hbm_bandwidth, units::Dim::Bandwidth), o.m.bound});
  }
  b << table_html({"#", "op", "kind", "dtype", "shape", "start", "time", "rate", "roof", "of roof", mac, mem, "bound"}, rows);
  if (ops.size() > 200) b << "<p class=\"muted\">" << ops.size() - 200 << " shorter ops are in ops.csv.</p>\n";
  return page(rep.trace_name + " on " + rep.config_name, b.str());
}

}  // namespace xpusim::report
