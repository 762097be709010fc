// Every collective algorithm, listed once: the plug-ins algorithm() finds by their CollectiveAlgo.
#include <cassert>

#include "models/interconnect/algorithm.h"

namespace xpusim {

const Algorithm& ring_algorithm();
const Algorithm& tree_algorithm();
const Algorithm& nvls_algorithm();
const Algorithm& direct_algorithm();
const Algorithm& one_shot_algorithm();
const Algorithm& two_shot_algorithm();
const Algorithm& nvls_tree_algorithm();
const Algorithm& collnet_algorithm();

const Algorithm& algorithm(CollectiveAlgo a) {
  switch (a) {
    case CollectiveAlgo::ring: return ring_algorithm();
    case CollectiveAlgo::tree: return tree_algorithm();
    case CollectiveAlgo::nvls: return nvls_algorithm();
    case CollectiveAlgo::direct: return direct_algorithm();
    case CollectiveAlgo::one_shot: return one_shot_algorithm();
    case CollectiveAlgo::two_shot: return two_shot_algorithm();
    case CollectiveAlgo::nvls_tree: return nvls_tree_algorithm();
    case CollectiveAlgo::collnet: return collnet_algorithm();
    case CollectiveAlgo::automatic: break;
  }
  assert(false && "algorithm(automatic): resolve it first");
  return ring_algorithm();
}

}  // namespace xpusim
