// The one place where every hardware parameter is declared. `xpusim describe` prints these
// tables and docs/config-reference.md is generated from them.
#include <stdexcept>

#include "sim/config/chip_config.h"
#include "sim/config/chip_kind.h"
#include "sim/error.h"

namespace xpusim::config {
namespace {

using units::Dim;

constexpr double kGHz = 1e9, kKiB = 1024.0, kGiB = kKiB * kKiB * kKiB;

template <class P>
SectionBuilder<P> section(Schema& s, const std::string& name, const std::string& desc,
                          std::function<void*(void*)> locate) {
  s.sections.push_back(Section{name, desc, {}, std::move(locate)});
  return SectionBuilder<P>(s.sections.back());
}

void add_top_level(Schema& s) {
  section<ChipConfig>(s, "", "Top-level keys", [](void* w) { return w; })
      .text("name", &ChipConfig::name, required(), "Short name of the chip, used in reports")
      .choice("kind", &ChipConfig::kind, chip_kinds(), required(),
              "Which family of timing models describes the chip")
      .text("description", &ChipConfig::description, def(""), "Free text shown by `xpusim describe`");
}

// A multi-GPU system built of the chip: GPUs, NVLink, NVSwitch, NICs and collectives. The
// defaults describe one GPU on its own; configs/systems/ compose chip configs into systems.
template <class Locate>
void add_system_sections(Schema& s, Locate gpu) {
  section<SystemParams>(s, "system", "The system the chip is part of: NVLink domains of GPUs joined by NICs",
                        [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->system; })
      .integer("domains", &SystemParams::domains, def("1"), between(1, 16384),
               "NVLink domains (a DGX/HGX node, an NVL72 rack), joined by the NICs")
      .integer("gpus_per_domain", &SystemParams::gpus_per_domain, def("1"), between(1, 576),
               "GPUs in one NVLink domain, all reaching each other through its NVSwitch chips")
      .choice("detail", &SystemParams::detail, {"full", "representative"}, def("full"),
              "full: every GPU's compute is simulated; representative: one GPU of each set of GPUs that run the "
              "same ops is simulated and the set's others mirror it (needs the compute ops' sets of GPUs apart or "
              "equal); collectives always run over every link")
      .list("failed_links", &SystemParams::failed_links_text, def("[]"),
            "NVLink ports that are down, as \"gpu:link\" (e.g. [\"3:0\", \"3:1\"]); traffic uses the GPU's other links");
  section<NvlinkParams>(s, "nvlink", "Each GPU's NVLink ports (ganged: NCCL spreads a transfer over all of them)",
                        [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->nvlink; })
      .integer("links", &NvlinkParams::links, def("0"), between(0, 64), "NVLink ports per GPU (0: none)")
      .quantity("link_bandwidth", &NvlinkParams::link_bandwidth, Dim::Bandwidth, def("25 GB/s"), between(1e6, 1e13),
                "Signalling rate of one link, per direction (default: NVLink 3 and 4's 25 GB/s, shared/reference/hardware.md)")
      .quantity("latency", &NvlinkParams::latency_s, Dim::Time, def("0.5 us"), between(0, 1e-3),
                "One-way latency from a GPU's port to the switch port (PHY, flit packing, wire; default: an assumption, not published)")
      .number("efficiency", &NvlinkParams::efficiency, def("1"), between(0.01, 1),
              "Payload share of the signalling rate after flit headers, flow control and protocol (default 1: none lost; chip configs calibrate it)");
  section<NvswitchParams>(s, "nvswitch", "The NVSwitch chips of an NVLink domain",
                          [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->nvswitch; })
      .integer("count", &NvswitchParams::count, def("0"), between(0, 256),
               "Switch chips per domain; link l of every GPU lands on chip l x count / nvlink.links")
      .integer("ports", &NvswitchParams::ports, def("64"), between(1, 4096), "NVLink ports per switch chip (default: the third-generation NVSwitch's 64)")
      .quantity("latency", &NvswitchParams::latency_s, Dim::Time, def("0.3 us"), between(0, 1e-3),
                "Port-to-port latency through a switch chip (default: an assumption, not published)")
      .flag("reduction", &NvswitchParams::reduction, def("false"),
            "In-switch reduction and multicast (NVLink SHARP): enables the nvls all-reduce")
      .number("nvls_efficiency", &NvswitchParams::nvls_efficiency, def("1"), between(0.01, 1),
              "Share of the links' payload rate that in-switch reduce-loads and multicast stores reach (default 1; system configs calibrate it)");
  section<NicParams>(s, "nic", "The scale-out network adapter of each GPU (InfiniBand or Ethernet)",
                     [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->nic; })
      .quantity("bandwidth", &NicParams::bandwidth, Dim::Bandwidth, def("50 GB/s"), between(1e6, 1e13),
                "Line rate per direction per GPU (default: 400 Gb/s ConnectX-7 = 50 GB/s, shared/reference/hardware.md)")
      .quantity("latency", &NicParams::latency_s, Dim::Time, def("3 us"), between(0, 1e-2),
                "One-way GPU-to-GPU latency through adapters and network switches (default: within the 1-5 us of shared/reference/hardware.md)")
      .number("efficiency", &NicParams::efficiency, def("1"), between(0.01, 1), "Payload share of the line rate (default 1: none lost)");
  section<NetworkParams>(s, "network", "The network between domains: non-blocking, or a rail-optimised fat tree of leaf and spine switches",
                         [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->network; })
      .choice("topology", &NetworkParams::topology, {"nonblocking", "fat_tree"}, def("nonblocking"),
              "nonblocking: every NIC reaches every other at its line rate through one switch (nic.latency); fat_tree: "
              "leaves of domains_per_leaf domains' NICs (per rail) joined by spine switches through uplinks at "
              "1/oversubscription of the leaf's line rate")
      .integer("rails", &NetworkParams::rails, def("0"), between(0, 576),
               "fat_tree: leaves per group of domains; NIC i of a domain lands on leaf i mod rails (0: one leaf per GPU "
               "of a domain, fully rail-optimised; 1: a domain's NICs on one leaf)")
      .integer("domains_per_leaf", &NetworkParams::domains_per_leaf, def("32"), between(1, 4096),
               "fat_tree: domains whose NICs (of one rail) share a leaf switch (default: DGX SuperPOD's scalable unit of "
               "32 DGX H100 nodes)")
      .number("oversubscription", &NetworkParams::oversubscription, def("1"), between(1, 64),
              "fat_tree: a leaf's line rate towards its NICs over its uplinks' rate to the spine (default 1: non-blocking)")
      .quantity("switch_latency", &NetworkParams::switch_latency_s, Dim::Time, def("0.2 us"), between(0, 1e-3),
                "fat_tree: port-to-port latency of one network switch; a transfer through the spine crosses two more "
                "than nic.latency counts")
      .flag("pxn", &NetworkParams::pxn, def("true"),
            "fat_tree: a send to a GPU on another rail first moves over NVLink to the sender's domain's GPU on the "
            "receiver's rail, and leaves through its NIC (NCCL's PXN, on by default since 2.12); false: it climbs to the spine")
      .flag("sharp", &NetworkParams::sharp, def("false"),
            "The network's switches reduce (InfiniBand SHARP): enables the collnet all-reduce, each GPU's share "
            "sent once to its leaf and the result returned, the leaves reducing again through the spine (default "
            "false, as NCCL's NCCL_COLLNET_ENABLE)");
  section<CollectiveParams>(s, "collectives", "How collectives are cut into pipelined transfers",
                            [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->collectives; })
      .quantity("slice", &CollectiveParams::slice_bytes, Dim::Size, def("512 KiB"), between(1, 1e12),
                "Pipeline slice: each chunk moves as slices that the next hop forwards as soon as they land (default: NCCL's Simple protocol, a 4 MiB buffer in 8 steps)")
      .integer("max_slices", &CollectiveParams::max_slices, def("256"), between(1, 4096),
               "At most this many slices per chunk (bigger slices beyond): bounds the events of huge collectives (default: a simulation-cost bound; 8 GiB over 72 GPUs books ~1.2 M transfers)")
      .quantity("launch", &CollectiveParams::launch_s, Dim::Time, def("3 us"), between(0, 1),
                "Fixed cost of a collective: kernel launch and the handshake with its peers (default: an assumption)")
      .quantity("p2p_launch", &CollectiveParams::p2p_launch_s, Dim::Time, def("0 s"), between(0, 1),
                "Fixed cost of a serving runtime's own all-reduce kernel (algorithm one_shot or two_shot), whose "
                "barriers are simulated: a plain kernel's start and end, as kernels.kernel_start + kernel_end "
                "(default 0, as theirs; configs/h100-sxm.yaml sets the H100's)")
      .integer("channels", &CollectiveParams::channels, def("24"), between(1, 64),
               "Channels NCCL runs side by side over the same GPUs (one CTA each, each a ring or tree carrying its "
               "share of the data in steps of its protocol's slice), so a chunk smaller than channels x slice moves "
               "as one step with a step's latency (default: the 24 ring channels NCCL sets up on H100 NVLink, "
               "nccl-tests logs in waynehacking8/nccl-collectives-bench)")
      .integer("nvls_channels", &CollectiveParams::nvls_channels, def("16"), between(1, 64),
               "CTAs an in-switch (nvls) collective runs on each GPU, whatever its size (default: NCCL_NVLS_NCHANNELS' 16 "
               "on Hopper, src/transport/nvls.cc, NCCL 2.17-2.28)")
      .flag("occupy_sms", &CollectiveParams::occupy_sms, def("true"),
            "A collective's CTAs hold SMs while it runs, so kernels beside it (another stream) have fewer: one CTA per "
            "channel (collectives.channels for ring and tree, fewer for small sizes as NCCL's enqueue sets them; "
            "nvls_channels for nvls) of 512-640 threads at 96 registers each and 80 KiB of shared memory, as NCCL 2.21 "
            "builds its kernels; none for direct exchanges and a runtime's own all-reduce. false: collectives take no SM")
      .quantity("nvls_latency", &CollectiveParams::nvls_latency_s, Dim::Time, def("25 us"), between(0, 1),
                "Fixed cost of an in-switch (nvls) all-reduce beyond collectives.launch, whatever its size: the hand-offs "
                "between its scatter, reduce and gather warps, each a flag polled through the switch after a system fence, "
                "which its pipeline of slices does not book. The run pays it and `auto` weighs it against the ring, so "
                "small all-reduces run the ring (LL) as NCCL's do (default: NCCL's own figure for NVLS, src/graph/tuning.cc "
                "hwLatencies NVLink NVLS Simple 25 us, 2.19-2.29, also printed by NCCL_DEBUG_SUBSYS=TUNING)")
      .quantity("sharp_latency", &CollectiveParams::sharp_latency_s, Dim::Time, def("18 us"), between(0, 1),
                "Fixed cost of a collnet all-reduce's step through the network beyond collectives.launch (and "
                "nvls_latency inside a domain): its proxies' posts to the network and the switches' aggregation set-up, "
                "which the pipeline of slices does not book. The run pays it and `auto` weighs it (default: NCCL's own "
                "figure for multi-node NVLS over the network, src/graph/tuning.cc hwLatencies NET NVLS Simple 18 us, "
                "2.18-2.30)")
      .choice("protocol", &CollectiveParams::protocol, {"auto", "ll", "ll128", "simple"}, def("auto"),
              "NCCL protocol of ring, tree and direct collectives: auto (the least estimated time: latency + size / "
              "bandwidth per protocol, as NCCL's tuner weighs them: LL at a quarter of Simple's bandwidth on a ring "
              "all-reduce or across nodes, a third on other rings, 1/3.8 on a tree, src/graph/tuning.cc), ll, ll128 or "
              "simple; a trace op's `protocol` overrides it; nvls, one_shot and two_shot always run simple (the last two, "
              "a runtime's own kernels, have no NCCL protocol)")
      .number("ll.efficiency", nested(&CollectiveParams::ll, &ProtocolParams::efficiency), def("0.5"), between(0.01, 1),
              "LL: data share of the bytes on the links (default: each 8-byte store carries 4 bytes of data and a "
              "4-byte flag, NCCL src/device/prims_ll.h)")
      .quantity("ll.base", nested(&CollectiveParams::ll, &ProtocolParams::base_s), Dim::Time, def("0 s"), between(0, 1),
                "LL: fixed cost beyond collectives.launch (default 0: LL is the reference the other protocols' "
                "costs are measured from)")
      .quantity("ll.hop", nested(&CollectiveParams::ll, &ProtocolParams::hop_s), Dim::Time, def("0 s"), between(0, 1),
                "LL: cost per dependent hop beyond the fabric's latency (default 0: the flag lands with the data)")
      .quantity("ll.slice", nested(&CollectiveParams::ll, &ProtocolParams::slice_bytes), Dim::Size, def("32 KiB"),
                between(1, 1e12),
                "LL: data per pipeline step (default: NCCL's LL buffer, 8 lines x 512 threads x 8 data bytes per step)")
      .number("ll128.efficiency", nested(&CollectiveParams::ll128, &ProtocolParams::efficiency), def("0.9375"),
              between(0.01, 1), "LL128: data share of the bytes on the links (default: 120 of each 128-byte line)")
      .quantity("ll128.base", nested(&CollectiveParams::ll128, &ProtocolParams::base_s), Dim::Time, def("7.4 us"),
                between(0, 1),
                "LL128: fixed cost beyond LL's (default: NCCL's ring base latencies, LL128 14 us less LL 6.6 us, "
                "src/graph/tuning.cc)")
      .quantity("ll128.hop", nested(&CollectiveParams::ll128, &ProtocolParams::hop_s), Dim::Time, def("1.3 us"),
                between(0, 1),
                "LL128: cost per dependent hop beyond LL's (default: NCCL's NVLink ring step latencies, LL128 1.9 us "
                "less LL 0.6 us, src/graph/tuning.cc)")
      .quantity("ll128.slice", nested(&CollectiveParams::ll128, &ProtocolParams::slice_bytes), Dim::Size, def("576000 B"),
                between(1, 1e12),
                "LL128: data per pipeline step (default: NCCL's LL128 buffer, 120 x 8 bytes x 640 threads per step)")
      .number("simple.efficiency", nested(&CollectiveParams::simple, &ProtocolParams::efficiency), def("1"),
              between(0.01, 1), "Simple: data share of the bytes on the links (default 1: plain data)")
      .quantity("simple.base", nested(&CollectiveParams::simple, &ProtocolParams::base_s), Dim::Time, def("1.8 us"),
                between(0, 1),
                "Simple: fixed cost beyond LL's (default: NCCL's ring base latencies, Simple 8.4 us less LL 6.6 us, "
                "src/graph/tuning.cc)")
      .quantity("simple.hop", nested(&CollectiveParams::simple, &ProtocolParams::hop_s), Dim::Time, def("2.8 us"),
                between(0, 1),
                "Simple: cost per dependent hop beyond LL's: a memory fence and a flag round (default: NCCL's NVLink "
                "ring step latencies, Simple 3.4 us less LL 0.6 us, src/graph/tuning.cc)");
}

// The power section, the same for a GPU and an accelerator (docs/energy-model.md).
void add_power_section(Schema& s, std::function<void*(void*)> locate, bool accelerator) {
  section<PowerParams>(s, "power", accelerator ? "Power management: a power limit and the governor that sets the accelerator's clock (docs/energy-model.md)"
                                               : "Power management: the board power limit and the governor that sets the SM clock (docs/energy-model.md)",
                       std::move(locate))
      .choice("mode", &PowerParams::mode, {"fixed_clock", "capped"}, def("fixed_clock"),
              accelerator ? "fixed_clock: accelerator.clock throughout; capped: a governor runs the highest clock whose power "
                            "fits under power.limit (needs energy.table)"
                          : "fixed_clock: the SMs run sm.clock throughout (locked-clock studies); capped: a governor runs the highest "
                            "clock whose power fits under power.limit (needs energy.table)")
      .quantity("limit", &PowerParams::limit_w, Dim::Power, def("0 W"), between(0, 1e5),
                "Board power limit the governor holds, averaged over power.time_constant")
      .number("peak_ratio", &PowerParams::peak_ratio, def("0"), between(0, 10),
              "Bursts above the averaged limit are bounded at this multiple of it in any one control window, an electrical "
              "bound (0: none; otherwise at least 1)")
      .quantity("base_clock", &PowerParams::base_clock_hz, Dim::Frequency, def("0 Hz"), between(0, 10 * kGHz),
                "Datasheet base clock (reported beside the clocks the governor chose; 0: not given)")
      .quantity("boost_clock", &PowerParams::boost_clock_hz, Dim::Frequency, def("0 Hz"), between(0, 10 * kGHz),
                accelerator ? "Highest clock the governor runs (0: the curve's highest)"
                            : "Highest SM clock the governor runs (the card's maximum clock); required when capped")
      .list("vf_curve", &PowerParams::vf_curve_text, def("[]"),
            accelerator ? "Voltage-frequency curve as \"CLOCK at VOLTAGE\" points, ascending; empty: the line between the two operating "
                          "points (accelerator.min_clock at min_voltage, max_clock at max_voltage)"
                        : "Voltage-frequency curve as \"CLOCK at VOLTAGE\" points, clocks and voltages ascending (e.g. [\"1.2 GHz at 0.6 V\", "
                          "\"1.98 GHz at 0.8 V\"]); linear between points; the lowest clock is the governor's floor; required when capped")
      .quantity("voltage_floor", &PowerParams::voltage_floor_v, Dim::Voltage, def("0 V"), between(0, 10),
                "The lowest voltage the chip runs at, whatever its clock: power.vf_curve's voltages are raised to it, with a "
                "point added where the curve crosses it (0 V: none; a chip holds its floor even idle, so below the crossing "
                "power falls only in proportion to the clock)")
      .quantity("idle_floor", &PowerParams::idle_floor_w, Dim::Power, def("0 W"), between(0, 1e5),
                "Uncore power drawn whatever runs: memory controllers and PHYs, HBM background, clocks, regulator losses")
      .quantity("time_constant", &PowerParams::time_constant_s, Dim::Time, def("5 ms"), between(1e-6, 100),
                "The limit applies to power averaged exponentially over this (default: an assumption, not published; "
                "kernels much shorter run on the headroom, loads much longer settle at the limit)")
      .quantity("control_period", &PowerParams::control_period_s, Dim::Time, def("10 us"), between(1e-7, 1),
                "How often the governor measures power and sets the clock (a simulation granularity: shorter is finer and slower)")
      .quantity("clock_step", &PowerParams::clock_step_hz, Dim::Frequency, def("15 MHz"), between(1e5, 1e9),
                "Granularity of the clocks the governor picks (default: assumption, the 15 MHz steps of Hopper's clock table)")
      .choice("start", &PowerParams::start,
              accelerator ? std::vector<std::string>{"idle", "sustained"} : std::vector<std::string>{"idle", "sustained", "steady"},
              def("idle"),
              std::string("Power history before the trace: idle (the average starts at the idle power, so a short trace runs on the "
                          "headroom), or sustained (the trace is a slice of a long run of its own load, as a benchmark's steady state: the "
                          "first busy control window measures the load at boost, and the average stands at the limit from then on)") +
                  (accelerator ? "" : ", or steady (the trace is one period of a loop of itself, as a benchmark's steady state of a kernel "
                                      "shorter than the time constant: the trace is simulated once more beforehand to measure its load, and "
                                      "the clock starts where that load meets the limit, the average at the limit)"));
}

Schema make_gpu_schema() {
  Schema s;
  s.kind = "gpu";
  add_top_level(s);
  auto gpu = [](void* w) { return &static_cast<ChipConfig*>(w)->gpu; };

  section<SmParams>(s, "sm", "Streaming multiprocessors",
                    [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->sm; })
      .integer("count", &SmParams::count, required(), between(1, 4096), "SMs enabled on the chip")
      .quantity("clock", &SmParams::clock_hz, Dim::Frequency, required(), between(1e6, 10 * kGHz),
                "SM clock for all SM-side timing (power.mode capped: the governor sets the running clock; this stays the "
                "reference for reported peaks and for latencies given in cycles)")
      .integer("sub_partitions", &SmParams::sub_partitions, def("4"), between(1, 16),
               "Processing blocks per SM, each with one warp scheduler issuing one instruction per clock and its share of the "
               "lanes; a warp issues from one block, so a CTA of fewer warps reaches that many blocks' lanes")
      .flag("dual_issue", &SmParams::dual_issue, def("false"),
            "Each scheduler may issue a second, independent instruction of the same warp in a clock (two dispatch units per "
            "scheduler: Kepler to Pascal). Two lane instructions (FFMA, HFMA2, DP4A) pair only where they are independent and "
            "free of register bank conflicts (an instruction loop); a GEMM's pair a lane instruction with a load")
      .integer("max_warps", &SmParams::max_warps, def("64"), between(1, 1024), "Resident warps per SM")
      .integer("max_ctas", &SmParams::max_ctas, def("32"), between(1, 1024), "Resident CTAs per SM")
      .integer("registers", &SmParams::registers, def("65536"), between(1024, 1 << 24),
               "32-bit registers per SM")
      .quantity("shared_memory", &SmParams::shared_memory_bytes, Dim::Size, def("228 KiB"),
                between(1 * kKiB, 64 * 1024 * kKiB), "Shared memory a kernel may use per SM")
      .integer("fp32_lanes", &SmParams::fp32_lanes, def("128"), between(1, 4096),
               "FP32 FMA lanes per SM (non-tensor math)")
      .number("hfma_per_lane", &SmParams::hfma_per_lane, def("2"), between(0, 64),
              "FP16 FMAs per FP32 lane per clock on the SIMT path: 2 where HFMA2 packs two (Pascal GP100, Volta and later), "
              "a fraction where FP16 math is slower than FP32 (GP102/GP104: 1/64), 0 where there is none (Kepler)")
      .number("dp4a_per_lane", &SmParams::dp4a_per_lane, def("1"), between(0, 64),
              "DP4A instructions (a 4-way INT8 dot product: 4 MACs) per FP32 lane per clock: 1 from sm_61 (Pascal GP102/GP104) "
              "on, 0 before (Kepler, GP100)")
      .integer("sfu_lanes", &SmParams::sfu_lanes, def("16"), between(1, 4096),
               "Special-function lanes per SM (exp, rsqrt, ...)")
      .integer("shared_memory_banks", &SmParams::shared_memory_banks, def("32"), between(1, 1024),
               "Banks of the combined L1/shared-memory array")
      .quantity("bank_width", &SmParams::bank_bytes, Dim::Size, def("4 B"), between(1, 1024),
                "Bytes each bank delivers per clock (banks x width = L1/shared-memory bandwidth per clock)")
      .quantity("l1_cache", &SmParams::l1_cache_bytes, Dim::Size, def("32 KiB"), between(1 * kKiB, 64 * 1024 * kKiB),
                "L1 data cache capacity for ordinary loads (the part of the array not used as shared memory)")
      .integer("l1_associativity", &SmParams::l1_associativity, def("4"), between(1, 1024), "L1 ways per set")
      .quantity("l1_latency", &SmParams::l1_latency_cycles, Dim::Cycles, def("33 cycles"), between(0, 1e5),
                "Load-to-use latency of an L1 hit; also the lookup time an L1 miss pays")
      .quantity("fp32_latency", &SmParams::fp32_latency_cycles, Dim::Cycles, def("4.6 cycles"), between(0, 1e4),
                "Dependent FP32 instruction latency (FADD, FFMA): a chain a kernel cannot hide, such as a row's running "
                "statistics or a reduction (default: H100, measured)")
      .quantity("sfu_latency", &SmParams::sfu_latency_cycles, Dim::Cycles, def("39 cycles"), between(0, 1e4),
                "Dependent special-function latency (MUFU: rsqrt, ex2, approximate reciprocal; default: H100, measured)")
      .quantity("divide_latency", &SmParams::divide_latency_cycles, Dim::Cycles, def("77 cycles"), between(0, 1e4),
                "Dependent IEEE-rounded FP32 reciprocal (1.f / x without fast math: MUFU.RCP, its fix-up and the "
                "special-case branch; default: H100, measured)")
      .quantity("shuffle_latency", &SmParams::shuffle_latency_cycles, Dim::Cycles, def("24 cycles"), between(0, 1e4),
                "Dependent warp shuffle latency (SHFL; default: H100, measured)")
      .quantity("shared_memory_latency", &SmParams::shared_memory_latency_cycles, Dim::Cycles, def("26 cycles"),
                between(0, 1e4),
                "A shared-memory store and a load of it across a barrier, barriers excluded: one step of a reduction "
                "between warps (default: H100, measured)")
      .quantity("barrier_latency", &SmParams::barrier_latency_cycles, Dim::Cycles, def("12.7 cycles"), between(0, 1e4),
                "CTA barrier (__syncthreads) latency for a CTA of one warp (default: H100, measured)")
      .quantity("barrier_per_warp", &SmParams::barrier_per_warp_cycles, Dim::Cycles, def("2 cycles"), between(0, 1e4),
                "Added to barrier_latency for each warp of the CTA (H100, measured: 14.7 cycles for 1 warp, 20.7 for 4, "
                "76.7 for 32)")
      .quantity("cta_launch_interval", &SmParams::cta_launch_interval_s, Dim::Time, def("0 ns"), between(0, 1e-6),
                "The block scheduler starts one CTA per this interval at most, over the whole GPU: a kernel of many short "
                "CTAs waits for their starts (0: a CTA starts as soon as an SM has room)");

  section<TensorCoreParams>(s, "tensor_core", "Tensor cores (matrix units)",
                            [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->tensor_core; })
      .integer("per_sm", &TensorCoreParams::per_sm, def("4"), between(0, 64), "Tensor cores per SM")
      .number("macs_per_clock.tf32", [](TensorCoreParams& p) -> double& { return p.macs_per_clock.tf32; },
              def("0"), between(0, 1 << 20), "Dense TF32 MACs per clock per tensor core (also used for fp32 GEMMs); 0 = unsupported")
      .number("macs_per_clock.fp16", [](TensorCoreParams& p) -> double& { return p.macs_per_clock.fp16; },
              def("0"), between(0, 1 << 20), "Dense FP16 MACs per clock per tensor core; 0 = unsupported")
      .number("macs_per_clock.bf16", [](TensorCoreParams& p) -> double& { return p.macs_per_clock.bf16; },
              def("0"), between(0, 1 << 20), "Dense BF16 MACs per clock per tensor core; 0 = unsupported")
      .number("macs_per_clock.fp8", [](TensorCoreParams& p) -> double& { return p.macs_per_clock.fp8; },
              def("0"), between(0, 1 << 20), "Dense FP8 (E4M3/E5M2) MACs per clock per tensor core; 0 = unsupported")
      .number("macs_per_clock.int8", [](TensorCoreParams& p) -> double& { return p.macs_per_clock.int8; },
              def("0"), between(0, 1 << 20), "Dense INT8 MACs per clock per tensor core; 0 = unsupported")
      .number("macs_per_clock.int4", [](TensorCoreParams& p) -> double& { return p.macs_per_clock.int4; },
              def("0"), between(0, 1 << 20), "Dense INT4 MACs per clock per tensor core; 0 = unsupported")
      .number("macs_per_clock.fp4", [](TensorCoreParams& p) -> double& { return p.macs_per_clock.fp4; },
              def("0"), between(0, 1 << 20), "Dense FP4 (E2M1) MACs per clock per tensor core; 0 = unsupported")
      .flag("sparse_2_4", &TensorCoreParams::sparse_2_4, def("false"),
            "2:4 structured weight sparsity runs at twice the dense MAC rate")
      .quantity("mma_latency", &TensorCoreParams::mma_latency_cycles, Dim::Cycles, def("32 cycles"),
                between(0, 1e5), "Latency from MMA issue to result: the pipeline fill at the end of a CTA, and in wgmma "
                "kernels, with each MMA's MACs at the tensor cores' rate added, the least time of a K step, whose MMAs "
                "chain on one accumulator (one per 32 bytes of K)")
      .choice("mma_instruction", &TensorCoreParams::mma_instruction, {"hmma884", "hmma1688", "hmma16816"}, def("hmma16816"),
              "The warp MMA instruction of mma.sync kernels (kernels.gemm.mma: mma_sync), at 16-bit inputs: hmma884 "
              "(Volta: a 16x16x4 product over the warp's four quad-pairs in four STEP instructions, 256 MACs each), "
              "hmma1688 (Turing: 16x8x8, 1024 MACs), hmma16816 (Ampere: 16x8x16, 2048 MACs); at 8-bit inputs an "
              "instruction holds as many bytes of K (IMMA: twice the MACs)")
      .integer("generation", &TensorCoreParams::generation, def("4"), between(1, 16),
               "Tensor-core generation: 1-3 = Volta, Turing, Ampere (warp-level mma.sync, operands from registers); 4 = Hopper (warpgroup MMA, wgmma, accumulators in registers); 5 = Blackwell "
               "(tcgen05: MMAs issued by one thread, accumulators in tensor memory, 2-SM MMA, block-scaled formats)")
      .number("mma_sync_share", [](TensorCoreParams& p) -> double& { return p.mma_sync_share; }, def("1"), between(0.01, 1),
              "The share of macs_per_clock that the warp-level mma.sync (HMMA, IMMA: kernels.gemm.mma mma_sync, the "
              "hmma/imma instruction loops) reaches: 1 where it is the generation's own instruction (Volta to Ampere); "
              "below 1 on Hopper and later, whose full rate needs wgmma or tcgen05")
      .quantity("tensor_memory", &TensorCoreParams::tensor_memory_bytes, Dim::Size, def("0 B"), between(0, 64 * 1024 * kKiB),
                "Tensor memory per SM holding MMA accumulators (128 lanes x 4 B per column); 0 = none (generation 4)");

  section<CrossbarParams>(s, "noc", "On-chip network between SMs and L2 slices (crossbar), and the die-to-die link",
                          [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->noc; })
      .quantity("port_bandwidth", &CrossbarParams::port_bytes_per_cycle, Dim::BytesPerCycle, def("64 B/cycle"),
                between(1, 1 << 20), "Per-SM port bandwidth into the network")
      .quantity("latency", &CrossbarParams::latency_cycles, Dim::Cycles, def("0 cycles"), between(0, 1e5),
                "One-way traversal latency between an SM and an L2 slice")
      .integer("dies", &CrossbarParams::dies, def("1"), between(1, 2),
               "Dies the chip is built from; SMs, L2 slices and DRAM channels are split evenly among them")
      .quantity("d2d_bandwidth", &CrossbarParams::d2d_bandwidth, Dim::Bandwidth, def("1 TB/s"), between(1e9, 1e15),
                "Die-to-die link bandwidth per direction (used when dies = 2)")
      .quantity("d2d_latency", &CrossbarParams::d2d_latency_s, Dim::Time, def("0 ns"), between(0, 1e-3),
                "One-way latency of crossing the die-to-die link");

  section<L2Params>(s, "l2", "L2 cache: address-interleaved slices, set-associative, sectored, with real tags",
                    [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->l2; })
      .quantity("size", &L2Params::size_bytes, Dim::Size, required(), between(64 * kKiB, 64 * kGiB),
                "Total capacity of all slices; the tags hold whole sets of slices x associativity x line_bytes, "
                "rounding down (126 MiB over 160 slices of 16 x 128 B: 403 sets a slice, 0.05% less)")
      .integer("slices", &L2Params::slices, def("1"), between(1, 4096),
               "Slices the address space is interleaved over; each has size/slices and bandwidth/slices")
      .integer("associativity", &L2Params::associativity, def("16"), between(1, 1024), "Ways per set")
      .integer("line_bytes", &L2Params::line_bytes, def("128"), between(16, 4096), "Line size in bytes")
      .integer("sector_bytes", &L2Params::sector_bytes, def("32"), between(8, 4096),
               "Sector size in bytes (fill and miss granularity)")
      .quantity("bandwidth", &L2Params::bandwidth, Dim::Bandwidth, required(), between(1e9, 1e15),
                "Aggregate hit bandwidth of all slices")
      .quantity("hit_latency", &L2Params::hit_latency_cycles, Dim::Cycles, def("150 cycles"), between(0, 1e5),
                "Slice tag lookup and data return; an SM sees l1_latency + 2 x noc.latency + this on an L2 hit")
      .choice("hash", &L2Params::hash, {"xor", "modulo"}, def("xor"),
              "Set-index function: xor folds high address bits in (as GPUs do), modulo does not");

  section<HbmParams>(s, "hbm", "Off-chip memory (HBM): stacks, channels, banks with row buffers, JEDEC-style timing",
                     [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->hbm; })
      .quantity("capacity", &HbmParams::capacity_bytes, Dim::Size, required(), between(1e6, 1e15), "Capacity")
      .integer("stacks", &HbmParams::stacks, required(), between(1, 64), "HBM stacks (sites)")
      .integer("channels_per_stack", &HbmParams::channels_per_stack, def("16"), between(1, 256),
               "Independent channels per stack")
      .integer("pseudo_channels", &HbmParams::pseudo_channels, def("2"), between(1, 8),
               "Pseudo-channels per channel; each has its own banks and data bus")
      .integer("bank_groups", &HbmParams::bank_groups, def("4"), between(1, 64), "Bank groups per pseudo-channel")
      .integer("banks_per_group", &HbmParams::banks_per_group, def("4"), between(1, 64), "Banks per bank group")
      .quantity("row_size", &HbmParams::row_bytes, Dim::Size, def("1 KiB"), between(32, 1 << 20),
                "Row buffer (page) of one bank of a pseudo-channel")
      .integer("bus_bits", &HbmParams::bus_bits, def("32"), between(1, 1024), "Data pins per pseudo-channel")
      .quantity("data_rate", &HbmParams::data_rate, Dim::Frequency, required(), between(1e8, 1e11),
                "Transfers per second per pin (peak = pseudo-channels x bus_bits/8 x data_rate)")
      .integer("burst_length", &HbmParams::burst_length, def("8"), between(1, 64), "Transfers per read or write burst")
      .quantity("interleave", &HbmParams::interleave_bytes, Dim::Size, def("256 B"), between(32, 1 << 20),
                "Address granule dealt to pseudo-channels and L2 slices in turn")
      .quantity("tRCD", &HbmParams::tRCD, Dim::Time, def("14 ns"), between(0, 1e-6), "Activate to read/write")
      .quantity("tRP", &HbmParams::tRP, Dim::Time, def("14 ns"), between(0, 1e-6), "Precharge period")
      .quantity("tRAS", &HbmParams::tRAS, Dim::Time, def("33 ns"), between(0, 1e-5), "Activate to precharge")
      .quantity("tCL", &HbmParams::tCL, Dim::Time, def("14 ns"), between(0, 1e-6), "Read command to first data")
      .quantity("tCCD_S", &HbmParams::tCCD_S, Dim::Time, def("2 ns"), between(0, 1e-6),
                "Column to column, different bank groups")
      .quantity("tCCD_L", &HbmParams::tCCD_L, Dim::Time, def("4 ns"), between(0, 1e-6),
                "Column to column, same bank group (one bank streams at most a burst per tCCD_L)")
      .quantity("tRRD_S", &HbmParams::tRRD_S, Dim::Time, def("4 ns"), between(0, 1e-6),
                "Activate to activate, different bank groups")
      .quantity("tRRD_L", &HbmParams::tRRD_L, Dim::Time, def("6 ns"), between(0, 1e-6),
                "Activate to activate, same bank group")
      .quantity("tFAW", &HbmParams::tFAW, Dim::Time, def("30 ns"), between(0, 1e-5), "Window holding at most four activates")
      .quantity("tRFC", &HbmParams::tRFC, Dim::Time, def("350 ns"), between(0, 1e-4), "All-bank refresh period")
      .quantity("tREFI", &HbmParams::tREFI, Dim::Time, def("3.9 us"), between(1e-7, 1e-3), "Refresh interval")
      .quantity("tWR", &HbmParams::tWR, Dim::Time, def("16 ns"), between(0, 1e-6), "Write recovery before precharge")
      .quantity("tRTP", &HbmParams::tRTP, Dim::Time, def("4 ns"), between(0, 1e-6), "Read to precharge")
      .quantity("controller_latency", &HbmParams::controller_latency_s, Dim::Time, def("100 ns"), between(0, 1e-4),
                "Memory controller, PHY and return path, request and response together")
      .choice("scheduler", &HbmParams::scheduler, {"fr-fcfs", "fcfs"}, def("fr-fcfs"),
              "Command scheduling: first-ready (open-row hits first) or strict arrival order")
      .choice("page_policy", &HbmParams::page_policy, {"open", "closed"}, def("open"),
              "Leave rows open after an access (open) or precharge at once (closed)");

  // Fused attention is written for the asynchronous MMAs only: kMmaNames less mma_sync.
  std::vector<std::pair<Mma, std::string>> attention_mmas;
  for (const auto& entry : kMmaNames)
    if (entry.first != Mma::mma_sync) attention_mmas.push_back(entry);
  section<KernelLibParams>(s, "kernels", "How the kernel library lowers ops to CTAs",
                           [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->kernels; })
      .quantity("launch_gap", &KernelLibParams::launch_gap_s, Dim::Time, def("1 us"), between(0, 1),
                "Gap between the end of a kernel and the start of a dependent one")
      .choice("launch", &KernelLibParams::launch_mode, {"graph", "eager"}, def("graph"),
              "How kernels are launched: graph (replayed from a CUDA graph: only the launch gap between dependent "
              "kernels) or eager (a host issues them one at a time, kernels.eager_issue apart, ahead of the GPU)")
      .quantity("eager_issue", &KernelLibParams::eager_issue_s, Dim::Time, def("10 us"), between(0, 1),
                "launch: eager: host time to issue one kernel; the GPU idles when kernels are shorter")
      .quantity("kernel_start", &KernelLibParams::kernel_start_s, Dim::Time, def("0 s"), between(0, 1),
                "Per kernel: from its launch to its first CTA's work (grid set-up), counted in the kernel's time")
      .quantity("kernel_end", &KernelLibParams::kernel_end_s, Dim::Time, def("0 s"), between(0, 1),
                "Per kernel: from its last CTA's end to its completion (memory flush, completion signal), counted in "
                "the kernel's time")
      .list("gemm.tiles", &KernelLibParams::gemm_tiles, def("[128x256, 256x128, 128x128, 128x64, 64x128, 64x64]"),
            "Candidate CTA output tiles MxN; the lowering picks the best estimate per GEMM")
      .quantity("gemm.k_tile", &KernelLibParams::gemm_k_tile_bytes, Dim::Size, def("128 B"),
                between(16, 4096), "Bytes of K per pipeline stage per operand row (64 bf16 elements at 128 B)")
      .integer("gemm.max_stages", &KernelLibParams::gemm_max_stages, def("4"), between(1, 16),
               "Deepest multistage (TMA) pipeline; fewer if shared memory is short")
      .quantity("gemm.cta_setup", &KernelLibParams::gemm_cta_setup_s, Dim::Time, def("0 s"), between(0, 1e-4),
                "Tensor-core GEMMs: per resident CTA, from its start to its first MMA (barriers, cluster "
                "synchronisation, descriptors); its first loads overlap it. A persistent kernel's later tiles do not pay it")
      .integer("gemm.raster_group", &KernelLibParams::gemm_raster_group, def("8"), between(1, 1024),
               "CTA rasterisation swizzle: rows of tiles walked together for L2 reuse")
      .integer("gemm.cluster_m", &KernelLibParams::gemm_cluster_m, def("1"), between(1, 16),
               "CTAs along M in a thread-block cluster; they share each B tile by TMA multicast (1 = no clusters)")
      .integer("gemm.threads", &KernelLibParams::gemm_threads, def("384"), between(32, 1024),
               "Threads per GEMM CTA (one producer and two consumer warpgroups); wgmma kernels")
      .choice("gemm.mma", &KernelLibParams::gemm_mma, kMmaNames, def("wgmma"),
              "MMA the GEMM kernels are written for: mma_sync (Volta to Ampere: warp-level MMAs on register operands "
              "loaded from shared memory), wgmma (Hopper's warpgroup MMA, one CTA per tile or persistent (gemm.persistent); needs "
              "tensor_core.generation 4 or more) or tcgen05 (Blackwell: persistent CTAs, accumulators in tensor memory; needs tensor_core.generation 5)")
      .flag("gemm.split_k", &KernelLibParams::gemm_split_k, def("true"),
            "Not tcgen05: split a GEMM's K loop over several CTAs per output tile (fp32 partials, added as "
            "gemm.split_k_reduction says) where the estimate says it pays, as cuBLAS and CUTLASS do for skinny GEMMs")
      .choice("gemm.split_k_reduction", &KernelLibParams::gemm_split_k_reduction, {"kernel", "serial"}, def("kernel"),
              "How split-K's fp32 partials are added: kernel (every split stores its partial and a second kernel "
              "adds them and writes the output, as cuBLAS's splitKreduce_kernel does; it pays its own launch) or "
              "serial (the last split's CTA loads the others' partials and adds them, as CUTLASS's serial split-K)")
      .flag("gemm.stream_k", &KernelLibParams::gemm_stream_k, def("true"),
            "wgmma only: where the tiles leave a ragged last wave after at least two whole ones, run the last one to two "
            "waves' worth of tiles stream-K (their K steps cut evenly over one CTA per SM, partial tiles fixed up "
            "through a workspace) as CUTLASS's data-parallel + stream-K hybrid does, where the estimate says it pays")
      .flag("gemm.persistent", &KernelLibParams::gemm_persistent, def("false"),
            "wgmma only: GEMMs of more than one wave of tiles (and neither split-K nor stream-K) run as persistent "
            "kernels, as cuBLAS's Hopper kernels do: one CTA per SM slot walks tile after tile, its producer loading "
            "the next tile's first stages while the consumers run the last tile's epilogue (tcgen05 kernels are "
            "persistent wherever two accumulator buffers fit in tensor memory; mma_sync kernels are not)")
      .flag("gemm.cta_pair", &KernelLibParams::gemm_cta_pair, def("false"),
            "tcgen05 only: 2-SM MMA, two CTAs of a cluster compute one tile of twice the rows, each loading half "
            "of the shared B tile (kernels.gemm.cluster_m must be even)")
      .number("gemm.dequant_ops", &KernelLibParams::gemm_dequant_ops, def("1.5"), between(0, 64),
            "Weight-only GEMMs: SIMT lane ops to convert one weight to the math format and apply its scale "
            "(assumption: a LOP3/PRMT nibble-to-half conversion at about one op per element plus a packed "
            "scale multiply per pair, as mixed-input kernels such as Marlin and CUTLASS's do)")
      .integer("simt.threads", &KernelLibParams::simt_threads, def("256"), between(32, 1024),
               "Threads per CTA of elementwise and row-wise kernels")
      .quantity("simt.bytes_per_thread", &KernelLibParams::simt_bytes_per_thread, Dim::Size, def("16 B"),
                between(1, 4096), "Bytes each thread loads per stage (16 B = one 128-bit load)")
      .integer("simt.stages", &KernelLibParams::simt_stages, def("4"), between(1, 64),
               "Loads each thread keeps in flight (unrolling)")
      .integer("simt.strided_threads", &KernelLibParams::strided_threads, def("128"), between(32, 1024),
               "Threads per CTA of the elementwise kernel for operands not in one dense layout (a transposed view, "
               "a broadcast): PyTorch's launch_legacy_kernel<128, unroll> (ATen/native/cuda/CUDALoops.cuh)")
      .integer("simt.strided_unroll", &KernelLibParams::strided_unroll, def("4"), between(1, 64),
               "Elements per thread of that kernel, one per iteration (halved for outputs of 4 bytes or more, as "
               "PyTorch's unroll_factor is); an iteration's loads wait for the previous one's store, which may alias "
               "them, so the iterations make dependent round trips")
      .integer("attention.q_tile", &KernelLibParams::attention_q_tile, def("128"), between(16, 1024),
               "Query rows per fused-attention CTA")
      .integer("attention.kv_tile", &KernelLibParams::attention_kv_tile, def("128"), between(16, 1024),
               "Key/value rows per inner step of fused attention")
      .integer("attention.threads", &KernelLibParams::attention_threads, def("384"), between(32, 1024),
               "Threads per fused-attention CTA")
      .flag("attention.decode", &KernelLibParams::attention_decode, def("true"),
            "Decode kernels where a KV head's query rows (seq_q x heads/kv_heads) fit one 64-row MMA block: a CTA per "
            "(sequence, KV head) with the whole group, the KV sequence split over CTAs that fill the SMs and combined "
            "by a second kernel (flash-decoding); false pads each query head to a q tile as prefill kernels do")
      .choice("attention.mma", &KernelLibParams::attention_mma,
              attention_mmas, def("wgmma"),
              "MMA the fused-attention kernel is written for: wgmma (FlashAttention-3 style, accumulators in "
              "registers) or tcgen05 (scores and output in tensor memory, two query tiles per CTA; needs "
              "tensor_core.generation 5)");
  section<EnergyConfig>(s, "energy", "Energy model: the per-action energy table and the supply voltage",
                        [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->energy; })
      .text("table", &EnergyConfig::table, def(""),
            "Energy table (configs/energy/<node>.yaml), relative to the file that names it; empty: no energy report")
      .quantity("voltage", &EnergyConfig::voltage_v, Dim::Voltage, def("0 V"), between(0, 2.0),
                "Supply voltage; dynamic energy scales with (V / the table's nominal)^2; 0 V: the nominal");
  add_power_section(s, [gpu](void* w) { return &static_cast<GpuConfig*>(gpu(w))->power; }, false);
  add_system_sections(s, gpu);
  return s;
}

Schema make_accelerator_schema() {
  Schema s;
  s.kind = "accelerator";
  add_top_level(s);
  auto acc = [](void* w) { return &static_cast<ChipConfig*>(w)->accel; };
  section<AcceleratorParams>(s, "accelerator", "Dataflow PE array (MAGNet-style)",
                             [acc](void* w) { return &static_cast<AcceleratorConfig*>(acc(w))->accelerator; })
      .integer("pes", &AcceleratorParams::pes, required(), between(1, 1 << 20), "Processing elements")
      .integer("vector_units_per_pe", &AcceleratorParams::vector_units_per_pe, required(), between(1, 1024),
               "Vector MAC units per PE")
      .integer("vector_width", &AcceleratorParams::vector_width, required(), between(1, 4096),
               "4-bit MACs per vector unit per cycle")
      .quantity("clock", &AcceleratorParams::clock_hz, Dim::Frequency, required(), between(1e6, 1e10),
                "Operating frequency")
      .quantity("voltage", &AcceleratorParams::voltage_v, Dim::Voltage, required(), between(0.1, 2.0),
                "Operating supply voltage")
      .quantity("min_voltage", &AcceleratorParams::min_voltage_v, Dim::Voltage, required(), between(0.1, 2.0),
                "Lowest supported supply voltage")
      .quantity("max_voltage", &AcceleratorParams::max_voltage_v, Dim::Voltage, required(), between(0.1, 2.0),
                "Highest supported supply voltage")
      .quantity("min_clock", &AcceleratorParams::min_clock_hz, Dim::Frequency, required(), between(1e6, 1e10),
                "Frequency at the lowest voltage")
      .quantity("max_clock", &AcceleratorParams::max_clock_hz, Dim::Frequency, required(), between(1e6, 1e10),
                "Frequency at the highest voltage")
      .quantity("weight_buffer", &AcceleratorParams::weight_buffer_bytes, Dim::Size, required(),
                between(16, 1e9), "Weight buffer per PE")
      .quantity("input_buffer", &AcceleratorParams::input_buffer_bytes, Dim::Size, required(),
                between(16, 1e9), "Input buffer per PE")
      .quantity("accum_buffer", &AcceleratorParams::accum_buffer_bytes, Dim::Size, required(),
                between(16, 1e9), "Accumulation buffer per PE")
      .quantity("global_buffer", &AcceleratorParams::global_buffer_bytes, Dim::Size, required(),
                between(16, 1e10), "Global buffer shared by the PEs")
      .quantity("area", &AcceleratorParams::area_m2, Dim::Area, def("0 mm^2"), between(0, 1e-2),
                "Die area of the PE array (for reporting)")
      .integer("vsq_vector", &AcceleratorParams::vsq_vector, def("16"), between(1, 1024),
               "Elements sharing one VS-Quant scale factor (default: the low end of the 16-32 in shared/reference/formats.md)")
      .integer("accum_bits", &AcceleratorParams::accum_bits, def("24"), between(8, 64),
               "Partial-sum width in the accumulation buffer (default: an assumption, enough for 4-bit products over K = 4096)")
      .integer("collector_depth", &AcceleratorParams::collector_depth, def("1"), between(1, 1024),
               "K-chunks a vector unit sums in its accumulation collector, holding their weights in registers, before one accumulation-buffer update (default 1: no collector reuse, the conservative case)")
      .integer("sfu_lanes", &AcceleratorParams::sfu_lanes, def("16"), between(1, 4096),
               "Special-function operations per cycle (softmax, layernorm, GELU, requantisation; default: an assumption, no published figure)");
  section<DramParams>(s, "dram", "Off-chip DRAM interface",
                      [acc](void* w) { return &static_cast<AcceleratorConfig*>(acc(w))->dram; })
      .quantity("bandwidth", &DramParams::bandwidth, Dim::Bandwidth, required(), between(1e6, 1e15),
                "Peak bandwidth")
      .quantity("latency", &DramParams::latency_s, Dim::Time, def("100 ns"), between(0, 1e-3), "Access latency")
      .quantity("capacity", &DramParams::capacity_bytes, Dim::Size, def("8 GiB"), between(1e6, 1e15), "Capacity");
  section<EnergyConfig>(s, "energy", "Energy model: the per-action energy table (kind: accelerator)",
                        [acc](void* w) { return &static_cast<AcceleratorConfig*>(acc(w))->energy; })
      .text("table", &EnergyConfig::table, def(""),
            "Energy table (configs/energy/<node>.yaml), relative to the file that names it; empty: no energy report")
      .quantity("voltage", &EnergyConfig::voltage_v, Dim::Voltage, def("0 V"), between(0, 2.0),
                "Unused for accelerators: accelerator.voltage is the operating point");
  add_power_section(s, [acc](void* w) { return &static_cast<AcceleratorConfig*>(acc(w))->power; }, true);
  return s;
}

}  // namespace

const Schema& gpu_schema() {
  static const Schema s = make_gpu_schema();
  return s;
}

const Schema& accelerator_schema() {
  static const Schema s = make_accelerator_schema();
  return s;
}

}  // namespace xpusim::config
