// RUN: tessel-opt %s -convert-tessel-to-llvm | FileCheck %s

// dot on tensor cores (f16 or bf16 operands). A (64 x 16) and B (16 x 32)
// are staged in shared memory with rows padded by 8 elements: A in rows of
// 24 halves, B from byte 64 * 24 * 2 = 3072 in rows of 40. The 4 warps take
// one 16-row band of the 4 x 4 tiles of 16 x 8 each: per step of K, one A
// fragment (four 32-bit loads), four B fragments (pairs of 16-bit loads)
// and four mma.sync. The C fragments go back to shared memory as 8-byte
// stores, and each thread adds its 16 accumulator slots.

#a = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#b = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
#c = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @mma
func.func @mma(%x: f16, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : f16 -> !tessel.tile<64x16xf16, #a>
  %b = tessel.splat %x : f16 -> !tessel.tile<16x32xf16, #b>
  %z = arith.constant 0.0 : f32
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #c>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.mlir.constant(24 : i32)
  // CHECK: llvm.store %{{.*}}, %{{.*}} : f16, !llvm.ptr<3>
  // CHECK: llvm.mlir.constant(40 : i32)
  // CHECK: llvm.getelementptr %{{.*}}[3072] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // CHECK: llvm.store %{{.*}}, %{{.*}} : f16, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: ^[[HEAD:bb[0-9]+]](%[[K:.*]]: i32, %[[C0:[0-9]+]]: f32, %[[C1:[0-9]+]]: f32, %[[C2:[0-9]+]]: f32, %[[C3:[0-9]+]]: f32, {{.*}}):
  // CHECK: llvm.icmp "slt" %[[K]], %{{.*}} : i32
  // CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> vector<2xf16>
  // CHECK-COUNT-8: llvm.load %{{.*}} : !llvm.ptr<3> -> f16
  // CHECK: nvvm.mma.sync A[%[[A0:.*]], %[[A1:.*]], %[[A2:.*]], %[[A3:.*]]]  B[%{{.*}}, %{{.*}}]  C[%[[C0]], %[[C1]], %[[C2]], %[[C3]]]
  // CHECK-SAME: layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>
  // CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 16>
  // CHECK-SAME: (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  // CHECK-COUNT-3: nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]]
  // CHECK-NOT: nvvm.mma.sync
  // CHECK: nvvm.barrier0
  // CHECK-COUNT-8: llvm.store %{{.*}}, %{{.*}} : vector<2xf32>, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK-COUNT-16: llvm.fadd
  // CHECK-NOT: llvm.intr.fma
  %d = tessel.dot %a, %b, %acc : !tessel.tile<64x16xf16, #a>, !tessel.tile<16x32xf16, #b> -> !tessel.tile<64x32xf32, #c>
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<64x32xf32, #c> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #c>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #c>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}

// Shapes off the MMA grid are padded: M = 48, N = 16, K = 24 -> 32. The
// padding of K is zeroed (A's columns 24..31, B's rows 24..31), each by a
// loop over the CTA's threads. bf16 fragments are i32 registers. The 3 x 2
// tiles go to a 1 x 4 warp grid (3 tile rows do not split in two): warps 2
// and 3 repeat tile column 1 and write their C fragments to their discard
// slots.

// CHECK-LABEL: llvm.func @mma_padded
func.func @mma_padded(%x: bf16, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : bf16 -> !tessel.tile<48x24xbf16, #a>
  %b = tessel.splat %x : bf16 -> !tessel.tile<24x16xbf16, #a>
  %z = arith.constant 0.0 : f32
  %acc = tessel.splat %z : f32 -> !tessel.tile<48x16xf32, #c>
  // CHECK: nvvm.barrier0
  // CHECK: %[[ZA:.*]] = llvm.mlir.constant(0.000000e+00 : bf16) : bf16
  // CHECK: ^bb{{[0-9]+}}(%{{.*}}: i32):
  // CHECK: llvm.store %[[ZA]], %{{.*}} : bf16, !llvm.ptr<3>
  // CHECK: %[[ZB:.*]] = llvm.mlir.constant(0.000000e+00 : bf16) : bf16
  // CHECK: ^bb{{[0-9]+}}(%{{.*}}: i32):
  // CHECK: llvm.getelementptr %{{.*}}[3840] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // CHECK: llvm.store %[[ZB]], %{{.*}} : bf16, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: %[[OK:.*]] = llvm.icmp "ule" %[[COL:.*]], %[[LAST:.*]] : i32
  // CHECK: llvm.intr.umin(%[[COL]], %[[LAST]])
  // CHECK-COUNT-3: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  // CHECK-NOT: nvvm.mma.sync
  // CHECK: nvvm.barrier0
  // CHECK: %[[PTR:.*]] = llvm.select %[[OK]], %{{.*}}, %{{.*}} : i1, !llvm.ptr<3>
  // CHECK: llvm.store %{{.*}}, %[[PTR]] : vector<2xf32>, !llvm.ptr<3>
  %d = tessel.dot %a, %b, %acc : !tessel.tile<48x24xbf16, #a>, !tessel.tile<24x16xbf16, #a> -> !tessel.tile<48x16xf32, #c>
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<48x16xf32, #c> -> !tessel.tile<48xf32, #tessel.slice<dim = 1, parent = #c>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<48xf32, #tessel.slice<dim = 1, parent = #c>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}
