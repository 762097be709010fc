// Fused attention: what every architecture's kernel shares, and the choice of variant.
#include <algorithm>
#include <cmath>

#include "sim/config/units.h"
#include "sim/lower/attention_program.h"
#include "sim/lower/lower_util.h"
#include "sim/lower/lowering.h"

namespace xpusim::lower {

using trace::Op;

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

uint64_t AttentionProgram::steps(uint64_t cta) const {
  int64_t b, h, qb;
  coords(cta, b, h, qb);
  return static_cast<uint64_t>(div_up(static_cast<uint64_t>(kv_end(qb)), static_cast<uint64_t>(bkv)));
}

uint64_t AttentionProgram::q_addr(int64_t b, int64_t row, int64_t h) const {
  return q + bytes_of(static_cast<uint64_t>(((b * sq + row) * heads + h) * d), in_bits);
}

void AttentionProgram::prologue(uint64_t cta, StepWork& w) const {
  int64_t b, h, qb;
  coords(cta, b, h, qb);
  const int64_t rows = std::min(bq, sq - qb * bq);
  w.loads.push_back({q_addr(b, qb * bq, h), static_cast<uint64_t>(rows), bytes_of(static_cast<uint64_t>(d), in_bits),
                     bytes_of(static_cast<uint64_t>(heads * d), in_bits)});
  w.instr_mem = 1;
}

void AttentionProgram::step(uint64_t cta, uint64_t s, StepWork& w) const {
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
  w.instr_mem = 2;
  // Shared memory: K and V tiles land (the MMAs' reads are the variant's).
  w.smem_write_bytes = 2.0 * static_cast<double>(rows * d) * in_bits / 8.0;
  mma_costs(rows, w);
}

void AttentionProgram::epilogue(uint64_t cta, StepWork& w) const {
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
  std::shared_ptr<AttentionProgram> p = kl.attention_mma == "tcgen05" ? make_tcgen05_attention() : make_wgmma_attention();
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
  if (!p->configure(gpu_))
    throw UserError(op.loc.str() + ": op '" + op.name + "': head_dim " + std::to_string(op.head_dim) +
                    " with the configured attention tiles does not fit an SM (" + p->limits() + ")");
  p->q_blocks = static_cast<int64_t>(div_up(static_cast<uint64_t>(op.seq_q), static_cast<uint64_t>(p->bq)));
  const double ei = p->in_bits / 8.0;
  p->q = alloc(static_cast<double>(op.batch * op.seq_q * op.heads * op.head_dim) * ei);
  p->k = alloc(static_cast<double>(op.batch * op.seq_kv * op.kv_heads * op.head_dim) * ei);
  p->v = alloc(static_cast<double>(op.batch * op.seq_kv * op.kv_heads * op.head_dim) * ei);
  p->o = alloc(static_cast<double>(op.batch * op.seq_q * op.heads * op.head_dim) * p->out_bits / 8.0);
  p->description = p->describe();
  return finish(p, true);
}

}  // namespace xpusim::lower
