#pragma once
// Inline-SVG charts and the HTML page around them, for the self-contained reports (html.h):
// line and scatter charts on linear or log axes, stacked horizontal bars, tables.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "sim/config/units.h"

namespace xpusim::report::svg {

std::string esc(const std::string& s);  // HTML-escaped text
std::string num(double v, int digits = 3);
// A time or an energy in a readable unit; zero as "0", not "0 ps".
std::string quantity(double v, units::Dim d);
const char* color(size_t i);  // the palette's i-th colour, cycling
// What bound an op, as one of a fixed set of categories and its colour: the same in every chart.
size_t bound_class(const std::string& bound);
const char* bound_color(const std::string& bound);

struct Series {
  std::string name;
  std::string color;
  std::vector<double> x, y;
  std::vector<std::string> tips;
  bool line = false, points = true, dashed = false;
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

struct XY {
  std::string id, title, xlabel, ylabel;
  double width = 640, legend_width = 170;  // the legend's column is at the right
  bool xlog = false, ylog = false, y_from_zero = true;
  std::vector<Series> series;
};

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

void fit(Scale& s, const std::vector<double>& vals, bool from_zero);
std::string render(const XY& c);
std::string render(const Bars& b);
// A legend of the bound categories that appear in `bounds`, for bars coloured by bound_color.
void bound_legend(Bars& b, const std::vector<std::string>& bounds);

std::string page(const std::string& title, const std::string& body);
// A table; rows for which `flagged` says so are drawn as failed.
std::string table_html(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                       const std::function<bool(const std::vector<std::string>&)>& flagged = nullptr);
// `s` as a number; ok says whether all of it was one.
double to_number(const std::string& s, bool& ok);

}  // namespace xpusim::report::svg
