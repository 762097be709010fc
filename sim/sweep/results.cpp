#include "sim/sweep/results.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "sim/config/yaml_util.h"
#include "sim/error.h"
#include "sim/io/csv.h"
#include "sim/io/files.h"
#include "sim/io/json_strict.h"
#include "sim/report/json_writer.h"

namespace xpusim::sweep {
namespace fs = std::filesystem;
using report::JsonWriter;

namespace {

const std::vector<std::string> kNumeric = {"index", "time_s", "tflops", "energy_j", "tops_per_w", "power_w",
                                           "joules_per_token", "tokens_per_s", "tensor_util", "hbm_bandwidth",
                                           "hbm_peak_bandwidth", "l2_hit_rate", "sms", "sm_clock_hz",
                                           // serve points
                                           "requests", "finished", "throughput_rps", "output_tokens_per_s",
                                           "goodput_rps", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
                                           "tbt_p99_s", "e2e_p99_s", "joules_per_output_token", "busy_fraction",
                                           "preemptions", "kv_blocks"};

bool numeric(const std::string& column) { return std::find(kNumeric.begin(), kNumeric.end(), column) != kNumeric.end(); }

std::string csv_quote(const std::string& s) { return io::csv_field(s); }

}  // namespace

const std::vector<std::string>& metric_columns(Kind kind) {
  static const std::vector<std::string> run = {"chip",        "time_s",        "tflops",        "energy_j",
                                               "tops_per_w",  "power_w",       "joules_per_token", "tokens_per_s",
                                               "bound",       "tensor_util",   "hbm_bandwidth", "hbm_peak_bandwidth",
                                               "l2_hit_rate", "sms",           "sm_clock_hz",   "out"};
  static const std::vector<std::string> serve = {
      "requests",   "finished",   "throughput_rps", "output_tokens_per_s", "goodput_rps", "ttft_p50_s",
      "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",     "tbt_p99_s",           "e2e_p99_s",   "energy_j",
      "joules_per_output_token", "power_w", "busy_fraction", "preemptions", "kv_blocks", "out"};
  return kind == Kind::Serve ? serve : run;
}

Row Row::start(const Point& p, const std::string& out_dir) {
  Row r;
  r.index = p.index;
  r.id = p.id;
  auto add = [&](const std::string& k, const std::string& v) {
    r.fields.emplace_back(k, Field{v, numeric(k) && !v.empty()});
  };
  add("index", std::to_string(p.index));
  add("id", p.id);
  add("status", "ok");
  add("error", "");
  add("config", p.config);
  add(p.kind == Kind::Serve ? "model" : "trace", p.trace);
  for (const auto& [k, v] : p.axes) r.fields.emplace_back(k, Field{v, false});
  for (const std::string& k : metric_columns(p.kind)) add(k, k == "out" ? out_dir : "");
  return r;
}

void Row::add_serve_summary(const YAML::Node& s) {
  auto put = [&](const std::string& k, const YAML::Node& v) {
    for (auto& [key, f] : fields)
      if (key == k && v && v.IsScalar()) f = Field{v.Scalar(), numeric(k)};
  };
  put("requests", find_path(s, {"requests"}));
  put("finished", find_path(s, {"finished"}));
  put("throughput_rps", find_path(s, {"throughput_rps"}));
  put("output_tokens_per_s", find_path(s, {"output_tokens_per_s"}));
  put("goodput_rps", find_path(s, {"goodput_rps"}));
  for (const char* q : {"p50", "p99"}) {
    put(std::string("ttft_") + q + "_s", find_path(s, {"ttft_s", q}));
    put(std::string("tpot_") + q + "_s", find_path(s, {"tpot_s", q}));
  }
  put("tbt_p99_s", find_path(s, {"tbt_s", "p99"}));
  put("e2e_p99_s", find_path(s, {"e2e_s", "p99"}));
  put("energy_j", find_path(s, {"energy_j"}));
  put("joules_per_output_token", find_path(s, {"joules_per_output_token"}));
  put("power_w", find_path(s, {"average_power_w"}));
  put("busy_fraction", find_path(s, {"busy_fraction"}));
  put("preemptions", find_path(s, {"preemptions"}));
  put("kv_blocks", find_path(s, {"kv_cache", "blocks"}));
}

void Row::add_report(const YAML::Node& rep) {
  auto put = [&](const std::string& k, const YAML::Node& v) {
    for (auto& [key, f] : fields)
      if (key == k && v && v.IsScalar()) f = Field{v.Scalar(), numeric(k)};
  };
  put("chip", find_path(rep, {"config", "name"}));
  put("time_s", find_path(rep, {"total", "time_s"}));
  put("tflops", find_path(rep, {"total", "tflops"}));
  put("energy_j", find_path(rep, {"total", "energy", "total_j"}));
  put("tops_per_w", find_path(rep, {"total", "energy", "tops_per_w"}));
  put("power_w", find_path(rep, {"total", "energy", "average_power_w"}));
  put("joules_per_token", find_path(rep, {"total", "energy", "joules_per_token"}));
  put("bound", find_path(rep, {"total", "bound"}));
  put("tensor_util", find_path(rep, {"total", "utilisation", "tensor_cores"}));
  put("hbm_bandwidth", find_path(rep, {"total", "memory", "hbm_bandwidth"}));
  put("hbm_peak_bandwidth", find_path(rep, {"chip", "hbm_peak_bandwidth"}));
  put("l2_hit_rate", find_path(rep, {"total", "memory", "l2_hit_rate"}));
  put("sms", find_path(rep, {"chip", "sms"}));
  // The clock the SMs ran: the governor's mean under power.mode capped, else the configured one.
  const YAML::Node governed = find_path(rep, {"total", "power", "sm_clock_hz"});
  put("sm_clock_hz", governed.IsScalar() ? governed : find_path(rep, {"chip", "sm_clock_hz"}));
  const YAML::Node tokens = find_path(rep, {"trace", "tokens"}), time = find_path(rep, {"total", "time_s"});
  if (tokens.IsScalar() && time.IsScalar() && time.as<double>() > 0) put("tokens_per_s", YAML::Node(JsonWriter::number(tokens.as<double>() / time.as<double>())));
}

void Row::set_failed(const std::string& e) {
  for (auto& [k, f] : fields) {
    if (k == "status") f.text = "failed";
    if (k == "error") f.text = e;
  }
}

bool Row::failed() const {
  const Field* s = get("status");
  return s && s->text != "ok";
}

std::string Row::error() const { return failed() ? get("error")->text : ""; }

const Field* Row::get(const std::string& key) const {
  for (const auto& [k, f] : fields)
    if (k == key) return &f;
  return nullptr;
}

std::string Row::json() const {
  std::string s = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& [k, f] = fields[i];
    s += (i ? ", " : "") + JsonWriter::escape(k) + ": ";
    s += f.number ? f.text : f.text.empty() && numeric(k) ? "null" : JsonWriter::escape(f.text);
  }
  return s + "}";
}

std::string Row::csv() const {
  std::string s;
  for (size_t i = 0; i < fields.size(); ++i) s += (i ? "," : "") + csv_quote(fields[i].second.text);
  return s;
}

Row Row::parse(const std::string& line, const std::vector<Point>& points, const std::map<std::string, size_t>* by_id) {
  io::check_strict_json(line, "results.jsonl", 1);  // a row cut short, or not ours
  const YAML::Node n = YAML::Load(line);
  if (!n.IsMap() || !n["index"] || !n["id"] || !n["status"]) throw std::runtime_error("not a result row");
  size_t index = 0;
  if (by_id) {
    const auto it = by_id->find(n["id"].Scalar());
    if (it == by_id->end()) throw OtherSpec("a row of a point this spec no longer has");
    index = it->second;
  } else {
    index = n["index"].as<size_t>();
    if (index >= points.size() || points[index].id != n["id"].Scalar()) throw std::runtime_error("a row of another spec");
  }
  Row r = start(points[index], n["out"] && !n["out"].IsNull() ? n["out"].Scalar() : "");
  for (auto& [k, f] : r.fields) {
    if (k == "index") continue;  // where the point stands now
    if (n[k] && n[k].IsScalar()) f = Field{n[k].Scalar(), f.number || numeric(k)};
    else if (n[k] && n[k].IsNull()) f = Field{"", false};
  }
  return r;
}

Results::Results(fs::path root, const Spec& spec, const std::vector<Point>& points)
    : root_(std::move(root)), spec_(spec), points_(points) {}

std::string Results::header() const {
  const Row r = Row::start(points_.front(), "");
  std::string s;
  for (size_t i = 0; i < r.fields.size(); ++i) s += (i ? "," : "") + csv_quote(r.fields[i].first);
  return s + "\n";
}

std::vector<size_t> Results::open(bool resume, bool retry_failed) {
  const fs::path jsonl = root_ / "results.jsonl";
  if (fs::exists(jsonl) && !resume)
    throw UserError(jsonl.string() + " exists: give --resume to run only what is missing, or another --out");
  io::make_directory(root_);
  std::set<size_t> have;
  if (resume && fs::exists(jsonl)) {
    std::map<std::string, size_t> by_id;
    for (const Point& p : points_) by_id.emplace(p.id, p.index);
    std::ifstream f(jsonl);
    std::string line;
    size_t bad = 0, other = 0;
    while (std::getline(f, line)) {
      if (line.empty()) continue;
      try {
        Row r = Row::parse(line, points_, &by_id);
        if ((retry_failed && r.failed()) || have.count(r.index)) continue;
        have.insert(r.index);
        rows_.push_back(std::move(r));
      } catch (const Row::OtherSpec&) {
        ++other;  // a finished point the edited spec no longer has
      } catch (const std::exception&) {
        ++bad;  // a line cut short by a kill
      }
    }
    // Resuming rewrites the files from the rows kept: finished results of points the spec no
    // longer has would be lost, so they stop the sweep instead.
    if (other > 0)
      throw UserError(jsonl.string() + ": " + std::to_string(other) + " finished row" + (other == 1 ? " is" : "s are") +
                      " of points this spec no longer has (it was edited since they ran); resuming would delete them. "
                      "Give another --out, or move the folder's results away to drop them");
    if (bad > 0) std::fprintf(stderr, "warning: %s: %zu line%s cut short, dropped\n", jsonl.c_str(), bad, bad == 1 ? "" : "s");
  }
  rewrite();  // afresh from the rows kept, so that appends follow whole lines
  std::vector<size_t> todo;
  for (const Point& p : points_)
    if (!have.count(p.index)) todo.push_back(p.index);
  return todo;
}

void Results::rewrite() const {
  std::string j, c = header();
  for (const Row& r : rows_) j += r.json() + "\n", c += r.csv() + "\n";
  io::write_atomically(root_ / "results.jsonl", j);
  io::write_atomically(root_ / "results.csv", c);
}

void Results::append(const Row& r) {
  io::append_durably(root_ / "results.jsonl", r.json() + "\n");
  io::append_durably(root_ / "results.csv", r.csv() + "\n");
  rows_.push_back(r);
}

void Results::finish() {
  std::sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) { return a.index < b.index; });
  rewrite();
  // What the page (sweep.html, drawn by `xpusim plot sweep`) needs beside the results: the
  // sweep's name, description, kind and axes in the spec's order.
  JsonWriter w;
  w.begin_object().field("xpusim_sweep_page", 1LL).field("name", spec_.name).field("description", spec_.description);
  w.field("kind", std::string(spec_.kind == Kind::Serve ? "serve" : "run"));
  w.key("axes").begin_array();
  for (const Axis& a : spec_.axes) w.value(a.key);
  w.end_array().end_object();
  io::write_atomically(root_ / "sweep.json", w.str() + "\n");
}

size_t Results::ok_count() const {
  return static_cast<size_t>(std::count_if(rows_.begin(), rows_.end(), [](const Row& r) { return !r.failed(); }));
}
size_t Results::failed_count() const { return rows_.size() - ok_count(); }

}  // namespace xpusim::sweep
