#include "sim/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace xpusim::report::svg {

namespace {

const char* kPalette[] = {"#4e79a7", "#e15759", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac", "#ff9da7"};

// What bound an op, as a category and its colour: the same in every chart.
struct BoundClass {
  const char* name;
  const char* color;
};

const BoundClass kBoundClasses[] = {{"tensor cores, MAC array", "#4e79a7"}, {"HBM, DRAM bandwidth", "#e15759"},
                                    {"L2 bandwidth", "#f28e2b"},            {"SIMT lanes, SFUs", "#59a14f"},
                                    {"NVLink, network", "#b07aa1"},         {"power limit", "#edc948"},
                                    {"latency, other", "#9c9c9c"}};

const char* kStyle =
    "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px}"
    ".charts{display:flex;flex-wrap:wrap;gap:18px}.chart{background:#fff;border:1px solid #ddd}"
    ".title{font-size:14px;font-weight:600}.tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}"
    ".legend{font-size:11px}.pt-label{font-size:10px;fill:#555}.grid{stroke:#eee}.frame{fill:none;stroke:#999}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:right}"
    "th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.muted{color:#666}"
    "tr.failed td{background:#fde8e8;color:#8b1a1a}.failures li{color:#8b1a1a}";

}  // namespace

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

std::string num(double v, int digits) {
  char b[64];
  const double a = std::abs(v);
  if (a >= 1e-3 && a < 1e6 && (a == std::round(a) || a >= std::pow(10.0, digits)))
    std::snprintf(b, sizeof b, "%.0f", v);  // 1000 and 3070, not 1e+03 and 3.07e+03
  else std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

// A time or an energy in a readable unit; zero as "0", not "0 ps".
std::string quantity(double v, units::Dim d) { return v == 0 ? "0" : units::format(v, d); }

const char* color(size_t i) { return kPalette[i % (sizeof kPalette / sizeof kPalette[0])]; }

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

std::string render(const XY& c) {
  // Tall enough for the legend (16 px an entry) when there are many series.
  size_t named = 0;
  for (const Series& s : c.series) named += !s.name.empty();
  const double W = c.width, L = 70, R = c.legend_width, T = 36, B = 52;
  const size_t legend_chars = static_cast<size_t>((R - 26) / 6);  // about 6 px a character at 11 px
  const double H = std::max(380.0, T + 6 + 16 * static_cast<double>(named) + 10);
  Scale x{0, 1, c.xlog, L, W - R}, y{0, 1, c.ylog, H - B, T};
  std::vector<double> xs, ys;
  for (const Series& s : c.series) xs.insert(xs.end(), s.x.begin(), s.x.end()), ys.insert(ys.end(), s.y.begin(), s.y.end());
  fit(x, xs, false);
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
  for (double v : x.ticks()) {
    const double px = x.map(v);
    o << "<line x1=\"" << px << "\" x2=\"" << px << "\" y1=\"" << T << "\" y2=\"" << H - B << "\" class=\"grid\"/>"
      << "<text x=\"" << px << "\" y=\"" << H - B + 16 << "\" class=\"tick\" text-anchor=\"middle\">" << num(v) << "</text>\n";
  }
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - R - L << "\" height=\"" << H - B - T << "\" class=\"frame\"/>\n";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12 << "\" class=\"label\" text-anchor=\"middle\">" << esc(c.xlabel) << "</text>\n";
  o << "<text transform=\"translate(16," << (T + H - B) / 2 << ") rotate(-90)\" class=\"label\" text-anchor=\"middle\">" << esc(c.ylabel)
    << "</text>\n";
  auto inside = [&](double vx, double vy) {
    return std::isfinite(vx) && std::isfinite(vy) && (!c.xlog || vx > 0) && (!c.ylog || vy > 0);
  };
  double ly = T + 6;
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
  o << "</svg>\n";
  return o.str();
}

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

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + esc(title) + "</title><style>" + kStyle +
         "</style></head><body>\n" + body + "</body></html>\n";
}

// A table; rows for which `flagged` says so are drawn as failed.
std::string table_html(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                       const std::function<bool(const std::vector<std::string>&)>& flagged) {
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

// Time per row coloured by what bound it, with a legend of the bounds that appear.
void bound_legend(Bars& b, const std::vector<std::string>& bounds) {
  std::vector<bool> seen(sizeof kBoundClasses / sizeof kBoundClasses[0], false);
  for (const std::string& x : bounds) seen[bound_class(x)] = true;
  for (size_t k = 0; k < seen.size(); ++k)
    if (seen[k]) b.legend_names.push_back(kBoundClasses[k].name), b.legend_colors.push_back(kBoundClasses[k].color);
}

}  // namespace xpusim::report::svg
