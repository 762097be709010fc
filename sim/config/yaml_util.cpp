#include "sim/config/yaml_util.h"

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "sim/config/limits.h"
#include "sim/config/units.h"

namespace xpusim {

namespace {

// Where `text` stops being UTF-8 (YAML and JSON are Unicode; names from it end up in JSON and
// HTML reports), or npos.
size_t invalid_utf8_at(const std::string& text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    size_t len = 0;
    unsigned min = 0, cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) len = 2, min = 0x80, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, min = 0x800, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, min = 0x10000, cp = c & 0x07;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;  // overlong, beyond Unicode, surrogate
    i += len;
  }
  return std::string::npos;
}

// The 0-based line where a text's second YAML document begins, or -1 if it holds one. A "---"
// or "..." at the start of a line is always a document marker; the first document may open
// with a "---" of its own, and a "..." ends a document, so content after one starts another.
// (Found by lines, not by YAML::LoadAll, which loops without end on some malformed text.)
long second_document_line(const std::string& text) {
  std::istringstream in(text);
  std::string l;
  bool content = false, ended = false, opened = false;
  for (long i = 0; std::getline(in, l); ++i) {
    auto marker = [&](const char* m) {
      return l.compare(0, 3, m) == 0 && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    };
    const size_t first = l.find_first_not_of(" \t\r");
    const bool directive = !content && !opened && first == 0 && l[0] == '%';  // %YAML, %TAG before the first "---"
    const bool blank = first == std::string::npos || l[first] == '#' || directive;
    if (marker("---")) {
      if (content || ended || opened) return i;
      opened = true;
    } else if (marker("...")) {
      ended = true;
    } else if (!blank) {
      if (ended) return i;
      content = true;
    }
  }
  return -1;
}

}  // namespace

YAML::Node load_yaml_string(const std::string& text, const std::string& name, int line_offset) {
  if (const size_t bad = invalid_utf8_at(text); bad != std::string::npos) {
    const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const long line = 1 + line_offset + std::count(text.begin(), text.begin() + static_cast<long>(bad), '\n');
    const size_t col = bad - (line_start == std::string::npos || bad == 0 ? 0 : line_start + 1) + 1;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw UserError(name + ":" + std::to_string(line) + ":" + std::to_string(col) + ": not UTF-8 text (byte " + byte + ")");
  }
  try {
    YAML::Node doc = YAML::Load(text);
    if (const long second = second_document_line(text); second >= 0)  // it would be dropped unread
      throw UserError(name + ":" + std::to_string(second + 1 + line_offset) +
                      ": a second YAML document starts here; a file holds one document (nothing after it would be read)");
    return doc;
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own guard, whose message is only "bad file"
    throw UserError(name + ":" + std::to_string(e.mark.line + 1 + line_offset) + ":" + std::to_string(e.mark.column + 1) +
                    (name.size() > 6 && name.compare(name.size() - 6, 6, ".jsonl") == 0 ? ": malformed JSON" : ": malformed YAML") +
                    ": lists or mappings nested too deeply (more than the parser's limit of a few hundred levels)");
  } catch (const YAML::ParserException& e) {
    throw UserError(name + ":" + std::to_string(e.mark.line + 1 + line_offset) + ":" +
                    std::to_string(e.mark.column + 1) + ": malformed YAML: " + e.msg);
  }
}

std::string file_problem(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) return "is a directory, not a file";
  if (ec && ec != std::errc::no_such_file_or_directory) return ec.message();  // e.g. a name too long
  if (!std::filesystem::exists(st)) return "does not exist";
  // A device or a pipe (/dev/zero, /dev/stdin) could be endless, or never end.
  if (!std::filesystem::is_regular_file(st)) return "is not a regular file";
  return "";
}

void check_input_file(const std::string& path, bool whole) {
  const std::string problem = file_problem(path);
  if (!problem.empty()) throw UserError(path + ": " + problem);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  const int64_t limit = limits::current().file_bytes;
  if (whole && !ec && size > static_cast<uintmax_t>(limit))
    throw UserError(path + ": " + units::format(static_cast<double>(size), units::Dim::Size) +
                    " is more than a YAML file may hold (" + units::format(static_cast<double>(limit), units::Dim::Size) +
                    "; write large traces as JSON Lines)" + limits::raise_hint("file_bytes"));
}

std::string read_input_file(const std::string& path) {
  check_input_file(path, true);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

YAML::Node load_yaml_file(const std::string& path) {
  const std::string text = read_input_file(path);
  if (text.find('\0') != std::string::npos) throw UserError(path + ": not a text file (contains NUL bytes)");
  YAML::Node n = load_yaml_string(text, path);
  if (n.IsNull()) throw UserError(path + ": file is empty");
  return n;
}

std::string control_character(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) {
      char code[16];
      std::snprintf(code, sizeof code, "U+%04X", c);
      return c == '\n' ? "a newline" : c == '\t' ? "a tab" : c == '\r' ? "a carriage return" : std::string(code);
    }
  return "";
}

std::string name_problem(const std::string& s, const std::string& what) {
  if (s.empty()) return what + " may not be empty";
  if (const std::string c = control_character(s); !c.empty()) return what + " may not hold control characters (this one has " + c + ")";
  return "";
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
