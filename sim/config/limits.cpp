#include "sim/config/limits.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sim/config/config_loader.h"
#include "sim/error.h"

namespace xpusim::limits {
namespace {

struct Entry {
  const char* name;
  const char* meaning;
  double lo, hi;
  bool integer;
  double Limits::*as_double;
  int64_t Limits::*as_int;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {"ops", "ops in one trace after expanding repeat blocks", 1, 1e12, true, nullptr, &Limits::ops},
      {"file_bytes", "bytes of one YAML config or trace file", 1, 1e13, true, nullptr, &Limits::file_bytes},
      {"cta_steps", "simulated CTA steps in one run (about 30 000 a second)", 1, 1e18, false, &Limits::cta_steps, nullptr},
      {"memory_share", "share of the host's available memory one run's trace may take", 0.01, 1, false,
       &Limits::memory_share, nullptr},
      {"stall_s", "simulated seconds an op may run with no CTA finishing before the watchdog stops the run", 1e-9,
       1e9, false, &Limits::stall_s, nullptr},
      {"sweep_points", "points one sweep spec may expand to (configs x traces x axis combinations)", 1, 1e12, true,
       &Limits::sweep_points, nullptr},
  };
  return e;
}

}  // namespace

Limits& current() {
  static Limits l;
  return l;
}

void set(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const std::string name = assignment.substr(0, eq);
  std::vector<std::string> names;
  for (const Entry& e : entries()) names.push_back(e.name);
  const Entry* entry = nullptr;
  for (const Entry& e : entries())
    if (name == e.name) entry = &e;
  if (!entry) {
    const std::string hint = config::closest_match(name, names);
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    throw UserError("--limit '" + assignment + "': unknown limit '" + name + "'" +
                    (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + "; one of " + all);
  }
  if (eq == std::string::npos) throw UserError("--limit '" + assignment + "': expected NAME=VALUE, e.g. ops=20000000");
  const std::string text = assignment.substr(eq + 1);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw UserError("--limit '" + assignment + "': '" + text + "' is not a number");
  if (v < entry->lo || v > entry->hi || (entry->integer && v != std::floor(v))) {
    std::ostringstream os;
    os << "--limit '" << assignment << "': " << name << " takes " << (entry->integer ? "a whole number" : "a number")
       << " in [" << entry->lo << ", " << entry->hi << "]";
    throw UserError(os.str());
  }
  if (entry->as_int) current().*(entry->as_int) = static_cast<int64_t>(v);
  else current().*(entry->as_double) = v;
}

std::string describe() {
  std::ostringstream os;
  for (const Entry& e : entries()) {
    os << "  " << e.name << "=";
    if (e.as_int) os << current().*(e.as_int);
    else os << current().*(e.as_double);
    os << ": " << e.meaning << "\n";
  }
  return os.str();
}

uint64_t host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) return std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;
  const long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size) : 0;
}

std::string raise_hint(const std::string& name) {
  return " (a limit: raise it with --limit " + name + "=N; docs/reliability.md)";
}

}  // namespace xpusim::limits
