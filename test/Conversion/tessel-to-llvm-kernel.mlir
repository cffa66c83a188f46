// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm -verify-diagnostics | FileCheck %s

// A persistent kernel's workspace arguments (8 f32, 1 i32, 1 i32 flag per
// program) are packed behind one trailing pointer: region i starts at
// num_ctas times the 16-byte-rounded slot sizes before it (32, 16, 16).

// CHECK-LABEL: llvm.func @persistent
// CHECK-SAME: (%[[OUT:.*]]: !llvm.ptr<1>, %[[N:.*]]: i32, %[[WS:.*]]: !llvm.ptr<1>)
// CHECK-SAME: nvvm.kernel
// CHECK: %[[X:.*]] = nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK: %[[Y:.*]] = nvvm.read.ptx.sreg.nctaid.y : i32
// CHECK: %[[XY:.*]] = llvm.mul %[[X]], %[[Y]] : i32
// CHECK: %[[Z:.*]] = nvvm.read.ptx.sreg.nctaid.z : i32
// CHECK: %[[G:.*]] = llvm.mul %[[XY]], %[[Z]] : i32
// CHECK: %[[G64:.*]] = llvm.zext %[[G]] : i32 to i64
// CHECK: %[[O0:.*]] = llvm.mul %[[G64]], %{{.*}} : i64
// CHECK: %[[R0:.*]] = llvm.getelementptr %[[WS]][%[[O0]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK: %[[C32:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK: %[[O1:.*]] = llvm.mul %[[G64]], %[[C32]] : i64
// CHECK: %[[R1:.*]] = llvm.getelementptr %[[WS]][%[[O1]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK: %[[C48:.*]] = llvm.mlir.constant(48 : i64) : i64
// CHECK: %[[O2:.*]] = llvm.mul %[[G64]], %[[C48]] : i64
// CHECK: %[[R2:.*]] = llvm.getelementptr %[[WS]][%[[O2]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK: llvm.getelementptr %[[R2]][%{{.*}}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
func.func @persistent(%out: !tessel.ptr<f32>, %n: i32, %ws0: !tessel.ptr<f32>, %ws1: !tessel.ptr<i32>, %flags: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.launch = "persistent", tessel.num_warps = 1 : i32, tessel.workspace = array<i64: 8, 1, 1>} {
  %p = tessel.program_id 0 : i32
  %f = tessel.addptr %flags, %p : !tessel.ptr<i32>, i32
  tessel.flag_signal %f : !tessel.ptr<i32>
  return
}

// -----

// A tensor map before the workspace arguments keeps its by-value attributes
// when they are packed behind one pointer.

// CHECK-LABEL: llvm.func @persistent_with_map
// CHECK-SAME: (%{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{[^:]*}}: !llvm.ptr<1>)
// CHECK-SAME: nvvm.kernel
func.func @persistent_with_map(%k: !tessel.ptr<bf16>, %n: i32, %map: !tessel.tensor_desc<64x64xbf16> {tessel.tensor_map = {base = 0 : i64, sizes = ["n", "64"], strides = ["64"]}}, %ws: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.launch = "persistent", tessel.num_warps = 1 : i32, tessel.workspace = array<i64: 8>} {
  return
}

// -----

func.func @no_layout() attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  // expected-error @+1 {{tile '!tessel.tile<32xi32>' has no layout the GPU lowering knows (run tessel-assign-layouts first)}}
  %r = tessel.arange 0, 32 : !tessel.tile<32xi32>
  return
}

// -----

func.func @wrong_warps() attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  // expected-error @+1 {{layout of '!tessel.tile<32xi32, #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>>' spans 1 warps but the kernel has 4}}
  %r = tessel.arange 0, 32 : !tessel.tile<32xi32, #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>>
  return
}
