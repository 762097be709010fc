#include "models/accelerator/mapping.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace xpusim::accel {
namespace {

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::vector<int64_t> sizes(int64_t lo, int64_t dim) {
  std::vector<int64_t> v;
  for (int64_t s = lo; s < dim; s *= 2) v.push_back(s);
  v.push_back(dim);  // the whole dimension
  return v;
}

}  // namespace

std::string Mapping::describe() const {
  std::ostringstream os;
  os << (weight_stationary ? "weight-stationary" : "output-stationary") << ", global-buffer tile " << mg << "x" << ng
     << "x" << kg << " (M x N x K, " << (n_outer ? "N" : "M") << " tiles outer), " << np << " output columns per PE";
  if (weight_stationary) os << ", " << mi << " input rows per weight load";
  return os.str();
}

bool fits(const Mapping& m, const GemmShape& g, const AcceleratorParams& a) {
  const double b = g.bits / 8.0;
  const double gbuf = 2 * (static_cast<double>(m.mg * m.kg) + static_cast<double>(m.kg * m.ng)) * b +
                      static_cast<double>(m.mg * m.ng) * a.accum_bits / 8.0;
  if (gbuf > a.global_buffer_bytes) return false;
  if (static_cast<double>(m.kg * m.np) * b > a.weight_buffer_bytes) return false;
  const int64_t rows = m.weight_stationary ? m.mi : 1;
  if (2.0 * static_cast<double>(rows * m.kg) * b > a.input_buffer_bytes) return false;
  if (static_cast<double>(rows * m.np) * a.accum_bits / 8.0 > a.accum_buffer_bytes) return false;
  return true;
}

double compulsory_dram_bytes(const GemmShape& g) {
  const double b = g.bits / 8.0;
  return static_cast<double>(g.batch) * (static_cast<double>(g.m * g.k) + static_cast<double>(g.k * g.n) + static_cast<double>(g.m * g.n)) * b;
}

Mapping map_gemm(const GemmShape& g, const AcceleratorParams& a, const DramParams& d, const energy::Table* table) {
  const int64_t P = a.pes, V = a.vector_units_per_pe;
  const int64_t we = static_cast<int64_t>(a.vector_width) * 4 / g.bits;  // lanes along K at this width
  const double b = g.bits / 8.0, acc = a.accum_bits;
  const double useful = static_cast<double>(g.batch) * g.m * g.n * g.k;
  Mapping best;
  double best_score = std::numeric_limits<double>::infinity(), best_tie = best_score;
  for (bool ws : {true, false})
    for (bool n_outer : {true, false})
      for (int64_t mg : sizes(16, g.m))
        for (int64_t ng : sizes(std::min<int64_t>(g.n, P), g.n))
          for (int64_t kg : sizes(std::min<int64_t>(g.k, we), g.k)) {
            Mapping m;
            m.weight_stationary = ws;
            m.n_outer = n_outer;
            m.mg = mg;
            m.ng = ng;
            m.kg = kg;
            m.np = div_up(ng, P);
            m.mi = 1;
            if (!fits(m, g, a)) continue;
            // Input rows resident per loaded weight vector: as many as the buffers allow.
            if (ws)
              while (m.mi * 2 <= mg) {
                m.mi *= 2;
                if (!fits(m, g, a)) {
                  m.mi /= 2;
                  break;
                }
              }
            const int64_t mi = m.mi;
            const int64_t tm = div_up(g.m, mg), tn = div_up(g.n, ng), tk = div_up(g.k, kg);
            m.tiles = g.batch * tm * tn * tk;
            m.cycles = static_cast<double>(m.tiles) * static_cast<double>(mg * div_up(m.np, V) * div_up(kg, we));
            m.macs = useful;
            const double wt = static_cast<double>(g.k * g.n) * b, in = static_cast<double>(g.m * g.k) * b;
            const double out = static_cast<double>(g.m * g.n) * b;
            const bool whole_k = kg >= g.k;
            const double w_dram = wt * (n_outer ? (whole_k ? 1 : tm) : tm);
            const double i_dram = in * (n_outer ? tn : (whole_k ? 1 : tn));
            m.dram_read_bytes = static_cast<double>(g.batch) * (w_dram + i_dram);
            m.dram_write_bytes = static_cast<double>(g.batch) * out;
            energy::AccelCounters& c = m.counters;
            const double performed = useful * g.input_density;
            (g.bits == 4 ? c.mac_int4 : c.mac_int8) = performed;
            c.mac_gated = useful - performed;
            c.vsq_scale = useful / a.vsq_vector;
            c.collector_updates = useful / static_cast<double>(we);
            // PE buffers: weights are re-read per input row unless held (weight-stationary);
            // each input vector is shared by the PE's vector units.
            c.wbuf_bits = useful * g.bits / (ws ? static_cast<double>(mi) : 1.0);
            c.ibuf_bits = useful * g.bits / static_cast<double>(std::min<int64_t>(V, m.np));
            // Weight-stationary: a vector unit holds `collector_depth` weight vectors and sums
            // their products in its collector before each accumulation-buffer update.
            const double depth = std::min<double>(a.collector_depth, static_cast<double>(div_up(kg, we)));
            c.abuf_bits = 2 * acc * (ws ? useful / (static_cast<double>(we) * depth) : static_cast<double>(g.batch) * g.m * g.n * tk);
            // Global buffer: DRAM fills written once, tiles read into the PEs (inputs broadcast),
            // outputs written back.
            const double to_pes = static_cast<double>(g.batch) * (wt * tm + in * tn);
            c.gbuf_bits = 8 * (m.dram_read_bytes + to_pes + 2 * m.dram_write_bytes);
            c.dram_bits = 8 * (m.dram_read_bytes + m.dram_write_bytes);
            c.sfu_ops = static_cast<double>(g.batch) * g.m * g.n;  // requantise each output
            c.pe_cycles = m.cycles * static_cast<double>(P);
            const double compute_s = m.cycles / a.clock_hz;
            const double dram_s = (m.dram_read_bytes + m.dram_write_bytes) / d.bandwidth;
            m.est_time_s = std::max(compute_s, dram_s) + d.latency_s;
            if (table) {
              const energy::Breakdown e = energy::price(c, m.est_time_s, *table, a.voltage_v);
              m.est_energy_j = e.total_j();
            }
            const double score = table ? m.est_energy_j * m.est_time_s : m.est_time_s;
            const double tie = m.dram_read_bytes + m.dram_write_bytes;
            if (score < best_score * (1 - 1e-9) || (score <= best_score * (1 + 1e-9) && tie < best_tie)) {
              best_score = score;
              best_tie = tie;
              best = m;
            }
          }
  if (best.tiles == 0) throw std::invalid_argument("no tiling of this GEMM fits the accelerator's buffers");
  return best;
}

}  // namespace xpusim::accel
