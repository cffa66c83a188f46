// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// A 16-element tile on a 32-lane layout: lanes 16..31 hold copies of
// elements 0..15 (their coordinate wraps), so they must not write. Masked
// accesses are predicated PTX, not branches.

#l = #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>

// CHECK-LABEL: llvm.func @masked
func.func @masked(%x: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  // The coordinate wraps modulo 16.
  // CHECK: %[[C16:.*]] = llvm.mlir.constant(16 : i32) : i32
  // CHECK: %[[R:.*]] = llvm.urem %{{.*}}, %[[C16]] : i32
  %r = tessel.arange 0, 16 : !tessel.tile<16xi32, #l>
  %c8 = arith.constant 8 : i32
  %s = tessel.splat %c8 : i32 -> !tessel.tile<16xi32, #l>
  // CHECK: %[[M:.*]] = llvm.icmp "slt" %[[R]]
  %m = tessel.cmp lt %r, %s : !tessel.tile<16xi32, #l> -> !tessel.tile<16xi1, #l>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<16x!tessel.ptr<f32>, #l>
  // CHECK: %[[P:.*]] = llvm.getelementptr
  %p = tessel.addptr %xs, %r : !tessel.tile<16x!tessel.ptr<f32>, #l>, !tessel.tile<16xi32, #l>
  %cst = arith.constant 2.0 : f32
  %o = tessel.splat %cst : f32 -> !tessel.tile<16xf32, #l>
  // Masked-off lanes take `other` without touching memory.
  // CHECK: %[[OTHER:.*]] = llvm.bitcast %{{.*}} : f32 to i32
  // CHECK: %[[LD:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "mov.b32 $0, $3;\0A\09@$2 ld.global.b32 $0, [ $1 + 0 ];", "=r,l,b,r" %[[P]], %[[M]], %[[OTHER]] : (!llvm.ptr<1>, i1, i32) -> i32
  // CHECK: %[[V:.*]] = llvm.bitcast %[[LD]] : i32 to f32
  %v = tessel.load %p mask %m other %o : !tessel.tile<16x!tessel.ptr<f32>, #l>
  // Only the lane below 16 that owns the element stores it, under the mask.
  // CHECK: %[[OWNER:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i32
  // CHECK: %[[PRED:.*]] = llvm.and %[[OWNER]], %[[M]] : i1
  // CHECK: %[[BITS:.*]] = llvm.bitcast %[[V]] : f32 to i32
  // CHECK: llvm.inline_asm has_side_effects asm_dialect = att "@$2 st.global.b32 [ $0 + 0 ], $1;", "l,r,b" %[[P]], %[[BITS]], %[[PRED]]
  tessel.store %p, %v mask %m : !tessel.tile<16x!tessel.ptr<f32>, #l>
  // An atomic adds each element once: the owner adds, copies skip it.
  // CHECK: %[[AOWNER:.*]] = llvm.icmp "ult"
  // CHECK: llvm.cond_br %[[AOWNER]], ^[[ADD:bb[0-9]+]], ^
  // CHECK: ^[[ADD]]:
  // CHECK: llvm.atomicrmw fadd %[[P]], %[[V]] monotonic : !llvm.ptr<1>, f32
  %old = tessel.atomic_add %p, %v : !tessel.tile<16x!tessel.ptr<f32>, #l>
  return
}

// -----

// The old values of an atomic are only known to the owners: copies read
// them back through shared memory. Copies write to their own discard slot
// (past the 16 x 4 bytes of the tile, 16 bytes per thread), not over the
// owner's element.

#l = #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>

// CHECK: llvm.mlir.global external @tessel_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @atomic_result
func.func @atomic_result(%x: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %r = tessel.arange 0, 16 : !tessel.tile<16xi32, #l>
  %xs = tessel.splat %x : !tessel.ptr<i32> -> !tessel.tile<16x!tessel.ptr<i32>, #l>
  %p = tessel.addptr %xs, %r : !tessel.tile<16x!tessel.ptr<i32>, #l>, !tessel.tile<16xi32, #l>
  // CHECK: %[[OLD:.*]] = llvm.atomicrmw add
  // CHECK: nvvm.barrier0
  // CHECK: %[[ELEM:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
  // CHECK: %[[OWNER:.*]] = llvm.icmp "ult"
  // CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
  // CHECK: %[[PAST:.*]] = llvm.getelementptr %{{.*}}[64] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  // CHECK: %[[DISCARD:.*]] = llvm.getelementptr %[[PAST]][%[[TID]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i128
  // CHECK: %[[TO:.*]] = llvm.select %[[OWNER]], %[[ELEM]], %[[DISCARD]] : i1, !llvm.ptr<3>
  // CHECK: llvm.store %{{.*}}, %[[TO]] : i32, !llvm.ptr<3>
  // CHECK: nvvm.barrier0
  // CHECK: %[[BACK:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> i32
  // CHECK: llvm.inline_asm has_side_effects {{.*}}"@$2 st.global.b32 [ $0 + 0 ], $1;", "l,r,b" %{{.*}}, %[[BACK]]
  %old = tessel.atomic_add %p, %r : !tessel.tile<16x!tessel.ptr<i32>, #l>
  tessel.store %p, %old : !tessel.tile<16x!tessel.ptr<i32>, #l>
  return
}

// -----

// Stream-K arrival flags: the CTA's writes are ordered before a release
// add of thread 0 by a barrier; the waiter spins on an acquire load until
// the flag has counted its arrivals (one by default), clears the flag, and
// a barrier passes what it acquired to the CTA.

// CHECK-LABEL: llvm.func @flags
// CHECK-SAME: %{{[^:]*}}: !llvm.ptr<1>, %[[COUNT:[^:]*]]: i32
func.func @flags(%flag: !tessel.ptr<i32>, %count: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  // CHECK: nvvm.barrier0
  // CHECK: %[[T0:.*]] = llvm.icmp "eq"
  // CHECK: llvm.cond_br %[[T0]]
  // CHECK: llvm.fence syncscope("device") release
  // CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("device") monotonic : !llvm.ptr<1>, i32
  tessel.flag_signal %flag : !tessel.ptr<i32>
  // CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32)
  // CHECK: ^[[SPIN:bb[0-9]+]]:  // 2 preds: ^{{bb[0-9]+}}, ^[[SPIN]]
  // CHECK-NEXT: %[[F:.*]] = llvm.load %{{.*}} atomic syncscope("device") acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
  // CHECK: %[[PENDING:.*]] = llvm.icmp "slt" %[[F]], %[[ONE]]
  // CHECK: llvm.cond_br %[[PENDING]], ^[[SPIN]], ^[[CLEAR:bb[0-9]+]]
  // CHECK: ^[[CLEAR]]:
  // CHECK: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<1>
  // CHECK: nvvm.barrier0
  tessel.flag_wait %flag : !tessel.ptr<i32>
  // CHECK: ^[[SPIN2:bb[0-9]+]]:  // 2 preds: ^{{bb[0-9]+}}, ^[[SPIN2]]
  // CHECK-NEXT: %[[F2:.*]] = llvm.load %{{.*}} atomic syncscope("device") acquire
  // CHECK: llvm.icmp "slt" %[[F2]], %[[COUNT]]
  tessel.flag_wait %flag count %count : !tessel.ptr<i32>
  return
}

// -----

// Vectorised accesses. Each thread holds 8 consecutive f16 of a row of 64
// (#v); the pointers are 16-byte aligned (hints on the base and the row
// stride) and the mask is per row, so each run is one 16-byte access: a
// predicated ld.global.v4.b32 (the fallback moved into its registers
// first) and an unpredicated 16-byte store. Without the stride hint the
// rows are only 2-byte aligned and the same load is 8 scalar ones.

#v = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @vectorised
func.func @vectorised(%x: !tessel.ptr<f16> {tessel.multiple_of = 16 : i64}, %stride: i32 {tessel.multiple_of = 8 : i64}, %bad: i32, %n: i32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %r = tessel.arange 0, 4 : !tessel.tile<4xi32, #tessel.slice<dim = 1, parent = #v>>
  %re = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<4xi32, #tessel.slice<dim = 1, parent = #v>> -> !tessel.tile<4x1xi32, #v>
  %rb = tessel.broadcast %re : !tessel.tile<4x1xi32, #v> -> !tessel.tile<4x64xi32, #v>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #v>>
  %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 0, parent = #v>> -> !tessel.tile<1x64xi32, #v>
  %cb = tessel.broadcast %ce : !tessel.tile<1x64xi32, #v> -> !tessel.tile<4x64xi32, #v>
  %ss = tessel.splat %stride : i32 -> !tessel.tile<4x64xi32, #v>
  %ro = tessel.binary mul %rb, %ss : !tessel.tile<4x64xi32, #v>
  %off = tessel.binary add %ro, %cb : !tessel.tile<4x64xi32, #v>
  %xs = tessel.splat %x : !tessel.ptr<f16> -> !tessel.tile<4x64x!tessel.ptr<f16>, #v>
  %p = tessel.addptr %xs, %off : !tessel.tile<4x64x!tessel.ptr<f16>, #v>, !tessel.tile<4x64xi32, #v>
  %ns = tessel.splat %n : i32 -> !tessel.tile<4x64xi32, #v>
  %m = tessel.cmp lt %rb, %ns : !tessel.tile<4x64xi32, #v> -> !tessel.tile<4x64xi1, #v>
  // CHECK: llvm.inline_asm has_side_effects asm_dialect = att "mov.b32 $0, $6;\0A\09mov.b32 $1, $7;\0A\09mov.b32 $2, $8;\0A\09mov.b32 $3, $9;\0A\09@$5 ld.global.v4.b32 {$0, $1, $2, $3}, [ $4 + 0 ];", "=r,=r,=r,=r,l,b,r,r,r,r"
  // CHECK-SAME: -> !llvm.struct<(i32, i32, i32, i32)>
  // CHECK-NOT: ld.global
  %v = tessel.load %p mask %m : !tessel.tile<4x64x!tessel.ptr<f16>, #v>
  // CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
  tessel.store %p, %v : !tessel.tile<4x64x!tessel.ptr<f16>, #v>
  %bs = tessel.splat %bad : i32 -> !tessel.tile<4x64xi32, #v>
  %ro2 = tessel.binary mul %rb, %bs : !tessel.tile<4x64xi32, #v>
  %off2 = tessel.binary add %ro2, %cb : !tessel.tile<4x64xi32, #v>
  %p2 = tessel.addptr %xs, %off2 : !tessel.tile<4x64x!tessel.ptr<f16>, #v>, !tessel.tile<4x64xi32, #v>
  // CHECK-COUNT-8: ld.global.b16
  // CHECK-NOT: ld.global
  %w = tessel.load %p2 mask %m : !tessel.tile<4x64x!tessel.ptr<f16>, #v>
  tessel.store %p, %w : !tessel.tile<4x64x!tessel.ptr<f16>, #v>
  return
}

// -----

// On sm_90 an f32 atomic add whose old values nothing reads is a vector
// reduction over each thread's aligned run (red.global.add.v4.f32, 16
// bytes, under the row's mask); with the old values read, or on sm_80, it
// stays one atomicrmw per element.

#r = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @vector_reduction
// CHECK: %[[M:.*]] = llvm.icmp "slt"
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "@$1 red.global.add.v4.f32 [ $0 + 0 ], {$2, $3, $4, $5};", "l,b,f,f,f,f" %{{.*}}, %[[M]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (!llvm.ptr<1>, i1, f32, f32, f32, f32) -> ()
// Without a mask (and every element owned once) nothing predicates it.
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "red.global.add.v4.f32 [ $0 + 0 ], {$1, $2, $3, $4};", "l,f,f,f,f"
// CHECK-NOT: red.global
// CHECK-NOT: llvm.atomicrmw
// CHECK-LABEL: llvm.func @old_values_read
// CHECK-COUNT-4: llvm.atomicrmw fadd
// CHECK-NOT: red.global
module attributes {tessel.target = "sm_90"} {
func.func @vector_reduction(%x: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %y: f32, %n: i32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %v = tessel.splat %y : f32 -> !tessel.tile<4x32xf32, #r>
  %r = tessel.arange 0, 4 : !tessel.tile<4xi32, #tessel.slice<dim = 1, parent = #r>>
  %re = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<4xi32, #tessel.slice<dim = 1, parent = #r>> -> !tessel.tile<4x1xi32, #r>
  %rb = tessel.broadcast %re : !tessel.tile<4x1xi32, #r> -> !tessel.tile<4x32xi32, #r>
  %c = tessel.arange 0, 32 : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #r>>
  %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #r>> -> !tessel.tile<1x32xi32, #r>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #r> -> !tessel.tile<4x32xi32, #r>
  %c32 = arith.constant 32 : i32
  %s = tessel.splat %c32 : i32 -> !tessel.tile<4x32xi32, #r>
  %ro = tessel.binary mul %rb, %s : !tessel.tile<4x32xi32, #r>
  %off = tessel.binary add %ro, %cb : !tessel.tile<4x32xi32, #r>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<4x32x!tessel.ptr<f32>, #r>
  %p = tessel.addptr %xs, %off : !tessel.tile<4x32x!tessel.ptr<f32>, #r>, !tessel.tile<4x32xi32, #r>
  %ns = tessel.splat %n : i32 -> !tessel.tile<4x32xi32, #r>
  %m = tessel.cmp lt %rb, %ns : !tessel.tile<4x32xi32, #r> -> !tessel.tile<4x32xi1, #r>
  %old = tessel.atomic_add %p, %v mask %m : !tessel.tile<4x32x!tessel.ptr<f32>, #r>
  %all = tessel.atomic_add %p, %v : !tessel.tile<4x32x!tessel.ptr<f32>, #r>
  return
}
func.func @old_values_read(%x: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %y: f32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %v = tessel.splat %y : f32 -> !tessel.tile<4x32xf32, #r>
  %c = tessel.arange 0, 32 : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #r>>
  %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #r>> -> !tessel.tile<1x32xi32, #r>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #r> -> !tessel.tile<4x32xi32, #r>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<4x32x!tessel.ptr<f32>, #r>
  %p = tessel.addptr %xs, %cb : !tessel.tile<4x32x!tessel.ptr<f32>, #r>, !tessel.tile<4x32xi32, #r>
  %old = tessel.atomic_add %p, %v : !tessel.tile<4x32x!tessel.ptr<f32>, #r>
  tessel.store %p, %old : !tessel.tile<4x32x!tessel.ptr<f32>, #r>
  return
}
}

// -----

// A warpgroup dot's product (pairs of columns per thread) reduces four
// elements at a time through the next lane along the row: each lane sends
// its partner two values (shfl.sync.bfly 1) and issues one 16-byte reduction
// where it issued two 8-byte ones: the even lane at its first run's
// address, the odd one two elements before its second run. Values not from
// a warpgroup dot, rows only 8-byte aligned, or an odd number of runs: 8-byte
// reductions.

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
#rows = #tessel.slice<dim = 1, parent = #mma>
#cols = #tessel.slice<dim = 0, parent = #mma>
#p = #tessel.blocked<sizePerThread = [1, 2], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @paired_lanes
// The thread's first two runs, row r: columns 2c, 2c + 1 and 8 + 2c, 9 + 2c
// (slots 0-1 and 2-3):
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: %[[A0:.*]] = llvm.fmul
// CHECK-NEXT: %[[A1:.*]] = llvm.fmul
// CHECK-NEXT: %[[B0:.*]] = llvm.fmul
// CHECK-NEXT: %[[B1:.*]] = llvm.fmul
// Their masks:
// CHECK: %[[MA:.*]] = llvm.icmp "slt"
// CHECK-NEXT: llvm.icmp "slt"
// CHECK-NEXT: %[[MB:.*]] = llvm.icmp "slt"
// Whether the lane is the even one of its pair (tid.x & 1 == 0):
// CHECK: %[[EVEN:.*]] = llvm.icmp "eq"
// CHECK-NEXT: %[[S0:.*]] = llvm.select %[[EVEN]], %[[B0]], %[[A0]]
// CHECK: %[[S0I:.*]] = llvm.bitcast %[[S0]]
// CHECK: %[[R0I:.*]] = nvvm.shfl.sync  bfly %{{.*}}, %[[S0I]], %{{.*}}, %{{.*}} : i32 -> i32
// CHECK: %[[R0:.*]] = llvm.bitcast %[[R0I]]
// CHECK: %[[S1:.*]] = llvm.select %[[EVEN]], %[[B1]], %[[A1]]
// CHECK: %[[S1I:.*]] = llvm.bitcast %[[S1]]
// CHECK: %[[R1I:.*]] = nvvm.shfl.sync  bfly %{{.*}}, %[[S1I]], %{{.*}}, %{{.*}} : i32 -> i32
// CHECK: %[[R1:.*]] = llvm.bitcast %[[R1I]]
// CHECK: %[[W0:.*]] = llvm.select %[[EVEN]], %[[A0]], %[[R0]]
// CHECK: %[[W1:.*]] = llvm.select %[[EVEN]], %[[A1]], %[[R1]]
// CHECK: %[[W2:.*]] = llvm.select %[[EVEN]], %[[R0]], %[[B0]]
// CHECK: %[[W3:.*]] = llvm.select %[[EVEN]], %[[R1]], %[[B1]]
// CHECK: %[[BEFORE:.*]] = llvm.getelementptr %{{.*}}[-2] : (!llvm.ptr<1>) -> !llvm.ptr<1>, f32
// CHECK: %[[AT:.*]] = llvm.select %[[EVEN]], %{{.*}}, %[[BEFORE]] : i1, !llvm.ptr<1>
// CHECK: %[[PRED:.*]] = llvm.select %[[EVEN]], %[[MA]], %[[MB]] : i1, i1
// CHECK: "@$1 red.global.add.v4.f32 [ $0 + 0 ], {$2, $3, $4, $5};", "l,b,f,f,f,f" %[[AT]], %[[PRED]], %[[W0]], %[[W1]], %[[W2]], %[[W3]]
// Eight runs of two: four 16-byte reductions, eight shuffles.
// CHECK-COUNT-2: nvvm.shfl.sync  bfly
// CHECK: red.global.add.v4.f32
// CHECK-COUNT-2: nvvm.shfl.sync  bfly
// CHECK: red.global.add.v4.f32
// CHECK-COUNT-2: nvvm.shfl.sync  bfly
// CHECK: red.global.add.v4.f32
// CHECK-NOT: red.global
// CHECK-NOT: nvvm.shfl.sync
// CHECK-LABEL: llvm.func @not_from_a_warpgroup_dot
// CHECK-COUNT-8: red.global.add.v2.f32
// CHECK-NOT: red.global
// CHECK-NOT: nvvm.shfl.sync
// CHECK-LABEL: llvm.func @rows_8_byte_aligned
// CHECK-COUNT-8: red.global.add.v2.f32
// CHECK-NOT: red.global
// CHECK-NOT: nvvm.shfl.sync
module attributes {tessel.target = "sm_90a"} {
func.func @paired_lanes(%x: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %n: i32, %e: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %e : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x32xbf16, order = [1, 0]>
  %d = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x32xbf16, order = [1, 0]> -> !tessel.tile<64x32xf32, #mma>
  %r = tessel.warpgroup_dot_wait %d pendings = 0 : !tessel.tile<64x32xf32, #mma>
  %two = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma>
  %v = tessel.binary mul %r, %two : !tessel.tile<64x32xf32, #mma>
  %ri = tessel.arange 0, 64 : !tessel.tile<64xi32, #rows>
  %re = tessel.expand_dims %ri {axis = 1 : i32} : !tessel.tile<64xi32, #rows> -> !tessel.tile<64x1xi32, #mma>
  %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %ci = tessel.arange 0, 32 : !tessel.tile<32xi32, #cols>
  %ce = tessel.expand_dims %ci {axis = 0 : i32} : !tessel.tile<32xi32, #cols> -> !tessel.tile<1x32xi32, #mma>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %c32 = arith.constant 32 : i32
  %s = tessel.splat %c32 : i32 -> !tessel.tile<64x32xi32, #mma>
  %ro = tessel.binary mul %rb, %s : !tessel.tile<64x32xi32, #mma>
  %off = tessel.binary add %ro, %cb : !tessel.tile<64x32xi32, #mma>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<64x32x!tessel.ptr<f32>, #mma>
  %pt = tessel.addptr %xs, %off : !tessel.tile<64x32x!tessel.ptr<f32>, #mma>, !tessel.tile<64x32xi32, #mma>
  %ns = tessel.splat %n : i32 -> !tessel.tile<64x32xi32, #mma>
  %m = tessel.cmp lt %rb, %ns : !tessel.tile<64x32xi32, #mma> -> !tessel.tile<64x32xi1, #mma>
  %old = tessel.atomic_add %pt, %v mask %m : !tessel.tile<64x32x!tessel.ptr<f32>, #mma>
  return
}
func.func @not_from_a_warpgroup_dot(%x: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %n: i32, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %v = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma>
  %ri = tessel.arange 0, 64 : !tessel.tile<64xi32, #rows>
  %re = tessel.expand_dims %ri {axis = 1 : i32} : !tessel.tile<64xi32, #rows> -> !tessel.tile<64x1xi32, #mma>
  %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %ci = tessel.arange 0, 32 : !tessel.tile<32xi32, #cols>
  %ce = tessel.expand_dims %ci {axis = 0 : i32} : !tessel.tile<32xi32, #cols> -> !tessel.tile<1x32xi32, #mma>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %c32 = arith.constant 32 : i32
  %s = tessel.splat %c32 : i32 -> !tessel.tile<64x32xi32, #mma>
  %ro = tessel.binary mul %rb, %s : !tessel.tile<64x32xi32, #mma>
  %off = tessel.binary add %ro, %cb : !tessel.tile<64x32xi32, #mma>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<64x32x!tessel.ptr<f32>, #mma>
  %pt = tessel.addptr %xs, %off : !tessel.tile<64x32x!tessel.ptr<f32>, #mma>, !tessel.tile<64x32xi32, #mma>
  %ns = tessel.splat %n : i32 -> !tessel.tile<64x32xi32, #mma>
  %m = tessel.cmp lt %rb, %ns : !tessel.tile<64x32xi32, #mma> -> !tessel.tile<64x32xi1, #mma>
  %old = tessel.atomic_add %pt, %v mask %m : !tessel.tile<64x32x!tessel.ptr<f32>, #mma>
  return
}
func.func @rows_8_byte_aligned(%x: !tessel.ptr<f32> {tessel.multiple_of = 8 : i64}, %n: i32, %e: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %e : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x32xbf16, order = [1, 0]>
  %d = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x32xbf16, order = [1, 0]> -> !tessel.tile<64x32xf32, #mma>
  %r = tessel.warpgroup_dot_wait %d pendings = 0 : !tessel.tile<64x32xf32, #mma>
  %ri = tessel.arange 0, 64 : !tessel.tile<64xi32, #rows>
  %re = tessel.expand_dims %ri {axis = 1 : i32} : !tessel.tile<64xi32, #rows> -> !tessel.tile<64x1xi32, #mma>
  %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %ci = tessel.arange 0, 32 : !tessel.tile<32xi32, #cols>
  %ce = tessel.expand_dims %ci {axis = 0 : i32} : !tessel.tile<32xi32, #cols> -> !tessel.tile<1x32xi32, #mma>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %c32 = arith.constant 32 : i32
  %s = tessel.splat %c32 : i32 -> !tessel.tile<64x32xi32, #mma>
  %ro = tessel.binary mul %rb, %s : !tessel.tile<64x32xi32, #mma>
  %off = tessel.binary add %ro, %cb : !tessel.tile<64x32xi32, #mma>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<64x32x!tessel.ptr<f32>, #mma>
  %pt = tessel.addptr %xs, %off : !tessel.tile<64x32x!tessel.ptr<f32>, #mma>, !tessel.tile<64x32xi32, #mma>
  %ns = tessel.splat %n : i32 -> !tessel.tile<64x32xi32, #mma>
  %m = tessel.cmp lt %rb, %ns : !tessel.tile<64x32xi32, #mma> -> !tessel.tile<64x32xi1, #mma>
  %old = tessel.atomic_add %pt, %r mask %m : !tessel.tile<64x32x!tessel.ptr<f32>, #mma>
  return
}
}

// -----

#r = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @before_sm90
// CHECK-COUNT-4: llvm.atomicrmw fadd
// CHECK-NOT: red.global
module attributes {tessel.target = "sm_80"} {
func.func @before_sm90(%x: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %y: f32) attributes {tessel.kernel, tessel.num_warps = 1 : i32} {
  %v = tessel.splat %y : f32 -> !tessel.tile<4x32xf32, #r>
  %c = tessel.arange 0, 32 : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #r>>
  %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #r>> -> !tessel.tile<1x32xi32, #r>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #r> -> !tessel.tile<4x32xi32, #r>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<4x32x!tessel.ptr<f32>, #r>
  %p = tessel.addptr %xs, %cb : !tessel.tile<4x32x!tessel.ptr<f32>, #r>, !tessel.tile<4x32xi32, #r>
  %old = tessel.atomic_add %p, %v : !tessel.tile<4x32x!tessel.ptr<f32>, #r>
  return
}
}

// -----

// Stores of a warpgroup dot's product pair lanes too, also past the loop
// that accumulates it (attention's output): bf16 runs of two travel as one
// word (one shuffle per pair of runs) and go out as 8-byte stores where they
// were 4-byte ones, so a quad of lanes writes a whole 32-byte sector; f32
// runs as 16-byte stores. Rows only 4-byte aligned keep 4-byte stores.

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
#rows = #tessel.slice<dim = 1, parent = #mma>
#cols = #tessel.slice<dim = 0, parent = #mma>

// CHECK-LABEL: llvm.func @paired_stores
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: llvm.fptrunc
// Whether the lane is the even one of its pair:
// CHECK: %[[EVEN:.*]] = llvm.icmp "eq"
// CHECK: %[[S:.*]] = llvm.select %[[EVEN]], %[[B:.*]], %[[A:.*]] : i1, i32
// CHECK: %[[R:.*]] = nvvm.shfl.sync  bfly %{{.*}}, %[[S]], %{{.*}}, %{{.*}} : i32 -> i32
// CHECK: %[[W0:.*]] = llvm.select %[[EVEN]], %[[A]], %[[R]] : i1, i32
// CHECK: %[[W1:.*]] = llvm.select %[[EVEN]], %[[R]], %[[B]] : i1, i32
// CHECK: %[[BEFORE:.*]] = llvm.getelementptr %{{.*}}[-2] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
// CHECK: %[[AT:.*]] = llvm.select %[[EVEN]], %{{.*}}, %[[BEFORE]] : i1, !llvm.ptr<1>
// CHECK: "@$1 st.global.v2.b32 [ $0 + 0 ], {$2, $3};", "l,b,r,r" %[[AT]], %{{.*}}, %{{.*}}, %{{.*}}
// Eight runs of two: four 8-byte stores, four shuffles.
// CHECK-COUNT-3: st.global.v2.b32
// The same product in f32, unmasked: two words per run, 16-byte stores.
// CHECK-COUNT-2: nvvm.shfl.sync  bfly
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK-NOT: st.global
// CHECK-LABEL: llvm.func @rows_4_byte_aligned
// CHECK-COUNT-8: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<1xi32>, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK-NOT: nvvm.shfl.sync
module attributes {tessel.target = "sm_90a"} {
func.func @paired_stores(%x: !tessel.ptr<bf16> {tessel.multiple_of = 16 : i64}, %y: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %n: i32, %e: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %e : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %init = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x32xbf16, order = [1, 0]>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%p = %init) -> (!tessel.tile<64x32xf32, #mma>) : i32 {
    %d = tessel.warpgroup_dot %a, %b, %p : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x32xbf16, order = [1, 0]> -> !tessel.tile<64x32xf32, #mma>
    %r = tessel.warpgroup_dot_wait %d pendings = 0 : !tessel.tile<64x32xf32, #mma>
    scf.yield %r : !tessel.tile<64x32xf32, #mma>
  }
  %h = tessel.cast %acc : !tessel.tile<64x32xf32, #mma> -> !tessel.tile<64x32xbf16, #mma>
  %ri = tessel.arange 0, 64 : !tessel.tile<64xi32, #rows>
  %re = tessel.expand_dims %ri {axis = 1 : i32} : !tessel.tile<64xi32, #rows> -> !tessel.tile<64x1xi32, #mma>
  %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %ci = tessel.arange 0, 32 : !tessel.tile<32xi32, #cols>
  %ce = tessel.expand_dims %ci {axis = 0 : i32} : !tessel.tile<32xi32, #cols> -> !tessel.tile<1x32xi32, #mma>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %c32 = arith.constant 32 : i32
  %s = tessel.splat %c32 : i32 -> !tessel.tile<64x32xi32, #mma>
  %ro = tessel.binary mul %rb, %s : !tessel.tile<64x32xi32, #mma>
  %off = tessel.binary add %ro, %cb : !tessel.tile<64x32xi32, #mma>
  %xs = tessel.splat %x : !tessel.ptr<bf16> -> !tessel.tile<64x32x!tessel.ptr<bf16>, #mma>
  %pt = tessel.addptr %xs, %off : !tessel.tile<64x32x!tessel.ptr<bf16>, #mma>, !tessel.tile<64x32xi32, #mma>
  %ns = tessel.splat %n : i32 -> !tessel.tile<64x32xi32, #mma>
  %m = tessel.cmp lt %rb, %ns : !tessel.tile<64x32xi32, #mma> -> !tessel.tile<64x32xi1, #mma>
  tessel.store %pt, %h mask %m : !tessel.tile<64x32x!tessel.ptr<bf16>, #mma>
  %ys = tessel.splat %y : !tessel.ptr<f32> -> !tessel.tile<64x32x!tessel.ptr<f32>, #mma>
  %pf = tessel.addptr %ys, %off : !tessel.tile<64x32x!tessel.ptr<f32>, #mma>, !tessel.tile<64x32xi32, #mma>
  tessel.store %pf, %acc : !tessel.tile<64x32x!tessel.ptr<f32>, #mma>
  return
}
func.func @rows_4_byte_aligned(%x: !tessel.ptr<bf16> {tessel.multiple_of = 4 : i64}, %e: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %e : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x32xbf16, order = [1, 0]>
  %d = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x32xbf16, order = [1, 0]> -> !tessel.tile<64x32xf32, #mma>
  %r = tessel.warpgroup_dot_wait %d pendings = 0 : !tessel.tile<64x32xf32, #mma>
  %h = tessel.cast %r : !tessel.tile<64x32xf32, #mma> -> !tessel.tile<64x32xbf16, #mma>
  %ri = tessel.arange 0, 64 : !tessel.tile<64xi32, #rows>
  %re = tessel.expand_dims %ri {axis = 1 : i32} : !tessel.tile<64xi32, #rows> -> !tessel.tile<64x1xi32, #mma>
  %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %ci = tessel.arange 0, 32 : !tessel.tile<32xi32, #cols>
  %ce = tessel.expand_dims %ci {axis = 0 : i32} : !tessel.tile<32xi32, #cols> -> !tessel.tile<1x32xi32, #mma>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #mma> -> !tessel.tile<64x32xi32, #mma>
  %c32 = arith.constant 32 : i32
  %s = tessel.splat %c32 : i32 -> !tessel.tile<64x32xi32, #mma>
  %ro = tessel.binary mul %rb, %s : !tessel.tile<64x32xi32, #mma>
  %off = tessel.binary add %ro, %cb : !tessel.tile<64x32xi32, #mma>
  %xs = tessel.splat %x : !tessel.ptr<bf16> -> !tessel.tile<64x32x!tessel.ptr<bf16>, #mma>
  %pt = tessel.addptr %xs, %off : !tessel.tile<64x32x!tessel.ptr<bf16>, #mma>, !tessel.tile<64x32xi32, #mma>
  tessel.store %pt, %h : !tessel.tile<64x32x!tessel.ptr<bf16>, #mma>
  return
}
}

// -----

// A warpgroup dot into runs of four columns (its B's columns in the order
// that puts them there): a lane's run is one 16-byte reduction of its own,
// no shuffles. 64 x 32 on one warpgroup: 2 rows x 2 runs per lane.

#runs = #tessel.mma<warpsPerCTA = [4, 1], columnRun = 4>
#opr = #tessel.dot_operand<opIdx = 0, parent = #runs>
#rrows = #tessel.slice<dim = 1, parent = #runs>
#rcols = #tessel.slice<dim = 0, parent = #runs>

// CHECK-LABEL: llvm.func @runs_of_four
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK-COUNT-4: red.global.add.v4.f32
// CHECK-NOT: red.global
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.return
module attributes {tessel.target = "sm_90a"} {
func.func @runs_of_four(%x: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %e: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %e : bf16 -> !tessel.tile<64x32xbf16, #opr>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #runs>
  %b = tessel.local_alloc : !tessel.memdesc<32x32xbf16, order = [0, 1], columns = #runs>
  %d = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opr>, !tessel.memdesc<32x32xbf16, order = [0, 1], columns = #runs> -> !tessel.tile<64x32xf32, #runs>
  %r = tessel.warpgroup_dot_wait %d pendings = 0 : !tessel.tile<64x32xf32, #runs>
  %ri = tessel.arange 0, 64 : !tessel.tile<64xi32, #rrows>
  %re = tessel.expand_dims %ri {axis = 1 : i32} : !tessel.tile<64xi32, #rrows> -> !tessel.tile<64x1xi32, #runs>
  %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #runs> -> !tessel.tile<64x32xi32, #runs>
  %ci = tessel.arange 0, 32 : !tessel.tile<32xi32, #rcols>
  %ce = tessel.expand_dims %ci {axis = 0 : i32} : !tessel.tile<32xi32, #rcols> -> !tessel.tile<1x32xi32, #runs>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #runs> -> !tessel.tile<64x32xi32, #runs>
  %c32 = arith.constant 32 : i32
  %s = tessel.splat %c32 : i32 -> !tessel.tile<64x32xi32, #runs>
  %ro = tessel.binary mul %rb, %s : !tessel.tile<64x32xi32, #runs>
  %off = tessel.binary add %ro, %cb : !tessel.tile<64x32xi32, #runs>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<64x32x!tessel.ptr<f32>, #runs>
  %pt = tessel.addptr %xs, %off : !tessel.tile<64x32x!tessel.ptr<f32>, #runs>, !tessel.tile<64x32xi32, #runs>
  %old = tessel.atomic_add %pt, %r : !tessel.tile<64x32x!tessel.ptr<f32>, #runs>
  return
}
}
