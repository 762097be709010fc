#pragma once
// CSV fields as RFC 4180 writes them: a field with a comma, a double quote or a line break is
// quoted, and a double quote inside it is doubled; so names with any of them keep their columns.
#include <string>

namespace xpusim::io {

// `s` always in double quotes, inner quotes doubled.
inline std::string csv_quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// `s` as it is, or quoted where RFC 4180 requires it.
inline std::string csv_field(const std::string& s) {
  return s.find_first_of(",\"\r\n") == std::string::npos ? s : csv_quoted(s);
}

}  // namespace xpusim::io
