#pragma once
// Lowers trace ops onto the MAGNet-style accelerator: GEMMs (and convolutions as implicit
// GEMMs) get a searched mapping; attention becomes two batched GEMMs per head and a softmax on
// the special-function units; row-wise and elementwise ops run on the SFUs.
#include <vector>

#include "models/accelerator/accelerator.h"
#include "sim/config/config_loader.h"
#include "sim/trace/trace.h"

namespace xpusim::lower {

// Throws UserError (naming the op) for formats or op kinds the accelerator does not run.
std::vector<accel::AccelOp> lower_accelerator(const config::LoadedConfig& cfg, const trace::Trace& t);

}  // namespace xpusim::lower
