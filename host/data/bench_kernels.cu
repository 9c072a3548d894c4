// Kernels nvbare's benchmarks and H200 proofs launch (see build.sh beside this file).
extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Grid-stride copy of n 16-byte elements: device-to-device copies through the SMs.
extern "C" __global__ void copy16(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = src[i];
}

// One 16-byte element per thread over a grid that covers the whole copy (n / blockDim blocks):
// the hardware's block scheduler spreads the work, and on the H200 this beats every
// persistent grid-stride shape (host/bench-results/2026-11-29-run17-probe.txt).
extern "C" __global__ void copy_flat(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

// Two elements per thread, a block covering 2 x blockDim consecutive elements.
extern "C" __global__ void copy_flat2(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * 2 * blockDim.x + threadIdx.x;
    if (i + blockDim.x < n) {
        uint4 a = src[i], b = src[i + blockDim.x];
        dst[i] = a; dst[i + blockDim.x] = b;
    } else if (i < n) {
        dst[i] = src[i];
    }
}

// Spins for `cycles` SM clocks (a kernel that keeps the compute engine busy while
// another engine's work is checked for running beside it).
extern "C" __global__ void spin_cycles(unsigned long long cycles) {
    long long start = clock64();
    while ((unsigned long long)(clock64() - start) < cycles) {}
}

// Stores a value to an address given as a parameter (an unmapped address makes an MMU fault).
extern "C" __global__ void store_value(unsigned long long *addr, unsigned long long value) {
    if (threadIdx.x == 0 && blockIdx.x == 0) *addr = value;
}

// The same copy with four independent 16-byte loads in flight per thread before the stores.
extern "C" __global__ void copy64(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

// copy64 with streaming (evict-first) loads and stores: 1 GiB passes through L2 once.
extern "C" __global__ void copy64cs(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = __ldcs(src + i), b = __ldcs(src + i + stride), c = __ldcs(src + i + 2 * stride), d = __ldcs(src + i + 3 * stride);
        __stcs(dst + i, a); __stcs(dst + i + stride, b); __stcs(dst + i + 2 * stride, c); __stcs(dst + i + 3 * stride, d);
    }
    for (; i < n; i += stride) __stcs(dst + i, __ldcs(src + i));
}

// Each block copies one contiguous tile (n / gridDim elements), four 16-byte loads in flight per
// thread: DRAM sees long sequential runs per block instead of a grid-wide stride.
extern "C" __global__ void copy_tile(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) {
    unsigned long long per = (n + gridDim.x - 1) / gridDim.x;
    unsigned long long begin = per * blockIdx.x, end = begin + per < n ? begin + per : n;
    unsigned long long i = begin + threadIdx.x, s = blockDim.x;
    for (; i + 3 * s < end; i += 4 * s) {
        uint4 a = src[i], b = src[i + s], c = src[i + 2 * s], d = src[i + 3 * s];
        dst[i] = a; dst[i + s] = b; dst[i + 2 * s] = c; dst[i + 3 * s] = d;
    }
    for (; i < end; i += s) dst[i] = src[i];
}

// Grid-stride over chunks of 4 × blockDim elements: each warp reads four consecutive 512-byte
// segments (2 KiB) per chunk, all four loads in flight before the stores.
extern "C" __global__ void copy_chunk(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) {
    unsigned long long chunk = 4ull * blockDim.x;
    for (unsigned long long base = blockIdx.x * chunk; base < n; base += (unsigned long long)gridDim.x * chunk) {
        unsigned long long i = base + threadIdx.x;
        if (base + chunk <= n) {
            uint4 a = src[i], b = src[i + blockDim.x], c = src[i + 2 * blockDim.x], d = src[i + 3 * blockDim.x];
            dst[i] = a; dst[i + blockDim.x] = b; dst[i + 2 * blockDim.x] = c; dst[i + 3 * blockDim.x] = d;
        } else {
            for (; i < n; i += blockDim.x) dst[i] = src[i];
        }
    }
}

// TMA bulk copy (sm_90): one thread per block streams the block's chunks through
// BULK_STAGES shared-memory buffers: cp.async.bulk global -> shared completes on an
// mbarrier, cp.async.bulk shared -> global writes it out, and a buffer is refilled
// once its store has read it. The SMs' load/store units do no per-byte work.
#define BULK_CHUNK 8192
#define BULK_STAGES 5
extern "C" __global__ void copy_bulk(const uint4 *__restrict__ src16, uint4 *__restrict__ dst16, unsigned long long n16) {
    __shared__ __align__(128) char buf[BULK_STAGES][BULK_CHUNK];
    __shared__ __align__(8) unsigned long long bar[BULK_STAGES];
    const char *src = (const char *)src16;
    char *dst = (char *)dst16;
    unsigned long long bytes = n16 * 16, chunks = bytes / BULK_CHUNK;
    if (threadIdx.x != 0) return;
    unsigned phase = 0;  // bit s: the parity to wait for on stage s
    for (int s = 0; s < BULK_STAGES; s++) {
        unsigned a = (unsigned)__cvta_generic_to_shared(&bar[s]);
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(a));
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    unsigned long long k = blockIdx.x, next = k;
    for (int s = 0; s < BULK_STAGES && next < chunks; s++, next += gridDim.x) {
        unsigned a = (unsigned)__cvta_generic_to_shared(&bar[s]);
        unsigned d = (unsigned)__cvta_generic_to_shared(buf[s]);
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(a), "r"(BULK_CHUNK) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(d), "l"(src + next * BULK_CHUNK), "r"(BULK_CHUNK), "r"(a) : "memory");
    }
    for (int s = 0; k < chunks; k += gridDim.x, s = (s + 1) % BULK_STAGES) {
        unsigned a = (unsigned)__cvta_generic_to_shared(&bar[s]);
        unsigned d = (unsigned)__cvta_generic_to_shared(buf[s]);
        asm volatile("{ .reg .pred p; WAIT: mbarrier.try_wait.parity.shared.b64 p, [%0], %1; @!p bra WAIT; }"
                     ::"r"(a), "r"((phase >> s) & 1) : "memory");
        phase ^= 1u << s;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + k * BULK_CHUNK), "r"(d), "r"(BULK_CHUNK) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        if (next < chunks) {
            // Refill this stage once its store has read the buffer (older groups first).
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
            asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(a), "r"(BULK_CHUNK) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(d), "l"(src + next * BULK_CHUNK), "r"(BULK_CHUNK), "r"(a) : "memory");
            next += gridDim.x;
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    // The tail that is not a whole chunk.
    for (unsigned long long i = chunks * BULK_CHUNK / 16 + blockIdx.x; i < n16; i += gridDim.x) dst16[i] = src16[i];
}

// Loads and stores with explicit cache hints, for the D2D study (host/bench-results/probe):
// LOAD 0 ld.global.nc, 1 ld.global.nc.L2::256B (L2 fetches 256-byte blocks), 2 the same with
// L1::no_allocate, 3 ld.global.L2::128B; STORE 0 st.global, 1 st.global.cs (evict first),
// 2 st.global.L1::no_allocate.
template <int LOAD> __device__ __forceinline__ uint4 ld16(const uint4 *p) {
    uint4 v;
    if (LOAD == 0) asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    if (LOAD == 1) asm volatile("ld.global.nc.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    if (LOAD == 2) asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    if (LOAD == 3) asm volatile("ld.global.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
template <int STORE> __device__ __forceinline__ void st16(uint4 *p, uint4 v) {
    if (STORE == 0) asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    if (STORE == 1) asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    if (STORE == 2) asm volatile("st.global.L1::no_allocate.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
// Grid-stride copy with U independent loads in flight per thread.
template <int LOAD, int STORE, int U> __device__ __forceinline__ void copy_hinted(const uint4 *src, uint4 *dst, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = ld16<LOAD>(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++) st16<STORE>(dst + i + u * stride, v[u]);
    }
    for (; i < n; i += stride) st16<STORE>(dst + i, ld16<LOAD>(src + i));
}
#define HINTED(name, L, S, U) \
    extern "C" __global__ void name(const uint4 *__restrict__ src, uint4 *__restrict__ dst, unsigned long long n) { copy_hinted<L, S, U>(src, dst, n); }
HINTED(copy_h000_1, 0, 0, 1)
HINTED(copy_h100_1, 1, 0, 1)
HINTED(copy_h200_1, 2, 0, 1)
HINTED(copy_h300_1, 3, 0, 1)
HINTED(copy_h110_1, 1, 1, 1)
HINTED(copy_h120_1, 1, 2, 1)
HINTED(copy_h100_2, 1, 0, 2)
HINTED(copy_h100_4, 1, 0, 4)
HINTED(copy_h110_4, 1, 1, 4)
HINTED(copy_h200_4, 2, 0, 4)
HINTED(copy_h000_4, 0, 0, 4)
HINTED(copy_h010_4, 0, 1, 4)
