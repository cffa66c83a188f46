// RUN: tessel-opt %s -split-input-file -canonicalize | FileCheck %s

// acc + dot(a, b, 0) accumulates into acc, whichever side the product is.
// CHECK-LABEL: func.func @accumulate_into_dot
// CHECK-SAME: (%[[A:.*]]: !tessel.tile<16x32xf16>, %[[B:.*]]: !tessel.tile<32x8xf16>, %[[ACC:.*]]: !tessel.tile<16x8xf32>)
// CHECK-NEXT: %[[D:.*]] = tessel.dot %[[A]], %[[B]], %[[ACC]]
// CHECK-NEXT: %[[E:.*]] = tessel.dot %[[A]], %[[B]], %[[D]]
// CHECK-NEXT: return %[[E]]
func.func @accumulate_into_dot(%a: !tessel.tile<16x32xf16>, %b: !tessel.tile<32x8xf16>, %acc: !tessel.tile<16x8xf32>) -> !tessel.tile<16x8xf32> {
  %z = arith.constant 0.0 : f32
  %zeros = tessel.splat %z : f32 -> !tessel.tile<16x8xf32>
  %p = tessel.dot %a, %b, %zeros : !tessel.tile<16x32xf16>, !tessel.tile<32x8xf16> -> !tessel.tile<16x8xf32>
  %s = tessel.binary add %acc, %p : !tessel.tile<16x8xf32>
  %q = tessel.dot %a, %b, %zeros : !tessel.tile<16x32xf16>, !tessel.tile<32x8xf16> -> !tessel.tile<16x8xf32>
  %t = tessel.binary add %q, %s : !tessel.tile<16x8xf32>
  return %t : !tessel.tile<16x8xf32>
}

// -----

// Not when the product has other uses, or the dot already accumulates.
// CHECK-LABEL: func.func @keeps
// CHECK-COUNT-2: tessel.binary add
func.func @keeps(%a: !tessel.tile<16x32xf16>, %b: !tessel.tile<32x8xf16>, %acc: !tessel.tile<16x8xf32>) -> (!tessel.tile<16x8xf32>, !tessel.tile<16x8xf32>) {
  %z = arith.constant 0.0 : f32
  %zeros = tessel.splat %z : f32 -> !tessel.tile<16x8xf32>
  %p = tessel.dot %a, %b, %zeros : !tessel.tile<16x32xf16>, !tessel.tile<32x8xf16> -> !tessel.tile<16x8xf32>
  %s = tessel.binary add %acc, %p : !tessel.tile<16x8xf32>
  %q = tessel.dot %a, %b, %acc : !tessel.tile<16x32xf16>, !tessel.tile<32x8xf16> -> !tessel.tile<16x8xf32>
  %t = tessel.binary add %q, %s : !tessel.tile<16x8xf32>
  return %t, %p : !tessel.tile<16x8xf32>, !tessel.tile<16x8xf32>
}

// -----

// exp(x·c − broadcast(r)) becomes 2^(x·(c·log2 e) − broadcast(r·log2 e)):
// the log2 e factor goes into the scalar and the small tile, and ftz stays.
// CHECK-LABEL: func.func @exp_of_scaled_difference
// CHECK-SAME: (%[[X:.*]]: !tessel.tile<8x4xf32>, %[[C:.*]]: f32, %[[R:.*]]: !tessel.tile<1x4xf32>)
// CHECK-DAG: %[[LOG2E:.*]] = arith.constant 1.44269
// CHECK-DAG: %[[C2:.*]] = arith.mulf %[[C]], %[[LOG2E]]
// CHECK-DAG: %[[CT:.*]] = tessel.splat %[[C2]] : f32 -> !tessel.tile<8x4xf32>
// CHECK-DAG: %[[XS:.*]] = tessel.binary mul %[[X]], %[[CT]]
// CHECK-DAG: %[[LT:.*]] = tessel.splat %[[LOG2E]] : f32 -> !tessel.tile<1x4xf32>
// CHECK-DAG: %[[RS:.*]] = tessel.binary mul %[[R]], %[[LT]]
// CHECK-DAG: %[[RB:.*]] = tessel.broadcast %[[RS]]
// CHECK: %[[E:.*]] = tessel.binary sub %[[XS]], %[[RB]]
// CHECK: tessel.unary exp2 ftz %[[E]]
// CHECK-NOT: tessel.unary exp
func.func @exp_of_scaled_difference(%x: !tessel.tile<8x4xf32>, %c: f32, %r: !tessel.tile<1x4xf32>) -> !tessel.tile<8x4xf32> {
  %ct = tessel.splat %c : f32 -> !tessel.tile<8x4xf32>
  %s = tessel.binary mul %ct, %x : !tessel.tile<8x4xf32>
  %b = tessel.broadcast %r : !tessel.tile<1x4xf32> -> !tessel.tile<8x4xf32>
  %d = tessel.binary sub %s, %b : !tessel.tile<8x4xf32>
  %e = tessel.unary exp ftz %d : !tessel.tile<8x4xf32>
  return %e : !tessel.tile<8x4xf32>
}

// -----

// Kept: the scaled scores have another use, the subtrahend is a full tile,
// or the factor is not a scalar.
// CHECK-LABEL: func.func @exp_kept
// CHECK-COUNT-3: tessel.unary exp %
// CHECK-NOT: exp2
func.func @exp_kept(%x: !tessel.tile<8x4xf32>, %c: f32, %r: !tessel.tile<1x4xf32>, %full: !tessel.tile<8x4xf32>) -> (!tessel.tile<8x4xf32>, !tessel.tile<8x4xf32>, !tessel.tile<8x4xf32>, !tessel.tile<8x4xf32>) {
  %ct = tessel.splat %c : f32 -> !tessel.tile<8x4xf32>
  %b = tessel.broadcast %r : !tessel.tile<1x4xf32> -> !tessel.tile<8x4xf32>
  %s1 = tessel.binary mul %x, %ct : !tessel.tile<8x4xf32>
  %d1 = tessel.binary sub %s1, %b : !tessel.tile<8x4xf32>
  %e1 = tessel.unary exp %d1 : !tessel.tile<8x4xf32>
  %s2 = tessel.binary mul %x, %ct : !tessel.tile<8x4xf32>
  %d2 = tessel.binary sub %s2, %full : !tessel.tile<8x4xf32>
  %e2 = tessel.unary exp %d2 : !tessel.tile<8x4xf32>
  %s3 = tessel.binary mul %x, %full : !tessel.tile<8x4xf32>
  %d3 = tessel.binary sub %s3, %b : !tessel.tile<8x4xf32>
  %e3 = tessel.unary exp %d3 : !tessel.tile<8x4xf32>
  return %e1, %e2, %e3, %s1 : !tessel.tile<8x4xf32>, !tessel.tile<8x4xf32>, !tessel.tile<8x4xf32>, !tessel.tile<8x4xf32>
}
