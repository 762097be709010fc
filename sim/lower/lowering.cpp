#include "sim/lower/lowering.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/config/units.h"

namespace xpusim::lower {
namespace {

using trace::Op;
using trace::OpKind;

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint64_t bytes_of(uint64_t elems, int bits) { return div_up(elems * static_cast<uint64_t>(bits), 8); }

// Registers a thread keeps besides its accumulators (addresses, loop state, fragments).
constexpr int kBaseRegisters = 40;
// Threads of the producer warpgroup in warp-specialised kernels: it issues TMA and holds no
// accumulators.
constexpr int kProducerThreads = 128;

// ---------------------------------------------------------------------------------------------
// GEMM and implicit-GEMM convolution, CUTLASS-style: one CTA per MxN output tile, a K loop of
// TMA loads into a multistage shared-memory ring, and warpgroup MMAs on the tensor cores.
struct ConvGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0, r = 0, s = 0, stride = 1, pad = 0, p = 0, q = 0;
};

class GemmProgram : public KernelProgram {
 public:
  int64_t M = 0, N = 0, K = 0, batch = 1;
  int64_t bm = 0, bn = 0, bk = 0;  // bk in elements
  int in_bits = 16, out_bits = 16;
  int b_bits = 16;  // the weights' elements (narrower than in_bits when weight-only quantised)
  Dtype dtype = Dtype::bf16;
  bool sparse = false;
  // Block scales of the weights: one of scale_bits per scale_group elements along K (0: none).
  int64_t scale_group = 0;
  int scale_bits = 0;
  double dequant_ops = 0;  // lane ops per weight element converted to dtype before the MMA (0: native)
  // Bytes a weight element takes, 2:4 metadata and block scales included (trace::Op::weight_bits).
  double b_elem_bytes = 2;
  uint64_t a = 0, b = 0, meta = 0, scales = 0, c = 0;
  int64_t tiles_m = 0, tiles_n = 0;
  int raster_group = 8;
  int cluster = 1;  // CTAs along M sharing each B tile by TMA multicast
  bool conv = false;
  ConvGeometry g;

  uint64_t num_ctas() const override { return static_cast<uint64_t>(batch * tiles_m * tiles_n); }
  uint64_t steps(uint64_t) const override { return static_cast<uint64_t>(div_up(static_cast<uint64_t>(K), static_cast<uint64_t>(bk))); }
  // Weight-only with conversion: the weights are the MMA's 64-row operand (see step()).
  bool swap() const { return dequant_ops > 0; }

  // Rasterisation swizzle: walk `raster_group` tile rows together, column by column, so that
  // CTAs running at the same time share A rows and B columns in L2.
  void tile_of(uint64_t cta, int64_t& bi, int64_t& tm, int64_t& tn) const {
    const int64_t per_batch = tiles_m * tiles_n;
    bi = static_cast<int64_t>(cta) / per_batch;
    const int64_t id = static_cast<int64_t>(cta) % per_batch;
    const int64_t group = raster_group;
    const int64_t per_group = group * tiles_n;
    const int64_t first_m = (id / per_group) * group;
    const int64_t rows = std::min(group, tiles_m - first_m);
    const int64_t in_group = id % per_group;
    tm = first_m + in_group % rows;
    tn = in_group / rows;
  }

  void step(uint64_t cta, uint64_t st, StepWork& w) const override {
    int64_t bi, tm, tn;
    tile_of(cta, bi, tm, tn);
    const int64_t k0 = static_cast<int64_t>(st) * bk;
    const int64_t kk = std::min(bk, K - k0);
    const int64_t rows_m = std::min(bm, M - tm * bm);
    const int64_t cols_n = std::min(bn, N - tn * bn);
    if (!conv) {
      const uint64_t a_batch = bytes_of(static_cast<uint64_t>(M * K), in_bits) * static_cast<uint64_t>(bi);
      w.loads.push_back({a + a_batch + bytes_of(static_cast<uint64_t>(tm * bm * K + k0), in_bits),
                         static_cast<uint64_t>(rows_m), bytes_of(static_cast<uint64_t>(kk), in_bits),
                         bytes_of(static_cast<uint64_t>(K), in_bits)});
    } else {
      conv_a_blocks(tm, k0, kk, rows_m, w);
    }
    // B: K x N row-major (weights). 2:4 sparse weights store half the K rows plus 2-bit
    // position metadata per kept element. In a cluster, the CTAs that share this B tile each
    // fetch an equal share of its columns and multicast it to the others.
    const int64_t b_rows = sparse ? (kk + 1) / 2 : kk;
    const int64_t b_k0 = sparse ? k0 / 2 : k0;
    const int64_t first = (tm / cluster) * cluster;
    const int64_t members = std::min<int64_t>(cluster, tiles_m - first);
    const int64_t share = (cols_n + members - 1) / members;
    const int64_t n_lo = std::min(cols_n, (tm - first) * share);
    const int64_t n_cnt = std::min(cols_n, n_lo + share) - n_lo;
    std::vector<Strided>& dst = members > 1 ? w.multicast_loads : w.loads;
    w.multicast_fanout = static_cast<int>(members);
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
    w.tensor_macs = static_cast<double>(bm * bn * bk);
    w.tensor_dtype = dtype;
    w.tensor_sparse = sparse;
    // One warpgroup MMA covers 64 rows x the tile's other side x 32 bytes of K. The 64 rows are
    // A's (the tokens), or in a weight-only kernel the weights': mixed-input kernels swap the
    // operands (C^T = B^T A^T) so that the converted weights are the MMA's register operand and
    // the tokens its narrow side, which may be as small as 8.
    const int64_t mma_rows = swap() ? bn : bm, mma_cols = swap() ? bm : bn;
    w.instr_mma = static_cast<double>(mma_rows / 64) * std::ceil(static_cast<double>(bk * in_bits) / 256.0);
    w.instr_mem = static_cast<double>(w.loads.size() + w.multicast_loads.size());  // one TMA instruction per tile
    // Shared memory: TMA lands the A tile and the whole B tile (every multicast share). Each
    // 64-row warpgroup MMA reads its rows of the row operand and all of the other one; swapped,
    // the weights are read once into registers and converted there.
    const double b_tile_bytes = static_cast<double>(bn * bk) * b_elem_bytes;
    const double a_tile_bytes = static_cast<double>(bm * bk) * in_bits / 8.0;
    w.smem_write_bytes = a_tile_bytes + b_tile_bytes;
    w.smem_read_bytes = swap() ? b_tile_bytes + static_cast<double>(bn / 64) * a_tile_bytes
                             : a_tile_bytes + static_cast<double>(bm / 64) * b_tile_bytes;
    if (dequant_ops > 0) {
      w.fp32_ops = static_cast<double>(bn * bk) * dequant_ops;
      w.instr_simt = std::ceil(w.fp32_ops / 32.0);
    }
    // Each warpgroup MMA reads and writes its 64-row block of fp32 accumulators.
    w.rf_bytes = w.instr_mma * 64.0 * static_cast<double>(mma_cols) * 4.0 * 2.0;
  }

  void conv_a_blocks(int64_t tm, int64_t k0, int64_t kk, int64_t rows_m, StepWork& w) const {
    // Implicit GEMM: row m of A is output pixel (n, p, q); column k is (r, s, c), c fastest.
    const int64_t rs = k0 / g.c, c0 = k0 % g.c;
    const int64_t r = rs / g.s, s = rs % g.s;
    const int64_t cc = std::min(kk, g.c - c0);
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

  void epilogue(uint64_t cta, StepWork& w) const override {
    int64_t bi, tm, tn;
    tile_of(cta, bi, tm, tn);
    const int64_t rows_m = std::min(bm, M - tm * bm);
    const int64_t cols_n = std::min(bn, N - tn * bn);
    const uint64_t c_batch = bytes_of(static_cast<uint64_t>(M * N), out_bits) * static_cast<uint64_t>(bi);
    w.stores.push_back({c + c_batch + bytes_of(static_cast<uint64_t>(tm * bm * N + tn * bn), out_bits),
                        static_cast<uint64_t>(rows_m), bytes_of(static_cast<uint64_t>(cols_n), out_bits),
                        bytes_of(static_cast<uint64_t>(N), out_bits)});
    // Convert the fp32 accumulators and write them out through shared memory.
    w.fp32_ops = static_cast<double>(bm * bn);
    w.instr_simt = static_cast<double>(bm * bn) / 32.0;
    w.instr_mem = 1;
  }
};

// ---------------------------------------------------------------------------------------------
// Elementwise and row-wise kernels: a grid-stride loop over "units" (a chunk of elements, or a
// group of whole rows), each thread keeping `stages` 128-bit loads in flight.
class StreamingProgram : public KernelProgram {
 public:
  int64_t total = 0;       // elements
  int64_t unit = 0;        // elements per unit of work (whole rows for row-wise ops)
  int64_t step_elems = 0;  // elements per CTA step
  int64_t row = 0;         // row length (row-wise), 0 for elementwise
  uint64_t grid = 0;
  int inputs = 1;
  int in_bits = 16, out_bits = 16;
  bool reduce = false;     // one output per row
  double fp32_per_elem = 0, sfu_per_elem = 0;
  std::vector<uint64_t> in_base;
  uint64_t out_base = 0;

  int64_t units() const { return static_cast<int64_t>(div_up(static_cast<uint64_t>(total), static_cast<uint64_t>(unit))); }
  int64_t steps_per_unit() const { return static_cast<int64_t>(div_up(static_cast<uint64_t>(unit), static_cast<uint64_t>(step_elems))); }
  uint64_t num_ctas() const override { return grid; }
  uint64_t steps(uint64_t cta) const override {
    const int64_t u = units(), c = static_cast<int64_t>(cta);
    if (c >= u) return 0;
    return static_cast<uint64_t>(((u - 1 - c) / static_cast<int64_t>(grid) + 1) * steps_per_unit());
  }
  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    const int64_t spu = steps_per_unit();
    const int64_t u = static_cast<int64_t>(cta) + (static_cast<int64_t>(s) / spu) * static_cast<int64_t>(grid);
    const int64_t j = static_cast<int64_t>(s) % spu;
    const int64_t unit_end = std::min((u + 1) * unit, total);
    const int64_t lo = u * unit + j * step_elems;
    const int64_t hi = std::min(lo + step_elems, unit_end);
    if (hi <= lo) return;
    const uint64_t n = static_cast<uint64_t>(hi - lo);
    for (int i = 0; i < inputs; ++i)
      w.cached_loads.push_back({in_base[static_cast<size_t>(i)] + bytes_of(static_cast<uint64_t>(lo), in_bits), 1, bytes_of(n, in_bits), 0});
    if (!reduce) {
      w.stores.push_back({out_base + bytes_of(static_cast<uint64_t>(lo), out_bits), 1, bytes_of(n, out_bits), 0});
    } else if (hi == unit_end) {
      const int64_t first_row = u * unit / row, rows = (unit_end - u * unit + row - 1) / row;
      w.stores.push_back({out_base + bytes_of(static_cast<uint64_t>(first_row), out_bits), 1,
                          bytes_of(static_cast<uint64_t>(rows), out_bits), 0});
    }
    const double dn = static_cast<double>(n);
    w.fp32_ops = dn * fp32_per_elem;
    w.sfu_ops = dn * sfu_per_elem;
    w.instr_simt = std::ceil(dn / 32.0) * (fp32_per_elem + sfu_per_elem);
    // One 128-bit access per thread per 16 bytes.
    w.instr_mem = std::ceil(static_cast<double>(total_bytes(w.cached_loads) + total_bytes(w.stores)) / (32.0 * 16.0));
  }
  void epilogue(uint64_t, StepWork&) const override {}
};

// ---------------------------------------------------------------------------------------------
// Fused attention (FlashAttention-2/3 style): one CTA per (batch, head, block of queries); the
// inner loop streams blocks of K and V, computes S = QK^T and O += PV on the tensor cores and
// the online softmax on the SIMT/SFU lanes.
class AttentionProgram : public KernelProgram {
 public:
  int64_t batch = 1, heads = 1, kv_heads = 1, sq = 0, skv = 0, d = 0, bq = 128, bkv = 128;
  bool causal = false;
  int in_bits = 16, out_bits = 16;
  Dtype dtype = Dtype::bf16;
  uint64_t q = 0, k = 0, v = 0, o = 0;
  int64_t q_blocks = 0;

  uint64_t num_ctas() const override { return static_cast<uint64_t>(batch * heads * q_blocks); }
  void coords(uint64_t cta, int64_t& b, int64_t& h, int64_t& qb) const {
    // Longest-first for causal masks: the last query blocks see the most keys.
    const int64_t id = static_cast<int64_t>(cta);
    qb = id % q_blocks;
    if (causal) qb = q_blocks - 1 - qb;
    h = (id / q_blocks) % heads;
    b = id / (q_blocks * heads);
  }
  int64_t kv_end(int64_t qb) const {
    if (!causal) return skv;
    return std::min(skv, skv - sq + std::min((qb + 1) * bq, sq));
  }
  uint64_t steps(uint64_t cta) const override {
    int64_t b, h, qb;
    coords(cta, b, h, qb);
    return static_cast<uint64_t>(div_up(static_cast<uint64_t>(kv_end(qb)), static_cast<uint64_t>(bkv)));
  }
  uint64_t q_addr(int64_t b, int64_t row, int64_t h) const {
    return q + bytes_of(static_cast<uint64_t>(((b * sq + row) * heads + h) * d), in_bits);
  }
  void prologue(uint64_t cta, StepWork& w) const override {
    int64_t b, h, qb;
    coords(cta, b, h, qb);
    const int64_t rows = std::min(bq, sq - qb * bq);
    w.loads.push_back({q_addr(b, qb * bq, h), static_cast<uint64_t>(rows), bytes_of(static_cast<uint64_t>(d), in_bits),
                       bytes_of(static_cast<uint64_t>(heads * d), in_bits)});
    w.instr_mem = 1;
  }
  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    int64_t b, h, qb;
    coords(cta, b, h, qb);
    const int64_t kvh = h / (heads / kv_heads);
    const int64_t k0 = static_cast<int64_t>(s) * bkv;
    const int64_t rows = std::min(bkv, kv_end(qb) - k0);
    const uint64_t off = bytes_of(static_cast<uint64_t>(((b * skv + k0) * kv_heads + kvh) * d), in_bits);
    const uint64_t row_bytes = bytes_of(static_cast<uint64_t>(d), in_bits);
    const uint64_t stride = bytes_of(static_cast<uint64_t>(kv_heads * d), in_bits);
    w.loads.push_back({k + off, static_cast<uint64_t>(rows), row_bytes, stride});
    w.loads.push_back({v + off, static_cast<uint64_t>(rows), row_bytes, stride});
    const double tile = static_cast<double>(bq * bkv);
    w.tensor_macs = 2.0 * tile * static_cast<double>(d);  // S = QK^T and O += PV
    w.tensor_dtype = dtype;
    // Online softmax per score: scale, running max, subtract, running sum (FP32), exp (SFU);
    // rescaling O once per row per step.
    w.fp32_ops = 4.0 * tile + static_cast<double>(bq * d);
    w.sfu_ops = tile;
    w.instr_simt = (w.fp32_ops + w.sfu_ops) / 32.0;
    w.instr_mma = 2.0 * static_cast<double>(bq / 64) * std::ceil(static_cast<double>(d * in_bits) / 256.0);
    w.instr_mem = 2;
    // Shared memory: K and V tiles land; the MMAs read Q and, per 64-row warpgroup, K and V.
    const double kv = 2.0 * static_cast<double>(rows * d) * in_bits / 8.0;
    w.smem_write_bytes = kv;
    w.smem_read_bytes = static_cast<double>(bq * d) * in_bits / 8.0 + static_cast<double>(bq / 64) * kv;
    // Registers: S written (fp32) and read back as P, O accumulators read and written.
    w.rf_bytes = tile * (4.0 + 4.0) + static_cast<double>(bq * d) * 4.0 * 2.0;
  }
  void epilogue(uint64_t cta, StepWork& w) const override {
    int64_t b, h, qb;
    coords(cta, b, h, qb);
    const int64_t rows = std::min(bq, sq - qb * bq);
    w.stores.push_back({o + bytes_of(static_cast<uint64_t>(((b * sq + qb * bq) * heads + h) * d), out_bits),
                        static_cast<uint64_t>(rows), bytes_of(static_cast<uint64_t>(d), out_bits),
                        bytes_of(static_cast<uint64_t>(heads * d), out_bits)});
    w.fp32_ops = static_cast<double>(bq * d);  // final 1/sum scaling
    w.instr_simt = w.fp32_ops / 32.0;
    w.instr_mem = 1;
  }
};

// ---------------------------------------------------------------------------------------------
// Memory microbenchmarks, written as the classic CUDA kernels are.
// Pointer chase: one warp, one thread active, each load's address comes from the previous
// load, so each step waits for the full load-to-use latency. A first lap over the footprint
// warms the caches (and TLB-free here); the `loads` after it are timed.
class PointerChaseProgram : public KernelProgram {
 public:
  uint64_t base = 0;
  int64_t elements = 0, stride = 0, loads = 0, warm = 0;

  uint64_t num_ctas() const override { return 1; }
  uint64_t steps(uint64_t) const override { return static_cast<uint64_t>(warm + loads); }
  void step(uint64_t, uint64_t s, StepWork& w) const override {
    const uint64_t i = static_cast<uint64_t>(s) % static_cast<uint64_t>(elements);
    w.cached_loads.push_back({base + i * static_cast<uint64_t>(stride), 1, 8, 0});
    w.instr_mem = 1;
    w.instr_simt = 1;  // the address arithmetic of the next hop
  }
  void epilogue(uint64_t, StepWork&) const override {}
};

// Instruction loop: warps that issue one kind of instruction `count` times (the energy
// microbenchmarks: per-instruction energy and overhead share).
class InstructionLoopProgram : public KernelProgram {
 public:
  std::string instruction;
  int64_t count = 0, warps = 0, warps_per_cta = 4;
  double macs_per_mma = 0;
  uint64_t num_ctas() const override { return static_cast<uint64_t>((warps + warps_per_cta - 1) / warps_per_cta); }
  uint64_t steps(uint64_t) const override { return 1; }
  void step(uint64_t cta, uint64_t, StepWork& w) const override {
    const int64_t in_cta = std::min(warps_per_cta, warps - static_cast<int64_t>(cta) * warps_per_cta);
    const double n = static_cast<double>(count * in_cta);  // warp instructions
    if (instruction == "hmma" || instruction == "imma") {
      w.instr_mma = n;
      w.tensor_macs = n * macs_per_mma;
      w.tensor_dtype = instruction == "hmma" ? Dtype::fp16 : Dtype::int8;
      return;
    }
    w.instr_simt = n;
    if (instruction == "ffma") w.fp32_ops = 32 * n;
    if (instruction == "hfma") w.hfma_ops = 32 * n;
    if (instruction == "hdp4a") w.dp4a_ops = 32 * n;
  }
  void epilogue(uint64_t, StepWork&) const override {}
};

// Delay: one CTA busy for a known time (an imported kernel the trace does not describe).
class DelayProgram : public KernelProgram {
 public:
  double duration_s = 0;
  uint64_t num_ctas() const override { return 1; }
  uint64_t steps(uint64_t) const override { return 1; }
  void step(uint64_t, uint64_t, StepWork& w) const override { w.fixed_s = duration_s; }
  void epilogue(uint64_t, StepWork&) const override {}
};

// Strided read: a grid-stride loop in which each thread reads `access` bytes every `stride`
// bytes; `passes` sweeps over the footprint, the ones after the first timed.
class StridedReadProgram : public KernelProgram {
 public:
  uint64_t base = 0;
  int64_t accesses = 0;     // per pass
  int64_t access = 0, stride = 0;
  int64_t per_step = 0;     // accesses per CTA step
  int64_t passes = 1;
  uint64_t grid = 0;

  int64_t chunks() const { return (accesses + per_step - 1) / per_step; }
  int64_t chunks_of(uint64_t cta) const {
    const int64_t c = static_cast<int64_t>(cta), n = chunks();
    return c >= n ? 0 : (n - 1 - c) / static_cast<int64_t>(grid) + 1;
  }
  uint64_t num_ctas() const override { return grid; }
  uint64_t steps(uint64_t cta) const override { return static_cast<uint64_t>(chunks_of(cta) * passes); }
  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    const int64_t per_pass = chunks_of(cta);
    const int64_t pass = static_cast<int64_t>(s) / per_pass;
    const int64_t chunk = static_cast<int64_t>(cta) + (static_cast<int64_t>(s) % per_pass) * static_cast<int64_t>(grid);
    const int64_t n = std::min(per_step, accesses - chunk * per_step);
    // Each pass shifts the work by one chunk, so a CTA reads what another SM read before: the
    // passes after the first measure the L2 (or DRAM), not this SM's L1.
    int64_t first = (chunk + pass) % chunks() * per_step;
    int64_t left = n;
    while (left > 0) {
      const int64_t take = std::min(left, accesses - first);
      w.cached_loads.push_back({base + static_cast<uint64_t>(first * stride), static_cast<uint64_t>(take),
                                static_cast<uint64_t>(access), static_cast<uint64_t>(stride)});
      left -= take;
      first = 0;
    }
    w.instr_mem = std::ceil(static_cast<double>(n) * std::ceil(static_cast<double>(access) / 16.0) / 32.0);
  }
  void epilogue(uint64_t, StepWork&) const override {}
};

}  // namespace

Lowering::Lowering(const config::GpuConfig& gpu) : gpu_(gpu) {}

uint64_t Lowering::alloc(double bytes) {
  const uint64_t at = next_addr_;
  const uint64_t size = static_cast<uint64_t>(std::ceil(bytes));
  next_addr_ += div_up(size + 1, 4096) * 4096;  // page-aligned, never adjacent
  return at;
}

int Lowering::ctas_per_sm(const CtaResources& r) const { return occupancy(gpu_.sm, r); }

LoweredOp Lowering::finish(std::shared_ptr<KernelProgram> p, bool tensor) {
  LoweredOp out;
  out.ctas_per_sm = ctas_per_sm(p->resources);
  out.waves = out.ctas_per_sm > 0 ? static_cast<double>(p->num_ctas()) / (gpu_.sm.count * out.ctas_per_sm) : 0;
  out.uses_tensor_cores = tensor;
  std::ostringstream os;
  os << p->description << ", " << p->num_ctas() << " CTAs, " << out.ctas_per_sm << " CTA/SM, " << std::fixed;
  os.precision(2);
  os << out.waves << " waves";
  p->description = os.str();
  out.program = std::move(p);
  return out;
}

LoweredOp Lowering::lower(const Op& op) {
  if (op.min_bytes() > gpu_.hbm.capacity_bytes)
    throw UserError(op.loc.str() + ": op '" + op.name + "' needs " + units::format(op.min_bytes(), units::Dim::Size) +
                    " of tensors but the chip has " + units::format(gpu_.hbm.capacity_bytes, units::Dim::Size) + " of HBM");
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::conv2d: return gemm(op);
    case OpKind::attention: return attention(op);
    case OpKind::pointer_chase:
    case OpKind::strided_read:
    case OpKind::instruction_loop: return microbenchmark(op);
    case OpKind::delay: {
      auto p = std::make_shared<DelayProgram>();
      p->duration_s = op.duration_s;
      p->stages = 1;
      p->resources = CtaResources{32, 32 * 32, 0};
      p->description = "timed gap of " + units::format(op.duration_s, units::Dim::Time);
      return finish(p, false);
    }
    default: return streaming(op);
  }
}

LoweredOp Lowering::gemm(const Op& op) {
  const SmParams& sm = gpu_.sm;
  const TensorCoreParams& tc = gpu_.tensor_core;
  const KernelLibParams& kl = gpu_.kernels;
  const double rate = tc.per_sm * tc.macs_per_clock.of(op.dtype);
  if (rate <= 0)
    throw UserError(op.loc.str() + ": op '" + op.name + "': the tensor cores of this chip do not support " +
                    dtype_name(op.dtype) + " (tensor_core.macs_per_clock." + dtype_name(op.dtype) + " is 0)");
  if (op.sparse_2_4 && !tc.sparse_2_4)
    throw UserError(op.loc.str() + ": op '" + op.name + "' asks for 2:4 sparsity but tensor_core.sparse_2_4 is false");

  auto p = std::make_shared<GemmProgram>();
  p->dtype = op.dtype;
  p->in_bits = dtype_bits(op.dtype);
  p->out_bits = dtype_bits(op.out_dtype);
  p->b_bits = dtype_bits(op.b_dtype());
  p->b_elem_bytes = op.weight_bits() / 8.0;
  p->sparse = op.sparse_2_4;
  if (op.weight_only()) {
    p->scale_group = op.weight_group;
    p->scale_bits = op.weight_scale_bits;
    // The tensor cores take block-scaled weights of their own format as they are (Blackwell's
    // block-scaled fp4 MMA); anything else is converted in registers first.
    p->dequant_ops = op.weight_dtype == op.dtype ? 0 : kl.gemm_dequant_ops;
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
  p->cluster = kl.gemm_cluster_m;
  if (p->raster_group % p->cluster != 0)
    throw UserError("kernels.gemm.raster_group (" + std::to_string(p->raster_group) +
                    ") must be a multiple of kernels.gemm.cluster_m (" + std::to_string(p->cluster) +
                    ") so that the CTAs of a cluster are launched together");

  // Pick the candidate tile with the best estimate of time, as a library heuristic does:
  // waves of tensor work against L2 operand traffic.
  const double eff_rate = rate * (op.sparse_2_4 ? 2 : 1);
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::pair<int64_t, int64_t>> tiles;  // (bm, bn)
  for (const std::string& t : kl.gemm_tiles) {
    int64_t bm = 0, bn = 0;
    char x = 0;
    std::istringstream is(t);
    if (!(is >> bm >> x >> bn) || x != 'x' || bm < 64 || bn < 8 || bm % 64 != 0)
      throw UserError("kernels.gemm.tiles: '" + t + "' is not a tile MxN with M a multiple of 64 (e.g. 128x256)");
    tiles.emplace_back(bm, bn);
  }
  if (p->swap()) {
    // Swapped: each tile's 64-row side covers the weights (N) and its other side the tokens
    // (M), which also come in the narrow widths of small batches.
    std::vector<std::pair<int64_t, int64_t>> sw;
    for (const auto& [rows, cols] : tiles)
      for (int64_t tok : {int64_t{16}, int64_t{32}, cols})
        if (std::find(sw.begin(), sw.end(), std::make_pair(tok, rows)) == sw.end()) sw.emplace_back(tok, rows);
    tiles = sw;
  }
  for (const auto& [bm, bn] : tiles) {
    const double stage_bytes = static_cast<double>(bytes_of(static_cast<uint64_t>(p->bk), p->in_bits)) * static_cast<double>(bm) +
                               static_cast<double>(p->bk * bn) * p->b_elem_bytes;
    const double epilogue_bytes = static_cast<double>(bm * bn) * p->out_bits / 8.0;
    const int stages = std::min<int>(kl.gemm_max_stages, static_cast<int>((sm.shared_memory_bytes - epilogue_bytes) / stage_bytes));
    const int consumers = std::max(1, kl.gemm_threads - kProducerThreads);
    const int regs_per_thread = static_cast<int>(bm * bn / consumers) + kBaseRegisters;
    if (stages < 2 || regs_per_thread > 255) continue;
    CtaResources r{kl.gemm_threads, regs_per_thread * kl.gemm_threads, stages * stage_bytes + epilogue_bytes};
    const int cps = ctas_per_sm(r);
    if (cps < 1) continue;
    const double n_tiles = static_cast<double>(op.batch) * std::ceil(static_cast<double>(p->M) / bm) * std::ceil(static_cast<double>(p->N) / bn);
    const double k_pad = std::ceil(static_cast<double>(p->K) / p->bk) * p->bk;
    const double tile_s = bm * bn * k_pad / eff_rate / sm.clock_hz;
    const double waves = std::ceil(n_tiles / (sm.count * cps));
    const double compute_s = waves * cps * tile_s;
    const double l2_s = n_tiles * k_pad * (bm * p->in_bits / 8.0 + static_cast<double>(bn) / p->cluster * p->b_elem_bytes) /
                        gpu_.l2.bandwidth;
    // Conversions on the busiest SM: the dispatcher spreads tiles over the SMs first.
    const double dequant_s = std::ceil(n_tiles / sm.count) * bn * k_pad * p->dequant_ops / sm.fp32_lanes / sm.clock_hz;
    const double est = std::max({compute_s, l2_s, dequant_s});
    if (est < best * (1 - 1e-9)) {
      best = est;
      p->bm = bm;
      p->bn = bn;
      p->stages = stages;
      p->resources = r;
    }
  }
  if (p->bm == 0)
    throw UserError(op.loc.str() + ": op '" + op.name + "': no tile in kernels.gemm.tiles fits the SM's shared memory and registers");
  p->tiles_m = static_cast<int64_t>(div_up(static_cast<uint64_t>(p->M), static_cast<uint64_t>(p->bm)));
  p->tiles_n = static_cast<int64_t>(div_up(static_cast<uint64_t>(p->N), static_cast<uint64_t>(p->bn)));
  const double ei = p->in_bits / 8.0;
  p->a = alloc(static_cast<double>(p->batch) * p->M * p->K * ei);
  const double b_sets = static_cast<double>(op.kind == OpKind::gemm ? p->batch : 1);
  p->b = alloc(b_sets * p->K * p->N * p->b_bits / 8.0);
  if (p->sparse) p->meta = alloc(static_cast<double>(p->batch) * p->K * p->N / 8.0);
  if (p->scale_group > 0)
    p->scales = alloc(b_sets * std::ceil(static_cast<double>(p->K) / static_cast<double>(p->scale_group)) * p->N * p->scale_bits / 8.0);
  p->c = alloc(static_cast<double>(p->batch) * p->M * p->N * p->out_bits / 8.0);
  std::ostringstream os;
  os << "tile " << p->bm << "x" << p->bn << "x" << p->bk << ", " << p->stages << " stages";
  if (p->cluster > 1) os << ", cluster " << p->cluster << "x1 (B multicast)";
  if (op.weight_only())
    os << ", " << op.weight_format << " weights" << (p->dequant_ops > 0 ? " converted to " + std::string(dtype_name(op.dtype)) : " (native block scaling)");
  p->description = os.str();
  return finish(p, true);
}

LoweredOp Lowering::streaming(const Op& op) {
  const KernelLibParams& kl = gpu_.kernels;
  auto p = std::make_shared<StreamingProgram>();
  p->in_bits = dtype_bits(op.dtype);
  p->out_bits = dtype_bits(op.out_dtype);
  p->total = op.elements();
  p->step_elems = std::max<int64_t>(1, static_cast<int64_t>(kl.simt_threads * kl.simt_bytes_per_thread * 8 / p->in_bits));
  if (op.kind == OpKind::elementwise) {
    p->inputs = op.inputs;
    p->fp32_per_elem = op.flops_per_element;
    p->unit = p->step_elems;
  } else {
    const trace::RowwiseCost c = trace::rowwise_cost(op.kind);
    p->fp32_per_elem = c.fp32;
    p->sfu_per_elem = c.sfu;
    p->row = op.cols();
    p->reduce = op.kind == OpKind::reduction;
    // Short rows are grouped so a CTA step still moves a full tile; long rows span steps.
    p->unit = p->row >= p->step_elems ? p->row : (p->step_elems / p->row) * p->row;
  }
  p->stages = kl.simt_stages;
  p->resources = CtaResources{kl.simt_threads, 32 * kl.simt_threads, 0};
  const int cps = ctas_per_sm(p->resources);
  if (cps < 1) throw UserError("kernels.simt.threads: a CTA of " + std::to_string(kl.simt_threads) + " threads does not fit on an SM");
  p->grid = std::min<uint64_t>(static_cast<uint64_t>(p->units()), static_cast<uint64_t>(gpu_.sm.count) * static_cast<uint64_t>(cps));
  for (int i = 0; i < p->inputs; ++i) p->in_base.push_back(alloc(static_cast<double>(p->total) * p->in_bits / 8.0));
  p->out_base = alloc(static_cast<double>(p->reduce ? op.rows() : p->total) * p->out_bits / 8.0);
  std::ostringstream os;
  os << "grid-stride, " << p->step_elems << " elements per CTA step, " << p->stages << " loads in flight";
  p->description = os.str();
  return finish(p, false);
}

LoweredOp Lowering::microbenchmark(const Op& op) {
  const KernelLibParams& kl = gpu_.kernels;
  if (op.kind == OpKind::instruction_loop) {
    auto p = std::make_shared<InstructionLoopProgram>();
    p->instruction = op.instruction;
    p->count = op.count;
    p->warps = op.warps;
    p->macs_per_mma = static_cast<double>(op.macs_per_instruction);
    const bool mma = op.instruction == "hmma" || op.instruction == "imma";
    if (mma && gpu_.tensor_core.per_sm * gpu_.tensor_core.macs_per_clock.of(op.instruction == "hmma" ? Dtype::fp16 : Dtype::int8) <= 0)
      throw UserError(op.loc.str() + ": op '" + op.name + "': the tensor cores of this chip do not run " + op.instruction);
    p->stages = 1;
    p->resources = CtaResources{32 * static_cast<int>(p->warps_per_cta), 32 * 32 * static_cast<int>(p->warps_per_cta), 0};
    std::ostringstream os;
    os << p->warps << " warps x " << p->count << " " << p->instruction << (mma ? " (" + std::to_string(op.macs_per_instruction) + " MACs each)" : "");
    p->description = os.str();
    return finish(p, mma);
  }
  if (op.kind == OpKind::pointer_chase) {
    auto p = std::make_shared<PointerChaseProgram>();
    p->elements = op.footprint / op.stride;
    p->stride = op.stride;
    p->loads = op.loads;
    p->base = alloc(static_cast<double>(op.footprint));
    p->stages = 1;  // each load depends on the one before
    p->resources = CtaResources{32, 32 * 32, 0};
    p->warm = op.warmup ? p->elements : 0;
    p->timed_step = p->warm;
    p->timed_accesses = static_cast<double>(p->loads);
    p->timed_bytes = p->timed_accesses * 8;
    std::ostringstream os;
    os << "one thread, " << p->warm << " pointers warmed, " << p->loads << " timed dependent loads";
    p->description = os.str();
    return finish(p, false);
  }
  auto p = std::make_shared<StridedReadProgram>();
  p->accesses = op.footprint / op.stride;
  p->access = op.access;
  p->stride = op.stride;
  p->passes = op.passes;
  // Each thread keeps `simt.stages` loads of up to 16 bytes in flight.
  const int64_t per_thread = std::max<int64_t>(1, static_cast<int64_t>(kl.simt_bytes_per_thread) / std::max<int64_t>(1, op.access));
  p->per_step = std::max<int64_t>(1, kl.simt_threads * per_thread);
  p->stages = kl.simt_stages;
  p->resources = CtaResources{kl.simt_threads, 32 * kl.simt_threads, 0};
  const int cps = ctas_per_sm(p->resources);
  if (cps < 1) throw UserError("kernels.simt.threads: a CTA of " + std::to_string(kl.simt_threads) + " threads does not fit on an SM");
  p->grid = std::min<uint64_t>(static_cast<uint64_t>(p->chunks()), static_cast<uint64_t>(gpu_.sm.count) * static_cast<uint64_t>(cps));
  p->base = alloc(static_cast<double>(op.footprint));
  if (p->passes > 1) {
    p->timed_step = p->chunks_of(0);  // CTA 0 starts its second pass
    p->timed_accesses = static_cast<double>(p->accesses * (p->passes - 1));
    p->timed_bytes = p->timed_accesses * static_cast<double>(op.access);
  }
  std::ostringstream os;
  os << "grid-stride, " << p->per_step << " accesses per CTA step, " << p->passes << " pass" << (p->passes > 1 ? "es" : "");
  p->description = os.str();
  return finish(p, false);
}

LoweredOp Lowering::attention(const Op& op) {
  const TensorCoreParams& tc = gpu_.tensor_core;
  const KernelLibParams& kl = gpu_.kernels;
  if (tc.per_sm * tc.macs_per_clock.of(op.dtype) <= 0)
    throw UserError(op.loc.str() + ": op '" + op.name + "': the tensor cores of this chip do not support " + dtype_name(op.dtype));
  auto p = std::make_shared<AttentionProgram>();
  p->batch = op.batch;
  p->heads = op.heads;
  p->kv_heads = op.kv_heads;
  p->sq = op.seq_q;
  p->skv = op.seq_kv;
  p->d = op.head_dim;
  p->bq = kl.attention_q_tile;
  p->bkv = kl.attention_kv_tile;
  p->causal = op.causal;
  p->dtype = op.dtype;
  p->in_bits = dtype_bits(op.dtype);
  p->out_bits = dtype_bits(op.out_dtype);
  p->q_blocks = static_cast<int64_t>(div_up(static_cast<uint64_t>(op.seq_q), static_cast<uint64_t>(p->bq)));
  p->stages = 2;
  const double ei = p->in_bits / 8.0;
  const double smem = (p->bq + 2.0 * p->stages * p->bkv) * p->d * ei;
  const int consumers = std::max(1, kl.attention_threads - kProducerThreads);
  const int regs = static_cast<int>((p->bq * p->d + p->bq * p->bkv) / consumers) + kBaseRegisters;
  if (regs > 255 || smem > gpu_.sm.shared_memory_bytes)
    throw UserError(op.loc.str() + ": op '" + op.name + "': head_dim " + std::to_string(op.head_dim) +
                    " with the configured attention tiles does not fit an SM (shared memory or registers)");
  p->resources = CtaResources{kl.attention_threads, regs * kl.attention_threads, smem};
  p->q = alloc(static_cast<double>(op.batch * op.seq_q * op.heads * op.head_dim) * ei);
  p->k = alloc(static_cast<double>(op.batch * op.seq_kv * op.kv_heads * op.head_dim) * ei);
  p->v = alloc(static_cast<double>(op.batch * op.seq_kv * op.kv_heads * op.head_dim) * ei);
  p->o = alloc(static_cast<double>(op.batch * op.seq_q * op.heads * op.head_dim) * p->out_bits / 8.0);
  std::ostringstream os;
  os << "fused, q tile " << p->bq << ", kv tile " << p->bkv;
  p->description = os.str();
  return finish(p, true);
}

}  // namespace xpusim::lower
