// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// One warp holding 32 elements: one slot per thread. Grid queries read the
// CTA registers, arange the thread's coordinate, elementwise ops become
// LLVM ops on the slot, exp and log the approximate ex2/lg2 units.

#l = #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>

// CHECK-LABEL: llvm.func @elementwise
// CHECK-SAME: (%[[X:.*]]: !llvm.ptr<1>, %{{.*}}: i32)
// CHECK-SAME: attributes {nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>}
func.func @elementwise(%x: !tessel.ptr<f32>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  // CHECK: %[[PID:.*]] = nvvm.read.ptx.sreg.ctaid.y : i32
  %pid = tessel.program_id 1 : i32
  // CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
  // CHECK: %[[LANE:.*]] = llvm.and %[[TID]]
  // CHECK: %[[R:.*]] = llvm.add
  %r = tessel.arange 0, 32 : !tessel.tile<32xi32, #l>
  %s = tessel.splat %pid : i32 -> !tessel.tile<32xi32, #l>
  // CHECK: %[[O:.*]] = llvm.add %[[R]], %[[PID]] : i32
  %o = tessel.binary add %r, %s : !tessel.tile<32xi32, #l>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<32x!tessel.ptr<f32>, #l>
  // CHECK: %[[P:.*]] = llvm.getelementptr %[[X]][%[[O]]] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
  %p = tessel.addptr %xs, %o : !tessel.tile<32x!tessel.ptr<f32>, #l>, !tessel.tile<32xi32, #l>
  // CHECK: %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr<1> -> f32
  %v = tessel.load %p : !tessel.tile<32x!tessel.ptr<f32>, #l>
  // exp(x) = ex2.approx(x * log2(e))
  // CHECK: %[[LOG2E:.*]] = llvm.mlir.constant(1.44269502 : f32) : f32
  // CHECK: %[[XS:.*]] = llvm.fmul %[[V]], %[[LOG2E]] : f32
  // CHECK: %[[E:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%[[XS]]) : (f32) -> f32
  %e = tessel.unary exp %v : !tessel.tile<32xf32, #l>
  // log(x) = lg2.approx(x) * ln(2)
  // CHECK: %[[L2:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%[[E]]) : (f32) -> f32
  // CHECK: %[[LN2:.*]] = llvm.mlir.constant(0.693147182 : f32) : f32
  // CHECK: %[[L:.*]] = llvm.fmul %[[L2]], %[[LN2]] : f32
  %lg = tessel.unary log %e : !tessel.tile<32xf32, #l>
  // CHECK: %[[H:.*]] = llvm.fptrunc %[[L]] : f32 to f16
  %h = tessel.cast %lg : !tessel.tile<32xf32, #l> -> !tessel.tile<32xf16, #l>
  // CHECK: %[[W:.*]] = llvm.fpext %[[H]] : f16 to f32
  %w = tessel.cast %h : !tessel.tile<32xf16, #l> -> !tessel.tile<32xf32, #l>
  // Float `ne` is unordered; max propagates NaN.
  // CHECK: %[[C:.*]] = llvm.fcmp "une" %[[W]], %[[V]] : f32
  %c = tessel.cmp ne %w, %v : !tessel.tile<32xf32, #l> -> !tessel.tile<32xi1, #l>
  // CHECK: %[[M:.*]] = llvm.intr.maximum(%[[W]], %[[V]]) : (f32, f32) -> f32
  %m = tessel.binary max %w, %v : !tessel.tile<32xf32, #l>
  // CHECK: %[[SEL:.*]] = llvm.select %[[C]], %[[M]], %[[V]] : i1, f32
  %sel = tessel.select %c, %m, %v : !tessel.tile<32xi1, #l>, !tessel.tile<32xf32, #l>
  // Every slot is inside the tile and owned once: a plain store.
  // CHECK: llvm.store %[[SEL]], %[[P]] : f32, !llvm.ptr<1>
  tessel.store %p, %sel : !tessel.tile<32x!tessel.ptr<f32>, #l>
  // CHECK: llvm.return
  return
}

// -----

// Four elements per thread: four slots, each its own scalar op. Integer
// division truncates (sdiv); shifts right are arithmetic (ashr); i1 converts
// to 0 or 1 (zext, uitofp).

#l4 = #tessel.blocked<sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [2], order = [0]>

// CHECK-LABEL: llvm.func @four_slots
func.func @four_slots(%a: i32, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 2 : i32} {
  %r = tessel.arange 0, 256 : !tessel.tile<256xi32, #l4>
  %s = tessel.splat %a : i32 -> !tessel.tile<256xi32, #l4>
  // CHECK-COUNT-4: llvm.sdiv
  %d = tessel.binary div %r, %s : !tessel.tile<256xi32, #l4>
  // CHECK-COUNT-4: llvm.ashr
  %h = tessel.binary shr %d, %s : !tessel.tile<256xi32, #l4>
  // CHECK-COUNT-4: llvm.shl
  %q = tessel.binary shl %h, %s : !tessel.tile<256xi32, #l4>
  // CHECK-COUNT-4: llvm.icmp "sge"
  %b = tessel.cmp ge %q, %s : !tessel.tile<256xi32, #l4> -> !tessel.tile<256xi1, #l4>
  // CHECK-COUNT-4: llvm.uitofp %{{.*}} : i1 to f32
  %f = tessel.cast %b : !tessel.tile<256xi1, #l4> -> !tessel.tile<256xf32, #l4>
  %os = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<256x!tessel.ptr<f32>, #l4>
  %p = tessel.addptr %os, %r : !tessel.tile<256x!tessel.ptr<f32>, #l4>, !tessel.tile<256xi32, #l4>
  // CHECK-COUNT-4: llvm.store
  tessel.store %p, %f : !tessel.tile<256x!tessel.ptr<f32>, #l4>
  return
}

// -----

// Scalar math outside tiles takes the same approximate units; f16 computes
// in f32.

// CHECK-LABEL: llvm.func @scalar_math
func.func @scalar_math(%x: f16, %out: !tessel.ptr<f16>) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  // CHECK: %[[W:.*]] = llvm.fpext %{{.*}} : f16 to f32
  // CHECK: %[[L:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%[[W]])
  // CHECK: %[[N:.*]] = llvm.fmul %[[L]]
  // CHECK: llvm.fptrunc %[[N]] : f32 to f16
  %l = math.log %x : f16
  // CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"
  %e = math.exp2 %l : f16
  // rsqrt is 1 / sqrt with both operations correctly rounded.
  // CHECK: %[[S:.*]] = llvm.intr.sqrt(%{{.*}}) : (f32) -> f32
  // CHECK: llvm.fdiv %{{.*}}, %[[S]] : f32
  %r = math.rsqrt %e : f16
  // A scalar store is made by thread 0 only.
  // CHECK: %[[T:.*]] = nvvm.read.ptx.sreg.tid.x : i32
  // CHECK: %[[Z:.*]] = llvm.icmp "eq" %[[T]]
  // CHECK: llvm.inline_asm has_side_effects {{.*}}"@$2 st.global.b16 [ $0 + 0 ], $1;", "l,h,b" %{{.*}}, %{{.*}}, %[[Z]]
  tessel.store %out, %r : !tessel.ptr<f16>
  return
}

// -----

// tessel.clock reads %clock64, each reading its own.

// CHECK-LABEL: llvm.func @clock
// CHECK: %[[START:.*]] = nvvm.read.ptx.sreg.clock64 : i64
// CHECK: %[[STOP:.*]] = nvvm.read.ptx.sreg.clock64 : i64
// CHECK: llvm.sub %[[STOP]], %[[START]] : i64
func.func @clock(%t: !tessel.ptr<i64>) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %start = tessel.clock : i64
  %stop = tessel.clock : i64
  %d = arith.subi %stop, %start : i64
  tessel.store %t, %d : !tessel.ptr<i64>
  return
}
