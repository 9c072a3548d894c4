// Research probe (issue 20, item 1): programmatic dependent launch (PDL) in a CUDA graph on
// Hopper, against the plain graph that `cuda_base_graph` measures.
//
// Kernels that wait for the grids they depend on (`griddepcontrol.wait`) may be launched
// before those grids have finished (`cudaLaunchAttributeProgrammaticStreamSerialization`,
// captured into a graph as programmatic edges): the next grid's launch overlaps the last
// one's tail, and the wait in the kernel, not the launch, keeps the order. This probe prints
//   - per kernel, 1000 kernels (empty and store alternately, <<<1, 1>>>) as a graph: plain
//     kernels with plain edges (cuda_base_graph's `graph_same_us`), then kernels that wait
//     (with and without an early `griddepcontrol.launch_dependents`) with programmatic edges;
//   - the ordering check nvbare's bench runs (64 dependent vector_add grids of 2^20 elements,
//     y[j] += x[j + n/2], then x[j] += y[j + n - 1024], replayed twice, against the same steps on
//     the CPU; elements wrong), for each, and for kernels that let dependents launch but never
//     wait (which must fail: the check can tell);
//   - the latch IDs of a 300-node programmatic graph (how CUDA numbers and reuses them);
//   - the QMDs CUDA writes for the programmatic graph (launch dimensions nothing else uses,
//     found as graph_qmd_probe finds them), as raw words to decode against clcbc0qmd.h.
//
// Build: nvcc -O2 -arch=sm_90 -o pdl_probe pdl_probe.cu
#include <algorithm>
#include <chrono>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e = (x);                                                        \
    if (e != cudaSuccess) {                                                     \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                   \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

// Variant: 0 plain, 1 wait, 2 trigger then wait, 3 trigger, no wait.
template <int V> __device__ __forceinline__ void depend() {
  if (V == 2 || V == 3) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (V == 1 || V == 2) asm volatile("griddepcontrol.wait;" ::: "memory");
}
template <int V> __global__ void empty_k() { depend<V>(); }
template <int V> __global__ void store_k(unsigned long long *a, unsigned long long v) {
  depend<V>();
  if (threadIdx.x == 0 && blockIdx.x == 0) *a = v;
}
template <int V> __global__ void vadd_k(const float *a, const float *b, float *c, int n) {
  depend<V>();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

static const char *names[] = {"plain kernels, plain edges", "wait, programmatic edges",
                              "trigger+wait, programmatic edges",
                              "trigger, no wait, programmatic edges (must fail)"};

template <class... P, class... A>
static void launch(bool pdl, void (*k)(P...), dim3 g, dim3 b, cudaStream_t s, A... args) {
  cudaLaunchConfig_t c = {};
  c.gridDim = g;
  c.blockDim = b;
  c.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  c.attrs = pdl ? at : nullptr;
  c.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&c, k, args...));
}

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <int V> static void run_variant(cudaStream_t s, unsigned long long *flag, float *x, float *y,
                                         float *one, int n) {
  bool pdl = V != 0;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  if (V != 3) {
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 1000; i++) {
      if (i % 2) launch(pdl, store_k<V>, dim3(1), dim3(1), s, flag, (unsigned long long)i);
      else launch(pdl, empty_k<V>, dim3(1), dim3(1), s);
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    std::vector<double> v;
    for (int r = 0; r < 5; r++) {
      double t = now();
      for (int i = 0; i < 20; i++) cudaGraphLaunch(ge, s);
      CK(cudaStreamSynchronize(s));
      v.push_back((now() - t) / (20 * 1000) * 1e6);
    }
    std::sort(v.begin(), v.end());
    printf("graph of 1000, %s: %.3f us per kernel (5 medians of 20 replays: %.3f %.3f %.3f %.3f %.3f), last store %llu\n",
           names[V], v[2], v[0], v[1], v[2], v[3], v[4], *flag);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
  }
  // The ordering check, as nvbare's bench runs it (host/src/replay.rs order_errors): two
  // buffers of 2n - 1024 floats, 0 then 1 from n on (never written); the grids take turns,
  // y[j] += x[j + n/2], x[j] += y[j + n - 1024] for j < n, so each grid's first CTAs read what
  // later CTAs of the grid before wrote; compared with the same steps on the CPU.
  const int shifts[2] = {n / 2, n - 1024}, len = n + shifts[1];
  std::vector<float> start(len), mx, my;
  for (int j = 0; j < len; j++) start[j] = j < n ? 0.f : 1.f;
  mx = start; my = start;
  for (int i = 0; i < 128; i++) {
    std::vector<float> &src = i % 2 ? my : mx, &dst = i % 2 ? mx : my;
    for (int j = 0; j < n; j++) dst[j] += src[j + shifts[i % 2]];
  }
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 64; i++) {
    float *src = i % 2 ? y : x, *dst = i % 2 ? x : y;
    launch(pdl, vadd_k<V>, dim3(n / 256), dim3(256), s, (const float *)(src + shifts[i % 2]), (const float *)dst, dst, n);
  }
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  long wrong = 0;
  for (int rep = 0; rep < 3; rep++) {
    CK(cudaMemcpy(x, start.data(), len * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(y, start.data(), len * 4, cudaMemcpyHostToDevice));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    std::vector<float> hx(n), hy(n);
    CK(cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) wrong += (hx[i] != mx[i]) + (hy[i] != my[i]);
  }
  printf("ordering check, %s: %ld wrong of %d (3 times 2 replays)\n", names[V], wrong, 3 * 2 * n);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
}

static sigjmp_buf jb;
static void on_fault(int) { siglongjmp(jb, 1); }
static int qmd_hits = 0;
struct Shape { uint32_t grid, block; const char *what; };
static int latch_hits = 0;
static const Shape shapes[] = {{37, 97, "pdl trigger+wait A"}, {41, 89, "pdl trigger+wait B"},
                               {43, 83, "pdl wait A"}, {47, 79, "pdl wait B"},
                               {53, 73, "plain A"}, {59, 71, "plain B"}};
static void scan(const uint32_t *w, long n, unsigned long base, const char *name) {
  // The 300-node graph (grid 61, block 67): one line per QMD, in the driver's copy only.
  if (strstr(name, "nvidiactl"))
    for (long i = 0; i + 96 <= n; i++)
      if (w[i + 32] == 61 && (w[i + 36] & 0xffff) == 67 && (w[i + 33] & 0xffff) == 1 && latch_hits < 400) {
        latch_hits++;
        printf("LATCH qmd 0x%lx next 0x%x00 arrive %u id 0x%x wait %u id 0x%x pre_exit %u\n", base + i * 4,
               w[i + 14], (w[i] >> 28) & 1, w[i + 46], (w[i] >> 29) & 1, w[i + 47], (w[i + 35] >> 31) & 1);
      }
  for (long i = 0; i + 96 <= n; i++)
    for (const Shape &s : shapes)
      if (w[i + 32] == s.grid && (w[i + 36] & 0xffff) == s.block && (w[i + 33] & 0xffff) == 1 &&
          (w[i + 34] & 0xffff) == 1 && qmd_hits < 48) {
        qmd_hits++;
        printf("QMD %s (grid %u block %u) at 0x%lx in %s:", s.what, s.grid, s.block, base + i * 4, name);
        for (int k = 0; k < 96; k++) printf("%s%08x", (k % 8) ? " " : "\n  ", w[i + k]);
        printf("\n");
      }
}

int main() {
  CK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned long long *flag;
  CK(cudaMallocHost((void **)&flag, 4096));
  const int n = 1 << 20;
  float *x, *y, *one;
  CK(cudaMalloc(&x, (2 * n - 1024) * 4));
  CK(cudaMalloc(&y, (2 * n - 1024) * 4));
  CK(cudaMalloc(&one, n * 4));
  std::vector<float> ones(n, 1.f);
  CK(cudaMemcpy(one, ones.data(), n * 4, cudaMemcpyHostToDevice));
  for (int round = 0; round < 2; round++) {
    run_variant<0>(s, flag, x, y, one, n);
    run_variant<1>(s, flag, x, y, one, n);
    run_variant<2>(s, flag, x, y, one, n);
  }
  run_variant<3>(s, flag, x, y, one, n);

  // QMDs of small programmatic graphs with launch dimensions nothing else uses.
  cudaGraph_t g[4];
  cudaGraphExec_t ge[4];
  for (int k = 0; k < 4; k++) {
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 3; i++) {
      if (k == 0) { launch(true, store_k<2>, dim3(37), dim3(97), s, flag, 1ull); launch(true, store_k<2>, dim3(41), dim3(89), s, flag, 2ull); }
      if (k == 1) { launch(true, store_k<1>, dim3(43), dim3(83), s, flag, 3ull); launch(true, store_k<1>, dim3(47), dim3(79), s, flag, 4ull); }
      if (k == 2) { launch(false, store_k<0>, dim3(53), dim3(73), s, flag, 5ull); launch(false, store_k<0>, dim3(59), dim3(71), s, flag, 6ull); }
    }
    if (k == 3)
      for (int i = 0; i < 300; i++) launch(true, store_k<2>, dim3(61), dim3(67), s, flag, (unsigned long long)i);
    CK(cudaStreamEndCapture(s, &g[k]));
    CK(cudaGraphInstantiate(&ge[k], g[k], 0));
    CK(cudaGraphLaunch(ge[k], s));
    CK(cudaStreamSynchronize(s));
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fault;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
  FILE *m = fopen("/proc/self/maps", "r");
  char line[512];
  static uint32_t buf[1 << 20];
  while (fgets(line, sizeof line, m)) {
    unsigned long lo, hi;
    char perm[8] = {0}, path[256] = {0};
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255[^\n]", &lo, &hi, perm, path) < 3) continue;
    if (perm[0] != 'r' || strstr(path, "[vvar]") || strstr(path, "[vsyscall]")) continue;
    if (strstr(path, ".so") || strstr(path, "pdl_probe")) continue;
    unsigned long len = hi - lo;
    int device = strstr(path, "nvidia") != 0;
    if ((unsigned long)buf < hi && (unsigned long)buf + sizeof buf > lo) continue;
    if (device && len <= (64ul << 10)) continue;
    if (len > (device ? (32ul << 20) : (256ul << 20))) len = device ? (32ul << 20) : (256ul << 20);
    char name[320];
    snprintf(name, sizeof name, "%lx-%lx %s %s", lo, hi, perm, path[0] ? path : "(anon)");
    for (unsigned long off = 0; off < len; off += sizeof buf - 4096) {
      unsigned long nb = len - off < sizeof buf ? len - off : sizeof buf;
      struct iovec l = {buf, nb}, r = {(void *)(lo + off), nb};
      ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
      if (got <= 0) {
        if (!device) break;
        if (sigsetjmp(jb, 1)) break;
        volatile const uint32_t *src = (volatile const uint32_t *)(lo + off);
        for (unsigned long i = 0; i < nb / 4; i++) buf[i] = src[i];
        got = nb;
      }
      scan(buf, got / 4, lo + off, name);
      if ((unsigned long)got < nb) break;
    }
  }
  printf("done: %d QMDs, %d of the 300-node graph\n", qmd_hits, latch_hits);
  return 0;
}
