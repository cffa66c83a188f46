// RUN: tessel-opt %s -split-input-file -tessel-rotate-warpgroup-dots | FileCheck %s

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!v = !tessel.memdesc<64x64xbf16, order = [1, 0]>
!buf = !tessel.memdesc<3x64x64xbf16, order = [1, 0]>
!c = !tessel.tile<64x64xf32, #mma>

// Attention's loop: S = Q·Kᵀ, P from S, O = P·V + O · α. The marked P·V dot
// is issued in the next iteration right after S, reading the P and the
// buffer slot the loop now carries (into the first iteration: zeros and
// the slot that iteration reads, computed before the loop, so the first
// late dot adds nothing); the loop yields the accumulator input (O · α)
// instead of the product; after the loop the last P·V, in a branch taken
// if the loop ran (a predicated wgmma would make ptxas serialise them all).
// The late product's wait takes the place of the accumulator's iteration
// argument and keeps the A it reads (P') live.

// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: !tessel.tile<64x64xbf16, #{{.*}}>, %[[BUF:.*]]: !tessel.memdesc<3x64x64xbf16, order = [1, 0]>, %[[LB:.*]]: i32, %[[UB:.*]]: i32, %[[INIT:.*]]: !tessel.tile<64x64xf32, #{{.*}}>)
// CHECK: %[[FIRST:.*]] = arith.remsi %[[LB]], %[[C3:.*]] : i32
// CHECK: %[[Z:.*]] = tessel.splat %{{.*}} : bf16 -> !tessel.tile<64x64xbf16, #{{.*}}>
// CHECK: %[[R:.*]]:3 = scf.for %[[IV:.*]] = %[[LB]] to %[[UB]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]], %[[PP:.*]] = %[[Z]], %[[SP:.*]] = %[[FIRST]]) -> (!tessel.tile<64x64xf32, #{{.*}}>, !tessel.tile<64x64xbf16, #{{.*}}>, i32)
// CHECK: %[[SLOT:.*]] = arith.remsi %[[IV]], %[[C3]]
// CHECK: %[[V:.*]] = tessel.memdesc_index %[[BUF]][%[[SLOT]]]
// CHECK: %[[S:.*]] = tessel.warpgroup_dot %[[Q]], %[[V]], %[[INIT]] :
// CHECK-NEXT: %[[VP:.*]] = tessel.memdesc_index %[[BUF]][%[[SP]]]
// CHECK-NEXT: %[[O:.*]] = tessel.warpgroup_dot %[[PP]], %[[VP]], %[[ACC]] :
// CHECK-NEXT: %[[OW:.*]] = tessel.warpgroup_dot_wait %[[O]] reads %[[PP]] : {{.*}} pendings = 0
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[S]] pendings = 0
// CHECK: %[[P:.*]] = tessel.convert_layout
// CHECK-NEXT: %[[SCALED:.*]] = tessel.binary mul %[[OW]], %[[OW]]
// CHECK-NOT: tessel.warpgroup_dot
// CHECK: scf.yield %[[SCALED]], %[[P]], %[[SLOT]]
// CHECK: %[[RAN:.*]] = arith.cmpi slt, %[[LB]], %[[UB]] : i32
// CHECK-NEXT: %[[LAST:.*]] = scf.if %[[RAN]] -> (!tessel.tile<64x64xf32, #{{.*}}>) {
// CHECK-NEXT: %[[VL:.*]] = tessel.memdesc_index %[[BUF]][%[[R]]#2]
// CHECK-NEXT: %[[L:.*]] = tessel.warpgroup_dot %[[R]]#1, %[[VL]], %[[R]]#0 :
// CHECK-NEXT: %[[LW:.*]] = tessel.warpgroup_dot_wait %[[L]] reads %[[R]]#1 : {{.*}} pendings = 0
// CHECK-NEXT: scf.yield %[[LW]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[R]]#0
// CHECK: return %[[LAST]]
func.func @attention(%q: !a, %buf: !buf, %lb: i32, %ub: i32, %init: !c) -> !c {
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %r = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %init) -> (!c) : i32 {
    %slot = arith.remsi %i, %c3 : i32
    %v = tessel.memdesc_index %buf[%slot] : !buf -> !v
    %s = tessel.warpgroup_dot %q, %v, %init : !a, !v -> !c
    %sw = tessel.warpgroup_dot_wait %s pendings = 0 : !c
    %ph = tessel.cast %sw : !c -> !tessel.tile<64x64xbf16, #mma>
    %p = tessel.convert_layout %ph : !tessel.tile<64x64xbf16, #mma> -> !a
    %scaled = tessel.binary mul %acc, %acc : !c
    %o = tessel.warpgroup_dot %p, %v, %scaled {tessel.rotate} : !a, !v -> !c
    %ow = tessel.warpgroup_dot_wait %o pendings = 0 : !c
    scf.yield %ow : !c
  }
  return %r : !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!v = !tessel.memdesc<64x64xbf16, order = [1, 0]>
!buf = !tessel.memdesc<3x64x64xbf16, order = [1, 0]>
!c = !tessel.tile<64x64xf32, #mma>

// Without an accumulator computed in the body (it is the iteration argument
// itself) the product goes round through the late wait; B through a
// transpose keeps its transpose. An unsigned loop compares unsigned.

// CHECK-LABEL: func.func @plain_accumulator
// CHECK: scf.for unsigned
// CHECK: %[[T:.*]] = tessel.memdesc_trans
// CHECK-NEXT: %[[O:.*]] = tessel.warpgroup_dot %[[A:.*]], %[[T]], %{{.*}} :
// CHECK-NEXT: %[[OW:.*]] = tessel.warpgroup_dot_wait %[[O]] reads %[[A]] : {{.*}} pendings = 0
// CHECK-NEXT: scf.yield %[[OW]], %{{.*}}, %{{.*}}
// CHECK: %[[RAN:.*]] = arith.cmpi ult
// CHECK: scf.if %[[RAN]]
// CHECK: tessel.memdesc_trans
// CHECK-NEXT: tessel.warpgroup_dot
func.func @plain_accumulator(%buf: !buf, %lb: i32, %ub: i32, %init: !c, %a0: !a) -> !c {
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %r = scf.for unsigned %i = %lb to %ub step %c1 iter_args(%acc = %init) -> (!c) : i32 {
    %slot = arith.remui %i, %c3 : i32
    %v = tessel.memdesc_index %buf[%slot] : !buf -> !v
    %vt = tessel.memdesc_trans %v : !v -> !tessel.memdesc<64x64xbf16, order = [0, 1]>
    %p = tessel.binary add %a0, %a0 : !a
    %o = tessel.warpgroup_dot %p, %vt, %acc {tessel.rotate} : !a, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !c
    %ow = tessel.warpgroup_dot_wait %o pendings = 0 : !c
    scf.yield %ow : !c
  }
  return %r : !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!v = !tessel.memdesc<64x64xbf16, order = [1, 0]>
!c = !tessel.tile<64x64xf32, #mma>

// Left as they are (the mark removed): a product also read in the body, a
// B that is not a slot of a buffer from outside the loop, a slot that the
// first iteration cannot be computed before the loop, and an A in shared
// memory (the loop would carry A in registers).

// CHECK-LABEL: func.func @not_rotated
// CHECK-NOT: tessel.rotate
// CHECK-NOT: if
// CHECK: scf.yield
// CHECK-NOT: tessel.warpgroup_dot
// CHECK: return
func.func @not_rotated(%a: !a, %b: !v, %lb: i32, %ub: i32, %init: !c) -> (!c, !c) {
  %c1 = arith.constant 1 : i32
  %r:2 = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %init, %acc2 = %init) -> (!c, !c) : i32 {
    %p = tessel.binary add %a, %a : !a
    %o = tessel.warpgroup_dot %p, %b, %acc {tessel.rotate} : !a, !v -> !c
    %ow = tessel.warpgroup_dot_wait %o pendings = 0 : !c
    %twice = tessel.binary add %ow, %ow : !c
    %o2 = tessel.warpgroup_dot %p, %b, %acc2 {tessel.rotate} : !a, !v -> !c
    %ow2 = tessel.warpgroup_dot_wait %o2 pendings = 0 : !c
    scf.yield %twice, %ow2 : !c, !c
  }
  return %r#0, %r#1 : !c, !c
}

// CHECK-LABEL: func.func @carried_slot
// CHECK-NOT: tessel.rotate
// CHECK-NOT: if
// CHECK: scf.yield
// CHECK-NOT: tessel.warpgroup_dot
// CHECK: return
func.func @carried_slot(%a: !a, %buf: !tessel.memdesc<3x64x64xbf16, order = [1, 0]>, %lb: i32, %ub: i32, %init: !c) -> !c {
  %c1 = arith.constant 1 : i32
  %r:2 = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %init, %slot = %c1) -> (!c, i32) : i32 {
    %p = tessel.binary add %a, %a : !a
    %v = tessel.memdesc_index %buf[%slot] : !tessel.memdesc<3x64x64xbf16, order = [1, 0]> -> !v
    %o = tessel.warpgroup_dot %p, %v, %acc {tessel.rotate} : !a, !v -> !c
    %ow = tessel.warpgroup_dot_wait %o pendings = 0 : !c
    scf.yield %ow, %i : !c, i32
  }
  return %r#0 : !c
}

// CHECK-LABEL: func.func @shared_a
// CHECK-NOT: tessel.rotate
// CHECK-NOT: if
// CHECK: scf.yield
// CHECK-NOT: tessel.warpgroup_dot
// CHECK: return
func.func @shared_a(%a: !tessel.memdesc<64x64xbf16, order = [1, 0]>, %buf: !tessel.memdesc<3x64x64xbf16, order = [1, 0]>, %lb: i32, %ub: i32, %init: !c) -> !c {
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %r = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %init) -> (!c) : i32 {
    %slot = arith.remsi %i, %c3 : i32
    %v = tessel.memdesc_index %buf[%slot] : !tessel.memdesc<3x64x64xbf16, order = [1, 0]> -> !v
    %o = tessel.warpgroup_dot %a, %v, %acc {tessel.rotate} : !tessel.memdesc<64x64xbf16, order = [1, 0]>, !v -> !c
    %ow = tessel.warpgroup_dot_wait %o pendings = 0 : !c
    scf.yield %ow : !c
  }
  return %r : !c
}
