// How a GEMM's output tiles are spread over CTAs beyond one CTA per tile: split-K (its estimate,
// its choice together with the tile, and the second kernel that adds the partials), stream-K
// for a ragged last wave, and persistent kernels. gemm.cpp holds the tile walk these build on.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/lower/gemm_program.h"
#include "sim/lower/lower_util.h"

namespace xpusim::lower {

double GemmProgram::split_estimate_s(const config::GpuConfig& gpu, int64_t s, double eff_rate) const {
  const SmParams& sm = gpu.sm;
  const double n_tiles = static_cast<double>(tiles());
  const double steps = std::ceil(static_cast<double>(k_steps()) / static_cast<double>(s));
  const int cps = std::max(1, occupancy(sm, resources));
  const double slots = static_cast<double>(sm.count) * cps;
  const double ctas = n_tiles * static_cast<double>(s);
  const double waves = std::ceil(ctas / slots);
  // Load latency: under full load the queues in the L2 and the memory controllers about double
  // the idle latency (an assumption of this heuristic).
  const double idle_latency = idle_load_latency_s(gpu);
  const double loaded_latency = 2 * idle_latency;
  // The SMs' tensor work wave by wave, or a CTA's K loop where each round trip of loads brings
  // only `stages` steps.
  const double per_sm = std::min<double>(cps, std::ceil(ctas / sm.count));
  const double tiles_s = steps * step_cycles(gpu, bm, bn, per_sm, eff_rate) / sm.clock_hz;
  const double loop_s = steps * loaded_latency / std::max(1, stages);
  const double compute_s = waves * std::max(tiles_s, loop_s);
  // HBM: every operand byte once and the output once, at the rate the resident CTAs' loads in
  // flight sustain (Little's law: `stages` steps of the rows they really load, per CTA).
  const double ei = in_bits / 8.0;
  const double step_bytes = static_cast<double>(std::min(bm, M) * bk) * ei + static_cast<double>(bk * bn) * b_elem_bytes;
  const double in_flight = std::min(ctas, slots) * std::max(1, stages) * step_bytes;
  const double hbm_rate = std::min(gpu.hbm.peak_bandwidth(), in_flight / loaded_latency);
  const double hbm_s = hbm_bytes() / hbm_rate;
  // The L2's operand traffic, K padded to whole steps of every split.
  const double l2_s = l2_operand_bytes(n_tiles, bm, bn, steps * static_cast<double>(s) * bk) / gpu.l2.bandwidth;
  return std::max({compute_s, hbm_s, l2_s}) + reduction_s(gpu, s);
}

double GemmProgram::reduction_s(const config::GpuConfig& gpu, int64_t s) const {
  if (s <= 1) return 0;
  const SmParams& sm = gpu.sm;
  const double idle_latency = idle_load_latency_s(gpu);
  if (reduce_kernel) {
    // Every split's copy of the output written and read back through the L2, the adds spread
    // over the SMs, and the second kernel's launch (the first one's end, the gap, its start),
    // its loads' round trip and its output.
    const KernelLibParams& kl = gpu.kernels;
    const double outputs = static_cast<double>(batch) * M * N;
    return outputs * 4.0 * 2.0 * static_cast<double>(s) / gpu.l2.bandwidth + idle_latency +
           outputs * static_cast<double>(s) / (sm.fp32_lanes * sm.count) / sm.clock_hz +
           (accumulate ? 2 : 1) * outputs * out_bits / 8.0 / gpu.l2.bandwidth + kl.kernel_end_s + kl.launch_gap_s + kl.kernel_start_s;
  }
  const double partial_bytes = static_cast<double>(tiles()) * static_cast<double>(bm * bn) * 4.0 * 2.0 * static_cast<double>(s - 1);
  return partial_bytes / gpu.l2.bandwidth + idle_latency +
         static_cast<double>(bm * bn) * static_cast<double>(s - 1) / sm.fp32_lanes / sm.clock_hz;
}

namespace {

class SplitKReduce : public KernelProgram {
 public:
  uint64_t elements = 0;  // output elements, batches included
  // An assumption: 256 threads of four fp32 elements each (one 16-byte load per split); the
  // kernel is bound by its loads, not by its shape.
  uint64_t per_cta = 1024;
  int64_t splits = 2;
  int out_bits = 16;
  bool accumulate = false;  // C's old values added too (GemmProgram::accumulate)
  uint64_t ws = 0, c = 0;

  uint64_t num_ctas() const override { return div_up(elements, per_cta); }
  uint64_t steps(uint64_t) const override { return 1; }
  uint64_t count(uint64_t cta) const { return std::min(per_cta, elements - cta * per_cta); }
  void step(uint64_t cta, uint64_t, StepWork& w) const override {
    // The run's element in every split's copy: one load per split, one add per element and copy.
    const uint64_t n = count(cta);
    w.loads.push_back({ws + cta * per_cta * 4, static_cast<uint64_t>(splits), n * 4, elements * 4});
    w.fp32_ops = static_cast<double>(n) * static_cast<double>(splits);
    w.instr_simt = w.fp32_ops / 32.0;
    w.instr_mem = static_cast<double>(splits) * static_cast<double>(n) / (static_cast<double>(resources.threads) * 4);
  }
  void epilogue(uint64_t cta, StepWork& w) const override {
    const uint64_t bytes = bytes_of(count(cta), out_bits);
    const Strided run{c + bytes_of(cta * per_cta, out_bits), 1, bytes, bytes};
    if (accumulate) {
      w.loads.push_back(run);
      w.fp32_ops += static_cast<double>(count(cta));
      w.instr_simt += static_cast<double>(count(cta)) / 32.0;
      w.instr_mem += 1;
    }
    w.stores.push_back(run);
    w.instr_mem += 1;
  }
};

}  // namespace

std::shared_ptr<KernelProgram> make_split_k_reduce(const GemmProgram& p) {
  auto r = std::make_shared<SplitKReduce>();
  r->elements = static_cast<uint64_t>(p.batch * p.M * p.N);
  r->splits = p.splits;
  r->out_bits = p.out_bits;
  r->accumulate = p.accumulate;
  r->ws = p.ws;
  r->c = p.c;
  r->stages = 1;
  r->resources = CtaResources{256, 256 * 32, 0};
  r->description = "split-K reduction kernel: " + std::to_string(r->per_cta) + " outputs per CTA from " +
                   std::to_string(p.splits) + " partials";
  return r;
}

void GemmProgram::choose_splits(const config::GpuConfig& gpu, double eff_rate) {
  splits = 1;
  if (conv) return;
  const double unsplit = split_estimate_s(gpu, 1, eff_rate);
  double best = unsplit * 0.9;
  const TriedTile chosen{bm, bn, stages, resources};
  TriedTile winner = chosen;
  // The chosen tile first: another tile wins only by a better estimate.
  std::vector<TriedTile> order{chosen};
  for (const TriedTile& t : tried)  // empty unless splits_choose_tile()
    if (t.bm != chosen.bm || t.bn != chosen.bn) order.push_back(t);
  auto take = [this](const TriedTile& t) {
    bm = t.bm;
    bn = t.bn;
    stages = t.stages;
    resources = t.resources;
    count_tiles();
  };
  for (const TriedTile& t : order) {
    take(t);
    const int cps = std::max(1, occupancy(gpu.sm, resources));
    const double slots = static_cast<double>(gpu.sm.count) * cps;
    // More splits than fill one wave, or than leave each split a full pipeline of K steps, do
    // not pay; kMaxSplits bounds the workspace as libraries do.
    constexpr int64_t kMaxSplits = 16;
    const int64_t by_slots = static_cast<int64_t>(slots / static_cast<double>(tiles()));
    const int64_t by_steps = static_cast<int64_t>(k_steps()) / std::max(1, stages);
    const int64_t most = std::min({kMaxSplits, by_slots, by_steps});
    for (int64_t s = 2; s <= most; ++s) {
      const double est = split_estimate_s(gpu, s, eff_rate);
      if (est < best) {
        best = est;
        splits = s;
        winner = t;
      }
    }
  }
  take(winner);
  tried.clear();
  tried.shrink_to_fit();
}

double GemmProgram::stream_k_estimate_s(const config::GpuConfig& gpu, double eff_rate, int64_t ctas, uint64_t dp,
                                        double* tensor_s) const {
  // As split_estimate_s, with the work per SM balanced: the data-parallel tiles in whole waves,
  // then the stream-K iterations spread evenly over `ctas` CTAs.
  const SmParams& sm = gpu.sm;
  const int cps = std::max(1, occupancy(sm, resources));
  const double I = static_cast<double>(k_steps());
  const double sk_iters = static_cast<double>(tiles() - dp) * I;
  const double per_cta = std::ceil(sk_iters / static_cast<double>(ctas));
  const double dp_waves = std::ceil(static_cast<double>(dp) / (static_cast<double>(sm.count) * cps));
  const double idle_latency = idle_load_latency_s(gpu);
  const double loaded_latency = 2 * idle_latency;
  const double per_sm = std::min<double>(cps, std::ceil(static_cast<double>(ctas) / sm.count));
  const double loop = std::max(1, stages);
  const double compute_s =
      dp_waves * std::max(I * step_cycles(gpu, bm, bn, cps, eff_rate) / sm.clock_hz, I * loaded_latency / loop) +
      (sk_iters > 0 ? std::max(per_cta * step_cycles(gpu, bm, bn, per_sm, eff_rate) / sm.clock_hz, per_cta * loaded_latency / loop) : 0.0);
  if (tensor_s) *tensor_s = compute_s;
  const double hbm_s = hbm_bytes() / gpu.hbm.peak_bandwidth();
  const double l2_s = l2_operand_bytes(static_cast<double>(tiles()), bm, bn, I * static_cast<double>(bk)) / gpu.l2.bandwidth;
  // Fixup: at most one partial per stream-K CTA, written and read back, each tile's adds.
  const double fixup_s = static_cast<double>(ctas) * static_cast<double>(bm * bn) * 4.0 * 2.0 / gpu.l2.bandwidth + idle_latency +
                         static_cast<double>(bm * bn) * 2.0 / sm.fp32_lanes / sm.clock_hz;
  return std::max({compute_s, hbm_s, l2_s}) + fixup_s;
}

void GemmProgram::choose_stream_k(const config::GpuConfig& gpu, double eff_rate) {
  sk_ctas = 0;
  dp_tiles = 0;
  if (conv || splits > 1) return;
  const int cps = std::max(1, occupancy(gpu.sm, resources));
  const uint64_t slots = static_cast<uint64_t>(gpu.sm.count) * static_cast<uint64_t>(cps);
  const uint64_t T = tiles();
  // Only a ragged last wave after at least two whole ones: whole waves need nothing, fewer tiles
  // than SMs are split-K's, and between one and two waves' worth, every tile would be stream-K:
  // its CTAs, each starting at another K step of another tile, lose the L2 reuse of a wave's
  // CTAs stepping through K together (a 1024x7168x8192 GEMM ran 32% slower so).
  if (T < 2 * slots || T % slots == 0 || k_steps() < 2 * static_cast<uint64_t>(std::max(1, stages))) return;
  // CUTLASS's hybrid: all but the last one to two waves' worth of tiles data-parallel, the rest
  // stream-K over one CTA per slot.
  const uint64_t dp = (T / slots - 1) * slots;
  const int64_t ctas = static_cast<int64_t>(slots);
  // The waves' tensor work must shrink by a tenth, and the whole estimate (memory bounds and the
  // fixup included) must not grow: the L2 and HBM bounds of this estimate are loose, so they
  // may hide a gain the SMs would see, but they must not hide a loss.
  double dp_tensor = 0, sk_tensor = 0;
  const double dp_est = stream_k_estimate_s(gpu, eff_rate, ctas, T, &dp_tensor);
  const double sk_est = stream_k_estimate_s(gpu, eff_rate, ctas, dp, &sk_tensor);
  if (sk_tensor < 0.9 * dp_tensor && sk_est <= dp_est) {
    sk_ctas = ctas;
    dp_tiles = dp;
  }
}

void GemmProgram::choose_persistent(const config::GpuConfig& gpu) {
  hand_over = false;
  if (conv || splits > 1 || sk_ctas > 0) return;
  // One wave of tiles or less gains nothing: no CTA has a next tile.
  const uint64_t slots = static_cast<uint64_t>(gpu.sm.count) * static_cast<uint64_t>(std::max(1, occupancy(gpu.sm, resources)));
  hand_over = tiles() > slots;
}

}  // namespace xpusim::lower
