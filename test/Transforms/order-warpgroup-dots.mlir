// RUN: tessel-opt %s -split-input-file -tessel-order-warpgroup-dots | FileCheck %s
// RUN: tessel-opt %s -split-input-file -tessel-order-warpgroup-dots \
// RUN:   -tessel-defer-warpgroup-waits | FileCheck %s --check-prefix=WAITS

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!b = !tessel.memdesc<64x64xbf16, order = [0, 1]>
!c = !tessel.tile<64x64xf32, #mma>
!slots = !tessel.memdesc<2x64x64xbf16, order = [0, 1]>

// Dots are issued as early as their operands allow (the backward's shape):
// the product needed second (%q, dPᵀ) moves up with the view of its slot,
// past the first one's wait and the math on it, and past the accumulating
// dot needed only at the end (%acc, dV), but not past the first dot.
// CHECK-LABEL: func.func @issue_early
// CHECK: %[[P:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[V:.*]] = tessel.memdesc_index
// CHECK-NEXT: %[[Q:.*]] = tessel.warpgroup_dot %{{.*}}, %[[V]]
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[P]] pendings = 0
// CHECK-NEXT: %[[X:.*]] = tessel.binary mul
// CHECK-NEXT: %[[ACC:.*]] = tessel.warpgroup_dot %{{.*}}, %{{.*}}, %[[X]]
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[ACC]] pendings = 0
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[Q]] pendings = 0
// CHECK-NEXT: tessel.binary add
// With the waits deferred, dPᵀ's leaves the accumulation pending.
// WAITS-LABEL: func.func @issue_early
// WAITS: %[[P:.*]] = tessel.warpgroup_dot
// WAITS: %[[Q:.*]] = tessel.warpgroup_dot
// WAITS-NEXT: tessel.warpgroup_dot_wait %[[P]] pendings = 1
// WAITS: %[[ACC:.*]] = tessel.warpgroup_dot
// WAITS-NEXT: tessel.warpgroup_dot_wait %[[Q]] pendings = 1
// WAITS-NEXT: tessel.binary add
// WAITS-NEXT: tessel.warpgroup_dot_wait %[[ACC]] pendings = 0
func.func @issue_early(%a: !a, %b: !b, %c: !c, %slots: !slots, %i: i32) -> (!c, !c) {
  %p = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !c
  %x = tessel.binary mul %r, %r : !c
  %acc = tessel.warpgroup_dot %a, %b, %x : !a, !b -> !c
  %accw = tessel.warpgroup_dot_wait %acc pendings = 0 : !c
  %v = tessel.memdesc_index %slots[%i] : !slots -> !b
  %q = tessel.warpgroup_dot %a, %v, %c : !a, !b -> !c
  %qw = tessel.warpgroup_dot_wait %q pendings = 0 : !c
  %y = tessel.binary add %qw, %x : !c
  return %y, %accw : !c, !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!b = !tessel.memdesc<64x64xbf16, order = [0, 1]>
!c = !tessel.tile<64x64xf32, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>

// The backward's end: dK (an accumulation, needed at the end) is issued
// after dQ, whose operand is stored and fenced in between; the store is to
// a buffer dK does not read. dQ's wait then leaves dK running while its
// product goes to memory.
// CHECK-LABEL: func.func @issue_after_next
// CHECK: tessel.local_alloc
// CHECK-NEXT: tessel.local_store
// CHECK-NEXT: tessel.barrier
// CHECK-NEXT: %[[DQ:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[DK:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[DK]] pendings = 0
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[DQ]] pendings = 0
// WAITS-LABEL: func.func @issue_after_next
// WAITS: %[[DQ:.*]] = tessel.warpgroup_dot
// WAITS-NEXT: %[[DK:.*]] = tessel.warpgroup_dot
// WAITS-NEXT: tessel.warpgroup_dot_wait %[[DQ]] pendings = 1
// WAITS-NEXT: tessel.binary add
// WAITS-NEXT: tessel.warpgroup_dot_wait %[[DK]] pendings = 0
func.func @issue_after_next(%a: !a, %b: !b, %c: !c, %ds: !tessel.tile<64x64xbf16>) -> (!c, !c) {
  %dk = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %dkw = tessel.warpgroup_dot_wait %dk pendings = 0 : !c
  %buf = tessel.local_alloc : !m
  tessel.local_store %ds, %buf : !tessel.tile<64x64xbf16>, !m
  tessel.barrier
  %dq = tessel.warpgroup_dot %a, %buf, %c : !a, !m -> !c
  %dqw = tessel.warpgroup_dot_wait %dq pendings = 0 : !c
  %x = tessel.binary add %dqw, %dqw : !c
  return %x, %dkw : !c, !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!c = !tessel.tile<64x64xf32, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>

// No reordering across a store into the buffer the first dot reads: its
// product would be the new data's.
// CHECK-LABEL: func.func @store_into_operand
// CHECK: %[[FIRST:.*]] = tessel.warpgroup_dot %{{.*}}, %[[BUF:.*]], %
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[FIRST]]
// CHECK-NEXT: tessel.local_store %{{.*}}, %[[BUF]]
// CHECK-NEXT: tessel.warpgroup_dot
func.func @store_into_operand(%a: !a, %c: !c, %t: !tessel.tile<64x64xbf16>) -> (!c, !c) {
  %buf = tessel.local_alloc : !m
  %first = tessel.warpgroup_dot %a, %buf, %c : !a, !m -> !c
  %fw = tessel.warpgroup_dot_wait %first pendings = 0 : !c
  tessel.local_store %t, %buf : !tessel.tile<64x64xbf16>, !m
  %second = tessel.warpgroup_dot %a, %buf, %c : !a, !m -> !c
  %sw = tessel.warpgroup_dot_wait %second pendings = 0 : !c
  %x = tessel.binary add %sw, %sw : !c
  return %x, %fw : !c, !c
}
