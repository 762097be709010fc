#pragma once
// The CTAs of a communication library's kernel (NCCL's channels) as the SMs see them: each holds
// an SM's room (its threads, registers and shared memory) from when it is placed until the
// collective ends, so that kernels beside it have fewer SMs. What the CTAs move and reduce is the
// fabric's (models/interconnect/collective.h): they issue no loads, stores or operations here.
#include <cstdint>
#include <string>
#include <vector>

#include "models/sm/kernel_program.h"

namespace xpusim {

class HoldProgram : public KernelProgram {
 public:
  HoldProgram(uint64_t ctas, const CtaResources& r, std::string what) : ctas_(ctas) {
    resources = r;
    stages = 1;
    description = std::move(what);
  }
  // When the collective ends: set when it starts, before its CTAs are submitted.
  void hold_until(double t) { until_s_ = t; }
  double until() const { return until_s_; }
  uint64_t num_ctas() const override { return ctas_; }
  uint64_t steps(uint64_t) const override { return 1; }
  void step(uint64_t, uint64_t, StepWork& w) const override { w.until_s = until_s_; }
  void epilogue(uint64_t, StepWork&) const override {}
  void written(double, std::vector<Strided>&) const override {}

 private:
  uint64_t ctas_ = 0;
  double until_s_ = 0;
};

}  // namespace xpusim
