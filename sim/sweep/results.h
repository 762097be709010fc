#pragma once
// A sweep's results: one row per point, appended to results.jsonl and results.csv as each point
// finishes, rewritten in point order when the sweep completes, and read back by --resume.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/sweep/sweep.h"

namespace xpusim::sweep {

struct Field {
  std::string text;
  bool number = false;
};

struct Row {
  size_t index = 0;
  std::string id;
  std::vector<std::pair<std::string, Field>> fields;  // every column, in column order

  static Row start(const Point& p, const std::string& out_dir);
  // Headline figures of a run point's report.json.
  void add_report(const YAML::Node& report);
  // Headline figures of a serve point's summary.json (docs/serving.md).
  void add_serve_summary(const YAML::Node& summary);
  void set_failed(const std::string& error);
  bool failed() const;
  std::string error() const;  // "" for a point that ran
  const Field* get(const std::string& key) const;
  std::string json() const;  // one line, no newline
  std::string csv() const;
  // A row as json() wrote it; throws std::runtime_error if it is not one of `points`. With
  // `by_id` the row is found by its point's identity, wherever the point now stands (a spec
  // edited since: axis values added or reordered), and throws OtherSpec if no point has it.
  struct OtherSpec : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  static Row parse(const std::string& line, const std::vector<Point>& points,
                   const std::map<std::string, size_t>* by_id = nullptr);
};

// The metric columns, after index, id, status, error, config, trace (a serve sweep: model) and
// the axes.
const std::vector<std::string>& metric_columns(Kind kind);

class Results {
 public:
  Results(std::filesystem::path root, const Spec& spec, const std::vector<Point>& points);
  // Creates the folder, or with resume reads back what an earlier run finished (a truncated
  // last line is dropped). Returns the indices of the points still to run.
  std::vector<size_t> open(bool resume, bool retry_failed);
  void append(const Row& r);
  // Rewrites results.jsonl and results.csv in point order and writes sweep.json, what the page
  // (sweep.html) is drawn from beside them.
  void finish();
  size_t ok_count() const;
  size_t failed_count() const;

 private:
  std::string header() const;
  void rewrite() const;  // both files, whole, from rows_
  std::filesystem::path root_;
  const Spec& spec_;
  const std::vector<Point>& points_;
  std::vector<Row> rows_;
};

}  // namespace xpusim::sweep
