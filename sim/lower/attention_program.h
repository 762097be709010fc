#pragma once
// Fused attention kernels (internal to sim/lower): one CTA per (batch, head, block of queries);
// the inner loop streams blocks of K and V, computes S = QK^T and O += PV on the tensor cores and
// the online softmax on the SIMT/SFU lanes. attention.cpp holds what every architecture shares
// and picks the variant (kernels.attention.mma); attention_sm90.cpp (FlashAttention-3 style,
// warpgroup MMA) and attention_sm100.cpp (tcgen05, tensor memory) are the variants.
#include <cstdint>
#include <memory>
#include <string>

#include "models/sm/kernel_program.h"
#include "sim/config/chip_config.h"

namespace xpusim::lower {

class AttentionProgram : public KernelProgram {
 public:
  int64_t batch = 1, heads = 1, kv_heads = 1, sq = 0, skv = 0, d = 0, bq = 128, bkv = 128;
  bool causal = false;
  int in_bits = 16, out_bits = 16;
  Dtype dtype = Dtype::bf16;
  uint64_t q = 0, k = 0, v = 0, o = 0;
  int64_t q_blocks = 0;

  // Paged KV (trace::Op::kv_page): K and V live in pools of pages of `page` tokens; page p of
  // sequence b sits at slot page_slot(b, p), a fixed scatter of the pool, which the kernel reads
  // from the sequence's block table (4 bytes per page) before loading the page's rows.
  int64_t page = 0;  // 0: contiguous
  uint64_t table = 0;
  int64_t pages_per_seq() const { return page > 0 ? (skv + page - 1) / page : 0; }
  int64_t page_slot(int64_t b, int64_t p) const;

  // Decode (flash-decoding): where the query rows of one KV head's group (seq_q x heads /
  // kv_heads) fit one MMA block, a CTA takes a (batch, KV head) pair with all its query heads,
  // and the KV sequence is split over `splits` CTAs so that the pairs fill the SMs. Split, every
  // CTA stores its fp32 partial output rows and their log-sum-exps to a workspace, and a second
  // kernel (make_attention_combine) combines them.
  bool decode = false;
  int64_t group = 1;   // query heads per KV head
  int64_t splits = 1;
  uint64_t o_acc = 0, lse_acc = 0;  // the partials: [split][pair][decode row] x head_dim, and one fp32 each
  int64_t kv_blocks() const { return (skv + bkv - 1) / bkv; }
  int64_t split_begin(int64_t split) const { return kv_blocks() * split / splits; }  // in KV blocks
  int64_t decode_rows() const { return sq * group; }
  // FlashAttention-2's split heuristic (num_splits_heuristic): no split where the pairs fill 80%
  // of the SMs; else the fewest splits whose wave efficiency is within 85% of the best.
  void choose_splits(int sm_count);

  uint64_t num_ctas() const override {
    return static_cast<uint64_t>(decode ? batch * kv_heads * splits : batch * heads * q_blocks);
  }
  uint64_t steps(uint64_t cta) const override;
  void prologue(uint64_t cta, StepWork& w) const override;
  void step(uint64_t cta, uint64_t s, StepWork& w) const override;
  void epilogue(uint64_t cta, StepWork& w) const override;

  // Architecture hooks.
  // Sets bq, bkv, stages and resources for this chip; false if the head dimension does not fit.
  virtual bool configure(const config::GpuConfig& gpu) = 0;
  // MMA instructions, shared-memory reads and accumulator traffic of a step over `rows` keys
  // (the K and V tiles' landing in shared memory is counted by the shared part).
  virtual void mma_costs(int64_t rows, StepWork& w) const = 0;
  virtual std::string describe() const = 0;
  // What does not fit when configure() fails (for the error message).
  virtual std::string limits() const = 0;

 protected:
  void coords(uint64_t cta, int64_t& b, int64_t& h, int64_t& qb) const;
  // Decode: the (batch, KV head) pair and split of a CTA, split-major.
  void decode_coords(uint64_t cta, int64_t& b, int64_t& kvh, int64_t& split) const;
  void decode_step(uint64_t cta, uint64_t s, StepWork& w) const;
  void decode_epilogue(uint64_t cta, StepWork& w) const;
  int64_t kv_end(int64_t qb) const;
  // The loads of K and V rows k0..k0+rows of KV head kvh of sequence b (and, paged, of their
  // block-table entries), and their memory instructions.
  void kv_loads(int64_t b, int64_t kvh, int64_t k0, int64_t rows, StepWork& w) const;
  uint64_t q_addr(int64_t b, int64_t row, int64_t h) const;
};

// Flash-decoding's second kernel for a split decode program `p` (FlashAttention's splitkv
// combine): each CTA of 128 threads takes a few output rows, loads their log-sum-exps from every
// split, works out each split's weight, then loads the splits' partial rows and adds them.
std::shared_ptr<KernelProgram> make_attention_combine(const AttentionProgram& p);

std::shared_ptr<AttentionProgram> make_wgmma_attention();
std::shared_ptr<AttentionProgram> make_tcgen05_attention();

}  // namespace xpusim::lower
