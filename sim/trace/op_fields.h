#pragma once
// Every field of trace::Op, listed once, each with its role: whether it says what work the op
// does or only where and when it runs. What must see every field derives from this list rather
// than naming fields itself: the key under which fast fidelity shares one kernel's simulation
// with an identical one (work_key), and the test that the list is whole (a field added to Op
// and not here fails it: tests/unit/trace_test.cpp, "Every field of trace::Op ...").
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "sim/trace/trace.h"

namespace xpusim::trace {

enum class FieldRole {
  place,  // where and when: its name, GPUs, stream, dependencies, position in the file
  work,   // what it computes or moves, and on what data: every other field
};

// Calls v(name, field, role) for each field of `o` (an Op or a const Op), in declaration order.
template <class OpT, class Visitor>
void visit_fields(OpT& o, Visitor&& v) {
  static_assert(std::is_same_v<std::remove_const_t<OpT>, Op>);
  constexpr FieldRole P = FieldRole::place, W = FieldRole::work;
  v("name", o.name, P), v("kind", o.kind, W), v("dtype", o.dtype, W), v("out_dtype", o.out_dtype, W);
  v("stream", o.stream, P), v("devices", o.devices, P), v("all_devices", o.all_devices, P), v("deps", o.deps, P);
  v("loc", o.loc, P);
  v("m", o.m, W), v("n", o.n, W), v("k", o.k, W), v("batch", o.batch, W), v("sparse_2_4", o.sparse_2_4, W);
  v("accumulate", o.accumulate, W);
  v("weight_format", o.weight_format, W), v("weight_dtype", o.weight_dtype, W), v("weight_group", o.weight_group, W);
  v("weight_scale_bits", o.weight_scale_bits, W), v("switching", o.switching, W), v("input_density", o.input_density, W);
  v("shape", o.shape, W), v("inputs", o.inputs, W), v("outputs", o.outputs, W), v("flops_per_element", o.flops_per_element, W);
  v("contiguous", o.contiguous, W), v("rms", o.rms, W);
  v("heads", o.heads, W), v("kv_heads", o.kv_heads, W), v("seq_q", o.seq_q, W), v("seq_kv", o.seq_kv, W);
  v("head_dim", o.head_dim, W), v("kv_page", o.kv_page, W), v("causal", o.causal, W);
  v("h", o.h, W), v("w", o.w, W), v("c", o.c, W), v("r", o.r, W), v("s", o.s, W), v("stride", o.stride, W);
  v("pad", o.pad, W);
  v("footprint", o.footprint, W), v("access", o.access, W), v("loads", o.loads, W), v("passes", o.passes, W);
  v("warmup", o.warmup, W);
  v("instruction", o.instruction, W), v("count", o.count, W), v("warps", o.warps, W);
  v("macs_per_instruction", o.macs_per_instruction, W);
  v("duration_s", o.duration_s, W);
  v("bytes", o.bytes, W), v("mirrors", o.mirrors, W), v("algorithm", o.algorithm, W), v("protocol", o.protocol, W);
  v("copy_in", o.copy_in, W);
}

// Every work field of `op`, as text: two ops with the same work_key do the same work (names,
// places and dependencies aside).
std::string work_key(const Op& op);

// How many fields an aggregate has, counted by how many initialisers its braces take (each
// field from one value that converts to anything). Op is an aggregate, so the test can compare
// this with the fields visit_fields lists.
namespace detail {
struct AnyField {
  template <class T>
  operator T&() const noexcept;  // never called: only its type is used
};
template <class T, class Seq, class = void>
struct TakesInitialisers : std::false_type {};
template <class T, size_t... I>
struct TakesInitialisers<T, std::index_sequence<I...>, std::void_t<decltype(T{(void(I), AnyField{})...})>>
    : std::true_type {};
template <class T, size_t N>
constexpr size_t count_fields() {
  if constexpr (!TakesInitialisers<T, std::make_index_sequence<N + 1>>::value) return N;
  else return count_fields<T, N + 1>();
}
}  // namespace detail
template <class T>
constexpr size_t aggregate_fields() {
  static_assert(std::is_aggregate_v<T>);
  return detail::count_fields<T, 0>();
}

}  // namespace xpusim::trace
