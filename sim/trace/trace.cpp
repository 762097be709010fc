#include "sim/trace/trace.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "models/interconnect/collective_names.h"
#include "sim/config/config_loader.h"
#include "sim/config/limits.h"
#include "sim/config/units.h"
#include "sim/config/yaml_util.h"
#include "sim/io/json_strict.h"
#include "sim/trace/chakra.h"
#include "sim/trace/trace_fields.h"

namespace xpusim::trace {
namespace {

// The collective algorithms a trace may name, from the models' one list of them.
std::vector<std::string> algorithm_names() {
  std::vector<std::string> out;
  for (const auto& [id, name] : collective_algo_names()) out.push_back(name);
  return out;
}

using namespace detail;  // the field readers (trace_fields.h)


const std::vector<std::pair<OpKind, std::vector<std::string>>>& kind_keys() {
  static const std::vector<std::pair<OpKind, std::vector<std::string>>> keys = {
      {OpKind::gemm, {"m", "n", "k", "batch", "sparsity", "input_density", "weight_dtype", "weight_group", "accumulate"}},
      {OpKind::elementwise, {"shape", "inputs", "outputs", "flops_per_element", "contiguous"}},
      {OpKind::reduction, {"shape"}},
      {OpKind::softmax, {"shape"}},
      {OpKind::layernorm, {"shape", "inputs", "norm"}},
      {OpKind::attention, {"batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "causal", "kv_page"}},
      {OpKind::conv2d, {"batch", "h", "w", "c", "k", "r", "s", "stride", "pad", "weight_dtype", "weight_group"}},
      {OpKind::pointer_chase, {"footprint", "stride", "loads", "warmup"}},
      {OpKind::strided_read, {"footprint", "stride", "access", "passes"}},
      {OpKind::instruction_loop, {"instruction", "count", "warps", "macs_per_instruction"}},
      {OpKind::delay, {"duration"}},
      {OpKind::host, {"duration"}},
      {OpKind::all_reduce, {"bytes", "algorithm", "protocol", "mirrors", "copy_in"}},
      {OpKind::all_gather, {"bytes", "algorithm", "protocol", "mirrors"}},
      {OpKind::reduce_scatter, {"bytes", "algorithm", "protocol", "mirrors"}},
      {OpKind::all_to_all, {"bytes", "algorithm", "protocol", "mirrors"}},
      {OpKind::broadcast, {"bytes", "algorithm", "protocol", "mirrors"}},
      {OpKind::send_recv, {"bytes", "algorithm", "protocol", "mirrors"}},
  };
  return keys;
}
const std::vector<std::string> kCommonKeys = {"name", "kind", "dtype", "out_dtype", "stream", "device", "devices", "deps", "switching"};


std::vector<std::string> kind_names() {
  std::vector<std::string> v;
  for (const auto& [k, _] : kind_keys()) v.push_back(op_kind_name(k));
  return v;
}


class Parser {
 public:
  explicit Parser(Trace& t) : t_(t) {}

  // Parses one op mapping or a repeat block; `scope` maps short names within the enclosing
  // repeat iteration to op indices, `prefix` is the iteration's name prefix.
  void node(const Ctx& cx, const YAML::Node& n, const std::string& prefix, std::map<std::string, size_t>& scope,
            const std::string& path) {
    if (!n.IsMap()) fail(cx.at(n), path, "each entry of 'ops' must be a mapping (an op or a repeat block)");
    if (n["repeat"]) {
      repeat(cx, n, prefix, scope, path);
      return;
    }
    op(cx, n, prefix, scope, path);
  }

 private:
  void repeat(const Ctx& cx, const YAML::Node& n, const std::string& prefix, std::map<std::string, size_t>& scope,
              const std::string& path) {
    std::set<std::string> seen;
    for (const auto& kv : n) {
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) fail(cx.at(kv.first), path + "." + key, "duplicate key (it appears earlier in the same repeat block)");
      if (key != "repeat" && key != "name" && key != "ops") {
        const std::string hint = config::closest_match(key, {"repeat", "name", "ops"});
        fail(cx.at(kv.first), path + "." + key,
             "unknown key in a repeat block (expected repeat, name, ops)" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
      }
    }
    const int64_t count = get_int(cx, n["repeat"], path + ".repeat", 1, kMaxRepeat);
    std::string name = "block" + std::to_string(t_.ops.size());
    if (n["name"]) {
      if (!n["name"].IsScalar()) fail(cx.at(n["name"]), path + ".name", "expected a name");
      name = n["name"].Scalar();
      if (const std::string why = name_problem(name, "a repeat block's name"); !why.empty()) fail(cx.at(n["name"]), path + ".name", why);
    }
    const YAML::Node ops = n["ops"];
    if (!ops) fail(cx.at(n), path, "a repeat block needs 'ops'");
    if (!ops.IsSequence() || ops.size() == 0) fail(cx.at(ops), path + ".ops", "expected a non-empty list of ops");
    // The block's size is known before it is expanded: a block too large for the limits is
    // refused here, at once, not after expanding as much of it as fits.
    if (pending_.size() == 1) check_projected(cx.at(n), path, ops, count);
    for (int64_t i = 0; i < count; ++i) {
      std::map<std::string, size_t> inner = scope;  // outer names stay visible
      const std::string p = prefix + name + "[" + std::to_string(i) + "].";
      pending_.emplace_back();
      for (size_t j = 0; j < ops.size(); ++j)
        node(cx, ops[j], p, inner, path + ".ops[" + std::to_string(j) + "]");
      // Names the iteration's later ops answer; the rest may be outer ops further on.
      std::vector<Pending> open = std::move(pending_.back());
      pending_.pop_back();
      for (Pending& d : open) {
        auto it = inner.find(d.name);
        if (it != inner.end()) t_.ops[d.op].deps.push_back(it->second);
        else pending_.back().push_back(std::move(d));
      }
    }
  }

  void op(const Ctx& cx, const YAML::Node& n, const std::string& prefix, std::map<std::string, size_t>& scope,
          const std::string& path) {
    Op o;
    o.loc = cx.at(n);
    const YAML::Node kind = n["kind"];
    if (!kind) fail(cx.at(n), path, "missing required key 'kind' (one of: " + join(kind_names()) + ")");
    if (!kind.IsScalar()) fail(cx.at(kind), path + ".kind", "expected an op kind");
    const std::vector<std::string>* allowed = nullptr;
    for (const auto& [k, keys] : kind_keys())
      if (kind.Scalar() == op_kind_name(k)) {
        o.kind = k;
        allowed = &keys;
      }
    if (!allowed) {
      const std::string hint = config::closest_match(kind.Scalar(), kind_names());
      fail(cx.at(kind), path + ".kind", "unknown op kind '" + kind.Scalar() + "'; one of " + join(kind_names()) +
                                            (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
    std::vector<std::string> keys = kCommonKeys;
    keys.insert(keys.end(), allowed->begin(), allowed->end());
    std::set<std::string> seen;
    for (const auto& kv : n) {
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) fail(cx.at(kv.first), path + "." + key, "duplicate key (it appears earlier in the same op)");
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        const std::string hint = config::closest_match(key, keys);
        fail(cx.at(kv.first), path + "." + key,
             std::string("unknown key for a ") + op_kind_name(o.kind) + " op" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
      }
    }
    auto need = [&](const char* key) {
      const YAML::Node v = n[key];
      if (!v) fail(cx.at(n), path, std::string("missing required key '") + key + "' for a " + op_kind_name(o.kind) + " op");
      return v;
    };
    auto dim = [&](const char* key) { return get_int(cx, need(key), path + "." + key, 1, kMaxDim); };
    auto opt_dim = [&](const char* key, int64_t def, int64_t lo) {
      return n[key] ? get_int(cx, n[key], path + "." + key, lo, kMaxDim) : def;
    };

    const std::string short_name = n["name"] ? n["name"].Scalar() : std::string(op_kind_name(o.kind)) + std::to_string(t_.ops.size());
    if (n["name"] && (!n["name"].IsScalar() || short_name.empty())) fail(cx.at(n["name"]), path + ".name", "expected a non-empty name");
    if (const std::string why = name_problem(short_name, "an op name"); !why.empty()) fail(cx.at(n["name"]), path + ".name", why);
    o.name = prefix + short_name;
    if (names_.count(o.name)) fail(cx.at(n), path + ".name", "duplicate op name '" + o.name + "'");
    o.dtype = n["dtype"] ? get_dtype(cx, n["dtype"], path + ".dtype") : Dtype::bf16;
    o.out_dtype = n["out_dtype"] ? get_dtype(cx, n["out_dtype"], path + ".out_dtype") : o.dtype;
    if (n["stream"]) o.stream = static_cast<int>(get_int(cx, n["stream"], path + ".stream", 0, 1023));
    if (n["device"] && n["devices"]) fail(cx.at(n["devices"]), path + ".devices", "give either device or devices, not both");
    if (o.is_collective()) o.all_devices = true, o.devices.clear();
    if (n["device"]) o.devices = {static_cast<int>(get_int(cx, n["device"], path + ".device", 0, kMaxDevice))}, o.all_devices = false;
    if (n["devices"]) parse_devices(cx, n["devices"], path + ".devices", o);
    if (const YAML::Node sw = n["switching"]) {
      const std::optional<double> v = sw.IsScalar() ? parse_switching(sw.Scalar()) : std::nullopt;
      if (!v) fail(cx.at(sw), path + ".switching", kSwitchingHelp);
      o.switching = *v;
    }

    switch (o.kind) {
      case OpKind::gemm:
        o.m = dim("m");
        o.n = dim("n");
        o.k = dim("k");
        o.batch = opt_dim("batch", 1, 1);
        checked_product(cx, n, path, {o.batch, o.m, o.n});
        checked_product(cx, n, path, {o.batch, o.m, o.k});
        checked_product(cx, n, path, {o.batch, o.k, o.n});
        if (const YAML::Node sp = n["sparsity"]) {
          if (!sp.IsScalar() || (sp.Scalar() != "2:4" && sp.Scalar() != "none"))
            fail(cx.at(sp), path + ".sparsity", "expected \"2:4\" or none");
          o.sparse_2_4 = sp.Scalar() == "2:4";
        }
        if (n["input_density"]) o.input_density = get_double(cx, n["input_density"], path + ".input_density", 0, 1);
        if (n["accumulate"]) o.accumulate = get_bool(cx, n["accumulate"], path + ".accumulate");
        if (n["weight_dtype"]) parse_weight_format(cx, n, path, o);
        else if (n["weight_group"]) fail(cx.at(n["weight_group"]), path + ".weight_group", "applies with weight_dtype");
        break;
      case OpKind::elementwise:
      case OpKind::reduction:
      case OpKind::softmax:
      case OpKind::layernorm: {
        const YAML::Node sh = need("shape");
        if (!sh.IsSequence() || sh.size() == 0 || sh.size() > 8)
          fail(cx.at(sh), path + ".shape", "expected a list of 1 to 8 positive dimensions, e.g. [4096, 8192]");
        for (size_t i = 0; i < sh.size(); ++i)
          o.shape.push_back(get_int(cx, sh[i], path + ".shape[" + std::to_string(i) + "]", 1, kMaxDim));
        int64_t p = 1;
        for (int64_t d : o.shape)
          if (__builtin_mul_overflow(p, d, &p) || p > (int64_t{1} << 50))
            fail(cx.at(sh), path + ".shape", "shape has more than 2^50 elements");
        if (o.kind == OpKind::layernorm && n["inputs"])
          o.inputs = static_cast<int>(get_int(cx, n["inputs"], path + ".inputs", 1, 16));
        if (o.kind == OpKind::layernorm && n["norm"]) o.rms = get_choice(cx, n["norm"], path + ".norm", {"layer", "rms"}) == "rms";
        if (o.kind == OpKind::elementwise) {
          if (n["inputs"]) o.inputs = static_cast<int>(get_int(cx, n["inputs"], path + ".inputs", 0, 16));
          if (n["outputs"]) o.outputs = static_cast<int>(get_int(cx, n["outputs"], path + ".outputs", 1, 16));
          if (n["flops_per_element"])
            o.flops_per_element = get_double(cx, n["flops_per_element"], path + ".flops_per_element", 0, 1e6);
          if (n["contiguous"]) o.contiguous = get_bool(cx, n["contiguous"], path + ".contiguous");
        }
        break;
      }
      case OpKind::attention:
        o.batch = opt_dim("batch", 1, 1);
        o.heads = dim("heads");
        o.kv_heads = opt_dim("kv_heads", o.heads, 1);
        o.seq_q = dim("seq_q");
        o.seq_kv = opt_dim("seq_kv", o.seq_q, 1);
        o.head_dim = dim("head_dim");
        o.kv_page = opt_dim("kv_page", 0, 0);
        if (n["causal"]) o.causal = get_bool(cx, n["causal"], path + ".causal");
        if (o.heads % o.kv_heads != 0)
          fail(cx.at(n), path + ".kv_heads", "heads (" + std::to_string(o.heads) + ") must be a multiple of kv_heads (" +
                                                 std::to_string(o.kv_heads) + ")");
        if (o.causal && o.seq_q > o.seq_kv) fail(cx.at(n), path + ".seq_q", "a causal attention needs seq_q <= seq_kv");
        checked_product(cx, n, path, {o.batch, o.heads, o.seq_q, o.seq_kv});
        break;
      case OpKind::conv2d:
        o.batch = opt_dim("batch", 1, 1);
        o.h = dim("h");
        o.w = dim("w");
        o.c = dim("c");
        o.k = dim("k");
        o.r = dim("r");
        o.s = dim("s");
        o.stride = opt_dim("stride", 1, 1);
        o.pad = opt_dim("pad", 0, 0);
        if (o.h + 2 * o.pad < o.r || o.w + 2 * o.pad < o.s)
          fail(cx.at(n), path, "filter (" + std::to_string(o.r) + "x" + std::to_string(o.s) + ") is larger than the padded input");
        checked_product(cx, n, path, {o.batch, o.conv_p(), o.conv_q(), o.k, o.c, o.r, o.s});
        if (n["weight_dtype"]) parse_weight_format(cx, n, path, o);
        else if (n["weight_group"]) fail(cx.at(n["weight_group"]), path + ".weight_group", "applies with weight_dtype");
        break;
      case OpKind::pointer_chase:
        o.footprint = dim("footprint");
        o.stride = opt_dim("stride", 128, 8);
        if (o.stride > o.footprint) fail(cx.at(n), path + ".stride", "must not exceed the footprint");
        o.loads = opt_dim("loads", std::max<int64_t>(1, o.footprint / o.stride), 1);
        if (n["warmup"]) o.warmup = get_bool(cx, n["warmup"], path + ".warmup");
        if (o.footprint / o.stride + o.loads > (int64_t{1} << 31))
          fail(cx.at(n), path + ".loads", "a pointer chase of more than 2^31 loads would not finish in reasonable time");
        break;
      case OpKind::strided_read:
        o.footprint = dim("footprint");
        o.access = opt_dim("access", 32, 1);
        o.stride = opt_dim("stride", o.access, 1);
        o.passes = opt_dim("passes", 1, 1);
        if (o.access > o.stride) fail(cx.at(n), path + ".access", "must not exceed the stride");
        if (o.stride > o.footprint) fail(cx.at(n), path + ".stride", "must not exceed the footprint");
        if (o.passes > 1000) fail(cx.at(n), path + ".passes", "at most 1000 passes");
        break;
      case OpKind::delay:
      case OpKind::host: {
        o.duration_s = get_time(cx, need("duration"), path + ".duration", 3600, "1 h", "12.5 us");
        break;
      }
      case OpKind::all_reduce:
      case OpKind::all_gather:
      case OpKind::reduce_scatter:
      case OpKind::all_to_all:
      case OpKind::broadcast:
      case OpKind::send_recv: {
        const YAML::Node b = need("bytes");
        if (!b.IsScalar()) fail(cx.at(b), path + ".bytes", "expected a size, e.g. 64 MiB or 67108864");
        try {
          o.bytes = units::parse(b.Scalar(), units::Dim::Size).value;
        } catch (const std::invalid_argument& e) {
          // A bare byte count; anything else gets the unit parser's reason.
          if (b.Scalar().find_first_not_of("0123456789") != std::string::npos) fail(cx.at(b), path + ".bytes", e.what());
          o.bytes = static_cast<double>(get_int(cx, b, path + ".bytes", 0, int64_t{1} << 50));
        }
        if (!(o.bytes >= 0 && o.bytes <= kMaxCollectiveBytes)) fail(cx.at(b), path + ".bytes", "must be between 0 and 1024 TiB");
        if (const YAML::Node a = n["algorithm"])
          o.algorithm = get_choice(cx, a, path + ".algorithm", algorithm_names());
        if (const YAML::Node ci = n["copy_in"]) {
          o.copy_in = get_bool(cx, ci, path + ".copy_in");
          if (o.copy_in && o.algorithm != "one_shot" && o.algorithm != "two_shot")
            fail(cx.at(ci), path + ".copy_in", "applies to algorithm one_shot or two_shot (a runtime's own kernel), not '" +
                                                    o.algorithm + "'");
        }
        if (const YAML::Node pr = n["protocol"])
          o.protocol = get_choice(cx, pr, path + ".protocol", {"auto", "ll", "ll128", "simple"});
        if (const YAML::Node mi = n["mirrors"]) o.mirrors = static_cast<int>(get_int(cx, mi, path + ".mirrors", 0, 1 << 20));
        if (o.kind == OpKind::send_recv && (o.all_devices || o.devices.size() != 2))
          fail(cx.at(n), path + ".devices", "a send_recv needs devices: [sender, receiver]");
        if (!o.all_devices && o.devices.size() < 2 && o.kind != OpKind::send_recv)
          fail(cx.at(n), path + ".devices", "a collective needs at least two devices");
        break;
      }
      case OpKind::instruction_loop: {
        o.instruction = get_choice(cx, need("instruction"), path + ".instruction", {"ffma", "hfma", "hfma2", "hdp4a", "hmma", "imma"});
        o.count = opt_dim("count", 1000, 1);
        o.warps = opt_dim("warps", 1024, 1);
        // Volta's HMMA multiplies two 4x4 fp16 matrices (64 MACs); Turing's IMMA two 8x8 int8
        // matrices (8x8x8 = 512 MACs), as in the instruction-energy figures of shared/reference.
        o.macs_per_instruction = opt_dim("macs_per_instruction", o.instruction == "imma" ? 512 : 64, 1);
        checked_product(cx, n, path, {o.count, o.warps, o.macs_per_instruction, 32});
        break;
      }
    }

    if (const YAML::Node deps = n["deps"]) {
      if (!deps.IsSequence()) fail(cx.at(deps), path + ".deps", "expected a list of op names");
      for (size_t i = 0; i < deps.size(); ++i) {
        if (!deps[i].IsScalar()) fail(cx.at(deps[i]), path + ".deps", "expected an op name");
        const std::string d = deps[i].Scalar();
        // The nearest earlier op of that name; otherwise a later one, settled at the end of the
        // repeat iteration (or the trace) when every name is known.
        if (const auto found = lookup(scope, d)) o.deps.push_back(*found);
        else pending_.back().push_back({t_.ops.size(), d, cx.at(deps[i]), path + ".deps"});
      }
    }
    const size_t index = t_.ops.size();
    check_size(o.loc, path);
    names_[o.name] = index;
    scope[short_name] = index;
    t_.ops.push_back(std::move(o));
  }

 public:
  // Settles the dependencies on ops that came later, then refuses a trace whose dependencies
  // (with the order of each GPU's streams) form a cycle: it could never finish.
  void finish(const std::map<std::string, size_t>& scope) {
    for (const Pending& d : pending_.back()) {
      if (const auto found = lookup(scope, d.name)) t_.ops[d.op].deps.push_back(*found);
      else {
        std::vector<std::string> known;
        for (const auto& [k, _] : scope) known.push_back(k);
        const std::string hint = config::closest_match(d.name, known);
        fail(d.loc, d.path, "no op named '" + d.name + "'" + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
      }
    }
    pending_.back().clear();
    for (Op& o : t_.ops) {
      std::sort(o.deps.begin(), o.deps.end());
      o.deps.erase(std::unique(o.deps.begin(), o.deps.end()), o.deps.end());
    }
    check_cycles(t_);
  }

 private:
  // The op a dependency names: a short name in scope (this repeat iteration's, then the outer
  // ones'), else a full name anywhere in the trace so far.
  std::optional<size_t> lookup(const std::map<std::string, size_t>& scope, const std::string& name) const {
    if (auto it = scope.find(name); it != scope.end()) return it->second;
    if (auto g = names_.find(name); g != names_.end()) return g->second;
    return std::nullopt;
  }

  static constexpr int64_t kMemoryCheckEvery = 65536;  // ops between check_size's memory checks

  // The host's available memory, read when first needed (0: unknown).
  double available() {
    if (available_ == 0) available_ = static_cast<double>(limits::host_available_bytes());
    return available_;
  }

  // "which would take X to simulate, more than N% of the Y this host has available (...)" for
  // `count` ops (`least`: "at least " where the count is a lower bound).
  std::string memory_clause(double count, const std::string& least = "") {
    const limits::Limits& lim = limits::current();
    return "which would take " + least + units::format(count * kBytesPerOp, units::Dim::Size) + " to simulate, more than " +
           std::to_string(static_cast<int>(lim.memory_share * 100)) + "% of the " +
           units::format(available(), units::Dim::Size) + " this host has available" + limits::raise_hint("memory_share");
  }

  // The most ops the trace may have: the ops limit, and the host's memory as check_size counts
  // it (in whole steps of kMemoryCheckEvery ops).
  int64_t most_ops() {
    const limits::Limits& lim = limits::current();
    int64_t most = lim.ops;
    if (available() > 0) {
      const double fit = std::floor(lim.memory_share * available_ / kBytesPerOp / kMemoryCheckEvery) * kMemoryCheckEvery +
                         kMemoryCheckEvery - 1;
      if (fit < static_cast<double>(most)) most = static_cast<int64_t>(fit);
    }
    return most;
  }

  // Refuses a repeat block (the outermost one open) that would take the trace past the ops limit
  // or past the host's memory, before any of it is expanded.
  void check_projected(const SourceLoc& at, const std::string& path, const YAML::Node& ops, int64_t repeat) {
    const limits::Limits& lim = limits::current();
    const int64_t before = static_cast<int64_t>(t_.ops.size());
    const int64_t cap = std::max<int64_t>(1, most_ops() - before);
    bool partial = false;
    const int64_t body = expanded_count(ops, cap, partial);
    const int64_t more = saturating_mul(repeat, body);
    if (more <= cap) return;
    const int64_t count = std::min(kSaturatedCount, before + more);
    const std::string least = partial || more == kSaturatedCount ? "at least " : "";  // counting stopped, or saturated
    const std::string what = "the repeat block expands to " + least + std::to_string(more) + " ops and the trace to " +
                             least + std::to_string(count);
    if (count > lim.ops) fail(at, path, what + ", more than " + std::to_string(lim.ops) + " ops" + limits::raise_hint("ops"));
    fail(at, path, what + ", " + memory_clause(static_cast<double>(count), least));
  }

  // Refuses the op past the ops limit, or when the trace and the simulation's state for it
  // would take more than the host has (checked as the op list grows).
  void check_size(const SourceLoc& at, const std::string& path) {
    const limits::Limits& lim = limits::current();
    const size_t count = t_.ops.size() + 1;
    if (count > static_cast<size_t>(lim.ops))
      fail(at, path, "the trace has more than " + std::to_string(lim.ops) + " ops" + limits::raise_hint("ops"));
    if (count % kMemoryCheckEvery != 0) return;
    if (available() > 0 && static_cast<double>(count) * kBytesPerOp > lim.memory_share * available_)
      fail(at, path, "the trace has " + std::to_string(count) + " ops so far, " + memory_clause(static_cast<double>(count)));
  }

  // Memory a run takes per op (the op, its lowered kernel, results, counters, report), as
  // measured: 3.2 GB peak for a 200 000-op trace of small elementwise ops on h100-sxm
  // (docs/reliability.md).
  static constexpr double kBytesPerOp = 16000;

  struct Pending {
    size_t op;  // the op that waits
    std::string name;
    SourceLoc loc;
    std::string path;
  };

  Trace& t_;
  std::map<std::string, size_t> names_;
  std::vector<std::vector<Pending>> pending_{1};  // per open repeat iteration, the trace's at the bottom
  double available_ = 0;  // available()'s reading
};

void check_header(const Ctx& cx, const YAML::Node& root, Trace& t, bool jsonl) {
  const std::vector<std::string> keys = jsonl ? std::vector<std::string>{"xpusim_trace", "name", "description", "tokens", "eager_issue", "memory_per_gpu"}
                                              : std::vector<std::string>{"xpusim_trace", "name", "description", "tokens", "eager_issue",
                                                                         "memory_per_gpu", "ops"};
  const YAML::Node v = root["xpusim_trace"];
  if (!v && jsonl && root["kind"])
    fail(cx.at(root), "", "the first line must be the header {\"xpusim_trace\": 1}, and this line is an op");
  std::set<std::string> seen;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) fail(cx.at(kv.first), key, "duplicate key (it appears earlier in the trace's header)");
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      const std::string hint = config::closest_match(key, keys);
      fail(cx.at(kv.first), key, "unknown top-level key in a trace" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
  }
  if (!v) fail(cx.at(root), "", "not an xpusim trace: the header needs 'xpusim_trace: 1'");
  if (!v.IsScalar() || v.Scalar() != "1")
    fail(cx.at(v), "xpusim_trace", "unsupported trace format version '" + (v.IsScalar() ? v.Scalar() : std::string("?")) + "' (this build reads 1)");
  if (const YAML::Node nm = root["name"]) {
    if (!nm.IsScalar()) fail(cx.at(nm), "name", "expected a name, not a list or mapping");
    t.name = nm.Scalar();
    if (const std::string why = name_problem(t.name, "a trace name"); !why.empty()) fail(cx.at(nm), "name", why);
  }
  if (const YAML::Node d = root["description"]) {
    if (!d.IsScalar()) fail(cx.at(d), "description", "expected text, not a list or mapping");
    t.description = d.Scalar();
  }
  if (root["tokens"]) t.tokens = static_cast<double>(get_int(cx, root["tokens"], "tokens", 1, int64_t{1} << 40));
  if (const YAML::Node e = root["eager_issue"]) t.eager_issue_s = get_time(cx, e, "eager_issue", 1, "1 s", "8 us");
  if (const YAML::Node m = root["memory_per_gpu"]) {
    if (!m.IsMap() || m.size() == 0)
      fail(cx.at(m), "memory_per_gpu", "expected a mapping of components to sizes, e.g. {weights: 16 GiB, activations: 20 GiB}");
    t.memory_loc = cx.at(m);
    for (const auto& kv : m) {
      const std::string key = "memory_per_gpu." + kv.first.Scalar();
      if (!kv.second.IsScalar()) fail(cx.at(kv.second), key, "expected a size, e.g. 16 GiB");
      double v = 0;
      try {
        v = units::parse(kv.second.Scalar(), units::Dim::Size, /*whole_bytes=*/false).value;
      } catch (const std::invalid_argument& e) {
        fail(cx.at(kv.second), key, e.what());
      }
      if (!(v >= 0 && v <= kMaxCollectiveBytes)) fail(cx.at(kv.second), key, "must be between 0 and 1024 TiB");
      t.memory_per_gpu.emplace_back(kv.first.Scalar(), v);
    }
  }
}

}  // namespace

constexpr size_t kMaxLine = size_t{1} << 20;  // a JSON Lines record: one op, never megabytes

// std::getline, but reads no more than kMaxLine + 1 bytes of a line (a file with no newline
// would otherwise be read whole into memory).
bool read_line(std::istream& in, std::string& line) {
  line.clear();
  std::streambuf* sb = in.rdbuf();
  bool any = false;
  for (int c; (c = sb->sbumpc()) != std::char_traits<char>::eof();) {
    any = true;
    if (c == '\n') return true;
    if (line.size() <= kMaxLine) line.push_back(static_cast<char>(c));
  }
  return any;
}

Trace load_trace(const std::string& path) {
  if (is_chakra_path(path)) return load_chakra(path);
  if (path.size() >= 5 && path.substr(path.size() - 5) == ".json") {
    if (is_torch_et(path)) return load_torch_et(path);
    if (file_problem(path).empty())
      throw UserError(path + ": a .json trace is read as a PyTorch execution trace (\"schema\" and \"nodes\"); a profiler trace "
                             "(traceEvents) is converted by scripts/import-torch-profile.py");
  }
  Trace t;
  t.file = path;
  const bool jsonl = path.size() >= 6 && path.substr(path.size() - 6) == ".jsonl";
  if (!jsonl) {
    const YAML::Node root = load_yaml_file(path);
    Ctx cx{path, 0};
    if (!root.IsMap()) fail(cx.at(root), "", "a trace must be a mapping with 'xpusim_trace: 1' and 'ops'");
    check_header(cx, root, t, false);
    const YAML::Node ops = root["ops"];
    if (!ops) fail(cx.at(root), "", "missing required key 'ops'");
    if (!ops.IsSequence()) fail(cx.at(ops), "ops", "expected a list of ops");
    Parser p(t);
    std::map<std::string, size_t> scope;
    for (size_t i = 0; i < ops.size(); ++i) p.node(cx, ops[i], "", scope, "ops[" + std::to_string(i) + "]");
    p.finish(scope);
  } else {
    check_input_file(path, false);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(path + ": cannot open file");
    std::string line;
    int lineno = 0;
    bool header = false;
    Parser p(t);
    std::map<std::string, size_t> scope;
    while (read_line(in, line)) {
      if (lineno == std::numeric_limits<int>::max()) throw UserError(path + ": more lines than a trace may have");
      ++lineno;
      if (line.size() > kMaxLine)
        fail(SourceLoc{path, lineno, 1}, "", "line is longer than " + std::to_string(kMaxLine) + " bytes (one op per line)");
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      Ctx cx{path, lineno - 1};
      io::check_strict_json(line, path, lineno);
      const YAML::Node rec = load_yaml_string(line, path, lineno - 1);
      if (!rec.IsMap()) fail(SourceLoc{path, lineno, 1}, "", "each line must be one JSON object");
      if (!header) {
        check_header(cx, rec, t, true);
        header = true;
        continue;
      }
      p.node(cx, rec, "", scope, "line " + std::to_string(lineno));
    }
    if (!header) throw UserError(path + ": file is empty (expected a header line {\"xpusim_trace\": 1})");
    p.finish(scope);
  }
  if (t.ops.empty()) throw UserError(path + ": trace has no ops");
  if (t.name.empty()) t.name = std::filesystem::path(path).stem().string();
  return t;
}

}  // namespace xpusim::trace
