// RUN: tessel-opt %s -convert-tessel-to-llvm | FileCheck %s

// dot on the CUDA cores (f32 operands; f16 and bf16 take the tensor cores,
// see tessel-to-llvm-dot-mma.mlir): A (16 x 8) and B (8 x 32) are staged in
// shared memory, A first, B at the next 16-byte boundary (512 bytes); then
// a loop over K reads the thread's 1 row of A and 4 columns of B and
// accumulates its 4 slots with FMAs.

#a = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#b = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
#c = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @dot
func.func @dot(%x: f32, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : f32 -> !tessel.tile<16x8xf32, #a>
  %b = tessel.splat %x : f32 -> !tessel.tile<8x32xf32, #b>
  %acc = tessel.splat %x : f32 -> !tessel.tile<16x32xf32, #c>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
  // CHECK: %[[BBASE:.*]] = llvm.getelementptr %{{.*}}[512] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.br ^[[HEAD:bb[0-9]+]](%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32, f32, f32, f32, f32)
  // CHECK: ^[[HEAD]](%[[K:.*]]: i32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
  // CHECK: llvm.icmp "slt" %[[K]], %{{.*}} : i32
  // CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
  // CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
  // CHECK-COUNT-4: llvm.intr.fma
  // CHECK-NOT: nvvm.mma.sync
  %d = tessel.dot %a, %b, %acc : !tessel.tile<16x8xf32, #a>, !tessel.tile<8x32xf32, #b> -> !tessel.tile<16x32xf32, #c>
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<16x32xf32, #c> -> !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #c>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #c>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}
