// CUDA baseline for nvbare's benchmarks: a copy of shared/bench/cuda_base.cu (same figures, same code)
// plus the CUDA graph counterpart of nvbare's recorded-sequence replay (issue 20, item 1). Build and
// run on the GPU machine, in the same run as nvbare's:
//   nvcc -O2 -arch=sm_90 -o cuda_base_graph cuda_base_graph.cu -lcuda && ./cuda_base_graph [--json]
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
// As nvbare's bench_kernels.cu store_value.
__global__ void store_value(unsigned long long *addr, unsigned long long value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *addr = value;
}
// The same two kernels written for programmatic dependent launch (as host/data/pdl_kernels.cu without
// -DWAIT_ONLY): each lets its dependents launch, then waits for the grids before it.
__global__ void empty_pdl() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
__global__ void store_value_pdl(unsigned long long *addr, unsigned long long value) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (threadIdx.x == 0 && blockIdx.x == 0) *addr = value;
}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <class F> static double median5(F f) {
  std::vector<double> v; for (int r = 0; r < 5; r++) v.push_back(f());
  std::sort(v.begin(), v.end()); return v[2];
}
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char **argv) {
  bool json = argc > 1 && !strcmp(argv[1], "--json");
  CK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
  CK(cudaFree(0));
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
  // The same kernels as nvbare's replay figure (bench.rs, replay_per_kernel): 1000 launches of
  // <<<1, 1>>>, empty and store_value alternately, each node depending on the one before it (in order),
  // instantiated once; before each replay the last store_value node's value is set with
  // cudaGraphExecKernelNodeSetParams. Per kernel, 20 replays, the CPU waiting once at the end; the
  // value the last replay stored is checked. graph_same_us: the same graph replayed without updates.
  unsigned long long *flag; CK(cudaMallocHost((void **)&flag, 4096)); *flag = 0;
  cudaGraph_t g2; CK(cudaGraphCreate(&g2, 0));
  cudaGraphNode_t prev = nullptr, last_store = nullptr;
  unsigned long long zero = 0;
  void *store_args[2] = {&flag, &zero};
  for (int i = 0; i < 1000; i++) {
    cudaKernelNodeParams p = {};
    p.gridDim = dim3(1); p.blockDim = dim3(1); p.sharedMemBytes = 0;
    p.func = (i % 2) ? (void *)store_value : (void *)empty;
    p.kernelParams = (i % 2) ? store_args : nullptr;
    cudaGraphNode_t n;
    CK(cudaGraphAddKernelNode(&n, g2, prev ? &prev : nullptr, prev ? 1 : 0, &p));
    prev = n;
    if (i % 2) last_store = n;
  }
  cudaGraphExec_t ge2; CK(cudaGraphInstantiate(&ge2, g2, 0));
  unsigned long long value = 0;
  auto update = [&]() {
    value++;
    unsigned long long v = value;
    void *args[2] = {&flag, &v};
    cudaKernelNodeParams p = {};
    p.gridDim = dim3(1); p.blockDim = dim3(1); p.sharedMemBytes = 0;
    p.func = (void *)store_value; p.kernelParams = args;
    return cudaGraphExecKernelNodeSetParams(ge2, last_store, &p);
  };
  CK(update()); CK(cudaGraphLaunch(ge2, s)); CK(cudaStreamSynchronize(s));
  double graph_same = median5([&] { double t = now(); for (int i = 0; i < 20; i++) cudaGraphLaunch(ge2, s); cudaStreamSynchronize(s); return (now() - t) / (20 * 1000) * 1e6; });
  cudaError_t upd_err = cudaSuccess;
  double graph_update = median5([&] {
    double t = now();
    for (int i = 0; i < 20; i++) { cudaError_t e = update(); if (e != cudaSuccess) upd_err = e; cudaGraphLaunch(ge2, s); }
    cudaStreamSynchronize(s);
    return (now() - t) / (20 * 1000) * 1e6;
  });
  CK(upd_err);
  if (*flag != value) { fprintf(stderr, "graph with updates: the last replay stored %llu, not %llu\n", *flag, value); return 1; }
  // graph_pdl_update_us: the same 1000 launches of the programmatic kernels above, captured with
  // cudaLaunchAttributeProgrammaticStreamSerialization (programmatic edges: each grid may start
  // before the one before it completes, its griddepcontrol.wait keeps the order), the last
  // store's value set before each replay as above. For nvbare bench --programmatic.
  cudaGraph_t g3; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 1000; i++) {
    cudaLaunchConfig_t c = {}; c.gridDim = dim3(1); c.blockDim = dim3(1); c.stream = s;
    cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1; c.attrs = at; c.numAttrs = 1;
    if (i % 2) CK(cudaLaunchKernelEx(&c, store_value_pdl, flag, (unsigned long long)0));
    else CK(cudaLaunchKernelEx(&c, empty_pdl));
  }
  CK(cudaStreamEndCapture(s, &g3));
  size_t nn = 0; CK(cudaGraphGetNodes(g3, nullptr, &nn));
  std::vector<cudaGraphNode_t> nodes(nn); CK(cudaGraphGetNodes(g3, nodes.data(), &nn));
  cudaGraphNode_t pdl_store = nullptr;  // the last store_value_pdl node in the graph's order
  for (size_t i = 0; i < nn; i++) {
    cudaKernelNodeParams kp = {};
    if (cudaGraphKernelNodeGetParams(nodes[i], &kp) == cudaSuccess && kp.func == (void *)store_value_pdl) pdl_store = nodes[i];
  }
  if (!pdl_store) { fprintf(stderr, "programmatic graph: no store_value_pdl node\n"); return 1; }
  cudaGraphExec_t ge3; CK(cudaGraphInstantiate(&ge3, g3, 0));
  auto update_pdl = [&]() {
    value++;
    unsigned long long v = value;
    void *args[2] = {&flag, &v};
    cudaKernelNodeParams p = {};
    p.gridDim = dim3(1); p.blockDim = dim3(1); p.sharedMemBytes = 0;
    p.func = (void *)store_value_pdl; p.kernelParams = args;
    return cudaGraphExecKernelNodeSetParams(ge3, pdl_store, &p);
  };
  CK(update_pdl()); CK(cudaGraphLaunch(ge3, s)); CK(cudaStreamSynchronize(s));
  double graph_pdl_update = median5([&] {
    double t = now();
    for (int i = 0; i < 20; i++) { cudaError_t e = update_pdl(); if (e != cudaSuccess) upd_err = e; cudaGraphLaunch(ge3, s); }
    cudaStreamSynchronize(s);
    return (now() - t) / (20 * 1000) * 1e6;
  });
  CK(upd_err);
  if (*flag != value) { fprintf(stderr, "programmatic graph with updates: the last replay stored %llu, not %llu\n", *flag, value); return 1; }
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
           "\"d2d_GBps\":%.2f,\"alloc_free_2MiB_us\":%.2f,\"alloc_free_1GiB_us\":%.2f,"
           "\"graph_same_us\":%.3f,\"graph_update_us\":%.3f,\"graph_pdl_update_us\":%.3f}\n", rt, thr, graph, h2d, d2h, d2d, al2, al1g, graph_same, graph_update, graph_pdl_update);
  } else {
    printf("empty kernel launch + completion round trip  %8.3f us\n", rt);
    printf("empty kernel, async launches, per launch     %8.3f us\n", thr);
    printf("empty kernel in a CUDA graph, per kernel     %8.3f us\n", graph);
    printf("1 GiB H2D pinned                              %8.2f GB/s\n", h2d);
    printf("1 GiB D2H pinned                              %8.2f GB/s\n", d2h);
    printf("1 GiB D2D (bytes copied)                      %8.2f GB/s\n", d2d);
    printf("cudaMalloc+cudaFree 2 MiB                     %8.2f us\n", al2);
    printf("cudaMalloc+cudaFree 1 GiB                     %8.2f us\n", al1g);
    printf("1000 kernels (empty, store) graph, per kernel %8.3f us\n", graph_same);
    printf("same, one node's params set per replay, each  %8.3f us\n", graph_update);
    printf("same, programmatic kernels and edges, each    %8.3f us\n", graph_pdl_update);
  }
  return 0;
}
