// The GPU smoke test's plain-grid kernel: out = x + y, one element per thread.
// Regenerate vector_add.bundle with make_bundles.py after editing.
extern "C" __global__ void vector_add(const float *x, const float *y,
                                      float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = x[i] + y[i];
}
