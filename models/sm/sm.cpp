#include "models/sm/sm.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <utility>

namespace xpusim {
namespace {

TagGeometry l1_geometry(const SmParams& p) {
  TagGeometry g;
  g.size_bytes = p.l1_cache_bytes;
  g.slices = 1;
  g.associativity = p.l1_associativity;
  g.line_bytes = 128;
  g.sector_bytes = 32;
  g.hash = "modulo";
  g.track_fills = true;
  return g;
}

// A CTA's thread runs the memory path down to the DRAM's scheduler, whose deepest call (a
// std::sort) fits 64 KiB; AddressSanitizer's redzones make every frame larger, and a build with
// it at -O1 overflowed that stack (a SEGV inside the sort), so it gets four times as much. GCC
// says AddressSanitizer with __SANITIZE_ADDRESS__, clang 14 (the fuzz build's) with
// __has_feature alone, which GCC 12 lacks: hence the nesting.
#if defined(__SANITIZE_ADDRESS__)
#define XPUSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XPUSIM_ASAN 1
#endif
#endif
#ifdef XPUSIM_ASAN
constexpr size_t kCtaStackBytes = 256 * 1024;
#else
constexpr size_t kCtaStackBytes = 64 * 1024;
#endif

}  // namespace

SmStats SmStats::make(StatRegistry& reg, const std::string& prefix) {
  SmStats s;
  s.simt_busy = &reg.add(prefix + ".simt.busy", "s", "SIMT pipelines busy time summed over SMs");
  s.ctas = &reg.add(prefix + ".ctas", "CTAs", "CTAs executed");
  s.instr_mma = &reg.add(prefix + ".instructions.mma", "instructions", "Warp-level MMA instructions issued");
  s.instr_simt = &reg.add(prefix + ".instructions.simt", "instructions", "Warp-level FP32/INT/SFU instructions issued");
  s.instr_mem = &reg.add(prefix + ".instructions.mem", "instructions", "Warp-level load/store/TMA instructions issued");
  s.fp32_ops = &reg.add(prefix + ".fp32_ops", "ops", "FP32 lane operations");
  s.sfu_ops = &reg.add(prefix + ".sfu_ops", "ops", "Special-function lane operations");
  s.load_bytes = &reg.add(prefix + ".load_bytes", "bytes", "Bytes loaded from the memory system");
  s.store_bytes = &reg.add(prefix + ".store_bytes", "bytes", "Bytes stored to the memory system");
  s.l1_hit_sectors = &reg.add(prefix + ".l1.hit_sectors", "sectors", "Load sectors found in the L1");
  s.l1_miss_sectors = &reg.add(prefix + ".l1.miss_sectors", "sectors", "Load sectors the L1 fetched from L2");
  s.smem_bytes = &reg.add(prefix + ".smem_bytes", "bytes", "Shared-memory bytes read and written");
  s.tensor = TensorCoreStats::make(reg, prefix + ".tensor_core");
  return s;
}

Sm::Sm(sc_core::sc_module_name name, int id, const SmParams& p, const TensorCoreParams& tc, const ClockDomain& clock,
       SmStats& stats, double port_bytes_per_cycle)
    : sc_module(name),
      mem("mem"),
      id_(id),
      p_(p),
      stats_(stats),
      clock_(clock),
      smem_clock_hz_(clock.hz()),
      tensor_core_("tensor_core", tc, clock, stats.tensor),
      smem_(p.shared_memory_banks * p.bank_bytes * clock.hz()),
      l1_(l1_geometry(p)),
      l1_latency_s_(p.l1_latency_cycles / p.clock_hz),
      port_bytes_per_cycle_(port_bytes_per_cycle) {}

bool Sm::fits_empty(const SmParams& p, const CtaResources& r) {
  return r.threads <= p.max_warps * 32 && r.registers <= p.registers && r.shared_bytes <= p.shared_memory_bytes &&
         p.max_ctas >= 1;
}

int Sm::capacity(const CtaResources& r) const { return occupancy(p_, r); }

bool Sm::can_host(const CtaResources& r) const {
  return ctas_ + 1 <= p_.max_ctas && threads_ + r.threads <= p_.max_warps * 32 &&
         registers_ + r.registers <= p_.registers && shared_ + r.shared_bytes <= p_.shared_memory_bytes;
}

void Sm::launch(KernelRun* k, uint64_t cta, double start_s) {
  const CtaResources& r = k->program->resources;
  assert(can_host(r));
  ++ctas_;
  threads_ += r.threads;
  registers_ += r.registers;
  shared_ += r.shared_bytes;
  const bool fresh = idle_threads_.empty();
  if (fresh) {
    threads_made_.push_back(std::make_unique<CtaThread>());
    idle_threads_.push_back(threads_made_.back().get());
  }
  CtaThread* t = idle_threads_.back();
  idle_threads_.pop_back();
  t->k = k, t->cta = cta, t->start_s = start_s;
  if (!fresh) {
    t->go.notify();
    return;
  }
  sc_core::sc_spawn_options opts;
  opts.set_stack_size(kCtaStackBytes);
  sc_core::sc_spawn([this, t] { cta_thread(t); }, nullptr, &opts);
}

void Sm::cta_thread(CtaThread* t) {
  for (;;) {
    run_cta(t->k, t->cta, t->start_s);
    idle_threads_.push_back(t);
    sc_core::wait(t->go);
  }
}

void Sm::wait_until(double t) {
  const double now = sc_core::sc_time_stamp().to_seconds();
  if (t > now) sc_core::wait(sc_core::sc_time(t - now, sc_core::SC_SEC));
}

void Sm::follow_clock() {
  if (clock_.hz() == smem_clock_hz_) return;
  smem_clock_hz_ = clock_.hz();
  smem_.set_rate(p_.shared_memory_banks * p_.bank_bytes * smem_clock_hz_);
}

double Sm::issue(const std::vector<Strided>& blocks, bool write, KernelRun* k, int fanout, double after_s) {
  const double now = sc_core::sc_time_stamp().to_seconds();
  const uint64_t bytes = total_bytes(blocks);
  if (bytes == 0) return now;
  assert(bytes <= std::numeric_limits<unsigned>::max());
  (write ? stats_.store_bytes : stats_.load_bytes)->value += static_cast<double>(bytes);
  MemRequest req;
  req.blocks = &blocks;
  req.counters = &k->counters;
  req.fanout = fanout;
  tlm::tlm_generic_payload trans;
  trans.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  trans.set_address(blocks.front().base);
  trans.set_data_length(static_cast<unsigned>(bytes));
  trans.set_streaming_width(static_cast<unsigned>(bytes));
  trans.set_extension(&req);
  sc_core::sc_time delay(after_s, sc_core::SC_SEC);
  mem->b_transport(trans, delay);
  trans.clear_extension(&req);
  return now + delay.to_seconds();
}

double Sm::issue_cached(const std::vector<Strided>& blocks, KernelRun* k) {
  const double now = sc_core::sc_time_stamp().to_seconds();
  const uint64_t bytes = total_bytes(blocks);
  if (bytes == 0) return now;
  SectoredTags::Result& r = l1_result_;
  r.clear();
  for (const Strided& blk : blocks)
    for (uint64_t row = 0; row < blk.rows; ++row) l1_.access(blk.base + row * blk.stride, blk.row_bytes, false, 0, r);
  OpCounters& c = k->counters;
  c.l1_read_bytes += static_cast<double>(bytes);
  c.l1_hit_sectors += static_cast<double>(r.hit_sectors);
  c.l1_miss_sectors += static_cast<double>(r.miss_sectors);
  stats_.l1_hit_sectors->value += static_cast<double>(r.hit_sectors);
  stats_.l1_miss_sectors->value += static_cast<double>(r.miss_sectors);
  stats_.smem_bytes->value += static_cast<double>(bytes);
  // The data path reads every byte out of the L1 arrays, hit or filled.
  follow_clock();
  double done = smem_.reserve(now, now, static_cast<double>(bytes)) + l1_latency_s_;
  // Sectors present but still on their way from the L2 (another CTA's miss) arrive with it.
  done = std::max(done, r.pending_until);
  if (!r.misses.empty()) {
    const std::vector<Strided> misses = r.misses;  // the member scratch is reused by the next lookup
    const std::vector<uint64_t> filling = std::move(r.filling);
    const double fill = issue(misses, false, k, 1, l1_latency_s_);
    l1_.set_ready(filling, fill);
    done = std::max(done, fill);
  }
  return done;
}

double Sm::received_bytes(const StepWork& w) {
  return static_cast<double>(total_bytes(w.loads) + total_bytes(w.cached_loads)) +
         static_cast<double>(total_bytes(w.multicast_loads)) * w.multicast_fanout;
}

double Sm::issue_loads(const StepWork& w, KernelRun* k) {
  double own = issue(w.loads, false, k);
  if (!w.cached_loads.empty()) own = std::max(own, issue_cached(w.cached_loads, k));
  if (w.multicast_loads.empty()) return own;
  return std::max(own, issue(w.multicast_loads, false, k, w.multicast_fanout));
}

double Sm::compute(const StepWork& w, KernelRun* k) {
  const double now = sc_core::sc_time_stamp().to_seconds();
  OpCounters& c = k->counters;
  double end = tensor_core_.execute(now, w.tensor_macs, w.tensor_dtype, w.tensor_sparse, c, w.tensor_per_warp);
  const int warps = (k->program->resources.threads + 31) / 32;
  if (w.tensor_macs > 0 && w.tensor_per_warp && warps > 0 && warps < p_.sub_partitions) {
    const double alone = w.tensor_macs / tensor_core_.macs_per_clock(w.tensor_dtype, w.tensor_sparse, true) / clock_.hz();
    end = std::max(end, now + alone * p_.sub_partitions / warps);
  }
  end = std::max(end, now + w.fixed_s);
  end = std::max(end, w.until_s);
  if (w.latency_cycles > 0) end = std::max(end, now + w.latency_cycles / clock_.hz());

  // Data landing in shared memory takes the banks' bandwidth. Tensor-core operand reads are
  // counted but not timed here: their path to the banks is wider than the load/store path and
  // its width is not published (the MMA rate bounds them).
  const double smem = w.smem_read_bytes + w.smem_write_bytes;
  if (smem > 0) {
    follow_clock();
    // Without MMAs the reads are load instructions (LDS) on the load/store path: timed with the writes.
    const double timed = w.smem_write_bytes + (w.instr_mma > 0 ? 0.0 : w.smem_read_bytes);
    if (timed > 0) end = std::max(end, smem_.reserve(now, now, timed));
    stats_.smem_bytes->value += smem;
    c.smem_read_bytes += w.smem_read_bytes;
    c.smem_write_bytes += w.smem_write_bytes;
  }

  const double issue_slots = w.instr_mma + w.instr_simt + w.instr_mem;
  // FP16 FMAs pack sm.hfma_per_lane to a lane slot (HFMA2: two), DP4As sm.dp4a_per_lane. The
  // lowering refuses work on a path the SM lacks (a rate of 0), so no division by 0 is left here.
  const double lane_ops = w.fp32_ops + (w.hfma_ops > 0 ? w.hfma_ops / p_.hfma_per_lane : 0.0) +
                          (w.dp4a_ops > 0 ? w.dp4a_ops / p_.dp4a_per_lane : 0.0);
  // Each scheduler issues one instruction per clock, two with sm.dual_issue where the second is
  // independent of the first. A scheduler reaches more lanes than one warp instruction covers
  // (Kepler: 48 of the SMX's 192 per scheduler) only by pairing two lane instructions.
  const double issue_per_clock = p_.sub_partitions * (p_.dual_issue ? 2.0 : 1.0);
  const double lane_issue = w.lane_pairs ? 0.0 : w.instr_simt / p_.sub_partitions;
  const double cycles = std::max({lane_ops / p_.fp32_lanes, w.sfu_ops / p_.sfu_lanes, issue_slots / issue_per_clock, lane_issue});
  if (cycles > 0) {
    const double duration = cycles / clock_.hz();
    end = std::max(end, simt_.reserve_for(now, now, duration));
    // A warp issues from one scheduler, with that processing block's share of the lanes, so a CTA
    // of fewer warps than the SM has schedulers reaches only that many of them, whatever else runs.
    if (warps > 0 && warps < p_.sub_partitions) end = std::max(end, now + duration * p_.sub_partitions / warps);
    stats_.simt_busy->value += duration;
    c.simt_busy_s += duration;
  }
  stats_.instr_mma->value += w.instr_mma;
  stats_.instr_simt->value += w.instr_simt;
  stats_.instr_mem->value += w.instr_mem;
  stats_.fp32_ops->value += w.fp32_ops;
  stats_.sfu_ops->value += w.sfu_ops;
  c.instr_mma += w.instr_mma;
  c.instr_simt += w.instr_simt;
  c.instr_mem += w.instr_mem;
  c.fp32_ops += w.fp32_ops;
  c.hfma_ops += w.hfma_ops;
  c.dp4a_ops += w.dp4a_ops;
  c.sfu_ops += w.sfu_ops;
  c.lane_instr_simt += 32 * w.instr_simt;  // every lane of the warp active
  c.lane_instr_mem += 32 * w.instr_mem;
  c.rf_bytes += w.rf_bytes;
  return end;
}

void KernelProgram::written(double max_bytes, std::vector<Strided>& out) const {
  last_stores(num_ctas(), max_bytes, [this](uint64_t c, StepWork& w) { epilogue(c, w); }, out);
}

int occupancy(const SmParams& p, const CtaResources& r) {
  int n = p.max_ctas;
  if (r.threads > 0) n = std::min(n, p.max_warps * 32 / r.threads);
  if (r.registers > 0) n = std::min(n, p.registers / r.registers);
  if (r.shared_bytes > 0) n = std::min(n, static_cast<int>(p.shared_memory_bytes / r.shared_bytes));
  return std::max(n, 0);
}

void Sm::free_slot(const CtaResources& r) {
  --ctas_;
  threads_ -= r.threads;
  registers_ -= r.registers;
  shared_ -= r.shared_bytes;
}

void Sm::run_cta(KernelRun* k, uint64_t cta, double start_s) {
  wait_until(start_s);
  const KernelProgram& prog = *k->program;
  const double arrived = sc_core::sc_time_stamp().to_seconds();
  // A persistent kernel's turn takes over from the earliest turn of its kernel that handed its
  // slot on here, and hands its own on once it has issued its last loads and computed a step
  // (its producer moves on to the next tile as its consumers free a buffer). The next turn
  // fills its stages one per buffer its predecessor frees (a step computed), and computes once
  // the predecessor is done (its consumers' epilogue).
  std::shared_ptr<Handover> before, mine;
  if (prog.hand_over) {
    const auto it = std::find_if(handovers_.begin(), handovers_.end(), [k](const auto& h) { return h->k == k; });
    if (it != handovers_.end()) {
      before = *it;
      handovers_.erase(it);
    }
  }
  auto hand_on = [&] {
    if (!prog.hand_over) return;
    if (mine) {  // a later step: one more buffer for the next turn
      ++mine->freed;
      mine->progress.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    free_slot(prog.resources);
    mine = std::make_shared<Handover>();
    mine->k = k;
    mine->freed = 1;
    handovers_.push_back(mine);
    if (on_slot_free) on_slot_free();
  };
  double stores_done = sc_core::sc_time_stamp().to_seconds();

  StepWork pro;
  prog.prologue(cta, pro);
  const double pro_ready = issue_loads(pro, k);

  uint64_t n = prog.steps(cta);
  const uint32_t depth = static_cast<uint32_t>(std::min<uint64_t>(static_cast<uint64_t>(std::max(1, prog.stages)), n));
  std::vector<StepWork> ring(depth);
  std::vector<double> ready(depth);
  for (uint32_t i = 0; i < depth; ++i) {
    if (before)
      while (!before->done && before->freed <= i) sc_core::wait(before->progress);
    else if (i > 0 && port_bytes_per_cycle_ > 0)
      // A new CTA's producer sends its stages' requests no faster than its port brings their
      // data back (the requests a TMA unit keeps in flight are bounded): stage i leaves once
      // stage i - 1's bytes would have crossed the port. Without it every CTA's whole pipeline
      // would reach the L2 at its start, later CTAs' first stages queued behind earlier CTAs'
      // last ones.
      wait_until(sc_core::sc_time_stamp().to_seconds() + received_bytes(ring[i - 1]) / port_bytes_per_cycle_ / clock_.hz());
    prog.step(cta, i, ring[i]);
    ready[i] = issue_loads(ring[i], k);
  }
  // The CTA holds the SM's pipes from here (a turn that took over, once its predecessor is done).
  if (before)
    while (!before->done) sc_core::wait(before->progress);
  const double start = sc_core::sc_time_stamp().to_seconds();
  const double start_cycles = clock_.cycles(start);
  bool used_tensor_cores = pro.tensor_macs > 0;  // this CTA's, not the kernel's: decides the drain
  if (!before) wait_until(arrived + prog.cta_setup_s);  // its loads in flight meanwhile
  wait_until(pro_ready);
  wait_until(compute(pro, k));

  // Fast fidelity may have this CTA leave out steady steps (KernelRun::skip_steps): from the
  // next step it issues, step v stands for the program's step v + skip.
  uint64_t skip_from = n, skip = 0;
  for (uint64_t s = 0; s < n; ++s) {
    const uint32_t slot = static_cast<uint32_t>(s % depth);
    if (static_cast<int64_t>(s) == prog.timed_step && k->timed_start_s < 0) k->timed_start_s = sc_core::sc_time_stamp().to_seconds();
    wait_until(ready[slot]);
    used_tensor_cores |= ring[slot].tensor_macs > 0;
    wait_until(compute(ring[slot], k));
    stores_done = std::max(stores_done, issue(ring[slot].stores, true, k));
    if (k->count_steps) on_step(k);
    const uint64_t want = cta < k->skip_late_from ? k->skip_steps : k->skip_late;
    if (skip == 0 && want > 0 && s + depth + want < n) {
      skip = want;
      skip_from = s + depth;
      n -= skip;
      k->skipped_steps += skip;
      if (k->step_rate && on_skip) on_skip(k, skip);
    }
    if (s + depth < n) {
      ring[slot].clear();
      const uint64_t next = s + depth;
      prog.step(cta, next >= skip_from ? next + skip : next, ring[slot]);
      ready[slot] = issue_loads(ring[slot], k);
    }
    // The buffer this step freed would take the next tile's first stage: the producer is done
    // with this tile, and the next turn's loads start.
    if (s + depth >= n) hand_on();
  }

  StepWork epi;
  prog.epilogue(cta, epi);
  wait_until(issue_loads(epi, k));  // e.g. a split-K reduction's partials
  double end = compute(epi, k);
  if (used_tensor_cores || epi.tensor_macs > 0) end += tensor_core_.drain_s();
  wait_until(end);
  stores_done = std::max(stores_done, issue(epi.stores, true, k));
  wait_until(stores_done);

  const CtaResources& r = prog.resources;
  if (mine) {
    mine->done = true;
    mine->progress.notify(sc_core::SC_ZERO_TIME);
    const auto it = std::find(handovers_.begin(), handovers_.end(), mine);
    if (it != handovers_.end()) handovers_.erase(it);
  } else {
    free_slot(r);
  }
  stats_.ctas->value += 1;
  const double now = sc_core::sc_time_stamp().to_seconds();
  k->counters.cta_resident_s += now - start;
  // Clocking an SM costs energy every cycle it holds work; a full SM holds `occupancy` CTAs.
  k->counters.sm_active_cycles += (clock_.cycles(now) - start_cycles) / std::max(1, occupancy(p_, r));
  if (on_cta_done) on_cta_done(k);
}

}  // namespace xpusim
