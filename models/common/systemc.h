#pragma once
// One place that includes SystemC, so that every translation unit agrees on its configuration.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <systemc>
#include <tlm>
