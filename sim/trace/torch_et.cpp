// PyTorch's execution trace (torch.profiler.ExecutionTraceObserver): a JSON object with "schema"
// and "nodes", each node an operator call with its id, name, parent ("ctrl_deps", or "parent" in
// older schemas) and its inputs' and outputs' values, shapes and types. The outermost operator
// xpusim knows in each subtree becomes an op (aten::linear, not the aten::t and aten::mm it
// calls); ops run in call order on one GPU's stream.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/config/limits.h"
#include "sim/config/yaml_util.h"
#include "sim/io/log.h"
#include "sim/io/json_strict.h"
#include "sim/trace/aten.h"
#include "sim/trace/chakra.h"

namespace xpusim::trace {
namespace {

using nlohmann::json;

struct Node {
  int64_t id = 0, parent = -1;
  std::string name;
  aten::Io in, out;
  std::vector<size_t> children;
};

std::string text(const Node& n) { return "node " + std::to_string(n.id) + " '" + n.name + "'"; }

aten::Io io_of(const std::string& file, const Node& n, const json& j, const char* key) {
  aten::Io io;
  if (!j.contains(key)) return io;
  const json& x = j[key];
  auto bad = [&](const std::string& why) { throw UserError(file + ": " + text(n) + ": '" + key + "' " + why); };
  if (!x.is_object()) bad("must be an object with values, shapes and types");
  if (x.contains("shapes")) {
    if (!x["shapes"].is_array()) bad("shapes must be a list");
    for (const json& s : x["shapes"]) {
      std::vector<int64_t> shape;
      if (s.is_array())
        for (const json& d : s) {
          if (d.is_array()) {  // a list of tensors: no one shape
            shape.clear();
            break;
          }
          if (!d.is_number_integer()) bad("shapes hold " + d.dump() + ", not a whole number");
          shape.push_back(d.get<int64_t>());
        }
      io.shapes.push_back(shape);
    }
  }
  if (x.contains("types")) {
    if (!x["types"].is_array()) bad("types must be a list");
    for (const json& s : x["types"]) {
      if (!s.is_string()) bad("types hold " + s.dump() + ", not a type name");
      io.types.push_back(s.get<std::string>());
    }
  }
  if (x.contains("values")) {
    if (!x["values"].is_array()) bad("values must be a list");
    for (const json& v : x["values"]) io.values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  return io;
}

}  // namespace

bool is_torch_et(const std::string& path) {
  if (path.size() < 5 || path.substr(path.size() - 5) != ".json") return false;
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find("\"nodes\"") != std::string::npos && head.find("\"schema\"") != std::string::npos;
}

Trace load_torch_et(const std::string& path) {
  const std::string data = read_input_file(path);
  io::check_strict_json(data, path, 1);
  const json root = json::parse(data);
  if (!root.is_object() || !root.contains("nodes") || !root["nodes"].is_array())
    throw UserError(path + ": not a PyTorch execution trace (an object with a list of \"nodes\")");
  // The schema names the format: "1.0.4-chakra.0.0.4" and the like, as PyTorch 2.x writes it
  // (major version 1); another major version may mean something else by the same keys.
  if (!root.contains("schema") || !root["schema"].is_string() || root["schema"].get<std::string>().rfind("1.", 0) != 0)
    throw UserError(path + ": schema " + (root.contains("schema") ? root["schema"].dump() : std::string("(none)")) +
                    " is not a PyTorch execution-trace schema xpusim reads (1.x, e.g. \"1.0.4-chakra.0.0.4\")");
  const json& list = root["nodes"];
  if (list.size() > static_cast<size_t>(limits::current().ops))
    throw UserError(path + ": more than " + std::to_string(limits::current().ops) + " nodes (the ops limit; --limit ops=N)");
  std::vector<Node> nodes;
  std::map<int64_t, size_t> by_id;
  for (size_t k = 0; k < list.size(); ++k) {
    const json& j = list[k];
    if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer() || !j.contains("name") || !j["name"].is_string())
      throw UserError(path + ": nodes[" + std::to_string(k) + "]: a node needs an integer \"id\" and a string \"name\"");
    Node n;
    n.id = j["id"].get<int64_t>();
    n.name = j["name"].get<std::string>();
    if (const std::string why = name_problem(n.name, "a node name"); !why.empty())
      throw UserError(path + ": node " + std::to_string(n.id) + ": " + why);
    for (const char* key : {"ctrl_deps", "parent"})
      if (j.contains(key)) {
        if (!j[key].is_number_integer() || j[key].get<int64_t>() < 0)
          throw UserError(path + ": " + text(n) + ": '" + key + "' must be a node id (0 for none), not " + j[key].dump());
        n.parent = j[key].get<int64_t>();
      }
    n.in = io_of(path, n, j, "inputs");
    n.out = io_of(path, n, j, "outputs");
    if (!by_id.emplace(n.id, nodes.size()).second)
      throw UserError(path + ": " + text(n) + ": id " + std::to_string(n.id) + " appears twice (first as " + text(nodes[by_id[n.id]]) + ")");
    nodes.push_back(std::move(n));
  }
  // The call tree; a parent chain that comes back to a node is a cycle.
  std::vector<size_t> roots;
  std::vector<long> up(nodes.size(), -1);  // each node's parent, -1 for a root
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto it = by_id.find(nodes[i].parent);
    // A root has no parent (0) or, for the process node PyTorch writes last, itself.
    const bool self = nodes[i].parent == nodes[i].id;
    if (self && nodes[i].name != "[pytorch|profiler|execution_trace|process]")
      throw UserError(path + ": a cycle in the call tree: " + text(nodes[i]) + " is its own parent (only the process "
                      "node, '[pytorch|profiler|execution_trace|process]', may be)");
    const bool none = nodes[i].parent == 0 && it == by_id.end();  // 0: no parent (unless a node has id 0)
    if (!self && !none && it == by_id.end())
      throw UserError(path + ": " + text(nodes[i]) + ": its parent, node " + std::to_string(nodes[i].parent) +
                      ", is not in the file");
    if (self || none) {
      roots.push_back(i);
    } else {
      up[i] = static_cast<long>(it->second);
      nodes[it->second].children.push_back(i);
    }
  }
  std::vector<char> state(nodes.size(), 0);  // 0 unvisited, 1 on the chain being followed, 2 done
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<size_t> chain;
    size_t u = i;
    while (state[u] == 0) {
      state[u] = 1;
      chain.push_back(u);
      if (up[u] < 0) break;
      u = static_cast<size_t>(up[u]);
    }
    if (state[u] == 1 && up[u] >= 0) {  // came back to a node of this chain, not stopped at a root
      std::string cycle;
      for (size_t k = static_cast<size_t>(std::find(chain.begin(), chain.end(), u) - chain.begin()); k < chain.size(); ++k)
        cycle += text(nodes[chain[k]]) + " -> ";
      throw UserError(path + ": a cycle in the call tree: " + cycle + text(nodes[u]) + " (each node's parent is the next)");
    }
    for (size_t c : chain) state[c] = 2;
  }
  auto by_call = [&](size_t a, size_t b) { return nodes[a].id < nodes[b].id; };
  std::sort(roots.begin(), roots.end(), by_call);
  for (Node& n : nodes) std::sort(n.children.begin(), n.children.end(), by_call);

  Trace t;
  t.file = path;
  t.name = std::filesystem::path(path).stem().string();
  t.description = "PyTorch execution trace (" + (root.contains("schema") && root["schema"].is_string() ? root["schema"].get<std::string>()
                                                                                                      : std::string("schema not given")) + ")";
  std::map<std::string, int> unknown;
  int views = 0;
  std::vector<size_t> stack(roots.rbegin(), roots.rend());  // depth first, in call order
  while (!stack.empty()) {
    const Node& n = nodes[stack.back()];
    stack.pop_back();
    aten::Mapped x;
    try {
      x = aten::map_op(n.name, n.in, n.out);
    } catch (const UserError& e) {
      throw UserError(path + ": " + text(n) + ": " + e.what());
    }
    if (x.verdict == aten::Verdict::op) {  // its callees are its own kernels
      Op op = x.op;
      op.name = n.name + "#" + std::to_string(n.id);
      op.loc = SourceLoc{path, 0, 0};
      t.ops.push_back(std::move(op));
      continue;
    }
    if (!n.children.empty() && x.verdict != aten::Verdict::view) {
      for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) stack.push_back(*it);
      continue;
    }
    if (x.verdict == aten::Verdict::unknown) ++unknown[n.name];
    else ++views;
  }
  if (t.ops.empty()) throw UserError(path + ": no operator xpusim can simulate (" + std::to_string(nodes.size()) + " nodes)");
  if (!unknown.empty()) {
    std::string names_list;
    int n = 0;
    for (const auto& [name, k] : unknown) n += k, names_list += (names_list.empty() ? "" : ", ") + name + " (" + std::to_string(k) + ")";
    log::warn(path + ": " + std::to_string(n) + " operator" + (n == 1 ? "" : "s") +
              " xpusim does not model left out (the execution trace records no durations to keep as gaps): " + names_list);
  }
  if (views) log::info(path + ": " + std::to_string(views) + " view or metadata operators (no device work) not simulated");
  return t;
}

}  // namespace xpusim::trace
