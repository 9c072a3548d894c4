// LD_PRELOAD ioctl tracer for /dev/nvidia* and /dev/nvidia-uvm: logs each RM
// allocation (class, handles, parameter bytes), control (command, status) and UVM
// call, each with the nanoseconds it took (ns=), so CUDA's choices and costs can be
// compared with nvbare's. A traced program may call nvtrace_mark("text") (found with
// dlsym) to put a MARK line between its phases. Research tool only.
//   gcc -shared -fPIC -O1 -o nvtrace.so nvtrace.c -ldl
//   NVTRACE=log.txt LD_PRELOAD=./nvtrace.so ./program
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int (*real_ioctl)(int, unsigned long, void *);
static FILE *out;

static void hex(const void *p, unsigned n) {
  const uint8_t *b = p;
  for (unsigned i = 0; i < n; i++) fprintf(out, "%02x%s", b[i], (i % 4 == 3) ? " " : "");
}

static long long now_ns(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void open_out(void) {
  if (!out) { const char *f = getenv("NVTRACE"); out = fopen(f ? f : "/tmp/nvtrace.txt", "w"); setvbuf(out, NULL, _IOLBF, 0); }
}

void nvtrace_mark(const char *text) {
  open_out();
  fprintf(out, "MARK t=%lld %s\n", now_ns(), text);
}

static int kind(int fd) {  // 1 nvidia ctl/dev, 2 uvm, 0 other
  char path[64], link[128];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return 0;
  link[n] = 0;
  if (!strcmp(link, "/dev/nvidia-uvm")) return 2;
  if (!strncmp(link, "/dev/nvidia", 11)) return 1;
  return 0;
}

int ioctl(int fd, unsigned long req, ...) {
  va_list ap; va_start(ap, req); void *arg = va_arg(ap, void *); va_end(ap);
  if (!real_ioctl) real_ioctl = dlsym(RTLD_NEXT, "ioctl");
  open_out();
  int k = kind(fd);
  unsigned nr = req & 0xff, size = (req >> 16) & 0x3fff;
  uint8_t before[64], raw[48], pre[256];
  int have_pre = 0;
  if (k == 2 && arg) memcpy(before, arg, 64);
  unsigned rsize = (req >> 16) & 0x3fff;
  if (k == 1 && arg && (req & 0xff) == 0x2b && (rsize == 48 || rsize == 32)) {
    memcpy(raw, arg, rsize);
    void *p = *(void **)((char *)arg + 16);
    unsigned ps = ((uint32_t *)arg)[rsize == 48 ? 8 : 6];
    if (p) { memcpy(pre, p, ps && ps < 256 ? ps : 256); have_pre = 1; }
  }
  long long t0 = now_ns();
  int rc = real_ioctl(fd, req, arg);
  long long dt = now_ns() - t0;
  if (!k || !arg) return rc;
  fprintf(out, "ns=%lld ", dt);
  if (k == 2) {
    fprintf(out, "UVM %lu rc=%d in=", req, rc); hex(before, 64); fprintf(out, " out="); hex(arg, 64); fprintf(out, "\n");
    return rc;
  }
  uint32_t *w = arg;
  if (nr == 0x2b && size == 48) {  // NVOS64
    void *p = *(void **)((char *)arg + 16); uint32_t ps = w[8];
    fprintf(out, "ALLOC cls=%#x parent=%#x new=%#x st=%#x psize=%u raw=", w[3], w[1], w[2], w[10], ps);
    hex(raw, 48);
    fprintf(out, " pre=");
    if (have_pre) hex(pre, 256);
    fprintf(out, " p=");
    if (p) hex(p, ps > 512 ? 512 : ps);
    fprintf(out, "\n");
  } else if (nr == 0x2b && size == 32) {  // NVOS21
    fprintf(out, "ALLOC21 cls=%#x parent=%#x new=%#x st=%#x psize=%u pre=", w[3], w[1], w[2], w[7], w[6]);
    if (have_pre) hex(pre, w[6] && w[6] < 256 ? w[6] : 256);
    fprintf(out, "\n");
  } else if (nr == 0x2a) {  // NVOS54
    void *p = *(void **)((char *)arg + 16); uint32_t ps = w[6];
    fprintf(out, "CTRL obj=%#x cmd=%#x st=%#x psize=%u p=", w[1], w[2], w[7], ps);
    if (p) hex(p, ps > 96 ? 96 : ps);
    fprintf(out, "\n");
  } else {
    fprintf(out, "ESC %#x size=%u rc=%d a=", nr, size, rc); hex(arg, size > 256 ? 256 : size); fprintf(out, "\n");
  }
  return rc;
}
