// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// A tensor map is a 128-byte parameter passed by value and read where it is
// (__grid_constant__). The barriers take 8 bytes each after the buffers,
// which keep their 1024-byte alignment; thread 0 initialises them, then a
// fence and a CTA barrier publish them. A copy of a 64x128 bf16 block lands
// as two 64x64 column blocks of 128-byte swizzled rows: thread 0 (and the
// copy's condition) announces 2 x 8192 bytes to the barrier, then issues two
// bulk tensor copies, innermost coordinate first, the second 64 columns and
// 8192 bytes further. Every thread waits for the phase (a polling loop of
// try_wait.parity in inline PTX).

// CHECK-LABEL: llvm.func @tma
// CHECK-SAME: %[[MAP:[^:]*]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK: %[[BUF:.*]] = llvm.getelementptr %{{.*}}[0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: %[[BARS:.*]] = llvm.getelementptr %{{.*}}[32768] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: nvvm.read.ptx.sreg.tid.x
// CHECK: llvm.cond_br
// CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.barrier0
// CHECK: %[[ISSUE:.*]] = llvm.and
// CHECK: llvm.cond_br %[[ISSUE]]
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(16384 : i32) : i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[BAR:.*]], %[[BYTES]]
// CHECK: %[[D0:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D0]], %[[MAP]], %[[BAR]], box[%[[X:.*]], %[[Y:.*]]]
// CHECK: %[[X64:.*]] = llvm.add %[[X]], %{{.*}} : i32
// CHECK: %[[D1:.*]] = llvm.getelementptr %{{.*}}[8192] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: %[[D1C:.*]] = llvm.addrspacecast %[[D1]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D1C]], %[[MAP]], %[[BAR]], box[%[[X64]], %[[Y]]]
// CHECK: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity.shared.b64
// CHECK: nvvm.barrier0
func.func @tma(%map: !tessel.tensor_desc<64x128xbf16> {tessel.tensor_map = {base = 1 : i64, sizes = ["N", "128"], strides = ["128"]}}, %p: !tessel.ptr<bf16>, %row: i32, %col: i32, %go: i1) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %buf = tessel.local_alloc : !tessel.memdesc<2x64x128xbf16, order = [1, 0]>
  %bars = tessel.mbarrier_alloc : !tessel.mbarriers<2>
  %c1 = arith.constant 1 : i32
  %dst = tessel.memdesc_index %buf[%c1] : !tessel.memdesc<2x64x128xbf16, order = [1, 0]> -> !tessel.memdesc<64x128xbf16, order = [1, 0]>
  tessel.tma_load %map[%row, %col], %dst, %bars[%c1] if %go : !tessel.tensor_desc<64x128xbf16>, !tessel.memdesc<64x128xbf16, order = [1, 0]>, !tessel.mbarriers<2>
  tessel.mbarrier_wait %bars[%c1], %c1 : !tessel.mbarriers<2>
  tessel.barrier
  return
}

// -----

// A vector block of f32 (64 values, one coordinate) is one box of 256 bytes
// into its 1 x 64 buffer.

// CHECK-LABEL: llvm.func @tma_vector
// CHECK: nvvm.fence.mbarrier.init
// CHECK: llvm.cond_br
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[BAR:.*]], %[[BYTES]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[BAR]], box[%{{.*}}] :
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: mbarrier.try_wait.parity
func.func @tma_vector(%map: !tessel.tensor_desc<64xf32> {tessel.tensor_map = {base = 1 : i64, sizes = ["N"], strides = []}}, %p: !tessel.ptr<f32>, %i: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %buf = tessel.local_alloc : !tessel.memdesc<2x1x64xf32, order = [1, 0]>
  %bars = tessel.mbarrier_alloc : !tessel.mbarriers<2>
  %dst = tessel.memdesc_index %buf[%i] : !tessel.memdesc<2x1x64xf32, order = [1, 0]> -> !tessel.memdesc<1x64xf32, order = [1, 0]>
  tessel.tma_load %map[%i], %dst, %bars[%i] : !tessel.tensor_desc<64xf32>, !tessel.memdesc<1x64xf32, order = [1, 0]>, !tessel.mbarriers<2>
  tessel.mbarrier_wait %bars[%i], %i : !tessel.mbarriers<2>
  return
}
