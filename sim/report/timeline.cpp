// timeline.json: Chrome trace events (chrome://tracing, Perfetto), a view of the Report.
#include <algorithm>
#include <tuple>
#include <vector>

#include "sim/report/json_writer.h"
#include "sim/report/report.h"

namespace xpusim::report {

std::string to_timeline(const Report& rep) {
  JsonWriter w;
  w.begin_object();
  w.key("displayTimeUnit").value("ns");
  w.key("traceEvents").begin_array();
  // A track per GPU; under representative detail (Report::representative) one per GPU
  // simulated, for the GPUs that mirror it did the same: a thousand GPUs' run stays the size of
  // its simulated GPUs' (an event per op and GPU, else a 1,024-GPU step writes hundreds of
  // millions).
  std::vector<int> gpus;
  if (rep.representative) {
    gpus = rep.simulated_gpus;
  } else {
    for (const OpReport& o : rep.ops) gpus.insert(gpus.end(), o.devices.begin(), o.devices.end());
  }
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  const auto track = [&gpus](int d) {
    const auto it = std::lower_bound(gpus.begin(), gpus.end(), d);
    return it != gpus.end() && *it == d ? static_cast<long>(it - gpus.begin()) : -1L;
  };
  for (int d : gpus) {
    w.begin_object().field("name", "process_name").field("ph", "M").field("pid", static_cast<long long>(d));
    w.key("args").begin_object().field("name", rep.config_name + " GPU " + std::to_string(d)).end_object();
    w.end_object();
  }
  // Each track's ops' edges: time, d(bandwidth), d(utilisation), for the counters below.
  std::vector<std::vector<std::tuple<double, double, double>>> ev(gpus.size());
  for (const OpReport& o : rep.ops)
    for (int d : o.devices) {
      const long t = track(d);
      if (t < 0) continue;
      const Metrics& m = o.m;
      w.begin_object().field("name", o.name).field("cat", o.kind).field("ph", "X");
      w.field("ts", m.start_s * 1e6).field("dur", m.time_s * 1e6);
      w.field("pid", static_cast<long long>(d)).field("tid", static_cast<long long>(o.stream));
      w.key("args").begin_object().field("shape", o.shape).field("bound", m.bound);
      if (m.collective) w.field("algorithm", m.algorithm).field("protocol", m.protocol).field("busbw_GBps", m.busbw / 1e9);
      else w.field("tflops", m.tflops);
      w.end_object();
      w.end_object();
      if (m.time_s > 0) {
        ev[static_cast<size_t>(t)].emplace_back(m.start_s, m.hbm_bandwidth, m.tensor_util);
        ev[static_cast<size_t>(t)].emplace_back(m.start_s + m.time_s, -m.hbm_bandwidth, -m.tensor_util);
      }
    }
  // Counter tracks per GPU: HBM bandwidth and tensor-core utilisation over time, each op's
  // average spread evenly over its span (the sum of the ops running at once; an op's figures
  // are per GPU already). Steps at op boundaries, not samples inside an op. Under
  // the power governor, the chip's power, its time-constant average and the SM clock per
  // governor window join them (windows already merged where steady), in time order.
  struct Counter {
    double ts;
    const char* name;
    const char* unit;
    double value;
  };
  for (size_t t = 0; t < gpus.size(); ++t) {
    const int d = gpus[t];
    std::vector<Counter> counters;
    std::vector<std::tuple<double, double, double>>& edges = ev[t];
    std::sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    double bw = 0, util = 0;
    for (size_t i = 0; i < edges.size(); ++i) {
      bw += std::get<1>(edges[i]);
      util += std::get<2>(edges[i]);
      if (i + 1 < edges.size() && std::get<0>(edges[i + 1]) == std::get<0>(edges[i])) continue;  // same instant
      const double ts = std::get<0>(edges[i]) * 1e6;
      counters.push_back({ts, "HBM bandwidth", "GB/s", std::max(0.0, bw) / 1e9});
      counters.push_back({ts, "tensor cores", "busy %", std::clamp(util, 0.0, 1.0) * 100});
    }
    const auto g = std::find(rep.power.gpus.begin(), rep.power.gpus.end(), d);
    if (g != rep.power.gpus.end() && static_cast<size_t>(g - rep.power.gpus.begin()) < rep.power.tracks.size()) {
      for (const PowerSample& s : rep.power.tracks[static_cast<size_t>(g - rep.power.gpus.begin())]) {
        const double ts = s.start_s * 1e6;
        counters.push_back({ts, "power", "W", s.power_w});
        counters.push_back({ts, "power, time-constant average", "W", s.filtered_w});
        counters.push_back({ts, "SM clock", "MHz", s.clock_hz / 1e6});
      }
      std::stable_sort(counters.begin(), counters.end(), [](const Counter& a, const Counter& b) { return a.ts < b.ts; });
    }
    for (const Counter& c : counters) {
      w.begin_object().field("name", c.name).field("ph", "C").field("ts", c.ts).field("pid", static_cast<long long>(d));
      w.key("args").begin_object().field(c.unit, c.value).end_object().end_object();
    }
  }
  w.end_array();
  w.end_object();
  return w.str();
}

}  // namespace xpusim::report
