// RUN: tessel-opt %s -split-input-file -tessel-warp-specialize -verify-diagnostics | FileCheck %s

// A pipelined loop of tensor-map copies (as tessel-pipeline leaves it): the
// body goes to the consumers, each copy becoming an arrival on its slot's
// "empty" barrier; the producer runs the loop with only the copies and
// what computes them, each copy after a wait on that barrier for the
// copy's round (d / N) % 2. The CTA barrier that guarded the refill goes.

#mma = #tessel.mma<warpsPerCTA = [8, 1]>

// CHECK-LABEL: func.func @loop
// CHECK: %[[FULL:.*]] = tessel.mbarrier_alloc : !tessel.mbarriers<2>
// CHECK-NEXT: %[[EMPTY:.*]] = tessel.mbarrier_alloc {arrivals = 256 : i32} : !tessel.mbarriers<2>
// CHECK-NEXT: tessel.warp_specialize {consumer_registers = 240 : i32, consumer_warps = 8 : i32, producer_registers = 24 : i32, producer_warps = 4 : i32} consumers {
// CHECK: %[[BUF:.*]] = tessel.local_alloc {tessel.buffer = 0 : i64}
// CHECK: tessel.mbarrier_arrive %[[EMPTY]][%c0_i32] if %{{.*}} : !tessel.mbarriers<2>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (!tessel.tile<128x64xf32, #{{.*}}>)
// CHECK-NOT: tessel.barrier
// CHECK-NOT: tessel.tma_load
// CHECK: tessel.mbarrier_arrive %[[EMPTY]][%[[SLOT:.*]]] if %[[AHEAD:.*]] : !tessel.mbarriers<2>
// CHECK: tessel.mbarrier_wait %[[FULL]]
// CHECK: tessel.warpgroup_dot
// CHECK: scf.yield
// CHECK: tessel.store
// CHECK: } producer {
// CHECK-NOT: tessel.warpgroup_dot
// CHECK-NOT: tessel.store
// CHECK: %[[PBUF:.*]] = tessel.local_alloc {tessel.buffer = 0 : i64}
// CHECK: scf.if
// CHECK-NEXT: tessel.mbarrier_wait %[[EMPTY]][%c0_i32{{.*}}], %{{.*}} : !tessel.mbarriers<2>
// CHECK: tessel.tma_load %{{.*}}, %[[FULL]][%c0_i32{{.*}}] if
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK: %[[ROUND:.*]] = arith.addi
// CHECK: %[[PSLOT:.*]] = arith.remsi %[[ROUND]], %{{.*}} : i32
// CHECK: %[[HALF:.*]] = arith.divsi %[[ROUND]], %{{.*}} : i32
// CHECK: %[[PARITY:.*]] = arith.andi %[[HALF]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[ISSUE:.*]] {
// CHECK-NEXT: tessel.mbarrier_wait %[[EMPTY]][%[[PSLOT]]], %[[PARITY]]
// CHECK: tessel.tma_load %{{.*}}, %[[FULL]][%[[PSLOT]]] if %[[ISSUE]]
// CHECK-NOT: tessel.mbarrier_wait %[[FULL]]
// CHECK: return
module attributes {tessel.target = "sm_90a"} {
func.func @loop(%a: !tessel.memdesc<128x64xbf16, order = [1, 0]>, %o: !tessel.tile<128x64x!tessel.ptr<f32>, #mma>, %n: i32, %kd: !tessel.tensor_desc<64x64xbf16>) attributes {tessel.kernel, tessel.num_warps = 8 : i32, tessel.warp_specialize} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %acc0 = tessel.splat %zero : f32 -> !tessel.tile<128x64xf32, #mma>
  %buf = tessel.local_alloc : !tessel.memdesc<2x64x64xbf16, order = [1, 0]>
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<2>
  %first = arith.cmpi slt, %c0, %n : i32
  %b0 = tessel.memdesc_index %buf[%c0] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  tessel.tma_load %kd[%c0, %c0], %b0, %full[%c0] if %first : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<2>
  %r = scf.for %iv = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<128x64xf32, #mma>) : i32 {
    tessel.barrier
    %i = arith.divsi %iv, %c64 : i32
    %slot = arith.remsi %i, %c2 : i32
    %next = arith.addi %i, %c1 : i32
    %nslot = arith.remsi %next, %c2 : i32
    %niv = arith.addi %iv, %c64 : i32
    %ahead = arith.cmpi slt, %niv, %n : i32
    %nb = tessel.memdesc_index %buf[%nslot] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
    tessel.tma_load %kd[%niv, %c0], %nb, %full[%nslot] if %ahead : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<2>
    %h = arith.divsi %i, %c2 : i32
    %phase = arith.andi %h, %c1 : i32
    tessel.mbarrier_wait %full[%slot], %phase : !tessel.mbarriers<2>
    %b = tessel.memdesc_index %buf[%slot] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
    %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma>
    %w = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x64xf32, #mma>
    scf.yield %w : !tessel.tile<128x64xf32, #mma>
  }
  tessel.store %o, %r : !tessel.tile<128x64x!tessel.ptr<f32>, #mma>
  return
}
}

// -----

// One consumer warpgroup already holds the most registers a thread may:
// no setmaxnreg. Kernels without the attribute, or with no copies, are
// left alone.

// CHECK-LABEL: func.func @one_group
// CHECK: tessel.warp_specialize {consumer_warps = 4 : i32, producer_warps = 4 : i32} consumers {
// CHECK-LABEL: func.func @not_asked
// CHECK-NOT: consumers
// CHECK: tessel.tma_load
// CHECK-LABEL: func.func @no_copies
// CHECK-NOT: consumers
module attributes {tessel.target = "sm_90a"} {
func.func @one_group(%kd: !tessel.tensor_desc<64x64xbf16>) attributes {tessel.kernel, tessel.num_warps = 4 : i32, tessel.warp_specialize} {
  %c0 = arith.constant 0 : i32
  %buf = tessel.local_alloc : !tessel.memdesc<1x64x64xbf16, order = [1, 0]>
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<1>
  %b0 = tessel.memdesc_index %buf[%c0] : !tessel.memdesc<1x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  tessel.tma_load %kd[%c0, %c0], %b0, %full[%c0] : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<1>
  tessel.mbarrier_wait %full[%c0], %c0 : !tessel.mbarriers<1>
  return
}
func.func @not_asked(%kd: !tessel.tensor_desc<64x64xbf16>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %buf = tessel.local_alloc : !tessel.memdesc<1x64x64xbf16, order = [1, 0]>
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<1>
  %b0 = tessel.memdesc_index %buf[%c0] : !tessel.memdesc<1x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  tessel.tma_load %kd[%c0, %c0], %b0, %full[%c0] : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<1>
  tessel.mbarrier_wait %full[%c0], %c0 : !tessel.mbarriers<1>
  return
}
func.func @no_copies(%p: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32, tessel.warp_specialize} {
  return
}
}

// -----

// Copies whose coordinates come from memory (a block table) cannot move to
// the producer: it only runs scalar arithmetic.

module attributes {tessel.target = "sm_90a"} {
func.func @from_memory(%kd: !tessel.tensor_desc<64x64xbf16>, %table: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32, tessel.warp_specialize} {
  %c0 = arith.constant 0 : i32
  %buf = tessel.local_alloc : !tessel.memdesc<1x64x64xbf16, order = [1, 0]>
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<1>
  // expected-error @+1 {{warp_specialize: the tensor-map copies depend on this op}}
  %row = tessel.load %table : !tessel.ptr<i32>
  %b0 = tessel.memdesc_index %buf[%c0] : !tessel.memdesc<1x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  tessel.tma_load %kd[%row, %c0], %b0, %full[%c0] : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<1>
  tessel.mbarrier_wait %full[%c0], %c0 : !tessel.mbarriers<1>
  return
}
}

// -----

// The producer's wait needs the copy's round: a slot that is not a round
// modulo the slots is refused.

module attributes {tessel.target = "sm_90a"} {
func.func @unknown_round(%kd: !tessel.tensor_desc<64x64xbf16>, %s: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32, tessel.warp_specialize} {
  %c0 = arith.constant 0 : i32
  %buf = tessel.local_alloc : !tessel.memdesc<2x64x64xbf16, order = [1, 0]>
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<2>
  %b0 = tessel.memdesc_index %buf[%s] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  // expected-error @+1 {{cannot be moved to a producer warpgroup: its barrier slot is neither a constant nor a round modulo the 2 slots}}
  tessel.tma_load %kd[%c0, %c0], %b0, %full[%s] : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<2>
  return
}
}
