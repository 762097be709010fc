#pragma once
// PyTorch operators (aten::*) as xpusim ops: what the execution-trace readers (Chakra .et files,
// torch.profiler's ExecutionTraceObserver JSON) make of an operator from its name and its
// inputs' and outputs' shapes and types. The same names as scripts/import-torch-profile.py maps.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/trace.h"

namespace xpusim::trace::aten {

// One operator's tensors as the trace records them, position by position: a tensor's shape
// and type ("Tensor(c10::BFloat16)"), or a scalar's type ("Int", "Bool") and value ("True").
struct Io {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> types;
  std::vector<std::string> values;
};

enum class Verdict {
  op,         // an xpusim op (Mapped::op)
  container,  // runs its work in the operators under it (a module, record_function, aten::reshape)
  view,       // no device work of its own (a view, a metadata query, an allocation)
  unknown,    // device work xpusim does not model: a timed gap
};

struct Mapped {
  Verdict verdict = Verdict::unknown;
  Op op;  // kind, dtype and shape fields when verdict == op
};

// Throws UserError (without a position: the caller names the node) when a known operator's
// inputs do not fit it (a GEMM whose inner dimensions differ, an attention without 4-D inputs).
Mapped map_op(const std::string& name, const Io& in, const Io& out);

// "Tensor(c10::BFloat16)" -> bf16; nullopt for a type that is not a floating-point or integer
// tensor xpusim computes in.
std::optional<Dtype> tensor_dtype(const std::string& type);

// The textual forms in Chakra's IOInfo: "[[512,4096],[],[4096]]" and
// "[Tensor(c10::BFloat16),Int,GenericList[Tensor(float)]]" (top-level items split, brackets and
// parentheses kept). Throw UserError on text that is not such a list.
std::vector<std::vector<int64_t>> parse_shapes(const std::string& text);
std::vector<std::string> parse_list(const std::string& text);

}  // namespace xpusim::trace::aten
