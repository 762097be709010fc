#include "sim/config/yaml_util.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "sim/config/limits.h"
#include "sim/config/units.h"

namespace xpusim {

YAML::Node load_yaml_string(const std::string& text, const std::string& name, int line_offset) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UserError(name + ":" + std::to_string(e.mark.line + 1 + line_offset) + ":" +
                    std::to_string(e.mark.column + 1) + ": malformed YAML: " + e.msg);
  }
}

void check_input_file(const std::string& path, bool whole) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) throw UserError(path + ": is a directory, not a file");
  if (!std::filesystem::exists(st)) throw UserError(path + ": no such file");
  // A device or a pipe (/dev/zero, /dev/stdin) could be endless, or never end.
  if (!std::filesystem::is_regular_file(st)) throw UserError(path + ": not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  const int64_t limit = limits::current().file_bytes;
  if (whole && !ec && size > static_cast<uintmax_t>(limit))
    throw UserError(path + ": " + units::format(static_cast<double>(size), units::Dim::Size) +
                    " is more than a YAML file may hold (" + units::format(static_cast<double>(limit), units::Dim::Size) +
                    "; write large traces as JSON Lines)" + limits::raise_hint("file_bytes"));
}

YAML::Node load_yaml_file(const std::string& path) {
  check_input_file(path, true);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.find('\0') != std::string::npos) throw UserError(path + ": not a text file (contains NUL bytes)");
  YAML::Node n = load_yaml_string(text, path);
  if (n.IsNull()) throw UserError(path + ": file is empty");
  return n;
}

std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out + "\"";
}

YAML::Node find_path(const YAML::Node& n, std::initializer_list<const char*> path) {
  YAML::Node cur = n;  // reset(), not =: assigning a yaml-cpp node overwrites what it refers to
  for (const char* k : path) {
    const YAML::Node& c = cur;
    if (!c.IsMap() || !c[k]) return YAML::Node(YAML::NodeType::Undefined);
    cur.reset(c[k]);
  }
  return cur;
}

}  // namespace xpusim
