#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <vector>
typedef uint64_t u64; typedef uint32_t u32; typedef uint16_t u16;
// A image: 64 rows of K = 64 bf16, and 16 more for the cases whose A starts SHIFT rows into it
constexpr int AROWS=80, AWORDS=AROWS*32;
template<int SS,int TA,int TB> __global__ void kern(const u32* bimg,const u32* aimg,const u16* A,const u64* bd,const u64* ad,float* out){
  __shared__ alignas(1024) u32 sb[4096]; __shared__ alignas(1024) u32 sa[AWORDS];
  int t=threadIdx.x;
  for(int i=t;i<4096;i+=128) sb[i]=bimg[i];
  for(int i=t;i<AWORDS;i+=128) sa[i]=aimg[i];
  asm volatile("fence.proxy.async.shared::cta;":::"memory");
  __syncthreads();
  u64 bb=((u32)__cvta_generic_to_shared(sb)&0x3FFFF)>>4, ab=((u32)__cvta_generic_to_shared(sa)&0x3FFFF)>>4;
  float d[64];
#pragma unroll
  for(int i=0;i<64;i++) d[i]=0.f;
  int w=t/32,l=t%32,g=l/4,q=l%4;
#pragma unroll
  for(int s=0;s<4;s++){
    u32 a[4];
#pragma unroll
    for(int j=0;j<4;j++){int r=16*w+g+8*(j%2),c=16*s+2*q+8*(j/2); a[j]=A[r*64+c]|(u32(A[r*64+c+1])<<16);}
    u64 db=bd[s]+bb, da=ad[s]+ab;
    asm volatile("wgmma.fence.sync.aligned;":::"memory");
    if(SS) asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, %67, %68;\n}\n"
      : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),"+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15]),"+f"(d[16]),"+f"(d[17]),"+f"(d[18]),"+f"(d[19]),"+f"(d[20]),"+f"(d[21]),"+f"(d[22]),"+f"(d[23]),"+f"(d[24]),"+f"(d[25]),"+f"(d[26]),"+f"(d[27]),"+f"(d[28]),"+f"(d[29]),"+f"(d[30]),"+f"(d[31]),"+f"(d[32]),"+f"(d[33]),"+f"(d[34]),"+f"(d[35]),"+f"(d[36]),"+f"(d[37]),"+f"(d[38]),"+f"(d[39]),"+f"(d[40]),"+f"(d[41]),"+f"(d[42]),"+f"(d[43]),"+f"(d[44]),"+f"(d[45]),"+f"(d[46]),"+f"(d[47]),"+f"(d[48]),"+f"(d[49]),"+f"(d[50]),"+f"(d[51]),"+f"(d[52]),"+f"(d[53]),"+f"(d[54]),"+f"(d[55]),"+f"(d[56]),"+f"(d[57]),"+f"(d[58]),"+f"(d[59]),"+f"(d[60]),"+f"(d[61]),"+f"(d[62]),"+f"(d[63]) : "l"(da),"l"(db),"r"(1),"n"(TA),"n"(TB));
    else asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, %70;\n}\n"
      : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),"+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15]),"+f"(d[16]),"+f"(d[17]),"+f"(d[18]),"+f"(d[19]),"+f"(d[20]),"+f"(d[21]),"+f"(d[22]),"+f"(d[23]),"+f"(d[24]),"+f"(d[25]),"+f"(d[26]),"+f"(d[27]),"+f"(d[28]),"+f"(d[29]),"+f"(d[30]),"+f"(d[31]),"+f"(d[32]),"+f"(d[33]),"+f"(d[34]),"+f"(d[35]),"+f"(d[36]),"+f"(d[37]),"+f"(d[38]),"+f"(d[39]),"+f"(d[40]),"+f"(d[41]),"+f"(d[42]),"+f"(d[43]),"+f"(d[44]),"+f"(d[45]),"+f"(d[46]),"+f"(d[47]),"+f"(d[48]),"+f"(d[49]),"+f"(d[50]),"+f"(d[51]),"+f"(d[52]),"+f"(d[53]),"+f"(d[54]),"+f"(d[55]),"+f"(d[56]),"+f"(d[57]),"+f"(d[58]),"+f"(d[59]),"+f"(d[60]),"+f"(d[61]),"+f"(d[62]),"+f"(d[63]) : "r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"l"(db),"r"(1),"n"(TB));
  }
  asm volatile("wgmma.commit_group.sync.aligned;":::"memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;":::"memory");
#pragma unroll
  for(int i=0;i<64;i++){int r=16*w+g+8*((i/2)%2),c=8*(i/4)+2*q+(i%2); out[r*128+c]=d[i];}
}
static u16 bf(float f){u32 x;memcpy(&x,&f,4);return x>>16;}
// swizzle byte offset within an aligned atom region
static u32 swz(u32 b,int sw){ if(!sw) return b; u32 m=sw/16-1; return b^(((b>>7)&m)<<4);}
static u64 mk(u32 lbo,u32 sbo,int sw){u64 lt= sw==128?1:sw==64?2:sw==32?3:0; return (u64(lbo>>4)&0x3FFF)<<16 | (u64(sbo>>4)&0x3FFF)<<32 | lt<<62;}
// place element (k, mn) of an operand with MN extent NMN, K extent KK; returns byte offset; fills desc per kstep
static u32 place(int major,int sw,int k,int mn,int NMN,int KK){
  if(sw){int W=sw/2; if(major==0) return swz((k/W)*(NMN*sw)+mn*sw+(k%W)*2,sw); else return swz((mn/W)*(KK*sw)+k*sw+(mn%W)*2,sw);} 
  if(major==0) return (k/8)*((NMN/8)*128)+(mn/8)*128+(mn%8)*16+(k%8)*2;  // K-major interleave: LBO=(NMN/8)*128 (K dir), SBO=128 (MN dir)
  return (k/8)*((NMN/8)*128)+(mn/8)*128+(k%8)*16+(mn%8)*2;               // MN-major interleave: K-group stride (NMN/8)*128, MN-group stride 128
}
static void descs(int major,int sw,int NMN,int KK,u64* o,int swap,u32 lboOverride){
  for(int s=0;s<4;s++){u32 st,lbo,sbo;
    if(sw){int W=sw/2; if(major==0){st=((16*s)/W)*(NMN*sw)+((16*s)%W)*2; lbo=16; sbo=8*sw;} else {st=16*s*sw; lbo=KK*sw; sbo=8*sw;}}
    else { if(major==0){st=2*s*((NMN/8)*128); lbo=(NMN/8)*128; sbo=128;} else {st=2*s*((NMN/8)*128); lbo=(NMN/8)*128; sbo=128;} }
    if(lboOverride) lbo=lboOverride; if(swap){u32 x=lbo;lbo=sbo;sbo=x;}
    o[s]=mk(lbo,sbo,sw)+(st>>4);}
}
int main(int argc,char**argv){
  const int M=64,N=128,K=64; srand(1);
  std::vector<float> Af(M*K),Bf(K*N),ref(M*N); std::vector<u16> Ah(M*K);
  for(int i=0;i<M*K;i++){Af[i]=float(rand()%5-2);Ah[i]=bf(Af[i]);}
  for(int i=0;i<K*N;i++)Bf[i]=float(rand()%5-2);
  for(int m=0;m<M;m++)for(int n=0;n<N;n++){float s=0;for(int k=0;k<K;k++)s+=Af[m*K+k]*Bf[k*N+n];ref[m*N+n]=s;}
  u32 *dB,*dAi; u16* dA; u64 *dbd,*dad; float* dO;
  cudaMalloc(&dB,16384);cudaMalloc(&dAi,AWORDS*4);cudaMalloc(&dA,M*K*2);cudaMalloc(&dbd,32);cudaMalloc(&dad,32);cudaMalloc(&dO,M*N*4);
  cudaMemcpy(dA,Ah.data(),M*K*2,cudaMemcpyHostToDevice);
  // case: ss, amajor, asw, bmajor, bsw, swapB, lboOverrideB, name, A shift (rows), A base offset
  // The shift cases ask whether a K-major SW128 A may start any number of rows into a swizzled
  // tile whose pattern starts 1024-aligned (MTA's query offsets as row-shifted views of one
  // staged halo tile): with the base-offset field 0, or (start >> 7) & 7. H200, 2026-11-29:
  // every shift passes with 0 and fails with (start >> 7) & 7. Run one case per process
  // (./t IDX): the negative controls fault and poison the context for later cases.
  struct C{int ss,am,asw,bm,bsw,swap;u32 lbo;const char* nm;int shift,boff;} cs[]={
   {0,0,0,0,128,0,0,"RS B K-major SW128"},{0,0,0,0,64,0,0,"RS B K-major SW64"},{0,0,0,0,32,0,0,"RS B K-major SW32"},{0,0,0,0,0,0,0,"RS B K-major INTERLEAVE"},
   {0,0,0,1,128,0,0,"RS B MN-major SW128"},{0,0,0,1,64,0,0,"RS B MN-major SW64"},{0,0,0,1,32,0,0,"RS B MN-major SW32"},{0,0,0,1,0,0,0,"RS B MN-major INTERLEAVE"},
   {0,0,0,0,128,0,0x3FF0,"RS B K-major SW128 LBO=garbage (expect PASS if ignored)"},
   {0,0,0,1,128,1,0,"RS B MN-major SW128 LBO/SBO swapped (expect FAIL)"},
   {0,0,0,0,0,1,0,"RS B K-major INTERLEAVE LBO/SBO swapped (expect FAIL)"},
   {0,0,0,1,0,1,0,"RS B MN-major INTERLEAVE LBO/SBO swapped (expect FAIL)"},
   {1,0,128,1,128,0,0,"SS A K-major SW128, B MN-major SW128"},{1,1,128,0,128,0,0,"SS A MN-major SW128, B K-major SW128"},
   {1,0,64,1,64,0,0,"SS A K-major SW64, B MN-major SW64"},{1,1,32,0,32,0,0,"SS A MN-major SW32, B K-major SW32"},
   {1,0,128,1,128,0,0,"SS A K-major SW128 shifted 1 row, base offset 0",1,0},
   {1,0,128,1,128,0,0,"SS A K-major SW128 shifted 3 rows, base offset 0",3,0},
   {1,0,128,1,128,0,0,"SS A K-major SW128 shifted 5 rows, base offset 0",5,0},
   {1,0,128,1,128,0,0,"SS A K-major SW128 shifted 5 rows, base offset 5",5,1},
   {1,0,128,1,128,0,0,"SS A K-major SW128 shifted 8 rows (one atom), base offset 0",8,0},
   {1,0,128,1,128,0,0,"SS A K-major SW128 shifted 13 rows, base offset 0",13,0},
   {1,0,128,1,128,0,0,"SS A K-major SW128 shifted 13 rows, base offset 5",13,1},
  };
  for(auto& c:cs){ if(argc>1&&(&c-cs)!=atoi(argv[1])) continue;
    std::vector<uint8_t> bi(16384,0),ai(AWORDS*4,0); u64 bd[4],ad[4]={0,0,0,0};
    for(int k=0;k<K;k++)for(int n=0;n<N;n++){u16 v=bf(Bf[k*N+n]);memcpy(&bi[place(c.bm,c.bsw,k,n,N,K)],&v,2);}
    // (shift cases: K-major SW128 with K = 64, one 128-byte row per M row whatever the rows)
    for(int k=0;k<K;k++)for(int m=0;m<M;m++){memcpy(&ai[place(c.am,c.asw,k,m+c.shift,M,K)],&Ah[m*K+k],2);}
    descs(c.bm,c.bsw,N,K,bd,c.swap,c.lbo); descs(c.am,c.asw,M,K,ad,0,0);
    for(int s=0;s<4;s++) ad[s]+=u64(c.shift*128>>4)+(u64(c.boff?((c.shift*128)>>7)&7:0)<<49);
    cudaMemcpy(dB,bi.data(),16384,cudaMemcpyHostToDevice);cudaMemcpy(dAi,ai.data(),AWORDS*4,cudaMemcpyHostToDevice);
    cudaMemcpy(dbd,bd,32,cudaMemcpyHostToDevice);cudaMemcpy(dad,ad,32,cudaMemcpyHostToDevice);cudaMemset(dO,0,M*N*4);
    if(!c.ss){ if(c.bm) kern<0,0,1><<<1,128>>>(dB,dAi,dA,dbd,dad,dO); else kern<0,0,0><<<1,128>>>(dB,dAi,dA,dbd,dad,dO);}
    else { if(c.am&&!c.bm) kern<1,1,0><<<1,128>>>(dB,dAi,dA,dbd,dad,dO); else if(!c.am&&c.bm) kern<1,0,1><<<1,128>>>(dB,dAi,dA,dbd,dad,dO); else {printf("unsupported\n");continue;}}
    cudaError_t e=cudaDeviceSynchronize(); std::vector<float> o(M*N); cudaMemcpy(o.data(),dO,M*N*4,cudaMemcpyDeviceToHost);
    int bad=0; for(int i=0;i<M*N;i++) if(o[i]!=ref[i]) bad++;
    printf("%-62s %s (mismatches %d/%d) desc_b[1]=0x%016llx %s\n",c.nm,bad?"FAIL":"PASS",bad,M*N,(unsigned long long)bd[1],cudaGetErrorString(e));
  }
}
