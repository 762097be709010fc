#include "sim/report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "models/energy/energy_table.h"
#include "sim/config/units.h"

namespace xpusim::report {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v, int digits = 3) {
  char b[64];
  const double a = std::abs(v);
  if (a >= 1e-3 && a < 1e6 && (a == std::round(a) || a >= std::pow(10.0, digits)))
    std::snprintf(b, sizeof b, "%.0f", v);  // 1000 and 3070, not 1e+03 and 3.07e+03
  else std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

// A time or an energy in a readable unit; zero as "0", not "0 ps".
std::string quantity(double v, units::Dim d) { return v == 0 ? "0" : units::format(v, d); }

const char* kPalette[] = {"#4e79a7", "#e15759", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac", "#ff9da7"};
const char* color(size_t i) { return kPalette[i % (sizeof kPalette / sizeof kPalette[0])]; }

// What bound an op, as a category and its colour: the same in every chart.
struct BoundClass {
  const char* name;
  const char* color;
};
const BoundClass kBoundClasses[] = {{"tensor cores, MAC array", "#4e79a7"}, {"HBM, DRAM bandwidth", "#e15759"},
                                    {"L2 bandwidth", "#f28e2b"},            {"SIMT lanes, SFUs", "#59a14f"},
                                    {"NVLink, network", "#b07aa1"},         {"power limit", "#edc948"},
                                    {"latency, other", "#9c9c9c"}};
size_t bound_class(const std::string& b) {
  if (b.find("tensor") != std::string::npos || b.find("MAC") != std::string::npos) return 0;
  if (b.find("HBM") != std::string::npos || b.find("DRAM") != std::string::npos) return 1;
  if (b.find("L2") != std::string::npos) return 2;
  if (b.find("SIMT") != std::string::npos || b.find("SFU") != std::string::npos || b.find("special") != std::string::npos) return 3;
  if (b.find("compute") != std::string::npos) return 0;
  if (b.find("NVLink") != std::string::npos || b.find("network") != std::string::npos) return 4;
  if (b == "power") return 5;
  return 6;
}
const char* bound_color(const std::string& b) { return kBoundClasses[bound_class(b)].color; }

struct Series {
  std::string name;
  std::string color;
  std::vector<double> x, y;
  std::vector<std::string> tips;
  bool line = false, points = true, dashed = false;
  std::vector<std::string> labels;  // written beside each point, where given (the Pareto front's)
};

// One axis: linear or log, mapping data to pixels, with ticks.
struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double px0 = 0, px1 = 1;
  double t(double v) const { return log ? std::log10(v) : v; }
  double map(double v) const { return px0 + (t(v) - t(lo)) / (t(hi) - t(lo)) * (px1 - px0); }
  std::vector<double> ticks() const {
    std::vector<double> out;
    if (log) {
      for (double e = std::floor(std::log10(lo)); e <= std::ceil(std::log10(hi)); ++e) {
        const double v = std::pow(10.0, e);
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push_back(v);
      }
      return out;
    }
    const double span = hi - lo, raw = span / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }
};

void fit(Scale& s, const std::vector<double>& vals, bool from_zero) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : vals)
    if (std::isfinite(v) && (!s.log || v > 0)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) lo = s.log ? 1 : 0, hi = s.log ? 10 : 1;
  if (s.log) {
    s.lo = std::pow(10.0, std::floor(std::log10(lo)));
    s.hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (s.hi <= s.lo) s.hi = s.lo * 10;
  } else {
    if (from_zero) lo = std::min(lo, 0.0);
    const double pad = (hi - lo) * 0.08 + (hi == lo ? std::abs(hi) * 0.1 + 1 : 0);
    s.lo = from_zero && lo >= 0 ? 0 : lo - pad;
    s.hi = hi + pad;
  }
}

struct XY {
  std::string id, title, xlabel, ylabel;
  double width = 640, legend_width = 170;  // the legend's column is at the right
  bool xlog = false, ylog = false, y_from_zero = true;
  std::vector<std::string> categories;  // x is categorical: x values are indices into these
  std::vector<Series> series;
  // Points that failed (no value to plot): a red cross on the x axis at each one's x, its error the tooltip.
  std::vector<double> failed_x;
  std::vector<std::string> failed_tips;
};

std::string render(const XY& c) {
  // Tall enough for the legend (16 px an entry) when there are many series.
  size_t named = c.failed_x.empty() ? 0 : 1;
  for (const Series& s : c.series) named += !s.name.empty();
  const double W = c.width, L = 70, R = c.legend_width, T = 36, B = 52;
  const size_t legend_chars = static_cast<size_t>((R - 26) / 6);  // about 6 px a character at 11 px
  const double H = std::max(380.0, T + 6 + 16 * static_cast<double>(named) + 10);
  Scale x{0, 1, c.xlog, L, W - R}, y{0, 1, c.ylog, H - B, T};
  std::vector<double> xs, ys;
  for (const Series& s : c.series) xs.insert(xs.end(), s.x.begin(), s.x.end()), ys.insert(ys.end(), s.y.begin(), s.y.end());
  xs.insert(xs.end(), c.failed_x.begin(), c.failed_x.end());
  if (!c.categories.empty()) {
    x.lo = -0.5;
    x.hi = static_cast<double>(c.categories.size()) - 0.5;
  } else {
    fit(x, xs, false);
  }
  fit(y, ys, c.y_from_zero);
  std::ostringstream o;
  o << "<svg id=\"" << esc(c.id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"" << esc(c.title) << "\">\n";
  o << "<text x=\"" << L << "\" y=\"20\" class=\"title\">" << esc(c.title) << "</text>\n";
  // Grid and ticks
  for (double v : y.ticks()) {
    const double py = y.map(v);
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << py << "\" y2=\"" << py << "\" class=\"grid\"/>"
      << "<text x=\"" << L - 6 << "\" y=\"" << py + 4 << "\" class=\"tick\" text-anchor=\"end\">" << num(v) << "</text>\n";
  }
  if (!c.categories.empty()) {
    // At most about eight labels under the axis, so that they do not run into each other.
    const size_t every = (c.categories.size() + 7) / 8;
    for (size_t i = 0; i < c.categories.size(); i += every) {
      const double px = x.map(static_cast<double>(i));
      o << "<text x=\"" << px << "\" y=\"" << H - B + 16 << "\" class=\"tick\" text-anchor=\"middle\">" << esc(c.categories[i]) << "</text>\n";
    }
  } else {
    for (double v : x.ticks()) {
      const double px = x.map(v);
      o << "<line x1=\"" << px << "\" x2=\"" << px << "\" y1=\"" << T << "\" y2=\"" << H - B << "\" class=\"grid\"/>"
        << "<text x=\"" << px << "\" y=\"" << H - B + 16 << "\" class=\"tick\" text-anchor=\"middle\">" << num(v) << "</text>\n";
    }
  }
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - R - L << "\" height=\"" << H - B - T << "\" class=\"frame\"/>\n";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12 << "\" class=\"label\" text-anchor=\"middle\">" << esc(c.xlabel) << "</text>\n";
  o << "<text transform=\"translate(16," << (T + H - B) / 2 << ") rotate(-90)\" class=\"label\" text-anchor=\"middle\">" << esc(c.ylabel)
    << "</text>\n";
  auto inside = [&](double vx, double vy) {
    return std::isfinite(vx) && std::isfinite(vy) && (!c.xlog || vx > 0) && (!c.ylog || vy > 0);
  };
  double ly = T + 6;
  std::vector<std::pair<double, double>> written;  // point labels so far: one that would overlap one is left out
  for (const Series& s : c.series) {
    if (s.line) {
      o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "")
        << " points=\"";
      for (size_t i = 0; i < s.x.size(); ++i)
        if (inside(s.x[i], s.y[i])) o << x.map(s.x[i]) << "," << y.map(s.y[i]) << " ";
      o << "\"/>\n";
    }
    if (s.points)
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!inside(s.x[i], s.y[i])) continue;
        o << "<circle cx=\"" << x.map(s.x[i]) << "\" cy=\"" << y.map(s.y[i]) << "\" r=\"4\" fill=\"" << s.color << "\" class=\"pt\">";
        if (i < s.tips.size()) o << "<title>" << esc(s.tips[i]) << "</title>";
        o << "</circle>\n";
        if (i < s.labels.size() && !s.labels[i].empty()) {
          const double lx = x.map(s.x[i]) + 6, lyy = y.map(s.y[i]) - 6;
          const bool clear = std::none_of(written.begin(), written.end(), [&](const auto& w) {
            return std::abs(w.second - lyy) < 12 && std::abs(w.first - lx) < 6.0 * static_cast<double>(s.labels[i].size());
          });
          if (clear) {
            o << "<text x=\"" << lx << "\" y=\"" << lyy << "\" class=\"pt-label\">" << esc(s.labels[i]) << "</text>\n";
            written.emplace_back(lx, lyy);
          }
        }
      }
    if (!s.name.empty()) {
      // A long name is cut to the legend's width; its whole text is the entry's tooltip.
      const std::string shown = s.name.size() > legend_chars ? s.name.substr(0, legend_chars - 1) + "\u2026" : s.name;
      o << "<rect x=\"" << W - R + 12 << "\" y=\"" << ly << "\" width=\"10\" height=\"10\" fill=\"" << s.color << "\"/>"
        << "<text x=\"" << W - R + 26 << "\" y=\"" << ly + 9 << "\" class=\"legend\"><title>" << esc(s.name) << "</title>"
        << esc(shown) << "</text>\n";
      ly += 16;
    }
  }
  if (!c.failed_x.empty()) {
    const double py = H - B;
    for (size_t i = 0; i < c.failed_x.size(); ++i) {
      const double vx = c.failed_x[i];
      if (!std::isfinite(vx) || (c.xlog && vx <= 0)) continue;
      const double px = x.map(vx);
      o << "<path d=\"M" << px - 5 << "," << py - 5 << "L" << px + 5 << "," << py + 5 << "M" << px - 5 << "," << py + 5 << "L" << px + 5
        << "," << py - 5 << "\" stroke=\"#d62728\" stroke-width=\"2.5\" class=\"failed\">";
      if (i < c.failed_tips.size()) o << "<title>" << esc(c.failed_tips[i]) << "</title>";
      o << "</path>\n";
    }
    o << "<path d=\"M" << W - R + 12 << "," << ly << "L" << W - R + 22 << "," << ly + 10 << "M" << W - R + 12 << "," << ly + 10 << "L"
      << W - R + 22 << "," << ly << "\" stroke=\"#d62728\" stroke-width=\"2.5\"/>"
      << "<text x=\"" << W - R + 26 << "\" y=\"" << ly + 9 << "\" class=\"legend\">failed point</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

// Horizontal bars, one per label, each a stack of segments.
struct Bars {
  std::string id, title;
  units::Dim dim = units::Dim::Time;  // what the values are (SI base units): labels in a readable unit
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;  // per label, per segment
  std::vector<std::string> segment_names;   // legend (empty: no legend)
  std::vector<std::string> legend_names;    // a legend other than the segments' (colours by category)
  std::vector<std::string> legend_colors;   // the legend's colours (empty: the palette's, in order)
  std::vector<std::vector<std::string>> colors;
  bool offset_first = false;  // the first segment is an offset (a start time): not drawn, not in the total
  size_t label_chars = 30;    // a label longer than this is cut (its whole text is the row's tooltip)
};

std::string render(const Bars& b) {
  const double W = 700, L = 170, R = 230, row = 18, T = 34;
  // Tall enough for the rows and for the legend (16 px an entry), whichever is longer.
  const double H = std::max(T + row * static_cast<double>(b.labels.size()) + 40,
                            T + 16 * static_cast<double>(std::max(b.segment_names.size(), b.legend_names.size())) + 10);
  double hi = 0;
  for (const auto& v : b.values) {
    double s = 0;
    for (double x : v) s += std::max(0.0, x);
    hi = std::max(hi, s);
  }
  if (hi <= 0) hi = 1;
  std::ostringstream o;
  o << "<svg id=\"" << esc(b.id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"" << esc(b.title) << "\">\n";
  o << "<text x=\"" << 10 << "\" y=\"20\" class=\"title\">" << esc(b.title) << "</text>\n";
  for (size_t i = 0; i < b.labels.size(); ++i) {
    const double py = T + row * static_cast<double>(i);
    const std::string& label = b.labels[i];
    const std::string shown = label.size() > b.label_chars ? label.substr(0, b.label_chars - 1) + "\u2026" : label;
    o << "<text x=\"" << L - 6 << "\" y=\"" << py + 12 << "\" class=\"tick\" text-anchor=\"end\"><title>" << esc(label) << "</title>"
      << esc(shown) << "</text>\n";
    double px = L, total = 0;
    for (size_t j = 0; j < b.values[i].size(); ++j) {
      const double w = std::max(0.0, b.values[i][j]) / hi * (W - L - R);
      if (j == 0 && b.offset_first) {
        px += w;
        continue;
      }
      total += std::max(0.0, b.values[i][j]);
      o << "<rect x=\"" << px << "\" y=\"" << py + 2 << "\" width=\"" << w << "\" height=\"" << row - 4 << "\" fill=\"" << b.colors[i][j]
        << "\"><title>" << esc(b.labels[i]) << (j < b.segment_names.size() ? ": " + esc(b.segment_names[j]) : std::string()) << " "
        << esc(quantity(b.values[i][j], b.dim)) << "</title></rect>\n";
      px += w;
    }
    o << "<text x=\"" << px + 4 << "\" y=\"" << py + 12 << "\" class=\"tick\">" << esc(quantity(total, b.dim)) << "</text>\n";
  }
  double ly = T;
  const std::vector<std::string>& legend = b.legend_names.empty() ? b.segment_names : b.legend_names;
  for (size_t j = 0; j < legend.size(); ++j) {
    const std::string c = j < b.legend_colors.size() ? b.legend_colors[j] : color(j);
    o << "<rect x=\"" << W - R + 70 << "\" y=\"" << ly << "\" width=\"10\" height=\"10\" fill=\"" << c << "\"/>"
      << "<text x=\"" << W - R + 84 << "\" y=\"" << ly + 9 << "\" class=\"legend\">" << esc(legend[j]) << "</text>\n";
    ly += 16;
  }
  o << "</svg>\n";
  return o.str();
}

const char* kStyle =
    "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px}"
    ".charts{display:flex;flex-wrap:wrap;gap:18px}.chart{background:#fff;border:1px solid #ddd}"
    ".title{font-size:14px;font-weight:600}.tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}"
    ".legend{font-size:11px}.pt-label{font-size:10px;fill:#555}.grid{stroke:#eee}.frame{fill:none;stroke:#999}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:right}"
    "th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.muted{color:#666}"
    "tr.failed td{background:#fde8e8;color:#8b1a1a}.failures li{color:#8b1a1a}";

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + esc(title) + "</title><style>" + kStyle +
         "</style></head><body>\n" + body + "</body></html>\n";
}

// A table; rows for which `flagged` says so are drawn as failed.
std::string table_html(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                       const std::function<bool(const std::vector<std::string>&)>& flagged = nullptr) {
  std::ostringstream o;
  o << "<table><tr>";
  for (const auto& h : head) o << "<th>" << esc(h) << "</th>";
  o << "</tr>\n";
  for (const auto& r : rows) {
    o << (flagged && flagged(r) ? "<tr class=\"failed\">" : "<tr>");
    for (const auto& v : r) o << "<td>" << esc(v) << "</td>";
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

double to_number(const std::string& s, bool& ok) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    ok = used == s.size();
    return v;
  } catch (const std::exception&) {
    ok = false;
    return 0;
  }
}

}  // namespace

namespace {

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

// Time per row coloured by what bound it, with a legend of the bounds that appear.
void bound_legend(Bars& b, const std::vector<std::string>& bounds) {
  std::vector<bool> seen(sizeof kBoundClasses / sizeof kBoundClasses[0], false);
  for (const std::string& x : bounds) seen[bound_class(x)] = true;
  for (size_t k = 0; k < seen.size(); ++k)
    if (seen[k]) b.legend_names.push_back(kBoundClasses[k].name), b.legend_colors.push_back(kBoundClasses[k].color);
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
    if (rep.sfu_peak_tops > 0) flat("SFU " + num(rep.sfu_peak_tops) + " Tops/s (exp, rsqrt)", rep.sfu_peak_tops, "#76b7b2", true);
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
    Series pw{"chip power", "#e15759", {}, {}, {}, true, false, false, {}};
    Series av{"average (the limit's)", "#4e79a7", {}, {}, {}, true, false, false, {}};
    Series ck{rep.accelerator ? "clock" : "SM clock", "#59a14f", {}, {}, {}, true, false, false, {}};
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
    pc.title = "Chip power over time (limit " + num(rep.power.limit_w) + " W)";
    pc.xlabel = "time (ms)";
    pc.ylabel = "W";
    Series lim{"limit", "#333", {0, end * 1e3}, {rep.power.limit_w, rep.power.limit_w}, {}, true, false, true, {}};
    pc.series = {pw, av, lim};
    b << render(pc);
    XY cc;
    cc.id = "clock";
    cc.title = rep.accelerator ? "Clock the governor chose" : "SM clock the governor chose";
    cc.xlabel = "time (ms)";
    cc.ylabel = "MHz";
    Series boost{"boost clock", "#333", {0, end * 1e3}, {rep.power.boost_clock_hz / 1e6, rep.power.boost_clock_hz / 1e6}, {}, true, false, true, {}};
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

namespace {

// A results column's value as one reads it: in the unit its name ends with ("time_s": 2.468 ms),
// else four digits with an SI prefix beyond thousands and below hundredths (165.6 G, 17.65 u).
std::string readable(const std::string& column, double v) {
  auto ends = [&](const char* suffix) {
    const std::string x = suffix;
    return column.size() > x.size() && column.compare(column.size() - x.size(), x.size(), x) == 0;
  };
  if (v != 0 && column.find("_per_") == std::string::npos) {  // tops_per_w is not a power
    if (ends("_hz")) return units::format(v, units::Dim::Frequency);
    if (ends("_s")) return units::format(v, units::Dim::Time);
    if (ends("_j")) return units::format(v, units::Dim::Energy);
    if (ends("_w")) return units::format(v, units::Dim::Power);
    if (ends("_bytes")) return units::format(v, units::Dim::Size);
    if (ends("_bandwidth")) return units::format(v, units::Dim::Bandwidth);
  }
  const double a = std::abs(v);
  if (a == 0 || (a >= 1e-2 && a < 1e6)) return num(v, 4);
  static const char* kPrefix[] = {"a", "f", "p", "n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  const int e3 = std::clamp(static_cast<int>(std::floor(std::log10(a) / 3)), -6, 6);
  char b[64];
  std::snprintf(b, sizeof b, "%.4g %s", v / std::pow(1000.0, e3), kPrefix[e3 + 6]);
  return b;
}

// What a metric's value is in, for a tooltip: "ms" from "time (ms)", or the label itself.
std::string unit_of(const SweepMetric& m) {
  const size_t open = m.label.rfind('(');
  if (open == std::string::npos || m.label.back() != ')') return m.label;
  return m.label.substr(open + 1, m.label.size() - open - 2);
}

}  // namespace

std::string sweep_html(const std::string& name, const std::string& description, const std::vector<std::string>& axes,
                       const Table& t, const SweepCharts& charts) {
  auto col = [&](const std::string& k) {
    const auto it = std::find(t.columns.begin(), t.columns.end(), k);
    return it == t.columns.end() ? t.columns.size() : static_cast<size_t>(it - t.columns.begin());
  };
  const size_t c_status = col("status"), c_trace = col(charts.group), c_config = col("config"),
               c_px = col(charts.pareto_x.column), c_py = col(charts.pareto_y.column), c_error = col("error");
  auto cell = [&](const std::vector<std::string>& r, size_t c) { return c < r.size() ? r[c] : std::string(); };
  const std::string c_trace_name = charts.group;
  std::vector<const std::vector<std::string>*> ok;
  for (const auto& r : t.rows)
    if (cell(r, c_status) == "ok") ok.push_back(&r);
  std::vector<std::string> traces;  // those with failed points only too: their charts show the failures
  for (const auto& r : t.rows)
    if (std::find(traces.begin(), traces.end(), cell(r, c_trace)) == traces.end()) traces.push_back(cell(r, c_trace));
  auto short_name = [](const std::string& p) {
    const size_t s = p.find_last_of('/');
    std::string n = s == std::string::npos ? p : p.substr(s + 1);
    const size_t d = n.find_last_of('.');
    return d == std::string::npos ? n : n.substr(0, d);
  };

  const bool several_configs = std::any_of(ok.begin(), ok.end(), [&](const auto* q) { return cell(*q, c_config) != cell(*ok[0], c_config); });
  std::ostringstream b;
  b << "<h1>Sweep " << esc(name) << "</h1>\n";
  if (!description.empty()) b << "<p>" << esc(description) << "</p>\n";
  b << "<p>" << ok.size() << " of " << t.rows.size() << " points ok.</p>\n";
  if (ok.size() < t.rows.size()) {
    // Each failed point with its settings and error; on the charts, a red cross on the x axis.
    b << "<p>Failed points (a red cross on the charts, a red row in the table):</p>\n<ul class=\"failures\">\n";
    size_t listed = 0;
    for (const auto& r : t.rows) {
      if (cell(r, c_status) == "ok") continue;
      if (++listed > 20) break;
      std::string where = short_name(cell(r, c_trace));
      for (const std::string& ax : axes) where += ", " + ax + "=" + cell(r, col(ax));
      b << "<li>" << esc(where) << ": " << esc(cell(r, c_status)) << (cell(r, c_error).empty() ? "" : ": " + esc(cell(r, c_error)))
        << "</li>\n";
    }
    if (listed > 20) b << "<li>and " << t.rows.size() - ok.size() - 20 << " more (results.jsonl)</li>\n";
    b << "</ul>\n";
  }
  for (const std::string& tr : traces) {
    b << "<h2>" << esc(short_name(tr)) << "</h2>\n<div class=\"charts\">\n";
    // One line plot per metric and axis: the metric against the axis's values, a line per setting
    // of the other axes.
    for (const SweepMetric& m : charts.lines)
    for (const std::string& axis : axes) {
      const size_t c_y = col(m.column);
      const size_t ca = col(axis);
      std::vector<std::string> values;
      bool numeric = true;
      for (const auto& row : t.rows)  // failed points too: their place on the axis is marked
        if (const auto* r = &row; cell(*r, c_trace) == tr && std::find(values.begin(), values.end(), cell(*r, ca)) == values.end()) {
          values.push_back(cell(*r, ca));
          bool isnum = false;
          to_number(cell(*r, ca), isnum);
          numeric = numeric && isnum;
        }
      if (numeric) std::sort(values.begin(), values.end(), [](const std::string& a, const std::string& c) { return std::stod(a) < std::stod(c); });
      XY ch;
      ch.id = "axis-" + (charts.lines.size() > 1 ? m.column + "-" : "") + axis + "-" + short_name(tr);
      ch.title = (m.column == "time_s" ? "time" : m.label) + " vs " + axis;
      ch.xlabel = axis;
      ch.ylabel = m.label;
      if (!numeric) ch.categories = values;
      // Axes whose values span two decades or more are drawn on log scales.
      auto decades = [](const std::vector<double>& v, double ratio) {
        if (v.empty()) return false;
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        return *lo > 0 && *hi / *lo >= ratio;
      };
      if (numeric) {
        std::vector<double> xs;
        for (const std::string& v : values) xs.push_back(std::stod(v));
        ch.xlog = decades(xs, 100);
      }
      std::vector<double> ys;
      for (const auto* r : ok) {
        bool ok_num = false;
        const double yv = to_number(cell(*r, c_y), ok_num);
        if (cell(*r, c_trace) == tr && ok_num) ys.push_back(yv * m.scale);
      }
      ch.ylog = decades(ys, 100);
      if (ch.ylog) ch.y_from_zero = false;
      std::map<std::string, Series> lines;
      std::vector<std::string> line_order;  // keys as the points first give them: the spec's order
      for (const auto* r : ok) {
        if (cell(*r, c_trace) != tr) continue;
        std::string key = several_configs ? short_name(cell(*r, c_config)) : "";
        for (const std::string& other : axes)
          if (other != axis) key += (key.empty() ? "" : ", ") + other + "=" + cell(*r, col(other));
        bool ok_num = false;
        const double yv = to_number(cell(*r, c_y), ok_num) * m.scale;
        if (!ok_num) continue;  // a figure the point does not have (no second token: no time per token)
        if (!lines.count(key)) line_order.push_back(key);
        Series& s = lines[key];
        s.name = key.empty() ? axis : key;
        s.line = true;
        const double xv = numeric ? to_number(cell(*r, ca), ok_num)
                                  : static_cast<double>(std::find(values.begin(), values.end(), cell(*r, ca)) - values.begin());
        s.x.push_back(xv);
        s.y.push_back(yv);
        s.tips.push_back(axis + "=" + cell(*r, ca) + (key.empty() ? "" : ", " + key) + ": " + num(yv) + " " + unit_of(m));
      }
      size_t i = 0;
      for (const std::string& k : line_order) {
        const Series& s = lines.at(k);
        std::vector<size_t> order(s.x.size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t c) { return s.x[a] < s.x[c]; });
        Series sorted = s;
        for (size_t k = 0; k < order.size(); ++k) sorted.x[k] = s.x[order[k]], sorted.y[k] = s.y[order[k]], sorted.tips[k] = s.tips[order[k]];
        sorted.color = color(i++);
        ch.series.push_back(sorted);
      }
      for (const auto& r : t.rows) {
        if (cell(r, c_status) == "ok" || cell(r, c_trace) != tr) continue;
        bool isnum = false;
        const double xv = numeric ? to_number(cell(r, ca), isnum)
                                  : static_cast<double>(std::find(values.begin(), values.end(), cell(r, ca)) - values.begin());
        std::string tip = axis + "=" + cell(r, ca);
        for (const std::string& other : axes)
          if (other != axis) tip += ", " + other + "=" + cell(r, col(other));
        ch.failed_x.push_back(xv);
        ch.failed_tips.push_back(tip + ": " + cell(r, c_status) + (cell(r, c_error).empty() ? "" : ": " + cell(r, c_error)));
      }
      b << render(ch);
    }
    // Pareto: time against energy; the points no other point beats on both are joined.
    XY p;
    p.id = "pareto-" + short_name(tr);
    p.title = charts.pareto_x.column == "time_s" ? "Performance vs energy (Pareto front joined)"
                                                 : charts.pareto_x.label + " vs " + charts.pareto_y.label + " (Pareto front joined)";
    p.xlabel = charts.pareto_x.label;
    p.ylabel = charts.pareto_y.label;
    p.y_from_zero = false;
    Series all, front;
    all.name = "points";
    all.color = "#4e79a7";
    std::vector<std::pair<double, double>> pts;
    std::vector<std::string> labels;  // each point's axis values, short
    for (const auto* r : ok) {
      if (cell(*r, c_trace) != tr) continue;
      bool a = false, e = false;
      const double x = to_number(cell(*r, c_px), a) * charts.pareto_x.scale, y = to_number(cell(*r, c_py), e) * charts.pareto_y.scale;
      if (!a || !e) continue;
      all.x.push_back(x);
      all.y.push_back(y);
      std::string tip = short_name(cell(*r, c_config));
      for (const std::string& ax : axes) tip += ", " + ax + "=" + cell(*r, col(ax));
      all.tips.push_back(tip + ": " + num(x) + " " + unit_of(charts.pareto_x) + ", " + num(y) + " " + unit_of(charts.pareto_y));
      pts.emplace_back(x, y);
      std::string label;
      for (const std::string& ax : axes) label += (label.empty() ? "" : " ") + cell(*r, col(ax));
      labels.push_back(several_configs ? short_name(cell(*r, c_config)) + (label.empty() ? "" : " " + label) : label);
    }
    std::vector<size_t> by_x(pts.size());
    for (size_t k = 0; k < by_x.size(); ++k) by_x[k] = k;
    std::sort(by_x.begin(), by_x.end(), [&](size_t a, size_t c) { return pts[a] < pts[c]; });
    double best = std::numeric_limits<double>::infinity();
    for (size_t k : by_x)
      if (pts[k].second < best) {
        front.x.push_back(pts[k].first), front.y.push_back(pts[k].second), best = pts[k].second;
        front.labels.push_back(labels[k]);  // the front's points say which settings they are
        front.tips.push_back(all.tips[k]);
      }
    front.name = "Pareto front";
    front.color = "#e15759";
    front.line = true;  // and its points, drawn over the others
    p.series = {all, front};
    if (!all.x.empty()) b << render(p);
    else b << "<p class=\"muted\">No energy figures (the configs name no energy table): no Pareto chart.</p>\n";
    b << "</div>\n";
  }
  // The table as one reads it: figures to four digits, files by name, errors cut (results.csv has
  // every digit, the list above every error).
  std::vector<std::vector<std::string>> shown;
  for (const auto& r : t.rows) {
    std::vector<std::string> row = r;
    for (size_t c = 0; c < row.size() && c < t.columns.size(); ++c) {
      const std::string& k = t.columns[c];
      bool isnum = false;
      const double v = to_number(row[c], isnum);
      if (k == "config" || k == c_trace_name) row[c] = short_name(row[c]);
      else if (k == "error" && row[c].size() > 60) row[c] = row[c].substr(0, 59) + "\u2026";
      else if (isnum && k != "index" && k != "id" && std::find(axes.begin(), axes.end(), k) == axes.end()) row[c] = readable(k, v);
    }
    shown.push_back(row);
  }
  b << "<h2>Points</h2>\n" << table_html(t.columns, shown, [&](const std::vector<std::string>& r) { return cell(r, c_status) != "ok"; });
  return page("Sweep " + name, b.str());
}

}  // namespace xpusim::report
