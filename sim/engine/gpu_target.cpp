#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include "models/common/systemc.h"
#include "sim/config/limits.h"
#include "sim/config/units.h"
#include "sim/engine/gpu_system.h"
#include "sim/engine/isolated.h"
#include "sim/engine/kernel_cache.h"
#include "sim/engine/power_manager.h"
#include "sim/engine/target.h"
#include "sim/engine/workload_driver.h"
#include "sim/io/log.h"
#include "sim/trace/op_fields.h"

// The GPU (kind: gpu): one or more GPUs of a system, each built from its config (gpu_system.h),
// the ops placed on them, lowered by the kernel library and run by the workload driver.
namespace xpusim::engine {
namespace {

CollectiveKind collective_kind(trace::OpKind k) {
  switch (k) {
    case trace::OpKind::all_gather: return CollectiveKind::all_gather;
    case trace::OpKind::reduce_scatter: return CollectiveKind::reduce_scatter;
    case trace::OpKind::all_to_all: return CollectiveKind::all_to_all;
    case trace::OpKind::broadcast: return CollectiveKind::broadcast;
    case trace::OpKind::send_recv: return CollectiveKind::send_recv;
    default: return CollectiveKind::all_reduce;
  }
}

// `hbm_rate`: the GPU's HBM bandwidth, B/s, which a kernel's copy of its input (copy_in) reads
// and writes at.
CollectiveJob job_of(const trace::Op& op, const std::vector<int>& devices, double hbm_rate) {
  CollectiveJob j;
  j.kind = collective_kind(op.kind);
  j.algo = collective_algo_named(op.algorithm);
  j.proto = op.protocol == "ll"      ? CollectiveProto::ll
            : op.protocol == "ll128" ? CollectiveProto::ll128
            : op.protocol == "simple" ? CollectiveProto::simple
                                      : CollectiveProto::automatic;
  j.bytes = op.bytes;
  j.gpus = devices;
  j.copy_in = op.copy_in;
  if (op.copy_in) j.copy_in_s = 2 * op.bytes / hbm_rate;
  return j;
}

// Wall seconds between progress reports (SimOptions::progress).
constexpr double kProgressPeriodS = 0.25;

// Simulated CTA steps a second on one core, for messages: a bf16 8192^3 GEMM on h100-sxm is
// 264 192 steps in 8.8 s of wall time (docs/reliability.md).
constexpr double kStepsPerSecond = 30000;

std::string duration_text(double s) {
  char b[64];
  if (s < 120) std::snprintf(b, sizeof b, "%.0f seconds", s);
  else if (s < 7200) std::snprintf(b, sizeof b, "%.0f minutes", s / 60);
  else std::snprintf(b, sizeof b, "%.1f hours", s / 3600);
  return b;
}

// power.start steady (docs/energy-model.md): each simulated GPU's load over the whole trace,
// measured by simulating the trace once with the limit out of reach (every window at boost) in
// a child process, as SystemC elaborates once per process: its core energy per cycle at the
// nominal voltage, and its off-core power. In the order of Placement::simulated.
struct SteadyLoad {
  double activity = 0, offcore_w = 0;
};
std::vector<SteadyLoad> probe_steady_load(const Target& target, const config::LoadedConfig& cfg, const trace::Trace& t,
                                          const SimOptions& opt) {
  config::LoadedConfig probe = cfg;
  PowerParams& p = probe.chip.gpu.power;
  p.start = "idle";
  p.limit_w = 1e12;
  p.peak_ratio = 0;
  SimOptions o = opt;
  o.progress = nullptr;
  // Its kernels run uncapped under the capped config's digest: they must not reach the cache.
  o.kernel_cache.clear();
  o.kernel_cache_out.clear();
  const pid_t parent = getpid();
  std::istringstream in(finish_isolated(start_isolated([&] {
    // The probe ends with its parent (a sweep's timeout, an interrupted Python call).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) std::_Exit(1);
    SimResult r;
    target.run(probe, t, r, o);
    std::ostringstream os;
    os.precision(17);
    for (const std::vector<PowerSample>& track : r.power_tracks) {
      double core = 0, cycles = 0, offcore = 0, time = 0;
      for (const PowerSample& s : track) {
        const double dt = s.end_s - s.start_s;
        core += s.activity * s.clock_hz * dt;
        cycles += s.clock_hz * dt;
        offcore += s.offcore_w * dt;
        time += dt;
      }
      os << (cycles > 0 ? core / cycles : 0) << ' ' << (time > 0 ? offcore / time : 0) << '\n';
    }
    return os.str();
  })));
  std::vector<SteadyLoad> loads;
  SteadyLoad l;
  while (in >> l.activity >> l.offcore_w) loads.push_back(l);
  return loads;
}

[[noreturn]] void op_error(const trace::Op& op, const std::string& msg) {
  throw UserError(op.loc.str() + ": op '" + op.name + "': " + msg);
}

// What makes two kernels do the same work (fast fidelity's reuse): the op's every work field
// (trace/op_fields.h: all but its name, place and dependencies) and the program it was lowered
// to. Addresses do not count (each op's tensors are allocated anew).
std::string memo_key(const trace::Op& op, const KernelProgram& p) { return trace::work_key(op) + "\nprogram: " + p.description; }

// A collective's CTAs, as NCCL launches them, on each of its simulated GPUs
// (collectives.occupy_sms): they hold SMs from its start to its end. None where an SM cannot
// hold one (a chip without the room NCCL's kernel needs) or the kernel is not modelled.
void add_holds(const config::LoadedConfig& cfg, const Fabric& fabric, const OpResult& r,
               const std::map<int, CtaDispatcher*>& dispatcher_of, size_t index, std::vector<KernelRun>& holds,
               DriverOp& dop) {
  const config::GpuConfig& g = cfg.chip.gpu;
  if (!g.collectives.occupy_sms) return;
  const CollectiveCtas c = collective_ctas(fabric.topo(), g.collectives, r.job, choose(fabric.topo(), g.collectives, r.job));
  const CtaResources room{c.threads, c.registers, c.shared_bytes};
  if (c.ctas <= 0 || occupancy(g.sm, room) == 0) return;
  for (int d : r.devices)
    if (dispatcher_of.count(d)) holds.emplace_back();
  if (holds.empty()) return;
  dop.hold = std::make_shared<HoldProgram>(static_cast<uint64_t>(c.ctas), room, "a collective's CTAs");
  size_t k = 0;
  for (int d : r.devices)
    if (dispatcher_of.count(d)) {
      KernelRun& run = holds[k++];
      run.index = static_cast<int>(index);
      run.program = dop.hold;
      run.holds_sms = true;
      dop.holds.emplace_back(&run, dispatcher_of.at(d));
    }
}

// The kernel library's lowering of every compute op (a collective has no kernel). `work`, if
// given, receives each op's simulation work in CTA steps (0 for a collective).
std::vector<lower::LoweredOp> lower_compute(const config::LoadedConfig& cfg, const trace::Trace& t,
                                            std::vector<double>* work = nullptr) {
  lower::Lowering lowering(cfg.chip.gpu);
  std::vector<lower::LoweredOp> out;
  out.reserve(t.ops.size());
  double steps = 0;
  for (const auto& op : t.ops) {
    if (op.is_collective()) {
      out.emplace_back();
      if (work) work->push_back(0);
      continue;
    }
    out.push_back(lowering.lower(op));
    if (log::debug_enabled())
      log::debug("lowered " + op.name + " (" + trace::op_kind_name(op.kind) + " " + op.shape_text() +
                 "): " + out.back().program->description);
    // The simulation's work: CTAs times their steps (the first and last CTA bracket the tiles'
    // step counts), per GPU that runs the kernels in full.
    auto kernel_steps = [](const KernelProgram* p) {
      if (!p) return 0.0;
      const double per_cta = static_cast<double>(std::max(p->steps(0), p->num_ctas() ? p->steps(p->num_ctas() - 1) : 0)) + 1;
      return static_cast<double>(p->num_ctas()) * per_cta;
    };
    const double gpus = cfg.chip.gpu.system.detail == "representative" ? 1.0 : static_cast<double>(op.devices.size());
    const double op_steps =
        (kernel_steps(out.back().program.get()) + kernel_steps(out.back().tail.get())) * std::max(1.0, gpus);
    steps += op_steps;
    if (work) work->push_back(op_steps);
    const double limit = limits::current().cta_steps;
    if (steps > limit)
      op_error(op, "brings the run to " + units::format(steps, units::Dim::None) + " simulated CTA steps, more than the " +
                       units::format(limit, units::Dim::None) + " one run may take (about " +
                       duration_text(limit / kStepsPerSecond) + " at " + units::format(kStepsPerSecond, units::Dim::None) +
                       " steps a second)" +
                       limits::raise_hint("cta_steps"));
  }
  return out;
}

// XPUSIM_FAULT=lose-cta:OP (docs/reliability.md) loses one CTA completion of op OP's kernel,
// as a dropped transaction would; livelock:OP also makes its dispatcher wake the driver at every
// delta cycle from then on, so that simulated time stops. The watchdog's tests use them to make
// runs that cannot finish.
void inject_faults(const trace::Trace& t, std::vector<std::vector<KernelRun>>& runs) {
  const char* fault = std::getenv("XPUSIM_FAULT");
  if (!fault || !*fault) return;
  const std::string f = fault;
  const size_t colon = f.find(':');
  const std::string what = f.substr(0, colon);
  if (colon == std::string::npos || (what != "lose-cta" && what != "livelock"))
    throw UserError("XPUSIM_FAULT='" + f + "': expected lose-cta:OP or livelock:OP");
  for (size_t i = 0; i < t.ops.size(); ++i)
    if (t.ops[i].name == f.substr(colon + 1) && !runs[i].empty()) {
      runs[i].front().lose_a_cta = true;
      runs[i].front().spin_after_loss = what == "livelock";
      log::warn("fault injection: one CTA completion of '" + t.ops[i].name + "' will be lost");
      return;
    }
  throw UserError("XPUSIM_FAULT='" + f + "': no compute op of that name");
}

}  // namespace

Topology topology(const config::GpuConfig& g) { return Topology(g.system, g.nvlink, g.nvswitch, g.nic, g.network); }

Placement place(const config::LoadedConfig& cfg, const trace::Trace& t) {
  Placement p;
  const config::GpuConfig& g = cfg.chip.gpu;
  const int gpus = g.system.gpus();
  const Topology topo = topology(g);
  if (!t.memory_per_gpu.empty()) {
    double sum = 0;
    std::string parts;
    for (const auto& [what, bytes] : t.memory_per_gpu) {
      sum += bytes;
      parts += (parts.empty() ? "" : ", ") + what + " " + units::format(bytes, units::Dim::Size);
    }
    if (sum > g.hbm.capacity_bytes)
      throw UserError(t.memory_loc.str() + ": key 'memory_per_gpu': the workload needs " + units::format(sum, units::Dim::Size) +
                      " on each GPU (" + parts + ") but a GPU of this chip has " +
                      units::format(g.hbm.capacity_bytes, units::Dim::Size) +
                      " of HBM (hbm.capacity): shard more (tensor or pipeline parallelism, ZeRO), or hold less (a narrower "
                      "weight or KV-cache format, a smaller batch or context, smaller microbatches, recomputed activations); to "
                      "study a chip with more, --set hbm.capacity=SIZE");
  }
  std::set<int> used;
  for (const auto& op : t.ops) {
    std::vector<int> d = op.devices;
    if (op.all_devices) {
      d.clear();
      for (int i = 0; i < gpus; ++i) d.push_back(i);
    }
    for (int x : d)
      if (x >= gpus)
        op_error(op, "is placed on device " + std::to_string(x) + ", but the system has " + std::to_string(gpus) +
                         (gpus == 1 ? " GPU (a multi-GPU system config is under configs/systems/)"
                                    : " GPUs (system.domains x system.gpus_per_domain)"));
    if (op.is_collective()) {
      if (d.size() < 2 && op.kind != trace::OpKind::send_recv)
        op_error(op, "a collective needs at least two GPUs; this system has " + std::to_string(gpus) +
                         " (a multi-GPU system config is under configs/systems/)");
      const std::string why = unsupported(topo, job_of(op, d, g.hbm.refresh_bound_bandwidth()));
      if (!why.empty()) op_error(op, why);
      // Each GPU holds the buffer (in place), an all-to-all its send and receive buffers apart.
      const double held = op.bytes * (op.kind == trace::OpKind::all_to_all ? 2 : 1);
      if (held > g.hbm.capacity_bytes)
        op_error(op, "needs " + units::format(held, units::Dim::Size) + " of buffers on each GPU" +
                         (op.kind == trace::OpKind::all_to_all ? " (its send and receive buffers)" : "") +
                         " but a GPU has " + units::format(g.hbm.capacity_bytes, units::Dim::Size) + " of HBM");
    } else {
      used.insert(d.begin(), d.end());
    }
    p.devices.push_back(std::move(d));
  }
  if (g.system.detail == "representative") {
    // The compute ops' sets of GPUs must partition the GPUs they use (each GPU in one set: a
    // pipeline stage's GPUs over every replica, say); one GPU of each set is simulated and the
    // set's others mirror it.
    std::map<int, size_t> set_of;  // GPU -> the first op whose set holds it
    for (size_t i = 0; i < t.ops.size(); ++i) {
      if (t.ops[i].is_collective()) continue;
      for (int x : p.devices[i]) {
        const auto [it, fresh] = set_of.emplace(x, i);
        if (!fresh && p.devices[it->second] != p.devices[i])
          op_error(t.ops[i], "runs on GPUs " + t.ops[i].devices_text() + ", which share GPU " + std::to_string(x) +
                                 " with the GPUs " + t.ops[it->second].devices_text() + " of op '" + t.ops[it->second].name +
                                 "' (" + t.ops[it->second].loc.str() + "); system.detail: representative simulates one GPU "
                                 "per set of GPUs that run the same ops, and needs those sets apart (use detail: full)");
      }
    }
    p.representative = true;
    std::set<int> firsts;
    for (const auto& [x, i] : set_of) firsts.insert(p.devices[i].front());
    p.simulated.assign(firsts.begin(), firsts.end());
  } else {
    p.simulated.assign(used.begin(), used.end());
  }
  return p;
}

namespace {

class GpuTarget : public Target {
 public:
  std::vector<lower::LoweredOp> lower_all(const config::LoadedConfig& cfg, const trace::Trace& t) const override {
    place(cfg, t);
    return lower_compute(cfg, t);
  }

  void run(const config::LoadedConfig& cfg, const trace::Trace& t, SimResult& out, const SimOptions& opt) const override;
};

void GpuTarget::run(const config::LoadedConfig& cfg, const trace::Trace& t, SimResult& out, const SimOptions& opt) const {
  const config::GpuConfig& g = cfg.chip.gpu;
  const Placement placement = place(cfg, t);
  std::vector<double> work;
  std::vector<lower::LoweredOp> lowered = lower_compute(cfg, t, &work);
  // Before this process elaborates any module: the probe's child must.
  std::vector<SteadyLoad> steady;
  if (g.power.capped() && g.power.start == "steady") steady = probe_steady_load(*this, cfg, t, opt);
  out.gpus = g.system.gpus();
  out.simulated_gpus = placement.simulated;
  out.representative = placement.representative;

  // One GPU model per simulated GPU; device 0 keeps the plain name "gpu".
  std::vector<std::unique_ptr<GpuSystem>> systems;
  std::map<int, CtaDispatcher*> dispatcher_of;
  std::vector<CtaDispatcher*> dispatchers;
  std::unique_ptr<PowerManager> power;
  if (g.power.capped()) power = std::make_unique<PowerManager>(g.power, *cfg.energy_table, g.noc.dies);
  std::map<int, int> governor_of;  // device -> its governor in `power`
  for (int d : placement.simulated) {
    const std::string name = d == 0 ? "gpu" : "gpu" + std::to_string(d);
    systems.push_back(std::make_unique<GpuSystem>(name.c_str(), g, out.stats));
    dispatcher_of[d] = &systems.back()->dispatcher();
    dispatchers.push_back(&systems.back()->dispatcher());
    if (power) governor_of[d] = power->add_gpu(systems.back()->clock());
  }
  if (power && g.power.start == "steady") {
    if (steady.size() == placement.simulated.size())
      for (size_t i = 0; i < steady.size(); ++i)
        power->hold_steady(governor_of[placement.simulated[i]], steady[i].activity, steady[i].offcore_w);
    else  // the probe stalled (the run will too, and say where)
      log::warn("power.start steady: the first simulation measured no load; the run starts from idle");
  }
  const bool fast = opt.fidelity == Fidelity::fast;
  MemoTable memo;
  if (fast) {
    FastPathParams fp;
    fp.extrapolate = fp.memoise = true;
    fp.tolerance = opt.tolerance;
    // A replay wakes every control window so that the governor sees its load as it accrues.
    fp.replay_tick_s = g.power.capped() ? g.power.control_period_s : 1e-4;
    for (auto& sys : systems) sys->enable_fast_path(fp, &memo);
  }
  // A trace of collectives alone simulates no GPU's SMs: no kernel to record or replay.
  const uint64_t cache_digest =
      fast && !opt.kernel_cache.empty() && !systems.empty() ? kernel_cache_digest(cfg, opt.tolerance) : 0;
  if (cache_digest) load_kernel_cache(opt.kernel_cache, cache_digest, systems.front()->stat_count(), memo);
  bool any_collective = false;
  for (const auto& op : t.ops) any_collective = any_collective || op.is_collective();
  std::unique_ptr<Fabric> fabric;
  if (any_collective) fabric = std::make_unique<Fabric>("fabric", topology(g), out.stats);

  const size_t n = t.ops.size();
  out.ops.resize(n);
  std::vector<std::vector<KernelRun>> runs(n), tails(n);  // per op: its kernel, its second kernel, per GPU
  std::vector<std::vector<KernelRun>> holds(n);           // per collective: its CTAs, per simulated GPU
  std::vector<DriverOp> dops(n);
  std::vector<std::vector<size_t>> preds(n);
  std::map<std::pair<int, int>, size_t> last_on_stream;  // (device, stream) -> op
  for (size_t i = 0; i < n; ++i) {
    const trace::Op& op = t.ops[i];
    OpResult& r = out.ops[i];
    r.devices = placement.devices[i];
    r.collective = op.is_collective();
    dops[i].label = "'" + op.name + "' (" + op.loc.str() + ")";
    dops[i].kernel_costs = !op.is_timed_gap();
    dops[i].issue_slot = op.kind != trace::OpKind::host;
    dops[i].host_serial_s = op.kind == trace::OpKind::host && op.stream == 0 ? op.duration_s : 0;
    if (r.collective) {
      r.job = job_of(op, r.devices, cfg.chip.gpu.hbm.refresh_bound_bandwidth());
      dops[i].collective = &r.job;
      dops[i].collective_run = &r.coll;
      add_holds(cfg, *fabric, r, dispatcher_of, i, holds[i], dops[i]);
    } else {
      for (int d : r.devices)
        if (dispatcher_of.count(d)) runs[i].emplace_back();
      const std::string key = fast && !runs[i].empty() ? memo_key(op, *lowered[i].program) : std::string();
      for (KernelRun& k : runs[i]) {
        k.index = static_cast<int>(i);
        k.program = lowered[i].program;
        k.memo_key = key;
      }
      if (lowered[i].tail) {
        tails[i].resize(runs[i].size());
        for (KernelRun& k : tails[i]) {
          k.index = static_cast<int>(i);
          k.tail = true;
          k.program = lowered[i].tail;
          k.memo_key = key.empty() ? key : key + "\nsecond kernel";
        }
      }
      size_t k = 0;
      for (int d : r.devices)
        if (dispatcher_of.count(d)) {
          if (power) power->add_run(governor_of[d], &runs[i][k], op.switching);
          dops[i].kernels.emplace_back(&runs[i][k], dispatcher_of[d]);
          if (!tails[i].empty()) {
            if (power) power->add_run(governor_of[d], &tails[i][k], op.switching);
            dops[i].tail.emplace_back(&tails[i][k], dispatcher_of[d]);
          }
          ++k;
        }
    }
    preds[i] = op.deps;
    for (int d : r.devices) {
      auto it = last_on_stream.find({d, op.stream});
      if (it != last_on_stream.end()) preds[i].push_back(it->second);
      last_on_stream[{d, op.stream}] = i;
    }
    std::sort(preds[i].begin(), preds[i].end());
    preds[i].erase(std::unique(preds[i].begin(), preds[i].end()), preds[i].end());
  }

  // The watchdog's window: the stall_s limit, or longer where a timed gap of the trace alone
  // lasts longer (a delay or host op is one CTA that finishes after its duration).
  double window = limits::current().stall_s;
  for (const auto& op : t.ops)
    if (op.is_timed_gap()) window = std::max(window, 2 * op.duration_s);
  inject_faults(t, runs);
  LaunchCosts launch{g.kernels.launch_gap_s, g.kernels.kernel_start_s, g.kernels.kernel_end_s,
                     t.eager_issue_s >= 0               ? t.eager_issue_s
                     : g.kernels.launch_mode == "eager" ? g.kernels.eager_issue_s
                                                        : 0};
  WorkloadDriver driver("driver", dops, std::move(preds), launch, dispatchers, fabric.get(), g.collectives);
  std::function<void()> on_slice;
  if (opt.progress) {
    // Op classes in the order they first appear in the trace.
    std::vector<std::string> classes;
    std::vector<size_t> class_of(n);
    double total_work = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string c = trace::op_kind_name(t.ops[i].kind);
      const auto it = std::find(classes.begin(), classes.end(), c);
      class_of[i] = static_cast<size_t>(it - classes.begin());
      if (it == classes.end()) classes.push_back(c);
      total_work += work[i];
    }
    // Slices are microseconds of simulated time; the tally runs at most every kProgressPeriod of
    // wall time.
    auto tallied = std::chrono::steady_clock::now();
    on_slice = [&, classes, class_of, total_work, tallied]() mutable {
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - tallied).count() < kProgressPeriodS) return;
      tallied = now;
      Progress p;
      p.ops_total = n;
      p.ops_done = driver.ops_done();
      p.simulated_s = sc_core::sc_time_stamp().to_seconds();
      for (const std::string& c : classes) p.by_class.push_back({c, {0, 0}});
      double done = 0;
      for (size_t i = 0; i < n; ++i) {
        auto& [d, all] = p.by_class[class_of[i]].second;
        ++all;
        if (driver.op_done(i)) {
          ++d;
          done += work[i];
        } else if (!runs[i].empty()) {
          const KernelRun& k = runs[i].front();
          const double ctas = static_cast<double>(k.program->num_ctas());
          if (ctas > 0) done += work[i] * static_cast<double>(k.done_ctas) / ctas;
        }
      }
      p.work_done = total_work > 0 ? done / total_work : static_cast<double>(p.ops_done) / static_cast<double>(std::max<size_t>(1, n));
      opt.progress(p);
    };
  }
  if (power)
    driver.run_watched(window, g.power.control_period_s, [&](double a, double b) { power->tick(a, b); }, on_slice);
  else
    driver.run_watched(window, 0, nullptr, on_slice, 50e-6);
  if (!driver.stall().empty()) {
    out.stall = driver.stall();
    return;
  }
  if (cache_digest) save_kernel_cache(opt.kernel_cache_out.empty() ? opt.kernel_cache : opt.kernel_cache_out, cache_digest, memo);
  const double end = sc_core::sc_time_stamp().to_seconds();
  for (auto& sys : systems) sys->finalize(end);
  if (power)
    for (int d : placement.simulated) out.power_tracks.push_back(power->track(governor_of[d]));
  for (size_t i = 0; i < n; ++i) {
    OpResult& r = out.ops[i];
    r.lowered = std::move(lowered[i]);
    r.start_s = dops[i].start_s;
    r.end_s = dops[i].end_s;
    if (!r.collective) {
      r.run = runs[i].front();
      if (power) r.core_scale = power->core_scale(&runs[i].front());
      for (const KernelRun& k : runs[i]) r.all_devices += k.counters;
      // A second kernel: the op's counters are both kernels', and it ends with the second.
      if (!tails[i].empty()) {
        const KernelRun& t = tails[i].front();
        r.run.counters += t.counters;
        r.run.end_s = t.end_s;
        // Its CTAs are not among the op's reported CTAs, so neither are any it extrapolated.
        r.run.extrapolated_s += t.extrapolated_s;
        r.run.skipped_steps += t.skipped_steps;
        for (const KernelRun& k : tails[i]) r.all_devices += k.counters;
      }
      // Representative detail: the mirrored GPUs did what the simulated one did.
      if (placement.representative && r.devices.size() > 1) r.all_devices.scale(static_cast<double>(r.devices.size()));
    }
    out.end_s = std::max(out.end_s, r.end_s);
  }
}

}  // namespace

const Target& gpu_target() {
  static const GpuTarget target;
  return target;
}

}  // namespace xpusim::engine
