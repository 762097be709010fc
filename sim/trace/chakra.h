#pragma once
// Execution traces from the ecosystem, read into xpusim's trace (docs/trace-format.md,
// "Execution traces"):
//  - MLCommons Chakra: one protobuf file per rank, <prefix>.<rank>.et (sim/trace/chakra_et.proto);
//  - PyTorch's ExecutionTraceObserver JSON (torch.profiler.ExecutionTraceObserver).
// Operators become ops through sim/trace/aten.h; nodes xpusim cannot map are kept as timed gaps
// and counted in a warning. Throws UserError naming the file and the node on any problem.
#include <string>

#include "sim/trace/trace.h"

namespace xpusim::trace {

// True for a path a Chakra trace is given by: <prefix>.<rank>.et (any rank's file names them all).
bool is_chakra_path(const std::string& path);
Trace load_chakra(const std::string& path);

// True when the .json file at `path` is an execution trace (it has "nodes" and "schema"), not a
// profiler trace (those go through scripts/import-torch-profile.py).
bool is_torch_et(const std::string& path);
Trace load_torch_et(const std::string& path);

}  // namespace xpusim::trace
