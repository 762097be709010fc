#pragma once
// The collectives' kinds, algorithms and protocols, and the names traces and reports give them:
// what a trace may name, without the fabric behind them.
#include <string>
#include <utility>
#include <vector>

namespace xpusim {

enum class CollectiveKind { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
// one_shot and two_shot are a serving runtime's own all-reduce kernels rather than NCCL's
// (p2p_all_reduce.h); `automatic` never picks them: a trace names them. nvls_tree and collnet
// join NVLink domains (hierarchical.h).
enum class CollectiveAlgo { automatic, ring, tree, nvls, direct, one_shot, two_shot, nvls_tree, collnet };
enum class CollectiveProto { automatic, ll, ll128, simple };

// Every algorithm with its name ("auto" first), in the order traces list them.
const std::vector<std::pair<CollectiveAlgo, std::string>>& collective_algo_names();
const char* collective_algo_name(CollectiveAlgo a);
// The algorithm a name stands for; `automatic` for "auto" or a name not in the list.
CollectiveAlgo collective_algo_named(const std::string& name);
const char* collective_proto_name(CollectiveProto p);

}  // namespace xpusim
