#include "sim/report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "sim/config/units.h"
#include "sim/report/svg_chart.h"

namespace xpusim::report {
namespace {

// The chart primitives (svg_chart.h), by their short names.
using svg::color;
using svg::esc;
using svg::num;
using svg::page;
using svg::render;
using svg::Series;
using svg::table_html;
using svg::to_number;
using svg::XY;

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
