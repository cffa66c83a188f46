// RUN: tessel-opt %s -split-input-file -tessel-warp-specialize -tessel-ping-pong -verify-diagnostics | FileCheck %s

// Two consumer warpgroups take turns issuing the loop's warpgroup dots:
// warpgroup w waits on barrier 3 + w before the first and arrives on
// 3 + (w + 1) % 2 after the last; warpgroup 1 lets warpgroup 0 start, and
// warpgroup 0 takes the last turn's arrival at the end.

#mma = #tessel.mma<warpsPerCTA = [8, 1]>

// CHECK-LABEL: func.func @loop
// CHECK: consumers {
// CHECK-NEXT: %[[WG:.*]] = tessel.warpgroup_id : i32
// CHECK: %[[MINE:.*]] = arith.addi %[[WG]], %[[C3:.*]] : i32
// CHECK: %[[UP:.*]] = arith.addi %[[WG]], %{{.*}} : i32
// CHECK: %[[RING:.*]] = arith.remui %[[UP]], %{{.*}} : i32
// CHECK: %[[NEXT:.*]] = arith.addi %[[RING]], %{{.*}} : i32
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[WG]], %c1_i32
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: %[[B0:.*]] = arith.constant 3 : i32
// CHECK-NEXT: tessel.named_barrier_arrive %[[B0]], 256
// CHECK: scf.for
// CHECK: tessel.mbarrier_wait
// CHECK-NEXT: tessel.memdesc_index
// CHECK-NEXT: tessel.named_barrier_wait %[[MINE]], 256
// CHECK-NEXT: tessel.warpgroup_dot
// CHECK-NEXT: tessel.named_barrier_arrive %[[NEXT]], 256
// CHECK-NEXT: tessel.warpgroup_dot_wait
// CHECK: tessel.store
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[WG]], %c0_i32
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: %[[B1:.*]] = arith.constant 3 : i32
// CHECK-NEXT: tessel.named_barrier_wait %[[B1]], 256
// CHECK: } producer {
// CHECK-NOT: named_barrier
// CHECK: return
module attributes {tessel.target = "sm_90a"} {
func.func @loop(%a: !tessel.memdesc<128x64xbf16, order = [1, 0]>, %o: !tessel.tile<128x64x!tessel.ptr<f32>, #mma>, %n: i32, %kd: !tessel.tensor_desc<64x64xbf16>) attributes {tessel.kernel, tessel.num_warps = 8 : i32, tessel.warp_specialize, tessel.ping_pong} {
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

// A loop of dots inside another (a persistent kernel's loop over its tiles):
// only the inner loop takes turns. The outer loop's own dot (run after the
// inner loop's last iteration) takes none, or a warpgroup would wait for its
// turn twice in a row.

#mma = #tessel.mma<warpsPerCTA = [8, 1]>

// CHECK-LABEL: func.func @nested
// CHECK: consumers {
// CHECK: scf.for
// CHECK-NOT: named_barrier
// CHECK: scf.for
// CHECK: tessel.named_barrier_wait
// CHECK-NEXT: tessel.warpgroup_dot
// CHECK-NEXT: tessel.named_barrier_arrive
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NOT: named_barrier
// CHECK: tessel.warpgroup_dot
// CHECK-NOT: named_barrier
// CHECK: tessel.store
// CHECK-NEXT: }
// CHECK: tessel.named_barrier_wait
// CHECK: } producer {
module attributes {tessel.target = "sm_90a"} {
func.func @nested(%a: !tessel.memdesc<128x64xbf16, order = [1, 0]>, %o: !tessel.tile<128x64x!tessel.ptr<f32>, #mma>, %t: i32, %n: i32, %kd: !tessel.tensor_desc<64x64xbf16>) attributes {tessel.kernel, tessel.num_warps = 8 : i32, tessel.warp_specialize, tessel.ping_pong} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %acc0 = tessel.splat %zero : f32 -> !tessel.tile<128x64xf32, #mma>
  %buf = tessel.local_alloc : !tessel.memdesc<2x64x64xbf16, order = [1, 0]>
  %full = tessel.mbarrier_alloc : !tessel.mbarriers<2>
  scf.for %tile = %c0 to %t step %c1 : i32 {
    %r = scf.for %iv = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (!tessel.tile<128x64xf32, #mma>) : i32 {
      tessel.barrier
      %i = arith.divsi %iv, %c64 : i32
      %slot = arith.remsi %i, %c2 : i32
      %h = arith.divsi %i, %c2 : i32
      %phase = arith.andi %h, %c1 : i32
      %b = tessel.memdesc_index %buf[%slot] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
      tessel.tma_load %kd[%iv, %tile], %b, %full[%slot] : !tessel.tensor_desc<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.mbarriers<2>
      tessel.mbarrier_wait %full[%slot], %phase : !tessel.mbarriers<2>
      %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma>
      %w = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x64xf32, #mma>
      scf.yield %w : !tessel.tile<128x64xf32, #mma>
    }
    %b0 = tessel.memdesc_index %buf[%c0] : !tessel.memdesc<2x64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
    %last = tessel.warpgroup_dot %a, %b0, %r : !tessel.memdesc<128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma>
    %lw = tessel.warpgroup_dot_wait %last pendings = 0 : !tessel.tile<128x64xf32, #mma>
    tessel.store %o, %lw : !tessel.tile<128x64x!tessel.ptr<f32>, #mma>
  }
  return
}
}

// -----

// Ping-pong needs the consumer warpgroups of a warp-specialised kernel.

module attributes {tessel.target = "sm_90a"} {
// expected-error @+1 {{ping_pong needs a warp-specialised kernel (warp_specialize=True on sm_90a)}}
func.func @not_split() attributes {tessel.kernel, tessel.num_warps = 8 : i32, tessel.ping_pong} {
  return
}
}

// -----

// A kernel asked for warp specialisation that has no tensor-map copy stays
// whole (tessel-warp-specialize leaves it): ping-pong leaves it too.

module attributes {tessel.target = "sm_90a"} {
// CHECK-LABEL: func.func @no_copies
// CHECK-NOT: tessel.named_barrier
// CHECK: return
func.func @no_copies() attributes {tessel.kernel, tessel.num_warps = 8 : i32, tessel.warp_specialize, tessel.ping_pong} {
  return
}
}
