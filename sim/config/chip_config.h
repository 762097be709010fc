#pragma once
// A whole hardware description after loading: the Params structs the builder hands to models.
#include <string>
#include <vector>

#include "models/accelerator/accelerator_params.h"
#include "models/interconnect/interconnect_params.h"
#include "models/memory/memory_params.h"
#include "models/power/power_params.h"
#include "models/sm/kernel_params.h"
#include "models/sm/sm_params.h"
#include "models/tensor_core/tensor_core_params.h"
#include "sim/config/param_table.h"

namespace xpusim::config {

// Which energy table prices the chip's actions, and at what supply voltage.
struct EnergyConfig {
  std::string table;       // configs/energy/<node>.yaml, relative to the file that names it
  double voltage_v = 0;    // 0: the table's nominal voltage
};

struct GpuConfig {
  SmParams sm;
  TensorCoreParams tensor_core;
  CrossbarParams noc;
  L2Params l2;
  HbmParams hbm;
  KernelLibParams kernels;
  EnergyConfig energy;
  PowerParams power;
  // A multi-GPU system of these chips (one GPU by default).
  SystemParams system;
  NvlinkParams nvlink;
  NvswitchParams nvswitch;
  NicParams nic;
  NetworkParams network;
  CollectiveParams collectives;
};

struct AcceleratorConfig {
  AcceleratorParams accelerator;
  DramParams dram;
  EnergyConfig energy;
  PowerParams power;
};

struct ChipConfig {
  std::string name;
  std::string kind;  // a chip kind's name (chip_kind.h): "gpu" or "accelerator"
  std::string description;
  GpuConfig gpu;
  AcceleratorConfig accel;
};

// The parameter tables: top-level keys first, then one section per model.
struct Schema {
  std::string kind;
  std::vector<Section> sections;
};

}  // namespace xpusim::config
