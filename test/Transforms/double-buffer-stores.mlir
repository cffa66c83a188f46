// RUN: tessel-opt %s -split-input-file -tessel-double-buffer-stores | FileCheck %s

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
!t = !tessel.tile<64x64xbf16, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>
!mt = !tessel.memdesc<64x64xbf16, order = [0, 1]>
!c = !tessel.tile<64x64xf32, #mma>

// The backward's dSᵀ: stored each iteration, read by a dot waited for in
// the same iteration. Two buffers before the loop, iteration i storing into
// buffer i % 2 without waiting for earlier readers; one barrier before the
// loop.
// CHECK-LABEL: func.func @two_buffers
// CHECK: %[[BUFS:.*]] = tessel.local_alloc : !tessel.memdesc<2x64x64xbf16, order = [1, 0]>
// CHECK-NEXT: tessel.barrier
// CHECK-NEXT: scf.for %[[I:.*]] = %[[LB:.*]] to %{{.*}} step %[[ST:.*]] iter_args
// CHECK: %[[N:.*]] = arith.subi %[[I]], %[[LB]]
// CHECK-NEXT: %[[K:.*]] = arith.divsi %[[N]], %[[ST]]
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[S:.*]] = arith.remsi %[[K]], %[[TWO]]
// CHECK-NEXT: %[[BUF:.*]] = tessel.memdesc_index %[[BUFS]][%[[S]]]
// CHECK-NEXT: tessel.local_store %{{.*}}, %[[BUF]] readers_done
// CHECK-NEXT: tessel.memdesc_trans %[[BUF]]
// CHECK-NOT: tessel.local_alloc
func.func @two_buffers(%t: !t, %b: !mt, %c: !c, %lb: i32, %ub: i32, %st: i32) -> !c {
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %c) -> (!c) : i32 {
    %buf = tessel.local_alloc : !m
    tessel.local_store %t, %buf : !t, !m
    %a = tessel.memdesc_trans %buf : !m -> !mt
    %p = tessel.warpgroup_dot %a, %b, %acc : !mt, !mt -> !c
    %w = tessel.warpgroup_dot_wait %p pendings = 0 : !c
    scf.yield %w : !c
  }
  return %r : !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
!t = !tessel.tile<64x64xbf16, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>
!c = !tessel.tile<64x64xf32, #mma>

// A dot that may still read its buffer in the next iteration (its product
// waited for after the loop) keeps one buffer per iteration, and the store
// its barrier.
// CHECK-LABEL: func.func @read_after_the_iteration
// CHECK-NOT: 2x64x64
// CHECK: scf.for
// CHECK-NEXT: tessel.local_alloc : !tessel.memdesc<64x64xbf16
// CHECK-NEXT: tessel.local_store %{{.*}}, %{{.*}} :
func.func @read_after_the_iteration(%t: !t, %b: !m, %c: !c, %n: i32) -> !c {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (!c) : i32 {
    %buf = tessel.local_alloc : !m
    tessel.local_store %t, %buf : !t, !m
    %p = tessel.warpgroup_dot %buf, %b, %acc : !m, !m -> !c
    scf.yield %p : !c
  }
  %w = tessel.warpgroup_dot_wait %r pendings = 0 : !c
  return %w : !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
!t = !tessel.tile<64x64xbf16, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>

// Read before it is stored (the previous iteration's tile), or stored twice:
// left as it is.
// CHECK-LABEL: func.func @read_before_the_store
// CHECK-NOT: readers_done
func.func @read_before_the_store(%t: !t, %n: i32) -> !t {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %t) -> (!t) : i32 {
    %buf = tessel.local_alloc : !m
    %y = tessel.local_load %buf[0, 0] : !m -> !t
    tessel.local_store %x, %buf : !t, !m
    tessel.local_store %y, %buf : !t, !m
    scf.yield %y : !t
  }
  return %r : !t
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
!t = !tessel.tile<64x64xbf16, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>

// Read by the threads alone (an mma.sync kernel's staged tile): one buffer.
// CHECK-LABEL: func.func @threads_read
// CHECK-NOT: readers_done
func.func @threads_read(%t: !t, %n: i32) -> !t {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %t) -> (!t) : i32 {
    %buf = tessel.local_alloc : !m
    tessel.local_store %x, %buf : !t, !m
    %y = tessel.local_load %buf[0, 0] : !m -> !t
    scf.yield %y : !t
  }
  return %r : !t
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
!t = !tessel.tile<128x256xbf16, #mma>
!m = !tessel.memdesc<128x256xbf16, order = [1, 0]>
!b = !tessel.memdesc<256x64xbf16, order = [1, 0]>
!c = !tessel.tile<128x64xf32, #mma>

// Two buffers of 64 KB would take an sm_80 kernel past its 99 KB: one stays.
// CHECK-LABEL: func.func @too_big
// CHECK-NOT: readers_done
// CHECK-NOT: tessel.barrier
func.func @too_big(%t: !t, %b: !b, %c: !c, %n: i32) -> !c {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> (!c) : i32 {
    %buf = tessel.local_alloc : !m
    tessel.local_store %t, %buf : !t, !m
    %p = tessel.warpgroup_dot %buf, %b, %acc : !m, !b -> !c
    %w = tessel.warpgroup_dot_wait %p pendings = 0 : !c
    scf.yield %w : !c
  }
  return %r : !c
}
