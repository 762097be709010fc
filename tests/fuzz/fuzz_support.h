#pragma once
// Shared by the fuzz targets: a private scratch folder for the input as a file (the loaders read
// files), and the rule every target enforces: a loader either succeeds or throws a UserError
// (the user's fault, reported with a position). Any other exception escapes the target, and
// libFuzzer (or the replay driver) reports it as a crash.
#include <cstddef>
#include <cstdint>
#include <string>

namespace xpusim::fuzz {

// A folder made once per process under $TMPDIR. It holds links to every entry of the shipped
// configs/ folder, and so does its subfolder sub/, so that `extends: h100-sxm.yaml` and
// `extends: ../h100-sxm.yaml` (as the files under configs/systems/ write it) both resolve.
const std::string& scratch();

// Writes the input to scratch()/sub/<name> and returns that path.
std::string write_input(const uint8_t* data, size_t size, const std::string& name);

// Aborts with `what` when `ok` is false: a property the loaders promise, broken.
void require(bool ok, const std::string& what);

}  // namespace xpusim::fuzz
