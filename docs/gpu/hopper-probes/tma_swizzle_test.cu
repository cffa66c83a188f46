#include <cuda.h>
#include <cstdio>
#include <cstdint>
#include <vector>
__global__ void k(const __grid_constant__ CUtensorMap tm,int bytes,uint16_t* out){
  __shared__ alignas(1024) uint16_t buf[4096]; __shared__ alignas(8) uint64_t bar;
  uint32_t sb=__cvta_generic_to_shared(buf), sm=__cvta_generic_to_shared(&bar);
  if(threadIdx.x==0){
    asm volatile("prefetch.tensormap [%0];"::"l"(&tm):"memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;"::"r"(sm),"r"(1));
    asm volatile("fence.mbarrier_init.release.cluster;":::"memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"::"r"(sm),"r"(bytes));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"::"r"(sb),"l"(&tm),"r"(0),"r"(0),"r"(sm):"memory");
  }
  __syncthreads();
  asm volatile("{\n.reg .pred P;\nW: mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n@!P bra W;\n}"::"r"(sm),"r"(0):"memory");
  for(int i=threadIdx.x;i<bytes/2;i+=blockDim.x) out[i]=buf[i];
}
static uint32_t swz(uint32_t b,int sw){ if(!sw) return b; uint32_t m=sw/16-1; return b^(((b>>7)&m)<<4);}
int main(){
  cuInit(0); std::vector<uint16_t> g(64*256); for(int i=0;i<64*256;i++) g[i]=i; // 64 rows x 256 cols
  uint16_t *dg,*dout; cudaMalloc(&dg,g.size()*2); cudaMalloc(&dout,8192); cudaMemcpy(dg,g.data(),g.size()*2,cudaMemcpyHostToDevice);
  int sws[4]={128,64,32,0}; CUtensorMapSwizzle e[4]={CU_TENSOR_MAP_SWIZZLE_128B,CU_TENSOR_MAP_SWIZZLE_64B,CU_TENSOR_MAP_SWIZZLE_32B,CU_TENSOR_MAP_SWIZZLE_NONE};
  for(int t=0;t<4;t++){ int sw=sws[t], W= sw? sw/2 : 64; CUtensorMap tm;
    cuuint64_t dims[2]={256,64}, str[1]={256*2}; cuuint32_t box[2]={(cuuint32_t)W,64}, es[2]={1,1};
    CUresult r=cuTensorMapEncodeTiled(&tm,CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,2,dg,dims,str,box,es,CU_TENSOR_MAP_INTERLEAVE_NONE,e[t],CU_TENSOR_MAP_L2_PROMOTION_L2_128B,CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    int bytes=W*64*2; k<<<1,128>>>(tm,bytes,dout); cudaError_t ce=cudaDeviceSynchronize();
    std::vector<uint16_t> o(bytes/2); cudaMemcpy(o.data(),dout,bytes,cudaMemcpyDeviceToHost);
    int bad=0; for(int rr=0;rr<64;rr++)for(int c=0;c<W;c++){ uint32_t b=swz(rr*W*2+c*2,sw); if(o[b/2]!=g[rr*256+c]) bad++; }
    printf("TMA swizzle %3d box {%d,64}: encode=%d kernel=%s mismatches vs Swizzle<log2(sw/16),4,3> model: %d\n",sw,W,(int)r,cudaGetErrorString(ce),bad);
  }
  // box inner bytes > swizzle size must be rejected
  CUtensorMap tm; cuuint64_t dims[2]={256,64}, str[1]={512}; cuuint32_t box[2]={128,64}, es[2]={1,1};
  printf("encode SW128 with box inner 256B -> CUresult %d (expect nonzero)\n",(int)cuTensorMapEncodeTiled(&tm,CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,2,dg,dims,str,box,es,CU_TENSOR_MAP_INTERLEAVE_NONE,CU_TENSOR_MAP_SWIZZLE_128B,CU_TENSOR_MAP_L2_PROMOTION_NONE,CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  cuuint64_t str2[1]={500}; cuuint32_t box2[2]={64,64};
  printf("encode with stride 500B (not %%16) -> CUresult %d (expect nonzero)\n",(int)cuTensorMapEncodeTiled(&tm,CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,2,dg,dims,str2,box2,es,CU_TENSOR_MAP_INTERLEAVE_NONE,CU_TENSOR_MAP_SWIZZLE_128B,CU_TENSOR_MAP_L2_PROMOTION_NONE,CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  printf("encode with misaligned base (+8B) -> CUresult %d (expect nonzero)\n",(int)cuTensorMapEncodeTiled(&tm,CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,2,(char*)dg+8,dims,str,box2,es,CU_TENSOR_MAP_INTERLEAVE_NONE,CU_TENSOR_MAP_SWIZZLE_128B,CU_TENSOR_MAP_L2_PROMOTION_NONE,CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}
