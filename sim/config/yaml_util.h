#pragma once
// Small helpers shared by the config and trace loaders: positions and parse errors.
#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <string>

#include "sim/error.h"

namespace xpusim {

// yaml-cpp marks are 0-based; users count from 1.
inline SourceLoc yaml_loc(const std::string& file, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return SourceLoc{file, 0, 0};
  return SourceLoc{file, m.line + 1, m.column + 1};
}

// What keeps `path` from being read as an input file ("does not exist", "is a directory", "is not
// a regular file", or the system's reason), or "" when it is a regular file.
std::string file_problem(const std::string& path);

// Refuses what is not a regular file (a folder, a device, a pipe) and, when the whole file is
// read at once (`whole`), one larger than the file_bytes limit; UserErrors name the file.
void check_input_file(const std::string& path, bool whole);

// The whole of an input file (check_input_file's checks, the file_bytes limit included).
std::string read_input_file(const std::string& path);

// Loads a YAML file, turning parse errors and unreadable files into UserErrors with a position.
YAML::Node load_yaml_file(const std::string& path);
YAML::Node load_yaml_string(const std::string& text, const std::string& name, int line_offset = 0);

std::string yaml_quote(const std::string& s);

// The first control character in `s`, in words ("a newline", "a tab", "U+0007"), or "" when
// there is none: text that would break the terminal table, summary.md or a CSV reader's rows.
std::string control_character(const std::string& s);

// Why `s` cannot be a name shown in reports and tables ("" when it can): empty, or holding a
// control character (a newline or a tab would break the terminal table, summary.md, a CSV
// reader's rows). `what` is what the text is, for the message ("an op name").
std::string name_problem(const std::string& s, const std::string& what);

// The node at a path of map keys under `n`, or an undefined node if any key is missing.
YAML::Node find_path(const YAML::Node& n, std::initializer_list<const char*> path);

}  // namespace xpusim
