#include "models/memory/dram.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace xpusim {

DramTiming::DramTiming(const HbmParams& p, const AddressMap& map)
    : p_(p),
      map_(map),
      burst_s_(p.burst_s()),
      burst_bytes_(static_cast<uint64_t>(p.burst_bytes())),
      channels_(static_cast<size_t>(p.channel_count())),
      last_run_(static_cast<size_t>(p.channel_count()), -1) {
  assert(burst_bytes_ > 0 && map.channels() == static_cast<uint32_t>(p.channel_count()));
  const double n = static_cast<double>(channels_.size());
  for (size_t i = 0; i < channels_.size(); ++i) {
    Channel& ch = channels_[i];
    ch.banks.resize(static_cast<size_t>(p.banks()));
    ch.group_acts.assign(static_cast<size_t>(p.bank_groups), BandwidthResource(1.0));
    // The controller times out one byte per "second" on this resource: durations are given
    // directly, so the rate only has to be positive.
    ch.bus = BandwidthResource(1.0);
    // Controllers stagger their refreshes so the whole memory never stalls at once.
    ch.refresh_offset = p.tREFI * static_cast<double>(i) / n;
  }
}

int64_t DramTiming::epoch(const Channel& ch, double t) const {
  return static_cast<int64_t>(std::floor((t - ch.refresh_offset) / p_.tREFI));
}

double DramTiming::after_refresh(const Channel& ch, double t) const {
  const double since = t - ch.refresh_offset - static_cast<double>(epoch(ch, t)) * p_.tREFI;
  return since < p_.tRFC ? t - since + p_.tRFC : t;
}

void DramTiming::reserve_refreshes(Channel& ch, double now, double until) {
  // The data bus is idle during each refresh window: book the windows ahead of the traffic.
  for (;;) {
    const double start = ch.refresh_offset + static_cast<double>(ch.next_refresh) * p_.tREFI;
    if (start >= until) break;
    const double from = std::max(start, now);
    if (start + p_.tRFC > from) ch.bus.reserve_for(now, from, start + p_.tRFC - from);
    ++ch.next_refresh;
  }
}

double DramTiming::place_activate(Channel& ch, double now, double t, int group) const {
  // Activates are booked on calendars, like the data bus, so they may be placed out of order:
  // one per tRRD_L in a bank group, and one per max(tFAW/4, tRRD_S) in the pseudo-channel (the
  // four-activate window as a rate; it forgoes the short bursts of four that tFAW allows).
  const double slot = std::max(p_.tFAW / 4, p_.tRRD_S);
  for (int guard = 0; guard < 8; ++guard) {
    t = after_refresh(ch, t);
    const double in_group = ch.group_acts[static_cast<size_t>(group)].reserve_for(now, t, p_.tRRD_L) - p_.tRRD_L;
    const double placed = ch.acts.reserve_for(now, in_group, slot) - slot;
    if (after_refresh(ch, placed) == placed) return placed;
    t = placed;  // landed in a refresh window: the slots stay booked (a refresh is in progress anyway)
  }
  return after_refresh(ch, t);
}

double DramTiming::refreshes_until(double t) const {
  double n = 0;
  for (const Channel& ch : channels_)
    if (t > ch.refresh_offset) n += std::floor((t - ch.refresh_offset) / p_.tREFI);
  return n;
}

void DramTiming::split(const std::vector<Strided>& ranges) {
  runs_.clear();
  // Channel-local address layout, low to high: byte in granule, bank group, granule within the
  // row, bank in the group, row. Consecutive granules of a channel rotate over the bank groups
  // (so a stream pays tCCD_S, not tCCD_L, between them) and a row holds granules that are
  // bank_groups apart.
  const uint64_t granule = map_.granule();
  const uint64_t groups = static_cast<uint64_t>(p_.bank_groups);
  const uint64_t per_group = static_cast<uint64_t>(p_.banks_per_group);
  const uint64_t row_granules = static_cast<uint64_t>(p_.row_bytes) / granule;
  for (const Strided& blk : ranges) {
    for (uint64_t r = 0; r < blk.rows; ++r) {
      map_.for_each_granule(blk.base + r * blk.stride, blk.row_bytes, [&](uint64_t addr, uint64_t bytes) {
        const AddressMap::Location loc = map_.locate(addr);
        const uint64_t g = loc.local / granule, off = loc.local % granule;
        const uint64_t group = g % groups;
        const uint64_t col = (g / groups) % row_granules;
        const uint64_t rest = g / groups / row_granules;
        const uint64_t in_row = col * granule + off;
        const uint64_t first = in_row / burst_bytes_, last = (in_row + bytes - 1) / burst_bytes_;
        Run run;
        run.channel = loc.channel;
        run.bank = static_cast<uint32_t>(group * per_group + rest % per_group);
        run.row = static_cast<int64_t>(rest / per_group);
        run.first_burst = first;
        run.bursts = last - first + 1;
        int32_t& prev = last_run_[run.channel];
        if (prev >= 0) {
          Run& p = runs_[static_cast<size_t>(prev)];
          if (p.bank == run.bank && p.row == run.row && p.first_burst + p.bursts >= first &&
              p.first_burst <= first) {  // continues (or overlaps the last burst of) the same row
            p.bursts = std::max(p.first_burst + p.bursts, last + 1) - p.first_burst;
            return;
          }
        } else {
          touched_.push_back(run.channel);
        }
        run.order = static_cast<uint32_t>(runs_.size());
        prev = static_cast<int32_t>(runs_.size());
        runs_.push_back(run);
      });
    }
  }
  for (uint32_t ch : touched_) last_run_[ch] = -1;
  touched_.clear();
}

double DramTiming::serve(double now, double arrival, const Run& r, bool write, DramCounters& c) {
  Channel& ch = channels_[r.channel];
  Bank& b = ch.banks[r.bank];
  const int group = static_cast<int>(r.bank) / p_.banks_per_group;
  reserve_refreshes(ch, now, std::max(arrival, ch.data_horizon) + 2 * p_.tREFI);

  const double t = after_refresh(ch, arrival);
  // A refresh between the row's activation and this access precharged every bank.
  if (b.row >= 0 && b.epoch != epoch(ch, std::max(t, b.cas_ready))) b.row = -1;
  const bool hit = b.row == r.row;
  double cas;
  if (hit) {
    cas = std::max(t, b.cas_ready);
  } else {
    double act = std::max(t, b.act_ready);
    if (b.row >= 0) act = std::max(act, std::max({t, b.pre_ready, b.act + p_.tRAS}) + p_.tRP);  // precharge first
    act = place_activate(ch, now, act, group);
    b.act = act;
    b.row = r.row;
    cas = act + p_.tRCD;
    c.activates += 1;
  }
  const double n = static_cast<double>(r.bursts);
  const double data = n * burst_s_;
  const double bus_end = ch.bus.reserve_for(now, cas + p_.tCL, data);
  ch.data_horizon = std::max(ch.data_horizon, bus_end);
  // One bank cannot stream faster than a column command per tCCD_L; other banks fill the gaps.
  const double end = std::max(bus_end, cas + p_.tCL + (n - 1) * p_.tCCD_L + burst_s_);
  const double last_cas = end - p_.tCL - burst_s_;
  // A controller opens the row just in time for the data bus: the refresh interval that counts
  // is the one in which the data moves.
  if (!hit) b.epoch = epoch(ch, last_cas);
  b.cas_ready = last_cas + p_.tCCD_L;
  b.pre_ready = write ? end + p_.tWR : last_cas + p_.tRTP;
  if (p_.page_policy == "closed") {
    b.act_ready = std::max(b.act + p_.tRAS, b.pre_ready) + p_.tRP;
    b.row = -1;
  }
  (write ? c.write_bursts : c.read_bursts) += n;
  c.row_hit_bursts += hit ? n : n - 1;
  c.data_busy_s += data;
  return end;
}

double DramTiming::access(double now, double arrival, const std::vector<Strided>& ranges, bool write,
                          DramCounters& c) {
  split(ranges);
  if (runs_.empty()) return arrival;
  // FR-FCFS within what is queued: per channel, runs to an open row first, then arrival order.
  for (Run& r : runs_) {
    const Channel& ch = channels_[r.channel];
    const Bank& b = ch.banks[r.bank];
    r.hit = p_.scheduler == "fr-fcfs" && b.row == r.row && b.epoch == epoch(ch, std::max(arrival, b.cas_ready));
  }
  std::sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) {
    if (a.channel != b.channel) return a.channel < b.channel;
    if (a.hit != b.hit) return a.hit;
    return a.order < b.order;
  });
  double done = arrival;
  for (const Run& r : runs_) done = std::max(done, serve(now, arrival, r, write, c));
  return done;
}

}  // namespace xpusim
