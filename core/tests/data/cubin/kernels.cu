// Small kernels compiled to cubins for nvbare's cubin-loader and launch tests (see build.sh).
// Plain C ABI names (extern "C") so the ELF symbols are the kernel names.

extern "C" __global__ void empty_kernel() {}

// Three pointer parameters and a count: 28 bytes of parameters (32 with alignment).
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Static shared memory (256 floats = 1 KiB) and a barrier: reverses each block's slice.
extern "C" __global__ void reverse_block(float *data) {
    __shared__ float tile[256];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    tile[t] = data[base + t];
    __syncthreads();
    data[base + t] = tile[blockDim.x - 1 - t];
}

// A volatile, dynamically indexed local array: it must live in local memory (the stack).
extern "C" __global__ void local_array(int *out, int k) {
    volatile int scratch[64];
    for (int i = 0; i < 64; i++) scratch[i] = i * k + threadIdx.x;
    out[blockIdx.x * blockDim.x + threadIdx.x] = scratch[(threadIdx.x * 7 + k) & 63];
}

// Stores a value to an address given as a parameter (an invalid address makes an MMU fault).
extern "C" __global__ void store_value(unsigned long long *addr, unsigned long long value) {
    if (threadIdx.x == 0 && blockIdx.x == 0) *addr = value;
}

// A __device__ global: its address reaches the code through relocations.
__device__ unsigned int launch_counter;
extern "C" __global__ void count_launches(unsigned int *out) {
    unsigned int old = atomicAdd(&launch_counter, 1u);
    if (threadIdx.x == 0) out[blockIdx.x] = old;
}

// Writes generic addresses of a shared and a local variable: converting them to generic
// addresses makes the code read the shared and local window bases from constant bank 0,
// which is how the driver slots of cbuf0 are found (see cuobjdump-notes.md).
extern "C" __global__ void window_addresses(unsigned long long *out) {
    __shared__ int tile[32];
    volatile int scratch[8];
    tile[threadIdx.x & 31] = threadIdx.x;
    scratch[threadIdx.x & 7] = threadIdx.x;
    __syncthreads();
    out[0] = (unsigned long long)(void *)&tile[threadIdx.x & 31];
    out[1] = (unsigned long long)(void *)&scratch[threadIdx.x & 7];
    out[2] = scratch[0] + tile[0];
}

// Block and grid dimensions: nvcc reads them from driver slots of constant bank 0.
extern "C" __global__ void dims(unsigned int *out) {
    out[0] = blockDim.x; out[1] = blockDim.y; out[2] = blockDim.z;
    out[3] = gridDim.x; out[4] = gridDim.y; out[5] = gridDim.z;
}
