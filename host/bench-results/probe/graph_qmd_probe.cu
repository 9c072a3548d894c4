// Research probe (issue 20, item 1): how CUDA orders the kernels of a graph on Hopper.
//
// Launches kernels with launch dimensions nothing else uses (grid 37/41/43/47, blocks
// 97/89/83/79), as a captured graph and as plain stream launches, then scans this process's
// readable memory for Hopper QMDs (QMDV04_00 of open-gpu-doc's clcbc0qmd.h: GRID_WIDTH in word
// 32, CTA_THREAD_DIMENSION0 in word 36 bits 15:0, QMD_MAJOR_VERSION in word 18 bits 7:4) and for
// pushbuffer method headers of the compute class's launch methods (SEND_PCAS_A 0x02b4,
// SET_INLINE_QMD_ADDRESS_A 0x0318, clcbc0.h). It prints every QMD found (96 words) and the
// pushbuffer words around each launch method, for decoding off the machine. What it reads is
// CUDA's own memory; nothing is written.
//
// Build: nvcc -O2 -arch=sm_90 graph_qmd_probe.cu -o graph_qmd_probe
#include <cuda_runtime.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e = (x);                                                        \
    if (e != cudaSuccess) {                                                     \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                   \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

__global__ void store_a(int *p, int v) {
  if (threadIdx.x == 0 && blockIdx.x == 0) p[0] = v;
}
__global__ void store_b(int *p, int v) {
  if (threadIdx.x == 0 && blockIdx.x == 0) p[1] = v;
}

static sigjmp_buf jb;
static void on_fault(int) { siglongjmp(jb, 1); }

struct Shape {
  uint32_t grid, block;
  const char *what;
};
static const Shape shapes[] = {{37, 97, "graph store_a"},
                               {41, 89, "graph store_b"},
                               {43, 83, "stream store_a"},
                               {47, 79, "stream store_b"}};

static int qmd_hits = 0, pb_hits = 0;

static void dump(const char *tag, const uint32_t *w, long n, unsigned long addr) {
  printf("%s at 0x%lx:", tag, addr);
  for (long i = 0; i < n; i++) printf("%s%08x", (i % 8) ? " " : "\n  ", w[i]);
  printf("\n");
}

// Scans `n` words at `w` (a copy of memory at `base`).
static void scan(const uint32_t *w, long n, unsigned long base, const char *name) {
  for (long i = 0; i + 96 <= n; i++) {
    for (const Shape &s : shapes) {
      if (w[i + 32] == s.grid && (w[i + 36] & 0xffff) == s.block &&
          (w[i + 33] & 0xffff) == 1 && (w[i + 34] & 0xffff) == 1 && qmd_hits < 40) {
        qmd_hits++;
        printf("QMD %s (grid %u block %u) in %s, major %u minor %u\n", s.what, s.grid, s.block,
               name, (w[i + 18] >> 4) & 0xf, w[i + 18] & 0xf);
        long from = i >= 32 ? i - 32 : 0;
        dump("  32 words before + QMD", w + from, i - from + 96, base + from * 4);
      }
    }
  }
  for (long i = 0; i + 1 < n; i++) {
    uint32_t h = w[i];
    uint32_t op = h >> 29, mthd = (h & 0xfff) << 2, cnt = (h >> 16) & 0x1fff;
    if ((op == 1 || op == 3 || op == 5) && cnt >= 1 && cnt <= 128 &&
        (mthd == 0x2b4 || mthd == 0x318) && pb_hits < 60) {
      pb_hits++;
      long from = i >= 48 ? i - 48 : 0;
      long to = i + 24 < n ? i + 24 : n;
      printf("PB method 0x%03x subch %u count %u op %u in %s (word %ld of the window)\n", mthd,
             (h >> 13) & 7, cnt, op, name, i - from);
      dump("  window", w + from, to - from, base + from * 4);
    }
  }
}

int main() {
  int *d;
  CK(cudaMalloc(&d, 64));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 4; i++) {
    store_a<<<37, 97, 0, st>>>(d, 2 * i);
    store_b<<<41, 89, 0, st>>>(d, 2 * i + 1);
  }
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, st));
  CK(cudaStreamSynchronize(st));
  CK(cudaGraphLaunch(ge, st));
  store_a<<<43, 83, 0, st>>>(d, 100);
  store_b<<<47, 79, 0, st>>>(d, 101);
  CK(cudaStreamSynchronize(st));
  printf("ran: graph of 8 twice, then 2 stream launches\n");

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fault;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
  FILE *m = fopen("/proc/self/maps", "r");
  char line[512];
  static uint32_t buf[1 << 20];  // 4 MiB window
  while (fgets(line, sizeof line, m)) {
    unsigned long lo, hi;
    char perm[8] = {0}, path[256] = {0};
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255[^\n]", &lo, &hi, perm, path) < 3) continue;
    if (perm[0] != 'r' || strstr(path, "[vvar]") || strstr(path, "[vsyscall]")) continue;
    if (strstr(path, ".so") || strstr(path, "graph_qmd_probe")) continue;
    unsigned long len = hi - lo;
    int device = strstr(path, "nvidia") != 0;
    // Not our own scan buffer; device mappings of 64 KiB or less are register pages (the
    // usermode doorbell), not memory: skip them; device memory is read uncached, so at most
    // 32 MiB of each.
    if ((unsigned long)buf < hi && (unsigned long)buf + sizeof buf > lo) continue;
    if (device && len <= (64ul << 10)) continue;
    if (len > (device ? (32ul << 20) : (256ul << 20))) len = device ? (32ul << 20) : (256ul << 20);
    char name[320];
    snprintf(name, sizeof name, "%lx-%lx %s %s", lo, hi, perm, path[0] ? path : "(anon)");
    for (unsigned long off = 0; off < len; off += sizeof buf - 4096) {
      unsigned long n = len - off < sizeof buf ? len - off : sizeof buf;
      struct iovec l = {buf, n}, r = {(void *)(lo + off), n};
      ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
      if (got <= 0) {
        if (!device) break;
        // Device mappings (PFN maps) are not readable through process_vm_readv: read them
        // directly, a fault ending the region.
        if (sigsetjmp(jb, 1)) break;
        volatile const uint32_t *src = (volatile const uint32_t *)(lo + off);
        for (unsigned long i = 0; i < n / 4; i++) buf[i] = src[i];
        got = n;
      }
      scan(buf, got / 4, lo + off, name);
      if ((unsigned long)got < n) break;
    }
  }
  printf("done: %d QMDs, %d pushbuffer hits\n", qmd_hits, pb_hits);
  return 0;
}
