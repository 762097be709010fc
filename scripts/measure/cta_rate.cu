// How fast the block scheduler starts CTAs: kernels of empty CTAs (and of CTAs that load and
// store one element a thread) by grid size and CTA size, 50 launches back to back on a stream,
// timed with CUDA events. Prints CSV: kernel,threads,ctas,us_per_kernel
// The slope over the grid size is the time per CTA the GPU needs when the CTAs do nothing.
// Build: nvcc -O3 -arch=sm_90 -o cta_rate cta_rate.cu
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void empty() {}

__global__ void touch(const float* __restrict__ in, float* __restrict__ out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  out[i] = in[i] + 1.f;
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t max_elems = size_t(sms) * 2048 * 1024;
  float *in, *out;
  CHECK(cudaMalloc(&in, max_elems * sizeof(float)));
  CHECK(cudaMalloc(&out, max_elems * sizeof(float)));
  CHECK(cudaMemset(in, 0, max_elems * sizeof(float)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  printf("kernel,threads,ctas,us_per_kernel\n");
  const int reps = 50;
  for (int k = 0; k < 2; ++k)
    for (int threads : {32, 128, 256, 1024})
      for (int per_sm : {1, 8, 64, 512, 2048}) {
        const size_t ctas = size_t(sms) * per_sm;
        if (ctas * threads > max_elems) continue;
        auto launch = [&] {
          if (k == 0) empty<<<unsigned(ctas), threads>>>();
          else touch<<<unsigned(ctas), threads>>>(in, out);
        };
        for (int i = 0; i < 5; ++i) launch();
        CHECK(cudaDeviceSynchronize());
        float best = 1e30f;
        for (int t = 0; t < 5; ++t) {
          CHECK(cudaEventRecord(a));
          for (int i = 0; i < reps; ++i) launch();
          CHECK(cudaEventRecord(b));
          CHECK(cudaEventSynchronize(b));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, a, b));
          if (ms < best) best = ms;
        }
        printf("%s,%d,%zu,%.3f\n", k == 0 ? "empty" : "load+store", threads, ctas, best * 1e3 / reps);
      }
  return 0;
}
