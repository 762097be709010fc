#include "sim/engine/simulate.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>

#include <spdlog/spdlog.h>

#include "models/common/systemc.h"
#include "sim/engine/gpu_system.h"
#include "sim/lower/accel_lowering.h"
#include "sim/report/report.h"

namespace xpusim::engine {

std::vector<lower::LoweredOp> lower_all(const config::LoadedConfig& cfg, const trace::Trace& t) {
  if (cfg.chip.kind != "gpu") {
    lower::lower_accelerator(cfg, t);  // throws for what the accelerator cannot run
    return {};
  }
  lower::Lowering lowering(cfg.chip.gpu);
  std::vector<lower::LoweredOp> out;
  out.reserve(t.ops.size());
  for (const auto& op : t.ops) {
    out.push_back(lowering.lower(op));
    spdlog::debug("lowered {} ({} {}): {}", op.name, trace::op_kind_name(op.kind), op.shape_text(),
                  out.back().program->description);
  }
  return out;
}

void simulate(const config::LoadedConfig& cfg, const trace::Trace& t, SimResult& out) {
  if (cfg.chip.kind == "accelerator") {
    // Ops run in trace order (the accelerator has one queue).
    out.accel_ops = lower::lower_accelerator(cfg, t);
    accel::Accelerator acc("accelerator", cfg.chip.accel.accelerator, cfg.chip.accel.dram, out.accel_ops);
    sc_core::sc_start();
    for (const auto& op : out.accel_ops) out.end_s = std::max(out.end_s, op.end_s);
    return;
  }
  std::vector<lower::LoweredOp> lowered = lower_all(cfg, t);
  out.ops.resize(t.ops.size());
  std::vector<KernelRun> runs(t.ops.size());
  std::vector<std::vector<size_t>> preds(t.ops.size());
  std::map<int, size_t> last_on_stream;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    runs[i].index = static_cast<int>(i);
    runs[i].program = lowered[i].program;
    preds[i] = t.ops[i].deps;
    auto it = last_on_stream.find(t.ops[i].stream);
    if (it != last_on_stream.end()) preds[i].push_back(it->second);
    last_on_stream[t.ops[i].stream] = i;
    std::sort(preds[i].begin(), preds[i].end());
    preds[i].erase(std::unique(preds[i].begin(), preds[i].end()), preds[i].end());
  }

  GpuSystem gpu("gpu", cfg.chip.gpu, out.stats);
  WorkloadDriver driver("driver", gpu.dispatcher(), runs, std::move(preds), cfg.chip.gpu.kernels.launch_gap_s);
  sc_core::sc_start();
  if (!driver.all_done()) throw std::logic_error("simulation ended with kernels unfinished");
  gpu.finalize(sc_core::sc_time_stamp().to_seconds());
  for (size_t i = 0; i < runs.size(); ++i) {
    out.ops[i].lowered = std::move(lowered[i]);
    out.ops[i].run = runs[i];
    out.end_s = std::max(out.end_s, runs[i].end_s);
  }
}

std::string simulate_isolated(const config::LoadedConfig& cfg, const trace::Trace& t) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string payload;
    char status = 'O';
    try {
      SimResult r;
      simulate(cfg, t, r);
      payload = report::to_json(cfg, t, r);
    } catch (const UserError& e) {
      status = 'U';
      payload = e.what();
    } catch (const std::exception& e) {
      status = 'E';
      payload = e.what();
    }
    payload.insert(payload.begin(), status);
    size_t off = 0;
    while (off < payload.size()) {
      const ssize_t n = write(fds[1], payload.data() + off, payload.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string data;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) data.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (data.empty()) throw std::runtime_error("simulation child died without a result");
  const char status = data[0];
  data.erase(0, 1);
  if (status == 'U') throw UserError(data);
  if (status == 'E') throw std::runtime_error(data);
  return data;
}

}  // namespace xpusim::engine
