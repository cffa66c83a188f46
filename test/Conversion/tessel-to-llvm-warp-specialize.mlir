// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// Two consumer warpgroups and a producer warpgroup: 384 threads a CTA. The
// barriers before the split are the whole CTA's (barrier 0); "empty"
// barriers expect 256 arrivals. Threads below 256 take the consumers'
// branch: setmaxnreg.inc to 240, their barriers are barrier 1 of 256
// threads, and each arrives on the empty barrier. The producer warpgroup
// gives its registers up to 24 first; thread 256 (its first) issues the
// copy, after every producer thread has waited for the empty barrier's
// phase. Both regions share the buffer numbered 0 (one offset). One CTA per
// SM (nvvm.minctasm) gives ptxas the registers at entry that setmaxnreg
// needs.

// CHECK-LABEL: llvm.func @split
// CHECK-SAME: nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK-SAME: nvvm.minctasm = 1 : i32
// CHECK: %[[BARS:.*]] = llvm.getelementptr %{{.*}}[0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: %[[EMPTY:.*]] = llvm.getelementptr %{{.*}}[8] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: %[[C256:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %[[C256]] : !llvm.ptr<3>, i32
// CHECK: nvvm.barrier0
// CHECK-NOT: tessel.warp_specialize
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[CONSUMER:.*]] = llvm.icmp "ult" %[[TID]], %{{.*}} : i32
// CHECK: llvm.cond_br %[[CONSUMER]], ^[[C:.*]], ^[[P:.*]]
// CHECK: ^[[C]]:
// CHECK-NEXT: nvvm.setmaxregister  increase 240
// CHECK: llvm.getelementptr %{{.*}}[1024] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[N:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: nvvm.barrier id = %[[ONE]] number_of_threads = %[[N]]
// CHECK: %[[E0:.*]] = llvm.getelementptr %[[EMPTY]][%{{.*}}]
// CHECK-NEXT: nvvm.mbarrier.arrive %[[E0]] : !llvm.ptr<3>
// CHECK: ^[[P]]:
// CHECK-NEXT: nvvm.setmaxregister  decrease 24
// CHECK: llvm.getelementptr %{{.*}}[1024] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: llvm.getelementptr %[[EMPTY]]
// CHECK: mbarrier.try_wait.parity.shared.b64
// CHECK: %[[PTID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[FIRST:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: llvm.icmp "eq" %[[PTID]], %[[FIRST]] : i32
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK-NOT: nvvm.barrier0
func.func @split(%map: !tessel.tensor_desc<64x64xbf16> {tessel.tensor_map = {base = 1 : i64, sizes = ["N", "64"], strides = ["64"]}}, %p: !tessel.ptr<bf16>) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<1>
  %empty = tessel.mbarrier_alloc {arrivals = 256 : i32} : !tessel.mbarriers<1>
  tessel.warp_specialize {consumer_registers = 240 : i32, consumer_warps = 8 : i32, producer_registers = 24 : i32, producer_warps = 4 : i32} consumers {
    %c0 = arith.constant 0 : i32
    %buf = tessel.local_alloc {tessel.buffer = 0 : i64} : !tessel.memdesc<1x64x64xbf16, order = [1, 0]>
    tessel.barrier
    tessel.mbarrier_arrive %empty[%c0] : !tessel.mbarriers<1>
    tessel.mbarrier_wait %full[%c0], %c0 : !tessel.mbarriers<1>
  } producer {
    %c0 = arith.constant 0 : i32
    %buf = tessel.local_alloc {tessel.buffer = 0 : i64} : !tessel.memdesc<1x64x64xbf16, order = [1, 0]>
    %dst = tessel.memdesc_index %buf[%c0] : !tessel.memdesc<1x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
    tessel.mbarrier_wait %empty[%c0], %c0 : !tessel.mbarriers<1>
    tessel.tma_load %map[%c0, %c0], %dst, %full[%c0] : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<1>
  }
  return
}

// -----

// The turns of tessel-ping-pong: the warpgroup is the thread index / 128;
// a turn is bar.sync (wait) or bar.arrive with a barrier id and 256 threads.

// CHECK-LABEL: llvm.func @turns
// CHECK-NOT: nvvm.minctasm
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[WG:.*]] = llvm.udiv %[[TID]], %{{.*}} : i32
// CHECK: %[[ID:.*]] = llvm.add %[[WG]], %{{.*}} : i32
// CHECK: %[[N:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: nvvm.barrier id = %[[ID]] number_of_threads = %[[N]]
// CHECK: %[[M:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "bar.arrive $0, $1;", "r,n" %[[ID]], %[[M]]
func.func @turns() attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %c3 = arith.constant 3 : i32
  %wg = tessel.warpgroup_id : i32
  %id = arith.addi %wg, %c3 : i32
  tessel.named_barrier_wait %id, 256
  tessel.named_barrier_arrive %id, 256
  return
}
