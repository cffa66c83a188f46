// RUN: tessel-opt %s -split-input-file -tessel-stage-slices | FileCheck %s
// RUN: tessel-opt %s -split-input-file -tessel-stage-slices -convert-tessel-to-llvm | FileCheck %s --check-prefix=LLVM

#h = #tessel.blocked<sizePerThread = [1, 2], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>
#s = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// Three shifted windows of one halo tile: the tile goes to shared memory
// once and each window is read from there at its offsets. A tile sliced
// once keeps its extract_slice.

// CHECK-LABEL: func.func @windows
// CHECK: %[[H:.*]] = tessel.splat
// CHECK-NEXT: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<20x40xf32, order = [1, 0]>
// CHECK-NEXT: tessel.local_store %[[H]], %[[BUF]] : !tessel.tile<20x40xf32, #{{.*}}>, !tessel.memdesc<20x40xf32, order = [1, 0]>
// CHECK: tessel.local_load %[[BUF]] [0, 0] : !tessel.memdesc<20x40xf32, order = [1, 0]> -> !tessel.tile<16x32xf32, #{{.*}}>
// CHECK: tessel.local_load %[[BUF]] [2, 3]
// CHECK: tessel.local_load %[[BUF]] [4, 8]
// CHECK-NOT: tessel.local_load
// CHECK: tessel.extract_slice
// CHECK-NOT: tessel.extract_slice

// Lowered: one barrier before the owners' stores and one after; the loads
// read shared memory without a barrier of their own.
// LLVM-LABEL: llvm.func @windows
// LLVM: nvvm.barrier0
// LLVM: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// LLVM: nvvm.barrier0
// LLVM-NOT: nvvm.barrier0
// LLVM: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
func.func @windows(%x: f32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %h = tessel.splat %x : f32 -> !tessel.tile<20x40xf32, #h>
  %a = tessel.extract_slice %h [0, 0] : !tessel.tile<20x40xf32, #h> -> !tessel.tile<16x32xf32, #s>
  %b = tessel.extract_slice %h [2, 3] : !tessel.tile<20x40xf32, #h> -> !tessel.tile<16x32xf32, #s>
  %c = tessel.extract_slice %h [4, 8] : !tessel.tile<20x40xf32, #h> -> !tessel.tile<16x32xf32, #s>
  %ab = tessel.binary add %a, %b : !tessel.tile<16x32xf32, #s>
  %abc = tessel.binary add %ab, %c : !tessel.tile<16x32xf32, #s>
  %once = tessel.splat %x : f32 -> !tessel.tile<20x40xf32, #h>
  %d = tessel.extract_slice %once [1, 1] : !tessel.tile<20x40xf32, #h> -> !tessel.tile<16x32xf32, #s>
  %all = tessel.binary add %abc, %d : !tessel.tile<16x32xf32, #s>
  %r = tessel.reduce sum %all {axis = 1 : i32} : !tessel.tile<16x32xf32, #s> -> !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #s>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #s>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

// One slice in a loop, at runtime offsets, reads a tile defined outside the
// loop: it is sliced once per iteration, so the tile is staged once before
// the loop and each iteration reads its window from there.

#h2 = #tessel.blocked<sizePerThread = [1, 2], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>
#s2 = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: func.func @window_loop
// CHECK: %[[H:.*]] = tessel.splat
// CHECK-NEXT: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<20x40xf32, order = [1, 0]>
// CHECK-NEXT: tessel.local_store %[[H]], %[[BUF]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: tessel.local_load %[[BUF]] [%[[I]], 3] : !tessel.memdesc<20x40xf32, order = [1, 0]> -> !tessel.tile<16x32xf32, #{{.*}}>
// CHECK-NOT: tessel.extract_slice
func.func @window_loop(%x: f32, %n: i32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %h = tessel.splat %x : f32 -> !tessel.tile<20x40xf32, #h2>
  %zero = arith.constant 0.0 : f32
  %init = tessel.splat %zero : f32 -> !tessel.tile<16x32xf32, #s2>
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %init) -> (!tessel.tile<16x32xf32, #s2>) : i32 {
    %w = tessel.extract_slice %h [%i, 3] : !tessel.tile<20x40xf32, #h2> -> !tessel.tile<16x32xf32, #s2>
    %sum = tessel.binary add %a, %w : !tessel.tile<16x32xf32, #s2>
    scf.yield %sum : !tessel.tile<16x32xf32, #s2>
  }
  %r = tessel.reduce sum %acc {axis = 1 : i32} : !tessel.tile<16x32xf32, #s2> -> !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #s2>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #s2>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

// The buffer's rows are placed for the layouts that write and read them.
// Windows read in the mma.sync accumulator layout (each thread: rows g and
// g + 8, column pairs 8 apart) take one wavefront per half-warp when rows
// sit 8 or 24 words apart mod 32; the natural 44 words (12 mod 32) put two
// of a half-warp's four rows in the same banks. The chosen pitch, 56, is
// the lowering's row stride.

#acc = #tessel.mma<warpsPerCTA = [4, 1]>

// CHECK-LABEL: func.func @mma_windows
// CHECK: tessel.local_alloc : !tessel.memdesc<69x42xf32, order = [1, 0], pitch = 56>
// CHECK: tessel.local_load %{{.*}} [5, 10] : !tessel.memdesc<69x42xf32, order = [1, 0], pitch = 56> -> !tessel.tile<64x32xf32, #{{.*}}>
// LLVM-LABEL: llvm.func @mma_windows
// LLVM: llvm.mlir.constant(56 : i32)
// LLVM-NEXT: llvm.mul
func.func @mma_windows(%x: f32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %h = tessel.splat %x : f32 -> !tessel.tile<69x42xf32, #acc>
  %a = tessel.extract_slice %h [5, 0] : !tessel.tile<69x42xf32, #acc> -> !tessel.tile<64x32xf32, #acc>
  %b = tessel.extract_slice %h [5, 10] : !tessel.tile<69x42xf32, #acc> -> !tessel.tile<64x32xf32, #acc>
  %ab = tessel.binary add %a, %b : !tessel.tile<64x32xf32, #acc>
  %r = tessel.reduce sum %ab {axis = 1 : i32} : !tessel.tile<64x32xf32, #acc> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

// Runs of 4 columns a thread, 4 rows a warp (a blocked layout), read at odd
// shifts: 16-byte reads need rows 4 words apart, 8- and 4-byte ones then
// meet in the same banks; rows 2 mod 4 words apart serve them in one
// wavefront per phase. The store (runs of 4 too) is served either way: the
// pitch is 42 (10 mod 32), not the natural 40.

#run4 = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: func.func @odd_windows
// CHECK: tessel.local_alloc : !tessel.memdesc<20x40xf32, order = [1, 0], pitch = 42>
func.func @odd_windows(%x: f32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %h = tessel.splat %x : f32 -> !tessel.tile<20x40xf32, #run4>
  %a = tessel.extract_slice %h [1, 1] : !tessel.tile<20x40xf32, #run4> -> !tessel.tile<16x32xf32, #run4>
  %b = tessel.extract_slice %h [1, 3] : !tessel.tile<20x40xf32, #run4> -> !tessel.tile<16x32xf32, #run4>
  %ab = tessel.binary add %a, %b : !tessel.tile<16x32xf32, #run4>
  %r = tessel.reduce sum %ab {axis = 1 : i32} : !tessel.tile<16x32xf32, #run4> -> !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #run4>>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<16xf32, #tessel.slice<dim = 1, parent = #run4>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

// Slices that every thread holds already (the halves of an mma accumulator)
// move no data: nothing is staged for them.

#acc = #tessel.mma<warpsPerCTA = [4, 1]>

// CHECK-LABEL: func.func @accumulator_halves
// CHECK-NOT: tessel.local_alloc
// CHECK: tessel.extract_slice %{{.*}} [0, 0]
// CHECK: tessel.extract_slice %{{.*}} [0, 32]
func.func @accumulator_halves(%x: f32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %t = tessel.splat %x : f32 -> !tessel.tile<64x64xf32, #acc>
  %a = tessel.extract_slice %t [0, 0] : !tessel.tile<64x64xf32, #acc> -> !tessel.tile<64x32xf32, #acc>
  %b = tessel.extract_slice %t [0, 32] : !tessel.tile<64x64xf32, #acc> -> !tessel.tile<64x32xf32, #acc>
  %s = tessel.binary add %a, %b : !tessel.tile<64x32xf32, #acc>
  %r = tessel.reduce sum %s {axis = 1 : i32} : !tessel.tile<64x32xf32, #acc> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>>
  %z = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #acc>> -> f32
  tessel.store %o, %z : !tessel.ptr<f32>
  return
}
