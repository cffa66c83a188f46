// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// Two 3-buffer regions follow the scratch of the reductions (16 bytes),
// 1024-byte aligned (a period of the widest swizzle): at 1024 and
// 1024 + 3 * 64 * 32 * 2 = 13312 (both live to the end). A buffer is its region advanced by index * 4096 bytes. Each
// thread copies its two runs of 8 halves (16 bytes, L2 only) with
// cp.async, the source size 0 where the mask is off (zero fill); the
// commit and the wait are one instruction each, the wait followed by the
// CTA barrier. The dot reads B from the buffer with ldmatrix (its rows are
// K: .trans), staging nothing.

// CHECK-LABEL: llvm.func @copy_and_dot
func.func @copy_and_dot(%p: !tessel.ptr<f16> {tessel.multiple_of = 16 : i64}, %n: i32, %i: i32, %x: f16, %o: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  // CHECK: %[[SMEM:.*]] = llvm.mlir.addressof @tessel_smem : !llvm.ptr<3>
  // CHECK: %[[R0:.*]] = llvm.getelementptr %[[SMEM]][1024] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  %buf = tessel.local_alloc : !tessel.memdesc<3x64x32xf16, order = [1, 0]>
  // CHECK: llvm.getelementptr %{{.*}}[13312] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  %other = tessel.local_alloc : !tessel.memdesc<3x64x32xf16, order = [1, 0]>
  // CHECK: %[[OFF:.*]] = llvm.mul %{{.*}}, %{{.*}} : i32
  // CHECK: %[[DST:.*]] = llvm.getelementptr %[[R0]][%[[OFF]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  %view = tessel.memdesc_index %buf[%i] : !tessel.memdesc<3x64x32xf16, order = [1, 0]> -> !tessel.memdesc<64x32xf16, order = [1, 0]>
  %r = tessel.arange 0, 64 : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>>
  %re = tessel.expand_dims %r {axis = 1 : i32} : !tessel.tile<64xi32, #tessel.slice<dim = 1, parent = #b>> -> !tessel.tile<64x1xi32, #b>
  %rb = tessel.broadcast %re : !tessel.tile<64x1xi32, #b> -> !tessel.tile<64x32xi32, #b>
  %c32 = arith.constant 32 : i32
  %s32 = tessel.splat %c32 : i32 -> !tessel.tile<64x32xi32, #b>
  %ro = tessel.binary mul %rb, %s32 : !tessel.tile<64x32xi32, #b>
  %c = tessel.arange 0, 32 : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #b>>
  %ce = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<32xi32, #tessel.slice<dim = 0, parent = #b>> -> !tessel.tile<1x32xi32, #b>
  %cb = tessel.broadcast %ce : !tessel.tile<1x32xi32, #b> -> !tessel.tile<64x32xi32, #b>
  %off = tessel.binary add %ro, %cb : !tessel.tile<64x32xi32, #b>
  %ps = tessel.splat %p : !tessel.ptr<f16> -> !tessel.tile<64x32x!tessel.ptr<f16>, #b>
  %pp = tessel.addptr %ps, %off : !tessel.tile<64x32x!tessel.ptr<f16>, #b>, !tessel.tile<64x32xi32, #b>
  %ns = tessel.splat %n : i32 -> !tessel.tile<64x32xi32, #b>
  %m = tessel.cmp lt %rb, %ns : !tessel.tile<64x32xi32, #b> -> !tessel.tile<64x32xi1, #b>
  // CHECK: %[[SIZE:.*]] = llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i32
  // CHECK: llvm.inline_asm has_side_effects asm_dialect = att "cp.async.cg.shared.global [ $0 ], [ $1 ], 16, $2;", "r,l,r" %{{.*}}, %{{.*}}, %[[SIZE]] : (!llvm.ptr<3>, !llvm.ptr<1>, i32) -> ()
  // CHECK: cp.async.cg
  // CHECK-NOT: cp.async.cg
  tessel.async_copy %pp, %view mask %m : !tessel.tile<64x32x!tessel.ptr<f16>, #b>, !tessel.memdesc<64x32xf16, order = [1, 0]>, !tessel.tile<64x32xi1, #b>
  // CHECK: nvvm.cp.async.commit.group
  tessel.async_commit
  // CHECK-NEXT: nvvm.cp.async.wait.group 0
  // CHECK-NEXT: nvvm.barrier0
  tessel.async_wait 0
  %z = arith.constant 0.0 : f32
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma>
  %a = tessel.splat %x : f16 -> !tessel.tile<64x64xf16, #opa>
  // CHECK-NOT: llvm.store
  // Per step of K (4 of them): two x4 ldmatrix, four mma.sync.
  // CHECK-COUNT-2: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
  // CHECK-COUNT-4: nvvm.mma.sync
  // CHECK-COUNT-2: nvvm.ldmatrix
  // CHECK-COUNT-4: nvvm.mma.sync
  %d = tessel.dot %a, %view, %acc : !tessel.tile<64x64xf16, #opa>, !tessel.memdesc<64x32xf16, order = [1, 0]> -> !tessel.tile<64x32xf32, #mma>
  %t1 = tessel.reduce sum %d {axis = 1 : i32} : !tessel.tile<64x32xf32, #mma> -> !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>>
  %t = tessel.reduce sum %t1 {axis = 0 : i32} : !tessel.tile<64xf32, #tessel.slice<dim = 1, parent = #mma>> -> f32
  tessel.store %o, %t : !tessel.ptr<f32>
  %ov = tessel.memdesc_index %other[%i] : !tessel.memdesc<3x64x32xf16, order = [1, 0]> -> !tessel.memdesc<64x32xf16, order = [1, 0]>
  tessel.async_copy %pp, %ov : !tessel.tile<64x32x!tessel.ptr<f16>, #b>, !tessel.memdesc<64x32xf16, order = [1, 0]>
  return
}

// -----

// local_store writes each thread's run along the buffer's contiguous
// dimension as one access: the accumulator layout's pairs of bf16 (4 bytes,
// 16 per thread for 64 x 64 over 128 threads), a blocked f32 tile's runs of
// 4 (16 bytes). A swizzle moves whole 16-byte chunks, so an aligned run
// stays together.

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#blk = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @vectorised_local_store
// CHECK-COUNT-16: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<1xi32>, !llvm.ptr<3>
// CHECK-NOT: llvm.store %{{.*}} : bf16
// CHECK: nvvm.barrier
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NOT: llvm.store %{{.*}} : f32
func.func @vectorised_local_store(%x: bf16, %y: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %t = tessel.splat %x : bf16 -> !tessel.tile<64x64xbf16, #mma>
  %buf = tessel.local_alloc : !tessel.memdesc<64x64xbf16, order = [1, 0]>
  tessel.local_store %t, %buf : !tessel.tile<64x64xbf16, #mma>, !tessel.memdesc<64x64xbf16, order = [1, 0]>
  %f = tessel.splat %y : f32 -> !tessel.tile<32x32xf32, #blk>
  %fbuf = tessel.local_alloc : !tessel.memdesc<32x32xf32, order = [1, 0]>
  tessel.local_store %f, %fbuf : !tessel.tile<32x32xf32, #blk>, !tessel.memdesc<32x32xf32, order = [1, 0]>
  return
}

// -----

// A store whose buffer's earlier readers are known done (readers_done:
// tessel-double-buffer-stores) has no barrier before it, only the one after
// that lets every thread read the tile.

#blk = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @readers_done
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @readers_done(%y: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %f = tessel.splat %y : f32 -> !tessel.tile<32x32xf32, #blk>
  %fbuf = tessel.local_alloc : !tessel.memdesc<32x32xf32, order = [1, 0]>
  tessel.local_store %f, %fbuf readers_done : !tessel.tile<32x32xf32, #blk>, !tessel.memdesc<32x32xf32, order = [1, 0]>
  return
}

// -----

#blk = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], order = [1, 0]>
!m = !tessel.memdesc<16x40xf32, order = [1, 0]>

// f32 tiles (MTA's staged halo, read in windows at constant shifts) keep
// plain rows: no swizzle XOR in any address (16-bit rows of this width are
// swizzled), the element index row · 40 + column.
// CHECK-LABEL: llvm.func @f32_windows
// CHECK-NOT: llvm.xor
// CHECK: llvm.mlir.constant(40 : i32)
// CHECK-NOT: llvm.xor
// CHECK: llvm.return
func.func @f32_windows(%y: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %t = tessel.splat %y : f32 -> !tessel.tile<16x40xf32, #blk>
  %buf = tessel.local_alloc : !m
  tessel.local_store %t, %buf : !tessel.tile<16x40xf32, #blk>, !m
  %a = tessel.local_load %buf [0, 0] : !m -> !tessel.tile<8x32xf32, #blk>
  %b = tessel.local_load %buf [1, 3] : !m -> !tessel.tile<8x32xf32, #blk>
  return
}

// -----

// A pitched f32 buffer: rows 42 words apart, so 8-byte aligned. A thread's
// run of 4 goes out as two 8-byte stores (a 16-byte store would be
// misaligned on odd rows), and a window's element index is row · 42 + col.

#run4 = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
!p = !tessel.memdesc<16x40xf32, order = [1, 0], pitch = 42>

// CHECK-LABEL: llvm.func @pitched_rows
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xi32>, !llvm.ptr<3>
// CHECK-NOT: vector<4xi32>
// CHECK: llvm.mlir.constant(42 : i32)
// CHECK-NEXT: llvm.mul
// CHECK: llvm.return
func.func @pitched_rows(%y: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %t = tessel.splat %y : f32 -> !tessel.tile<16x40xf32, #run4>
  %buf = tessel.local_alloc : !p
  tessel.local_store %t, %buf : !tessel.tile<16x40xf32, #run4>, !p
  %a = tessel.local_load %buf [1, 3] : !p -> !tessel.tile<8x32xf32, #run4>
  return
}

// -----

// B of a warpgroup dot into runs of four columns (#tessel.mma columnRun 4),
// K contiguous: row (column of B) c is stored at the row wgmma reads for the
// accumulator slot the layout gives c. With one warpgroup and 32 columns
// that moves bit fields of c: bits 2-3 (the lane) down one, bit 1 (the
// block within a pair) up two, bits 0 and 4 in place.

#bt = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]>
!cols = !tessel.memdesc<32x32xbf16, order = [0, 1], columns = #tessel.mma<warpsPerCTA = [4, 1], columnRun = 4>>

// CHECK-LABEL: llvm.func @columns_in_runs_of_four
// CHECK: %[[C12:.*]] = llvm.mlir.constant(12 : i32) : i32
// CHECK-NEXT: %[[LANE:.*]] = llvm.and %[[COL:.*]], %[[C12]] : i32
// CHECK-NEXT: %[[C1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[DOWN:.*]] = llvm.lshr %[[LANE]], %[[C1]] : i32
// CHECK-NEXT: %[[C17:.*]] = llvm.mlir.constant(17 : i32) : i32
// CHECK-NEXT: %[[KEPT:.*]] = llvm.and %[[COL]], %[[C17]] : i32
// CHECK-NEXT: %[[OR1:.*]] = llvm.or %[[DOWN]], %[[KEPT]] : i32
// CHECK-NEXT: %[[C2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[PAIR:.*]] = llvm.and %[[COL]], %[[C2]] : i32
// CHECK-NEXT: %[[C2B:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[UP:.*]] = llvm.shl %[[PAIR]], %[[C2B]] : i32
// CHECK-NEXT: llvm.or %[[OR1]], %[[UP]] : i32
// CHECK: llvm.return
func.func @columns_in_runs_of_four(%x: bf16) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %t = tessel.splat %x : bf16 -> !tessel.tile<32x32xbf16, #bt>
  %buf = tessel.local_alloc : !cols
  tessel.local_store %t, %buf : !tessel.tile<32x32xbf16, #bt>, !cols
  return
}
