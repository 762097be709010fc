#pragma once
// Strict JSON: what a JSON Lines trace line, a results.jsonl row or a report.json must be before
// the YAML reader (a superset of JSON that would accept far more) sees it.
#include <string>

namespace xpusim::io {

// Throws UserError "NAME:LINE:COLUMN: ..." unless `text` is exactly one JSON value (RFC 8259:
// no comments, trailing commas, single quotes or bare words, and nothing after the value), with
// no key repeated within an object and no NUL character in a string or key. `line` is the
// 1-based line of the text's first character in NAME (JSON Lines: the record's line).
void check_strict_json(const std::string& text, const std::string& name, int line);

}  // namespace xpusim::io
