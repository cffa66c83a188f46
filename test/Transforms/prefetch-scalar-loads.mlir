// RUN: tessel-opt %s -split-input-file -tessel-prefetch-scalar-loads | FileCheck %s

#b = #tessel.blocked<sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>

// A weight per iteration (w[a * 11 + 3]): the first iteration's is loaded
// before the loop, masked off when the loop runs none; each iteration loads
// the next one's at its top (past the end, its own again: no mask) and uses
// the value that came round the loop. The address ops are cloned for each.

// CHECK-LABEL: func.func @weights
// CHECK-SAME: (%[[W:.*]]: !tessel.ptr<f32>, %[[X:.*]]: !tessel.tile<512xf32, #{{.*}}>, %[[N:.*]]: i32, %[[O:.*]]: !tessel.ptr<f32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %[[C1:.*]] = arith.constant 1 : i32
// CHECK: %[[IN0:.*]] = arith.cmpi sgt, %[[N]], %[[C0]] : i32
// CHECK: %[[P0:.*]] = tessel.addptr %[[W]], %{{.*}} : !tessel.ptr<f32>, i32
// CHECK: %[[V0:.*]] = tessel.load %[[P0]] mask %[[IN0]] : !tessel.ptr<f32>
// CHECK: scf.for %[[A:.*]] = %[[C0]] to %[[N]] step %[[C1]] iter_args(%[[ACC:.*]] = %[[X]], %[[V:.*]] = %[[V0]])
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[A]], %[[C1]] : i32
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi slt, %[[NEXT]], %[[N]] : i32
// CHECK-NEXT: %[[AT:.*]] = arith.select %[[IN]], %[[NEXT]], %[[A]] : i32
// CHECK-NEXT: %[[M:.*]] = arith.muli %[[AT]], %{{.*}} : i32
// CHECK: %[[P:.*]] = tessel.addptr %[[W]], %{{.*}} : !tessel.ptr<f32>, i32
// CHECK-NEXT: %[[VN:.*]] = tessel.load %[[P]] : !tessel.ptr<f32>
// CHECK-NOT: tessel.load
// CHECK: tessel.splat %[[V]]
// CHECK: scf.yield %{{.*}}, %[[VN]]
func.func @weights(%w: !tessel.ptr<f32>, %x: !tessel.tile<512xf32, #b>, %n: i32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %c11 = arith.constant 11 : i32
  %r = scf.for %a = %c0 to %n step %c1 iter_args(%acc = %x) -> (!tessel.tile<512xf32, #b>) : i32 {
    %row = arith.muli %a, %c11 : i32
    %i = arith.addi %row, %c3 : i32
    %p = tessel.addptr %w, %i : !tessel.ptr<f32>, i32
    %v = tessel.load %p : !tessel.ptr<f32>
    %vs = tessel.splat %v : f32 -> !tessel.tile<512xf32, #b>
    %y = tessel.binary mul %acc, %vs : !tessel.tile<512xf32, #b>
    scf.yield %y : !tessel.tile<512xf32, #b>
  }
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<512xf32, #b> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  return
}

// -----

// A masked load keeps its mask, before the loop and-ed with being in range;
// its `other` stays. An unsigned loop compares unsigned. Constant bounds
// that run the loop need no mask before it.

// CHECK-LABEL: func.func @masked
// CHECK: %[[IN0:.*]] = arith.cmpi ugt
// CHECK: %[[M0:.*]] = arith.andi %{{.*}}, %[[IN0]] : i1
// CHECK: tessel.load %{{.*}} mask %[[M0]] other %{{.*}} : !tessel.ptr<f32>
// CHECK: scf.for unsigned
// CHECK: %[[IN:.*]] = arith.cmpi ult
// CHECK: %[[AT:.*]] = arith.select %[[IN]]
// CHECK: %[[M:.*]] = arith.cmpi slt, %[[AT]]
// CHECK: tessel.load %{{.*}} mask %[[M]] other %{{.*}} : !tessel.ptr<f32>
// CHECK: scf.yield
// CHECK: %[[V2:.*]] = tessel.load %{{.*}} : !tessel.ptr<f32>
// CHECK-NEXT: scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %[[V2]])
func.func @masked(%w: !tessel.ptr<f32>, %n: i32, %k: i32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one = arith.constant 1.0 : f32
  %z = arith.constant 0.0 : f32
  %r = scf.for unsigned %a = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) : i32 {
    %p = tessel.addptr %w, %a : !tessel.ptr<f32>, i32
    %ok = arith.cmpi slt, %a, %k : i32
    %v = tessel.load %p mask %ok other %one : !tessel.ptr<f32>
    %y = arith.addf %acc, %v : f32
    scf.yield %y : f32
  }
  %c4 = arith.constant 4 : i32
  %r2 = scf.for %b = %c0 to %c4 step %c1 iter_args(%acc = %r) -> (f32) : i32 {
    %p = tessel.addptr %w, %b : !tessel.ptr<f32>, i32
    %v = tessel.load %p : !tessel.ptr<f32>
    %y = arith.addf %acc, %v : f32
    scf.yield %y : f32
  }
  tessel.store %o, %r2 : !tessel.ptr<f32>
  return
}

// -----

// Not moved: a load of an array the kernel writes (here in the same loop),
// a load whose address does not move with the loop, and a tile load.

#b = #tessel.blocked<sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>

// CHECK-LABEL: func.func @kept
// CHECK-NOT: tessel.load
// CHECK: scf.for
// CHECK-SAME: iter_args(%{{[^,]*}} = %{{[^,]*}}) -> (f32)
// CHECK-COUNT-3: tessel.load
// CHECK: scf.yield
func.func @kept(%w: !tessel.ptr<f32>, %u: !tessel.ptr<f32>, %t: !tessel.ptr<f32>, %n: i32, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f32
  %r = scf.for %a = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) : i32 {
    %p = tessel.addptr %w, %a : !tessel.ptr<f32>, i32
    %v = tessel.load %p : !tessel.ptr<f32>
    %s = arith.addf %acc, %v : f32
    tessel.store %p, %s : !tessel.ptr<f32>
    %q = tessel.load %u : !tessel.ptr<f32>
    %ts = tessel.splat %t : !tessel.ptr<f32> -> !tessel.tile<512x!tessel.ptr<f32>, #b>
    %off = tessel.arange 0, 512 : !tessel.tile<512xi32, #b>
    %as = tessel.splat %a : i32 -> !tessel.tile<512xi32, #b>
    %o2 = tessel.binary add %off, %as : !tessel.tile<512xi32, #b>
    %tp = tessel.addptr %ts, %o2 : !tessel.tile<512x!tessel.ptr<f32>, #b>, !tessel.tile<512xi32, #b>
    %tv = tessel.load %tp : !tessel.tile<512x!tessel.ptr<f32>, #b>
    %tr = tessel.reduce sum %tv {axis = 0 : i32} : !tessel.tile<512xf32, #b> -> f32
    %y = arith.addf %s, %q : f32
    %y2 = arith.addf %y, %tr : f32
    scf.yield %y2 : f32
  }
  tessel.store %o, %r : !tessel.ptr<f32>
  return
}
