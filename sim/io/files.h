#pragma once
// Output files that a killed run never leaves half-written: whole files are written to a
// temporary name and renamed; appended records are written in one call and flushed to disk.
#include <filesystem>
#include <string>

namespace xpusim::io {

// Creates `dir` and its parents if missing; throws UserError when it is not a folder after.
void make_directory(const std::filesystem::path& dir);

// Writes `text` to path.tmp, then renames it over `path`. Throws UserError when it cannot.
void write_atomically(const std::filesystem::path& path, const std::string& text);

// Appends `line` (which ends in a newline) with one write and syncs it to disk.
void append_durably(const std::filesystem::path& path, const std::string& line);

}  // namespace xpusim::io
