#pragma once
// Energy per action for one technology (configs/energy/<node>.yaml), and the pricing of the
// action counts the models keep (OpCounters). Models count actions, never joules; this is the
// only place where counts become energy. docs/energy-model.md states the rules and sources.
#include <map>
#include <string>
#include <vector>

#include "models/common/op_counters.h"

namespace xpusim::energy {

// Which part of the breakdown an action belongs to.
enum class Class { math, overhead, onchip_memory, offchip_memory, interconnect };
const char* class_name(Class c);

struct ActionSpec {
  std::string name;
  bool per_bit;  // priced per bit moved (pJ/bit) rather than per event (pJ)
  Class cls;
  std::string meaning;
  bool optional = false;  // a table may leave it out: then it costs nothing and is not reported
};
// Every action a table for this kind of chip ("gpu" or "accelerator") must price, in report order.
const std::vector<ActionSpec>& actions(const std::string& kind = "gpu");

struct Table {
  std::string file;
  std::string kind = "gpu";             // which action list it prices
  std::string node;                     // e.g. "TSMC 4N"
  double nominal_voltage = 0;           // V at which the energies below hold
  std::map<std::string, double> joules; // per event, or per bit for per_bit actions
  double static_power_w = 0;            // leakage at nominal voltage
  double idle_power_w = 0;              // whole-chip draw with nothing running
  double threshold_voltage = 0;         // alpha-power law: f_max ~ (V - Vt)^alpha / V
  double alpha = 0;
  // Share of a data-dependent action's energy that is switching driven by the operand values
  // (the rest is clocking and control): zero operands save that share, random ones pay it.
  double data_dependent_share = 0;
};

// Whether an action draws on the core supply, whose voltage the clock governor moves (the
// DRAM and link I/O supplies do not follow it).
bool on_core_rail(const std::string& action);
// Whether an action's energy depends on the data it moves or computes on (math, register,
// SRAM and network bits); instruction overhead, DRAM row commands and refresh do not.
bool data_dependent(const std::string& action);

// How a table's prices are scaled for one pricing: core-rail dynamic energy by (V / nominal)^2,
// leakage likewise (each averaged over the time priced when the voltage moved), and the
// data-dependent share by the operands' switching relative to random data (1: random, 0: zeros).
struct Scaling {
  double core = 1;
  double leakage = 1;
  double switching = 1;
};

// Highest clock at `voltage` for a design that runs `nominal_clock` at the nominal voltage.
double max_clock(const Table& t, double nominal_clock, double voltage);

// Scaling rules (docs/energy-model.md): dynamic energy ~ C V^2, so every action scales by
// (V / V_nominal)^2; leakage power is taken to scale the same way (I_leak rises with V).
double dynamic_scale(const Table& t, double voltage);
double static_scale(const Table& t, double voltage);

struct Breakdown {
  std::map<std::string, double> action_j;   // per action
  double class_j[5] = {0, 0, 0, 0, 0};      // indexed by Class
  double static_j = 0;
  double dynamic_j() const;
  double core_rail_j() const;  // the dynamic energy of actions on the core supply (on_core_rail)
  double total_j() const { return dynamic_j() + static_j; }
};

// Prices `c` over `time_s` of wall time. `refreshes` are DRAM refresh commands in that time
// (they belong to no kernel; callers share them out by time).
Breakdown price(const OpCounters& c, double refreshes, double time_s, const Table& t, double voltage,
                double static_power_w);
Breakdown price(const OpCounters& c, double refreshes, double time_s, const Table& t, const Scaling& s,
                double static_power_w);

// Dynamic energy at the nominal voltage as a linear function of the OpCounters fields (refresh
// aside), split by rail: energy = sum of field x weight. The clock governor prices each control
// window with these rather than building a Breakdown.
struct RailWeights {
  std::vector<double> core, offcore;  // per double field of OpCounters, joules per unit
  double core_j(const OpCounters& c) const;
  double offcore_j(const OpCounters& c) const;
};
RailWeights rail_weights(const Table& t, double switching);

// Action counts of the accelerator model (models/accelerator), priced by an accelerator table.
struct AccelCounters {
  double mac_int4 = 0, mac_int8 = 0;  // MACs performed
  double mac_gated = 0;               // MACs skipped because an input was zero (clock-gated)
  double vsq_scale = 0;               // per-vector scale multiplies (VS-Quant)
  double collector_updates = 0;       // partial sums added in the accumulation collector
  double wbuf_bits = 0, ibuf_bits = 0, abuf_bits = 0, gbuf_bits = 0;
  double dram_bits = 0;
  double sfu_ops = 0;
  double pe_cycles = 0;               // PE-cycles of operation (clocking, sequencing)
  AccelCounters& operator+=(const AccelCounters& o);
};
Breakdown price(const AccelCounters& c, double time_s, const Table& t, double voltage);

}  // namespace xpusim::energy
