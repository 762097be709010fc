#include "sim/config/chip_kind.h"

namespace xpusim::config {
namespace {

// Every chip kind a config may name. A new kind adds its file and a line here.
const std::vector<const ChipKind*>& kinds() {
  static const std::vector<const ChipKind*> k = {&gpu_kind(), &accelerator_kind()};
  return k;
}

}  // namespace

const ChipKind& chip_kind(const std::string& name) {
  for (const ChipKind* k : kinds())
    if (name == k->name) return *k;
  throw UserError("unknown chip kind '" + name + "' (one of: " + chip_kinds_text() + ")");
}

std::vector<std::string> chip_kinds() {
  std::vector<std::string> names;
  for (const ChipKind* k : kinds()) names.push_back(k->name);
  return names;
}

std::string chip_kinds_text(const std::string& sep) {
  std::string s;
  for (const ChipKind* k : kinds()) s += (s.empty() ? "" : sep) + std::string(k->name);
  return s;
}

const Schema& schema_for(const std::string& kind) { return chip_kind(kind).schema(); }

}  // namespace xpusim::config
