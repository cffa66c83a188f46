// RUN: tessel-opt %s -split-input-file -tessel-defer-warpgroup-waits | FileCheck %s

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!b = !tessel.memdesc<64x64xbf16, order = [0, 1]>
!c = !tessel.tile<64x64xf32, #mma>

// The first product is needed only after the second dot is issued: its wait
// moves past that dot and leaves it pending (one group).
// CHECK-LABEL: func.func @overlap
// CHECK: %[[P:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[Q:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[R:.*]] = tessel.warpgroup_dot_wait %[[P]] pendings = 1
// CHECK-NEXT: tessel.binary add %[[R]], %[[R]]
// CHECK-NEXT: %[[S:.*]] = tessel.warpgroup_dot_wait %[[Q]] pendings = 0
func.func @overlap(%a: !a, %b: !b, %c: !c) -> (!c, !c) {
  %p = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !c
  %q = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %x = tessel.binary add %r, %r : !c
  %s = tessel.warpgroup_dot_wait %q pendings = 0 : !c
  return %x, %s : !c, !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!b = !tessel.memdesc<64x64xbf16, order = [0, 1]>
!c = !tessel.tile<64x64xf32, #mma>

// A wait that reaches the wait of a younger dot joins it.
// CHECK-LABEL: func.func @join
// CHECK: %[[P:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[Q:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[W:.*]]:2 = tessel.warpgroup_dot_wait %[[Q]], %[[P]] pendings = 0
// CHECK-NEXT: return %[[W]]#1, %[[W]]#0
func.func @join(%a: !a, %b: !b, %c: !c) -> (!c, !c) {
  %p = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !c
  %q = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %s = tessel.warpgroup_dot_wait %q pendings = 0 : !c
  return %r, %s : !c, !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!b = !tessel.memdesc<64x64xbf16, order = [0, 1]>
!c = !tessel.tile<64x64xf32, #mma>

// Where they stop: a use (the next dot accumulates into the product), an
// allocation or a write of shared memory that may take or be B's bytes (B
// must stay until the dot is done; here B is an argument, any buffer), an
// op with regions that does more than compute.
// CHECK-LABEL: func.func @stops
// CHECK: %[[P:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[R:.*]] = tessel.warpgroup_dot_wait %[[P]] pendings = 0
// CHECK-NEXT: %[[Q:.*]] = tessel.warpgroup_dot %{{.*}}, %{{.*}}, %[[R]]
// CHECK-NEXT: %[[S:.*]] = tessel.warpgroup_dot_wait %[[Q]] pendings = 0
// CHECK-NEXT: tessel.local_alloc
// CHECK-NEXT: tessel.local_store
// CHECK: %[[T:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[T]] pendings = 0
// CHECK-NEXT: scf.if
func.func @stops(%a: !a, %b: !b, %c: !c, %t: !tessel.tile<64x64xbf16>, %flag: i1) -> (!c, !c) {
  %p = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !c
  %q = tessel.warpgroup_dot %a, %b, %r : !a, !b -> !c
  %s = tessel.warpgroup_dot_wait %q pendings = 0 : !c
  %buf = tessel.local_alloc : !tessel.memdesc<64x64xbf16, order = [1, 0]>
  tessel.local_store %t, %buf : !tessel.tile<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>
  %u = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %v = tessel.warpgroup_dot_wait %u pendings = 0 : !c
  scf.if %flag {
    tessel.local_store %t, %buf : !tessel.tile<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>
  }
  return %s, %v : !c, !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!c = !tessel.tile<64x64xf32, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>

// A store to another buffer lets the wait pass (the backward's dK product
// runs while dS is stored); a store into the buffer the dot reads (through
// a view) stops it. An allocation stops it where the new buffer could have
// taken the bytes of one the dot reads (allocated in the same block), and
// lets it pass inside a loop whose dot reads a buffer from outside.
// CHECK-LABEL: func.func @other_buffer
// CHECK: %[[P:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: tessel.local_store
// CHECK-NEXT: arith.constant 0
// CHECK-NEXT: arith.constant 1
// CHECK-NEXT: %[[R:.*]] = tessel.warpgroup_dot_wait %[[P]] pendings = 0
// CHECK-NEXT: tessel.local_alloc
// CHECK: %[[Q:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: tessel.memdesc_index
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[Q]] pendings = 0
// CHECK-NEXT: tessel.local_store
// CHECK: scf.for
// CHECK: %[[L:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: tessel.local_alloc
// CHECK-NEXT: tessel.local_store
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[L]] pendings = 0
// CHECK-NEXT: scf.yield
func.func @other_buffer(%a: !a, %c: !c, %t: !tessel.tile<64x64xbf16>, %n: i32) -> (!c, !c, !c) {
  %x = tessel.local_alloc : !m
  %y = tessel.local_alloc : !m
  %p = tessel.warpgroup_dot %a, %x, %c : !a, !m -> !c
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !c
  tessel.local_store %t, %y : !tessel.tile<64x64xbf16>, !m
  %bufs = tessel.local_alloc : !tessel.memdesc<2x64x64xbf16, order = [1, 0]>
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %b0 = tessel.memdesc_index %bufs[%zero] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !m
  %q = tessel.warpgroup_dot %a, %b0, %r : !a, !m -> !c
  %s = tessel.warpgroup_dot_wait %q pendings = 0 : !c
  %b1 = tessel.memdesc_index %bufs[%one] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !m
  tessel.local_store %t, %b1 : !tessel.tile<64x64xbf16>, !m
  %l = scf.for %i = %zero to %n step %one iter_args(%acc = %c) -> (!c) : i32 {
    %d = tessel.warpgroup_dot %a, %x, %acc : !a, !m -> !c
    %e = tessel.warpgroup_dot_wait %d pendings = 0 : !c
    %z = tessel.local_alloc : !m
    tessel.local_store %t, %z : !tessel.tile<64x64xbf16>, !m
    scf.yield %e : !c
  }
  return %r, %s, %l : !c, !c, !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!c = !tessel.tile<64x64xf32, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>
!d = !tessel.tensor_desc<64x64xbf16>

// A tensor-map copy writes its buffer like a store: one into another
// buffer lets the wait pass, one into (a slot of) the buffer the dot reads
// stops it.
// CHECK-LABEL: func.func @tma_loads
// CHECK: %[[P:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: tessel.tma_load %{{.*}}, %[[Y:.*]], %{{.*}}[%{{.*}}]
// CHECK-NEXT: %[[R:.*]] = tessel.warpgroup_dot_wait %[[P]] pendings = 0
// CHECK-NEXT: tessel.tma_load %{{.*}}, %[[B1:.*]], %{{.*}}[%{{.*}}]
func.func @tma_loads(%a: !a, %c: !c, %kd: !d, %i: i32) -> !c {
  %bufs = tessel.local_alloc : !tessel.memdesc<2x64x64xbf16, order = [1, 0]>
  %y = tessel.local_alloc : !m
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<2>
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %b0 = tessel.memdesc_index %bufs[%zero] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !m
  %b1 = tessel.memdesc_index %bufs[%one] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !m
  %p = tessel.warpgroup_dot %a, %b0, %c : !a, !m -> !c
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !c
  tessel.tma_load %kd[%i, %zero], %y, %full[%zero] : !d, !m, !tessel.mbarriers<2>
  tessel.tma_load %kd[%i, %zero], %b1, %full[%one] : !d, !m, !tessel.mbarriers<2>
  return %r : !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!b = !tessel.memdesc<64x64xbf16, order = [0, 1]>
!c = !tessel.tile<64x64xf32, #mma>

// A dot issued between another dot and its wait (a rotated loop's late
// P·V after S): the wait of S leaves it pending, and the late dot's wait
// passes the wait of the older S on its way to its own first use.
// CHECK-LABEL: func.func @younger_between
// CHECK: %[[S:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[O:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[SW:.*]] = tessel.warpgroup_dot_wait %[[S]] pendings = 1
// CHECK-NEXT: %[[X:.*]] = tessel.binary add %[[SW]], %[[SW]]
// CHECK-NEXT: %[[OW:.*]] = tessel.warpgroup_dot_wait %[[O]] pendings = 0
// CHECK-NEXT: tessel.binary mul %[[OW]], %[[X]]
func.func @younger_between(%a: !a, %b: !b, %c: !c) -> !c {
  %s = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %o = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %ow = tessel.warpgroup_dot_wait %o pendings = 0 : !c
  %sw = tessel.warpgroup_dot_wait %s pendings = 0 : !c
  %x = tessel.binary add %sw, %sw : !c
  %y = tessel.binary mul %ow, %x : !c
  return %y : !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!c = !tessel.tile<64x64xf32, #mma>
!m = !tessel.memdesc<64x64xbf16, order = [1, 0]>

// The pure ops after a wait that need nothing it returns move above it, in
// order (the next A of attention's rotated loop, computed while P·V runs);
// what reads the product, what depends on that, ops with memory effects and
// what reads their results stay after it. The wait keeps the A it reads.
// CHECK-LABEL: func.func @independent_ops
// CHECK: %[[P:.*]] = tessel.warpgroup_dot %[[A:[^,]*]],
// CHECK-NEXT: %[[E:.*]] = tessel.unary exp2 %[[T:[^ ]*]]
// CHECK-NEXT: %[[N:.*]] = tessel.cast %[[E]]
// CHECK-NEXT: %[[NA:.*]] = tessel.convert_layout %[[N]]
// CHECK-NEXT: %[[BR:.*]] = scf.if %{{.*}} -> (!tessel.tile<64x64xf32, #{{.*}}>) {
// CHECK-NEXT: tessel.binary add %[[T]], %[[T]]
// CHECK: %[[R:.*]] = tessel.warpgroup_dot_wait %[[P]] reads %[[A]] : !tessel.tile<64x64xbf16, #{{.*}}> pendings = 0
// CHECK-NEXT: %[[S:.*]] = tessel.binary mul %[[R]], %[[T]]
// CHECK-NEXT: %[[L:.*]] = tessel.local_load
// CHECK-NEXT: %[[U:.*]] = tessel.binary add %[[L]], %[[T]]
// CHECK-NEXT: %[[IN:.*]] = scf.if %{{.*}} -> (!tessel.tile<64x64xf32, #{{.*}}>) {
// CHECK-NEXT: tessel.binary add %[[R]], %[[R]]
// CHECK: return %[[S]], %[[NA]], %[[U]], %[[BR]], %[[IN]]
func.func @independent_ops(%a: !a, %b: !m, %c: !c, %t: !c, %f: !tessel.memdesc<64x64xf32, order = [1, 0]>, %flag: i1) -> (!c, !a, !c, !c, !c) {
  %p = tessel.warpgroup_dot %a, %b, %c : !a, !m -> !c
  %r = tessel.warpgroup_dot_wait %p reads %a : !a pendings = 0 : !c
  %s = tessel.binary mul %r, %t : !c
  %e = tessel.unary exp2 %t : !c
  %l = tessel.local_load %f [0, 0] : !tessel.memdesc<64x64xf32, order = [1, 0]> -> !c
  %u = tessel.binary add %l, %t : !c
  %n = tessel.cast %e : !c -> !tessel.tile<64x64xbf16, #mma>
  %na = tessel.convert_layout %n : !tessel.tile<64x64xbf16, #mma> -> !a
  %br = scf.if %flag -> (!c) {
    %x = tessel.binary add %t, %t : !c
    scf.yield %x : !c
  } else {
    scf.yield %t : !c
  }
  %in = scf.if %flag -> (!c) {
    %x = tessel.binary add %r, %r : !c
    scf.yield %x : !c
  } else {
    scf.yield %t : !c
  }
  return %s, %na, %u, %br, %in : !c, !a, !c, !c, !c
}

// A wait passes a branch that only computes and needs nothing the wait
// returns (the softmax's choice between a row max and a row min), and
// stops at one that reads the product inside a region.
// CHECK-LABEL: func.func @past_branches
// CHECK: %[[P:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: scf.if
// CHECK: %[[R:.*]] = tessel.warpgroup_dot_wait %[[P]] pendings = 0
// CHECK-NEXT: scf.if
// CHECK-NEXT: tessel.binary add %[[R]], %[[R]]
func.func @past_branches(%a: !a, %b: !m, %c: !c, %t: !c, %flag: i1) -> (!c, !c) {
  %p = tessel.warpgroup_dot %a, %b, %c : !a, !m -> !c
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !c
  %br = scf.if %flag -> (!c) {
    %x = tessel.binary add %t, %t : !c
    scf.yield %x : !c
  } else {
    scf.yield %t : !c
  }
  %in = scf.if %flag -> (!c) {
    %x = tessel.binary add %r, %r : !c
    scf.yield %x : !c
  } else {
    scf.yield %t : !c
  }
  return %br, %in : !c, !c
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
!a = !tessel.tile<64x64xbf16, #opa>
!b = !tessel.memdesc<64x64xbf16, order = [0, 1]>
!c = !tessel.tile<64x64xf32, #mma>

// Waits move youngest first: the younger dot's wait is already down at the
// return when the older one's moves, so that one stops at its own use with
// the younger group pending, instead of joining a wait for both there.
// CHECK-LABEL: func.func @youngest_first
// CHECK: %[[P:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[Q:.*]] = tessel.warpgroup_dot
// CHECK-NEXT: %[[R:.*]] = tessel.warpgroup_dot_wait %[[P]] pendings = 1
// CHECK-NEXT: tessel.binary add %[[R]], %[[R]]
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[Q]] pendings = 0
// CHECK-NEXT: return
func.func @youngest_first(%a: !a, %b: !b, %c: !c) -> (!c, !c) {
  %p = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !c
  %q = tessel.warpgroup_dot %a, %b, %c : !a, !b -> !c
  %s = tessel.warpgroup_dot_wait %q pendings = 0 : !c
  %x = tessel.binary add %r, %r : !c
  return %x, %s : !c, !c
}
