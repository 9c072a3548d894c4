// What a fresh cudaMalloc + cudaFree costs, call by call, and (under nvtrace.so) which
// ioctls each makes: MARK lines (nvtrace_mark, looked up with dlsym) separate the calls.
// Issue 20, item 5. Research tool only.
//   nvcc -O2 -arch=sm_90 -o alloc_probe alloc_probe.cu -ldl
//   NVTRACE=trace.txt LD_PRELOAD=./nvtrace.so ./alloc_probe
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <dlfcn.h>

static void (*mark_fn)(const char *);
static void mark(const char *s) { if (mark_fn) mark_fn(s); }
static double us_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

int main() {
  mark_fn = (void (*)(const char *))dlsym(RTLD_DEFAULT, "nvtrace_mark");
  cudaFree(0);
  const size_t sizes[2] = {2u << 20, 1u << 30};
  const char *names[2] = {"2MiB", "1GiB"};
  for (int s = 0; s < 2; s++) {
    for (int i = 0; i < 6; i++) {
      char m[64];
      void *p = nullptr;
      snprintf(m, sizeof m, "malloc %s #%d", names[s], i); mark(m);
      auto t = std::chrono::steady_clock::now();
      cudaError_t e = cudaMalloc(&p, sizes[s]);
      double a = us_since(t);
      snprintf(m, sizeof m, "memset %s #%d", names[s], i); mark(m);
      t = std::chrono::steady_clock::now();
      cudaMemset(p, 1, 4096); cudaDeviceSynchronize();
      double w = us_since(t);
      snprintf(m, sizeof m, "free %s #%d", names[s], i); mark(m);
      t = std::chrono::steady_clock::now();
      cudaFree(p);
      double f = us_since(t);
      mark("end");
      printf("%s #%d: cudaMalloc %.1f us (%s), first touch %.1f us, cudaFree %.1f us, malloc+free %.1f us\n",
             names[s], i, a, cudaGetErrorString(e), w, f, a + f);
    }
  }
  return 0;
}
