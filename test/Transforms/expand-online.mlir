// RUN: tessel-opt %s -split-input-file -tessel-expand-online | FileCheck %s

// The state becomes (m, l, acc) and is carried through scf.for as three
// iter_args; the body rescales by exp(m - m') against a -inf-safe max and
// rounds P to V's element type before the dot.

// CHECK-LABEL: func.func @softmax_loop
// CHECK-SAME: (%[[S:.*]]: !tessel.tile<16x32xf32>, %[[V:.*]]: !tessel.tile<32x64xf16>, %[[N:.*]]: i32)
func.func @softmax_loop(%s: !tessel.tile<16x32xf32>, %v: !tessel.tile<32x64xf16>, %n: i32)
    -> (!tessel.tile<16x64xf32>, !tessel.tile<16xf32>) {
  // CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
  // CHECK-DAG: %[[M0:.*]] = tessel.splat %[[NEGINF]] : f32 -> !tessel.tile<16xf32>
  // CHECK-DAG: %[[ACC0:.*]] = tessel.splat %{{.*}} : f32 -> !tessel.tile<16x64xf32>
  // CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[M:.*]] = %[[M0]], %[[L:.*]] = %{{.*}}, %[[ACC:.*]] = %[[ACC0]]) -> (!tessel.tile<16xf32>, !tessel.tile<16xf32>, !tessel.tile<16x64xf32>) : i32
  // CHECK: %[[BMAX:.*]] = tessel.reduce max %[[S]] {axis = 1 : i32}
  // CHECK: %[[MNEW:.*]] = tessel.binary max %[[M]], %[[BMAX]]
  // CHECK: %[[ISINF:.*]] = tessel.cmp eq %[[MNEW]]
  // CHECK: %[[SAFE:.*]] = tessel.select %[[ISINF]], %{{.*}}, %[[MNEW]]
  // exp(x - safe) = 2^(x log2 e - safe log2 e): one fma per element, with
  // subnormal results flushed (ftz).
  // CHECK: %[[SAFELOG2:.*]] = tessel.binary mul %[[SAFE]], %{{.*}} : !tessel.tile<16xf32>
  // CHECK: %[[MLOG2:.*]] = tessel.binary mul %[[M]], %{{.*}} : !tessel.tile<16xf32>
  // CHECK: %[[D:.*]] = tessel.binary sub %[[MLOG2]], %[[SAFELOG2]]
  // CHECK: %[[ALPHA:.*]] = tessel.unary exp2 ftz %[[D]]
  // CHECK: tessel.expand_dims %[[SAFELOG2]]
  // CHECK: %[[SROWS:.*]] = tessel.broadcast
  // CHECK: %[[SLOG2:.*]] = tessel.binary mul %[[S]], %{{.*}} : !tessel.tile<16x32xf32>
  // CHECK: %[[E:.*]] = tessel.binary sub %[[SLOG2]], %[[SROWS]]
  // CHECK: %[[P:.*]] = tessel.unary exp2 ftz %[[E]]
  // CHECK: tessel.reduce sum %[[P]] {axis = 1 : i32}
  // CHECK: %[[SCALED:.*]] = tessel.binary mul %[[ACC]]
  // CHECK: %[[PH:.*]] = tessel.cast %[[P]] : !tessel.tile<16x32xf32> -> !tessel.tile<16x32xf16>
  // CHECK: %[[NEWACC:.*]] = tessel.dot %[[PH]], %[[V]], %[[SCALED]]
  // CHECK: scf.yield %[[MNEW]], %{{.*}}, %[[NEWACC]]
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %init = tessel.softmax_init : !tessel.softmax_state<16x64>
  %st = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tessel.softmax_state<16x64>) : i32 {
    %next = tessel.online_softmax %acc, %s, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>
    scf.yield %next : !tessel.softmax_state<16x64>
  }
  // Finalize: o = acc · (1 / l), a reciprocal per row (of 1 where l == 0, so
  // nothing divides by zero), except empty rows (l == 0) give 0;
  // lse = m + log l or -inf.
  // CHECK: %[[EMPTY:.*]] = tessel.cmp eq %{{.*}}#1
  // CHECK: %[[ONE:.*]] = tessel.splat %{{.*}} : f32 -> !tessel.tile<16xf32>
  // CHECK: %[[L:.*]] = tessel.select %[[EMPTY]], %[[ONE]], %{{.*}}#1 : !tessel.tile<16xi1>, !tessel.tile<16xf32>
  // CHECK: %[[INV:.*]] = tessel.binary div %[[ONE]], %[[L]] : !tessel.tile<16xf32>
  // CHECK: tessel.expand_dims %[[INV]]
  // CHECK: %[[INVROWS:.*]] = tessel.broadcast
  // CHECK: %[[O:.*]] = tessel.binary mul %{{.*}}#2, %[[INVROWS]] : !tessel.tile<16x64xf32>
  // CHECK: tessel.select %{{.*}}, %{{.*}}, %[[O]] : !tessel.tile<16x64xi1>, !tessel.tile<16x64xf32>
  // CHECK: tessel.unary log %{{.*}}#1
  // CHECK: tessel.select %[[EMPTY]]
  // CHECK-NOT: tessel.softmax
  %o, %lse = tessel.softmax_finalize %st : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
  return %o, %lse : !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
}

// -----

// Scores x·c for one scalar c (the softmax scale) are not multiplied out:
// the row max of x·c is c·max(x) when c >= 0 and c·min(x) otherwise, picked
// by a uniform branch, and the exponent is x·(c·log2 e) - m'·log2 e. Scores
// scaled by a tile, or read elsewhere too, are expanded as they are.

// CHECK-LABEL: func.func @scaled_scores
// CHECK-SAME: (%[[X:.*]]: !tessel.tile<16x32xf32>, %[[C:.*]]: f32, %[[V:.*]]: !tessel.tile<32x64xf16>, %[[T:.*]]: !tessel.tile<16x32xf32>)
// CHECK: %[[NONNEG:.*]] = arith.cmpf oge, %[[C]], %{{.*}} : f32
// CHECK: %[[RAW:.*]] = scf.if %[[NONNEG]] -> (!tessel.tile<16xf32>) {
// CHECK-NEXT: %[[MAX:.*]] = tessel.reduce max %[[X]] {axis = 1 : i32}
// CHECK-NEXT: scf.yield %[[MAX]]
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[MIN:.*]] = tessel.reduce min %[[X]] {axis = 1 : i32}
// CHECK-NEXT: scf.yield %[[MIN]]
// CHECK: %[[CROWS:.*]] = tessel.splat %[[C]] : f32 -> !tessel.tile<16xf32>
// CHECK: %[[BMAX:.*]] = tessel.binary mul %[[RAW]], %[[CROWS]]
// CHECK: tessel.binary max %{{.*}}, %[[BMAX]]
// CHECK: %[[CLOG2E:.*]] = arith.mulf %[[C]], %{{.*}} : f32
// CHECK: %[[FACTOR:.*]] = tessel.splat %[[CLOG2E]] : f32 -> !tessel.tile<16x32xf32>
// CHECK: %[[XL:.*]] = tessel.binary mul %[[X]], %[[FACTOR]]
// CHECK: %[[E:.*]] = tessel.binary sub %[[XL]], %{{.*}}
// CHECK: tessel.unary exp2 ftz %[[E]]
// CHECK-NOT: scf.if
// CHECK: %[[ST:.*]] = tessel.binary mul %[[X]], %[[T]]
// CHECK: tessel.reduce max %[[ST]]
// CHECK: %[[SS:.*]] = tessel.binary mul %[[X]], %{{.*}} : !tessel.tile<16x32xf32>
// CHECK: tessel.reduce max %[[SS]]
// CHECK: tessel.reduce max %[[SS]]
// CHECK: return
func.func @scaled_scores(%x: !tessel.tile<16x32xf32>, %c: f32, %v: !tessel.tile<32x64xf16>, %t: !tessel.tile<16x32xf32>)
    -> (!tessel.tile<16x64xf32>, !tessel.tile<16x64xf32>, !tessel.tile<16x64xf32>, !tessel.tile<16x64xf32>) {
  %init = tessel.softmax_init : !tessel.softmax_state<16x64>
  %cs = tessel.splat %c : f32 -> !tessel.tile<16x32xf32>
  %s = tessel.binary mul %x, %cs : !tessel.tile<16x32xf32>
  %a = tessel.online_softmax %init, %s, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>
  %st = tessel.binary mul %x, %t : !tessel.tile<16x32xf32>
  %b = tessel.online_softmax %init, %st, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>
  %ss = tessel.binary mul %x, %cs : !tessel.tile<16x32xf32>
  %d = tessel.online_softmax %init, %ss, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>
  %e = tessel.online_softmax %init, %ss, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>
  %oa, %la = tessel.softmax_finalize %a : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
  %ob, %lb = tessel.softmax_finalize %b : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
  %od, %ld = tessel.softmax_finalize %d : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
  %oe, %le = tessel.softmax_finalize %e : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
  return %oa, %ob, %od, %oe : !tessel.tile<16x64xf32>, !tessel.tile<16x64xf32>, !tessel.tile<16x64xf32>, !tessel.tile<16x64xf32>
}

// -----

// Merging rescales both sides to the common max.

// CHECK-LABEL: func.func @softmax_merge
func.func @softmax_merge(%s: !tessel.tile<4x8xf32>, %v: !tessel.tile<8x2xf32>) -> !tessel.tile<4xf32> {
  // CHECK: tessel.dot
  // CHECK: %[[M:.*]] = tessel.binary max %[[MA:.*]], %[[MB:.*]] : !tessel.tile<4xf32>
  // CHECK: %[[SAFE:.*]] = tessel.select
  // CHECK: %[[SAFELOG2:.*]] = tessel.binary mul %[[SAFE]]
  // CHECK: %[[MALOG2:.*]] = tessel.binary mul %[[MA]]
  // CHECK: tessel.binary sub %[[MALOG2]], %[[SAFELOG2]]
  // CHECK: %[[MBLOG2:.*]] = tessel.binary mul %[[MB]]
  // CHECK: tessel.binary sub %[[MBLOG2]], %[[SAFELOG2]]
  %a = tessel.softmax_init : !tessel.softmax_state<4x2>
  %b = tessel.online_softmax %a, %s, %v : !tessel.softmax_state<4x2>, !tessel.tile<4x8xf32>, !tessel.tile<8x2xf32>
  %m = tessel.softmax_merge %a, %b : !tessel.softmax_state<4x2>
  %o, %lse = tessel.softmax_finalize %m : !tessel.softmax_state<4x2> -> !tessel.tile<4x2xf32>, !tessel.tile<4xf32>
  return %lse : !tessel.tile<4xf32>
}

// -----

// The coupled KL state is (ms, ls, mt, lt, A); entries masked in both
// distributions contribute 0 to A rather than NaN.

// CHECK-LABEL: func.func @kl
// CHECK-SAME: (%[[S:.*]]: !tessel.tile<8x16xf32>, %[[T:.*]]: !tessel.tile<8x16xf32>)
func.func @kl(%s: !tessel.tile<8x16xf32>, %t: !tessel.tile<8x16xf32>) -> (!tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>) {
  // CHECK: tessel.reduce max %[[S]]
  // CHECK: tessel.reduce max %[[T]]
  // CHECK: %[[MASKED:.*]] = tessel.cmp eq %[[S]]
  // CHECK: %[[DIFF:.*]] = tessel.binary sub %[[S]], %[[T]]
  // CHECK: %[[D:.*]] = tessel.select %[[MASKED]], %{{.*}}, %[[DIFF]]
  // CHECK: tessel.binary mul %{{.*}}, %[[D]]
  // KL = A/ls - lse_s + lse_t, then 0 on empty rows.
  // CHECK: tessel.binary div
  // CHECK: tessel.binary sub
  // CHECK: tessel.binary add
  // CHECK: %[[KL:.*]] = tessel.select
  // CHECK: return %[[KL]]
  %0 = tessel.kl_init : !tessel.kl_state<8>
  %1 = tessel.online_kl %0, %s, %t : !tessel.kl_state<8>, !tessel.tile<8x16xf32>, !tessel.tile<8x16xf32>
  %2 = tessel.kl_merge %0, %1 : !tessel.kl_state<8>
  %kl, %ls, %lt = tessel.kl_finalize %2 : !tessel.kl_state<8> -> !tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>
  return %kl, %ls, %lt : !tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>
}

// -----

// Scores that are products of tiles (a dot onto a constant, times a scalar)
// are finite for finite inputs: masked alike by one `where`, they differ by
// the unmasked values, with no guard per entry (the masked entries' p is 0).
// Masked by different conditions, or from a dot onto a tile that may hold
// -inf, the guard stays.

// CHECK-LABEL: func.func @kl_products
// CHECK-SAME: (%[[A:.*]]: !tessel.tile<8x4xf16>, %[[B:.*]]: !tessel.tile<4x16xf16>, %[[C:.*]]: f32, %[[M:.*]]: !tessel.tile<8x16xi1>, %[[M2:.*]]: !tessel.tile<8x16xi1>, %[[ACC:.*]]: !tessel.tile<8x16xf32>)
// CHECK: %[[S:.*]] = tessel.binary mul %[[SD:.*]], %{{.*}} : !tessel.tile<8x16xf32>
// CHECK: %[[U:.*]] = tessel.binary mul %[[UD:.*]], %{{.*}} : !tessel.tile<8x16xf32>
// Unmasked:
// CHECK: %[[D1:.*]] = tessel.binary sub %[[S]], %[[U]] : !tessel.tile<8x16xf32>
// CHECK-NEXT: tessel.binary mul %{{.*}}, %[[D1]]
// Masked alike: the select's own values.
// CHECK: %[[D2:.*]] = tessel.binary sub %[[S]], %[[U]] : !tessel.tile<8x16xf32>
// CHECK-NEXT: tessel.binary mul %{{.*}}, %[[D2]]
// Masked differently: guarded.
// CHECK: %[[NI3:.*]] = tessel.cmp eq %{{.*}}, %{{.*}} : !tessel.tile<8x16xf32>
// CHECK: %[[R3:.*]] = tessel.binary sub
// CHECK: tessel.select %[[NI3]], %{{.*}}, %[[R3]]
// A dot onto a tile: guarded.
// CHECK: %[[NI4:.*]] = tessel.cmp eq %{{.*}}, %{{.*}} : !tessel.tile<8x16xf32>
// CHECK: %[[R4:.*]] = tessel.binary sub
// CHECK: tessel.select %[[NI4]], %{{.*}}, %[[R4]]
// CHECK: return
func.func @kl_products(%a: !tessel.tile<8x4xf16>, %b: !tessel.tile<4x16xf16>, %c: f32,
                       %m: !tessel.tile<8x16xi1>, %m2: !tessel.tile<8x16xi1>,
                       %acc: !tessel.tile<8x16xf32>)
    -> (!tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %z = tessel.splat %zero : f32 -> !tessel.tile<8x16xf32>
  %inf = tessel.splat %ninf : f32 -> !tessel.tile<8x16xf32>
  %cs = tessel.splat %c : f32 -> !tessel.tile<8x16xf32>
  %sd = tessel.dot %a, %b, %z : !tessel.tile<8x4xf16>, !tessel.tile<4x16xf16> -> !tessel.tile<8x16xf32>
  %s = tessel.binary mul %sd, %cs : !tessel.tile<8x16xf32>
  %ud = tessel.dot %a, %b, %z : !tessel.tile<8x4xf16>, !tessel.tile<4x16xf16> -> !tessel.tile<8x16xf32>
  %u = tessel.binary mul %ud, %cs : !tessel.tile<8x16xf32>
  %0 = tessel.kl_init : !tessel.kl_state<8>
  %1 = tessel.online_kl %0, %s, %u : !tessel.kl_state<8>, !tessel.tile<8x16xf32>, !tessel.tile<8x16xf32>
  %sm = tessel.select %m, %s, %inf : !tessel.tile<8x16xi1>, !tessel.tile<8x16xf32>
  %um = tessel.select %m, %u, %inf : !tessel.tile<8x16xi1>, !tessel.tile<8x16xf32>
  %2 = tessel.online_kl %1, %sm, %um : !tessel.kl_state<8>, !tessel.tile<8x16xf32>, !tessel.tile<8x16xf32>
  %um2 = tessel.select %m2, %u, %inf : !tessel.tile<8x16xi1>, !tessel.tile<8x16xf32>
  %3 = tessel.online_kl %2, %sm, %um2 : !tessel.kl_state<8>, !tessel.tile<8x16xf32>, !tessel.tile<8x16xf32>
  %td = tessel.dot %a, %b, %acc : !tessel.tile<8x4xf16>, !tessel.tile<4x16xf16> -> !tessel.tile<8x16xf32>
  %4 = tessel.online_kl %3, %td, %u : !tessel.kl_state<8>, !tessel.tile<8x16xf32>, !tessel.tile<8x16xf32>
  %kl, %ls, %lt = tessel.kl_finalize %4 : !tessel.kl_state<8> -> !tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>
  %kl1, %ls1, %lt1 = tessel.kl_finalize %1 : !tessel.kl_state<8> -> !tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>
  return %kl, %ls, %lt, %kl1 : !tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>
}

// -----

// stream_k regions take and yield the component tiles.

// CHECK-LABEL: func.func @stream_k
// CHECK: tessel.stream_k units(%{{.*}}) iters(%{{.*}}) body {
// CHECK: tessel.yield %{{.*}}, %{{.*}}, %{{.*}} : !tessel.tile<2xf32>, !tessel.tile<2xf32>, !tessel.tile<2x4xf32>
// CHECK: } merge {
// CHECK-NEXT: ^bb0(%{{.*}}: !tessel.tile<2xf32>, %{{.*}}: !tessel.tile<2xf32>, %{{.*}}: !tessel.tile<2x4xf32>, %{{.*}}: !tessel.tile<2xf32>, %{{.*}}: !tessel.tile<2xf32>, %{{.*}}: !tessel.tile<2x4xf32>):
// CHECK: } epilogue {
// CHECK-NEXT: ^bb0(%{{.*}}: i32, %{{.*}}: !tessel.tile<2xf32>, %{{.*}}: !tessel.tile<2xf32>, %{{.*}}: !tessel.tile<2x4xf32>):
// CHECK-NOT: softmax_state
func.func @stream_k(%u: i32, %p: !tessel.ptr<f32>) {
  tessel.stream_k units(%u) iters(%u) body {
  ^bb0(%unit: i32, %b: i32, %e: i32):
    %s = tessel.softmax_init : !tessel.softmax_state<2x4>
    tessel.yield %s : !tessel.softmax_state<2x4>
  } merge {
  ^bb0(%a: !tessel.softmax_state<2x4>, %b: !tessel.softmax_state<2x4>):
    %m = tessel.softmax_merge %a, %b : !tessel.softmax_state<2x4>
    tessel.yield %m : !tessel.softmax_state<2x4>
  } epilogue {
  ^bb0(%unit: i32, %s: !tessel.softmax_state<2x4>):
    %o, %lse = tessel.softmax_finalize %s : !tessel.softmax_state<2x4> -> !tessel.tile<2x4xf32>, !tessel.tile<2xf32>
    %q = tessel.addptr %p, %unit : !tessel.ptr<f32>, i32
    %r = tessel.reduce sum %lse {axis = 0 : i32} : !tessel.tile<2xf32> -> f32
    tessel.store %q, %r : !tessel.ptr<f32>
    tessel.yield
  }
  return
}
