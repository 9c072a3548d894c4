// Where does CUDA's 1 GiB D2D speed come from? Research probe (not a benchmark of nvbare):
//  1. cudaMemcpyAsync D2D on hashed vs constant data (compression would favour constants);
//  2. nvbare's copy kernels (same source as host/data/bench_kernels.cu) on cudaMalloc memory;
//  3. a TMA bulk-copy kernel and loads/stores with L2 hints (bench_kernels.cu);
//  4. memcpy while a spinning kernel fills every SM: a copy-engine memcpy finishes
//     long before the spinner does, an SM memcpy cannot.
//   nvcc -O2 -arch=sm_90 -I ../../data -o d2d_probe d2d_probe.cu
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include "bench_kernels.cu"  // host/data; build with -I ../../data

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <class F> static double median5(F f) {
  std::vector<double> v; for (int r = 0; r < 5; r++) v.push_back(f());
  std::sort(v.begin(), v.end()); return v[2];
}
__global__ void fill_hash(uint4 *p, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; i += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = make_uint4(x, x * 3u + 1u, x ^ 0xdeadbeefu, ~x);
  }
}
template <int L> __global__ void copy_flat(const uint4 *src, uint4 *dst, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) st16<0>(dst + i, ld16<L>(src + i));
}
__global__ void spin(long long cycles) {
  long long t = clock64();
  while (clock64() - t < cycles) {}
}
int main() {
  cudaSetDeviceFlags(cudaDeviceScheduleSpin);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaStream_t s, s2; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  size_t sz = 1ull << 30; unsigned long long n16 = sz / 16;
  char *d, *d2; cudaMalloc(&d, sz); cudaMalloc(&d2, sz);
  fill_hash<<<sms * 8, 256>>>((uint4 *)d, n16); cudaMemset(d2, 3, sz); cudaDeviceSynchronize();
  auto gb = [&](double t) { return sz / t / 1e9; };
  auto memcpy_bw = [&] { double t = now(); cudaMemcpyAsync(d2, d, sz, cudaMemcpyDeviceToDevice, s); cudaStreamSynchronize(s); return gb(now() - t); };
  memcpy_bw();
  printf("memcpy D2D, hashed data        %8.1f GB/s\n", median5(memcpy_bw));
  auto kern = [&](const char *name, void (*k)(const uint4 *, uint4 *, unsigned long long), int bps, int thr) {
    k<<<sms * bps, thr, 0, s>>>((const uint4 *)d, (uint4 *)d2, n16); cudaStreamSynchronize(s);
    double r = median5([&] { double t = now(); k<<<sms * bps, thr, 0, s>>>((const uint4 *)d, (uint4 *)d2, n16); cudaStreamSynchronize(s); return gb(now() - t); });
    printf("kernel %-10s %3dx%-4d        %8.1f GB/s\n", name, bps, thr, r);
  };
  kern("copy16", copy16, 4, 512); kern("copy64", copy64, 4, 512); kern("copy_bulk", copy_bulk, 1, 32);
  struct K { const char *n; void (*k)(const uint4 *, uint4 *, unsigned long long); };
  K hinted[] = {{"h000_1", copy_h000_1}, {"h100_1", copy_h100_1}, {"h200_1", copy_h200_1}, {"h300_1", copy_h300_1},
                {"h110_1", copy_h110_1}, {"h120_1", copy_h120_1}, {"h100_2", copy_h100_2}, {"h100_4", copy_h100_4},
                {"h110_4", copy_h110_4}, {"h200_4", copy_h200_4}, {"h000_4", copy_h000_4}, {"h010_4", copy_h010_4}};
  for (auto &h : hinted) { kern(h.n, h.k, 4, 512); kern(h.n, h.k, 8, 256); kern(h.n, h.k, 2, 1024); }
  for (int thr : {256, 1024}) {
    unsigned blocks = (unsigned)(n16 / thr);
    auto flat = [&](const char *name, void (*k)(const uint4 *, uint4 *, unsigned long long)) {
      k<<<blocks, thr, 0, s>>>((const uint4 *)d, (uint4 *)d2, n16); cudaStreamSynchronize(s);
      double r = median5([&] { double t = now(); k<<<blocks, thr, 0, s>>>((const uint4 *)d, (uint4 *)d2, n16); cudaStreamSynchronize(s); return gb(now() - t); });
      printf("kernel %-10s flat x%-4d       %8.1f GB/s\n", name, thr, r);
    };
    flat("flat0", copy_flat<0>); flat("flat1", copy_flat<1>); flat("flat2", copy_flat<2>);
  }
  printf("memcpy D2D, hashed data again  %8.1f GB/s\n", median5(memcpy_bw));
  // check the last kernel's copy
  { std::vector<unsigned> a(1 << 20), b(1 << 20); cudaMemcpy(a.data(), d + sz - 4 * a.size(), 4 * a.size(), cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), d2 + sz - 4 * b.size(), 4 * b.size(), cudaMemcpyDeviceToHost); printf("last kernel copy tail %s\n", a == b ? "matches" : "DIFFERS"); }
  cudaMemset(d, 1, sz); cudaDeviceSynchronize();
  printf("memcpy D2D, constant data      %8.1f GB/s\n", median5(memcpy_bw));
  kern("copy16/const", copy16, 4, 512);
  // Overlap: spinner on every SM slot for ~200 ms, memcpy in another stream.
  int clk; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  long long cyc = (long long)clk * 1000 / 5;  // 200 ms
  double t0 = now();
  spin<<<sms * 16, 128, 0, s>>>(cyc);
  cudaMemcpyAsync(d2, d, sz, cudaMemcpyDeviceToDevice, s2); cudaStreamSynchronize(s2);
  double t1 = now(); cudaStreamSynchronize(s); double t2 = now();
  printf("overlap: memcpy done after %.1f ms, spinner after %.1f ms -> memcpy on %s\n", (t1 - t0) * 1e3, (t2 - t0) * 1e3, (t1 - t0) < 0.5 * (t2 - t0) ? "copy engines" : "the SMs");
  return 0;
}
