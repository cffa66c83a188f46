// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// Rounding f32 to a 16-bit float two slots at a time, and loops that carry
// such pairs: the body yields both lanes of one vector, so the loop carries
// the vector (one packed register) rather than its two lanes.

#l = #tessel.blocked<sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>

// CHECK-LABEL: llvm.func @pairs
func.func @pairs(%out: !tessel.ptr<bf16>, %xv: f32, %n: i32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %x = tessel.splat %xv : f32 -> !tessel.tile<64xf32, #l>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : bf16
  %init = tessel.splat %zero : bf16 -> !tessel.tile<64xbf16, #l>
  // The loop carries one vector<2xbf16>, not two bf16.
  // CHECK: llvm.br ^[[HEAD:.*]](%{{.*}}, %{{.*}} : i32, vector<2xbf16>)
  // CHECK: ^[[HEAD]](%{{.*}}: i32, %[[CARRIED:.*]]: vector<2xbf16>):
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%p = %init) -> (!tessel.tile<64xbf16, #l>) : i32 {
    // The old lanes are read from the carried vector.
    // CHECK: llvm.extractelement %[[CARRIED]]
    // CHECK: llvm.extractelement %[[CARRIED]]
    %w = tessel.cast %p : !tessel.tile<64xbf16, #l> -> !tessel.tile<64xf32, #l>
    %s = tessel.binary add %w, %x : !tessel.tile<64xf32, #l>
    // CHECK: %[[A:.*]] = llvm.insertelement %{{.*}}, %{{.*}}[%{{.*}} : i32] : vector<2xf32>
    // CHECK: %[[B:.*]] = llvm.insertelement %{{.*}}, %[[A]][%{{.*}} : i32] : vector<2xf32>
    // CHECK: %[[T:.*]] = llvm.fptrunc %[[B]] : vector<2xf32> to vector<2xbf16>
    // CHECK: llvm.br ^[[HEAD]](%{{.*}}, %[[T]] : i32, vector<2xbf16>)
    %t = tessel.cast %s : !tessel.tile<64xf32, #l> -> !tessel.tile<64xbf16, #l>
    scf.yield %t : !tessel.tile<64xbf16, #l>
  }
  // After the loop the lanes are extracted again.
  // CHECK: llvm.extractelement
  // CHECK: llvm.extractelement
  %offs = tessel.arange 0, 64 : !tessel.tile<64xi32, #l>
  %outs = tessel.splat %out : !tessel.ptr<bf16> -> !tessel.tile<64x!tessel.ptr<bf16>, #l>
  %ptrs = tessel.addptr %outs, %offs : !tessel.tile<64x!tessel.ptr<bf16>, #l>, !tessel.tile<64xi32, #l>
  tessel.store %ptrs, %r : !tessel.tile<64x!tessel.ptr<bf16>, #l>
  return
}

// -----

// A single slot per thread has no partner: scalar rounding, scalar carry.

#l1 = #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>

// CHECK-LABEL: llvm.func @single
// CHECK-NOT: vector<2x
// CHECK: llvm.fptrunc %{{.*}} : f32 to f16
func.func @single(%out: !tessel.ptr<f16>, %xv: f32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %x = tessel.splat %xv : f32 -> !tessel.tile<32xf32, #l1>
  %h = tessel.cast %x : !tessel.tile<32xf32, #l1> -> !tessel.tile<32xf16, #l1>
  %offs = tessel.arange 0, 32 : !tessel.tile<32xi32, #l1>
  %outs = tessel.splat %out : !tessel.ptr<f16> -> !tessel.tile<32x!tessel.ptr<f16>, #l1>
  %ptrs = tessel.addptr %outs, %offs : !tessel.tile<32x!tessel.ptr<f16>, #l1>, !tessel.tile<32xi32, #l1>
  tessel.store %ptrs, %h : !tessel.tile<32x!tessel.ptr<f16>, #l1>
  return
}

// -----

// exp2 and exp marked ftz use the flushing ex2 unit; unmarked ones keep
// subnormals.

#l2 = #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>

// CHECK-LABEL: llvm.func @ftz
func.func @ftz(%out: !tessel.ptr<f32>, %xv: f32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %x = tessel.splat %xv : f32 -> !tessel.tile<32xf32, #l2>
  // CHECK: %[[A:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%{{.*}}) : (f32) -> f32
  %a = tessel.unary exp2 ftz %x : !tessel.tile<32xf32, #l2>
  // CHECK: %[[AS:.*]] = llvm.fmul %[[A]], %{{.*}} : f32
  // CHECK: %[[B:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[AS]]) : (f32) -> f32
  %b = tessel.unary exp ftz %a : !tessel.tile<32xf32, #l2>
  // CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%[[B]]) : (f32) -> f32
  %c = tessel.unary exp2 %b : !tessel.tile<32xf32, #l2>
  %offs = tessel.arange 0, 32 : !tessel.tile<32xi32, #l2>
  %outs = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<32x!tessel.ptr<f32>, #l2>
  %ptrs = tessel.addptr %outs, %offs : !tessel.tile<32x!tessel.ptr<f32>, #l2>, !tessel.tile<32xi32, #l2>
  tessel.store %ptrs, %c : !tessel.tile<32x!tessel.ptr<f32>, #l2>
  return
}
