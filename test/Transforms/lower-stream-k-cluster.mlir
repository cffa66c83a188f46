// RUN: tessel-opt %s -tessel-lower-stream-k | FileCheck %s
// RUN: tessel-opt %s -tessel-lower-stream-k=strategy=split-k | FileCheck %s --check-prefix=SPLIT

// With cluster(4) the peers of a unit are the CTAs of a thread-block cluster:
// no workspace arguments, no flags; the partial states go to CTA 0's shared
// memory (live rows only), ordered by the cluster barrier.
// CHECK-LABEL: func.func @cluster
// CHECK-SAME: (%{{[^:]*}}: !tessel.ptr<f32>, %[[UNITS:[^:]*]]: i32, %[[ITERS:[^:]*]]: i32, %[[ROWS:[^:]*]]: i32)
// CHECK-SAME: tessel.cluster = 4 : i64
// CHECK-SAME: tessel.launch = "persistent"
// CHECK-SAME: tessel.workspace = array<i64>
// CHECK: %[[P32:.*]] = tessel.program_id 0
// CHECK: %[[P:.*]] = arith.extsi %[[P32]]
// CHECK: %[[G32:.*]] = tessel.num_programs 0
// CHECK: %[[G:.*]] = arith.extsi %[[G32]]
// CHECK: %[[BODYIT:.*]] = arith.maxsi
// CHECK: %[[IT:.*]] = arith.maxsi %[[BODYIT]]
// CHECK: %[[U:.*]] = arith.extsi %[[UNITS]]
// Three slots of each state value: 3 x 16 x 8 and 3 x 16 elements.
// CHECK: %[[ACC:.*]] = tessel.shared_buffer elements(384) : <f32, shared>
// CHECK: %[[MAX:.*]] = tessel.shared_buffer elements(48) : <f32, shared>
// CHECK: %[[LIVE:.*]] = tessel.cmp lt
// CHECK: %[[LIVE2:.*]] = tessel.broadcast
// Every CTA's shared memory is live from here (phase A_0).
// CHECK: tessel.cluster_arrive {relaxed}
// CHECK: %[[C:.*]] = arith.constant 4 : i64
// CHECK: %[[RANK:.*]] = arith.remsi %[[P]], %[[C]]
// CHECK: %[[CL:.*]] = arith.divsi %[[P]], %[[C]]
// CHECK: %[[NCL:.*]] = arith.divsi %[[G]], %[[C]]
// CHECK: %[[STEP:.*]] = arith.maxsi %[[NCL]]
// Slice r of n = min(4, iters): [min(r, n) * iters / n, ...).
// CHECK: %[[N:.*]] = arith.minsi %[[C]], %[[IT]]
// CHECK: %[[R:.*]] = arith.minsi %[[RANK]], %[[N]]
// CHECK: %[[RI:.*]] = arith.muli %[[R]], %[[IT]]
// CHECK: %[[B:.*]] = arith.divsi %[[RI]], %[[N]]
// CHECK: %[[BEGIN64:.*]] = arith.minsi %[[B]], %[[BODYIT]]
// CHECK: %[[BEGIN:.*]] = arith.trunci %[[BEGIN64]]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[RANK]]
// CHECK: %[[INSIDE:.*]] = arith.cmpi slt, %[[RANK]], %[[N]]
// CHECK: %[[POSITIVE:.*]] = arith.cmpi slt, %{{.*}}, %[[RANK]]
// CHECK: %[[PEER:.*]] = arith.andi %[[POSITIVE]], %[[INSIDE]]
// The cluster takes units cluster, cluster + clusters, ...
// CHECK: scf.for %[[UNIT:.*]] = %[[CL]] to %[[U]] step %[[STEP]] : i64 {
// CHECK: %[[NEXT:.*]] = arith.addi %[[UNIT]], %[[STEP]]
// CHECK: %[[MORE:.*]] = arith.cmpi slt, %[[NEXT]], %[[U]]
// CHECK: arith.sitofp %[[BEGIN]]
// CHECK: tessel.cluster_wait
// CHECK: scf.if %[[PEER]] {
// CHECK: %[[TO:.*]] = tessel.cluster_map %[[ACC]], %{{.*}} : <f32, shared>
// CHECK: tessel.cluster_map %[[MAX]], %{{.*}} : <f32, shared>
// CHECK: %[[SLOT:.*]] = arith.subi %[[RANK]]
// CHECK: arith.muli %[[SLOT]]
// CHECK: tessel.addptr %[[TO]]
// CHECK: tessel.store %{{.*}}, %{{.*}} mask %[[LIVE2]] : !tessel.tile<16x8x!tessel.ptr<f32, shared>>
// CHECK: tessel.store %{{.*}}, %{{.*}} mask %[[LIVE]] : !tessel.tile<16x!tessel.ptr<f32, shared>>
// CHECK: }
// CHECK-NEXT: tessel.cluster_arrive
// CHECK-NOT: relaxed
// CHECK: %[[WAITS:.*]] = arith.ori %[[FIRST]], %[[MORE]]
// CHECK: scf.if %[[WAITS]] {
// CHECK-NEXT: tessel.cluster_wait
// CHECK: scf.if %[[FIRST]] {
// CTA 0 folds slots [0, n - 1) of its own buffer.
// CHECK: tessel.addptr %[[ACC]]
// CHECK: tessel.load %{{.*}} mask %{{.*}} : !tessel.tile<16x8x!tessel.ptr<f32, shared>>
// CHECK: scf.for
// CHECK: tessel.binary add
// CHECK: scf.if %[[MORE]] {
// CHECK-NEXT: tessel.cluster_arrive
// CHECK-NOT: tessel.flag

// split-K ignores the cluster.
// SPLIT-LABEL: func.func @cluster
// SPLIT-NOT: tessel.cluster
// SPLIT: func.func @cluster__combine
// SPLIT-NOT: tessel.cluster
func.func @cluster(%out: !tessel.ptr<f32>, %units: i32, %iters: i32, %rows: i32) attributes {tessel.kernel} {
  tessel.stream_k units(%units) iters(%iters) rows(%rows) cluster(4) body {
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

// With max_rows(2), a slot holds two rows of each state value (3 x 2 x 8
// and 3 x 2 elements), and rows past it are not moved: the live rows are
// min(rows, 2).
// CHECK-LABEL: func.func @bounded_rows
// CHECK-SAME: %[[ROWS:[^:]*]]: i32)
// CHECK: tessel.shared_buffer elements(48) : <f32, shared>
// CHECK: tessel.shared_buffer elements(6) : <f32, shared>
// CHECK: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK: %[[LIVE:.*]] = arith.minsi %[[ROWS]], %[[TWO]] : i32
// CHECK: tessel.splat %[[LIVE]] : i32 -> !tessel.tile<16xi32>
// CHECK: scf.if
// CHECK: %[[SLOT:.*]] = arith.subi
// CHECK: %[[ACC:.*]] = arith.constant 16 : i64
// CHECK: arith.muli %[[SLOT]], %[[ACC]] : i64
// CHECK: tessel.store
// CHECK: %[[MAX:.*]] = arith.constant 2 : i64
// CHECK: arith.muli %[[SLOT]], %[[MAX]] : i64
// CHECK: tessel.store
// SPLIT-LABEL: func.func @bounded_rows
// SPLIT-SAME: tessel.workspace = array<i64: 16, 2>
func.func @bounded_rows(%out: !tessel.ptr<f32>, %units: i32, %iters: i32, %rows: i32) attributes {tessel.kernel} {
  tessel.stream_k units(%units) iters(%iters) rows(%rows) max_rows(2) cluster(4) body {
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
