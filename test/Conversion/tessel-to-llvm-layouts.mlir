// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// expand_dims from the slice layout and broadcast within one layout only
// rename slots: no barrier, no shared memory.

#p = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @renames
// CHECK-NOT: nvvm.barrier0
// CHECK-NOT: tessel_smem
// CHECK: llvm.return
func.func @renames(%out: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.num_warps = 2 : i32} {
  %r = tessel.arange 0, 8 : !tessel.tile<8xi32, #tessel.slice<dim = 1, parent = #p>>
  %e = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<8xi32, #tessel.slice<dim = 1, parent = #p>> -> !tessel.tile<8x1xi32, #p>
  %b = tessel.broadcast %e : !tessel.tile<8x1xi32, #p> -> !tessel.tile<8x32xi32, #p>
  %c = tessel.arange 0, 32 : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #p>>
  %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #p>> -> !tessel.tile<1x32xi32, #p>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #p> -> !tessel.tile<8x32xi32, #p>
  %s = tessel.binary add %b, %cb : !tessel.tile<8x32xi32, #p>
  %os = tessel.splat %out : !tessel.ptr<i32> -> !tessel.tile<8x32x!tessel.ptr<i32>, #p>
  %op = tessel.addptr %os, %s : !tessel.tile<8x32x!tessel.ptr<i32>, #p>, !tessel.tile<8x32xi32, #p>
  %t = tessel.trans %s [1, 0] : !tessel.tile<8x32xi32, #p> -> !tessel.tile<32x8xi32, #tessel.blocked<sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 2], order = [0, 1]>>
  tessel.store %op, %s : !tessel.tile<8x32x!tessel.ptr<i32>, #p>
  return
}

// -----

// A layout change goes through shared memory: barrier (the previous user
// is done), the owners write each element at its row-major index, barrier,
// every slot reads its element.

#a = #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>
#b = #tessel.blocked<sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>

// CHECK: llvm.mlir.global external @tessel_smem()
// CHECK-LABEL: llvm.func @convert
func.func @convert(%out: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  // CHECK: nvvm.barrier0
  // CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32, #a>
  %c = tessel.convert_layout %r : !tessel.tile<64xi32, #a> -> !tessel.tile<64xi32, #b>
  %os = tessel.splat %out : !tessel.ptr<i32> -> !tessel.tile<64x!tessel.ptr<i32>, #b>
  %op = tessel.addptr %os, %c : !tessel.tile<64x!tessel.ptr<i32>, #b>, !tessel.tile<64xi32, #b>
  tessel.store %op, %c : !tessel.tile<64x!tessel.ptr<i32>, #b>
  return
}

// -----

// Halo slices read the source at the slice's offsets: element (i, j) of
// the slice is element (i + 2, j + 5) of the source, row-major in 16 x 16.

#s = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [1, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @extract_slice
func.func @extract_slice(%out: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %r = tessel.arange 0, 256 : !tessel.tile<256xi32, #tessel.blocked<sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>>
  // CHECK: nvvm.barrier0
  // CHECK: nvvm.barrier0
  %t = tessel.reshape %r : !tessel.tile<256xi32, #tessel.blocked<sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>> -> !tessel.tile<16x16xi32, #s>
  // CHECK: nvvm.barrier0
  // CHECK: nvvm.barrier0
  // CHECK: %[[C2:.*]] = llvm.mlir.constant(2 : i32) : i32
  // CHECK: %[[ROW:.*]] = llvm.add %{{.*}}, %[[C2]] : i32
  // CHECK: %[[C5:.*]] = llvm.mlir.constant(5 : i32) : i32
  // CHECK: %[[COL:.*]] = llvm.add %{{.*}}, %[[C5]] : i32
  // CHECK: %[[C16:.*]] = llvm.mlir.constant(16 : i32) : i32
  // CHECK: %[[RS:.*]] = llvm.mul %[[ROW]], %[[C16]] : i32
  // CHECK: %[[I:.*]] = llvm.add %[[RS]], %[[COL]] : i32
  // CHECK: %[[A:.*]] = llvm.getelementptr %{{.*}}[%[[I]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
  // CHECK: llvm.load %[[A]] : !llvm.ptr<3> -> i32
  %h = tessel.extract_slice %t [2, 5] : !tessel.tile<16x16xi32, #s> -> !tessel.tile<8x8xi32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>
  %q = tessel.reduce sum %h {axis = 1 : i32} : !tessel.tile<8x8xi32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>> -> !tessel.tile<8xi32, #tessel.slice<dim = 1, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>>
  %z = tessel.reduce sum %q {axis = 0 : i32} : !tessel.tile<8xi32, #tessel.slice<dim = 1, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>> -> i32
  tessel.store %out, %z : !tessel.ptr<i32>
  return
}

// -----

// A runtime offset is clamped into [0, 16 - 8] once, then added to each
// element's row.

#d = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [1, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @extract_slice_at_runtime
// CHECK-SAME: (%{{.*}}: !llvm.ptr<1>, %[[X:.*]]: i32, %[[V:.*]]: i32)
func.func @extract_slice_at_runtime(%out: !tessel.ptr<i32>, %x: i32, %v: i32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %t = tessel.splat %v : i32 -> !tessel.tile<16x16xi32, #d>
  // CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
  // CHECK-NEXT: %[[EIGHT:.*]] = llvm.mlir.constant(8 : i32) : i32
  // CHECK-NEXT: %[[LOW:.*]] = llvm.intr.smax(%[[X]], %[[ZERO]]) : (i32, i32) -> i32
  // CHECK-NEXT: %[[ORIGIN:.*]] = llvm.intr.smin(%[[LOW]], %[[EIGHT]]) : (i32, i32) -> i32
  // CHECK: nvvm.barrier0
  // CHECK: llvm.add %{{.*}}, %[[ORIGIN]] : i32
  %h = tessel.extract_slice %t [%x, 0] : !tessel.tile<16x16xi32, #d> -> !tessel.tile<8x16xi32, #d>
  %q = tessel.reduce sum %h {axis = 1 : i32} : !tessel.tile<8x16xi32, #d> -> !tessel.tile<8xi32, #tessel.slice<dim = 1, parent = #d>>
  %z = tessel.reduce sum %q {axis = 0 : i32} : !tessel.tile<8xi32, #tessel.slice<dim = 1, parent = #d>> -> i32
  tessel.store %out, %z : !tessel.ptr<i32>
  return
}

// -----

// A transpose whose result layout is not the permuted one moves data.

#r = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @trans_through_shared
// CHECK: nvvm.barrier0
// CHECK: llvm.store {{.*}} !llvm.ptr<3>
// CHECK: nvvm.barrier0
func.func @trans_through_shared(%out: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %c1 = arith.constant 1 : i32
  %s = tessel.splat %c1 : i32 -> !tessel.tile<4x8xi32, #r>
  %t = tessel.trans %s [1, 0] : !tessel.tile<4x8xi32, #r> -> !tessel.tile<8x4xi32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [1, 0]>>
  %q = tessel.reduce sum %t {axis = 1 : i32} : !tessel.tile<8x4xi32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [1, 0]>> -> !tessel.tile<8xi32, #tessel.slice<dim = 1, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [1, 0]>>>
  %z = tessel.reduce sum %q {axis = 0 : i32} : !tessel.tile<8xi32, #tessel.slice<dim = 1, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [1, 0]>>> -> i32
  tessel.store %out, %z : !tessel.ptr<i32>
  return
}

// -----

// The scratch rows of a layout change sit at the pitch where its writes and
// reads meet the fewest bank conflicts: rows of 64 bf16 (32 words) read as
// an mma.sync A operand (each lane 2 elements of rows g and g + 8) put all 8
// rows of a read in the same banks; 72 elements (36 words) spread them.

#rows8 = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#acc = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #acc>
#opb = #tessel.dot_operand<opIdx = 1, parent = #acc>

// CHECK-LABEL: llvm.func @padded_scratch
// CHECK: nvvm.barrier0
// CHECK: %[[P:.*]] = llvm.mlir.constant(72 : i32) : i32
// CHECK-NEXT: llvm.mul %{{.*}}, %[[P]] : i32
// CHECK: llvm.store %{{.*}}, %{{.*}} : bf16, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.mlir.constant(72 : i32) : i32
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> bf16
// CHECK-NOT: llvm.mlir.constant(64 : i32)
// CHECK: nvvm.barrier0
func.func @padded_scratch(%x: bf16, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %b = tessel.splat %x : bf16 -> !tessel.tile<64x32xbf16, #opb>
  %t = tessel.splat %x : bf16 -> !tessel.tile<64x64xbf16, #rows8>
  %a = tessel.convert_layout %t : !tessel.tile<64x64xbf16, #rows8> -> !tessel.tile<64x64xbf16, #opa>
  %zero = arith.constant 0.0 : f32
  %acc = tessel.splat %zero : f32 -> !tessel.tile<64x32xf32, #acc>
  %d = tessel.dot %a, %b, %acc : !tessel.tile<64x64xbf16, #opa>, !tessel.tile<64x32xbf16, #opb> -> !tessel.tile<64x32xf32, #acc>
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<64x32xf32, #acc> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>>
  %s = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>> -> f32
  tessel.store %o, %s : !tessel.ptr<f32>
  return
}

// -----

// A slice whose elements every thread holds already (the right half of an
// mma accumulator) takes the thread's own values: no shared memory, no
// barrier. Offset 4 splits the 8-column blocks, so that slice moves data.

#acc = #tessel.mma<warpsPerCTA = [4, 1]>

// CHECK-LABEL: llvm.func @extract_slice_in_registers
// CHECK-NOT: nvvm.barrier0
// CHECK-NOT: !llvm.ptr<3>
// CHECK: llvm.fadd
// CHECK-LABEL: llvm.func @extract_slice_across_lanes
// CHECK: nvvm.barrier0
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
func.func @extract_slice_in_registers(%v: f32, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %t = tessel.splat %v : f32 -> !tessel.tile<64x64xf32, #acc>
  %a = tessel.extract_slice %t [0, 0] : !tessel.tile<64x64xf32, #acc> -> !tessel.tile<64x32xf32, #acc>
  %b = tessel.extract_slice %t [0, 32] : !tessel.tile<64x64xf32, #acc> -> !tessel.tile<64x32xf32, #acc>
  %s = tessel.binary add %a, %b : !tessel.tile<64x32xf32, #acc>
  %r = tessel.reduce sum %s {axis = 1 : i32} : !tessel.tile<64x32xf32, #acc> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>>
  %z = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>> -> f32
  tessel.store %out, %z : !tessel.ptr<f32>
  return
}

func.func @extract_slice_across_lanes(%v: f32, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %t = tessel.splat %v : f32 -> !tessel.tile<64x64xf32, #acc>
  %a = tessel.extract_slice %t [0, 4] : !tessel.tile<64x64xf32, #acc> -> !tessel.tile<64x32xf32, #acc>
  %r = tessel.reduce sum %a {axis = 1 : i32} : !tessel.tile<64x32xf32, #acc> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>>
  %z = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>> -> f32
  tessel.store %out, %z : !tessel.ptr<f32>
  return
}
