#include "sim/io/json_strict.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "sim/error.h"

namespace xpusim::io {

namespace {

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column
// 5: " prefix: the position is given in ours.
std::string reason(const std::string& what) {
  const size_t at = what.find("column ");
  if (at == std::string::npos) {  // "[json.exception.out_of_range.406] number overflow parsing '1e999'"
    const size_t tag = what.rfind("] ", 40);
    return what[0] == '[' && tag != std::string::npos ? what.substr(tag + 2) : what;
  }
  const size_t colon = what.find(": ", at);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

}  // namespace

void check_strict_json(const std::string& text, const std::string& name, int line) {
  using json = nlohmann::json;
  std::vector<std::set<std::string>> open;  // the keys seen so far in each object being read
  std::string problem;
  auto where = [&](const std::string& what) {  // the column of a key or string's first occurrence after
    const size_t at = text.find(what);
    return at == std::string::npos ? 1 : static_cast<int>(at) + 1;
  };
  int column = 1;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    if (!problem.empty()) return true;
    if (event == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open.empty()) open.pop_back();
    } else if (event == json::parse_event_t::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (key.find('\0') != std::string::npos) {
        problem = "a key holds a NUL character (\\u0000)";
      } else if (!open.empty() && !open.back().insert(key).second) {
        problem = "key '" + key + "' appears twice in one object";
        const std::string quoted = "\"" + key + "\"";
        const size_t first = text.find(quoted);
        const size_t second = first == std::string::npos ? first : text.find(quoted, first + 1);
        column = second == std::string::npos ? 1 : static_cast<int>(second) + 1;
      }
    } else if (event == json::parse_event_t::value && parsed.is_string() &&
               parsed.get_ref<const std::string&>().find('\0') != std::string::npos) {
      problem = "a string holds a NUL character (\\u0000)";
      column = where("\\u0000");
    }
    return true;
  };
  try {
    const json parsed = json::parse(text, check, /*allow_exceptions=*/true, /*ignore_comments=*/false);
    (void)parsed;
  } catch (const json::parse_error& e) {
    const size_t byte = std::min<size_t>(e.byte == 0 ? 1 : e.byte, text.size() + 1);
    // JSON Lines give one line per record; a whole file counts its own lines.
    const long lines_before = std::count(text.begin(), text.begin() + static_cast<long>(byte - 1), '\n');
    const size_t line_start = lines_before == 0 ? 0 : text.rfind('\n', byte - 2) + 1;
    throw UserError(name + ":" + std::to_string(line + lines_before) + ":" + std::to_string(byte - line_start) +
                    ": malformed JSON: " + reason(e.what()));
  } catch (const json::exception& e) {  // e.g. a number beyond a double: no position given
    throw UserError(name + ":" + std::to_string(line) + ": malformed JSON: " + reason(e.what()));
  }
  if (!problem.empty()) throw UserError(name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + problem);
}

}  // namespace xpusim::io
