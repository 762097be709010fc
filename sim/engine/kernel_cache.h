#pragma once
// The kernel cache (`xpusim run --kernel-cache FILE`, and every step `xpusim serve` simulates):
// the fast fidelity's memo table (models/sm/fast_path.h) kept in a file across runs, so that a
// kernel one run simulated is replayed, not simulated again, by the next run that meets it in
// the same state (the same kernel after the same kernel, on the same config and engine).
//
// A record holds a memo key (the kernel's work and program, and the kernel that ran before it)
// and the profiles of its first and second instances in the run that recorded it: a later run
// replays the first for its own first instance of the kernel (the memory system as cold as it
// was then) and the second for the rest. Records are filed under a digest of everything else
// a kernel's time and counters depend on: the resolved config (a value naming a file stands
// for its bytes), the fast fidelity's tolerance, and the engine's own bytes. A record under
// another digest is never used; it stays in the file for the runs it belongs to.
//
// The file: a magic line, then records, each with its length and a checksum. A file that is not
// a kernel cache, ends inside a record, or holds a record whose checksum or values are wrong is
// an error naming the file and the byte: a cache is never silently rewritten or trusted.
#include <cstdint>
#include <string>

#include "models/sm/fast_path.h"
#include "sim/config/config_loader.h"

namespace xpusim::engine {

// Reads the engine's bytes for the digest now, once per process (the Python module does at
// import: later, its file may have been rebuilt, or its path, if relative, mean another file).
void read_engine_digest();

// The digest that files a run's records: the resolved config, the tolerance, the engine.
uint64_t kernel_cache_digest(const config::LoadedConfig& cfg, double tolerance);

// Adds the records of `path` filed under `digest` to `memo`, as loaded entries (a file that does
// not exist, or is empty, adds none). Of several records for one key the first with a second instance wins,
// else the first. `stats`: the number of statistics a GPU of this run keeps (each segment of a
// profile holds their deltas). Throws UserError naming the file for a damaged one.
void load_kernel_cache(const std::string& path, uint64_t digest, size_t stats, MemoTable& memo);

// Writes the entries of `memo` that this run recorded or made warm: appended to `path` (created
// with its magic line if missing or empty) under an exclusive lock, so runs sharing the file
// lose nothing. A file that is not a kernel cache is left as it is; a failed write is undone.
// Either warns (the run's results do not depend on it) rather than throwing.
void save_kernel_cache(const std::string& path, uint64_t digest, const MemoTable& memo);

}  // namespace xpusim::engine
