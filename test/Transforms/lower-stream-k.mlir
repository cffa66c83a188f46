// RUN: tessel-opt %s -split-input-file -tessel-lower-stream-k -verify-diagnostics | FileCheck %s

// A unit's partial state is a tile and a scalar: each gets a workspace
// pointer, then the flags; the kernel becomes persistent.

// CHECK-LABEL: func.func @sum
// CHECK-SAME: %[[OUT:[^:]*]]: !tessel.ptr<f32>, %[[UNITS:[^:]*]]: i32, %[[ITERS:[^:]*]]: i32,
// CHECK-SAME: %[[WS0:[^:]*]]: !tessel.ptr<f32>, %[[WS1:[^:]*]]: !tessel.ptr<i32>, %[[FLAGS:[^:]*]]: !tessel.ptr<i32>)
// CHECK-SAME: tessel.launch = "persistent"
// CHECK-SAME: tessel.workspace = array<i64: 8, 1, 1>
func.func @sum(%out: !tessel.ptr<f32>, %units: i32, %iters: i32) attributes {tessel.kernel} {
  // This program's iterations: [p*T/G, (p+1)*T/G), T = units * iters, in i64,
  // computed as p*(T/G) + p*(T%G)/G.
  // CHECK: %[[P32:.*]] = tessel.program_id 0
  // CHECK: %[[P:.*]] = arith.extsi %[[P32]] : i32 to i64
  // CHECK: %[[G32:.*]] = tessel.num_programs 0
  // CHECK: %[[G:.*]] = arith.extsi %[[G32]] : i32 to i64
  // Fewer than one iteration counts as one empty slot: iters' = max(iters, 1).
  // CHECK: %[[IT0:.*]] = arith.extsi %[[ITERS]]
  // CHECK: %[[BODYIT:.*]] = arith.maxsi %[[IT0]], %{{.*}} : i64
  // CHECK: %[[IT:.*]] = arith.maxsi %[[BODYIT]], %{{.*}} : i64
  // CHECK: %[[U:.*]] = arith.extsi %[[UNITS]]
  // CHECK: %[[T:.*]] = arith.muli %[[U]], %[[IT]] : i64
  // CHECK: %[[QUOT:.*]] = arith.divsi %[[T]], %[[G]]
  // CHECK: %[[REM:.*]] = arith.remsi %[[T]], %[[G]]
  // CHECK: %[[WHOLE:.*]] = arith.muli %[[P]], %[[QUOT]]
  // CHECK: %[[PR:.*]] = arith.muli %[[P]], %[[REM]]
  // CHECK: %[[PART:.*]] = arith.divsi %[[PR]], %[[G]]
  // CHECK: %[[START:.*]] = arith.addi %[[WHOLE]], %[[PART]]
  // CHECK: %[[FIRST:.*]] = arith.divsi %[[START]], %[[IT]]
  // CHECK: %[[LAST:.*]] = arith.select
  // CHECK: scf.for %[[UNIT:.*]] = %[[FIRST]] to %[[LAST]] step
  // CHECK: %[[UB:.*]] = arith.muli %[[UNIT]], %[[IT]]
  // The body runs on this program's slice of the unit.
  // CHECK: tessel.splat
  // CHECK: %[[HOST:.*]] = arith.cmpi sle, %[[START]], %[[UB]]
  // CHECK: scf.if %[[HOST]] {
  // The host merges its peers' partials in order, then runs the epilogue.
  // Peers that own no iteration (more programs than iterations) are skipped.
  // CHECK: %[[PEERS:.*]]:2 = scf.for %[[Q:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
  // CHECK: %[[NONEMPTY:.*]] = arith.cmpi slt
  // CHECK: scf.if %[[NONEMPTY]]
  // CHECK: %[[QFLAG:.*]] = tessel.addptr %[[FLAGS]], %[[Q]]
  // CHECK: tessel.flag_wait %[[QFLAG]]
  // CHECK: tessel.load
  // CHECK: tessel.load
  // CHECK: tessel.binary add
  // CHECK: arith.addi
  // CHECK: scf.yield
  // CHECK: arith.sitofp %[[PEERS]]#1
  // CHECK: tessel.store
  // Other programs publish their partial state and set their flag.
  // CHECK: } else {
  // CHECK: tessel.addptr %[[WS0]]
  // CHECK: tessel.store
  // CHECK: tessel.addptr %[[WS1]]
  // CHECK: tessel.store
  // CHECK: %[[PFLAG:.*]] = tessel.addptr %[[FLAGS]], %[[P]]
  // CHECK: tessel.flag_signal %[[PFLAG]]
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

// multiple_of hints stay on the parameters; the workspace and flags get none.
// CHECK-LABEL: func.func @hinted
// CHECK-SAME: (%{{[^:]*}}: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64}, %{{[^:]*}}: i32, %{{[^:]*}}: i32 {tessel.multiple_of = 8 : i64},
// CHECK-SAME: %{{[^:]*}}: !tessel.ptr<i32>, %{{[^:]*}}: !tessel.ptr<i32>)
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
