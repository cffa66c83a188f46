// What a decode's fix-up costs through global memory (a flag per unit, as
// tessel-lower-stream-k's persistent lowering does) against a thread-block
// cluster whose CTAs hand their partial states to rank 0's shared memory.
// U units (batch x KV heads) of Nk keys, D = 128 bf16, each unit split into C
// equal chunks over C CTAs of 128 threads; a CTA reduces its chunk of K and V
// to a partial online-softmax state (m, l, acc[128]) and rank 0 of each unit
// folds the C states and writes O.
//   mode 0: no fix-up (every CTA writes its state; the body's cost)
//   mode 1: global: peers store their state to a workspace slot, bar.sync,
//           fence.acq_rel.gpu + relaxed atomic add on the unit's flag; rank 0
//           spins on an acquire load of the flag, then loads the slots
//   mode 2: cluster of C: peers store their state into rank 0's shared memory
//           (mapa), barrier.cluster.arrive.release / wait.acquire
//   mode 3: cluster of C, the states through global memory: peers store their
//           state to a workspace slot, the cluster barrier orders them before
//           rank 0's loads (no flag, no fence at GPU scope)
//   mode 4: mode 2 with peers that arrive and exit (only rank 0 waits)
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a cluster_fixup_probe.cu
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;
constexpr int D = 128, THREADS = 128, STATE = D + 2, MAXC = 16;

// The chunk [k0, k1) of one unit: per thread 8 columns of 8-row steps, then
// a shared-memory sum over the 16 row groups. Scores are a stand-in (the sum
// of a K row's 8 columns a thread holds, reduced over the row's 16 threads).
__device__ void body(const __nv_bfloat16 *k, const __nv_bfloat16 *v, int k0,
                     int k1, float *state /* shared, STATE */) {
  __shared__ float part[THREADS / 16][D];
  __shared__ float rowm[THREADS / 16], rowl[THREADS / 16];
  int t = threadIdx.x, col = (t % 16) * 8, rg = t / 16;
  float acc[8] = {}, m = -INFINITY, l = 0.f;
  for (int r = k0 + rg; r < k1; r += THREADS / 16) {
    uint4 kr = *reinterpret_cast<const uint4 *>(k + (size_t)r * D + col);
    uint4 vr = *reinterpret_cast<const uint4 *>(v + (size_t)r * D + col);
    const __nv_bfloat16 *kk = reinterpret_cast<const __nv_bfloat16 *>(&kr);
    const __nv_bfloat16 *vv = reinterpret_cast<const __nv_bfloat16 *>(&vr);
    float s = 0.f;
    for (int i = 0; i < 8; ++i)
      s += __bfloat162float(kk[i]);
    for (int o = 8; o; o >>= 1)
      s += __shfl_xor_sync(0xffffffff, s, o, 16);
    s *= 0.01f;
    float mn = fmaxf(m, s), a = __expf(m - mn), p = __expf(s - mn);
    l = l * a + p;
    for (int i = 0; i < 8; ++i)
      acc[i] = acc[i] * a + p * __bfloat162float(vv[i]);
    m = mn;
  }
  for (int i = 0; i < 8; ++i)
    part[rg][col + i] = acc[i];
  if (t % 16 == 0)
    rowm[rg] = m, rowl[rg] = l;
  __syncthreads();
  float mm = -INFINITY;
  for (int g = 0; g < THREADS / 16; ++g)
    mm = fmaxf(mm, rowm[g]);
  float a = 0.f, ll = 0.f;
  for (int g = 0; g < THREADS / 16; ++g) {
    float w = rowm[g] == -INFINITY ? 0.f : __expf(rowm[g] - mm);
    a += part[g][t] * w;
    ll += rowl[g] * w;
  }
  state[t] = a;
  if (t == 0)
    state[D] = mm, state[D + 1] = ll;
  __syncthreads();
}

__device__ void fold(const float *slots /* C x STATE, any space */, int c,
                     __nv_bfloat16 *o) {
  int t = threadIdx.x;
  float mm = -INFINITY;
  for (int i = 0; i < c; ++i)
    mm = fmaxf(mm, slots[i * STATE + D]);
  float a = 0.f, l = 0.f;
  for (int i = 0; i < c; ++i) {
    float w = __expf(slots[i * STATE + D] - mm);
    a += slots[i * STATE + t] * w;
    l += slots[i * STATE + D + 1] * w;
  }
  o[t] = __float2bfloat16(a / l);
}

__global__ void __launch_bounds__(THREADS)
    fixup(int mode, const __nv_bfloat16 *k, const __nv_bfloat16 *v, int nk,
          int c, float *ws, unsigned *flags, __nv_bfloat16 *o) {
  __shared__ float mine[STATE];
  __shared__ float slots[MAXC * STATE];
  int unit = blockIdx.x / c, rank = blockIdx.x % c, t = threadIdx.x;
  const __nv_bfloat16 *ku = k + (size_t)unit * nk * D;
  const __nv_bfloat16 *vu = v + (size_t)unit * nk * D;
  int k0 = (int)((long)rank * nk / c), k1 = (int)((long)(rank + 1) * nk / c);
  body(ku, vu, k0, k1, mine);
  if (mode == 0) {
    float *slot = ws + (size_t)blockIdx.x * STATE;
    for (int i = t; i < STATE; i += THREADS)
      slot[i] = mine[i];
    return;
  }
  if (mode == 1) {
    float *unitSlots = ws + (size_t)unit * c * STATE;
    if (rank != 0) {
      for (int i = t; i < STATE; i += THREADS)
        unitSlots[rank * STATE + i] = mine[i];
      __syncthreads();
      if (t == 0) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(
                         flags + unit)
                     : "memory");
      }
      return;
    }
    for (int i = t; i < STATE; i += THREADS)
      unitSlots[i] = mine[i];
    if (t == 0) {
      unsigned seen;
      do
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                     : "=r"(seen)
                     : "l"(flags + unit)
                     : "memory");
      while (seen < (unsigned)(c - 1));
      flags[unit] = 0;
    }
    __syncthreads();
    fold(unitSlots, c, o + (size_t)unit * D);
    return;
  }
  if (mode == 3) {
    float *unitSlots = ws + (size_t)unit * c * STATE;
    for (int i = t; i < STATE; i += THREADS)
      unitSlots[rank * STATE + i] = mine[i];
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    if (rank != 0)
      return;
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    fold(unitSlots, c, o + (size_t)unit * D);
    return;
  }
  cg::cluster_group cluster = cg::this_cluster();
  float *dst = cluster.map_shared_rank(slots, 0) + rank * STATE;
  for (int i = t; i < STATE; i += THREADS)
    dst[i] = mine[i];
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  if (mode == 4 && rank != 0)
    return;
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  if (rank == 0)
    fold(slots, c, o + (size_t)unit * D);
}

__global__ void fill(__nv_bfloat16 *x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    x[i] = __float2bfloat16((float)(h >> 8) / (1 << 24) * 4.f - 2.f);
  }
}

int main() {
  struct Shape {
    int units, c, nk;
  };
  std::vector<Shape> shapes = {{8, 8, 1024},   {8, 16, 1024},  {8, 8, 4096},
                               {8, 16, 4096},  {8, 16, 16384}, {32, 4, 4096},
                               {32, 4, 8192},  {4, 16, 32768}, {64, 2, 4096}};
  int maxNk = 32768 * 4 * 2;
  size_t kvElems = (size_t)64 * 8192 * D;
  if ((size_t)maxNk * D > kvElems)
    kvElems = (size_t)maxNk * D;
  __nv_bfloat16 *k, *v, *o;
  float *ws;
  unsigned *flags;
  char *flush;
  size_t flushBytes = 256 << 20;
  cudaMalloc(&k, kvElems * 2);
  cudaMalloc(&v, kvElems * 2);
  cudaMalloc(&o, 64 * D * 2);
  cudaMalloc(&ws, 64 * MAXC * STATE * 4);
  cudaMalloc(&flags, 64 * 4);
  cudaMalloc(&flush, flushBytes);
  fill<<<1024, 256>>>(k, kvElems, 1);
  fill<<<1024, 256>>>(v, kvElems, 2);
  cudaMemset(flags, 0, 64 * 4);
  cudaFuncSetAttribute(fixup, cudaFuncAttributeNonPortableClusterSizeAllowed,
                       1);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  printf("| units | C | Nk | mode | GPU us (L2 flushed) | back-to-back us |\n");
  printf("|---|---|---|---|---|---|\n");
  std::vector<__nv_bfloat16> out[5];
  for (Shape s : shapes) {
    for (int mode = 0; mode < 5; ++mode) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(s.units * s.c);
      cfg.blockDim = dim3(THREADS);
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = mode >= 2 ? s.c : 1;
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      auto launch = [&] {
        return cudaLaunchKernelEx(&cfg, fixup, mode, (const __nv_bfloat16 *)k,
                                  (const __nv_bfloat16 *)v, s.nk, s.c, ws,
                                  flags, o);
      };
      if (cudaError_t err = launch()) {
        printf("| %d | %d | %d | %d | launch failed: %s | |\n", s.units, s.c,
               s.nk, mode, cudaGetErrorString(err));
        cudaGetLastError();
        continue;
      }
      cudaDeviceSynchronize();
      float total = 0.f;
      const int reps = 50;
      for (int r = 0; r < reps; ++r) {
        cudaMemsetAsync(flush, r, flushBytes);
        cudaEventRecord(e0);
        launch();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        total += ms;
      }
      cudaEventRecord(e0);
      for (int r = 0; r < 200; ++r)
        launch();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float btb;
      cudaEventElapsedTime(&btb, e0, e1);
      cudaError_t err = cudaDeviceSynchronize();
      printf("| %d | %d | %d | %d | %.2f | %.2f |%s\n", s.units, s.c, s.nk,
             mode, 1000.f * total / reps, 1000.f * btb / 200,
             err ? cudaGetErrorString(err) : "");
      cudaMemset(o, 0, 64 * D * 2);
      launch();
      cudaDeviceSynchronize();
      out[mode].assign(s.units * D, __float2bfloat16(0.f));
      cudaMemcpy(out[mode].data(), o, s.units * D * 2, cudaMemcpyDeviceToHost);
    }
    for (int mode = 2; mode < 5; ++mode) {
      float diff = 0.f;
      for (int i = 0; i < s.units * D; ++i)
        diff = fmaxf(diff, fabsf(__bfloat162float(out[1][i]) -
                                 __bfloat162float(out[mode][i])));
      printf("| %d | %d | %d | O: mode 1 vs mode %d max abs diff %g | | |\n",
             s.units, s.c, s.nk, mode, diff);
    }
  }
  return 0;
}
