// RUN: tessel-opt %s -split-input-file -tessel-lower-stream-k -verify-diagnostics | FileCheck %s

// A unit's partial state is a tile and a scalar: each gets a workspace
// pointer, then the flags; the kernel becomes persistent.

// CHECK-LABEL: func.func @sum
// CHECK-SAME: %[[OUT:[^:]*]]: !tessel.ptr<f32>, %[[UNITS:[^:]*]]: i32, %[[ITERS:[^:]*]]: i32,
// CHECK-SAME: %[[WS0:[^:]*]]: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %[[WS1:[^:]*]]: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64}, %[[FLAGS:[^:]*]]: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64})
// CHECK-SAME: tessel.launch = "persistent"
// CHECK-SAME: tessel.workspace = array<i64: 8, 1, 1>
func.func @sum(%out: !tessel.ptr<f32>, %units: i32, %iters: i32) attributes {tessel.kernel} {
  // This program's iterations: [p*T/g, (p+1)*T/g), T = units * iters,
  // over g programs, in i64, computed as p*(T/g) + p*(T%g)/g with p cut to
  // g (programs from g on own nothing). g = units * S, S = max(1,
  // min(G / units, iters)) programs per unit (split-K's chunks), where
  // 0 < units * S <= G and no range gets longer than over max(min(G, T), 1)
  // programs; else the latter.
  // CHECK: %[[P32:.*]] = tessel.program_id 0
  // CHECK: %[[P:.*]] = arith.extsi %[[P32]] : i32 to i64
  // CHECK: %[[G32:.*]] = tessel.num_programs 0
  // CHECK: %[[GRID:.*]] = arith.extsi %[[G32]] : i32 to i64
  // Fewer than one iteration counts as one empty slot: iters' = max(iters, 1).
  // CHECK: %[[IT0:.*]] = arith.extsi %[[ITERS]]
  // CHECK: %[[BODYIT:.*]] = arith.maxsi %[[IT0]], %{{.*}} : i64
  // CHECK: %[[IT:.*]] = arith.maxsi %[[BODYIT]], %{{.*}} : i64
  // CHECK: %[[U:.*]] = arith.extsi %[[UNITS]]
  // CHECK: %[[T:.*]] = arith.muli %[[U]], %[[IT]] : i64
  // CHECK: %[[GT:.*]] = arith.minsi %[[GRID]], %[[T]] : i64
  // CHECK: %[[EVEN:.*]] = arith.maxsi %[[GT]], %{{.*}} : i64
  // CHECK: %[[U1:.*]] = arith.maxsi %[[U]], %{{.*}} : i64
  // CHECK: %[[GU:.*]] = arith.divsi %[[GRID]], %[[U1]] : i64
  // CHECK: %[[SC:.*]] = arith.minsi %[[GU]], %[[IT]] : i64
  // CHECK: %[[S:.*]] = arith.maxsi %[[SC]], %{{.*}} : i64
  // CHECK: %[[ALIGNED:.*]] = arith.muli %[[U]], %[[S]] : i64
  // CHECK: %[[ASPAN:.*]] = arith.ceildivsi %[[IT]], %[[S]] : i64
  // CHECK: %[[ESPAN:.*]] = arith.ceildivsi %[[T]], %[[EVEN]] : i64
  // CHECK: %[[SOME:.*]] = arith.cmpi slt, %{{.*}}, %[[ALIGNED]] : i64
  // CHECK: %[[FITS:.*]] = arith.cmpi sle, %[[ALIGNED]], %[[GRID]] : i64
  // CHECK: %[[NOLONGER:.*]] = arith.cmpi sle, %[[ASPAN]], %[[ESPAN]] : i64
  // CHECK: %[[BOTH:.*]] = arith.andi %[[SOME]], %[[FITS]] : i1
  // CHECK: %[[TAKE:.*]] = arith.andi %[[BOTH]], %[[NOLONGER]] : i1
  // CHECK: %[[G:.*]] = arith.select %[[TAKE]], %[[ALIGNED]], %[[EVEN]] : i64
  // CHECK: %[[QUOT:.*]] = arith.divsi %[[T]], %[[G]]
  // CHECK: %[[REM:.*]] = arith.remsi %[[T]], %[[G]]
  // CHECK: %[[PC:.*]] = arith.minsi %[[P]], %[[G]]
  // CHECK: %[[WHOLE:.*]] = arith.muli %[[PC]], %[[QUOT]]
  // CHECK: %[[PR:.*]] = arith.muli %[[PC]], %[[REM]]
  // CHECK: %[[PART:.*]] = arith.divsi %[[PR]], %[[G]]
  // CHECK: %[[START:.*]] = arith.addi %[[WHOLE]], %[[PART]]
  // CHECK: %[[NEXT:.*]] = arith.addi %[[P]]
  // CHECK: arith.minsi %[[NEXT]], %[[G]]
  // CHECK: %[[FIRST:.*]] = arith.divsi %[[START]], %[[IT]]
  // CHECK: %[[LAST:.*]] = arith.select
  // CHECK: scf.for %[[UNIT:.*]] = %[[FIRST]] to %[[LAST]] step
  // CHECK: %[[UB:.*]] = arith.muli %[[UNIT]], %[[IT]]
  // The body runs on this program's slice of the unit.
  // CHECK: %[[UE:.*]] = arith.addi %[[UB]], %[[IT]]
  // CHECK: tessel.splat
  // CHECK: %[[HOST:.*]] = arith.cmpi sle, %[[START]], %[[UB]]
  // CHECK: scf.if %[[HOST]] {
  // The host waits once for its peers' arrivals, counted on its own flag:
  // the programs up to the owner of the unit's last iteration, each of which
  // owns an iteration.
  // CHECK: %[[FIRSTPEER:.*]] = arith.addi %[[P]]
  // CHECK: %[[UEG:.*]] = arith.muli %[[UE]], %[[G]]
  // CHECK: %[[PEEREND:.*]] = arith.ceildivsi %[[UEG]], %[[T]]
  // CHECK: %[[ARRIVALS:.*]] = arith.subi %[[PEEREND]], %[[FIRSTPEER]]
  // CHECK: %[[ANY:.*]] = arith.cmpi slt, %{{.*}}, %[[ARRIVALS]]
  // CHECK: scf.if %[[ANY]] {
  // CHECK: %[[N:.*]] = arith.trunci %[[ARRIVALS]] : i64 to i32
  // CHECK: %[[OWN:.*]] = tessel.addptr %[[FLAGS]], %[[P]]
  // CHECK: tessel.flag_wait %[[OWN]] count %[[N]]
  // Then it merges their partials in order, in a software pipeline: slots
  // q .. q+7 are loaded ahead (masked off from the end on), and a step merges
  // eight, each from its buffer, refilling the buffer with the slot eight
  // ahead; the buffers go round the loop in place.
  // CHECK: %[[IN0:.*]] = arith.cmpi slt, %[[FIRSTPEER]], %[[PEEREND]]
  // CHECK: %[[MASK0:.*]] = tessel.splat %[[IN0]] : i1 -> !tessel.tile<8xi1>
  // CHECK: %[[B0:.*]] = tessel.load %{{.*}} mask %[[MASK0]] : !tessel.tile<8x!tessel.ptr<f32>>
  // CHECK: %[[C0:.*]] = tessel.load %{{.*}} mask %[[IN0]] : !tessel.ptr<i32>
  // CHECK-COUNT-14: tessel.load
  // CHECK-NOT: tessel.load
  // CHECK: %[[DEPTH:.*]] = arith.constant 8 : i64
  // CHECK: %[[FOLD:.*]]:18 = scf.for %[[Q:.*]] = %[[FIRSTPEER]] to %[[PEEREND]] step %[[DEPTH]] iter_args(%[[A0:[^ ]*]] = %{{.*}}, %[[A1:[^ ]*]] = %{{.*}}, %[[BUF0:[^ ]*]] = %[[B0]], %[[BUF1:[^ ]*]] = %[[C0]],
  // The step's first slot is always merged, the others while below the end.
  // CHECK: %[[M0:.*]] = tessel.binary add %[[A0]], %[[BUF0]]
  // CHECK: %[[M1:.*]] = arith.addi %[[A1]], %[[BUF1]]
  // CHECK: %[[AHEAD:.*]] = arith.addi %[[Q]]
  // CHECK: %[[INA:.*]] = arith.cmpi slt, %[[AHEAD]], %[[PEEREND]]
  // CHECK: %[[R0:.*]] = tessel.load %{{.*}} mask %{{.*}} : !tessel.tile<8x!tessel.ptr<f32>>
  // CHECK: %[[R1:.*]] = tessel.load %{{.*}} mask %[[INA]] : !tessel.ptr<i32>
  // CHECK: %[[Q1:.*]] = arith.addi %[[Q]]
  // CHECK: %[[IN1:.*]] = arith.cmpi slt, %[[Q1]], %[[PEEREND]]
  // CHECK: scf.if %[[IN1]] -> (!tessel.tile<8xf32>, i32) {
  // CHECK: tessel.binary add %[[M0]]
  // CHECK: } else {
  // CHECK: scf.yield %[[M0]], %[[M1]]
  // CHECK-COUNT-6: scf.if
  // CHECK: scf.yield %{{[^ ]*}}, %{{[^ ]*}}, %[[R0]], %[[R1]], %{{.*}} : !tessel.tile<8xf32>, i32,
  // CHECK: arith.sitofp %[[FOLD]]#1
  // CHECK: tessel.store
  // Other programs publish their partial state and count one arrival on
  // their host's flag: the owner of the unit's first iteration.
  // CHECK: } else {
  // CHECK: tessel.addptr %[[WS0]]
  // CHECK: tessel.store
  // CHECK: tessel.addptr %[[WS1]]
  // CHECK: tessel.store
  // CHECK: %[[UB1:.*]] = arith.addi %[[UB]]
  // CHECK: %[[UBG:.*]] = arith.muli %[[UB1]], %[[G]]
  // CHECK: %[[CEIL:.*]] = arith.ceildivsi %[[UBG]], %[[T]]
  // CHECK: %[[OWNER:.*]] = arith.subi %[[CEIL]]
  // CHECK: %[[HFLAG:.*]] = tessel.addptr %[[FLAGS]], %[[OWNER]]
  // CHECK: tessel.flag_signal %[[HFLAG]]
  // CHECK-NOT: tessel.stream_k
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %n = arith.subi %end, %begin : i32
    %t = tessel.splat %n : i32 -> !tessel.tile<8xi32>
    %f = tessel.cast %t : !tessel.tile<8xi32> -> !tessel.tile<8xf32>
    tessel.yield %f, %n : !tessel.tile<8xf32>, i32
  } merge {
  ^bb0(%a: !tessel.tile<8xf32>, %x: i32, %b: !tessel.tile<8xf32>, %y: i32):
    %s = tessel.binary add %a, %b : !tessel.tile<8xf32>
    %z = arith.addi %x, %y : i32
    tessel.yield %s, %z : !tessel.tile<8xf32>, i32
  } epilogue {
  ^bb0(%unit: i32, %s: !tessel.tile<8xf32>, %n: i32):
    %p = tessel.addptr %out, %unit : !tessel.ptr<f32>, i32
    %v = arith.sitofp %n : i32 to f32
    tessel.store %p, %v : !tessel.ptr<f32>
    tessel.yield
  }
  return
}

// -----

func.func @not_expanded(%units: i32) attributes {tessel.kernel} {
  // expected-error @below {{yields an online state; run tessel-expand-online first}}
  tessel.stream_k units(%units) iters(%units) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %s = tessel.kl_init : !tessel.kl_state<4>
    tessel.yield %s : !tessel.kl_state<4>
  } merge {
  ^bb0(%a: !tessel.kl_state<4>, %b: !tessel.kl_state<4>):
    tessel.yield %a : !tessel.kl_state<4>
  } epilogue {
  ^bb0(%unit: i32, %s: !tessel.kl_state<4>):
    tessel.yield
  }
  return
}

// -----

func.func @nested(%units: i32, %c: i1) attributes {tessel.kernel} {
  scf.if %c {
    // expected-error @below {{must be at the top level of the kernel, not nested in control flow}}
    tessel.stream_k units(%units) iters(%units) body {
    ^bb0(%unit: i32, %begin: i32, %end: i32):
      tessel.yield %begin : i32
    } merge {
    ^bb0(%a: i32, %b: i32):
      tessel.yield %a : i32
    } epilogue {
    ^bb0(%unit: i32, %s: i32):
      tessel.yield
    }
  }
  return
}

// -----

func.func @two(%units: i32) attributes {tessel.kernel} {
  tessel.stream_k units(%units) iters(%units) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    tessel.yield %begin : i32
  } merge {
  ^bb0(%a: i32, %b: i32):
    tessel.yield %a : i32
  } epilogue {
  ^bb0(%unit: i32, %s: i32):
    tessel.yield
  }
  // expected-error @below {{is the second stream_k of kernel 'two'; a kernel holds at most one}}
  tessel.stream_k units(%units) iters(%units) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    tessel.yield %begin : i32
  } merge {
  ^bb0(%a: i32, %b: i32):
    tessel.yield %a : i32
  } epilogue {
  ^bb0(%unit: i32, %s: i32):
    tessel.yield
  }
  return
}

// -----

func.func @not_a_kernel(%units: i32) {
  // expected-error @below {{must be inside a tessel kernel}}
  tessel.stream_k units(%units) iters(%units) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    tessel.yield %begin : i32
  } merge {
  ^bb0(%a: i32, %b: i32):
    tessel.yield %a : i32
  } epilogue {
  ^bb0(%unit: i32, %s: i32):
    tessel.yield
  }
  return
}

// -----

// multiple_of hints stay on the parameters; the workspace and flags start
// 16-byte aligned (the runtime's layout of the workspace).
// CHECK-LABEL: func.func @hinted
// CHECK-SAME: (%{{[^:]*}}: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64}, %{{[^:]*}}: i32, %{{[^:]*}}: i32 {tessel.multiple_of = 8 : i64},
// CHECK-SAME: %{{[^:]*}}: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64}, %{{[^:]*}}: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64})
// CHECK-SAME: tessel.launch = "persistent"
func.func @hinted(%out: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64}, %units: i32, %iters: i32 {tessel.multiple_of = 8 : i64}) attributes {tessel.kernel} {
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    tessel.yield %begin : i32
  } merge {
  ^bb0(%a: i32, %b: i32):
    tessel.yield %a : i32
  } epilogue {
  ^bb0(%unit: i32, %s: i32):
    %p = tessel.addptr %out, %unit : !tessel.ptr<i32>, i32
    tessel.store %p, %s : !tessel.ptr<i32>
    tessel.yield
  }
  return
}


// -----

// With rows, partial states move through the workspace without their padding
// rows: the peers' stores and the host's loads are masked to rows < %rows
// (a column of the rows, broadcast along the other dimensions), masks made
// once, before the loop over units.
// CHECK-LABEL: func.func @live_rows
// CHECK-SAME: (%{{[^:]*}}: i32, %{{[^:]*}}: i32, %[[ROWS:[^:]*]]: i32,
// CHECK: %[[R:.*]] = tessel.arange 0, 16 : !tessel.tile<16xi32>
// CHECK: %[[RS:.*]] = tessel.splat %[[ROWS]] : i32 -> !tessel.tile<16xi32>
// CHECK: %[[LIVE:.*]] = tessel.cmp lt %[[R]], %[[RS]] : !tessel.tile<16xi32> -> !tessel.tile<16xi1>
// CHECK: %[[COL:.*]] = tessel.expand_dims %[[LIVE]] {axis = 1 : i32} : !tessel.tile<16xi1> -> !tessel.tile<16x1xi1>
// CHECK: %[[LIVE2:.*]] = tessel.broadcast %[[COL]] : !tessel.tile<16x1xi1> -> !tessel.tile<16x8xi1>
// CHECK: scf.for
// CHECK: scf.if
// CHECK: %[[IN:.*]] = tessel.binary and %{{.*}}, %[[LIVE2]] : !tessel.tile<16x8xi1>
// CHECK: tessel.load %{{.*}} mask %[[IN]] : !tessel.tile<16x8x!tessel.ptr<f32>>
// CHECK: %[[IN1:.*]] = tessel.binary and %{{.*}}, %[[LIVE]] : !tessel.tile<16xi1>
// CHECK: tessel.load %{{.*}} mask %[[IN1]] : !tessel.tile<16x!tessel.ptr<f32>>
// CHECK: } else {
// CHECK: tessel.store %{{.*}}, %{{.*}} mask %[[LIVE2]] : !tessel.tile<16x8x!tessel.ptr<f32>>
// CHECK: tessel.store %{{.*}}, %{{.*}} mask %[[LIVE]] : !tessel.tile<16x!tessel.ptr<f32>>
// CHECK: tessel.flag_signal
func.func @live_rows(%units: i32, %iters: i32, %rows: i32) attributes {tessel.kernel} {
  tessel.stream_k units(%units) iters(%iters) rows(%rows) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %f = arith.sitofp %begin : i32 to f32
    %a = tessel.splat %f : f32 -> !tessel.tile<16x8xf32>
    %m = tessel.splat %f : f32 -> !tessel.tile<16xf32>
    tessel.yield %a, %m : !tessel.tile<16x8xf32>, !tessel.tile<16xf32>
  } merge {
  ^bb0(%a: !tessel.tile<16x8xf32>, %m: !tessel.tile<16xf32>, %b: !tessel.tile<16x8xf32>, %n: !tessel.tile<16xf32>):
    %s = tessel.binary add %a, %b : !tessel.tile<16x8xf32>
    %t = tessel.binary max %m, %n : !tessel.tile<16xf32>
    tessel.yield %s, %t : !tessel.tile<16x8xf32>, !tessel.tile<16xf32>
  } epilogue {
  ^bb0(%unit: i32, %a: !tessel.tile<16x8xf32>, %m: !tessel.tile<16xf32>):
    tessel.yield
  }
  return
}
