// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// dot on tensor cores: f16 A in the operand layout of the #tessel.mma
// result, B (16 x 32, four consecutive N per thread) staged in shared memory
// as rows of K with one 8-byte store per thread, then read back by
// ldmatrix.trans: two x4 per step of K give a warp's four 16x8 blocks.
// The accumulator never leaves registers: four mma.sync, then the
// reductions' shuffles, no shared-memory store in between.

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
#bn = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @mma
func.func @mma(%x: f16, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : f16 -> !tessel.tile<64x16xf16, #opa>
  %b = tessel.splat %x : f16 -> !tessel.tile<16x32xf16, #bn>
  %z = arith.constant 0.0 : f32
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.store %{{.*}}, %{{.*}} : vector<4xi16>, !llvm.ptr<3>
  // CHECK-NOT: llvm.store
  // CHECK: nvvm.barrier0
  // CHECK-COUNT-2: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
  // CHECK: nvvm.mma.sync A[%[[A0:.*]], %[[A1:.*]], %[[A2:.*]], %[[A3:.*]]]  B[%{{.*}}, %{{.*}}]
  // CHECK-SAME: layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>
  // CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 16>
  // CHECK-SAME: (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  // CHECK-COUNT-3: nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]]
  // CHECK-NOT: nvvm.mma.sync
  // CHECK-NOT: llvm.store
  // CHECK: nvvm.shfl.sync bfly
  %d = tessel.dot %a, %b, %acc : !tessel.tile<64x16xf16, #opa>, !tessel.tile<16x32xf16, #bn> -> !tessel.tile<64x32xf32, #mma>
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<64x32xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}

// -----

// B held with consecutive K per thread (as trans(k) of attention holds it)
// is staged as rows of N and read by ldmatrix without .trans.

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
#bk = #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [2, 16], warpsPerCTA = [1, 4], order = [0, 1]>

// CHECK-LABEL: llvm.func @mma_k_runs
func.func @mma_k_runs(%x: f16, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : f16 -> !tessel.tile<64x16xf16, #opa>
  %b = tessel.splat %x : f16 -> !tessel.tile<16x64xf16, #bk>
  %z = arith.constant 0.0 : f32
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  // CHECK: llvm.store %{{.*}}, %{{.*}} : vector<8xi16>, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK-COUNT-4: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32
  // CHECK-COUNT-8: nvvm.mma.sync
  // CHECK-NOT: nvvm.mma.sync
  %d = tessel.dot %a, %b, %acc : !tessel.tile<64x16xf16, #opa>, !tessel.tile<16x64xf16, #bk> -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}

// -----

// Shapes off the MMA grid: M = 48, N = 24, K = 24 on a 2 x 2 warp grid.
// K is padded to 32 and the warps' columns to 32: both pads of the staged
// B are zeroed by loops over the CTA's threads, A's columns past K (the second
// step) are selected to zero. Two steps of K, each one x4 ldmatrix and 2 x 2 mma.sync
// per warp; bf16 fragments are i32 registers.

#mma = #tessel.mma<warpsPerCTA = [2, 2]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
#bn = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @mma_padded
func.func @mma_padded(%x: bf16, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : bf16 -> !tessel.tile<48x24xbf16, #opa>
  %b = tessel.splat %x : bf16 -> !tessel.tile<24x24xbf16, #bn>
  %z = arith.constant 0.0 : f32
  %acc = tessel.splat %z : f32 -> !tessel.tile<48x24xf32, #mma>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.store %{{.*}}, %{{.*}} : bf16, !llvm.ptr<3>
  // CHECK: %[[ZK:.*]] = llvm.mlir.constant(0.000000e+00 : bf16) : bf16
  // CHECK: ^bb{{[0-9]+}}(%{{.*}}: i32):
  // CHECK: llvm.store %[[ZK]], %{{.*}} : bf16, !llvm.ptr<3>
  // CHECK: %[[ZN:.*]] = llvm.mlir.constant(0.000000e+00 : bf16) : bf16
  // CHECK: ^bb{{[0-9]+}}(%{{.*}}: i32):
  // CHECK: llvm.store %[[ZN]], %{{.*}} : bf16, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4 : i32
  // CHECK-NOT: llvm.select
  // CHECK-COUNT-4: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  // CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4 : i32
  // CHECK: llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, bf16
  // CHECK-COUNT-4: nvvm.mma.sync
  // CHECK-NOT: nvvm.mma.sync
  %d = tessel.dot %a, %b, %acc : !tessel.tile<48x24xbf16, #opa>, !tessel.tile<24x24xbf16, #bn> -> !tessel.tile<48x24xf32, #mma>
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<48x24xf32, #mma> -> !tessel.tile<48xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<48xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}

// -----

// f16 operands outside the mma layouts (hand-written IR) still compute, on
// the CUDA cores.

#a = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @fma_fallback
func.func @fma_fallback(%x: f16, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : f16 -> !tessel.tile<16x16xf16, #a>
  %z = arith.constant 0.0 : f32
  %acc = tessel.splat %z : f32 -> !tessel.tile<16x16xf32, #a>
  // CHECK-NOT: nvvm.mma.sync
  // CHECK: llvm.intr.fma
  %d = tessel.dot %a, %a, %acc : !tessel.tile<16x16xf16, #a>, !tessel.tile<16x16xf16, #a> -> !tessel.tile<16x16xf32, #a>
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<16x16xf32, #a> -> !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #a>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #a>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}
