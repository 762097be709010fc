// What the warp-level MMA (mma.sync, the instruction of Ampere's kernels and FlashAttention-2)
// delivers on this GPU's tensor cores: each warp issues `chains` independent chains of
// mma.sync on register operands (no memory traffic), `warps` warps per CTA, one CTA per SM
// (and 2x the SMs), by format. Prints CSV:
//   format,shape,warps_per_cta,ctas,chains,mmas_per_warp,us,tflops,sm_cycles,macs_per_sm_per_cycle,cycles_per_mma
// tflops from CUDA events over the whole grid; sm_cycles from clock64() on SM 0's first warp,
// so macs_per_sm_per_cycle is independent of the clock the card chose. One warp with one
// chain gives the instruction's dependent latency (cycles_per_mma).
// Build: nvcc -O3 -arch=sm_90 -o mma_sync_rate mma_sync_rate.cu
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)


// One m16n8k16 bf16 MMA (fp32 accumulate): 2048 MACs.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// One m16n8k16 fp16 MMA with fp16 accumulate: 2048 MACs.
__device__ __forceinline__ void mma_fp16acc(uint32_t (&d)[2], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};\n"
               : "+r"(d[0]), "+r"(d[1])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// One m16n8k32 fp8 (e4m3) MMA, fp32 accumulate: 4096 MACs (PTX for sm_89 on; -DNO_FP8 leaves it out).
__device__ __forceinline__ void mma_fp8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#ifndef NO_FP8
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
// One m16n8k32 int8 MMA, int32 accumulate: 4096 MACs.
__device__ __forceinline__ void mma_s8(int (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int Fmt, int Chains>
__global__ void run(int iters, float* sink, long long* cycles) {
  uint32_t a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (threadIdx.x * 7u + i);
  for (int i = 0; i < 2; ++i) b[i] = 0x3c003c00u ^ (threadIdx.x * 13u + i);
  float df[Chains][4] = {};
  int di[Chains][4] = {};
  uint32_t dh[Chains][2] = {};
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < Chains; ++c) {
      if (Fmt == 0) mma_bf16(df[c], a, b);
      else if (Fmt == 1) mma_fp16acc(dh[c], a, b);
      else if (Fmt == 2) mma_fp8(df[c], a, b);
      else mma_s8(di[c], a, b);
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0;
  for (int c = 0; c < Chains; ++c)
    for (int i = 0; i < 4; ++i) s += df[c][i] + static_cast<float>(di[c][i]) + (i < 2 ? __uint_as_float(dh[c][i]) : 0.f);
  if (s == 1234.5f) sink[threadIdx.x] = s;  // keeps the MMAs
  if (blockIdx.x == 0 && threadIdx.x == 0) *cycles = t1 - t0;
}

template <int Fmt, int Chains>
void measure(const char* fmt, const char* shape, double macs_per_mma, int sms, float* sink, long long* cycles) {
  for (int warps : {1, 2, 4, 8, 16}) {
    for (int ctas_per_sm : {1, 2}) {
      const int iters = 4096;
      const int ctas = sms * ctas_per_sm;
      cudaEvent_t e0, e1;
      CHECK(cudaEventCreate(&e0));
      CHECK(cudaEventCreate(&e1));
      run<Fmt, Chains><<<ctas, 32 * warps>>>(iters, sink, cycles);  // warm
      CHECK(cudaDeviceSynchronize());
      float best = 1e30f;
      for (int r = 0; r < 5; ++r) {
        CHECK(cudaEventRecord(e0));
        run<Fmt, Chains><<<ctas, 32 * warps>>>(iters, sink, cycles);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (ms < best) best = ms;
      }
      long long cyc = 0;
      CHECK(cudaMemcpy(&cyc, cycles, sizeof(cyc), cudaMemcpyDeviceToHost));
      const double mmas_per_warp = static_cast<double>(iters) * Chains;
      const double total_macs = mmas_per_warp * warps * ctas * macs_per_mma;
      const double tflops = 2.0 * total_macs / (best * 1e-3) / 1e12;
      // SM 0's CTA 0 over its own cycles: the MACs its SM did in that time (ctas_per_sm CTAs).
      const double sm_macs = mmas_per_warp * warps * ctas_per_sm * macs_per_mma;
      printf("%s,%s,%d,%d,%d,%.0f,%.2f,%.1f,%lld,%.1f,%.2f\n", fmt, shape, warps, ctas, Chains, mmas_per_warp,
             best * 1e3, tflops, cyc, sm_macs / static_cast<double>(cyc), static_cast<double>(cyc) / mmas_per_warp);
      fflush(stdout);
      CHECK(cudaEventDestroy(e0));
      CHECK(cudaEventDestroy(e1));
    }
  }
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float* sink;
  long long* cycles;
  CHECK(cudaMalloc(&sink, 1024 * sizeof(float)));
  CHECK(cudaMalloc(&cycles, sizeof(long long)));
  printf("format,shape,warps_per_cta,ctas,chains,mmas_per_warp,us,tflops,sm_cycles,macs_per_sm_per_cycle,cycles_per_mma\n");
  measure<0, 1>("bf16", "m16n8k16", 2048, sms, sink, cycles);
  measure<0, 2>("bf16", "m16n8k16", 2048, sms, sink, cycles);
  measure<0, 4>("bf16", "m16n8k16", 2048, sms, sink, cycles);
  measure<0, 8>("bf16", "m16n8k16", 2048, sms, sink, cycles);
  measure<1, 4>("fp16_acc16", "m16n8k16", 2048, sms, sink, cycles);
  measure<1, 8>("fp16_acc16", "m16n8k16", 2048, sms, sink, cycles);
#ifndef NO_FP8
  measure<2, 4>("fp8_e4m3", "m16n8k32", 4096, sms, sink, cycles);
  measure<2, 8>("fp8_e4m3", "m16n8k32", 4096, sms, sink, cycles);
#endif
  measure<3, 4>("int8", "m16n8k32", 4096, sms, sink, cycles);
  measure<3, 8>("int8", "m16n8k32", 4096, sms, sink, cycles);
  return 0;
}
