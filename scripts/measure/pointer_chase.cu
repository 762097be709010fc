// Load-to-use latency by footprint: one thread follows pointers `stride` bytes apart, the same
// pattern as traces/microbench/pointer-chase.yaml. A first lap warms the caches (unless cold),
// then `loads` dependent loads are timed with clock64(). Prints one CSV line per footprint:
// footprint_bytes,stride_bytes,warm,cycles_per_load,ns_per_load
// Build: nvcc -O2 -arch=sm_90 -o pointer_chase pointer_chase.cu
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void chase(const uint64_t* __restrict__ a, uint64_t start, int warm_loads, int loads, long long* cycles, uint64_t* sink) {
  uint64_t p = start;
  for (int i = 0; i < warm_loads; ++i) p = a[p];
  long long t0 = clock64();
  for (int i = 0; i < loads; ++i) p = a[p];
  long long t1 = clock64();
  *cycles = t1 - t0;
  *sink = p;
}

int main() {
  struct Case { size_t footprint, stride; bool warm; };
  const Case cases[] = {
      {16384, 128, true}, {131072, 128, true}, {1 << 20, 128, true}, {8 << 20, 128, true},
      {32u << 20, 128, true}, {256u << 20, 65536, false}};
  const int loads = 2000;
  int clk_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, 0));
  long long* d_cycles; uint64_t* d_sink;
  CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
  CHECK(cudaMalloc(&d_sink, sizeof(uint64_t)));
  printf("footprint_bytes,stride_bytes,warm,cycles_per_load,ns_per_load_at_max_clock\n");
  for (const Case& c : cases) {
    const size_t n = c.footprint / sizeof(uint64_t), step = c.stride / sizeof(uint64_t);
    std::vector<uint64_t> h(n, 0);
    for (size_t i = 0; i < n; i += step) h[i] = (i + step) % n;  // a ring, stride apart
    uint64_t* d;
    CHECK(cudaMalloc(&d, c.footprint));
    CHECK(cudaMemcpy(d, h.data(), c.footprint, cudaMemcpyHostToDevice));
    const int lap = static_cast<int>(n / step);
    // Cold: flush the L2 by touching a large buffer first.
    if (!c.warm) {
      void* junk; CHECK(cudaMalloc(&junk, 512u << 20)); CHECK(cudaMemset(junk, 1, 512u << 20)); CHECK(cudaFree(junk));
    }
    chase<<<1, 1>>>(d, 0, c.warm ? lap : 0, loads, d_cycles, d_sink);
    CHECK(cudaDeviceSynchronize());
    long long cycles = 0;
    CHECK(cudaMemcpy(&cycles, d_cycles, sizeof cycles, cudaMemcpyDeviceToHost));
    const double cpl = static_cast<double>(cycles) / loads;
    printf("%zu,%zu,%d,%.1f,%.1f\n", c.footprint, c.stride, c.warm ? 1 : 0, cpl, cpl / (clk_khz * 1e3) * 1e9);
    CHECK(cudaFree(d));
  }
  return 0;
}
