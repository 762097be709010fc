#pragma once
// DRAM timing for HBM: pseudo-channels, each with bank groups of banks holding a row buffer,
// a data bus, the activate window (tRRD, tFAW) and all-bank refresh (tRFC every tREFI).
// A request is a list of byte ranges; it is split into runs (consecutive bursts of one row of
// one bank) in bulk, and each pseudo-channel serves its runs FR-FCFS: runs that hit an open row
// first, then the rest in arrival order. Commands are timed by computing when each constraint
// allows them, not by ticking a clock, so a multi-megabyte transfer costs a few operations per
// run. Plain C++: the SystemC module in hbm.h wraps it.
#include <utility>
#include <cstdint>
#include <vector>

#include "models/common/bandwidth_resource.h"
#include "models/common/mem_request.h"
#include "models/memory/address_map.h"
#include "models/memory/memory_params.h"

namespace xpusim {

struct DramCounters {
  double read_bursts = 0;
  double write_bursts = 0;
  double activates = 0;       // row opens (each implies a precharge before or after)
  double row_hit_bursts = 0;  // bursts served from an already open row
  double data_busy_s = 0;     // summed over pseudo-channels
};

class DramTiming {
 public:
  DramTiming(const HbmParams& p, const AddressMap& map);

  // Serves `ranges` reaching the controller at `arrival` (>= now). Returns when the last data
  // burst has crossed the pins (controller latency excluded).
  double access(double now, double arrival, const std::vector<Strided>& ranges, bool write, DramCounters& c);
  // All-bank refresh commands issued by all pseudo-channels up to time t.
  double refreshes_until(double t) const;
  const HbmParams& params() const { return p_; }

 private:
  struct Bank {
    int64_t row = -1;        // open row, -1 if precharged
    int64_t epoch = -1;      // refresh interval in which the row was opened
    double act = -1e30;      // last activate
    double act_ready = 0;    // earliest next activate (after a precharge)
    double cas_ready = 0;    // earliest next column command
    double pre_ready = 0;    // earliest precharge (read-to-precharge, write recovery)
  };
  struct Channel {
    std::vector<Bank> banks;
    BandwidthResource bus{1.0};
    BandwidthResource acts{1.0};                 // activate slots of the pseudo-channel
    std::vector<BandwidthResource> group_acts;   // activate slots per bank group
    double refresh_offset = 0;
    double data_horizon = 0;   // end of the latest data transfer booked
    int64_t next_refresh = 0;  // index of the first refresh window not yet booked on the bus
  };
  struct Run {
    uint32_t channel = 0, bank = 0;
    int64_t row = 0;
    uint64_t first_burst = 0, bursts = 0;
    uint32_t order = 0;
    bool hit = false;
  };

  int64_t epoch(const Channel& ch, double t) const;
  double after_refresh(const Channel& ch, double t) const;
  double place_activate(Channel& ch, double now, double t, int group) const;
  void reserve_refreshes(Channel& ch, double now, double until);
  void split(const std::vector<Strided>& ranges);
  double serve(double now, double arrival, const Run& r, bool write, DramCounters& c);

  HbmParams p_;
  AddressMap map_;
  double burst_s_;
  uint64_t burst_bytes_;
  std::vector<Channel> channels_;
  std::vector<Run> runs_;               // scratch for one request
  std::vector<int32_t> last_run_;       // per channel: index in runs_ of its latest run, -1
  std::vector<uint32_t> touched_;
};

}  // namespace xpusim
