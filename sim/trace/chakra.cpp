#include "sim/trace/chakra.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <queue>
#include <regex>
#include <set>
#include <sstream>

#include "sim/config/limits.h"
#include "sim/config/yaml_util.h"
#include "sim/io/log.h"
#include "sim/trace/aten.h"
#include "sim/trace/chakra_et.pb.h"

namespace xpusim::trace {
namespace {

namespace pb = xpusim::chakra;
namespace fs = std::filesystem;

// The ops and counts that an execution trace's reader builds, whatever the format.
struct Counts {
  std::map<std::string, int> gaps;  // kept as timed gaps, by operator name
  int views = 0, host = 0, single_rank_collectives = 0;
};

void warn_counts(const std::string& file, const Counts& c) {
  if (!c.gaps.empty()) {
    int n = 0;
    std::vector<std::pair<int, std::string>> by;
    for (const auto& [name, k] : c.gaps) n += k, by.emplace_back(-k, name);
    std::sort(by.begin(), by.end());
    std::string list;
    for (size_t i = 0; i < by.size() && i < 8; ++i) list += (i ? ", " : "") + by[i].second + " (" + std::to_string(-by[i].first) + ")";
    if (by.size() > 8) list += ", ...";
    log::warn(file + ": " + std::to_string(n) + " node" + (n == 1 ? "" : "s") + " of " + std::to_string(by.size()) + " kind" +
              (by.size() == 1 ? "" : "s") + " xpusim does not model " + (n == 1 ? "is" : "are") +
              " kept as timed gaps of their recorded duration: " + list);
  }
  if (c.views || c.host || c.single_rank_collectives)
    log::info(file + ": not simulated: " + std::to_string(c.views) + " view or metadata operators (no device work), " +
              std::to_string(c.host) + " host (CPU) operators whose kernels are nodes of their own, " +
              std::to_string(c.single_rank_collectives) + " collectives over a single rank");
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// ---------------------------------------------------------------------------------------------
// Chakra

struct RankFile {
  int rank = 0;
  std::string file;
  std::vector<pb::Node> nodes;
  std::map<uint64_t, size_t> by_id;
  bool has_gpu_nodes = false;
};

std::string node_text(const RankFile& r, size_t i) {
  return "node " + std::to_string(r.nodes[i].id()) + " " + quoted(r.nodes[i].name());
}

[[noreturn]] void node_fail(const RankFile& r, size_t i, const std::string& why) {
  throw UserError(r.file + ": " + node_text(r, i) + ": " + why);
}

const pb::AttributeProto* attr(const pb::Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<int64_t> int_attr(const pb::Node& n, const std::string& name) {
  const pb::AttributeProto* a = attr(n, name);
  if (!a) return std::nullopt;
  switch (a->value_case()) {
    case pb::AttributeProto::kInt32Val: return a->int32_val();
    case pb::AttributeProto::kInt64Val: return a->int64_val();
    case pb::AttributeProto::kUint32Val: return static_cast<int64_t>(a->uint32_val());
    case pb::AttributeProto::kUint64Val:
      if (a->uint64_val() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(a->uint64_val());
    case pb::AttributeProto::kSint32Val: return a->sint32_val();
    case pb::AttributeProto::kSint64Val: return a->sint64_val();
    default: return std::nullopt;
  }
}

bool bool_attr(const pb::Node& n, const std::string& name) {
  const pb::AttributeProto* a = attr(n, name);
  return a && a->value_case() == pb::AttributeProto::kBoolVal && a->bool_val();
}

std::string string_attr(const pb::Node& n, const std::string& name) {
  const pb::AttributeProto* a = attr(n, name);
  return a && a->value_case() == pb::AttributeProto::kStringVal ? a->string_val() : std::string();
}

// A required integer attribute, at least `lo`.
int64_t need_int(const RankFile& r, size_t i, const std::string& name, int64_t lo) {
  const pb::AttributeProto* a = attr(r.nodes[i], name);
  if (!a) node_fail(r, i, "a " + pb::NodeType_Name(r.nodes[i].type()) + " needs the attribute '" + name + "'");
  const auto v = int_attr(r.nodes[i], name);
  if (!v) node_fail(r, i, "attribute '" + name + "' must be an integer");
  if (*v < lo) node_fail(r, i, "attribute '" + name + "' is " + std::to_string(*v) + "; it must be at least " + std::to_string(lo));
  return *v;
}

RankFile read_rank(const std::string& path, int rank) {
  // libprotobuf would log its own line (a string field's invalid UTF-8) before our error: the
  // error says it, once.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  const std::string data = read_input_file(path);
  if (data.empty()) throw UserError(path + ": file is empty (a Chakra trace starts with its GlobalMetadata)");
  RankFile r;
  r.rank = rank;
  r.file = path;
  google::protobuf::io::ArrayInputStream raw(data.data(), static_cast<int>(data.size()));
  google::protobuf::io::CodedInputStream cis(&raw);
  cis.SetTotalBytesLimit(static_cast<int>(std::min<size_t>(data.size() + 16, INT32_MAX)));
  // What the message about to be read follows, for errors: "after node 12 'aten::mm'".
  auto where = [&]() {
    return r.nodes.empty() ? std::string("the first node") : "the message after " + node_text(r, r.nodes.size() - 1);
  };
  bool metadata = false;
  while (static_cast<size_t>(cis.CurrentPosition()) < data.size()) {
    const size_t at = static_cast<size_t>(cis.CurrentPosition());
    uint64_t len = 0;  // read whole: a corrupt length of 2^32 + n is not n
    if (!cis.ReadVarint64(&len))
      throw UserError(path + ": byte " + std::to_string(at) + ": cut short in the length of " +
                      (metadata ? where() : std::string("the GlobalMetadata")) + " (a truncated or corrupt file)");
    const size_t left = data.size() - static_cast<size_t>(cis.CurrentPosition());
    if (len > left)
      throw UserError(path + ": byte " + std::to_string(at) + ": " + (metadata ? where() : std::string("the GlobalMetadata")) +
                      " is " + std::to_string(len) + " bytes long but the file ends " + std::to_string(left) +
                      " bytes on (a truncated file)");
    const auto limit = cis.PushLimit(static_cast<int>(len));
    if (!metadata) {
      pb::GlobalMetadata m;
      if (!m.ParseFromCodedStream(&cis) || !cis.ConsumedEntireMessage())
        throw UserError(path + ": byte " + std::to_string(at) + ": not a Chakra GlobalMetadata message (a corrupt file, or not a .et file)");
      metadata = true;
    } else {
      pb::Node n;
      if (!n.ParseFromCodedStream(&cis) || !cis.ConsumedEntireMessage())
        throw UserError(path + ": byte " + std::to_string(at) + ": " + where() + " is not a Chakra Node message (a corrupt file)");
      r.nodes.push_back(std::move(n));
      if (r.nodes.size() > static_cast<size_t>(limits::current().ops))
        throw UserError(path + ": more than " + std::to_string(limits::current().ops) + " nodes (the ops limit; --limit ops=N)");
    }
    cis.PopLimit(limit);
  }
  if (!metadata) throw UserError(path + ": no GlobalMetadata (not a Chakra trace)");
  if (r.nodes.empty()) throw UserError(path + ": no nodes after the GlobalMetadata (an execution trace with nothing in it)");
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const pb::Node& n = r.nodes[i];
    if (const std::string why = name_problem(n.name(), "a node name"); !why.empty())
      throw UserError(path + ": node " + std::to_string(n.id()) + ": " + why);
    if (!r.by_id.emplace(n.id(), i).second)
      node_fail(r, i, "node id " + std::to_string(n.id()) + " appears twice (first as " + node_text(r, r.by_id[n.id()]) + ")");
    if (!pb::NodeType_IsValid(n.type()) || n.type() == pb::INVALID_NODE)
      node_fail(r, i, "node type " + std::to_string(static_cast<int>(n.type())) + " is not one Chakra defines (1 METADATA_NODE to " +
                          "10 CHECKPOINT_NODE)");
    if (n.type() == pb::COMP_NODE && !bool_attr(n, "is_cpu_op")) r.has_gpu_nodes = true;
  }
  return r;
}

aten::Io io_of(const RankFile& r, size_t i, const pb::IOInfo& x) {
  aten::Io io;
  try {
    io.shapes = aten::parse_shapes(x.shapes());
    io.types = aten::parse_list(x.types());
    io.values = aten::parse_list(x.values());
  } catch (const UserError& e) {
    node_fail(r, i, e.what());
  }
  return io;
}

// A unit of the merged graph: an op on one rank, or a collective or transfer joining several.
struct Unit {
  Op op;
  std::vector<std::pair<int, size_t>> members;  // (rank, node index)
  std::pair<size_t, int> order;                 // (node index, rank) of the first member: emission order
};

// The xpusim collective a Chakra comm_type is, or nullopt for one xpusim does not simulate.
std::optional<OpKind> collective_kind(int64_t type) {
  switch (type) {
    case pb::ALL_REDUCE: return OpKind::all_reduce;
    case pb::ALL_GATHER: return OpKind::all_gather;
    case pb::REDUCE_SCATTER: return OpKind::reduce_scatter;
    case pb::ALL_TO_ALL: return OpKind::all_to_all;
    case pb::BROADCAST: return OpKind::broadcast;
    default: return std::nullopt;
  }
}

// <prefix>.<rank>.et
const std::regex& chakra_name() {
  static const std::regex kName(R"(^(.*)\.([0-9]+)\.et$)");
  return kName;
}

}  // namespace

bool is_chakra_path(const std::string& path) { return std::regex_match(path, chakra_name()); }

Trace load_chakra(const std::string& path) {
  std::smatch m;
  if (!std::regex_match(path, m, chakra_name())) throw UserError(path + ": a Chakra trace is named <prefix>.<rank>.et");
  const std::string prefix = m[1];
  // Every rank's file: <prefix>.0.et, <prefix>.1.et, ... with no gap.
  std::vector<RankFile> ranks;
  for (int r = 0;; ++r) {
    const std::string f = prefix + "." + std::to_string(r) + ".et";
    if (file_problem(f) == "does not exist") break;
    if (r > 4095) throw UserError(path + ": more than 4096 ranks");
    ranks.push_back(read_rank(f, r));
  }
  if (ranks.empty()) throw UserError(prefix + ".0.et: does not exist (a Chakra trace's ranks are numbered from 0)");
  {
    const fs::path dir = fs::path(prefix).parent_path().empty() ? fs::path(".") : fs::path(prefix).parent_path();
    const std::string stem = fs::path(prefix).filename().string() + ".";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      std::smatch k;
      static const std::regex kRank(R"(^([0-9]+)\.et$)");
      const std::string tail = n.rfind(stem, 0) == 0 ? n.substr(stem.size()) : "";
      if (std::regex_match(tail, k, kRank) && std::stoll(k[1]) >= static_cast<long long>(ranks.size()))
        throw UserError(e.path().string() + ": rank " + k[1].str() + "'s file is here but rank " + std::to_string(ranks.size()) +
                        "'s (" + prefix + "." + std::to_string(ranks.size()) + ".et) is missing");
    }
  }
  const bool multi = ranks.size() > 1;

  Counts counts;
  std::vector<Unit> units;
  std::vector<std::vector<long>> unit_of(ranks.size());  // per rank, per node: its unit, or -1 (skipped)
  // Collectives per process group and rank, and transfers per (sender, receiver), in file order.
  std::map<std::string, std::map<int, std::vector<size_t>>> groups;
  std::map<std::pair<int, int>, std::vector<size_t>> sends, recvs;
  auto add_unit = [&](Op op, int rank, size_t i) {
    Unit u;
    u.op = std::move(op);
    u.members = {{rank, i}};
    u.order = {i, rank};
    units.push_back(std::move(u));
    return static_cast<long>(units.size() - 1);
  };
  auto op_name = [&](const RankFile& r, size_t i) {
    return (multi ? "r" + std::to_string(r.rank) + ":" : std::string()) + r.nodes[i].name() + "#" + std::to_string(r.nodes[i].id());
  };
  auto gap = [&](const RankFile& r, size_t i) {
    Op o;
    o.kind = OpKind::delay;
    o.duration_s = static_cast<double>(r.nodes[i].duration_micros()) * 1e-6;
    if (o.duration_s > 3600) node_fail(r, i, "a duration of " + std::to_string(r.nodes[i].duration_micros()) + " us (more than an hour)");
    ++counts.gaps[r.nodes[i].name()];
    return o;
  };
  for (const RankFile& r : ranks) {
    std::vector<long>& uo = unit_of[static_cast<size_t>(r.rank)];
    uo.assign(r.nodes.size(), -1);
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      const pb::Node& n = r.nodes[i];
      Op op;
      switch (n.type()) {
        case pb::METADATA_NODE: continue;
        case pb::COMP_NODE: {
          if (bool_attr(n, "is_cpu_op") && r.has_gpu_nodes) {  // the kernels it launched are nodes of their own
            ++counts.host;
            continue;
          }
          aten::Mapped x;
          try {
            x = aten::map_op(n.name(), io_of(r, i, n.inputs()), io_of(r, i, n.outputs()));
          } catch (const UserError& e) {
            node_fail(r, i, e.what());
          }
          // A graph node is one kernel or operator: a name that is not an aten operator (a kernel's,
          // "indexSelectLargeIndex") is work xpusim does not model, not a scope to look inside.
          if (x.verdict == aten::Verdict::container && n.name().rfind("aten::", 0) != 0) x.verdict = aten::Verdict::unknown;
          if (x.verdict == aten::Verdict::view || x.verdict == aten::Verdict::container) {
            ++counts.views;
            continue;
          }
          op = x.verdict == aten::Verdict::op ? x.op : gap(r, i);
          break;
        }
        case pb::COMM_COLL_NODE: {
          const int64_t type = need_int(r, i, "comm_type", 0);
          const int64_t bytes = need_int(r, i, "comm_size", 0);
          if (static_cast<double>(bytes) > kMaxCollectiveBytes) node_fail(r, i, "comm_size is more than 1024 TiB");
          if (type > INT32_MAX || !pb::CollectiveCommType_IsValid(static_cast<int>(type)))
            node_fail(r, i, "comm_type " + std::to_string(type) + " is not one Chakra defines (0 ALL_REDUCE to 9 BARRIER)");
          if (!collective_kind(type)) {
            op = gap(r, i);
            break;
          }
          groups[string_attr(n, "pg_name")][r.rank].push_back(i);
          continue;  // joined across ranks below
        }
        case pb::COMM_SEND_NODE:
        case pb::COMM_RECV_NODE: {
          const bool send = n.type() == pb::COMM_SEND_NODE;
          const int64_t peer = need_int(r, i, send ? "comm_dst" : "comm_src", 0);
          need_int(r, i, "comm_size", 0);
          if (peer >= static_cast<int64_t>(ranks.size()))
            node_fail(r, i, (send ? "comm_dst " : "comm_src ") + std::to_string(peer) + " is a rank the trace has no file for (" +
                                std::to_string(ranks.size()) + " ranks)");
          if (peer == r.rank) node_fail(r, i, "a transfer to its own rank");
          (send ? sends : recvs)[send ? std::pair<int, int>{r.rank, static_cast<int>(peer)} : std::pair<int, int>{static_cast<int>(peer), r.rank}]
              .push_back(i);
          continue;
        }
        default:  // memory, storage, batch and checkpoint nodes: timed gaps
          op = gap(r, i);
          break;
      }
      op.name = op_name(r, i);
      op.devices = {r.rank};
      op.stream = 0;
      uo[i] = add_unit(std::move(op), r.rank, i);
    }
  }
  // A process group's k-th collective on each member rank is one collective.
  for (const auto& [pg, members] : groups) {
    size_t count = 0;
    int most = members.begin()->first;
    for (const auto& [rank, list] : members)
      if (list.size() > count) count = list.size(), most = rank;
    for (const auto& [rank, list] : members)
      if (list.size() != count) {
        const RankFile& big = ranks[static_cast<size_t>(most)];
        throw UserError(ranks[static_cast<size_t>(rank)].file + ": rank " + std::to_string(rank) + " has " + std::to_string(list.size()) +
                        (list.size() == 1 ? " collective" : " collectives") + " in process group " + quoted(pg) + " but rank " + std::to_string(most) + " has " +
                        std::to_string(count) + "; nothing matches " + node_text(big, members.at(most)[list.size()]) +
                        " of rank " + std::to_string(most) + " (the ranks' traces do not belong together)");
      }
    for (size_t k = 0; k < count; ++k) {
      const auto& [r0, l0] = *members.begin();
      const RankFile& first = ranks[static_cast<size_t>(r0)];
      const pb::Node& n0 = first.nodes[l0[k]];
      Op op;
      op.kind = *collective_kind(*int_attr(n0, "comm_type"));
      op.bytes = static_cast<double>(*int_attr(n0, "comm_size"));
      op.name = n0.name() + "#" + std::to_string(n0.id()) + (pg.empty() ? "" : "@" + pg);
      op.stream = 1;
      op.devices.clear();
      Unit u;
      u.order = {l0[k], r0};
      for (const auto& [rank, list] : members) {
        const RankFile& rf = ranks[static_cast<size_t>(rank)];
        const pb::Node& n = rf.nodes[list[k]];
        if (*int_attr(n, "comm_type") != *int_attr(n0, "comm_type") || *int_attr(n, "comm_size") != *int_attr(n0, "comm_size"))
          node_fail(rf, list[k], "collective " + std::to_string(k + 1) + " of process group " + quoted(pg) + " here is comm_type " +
                                     std::to_string(*int_attr(n, "comm_type")) + " of " + std::to_string(*int_attr(n, "comm_size")) +
                                     " bytes, but on rank " + std::to_string(r0) + " (" + node_text(first, l0[k]) + ") comm_type " +
                                     std::to_string(*int_attr(n0, "comm_type")) + " of " + std::to_string(*int_attr(n0, "comm_size")) + " bytes");
        op.devices.push_back(rank);
        u.members.emplace_back(rank, list[k]);
        u.order = std::min(u.order, std::pair<size_t, int>{list[k], rank});
      }
      if (op.devices.size() < 2) {  // one rank: nothing crosses a link
        ++counts.single_rank_collectives;
        op.kind = OpKind::delay;
        op.duration_s = 0;
        op.stream = 0;
      }
      u.op = op;
      units.push_back(u);
      for (const auto& [rank, i] : units.back().members) unit_of[static_cast<size_t>(rank)][i] = static_cast<long>(units.size() - 1);
    }
  }
  // A sender's k-th transfer to a rank is that rank's k-th receive from it.
  for (const auto& [pair, list] : sends) {
    const auto it = recvs.find(pair);
    const size_t got = it == recvs.end() ? 0 : it->second.size();
    const RankFile& s = ranks[static_cast<size_t>(pair.first)];
    const RankFile& d = ranks[static_cast<size_t>(pair.second)];
    if (got != list.size()) {
      if (got < list.size())
        node_fail(s, list[got], "a send to rank " + std::to_string(pair.second) + " that no receive in " + d.file + " matches");
      node_fail(d, it->second[list.size()], "a receive from rank " + std::to_string(pair.first) + " that no send in " + s.file + " matches");
    }
    for (size_t k = 0; k < list.size(); ++k) {
      const pb::Node& sn = s.nodes[list[k]];
      const pb::Node& rn = d.nodes[it->second[k]];
      if (*int_attr(sn, "comm_size") != *int_attr(rn, "comm_size"))
        node_fail(d, it->second[k], "receives " + std::to_string(*int_attr(rn, "comm_size")) + " bytes but " + node_text(s, list[k]) +
                                        " of rank " + std::to_string(pair.first) + " sends " + std::to_string(*int_attr(sn, "comm_size")));
      Op op;
      op.kind = OpKind::send_recv;
      op.bytes = static_cast<double>(*int_attr(sn, "comm_size"));
      op.devices = {pair.first, pair.second};
      op.stream = 1;
      op.name = "r" + std::to_string(pair.first) + ":" + sn.name() + "#" + std::to_string(sn.id());
      Unit u;
      u.op = op;
      u.members = {{pair.first, list[k]}, {pair.second, it->second[k]}};
      u.order = std::min(std::pair<size_t, int>{list[k], pair.first}, std::pair<size_t, int>{it->second[k], pair.second});
      units.push_back(u);
      unit_of[static_cast<size_t>(pair.first)][list[k]] = static_cast<long>(units.size() - 1);
      unit_of[static_cast<size_t>(pair.second)][it->second[k]] = static_cast<long>(units.size() - 1);
    }
  }
  for (const auto& [pair, list] : recvs)
    if (!sends.count(pair))
      node_fail(ranks[static_cast<size_t>(pair.second)], list[0],
                "a receive from rank " + std::to_string(pair.first) + " that no send in " + ranks[static_cast<size_t>(pair.first)].file + " matches");

  // Each unit's dependencies: the units of the nodes its members depend on, through skipped nodes.
  auto dep_nodes = [&](const RankFile& r, size_t i) {  // node i's ctrl_deps and data_deps, as node indices
    std::vector<size_t> out;
    for (const auto* list : {&r.nodes[i].ctrl_deps(), &r.nodes[i].data_deps()})
      for (uint64_t d : *list) {
        const auto it = r.by_id.find(d);
        if (it == r.by_id.end()) node_fail(r, i, "depends on node " + std::to_string(d) + ", which " + r.file + " does not have");
        out.push_back(it->second);
      }
    return out;
  };
  std::vector<std::vector<std::set<long>>> resolved(ranks.size());
  std::vector<std::vector<char>> state(ranks.size());  // 0 new, 1 its dependencies being resolved, 2 done
  for (const RankFile& r : ranks) resolved[static_cast<size_t>(r.rank)].resize(r.nodes.size()), state[static_cast<size_t>(r.rank)].assign(r.nodes.size(), 0);
  // The units that a node's dependents wait for: its own unit, or (a skipped node) what it waits
  // for. Depth first with a stack of its own: a chain of a million views must not use the call stack.
  auto reached = [&](const RankFile& r, size_t start) -> const std::set<long>& {
    auto& st = state[static_cast<size_t>(r.rank)];
    auto& out = resolved[static_cast<size_t>(r.rank)];
    std::vector<size_t> stack{start};
    while (!stack.empty()) {
      const size_t i = stack.back();
      if (st[i] == 2) {
        stack.pop_back();
        continue;
      }
      if (const long u = unit_of[static_cast<size_t>(r.rank)][i]; u >= 0) {
        out[i] = {u}, st[i] = 2;
        stack.pop_back();
        continue;
      }
      if (st[i] == 0) {  // first its dependencies; the nodes marked 1 are the path to this one
        st[i] = 1;
        for (size_t d : dep_nodes(r, i)) {
          if (st[d] == 1) node_fail(r, d, "dependency cycle through skipped nodes (views, host operators) back to " + node_text(r, d));
          if (st[d] == 0) stack.push_back(d);
        }
        continue;
      }
      for (size_t d : dep_nodes(r, i)) out[i].insert(out[d].begin(), out[d].end());
      st[i] = 2;
      stack.pop_back();
    }
    return out[start];
  };
  std::vector<std::set<long>> deps(units.size());
  for (size_t u = 0; u < units.size(); ++u)
    for (const auto& [rank, i] : units[u].members) {
      const RankFile& r = ranks[static_cast<size_t>(rank)];
      for (size_t d : dep_nodes(r, i))
        for (long v : reached(r, d))
          if (v != static_cast<long>(u)) deps[u].insert(v);
          else node_fail(r, i, "depends on itself (through node " + std::to_string(r.nodes[d].id()) + ")");
    }

  // Emit in dependency order (earliest node position first); a cycle is named node by node.
  std::vector<int> waiting(units.size(), 0);
  std::vector<std::vector<size_t>> dependents(units.size());
  for (size_t u = 0; u < units.size(); ++u)
    for (long v : deps[u]) ++waiting[u], dependents[static_cast<size_t>(v)].push_back(u);
  using Key = std::pair<std::pair<size_t, int>, size_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  for (size_t u = 0; u < units.size(); ++u)
    if (!waiting[u]) ready.push({units[u].order, u});
  std::vector<long> index(units.size(), -1);
  Trace t;
  t.file = path;
  t.name = fs::path(prefix).filename().string();
  t.description = "Chakra execution trace of " + std::to_string(ranks.size()) + " rank" + (multi ? "s" : "") + " (" + prefix + ".*.et)";
  std::set<std::string> names;
  while (!ready.empty()) {
    const size_t u = ready.top().second;
    ready.pop();
    Op op = units[u].op;
    for (long v : deps[u]) op.deps.push_back(static_cast<size_t>(index[static_cast<size_t>(v)]));
    std::sort(op.deps.begin(), op.deps.end());
    const auto& [rank, i] = units[u].members.front();
    op.loc = SourceLoc{ranks[static_cast<size_t>(rank)].file, 0, 0};
    for (int k = 2; !names.insert(op.name).second; ++k) op.name = units[u].op.name + "~" + std::to_string(k);
    index[u] = static_cast<long>(t.ops.size());
    t.ops.push_back(std::move(op));
    for (size_t w : dependents[u])
      if (--waiting[w] == 0) ready.push({units[w].order, w});
  }
  if (t.ops.size() < units.size()) {
    size_t u = 0;
    while (index[u] >= 0) ++u;
    std::vector<size_t> path_units;
    std::map<size_t, size_t> seen;
    while (!seen.count(u)) {
      seen[u] = path_units.size();
      path_units.push_back(u);
      for (long v : deps[u])
        if (index[static_cast<size_t>(v)] < 0) {
          u = static_cast<size_t>(v);
          break;
        }
    }
    std::string cycle;
    for (size_t k = seen[u]; k < path_units.size(); ++k) {
      const auto& [rank, i] = units[path_units[k]].members.front();
      cycle += node_text(ranks[static_cast<size_t>(rank)], i) + (multi ? " (rank " + std::to_string(rank) + ")" : "") + " -> ";
    }
    const auto& [rank, i] = units[u].members.front();
    throw UserError(ranks[static_cast<size_t>(rank)].file + ": dependency cycle: " + cycle + node_text(ranks[static_cast<size_t>(rank)], i) +
                    " (each waits for the next), so the trace could never finish");
  }
  warn_counts(path, counts);
  return t;
}

}  // namespace xpusim::trace
