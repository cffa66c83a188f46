#include <cuda.h>
#include <cstdint>
__global__ void __launch_bounds__(384,1) k(const __grid_constant__ CUtensorMap tm, float* out) {
  __shared__ alignas(1024) uint16_t buf[64*64];
  __shared__ uint64_t bar;
  uint32_t sbuf = (uint32_t)__cvta_generic_to_shared(buf);
  uint32_t sbar = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("prefetch.tensormap [%0];" :: "l"(&tm) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sbar), "r"(1));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sbar), "r"(8192));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      :: "r"(sbuf), "l"(&tm), "r"(0), "r"(0), "r"(sbar) : "memory");
  }
  asm volatile("{\n.reg .pred P1;\nW:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n@P1 bra D;\nbra W;\nD:\n}" :: "r"(sbar), "r"(0));
  if (threadIdx.x >= 128) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
  else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  out[threadIdx.x] = buf[threadIdx.x];
}
