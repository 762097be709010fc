#include "sim/report/power.h"

#include <algorithm>
#include <cmath>

namespace xpusim::report {

SpanPower over_span(const std::vector<PowerSample>& track, double start_s, double end_s, double nominal_voltage) {
  SpanPower s;
  const auto first = std::lower_bound(track.begin(), track.end(), start_s,
                                      [](const PowerSample& p, double t) { return p.end_s <= t; });
  double clock = 0, volt = 0, power = 0, leak = 0, throttled = 0;
  for (auto it = first; it != track.end() && it->start_s < end_s; ++it) {
    const double dt = std::min(end_s, it->end_s) - std::max(start_s, it->start_s);
    if (dt <= 0) continue;
    const double r = it->voltage_v / nominal_voltage;
    clock += it->clock_hz * dt;
    volt += it->voltage_v * dt;
    power += it->power_w * dt;
    leak += r * r * dt;
    if (it->throttled) throttled += dt;
    s.seconds += dt;
  }
  if (s.seconds > 0) {
    s.clock_hz = clock / s.seconds;
    s.voltage = volt / s.seconds;
    s.power_w = power / s.seconds;
    s.leakage_scale = leak / s.seconds;
    s.throttled_share = throttled / s.seconds;
  } else if (!track.empty()) {
    // A span inside no window (zero length): the state of the nearest window.
    const PowerSample& p = first != track.end() ? *first : track.back();
    const double r = p.voltage_v / nominal_voltage;
    s.clock_hz = p.clock_hz;
    s.voltage = p.voltage_v;
    s.power_w = p.power_w;
    s.leakage_scale = r * r;
    s.throttled_share = p.throttled ? 1 : 0;
  }
  return s;
}

void set_power(Metrics& m, const SpanPower& s) {
  m.has_power = true;
  m.clock_hz = s.clock_hz;
  m.voltage = s.voltage;
  m.chip_power_w = s.power_w;
  m.throttled_share = s.throttled_share;
  // Throttled compute runs slower for it; a memory-bound op is bound by its memory either way.
  const bool memory_bound = m.bound == "HBM bandwidth" || m.bound == "L2 bandwidth" || m.bound == "DRAM bandwidth";
  if (s.throttled_share >= 0.5 && !memory_bound && !m.collective) m.bound = "power";
  if (m.time_s > 0) m.cycles = m.time_s * s.clock_hz;
}

std::vector<PowerSample> merge_steady(const std::vector<PowerSample>& track) {
  std::vector<PowerSample> out;
  for (const PowerSample& s : track) {
    if (!out.empty()) {
      PowerSample& m = out.back();
      if (m.clock_hz == s.clock_hz && m.throttled == s.throttled && std::abs(s.power_w - m.power_w) <= 0.01 * m.power_w) {
        const double a = m.end_s - m.start_s, b = s.end_s - s.start_s;
        if (a + b > 0)
          for (double PowerSample::*f : {&PowerSample::power_w, &PowerSample::activity, &PowerSample::offcore_w})
            m.*f = (m.*f * a + s.*f * b) / (a + b);  // one clock: time weights are cycle weights
        m.end_s = s.end_s;
        m.filtered_w = s.filtered_w;  // the average at the run's end
        continue;
      }
    }
    out.push_back(s);
  }
  return out;
}

double bound_track(std::vector<PowerSample>& track, size_t max_entries) {
  if (track.size() <= max_entries || max_entries == 0) return 0;
  const double t0 = track.front().start_s;
  const double span = (track.back().end_s - t0) / static_cast<double>(max_entries);
  // Each span's sums (clock, voltage, power and off-core power by time; activity, an energy per
  // cycle, by cycles), turned into means at the end.
  struct Sums {
    PowerSample s;
    double dt = 0, cycles = 0, throttled = 0;
  };
  std::vector<Sums> spans;
  bool open = false;
  for (const PowerSample& x : track) {
    // A new span, unless the bound is reached (the grid's rounding can leave one over): then
    // the last takes the rest.
    if (!open && spans.size() < max_entries) {
      spans.emplace_back();
      spans.back().s.start_s = x.start_s;
    }
    open = true;
    Sums& a = spans.back();
    const double dt = x.end_s - x.start_s;
    a.s.end_s = x.end_s;
    a.s.voltage_v += x.voltage_v * dt, a.s.power_w += x.power_w * dt, a.s.offcore_w += x.offcore_w * dt;
    a.s.activity += x.activity * x.clock_hz * dt;
    a.s.filtered_w = x.filtered_w;  // the average at the span's end
    a.cycles += x.clock_hz * dt;
    a.dt += dt;
    if (x.throttled) a.throttled += dt;
    // Spans end on a grid of `span` from the track's start: at the window whose end comes
    // nearest the next line (so equal windows a little shorter than `span` stay one each).
    const double line = t0 + static_cast<double>(spans.size()) * span;
    if (x.end_s >= line - 0.5 * dt) open = false;
  }
  track.clear();
  for (Sums& a : spans) {
    if (a.dt <= 0) continue;
    a.s.clock_hz = a.cycles / a.dt;
    a.s.voltage_v /= a.dt, a.s.power_w /= a.dt, a.s.offcore_w /= a.dt;
    a.s.activity = a.cycles > 0 ? a.s.activity / a.cycles : 0;
    a.s.throttled = a.throttled >= 0.5 * a.dt;
    track.push_back(a.s);
  }
  return span;
}

PowerInfo power_info(const PowerParams& p, std::vector<int> gpus, const std::vector<std::vector<PowerSample>>& tracks) {
  PowerInfo info;
  info.capped = true;
  info.limit_w = p.limit_w;
  info.peak_ratio = p.peak_ratio;
  info.base_clock_hz = p.base_clock_hz;
  info.boost_clock_hz = p.boost_clock_hz;
  info.idle_floor_w = p.idle_floor_w;
  info.time_constant_s = p.time_constant_s;
  info.start = p.start;
  info.gpus = std::move(gpus);
  if (!p.vf_curve.empty()) info.lowest_clock_hz = Governor::lowest_clock(p);
  for (const auto& tr : tracks) {
    for (const PowerSample& x : tr) {
      info.peak_filtered_w = std::max(info.peak_filtered_w, x.filtered_w);
      if (x.clock_hz <= info.lowest_clock_hz * (1 + 1e-9) && x.power_w > p.limit_w) info.unheld_w = std::max(info.unheld_w, x.power_w);
    }
    info.tracks.push_back(merge_steady(tr));
    info.track_span_s = std::max(info.track_span_s, bound_track(info.tracks.back(), kMaxTrackEntries));
  }
  return info;
}

void write_power_settings(JsonWriter& w, const PowerInfo& p) {
  w.key("power").begin_object();
  w.field("mode", "capped").field("limit_w", p.limit_w).field("peak_ratio", p.peak_ratio).field("base_clock_hz", p.base_clock_hz);
  w.field("boost_clock_hz", p.boost_clock_hz).field("idle_floor_w", p.idle_floor_w);
  w.field("time_constant_s", p.time_constant_s).field("start", p.start);
  w.field("peak_average_power_w", p.peak_filtered_w);
  w.field("limit_held", p.unheld_w == 0).field("lowest_clock_hz", p.lowest_clock_hz);
  w.field("track_span_s", p.track_span_s);
  if (p.unheld_w > 0) w.field("power_at_lowest_clock_w", p.unheld_w);
  // Each simulated GPU's governor windows (merged where steady): the source of the timeline's
  // power track and the HTML chart.
  w.key("track").begin_array();
  for (size_t g = 0; g < p.tracks.size(); ++g)
    for (const PowerSample& s : p.tracks[g]) {
      w.begin_object().field("gpu", static_cast<long long>(p.gpus[g])).field("start_s", s.start_s).field("end_s", s.end_s);
      w.field("sm_clock_hz", s.clock_hz).field("voltage", s.voltage_v).field("power_w", s.power_w);
      w.field("average_power_w", s.filtered_w).field("throttled", s.throttled).end_object();
    }
  w.end_array();
  w.end_object();
}

void write_power_metrics(JsonWriter& w, const Metrics& m) {
  if (!m.has_power) return;
  w.key("power").begin_object();
  w.field("sm_clock_hz", m.clock_hz).field("voltage", m.voltage).field("chip_power_w", m.chip_power_w);
  w.field("throttled_share", m.throttled_share);
  w.end_object();
}

}  // namespace xpusim::report
