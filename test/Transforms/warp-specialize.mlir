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

// Pipelined loops inside a loop around (attention's key loops, entered once
// per query block), their rings counting rounds across entries. The first
// ring's copies ahead of its loop follow only a buffer the loop reads too
// (the query block), which therefore never shares their memory: the
// consumers arrive for them in the first entry only, unconditionally, and at
// the end of each entry, after its last use of shared memory, for the next
// entry's first round if this entry's loop ran (otherwise that arrival was
// already made). The second loop's copies follow the first loop's buffers,
// which its own may share: they keep their arrival where they stand.

#mma = #tessel.mma<warpsPerCTA = [8, 1]>
#blk = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]>

// CHECK-LABEL: func.func @loops_in_a_loop
// CHECK: %[[FULL:.*]] = tessel.mbarrier_alloc : !tessel.mbarriers<2>
// CHECK-NEXT: %[[FULL2:.*]] = tessel.mbarrier_alloc : !tessel.mbarriers<2>
// CHECK-NEXT: %[[EMPTY:.*]] = tessel.mbarrier_alloc {arrivals = 256 : i32} : !tessel.mbarriers<2>
// CHECK-NEXT: %[[EMPTY2:.*]] = tessel.mbarrier_alloc {arrivals = 256 : i32} : !tessel.mbarriers<2>
// CHECK: scf.for %[[J:.*]] = %[[LB:.*]] to %{{.*}} step %{{.*}} iter_args(%[[COUNT:.*]] = %{{.*}}, %[[COUNT2:.*]] = %{{.*}}) -> (i32, i32)
// CHECK: tessel.local_store
// CHECK: %[[SLOT0:.*]] = arith.remsi
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[J]], %[[LB]] : i32
// CHECK-NEXT: tessel.mbarrier_arrive %[[EMPTY]][%[[SLOT0]]] if %[[FIRST]] : !tessel.mbarriers<2>
// CHECK: scf.for
// CHECK: tessel.mbarrier_arrive %[[EMPTY]][%{{.*}}] if %{{.*}} : !tessel.mbarriers<2>
// CHECK: tessel.mbarrier_wait %[[FULL]]
// CHECK: scf.yield
// CHECK: %[[NEXT:.*]] = arith.addi %[[COUNT]], %{{.*}} : i32
// CHECK: tessel.mbarrier_arrive %[[EMPTY2]][%{{.*}}] if %[[ISSUE2:.*]] : !tessel.mbarriers<2>
// CHECK: scf.for
// CHECK: tessel.mbarrier_wait %[[FULL2]]
// CHECK: scf.yield
// CHECK: %[[TRIPS:.*]] = arith.subi %[[NEXT]], %[[COUNT]] : i32
// CHECK-NEXT: %[[K:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[ROUND:.*]] = arith.addi %[[NEXT]], %[[K]] : i32
// CHECK-NEXT: %[[N:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[SLOT:.*]] = arith.remsi %[[ROUND]], %[[N]] : i32
// CHECK-NEXT: %[[REACH:.*]] = arith.addi %[[TRIPS]], %[[K]] : i32
// CHECK-NEXT: %[[AHEAD:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[FRESH:.*]] = arith.cmpi sge, %[[REACH]], %[[AHEAD]] : i32
// CHECK-NEXT: tessel.mbarrier_arrive %[[EMPTY]][%[[SLOT]]] if %[[FRESH]] : !tessel.mbarriers<2>
// CHECK-NOT: tessel.mbarrier_arrive
// CHECK: tessel.store
// CHECK: } producer {
module attributes {tessel.target = "sm_90a"} {
func.func @loops_in_a_loop(%q: !tessel.tile<128x64xbf16, #blk>, %o: !tessel.tile<128x64x!tessel.ptr<f32>, #mma>, %m: i32, %n: i32, %kd: !tessel.tensor_desc<64x64xbf16>) attributes {tessel.kernel, tessel.num_warps = 8 : i32, tessel.warp_specialize} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %acc0 = tessel.splat %zero : f32 -> !tessel.tile<128x64xf32, #mma>
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<2>
  %full2 = tessel.mbarrier_alloc : !tessel.mbarriers<2>
  %trips = arith.ceildivsi %n, %c64 : i32
  %rounds:2 = scf.for %j = %c0 to %m step %c1 iter_args(%count = %c0, %count2 = %c0) -> (i32, i32) : i32 {
    %a = tessel.local_alloc : !tessel.memdesc<128x64xbf16, order = [1, 0]>
    tessel.local_store %q, %a : !tessel.tile<128x64xbf16, #blk>, !tessel.memdesc<128x64xbf16, order = [1, 0]>
    %buf = tessel.local_alloc : !tessel.memdesc<2x64x64xbf16, order = [1, 0]>
    %first = arith.cmpi slt, %c0, %n : i32
    %r0 = arith.addi %count, %c0 : i32
    %s0 = arith.remsi %r0, %c2 : i32
    %b0 = tessel.memdesc_index %buf[%s0] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
    tessel.tma_load %kd[%c0, %c0], %b0, %full[%s0] if %first : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<2>
    %r = scf.for %iv = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<128x64xf32, #mma>) : i32 {
      %i0 = arith.divsi %iv, %c64 : i32
      %i = arith.addi %i0, %count : i32
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
    %count_next = arith.addi %count, %trips : i32
    %buf2 = tessel.local_alloc : !tessel.memdesc<2x64x64xbf16, order = [1, 0]>
    %r2 = arith.addi %count2, %c0 : i32
    %t0 = arith.remsi %r2, %c2 : i32
    %c0b = tessel.memdesc_index %buf2[%t0] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
    tessel.tma_load %kd[%c0, %c0], %c0b, %full2[%t0] if %first : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<2>
    %r3 = scf.for %iv = %c0 to %c1 step %c1 iter_args(%acc = %r) -> (!tessel.tile<128x64xf32, #mma>) : i32 {
      %h = arith.divsi %count2, %c2 : i32
      %phase = arith.andi %h, %c1 : i32
      tessel.mbarrier_wait %full2[%t0], %phase : !tessel.mbarriers<2>
      %p = tessel.warpgroup_dot %a, %c0b, %acc : !tessel.memdesc<128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma>
      %w = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x64xf32, #mma>
      scf.yield %w : !tessel.tile<128x64xf32, #mma>
    }
    %count2_next = arith.addi %count2, %c1 : i32
    tessel.store %o, %r3 : !tessel.tile<128x64x!tessel.ptr<f32>, #mma>
    scf.yield %count_next, %count2_next : i32, i32
  }
  return
}
}

// -----

// One consumer warpgroup already holds the most registers a thread may:
// no setmaxnreg. Kernels without the attribute, or with no copies, are
// left alone.

// CHECK-LABEL: func.func @one_group
// CHECK: tessel.warp_specialize {consumer_warps = 4 : i32, producer_warps = 4 : i32} consumers {
// Four consumer warpgroups: 640 threads enter with 96 registers, and the
// consumers take what the producer gives back: 112 (not 120).
// CHECK-LABEL: func.func @four_groups
// CHECK: tessel.warp_specialize {consumer_registers = 112 : i32, consumer_warps = 16 : i32, producer_registers = 24 : i32, producer_warps = 4 : i32} consumers {
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
func.func @four_groups(%kd: !tessel.tensor_desc<64x64xbf16>) attributes {tessel.kernel, tessel.num_warps = 16 : i32, tessel.warp_specialize} {
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
