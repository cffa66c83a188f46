// RUN: tessel-opt %s -split-input-file -tessel-pipeline | FileCheck %s
// RUN: tessel-opt %s -split-input-file -tessel-pipeline=num-stages=1 | FileCheck %s --check-prefix=OFF

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// The key tile of each iteration (masked on its rows, B of the dot through
// a transpose) moves to three shared buffers. Before the loop: the tiles of
// iterations 0 and 1, two groups. Each iteration waits until one group is
// left in flight, requests the tile two iterations ahead (masked also by
// being inside the loop) into the buffer the last iteration read, and the
// dot reads its own buffer, transposed.

// CHECK-LABEL: func.func @keys
// CHECK: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK: %[[B0:.*]] = tessel.memdesc_index %[[BUF]][%{{.*}}] : !tessel.memdesc<3x64x64xf16, order = [1, 0]> -> !tessel.memdesc<64x64xf16, order = [1, 0]>
// CHECK: tessel.async_copy %{{.*}}, %[[B0]] mask %{{.*}}
// CHECK: tessel.async_commit
// CHECK: tessel.async_copy
// CHECK: tessel.async_commit
// CHECK: scf.for %[[IV:.*]] = %[[LB:.*]] to %[[UB:.*]] step %[[ST:.*]] iter_args
// CHECK-NEXT: tessel.async_wait 1
// CHECK: %[[I:.*]] = arith.divsi
// CHECK: %[[SLOT:.*]] = arith.remsi %[[I]]
// CHECK: %[[NEXT:.*]] = arith.remsi
// CHECK: %[[MINE:.*]] = tessel.memdesc_index %[[BUF]][%[[SLOT]]]
// CHECK: %[[AHEAD:.*]] = arith.addi %[[IV]], %{{.*}} : i32
// CHECK: arith.cmpi slt, %[[AHEAD]], %[[UB]] : i32
// CHECK: %[[REFILL:.*]] = tessel.memdesc_index %[[BUF]][%[[NEXT]]]
// CHECK: tessel.async_copy %{{.*}}, %[[REFILL]] mask
// CHECK: tessel.async_commit
// CHECK-NOT: tessel.load
// CHECK: %[[T:.*]] = tessel.memdesc_trans %[[MINE]] : !tessel.memdesc<64x64xf16, order = [1, 0]> -> !tessel.memdesc<64x64xf16, order = [0, 1]>
// CHECK: tessel.dot %{{.*}}, %[[T]], %{{.*}} : !tessel.tile<64x64xf16, #{{.*}}>, !tessel.memdesc<64x64xf16, order = [0, 1]>
// CHECK: }
// CHECK-NEXT: tessel.async_wait 0

// OFF-LABEL: func.func @keys
// OFF-NOT: local_alloc
// OFF: tessel.load
func.func @keys(%k: !tessel.ptr<f16>, %n: i32, %a: !tessel.tile<64x64xf16, #opa>, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
    %rows = tessel.binary add %is, %r : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
    %re = tessel.expand_dims %rows {axis = 1 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>> -> !tessel.tile<64x1xi32, #b>
    %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %s64 = tessel.splat %c64 : i32 -> !tessel.tile<64x64xi32, #b>
    %ro = tessel.binary mul %rb, %s64 : !tessel.tile<64x64xi32, #b>
    %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>> -> !tessel.tile<1x64xi32, #b>
    %cb = tessel.broadcast %ce : !tessel.tile<1x64xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %off = tessel.binary add %ro, %cb : !tessel.tile<64x64xi32, #b>
    %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %kp = tessel.addptr %ks, %off : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %ns = tessel.splat %n : i32 -> !tessel.tile<64x64xi32, #b>
    %m = tessel.cmp lt %rb, %ns : !tessel.tile<64x64xi32, #b> -> !tessel.tile<64x64xi1, #b>
    %zh = arith.constant 0.0 : f16
    %zt = tessel.splat %zh : f16 -> !tessel.tile<64x64xf16, #b>
    %kt = tessel.load %kp mask %m other %zt : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %ktt = tessel.trans %kt [1, 0] : !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf16, #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]>>
    %d = tessel.dot %a, %ktt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]>> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d : !tessel.tile<64x64xf32, #mma>
  }
  %rows = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// A query block loaded before the loop and converted to the dot's operand
// there (where LICM leaves a conversion hoisted from the loop): the
// conversion waits for the load, so it moves below the prologue, whose
// copies then travel while it waits. A conversion used before the loop
// stays where it is.

// CHECK-LABEL: func.func @query_before_keys
// CHECK: %[[Q:.*]] = tessel.load %{{.*}} : !tessel.tile<64x64x!tessel.ptr<f16>, #{{.*}}>
// CHECK: %[[EARLY:.*]] = tessel.convert_layout %[[Q]] : {{.*}} -> !tessel.tile<64x64xf16, #{{.*}}>
// CHECK: tessel.store %{{.*}}, %[[EARLY]]
// CHECK: tessel.local_alloc
// CHECK: tessel.async_copy
// CHECK: tessel.async_commit
// CHECK: tessel.async_copy
// CHECK: tessel.async_commit
// CHECK-NEXT: %[[A:.*]] = tessel.convert_layout %[[Q]] : {{.*}} -> !tessel.tile<64x64xf16, #tessel.dot_operand
// CHECK-NEXT: scf.for
// CHECK: tessel.dot %[[A]],
func.func @query_before_keys(%q: !tessel.ptr<f16>, %k: !tessel.ptr<f16>, %n: i32, %o: !tessel.ptr<f32>, %qo: !tessel.ptr<f16>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>>
  %re0 = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>> -> !tessel.tile<64x1xi32, #b>
  %rb0 = tessel.broadcast %re0 : !tessel.tile<64x1xi32, #b> -> !tessel.tile<64x64xi32, #b>
  %s640 = tessel.splat %c64 : i32 -> !tessel.tile<64x64xi32, #b>
  %ro0 = tessel.binary mul %rb0, %s640 : !tessel.tile<64x64xi32, #b>
  %ce0 = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>> -> !tessel.tile<1x64xi32, #b>
  %cb0 = tessel.broadcast %ce0 : !tessel.tile<1x64xi32, #b> -> !tessel.tile<64x64xi32, #b>
  %qoff = tessel.binary add %ro0, %cb0 : !tessel.tile<64x64xi32, #b>
  %qs = tessel.splat %q : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %qp = tessel.addptr %qs, %qoff : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
  %qt = tessel.load %qp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %early = tessel.convert_layout %qt : !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf16, #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>>
  %qos = tessel.splat %qo : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>>
  tessel.store %qos, %early : !tessel.tile<64x64x!tessel.ptr<f16>, #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>>
  %a = tessel.convert_layout %qt : !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf16, #opa>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
    %rows = tessel.binary add %is, %r : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
    %re = tessel.expand_dims %rows {axis = 1 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>> -> !tessel.tile<64x1xi32, #b>
    %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %ro = tessel.binary mul %rb, %s640 : !tessel.tile<64x64xi32, #b>
    %off = tessel.binary add %ro, %cb0 : !tessel.tile<64x64xi32, #b>
    %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %kp = tessel.addptr %ks, %off : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %ns = tessel.splat %n : i32 -> !tessel.tile<64x64xi32, #b>
    %m = tessel.cmp lt %rb, %ns : !tessel.tile<64x64xi32, #b> -> !tessel.tile<64x64xi1, #b>
    %zh = arith.constant 0.0 : f16
    %zt = tessel.splat %zh : f16 -> !tessel.tile<64x64xf16, #b>
    %kt = tessel.load %kp mask %m other %zt : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %ktt = tessel.trans %kt [1, 0] : !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf16, #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]>>
    %d = tessel.dot %a, %ktt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]>> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d : !tessel.tile<64x64xf32, #mma>
  }
  %rows = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
#col = #tessel.slice<dim = 0, parent = #mma>

// A row vector of the iteration (f32, masked, read through expand_dims on
// axis 0) rides along with the key tile: three 1 x 64 buffers (the stages), copied a
// thread an element from pointers computed again in the copy's layout (its
// range and splats made before the loop), read back as the 1 x 64 tile its
// expand_dims made. A vector read otherwise stays a load.

// CHECK-LABEL: func.func @row_vector
// CHECK-DAG: %[[VBUF:.*]] = tessel.local_alloc : !tessel.memdesc<3x1x64xf32, order = [1, 0]>
// CHECK-DAG: tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]>>>
// CHECK-DAG: tessel.splat %{{.*}} : !tessel.ptr<f32> -> !tessel.tile<64x!tessel.ptr<f32>, #tessel.slice<dim = 0, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]>>>
// CHECK: %[[P0:.*]] = tessel.expand_dims %{{.*}} {axis = 0 : i32} : !tessel.tile<64x!tessel.ptr<f32>, #tessel.slice<dim = 0, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]>>> -> !tessel.tile<1x64x!tessel.ptr<f32>, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]>>
// CHECK: tessel.async_copy %[[P0]], %{{.*}} mask %{{.*}} : !tessel.tile<1x64x!tessel.ptr<f32>, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]>>, !tessel.memdesc<1x64xf32, order = [1, 0]>
// CHECK: scf.for
// CHECK: %[[MINE:.*]] = tessel.memdesc_index %[[VBUF]][%{{.*}}] : !tessel.memdesc<3x1x64xf32, order = [1, 0]> -> !tessel.memdesc<1x64xf32, order = [1, 0]>
// CHECK: tessel.async_copy %{{.*}}, %{{.*}} mask %{{.*}} : !tessel.tile<1x64x!tessel.ptr<f32>, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]>>
// CHECK: %[[ROW:.*]] = tessel.local_load %[[MINE]] [0, 0] : !tessel.memdesc<1x64xf32, order = [1, 0]> -> !tessel.tile<1x64xf32, #tessel.mma<warpsPerCTA = [4, 1]>>
// CHECK: tessel.load %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>, #tessel.slice<dim = 0, parent = #tessel.mma<warpsPerCTA = [4, 1]>>>
// CHECK: tessel.broadcast %[[ROW]] : !tessel.tile<1x64xf32, #tessel.mma<warpsPerCTA = [4, 1]>> -> !tessel.tile<64x64xf32, #tessel.mma<warpsPerCTA = [4, 1]>>
// CHECK-NOT: tessel.local_load
// CHECK: scf.yield
func.func @row_vector(%k: !tessel.ptr<f16>, %lse: !tessel.ptr<f32>, %n: i32, %a: !tessel.tile<64x64xf16, #opa>, %kp0: !tessel.tile<64x64x!tessel.ptr<f16>, #b>, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32, #col>
  %ls = tessel.splat %lse : !tessel.ptr<f32> -> !tessel.tile<64x!tessel.ptr<f32>, #col>
  %ns = tessel.splat %n : i32 -> !tessel.tile<64xi32, #col>
  %zs = tessel.splat %z : f32 -> !tessel.tile<64xf32, #col>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %kt = tessel.load %kp0 : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %a, %kt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %is = tessel.splat %i : i32 -> !tessel.tile<64xi32, #col>
    %cols = tessel.binary add %is, %c : !tessel.tile<64xi32, #col>
    %lp = tessel.addptr %ls, %cols : !tessel.tile<64x!tessel.ptr<f32>, #col>, !tessel.tile<64xi32, #col>
    %ok = tessel.cmp lt %cols, %ns : !tessel.tile<64xi32, #col> -> !tessel.tile<64xi1, #col>
    %row = tessel.load %lp mask %ok other %zs : !tessel.tile<64x!tessel.ptr<f32>, #col>
    %other = tessel.load %lp : !tessel.tile<64x!tessel.ptr<f32>, #col>
    %re = tessel.expand_dims %row {axis = 0 : i32} : !tessel.tile<64xf32, #col> -> !tessel.tile<1x64xf32, #mma>
    %rb = tessel.broadcast %re : !tessel.tile<1x64xf32, #mma> -> !tessel.tile<64x64xf32, #mma>
    %e = tessel.binary sub %d, %rb : !tessel.tile<64x64xf32, #mma>
    %oe = tessel.expand_dims %other {axis = 0 : i32} : !tessel.tile<64xf32, #col> -> !tessel.tile<1x64xf32, #mma>
    %ob = tessel.broadcast %oe : !tessel.tile<1x64xf32, #mma> -> !tessel.tile<64x64xf32, #mma>
    %sum = tessel.reduce sum %other {axis = 0 : i32} : !tessel.tile<64xf32, #col> -> f32
    %sb = tessel.splat %sum : f32 -> !tessel.tile<64x64xf32, #mma>
    %f = tessel.binary add %e, %ob : !tessel.tile<64x64xf32, #mma>
    %g = tessel.binary add %f, %sb : !tessel.tile<64x64xf32, #mma>
    scf.yield %g : !tessel.tile<64x64xf32, #mma>
  }
  %rows = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#bt = #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// In a loop pipelined for its key tile (B through a transpose), a tile that
// is a dot's A (converted to its operand layout) and a B whose 36 columns
// the MMA's 8-column blocks do not tile (a halo of keys) are copied ahead
// the same way and read back from their buffers where they were loaded.

// CHECK-LABEL: func.func @read_back
// CHECK: tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK: tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK: tessel.local_alloc : !tessel.memdesc<3x36x64xf16, order = [1, 0]>
// CHECK: scf.for
// CHECK-COUNT-3: tessel.async_copy
// CHECK-NOT: tessel.load
// CHECK: %[[Q:.*]] = tessel.local_load %{{.*}}[0, 0] : !tessel.memdesc<64x64xf16, order = [1, 0]> -> !tessel.tile<64x64xf16, #{{.*}}>
// CHECK: tessel.convert_layout %[[Q]]
// CHECK: %[[H:.*]] = tessel.local_load %{{.*}}[0, 0] : !tessel.memdesc<36x64xf16, order = [1, 0]> -> !tessel.tile<36x64xf16, #{{.*}}>
// CHECK: tessel.trans %[[H]]
func.func @read_back(%k: !tessel.ptr<f16>, %n: i32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>>
  %hacc0 = tessel.splat %z : f32 -> !tessel.tile<64x36xf32, #mma>
  %res:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0, %hacc = %hacc0) -> (!tessel.tile<64x64xf32, #mma>, !tessel.tile<64x36xf32, #mma>) : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
    %rows = tessel.binary add %is, %r : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
    %re = tessel.expand_dims %rows {axis = 1 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>> -> !tessel.tile<64x1xi32, #b>
    %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %s64 = tessel.splat %c64 : i32 -> !tessel.tile<64x64xi32, #b>
    %ro = tessel.binary mul %rb, %s64 : !tessel.tile<64x64xi32, #b>
    %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>> -> !tessel.tile<1x64xi32, #b>
    %cb = tessel.broadcast %ce : !tessel.tile<1x64xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %off = tessel.binary add %ro, %cb : !tessel.tile<64x64xi32, #b>
    %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %kp = tessel.addptr %ks, %off : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %ktt = tessel.trans %kt [1, 0] : !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf16, #bt>
    // The query rows of the iteration, the dot's A.
    %qt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %qa = tessel.convert_layout %qt : !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf16, #opa>
    %d = tessel.dot %qa, %ktt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #bt> -> !tessel.tile<64x64xf32, #mma>
    // 36 keys: N = 36 as B, not a multiple of the MMA's 8 columns.
    %hs = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<36x64x!tessel.ptr<f16>, #b>
    %ht = tessel.load %hs : !tessel.tile<36x64x!tessel.ptr<f16>, #b>
    %htt = tessel.trans %ht [1, 0] : !tessel.tile<36x64xf16, #b> -> !tessel.tile<64x36xf16, #bt>
    %e = tessel.dot %qa, %htt, %hacc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x36xf16, #bt> -> !tessel.tile<64x36xf32, #mma>
    scf.yield %d, %e : !tessel.tile<64x64xf32, #mma>, !tessel.tile<64x36xf32, #mma>
  }
  %hrows = tessel.reduce sum %res#1 {axis = 1 : i32} : !tessel.tile<64x36xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %ht = tessel.reduce sum %hrows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %ht : !tessel.ptr<f32>
  %rows = tessel.reduce sum %res#0 {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#bt = #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// With 8 stages the key tile's buffers take 64 KB; the query tile's would
// take the kernel to 128 KB, past the 99 KB an sm_80 kernel may count on:
// the query tile stays a load of the iteration.

// CHECK-LABEL: func.func @read_back_budget
// CHECK: tessel.local_alloc : !tessel.memdesc<8x64x64xf16, order = [1, 0]>
// CHECK-NOT: tessel.local_alloc
// CHECK: scf.for
// CHECK: tessel.async_copy
// CHECK-NOT: tessel.async_copy
// CHECK: tessel.load
func.func @read_back_budget(%k: !tessel.ptr<f16>, %n: i32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32, tessel.num_stages = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
    %rows = tessel.binary add %is, %r : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
    %re = tessel.expand_dims %rows {axis = 1 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>> -> !tessel.tile<64x1xi32, #b>
    %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %s64 = tessel.splat %c64 : i32 -> !tessel.tile<64x64xi32, #b>
    %ro = tessel.binary mul %rb, %s64 : !tessel.tile<64x64xi32, #b>
    %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>> -> !tessel.tile<1x64xi32, #b>
    %cb = tessel.broadcast %ce : !tessel.tile<1x64xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %off = tessel.binary add %ro, %cb : !tessel.tile<64x64xi32, #b>
    %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %kp = tessel.addptr %ks, %off : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %ktt = tessel.trans %kt [1, 0] : !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf16, #bt>
    %qt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %qa = tessel.convert_layout %qt : !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf16, #opa>
    %d = tessel.dot %qa, %ktt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #bt> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d : !tessel.tile<64x64xf32, #mma>
  }
  %rows = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// Left alone: a load whose pointers depend on a loop-carried value, a
// load used by something else than a dot in a loop with no dot to pipeline,
// and (num_stages = 1) every load of a kernel that asks for no pipelining.

// CHECK-LABEL: func.func @not_pipelined
// CHECK-NOT: local_alloc
// CHECK-COUNT-2: tessel.load
func.func @not_pipelined(%k: !tessel.ptr<f16>, %n: i32, %a: !tessel.tile<64x64xf16, #opa>, %off0: !tessel.tile<64x64xi32, #b>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %r:2 = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0, %off = %off0) -> (!tessel.tile<64x64xf32, #mma>, !tessel.tile<64x64xi32, #b>) : i32 {
    %kp = tessel.addptr %ks, %off : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %a, %kt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %s = tessel.splat %c64 : i32 -> !tessel.tile<64x64xi32, #b>
    %next = tessel.binary add %off, %s : !tessel.tile<64x64xi32, #b>
    scf.yield %d, %next : !tessel.tile<64x64xf32, #mma>, !tessel.tile<64x64xi32, #b>
  }
  scf.for %i = %c0 to %n step %c64 : i32 {
    %kt = tessel.load %ks : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    tessel.store %ks, %kt : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  }
  return
}

// CHECK-LABEL: func.func @stages_one
// CHECK-NOT: local_alloc
func.func @stages_one(%k: !tessel.ptr<f16>, %n: i32, %a: !tessel.tile<64x64xf16, #opa>) attributes {tessel.kernel, tessel.num_warps = 4 : i32, tessel.num_stages = 1 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %r = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %kt = tessel.load %ks : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %a, %kt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d : !tessel.tile<64x64xf32, #mma>
  }
  return
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// A loop that writes the array it reads keeps its load in place (the copy
// would run ahead of the write); a write to another array does not stop it.

// CHECK-LABEL: func.func @writes
// CHECK: tessel.local_alloc
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tessel.load
func.func @writes(%k: !tessel.ptr<f16>, %out: !tessel.ptr<f16>, %n: i32, %a: !tessel.tile<64x64xf16, #opa>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %os = tessel.splat %out : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  scf.for %i = %c0 to %n step %c64 : i32 {
    %kt = tessel.load %ks : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %a, %kt, %acc0 : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %h = tessel.cast %d : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64x64xf16, #mma>
    %hb = tessel.convert_layout %h : !tessel.tile<64x64xf16, #mma> -> !tessel.tile<64x64xf16, #b>
    tessel.store %os, %hb : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  }
  scf.for %i = %c0 to %n step %c64 : i32 {
    %kt = tessel.load %ks : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %a, %kt, %acc0 : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %h = tessel.cast %d : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64x64xf16, #mma>
    %hb = tessel.convert_layout %h : !tessel.tile<64x64xf16, #mma> -> !tessel.tile<64x64xf16, #b>
    tessel.store %ks, %hb : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  }
  return
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
#rows = #tessel.slice<dim = 1, parent = #b>

// A paged cache: each key row's page comes from a block table the loop does
// not write. The table's load runs an iteration before the copies it
// addresses, once for both tiles, masked by the rows' mask and by being
// inside the loop (ahead of the loop's end it would read past the table),
// and its value goes round the loop: the prologue loads the pages of the
// first three iterations, copies the first two, and hands the third's to
// the loop; each iteration copies with the pages it was handed and loads
// those of the iteration after. The iteration's own load of it is gone with
// the tiles'. A loop that writes the table keeps its loads.

// CHECK-LABEL: func.func @paged
// CHECK-COUNT-2: tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK: %[[IN0:.*]] = arith.cmpi slt
// CHECK: %[[INS0:.*]] = tessel.splat %[[IN0]] : i1 -> !tessel.tile<64xi1, #{{.*}}>
// CHECK: %[[M0:.*]] = tessel.binary and %{{.*}}, %[[INS0]]
// CHECK: %[[P0:.*]] = tessel.load %{{.*}} mask %[[M0]] : !tessel.tile<64x!tessel.ptr<i32>, #{{.*}}>
// CHECK: %[[P1:.*]] = tessel.load
// CHECK: %[[P2:.*]] = tessel.load
// CHECK-NOT: tessel.load
// CHECK: tessel.expand_dims %[[P0]]
// CHECK: tessel.async_copy
// CHECK: tessel.async_copy
// CHECK: tessel.async_commit
// CHECK: tessel.expand_dims %[[P1]]
// CHECK: tessel.async_commit
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[PAGES:.*]] = %[[P2]])
// CHECK-NOT: tessel.load
// CHECK: tessel.expand_dims %[[PAGES]]
// CHECK-NOT: tessel.load
// CHECK: tessel.async_copy
// CHECK-NOT: tessel.load
// CHECK: tessel.async_copy
// CHECK: tessel.async_commit
// CHECK: %[[IN:.*]] = arith.cmpi slt
// CHECK: %[[INS:.*]] = tessel.splat %[[IN]] : i1 -> !tessel.tile<64xi1, #{{.*}}>
// CHECK: %[[M:.*]] = tessel.binary and %{{.*}}, %[[INS]]
// CHECK: %[[NEXT:.*]] = tessel.load %{{.*}} mask %[[M]] : !tessel.tile<64x!tessel.ptr<i32>, #{{.*}}>
// CHECK-NOT: tessel.load
// CHECK: scf.yield %{{.*}}, %[[NEXT]]

// CHECK-LABEL: func.func @paged_table_written
// CHECK-NOT: tessel.local_alloc
// CHECK-COUNT-3: tessel.load
func.func @paged(%k: !tessel.ptr<f16>, %v: !tessel.ptr<f16>, %table: !tessel.ptr<i32>, %n: i32, %q: !tessel.tile<64x64xf16, #opa>, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32, #rows>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>>
  %ts = tessel.splat %table : !tessel.ptr<i32> -> !tessel.tile<64x!tessel.ptr<i32>, #rows>
  %ns = tessel.splat %n : i32 -> !tessel.tile<64xi32, #rows>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %vs = tessel.splat %v : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #b>> -> !tessel.tile<1x64xi32, #b>
  %cb = tessel.broadcast %ce : !tessel.tile<1x64xi32, #b> -> !tessel.tile<64x64xi32, #b>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64xi32, #rows>
    %key = tessel.binary add %is, %r : !tessel.tile<64xi32, #rows>
    %ok = tessel.cmp lt %key, %ns : !tessel.tile<64xi32, #rows> -> !tessel.tile<64xi1, #rows>
    %tp = tessel.addptr %ts, %key : !tessel.tile<64x!tessel.ptr<i32>, #rows>, !tessel.tile<64xi32, #rows>
    %page = tessel.load %tp mask %ok : !tessel.tile<64x!tessel.ptr<i32>, #rows>
    %pe = tessel.expand_dims %page {axis = 1 : i32} : !tessel.tile<64xi32, #rows> -> !tessel.tile<64x1xi32, #b>
    %pb = tessel.broadcast %pe : !tessel.tile<64x1xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %s64 = tessel.splat %c64 : i32 -> !tessel.tile<64x64xi32, #b>
    %ro = tessel.binary mul %pb, %s64 : !tessel.tile<64x64xi32, #b>
    %off = tessel.binary add %ro, %cb : !tessel.tile<64x64xi32, #b>
    %oke = tessel.expand_dims %ok {axis = 1 : i32} : !tessel.tile<64xi1, #rows> -> !tessel.tile<64x1xi1, #b>
    %m = tessel.broadcast %oke : !tessel.tile<64x1xi1, #b> -> !tessel.tile<64x64xi1, #b>
    %kp = tessel.addptr %ks, %off : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp mask %m : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %s = tessel.dot %q, %kt, %acc0 : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %ph = tessel.cast %s : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64x64xf16, #mma>
    %p = tessel.convert_layout %ph : !tessel.tile<64x64xf16, #mma> -> !tessel.tile<64x64xf16, #opa>
    %vp = tessel.addptr %vs, %off : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %vt = tessel.load %vp mask %m : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %p, %vt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d : !tessel.tile<64x64xf32, #mma>
  }
  %rs = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rs {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

func.func @paged_table_written(%k: !tessel.ptr<f16>, %table: !tessel.ptr<i32>, %n: i32, %q: !tessel.tile<64x64xf16, #opa>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32, #rows>
  %ts = tessel.splat %table : !tessel.ptr<i32> -> !tessel.tile<64x!tessel.ptr<i32>, #rows>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  scf.for %i = %c0 to %n step %c64 : i32 {
    %tp = tessel.addptr %ts, %r : !tessel.tile<64x!tessel.ptr<i32>, #rows>, !tessel.tile<64xi32, #rows>
    %page = tessel.load %tp : !tessel.tile<64x!tessel.ptr<i32>, #rows>
    %pe = tessel.expand_dims %page {axis = 1 : i32} : !tessel.tile<64xi32, #rows> -> !tessel.tile<64x1xi32, #b>
    %pb = tessel.broadcast %pe : !tessel.tile<64x1xi32, #b> -> !tessel.tile<64x64xi32, #b>
    %kp = tessel.addptr %ks, %pb : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %q, %kt, %acc0 : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %one = tessel.splat %c1 : i32 -> !tessel.tile<64xi32, #rows>
    %next = tessel.binary add %page, %one : !tessel.tile<64xi32, #rows>
    tessel.store %tp, %next : !tessel.tile<64x!tessel.ptr<i32>, #rows>
    %kt2 = tessel.load %ks : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  }
  return
}

// A scalar load in the loop (a block's row read from a table) is no candidate
// itself; feeding the copy's pointers, it runs an iteration before it,
// masked by being inside the loop alone, and goes round the loop.

// CHECK-LABEL: func.func @scalar_row
// CHECK: %[[IN:.*]] = arith.cmpi slt
// CHECK: tessel.load %{{.*}} mask %[[IN]] : !tessel.ptr<i32>
// CHECK: tessel.async_copy
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[ROW:.*]] = %{{.*}})
// CHECK-NOT: tessel.load
// CHECK: tessel.splat %[[ROW]]
// CHECK: tessel.async_copy
// CHECK: %[[IN2:.*]] = arith.cmpi slt
// CHECK: %[[NEXT:.*]] = tessel.load %{{.*}} mask %[[IN2]] : !tessel.ptr<i32>
// CHECK-NOT: tessel.load
// CHECK: scf.yield %{{.*}}, %[[NEXT]]
func.func @scalar_row(%k: !tessel.ptr<f16>, %table: !tessel.ptr<i32>, %n: i32, %q: !tessel.tile<64x64xf16, #opa>, %off: !tessel.tile<64x64xi32, #b>, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %res = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %tp = tessel.addptr %table, %i : !tessel.ptr<i32>, i32
    %row = tessel.load %tp : !tessel.ptr<i32>
    %rs = tessel.splat %row : i32 -> !tessel.tile<64x64xi32, #b>
    %ro = tessel.binary add %off, %rs : !tessel.tile<64x64xi32, #b>
    %kp = tessel.addptr %ks, %ro : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %q, %kt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d : !tessel.tile<64x64xf32, #mma>
  }
  %rs2 = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rs2 {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// On sm_90a, attention's shape: the value tile feeds only a dot whose
// product goes round the loop and whose A is computed in the iteration, so
// tessel-rotate-warpgroup-dots may run that dot an iteration late: its
// buffer gets a slot more (four), its slots and refills count modulo four,
// and the dot is marked. The key tile's dot is read in the iteration: three.

// CHECK-LABEL: func.func @late_values
// CHECK-DAG: %[[K:.*]] = tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK-DAG: %[[V:.*]] = tessel.local_alloc : !tessel.memdesc<4x64x64xf16, order = [1, 0]>
// CHECK: scf.for
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-DAG: %[[KS:.*]] = arith.remsi %{{.*}}, %[[C3]]
// CHECK-DAG: %[[VS:.*]] = arith.remsi %{{.*}}, %[[C4]]
// CHECK-DAG: tessel.memdesc_index %[[K]][%[[KS]]]
// CHECK-DAG: %[[VV:.*]] = tessel.memdesc_index %[[V]][%[[VS]]]
// CHECK: tessel.dot %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: tessel.dot %{{.*}}, %[[VV]], %{{.*}} {tessel.rotate}

// The same loop for sm_80: three buffers each, nothing marked.
// CHECK-LABEL: func.func @values_sm80
// CHECK-COUNT-2: tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK-NOT: tessel.rotate
module attributes {tessel.target = "sm_90a"} {
func.func @late_values(%k: !tessel.ptr<f16>, %v: !tessel.ptr<f16>, %n: i32, %q: !tessel.tile<64x64xf16, #opa>, %off: !tessel.tile<64x64xi32, #b>, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %vs = tessel.splat %v : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64x64xi32, #b>
    %o = tessel.binary add %off, %is : !tessel.tile<64x64xi32, #b>
    %kp = tessel.addptr %ks, %o : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %s = tessel.dot %q, %kt, %acc0 : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %ph = tessel.cast %s : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64x64xf16, #mma>
    %p = tessel.convert_layout %ph : !tessel.tile<64x64xf16, #mma> -> !tessel.tile<64x64xf16, #opa>
    %vp = tessel.addptr %vs, %o : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %vt = tessel.load %vp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %p, %vt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d : !tessel.tile<64x64xf32, #mma>
  }
  %rows = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}
}
module {
func.func @values_sm80(%k: !tessel.ptr<f16>, %v: !tessel.ptr<f16>, %n: i32, %q: !tessel.tile<64x64xf16, #opa>, %off: !tessel.tile<64x64xi32, #b>, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %vs = tessel.splat %v : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64x64xi32, #b>
    %o = tessel.binary add %off, %is : !tessel.tile<64x64xi32, #b>
    %kp = tessel.addptr %ks, %o : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %s = tessel.dot %q, %kt, %acc0 : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %ph = tessel.cast %s : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64x64xf16, #mma>
    %p = tessel.convert_layout %ph : !tessel.tile<64x64xf16, #mma> -> !tessel.tile<64x64xf16, #opa>
    %vp = tessel.addptr %vs, %o : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %vt = tessel.load %vp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %d = tessel.dot %p, %vt, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d : !tessel.tile<64x64xf32, #mma>
  }
  %rows = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}
}

// -----

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// Two tiles each feeding an accumulating dot (attention's dK and dV): the
// loop keeps none late, and the buffers their slots.
// CHECK-LABEL: func.func @two_late_dots
// CHECK-COUNT-2: tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK-NOT: tessel.rotate
// CHECK: return
module attributes {tessel.target = "sm_90a"} {
func.func @two_late_dots(%k: !tessel.ptr<f16>, %v: !tessel.ptr<f16>, %n: i32, %p: !tessel.tile<64x64xf16, #opa>, %off: !tessel.tile<64x64xi32, #b>, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %vs = tessel.splat %v : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b>
  %res:2 = scf.for %i = %c0 to %n step %c64 iter_args(%a = %acc0, %c = %acc0) -> (!tessel.tile<64x64xf32, #mma>, !tessel.tile<64x64xf32, #mma>) : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64x64xi32, #b>
    %o = tessel.binary add %off, %is : !tessel.tile<64x64xi32, #b>
    %kp = tessel.addptr %ks, %o : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %vp = tessel.addptr %vs, %o : !tessel.tile<64x64x!tessel.ptr<f16>, #b>, !tessel.tile<64x64xi32, #b>
    %vt = tessel.load %vp : !tessel.tile<64x64x!tessel.ptr<f16>, #b>
    %x = tessel.binary mul %p, %p : !tessel.tile<64x64xf16, #opa>
    %d = tessel.dot %x, %kt, %a : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %e = tessel.dot %x, %vt, %c : !tessel.tile<64x64xf16, #opa>, !tessel.tile<64x64xf16, #b> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %d, %e : !tessel.tile<64x64xf32, #mma>, !tessel.tile<64x64xf32, #mma>
  }
  %sum = tessel.binary add %res#0, %res#1 : !tessel.tile<64x64xf32, #mma>
  %rows = tessel.reduce sum %sum {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %out, %t : !tessel.ptr<f32>
  return
}
}

// -----

// Block loads of tensor maps (sm_90a): the copy engine fills the buffers.
// Each loaded tile gets its buffers and one transaction barrier per buffer;
// before the loop, thread 0's copies of iterations 0 and 1 (skipped past the
// loop's end; no CTA barrier before them: the barriers' initialisation ends
// with one); each iteration passes a CTA barrier (every thread is done
// with the buffer about to be refilled), requests the tiles two iterations
// ahead, and waits for its own buffer's phase: use k = i / buffers of a
// barrier completes phase k, parity k % 2. V, read by a dot that may run an
// iteration late, has a buffer more. No cp.async group remains to wait for
// after the loop.

#mma2 = #tessel.mma<warpsPerCTA = [4, 1]>
#b2 = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#opa2 = #tessel.dot_operand<opIdx = 0, parent = #mma2>

// CHECK-LABEL: func.func @tma_keys
// CHECK: %[[KBUF:.*]] = tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK: %[[KBAR:.*]] = tessel.mbarrier_alloc : !tessel.mbarriers<3>
// CHECK: %[[VBUF:.*]] = tessel.local_alloc : !tessel.memdesc<4x64x64xf16, order = [1, 0]>
// CHECK: %[[VBAR:.*]] = tessel.mbarrier_alloc : !tessel.mbarriers<4>
// CHECK-NOT: tessel.barrier
// CHECK: %[[K0:.*]] = tessel.memdesc_index %[[KBUF]]
// CHECK: tessel.tma_load %[[KMAP:.*]][%{{.*}}, %{{.*}}], %[[K0]], %[[KBAR]][%{{.*}}] if %{{.*}}
// CHECK: tessel.tma_load
// CHECK: tessel.tma_load
// CHECK: tessel.tma_load
// CHECK-NOT: tessel.async_commit
// CHECK: scf.for %[[IV:.*]] =
// CHECK-NEXT: tessel.barrier
// CHECK: %[[I:.*]] = arith.divsi
// CHECK: %[[KSLOT:.*]] = arith.remsi %[[I]], %{{.*}}
// CHECK: tessel.tma_load %[[KMAP]]
// CHECK: tessel.tma_load
// CHECK: %[[USE:.*]] = arith.divsi %[[I]], %c3
// CHECK: %[[PARITY:.*]] = arith.andi %[[USE]], %c1
// CHECK: tessel.mbarrier_wait %[[KBAR]][%[[KSLOT]]], %[[PARITY]] : !tessel.mbarriers<3>
// CHECK: tessel.mbarrier_wait %[[VBAR]]
// CHECK-NOT: tessel.load_block
// CHECK: tessel.dot %{{.*}}, %{{.*}}, %{{.*}} : !tessel.tile<64x64xf16, #{{.*}}>, !tessel.memdesc<64x64xf16, order = [0, 1]>
// CHECK: tessel.dot {{.*}} {tessel.rotate}
// CHECK: }
// CHECK-NOT: tessel.async_wait
// CHECK: return
module attributes {tessel.target = "sm_90a"} {
func.func @tma_keys(%kmap: !tessel.tensor_desc<64x64xf16>, %vmap: !tessel.tensor_desc<64x64xf16>, %n: i32, %q: !tessel.tile<64x64xf16, #opa2>, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma2>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma2>) : i32 {
    %k = tessel.load_block %kmap[%i, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16, #b2>
    %v = tessel.load_block %vmap[%i, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16, #b2>
    %kt = tessel.trans %k [1, 0] : !tessel.tile<64x64xf16, #b2> -> !tessel.tile<64x64xf16, #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]>>
    %s = tessel.dot %q, %kt, %acc0 : !tessel.tile<64x64xf16, #opa2>, !tessel.tile<64x64xf16, #tessel.blocked<sizePerThread = [8, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]>> -> !tessel.tile<64x64xf32, #mma2>
    %p = tessel.cast %s : !tessel.tile<64x64xf32, #mma2> -> !tessel.tile<64x64xf16, #mma2>
    %pa = tessel.convert_layout %p : !tessel.tile<64x64xf16, #mma2> -> !tessel.tile<64x64xf16, #opa2>
    %next = tessel.dot %pa, %v, %acc : !tessel.tile<64x64xf16, #opa2>, !tessel.tile<64x64xf16, #b2> -> !tessel.tile<64x64xf32, #mma2>
    scf.yield %next : !tessel.tile<64x64xf32, #mma2>
  }
  return
}
}

// -----

#b2 = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma2 = #tessel.mma<warpsPerCTA = [4, 1]>
#opa2 = #tessel.dot_operand<opIdx = 0, parent = #mma2>

// A tensor-map copy in a loop nested in another: the barriers are made once
// before the outer loop, which carries the count of the inner loop's earlier
// iterations (0 at first, plus the inner trip count after each entry); the
// inner loop's slots and phases count from it, the prologue's too. The
// prologue's copies wait for a CTA barrier: other warps may still read the
// memory for a buffer sharing it (a later loop's, in the previous entry).

// CHECK-LABEL: func.func @tma_nested
// CHECK: %[[ZERO:c0_i32_[0-9]+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[BAR:.*]] = tessel.mbarrier_alloc : !tessel.mbarriers<3>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[EARLIER:.*]] = %[[ZERO]]) -> (!tessel.tile<64x64xf32, #tessel.mma<warpsPerCTA = [4, 1]>>, i32)
// CHECK: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<3x64x64xf16, order = [1, 0]>
// CHECK-NEXT: tessel.barrier
// CHECK-NOT: scf.for
// CHECK: %[[FIRST:.*]] = arith.addi %[[EARLIER]], %{{.*}} : i32
// CHECK: %[[S0:.*]] = arith.remsi %[[FIRST]], %{{.*}} : i32
// CHECK: tessel.tma_load %{{.*}}, %{{.*}}, %[[BAR]][%[[S0]]] if
// CHECK: %[[INNER:.*]] = scf.for %[[IV:.*]] =
// CHECK: %[[I:.*]] = arith.divsi
// CHECK: %[[N:.*]] = arith.addi %[[I]], %[[EARLIER]] : i32
// CHECK: %[[SLOT:.*]] = arith.remsi %[[N]], %{{.*}} : i32
// CHECK: %[[USE:.*]] = arith.divsi %[[N]], %{{.*}} : i32
// CHECK: %[[PARITY:.*]] = arith.andi %[[USE]], %{{.*}} : i32
// CHECK: tessel.mbarrier_wait %[[BAR]][%[[SLOT]]], %[[PARITY]] : !tessel.mbarriers<3>
// CHECK: }
// CHECK: %[[SPAN:.*]] = arith.subi
// CHECK: %[[TRIPS:.*]] = arith.ceildivsi %[[SPAN]], %{{.*}} : i32
// CHECK: %[[RAN:.*]] = arith.maxsi %[[TRIPS]], %{{.*}} : i32
// CHECK: %[[NEXT:.*]] = arith.addi %[[EARLIER]], %[[RAN]] : i32
// CHECK: scf.yield %[[INNER]], %[[NEXT]]
module attributes {tessel.target = "sm_90a"} {
func.func @tma_nested(%kmap: !tessel.tensor_desc<64x64xf16>, %g: i32, %n: i32, %q: !tessel.tile<64x64xf16, #opa2>, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma2>
  %res = scf.for %h = %c0 to %g step %c1 iter_args(%outer = %acc0) -> (!tessel.tile<64x64xf32, #mma2>) : i32 {
    %r = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %outer) -> (!tessel.tile<64x64xf32, #mma2>) : i32 {
      %k = tessel.load_block %kmap[%i, %h] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16, #b2>
      %next = tessel.dot %q, %k, %acc : !tessel.tile<64x64xf16, #opa2>, !tessel.tile<64x64xf16, #b2> -> !tessel.tile<64x64xf32, #mma2>
      scf.yield %next : !tessel.tile<64x64xf32, #mma2>
    }
    scf.yield %r : !tessel.tile<64x64xf32, #mma2>
  }
  %rows = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma2> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma2>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma2>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}
}

// -----

#b2 = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma2 = #tessel.mma<warpsPerCTA = [4, 1]>
#opa2 = #tessel.dot_operand<opIdx = 0, parent = #mma2>
#col2 = #tessel.slice<dim = 0, parent = #mma2>

// A row vector rides along in a loop whose tiles come by the tensor memory
// accelerator too: a cp.async copy into its own stages beside the TMA
// copies, read back where it was loaded.
// CHECK-LABEL: func.func @tma_row_vector
// CHECK-DAG: tessel.local_alloc : !tessel.memdesc<3x1x64xf32, order = [1, 0]>
// CHECK-DAG: tessel.mbarrier_alloc : !tessel.mbarriers<3>
// CHECK: scf.for
// CHECK: tessel.async_wait 1 {thread_readers}
// CHECK: tessel.tma_load
// CHECK: tessel.async_copy
// CHECK: tessel.mbarrier_wait
// CHECK: tessel.local_load %{{.*}} [0, 0] : !tessel.memdesc<1x64xf32, order = [1, 0]> -> !tessel.tile<1x64xf32, #tessel.mma<warpsPerCTA = [4, 1]>>
// CHECK-NOT: tessel.load %
// CHECK: scf.yield
module attributes {tessel.target = "sm_90a"} {
func.func @tma_row_vector(%kmap: !tessel.tensor_desc<64x64xf16>, %lse: !tessel.ptr<f32>, %n: i32, %q: !tessel.tile<64x64xf16, #opa2>, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %acc0 = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma2>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32, #col2>
  %ls = tessel.splat %lse : !tessel.ptr<f32> -> !tessel.tile<64x!tessel.ptr<f32>, #col2>
  %res = scf.for %i = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma2>) : i32 {
    %k = tessel.load_block %kmap[%i, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16, #b2>
    %d = tessel.dot %q, %k, %acc : !tessel.tile<64x64xf16, #opa2>, !tessel.tile<64x64xf16, #b2> -> !tessel.tile<64x64xf32, #mma2>
    %is = tessel.splat %i : i32 -> !tessel.tile<64xi32, #col2>
    %cols = tessel.binary add %is, %c : !tessel.tile<64xi32, #col2>
    %lp = tessel.addptr %ls, %cols : !tessel.tile<64x!tessel.ptr<f32>, #col2>, !tessel.tile<64xi32, #col2>
    %row = tessel.load %lp : !tessel.tile<64x!tessel.ptr<f32>, #col2>
    %re = tessel.expand_dims %row {axis = 0 : i32} : !tessel.tile<64xf32, #col2> -> !tessel.tile<1x64xf32, #mma2>
    %rb = tessel.broadcast %re : !tessel.tile<1x64xf32, #mma2> -> !tessel.tile<64x64xf32, #mma2>
    %e = tessel.binary sub %d, %rb : !tessel.tile<64x64xf32, #mma2>
    scf.yield %e : !tessel.tile<64x64xf32, #mma2>
  }
  %rows = tessel.reduce sum %res {axis = 1 : i32} : !tessel.tile<64x64xf32, #mma2> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma2>>
  %t = tessel.reduce sum %rows {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma2>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}
}

// -----

// A block load outside loops is copied once, waited for, and read back.

#b3 = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: func.func @tma_once
// CHECK: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<1x64x64xf16, order = [1, 0]>
// CHECK: %[[BAR:.*]] = tessel.mbarrier_alloc : !tessel.mbarriers<1>
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %[[DST:.*]] = tessel.memdesc_index %[[BUF]][%[[C0]]]
// CHECK: tessel.tma_load %{{.*}}[%{{.*}}, %{{.*}}], %[[DST]], %[[BAR]][%[[C0]]] :
// CHECK: tessel.mbarrier_wait %[[BAR]][%[[C0]]], %[[C0]]
// CHECK: %[[VIEW:.*]] = tessel.memdesc_index %[[BUF]][%[[C0]]]
// CHECK: tessel.local_load %[[VIEW]] [0, 0] : !tessel.memdesc<64x64xf16, order = [1, 0]> -> !tessel.tile<64x64xf16, #{{.*}}>
module attributes {tessel.target = "sm_90a"} {
func.func @tma_once(%map: !tessel.tensor_desc<64x64xf16>, %o: !tessel.ptr<f16>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %t = tessel.load_block %map[%c0, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16, #b3>
  %p = tessel.splat %o : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>, #b3>
  tessel.store %p, %t : !tessel.tile<64x64x!tessel.ptr<f16>, #b3>
  return
}
}

// -----

// A vector block of a tensor map (attention's statistics, read through
// expand_dims on one axis) rides in the stages as a 1 x 64 tile: buffers
// 3 x 1 x 64, one transaction barrier each, the copy of the iteration ahead
// issued with the others and the expand_dims replaced by a read of the
// 1 x 64 tile from this iteration's buffer.

#bv = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]>

// CHECK-LABEL: func.func @tma_vector
// CHECK: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<3x1x64xf32, order = [1, 0]>
// CHECK: %[[BAR:.*]] = tessel.mbarrier_alloc : !tessel.mbarriers<3>
// CHECK: tessel.tma_load %{{.*}}[%{{.*}}], %{{.*}}, %[[BAR]][%{{.*}}] if %{{.*}} : !tessel.tensor_desc<64xf32>, !tessel.memdesc<1x64xf32, order = [1, 0]>, !tessel.mbarriers<3>
// CHECK: scf.for
// CHECK-NEXT: tessel.barrier
// CHECK: %[[VIEW:.*]] = tessel.memdesc_index %[[BUF]][%{{.*}}] : !tessel.memdesc<3x1x64xf32, order = [1, 0]> -> !tessel.memdesc<1x64xf32, order = [1, 0]>
// CHECK: tessel.tma_load
// CHECK: tessel.mbarrier_wait %[[BAR]]
// CHECK-NOT: tessel.load_block
// CHECK-NOT: tessel.expand_dims
// CHECK: tessel.local_load %[[VIEW]] [0, 0] : !tessel.memdesc<1x64xf32, order = [1, 0]> -> !tessel.tile<1x64xf32, #{{.*}}>
// CHECK: }
module attributes {tessel.target = "sm_90a"} {
func.func @tma_vector(%vmap: !tessel.tensor_desc<64xf32>, %n: i32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  scf.for %i = %c0 to %n step %c64 : i32 {
    %v = tessel.load_block %vmap[%i] : !tessel.tensor_desc<64xf32> -> !tessel.tile<64xf32, #tessel.slice<dim = 0, parent = #bv>>
    %r = tessel.expand_dims %v {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 0, parent = #bv>> -> !tessel.tile<1x64xf32, #bv>
    %p = tessel.splat %o : !tessel.ptr<f32> -> !tessel.tile<1x64x!tessel.ptr<f32>, #bv>
    tessel.store %p, %r : !tessel.tile<1x64x!tessel.ptr<f32>, #bv>
  }
  return
}
}
