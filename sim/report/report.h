#pragma once
// The report: report.json is the source of truth (schema in docs/report-format.md); the
// Markdown summary, the CSV and the terminal table are views of the same Report.
#include <string>
#include <vector>

#include "sim/config/config_loader.h"
#include "sim/engine/result.h"
#include "sim/trace/trace.h"

namespace xpusim::report {

struct Metrics {
  double start_s = 0, end_s = 0, time_s = 0, cycles = 0;
  double flops = 0, tflops = 0, peak_tflops = 0, fraction_of_peak = 0;
  double min_bytes = 0;
  double tensor_util = 0, simt_util = 0, sm_util = 0;
  double l2_bandwidth_util = 0, hbm_bandwidth_util = 0;
  double l2_busy = 0, hbm_busy = 0;  // share of time each pipe was busy (vs its sustained rate)
  double l2_hit_rate = 0, l1_hit_rate = 0, hbm_row_hit_rate = 0;
  double l1_read_bytes = 0, smem_bytes = 0, noc_bytes = 0, d2d_bytes = 0;
  double l2_read_bytes = 0, l2_write_bytes = 0, hbm_read_bytes = 0, hbm_write_bytes = 0;
  double hbm_activates = 0;
  double access_latency_s = -1;  // microbenchmarks: steady-state time per access (-1: not timed)
  double timed_bandwidth = 0;    // microbenchmarks: bytes the timed phase asked for, per second
  double hbm_bandwidth = 0, l2_bandwidth = 0;  // achieved, B/s
  std::string bound;
  // Energy (when the config names an energy table)
  bool has_energy = false;
  double energy_j = 0, dynamic_j = 0, static_j = 0, power_w = 0;
  double class_j[5] = {0, 0, 0, 0, 0};  // energy::Class order
  std::vector<std::pair<std::string, double>> action_j;
  double instructions = 0;  // lane instructions (SIMT, memory) + matrix instructions
  double ops = 0;           // flops (or integer ops) counted for TOPS/W
  double joules_per_token = 0;
  double uncore_j = 0;      // power.idle_floor x time (in energy_j; its own class)
  // Power management (power.mode capped), over the op's span on its first GPU
  bool has_power = false;
  double clock_hz = 0;         // mean SM clock the governor ran
  double voltage = 0;          // mean core voltage
  double chip_power_w = 0;     // mean power of the whole chip (every op running then, leakage, uncore)
  double throttled_share = 0;  // share of the time the limit held the clock below boost
  // Collectives (nccl-tests' terms: algbw = size / time, busbw = algbw x the bus factor)
  bool collective = false;
  std::string algorithm;
  std::string protocol;  // NCCL's protocol: ll, ll128, simple
  double coll_bytes = 0, algbw = 0, busbw = 0, bus_factor = 0;
  double link_payload_bw = 0;  // payload rate per direction of the slowest participant's ports
  double nvlink_bytes = 0, nic_bytes = 0, transfers = 0;
  double nvlink_util = 0, nic_util = 0;  // busiest direction of a participant's ports, NICs
  int steps = 0, slices = 0, channels = 0;
};

// An op's or a run's figures over a set of GPUs: on a system of several, each op's metrics are
// those of one of the GPUs it ran on (each runs its own shard) and the run's total is the whole
// system's; this is the other side of each, so that both are labelled and add up.
struct Scope {
  int gpus = 1;
  double flops = 0, tflops = 0;
  double hbm_bytes = 0, hbm_bandwidth = 0, hbm_peak = 0;  // achieved and peak, B/s, over these GPUs
  double nvlink_bytes = 0;
  bool has_energy = false;
  double energy_j = 0, power_w = 0;
};

struct OpReport {
  std::string name, kind, dtype, out_dtype, shape, lowering;
  std::string weight_dtype;  // weight-only quantisation: the weights' format (empty: dtype)
  std::string roof;          // the unit and format its peak_tflops is of: "bf16 tensor cores", "SIMT fp32", "int4 MAC array"
  long long ctas = 0;
  double waves = 0;
  int ctas_per_sm = 0;
  int stream = 0;
  std::vector<int> devices;  // the GPUs it ran on
  Metrics m;                 // on one of them (per GPU)
  Scope system;              // on all of them (a system of several GPUs)
  std::vector<accel::AccelOp::Part> mappings;  // accelerator: each GEMM's chosen mapping
  // Fast fidelity: the op whose simulation this one reused, or the CTAs it extrapolated.
  int reused_from = -1;
  bool reused_cached = false;  // reused a kernel cache's record (--kernel-cache)
  long long extrapolated_ctas = 0;
  long long extrapolated_steps = 0;  // steps the simulated CTAs left out, all together
  double extrapolated_s = 0;
};

// How the run was simulated (engine::Fidelity) and what the fast fidelity saved.
struct FidelityInfo {
  std::string mode = "exact";
  double tolerance = 0;
  int reused_ops = 0;             // kernels that reused an earlier op's result
  int cached_ops = 0;             // of them, those that reused a kernel cache's record
  long long extrapolated_ctas = 0;  // CTAs counted from steady waves, not simulated
  int extrapolated_ops = 0;         // ops with CTAs or steps extrapolated
  long long ctas = 0;             // CTAs of every kernel (first GPU)
  long long extrapolated_steps = 0;  // steps left out by simulated CTAs (in the note only)
  std::string note;               // the above in words
};

// The power section of a capped chip: its settings and each simulated GPU's governor windows.
struct PowerInfo {
  bool capped = false;
  double limit_w = 0, peak_ratio = 0, base_clock_hz = 0, boost_clock_hz = 0, idle_floor_w = 0, time_constant_s = 0;
  std::string start;
  std::vector<int> gpus;                         // the GPU of each track
  std::vector<std::vector<PowerSample>> tracks;  // governor windows per simulated GPU
  double peak_filtered_w = 0;                    // highest time-constant average reached
  // The governor's lowest clock, and the highest power a window drew there above the limit: the
  // limit cannot be held at that load even at the lowest clock (0: it was held).
  double lowest_clock_hz = 0;
  double unheld_w = 0;
  double track_span_s = 0;  // tracks joined into spans of at least this (0: windows as run, merged where steady)
};

// "--set a=1 --set b=2 --trace-set dtype=fp8": the overrides a run was given, or "" for none.
struct Report;
std::string overrides_text(const Report& rep);

struct Report {
  std::string version;
  std::string config_name, config_file, trace_name, trace_file;
  std::vector<std::string> config_overrides, trace_overrides;  // --set and --trace-set, as given
  double tokens = 0;  // tokens the trace produces or processes (0: not an LLM step)
  int sms = 0;
  int gpus = 1;                     // GPUs in the system
  std::vector<int> simulated_gpus;  // whose SMs and memory were simulated
  bool representative = false;      // one simulated, the others mirror it
  std::string system_note;          // how the system was simulated, in words
  bool accelerator = false;  // a dataflow accelerator: MAC array, SFUs and DRAM rather than SMs, L2 and HBM
  std::string energy_table, energy_node;
  double voltage = 0, nominal_voltage = 0, max_clock_at_voltage = 0, static_power = 0, idle_power = 0;
  double clock_hz = 0, hbm_peak = 0, hbm_sustained = 0, l2_peak = 0, fp32_peak_tflops = 0;
  std::vector<std::pair<std::string, double>> tensor_peak_tflops;  // per dtype, dense
  double sfu_peak_tops = 0;  // special-function operations (exp, rsqrt) per second, in tera (report.html's SFU roof)
  PowerInfo power;
  FidelityInfo fidelity;
  Metrics total;  // the whole system's
  // Where the run's time went, every GPU's ops on one timeline: each instant counted once, to
  // kernels before collectives before host ops (only exposed communication and host time
  // count); what none covers (launch gaps) is idle.
  // The four add up to total.time_s.
  struct TimeBreakdown {
    double kernels_s = 0, collectives_s = 0, host_s = 0, idle_s = 0;
  } time_breakdown;
  Scope per_gpu;  // the total's share of one GPU (a system of several GPUs)
  std::vector<OpReport> ops;
  std::vector<std::pair<std::string, double>> stat_values;
  std::vector<std::pair<std::string, std::string>> stat_units;
};

Report build(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r);
std::string to_json(const Report& rep);
std::string to_json(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r);
std::string to_csv(const Report& rep);
std::string to_markdown(const Report& rep, double wall_s);
std::string terminal_table(const Report& rep, size_t max_ops);
// Chrome trace-event JSON (chrome://tracing, Perfetto): one process per GPU, one thread per
// stream, one slice per op on each GPU it ran on.
std::string to_timeline(const Report& rep);

}  // namespace xpusim::report
