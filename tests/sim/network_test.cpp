// The network between NVLink domains (models/interconnect/fabric.h): a rail-optimised fat tree's
// leaves, its oversubscribed uplinks to the spine, NCCL's PXN, and its errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "helpers.h"
#include "models/interconnect/algorithm.h"
#include "sim/config/config_loader.h"
#include "sim/engine/simulate.h"
#include "sim/trace/trace.h"

using xpusim::testing::d;
using xpusim::testing::error_of;
using xpusim::testing::one_collective;
using xpusim::testing::simulate;
using xpusim::testing::source_path;

namespace {
const std::string kDgxNet = source_path("configs/systems/dgx-h100.yaml");

// Four DGX H100 nodes; a fat tree of two nodes a leaf puts nodes 0-1 and 2-3 on different leaves.
std::vector<std::string> tree(const std::vector<std::string>& more = {}) {
  std::vector<std::string> s{"system.domains=4", "network.topology=fat_tree", "network.domains_per_leaf=2"};
  s.insert(s.end(), more.begin(), more.end());
  return s;
}

double time_of(const std::string& trace, const std::vector<std::string>& sets) {
  return d(simulate(kDgxNet, trace, sets)["ops"][0]["time_s"]);
}

const std::string kDgxA100Net = source_path("configs/systems/dgx-a100.yaml");

YAML::Node one_coll(const std::string& cfg, const std::string& trace, const std::vector<std::string>& sets) {
  return simulate(cfg, trace, sets)["ops"][0];
}
}  // namespace

TEST_CASE("a rail-optimised fat tree without oversubscription runs a ring as the non-blocking network does",
          "[sim][network]") {
  const std::string ar = one_collective("all_reduce", 1073741824.0, ", algorithm: ring");
  const double flat = time_of(ar, {"system.domains=4"});
  // Rings enter and leave each node on one rail (PXN), so only the two leaf boundaries climb
  // to the spine, each one channel's stream of a leaf's 2 NICs' worth of uplink.
  const YAML::Node r = simulate(kDgxNet, ar, tree());
  CHECK(d(r["ops"][0]["time_s"]) == Approx(flat).epsilon(0.01));
  CHECK(r["ops"][0]["bound"].as<std::string>() == "network (NIC) bandwidth");
  // All four nodes on one leaf: the same.
  CHECK(time_of(ar, tree({"network.domains_per_leaf=4"})) == Approx(flat).epsilon(0.01));
}

TEST_CASE("oversubscribed uplinks bind the traffic that climbs to the spine", "[sim][network]") {
  const std::string ar = one_collective("all_reduce", 1073741824.0, ", algorithm: ring");
  const auto cfg = xpusim::config::load_config(kDgxNet, tree({"network.oversubscription=4"}));
  const auto& g = cfg.chip.gpu;
  const double nic = g.nic.bandwidth * g.nic.efficiency;
  // A leaf takes one NIC of each of its 2 nodes; its uplinks carry 2 x nic / 4. Each of the 8
  // rings crosses the spine twice (node 1 -> 2, and 3 -> 0), each crossing on its own leaf's
  // uplink, carrying the ring's 2(n-1)/n x size / 8.
  const double n = 32;
  const double closed = 2 * (n - 1) / n * 1073741824.0 / 8 / (2 * nic / 4);
  const YAML::Node r = simulate(kDgxNet, ar, tree({"network.oversubscription=4"}));
  CHECK(d(r["ops"][0]["time_s"]) == Approx(closed).epsilon(0.03));
  CHECK(r["ops"][0]["bound"].as<std::string>() == "network (spine) bandwidth");
  // The NICs carry what they carried before: the spine only slows them down.
  const YAML::Node flat = simulate(kDgxNet, ar, {"system.domains=4"});
  CHECK(d(r["ops"][0]["collective"]["nic_bytes"]) == Approx(d(flat["ops"][0]["collective"]["nic_bytes"])).epsilon(1e-9));
  // An all-to-all sends three quarters of every GPU's buffer to other nodes, half of it to the
  // other leaf: oversubscription slows it too.
  const std::string a2a = one_collective("all_to_all", 268435456.0);
  CHECK(time_of(a2a, tree({"network.oversubscription=4"})) > 1.5 * time_of(a2a, tree()));
}

TEST_CASE("PXN keeps a send on its rail by way of NVLink, and without it the send climbs to the spine", "[sim][network]") {
  // GPU 0 (node 0, rail 0) to GPU 9 (node 1, rail 1), on one leaf group.
  const std::string small = one_collective("send_recv", 4096, ", devices: [0, 9]");
  const std::vector<std::string> one_group{"network.domains_per_leaf=4"};
  const auto cfg = xpusim::config::load_config(kDgxNet, tree(one_group));
  const double spine = 2 * cfg.chip.gpu.network.switch_latency_s;
  const double nvlink = 2 * cfg.chip.gpu.nvlink.latency_s + cfg.chip.gpu.nvswitch.latency_s;
  const double rail_aligned = time_of(one_collective("send_recv", 4096, ", devices: [0, 8]"), tree(one_group));
  const YAML::Node pxn = simulate(kDgxNet, small, tree(one_group));
  CHECK(d(pxn["ops"][0]["collective"]["nvlink_bytes"]) > 0);  // to GPU 1 first
  const double without = time_of(small, tree({"network.domains_per_leaf=4", "network.pxn=false"}));
  // Without PXN the send crosses the spine (two more switches); with it, an NVLink hop.
  CHECK(without - rail_aligned == Approx(spine).margin(5e-9));
  CHECK(d(pxn["ops"][0]["time_s"]) - rail_aligned > 0.9 * nvlink);
  // The non-blocking network neither climbs nor detours.
  CHECK(time_of(small, {"system.domains=4"}) == Approx(rail_aligned).margin(1e-9));
}

TEST_CASE("a fat tree's parameters are checked against the system", "[sim][network]") {
  CHECK_THAT(error_of([] { xpusim::config::load_config(kDgxNet, tree({"network.rails=3"})); }),
             Catch::Contains("network.rails"));
  CHECK_THAT(error_of([] { xpusim::config::load_config(kDgxNet, tree({"network.oversubscription=0.5"})); }),
             Catch::Contains("network.oversubscription"));
  CHECK_THAT(error_of([] { xpusim::config::load_config(kDgxNet, {"network.topology=fat_tre"}); }),
             Catch::Contains("fat_tree"));
  // A domain's NICs on one leaf (rails = 1): a cross-rail send needs no detour.
  CHECK(error_of([] { xpusim::config::load_config(kDgxNet, tree({"network.rails=1"})); }).empty());
  // The keys that shape a fat tree mean nothing to a non-blocking network: refused, not ignored.
  CHECK_THAT(error_of([] { xpusim::config::load_config(kDgxNet, {"network.oversubscription=4"}); }),
             Catch::Contains("network.oversubscription") && Catch::Contains("network.topology: fat_tree"));
  CHECK(error_of([] { xpusim::config::load_config(kDgxNet, {"network.sharp=true"}); }).empty());
}

TEST_CASE("NCCL's double binary tree: each position an inner node of at most one tree", "[sim][network]") {
  for (int n = 2; n <= 300; ++n) {
    INFO(n << " positions");
    std::vector<int> sends(static_cast<size_t>(n), 0);  // halves a position sends, up and down, over both trees
    int height = 0;
    for (int which = 0; which < 2; ++which) {
      const std::vector<int> parents = xpusim::nccl_tree_parents(n, which);
      int roots = 0;
      for (int p = 0; p < n; ++p) {
        const int up = parents[static_cast<size_t>(p)];
        if (up < 0) {
          ++roots;
          continue;
        }
        REQUIRE(up != p);
        ++sends[static_cast<size_t>(p)];   // its half up to its parent
        ++sends[static_cast<size_t>(up)];  // the parent's half down to it
      }
      CHECK(roots == 1);
      // Children come before their parents in the order a reduction walks.
      std::vector<int> seen(static_cast<size_t>(n), 0);
      for (int p : xpusim::children_first(parents)) {
        if (parents[static_cast<size_t>(p)] >= 0) CHECK(seen[static_cast<size_t>(parents[static_cast<size_t>(p)])] == 0);
        seen[static_cast<size_t>(p)] = 1;
      }
      height = std::max(height, xpusim::tree_height(parents));
    }
    // Every position sends at most 4 halves (2 parts) over both trees: inner in one, a leaf in
    // the other; and the trees are no deeper than log2(n) + 1.
    CHECK(*std::max_element(sends.begin(), sends.end()) <= 4);
    CHECK(height <= static_cast<int>(std::ceil(std::log2(n))) + 1);
  }
  // Within one domain a tree all-reduce walks these trees: 6 GPUs, up and down the deeper one.
  const YAML::Node c = one_coll(kDgxNet, one_collective("all_reduce", 67108864.0, ", algorithm: tree, devices: 0-5"), {})["collective"];
  const int h = std::max(xpusim::tree_height(xpusim::nccl_tree_parents(6, 0)), xpusim::tree_height(xpusim::nccl_tree_parents(6, 1)));
  CHECK(c["dependent_hops"].as<int>() == 2 * h);
}

TEST_CASE("across domains a tree chains each domain's GPUs and joins the domains on a double binary tree",
          "[sim][network]") {
  const double bytes = 268435456.0;
  for (int domains : {2, 4}) {
    INFO(domains << " DGX A100 nodes");
    const YAML::Node op = one_coll(kDgxA100Net, one_collective("all_reduce", bytes, ", algorithm: tree, protocol: simple"),
                                   {"system.domains=" + std::to_string(domains)});
    const YAML::Node c = op["collective"];
    // One pair of trees per GPU of a node (its NIC), each with an eighth of the data: each edge
    // between two nodes carries a tree's share up and down, D - 1 edges a tree.
    CHECK(c["channels"].as<int>() == 8 * (domains > 2 ? 2 : 1));
    const double nd = domains;
    CHECK(d(c["nic_bytes"]) == Approx(2 * (nd - 1) / nd * bytes / 8).epsilon(1e-9));
    // Chains through 8 GPUs up and down, and the trees between nodes (depth 1 over 2, 2 over 4).
    CHECK(c["dependent_hops"].as<int>() == 2 * (7 + (domains > 2 ? 2 : 1)));
  }
  // Two nodes: the NICs carry half what a ring's carry, so the tree is no slower than the ring.
  const std::string big = ", protocol: simple";
  const double tree = d(one_coll(kDgxA100Net, one_collective("all_reduce", 1073741824.0, ", algorithm: tree" + big),
                                 {"system.domains=2"})["time_s"]);
  const double ring = d(one_coll(kDgxA100Net, one_collective("all_reduce", 1073741824.0, ", algorithm: ring" + big),
                                 {"system.domains=2"})["time_s"]);
  CHECK(tree < ring);
}

TEST_CASE("nvls_tree reduces inside each domain by NVLS and carries a GPU's part across domains on a tree",
          "[sim][network]") {
  const double bytes = 268435456.0;
  const std::string t = one_collective("all_reduce", bytes, ", algorithm: nvls_tree");
  for (int domains : {2, 4}) {
    INFO(domains << " DGX H100 nodes");
    const YAML::Node c = one_coll(kDgxNet, t, {"system.domains=" + std::to_string(domains)})["collective"];
    const double nd = domains;
    CHECK(d(c["nic_bytes"]) == Approx(2 * (nd - 1) / nd * bytes / 8).epsilon(1e-9));
    // NVLS inside a node: the slice up and a part down, a part up and the slice down.
    CHECK(d(c["nvlink_bytes"]) == Approx(2 * (1 + 1.0 / 8) * bytes).epsilon(1e-9));
  }
  auto lower = [](const std::string& cfg, const std::string& trace, const std::vector<std::string>& sets) {
    return error_of([&] {
      xpusim::engine::lower_all(xpusim::config::load_config(cfg, sets), xpusim::trace::load_trace(xpusim::testing::temp_file(trace)));
    });
  };
  CHECK_THAT(lower(kDgxNet, t, {}), Catch::Contains("joins NVLink domains"));
  CHECK_THAT(lower(kDgxA100Net, t, {"system.domains=2"}), Catch::Contains("nvswitch.reduction"));
  CHECK_THAT(lower(kDgxNet, one_collective("all_reduce", bytes, ", algorithm: nvls_tree, devices: [0, 1, 8]"), {"system.domains=2"}),
             Catch::Contains("as many of its devices in each NVLink domain"));
  CHECK_THAT(lower(kDgxNet, one_collective("all_gather", bytes, ", algorithm: nvls_tree"), {"system.domains=2"}),
             Catch::Contains("all_reduce only"));
  CHECK_THAT(lower(kDgxNet, one_collective("all_reduce", bytes, ", algorithm: nvls_tree, protocol: ll"), {"system.domains=2"}),
             Catch::Contains("simple protocol only"));
}

TEST_CASE("collnet sends each GPU's part once to the switches that reduce it, and back", "[sim][network]") {
  const double bytes = 1073741824.0;
  const std::string t = one_collective("all_reduce", bytes, ", algorithm: collnet");
  const YAML::Node op = one_coll(kDgxNet, t, {"system.domains=4", "network.sharp=true"});
  const YAML::Node c = op["collective"];
  CHECK(d(c["nic_bytes"]) == Approx(bytes / 8).epsilon(1e-9));  // once, whatever the domains
  // The NICs carry an eighth of the buffer; the NVLS inside each node is what remains, so the
  // all-reduce over four nodes takes what NVLS takes inside one.
  const double inside = d(one_coll(kDgxNet, one_collective("all_reduce", bytes, ", algorithm: nvls"), {})["time_s"]);
  CHECK(d(op["time_s"]) == Approx(inside).epsilon(0.1));
  CHECK(op["bound"].as<std::string>() == "NVLink bandwidth");
  // Leaves of two nodes each: every GPU index's parts climb once a leaf, and the NICs carry the same.
  const YAML::Node climbed = one_coll(kDgxNet, t, tree({"network.sharp=true"}));
  CHECK(d(climbed["collective"]["nic_bytes"]) == Approx(bytes / 8).epsilon(1e-9));
  CHECK(d(climbed["time_s"]) >= d(op["time_s"]));
  // Without NVLS inside a node the parts are scattered and gathered over NVLink (CollNet Direct).
  const YAML::Node direct = one_coll(kDgxA100Net, t, {"system.domains=2", "network.sharp=true"});
  CHECK(d(direct["collective"]["nic_bytes"]) == Approx(bytes / 8).epsilon(1e-9));
  CHECK(d(direct["collective"]["nvlink_bytes"]) == Approx(2 * 2 * 7.0 / 8 * bytes).epsilon(1e-9));
  CHECK_THAT(error_of([&] {
               xpusim::engine::lower_all(xpusim::config::load_config(kDgxNet, {"system.domains=2"}),
                                         xpusim::trace::load_trace(xpusim::testing::temp_file(t)));
             }),
             Catch::Contains("network.sharp"));
}

TEST_CASE("an all-reduce across domains runs what the tuner estimates fastest of ring, tree, nvls_tree and collnet",
          "[sim][network]") {
  // Large: the switches that reduce in the network carry an eighth of what the ring's NICs do.
  const std::string big = one_collective("all_reduce", 1073741824.0);
  CHECK(one_coll(kDgxNet, big, {"system.domains=4", "network.sharp=true"})["collective"]["algorithm"].as<std::string>() ==
        "collnet");
  // Small: a tree's few hops, not a ring's 2(n-1).
  const std::string small = one_collective("all_reduce", 65536.0);
  const std::string algo = one_coll(kDgxA100Net, small, {"system.domains=4"})["collective"]["algorithm"].as<std::string>();
  CHECK(algo == "tree");
  // Whatever the tuner picks, the ring named by the trace runs the ring.
  CHECK(one_coll(kDgxNet, one_collective("all_reduce", 1073741824.0, ", algorithm: ring"), {"system.domains=4", "network.sharp=true"})
            ["collective"]["algorithm"]
                .as<std::string>() == "ring");
}

TEST_CASE("a system of 16384 GPUs runs a collective over its last node and one past 131072 GPUs is refused",
          "[sim][network]") {
  // Llama 3's 405B ran on 16,384 H100s (2,048 DGX-class nodes): the last node's GPUs are devices
  // 16376-16383, and an all-reduce over them crosses NVLink only.
  const std::string ar = one_collective("all_reduce", 67108864.0, ", algorithm: ring, devices: 16376-16383");
  const std::vector<std::string> big{"system.domains=2048", "network.topology=fat_tree"};
  const double last = time_of(ar, big);
  CHECK(last == Approx(time_of(one_collective("all_reduce", 67108864.0, ", algorithm: ring, devices: 0-7"), big)));
  CHECK(last > 0);
  CHECK_THAT(error_of([] { xpusim::config::load_config(kDgxNet, {"system.domains=16385"}); }),
             Catch::Contains("system.domains") && Catch::Contains("[1, 16384]"));
  CHECK_THAT(error_of([] { xpusim::config::load_config(source_path("configs/systems/gb200-nvl72.yaml"), {"system.domains=2000"}); }),
             Catch::Contains("at most 131072 GPUs"));
}

TEST_CASE("a collective's traffic keeps the GPUs it used and not a slot for every GPU below them",
          "[sim][network]") {
  // A data-parallel group's first and last GPUs of a 16,384-GPU system: booked a slot per index,
  // then compacted to its two GPUs, in order, with their bytes summed.
  xpusim::PerIndex v;
  v.add(16383, 2.0);
  v.add(0, 1.0);
  v.add(16383, 3.0);
  int slots = 0;
  v.for_each([&](int, double) { ++slots; });
  CHECK(slots == 16384);
  v.compact();
  std::vector<std::pair<int, double>> seen;
  v.for_each([&](int i, double b) { seen.emplace_back(i, b); });
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == std::make_pair(0, 1.0));
  CHECK(seen[1] == std::make_pair(16383, 5.0));
}
