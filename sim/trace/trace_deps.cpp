#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/trace/trace_fields.h"

namespace xpusim::trace::detail {
namespace {

// What an op waits for: its deps, and on each GPU it runs on the op before it in its stream (as
// the engine launches them). An op on every GPU of the system is taken to run on every GPU the
// trace names.
std::vector<std::vector<std::pair<size_t, bool>>> waits_for(const Trace& t) {
  std::set<int> named{0};
  for (const Op& o : t.ops)
    if (!o.all_devices) named.insert(o.devices.begin(), o.devices.end());
  std::vector<std::vector<std::pair<size_t, bool>>> preds(t.ops.size());  // (op, by stream order)
  std::map<std::pair<int, int>, size_t> last;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const Op& o = t.ops[i];
    for (size_t d : o.deps) preds[i].push_back({d, false});
    for (int dev : o.all_devices ? std::vector<int>(named.begin(), named.end()) : o.devices) {
      auto [it, fresh] = last.try_emplace({dev, o.stream}, i);
      if (!fresh) {
        preds[i].push_back({it->second, true});
        it->second = i;
      }
    }
  }
  return preds;
}

}  // namespace

// Depth-first over what each op waits for, without recursion (traces run to millions of ops).
void check_cycles(const Trace& t) {
  const auto preds = waits_for(t);
  const size_t n = t.ops.size();
  enum : char { kNew, kOpen, kDone };
  std::vector<char> state(n, kNew);
  std::vector<size_t> parent(n, n);
  std::vector<bool> by_stream(n, false);  // parent waits for this op by stream order
  std::vector<std::pair<size_t, size_t>> stack;  // (op, next edge)
  for (size_t root = 0; root < n; ++root) {
    if (state[root] != kNew) continue;
    stack.push_back({root, 0});
    state[root] = kOpen;
    while (!stack.empty()) {
      auto& [u, e] = stack.back();
      if (e == preds[u].size()) {
        state[u] = kDone;
        stack.pop_back();
        continue;
      }
      const auto [v, stream] = preds[u][e++];
      if (state[v] == kNew) {
        state[v] = kOpen;
        parent[v] = u;
        by_stream[v] = stream;
        stack.push_back({v, 0});
      } else if (state[v] == kOpen) {
        // v ... u are open on the stack: v waits (through them) for u, and u waits for v.
        std::vector<std::string> ring{t.ops[v].name};
        std::vector<size_t> chain;
        for (size_t x = u; x != v; x = parent[x]) chain.push_back(x);
        std::reverse(chain.begin(), chain.end());
        for (size_t x : chain) ring.push_back((by_stream[x] ? "(stream order) " : "") + t.ops[x].name);
        ring.push_back((stream ? "(stream order) " : "") + t.ops[v].name);
        std::string text;
        const size_t shown = std::min<size_t>(ring.size(), 12);
        for (size_t i = 0; i < shown; ++i) text += (i ? " -> " : "") + ring[i];
        if (shown < ring.size()) text += " -> ... (" + std::to_string(ring.size() - 1) + " ops)";
        fail(t.ops[v].loc, "deps",
             "dependency cycle: " + text + " (each op waits for the next; ops on one GPU's stream also wait for "
             "the op before them in the trace), so the trace could never finish");
      }
    }
  }
}

}  // namespace xpusim::trace::detail
