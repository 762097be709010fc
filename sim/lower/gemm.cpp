// GEMM and implicit-GEMM convolution, CUTLASS-style: output tiles, a K loop of TMA loads into a
// multistage shared-memory ring, and MMAs on the tensor cores. This file holds what every
// architecture's kernel shares; gemm_schedule.cpp how its tiles spread over CTAs (split-K,
// stream-K, persistent); gemm_sm90.cpp and gemm_sm100.cpp the MMA-specific parts.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/config/units.h"
#include "sim/lower/gemm_program.h"
#include "sim/lower/lower_util.h"
#include "sim/lower/lowering.h"

namespace xpusim::lower {

using trace::Op;
using trace::OpKind;

double idle_load_latency_s(const config::GpuConfig& gpu) {
  return (gpu.sm.l1_latency_cycles + gpu.l2.hit_latency_cycles) / gpu.sm.clock_hz + gpu.hbm.controller_latency_s +
         gpu.hbm.tRCD + gpu.hbm.tCL;
}

namespace {
// MACs per clock per SM of the tensor cores in `dt` (0: they do not take it).
double tensor_macs_per_clock(const config::GpuConfig& gpu, Dtype dt) {
  return gpu.tensor_core.per_sm * gpu.tensor_core.macs_per_clock.of(dt);
}
}  // namespace

void GemmProgram::count_tiles() {
  tiles_m = static_cast<int64_t>(div_up(static_cast<uint64_t>(M), static_cast<uint64_t>(bm)));
  tiles_n = static_cast<int64_t>(div_up(static_cast<uint64_t>(N), static_cast<uint64_t>(bn)));
}

uint64_t GemmProgram::k_steps() const { return div_up(static_cast<uint64_t>(K), static_cast<uint64_t>(bk)); }

void GemmProgram::tile_of(uint64_t tile, int64_t& bi, int64_t& tm, int64_t& tn) const {
  const int64_t per_batch = tiles_m * tiles_n;
  bi = static_cast<int64_t>(tile) / per_batch;
  const int64_t id = static_cast<int64_t>(tile) % per_batch;
  const int64_t group = raster_group;
  const int64_t per_group = group * tiles_n;
  const int64_t first_m = (id / per_group) * group;
  const int64_t rows = std::min(group, tiles_m - first_m);
  const int64_t in_group = id % per_group;
  tm = first_m + in_group % rows;
  tn = in_group / rows;
}

void GemmProgram::tile_step(uint64_t tile, uint64_t st, StepWork& w) const {
  int64_t bi, tm, tn;
  tile_of(tile, bi, tm, tn);
  const int64_t k0 = static_cast<int64_t>(st) * bk;
  const int64_t kk = std::min(bk, K - k0);
  const int64_t rows_m = std::min(bm, M - tm * bm);
  const int64_t cols_n = std::min(bn, N - tn * bn);
  const size_t loads_before = w.loads.size() + w.multicast_loads.size();
  if (!conv) {
    const uint64_t a_batch = bytes_of(static_cast<uint64_t>(M * K), in_bits) * static_cast<uint64_t>(bi);
    w.loads.push_back({a + a_batch + bytes_of(static_cast<uint64_t>(tm * bm * K + k0), in_bits),
                       static_cast<uint64_t>(rows_m), bytes_of(static_cast<uint64_t>(kk), in_bits),
                       bytes_of(static_cast<uint64_t>(K), in_bits)});
  } else {
    conv_a_blocks(tm, k0, kk, rows_m, w);
  }
  // B: K x N row-major (weights). 2:4 sparse weights store half the K rows plus 2-bit
  // position metadata per kept element. The variant says which of the tile's columns this CTA
  // fetches and to how many SMs the network delivers them (TMA multicast in a cluster).
  const int64_t b_rows = sparse ? (kk + 1) / 2 : kk;
  const int64_t b_k0 = sparse ? k0 / 2 : k0;
  int64_t n_lo = 0, n_cnt = 0;
  int fanout = 1;
  b_share(tm, cols_n, n_lo, n_cnt, fanout);
  std::vector<Strided>& dst = fanout > 1 ? w.multicast_loads : w.loads;
  w.multicast_fanout = fanout;
  const uint64_t b_batch = conv ? 0 : bytes_of(static_cast<uint64_t>(K * N), b_bits) * static_cast<uint64_t>(bi);
  if (n_cnt > 0 && !conv && !swap()) {
    dst.push_back({b + b_batch + bytes_of(static_cast<uint64_t>(b_k0 * N + tn * bn + n_lo), b_bits),
                   static_cast<uint64_t>(b_rows), bytes_of(static_cast<uint64_t>(n_cnt), b_bits),
                   bytes_of(static_cast<uint64_t>(N), b_bits)});
  } else if (n_cnt > 0) {
    // Filters KRSC, and the weights of weight-only kernels (N x K, as checkpoints store a
    // linear layer's [out, in] and mixed-input kernels load them): each output channel's K run
    // is contiguous.
    const int64_t k_stored = sparse ? (K + 1) / 2 : K;
    dst.push_back({b + b_batch + bytes_of(static_cast<uint64_t>((tn * bn + n_lo) * k_stored + b_k0), b_bits),
                   static_cast<uint64_t>(n_cnt), bytes_of(static_cast<uint64_t>(b_rows), b_bits),
                   bytes_of(static_cast<uint64_t>(k_stored), b_bits)});
  }
  if (sparse && n_cnt > 0)
    dst.push_back({meta + bytes_of(static_cast<uint64_t>(b_k0 * N + tn * bn + n_lo), 2), static_cast<uint64_t>(b_rows),
                   bytes_of(static_cast<uint64_t>(n_cnt), 2), bytes_of(static_cast<uint64_t>(N), 2)});
  // Block scales, [K / group, N] row-major (per filter for convolutions): the rows this K step
  // touches, for this CTA's share of the columns.
  if (scale_group > 0 && n_cnt > 0) {
    const int64_t g0 = k0 / scale_group, g1 = (k0 + kk + scale_group - 1) / scale_group;
    const int64_t groups_k = (K + scale_group - 1) / scale_group;
    const uint64_t s_batch = conv ? 0 : bytes_of(static_cast<uint64_t>(groups_k * N), scale_bits) * static_cast<uint64_t>(bi);
    dst.push_back({scales + s_batch + bytes_of(static_cast<uint64_t>(g0 * N + tn * bn + n_lo), scale_bits),
                   static_cast<uint64_t>(g1 - g0), bytes_of(static_cast<uint64_t>(n_cnt), scale_bits),
                   bytes_of(static_cast<uint64_t>(N), scale_bits)});
  }
  // The whole tile is computed (TMA zero-fills past the edges): edge waste is real work.
  if (on_tensor_cores()) {
    w.tensor_macs += static_cast<double>(bm * bn * bk);
    w.tensor_dtype = dtype;
    w.tensor_sparse = sparse;
  }
  // One TMA instruction per tile.
  if (bulk_copies()) w.instr_mem += static_cast<double>(w.loads.size() + w.multicast_loads.size() - loads_before);
  mma_costs(w);
}

void GemmProgram::multicast_share(int64_t tm, int64_t cols_n, int64_t& n_lo, int64_t& n_cnt, int& fanout) const {
  const int64_t first = (tm / cluster) * cluster;
  const int64_t members = std::min<int64_t>(cluster, tiles_m - first);
  const int64_t share = (cols_n + members - 1) / members;
  n_lo = std::min(cols_n, (tm - first) * share);
  n_cnt = std::min(cols_n, n_lo + share) - n_lo;
  fanout = static_cast<int>(members);
}

void GemmProgram::conv_a_blocks(int64_t tm, int64_t k0, int64_t kk, int64_t rows_m, StepWork& w) const {
  // Implicit GEMM: row m of A is output pixel (n, p, q); column k is (r, s, c), c fastest. A K
  // step spans one filter tap's channels or part of them, or several taps where the channels
  // are fewer than the step: each tap's run of channels is a block of its own.
  const int64_t k_end = std::min(k0 + kk, g.r * g.s * g.c);
  for (int64_t k = k0; k < k_end;) {
    const int64_t rs = k / g.c, c0 = k % g.c;
    const int64_t cc = std::min(k_end - k, g.c - c0);
    conv_tap_blocks(tm, rs / g.s, rs % g.s, c0, cc, rows_m, w);
    k += cc;
  }
}

void GemmProgram::conv_tap_blocks(int64_t tm, int64_t r, int64_t s, int64_t c0, int64_t cc, int64_t rows_m,
                                  StepWork& w) const {
  const uint64_t row_bytes = bytes_of(static_cast<uint64_t>(cc), in_bits);
  const uint64_t pix_bytes = bytes_of(static_cast<uint64_t>(g.c), in_bits);
  int64_t m = tm * bm;
  const int64_t m_end = m + rows_m;
  while (m < m_end) {
    const int64_t q = m % g.q, np = m / g.q, p = np % g.p, n = np / g.p;
    const int64_t run = std::min(m_end - m, g.q - q);  // same (n, p): consecutive q
    const int64_t ih = p * g.stride - g.pad + r;
    if (ih >= 0 && ih < g.h) {
      // Valid q range: 0 <= q*stride - pad + s < w
      int64_t q_lo = q, q_hi = q + run;  // exclusive
      while (q_lo < q_hi && q_lo * g.stride - g.pad + s < 0) ++q_lo;
      while (q_hi > q_lo && (q_hi - 1) * g.stride - g.pad + s >= g.w) --q_hi;
      if (q_hi > q_lo) {
        const int64_t iw = q_lo * g.stride - g.pad + s;
        const uint64_t pixel = static_cast<uint64_t>((n * g.h + ih) * g.w + iw);
        w.loads.push_back({a + pixel * pix_bytes + bytes_of(static_cast<uint64_t>(c0), in_bits),
                           static_cast<uint64_t>(q_hi - q_lo), row_bytes, pix_bytes * static_cast<uint64_t>(g.stride)});
      }
    }
    m += run;
  }
}

void GemmProgram::tile_epilogue(uint64_t tile, StepWork& w) const {
  int64_t bi, tm, tn;
  tile_of(tile, bi, tm, tn);
  const int64_t rows_m = std::min(bm, M - tm * bm);
  const int64_t cols_n = std::min(bn, N - tn * bn);
  const uint64_t c_batch = bytes_of(static_cast<uint64_t>(M * N), out_bits) * static_cast<uint64_t>(bi);
  const Strided tile_c{c + c_batch + bytes_of(static_cast<uint64_t>(tm * bm * N + tn * bn), out_bits),
                       static_cast<uint64_t>(rows_m), bytes_of(static_cast<uint64_t>(cols_n), out_bits),
                       bytes_of(static_cast<uint64_t>(N), out_bits)};
  // Accumulating: the tile's old values in, one add per element, before the store.
  if (accumulate) {
    w.loads.push_back(tile_c);
    w.instr_mem += 1;
    w.fp32_ops += static_cast<double>(bm * bn);
    w.instr_simt += static_cast<double>(bm * bn) / 32.0;
  }
  w.stores.push_back(tile_c);
  // fp8: the per-tensor scales, loaded here, after the K loop: the scaling waits a round trip.
  if (tensor_scales != 0) {
    w.loads.push_back({tensor_scales, 1, 8, 8});
    w.instr_mem += 1;
  }
  // Convert the fp32 accumulators and write them out through shared memory.
  w.fp32_ops += static_cast<double>(bm * bn);
  w.instr_simt += static_cast<double>(bm * bn) / 32.0;
  w.instr_mem += 1;
}

uint64_t GemmProgram::split_first(uint64_t split) const {
  return k_steps() * split / static_cast<uint64_t>(splits);
}

void GemmProgram::epilogue(uint64_t cta, StepWork& w) const {
  if (sk_ctas > 0 && cta >= dp_tiles) {
    const int64_t c = static_cast<int64_t>(cta - dp_tiles);
    const uint64_t I = k_steps(), s = sk_first(c), e = sk_first(c + 1);
    if (e == s) return;
    const uint64_t tile_bytes = static_cast<uint64_t>(bm * bn) * 4;
    auto slot = [&](int64_t k) { return Strided{sk_ws + static_cast<uint64_t>(k) * tile_bytes, 1, tile_bytes, tile_bytes}; };
    for (uint64_t t = s / I; t <= (e - 1) / I; ++t) {
      if ((t + 1) * I > e) {  // ends inside this tile: its partial out
        w.stores.push_back(slot(c));
        w.instr_mem += 1;
        w.fp32_ops += static_cast<double>(bm * bn);
        w.instr_simt += static_cast<double>(bm * bn) / 32.0;
        continue;
      }
      // Finishes tile t: the partials of the CTAs before it that worked on t, added.
      for (int64_t k = c - 1; k >= 0 && sk_first(k + 1) > t * I; --k) {
        w.loads.push_back(slot(k));
        w.instr_mem += 1;
        w.fp32_ops += static_cast<double>(bm * bn);
        w.instr_simt += static_cast<double>(bm * bn) / 32.0;
      }
      tile_epilogue(dp_tiles + t, w);
    }
    return;
  }
  if (sk_ctas > 0 || splits == 1) return tile_epilogue(cta, w);
  const uint64_t tile = cta % tiles(), split = cta / tiles();
  int64_t bi, tm, tn;
  tile_of(tile, bi, tm, tn);
  const uint64_t rows_m = static_cast<uint64_t>(std::min(bm, M - tm * bm));
  const uint64_t row_bytes = static_cast<uint64_t>(std::min(bn, N - tn * bn)) * 4;
  if (reduce_kernel) {
    // This split's copy of the output, in fp32; the second kernel adds the copies.
    const uint64_t copy = (split * static_cast<uint64_t>(batch) + static_cast<uint64_t>(bi)) * static_cast<uint64_t>(M * N);
    w.stores.push_back({ws + (copy + static_cast<uint64_t>(tm * bm * N + tn * bn)) * 4, rows_m, row_bytes,
                        static_cast<uint64_t>(N) * 4});
    w.instr_mem += 1;
    w.fp32_ops += static_cast<double>(bm * bn);  // the accumulators out through shared memory
    w.instr_simt += static_cast<double>(bm * bn) / 32.0;
    return;
  }
  // Partial tile p of this tile: rows_m rows of fp32, packed.
  auto partial = [&](uint64_t p) {
    const uint64_t base = ws + (tile * static_cast<uint64_t>(splits - 1) + p) * static_cast<uint64_t>(bm * bn) * 4;
    return Strided{base, rows_m, row_bytes, row_bytes};
  };
  if (split + 1 < static_cast<uint64_t>(splits)) {
    w.stores.push_back(partial(split));
    w.instr_mem += 1;
    w.fp32_ops += static_cast<double>(bm * bn);  // the accumulators out through shared memory
    w.instr_simt += static_cast<double>(bm * bn) / 32.0;
    return;
  }
  // The last split (dispatched last) reduces: the others' partials in, one add per element each.
  for (uint64_t p = 0; p + 1 < static_cast<uint64_t>(splits); ++p) w.loads.push_back(partial(p));
  const double adds = static_cast<double>(bm * bn) * static_cast<double>(splits - 1);
  w.fp32_ops += adds;
  w.instr_simt += adds / 32.0;
  w.instr_mem += static_cast<double>(splits - 1);
  tile_epilogue(tile, w);
}

void GemmProgram::written(double max_bytes, std::vector<Strided>& out) const {
  if (splits > 1 && reduce_kernel) return KernelProgram::written(max_bytes, out);  // the partials
  last_stores(tiles(), max_bytes, [this](uint64_t t, StepWork& w) { tile_epilogue(t, w); }, out);
}

double GemmProgram::hbm_bytes() const {
  return static_cast<double>(batch) *
         (M * K * (in_bits / 8.0) + static_cast<double>(K) * N * b_elem_bytes + (accumulate ? 2 : 1) * M * N * out_bits / 8.0);
}

double GemmProgram::l2_operand_bytes(double n_tiles, int64_t tbm, int64_t tbn, double k_len) const {
  return n_tiles * k_len * (tbm * in_bits / 8.0 + static_cast<double>(tbn) / cluster * b_elem_bytes);
}

double GemmProgram::estimate_s(const config::GpuConfig& gpu, const Op& op, int64_t tbm, int64_t tbn, double dequant_cols,
                               int cps, double eff_rate) const {
  const SmParams& sm = gpu.sm;
  const double n_tiles = static_cast<double>(op.batch) * std::ceil(static_cast<double>(M) / tbm) * std::ceil(static_cast<double>(N) / tbn);
  const double k_pad = std::ceil(static_cast<double>(K) / bk) * bk;
  const double waves = std::ceil(n_tiles / (sm.count * cps));
  // Each wave's busiest SM runs as many tiles as it holds, or fewer where the tiles are fewer
  // than the slots: in one partial wave, the dispatcher spreads them over the SMs first.
  const double per_sm = std::min<double>(cps, std::ceil(n_tiles / sm.count));
  const double compute_s = waves * (k_pad / static_cast<double>(bk)) * step_cycles(gpu, tbm, tbn, per_sm, eff_rate) / sm.clock_hz;
  const double l2_s = l2_operand_bytes(n_tiles, tbm, tbn, k_pad) / gpu.l2.bandwidth;
  // Conversions on the busiest SM: the dispatcher spreads tiles over the SMs first.
  const double dequant_s = std::ceil(n_tiles / sm.count) * dequant_cols * k_pad * dequant_ops / sm.fp32_lanes / sm.clock_hz;
  return std::max({compute_s, l2_s, dequant_s});
}

bool GemmProgram::keep_if_best(const config::GpuConfig& gpu, const Op& op, int64_t tbm, int64_t tbn, int st,
                               const CtaResources& r, double dequant_cols, int cps, double eff_rate, double& best) {
  const double est = estimate_s(gpu, op, tbm, tbn, dequant_cols, cps, eff_rate);
  if (splits_choose_tile()) tried.push_back({tbm, tbn, st, r});
  if (!(est < best * (1 - 1e-9))) return false;
  best = est;
  bm = tbm;
  bn = tbn;
  stages = st;
  resources = r;
  return true;
}

double GemmProgram::subtiled_epilogue_bytes(int64_t tbm, int64_t tbn) const {
  constexpr int64_t kSubtileCols = 32;
  return 2.0 * static_cast<double>(tbm * std::min(tbn, kSubtileCols)) * out_bits / 8.0;
}

int GemmProgram::stages_that_fit(const config::GpuConfig& gpu, double epilogue_bytes, double stage_bytes) {
  const int st = std::min<int>(gpu.kernels.gemm_max_stages,
                               static_cast<int>((gpu.sm.shared_memory_bytes - epilogue_bytes) / stage_bytes));
  return st < 2 ? 0 : st;
}

std::vector<std::pair<int64_t, int64_t>> GemmProgram::candidate_tiles(const config::GpuConfig& gpu) {
  std::vector<std::pair<int64_t, int64_t>> tiles;  // (bm, bn)
  for (const std::string& t : gpu.kernels.gemm_tiles) {
    int64_t bm = 0, bn = 0;
    char x = 0;
    std::istringstream is(t);
    if (!(is >> bm >> x >> bn) || x != 'x' || bm < 64 || bn < 8 || bm % 64 != 0)
      throw UserError("kernels.gemm.tiles: '" + t + "' is not a tile MxN with M a multiple of 64 and N at least 8 (e.g. 128x256, 64x8)");
    tiles.emplace_back(bm, bn);
  }
  return tiles;
}

namespace {

// MACs per clock per SM of a GEMM in `dt` on the SIMT lanes (0: no instruction for it): FFMA
// for fp32, HFMA for fp16, DP4A (4 MACs) for int8.
double simt_macs_per_clock(const SmParams& sm, Dtype dt) {
  switch (dt) {
    case Dtype::fp32: return sm.fp32_lanes;
    case Dtype::fp16: return sm.fp32_lanes * sm.hfma_per_lane;
    case Dtype::int8: return 4.0 * sm.fp32_lanes * sm.dp4a_per_lane;
    default: return 0;
  }
}

}  // namespace

double simt_gemm_peak_tflops(const config::GpuConfig& gpu, Dtype dt) {
  return 2.0 * gpu.sm.count * simt_macs_per_clock(gpu.sm, dt) * gpu.sm.clock_hz / 1e12;
}

LoweredOp Lowering::gemm(const Op& op) {
  // A convolution whose input channels do not make 16-byte rows cannot feed the tensor-core
  // kernels' vector loads (weight-only quantised filters aside, whose kernels take them).
  const bool tensor = tensor_macs_per_clock(gpu_, op.dtype) > 0;
  if (op.kind == OpKind::conv2d && tensor && !op.weight_only() && (op.c * dtype_bits(op.dtype)) % 128 != 0)
    return unaligned_conv(op);
  return gemm_kernel(op, false);
}

namespace {

// The conv fallback's estimates (Lowering::unaligned_conv). The SIMT kernel: its CTAs' K steps,
// each a load round trip (the first from HBM, the rest from the L2, where the small inputs
// these kernels take stay), or its SMs' instruction issue, whichever is longer.
double simt_conv_estimate_s(const config::GpuConfig& gpu, const GemmProgram& p) {
  const SmParams& sm = gpu.sm;
  StepWork w;
  p.step(0, 0, w);
  const double ctas = static_cast<double>(p.num_ctas());
  const int cps = std::max(1, occupancy(sm, p.resources));
  // Each warp issues from one scheduler: the schedulers the SM's resident warps occupy.
  const double warps = resident_warps(sm, ctas, cps, p.resources.threads);
  const double issue_cycles = (w.instr_simt + w.instr_mem) / std::min<double>(sm.sub_partitions, std::max(1.0, warps));
  const double waves = std::ceil(ctas / (static_cast<double>(sm.count) * cps));
  const double per_sm = std::ceil(ctas / sm.count);
  const double steps = static_cast<double>(p.k_steps());
  const double l2_round_trip = (sm.l1_latency_cycles + 2 * gpu.noc.latency_cycles + gpu.l2.hit_latency_cycles) / sm.clock_hz;
  const double latency_s = waves * (idle_load_latency_s(gpu) + (steps - 1) * l2_round_trip);
  const double issue_s = per_sm * steps * issue_cycles / sm.clock_hz;
  return std::max(latency_s, issue_s);
}

}  // namespace

LoweredOp Lowering::unaligned_conv(const Op& op) {
  // Two ways a library runs it: its SIMT kernel (cuDNN's implicit_convolve_sgemm, converted
  // to fp32 on the lanes), or a kernel that copies the input with its channels padded to 16
  // bytes, then the tensor-core convolution on the copy. A library heuristic takes the one its
  // estimate finds faster, as cuDNN's does: the SIMT kernel for a small convolution (an image
  // patch embedding), the padded one for a large one (a ResNet stem at batch 8).
  const uint64_t first_addr = next_addr_;
  LoweredOp simt = gemm_kernel(op, true);
  const uint64_t after_simt = next_addr_;
  const double simt_s = simt_conv_estimate_s(gpu_, dynamic_cast<const GemmProgram&>(*simt.program));

  next_addr_ = first_addr;
  Op padded = op;
  const int64_t per_row = 128 / dtype_bits(op.dtype);  // channels in 16 bytes
  padded.c = (op.c + per_row - 1) / per_row * per_row;
  LoweredOp conv = gemm_kernel(padded, false);
  const auto& cp = dynamic_cast<const GemmProgram&>(*conv.program);
  const double rate = tensor_macs_per_clock(gpu_, op.dtype);
  const double copy_bytes = static_cast<double>(op.batch * op.h * op.w) * static_cast<double>(op.c + padded.c) * dtype_bits(op.dtype) / 8.0;
  const KernelLibParams& kl = gpu_.kernels;
  const double pad_s = cp.split_estimate_s(gpu_, cp.splits, rate) + copy_bytes / gpu_.hbm.peak_bandwidth() +
                      kl.kernel_end_s + kl.launch_gap_s + kl.kernel_start_s;
  // Three kernels (the copy, a split convolution and its reduction) are more than an op holds:
  // the SIMT kernel then.
  if (simt_s <= pad_s || conv.tail) {
    next_addr_ = after_simt;
    return simt;
  }
  // The copy: an elementwise kernel over the padded input, written where the convolution reads
  // it (its reads counted at the padded size too).
  Op copy;
  copy.name = op.name;
  copy.loc = op.loc;
  copy.kind = OpKind::elementwise;
  copy.dtype = copy.out_dtype = op.dtype;
  copy.shape = {op.batch * op.h * op.w * padded.c};
  copy.flops_per_element = 0;
  LoweredOp out = streaming(copy, cp.a);
  auto first = std::const_pointer_cast<KernelProgram>(out.program);
  first->description = "channels padded " + std::to_string(op.c) + " -> " + std::to_string(padded.c) +
                       " for the tensor cores by a copy kernel (" + first->description + "); then " + conv.program->description;
  out.tail = conv.program;
  out.uses_tensor_cores = true;
  return out;
}

LoweredOp Lowering::gemm_kernel(const Op& op, bool simt_conv) {
  const TensorCoreParams& tc = gpu_.tensor_core;
  const KernelLibParams& kl = gpu_.kernels;
  // The tensor cores where they take the format, else the SIMT lanes where the SM has an
  // instruction for it (a chip before tensor cores, or a format they lack); `simt_conv`: cuDNN's
  // SIMT convolution for channels that do not make 16-byte rows, in fp32 (gemm_simt.cpp).
  const double tensor_rate = tensor_macs_per_clock(gpu_, op.dtype);
  const bool simt = tensor_rate <= 0 || simt_conv;
  const Dtype lane_dtype = simt_conv ? Dtype::fp32 : op.dtype;
  const double rate = simt ? simt_macs_per_clock(gpu_.sm, lane_dtype) : tensor_rate;
  if (rate <= 0) {
    const std::string f = dtype_name(op.dtype);
    const std::string cores = tc.per_sm == 0 ? "this chip has no tensor cores (tensor_core.per_sm is 0)"
                                             : "the tensor cores of this chip do not support " + f +
                                                   " (tensor_core.macs_per_clock." + f + " is 0)";
    const std::string lanes = op.dtype == Dtype::fp16   ? "its SMs have no FP16 arithmetic (sm.hfma_per_lane is 0)"
                              : op.dtype == Dtype::int8 ? "its SMs have no DP4A (sm.dp4a_per_lane is 0)"
                                                        : "its SIMT lanes have no " + f + " GEMM instruction (fp32, fp16 and int8 only)";
    throw UserError(op.loc.str() + ": op '" + op.name + "': " + cores + " and " + lanes);
  }
  if (op.sparse_2_4 && (simt || !tc.sparse_2_4))
    throw UserError(op.loc.str() + ": op '" + op.name + "' asks for 2:4 sparsity but " +
                    (simt ? std::string("it runs on the SIMT lanes, which do not skip zeros (sparse tensor cores do)")
                          : "tensor_core.sparse_2_4 is false"));
  if (simt && op.weight_only())
    throw UserError(op.loc.str() + ": op '" + op.name + "': weight-only quantised GEMMs run on tensor cores; this chip's take no " +
                    dtype_name(op.dtype));

  const bool tcgen05 = !simt && kl.gemm_mma == Mma::tcgen05;
  const bool mma_sync = !simt && kl.gemm_mma == Mma::mma_sync;
  const bool fp8_math = op.dtype == Dtype::fp8_e4m3 || op.dtype == Dtype::fp8_e5m2;
  std::shared_ptr<GemmProgram> p = simt_conv ? make_simt_conv_gemm()
                                   : simt      ? make_simt_gemm()
                                   : tcgen05   ? make_tcgen05_gemm()
                                   : mma_sync  ? make_mma_sync_gemm(gpu_)
                                               : make_wgmma_gemm();
  p->dtype = op.dtype;
  p->in_bits = dtype_bits(op.dtype);
  p->out_bits = dtype_bits(op.out_dtype);
  p->b_bits = dtype_bits(op.b_dtype());
  p->b_elem_bytes = op.weight_bits() / 8.0;
  p->sparse = op.sparse_2_4;
  p->accumulate = op.accumulate;
  if (op.weight_only()) {
    p->scale_group = op.weight_group;
    p->scale_bits = op.weight_scale_bits;
    // The tensor cores take block-scaled weights of their own format as they are (Blackwell's
    // block-scaled fp4 MMA), and tcgen05's f8f6f4 MMAs take fp4 weights beside fp8 activations
    // at the fp8 rate, with MX (E8M0 per 32) block scales or none; NVFP4's E4M3 scales per 16
    // need both operands in fp4 (the mxf4nvf4 kind). Anything else is converted first.
    const bool native = op.weight_dtype == op.dtype ||
                        (tcgen05 && fp8_math && op.weight_dtype == Dtype::fp4 && op.weight_format != "nvfp4");
    p->dequant_ops = native ? 0 : kl.gemm_dequant_ops;
  }
  if (op.kind == OpKind::gemm) {
    p->M = op.m;
    p->N = op.n;
    p->K = op.k;
    p->batch = op.batch;
  } else {
    p->conv = true;
    p->g = ConvGeometry{op.batch, op.h, op.w, op.c, op.r, op.s, op.stride, op.pad, op.conv_p(), op.conv_q()};
    p->M = op.batch * op.conv_p() * op.conv_q();
    p->N = op.k;
    p->K = op.c * op.r * op.s;
  }
  // K per stage: k_tile bytes of each operand row. Weight-only kernels size it by the weights,
  // which dominate their traffic, so that a stage carries as many weight bytes as a dense kernel's
  // (a narrow format would otherwise keep too few bytes in flight to cover HBM latency).
  p->bk = std::max<int64_t>(16, static_cast<int64_t>(kl.gemm_k_tile_bytes * 8 / std::min(p->in_bits, p->b_bits)));
  p->raster_group = kl.gemm_raster_group;
  if (!simt) p->cta_setup_s = kl.gemm_cta_setup_s;
  p->mma_latency_cycles = tc.mma_latency_cycles;
  p->cluster = simt || mma_sync ? 1 : kl.gemm_cluster_m;  // thread-block clusters arrive with Hopper
  if (p->raster_group % p->cluster != 0)
    throw UserError("kernels.gemm.raster_group (" + std::to_string(p->raster_group) +
                    ") must be a multiple of kernels.gemm.cluster_m (" + std::to_string(p->cluster) +
                    ") so that the CTAs of a cluster are launched together");

  // The variant picks the tile with the best estimate of time, as a library heuristic does.
  // A GEMM's lane instructions do not pair (SmParams::dual_issue): on the SIMT lanes the rate the
  // schedulers reach, one lane instruction each per clock (Kepler: 128 of 192 lanes).
  // A warp's mma.sync reaches tensor_core.mma_sync_share of the tensor cores' rate.
  const double eff_rate = (simt ? rate * std::min(1.0, 32.0 * gpu_.sm.sub_partitions / gpu_.sm.fp32_lanes)
                                : rate * (mma_sync ? tc.mma_sync_share : 1.0)) *
                          (op.sparse_2_4 ? 2 : 1);
  p->mma_rate = eff_rate;
  p->choose_tile(gpu_, op, eff_rate);
  if (p->bm == 0)
    throw UserError(op.loc.str() + ": op '" + op.name + "': no tile in kernels.gemm.tiles fits the SM's shared memory and " +
                    (tcgen05 ? "tensor memory" : "registers"));
  p->count_tiles();
  // Split-K where a skinny GEMM leaves SMs idle: one CTA per tile and split (tcgen05's
  // persistent CTAs walk the tiles unsplit where there are enough of them to fill the SMs).
  p->reduce_kernel = kl.gemm_split_k_reduction == "kernel";
  if (kl.gemm_split_k) {
    p->choose_splits(gpu_, eff_rate);
    if (p->splits > 1) p->splits_chosen();
  }
  // Stream-K where the tiles leave a ragged last wave (tcgen05's persistent CTAs balance their own).
  if (!tcgen05 && kl.gemm_stream_k) p->choose_stream_k(gpu_, eff_rate);
  // Hopper's libraries run GEMMs of more than one wave of tiles as persistent kernels
  // (kernels.gemm.persistent); tcgen05's are persistent wherever two accumulator buffers fit.
  if (!tcgen05 && !simt && !mma_sync && kl.gemm_persistent) p->choose_persistent(gpu_);
  // A CTA's K steps repeat one another (a short last one is never left out), the block scales'
  // rows every scale_group / bk steps. A tcgen05 persistent CTA of several tiles drains a tile's
  // accumulators every k_steps, and a convolution's steps walk the filter window: no period.
  if (!p->conv && p->sk_ctas == 0 && p->steps(0) == p->split_steps(0)) {
    if (p->scale_group == 0 || p->bk % p->scale_group == 0) p->step_period = 1;
    else if (p->scale_group % p->bk == 0) p->step_period = static_cast<uint64_t>(p->scale_group / p->bk);
  }
  const double ei = p->in_bits / 8.0;
  p->a = alloc(static_cast<double>(p->batch) * p->M * p->K * ei);
  const double b_sets = static_cast<double>(op.kind == OpKind::gemm ? p->batch : 1);
  p->b = alloc(b_sets * p->K * p->N * p->b_bits / 8.0);
  if (p->sparse) p->meta = alloc(static_cast<double>(p->batch) * p->K * p->N / 8.0);
  if (p->scale_group > 0)
    p->scales = alloc(b_sets * std::ceil(static_cast<double>(p->K) / static_cast<double>(p->scale_group)) * p->N * p->scale_bits / 8.0);
  p->c = alloc(static_cast<double>(p->batch) * p->M * p->N * p->out_bits / 8.0);
  if (p->splits > 1)
    p->ws = p->reduce_kernel ? alloc(static_cast<double>(p->splits) * static_cast<double>(p->batch) * p->M * p->N * 4.0)
                             : alloc(static_cast<double>(p->tiles()) * static_cast<double>(p->splits - 1) * p->bm * p->bn * 4.0);
  if (p->sk_ctas > 0) p->sk_ws = alloc(static_cast<double>(p->sk_ctas) * p->bm * p->bn * 4.0);
  if (fp8_math && p->b_bits == 8 && p->scale_group == 0 && p->dequant_ops == 0) p->tensor_scales = alloc(8);
  std::string d = p->describe();
  if (p->splits > 1) d += ", split-K " + std::to_string(p->splits) + (p->reduce_kernel ? "" : " (serial reduction)");
  if (p->sk_ctas > 0)
    d += ", stream-K: " + std::to_string(p->tiles() - p->dp_tiles) + " tiles over " + std::to_string(p->sk_ctas) + " CTAs" +
         (p->dp_tiles > 0 ? " after " + std::to_string(p->dp_tiles) + " data-parallel" : "");
  if (p->accumulate) d += ", C accumulated";
  if (op.weight_only())
    d += ", " + op.weight_format + " weights" + (p->dequant_ops > 0 ? " converted to " + std::string(dtype_name(op.dtype)) : " (native block scaling)");
  p->description = d;
  LoweredOp out = finish(p, !simt, p->splits > 1 && p->reduce_kernel ? make_split_k_reduce(*p) : nullptr);
  out.lane_dtype = lane_dtype;
  return out;
}

}  // namespace xpusim::lower
