// GEMMs on the SIMT lanes, for formats the chip's tensor cores do not take (or a chip without
// any): the classic shared-memory-tiled kernel of SGEMM libraries before tensor cores (Volkov
// and Demmel, SC 2008; MAGMA and cuBLAS on Fermi, Kepler and Pascal). Each K step, the CTA's
// threads copy an A and a B tile into shared memory (LDG then STS); each thread then reads
// its rows of A and columns of B from shared memory (LDS.128) and updates a tm x tn block of
// accumulators in registers with one instruction per multiply-add: FFMA for fp32, HFMA2 (two
// fp16 FMAs) for fp16, DP4A (a 4-way int8 dot product into an int32) for int8.
//
// Also the SIMT kernel cuDNN falls back to for a convolution on a chip with tensor cores when
// the input's channels do not make 16-byte rows (3 channels of an image, in fp16), which the
// tensor-core kernels' vector loads need: implicit_convolve_sgemm. Its launch geometry, from a
// profile of one (the kernel's template arguments, grid and block): a 32 x 32 output tile per
// CTA of 8 x 8 threads (4 x 4 accumulators each), K steps of 8, each staged by scalar loads
// through the L1, converted to fp32 into one 2304-byte shared-memory buffer (two 32 x 9 fp32
// tiles), then multiplied by FFMA. With one buffer, every K step is a load round trip.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/lower/gemm_program.h"
#include "sim/lower/lower_util.h"

namespace xpusim::lower {
namespace {

// A thread's block of accumulators: 8 x 8, as SGEMM kernels of the Kepler and Pascal era hold
// (MAGMA's and cuBLAS's register blocking; a thread's 16 operand loads feed 64 FMAs).
constexpr int64_t kThreadRows = 8, kThreadCols = 8;

// cuDNN's implicit_convolve_sgemm (above): tile, K step, accumulators per thread, registers per
// thread (the profile's 64).
constexpr int64_t kConvTile = 32, kConvK = 8, kConvThreadTile = 4;
constexpr int kConvRegisters = 64;

class SimtGemm : public GemmProgram {
 public:
  // cuDNN's SIMT convolution for channels that do not make 16-byte rows (make_simt_conv_gemm).
  bool unaligned_conv = false;

  bool on_tensor_cores() const override { return false; }

  int64_t thread_rows() const { return unaligned_conv ? kConvThreadTile : kThreadRows; }
  int64_t thread_cols() const { return unaligned_conv ? kConvThreadTile : kThreadCols; }
  int64_t threads() const { return bm * bn / (thread_rows() * thread_cols()); }

  void mma_costs(StepWork& w) const override {
    const double macs = static_cast<double>(bm * bn * bk);
    if (unaligned_conv) return conv_costs(w, macs);
    const double eb = in_bits / 8.0;
    // The math: one lane operation per FMA (fp32), per fp16 FMA (two to an HFMA2), per DP4A.
    if (dtype == Dtype::int8) {
      w.dp4a_ops += macs / 4.0;
      w.instr_simt += macs / 4.0 / 32.0;
    } else if (dtype == Dtype::fp16) {
      w.hfma_ops += macs;
      w.instr_simt += macs / 2.0 / 32.0;
    } else {
      w.fp32_ops += macs;
      w.instr_simt += macs / 32.0;
    }
    // Staging: the A and B tiles through registers into shared memory, 16 bytes per lane.
    const double tile_bytes = static_cast<double>((bm + bn) * bk) * eb;
    w.smem_write_bytes += tile_bytes;
    w.instr_mem += 2.0 * std::ceil(tile_bytes / (16.0 * 32.0));
    // Operands: each thread reads its tm rows of A and tn columns of B for every k.
    const double read = static_cast<double>(threads() * bk) * static_cast<double>(kThreadRows + kThreadCols) * eb;
    w.smem_read_bytes += read;
    w.instr_mem += std::ceil(read / (16.0 * 32.0));
  }

  // The unaligned convolution's K step: each element of both tiles loaded on its own (LDG,
  // through the L1), converted to fp32 and stored to shared memory; each thread then reads its
  // 4 rows and 4 columns per k in fp32 and runs one FFMA per multiply-add.
  void conv_costs(StepWork& w, double macs) const {
    for (Strided& s : w.loads) w.cached_loads.push_back(s);
    w.loads.clear();
    const double staged = static_cast<double>((bm + bn) * bk);
    w.fp32_ops += macs + staged;
    w.instr_simt += (macs + staged) / 32.0;
    w.smem_write_bytes += staged * 4.0;
    w.instr_mem += 2.0 * std::ceil(staged / 32.0);
    const double read = static_cast<double>(threads() * bk) * static_cast<double>(thread_rows() + thread_cols()) * 4.0;
    w.smem_read_bytes += read;
    w.instr_mem += std::ceil(read / (16.0 * 32.0));
  }

  void choose_tile(const config::GpuConfig& gpu, const trace::Op& op, double eff_rate) override {
    const SmParams& sm = gpu.sm;
    if (unaligned_conv) {
      bm = bn = kConvTile;
      bk = kConvK;
      stages = 1;
      const int64_t n = threads();
      resources = CtaResources{static_cast<int>(n), kConvRegisters * static_cast<int>(n), 2.0 * kConvTile * (kConvK + 1) * 4.0};
      return;
    }
    double best = std::numeric_limits<double>::infinity();
    // Accumulators in 32-bit registers: fp32 and int32 one each, fp16 two to a register (HFMA2).
    const int64_t acc_regs = kThreadRows * kThreadCols * (dtype == Dtype::fp16 ? 1 : 2) / 2;
    // Operand fragments, double-buffered across k, packed to 32-bit registers.
    const int64_t frag_regs = 2 * (kThreadRows + kThreadCols) * std::max(1, in_bits) / 32;
    const int regs_per_thread = static_cast<int>(acc_regs + frag_regs) + kBaseRegisters;
    for (const auto& [tbm, tbn] : candidate_tiles(gpu)) {
      const int64_t n_threads = tbm * tbn / (kThreadRows * kThreadCols);
      if (n_threads < 32 || n_threads > 1024 || regs_per_thread > 255) continue;
      const double stage_bytes = static_cast<double>(bytes_of(static_cast<uint64_t>(bk), in_bits)) * static_cast<double>(tbm + tbn);
      const double tiles = static_cast<double>(op.batch) * std::ceil(static_cast<double>(M) / tbm) * std::ceil(static_cast<double>(N) / tbn);
      // The accumulators leave from registers: no epilogue staging in shared memory. The deepest
      // pipeline that fits, or a shallower one where that lets more CTAs share an SM whose
      // schedulers a CTA's few warps would leave idle (the SGEMMs of the era run two buffers,
      // 16 KB: NervanaSystems/maxas, sgemm/sgemm128.sass).
      for (int st = stages_that_fit(gpu, 0.0, stage_bytes); st >= 2; --st) {
        CtaResources r{static_cast<int>(n_threads), regs_per_thread * static_cast<int>(n_threads), st * stage_bytes};
        const int cps = occupancy(sm, r);
        if (cps < 1) continue;
        // Each warp issues from one scheduler: the SM's CTAs reach the share of its lanes that
        // their warps' schedulers own (a 64-thread CTA alone on a four-scheduler SM: half).
        const double share = std::min(1.0, resident_warps(sm, tiles, cps, static_cast<int>(n_threads)) / sm.sub_partitions);
        keep_if_best(gpu, op, tbm, tbn, st, r, 0.0, cps, eff_rate * share, best);
      }
    }
  }

  std::string describe() const override {
    const char* instr = unaligned_conv ? "FFMA" : dtype == Dtype::int8 ? "DP4A" : dtype == Dtype::fp16 ? "HFMA2" : "FFMA";
    std::ostringstream os;
    os << "SIMT " << instr;
    if (unaligned_conv)
      os << " on " << dtype_name(dtype) << " operands" << (dtype == Dtype::fp32 ? "" : " converted to fp32")
         << " (implicit_convolve_sgemm: " << g.c << " channels do not make 16-byte rows for the tensor cores)";
    os << ", tile " << bm << "x" << bn << "x" << bk << ", " << threads() << " threads of " << thread_rows() << "x"
       << thread_cols() << " accumulators, " << stages << (stages == 1 ? " stage" : " stages");
    return os.str();
  }
};

}  // namespace

std::shared_ptr<GemmProgram> make_simt_gemm() { return std::make_shared<SimtGemm>(); }

std::shared_ptr<GemmProgram> make_simt_conv_gemm() {
  auto p = std::make_shared<SimtGemm>();
  p->unaligned_conv = true;
  return p;
}

}  // namespace xpusim::lower
