// RUN: tessel-opt %s -split-input-file -tessel-assign-layouts -verify-diagnostics | FileCheck %s

// A 1-D kernel: every tile of one class shares the canonical layout. f32
// elements, 4 warps, 1024 elements: 4 per thread (16 bytes) along the tile.

// CHECK-LABEL: func.func @vector_add
func.func @vector_add(%x: !tessel.ptr<f32>, %out: !tessel.ptr<f32>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  // CHECK: tessel.arange 0, 1024 : !tessel.tile<1024xi32, [[L:#tessel.blocked<sizePerThread = \[4\], threadsPerWarp = \[32\], warpsPerCTA = \[4\], order = \[0\]>]]>
  %offs = tessel.arange 0, 1024 : !tessel.tile<1024xi32>
  // CHECK: tessel.cmp lt {{.*}} -> !tessel.tile<1024xi1, [[L]]>
  %nn = tessel.splat %n : i32 -> !tessel.tile<1024xi32>
  %m = tessel.cmp lt %offs, %nn : !tessel.tile<1024xi32> -> !tessel.tile<1024xi1>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<1024x!tessel.ptr<f32>>
  %xp = tessel.addptr %xs, %offs : !tessel.tile<1024x!tessel.ptr<f32>>, !tessel.tile<1024xi32>
  // CHECK: tessel.load {{.*}} : !tessel.tile<1024x!tessel.ptr<f32>, [[L]]>
  %v = tessel.load %xp mask %m : !tessel.tile<1024x!tessel.ptr<f32>>
  %os = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<1024x!tessel.ptr<f32>>
  %op = tessel.addptr %os, %offs : !tessel.tile<1024x!tessel.ptr<f32>>, !tessel.tile<1024xi32>
  // CHECK: tessel.store {{.*}} : !tessel.tile<1024x!tessel.ptr<f32>, [[L]]>
  tessel.store %op, %v mask %m : !tessel.tile<1024x!tessel.ptr<f32>>
  // CHECK-NOT: tessel.convert_layout
  return
}

// -----

// f16 rows of 64: 8 elements (16 bytes) per thread along the row, 8 lanes
// per row, 4 rows per warp. The row index enters through expand_dims and
// broadcast, which take the slice and the 2-D layout: no data moves. The
// column index arange is used along both dimensions; each use gets its own
// copy and its own slice.

// CHECK-LABEL: func.func @tile_2d
func.func @tile_2d(%p: !tessel.ptr<f16>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  // CHECK-DAG: tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = [[B:#tessel.blocked<sizePerThread = \[1, 8\], threadsPerWarp = \[4, 8\], warpsPerCTA = \[4, 1\], order = \[1, 0\]>]]>>
  // CHECK-DAG: tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = [[B]]>>
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32>
  // CHECK: tessel.expand_dims {{.*}} -> !tessel.tile<64x1xi32, [[B]]>
  %rows = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<64xi32> -> !tessel.tile<64x1xi32>
  %c64 = arith.constant 64 : i32
  %s = tessel.splat %c64 : i32 -> !tessel.tile<64x1xi32>
  %ro = tessel.binary mul %rows, %s : !tessel.tile<64x1xi32>
  // CHECK: tessel.broadcast {{.*}} : !tessel.tile<64x1xi32, [[B]]> -> !tessel.tile<64x64xi32, [[B]]>
  %rb = tessel.broadcast %ro : !tessel.tile<64x1xi32> -> !tessel.tile<64x64xi32>
  // CHECK: tessel.expand_dims {{.*}} -> !tessel.tile<1x64xi32, [[B]]>
  %cols = tessel.expand_dims %r {axis = 0 : i32} : !tessel.tile<64xi32> -> !tessel.tile<1x64xi32>
  %cb = tessel.broadcast %cols : !tessel.tile<1x64xi32> -> !tessel.tile<64x64xi32>
  %off = tessel.binary add %rb, %cb : !tessel.tile<64x64xi32>
  %ps = tessel.splat %p : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
  %pp = tessel.addptr %ps, %off : !tessel.tile<64x64x!tessel.ptr<f16>>, !tessel.tile<64x64xi32>
  %v = tessel.load %pp : !tessel.tile<64x64x!tessel.ptr<f16>>
  // CHECK: tessel.store {{.*}} : !tessel.tile<64x64x!tessel.ptr<f16>, [[B]]>
  tessel.store %pp, %v : !tessel.tile<64x64x!tessel.ptr<f16>>
  // CHECK-NOT: tessel.convert_layout
  return
}

// -----

// A row reduction gives the slice of its operand's layout; broadcasting it
// back along the row moves no data. A transpose takes the permuted layout.

// CHECK-LABEL: func.func @reduce_and_trans
func.func @reduce_and_trans() attributes {tessel.kernel, tessel.num_warps = 2 : i32} {
  %c0 = arith.constant 0.0 : f32
  %z = tessel.splat %c0 : f32 -> !tessel.tile<32x16xf32>
  // CHECK: tessel.reduce max {{.*}} : !tessel.tile<32x16xf32, [[P:#tessel.blocked<sizePerThread = \[1, 4\], threadsPerWarp = \[8, 4\], warpsPerCTA = \[2, 1\], order = \[1, 0\]>]]> -> !tessel.tile<32xf32, #tessel.slice<dim = 1, parent = [[P]]>>
  %m = tessel.reduce max %z {axis = 1 : i32} : !tessel.tile<32x16xf32> -> !tessel.tile<32xf32>
  %e = tessel.expand_dims %m {axis = 1 : i32} : !tessel.tile<32xf32> -> !tessel.tile<32x1xf32>
  %b = tessel.broadcast %e : !tessel.tile<32x1xf32> -> !tessel.tile<32x16xf32>
  %d = tessel.binary sub %z, %b : !tessel.tile<32x16xf32>
  // CHECK: tessel.trans {{.*}} [1, 0] : !tessel.tile<32x16xf32, [[P]]> -> !tessel.tile<16x32xf32, #tessel.blocked<sizePerThread = [4, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 2], order = [0, 1]>>
  %t = tessel.trans %d [1, 0] : !tessel.tile<32x16xf32> -> !tessel.tile<16x32xf32>
  // CHECK-NOT: tessel.convert_layout
  return
}

// -----

// A row maximum used as a column (m[None, :]) must move between threads: a
// convert_layout goes through shared memory once it is lowered. Reduction
// results are not copied, unlike the index arithmetic above.

// CHECK-LABEL: func.func @transpose_a_reduction
func.func @transpose_a_reduction() attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0.0 : f32
  %z = tessel.splat %c0 : f32 -> !tessel.tile<64x64xf32>
  // CHECK: %[[M:.*]] = tessel.reduce max {{.*}} -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = [[P:#tessel.blocked<[^>]*>]]>>
  %m = tessel.reduce max %z {axis = 1 : i32} : !tessel.tile<64x64xf32> -> !tessel.tile<64xf32>
  // CHECK: %[[C:.*]] = tessel.convert_layout %[[M]] : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = [[P]]>> -> !tessel.tile<64xf32, #tessel.slice<dim = 0, parent = [[P]]>>
  // CHECK: tessel.expand_dims %[[C]] {axis = 0 : i32}
  %e = tessel.expand_dims %m {axis = 0 : i32} : !tessel.tile<64xf32> -> !tessel.tile<1x64xf32>
  %b = tessel.broadcast %e : !tessel.tile<1x64xf32> -> !tessel.tile<64x64xf32>
  %d = tessel.binary sub %z, %b : !tessel.tile<64x64xf32>
  return
}

// -----

// Row sums put back into columns of a wider tile (MTA's weight gradient:
// `acc += where(col == k, sum(x, axis=1)[:, None], 0)`): the accumulator's
// class, which no memory op or dot places, follows the reduced tile's
// layout, so no row vector moves between threads. Where a store places the
// class (@row_sums_stored), it keeps the canonical layout and the row vector
// is converted.

// CHECK-LABEL: func.func @row_sums_into_columns
func.func @row_sums_into_columns(%x: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<32x32x!tessel.ptr<f32>>
  // CHECK: tessel.load {{.*}} : !tessel.tile<32x32x!tessel.ptr<f32>, [[P:#tessel.blocked<[^>]*>]]>
  %v = tessel.load %xs : !tessel.tile<32x32x!tessel.ptr<f32>>
  %r = tessel.reduce sum %v {axis = 1 : i32} : !tessel.tile<32x32xf32> -> !tessel.tile<32xf32>
  // CHECK: tessel.expand_dims {{.*}} -> !tessel.tile<32x1xf32, [[P]]>
  %e = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<32xf32> -> !tessel.tile<32x1xf32>
  // CHECK: tessel.broadcast {{.*}} -> !tessel.tile<32x66xf32, [[P]]>
  %b = tessel.broadcast %e : !tessel.tile<32x1xf32> -> !tessel.tile<32x66xf32>
  %c0 = arith.constant 0.0 : f32
  %z = tessel.splat %c0 : f32 -> !tessel.tile<32x66xf32>
  // CHECK: tessel.binary add {{.*}} : !tessel.tile<32x66xf32, [[P]]>
  %acc = tessel.binary add %z, %b : !tessel.tile<32x66xf32>
  // CHECK-NOT: tessel.convert_layout
  return
}

// CHECK-LABEL: func.func @row_sums_stored
func.func @row_sums_stored(%x: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<32x32x!tessel.ptr<f32>>
  %v = tessel.load %xs : !tessel.tile<32x32x!tessel.ptr<f32>>
  %r = tessel.reduce sum %v {axis = 1 : i32} : !tessel.tile<32x32xf32> -> !tessel.tile<32xf32>
  // CHECK: tessel.convert_layout
  %e = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<32xf32> -> !tessel.tile<32x1xf32>
  %b = tessel.broadcast %e : !tessel.tile<32x1xf32> -> !tessel.tile<32x66xf32>
  %os = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<32x66x!tessel.ptr<f32>>
  tessel.store %os, %b : !tessel.tile<32x66x!tessel.ptr<f32>>
  return
}

// -----

// A class that nothing places and that is only summed along its rows (MTA's
// dW: products of two staged windows, a row sum per tap) holds as much of a
// row in each thread as its elements allow: 8 of 32 columns on 4 warps, two
// shuffle steps a sum instead of three. Loaded (@rows_loaded_and_summed), the
// class keeps its 16-byte accesses.

// CHECK-LABEL: func.func @rows_summed
func.func @rows_summed(%a: f32, %b: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %x = tessel.splat %a : f32 -> !tessel.tile<32x32xf32>
  %y = tessel.splat %b : f32 -> !tessel.tile<32x32xf32>
  // CHECK: tessel.binary mul {{.*}} : !tessel.tile<32x32xf32, #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]>>
  %p = tessel.binary mul %x, %y : !tessel.tile<32x32xf32>
  %r = tessel.reduce sum %p {axis = 1 : i32} : !tessel.tile<32x32xf32> -> !tessel.tile<32xf32>
  return
}

// CHECK-LABEL: func.func @rows_loaded_and_summed
func.func @rows_loaded_and_summed(%x: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<32x32x!tessel.ptr<f32>>
  // CHECK: tessel.load {{.*}} : !tessel.tile<32x32x!tessel.ptr<f32>, #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>>
  %v = tessel.load %xs : !tessel.tile<32x32x!tessel.ptr<f32>>
  %r = tessel.reduce sum %v {axis = 1 : i32} : !tessel.tile<32x32xf32> -> !tessel.tile<32xf32>
  return
}

// CHECK-LABEL: func.func @rows_summed_and_columns_summed
// CHECK: tessel.binary mul {{.*}} : !tessel.tile<32x32xf32, #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>>
func.func @rows_summed_and_columns_summed(%a: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %x = tessel.splat %a : f32 -> !tessel.tile<32x32xf32>
  %p = tessel.binary mul %x, %x : !tessel.tile<32x32xf32>
  %r = tessel.reduce sum %p {axis = 1 : i32} : !tessel.tile<32x32xf32> -> !tessel.tile<32xf32>
  %c = tessel.reduce sum %p {axis = 0 : i32} : !tessel.tile<32x32xf32> -> !tessel.tile<32xf32>
  return
}

// -----

// Shapes that are not powers of two (MTA's halo tiles): the layout repeats
// to cover them. For 69 x 74 with 8 warps, 2 elements per thread along the
// row (74 = 2 x 37), a warp covers 1 x 64, the CTA 4 x 128, so each thread
// holds 18 x 2 positions of a 72 x 128 cover; the extra ones hold copies.
// Values carried by a loop keep one layout through it.

// CHECK-LABEL: func.func @halo_tile_in_loop
func.func @halo_tile_in_loop(%n: i32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %c0 = arith.constant 0.0 : f32
  %c0i = arith.constant 0 : i32
  %c1i = arith.constant 1 : i32
  // CHECK: tessel.splat {{.*}} -> !tessel.tile<69x74xf32, [[H:#tessel.blocked<sizePerThread = \[1, 2\], threadsPerWarp = \[1, 32\], warpsPerCTA = \[4, 2\], order = \[1, 0\]>]]>
  %z = tessel.splat %c0 : f32 -> !tessel.tile<69x74xf32>
  // CHECK: scf.for {{.*}} -> (!tessel.tile<69x74xf32, [[H]]>)
  %r = scf.for %i = %c0i to %n step %c1i iter_args(%acc = %z) -> (!tessel.tile<69x74xf32>) : i32 {
    // CHECK: tessel.unary exp {{.*}} : !tessel.tile<69x74xf32, [[H]]>
    %e = tessel.unary exp %acc : !tessel.tile<69x74xf32>
    scf.yield %e : !tessel.tile<69x74xf32>
  }
  return
}

// -----

// Attention's two dots on tensor cores. S = Q Kᵀ and O = P V take the
// mma.sync accumulator layout, the 4 warps on 16-row blocks of the 64 rows;
// the softmax arithmetic follows S, its row max is the slice of it. Q (a
// load) reaches the operand layout through a convert_layout; P, computed in
// S's layout, is converted to the operand layout of O's dot, which holds it
// in the same registers (the conversion lowers to nothing). K and V stay in
// the blocked layout of their loads: the dot stages them itself.

// CHECK-LABEL: func.func @attention_dots
func.func @attention_dots(%q: !tessel.ptr<f16>, %k: !tessel.ptr<f16>, %v: !tessel.ptr<f16>, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32>
  %rows = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<64xi32> -> !tessel.tile<64x1xi32>
  %c64 = arith.constant 64 : i32
  %s64 = tessel.splat %c64 : i32 -> !tessel.tile<64x1xi32>
  %ro = tessel.binary mul %rows, %s64 : !tessel.tile<64x1xi32>
  %rb = tessel.broadcast %ro : !tessel.tile<64x1xi32> -> !tessel.tile<64x64xi32>
  %cols = tessel.expand_dims %r {axis = 0 : i32} : !tessel.tile<64xi32> -> !tessel.tile<1x64xi32>
  %cb = tessel.broadcast %cols : !tessel.tile<1x64xi32> -> !tessel.tile<64x64xi32>
  %off = tessel.binary add %rb, %cb : !tessel.tile<64x64xi32>
  %qs = tessel.splat %q : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
  %qp = tessel.addptr %qs, %off : !tessel.tile<64x64x!tessel.ptr<f16>>, !tessel.tile<64x64xi32>
  // CHECK: %[[QT:.*]] = tessel.load {{.*}} : !tessel.tile<64x64x!tessel.ptr<f16>, [[B:#tessel.blocked<sizePerThread = \[1, 8\], threadsPerWarp = \[4, 8\], warpsPerCTA = \[4, 1\], order = \[1, 0\]>]]>
  %qt = tessel.load %qp : !tessel.tile<64x64x!tessel.ptr<f16>>
  %ks = tessel.splat %k : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
  %kp = tessel.addptr %ks, %off : !tessel.tile<64x64x!tessel.ptr<f16>>, !tessel.tile<64x64xi32>
  // CHECK: %[[KT:.*]] = tessel.load {{.*}} : !tessel.tile<64x64x!tessel.ptr<f16>, [[B]]>
  %kt = tessel.load %kp : !tessel.tile<64x64x!tessel.ptr<f16>>
  %vs = tessel.splat %v : !tessel.ptr<f16> -> !tessel.tile<64x64x!tessel.ptr<f16>>
  %vp = tessel.addptr %vs, %off : !tessel.tile<64x64x!tessel.ptr<f16>>, !tessel.tile<64x64xi32>
  // CHECK: %[[VT:.*]] = tessel.load {{.*}} : !tessel.tile<64x64x!tessel.ptr<f16>, [[B]]>
  %vt = tessel.load %vp : !tessel.tile<64x64x!tessel.ptr<f16>>
  // CHECK: %[[KTT:.*]] = tessel.trans %[[KT]]
  %ktt = tessel.trans %kt [1, 0] : !tessel.tile<64x64xf16> -> !tessel.tile<64x64xf16>
  %z = arith.constant 0.0 : f32
  %zs = tessel.splat %z : f32 -> !tessel.tile<64x64xf32>
  // CHECK: %[[QA:.*]] = tessel.convert_layout %[[QT]] : !tessel.tile<64x64xf16, [[B]]> -> !tessel.tile<64x64xf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [4, 1]>>>
  // CHECK: tessel.dot %[[QA]], %[[KTT]], {{.*}} -> !tessel.tile<64x64xf32, [[M:#tessel.mma<warpsPerCTA = \[4, 1\]>]]>
  %sc = tessel.dot %qt, %ktt, %zs : !tessel.tile<64x64xf16>, !tessel.tile<64x64xf16> -> !tessel.tile<64x64xf32>
  // CHECK: tessel.reduce max {{.*}} -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = [[M]]>>
  %mx = tessel.reduce max %sc {axis = 1 : i32} : !tessel.tile<64x64xf32> -> !tessel.tile<64xf32>
  %me = tessel.expand_dims %mx {axis = 1 : i32} : !tessel.tile<64xf32> -> !tessel.tile<64x1xf32>
  %mb = tessel.broadcast %me : !tessel.tile<64x1xf32> -> !tessel.tile<64x64xf32>
  // CHECK: tessel.binary sub {{.*}} : !tessel.tile<64x64xf32, [[M]]>
  %d = tessel.binary sub %sc, %mb : !tessel.tile<64x64xf32>
  %e = tessel.unary exp %d : !tessel.tile<64x64xf32>
  // CHECK: %[[P:.*]] = tessel.cast {{.*}} : !tessel.tile<64x64xf32, [[M]]> -> !tessel.tile<64x64xf16, [[M]]>
  %p = tessel.cast %e : !tessel.tile<64x64xf32> -> !tessel.tile<64x64xf16>
  // CHECK: %[[PA:.*]] = tessel.convert_layout %[[P]] : !tessel.tile<64x64xf16, [[M]]> -> !tessel.tile<64x64xf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [4, 1]>>>
  // CHECK: tessel.dot %[[PA]], %[[VT]], {{.*}} -> !tessel.tile<64x64xf32, [[M]]>
  %out = tessel.dot %p, %vt, %zs : !tessel.tile<64x64xf16>, !tessel.tile<64x64xf16> -> !tessel.tile<64x64xf32>
  %os = tessel.splat %o : !tessel.ptr<f32> -> !tessel.tile<64x64x!tessel.ptr<f32>>
  %op = tessel.addptr %os, %off : !tessel.tile<64x64x!tessel.ptr<f32>>, !tessel.tile<64x64xi32>
  // The output's pointers are computed in its layout (their own copy of the
  // offsets shared with the loads).
  // CHECK: tessel.store {{.*}} : !tessel.tile<64x64x!tessel.ptr<f32>, [[M]]>
  tessel.store %op, %out : !tessel.tile<64x64x!tessel.ptr<f32>>
  return
}

// -----

// One 16-row block and 4 warps: the warps split the columns.

// CHECK-LABEL: func.func @decode_dot
func.func @decode_dot(%a: f16) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %x = tessel.splat %a : f16 -> !tessel.tile<16x128xf16>
  %y = tessel.splat %a : f16 -> !tessel.tile<128x64xf16>
  %z = arith.constant 0.0 : f32
  %zs = tessel.splat %z : f32 -> !tessel.tile<16x64xf32>
  // CHECK: tessel.dot {{.*}} -> !tessel.tile<16x64xf32, #tessel.mma<warpsPerCTA = [1, 4]>>
  %s = tessel.dot %x, %y, %zs : !tessel.tile<16x128xf16>, !tessel.tile<128x64xf16> -> !tessel.tile<16x64xf32>
  // f32 operands stay on the CUDA cores in a blocked layout.
  %xf = tessel.cast %x : !tessel.tile<16x128xf16> -> !tessel.tile<16x128xf32>
  %yf = tessel.cast %y : !tessel.tile<128x64xf16> -> !tessel.tile<128x64xf32>
  %zt = tessel.splat %z : f32 -> !tessel.tile<16x64xf32>
  // CHECK: tessel.dot {{.*}} -> !tessel.tile<16x64xf32, #tessel.blocked
  %t = tessel.dot %xf, %yf, %zt : !tessel.tile<16x128xf32>, !tessel.tile<128x64xf32> -> !tessel.tile<16x64xf32>
  return
}

// -----

// A halo of 69 rows and 42 columns on 4 warps: split 2 x 2, the busiest
// warp computing 3 x 3 of the 16 x 8 blocks (4 x 1 would give each warp two
// 16-row blocks of 6, over 128 rows of which 59 lie outside the tile).

// CHECK-LABEL: func.func @halo_dot
func.func @halo_dot(%a: f16) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %x = tessel.splat %a : f16 -> !tessel.tile<69x64xf16>
  %y = tessel.splat %a : f16 -> !tessel.tile<64x42xf16>
  %z = arith.constant 0.0 : f32
  %zs = tessel.splat %z : f32 -> !tessel.tile<69x42xf32>
  // CHECK: tessel.dot {{.*}} -> !tessel.tile<69x42xf32, #tessel.mma<warpsPerCTA = [2, 2]>>
  %s = tessel.dot %x, %y, %zs : !tessel.tile<69x64xf16>, !tessel.tile<64x42xf16> -> !tessel.tile<69x42xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op already has tile layouts}}
func.func @already_assigned() attributes {tessel.kernel} {
  %c0 = arith.constant 0 : i32
  %t = tessel.splat %c0 : i32 -> !tessel.tile<32xi32, #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]>>
  return
}

// -----

func.func @not_lowered(%units: i32) attributes {tessel.kernel} {
  // expected-error @below {{is not supported by tessel-assign-layouts (run tessel-expand-online and tessel-lower-stream-k first)}}
  tessel.stream_k units(%units) iters(%units) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    tessel.yield %unit : i32
  } merge {
  ^bb0(%a: i32, %b: i32):
    tessel.yield %a : i32
  } epilogue {
  ^bb0(%unit: i32, %s: i32):
    tessel.yield
  }
  return
}

// -----

// The halves of a product of two operands side by side (MTA's hi and lo
// convolved keys) keep the accumulator's layout: each thread holds both
// halves of its rows already. A slice at a column that splits the 8-column
// blocks of the accumulator does not.

// CHECK-LABEL: func.func @accumulator_halves
func.func @accumulator_halves(%a: f16, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %x = tessel.splat %a : f16 -> !tessel.tile<64x64xf16>
  %z = arith.constant 0.0 : f32
  %zs = tessel.splat %z : f32 -> !tessel.tile<64x64xf32>
  // CHECK: %[[S:.*]] = tessel.dot {{.*}} -> !tessel.tile<64x64xf32, [[M:#tessel.mma<warpsPerCTA = \[4, 1\]>]]>
  %s = tessel.dot %x, %x, %zs : !tessel.tile<64x64xf16>, !tessel.tile<64x64xf16> -> !tessel.tile<64x64xf32>
  // CHECK: tessel.extract_slice %[[S]] [0, 0] : !tessel.tile<64x64xf32, [[M]]> -> !tessel.tile<64x32xf32, [[M]]>
  %lo = tessel.extract_slice %s [0, 0] : !tessel.tile<64x64xf32> -> !tessel.tile<64x32xf32>
  // CHECK: tessel.extract_slice %[[S]] [0, 32] : !tessel.tile<64x64xf32, [[M]]> -> !tessel.tile<64x32xf32, [[M]]>
  %hi = tessel.extract_slice %s [0, 32] : !tessel.tile<64x64xf32> -> !tessel.tile<64x32xf32>
  %sum = tessel.binary add %lo, %hi : !tessel.tile<64x32xf32>
  // CHECK: tessel.extract_slice %[[S]] [0, 4] : !tessel.tile<64x64xf32, [[M]]> -> !tessel.tile<64x32xf32, #tessel.blocked
  %odd = tessel.extract_slice %s [0, 4] : !tessel.tile<64x64xf32> -> !tessel.tile<64x32xf32>
  %both = tessel.binary add %odd, %odd : !tessel.tile<64x32xf32>
  %r = tessel.reduce sum %sum {axis = 1 : i32} : !tessel.tile<64x32xf32> -> !tessel.tile<64xf32>
  %t = tessel.reduce sum %r {axis = 0 : i32} : !tessel.tile<64xf32> -> f32
  %u = tessel.reduce sum %both {axis = 1 : i32} : !tessel.tile<64x32xf32> -> !tessel.tile<64xf32>
  %v = tessel.reduce sum %u {axis = 0 : i32} : !tessel.tile<64xf32> -> f32
  %w = arith.addf %t, %v : f32
  tessel.store %o, %w : !tessel.ptr<f32>
  return
}

// -----

// On sm_90a a dot whose result goes to global memory (atomic sums or stores,
// through elementwise ops) and whose B the warpgroup dot will stage itself (a
// register tile from outside the dot's loop) computes into runs of four
// columns: a lane's four f32 then go out as one 16-byte reduction. Not where
// B is loaded in the loop (tessel-pipeline copies it as it is), nor where the
// result is also read otherwise, nor below sm_90a.

!ptrs = !tessel.tile<64x128x!tessel.ptr<f32>>

// CHECK-LABEL: func.func @runs_for_reductions
// CHECK: tessel.dot {{.*}} -> !tessel.tile<64x128xf32, [[R:#tessel.mma<warpsPerCTA = \[4, 2\], columnRun = 4>]]>
// CHECK: tessel.binary mul {{.*}} : !tessel.tile<64x128xf32, [[R]]>
// CHECK: tessel.atomic_add {{.*}} : !tessel.tile<64x128x!tessel.ptr<f32>, [[R]]>
// CHECK-LABEL: func.func @b_loaded_in_the_loop
// CHECK: tessel.dot {{.*}} -> !tessel.tile<64x128xf32, #tessel.mma<warpsPerCTA = [4, 2]>>
// CHECK-LABEL: func.func @result_also_reduced
// CHECK: tessel.dot {{.*}} -> !tessel.tile<64x128xf32, #tessel.mma<warpsPerCTA = [4, 2]>>
module attributes {tessel.target = "sm_90a"} {
func.func @runs_for_reductions(%p: !tessel.ptr<f32>, %a: !tessel.tile<64x64xbf16>, %b: !tessel.tile<64x128xbf16>, %z: f32, %s: f32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x128xf32>
  %d = tessel.dot %a, %b, %acc : !tessel.tile<64x64xbf16>, !tessel.tile<64x128xbf16> -> !tessel.tile<64x128xf32>
  %ss = tessel.splat %s : f32 -> !tessel.tile<64x128xf32>
  %v = tessel.binary mul %d, %ss : !tessel.tile<64x128xf32>
  %ps = tessel.splat %p : !tessel.ptr<f32> -> !ptrs
  %old = tessel.atomic_add %ps, %v : !ptrs
  return
}
func.func @b_loaded_in_the_loop(%p: !tessel.ptr<f32>, %bp: !tessel.ptr<bf16>, %a: !tessel.tile<64x64xbf16>, %z: f32, %n: i32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x128xf32>
  %ps = tessel.splat %p : !tessel.ptr<f32> -> !ptrs
  %bs = tessel.splat %bp : !tessel.ptr<bf16> -> !tessel.tile<64x128x!tessel.ptr<bf16>>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %b = tessel.load %bs : !tessel.tile<64x128x!tessel.ptr<bf16>>
    %d = tessel.dot %a, %b, %acc : !tessel.tile<64x64xbf16>, !tessel.tile<64x128xbf16> -> !tessel.tile<64x128xf32>
    %old = tessel.atomic_add %ps, %d : !ptrs
  }
  return
}
func.func @result_also_reduced(%p: !tessel.ptr<f32>, %q: !tessel.ptr<f32>, %a: !tessel.tile<64x64xbf16>, %b: !tessel.tile<64x128xbf16>, %z: f32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x128xf32>
  %d = tessel.dot %a, %b, %acc : !tessel.tile<64x64xbf16>, !tessel.tile<64x128xbf16> -> !tessel.tile<64x128xf32>
  %ps = tessel.splat %p : !tessel.ptr<f32> -> !ptrs
  %old = tessel.atomic_add %ps, %d : !ptrs
  %r = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<64x128xf32> -> !tessel.tile<64xf32>
  %qs = tessel.splat %q : !tessel.ptr<f32> -> !tessel.tile<64x!tessel.ptr<f32>>
  tessel.store %qs, %r : !tessel.tile<64x!tessel.ptr<f32>>
  return
}
}

// -----

// The same dot below sm_90a: the pairs of mma.sync.

// CHECK-LABEL: func.func @runs_need_warpgroups
// CHECK: tessel.dot {{.*}} -> !tessel.tile<64x128xf32, #tessel.mma<warpsPerCTA = [4, 2]>>
func.func @runs_need_warpgroups(%p: !tessel.ptr<f32>, %a: !tessel.tile<64x64xbf16>, %b: !tessel.tile<64x128xbf16>, %z: f32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x128xf32>
  %d = tessel.dot %a, %b, %acc : !tessel.tile<64x64xbf16>, !tessel.tile<64x128xbf16> -> !tessel.tile<64x128xf32>
  %ps = tessel.splat %p : !tessel.ptr<f32> -> !tessel.tile<64x128x!tessel.ptr<f32>>
  %old = tessel.atomic_add %ps, %d : !tessel.tile<64x128x!tessel.ptr<f32>>
  return
}
