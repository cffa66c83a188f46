// RUN: tessel-opt %s -split-input-file -tessel-lower-tensor-descs | FileCheck %s

// On sm_90a a descriptor of a kernel's pointer argument, whose sizes and
// strides a launch computes (arguments, constants, the grid), becomes a new
// kernel argument: a tensor map described by launch expressions. The block
// loads stay, for tessel-pipeline.

// CHECK-LABEL: func.func @hoisted
// CHECK-SAME: %[[K:.*]]: !tessel.ptr<f16>
// CHECK-SAME: %[[MAP:.*]]: !tessel.tensor_desc<1x64x64xf16> {tessel.tensor_map = {base = 0 : i64, sizes = ["(grid_y / H)", "N", "64"], strides = ["sb", "64"]}}
// CHECK-NOT: tessel.make_tensor_desc
// CHECK: scf.for %[[IV:.*]] =
// CHECK: tessel.load_block %[[MAP]][%{{.*}}, %[[IV]], %{{.*}}] : !tessel.tensor_desc<1x64x64xf16> -> !tessel.tile<64x64xf16>
module attributes {tessel.target = "sm_90a"} {
func.func @hoisted(%k: !tessel.ptr<f16> loc("k"), %sb: i64 loc("sb"), %N: i32 loc("N"), %H: i32 loc("H"), %o: !tessel.ptr<f16>) attributes {tessel.kernel} {
  %b = tessel.program_id 1 : i32
  %g = tessel.num_programs 1 : i32
  %B = arith.divsi %g, %H : i32
  %B64 = arith.extsi %B : i32 to i64
  %N64 = arith.extsi %N : i32 to i64
  %c64 = arith.constant 64 : i64
  %d = tessel.make_tensor_desc %k, [%B64, %N64, %c64], [%sb, %c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<1x64x64xf16>
  %c0 = arith.constant 0 : i32
  %step = arith.constant 64 : i32
  scf.for %i = %c0 to %N step %step : i32 {
    %t = tessel.load_block %d[%b, %i, %c0] : !tessel.tensor_desc<1x64x64xf16> -> !tessel.tile<64x64xf16>
    %p = tessel.splat %o : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
    tessel.store %p, %t : !tessel.tile<64x64x!tessel.ptr<f16>>
  }
  return
}
}

// -----

// Elsewhere (sm_80 here), a block load is a masked load: the first
// element's address in i64, the offsets inside the block in i32 (the row
// stride is an i32 value widened), and 0 <= index < size for the rows and
// for the unit dimension; the columns [0, 64) of a size-64 dimension need
// no test.

// CHECK-LABEL: func.func @expanded
// CHECK-NOT: tessel.make_tensor_desc
// CHECK: %[[OFF:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK: %[[FIRST:.*]] = tessel.addptr %{{.*}}, %{{.*}} : !tessel.ptr<f16>, i64
// CHECK: %[[ROWS:.*]] = tessel.arange 0, 64 : !tessel.tile<64xi32>
// CHECK: tessel.binary mul %{{.*}}, %{{.*}} : !tessel.tile<64xi32>
// CHECK: tessel.cmp ge
// CHECK: tessel.cmp lt
// CHECK: tessel.arange 0, 64 : !tessel.tile<64xi32>
// CHECK-NOT: tessel.cmp
// CHECK: %[[PTRS:.*]] = tessel.addptr %{{.*}}, %{{.*}} : !tessel.tile<64x64x!tessel.ptr<f16>>, !tessel.tile<64x64xi32>
// CHECK: tessel.load %[[PTRS]] mask %{{.*}} other %{{.*}} : !tessel.tile<64x64x!tessel.ptr<f16>>
// CHECK-NOT: tessel.load_block
func.func @expanded(%k: !tessel.ptr<f16> loc("k"), %sb: i64 loc("sb"), %sn: i32 loc("sn"), %N: i32 loc("N"), %o: !tessel.ptr<f16>) attributes {tessel.kernel} {
  %b = tessel.program_id 1 : i32
  %g = tessel.num_programs 1 : i32
  %B64 = arith.extsi %g : i32 to i64
  %N64 = arith.extsi %N : i32 to i64
  %sn64 = arith.extsi %sn : i32 to i64
  %c64 = arith.constant 64 : i64
  %d = tessel.make_tensor_desc %k, [%B64, %N64, %c64], [%sb, %sn64] : !tessel.ptr<f16> -> !tessel.tensor_desc<1x64x64xf16>
  %c0 = arith.constant 0 : i32
  %t = tessel.load_block %d[%b, %b, %c0] : !tessel.tensor_desc<1x64x64xf16> -> !tessel.tile<64x64xf16>
  %p = tessel.splat %o : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
  tessel.store %p, %t : !tessel.tile<64x64x!tessel.ptr<f16>>
  return
}

// -----

// Even on sm_90a: a base that is not an argument, a size a launch cannot
// compute, an array the kernel writes, a load in a loop under a branch or a
// block the copy engine cannot write (rows not a multiple of 8) keep to
// pointers.

// CHECK-LABEL: func.func @kept_to_pointers
// CHECK-NOT: tessel.tensor_map
// CHECK-NOT: tessel.load_block
// CHECK-NOT: tessel.make_tensor_desc
// CHECK: return
module attributes {tessel.target = "sm_90a"} {
func.func @kept_to_pointers(%k: !tessel.ptr<f16> loc("k"), %N: i32 loc("N"), %o: !tessel.ptr<f16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i64
  %N64 = arith.extsi %N : i32 to i64
  %pid = tessel.program_id 0 : i32
  %pid64 = arith.extsi %pid : i32 to i64
  %moved = tessel.addptr %k, %pid64 : !tessel.ptr<f16>, i64
  %d0 = tessel.make_tensor_desc %moved, [%N64, %c64], [%c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<64x64xf16>
  %t0 = tessel.load_block %d0[%c0, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16>
  %d1 = tessel.make_tensor_desc %k, [%pid64, %c64], [%c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<64x64xf16>
  %t1 = tessel.load_block %d1[%c0, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16>
  %d2 = tessel.make_tensor_desc %k, [%N64, %c64], [%c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<64x64xf16>
  scf.for %i = %c0 to %N step %c1 : i32 {
    %odd = arith.cmpi slt, %i, %N : i32
    scf.if %odd {
      scf.for %j = %c0 to %N step %c1 : i32 {
        %t2 = tessel.load_block %d2[%j, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16>
        %p = tessel.splat %o : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
        tessel.store %p, %t2 : !tessel.tile<64x64x!tessel.ptr<f16>>
      }
    }
  }
  %d3 = tessel.make_tensor_desc %k, [%N64, %c64], [%c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<12x64xf16>
  %t3 = tessel.load_block %d3[%c0, %c0] : !tessel.tensor_desc<12x64xf16> -> !tessel.tile<12x64xf16>
  %p0 = tessel.splat %o : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
  %s = tessel.binary add %t0, %t1 : !tessel.tile<64x64xf16>
  tessel.store %p0, %s : !tessel.tile<64x64x!tessel.ptr<f16>>
  %p3 = tessel.splat %o : !tessel.ptr<f16> -> !tessel.tile<12x64x!tessel.ptr<f16>>
  tessel.store %p3, %t3 : !tessel.tile<12x64x!tessel.ptr<f16>>
  return
}
}

// -----

// A loop nested in another's body (the backward's query blocks in its loop
// over a group's heads) takes a tensor map: tessel-pipeline counts its
// barriers' phases across the loop's entries.

// CHECK-LABEL: func.func @nested_loops
// CHECK-SAME: %[[MAP:arg[0-9]+]]: !tessel.tensor_desc<64x64xf16> {tessel.tensor_map
// CHECK: scf.for
// CHECK: scf.for %[[J:.*]] =
// CHECK: tessel.load_block %[[MAP]][%[[J]], %{{.*}}]
module attributes {tessel.target = "sm_90a"} {
func.func @nested_loops(%k: !tessel.ptr<f16> loc("k"), %N: i32 loc("N"), %o: !tessel.ptr<f16>) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i64
  %N64 = arith.extsi %N : i32 to i64
  %d = tessel.make_tensor_desc %k, [%N64, %c64], [%c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<64x64xf16>
  scf.for %i = %c0 to %N step %c1 : i32 {
    scf.for %j = %c0 to %N step %c1 : i32 {
      %t = tessel.load_block %d[%j, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16>
      %p = tessel.splat %o : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
      tessel.store %p, %t : !tessel.tile<64x64x!tessel.ptr<f16>>
    }
  }
  return
}
}

// -----

// A persistent kernel (tessel-lower-stream-k): the tensor map goes before its
// workspace pointers, which stay the trailing arguments.

// CHECK-LABEL: func.func @persistent
// CHECK-SAME: %{{.*}}: i32, %[[MAP:arg[0-9]+]]: !tessel.tensor_desc<64x64xf16> {tessel.tensor_map = {base = 0 : i64
// CHECK-SAME: %{{.*}}: !tessel.ptr<f32>)
// CHECK: tessel.load_block %[[MAP]]
module attributes {tessel.target = "sm_90a"} {
func.func @persistent(%k: !tessel.ptr<f16> loc("k"), %N: i32 loc("N"), %ws: !tessel.ptr<f32> loc("ws")) attributes {tessel.kernel, tessel.launch = "persistent", tessel.workspace = array<i64: 64>} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i64
  %N64 = arith.extsi %N : i32 to i64
  %d = tessel.make_tensor_desc %k, [%N64, %c64], [%c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<64x64xf16>
  scf.for %j = %c0 to %N step %c1 : i32 {
    %t = tessel.load_block %d[%j, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16>
    %f = tessel.cast %t : !tessel.tile<64x64xf16> -> !tessel.tile<64x64xf32>
    %p = tessel.splat %ws : !tessel.ptr<f32> -> !tessel.tile<64x64x!tessel.ptr<f32>>
    tessel.store %p, %f : !tessel.tile<64x64x!tessel.ptr<f32>>
  }
  return
}
}

// -----

// A kernel with a follow-up (split-K's combine kernel, launched with the same
// parameters) keeps ordinary loads.

// CHECK-LABEL: func.func @with_follow_up
// CHECK-NOT: tessel.tensor_map
// CHECK: tessel.load
module attributes {tessel.target = "sm_90a"} {
func.func @with_follow_up(%k: !tessel.ptr<f16> loc("k"), %N: i32 loc("N"), %ws: !tessel.ptr<f32> loc("ws")) attributes {tessel.kernel, tessel.launch = "persistent", tessel.workspace = array<i64: 64>, tessel.then = @combine} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i64
  %N64 = arith.extsi %N : i32 to i64
  %d = tessel.make_tensor_desc %k, [%N64, %c64], [%c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<64x64xf16>
  %t = tessel.load_block %d[%c0, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16>
  %f = tessel.cast %t : !tessel.tile<64x64xf16> -> !tessel.tile<64x64xf32>
  %p = tessel.splat %ws : !tessel.ptr<f32> -> !tessel.tile<64x64x!tessel.ptr<f32>>
  tessel.store %p, %f : !tessel.tile<64x64x!tessel.ptr<f32>>
  return
}
func.func @combine(%k: !tessel.ptr<f16>, %N: i32, %ws: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.launch = "persistent", tessel.workspace = array<i64: 64>} {
  return
}
}

// -----

// CHECK-LABEL: func.func @written
// CHECK-NOT: tessel.tensor_map
// CHECK: tessel.load
module attributes {tessel.target = "sm_90a"} {
func.func @written(%k: !tessel.ptr<f16> loc("k"), %N: i32 loc("N")) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i64
  %N64 = arith.extsi %N : i32 to i64
  %d = tessel.make_tensor_desc %k, [%N64, %c64], [%c64] : !tessel.ptr<f16> -> !tessel.tensor_desc<64x64xf16>
  %t = tessel.load_block %d[%c0, %c0] : !tessel.tensor_desc<64x64xf16> -> !tessel.tile<64x64xf16>
  %p = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
  tessel.store %p, %t : !tessel.tile<64x64x!tessel.ptr<f16>>
  return
}
}

// -----

// A vector of f32 (per-row statistics; here a flat array: one dimension, no
// strides) becomes a tensor map where a loop reads its blocks through
// expand_dims on one axis (tessel-pipeline carries them as 1 x N tiles);
// read otherwise, in blocks of fewer than 32 values (a bulk copy's
// destination is 128-byte aligned), or from a start not known to fall on 16
// bytes (i + 1), it is an ordinary load.

// CHECK-LABEL: func.func @vectors
// CHECK-SAME: %[[MAP:arg[0-9]+]]: !tessel.tensor_desc<64xf32> {tessel.tensor_map = {base = 0 : i64, sizes = ["(n * rows)"], strides = []}}
// CHECK-NOT: tessel.tensor_map
// CHECK: scf.for
// CHECK: %[[V:.*]] = tessel.load_block %[[MAP]][%{{.*}}] : !tessel.tensor_desc<64xf32> -> !tessel.tile<64xf32>
// CHECK-NEXT: tessel.expand_dims %[[V]] {axis = 0 : i32}
// CHECK: tessel.load %{{.*}} mask %{{.*}} other %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>>
// CHECK: tessel.load %{{.*}} mask %{{.*}} other %{{.*}} : !tessel.tile<16x!tessel.ptr<f32>>
// CHECK: tessel.load %{{.*}} mask %{{.*}} other %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>>
// CHECK: }
module attributes {tessel.target = "sm_90a"} {
func.func @vectors(%a: !tessel.ptr<f32> loc("a"), %c: !tessel.ptr<f32> loc("c"), %e: !tessel.ptr<f32> loc("e"), %f: !tessel.ptr<f32> loc("f"), %n: i32 loc("n"), %rows: i32 loc("rows"), %o: !tessel.ptr<f32>) attributes {tessel.kernel} {
  %size = arith.muli %n, %rows : i32
  %size64 = arith.extsi %size : i32 to i64
  %da = tessel.make_tensor_desc %a, [%size64], [] : !tessel.ptr<f32> -> !tessel.tensor_desc<64xf32>
  %dc = tessel.make_tensor_desc %c, [%size64], [] : !tessel.ptr<f32> -> !tessel.tensor_desc<64xf32>
  %de = tessel.make_tensor_desc %e, [%size64], [] : !tessel.ptr<f32> -> !tessel.tensor_desc<16xf32>
  %df = tessel.make_tensor_desc %f, [%size64], [] : !tessel.ptr<f32> -> !tessel.tensor_desc<64xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %step = arith.constant 64 : i32
  scf.for %i = %c0 to %n step %step : i32 {
    %va = tessel.load_block %da[%i] : !tessel.tensor_desc<64xf32> -> !tessel.tile<64xf32>
    %ra = tessel.expand_dims %va {axis = 0 : i32} : !tessel.tile<64xf32> -> !tessel.tile<1x64xf32>
    %vc = tessel.load_block %dc[%i] : !tessel.tensor_desc<64xf32> -> !tessel.tile<64xf32>
    %sc = tessel.binary add %vc, %vc : !tessel.tile<64xf32>
    %rc = tessel.expand_dims %sc {axis = 0 : i32} : !tessel.tile<64xf32> -> !tessel.tile<1x64xf32>
    %ve = tessel.load_block %de[%i] : !tessel.tensor_desc<16xf32> -> !tessel.tile<16xf32>
    %re = tessel.expand_dims %ve {axis = 1 : i32} : !tessel.tile<16xf32> -> !tessel.tile<16x1xf32>
    %p = tessel.splat %o : !tessel.ptr<f32> -> !tessel.tile<1x64x!tessel.ptr<f32>>
    %s = tessel.binary add %ra, %rc : !tessel.tile<1x64xf32>
    tessel.store %p, %s : !tessel.tile<1x64x!tessel.ptr<f32>>
    %q = tessel.splat %o : !tessel.ptr<f32> -> !tessel.tile<16x1x!tessel.ptr<f32>>
    tessel.store %q, %re : !tessel.tile<16x1x!tessel.ptr<f32>>
    %i1 = arith.addi %i, %c1 : i32
    %vf = tessel.load_block %df[%i1] : !tessel.tensor_desc<64xf32> -> !tessel.tile<64xf32>
    %rf = tessel.expand_dims %vf {axis = 0 : i32} : !tessel.tile<64xf32> -> !tessel.tile<1x64xf32>
    tessel.store %p, %rf : !tessel.tile<1x64x!tessel.ptr<f32>>
  }
  return
}
}
