#pragma once
// Bounds on what one run may ask for, so that an absurd config or trace (or a typo that adds
// six zeros) is refused with a message instead of exhausting the host or running for days. Each
// has a default (docs/reliability.md) that `--limit NAME=VALUE` raises for a run that really
// needs more.
#include <cstdint>
#include <string>
#include <vector>

namespace xpusim::limits {

struct Limits {
  int64_t ops = 10'000'000;             // ops in one trace, after expanding repeat blocks
  int64_t file_bytes = int64_t{512} << 20;  // one YAML config or trace (its node tree is ~10x the text)
  // Simulated CTA steps (a step: one K-slice of a GEMM tile, one chunk of a streaming kernel)
  // in one run: the simulator's unit of work, about 30 000 a second on one core (a bf16
  // 8192^3 GEMM on H100 is 264 192 steps and takes 8.8 s).
  double cta_steps = 2e9;
  double memory_share = 0.8;  // of the host's available memory that one run's trace may take
  // Simulated time an op may go without any of its CTAs finishing before the watchdog stops the
  // run, naming the ops in flight.
  double stall_s = 60;
  // Points one sweep spec may expand to (configs x traces x axis combinations): a grid of a few
  // long axes multiplies past what could ever run, and its points alone would fill the memory.
  double sweep_points = 1e6;
};

// The limits in force; the CLI sets them once, before loading anything.
Limits& current();

// Applies "name=value" (`--limit`); throws UserError naming the limit or the value.
void set(const std::string& assignment);

// One line per limit: name, value in force, meaning; for --help and errors.
std::string describe();

// Bytes of memory the host has available now (MemAvailable), or 0 if unknown.
uint64_t host_available_bytes();

// "; raise it with --limit name=N" for messages.
std::string raise_hint(const std::string& name);

}  // namespace xpusim::limits
