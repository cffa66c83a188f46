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
