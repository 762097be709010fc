#include "sim/trace/aten.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "sim/error.h"

namespace xpusim::trace::aten {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 40;

const std::set<std::string> kGemm = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"};
const std::set<std::string> kAttention = {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
                                          "aten::_scaled_dot_product_efficient_attention",
                                          "aten::_scaled_dot_product_cudnn_attention"};
const std::set<std::string> kSoftmax = {"aten::softmax", "aten::_softmax", "aten::log_softmax", "aten::_log_softmax"};
const std::set<std::string> kNorm = {"aten::layer_norm", "aten::native_layer_norm", "aten::rms_norm", "aten::_fused_rms_norm",
                                     "aten::group_norm", "aten::native_group_norm"};
const std::set<std::string> kReduction = {"aten::mean", "aten::sum", "aten::amax", "aten::max", "aten::min", "aten::amin",
                                          "aten::argmax", "aten::var", "aten::std", "aten::norm"};
const std::set<std::string> kElementwise = {
    "aten::add",   "aten::add_",      "aten::mul",       "aten::mul_",  "aten::sub",      "aten::sub_",   "aten::div",
    "aten::div_",  "aten::gelu",      "aten::silu",      "aten::silu_", "aten::relu",     "aten::relu_",  "aten::tanh",
    "aten::sigmoid", "aten::neg",     "aten::exp",       "aten::pow",   "aten::rsqrt",    "aten::sqrt",   "aten::where",
    "aten::masked_fill", "aten::masked_fill_", "aten::dropout", "aten::native_dropout", "aten::copy_", "aten::clone",
    "aten::_to_copy", "aten::cat",    "aten::index_copy_", "aten::index_put_", "aten::fill_", "aten::zero_", "aten::cos",
    "aten::sin",   "aten::reciprocal", "aten::erf",      "aten::abs",   "aten::clamp",    "aten::clamp_", "aten::embedding",
    "aten::index_select", "aten::gather", "aten::scatter", "aten::triu", "aten::tril"};
// Operators that only describe tensors (no kernel of their own) and queries of their metadata.
const std::set<std::string> kViews = {
    "aten::view",   "aten::_unsafe_view", "aten::t",         "aten::transpose", "aten::permute",  "aten::expand",
    "aten::slice",  "aten::select",       "aten::unsqueeze", "aten::squeeze",   "aten::split",    "aten::chunk",
    "aten::detach", "aten::as_strided",   "aten::alias",     "aten::unbind",    "aten::narrow",   "aten::empty",
    "aten::empty_like", "aten::empty_strided", "aten::lift_fresh", "aten::resolve_conj", "aten::resolve_neg",
    "aten::result_type", "aten::size",    "aten::stride",    "aten::numel",     "aten::dim",      "aten::split_with_sizes",
    "aten::view_as", "aten::expand_as",   "aten::flatten",   "aten::unflatten", "aten::_reshape_alias", "aten::set_",
    "aten::is_same_size", "aten::broadcast_tensors"};
// Operators that do their work (if any) in the operators under them.
const std::set<std::string> kContainers = {"aten::reshape", "aten::contiguous", "aten::to", "aten::type_as",
                                           "aten::repeat_interleave", "aten::expand_copy"};

// The product of v[from..to), refused beyond 2^50 (as a trace's sizes are).
int64_t prod(const std::vector<int64_t>& v, size_t from, size_t to) {
  double p = 1;
  const size_t end = std::min(to, v.size());
  for (size_t i = from; i < end; ++i) p *= static_cast<double>(v[i]);
  if (p > static_cast<double>(int64_t{1} << 50)) throw UserError("sizes multiply to more than 2^50 elements");
  return static_cast<int64_t>(p);
}
int64_t prod(const std::vector<int64_t>& v) { return prod(v, 0, v.size()); }

bool is_tensor(const std::string& type) { return type.rfind("Tensor(", 0) == 0; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? "," : "") + std::to_string(s[i]);
  return o + "]";
}

// The tensor inputs in order, with their types.
struct Tensor {
  std::vector<int64_t> shape;
  std::string type;
};
std::vector<Tensor> tensors(const Io& io) {
  std::vector<Tensor> t;
  for (size_t i = 0; i < io.types.size(); ++i)
    if (is_tensor(io.types[i])) t.push_back({i < io.shapes.size() ? io.shapes[i] : std::vector<int64_t>{}, io.types[i]});
  return t;
}

// A boolean argument: true or false (also 1 or 0, as the execution traces' writers give them);
// an absent one is its default, false; anything else is an error naming the argument.
bool boolean(const Io& in, size_t i, const std::string& what) {
  if (i >= in.values.size()) return false;
  std::string v = in.values[i];
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0" || v.empty() || v == "null" || v == "none") return false;
  throw UserError(what + " must be true or false, not '" + in.values[i] + "'");
}

void need(bool ok, const std::string& why) {
  if (!ok) throw UserError(why);
}

void check_dims(const std::vector<int64_t>& s, const std::string& what) {
  for (int64_t d : s) need(d >= 1 && d <= kMaxDim, what + " has a dimension " + std::to_string(d) + " (each must be 1 to 2^40)");
}

Dtype dtype_or(const Tensor& t, const std::string& name) {
  const auto d = tensor_dtype(t.type);
  need(d.has_value(), "a " + name + " of " + t.type + " (xpusim computes in floating-point and integer formats)");
  return *d;
}

Mapped gemm(const std::string& name, const std::vector<Tensor>& t) {
  Mapped r;
  r.verdict = Verdict::op;
  Op& o = r.op;
  o.kind = OpKind::gemm;
  const size_t a = name == "aten::addmm" || name == "aten::baddbmm" ? 1 : 0;  // addmm(bias, A, B)
  need(t.size() >= a + 2, "a GEMM needs two tensor inputs");

  std::vector<int64_t> A = t[a].shape, B = t[a + 1].shape;
  check_dims(A, "input A " + shape_str(A));
  check_dims(B, "input B " + shape_str(B));
  if (name == "aten::linear") {  // x [..., k], weight [n, k]
    need(A.size() >= 1 && B.size() == 2, "linear needs an input [..., k] and a weight [n, k], not " + shape_str(A) + " and " + shape_str(B));
    need(A.back() == B[1], "linear's input " + shape_str(A) + " and weight " + shape_str(B) + " disagree on k");
    o.m = prod(A, 0, A.size() - 1), o.n = B[0], o.k = B[1];
  } else if (name == "aten::mm" || name == "aten::addmm") {
    need(A.size() == 2 && B.size() == 2, "mm needs 2-D inputs, not " + shape_str(A) + " and " + shape_str(B));
    need(A[1] == B[0], "mm's inputs " + shape_str(A) + " x " + shape_str(B) + " do not multiply");
    o.m = A[0], o.n = B[1], o.k = A[1];
  } else if (name == "aten::bmm" || name == "aten::baddbmm") {
    need(A.size() == 3 && B.size() == 3 && A[0] == B[0] && A[2] == B[1],
         "bmm's inputs " + shape_str(A) + " x " + shape_str(B) + " do not multiply batch by batch");
    o.batch = A[0], o.m = A[1], o.n = B[2], o.k = A[2];
  } else {  // matmul: A [..., m, k] x B [k, n] or batched B [..., k, n]
    need(A.size() >= 1 && B.size() >= 1, "matmul needs tensor inputs");
    if (A.size() == 1) A.insert(A.begin(), 1);
    if (B.size() == 1) B.push_back(1);
    need(A.back() == B[B.size() - 2], "matmul's inputs " + shape_str(t[a].shape) + " x " + shape_str(t[a + 1].shape) + " do not multiply");
    o.k = A.back(), o.n = B.back();
    if (B.size() == 2) o.m = prod(A, 0, A.size() - 1);
    else o.batch = prod(B, 0, B.size() - 2), o.m = A[A.size() - 2];
  }
  // mm, bmm and matmul take two tensors; addmm and baddbmm a bias first; linear an optional bias
  // last; an out= overload (aten::mm.out) one more, the output's own size.
  const size_t most = name == "aten::linear" ? 3 : a + 2;
  const bool out_buffer = t.size() == most + 1 && prod(t.back().shape) == std::max<int64_t>(1, o.batch) * o.m * o.n;
  need(t.size() <= most || out_buffer, name.substr(6) + " takes " + (name == "aten::linear" ? "two or three" : a ? "three" : "two") +
                                           " tensor inputs (and an out= buffer of its output's size), not " +
                                           std::to_string(t.size()));
  o.dtype = o.out_dtype = dtype_or(t[a], "GEMM input");
  return r;
}

Mapped attention(const std::string& name, const std::vector<Tensor>& t, const Io& in) {
  need(t.size() >= 3, "attention needs query, key and value");
  const auto& q = t[0].shape;
  const auto& k = t[1].shape;
  need(q.size() == 4 && k.size() == 4 && t[2].shape.size() == 4,
       "attention needs 4-D query, key and value [batch, heads, sequence, head_dim], not " + shape_str(q) + " and " + shape_str(k));
  check_dims(q, "the query " + shape_str(q));
  check_dims(k, "the key " + shape_str(k));
  need(q[0] == k[0] && q[3] == k[3], "the query " + shape_str(q) + " and the key " + shape_str(k) + " disagree on batch or head_dim");
  need(q[1] % k[1] == 0, "the query's heads (" + std::to_string(q[1]) + ") must be a multiple of the key's (" + std::to_string(k[1]) + ")");
  Mapped r;
  r.verdict = Verdict::op;
  Op& o = r.op;
  o.kind = OpKind::attention;
  o.batch = q[0], o.heads = q[1], o.seq_q = q[2], o.head_dim = q[3], o.kv_heads = k[1], o.seq_kv = k[2];
  // is_causal's place in each signature: sdpa(q, k, v, attn_mask, dropout_p, is_causal, ...),
  // _flash(q, k, v, dropout_p, is_causal, ...), _efficient and _cudnn(q, k, v, attn_bias,
  // compute_log_sumexp, dropout_p, is_causal, ...).
  const size_t causal_at = name == "aten::scaled_dot_product_attention"         ? 5
                           : name == "aten::_scaled_dot_product_flash_attention" ? 4
                                                                                  : 6;
  o.causal = boolean(in, causal_at, "is_causal");
  o.dtype = o.out_dtype = dtype_or(t[0], "query");
  return r;
}

Mapped shaped(OpKind kind, const std::vector<int64_t>& shape, Dtype d, int inputs) {
  check_dims(shape, "the tensor " + shape_str(shape));
  Mapped r;
  r.verdict = Verdict::op;
  r.op.kind = kind;
  r.op.shape = shape.empty() ? std::vector<int64_t>{1} : shape;
  r.op.dtype = r.op.out_dtype = d;
  r.op.inputs = std::max(1, inputs);
  return r;
}

}  // namespace

std::optional<Dtype> tensor_dtype(const std::string& type) {
  static const std::pair<const char*, Dtype> kTypes[] = {
      {"c10::BFloat16", Dtype::bf16}, {"c10::Half", Dtype::fp16},       {"float", Dtype::fp32},
      {"double", Dtype::fp32},        {"c10::Float8_e4m3fn", Dtype::fp8_e4m3}, {"c10::Float8_e5m2", Dtype::fp8_e5m2},
      {"signed char", Dtype::int8},   {"c10::qint8", Dtype::int8},      {"int", Dtype::int32}};
  if (!is_tensor(type) || type.back() != ')') return std::nullopt;
  const std::string inner = type.substr(7, type.size() - 8);
  for (const auto& [n, d] : kTypes)
    if (inner == n) return d;
  return std::nullopt;
}

Mapped map_op(const std::string& name, const Io& in, const Io& out) {
  const std::vector<Tensor> t = tensors(in), o = tensors(out);
  if (kGemm.count(name)) return gemm(name, t);
  if (kAttention.count(name)) return attention(name, t, in);
  if (kViews.count(name)) return {Verdict::view, {}};
  if (kContainers.count(name) || name.rfind("aten::", 0) != 0) return {Verdict::container, {}};
  const bool rowwise = kSoftmax.count(name) || kNorm.count(name);
  if (rowwise || kReduction.count(name) || kElementwise.count(name)) {
    need(!t.empty() || (kElementwise.count(name) && !o.empty()), "no tensor input");  // cat's inputs are one list
    const OpKind kind = kSoftmax.count(name) ? OpKind::softmax : kNorm.count(name) ? OpKind::layernorm
                        : kReduction.count(name) ? OpKind::reduction
                                                 : OpKind::elementwise;
    if (kind != OpKind::elementwise) {
      Mapped r = shaped(kind, t[0].shape, dtype_or(t[0], "input"), 1);
      r.op.rms = name == "aten::rms_norm" || name == "aten::_fused_rms_norm";
      return r;
    }
    // An elementwise kernel writes its output and reads each tensor input; a copy or a
    // concatenation reads as much as it writes; an embedding gathers output-sized rows.
    const Tensor& result = o.empty() ? t[0] : o[0];
    const bool copy = name == "aten::cat" || name == "aten::copy_" || name == "aten::_to_copy" || name == "aten::clone" ||
                      name == "aten::embedding" || name == "aten::index_select" || name == "aten::gather";
    int inputs = 0;
    for (const Tensor& x : t) inputs += prod(x.shape) > 1 || x.shape.size() > 1 ? 1 : 0;  // scalars in tensors are free
    const auto d = tensor_dtype(result.type) || t.empty() ? tensor_dtype(result.type) : tensor_dtype(t[0].type);
    need(d.has_value(), "a tensor of " + result.type + " (xpusim computes in floating-point and integer formats)");
    return shaped(OpKind::elementwise, result.shape, *d, copy ? 1 : inputs);
  }
  return {Verdict::unknown, {}};
}

std::vector<std::string> parse_list(const std::string& text) {
  size_t b = text.find_first_not_of(" \t\n");
  size_t e = text.find_last_not_of(" \t\n");
  if (b == std::string::npos) return {};
  if (text[b] != '[' || text[e] != ']') throw UserError("'" + text.substr(0, 60) + "' is not a [list]");
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  bool any = false;
  for (size_t i = b + 1; i < e; ++i) {
    const char c = text[i];
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (depth < 0) throw UserError("'" + text.substr(0, 60) + "' has unbalanced brackets");
    if (c == ',' && depth == 0) {
      items.push_back(cur), cur.clear();
      continue;
    }
    if (!(cur.empty() && (c == ' ' || c == '"' || c == '\''))) cur += c;
    any = true;
  }
  if (depth != 0) throw UserError("'" + text.substr(0, 60) + "' has unbalanced brackets");
  if (any) items.push_back(cur);
  for (std::string& s : items) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '"' || s.back() == '\'')) s.pop_back();
  }
  return items;
}

std::vector<std::vector<int64_t>> parse_shapes(const std::string& text) {
  std::vector<std::vector<int64_t>> out;
  for (const std::string& item : parse_list(text)) {
    std::vector<int64_t> s;
    if (item.empty() || item.front() != '[') {  // a scalar's "shape" (some traces write 0 or nothing)
      out.push_back(s);
      continue;
    }
    for (const std::string& d : parse_list(item)) {
      if (d.empty() || d.front() == '[') {  // a list of tensors (GenericList): no one shape
        s.clear();
        break;
      }
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(d, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != d.size()) throw UserError("shape '" + item + "' holds '" + d + "', not a whole number");
      s.push_back(v);
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace xpusim::trace::aten
