// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// Row sums of 32 x 64 with 4 elements per thread along the row, 16 lanes
// per row and 2 warps along it: the thread's own elements, then butterfly
// shuffles over lane bits 0..3 (xor 1, 2, 4, 8), then the two warps
// through shared memory, combined in warp order.

#p = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [2, 2], order = [1, 0]>

// CHECK-LABEL: llvm.func @row_sum
func.func @row_sum(%x: f32, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %t = tessel.splat %x : f32 -> !tessel.tile<32x64xf32, #p>
  // In-thread: 4 elements.
  // CHECK-COUNT-3: llvm.fadd
  // CHECK: %[[M1:.*]] = llvm.mlir.constant(1 : i32) : i32
  // CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[M1]], %{{.*}} : i32 -> i32
  // CHECK: %[[M2:.*]] = llvm.mlir.constant(2 : i32) : i32
  // CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[M2]], %{{.*}} : i32 -> i32
  // CHECK: %[[M4:.*]] = llvm.mlir.constant(4 : i32) : i32
  // CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[M4]], %{{.*}} : i32 -> i32
  // CHECK: %[[M8:.*]] = llvm.mlir.constant(8 : i32) : i32
  // CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %[[M8]], %{{.*}} : i32 -> i32
  // Across the 2 warps of a row: [row][warp] in shared memory.
  // CHECK: nvvm.barrier0
  // CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: %[[W0:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> f32
  // CHECK: %[[W1:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> f32
  // CHECK: llvm.fadd %[[W0]], %[[W1]] : f32
  %s = tessel.reduce sum %t {axis = 1 : i32} : !tessel.tile<32x64xf32, #p> -> !tessel.tile<32xf32, #tessel.slice<dim = 1, parent = #p>>
  %r = tessel.arange 0, 32 : !tessel.tile<32xi32, #tessel.slice<dim = 1, parent = #p>>
  %os = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<32x!tessel.ptr<f32>, #tessel.slice<dim = 1, parent = #p>>
  %op = tessel.addptr %os, %r : !tessel.tile<32x!tessel.ptr<f32>, #tessel.slice<dim = 1, parent = #p>>, !tessel.tile<32xi32, #tessel.slice<dim = 1, parent = #p>>
  // The 32 lanes of a row hold copies: only the first lane of the first
  // warp along the row stores.
  // CHECK: llvm.inline_asm has_side_effects {{.*}}st.global.b32
  tessel.store %op, %s : !tessel.tile<32x!tessel.ptr<f32>, #tessel.slice<dim = 1, parent = #p>>
  return
}

// -----

// A maximum over a wrapped axis (48 elements on a 64-wide layout): the
// copies past the end contribute -inf, not a second time the element.

#w = #tessel.blocked<sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>

// CHECK-LABEL: llvm.func @wrapped_max
func.func @wrapped_max(%x: !tessel.ptr<f32>, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %r = tessel.arange 0, 48 : !tessel.tile<48xi32, #w>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<48x!tessel.ptr<f32>, #w>
  %xp = tessel.addptr %xs, %r : !tessel.tile<48x!tessel.ptr<f32>, #w>, !tessel.tile<48xi32, #w>
  %v = tessel.load %xp : !tessel.tile<48x!tessel.ptr<f32>, #w>
  // CHECK: %[[IN:.*]] = llvm.icmp "ult"
  // CHECK: %[[NINF:.*]] = llvm.mlir.constant(0xFF800000 : f32) : f32
  // CHECK: llvm.select %[[IN]], %{{.*}}, %[[NINF]] : i1, f32
  // CHECK: llvm.intr.maximum
  // CHECK-COUNT-5: nvvm.shfl.sync bfly
  %m = tessel.reduce max %v {axis = 0 : i32} : !tessel.tile<48xf32, #w> -> f32
  tessel.store %out, %m : !tessel.ptr<f32>
  return
}

// -----

// Column sums of 16 x 15 whose layout covers 16 columns, 2 warps along the
// reduced rows: the 16th column wraps onto column 0, whose slot its threads
// must not write as well (a race, which compute-sanitizer's racecheck
// reports); they read it.

#c = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [2, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @padded_column_sum
func.func @padded_column_sum(%x: f32, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 2 : i32} {
  %t = tessel.splat %x : f32 -> !tessel.tile<16x15xf32, #c>
  // CHECK: nvvm.barrier0
  // CHECK: %[[IN:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
  // CHECK: llvm.cond_br %[[IN]], ^[[STORE:.*]], ^[[DONE:.*]]
  // CHECK: ^[[STORE]]:
  // CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
  // CHECK: ^[[DONE]]:
  // CHECK-NEXT: nvvm.barrier0
  // CHECK-COUNT-2: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
  %s = tessel.reduce sum %t {axis = 0 : i32} : !tessel.tile<16x15xf32, #c> -> !tessel.tile<15xf32, #tessel.slice<dim = 0, parent = #c>>
  %r = tessel.arange 0, 15 : !tessel.tile<15xi32, #tessel.slice<dim = 0, parent = #c>>
  %os = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<15x!tessel.ptr<f32>, #tessel.slice<dim = 0, parent = #c>>
  %op = tessel.addptr %os, %r : !tessel.tile<15x!tessel.ptr<f32>, #tessel.slice<dim = 0, parent = #c>>, !tessel.tile<15xi32, #tessel.slice<dim = 0, parent = #c>>
  tessel.store %op, %s : !tessel.tile<15x!tessel.ptr<f32>, #tessel.slice<dim = 0, parent = #c>>
  return
}
