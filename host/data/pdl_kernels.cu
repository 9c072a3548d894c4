// The benchmark's replay and ordering kernels (core/tests/data/cubin/kernels.cu: empty_kernel,
// vector_add, store_value; same names, parameters and work) written for programmatic dependent
// launch, for `nvbare bench --programmatic` (issue 20, item 1; BENCHMARKS.md, runs 53-55).
// Each first lets its dependents launch (`griddepcontrol.launch_dependents`; left out with
// -DWAIT_ONLY), then waits for the grids it depends on (`griddepcontrol.wait`, PTX ISA 7.8,
// sm_90 and later) before it touches memory. Built by build.sh; as CUDA's
// cudaTriggerProgrammaticLaunchCompletion() and cudaGridDependencySynchronize().
__device__ __forceinline__ void depend() {
#ifndef WAIT_ONLY
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

extern "C" __global__ void empty_kernel() { depend(); }

extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
  depend();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void store_value(unsigned long long *addr, unsigned long long value) {
  depend();
  if (threadIdx.x == 0 && blockIdx.x == 0) *addr = value;
}
