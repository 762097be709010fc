#pragma once
// GEMM kernels (internal to sim/lower): what every architecture's GEMM shares (the problem, its
// operands in memory, the tile walk, the epilogue), with hooks for what a tensor-core generation
// does its own way: which part of the shared operand a CTA fetches, what its MMAs cost, which
// tiles it can run and how its CTAs are scheduled. gemm.cpp holds the shared part and picks the
// variant (kernels.gemm.mma), gemm_schedule.cpp split-K, stream-K and persistent kernels;
// gemm_sm90.cpp (warpgroup MMA) and gemm_sm100.cpp (tcgen05) are the
// variants, gemm_simt.cpp the kernels of chips without tensor cores for the format (FFMA, HFMA2
// or DP4A on the lanes), and a new architecture adds a file beside them.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/sm/kernel_program.h"
#include "sim/config/chip_config.h"
#include "sim/trace/trace.h"

namespace xpusim::lower {

struct ConvGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0, r = 0, s = 0, stride = 1, pad = 0, p = 0, q = 0;
};

class GemmProgram : public KernelProgram {
 public:
  int64_t M = 0, N = 0, K = 0, batch = 1;
  int64_t bm = 0, bn = 0, bk = 0;  // bk in elements; bm x bn is one CTA's (one SM's) output tile
  int in_bits = 16, out_bits = 16;
  int b_bits = 16;  // the weights' elements (narrower than in_bits when weight-only quantised)
  Dtype dtype = Dtype::bf16;
  bool sparse = false;
  // C = AB + C: the epilogue loads each output tile (out_bits) before it adds and stores it
  // (trace::Op::accumulate; cuBLAS's beta 1).
  bool accumulate = false;
  // Block scales of the weights: one of scale_bits per scale_group elements along K (0: none).
  int64_t scale_group = 0;
  int scale_bits = 0;
  double dequant_ops = 0;  // lane ops per weight element converted to dtype before the MMA (0: native)
  // Bytes a weight element takes, 2:4 metadata and block scales included (trace::Op::weight_bits).
  double b_elem_bytes = 2;
  uint64_t a = 0, b = 0, meta = 0, scales = 0, c = 0;
  // An fp8 GEMM's two per-tensor scales (D = scale_a scale_b AB, as cuBLASLt's fp8 matmul and
  // torch._scaled_mm take them: device pointers), which the epilogue loads before it scales the
  // accumulators (0: no per-tensor scales).
  uint64_t tensor_scales = 0;
  int64_t tiles_m = 0, tiles_n = 0;  // set from M, N, bm and bn by count_tiles
  // Every tile the choice tried, with its stages and resources, where splits_choose_tile() says
  // choose_splits weighs them (empty otherwise).
  struct TriedTile {
    int64_t bm, bn;
    int stages;
    CtaResources resources;
  };
  std::vector<TriedTile> tried;
  int raster_group = 8;
  // Issue to result of one MMA, less its MACs' time (tensor_core.mma_latency): a K step's MMAs,
  // chained on one accumulator, take at least their count times it plus their MACs at `mma_rate`
  // (wgmma kernels).
  double mma_latency_cycles = 0;
  double mma_rate = 0;  // the tensor cores' MACs per SM clock in this GEMM's format (2:4 included)
  int cluster = 1;  // CTAs along M sharing each B tile (TMA multicast; 2-SM MMA pairs on tcgen05)
  bool conv = false;
  ConvGeometry g;

  // Weight-only with conversion: the weights are the MMA's 64-row operand (see sm90's costs).
  bool swap() const { return dequant_ops > 0; }
  uint64_t tiles() const { return static_cast<uint64_t>(batch * tiles_m * tiles_n); }
  // tiles_m and tiles_n for the tile bm x bn (after the tile choice, and when choose_splits takes another).
  void count_tiles();
  uint64_t k_steps() const;

  // Split-K (as cuBLAS and CUTLASS run skinny GEMMs): each output tile's K steps are cut into
  // `splits` nearly equal ranges, one CTA each. With `reduce_kernel` (cuBLAS), every split stores
  // its fp32 partial tile to a workspace laid out as `splits` copies of the output, and a second
  // kernel (make_split_k_reduce) adds them and writes the output; else (CUTLASS's serial
  // split-K) every split but the last stores its partial and the last split's CTA loads them,
  // adds them to its own and stores the output. 1: no split.
  int64_t splits = 1;
  bool reduce_kernel = false;
  uint64_t ws = 0;  // the partials' workspace
  uint64_t split_first(uint64_t split) const;  // first K step of a split
  uint64_t split_steps(uint64_t split) const { return split_first(split + 1) - split_first(split); }

  // Stream-K (CUTLASS's data-parallel + stream-K hybrid): the first `dp_tiles` tiles run one
  // CTA each; the K steps of the other tiles, tile after tile, are cut into `sk_ctas` equal
  // ranges, one CTA each, which may start and end inside a tile. A CTA that ends inside a tile
  // stores its fp32 partial (one workspace slot per CTA); the CTA that finishes the tile loads
  // the partials of the CTAs before it that worked on it, adds them and stores the output.
  // 0: no stream-K.
  int64_t sk_ctas = 0;
  uint64_t dp_tiles = 0;
  uint64_t sk_ws = 0;
  uint64_t sk_first(int64_t c) const {  // first of the stream-K iterations (K steps) of stream-K CTA c
    return (tiles() - dp_tiles) * k_steps() * static_cast<uint64_t>(c) / static_cast<uint64_t>(sk_ctas);
  }

  // One CTA per output tile and split, split-major: CTA c computes tile c % tiles() over split
  // c / tiles()'s K range (the variants may schedule otherwise); with stream-K, the data-parallel
  // tiles' CTAs, then the stream-K CTAs.
  uint64_t num_ctas() const override {
    return sk_ctas > 0 ? dp_tiles + static_cast<uint64_t>(sk_ctas) : tiles() * static_cast<uint64_t>(splits);
  }
  uint64_t steps(uint64_t cta) const override {
    if (sk_ctas > 0) {
      if (cta < dp_tiles) return k_steps();
      const int64_t c = static_cast<int64_t>(cta - dp_tiles);
      return sk_first(c + 1) - sk_first(c);
    }
    return split_steps(cta / tiles());
  }
  void step(uint64_t cta, uint64_t st, StepWork& w) const override {
    if (sk_ctas > 0) {
      if (cta < dp_tiles) return tile_step(cta, st, w);
      const uint64_t i = sk_first(static_cast<int64_t>(cta - dp_tiles)) + st;
      return tile_step(dp_tiles + i / k_steps(), i % k_steps(), w);
    }
    tile_step(cta % tiles(), split_first(cta / tiles()) + st, w);
  }
  void epilogue(uint64_t cta, StepWork& w) const override;
  // After choose_splits and choose_stream_k: a persistent kernel (KernelProgram::hand_over, one
  // CTA per tile standing for a resident CTA's turn at it) where neither was chosen and the
  // tiles are more than one wave, as cuBLAS's Hopper kernels are.
  void choose_persistent(const config::GpuConfig& gpu);
  // After choose_splits: stream-K for a ragged last wave after at least two whole ones (which
  // split-K cannot fill), where its estimate of the SMs' work beats the data-parallel kernel's
  // by a tenth and its whole estimate is no worse.
  void choose_stream_k(const config::GpuConfig& gpu, double eff_rate);
  // That estimate with the first `dp` tiles data-parallel and the rest stream-K over `ctas` CTAs
  // (dp = tiles(): no stream-K); `tensor_s`, if given, receives its SMs' part alone.
  double stream_k_estimate_s(const config::GpuConfig& gpu, double eff_rate, int64_t ctas, uint64_t dp,
                             double* tensor_s = nullptr) const;
  // After choose_tile: the split count a library heuristic picks, by an estimate that also
  // counts the latency of each CTA's K loop and the HBM traffic (what bounds a skinny GEMM),
  // with the partials' traffic and reduction charged; a split must save at least a tenth of the
  // chosen tile's unsplit estimate. Where the variant says so (splits_choose_tile), the splits
  // of every tile the choice tried are weighed, and the tile goes with the split that wins, as
  // cuBLAS's heuristic picks the two together. Sets `splits` (1 where none pays), and the tile
  // where another's split wins.
  void choose_splits(const config::GpuConfig& gpu, double eff_rate);
  // That estimate for `s` splits of the chosen tile.
  double split_estimate_s(const config::GpuConfig& gpu, int64_t s, double eff_rate) const;
  // What the estimate charges `s` splits for their reduction: the partials written and read
  // back through the L2, one idle load latency to wait for them, and the adds; with a reduction
  // kernel, also its launch (the first kernel's end, the gap, its start) and its output's store.
  double reduction_s(const config::GpuConfig& gpu, int64_t s) const;
  // What the estimates charge the memory system: every operand byte and the output once from
  // HBM, and the operand tiles that `n_tiles` tiles of tbm x tbn read from the L2 over `k_len`
  // of K (cluster multicast shares B).
  double hbm_bytes() const;
  double l2_operand_bytes(double n_tiles, int64_t tbm, int64_t tbn, double k_len) const;
  // The output tiles, whichever CTAs store them (persistent variants store several per CTA).
  void written(double max_bytes, std::vector<Strided>& out) const override;

  // Architecture hooks.
  // Whether the MMAs run on tensor cores (the SIMT variant runs them as lane instructions).
  virtual bool on_tensor_cores() const { return true; }
  // Whether choose_splits weighs the splits of every tile the choice tried, not only the chosen
  // one's (Hopper's cuBLAS runs skinny GEMMs in narrow tiles split over K where a wider tile
  // alone would run unsplit: h100-sxm-2026-11-24/skinny.csv's kernel names).
  virtual bool splits_choose_tile() const { return false; }
  // After choose_splits chose to split: a variant whose CTAs walk several tiles (tcgen05's
  // persistent grid) gives that up for one CTA per tile and split.
  virtual void splits_chosen() {}
  // Whether the operand tiles arrive by bulk copies (TMA: one instruction per tile); otherwise
  // mma_costs counts the copy instructions.
  virtual bool bulk_copies() const { return on_tensor_cores(); }
  // Tile rows a CTA may have, and the tile choice: sets bm, bn, stages and resources (bm stays
  // 0 when nothing fits). `rate` is the SM's MAC rate in this format (sparsity included).
  virtual void choose_tile(const config::GpuConfig& gpu, const trace::Op& op, double rate) = 0;
  // The part of the B tile's `cols_n` columns the CTA at tile row `tm` fetches from L2 (first
  // column and count), and to how many SMs the network delivers it. By default the CTAs of a
  // cluster share it by multicast; without clusters (cluster 1) each CTA fetches all of it.
  virtual void b_share(int64_t tm, int64_t cols_n, int64_t& n_lo, int64_t& n_cnt, int& fanout) const {
    multicast_share(tm, cols_n, n_lo, n_cnt, fanout);
  }
  // MMA instructions, shared-memory and accumulator traffic, conversions of one K step.
  virtual void mma_costs(StepWork& w) const = 0;
  // The estimates' least time of one K step of tbm x tbn tiles, `per_sm` of them on an SM, in SM
  // cycles: by default their MACs at `eff_rate`. The wgmma variant adds what bounds its narrow
  // tiles (its MMA chain's latency, the operands through the SM's network port).
  virtual double step_cycles(const config::GpuConfig& /*gpu*/, int64_t tbm, int64_t tbn, double per_sm, double eff_rate) const {
    return per_sm * static_cast<double>(tbm * tbn * bk) / eff_rate;
  }
  // "tile 128x256x64, 4 stages, ..." (before the weight-format note and the grid).
  virtual std::string describe() const = 0;

 protected:
  // K step `st` of output tile `tile` (tiles in rasterised order), and the epilogue of a tile;
  // both add to `w`.
  void tile_step(uint64_t tile, uint64_t st, StepWork& w) const;
  void tile_epilogue(uint64_t tile, StepWork& w) const;
  // Rasterisation swizzle: walk `raster_group` tile rows together, column by column, so that
  // CTAs running at the same time share A rows and B columns in L2.
  void tile_of(uint64_t tile, int64_t& bi, int64_t& tm, int64_t& tn) const;
  void conv_a_blocks(int64_t tm, int64_t k0, int64_t kk, int64_t rows_m, StepWork& w) const;
  // Channels c0 .. c0 + cc of filter tap (r, s) for the tile's output pixels.
  void conv_tap_blocks(int64_t tm, int64_t r, int64_t s, int64_t c0, int64_t cc, int64_t rows_m, StepWork& w) const;
  // TMA multicast in a cluster along M: the CTAs sharing the B tile each fetch an equal share of
  // its columns and the network delivers it to all of them.
  void multicast_share(int64_t tm, int64_t cols_n, int64_t& n_lo, int64_t& n_cnt, int& fanout) const;
  // The shared part of a tile choice: pipeline stages of `stage_bytes` that fit in an SM's shared
  // memory beside `epilogue_bytes` of epilogue staging, at most kernels.gemm.max_stages (0: fewer
  // than two).
  static int stages_that_fit(const config::GpuConfig& gpu, double epilogue_bytes, double stage_bytes);
  // Shared memory a TMA epilogue stages a tbm x tbn output tile through: two subtiles of 32
  // columns in flight, as CUTLASS's Hopper and Blackwell epilogues store them and cuBLAS's
  // kernels keep room for (16 KiB beside the stages for a bf16 output, 32 KiB for an fp32 one:
  // docs/validation/measured/h200-2026-11-25/gemm-grids.csv).
  double subtiled_epilogue_bytes(int64_t tbm, int64_t tbn) const;
  // A library heuristic's estimate of the kernel's time with tbm x tbn tiles: the longest of
  // the tensor work in waves of `cps` CTAs per SM, the L2 operand traffic, and the weight
  // conversions (`dequant_cols` of each tile's columns per K element) on the busiest SM.
  double estimate_s(const config::GpuConfig& gpu, const trace::Op& op, int64_t tbm, int64_t tbn, double dequant_cols,
                    int cps, double eff_rate) const;
  // One candidate of a tile choice: its estimate (as estimate_s), and if it beats `best` the
  // tile, its stages and resources become the program's and `best` its estimate. Returns
  // whether it did.
  bool keep_if_best(const config::GpuConfig& gpu, const trace::Op& op, int64_t tbm, int64_t tbn, int st,
                    const CtaResources& r, double dequant_cols, int cps, double eff_rate, double& best);
  // Candidate tiles of kernels.gemm.tiles (errors name the key).
  static std::vector<std::pair<int64_t, int64_t>> candidate_tiles(const config::GpuConfig& gpu);
};

// An unloaded load that misses the L2: the SM's L1, the L2's hit latency, then the memory
// controller and a closed bank's activate and read (the split and stream-K estimates).
double idle_load_latency_s(const config::GpuConfig& gpu);

// The variants (gemm_sm90.cpp, gemm_sm100.cpp, gemm_mma_sync.cpp, gemm_simt.cpp).
// Split-K's second kernel for `p` (reduce_kernel): CTAs of 256 threads, each adding the
// partials of a run of output elements and storing them in the output format.
std::shared_ptr<KernelProgram> make_split_k_reduce(const GemmProgram& p);

std::shared_ptr<GemmProgram> make_wgmma_gemm();
std::shared_ptr<GemmProgram> make_tcgen05_gemm();
std::shared_ptr<GemmProgram> make_simt_gemm();
// cuDNN's SIMT convolution for inputs whose channels do not make 16-byte rows (gemm_simt.cpp).
std::shared_ptr<GemmProgram> make_simt_conv_gemm();
std::shared_ptr<GemmProgram> make_mma_sync_gemm(const config::GpuConfig& gpu);

}  // namespace xpusim::lower
