// RUN: tessel-opt %s -split-input-file -tessel-lower-stream-k=strategy=split-k -verify-diagnostics | FileCheck %s

// Split-K: the kernel becomes a split kernel and its combine kernel, linked
// by tessel.then; one workspace pointer per state value and no flags.

// CHECK-LABEL: func.func @sum
// CHECK-SAME: %[[OUT:[^:]*]]: !tessel.ptr<f32>, %[[UNITS:[^:]*]]: i32, %[[ITERS:[^:]*]]: i32,
// CHECK-SAME: %[[WS0:[^:]*]]: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %[[WS1:[^:]*]]: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64})
// CHECK-SAME: tessel.launch = "persistent"
// CHECK-SAME: tessel.then = @sum__combine
// CHECK-SAME: tessel.workspace = array<i64: 8, 1>
func.func @sum(%out: !tessel.ptr<f32>, %units: i32, %iters: i32) attributes {tessel.kernel} {
  // CHECK-NOT: tessel.flag
  // CHECK: %[[P32:.*]] = tessel.program_id 0
  // CHECK: %[[P:.*]] = arith.extsi %[[P32]] : i32 to i64
  // CHECK: %[[G32:.*]] = tessel.num_programs 0
  // CHECK: %[[G:.*]] = arith.extsi %[[G32]] : i32 to i64
  // CHECK: %[[IT0:.*]] = arith.extsi %[[ITERS]]
  // CHECK: %[[BODYIT:.*]] = arith.maxsi %[[IT0]], %{{.*}} : i64
  // CHECK: %[[IT:.*]] = arith.maxsi %[[BODYIT]], %{{.*}} : i64
  // CHECK: %[[U:.*]] = arith.extsi %[[UNITS]]
  // Chunks per unit: S = max(1, min(G / max(units, 1), iters)).
  // CHECK: %[[U1:.*]] = arith.maxsi %[[U]], %{{.*}} : i64
  // CHECK: %[[PER:.*]] = arith.divsi %[[G]], %[[U1]]
  // CHECK: %[[CAP:.*]] = arith.minsi %[[PER]], %[[IT]]
  // CHECK: %[[S:.*]] = arith.maxsi %[[CAP]], %{{.*}} : i64
  // Work items w = unit * S + chunk, grid-strided.
  // CHECK: %[[ITEMS:.*]] = arith.muli %[[U]], %[[S]]
  // CHECK: scf.for %[[W:.*]] = %[[P]] to %[[ITEMS]] step %[[G]]
  // CHECK: %[[UNIT:.*]] = arith.divsi %[[W]], %[[S]]
  // CHECK: %[[US:.*]] = arith.muli %[[UNIT]], %[[S]]
  // CHECK: %[[CHUNK:.*]] = arith.subi %[[W]], %[[US]]
  // Chunk c covers [c * iters / S, (c + 1) * iters / S), clamped to the body's iterations.
  // CHECK: %[[CI:.*]] = arith.muli %[[CHUNK]], %[[IT]]
  // CHECK: %[[CB:.*]] = arith.divsi %[[CI]], %[[S]]
  // CHECK: %[[BEGIN:.*]] = arith.minsi %[[CB]], %[[BODYIT]]
  // CHECK: %[[NEXT:.*]] = arith.addi %[[CHUNK]], %{{.*}}
  // CHECK: %[[NI:.*]] = arith.muli %[[NEXT]], %[[IT]]
  // CHECK: %[[CE:.*]] = arith.divsi %[[NI]], %[[S]]
  // CHECK: %[[END:.*]] = arith.minsi %[[CE]], %[[BODYIT]]
  // CHECK: %[[UNIT32:.*]] = arith.trunci %[[UNIT]]
  // CHECK: %[[BEGIN32:.*]] = arith.trunci %[[BEGIN]]
  // CHECK: %[[END32:.*]] = arith.trunci %[[END]]
  // CHECK: arith.subi %[[END32]], %[[BEGIN32]]
  // One chunk per unit: the split kernel finishes the unit itself.
  // CHECK: %[[WHOLE:.*]] = arith.cmpi eq, %[[S]]
  // CHECK: scf.if %[[WHOLE]] {
  // CHECK: tessel.addptr %[[OUT]], %[[UNIT32]]
  // CHECK: tessel.store
  // Otherwise the partial state goes to workspace slot w.
  // CHECK: } else {
  // CHECK: %[[OFF0:.*]] = arith.muli %[[W]], %{{.*}}
  // CHECK: tessel.addptr %[[WS0]], %[[OFF0]]
  // CHECK: tessel.store
  // CHECK: %[[OFF1:.*]] = arith.muli %[[W]], %{{.*}}
  // CHECK: tessel.addptr %[[WS1]], %[[OFF1]]
  // CHECK: tessel.store
  // CHECK-NOT: tessel.flag
  // CHECK: return

  // The combine kernel: same arguments and workspace, no link of its own.
  // CHECK-LABEL: func.func @sum__combine
  // CHECK-SAME: %[[COUT:[^:]*]]: !tessel.ptr<f32>, %[[CUNITSARG:[^:]*]]: i32, %{{[^:]*}}: i32,
  // CHECK-SAME: %[[CWS0:[^:]*]]: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %[[CWS1:[^:]*]]: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64})
  // CHECK-NOT: tessel.then
  // CHECK-SAME: tessel.workspace = array<i64: 8, 1>
  // CHECK-NOT: tessel.flag
  // CHECK: %[[CP32:.*]] = tessel.program_id 0
  // CHECK: %[[CP:.*]] = arith.extsi %[[CP32]]
  // CHECK: %[[CG32:.*]] = tessel.num_programs 0
  // CHECK: %[[CG:.*]] = arith.extsi %[[CG32]]
  // CHECK: %[[CU:.*]] = arith.extsi %[[CUNITSARG]]
  // CHECK: arith.divsi %[[CG]]
  // CHECK: arith.minsi
  // CHECK: %[[CS:.*]] = arith.maxsi
  // Only S > 1 leaves partials to combine.
  // CHECK: %[[SPLIT:.*]] = arith.cmpi slt, %{{.*}}, %[[CS]]
  // CHECK: %[[CUNITS:.*]] = arith.select %[[SPLIT]], %[[CU]], %{{.*}}
  // CHECK: scf.for %[[CUNIT:.*]] = %[[CP]] to %[[CUNITS]] step %[[CG]]
  // CHECK: %[[FIRST:.*]] = arith.muli %[[CUNIT]], %[[CS]]
  // Chunk 0's state is the fold's start; chunks 1 .. 8 are loaded ahead
  // (masked off from S on), then merged in order, eight a step, each
  // refilling its buffer with the chunk eight ahead.
  // CHECK: %[[IN0:.*]] = arith.cmpi slt, %{{.*}}, %[[CS]]
  // CHECK: %[[SLOT0:.*]] = arith.addi %[[FIRST]]
  // CHECK: arith.muli %[[SLOT0]]
  // CHECK: %[[INIT0:.*]] = tessel.load %{{.*}} mask %{{.*}} : !tessel.tile<8x!tessel.ptr<f32>>
  // CHECK: %[[INIT1:.*]] = tessel.load %{{.*}} mask %[[IN0]] : !tessel.ptr<i32>
  // CHECK: %[[FROM:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
  // CHECK: %[[B0:.*]] = tessel.load %{{.*}} mask %{{.*}} : !tessel.tile<8x!tessel.ptr<f32>>
  // CHECK: %[[B1:.*]] = tessel.load %{{.*}} mask %{{.*}} : !tessel.ptr<i32>
  // CHECK-COUNT-14: tessel.load
  // CHECK-NOT: tessel.load
  // CHECK: %[[DEPTH:.*]] = arith.constant 8 : i64
  // CHECK: %[[FOLD:.*]]:18 = scf.for %[[C:.*]] = %[[FROM]] to %[[CS]] step %[[DEPTH]] iter_args(%[[A0:[^ ]*]] = %[[INIT0]], %[[A1:[^ ]*]] = %[[INIT1]], %[[BUF0:[^ ]*]] = %[[B0]], %[[BUF1:[^ ]*]] = %[[B1]],
  // CHECK: %[[M0:.*]] = tessel.binary add %[[A0]], %[[BUF0]]
  // CHECK: %[[M1:.*]] = arith.addi %[[A1]], %[[BUF1]]
  // CHECK: tessel.load
  // CHECK: tessel.load
  // CHECK: %[[IN1:.*]] = arith.cmpi slt, %{{.*}}, %[[CS]]
  // CHECK: scf.if %[[IN1]] -> (!tessel.tile<8xf32>, i32) {
  // CHECK: tessel.binary add %[[M0]]
  // CHECK-COUNT-6: scf.if
  // CHECK: %[[CUNIT32:.*]] = arith.trunci %[[CUNIT]]
  // CHECK: tessel.addptr %[[COUT]], %[[CUNIT32]]
  // CHECK: arith.sitofp %[[FOLD]]#1
  // CHECK: tessel.store
  // CHECK-NOT: tessel.flag
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

// Code before the stream_k (here a load) runs in both kernels; a name that
// is taken makes the symbol table pick another for the combine kernel.

// CHECK-LABEL: func.func @k(
// CHECK-SAME: tessel.then = @[[COMBINE:k__combine_[0-9]+]]
// CHECK: tessel.load
// CHECK: func.func @[[COMBINE]](
// CHECK: tessel.load
// CHECK: func.func @k__combine(
// CHECK-NOT: tessel.then
func.func @k(%in: !tessel.ptr<i32>, %out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %units = tessel.load %in : !tessel.ptr<i32>
  tessel.stream_k units(%units) iters(%units) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    tessel.yield %begin : i32
  } merge {
  ^bb0(%a: i32, %b: i32):
    tessel.yield %a : i32
  } epilogue {
  ^bb0(%unit: i32, %a: i32):
    %p = tessel.addptr %out, %unit : !tessel.ptr<i32>, i32
    tessel.store %p, %a : !tessel.ptr<i32>
    tessel.yield
  }
  return
}

func.func @k__combine() {
  return
}

// -----

func.func @writes_outside(%out: !tessel.ptr<i32>, %n: i32) attributes {tessel.kernel} {
  // expected-note @below {{written here}}
  tessel.store %out, %n : !tessel.ptr<i32>
  // expected-error @below {{cannot be lowered to split-K: kernel 'writes_outside' writes memory outside the stream_k, which the split and combine kernels would both do}}
  tessel.stream_k units(%n) iters(%n) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    tessel.yield %begin : i32
  } merge {
  ^bb0(%a: i32, %b: i32):
    tessel.yield %a : i32
  } epilogue {
  ^bb0(%unit: i32, %a: i32):
    tessel.yield
  }
  return
}

// -----

// The rules of both strategies hold for split-K too.
func.func @nested(%n: i32, %c: i1) attributes {tessel.kernel} {
  scf.if %c {
    // expected-error @below {{must be at the top level of the kernel, not nested in control flow}}
    tessel.stream_k units(%n) iters(%n) body {
    ^bb0(%unit: i32, %begin: i32, %end: i32):
      tessel.yield %begin : i32
    } merge {
    ^bb0(%a: i32, %b: i32):
      tessel.yield %a : i32
    } epilogue {
    ^bb0(%unit: i32, %a: i32):
      tessel.yield
    }
  }
  return
}

// -----

// multiple_of hints stay on the parameters of both kernels; the workspace
// starts 16-byte aligned in both.
// CHECK-LABEL: func.func @hinted
// CHECK-SAME: (%{{[^:]*}}: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64}, %{{[^:]*}}: i32, %{{[^:]*}}: i32 {tessel.multiple_of = 8 : i64},
// CHECK-SAME: %{{[^:]*}}: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64})
// CHECK-SAME: tessel.then = @hinted__combine
// CHECK-LABEL: func.func @hinted__combine
// CHECK-SAME: (%{{[^:]*}}: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64}, %{{[^:]*}}: i32, %{{[^:]*}}: i32 {tessel.multiple_of = 8 : i64},
// CHECK-SAME: %{{[^:]*}}: !tessel.ptr<i32> {tessel.multiple_of = 16 : i64})
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
