// The GPU smoke test's persistent kernel. Every CTA sums a strided slice of x,
// publishes its partial in the workspace and waits at a grid-wide barrier, so
// it only finishes if the runtime made every CTA resident at once (grid <=
// SMs x occupancy) and zeroed the workspace. It uses 64 KiB of dynamic shared
// memory so the runtime must raise the per-kernel limit.
//
// out[0] = sum(x) (partials added in CTA order), out[1] = gridDim.x,
// out[2] = the barrier counter seen after the barrier (must be gridDim.x),
// out[3] = 1 if the barrier timed out (instead of hanging the test).
// Workspace: unsigned arrived; 12 bytes padding; float partial[gridDim.x].
extern "C" __global__ void persistent_sum(const float *x, float *out, int n,
                                          unsigned *workspace) {
  extern __shared__ float buf[];
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x)
    acc += x[i];
  buf[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  volatile unsigned *arrived = workspace;
  volatile float *partial = reinterpret_cast<volatile float *>(workspace + 4);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = buf[0];
    __threadfence();
    atomicAdd(workspace, 1u);
    long long spins = 0;
    while (*arrived < gridDim.x && spins < (1ll << 24)) {
      __nanosleep(128);
      ++spins;
    }
    if (blockIdx.x == 0) {
      __threadfence();
      float total = 0.f;
      for (unsigned b = 0; b < gridDim.x; ++b)
        total += partial[b];
      out[0] = total;
      out[1] = float(gridDim.x);
      out[2] = float(*arrived);
      out[3] = spins >= (1ll << 24) ? 1.f : 0.f;
    }
  }
}
