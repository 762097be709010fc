#pragma once
// Each parameter is declared once: key, kind, unit, default or required, range, meaning, and
// where it lands in its model's Params struct. The loader, `xpusim describe` and the generated
// reference docs all read these tables. No YAML here: models' Params structs stay YAML-free.
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/units.h"

namespace xpusim::config {

enum class Kind { Int, Float, Quantity, Bool, Enum, String, StringList };

// A parsed, validated value on its way into a Params struct.
struct Value {
  double number = 0;                // Int, Float, Quantity (SI)
  bool flag = false;                // Bool
  std::string text;                 // Enum, String
  std::vector<std::string> list;    // StringList
};

struct Need {
  bool required = false;
  std::string default_text;  // as a user would write it in YAML
};
inline Need required() { return {true, ""}; }
inline Need def(std::string text) { return {false, std::move(text)}; }

struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
};
inline Range any() { return {}; }
inline Range at_least(double lo) { return {lo, std::numeric_limits<double>::infinity()}; }
inline Range between(double lo, double hi) { return {lo, hi}; }

struct ParamSpec {
  std::string key;  // full dotted path, e.g. "tensor_core.macs_per_clock.bf16"
  Kind kind = Kind::Float;
  units::Dim dim = units::Dim::None;
  Need need;
  Range range;
  std::vector<std::string> choices;  // Enum
  std::string description;
  std::function<void(void* section, const Value&)> assign;
};

struct Section {
  std::string name;         // "" for top-level keys
  std::string description;
  std::vector<ParamSpec> params;
  std::function<void*(void* whole)> locate;  // whole config object -> this section's struct
};

// The accessor of a nested member, `(p.*outer).*inner`, for a key of a struct inside a Params
// struct (e.g. collectives.ll.hop).
template <class P, class O, class T>
auto nested(O P::*outer, T O::*inner) {
  return [outer, inner](P& p) -> T& { return (p.*outer).*inner; };
}

// Fills a Section for Params struct P. `get` is a member pointer or a callable P& -> T&.
template <class P>
class SectionBuilder {
 public:
  explicit SectionBuilder(Section& s) : s_(s) {}

  template <class G>
  SectionBuilder& integer(const std::string& key, G get, Need n, Range r, const std::string& desc) {
    return add(key, Kind::Int, units::Dim::None, n, r, {}, desc, [get](void* p, const Value& v) {
      std::invoke(get, *static_cast<P*>(p)) = static_cast<int>(v.number);
    });
  }
  template <class G>
  SectionBuilder& number(const std::string& key, G get, Need n, Range r, const std::string& desc) {
    return add(key, Kind::Float, units::Dim::None, n, r, {}, desc,
               [get](void* p, const Value& v) { std::invoke(get, *static_cast<P*>(p)) = v.number; });
  }
  template <class G>
  SectionBuilder& quantity(const std::string& key, G get, units::Dim dim, Need n, Range r,
                           const std::string& desc) {
    return add(key, Kind::Quantity, dim, n, r, {}, desc,
               [get](void* p, const Value& v) { std::invoke(get, *static_cast<P*>(p)) = v.number; });
  }
  template <class G>
  SectionBuilder& flag(const std::string& key, G get, Need n, const std::string& desc) {
    return add(key, Kind::Bool, units::Dim::None, n, any(), {}, desc,
               [get](void* p, const Value& v) { std::invoke(get, *static_cast<P*>(p)) = v.flag; });
  }
  template <class G>
  SectionBuilder& choice(const std::string& key, G get, std::vector<std::string> choices, Need n,
                         const std::string& desc) {
    return add(key, Kind::Enum, units::Dim::None, n, any(), std::move(choices), desc,
               [get](void* p, const Value& v) { std::invoke(get, *static_cast<P*>(p)) = v.text; });
  }
  // One of an enum's values, by the names of `table` (the enum's name table, or the part of it
  // that applies): the config's text is parsed once, here, and the model sees the enum.
  template <class G, class E>
  SectionBuilder& choice(const std::string& key, G get, const std::vector<std::pair<E, std::string>>& table, Need n,
                         const std::string& desc) {
    std::vector<std::string> names;
    for (const auto& entry : table) names.push_back(entry.second);
    return add(key, Kind::Enum, units::Dim::None, n, any(), std::move(names), desc, [get, table](void* p, const Value& v) {
      for (const auto& [value, name] : table)
        if (name == v.text) std::invoke(get, *static_cast<P*>(p)) = value;
    });
  }
  template <class G>
  SectionBuilder& text(const std::string& key, G get, Need n, const std::string& desc) {
    return add(key, Kind::String, units::Dim::None, n, any(), {}, desc,
               [get](void* p, const Value& v) { std::invoke(get, *static_cast<P*>(p)) = v.text; });
  }
  template <class G>
  SectionBuilder& list(const std::string& key, G get, Need n, const std::string& desc) {
    return add(key, Kind::StringList, units::Dim::None, n, any(), {}, desc,
               [get](void* p, const Value& v) { std::invoke(get, *static_cast<P*>(p)) = v.list; });
  }

 private:
  SectionBuilder& add(const std::string& key, Kind k, units::Dim dim, Need n, Range r,
                      std::vector<std::string> choices, const std::string& desc,
                      std::function<void(void*, const Value&)> assign) {
    ParamSpec spec;
    spec.key = s_.name.empty() ? key : s_.name + "." + key;
    spec.kind = k;
    spec.dim = dim;
    spec.need = std::move(n);
    spec.range = r;
    spec.choices = std::move(choices);
    spec.description = desc;
    spec.assign = std::move(assign);
    s_.params.push_back(std::move(spec));
    return *this;
  }
  Section& s_;
};

}  // namespace xpusim::config
