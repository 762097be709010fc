#pragma once
// Workload traces, format v1 (docs/trace-format.md): a list of ops (kernels) with shapes,
// number formats, stream and dependencies, and `repeat` blocks for layers.
#include <cstdint>
#include <string>
#include <vector>

#include "models/common/dtype.h"
#include "sim/error.h"

namespace xpusim::trace {

enum class OpKind {
  gemm, elementwise, reduction, softmax, layernorm, attention, conv2d, pointer_chase, strided_read, instruction_loop, delay,
  host,
  // Collectives over the system's GPUs (models/interconnect/collective.h)
  all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv
};
const char* op_kind_name(OpKind k);

struct Op {
  std::string name;
  OpKind kind = OpKind::gemm;
  Dtype dtype = Dtype::bf16;
  Dtype out_dtype = Dtype::bf16;
  int stream = 0;
  // The GPUs the op runs on: a compute op runs the same kernel on each (SPMD: a tensor-parallel
  // shard), a collective's participants exchange data. Empty with all_devices: every GPU of the
  // system (the default for collectives); otherwise [0] unless the trace says.
  std::vector<int> devices{0};
  bool all_devices = false;
  std::vector<size_t> deps;  // indices of earlier ops
  SourceLoc loc;

  // gemm: C[batch, m, n] = A[batch, m, k] x B[batch, k, n]; conv2d uses batch and k too.
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool sparse_2_4 = false;  // 2:4 structured sparsity on B (the weights)
  // gemm: C = A x B + C, C read in out_dtype before it is written (cuBLAS's beta 1): a weight
  // gradient added into an fp32 gradient buffer by its GEMM, as Megatron-LM's gradient
  // accumulation fusion and Transformer Engine's fuse_wgrad_accumulation run it.
  bool accumulate = false;
  // gemm, conv2d: weight-only quantisation. B (the weights) is stored as weight_dtype, narrower
  // than dtype (the tensor cores' format); `weight_group` elements along K share one scale of
  // `weight_scale_bits` bits (MXFP4: 32 elements, an 8-bit E8M0 scale). The kernel converts B to
  // dtype before the MMA unless the tensor cores take it as it is (block-scaled fp4 on fp4 math).
  // weight_format is the name in the trace ("int4", "mxfp4"); empty: B is stored as dtype.
  std::string weight_format;
  Dtype weight_dtype = Dtype::bf16;
  int64_t weight_group = 0;  // 0: one scale per output channel, applied in the epilogue
  int weight_scale_bits = 0;
  // Operand switching relative to random data (1: random, as benchmarks use; 0: all zeros):
  // scales the data-dependent share of the op's energy (docs/energy-model.md).
  double switching = 1.0;
  double input_density = 1.0;  // share of non-zero elements in A (the inputs); zeros gate MACs where the chip can
  // elementwise, reduction, softmax, layernorm: the tensor's shape; row-wise ops work on the
  // last dimension.
  std::vector<int64_t> shape;
  int inputs = 1;                  // elementwise: input tensors read
  int outputs = 1;                 // elementwise: output tensors written (each of out_dtype, the inputs' shape)
  double flops_per_element = 1;    // elementwise
  // elementwise: false when the operands are not all in one dense layout (a transposed view, a
  // broadcast operand), so PyTorch runs its legacy kernel of dependent per-element iterations
  // rather than the vectorised one (sim/lower/streaming.cpp).
  bool contiguous = true;
  bool rms = false;  // layernorm: RMSNorm (no mean, no bias), as `norm: rms` in the trace
  // attention (fused, FlashAttention-style): Q [batch, seq_q, heads, head_dim],
  // K/V [batch, seq_kv, kv_heads, head_dim]; with kv_page > 0 the KV cache is paged: pages of
  // kv_page tokens ([kv_page, kv_heads, head_dim] each) anywhere in a pool, found through each
  // sequence's block table, as vLLM's and TensorRT-LLM's caches are.
  int64_t heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0, kv_page = 0;
  bool causal = false;
  // conv2d: input NHWC [batch, h, w, c], filter KRSC [k, r, s, c]
  int64_t h = 0, w = 0, c = 0, r = 0, s = 0, stride = 1, pad = 0;
  // Memory microbenchmarks. pointer_chase: one thread follows a chain of pointers `stride`
  // bytes apart through `footprint` bytes; a first lap warms the caches, then `loads`
  // dependent loads are timed. strided_read: every SM reads `access` bytes every `stride`
  // bytes of `footprint`, `passes` times (passes after the first are timed).
  // With warmup: false the chase starts cold and every load goes as far as memory.
  int64_t footprint = 0, access = 0, loads = 0, passes = 1;
  bool warmup = true;
  // instruction_loop: `warps` warps each issue `count` instructions of one kind (ffma, hfma,
  // hdp4a, hmma, imma); an MMA instruction does `macs_per_instruction` MACs.
  std::string instruction;
  int64_t count = 0, warps = 0, macs_per_instruction = 0;
  // delay: the device is busy for `duration_s` doing work the trace does not describe (an
  // imported kernel of unknown kind, kept as a timed gap). host: the device waits `duration_s`
  // for its host (a serving runtime's scheduling, input preparation, output processing); timed
  // as a delay, reported as host time rather than kernel time.
  double duration_s = 0;
  // Collectives: nccl-tests' size (collective.h: CollectiveJob::bytes), the algorithm (auto,
  // ring, tree, nvls, direct; one_shot and two_shot, a serving runtime's own all-reduce) and
  // NCCL's protocol (auto, ll, ll128, simple).
  double bytes = 0;
  // `mirrors` (collectives): this many more identical collectives run on other GPUs at the same
  // time (data-parallel replicas under representative detail); they are not simulated, and the
  // report counts their traffic and energy with this one's.
  int mirrors = 0;
  std::string algorithm = "auto";
  std::string protocol = "auto";
  // copy_in (one_shot, two_shot): the kernel copies its input into its own shared buffer before
  // the first barrier, as TensorRT-LLM's does, rather than reading a registered input in place.
  bool copy_in = false;

  bool is_collective() const { return kind >= OpKind::all_reduce; }
  // A delay or a host op: a span of time with no device work described.
  bool is_timed_gap() const { return kind == OpKind::delay || kind == OpKind::host; }

  int64_t elements() const;  // elementwise/row-wise: product of shape
  int64_t rows() const;      // product of all but the last dimension
  int64_t cols() const;      // the last dimension
  int64_t conv_p() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t conv_q() const { return (w + 2 * pad - s) / stride + 1; }
  double attention_pairs() const;  // (query, key) pairs that are computed (causal mask applied)
  double flops() const;            // useful floating-point (or integer) operations
  double min_bytes() const;        // compulsory traffic: every input read once, output written once
  bool weight_only() const { return !weight_format.empty(); }
  Dtype b_dtype() const { return weight_only() ? weight_dtype : dtype; }  // the weights' elements
  double weight_bits() const;      // storage bits per weight element, block scales included
  std::string shape_text() const;  // "8192x8192x8192", for reports
  std::string devices_text() const;  // "0-7", "all", "0,3"
};

// The largest collective or transfer a trace may give: 2^50 bytes (1024 TiB).
constexpr double kMaxCollectiveBytes = 1125899906842624.0;

struct Trace {
  std::string name;
  std::string file;
  std::string description;
  double tokens = 0;  // tokens the workload produces or processes (LLM steps): joules per token
  // `eager_issue`: the trace's kernels are issued one at a time by a host this far apart (a
  // runtime's step run without a CUDA graph), over the config's kernels.launch; -1: as the config.
  double eager_issue_s = -1;
  // `memory_per_gpu`: what each GPU holds beside the ops' own buffers (a training step's weights,
  // gradients, optimiser state, activations), by component; simulation refuses a chip whose HBM
  // is smaller than their sum.
  std::vector<std::pair<std::string, double>> memory_per_gpu;
  SourceLoc memory_loc;
  std::vector<Op> ops;
  std::vector<std::string> overrides;  // "key=value" of each --trace-set applied (reports record them)
};

// Loads .yaml/.yml (hand-written) or .jsonl (generated) traces; throws UserError naming file,
// line, column and key on any problem.
Trace load_trace(const std::string& path);

// A sweep's trace axis, applied to every op it concerns: `dtype` (gemm, conv2d, attention: inputs
// and outputs, as a trace that gives only dtype), `weight_dtype` (gemm, conv2d) or `sparsity`
// (gemm: "2:4" or none). Throws UserError naming the key and the op it cannot apply to.
void apply_override(Trace& t, const std::string& key, const std::string& value);

// Per-element costs of the row-wise kernels: FP32 lane ops and special-function ops per input
// element, as an implementation that reads each row once (online softmax, Welford layernorm)
// spends them. Shared by FLOP counting and lowering.
struct RowwiseCost {
  double fp32 = 0, sfu = 0;
};
RowwiseCost rowwise_cost(OpKind k);

}  // namespace xpusim::trace
