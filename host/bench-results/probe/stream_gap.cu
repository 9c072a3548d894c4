// How fast CUDA 13's own stream order runs on the GPU, with the CPU out of the way:
// a spin kernel holds the GPU while N small kernels (empty and store_value alternately, as
// nvbare bench's replay) are queued behind it in the same stream; events just after the spin
// and after the last kernel give the GPU time per kernel. Also a captured graph of the same
// kernels launched behind a spin (graph order), for the same measure.
// Build: nvcc -O2 -arch=sm_90 -o stream_gap stream_gap.cu
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void spin(long long cycles) { long long t = clock64(); while (clock64() - t < cycles) {} }
__global__ void empty() {}
__global__ void store_value(unsigned long long *addr, unsigned long long value) { *addr = value; }

int main() {
  const int N = 1000;
  unsigned long long *flag; CK(cudaMallocHost((void **)&flag, 4096)); *flag = 0;
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int round = 0; round < 5; round++) {
    spin<<<1, 1, 0, s>>>(200LL * 1000 * 1000);  // ~100 ms at ~2 GHz: longer than queueing N
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < N; i++) {
      if (i % 2) store_value<<<1, 1, 0, s>>>(flag, round * N + i); else empty<<<1, 1, 0, s>>>();
    }
    CK(cudaEventRecord(b, s));
    CK(cudaStreamSynchronize(s));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    printf("{\"what\":\"stream\",\"round\":%d,\"gpu_us_per_kernel\":%.3f,\"flag_ok\":%d}\n", round, ms * 1000 / N, *flag == (unsigned long long)(round * N + N - 1));
  }
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < N; i++) {
    if (i % 2) store_value<<<1, 1, 0, s>>>(flag, 7); else empty<<<1, 1, 0, s>>>();
  }
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int round = 0; round < 5; round++) {
    spin<<<1, 1, 0, s>>>(20LL * 1000 * 1000);
    CK(cudaEventRecord(a, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(b, s));
    CK(cudaStreamSynchronize(s));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    printf("{\"what\":\"graph\",\"round\":%d,\"gpu_us_per_kernel\":%.3f}\n", round, ms * 1000 / N);
  }
  return 0;
}
