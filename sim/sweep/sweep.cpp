#include "sim/sweep/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "sim/config/config_loader.h"
#include "sim/config/yaml_util.h"
#include "sim/io/files.h"
#include "sim/report/json_writer.h"
#include "sim/sweep/results.h"
#include "sim/trace/trace.h"

#ifdef XPUSIM_WITH_MPI
#include <mpi.h>
#endif

extern char** environ;

namespace xpusim::sweep {
namespace fs = std::filesystem;

namespace {

// Whether an error message names the flag --`flag` (and not a longer one: --rate is not --rates).
bool names_flag(const std::string& what, const std::string& flag) {
  const std::string f = "--" + flag;
  for (size_t at = what.find(f); at != std::string::npos; at = what.find(f, at + 1)) {
    const size_t end = at + f.size();
    if (end == what.size() || !(std::isalnum(static_cast<unsigned char>(what[end])) || what[end] == '-' || what[end] == '_'))
      return true;
  }
  return false;
}

// Runs `exe args...` with no input and returns its exit status and what it wrote (both streams).
std::pair<int, std::string> run_captured(const std::string& exe, const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) throw UserError(std::string("cannot start a check: ") + std::strerror(errno));
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw UserError("cannot start " + exe + ": " + std::strerror(rc));
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text};
}

}  // namespace

void validate(const Spec& s, const std::vector<Point>& points, const std::string& self_exe) {
  auto axis_of = [&](const std::string& what) -> const Axis* {
    for (const Axis& a : s.axes)
      if (what.find("'" + a.key + "'") != std::string::npos || what.find(a.key + "=") != std::string::npos) return &a;
    for (const Axis& a : s.axes)  // a trace axis's error names the override as --trace-set gives it: 'dtype=fp9'
      if (a.key.rfind(kTracePrefix, 0) == 0 && what.find("'" + a.key.substr(kTracePrefix.size()) + "=") != std::string::npos) return &a;
    return nullptr;
  };
  std::set<std::string> configs_done, traces_done;
  for (const Point& p : points) {
    std::string ckey = p.config;
    for (const auto& x : p.sets) ckey += "\n" + x;
    try {
      if (configs_done.insert(ckey).second) config::load_config(p.config, p.sets);
      if (p.kind == Kind::Serve) {
        std::vector<std::string> check = point_args(p, "", "", 1);  // no folder: a check writes nothing
        std::string key;
        for (const auto& a : check) key += a + "\n";
        if (!traces_done.insert(key).second) continue;
        check.push_back("--check");
        const auto [status, text] = run_captured(self_exe, check);
        if (status != 0) {
          std::string why = text;
          while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
          const size_t last = why.rfind('\n');  // argparse writes its usage first
          if (last != std::string::npos && why.compare(last + 1, 7, "xpusim-") == 0) why = why.substr(last + 1);
          throw UserError("xpusim serve refuses the point (" + p.trace + "): " + why);
        }
        continue;
      }
      std::string tkey = p.trace;
      for (const auto& x : p.trace_sets) tkey += "\n" + x;
      if (traces_done.insert(tkey).second) {
        trace::Trace t = trace::load_trace(p.trace);
        for (const auto& x : p.trace_sets) {
          const size_t eq = x.find('=');
          trace::apply_override(t, x.substr(0, eq), x.substr(eq + 1));
        }
      }
    } catch (const UserError& e) {
      if (p.kind == Kind::Serve) {
        // Name where the spec gives the flags `xpusim serve` objects to: one place, or each.
        std::vector<std::string> where;
        for (const Axis& a : s.axes)
          if (a.key.rfind(kServePrefix, 0) == 0 && names_flag(e.what(), a.key.substr(kServePrefix.size())))
            where.push_back(a.loc.str() + ": axis '" + a.key + "'");
        for (size_t i = 0; i < s.serve_options.size(); ++i)
          if (names_flag(e.what(), s.serve_options[i].first))
            where.push_back(s.serve_option_locs[i].str() + ": key 'serve." + s.serve_options[i].first + "'");
        if (where.size() == 1) throw UserError(where[0] + ": " + e.what());
        std::string at;
        for (const std::string& w : where) at += (at.empty() ? " (given at " : "; ") + w;
        throw UserError(s.file + ": point " + std::to_string(p.index) + ": " + e.what() + (at.empty() ? "" : at + ")"));
      }
      const Axis* a = axis_of(e.what());
      if (a) throw UserError(a->loc.str() + ": axis '" + a->key + "': " + e.what());
      throw UserError(s.file + ": point " + std::to_string(p.index) + ": " + e.what());
    }
  }
}

bool under_mpi() {
#ifdef XPUSIM_WITH_MPI
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
#endif
  return false;
}

namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_signal(int) { g_stop = 1; }

struct Running {
  pid_t pid = 0;
  const Point* point = nullptr;
  std::chrono::steady_clock::time_point start;
  bool timed_out = false;  // killed for running past --timeout
};

fs::path point_dir(const fs::path& root, const Point& p) { return root / "points" / (std::to_string(p.index) + "-" + p.id); }

pid_t spawn(const Options& opt, const Point& p, const fs::path& dir, const fs::path& root) {
  std::vector<std::string> args = {opt.self_exe};
  const std::vector<std::string> mine = point_args(p, dir.string(), (root / "step-cache.json").string(), opt.serve_jobs);
  args.insert(args.end(), mine.begin(), mine.end());
  if (p.kind == Kind::Run) {
    for (const auto& x : opt.limits) args.insert(args.end(), {"--limit", x});
    args.insert(args.end(), opt.run_args.begin(), opt.run_args.end());
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log = (dir / "log.txt").string();
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, opt.self_exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw UserError("cannot start " + opt.self_exe + ": " + std::strerror(rc));
  return pid;
}

// The row of a finished point: its report's headline figures, or its error.
Row finish(const Point& p, int status, const fs::path& dir, const fs::path& out_root, double timed_out_after) {
  Row r = Row::start(p, fs::relative(dir, out_root).string());
  if (timed_out_after > 0) {
    std::ostringstream os;
    os << "timed out: still running after " << timed_out_after << " s of wall time (--timeout)";
    r.set_failed(os.str());
    return r;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    const std::string file = p.kind == Kind::Serve ? "summary.json" : "report.json";
    try {
      if (p.kind == Kind::Serve) r.add_serve_summary(YAML::LoadFile((dir / file).string()));
      else r.add_report(YAML::LoadFile((dir / file).string()));
      return r;
    } catch (const std::exception& e) {
      r.set_failed("cannot read " + file + ": " + e.what());
      return r;
    }
  }
  std::string error = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "exit status " + std::to_string(WEXITSTATUS(status));
  std::ifstream log(dir / "log.txt");
  std::string line, last;
  while (std::getline(log, line))
    if (line.rfind("error:", 0) == 0 || line.rfind("internal error", 0) == 0 || line.rfind("xpusim-serve:", 0) == 0) last = line;
  if (!last.empty()) error = last + " (" + error + ")";
  r.set_failed(error);
  return r;
}

std::string eta_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  std::ostringstream os;
  if (t >= 3600) os << t / 3600 << "h" << (t % 3600) / 60 << "m";
  else if (t >= 60) os << t / 60 << "m" << t % 60 << "s";
  else os << t << "s";
  return os.str();
}

}  // namespace

int run(const Spec& spec, const std::vector<Point>& points, const Options& opt, std::ostream& out) {
  int rank = 0, ranks = 1;
#ifdef XPUSIM_WITH_MPI
  const bool mpi = under_mpi();
  if (mpi) {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  }
#endif
  const fs::path root = opt.out;
  Results results(root, spec, points);
  std::vector<size_t> todo;
  std::string setup_error;
  if (rank == 0) {
    try {
      todo = results.open(opt.resume, opt.retry_failed);
    } catch (const UserError& e) {
      setup_error = e.what();
    }
  }
#ifdef XPUSIM_WITH_MPI
  if (mpi) {
    // Rank 0 decides what is left to run (it alone reads and writes the results).
    int bad = setup_error.empty() ? 0 : 1;
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad) {
      MPI_Finalize();
      if (rank == 0) throw UserError(setup_error);
      return 1;
    }
    unsigned long long n = todo.size();
    MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    std::vector<unsigned long long> v(todo.begin(), todo.end());
    v.resize(n);
    MPI_Bcast(v.data(), static_cast<int>(n), MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    todo.assign(v.begin(), v.end());
  }
#endif
  if (!setup_error.empty()) throw UserError(setup_error);
  const size_t total = todo.size();
  std::vector<size_t> mine;  // this rank's share: every ranks-th point
  for (size_t i = static_cast<size_t>(rank); i < todo.size(); i += static_cast<size_t>(ranks)) mine.push_back(todo[i]);
  if (rank == 0) {
    out << "sweep " << spec.name << ": " << points.size() << " points";
    if (points.size() != total) out << ", " << points.size() - total << " already done, " << total << " to run";
    out << " (" << opt.jobs << " at a time" << (ranks > 1 ? " on each of " + std::to_string(ranks) + " MPI ranks" : "") << "), results in "
        << root.string() << "\n";
    out.flush();
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  std::vector<Running> running;
  size_t next = 0, done = 0, failed = 0;
  int ranks_finished = 0;
  bool told_done = false;
  const auto t0 = std::chrono::steady_clock::now();
  auto record = [&](const Row& r) {
    results.append(r);
    ++done;
    if (r.failed()) ++failed;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double eta = el / static_cast<double>(done) * static_cast<double>(total - done);
    if (opt.progress_bar) {
      const int width = 30, fill = static_cast<int>(width * static_cast<double>(done) / static_cast<double>(std::max<size_t>(1, total)));
      out << "\r[" << std::string(static_cast<size_t>(fill), '#') << std::string(static_cast<size_t>(width - fill), '.') << "] " << done
          << "/" << total << " points, " << failed << " failed, ETA " << eta_text(eta) << "   " << std::flush;
    } else {
      out << "sweep: " << done << "/" << total << " point " << r.index << " " << (r.failed() ? "failed: " + r.error() : "ok")
          << " (ETA " << eta_text(eta) << ")\n"
          << std::flush;
    }
  };

  while (!g_stop) {
    while (static_cast<int>(running.size()) < opt.jobs && next < mine.size() && !g_stop) {
      const Point& p = points[mine[next++]];
      const fs::path dir = point_dir(root, p);
      io::make_directory(dir);
      running.push_back({spawn(opt, p, dir, root), &p, std::chrono::steady_clock::now()});
    }
    bool progressed = false;
    for (size_t i = 0; i < running.size();) {
      int status = 0;
      const pid_t r = waitpid(running[i].pid, &status, WNOHANG);
      if (r == 0) {
        const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - running[i].start).count();
        if (opt.timeout_s > 0 && el > opt.timeout_s && !running[i].timed_out) {
          kill(running[i].pid, SIGKILL);
          running[i].timed_out = true;
        }
        ++i;
        continue;
      }
      const Point& p = *running[i].point;
      Row row = finish(p, status, point_dir(root, p), root, running[i].timed_out ? opt.timeout_s : 0);
      running.erase(running.begin() + static_cast<long>(i));
      progressed = true;
#ifdef XPUSIM_WITH_MPI
      if (mpi && rank != 0) {
        const std::string line = row.json();
        MPI_Send(line.data(), static_cast<int>(line.size()), MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        continue;
      }
#endif
      record(row);
    }
#ifdef XPUSIM_WITH_MPI
    if (mpi) {
      if (rank != 0 && running.empty() && next == mine.size() && !told_done) {
        MPI_Send(nullptr, 0, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
        told_done = true;
      }
      if (rank == 0) {
        int flag = 1;
        while (flag) {
          MPI_Status st;
          MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
          if (!flag) break;
          int len = 0;
          MPI_Get_count(&st, MPI_CHAR, &len);
          std::string buf(static_cast<size_t>(len), '\0');
          MPI_Recv(buf.data(), len, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          if (st.MPI_TAG == 2) ++ranks_finished;
          else record(Row::parse(buf, points));
          progressed = true;
        }
      }
      const bool all_in = rank != 0 ? told_done : ranks_finished == ranks - 1;
      if (running.empty() && next == mine.size() && all_in) break;
    } else if (running.empty() && next == mine.size()) {
      break;
    }
#else
    (void)told_done;
    (void)ranks_finished;
    if (running.empty() && next == mine.size()) break;
#endif
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  if (g_stop) {
    for (const Running& r : running) kill(r.pid, SIGTERM);
    for (const Running& r : running) waitpid(r.pid, nullptr, 0);
    if (opt.progress_bar) out << "\n";
    out << "sweep interrupted: " << done << " finished point" << (done == 1 ? "" : "s") << " kept in " << (root / "results.jsonl").string()
        << "; run again with --resume for the rest\n";
#ifdef XPUSIM_WITH_MPI
    if (mpi) MPI_Abort(MPI_COMM_WORLD, 130);
#endif
    return 130;
  }
  if (rank == 0) {
    if (opt.progress_bar) out << "\n";
    results.finish();
    // The page is drawn in Python (xpusim.plots, matplotlib) by `xpusim plot sweep`: where it
    // cannot be, the results stand and the warning says how to draw it later.
    std::error_code gone;
    fs::remove(root / "sweep.html", gone);  // an earlier run's page would no longer show these results
    const auto [page_rc, page_text] = run_captured(opt.self_exe, {"plot", "sweep", root.string()});
    out << "sweep " << spec.name << ": " << results.ok_count() << " of " << points.size() << " points ok";
    if (results.failed_count() > 0) out << ", " << results.failed_count() << " failed (their errors are in results.csv)";
    out << "; wrote " << (root / "results.csv").string() << ", results.jsonl" << (page_rc == 0 ? ", sweep.html" : "") << "\n";
    if (page_rc != 0) {
      std::string why = page_text;
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      if (const size_t nl = why.find_last_of('\n'); nl != std::string::npos) why = why.substr(nl + 1);
      if (why.rfind("error: ", 0) == 0) why = why.substr(7);
      if (why.empty()) why = "exit status " + std::to_string(page_rc);
      out.flush();  // the summary above, then the warning
      std::fprintf(stderr, "warning: sweep.html not drawn (%s); the results are complete: draw it with `xpusim plot sweep %s`\n",
                   why.c_str(), root.c_str());
    }
  }
#ifdef XPUSIM_WITH_MPI
  if (mpi) MPI_Finalize();
#endif
  return 0;
}

}  // namespace xpusim::sweep
