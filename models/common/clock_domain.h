#pragma once
// The clock of the SMs of one GPU. The SMs and their tensor cores read it whenever they time
// work, so a power governor can change it while kernels run; with a fixed clock it holds
// sm.clock throughout. It also counts the cycles it has ticked, for the energy of clocking an
// active SM. Latencies given in cycles (L1, network, L2) are converted once at the configured
// sm.clock: the governor scales throughput, not those latencies (docs/energy-model.md).
namespace xpusim {

class ClockDomain {
 public:
  explicit ClockDomain(double hz) : hz_(hz) {}
  double hz() const { return hz_; }
  // A new clock from simulated time `now_s` on.
  void set_hz(double hz, double now_s) {
    if (hz != hz_) moved_s_ = now_s;
    cycles_at_change_ = cycles(now_s);
    changed_s_ = now_s;
    hz_ = hz;
  }
  // When the clock last took a different value (0 if never).
  double moved_s() const { return moved_s_; }
  // Cycles ticked from time 0 to `t_s` (not before the last change).
  double cycles(double t_s) const { return cycles_at_change_ + (t_s - changed_s_) * hz_; }

 private:
  double hz_;
  double changed_s_ = 0, cycles_at_change_ = 0, moved_s_ = 0;
};

}  // namespace xpusim
