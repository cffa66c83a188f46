// How many thread-block clusters of C CTAs a GPU holds at once, for CTAs of
// 128 threads and S bytes of dynamic shared memory: a cluster's CTAs run on
// the SMs of one GPC, so the count can be less than SMs / C. What a decode
// split over clusters (one unit per cluster) can keep resident.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a cluster_occupancy_probe.cu
#include <cstdio>

__global__ void empty(float *out) {
  extern __shared__ float smem[];
  if (out)
    out[blockIdx.x] = smem[threadIdx.x];
}

int main() {
  cudaFuncSetAttribute(empty, cudaFuncAttributeNonPortableClusterSizeAllowed,
                       1);
  cudaFuncSetAttribute(empty, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       227 * 1024);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  printf("SMs: %d\n| shared KB | C=2 | C=4 | C=8 | C=16 |\n|---|---|---|---|---|\n",
         sms);
  for (int kb : {16, 64, 120, 190, 220}) {
    printf("| %d |", kb);
    for (int c : {2, 4, 8, 16}) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(c);
      cfg.blockDim = dim3(128);
      cfg.dynamicSmemBytes = size_t(kb) * 1024;
      cudaLaunchAttribute attr = {};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = c;
      attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int clusters = -1;
      cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, empty, &cfg);
      if (err)
        printf(" %s |", cudaGetErrorString(err));
      else
        printf(" %d (%d CTAs) |", clusters, clusters * c);
    }
    printf("\n");
  }
  return 0;
}
