// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// RUN: tessel-opt %s -mlir-print-op-generic | tessel-opt | FileCheck %s
// RUN: tessel-opt %s -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Every tessel type and op, printed and parsed back in the custom and the
// generic form.

// CHECK-LABEL: func.func private @types
// CHECK-SAME: !tessel.ptr<f16>
// CHECK-SAME: !tessel.ptr<bf16>
// CHECK-SAME: !tessel.tile<16x32xf32>
// CHECK-SAME: !tessel.tile<8x!tessel.ptr<f32>>
// CHECK-SAME: !tessel.tile<64x128xf16, #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>>
// CHECK-SAME: !tessel.tile<64x32xf32, #tessel.mma<warpsPerCTA = [4, 1]>>
// CHECK-SAME: !tessel.tile<64x32xf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [2, 2]>>>
// CHECK-SAME: !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #tessel.mma<warpsPerCTA = [4, 1]>>>
// CHECK-SAME: !tessel.tile<64x128xf32, #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>>
// CHECK-SAME: !tessel.memdesc<128x128xbf16, order = [0, 1], columns = #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>>
// CHECK-SAME: !tessel.softmax_state<16x64>
// CHECK-SAME: !tessel.kl_state<32>
func.func private @types(!tessel.ptr<f16>, !tessel.ptr<bf16>, !tessel.tile<16x32xf32>,
    !tessel.tile<8x!tessel.ptr<f32>>,
    !tessel.tile<64x128xf16, #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>>,
    !tessel.tile<64x32xf32, #tessel.mma<warpsPerCTA = [4, 1]>>,
    !tessel.tile<64x32xf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [2, 2]>>>,
    !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #tessel.mma<warpsPerCTA = [4, 1]>>>,
    !tessel.tile<64x128xf32, #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>>,
    !tessel.memdesc<128x128xbf16, order = [0, 1], columns = #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>>,
    !tessel.softmax_state<16x64>, !tessel.kl_state<32>)

// CHECK-LABEL: func.func @kernel_attrs
// CHECK-SAME: attributes {tessel.kernel, tessel.num_warps = 8 : i32}
func.func @kernel_attrs() attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  return
}

// Hints on the arguments a launch passes as integers or addresses.
// CHECK-LABEL: func.func @hints
// CHECK-SAME: (%{{.*}}: !tessel.ptr<f16> {tessel.multiple_of = 16 : i64}, %{{.*}}: i32 {tessel.multiple_of = 8 : i64}, %{{.*}}: i64)
func.func @hints(%q: !tessel.ptr<f16> {tessel.multiple_of = 16 : i64}, %n: i32 {tessel.multiple_of = 8 : i64}, %m: i64) attributes {tessel.kernel} {
  return
}

// CHECK-LABEL: func.func @grid
func.func @grid() -> (i32, i32) {
  // CHECK: tessel.program_id 1 : i32
  %0 = tessel.program_id 1 : i32
  // CHECK: tessel.num_programs 2 : i32
  %1 = tessel.num_programs 2 : i32
  // GENERIC: "tessel.program_id"() <{axis = 1 : i32}> : () -> i32
  return %0, %1 : i32, i32
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%s: f32, %t: !tessel.tile<1x64xf32>, %u: !tessel.tile<4x8xf16>) {
  // CHECK: tessel.arange 16, 48 : !tessel.tile<32xi32>
  %0 = tessel.arange 16, 48 : !tessel.tile<32xi32>
  // CHECK: tessel.splat %{{.*}} : f32 -> !tessel.tile<8x64xf32>
  %1 = tessel.splat %s : f32 -> !tessel.tile<8x64xf32>
  // CHECK: tessel.broadcast %{{.*}} : !tessel.tile<1x64xf32> -> !tessel.tile<8x64xf32>
  %2 = tessel.broadcast %t : !tessel.tile<1x64xf32> -> !tessel.tile<8x64xf32>
  // CHECK: tessel.expand_dims %{{.*}} {axis = 1 : i32} : !tessel.tile<32xi32> -> !tessel.tile<32x1xi32>
  %3 = tessel.expand_dims %0 {axis = 1 : i32} : !tessel.tile<32xi32> -> !tessel.tile<32x1xi32>
  // CHECK: tessel.reshape %{{.*}} : !tessel.tile<4x8xf16> -> !tessel.tile<32xf16>
  %4 = tessel.reshape %u : !tessel.tile<4x8xf16> -> !tessel.tile<32xf16>
  // CHECK: tessel.trans %{{.*}} [1, 0] : !tessel.tile<4x8xf16> -> !tessel.tile<8x4xf16>
  %5 = tessel.trans %u [1, 0] : !tessel.tile<4x8xf16> -> !tessel.tile<8x4xf16>
  // CHECK: tessel.extract_slice %{{.*}} [1, 2] : !tessel.tile<4x8xf16> -> !tessel.tile<2x6xf16>
  %6 = tessel.extract_slice %u [1, 2] : !tessel.tile<4x8xf16> -> !tessel.tile<2x6xf16>
  // CHECK: tessel.convert_layout %{{.*}} : !tessel.tile<4x8xf16> -> !tessel.tile<4x8xf16, #tessel.blocked
  %7 = tessel.convert_layout %u : !tessel.tile<4x8xf16> -> !tessel.tile<4x8xf16, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>
  return
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: !tessel.tile<16xf32>, %b: !tessel.tile<16xf32>, %i: !tessel.tile<16xi32>) {
  // CHECK: tessel.binary add
  %0 = tessel.binary add %a, %b : !tessel.tile<16xf32>
  // CHECK: tessel.binary sub
  %1 = tessel.binary sub %a, %b : !tessel.tile<16xf32>
  // CHECK: tessel.binary mul
  %2 = tessel.binary mul %a, %b : !tessel.tile<16xf32>
  // CHECK: tessel.clock : i64
  %clk = tessel.clock : i64
  // CHECK: tessel.binary div
  %3 = tessel.binary div %a, %b : !tessel.tile<16xf32>
  // CHECK: tessel.binary rem
  %4 = tessel.binary rem %i, %i : !tessel.tile<16xi32>
  // CHECK: tessel.binary max
  %5 = tessel.binary max %a, %b : !tessel.tile<16xf32>
  // CHECK: tessel.binary min
  %6 = tessel.binary min %a, %b : !tessel.tile<16xf32>
  // CHECK: tessel.binary and
  %7 = tessel.binary and %i, %i : !tessel.tile<16xi32>
  // CHECK: tessel.binary or
  %8 = tessel.binary or %i, %i : !tessel.tile<16xi32>
  // CHECK: tessel.binary xor
  %9 = tessel.binary xor %i, %i : !tessel.tile<16xi32>
  // CHECK: tessel.binary shl
  %sl = tessel.binary shl %i, %i : !tessel.tile<16xi32>
  // CHECK: tessel.binary shr
  %sr = tessel.binary shr %i, %i : !tessel.tile<16xi32>
  // CHECK: tessel.unary neg
  %10 = tessel.unary neg %a : !tessel.tile<16xf32>
  // CHECK: tessel.unary exp
  %11 = tessel.unary exp %a : !tessel.tile<16xf32>
  // CHECK: tessel.unary exp2
  %12 = tessel.unary exp2 %a : !tessel.tile<16xf32>
  // CHECK: tessel.unary exp2 ftz %{{.*}} : !tessel.tile<16xf32>
  %ftz = tessel.unary exp2 ftz %a : !tessel.tile<16xf32>
  // CHECK: tessel.unary log
  %13 = tessel.unary log %a : !tessel.tile<16xf32>
  // CHECK: tessel.unary log2
  %14 = tessel.unary log2 %a : !tessel.tile<16xf32>
  // CHECK: tessel.unary sqrt
  %15 = tessel.unary sqrt %a : !tessel.tile<16xf32>
  // CHECK: tessel.unary rsqrt
  %16 = tessel.unary rsqrt %a : !tessel.tile<16xf32>
  // CHECK: tessel.unary abs
  %17 = tessel.unary abs %i : !tessel.tile<16xi32>
  // CHECK: tessel.unary not
  %18 = tessel.unary not %i : !tessel.tile<16xi32>
  // CHECK: tessel.cmp lt {{.*}} : !tessel.tile<16xf32> -> !tessel.tile<16xi1>
  %19 = tessel.cmp lt %a, %b : !tessel.tile<16xf32> -> !tessel.tile<16xi1>
  // CHECK: tessel.cmp ne
  %20 = tessel.cmp ne %i, %i : !tessel.tile<16xi32> -> !tessel.tile<16xi1>
  // CHECK: tessel.select {{.*}} : !tessel.tile<16xi1>, !tessel.tile<16xf32>
  %21 = tessel.select %19, %a, %b : !tessel.tile<16xi1>, !tessel.tile<16xf32>
  // CHECK: tessel.cast {{.*}} : !tessel.tile<16xf32> -> !tessel.tile<16xbf16>
  %22 = tessel.cast %a : !tessel.tile<16xf32> -> !tessel.tile<16xbf16>
  // GENERIC: "tessel.binary"(%{{.*}}, %{{.*}}) <{kind = 9 : i32}>
  return
}

// CHECK-LABEL: func.func @memory
func.func @memory(%p: !tessel.ptr<f32>, %off: !tessel.tile<64xi32>, %m: !tessel.tile<64xi1>,
                  %o: !tessel.tile<64xf32>, %c: !tessel.ptr<i32>, %n: i32) {
  // CHECK: tessel.addptr %{{.*}}, %{{.*}} : !tessel.ptr<i32>, i32
  %0 = tessel.addptr %c, %n : !tessel.ptr<i32>, i32
  // CHECK: tessel.load %{{.*}} : !tessel.ptr<i32>
  %1 = tessel.load %0 : !tessel.ptr<i32>
  %ps = tessel.splat %p : !tessel.ptr<f32> -> !tessel.tile<64x!tessel.ptr<f32>>
  // CHECK: tessel.addptr %{{.*}}, %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<64xi32>
  %2 = tessel.addptr %ps, %off : !tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<64xi32>
  // CHECK: tessel.load %{{.*}} mask %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>>
  %3 = tessel.load %2 mask %m : !tessel.tile<64x!tessel.ptr<f32>>
  // CHECK: tessel.load %{{.*}} mask %{{.*}} other %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>>
  %4 = tessel.load %2 mask %m other %o : !tessel.tile<64x!tessel.ptr<f32>>
  // CHECK: tessel.store %{{.*}}, %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>>
  tessel.store %2, %3 : !tessel.tile<64x!tessel.ptr<f32>>
  // CHECK: tessel.store %{{.*}}, %{{.*}} mask %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>>
  tessel.store %2, %4 mask %m : !tessel.tile<64x!tessel.ptr<f32>>
  // CHECK: tessel.atomic_add %{{.*}}, %{{.*}} mask %{{.*}} : !tessel.tile<64x!tessel.ptr<f32>>
  %5 = tessel.atomic_add %2, %4 mask %m : !tessel.tile<64x!tessel.ptr<f32>>
  // CHECK: tessel.atomic_add %{{.*}}, %{{.*}} : !tessel.ptr<i32>
  %6 = tessel.atomic_add %0, %n : !tessel.ptr<i32>
  // GENERIC: "tessel.load"(%{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1>}>
  return
}

// CHECK-LABEL: func.func @dot_reduce
func.func @dot_reduce(%a: !tessel.tile<16x32xbf16>, %b: !tessel.tile<32x8xbf16>, %acc: !tessel.tile<16x8xf32>) {
  // CHECK: tessel.dot %{{.*}}, %{{.*}}, %{{.*}} : !tessel.tile<16x32xbf16>, !tessel.tile<32x8xbf16> -> !tessel.tile<16x8xf32>
  %0 = tessel.dot %a, %b, %acc : !tessel.tile<16x32xbf16>, !tessel.tile<32x8xbf16> -> !tessel.tile<16x8xf32>
  // CHECK: tessel.reduce max %{{.*}} {axis = 1 : i32} : !tessel.tile<16x8xf32> -> !tessel.tile<16xf32>
  %1 = tessel.reduce max %0 {axis = 1 : i32} : !tessel.tile<16x8xf32> -> !tessel.tile<16xf32>
  // CHECK: tessel.reduce sum %{{.*}} {axis = 0 : i32} : !tessel.tile<16xf32> -> f32
  %2 = tessel.reduce sum %1 {axis = 0 : i32} : !tessel.tile<16xf32> -> f32
  // CHECK: tessel.reduce min %{{.*}} {axis = 0 : i32} : !tessel.tile<16x8xf32> -> !tessel.tile<8xf32>
  %3 = tessel.reduce min %0 {axis = 0 : i32} : !tessel.tile<16x8xf32> -> !tessel.tile<8xf32>
  return
}

// CHECK-LABEL: func.func @online_softmax
func.func @online_softmax(%s: !tessel.tile<16x32xf32>, %v: !tessel.tile<32x64xf16>) -> (!tessel.tile<16x64xf32>, !tessel.tile<16xf32>) {
  // CHECK: tessel.softmax_init : !tessel.softmax_state<16x64>
  %0 = tessel.softmax_init : !tessel.softmax_state<16x64>
  // CHECK: tessel.online_softmax %{{.*}}, %{{.*}}, %{{.*}} : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>
  %1 = tessel.online_softmax %0, %s, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>
  // CHECK: tessel.softmax_merge %{{.*}}, %{{.*}} : !tessel.softmax_state<16x64>
  %2 = tessel.softmax_merge %0, %1 : !tessel.softmax_state<16x64>
  // CHECK: tessel.softmax_finalize %{{.*}} : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
  %o, %lse = tessel.softmax_finalize %2 : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
  return %o, %lse : !tessel.tile<16x64xf32>, !tessel.tile<16xf32>
}

// CHECK-LABEL: func.func @online_kl
func.func @online_kl(%s: !tessel.tile<16x32xf32>, %t: !tessel.tile<16x32xf32>) {
  // CHECK: tessel.kl_init : !tessel.kl_state<16>
  %0 = tessel.kl_init : !tessel.kl_state<16>
  // CHECK: tessel.online_kl %{{.*}}, %{{.*}}, %{{.*}} : !tessel.kl_state<16>, !tessel.tile<16x32xf32>, !tessel.tile<16x32xf32>
  %1 = tessel.online_kl %0, %s, %t : !tessel.kl_state<16>, !tessel.tile<16x32xf32>, !tessel.tile<16x32xf32>
  // CHECK: tessel.kl_merge %{{.*}}, %{{.*}} : !tessel.kl_state<16>
  %2 = tessel.kl_merge %0, %1 : !tessel.kl_state<16>
  // CHECK: tessel.kl_finalize %{{.*}} : !tessel.kl_state<16> -> !tessel.tile<16xf32>, !tessel.tile<16xf32>, !tessel.tile<16xf32>
  %kl, %ls, %lt = tessel.kl_finalize %2 : !tessel.kl_state<16> -> !tessel.tile<16xf32>, !tessel.tile<16xf32>, !tessel.tile<16xf32>
  return
}

// CHECK-LABEL: func.func @stream_k
func.func @stream_k(%units: i32, %iters: i32, %out: !tessel.ptr<f32>) {
  // CHECK: tessel.stream_k units(%{{.*}}) iters(%{{.*}}) body {
  // CHECK-NEXT: ^bb0(%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32):
  // CHECK: tessel.yield %{{.*}}, %{{.*}} : !tessel.kl_state<8>, f32
  // CHECK: } merge {
  // CHECK: tessel.kl_merge
  // CHECK: } epilogue {
  // CHECK: tessel.kl_finalize
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %st = tessel.kl_init : !tessel.kl_state<8>
    %z = arith.constant 0.0 : f32
    tessel.yield %st, %z : !tessel.kl_state<8>, f32
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %x: f32, %b: !tessel.kl_state<8>, %y: f32):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
    %s = arith.addf %x, %y : f32
    tessel.yield %m, %s : !tessel.kl_state<8>, f32
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.kl_state<8>, %x: f32):
    %kl, %ls, %lt = tessel.kl_finalize %st : !tessel.kl_state<8> -> !tessel.tile<8xf32>, !tessel.tile<8xf32>, !tessel.tile<8xf32>
    %p = tessel.addptr %out, %unit : !tessel.ptr<f32>, i32
    tessel.store %p, %x : !tessel.ptr<f32>
    tessel.yield
  }
  return
}

// CHECK-LABEL: func.func @flags
func.func @flags(%f: !tessel.ptr<i32>) {
  // CHECK: tessel.flag_signal %{{.*}} : !tessel.ptr<i32>
  tessel.flag_signal %f : !tessel.ptr<i32>
  // CHECK: tessel.flag_wait %{{.*}} : !tessel.ptr<i32>
  tessel.flag_wait %f : !tessel.ptr<i32>
  // GENERIC: "tessel.flag_wait"(%{{.*}}) : (!tessel.ptr<i32>) -> ()
  return
}

// A thread-block cluster's kernel: a shared buffer, reached in another CTA,
// and the cluster barrier (the cluster lowering of stream_k).
// CHECK-LABEL: func.func @cluster
// CHECK-SAME: tessel.cluster = 4 : i64
// CHECK: %[[BUF:.*]] = tessel.shared_buffer elements(64) : <f32, shared>
// CHECK: tessel.cluster_arrive {relaxed}
// CHECK: tessel.cluster_wait
// CHECK: %[[PEER:.*]] = tessel.cluster_map %[[BUF]], %{{.*}} : <f32, shared>
// CHECK: tessel.store %[[PEER]], %{{.*}} : !tessel.ptr<f32, shared>
// CHECK: tessel.cluster_arrive
// CHECK: tessel.load %[[BUF]] : !tessel.ptr<f32, shared>
// GENERIC: "tessel.cluster_map"(%{{.*}}, %{{.*}}) : (!tessel.ptr<f32, shared>, i32) -> !tessel.ptr<f32, shared>
func.func @cluster(%rank: i32, %x: f32, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.cluster = 4 : i64} {
  %buf = tessel.shared_buffer elements(64) : !tessel.ptr<f32, shared>
  tessel.cluster_arrive {relaxed}
  tessel.cluster_wait
  %peer = tessel.cluster_map %buf, %rank : !tessel.ptr<f32, shared>
  tessel.store %peer, %x : !tessel.ptr<f32, shared>
  tessel.cluster_arrive
  tessel.cluster_wait
  %y = tessel.load %buf : !tessel.ptr<f32, shared>
  tessel.store %out, %y : !tessel.ptr<f32>
  return
}

// A kernel and its follow-up (the split-K lowering's split and combine).
// CHECK-LABEL: func.func @split
// CHECK-SAME: tessel.then = @split__combine
func.func @split(%w: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.launch = "persistent", tessel.then = @split__combine, tessel.workspace = array<i64: 4>} {
  return
}
// CHECK-LABEL: func.func @split__combine
func.func @split__combine(%w: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.launch = "persistent", tessel.workspace = array<i64: 4>} {
  return
}

// Shared memory and asynchronous copies (tessel-pipeline's ops).
// CHECK-LABEL: func.func @shared
func.func @shared(%p: !tessel.tile<64x32x!tessel.ptr<f16>>, %m: !tessel.tile<64x32xi1>, %i: i32, %a: !tessel.tile<16x32xf16>, %acc: !tessel.tile<16x64xf32>) -> !tessel.tile<16x64xf32> {
  // CHECK: %[[B:.*]] = tessel.local_alloc : !tessel.memdesc<3x64x32xf16, order = [1, 0]>
  %b = tessel.local_alloc : !tessel.memdesc<3x64x32xf16, order = [1, 0]>
  // CHECK: %[[V:.*]] = tessel.memdesc_index %[[B]][%{{.*}}] : !tessel.memdesc<3x64x32xf16, order = [1, 0]> -> !tessel.memdesc<64x32xf16, order = [1, 0]>
  %v = tessel.memdesc_index %b[%i] : !tessel.memdesc<3x64x32xf16, order = [1, 0]> -> !tessel.memdesc<64x32xf16, order = [1, 0]>
  // CHECK: tessel.async_copy %{{.*}}, %[[V]] mask %{{.*}} : !tessel.tile<64x32x!tessel.ptr<f16>>, !tessel.memdesc<64x32xf16, order = [1, 0]>, !tessel.tile<64x32xi1>
  tessel.async_copy %p, %v mask %m : !tessel.tile<64x32x!tessel.ptr<f16>>, !tessel.memdesc<64x32xf16, order = [1, 0]>, !tessel.tile<64x32xi1>
  // CHECK: tessel.async_copy %{{.*}}, %[[V]] : !tessel.tile<64x32x!tessel.ptr<f16>>, !tessel.memdesc<64x32xf16, order = [1, 0]>
  tessel.async_copy %p, %v : !tessel.tile<64x32x!tessel.ptr<f16>>, !tessel.memdesc<64x32xf16, order = [1, 0]>
  // CHECK: tessel.async_commit
  tessel.async_commit
  // CHECK: tessel.async_wait 1
  tessel.async_wait 1
  // CHECK: %[[T:.*]] = tessel.memdesc_trans %[[V]] : !tessel.memdesc<64x32xf16, order = [1, 0]> -> !tessel.memdesc<32x64xf16, order = [0, 1]>
  %t = tessel.memdesc_trans %v : !tessel.memdesc<64x32xf16, order = [1, 0]> -> !tessel.memdesc<32x64xf16, order = [0, 1]>
  // CHECK: tessel.memdesc_rows %[[V]][8] : !tessel.memdesc<64x32xf16, order = [1, 0]> -> !tessel.memdesc<48x32xf16, order = [1, 0]>
  %rows = tessel.memdesc_rows %v[8] : !tessel.memdesc<64x32xf16, order = [1, 0]> -> !tessel.memdesc<48x32xf16, order = [1, 0]>
  // Rows of f32 as far apart as the pitch says, in every view.
  // CHECK: %[[F:.*]] = tessel.local_alloc : !tessel.memdesc<2x37x42xf32, order = [1, 0], pitch = 56>
  %f = tessel.local_alloc : !tessel.memdesc<2x37x42xf32, order = [1, 0], pitch = 56>
  // CHECK: tessel.memdesc_index %[[F]][%{{.*}}] : !tessel.memdesc<2x37x42xf32, order = [1, 0], pitch = 56> -> !tessel.memdesc<37x42xf32, order = [1, 0], pitch = 56>
  %fv = tessel.memdesc_index %f[%i] : !tessel.memdesc<2x37x42xf32, order = [1, 0], pitch = 56> -> !tessel.memdesc<37x42xf32, order = [1, 0], pitch = 56>
  // CHECK: tessel.memdesc_trans %{{.*}} : !tessel.memdesc<37x42xf32, order = [1, 0], pitch = 56> -> !tessel.memdesc<42x37xf32, order = [0, 1], pitch = 56>
  %ft = tessel.memdesc_trans %fv : !tessel.memdesc<37x42xf32, order = [1, 0], pitch = 56> -> !tessel.memdesc<42x37xf32, order = [0, 1], pitch = 56>
  // CHECK: tessel.dot %{{.*}}, %[[T]], %{{.*}} : !tessel.tile<16x32xf16>, !tessel.memdesc<32x64xf16, order = [0, 1]> -> !tessel.tile<16x64xf32>
  %d = tessel.dot %a, %t, %acc : !tessel.tile<16x32xf16>, !tessel.memdesc<32x64xf16, order = [0, 1]> -> !tessel.tile<16x64xf32>
  // GENERIC: "tessel.async_wait"() <{pending = 1 : i32}> : () -> ()
  %h = tessel.local_alloc : !tessel.memdesc<16x64xf32, order = [1, 0]>
  // CHECK: tessel.local_store %{{.*}}, %{{.*}} : !tessel.tile<16x64xf32>, !tessel.memdesc<16x64xf32, order = [1, 0]>
  tessel.local_store %d, %h : !tessel.tile<16x64xf32>, !tessel.memdesc<16x64xf32, order = [1, 0]>
  // CHECK: tessel.local_load %{{.*}} [2, 8] : !tessel.memdesc<16x64xf32, order = [1, 0]> -> !tessel.tile<8x32xf32>
  %w = tessel.local_load %h [2, 8] : !tessel.memdesc<16x64xf32, order = [1, 0]> -> !tessel.tile<8x32xf32>
  // Runtime offsets (i32 values) mixed with constant ones.
  // CHECK: tessel.local_load %{{.*}} [%{{.*}}, 8] : !tessel.memdesc<16x64xf32, order = [1, 0]> -> !tessel.tile<8x32xf32>
  %wd = tessel.local_load %h [%i, 8] : !tessel.memdesc<16x64xf32, order = [1, 0]> -> !tessel.tile<8x32xf32>
  // CHECK: tessel.extract_slice %{{.*}} [%{{.*}}, 0] : !tessel.tile<16x32xf16> -> !tessel.tile<8x32xf16>
  %ad = tessel.extract_slice %a [%i, 0] : !tessel.tile<16x32xf16> -> !tessel.tile<8x32xf16>
  return %d : !tessel.tile<16x64xf32>
}

// Hopper warpgroup MMA (tessel-warpgroup-mma's ops) and the module's target.
// CHECK-LABEL: module attributes {tessel.target = "sm_90a"}
// CHECK-LABEL: func.func @warpgroup
module attributes {tessel.target = "sm_90a"} {
func.func @warpgroup(%a: !tessel.tile<128x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [8, 1]>>>, %b: !tessel.memdesc<64x128xbf16, order = [1, 0]>, %acc: !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>) -> !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>> {
  // CHECK: %[[P:.*]] = tessel.warpgroup_dot %{{.*}}, %{{.*}}, %{{.*}} : !tessel.tile<128x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [8, 1]>>>, !tessel.memdesc<64x128xbf16, order = [1, 0]> -> !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<128x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [8, 1]>>>, !tessel.memdesc<64x128xbf16, order = [1, 0]> -> !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  // CHECK: %{{.*}}:2 = tessel.warpgroup_dot_wait %[[P]], %{{.*}} pendings = 1 : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>, !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  // GENERIC: "tessel.warpgroup_dot_wait"(%{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 2, 0>, pendings = 1 : i32}>
  %r:2 = tessel.warpgroup_dot_wait %p, %acc pendings = 1 : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>, !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  // A wait that keeps the dot's register A live; only the products return.
  // CHECK: %{{.*}} = tessel.warpgroup_dot_wait %[[P]] reads %{{.*}} : !tessel.tile<128x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [8, 1]>>> pendings = 0 : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  // GENERIC: "tessel.warpgroup_dot_wait"(%{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1>, pendings = 0 : i32}> : (!tessel.tile<128x128xf32, {{.*}}>, !tessel.tile<128x64xbf16, {{.*}}>) -> !tessel.tile<128x128xf32,
  %k = tessel.warpgroup_dot_wait %p reads %a : !tessel.tile<128x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [8, 1]>>> pendings = 0 : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  return %r#0 : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
}
// A loop's dot marked to run late.
// CHECK-LABEL: func.func @rotate_mark
// CHECK: tessel.dot %{{.*}}, %{{.*}}, %{{.*}} {tessel.rotate}
func.func @rotate_mark(%a: !tessel.tile<128x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [8, 1]>>>, %b: !tessel.memdesc<64x128xbf16, order = [1, 0]>, %acc: !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>, %n: index) -> !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%o = %acc) -> (!tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>) {
    %d = tessel.dot %a, %b, %o {tessel.rotate} : !tessel.tile<128x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.mma<warpsPerCTA = [8, 1]>>>, !tessel.memdesc<64x128xbf16, order = [1, 0]> -> !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
    scf.yield %d : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  }
  return %s : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
}
// A from shared memory: an MxK memdesc, K contiguous.
// CHECK-LABEL: func.func @warpgroup_shared_a
// CHECK: tessel.warpgroup_dot %{{.*}}, %{{.*}}, %{{.*}} : !tessel.memdesc<128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x128xbf16, order = [1, 0]> -> !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
// GENERIC: "tessel.warpgroup_dot"(%{{.*}}, %{{.*}}, %{{.*}}) : (!tessel.memdesc<128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x128xbf16, order = [1, 0]>, !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>) ->
func.func @warpgroup_shared_a(%a: !tessel.memdesc<128x64xbf16, order = [1, 0]>, %b: !tessel.memdesc<64x128xbf16, order = [1, 0]>, %acc: !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>) -> !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>> {
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x128xbf16, order = [1, 0]> -> !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  return %r : !tessel.tile<128x128xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
}

// A from shared memory M-major (M contiguous): read through wgmma's transpose
// bit.
// CHECK-LABEL: func.func @warpgroup_shared_a_m_major
// CHECK: tessel.warpgroup_dot %{{.*}}, %{{.*}}, %{{.*}} : !tessel.memdesc<128x64xbf16, order = [0, 1]>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
func.func @warpgroup_shared_a_m_major(%a: !tessel.memdesc<128x64xbf16, order = [0, 1]>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<128x64xf32, #tessel.mma<warpsPerCTA = [8, 1]>>) -> !tessel.tile<128x64xf32, #tessel.mma<warpsPerCTA = [8, 1]>> {
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x64xbf16, order = [0, 1]>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x64xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
  return %r : !tessel.tile<128x64xf32, #tessel.mma<warpsPerCTA = [8, 1]>>
}

// Tensor descriptors, block loads and the copy engine's ops.
// CHECK-LABEL: func.func @tensor_descs
// CHECK: tessel.make_tensor_desc %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}], [%{{.*}}, %{{.*}}] : !tessel.ptr<bf16> -> !tessel.tensor_desc<1x64x128xbf16>
// CHECK: tessel.load_block %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : !tessel.tensor_desc<1x64x128xbf16> -> !tessel.tile<64x128xbf16>
// CHECK: tessel.mbarrier_alloc : !tessel.mbarriers<3>
// CHECK: tessel.tma_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}, %{{.*}}[%{{.*}}] if %{{.*}} : !tessel.tensor_desc<1x64x128xbf16>, !tessel.memdesc<64x128xbf16, order = [1, 0]>, !tessel.mbarriers<3>
// CHECK: tessel.mbarrier_wait %{{.*}}[%{{.*}}], %{{.*}} : !tessel.mbarriers<3>
// CHECK: tessel.tma_load %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}}[%{{.*}}] : !tessel.tensor_desc<64xf32>, !tessel.memdesc<64x1xf32, order = [0, 1]>, !tessel.mbarriers<3>
// CHECK: tessel.barrier
// GENERIC: "tessel.tma_load"
func.func @tensor_descs(%p: !tessel.ptr<bf16>, %n: i64, %s: i64, %i: i32, %go: i1, %buf: !tessel.memdesc<64x128xbf16, order = [1, 0]>, %vd: !tessel.tensor_desc<64xf32>, %col: !tessel.memdesc<64x1xf32, order = [0, 1]>) -> !tessel.tile<64x128xbf16> {
  %d = tessel.make_tensor_desc %p, [%n, %n, %n], [%s, %s] : !tessel.ptr<bf16> -> !tessel.tensor_desc<1x64x128xbf16>
  %t = tessel.load_block %d[%i, %i, %i] : !tessel.tensor_desc<1x64x128xbf16> -> !tessel.tile<64x128xbf16>
  %bars = tessel.mbarrier_alloc : !tessel.mbarriers<3>
  tessel.tma_load %d[%i, %i, %i], %buf, %bars[%i] if %go : !tessel.tensor_desc<1x64x128xbf16>, !tessel.memdesc<64x128xbf16, order = [1, 0]>, !tessel.mbarriers<3>
  tessel.mbarrier_wait %bars[%i], %i : !tessel.mbarriers<3>
  tessel.tma_load %vd[%i], %col, %bars[%i] : !tessel.tensor_desc<64xf32>, !tessel.memdesc<64x1xf32, order = [0, 1]>, !tessel.mbarriers<3>
  tessel.barrier
  return %t : !tessel.tile<64x128xbf16>
}

// A producer warpgroup beside two consumer warpgroups, sharing buffer 0;
// barriers with expected arrivals, and an arrival under a condition.
// CHECK-LABEL: func.func @warp_specialize
// CHECK: tessel.mbarrier_alloc {arrivals = 256 : i32} : !tessel.mbarriers<2>
// CHECK: tessel.warp_specialize {consumer_registers = 240 : i32, consumer_warps = 8 : i32, producer_registers = 24 : i32, producer_warps = 4 : i32} consumers {
// CHECK: tessel.local_alloc {tessel.buffer = 0 : i64}
// CHECK: tessel.mbarrier_arrive %{{.*}}[%{{.*}}] if %{{.*}} : !tessel.mbarriers<2>
// CHECK: } producer {
// CHECK: tessel.local_alloc {tessel.buffer = 0 : i64}
// GENERIC: "tessel.warp_specialize"
func.func @warp_specialize(%i: i32, %go: i1) attributes {tessel.kernel, tessel.num_warps = 8 : i32, tessel.warp_specialize} {
  %empty = tessel.mbarrier_alloc {arrivals = 256 : i32} : !tessel.mbarriers<2>
  tessel.warp_specialize {consumer_registers = 240 : i32, consumer_warps = 8 : i32, producer_registers = 24 : i32, producer_warps = 4 : i32} consumers {
    %a = tessel.local_alloc {tessel.buffer = 0 : i64} : !tessel.memdesc<2x64x64xf16, order = [1, 0]>
    tessel.mbarrier_arrive %empty[%i] if %go : !tessel.mbarriers<2>
  } producer {
    %b = tessel.local_alloc {tessel.buffer = 0 : i64} : !tessel.memdesc<2x64x64xf16, order = [1, 0]>
    tessel.mbarrier_wait %empty[%i], %i : !tessel.mbarriers<2>
  }
  return
}
}
