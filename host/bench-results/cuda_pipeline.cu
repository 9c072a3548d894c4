// A copy of shared/bench/cuda_base.cu (its figures unchanged) with the counterpart of
// `nvbare bench --pipeline` added (issue 20, item 2):
//   nvcc -O2 -arch=sm_90 -o cuda_pipeline cuda_pipeline.cu -lcuda
//   ./cuda_pipeline [--json]              the baseline's figures, as cuda_base prints them
//   ./cuda_pipeline --pipeline [--json]   only the pipeline
// Pipeline: 8 chunks of 64 MiB, pinned host -> device (copy stream), copy_flat (the kernel of
// host/data/bench_kernels.cu, compute stream, after an event of the copy in), device -> pinned
// host (copy stream, after an event of the kernel); submitted in nvbare's order (copy in i+1
// before the kernel on chunk i), the CPU waiting once at the end; median of 5 after a checked
// warm-up pass. Also the same steps one at a time, synchronising after each.
// Every figure is the median of 5 repetitions. CUDA is set to spin-wait (its fastest completion mode),
// so the comparison with a polling driver is fair.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void empty() {}
extern "C" __global__ void copy_flat(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <class F> static double median5(F f) {
  std::vector<double> v; for (int r = 0; r < 5; r++) v.push_back(f());
  std::sort(v.begin(), v.end()); return v[2];
}
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

static int pipeline(bool json) {
  const int C = 8; const size_t chunk = 64ull << 20, total = chunk * C, n16 = chunk / 16;
  unsigned char *hin, *hout, *a, *b;
  CK(cudaMallocHost((void **)&hin, total)); CK(cudaMallocHost((void **)&hout, total));
  CK(cudaMalloc((void **)&a, total)); CK(cudaMalloc((void **)&b, total));
  for (size_t i = 0; i < total / 8; i++) ((unsigned long long *)hin)[i] = i * 0x9e3779b97f4a7c15ull ^ 0x5eed;
  memset(hout, 0, total);
  cudaStream_t cs, ks;
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
  cudaEvent_t ein[C], ek[C];
  for (int i = 0; i < C; i++) { CK(cudaEventCreateWithFlags(&ein[i], cudaEventDisableTiming)); CK(cudaEventCreateWithFlags(&ek[i], cudaEventDisableTiming)); }
  unsigned grid = (unsigned)((n16 + 255) / 256);
  auto in = [&](int i) { cudaMemcpyAsync(a + i * chunk, hin + i * chunk, chunk, cudaMemcpyHostToDevice, cs); cudaEventRecord(ein[i], cs); };
  auto pass = [&] {
    double t = now();
    in(0);
    for (int i = 0; i < C; i++) {
      if (i + 1 < C) in(i + 1);
      cudaStreamWaitEvent(ks, ein[i], 0);
      copy_flat<<<grid, 256, 0, ks>>>((const uint4 *)(a + i * chunk), (uint4 *)(b + i * chunk), n16);
      cudaEventRecord(ek[i], ks);
      cudaStreamWaitEvent(cs, ek[i], 0);
      cudaMemcpyAsync(hout + i * chunk, b + i * chunk, chunk, cudaMemcpyDeviceToHost, cs);
    }
    cudaStreamSynchronize(cs);
    return (now() - t) * 1e3;
  };
  pass();
  CK(cudaGetLastError());
  if (memcmp(hin, hout, total)) { fprintf(stderr, "pipeline: the data came back wrong\n"); return 1; }
  double piped = median5(pass);
  double serial = median5([&] {
    double t = now();
    for (int i = 0; i < C; i++) {
      cudaMemcpyAsync(a + i * chunk, hin + i * chunk, chunk, cudaMemcpyHostToDevice, cs); cudaStreamSynchronize(cs);
      copy_flat<<<grid, 256, 0, ks>>>((const uint4 *)(a + i * chunk), (uint4 *)(b + i * chunk), n16); cudaStreamSynchronize(ks);
      cudaMemcpyAsync(hout + i * chunk, b + i * chunk, chunk, cudaMemcpyDeviceToHost, cs); cudaStreamSynchronize(cs);
    }
    return (now() - t) * 1e3;
  });
  CK(cudaGetLastError());
  double gbps = total / (piped * 1e6);
  if (json) printf("{\"chunks\":%d,\"chunk_MiB\":%zu,\"pipeline_ms\":%.3f,\"pipeline_GBps\":%.2f,\"serial_ms\":%.3f}\n", C, chunk >> 20, piped, gbps, serial);
  else printf("pipeline %d x %zu MiB: overlapped (2 streams + events) %.3f ms %.2f GB/s; one step at a time %.3f ms\n", C, chunk >> 20, piped, gbps, serial);
  return 0;
}

int main(int argc, char **argv) {
  bool json = (argc > 1 && !strcmp(argv[1], "--json")) || (argc > 2 && !strcmp(argv[2], "--json"));
  CK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
  CK(cudaFree(0));
  if (argc > 1 && !strcmp(argv[1], "--pipeline")) return pipeline(json);
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < 1000; i++) empty<<<1, 1, 0, s>>>();
  CK(cudaStreamSynchronize(s));
  const int N = 20000;
  double rt = median5([&] { double t = now(); for (int i = 0; i < N; i++) { empty<<<1, 1, 0, s>>>(); cudaStreamSynchronize(s); } return (now() - t) / N * 1e6; });
  double thr = median5([&] { double t = now(); for (int i = 0; i < N; i++) empty<<<1, 1, 0, s>>>(); cudaStreamSynchronize(s); return (now() - t) / N * 1e6; });
  // CUDA graph of 1000 empty kernels: the lowest per-kernel cost CUDA offers.
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 1000; i++) empty<<<1, 1, 0, s>>>();
  CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s)); CK(cudaStreamSynchronize(s));
  double graph = median5([&] { double t = now(); for (int i = 0; i < 20; i++) cudaGraphLaunch(ge, s); cudaStreamSynchronize(s); return (now() - t) / (20 * 1000) * 1e6; });
  size_t sz = 1ull << 30; void *h, *d, *d2;
  CK(cudaMallocHost(&h, sz)); CK(cudaMalloc(&d, sz)); CK(cudaMalloc(&d2, sz));
  memset(h, 1, sz); CK(cudaMemset(d, 2, sz)); CK(cudaMemset(d2, 3, sz)); CK(cudaDeviceSynchronize());
  double h2d = median5([&] { double t = now(); cudaMemcpyAsync(d, h, sz, cudaMemcpyHostToDevice, s); cudaStreamSynchronize(s); return sz / (now() - t) / 1e9; });
  double d2h = median5([&] { double t = now(); cudaMemcpyAsync(h, d, sz, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); return sz / (now() - t) / 1e9; });
  double d2d = median5([&] { double t = now(); cudaMemcpyAsync(d2, d, sz, cudaMemcpyDeviceToDevice, s); cudaStreamSynchronize(s); return sz / (now() - t) / 1e9; });
  double al2 = median5([&] { double t = now(); for (int i = 0; i < 200; i++) { void *p; cudaMalloc(&p, 2 << 20); cudaFree(p); } return (now() - t) / 200 * 1e6; });
  double al1g = median5([&] { double t = now(); for (int i = 0; i < 5; i++) { void *p; cudaMalloc(&p, 1ull << 30); cudaFree(p); } return (now() - t) / 5 * 1e6; });
  if (json) {
    printf("{\"launch_roundtrip_us\":%.3f,\"launch_async_us\":%.3f,\"launch_graph_us\":%.3f,\"h2d_GBps\":%.2f,\"d2h_GBps\":%.2f,"
           "\"d2d_GBps\":%.2f,\"alloc_free_2MiB_us\":%.2f,\"alloc_free_1GiB_us\":%.2f}\n", rt, thr, graph, h2d, d2h, d2d, al2, al1g);
  } else {
    printf("empty kernel launch + completion round trip  %8.3f us\n", rt);
    printf("empty kernel, async launches, per launch     %8.3f us\n", thr);
    printf("empty kernel in a CUDA graph, per kernel     %8.3f us\n", graph);
    printf("1 GiB H2D pinned                              %8.2f GB/s\n", h2d);
    printf("1 GiB D2H pinned                              %8.2f GB/s\n", d2h);
    printf("1 GiB D2D (bytes copied)                      %8.2f GB/s\n", d2d);
    printf("cudaMalloc+cudaFree 2 MiB                     %8.2f us\n", al2);
    printf("cudaMalloc+cudaFree 1 GiB                     %8.2f us\n", al1g);
  }
  return 0;
}
