// Blackwell's GEMM kernels (sm_100, tcgen05), as CUTLASS's SM100 warp-specialised kernels do it:
//  - one thread issues each MMA, and the fp32 accumulators live in tensor memory (TMEM, 128 lanes
//    x 512 columns of 4 B per SM), so registers no longer bound the tile and the threads are few;
//  - the 2-SM MMA (cta_group::2): two CTAs of a cluster compute one tile of 2 x bm rows; each
//    holds its bm rows of A and half of the B tile, and each SM's tensor cores read both halves,
//    so B's L2 traffic and shared-memory footprint per SM halve;
//  - persistent CTAs, one per SM, walk the tiles (cluster launch control hands them out); with
//    two accumulator buffers in TMEM the epilogue of one tile drains while the next one's MMAs
//    run, and the next tile's loads start before the epilogue;
//  - block-scaled MXFP8/MXFP4/NVFP4 MMAs apply their scales inside the MMA (no conversion and no
//    promotion on the SIMT lanes), and the f8f6f4 kind takes fp4 weights beside fp8 activations
//    at the fp8 rate.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/lower/gemm_program.h"
#include "sim/lower/lower_util.h"

namespace xpusim::lower {
namespace {

// Threads of a CUTLASS SM100 GEMM CTA: a TMA warp, an MMA warp and four epilogue warps (the
// kernel's warp roles; assumption that the library's default kernels use this split).
constexpr int kThreads = 192;
// Registers an epilogue thread holds besides its base: one 32-column TMEM load of fp32 values.
constexpr int kEpilogueRegisters = 32;

class Tcgen05Gemm : public GemmProgram {
 public:
  bool pair = false;     // 2-SM MMA
  int acc_buffers = 2;   // accumulator buffers in tensor memory (2: epilogue overlaps the next tile)
  uint64_t grid = 0;     // persistent CTAs (0: one CTA per tile)
  double tmem_columns = 0;

  // Persistent: CTA c runs tiles c, c + grid, c + 2 grid, ... (grid is a multiple of the
  // cluster, so the CTAs of a cluster keep working on tiles of one cluster).
  uint64_t tiles_of(uint64_t cta) const {
    const uint64_t t = tiles();
    return cta >= t ? 0 : (t - 1 - cta) / grid + 1;
  }
  // grid 0: one CTA per tile and split, as GemmProgram schedules them.
  uint64_t num_ctas() const override { return grid > 0 ? grid : GemmProgram::num_ctas(); }
  uint64_t steps(uint64_t cta) const override { return grid > 0 ? tiles_of(cta) * k_steps() : GemmProgram::steps(cta); }
  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    if (grid == 0) return GemmProgram::step(cta, s, w);
    const uint64_t ks = k_steps(), i = s / ks, kst = s % ks;
    tile_step(cta + i * grid, kst, w);
    // The previous tile's accumulators drain from the other TMEM buffer while this one fills.
    if (kst == 0 && i > 0) tile_epilogue(cta + (i - 1) * grid, w);
  }
  void epilogue(uint64_t cta, StepWork& w) const override {
    if (grid == 0) return GemmProgram::epilogue(cta, w);
    const uint64_t n = tiles_of(cta);
    if (n > 0) tile_epilogue(cta + (n - 1) * grid, w);
  }

  // A 2-SM pair splits the B tile: each CTA's shared memory holds one half, which the CTAs in the
  // same position of the cluster's other pairs share by multicast (each fetching a share of it).
  // A cluster cut short by the matrix edge with an odd member left runs 1-SM MMAs, multicasting
  // whole B tiles as Hopper's clusters do.
  void b_share(int64_t tm, int64_t cols_n, int64_t& n_lo, int64_t& n_cnt, int& fanout) const override {
    const int64_t first = (tm / cluster) * cluster;
    const int64_t members = std::min<int64_t>(cluster, tiles_m - first);
    const int64_t j = tm - first;
    if (pair && members % 2 == 0) {
      const int64_t pairs = members / 2;
      const int64_t half = (cols_n + 1) / 2;
      const int64_t h_lo = std::min(cols_n, (j % 2) * half);
      const int64_t h_cnt = std::min(cols_n, h_lo + half) - h_lo;
      const int64_t share = (h_cnt + pairs - 1) / pairs;
      const int64_t lo = std::min(h_cnt, (j / 2) * share);
      n_lo = h_lo + lo;
      n_cnt = std::min(h_cnt, lo + share) - lo;
      fanout = static_cast<int>(pairs);
      return;
    }
    multicast_share(tm, cols_n, n_lo, n_cnt, fanout);
  }

  double b_smem_cols() const { return pair ? static_cast<double>((bn + 1) / 2) : static_cast<double>(bn); }

  void mma_costs(StepWork& w) const override {
    // One tcgen05.mma per 32 bytes of K covers the whole tile (bm rows, or 2 bm for a pair, by
    // bn); the pair's leader issues it for both SMs.
    const double instr = std::ceil(static_cast<double>(bk * in_bits) / 256.0);
    w.instr_mma += pair ? instr / 2 : instr;
    // Shared memory: TMA lands the A tile and this SM's half of B; the MMA reads A and the whole
    // B tile (the peer's half over the pair's link), each once per K step.
    const double a_tile_bytes = static_cast<double>(bm * bk) * in_bits / 8.0;
    const double b_tile_bytes = static_cast<double>(bn * bk) * b_elem_bytes;
    w.smem_write_bytes += a_tile_bytes + b_smem_cols() * static_cast<double>(bk) * b_elem_bytes;
    w.smem_read_bytes += a_tile_bytes + b_tile_bytes;
    if (dequant_ops > 0) {
      // Weights that are not a native MMA format are converted by the producer side and written
      // back to shared memory as the math format.
      const double ops = b_smem_cols() * static_cast<double>(bk) * dequant_ops;
      w.fp32_ops += ops;
      w.instr_simt += std::ceil(ops / 32.0);
      w.smem_write_bytes += b_smem_cols() * static_cast<double>(bk) * in_bits / 8.0;
    }
    // Each MMA reads and writes the SM's bm x bn block of fp32 accumulators in tensor memory
    // (counted, and priced, as register-file traffic: TMEM is an SRAM of the same kind beside
    // the tensor cores; assumption).
    w.rf_bytes += instr * static_cast<double>(bm * bn) * 4.0 * 2.0;
  }

  void choose_tile(const config::GpuConfig& gpu, const trace::Op& op, double eff_rate) override {
    const SmParams& sm = gpu.sm;
    const KernelLibParams& kl = gpu.kernels;
    pair = kl.gemm_cta_pair;
    tmem_columns = lower::tmem_columns(gpu.tensor_core);
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [tbm, tbn] : candidate_tiles(gpu)) {
      // tcgen05 MMAs are 64 or 128 rows per SM (128 or 256 for a pair) and at most 256 wide.
      if ((tbm != 64 && tbm != 128) || tbn > 256 || tbn % 16 != 0) continue;
      // Tensor memory bounds the accumulator tile: two buffers if they fit, else one (and the
      // epilogue no longer overlaps the next tile's MMAs), else the tile cannot run.
      const int bufs = 2 * tbn <= tmem_columns ? 2 : (tbn <= tmem_columns ? 1 : 0);
      if (bufs == 0) continue;
      const double b_cols = pair ? static_cast<double>((tbn + 1) / 2) : static_cast<double>(tbn);
      const double stage_bytes = static_cast<double>(bytes_of(static_cast<uint64_t>(bk), in_bits)) * static_cast<double>(tbm) +
                                 static_cast<double>(bk) * b_cols * b_elem_bytes +
                                 (dequant_ops > 0 ? static_cast<double>(bk) * b_cols * in_bits / 8.0 : 0.0);
      const double epilogue_bytes = subtiled_epilogue_bytes(tbm, tbn);  // CUTLASS SM100 epilogues store subtiles by TMA
      const int st = stages_that_fit(gpu, epilogue_bytes, stage_bytes);
      if (st == 0) continue;
      CtaResources r{kThreads, (kBaseRegisters + kEpilogueRegisters) * kThreads, st * stage_bytes + epilogue_bytes};
      if (occupancy(sm, r) < 1) continue;
      // One persistent CTA per SM (tensor memory is the SM's): waves of tiles over the SMs.
      if (keep_if_best(gpu, op, tbm, tbn, st, r, b_cols, 1, eff_rate, best)) acc_buffers = bufs;
    }
    if (bm == 0) return;
    // Persistent grid: as many CTAs as SMs, whole clusters, never more than the tiles. With one
    // accumulator buffer the epilogue cannot overlap, and each tile gets its own CTA.
    const uint64_t t = static_cast<uint64_t>(op.batch) * div_up(static_cast<uint64_t>(M), static_cast<uint64_t>(bm)) *
                       div_up(static_cast<uint64_t>(N), static_cast<uint64_t>(bn));
    const uint64_t per_gpu = static_cast<uint64_t>(sm.count / cluster * cluster);
    grid = acc_buffers == 2 ? std::min(t, std::max<uint64_t>(per_gpu, static_cast<uint64_t>(cluster))) : 0;
  }

  // CUTLASS's SM100 kernels split K through their tile scheduler (split-K and stream-K modes of
  // the persistent scheduler): a skinny GEMM of fewer tiles than SMs runs a CTA per tile and split,
  // each with one accumulator buffer (one tile to drain). Not modelled: the CTA dispatcher does
  // not bound the CTAs an SM holds by tensor memory (occupancy() counts slots, warps, registers
  // and shared memory), so split CTAs of wide tiles could together hold more columns than an
  // SM's TMEM; the skinny GEMMs that split stay within it (4 x 64 or 3 x 128 of 512 columns).
  void splits_chosen() override {
    grid = 0;
    acc_buffers = 1;
  }

  std::string describe() const override {
    std::ostringstream os;
    os << "tcgen05 tile " << bm << "x" << bn << "x" << bk;
    if (pair) os << " per SM (2-SM MMA " << 2 * bm << "x" << bn << ")";
    os << ", " << stages << " stages";
    if (cluster > 1) os << ", cluster " << cluster << "x1" << (pair ? " (B split in pairs" : " (B") << (cluster > (pair ? 2 : 1) ? ", multicast)" : ")");
    os << ", " << acc_buffers << " x " << bn << " TMEM columns";
    if (grid > 0) os << ", persistent over " << tiles() << " tiles";
    return os.str();
  }
};

}  // namespace

std::shared_ptr<GemmProgram> make_tcgen05_gemm() { return std::make_shared<Tcgen05Gemm>(); }

}  // namespace xpusim::lower
