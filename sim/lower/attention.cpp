// Fused attention: what every architecture's kernel shares, and the choice of variant.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/config/units.h"
#include "sim/lower/attention_program.h"
#include "sim/lower/lower_util.h"
#include "sim/lower/lowering.h"

namespace xpusim::lower {

using trace::Op;

namespace {
constexpr int64_t kDecodeRows = 64;  // query rows a decode CTA takes (one warpgroup MMA block)
}  // namespace

void AttentionProgram::coords(uint64_t cta, int64_t& b, int64_t& h, int64_t& qb) const {
  // Longest-first for causal masks: the last query blocks see the most keys.
  const int64_t id = static_cast<int64_t>(cta);
  qb = id % q_blocks;
  if (causal) qb = q_blocks - 1 - qb;
  h = (id / q_blocks) % heads;
  b = id / (q_blocks * heads);
}

int64_t AttentionProgram::kv_end(int64_t qb) const {
  if (!causal) return skv;
  return std::min(skv, skv - sq + std::min((qb + 1) * bq, sq));
}

void AttentionProgram::decode_coords(uint64_t cta, int64_t& b, int64_t& kvh, int64_t& split) const {
  const int64_t pairs = batch * kv_heads, id = static_cast<int64_t>(cta);
  split = id / pairs;
  kvh = (id % pairs) % kv_heads;
  b = (id % pairs) / kv_heads;
}

void AttentionProgram::choose_splits(int sm_count) {
  splits = 1;
  const double pairs = static_cast<double>(batch * kv_heads);
  if (pairs >= 0.8 * sm_count) return;
  const int64_t most = std::min<int64_t>({128, sm_count, kv_blocks()});
  auto efficiency = [&](int64_t s) {
    const double waves = pairs * static_cast<double>(s) / sm_count;
    return waves / std::ceil(waves);
  };
  // A split count that leaves the blocks per split as they were with one fewer is no choice.
  auto eligible = [&](int64_t s) { return s == 1 || div_up(kv_blocks(), s) != div_up(kv_blocks(), s - 1); };
  double best = 0;
  for (int64_t s = 1; s <= most; ++s)
    if (eligible(s)) best = std::max(best, efficiency(s));
  for (int64_t s = 1; s <= most; ++s)
    if (eligible(s) && efficiency(s) >= 0.85 * best) {
      splits = s;
      return;
    }
}

uint64_t AttentionProgram::steps(uint64_t cta) const {
  if (decode) {
    int64_t b, kvh, split;
    decode_coords(cta, b, kvh, split);
    return static_cast<uint64_t>(split_begin(split + 1) - split_begin(split));
  }
  int64_t b, h, qb;
  coords(cta, b, h, qb);
  return static_cast<uint64_t>(div_up(static_cast<uint64_t>(kv_end(qb)), static_cast<uint64_t>(bkv)));
}

uint64_t AttentionProgram::q_addr(int64_t b, int64_t row, int64_t h) const {
  return q + bytes_of(static_cast<uint64_t>(((b * sq + row) * heads + h) * d), in_bits);
}

void AttentionProgram::prologue(uint64_t cta, StepWork& w) const {
  if (decode) {
    // The group's query heads are adjacent in each query row.
    int64_t b, kvh, split;
    decode_coords(cta, b, kvh, split);
    w.loads.push_back({q_addr(b, 0, kvh * group), static_cast<uint64_t>(sq), bytes_of(static_cast<uint64_t>(group * d), in_bits),
                       bytes_of(static_cast<uint64_t>(heads * d), in_bits)});
    w.instr_mem = 1;
    return;
  }
  int64_t b, h, qb;
  coords(cta, b, h, qb);
  const int64_t rows = std::min(bq, sq - qb * bq);
  w.loads.push_back({q_addr(b, qb * bq, h), static_cast<uint64_t>(rows), bytes_of(static_cast<uint64_t>(d), in_bits),
                     bytes_of(static_cast<uint64_t>(heads * d), in_bits)});
  w.instr_mem = 1;
}

int64_t AttentionProgram::page_slot(int64_t b, int64_t p) const {
  // A multiplicative scatter of the pool (coprime multiplier: a bijection), so that a
  // sequence's consecutive pages land far apart, as an allocator serving many requests leaves
  // them.
  const int64_t pool = batch * pages_per_seq();
  int64_t mult = pool * 5 / 8 + 1;
  while (std::gcd(mult, pool) != 1) ++mult;
  // Both factors are below the pool's size, so the product stays within 64 bits for pools of
  // up to 2^32 pages; larger pools (not a real cache) keep their pages in order.
  if (pool >= (int64_t{1} << 32)) return b * pages_per_seq() + p;
  return static_cast<int64_t>(static_cast<uint64_t>(b * pages_per_seq() + p) % static_cast<uint64_t>(pool) *
                              static_cast<uint64_t>(mult % pool) % static_cast<uint64_t>(pool));
}

void AttentionProgram::kv_loads(int64_t b, int64_t kvh, int64_t k0, int64_t rows, StepWork& w) const {
  const uint64_t row_bytes = bytes_of(static_cast<uint64_t>(d), in_bits);
  const uint64_t stride = bytes_of(static_cast<uint64_t>(kv_heads * d), in_bits);
  if (page == 0) {
    const uint64_t off = bytes_of(static_cast<uint64_t>(((b * skv + k0) * kv_heads + kvh) * d), in_bits);
    w.loads.push_back({k + off, static_cast<uint64_t>(rows), row_bytes, stride});
    w.loads.push_back({v + off, static_cast<uint64_t>(rows), row_bytes, stride});
    w.instr_mem += 2;
    return;
  }
  // The block-table entries of the pages this block spans, then each page's rows of K and V.
  const int64_t first = k0 / page, last = (k0 + rows - 1) / page;
  const uint64_t entries = static_cast<uint64_t>(last - first + 1) * 4;
  w.loads.push_back({table + static_cast<uint64_t>(b * pages_per_seq() + first) * 4, 1, entries, entries});
  w.instr_mem += 1;
  for (int64_t pg = first; pg <= last; ++pg) {
    const int64_t lo = std::max(k0, pg * page), hi = std::min(k0 + rows, (pg + 1) * page);
    const uint64_t off = bytes_of(static_cast<uint64_t>(((page_slot(b, pg) * page + (lo - pg * page)) * kv_heads + kvh) * d), in_bits);
    w.loads.push_back({k + off, static_cast<uint64_t>(hi - lo), row_bytes, stride});
    w.loads.push_back({v + off, static_cast<uint64_t>(hi - lo), row_bytes, stride});
    w.instr_mem += 2;
  }
}

void AttentionProgram::decode_step(uint64_t cta, uint64_t s, StepWork& w) const {
  int64_t b, kvh, split;
  decode_coords(cta, b, kvh, split);
  const int64_t k0 = (split_begin(split) + static_cast<int64_t>(s)) * bkv;
  const int64_t rows = std::min(bkv, skv - k0);
  kv_loads(b, kvh, k0, rows, w);
  // The MMAs compute the whole bq-row block (the group's rows padded); the softmax only the
  // real rows.
  w.tensor_macs = 2.0 * static_cast<double>(bq * bkv) * static_cast<double>(d);
  w.tensor_dtype = dtype;
  const double scores = static_cast<double>(decode_rows() * bkv);
  w.fp32_ops = 4.0 * scores + static_cast<double>(decode_rows() * d);
  w.sfu_ops = scores;
  w.instr_simt = (w.fp32_ops + w.sfu_ops) / 32.0;
  w.smem_write_bytes = 2.0 * static_cast<double>(rows * d) * in_bits / 8.0;
  mma_costs(rows, w);
}

void AttentionProgram::decode_epilogue(uint64_t cta, StepWork& w) const {
  int64_t b, kvh, split;
  decode_coords(cta, b, kvh, split);
  const uint64_t real = static_cast<uint64_t>(decode_rows());
  w.fp32_ops = static_cast<double>(real) * static_cast<double>(d);  // 1/sum scaling
  w.instr_simt = w.fp32_ops / 32.0;
  if (splits > 1) {
    // The partial rows (fp32) and their log-sum-exps, at row pair x rows of this split's slice.
    const uint64_t pairs = static_cast<uint64_t>(batch * kv_heads), pair = static_cast<uint64_t>(b * kv_heads + kvh);
    const uint64_t row = static_cast<uint64_t>(split) * pairs * real + pair * real;
    const uint64_t o_bytes = real * static_cast<uint64_t>(d) * 4;
    w.stores.push_back({o_acc + row * static_cast<uint64_t>(d) * 4, 1, o_bytes, o_bytes});
    w.stores.push_back({lse_acc + row * 4, 1, real * 4, real * 4});
    w.instr_mem = 2;
    return;
  }
  w.stores.push_back({o + bytes_of(static_cast<uint64_t>((b * sq * heads + kvh * group) * d), out_bits), static_cast<uint64_t>(sq),
                      bytes_of(static_cast<uint64_t>(group * d), out_bits), bytes_of(static_cast<uint64_t>(heads * d), out_bits)});
  w.instr_mem = 1;
}

namespace {

class AttentionCombine : public KernelProgram {
 public:
  int64_t rows = 0;          // output rows: batch x KV heads x decode rows, pair-major as the partials
  int64_t d = 0, splits = 1;
  int64_t per_cta = 4;       // rows a CTA takes
  int out_bits = 16;
  uint64_t o_acc = 0, lse_acc = 0, o = 0;

  uint64_t num_ctas() const override { return div_up(static_cast<uint64_t>(rows), static_cast<uint64_t>(per_cta)); }
  uint64_t steps(uint64_t) const override { return 1; }
  // Row r0 and the rows of a CTA.
  int64_t first(uint64_t cta) const { return static_cast<int64_t>(cta) * per_cta; }
  int64_t count(uint64_t cta) const { return std::min(per_cta, rows - first(cta)); }
  void prologue(uint64_t cta, StepWork& w) const override {
    // The rows' log-sum-exps from every split, then the weights: the largest, the sum of
    // exponentials, its log, and one exponential per split and row.
    const uint64_t n = static_cast<uint64_t>(count(cta));
    w.loads.push_back({lse_acc + static_cast<uint64_t>(first(cta)) * 4, static_cast<uint64_t>(splits), n * 4,
                       static_cast<uint64_t>(rows) * 4});
    const double lse = static_cast<double>(n * static_cast<uint64_t>(splits));
    w.fp32_ops = 3 * lse;
    w.sfu_ops = 2 * lse;
    w.instr_simt = (w.fp32_ops + w.sfu_ops) / 32.0;
    w.instr_mem = 1;
  }
  void step(uint64_t, uint64_t, StepWork&) const override {}
  void epilogue(uint64_t cta, StepWork& w) const override {
    // Once the weights are known: every split's partial rows in, one multiply-add per element.
    const uint64_t n = static_cast<uint64_t>(count(cta)), row_bytes = static_cast<uint64_t>(d) * 4;
    w.loads.push_back({o_acc + static_cast<uint64_t>(first(cta)) * row_bytes, static_cast<uint64_t>(splits), n * row_bytes,
                       static_cast<uint64_t>(rows) * row_bytes});
    w.fp32_ops = static_cast<double>(n) * static_cast<double>(d) * static_cast<double>(splits);
    w.instr_simt = w.fp32_ops / 32.0;
    w.instr_mem = static_cast<double>(splits) + 1;
    // The output rows, in the order of the partials' (with one query per sequence, as laid out).
    const uint64_t out_bytes = bytes_of(n * static_cast<uint64_t>(d), out_bits);
    w.stores.push_back({o + bytes_of(static_cast<uint64_t>(first(cta) * d), out_bits), 1, out_bytes, out_bytes});
  }
};

}  // namespace

std::shared_ptr<KernelProgram> make_attention_combine(const AttentionProgram& p) {
  auto c = std::make_shared<AttentionCombine>();
  c->rows = p.batch * p.kv_heads * p.decode_rows();
  c->d = p.d;
  c->splits = p.splits;
  // FlashAttention's choice: as few rows per CTA as 128 threads load a row's partials with.
  c->per_cta = p.d % 128 == 0 ? 4 : p.d % 64 == 0 ? 8 : 16;
  c->out_bits = p.out_bits;
  c->o_acc = p.o_acc;
  c->lse_acc = p.lse_acc;
  c->o = p.o;
  c->stages = 1;
  // The log-sum-exps of up to the next power of two of splits, per row and one more, in shared
  // memory; 64 registers a thread (an assumption: the kernel is load-bound).
  int64_t pow2 = 1;
  while (pow2 < p.splits) pow2 *= 2;
  c->resources = CtaResources{128, 128 * 64, static_cast<double>(pow2 * (c->per_cta + 1) * 4)};
  c->description = "combine kernel: " + std::to_string(c->per_cta) + " rows per CTA from " + std::to_string(p.splits) + " splits";
  return c;
}

void AttentionProgram::step(uint64_t cta, uint64_t s, StepWork& w) const {
  if (decode) return decode_step(cta, s, w);
  int64_t b, h, qb;
  coords(cta, b, h, qb);
  const int64_t kvh = h / (heads / kv_heads);
  const int64_t k0 = static_cast<int64_t>(s) * bkv;
  const int64_t rows = std::min(bkv, kv_end(qb) - k0);
  kv_loads(b, kvh, k0, rows, w);
  const double tile = static_cast<double>(bq * bkv);
  w.tensor_macs = 2.0 * tile * static_cast<double>(d);  // S = QK^T and O += PV
  w.tensor_dtype = dtype;
  // Online softmax per score: scale, running max, subtract, running sum (FP32), exp (SFU);
  // rescaling O once per row per step.
  w.fp32_ops = 4.0 * tile + static_cast<double>(bq * d);
  w.sfu_ops = tile;
  w.instr_simt = (w.fp32_ops + w.sfu_ops) / 32.0;
  // Shared memory: K and V tiles land (the MMAs' reads are the variant's).
  w.smem_write_bytes = 2.0 * static_cast<double>(rows * d) * in_bits / 8.0;
  mma_costs(rows, w);
}

void AttentionProgram::epilogue(uint64_t cta, StepWork& w) const {
  if (decode) return decode_epilogue(cta, w);
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

LoweredOp Lowering::attention(const Op& op) {
  const TensorCoreParams& tc = gpu_.tensor_core;
  const KernelLibParams& kl = gpu_.kernels;
  if (tc.per_sm * tc.macs_per_clock.of(op.dtype) <= 0)
    throw UserError(op.loc.str() + ": op '" + op.name + "': the tensor cores of this chip do not support " + dtype_name(op.dtype));
  // The fused kernels modelled are FlashAttention-3's (wgmma) and -4's (tcgen05).
  if (tc.generation < 4)
    throw UserError(op.loc.str() + ": op '" + op.name + "': fused attention is modelled for Hopper's and Blackwell's kernels "
                    "(tensor_core.generation 4 or 5; this chip's is " + std::to_string(tc.generation) +
                    "): give this chip attention as its GEMMs and softmax (scripts/xpusim-trace.py --attention unfused)");
  std::shared_ptr<AttentionProgram> p = kl.attention_mma == Mma::tcgen05 ? make_tcgen05_attention() : make_wgmma_attention();
  p->batch = op.batch;
  p->heads = op.heads;
  p->kv_heads = op.kv_heads;
  p->sq = op.seq_q;
  p->skv = op.seq_kv;
  p->d = op.head_dim;
  p->causal = op.causal;
  p->dtype = op.dtype;
  p->in_bits = dtype_bits(op.dtype);
  p->out_bits = dtype_bits(op.out_dtype);
  // Decode kernels take a KV head's whole group of query rows in one 64-row MMA block (the
  // smallest warpgroup MMA; tcgen05 uses its 128-row MMA).
  p->group = op.heads / op.kv_heads;
  p->decode = kl.attention_decode && op.seq_q * p->group <= kDecodeRows;
  if (!p->configure(gpu_))
    throw UserError(op.loc.str() + ": op '" + op.name + "': head_dim " + std::to_string(op.head_dim) +
                    " with the configured attention tiles does not fit an SM (" + p->limits() + ")");
  p->q_blocks = static_cast<int64_t>(div_up(static_cast<uint64_t>(op.seq_q), static_cast<uint64_t>(p->bq)));
  if (p->decode) p->choose_splits(gpu_.sm.count);
  const double ei = p->in_bits / 8.0;
  p->q = alloc(static_cast<double>(op.batch * op.seq_q * op.heads * op.head_dim) * ei);
  p->page = op.kv_page;
  // Paged, the pools hold whole pages (the last page of each sequence partly filled).
  const double kv_tokens = static_cast<double>(op.batch) * static_cast<double>(p->page > 0 ? p->pages_per_seq() * p->page : op.seq_kv);
  p->k = alloc(kv_tokens * static_cast<double>(op.kv_heads * op.head_dim) * ei);
  p->v = alloc(kv_tokens * static_cast<double>(op.kv_heads * op.head_dim) * ei);
  if (p->page > 0) p->table = alloc(static_cast<double>(op.batch * p->pages_per_seq()) * 4.0);
  p->o = alloc(static_cast<double>(op.batch * op.seq_q * op.heads * op.head_dim) * p->out_bits / 8.0);
  if (p->splits > 1) {
    const double rows = static_cast<double>(op.batch * op.kv_heads * p->splits * p->decode_rows());
    p->o_acc = alloc(rows * static_cast<double>(op.head_dim) * 4.0);
    p->lse_acc = alloc(rows * 4.0);
  }
  p->description = p->describe();
  if (p->page > 0) p->description += ", paged KV (" + std::to_string(p->page) + "-token pages)";
  if (p->decode)
    p->description += ", decode: " + std::to_string(p->decode_rows()) + " query row" + (p->decode_rows() > 1 ? "s" : "") +
                      " per KV head" + (p->splits > 1 ? ", KV split " + std::to_string(p->splits) + " ways (flash-decoding)" : "");
  return finish(p, true, p->splits > 1 ? make_attention_combine(*p) : nullptr);
}

}  // namespace xpusim::lower
