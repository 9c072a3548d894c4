// Kernels of `nvbare run`'s transcript (host/bench-results/device-run.sh cli), in a cubin of
// their own: the simulator models every kernel of bench_kernels.sm_90.cubin
// (sim/tests/engines_compute.rs checks it), and these fault on purpose. See build.sh.

// y[i] = a * x[i'] + y[i] over n floats, i' = i + 1 within the block (the block's last
// thread wraps to its first): each block first stages its slice of x in dynamic shared
// memory (`extern __shared__`, sized by the launch: --shared 4 * blockDim bytes), then reads
// its neighbour's slot, so the result is right only if the QMD gave the block that memory.
// Launched with --shared 0, the first staging store lands past the CTA's shared memory: an
// SM exception (OOR_ADDR).
extern "C" __global__ void saxpy_shared(unsigned n, float a, const float *x, float *y) {
    extern __shared__ float stage[];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    stage[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    unsigned next = (threadIdx.x + 1) % blockDim.x;
    if (i < n) y[i] = a * stage[next] + y[i];
}

// A decoded SM fault: thread 0 stores float `index` of a 32-float shared array, past the
// CTA's shared memory for a large index (262144: 1 MiB on): OOR_ADDR at the store's PC.
extern "C" __global__ void oob_shared(unsigned index) {
    __shared__ float s[32];
    volatile float *p = s;
    p[threadIdx.x % 32] = 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) p[index] = 2.0f;
}

// A decoded SM fault in one warp: the threads of warp `warp` of each block trap, the others
// finish, so the report names that warp.
extern "C" __global__ void trap_in_warp(unsigned warp) {
    if (threadIdx.x / 32 == warp) __trap();
}
