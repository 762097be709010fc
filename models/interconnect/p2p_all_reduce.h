#pragma once
// A serving runtime's own all-reduce: one kernel, not NCCL's, whose CTAs load their peers'
// buffers directly over NVLink (peer-to-peer loads of memory each GPU mapped from the others)
// and reduce them, between barriers made of flags each GPU stores into its peers' memory and
// polls in its own. vLLM's custom all-reduce (csrc/custom_all_reduce.cuh) and TensorRT-LLM's
// one-shot and two-shot kernels (cpp/tensorrt_llm/kernels/customAllReduceKernels.cu) are of
// this kind; serving runtimes run them for the small all-reduces of tensor parallelism, where
// NCCL's fixed costs dominate.
//
//   one_shot  a barrier, then every GPU loads the whole buffer from every peer and reduces it,
//             then a closing barrier (no GPU reuses its buffer before every peer has loaded
//             it): (n-1) x size into each GPU, one round of loads (vLLM's
//             cross_device_reduce_1stage: start_sync, the loads, end_sync).
//   two_shot  a barrier, every GPU loads its 1/n of the buffer from every peer and reduces it (a
//             reduce-scatter), a barrier, then every GPU loads the others' reduced parts (an
//             all-gather): 2 (n-1)/n x size into each GPU, bandwidth-optimal, two rounds
//             (cross_device_reduce_2stage: start_sync, reduce-scatter, end_sync, all-gather).
//
// With copy_in (TensorRT-LLM's kernels, customAllReduceKernels.cu with COPY_INPUT) each GPU's
// CTAs first copy its input into its own shared buffer (a read and a write of size in its HBM,
// CollectiveJob::copy_in_s), then barrier; one-shot then has no closing barrier: the peers read
// that buffer, not the caller's input.
//
// Each load crosses the fabric as a request (one way) and its data (one way, booked on the
// peer's outgoing and the reader's incoming ports, so concurrent loads queue). A barrier costs a
// flag's one-way latency between the farthest pair. The kernel's start and end are a plain
// kernel's (collectives.p2p_launch), not NCCL's launch and handshake.
#include "models/interconnect/collective.h"

namespace xpusim {

// Books the all-reduce's loads from `start` (the kernel has started) and returns when its last
// GPU is done. Precondition: every pair of job.gpus is reachable within one NVLink domain.
double run_one_shot(Fabric& f, const CollectiveJob& job, double now, double start, CollectiveRun& run);
double run_two_shot(Fabric& f, const CollectiveJob& job, double now, double start, CollectiveRun& run);

// The closed-form time of either (launch excluded): rounds of latency plus the bytes into each
// GPU at its ports' payload rate.
double p2p_estimate_s(const Topology& t, const CollectiveJob& job, CollectiveAlgo algo);

}  // namespace xpusim
