// Latencies of the instructions a block-wide reduction is made of, in SM cycles (clock64()):
// dependent chains of warp shuffles, FP32 arithmetic, reciprocals and square roots; CTA barriers
// by CTA size, alone and with a shared-memory exchange between them; and the whole two-level
// reduction PyTorch's LayerNorm kernel runs after loading a row (a Welford combine over five
// shuffle levels, then across warps through shared memory with two barriers per level).
// Each figure is the median over the CTAs of a grid of 1 CTA, and of 8 CTAs per SM on every SM.
// Prints CSV: test,threads,ctas_per_sm,cycles_per_op
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -o sync_latency sync_latency.cu
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr unsigned kFull = 0xffffffffu;

// A dependent chain of one operation, v = op(v) `iters` times, timed on the first thread of
// every CTA: cycles / iters go to cyc[cta], and `sink` keeps the chain alive.
template <class Op>
__global__ void chain(int iters, float start, float step, Op op, float* sink, double* cyc) {
  float v = start + threadIdx.x * step;
  __syncwarp();
  const long long t0 = clock64();
#pragma unroll 16
  for (int i = 0; i < iters; ++i) v = op(v);
  const long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = double(t1 - t0) / iters;
  sink[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

struct Shfl {  // a shuffle alone
  __device__ float operator()(float v) const { return __shfl_xor_sync(kFull, v, 1); }
};
struct ShflAdd {  // one level of a sum reduction: a shuffle and the add that consumes it
  __device__ float operator()(float v) const { return v + __shfl_xor_sync(kFull, v, 1); }
};
struct Ffma {
  float a, b;
  __device__ float operator()(float v) const { return fmaf(v, a, b); }
};
struct RcpIeee {  // 1.f / x as PyTorch's Welford code writes it (IEEE-rounded, no fast math)
  float a;
  __device__ float operator()(float v) const { return 1.0f / v + a; }
};
struct RcpFast {
  float a;
  __device__ float operator()(float v) const { return __fdividef(1.0f, v) + a; }
};
struct DivIeee {
  float a;
  __device__ float operator()(float v) const { return a / v + 1.0f; }
};
struct Rsqrt {
  float a;
  __device__ float operator()(float v) const { return rsqrtf(v) + a; }
};
struct Exp {
  float a;
  __device__ float operator()(float v) const { return __expf(-v) + a; }
};

__global__ void barrier(int iters, float* sink, double* cyc) {
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = double(t1 - t0) / iters;
  sink[blockIdx.x * blockDim.x + threadIdx.x] = 0;
}

// A value passed through shared memory: store, barrier, load another thread's, barrier.
__global__ void barrier_smem(int iters, float* sink, double* cyc) {
  __shared__ float s[1024];
  float v = threadIdx.x;
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    s[threadIdx.x] = v;
    __syncthreads();
    v = s[(threadIdx.x + 1) % blockDim.x] + 1.0f;
    __syncthreads();
  }
  const long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = double(t1 - t0) / iters;
  sink[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

struct Welford { float mean, sigma2, count; };

__device__ __forceinline__ Welford combine(Welford a, Welford b) {
  const float count = a.count + b.count;
  if (count > 0.f) {
    const float coef = 1.f / count;
    const float na = a.count * coef, nb = b.count * coef;
    const float delta = b.mean - a.mean;
    return {na * a.mean + nb * b.mean, a.sigma2 + b.sigma2 + delta * delta * a.count * nb, count};
  }
  return a;
}

// The reduction of PyTorch's vectorized_layer_norm_kernel (ATen/native/cuda/layer_norm_kernel.cu,
// compute_stats) after the loads: a block of 32 x y threads; shuffle levels 16..1, then y/2..1
// levels through shared memory, two barriers each, and a final barrier to broadcast.
__global__ void welford_block(int iters, float* sink, double* cyc) {
  __shared__ float buf[3 * 32];
  Welford wd{threadIdx.x * 1e-3f, 1.f, 4.f};
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    for (int off = 16; off > 0; off >>= 1) {
      Welford b{__shfl_down_sync(kFull, wd.mean, off), __shfl_down_sync(kFull, wd.sigma2, off),
                __shfl_down_sync(kFull, wd.count, off)};
      wd = combine(wd, b);
    }
    if (blockDim.y > 1) {
      for (int off = blockDim.y / 2; off > 0; off /= 2) {
        if (threadIdx.x == 0 && threadIdx.y >= off && threadIdx.y < 2 * off) {
          const int w = threadIdx.y - off;
          buf[2 * w] = wd.mean;
          buf[2 * w + 1] = wd.sigma2;
          buf[64 + w] = wd.count;
        }
        __syncthreads();
        if (threadIdx.x == 0 && threadIdx.y < off) wd = combine(wd, Welford{buf[2 * threadIdx.y], buf[2 * threadIdx.y + 1], buf[64 + threadIdx.y]});
        __syncthreads();
      }
      if (threadIdx.x == 0 && threadIdx.y == 0) { buf[0] = wd.mean; buf[1] = wd.sigma2 * 1e-3f; }
      __syncthreads();
      wd = Welford{buf[0], buf[1] + 1.f, 4.f};
      __syncthreads();  // the next repetition writes buf
    } else {
      wd = Welford{__shfl_sync(kFull, wd.mean, 0), __shfl_sync(kFull, wd.sigma2, 0) + 1.f, 4.f};
    }
  }
  const long long t1 = clock64();
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  if (t == 0) cyc[blockIdx.x] = double(t1 - t0) / iters;
  sink[blockIdx.x * blockDim.x * blockDim.y + t] = wd.mean + wd.sigma2;
}

// A sum over the block as PyTorch's softmax and reduction kernels write it (cuda_utils
// BlockReduce): warp shuffles, one shared-memory exchange between two barriers, shuffles again.
__global__ void sum_block(int iters, float* sink, double* cyc) {
  __shared__ float buf[32];
  float v = threadIdx.x * 1e-3f;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(kFull, v, off);
    if (lane == 0) buf[warp] = v;
    __syncthreads();
    v = lane < warps ? buf[lane] : 0.f;
    if (warp == 0)
      for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(kFull, v, off);
    if (threadIdx.x == 0) buf[0] = v;
    __syncthreads();
    v = buf[0] * 1e-3f + lane;
    __syncthreads();
  }
  const long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = double(t1 - t0) / iters;
  sink[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

template <class Launch>
void report(const char* test, int threads, int label, int ctas, Launch launch) {
  double* d;
  CHECK(cudaMalloc(&d, ctas * sizeof(double)));
  launch(ctas, d);  // warm-up (instruction cache, clocks)
  CHECK(cudaDeviceSynchronize());
  launch(ctas, d);
  CHECK(cudaDeviceSynchronize());
  std::vector<double> h(ctas);
  CHECK(cudaMemcpy(h.data(), d, ctas * sizeof(double), cudaMemcpyDeviceToHost));
  std::sort(h.begin(), h.end());
  printf("%s,%d,%d,%.2f\n", test, threads, label, h[h.size() / 2]);
  CHECK(cudaFree(d));
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float* sink;
  CHECK(cudaMalloc(&sink, size_t(sms) * 8 * 1024 * sizeof(float)));
  const int n = 4096;
  printf("test,threads,ctas_per_sm,cycles_per_op\n");
  // ctas_per_sm 0: one CTA on the whole GPU; 8: eight CTAs on every SM.
  for (int per : {0, 8}) {
    const int ctas = per == 0 ? 1 : sms * per;
    auto op = [&](const char* name, float start, float step, auto f) {
      report(name, 32, per, ctas, [&](int c, double* d) { chain<<<c, 32>>>(n, start, step, f, sink, d); });
    };
    op("shfl (dependent)", 0.f, 1.f, Shfl{});
    op("shfl + fadd", 0.f, 1e-3f, ShflAdd{});
    op("ffma", 0.f, 1.f, Ffma{0.999f, 1e-3f});
    op("1.f/x (ieee) + fadd", 1.5f, 1.f, RcpIeee{0.5f});
    op("__fdividef(1,x) + fadd", 1.5f, 1.f, RcpFast{0.5f});
    op("a/x (ieee) + fadd", 1.5f, 1.f, DivIeee{0.7f});
    op("rsqrtf + fadd", 1.5f, 1.f, Rsqrt{0.5f});
    op("__expf + fadd", 0.5f, 1e-3f, Exp{0.5f});
    for (int t : {32, 64, 128, 256, 512, 1024}) {
      if (per * t > 2048) continue;
      report("__syncthreads", t, per, ctas, [&](int c, double* d) { barrier<<<c, t>>>(n, sink, d); });
      report("smem store + barrier + load + barrier", t, per, ctas, [&](int c, double* d) { barrier_smem<<<c, t>>>(n, sink, d); });
      report("block sum (shfl, smem, shfl, broadcast)", t, per, ctas, [&](int c, double* d) { sum_block<<<c, t>>>(n / 8, sink, d); });
      report("layernorm welford reduction (32 x t/32)", t, per, ctas,
             [&](int c, double* d) { welford_block<<<c, dim3(32, t / 32)>>>(n / 8, sink, d); });
    }
  }
  return 0;
}
