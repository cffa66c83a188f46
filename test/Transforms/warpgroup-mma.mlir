// RUN: tessel-opt %s -split-input-file -tessel-warpgroup-mma | FileCheck %s

// On sm_90a a dot whose accumulator has every warp along M, in whole
// warpgroups, becomes a warpgroup dot and a wait that its uses read: B from
// the pipeline's buffer as it is (its 64-column rows are the 128-byte
// swizzle a descriptor describes).

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @from_buffer
// CHECK-SAME: (%[[A:.*]]: !tessel.tile<128x64xbf16, #{{.*}}>, %[[B:.*]]: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %[[ACC:.*]]: !tessel.tile<128x64xf32, #{{.*}}>
// CHECK-NEXT: %[[P:.*]] = tessel.warpgroup_dot %[[A]], %[[B]], %[[ACC]] : !tessel.tile<128x64xbf16, #{{.*}}>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #{{.*}}>
// CHECK-NEXT: %[[R:.*]] = tessel.warpgroup_dot_wait %[[P]] pendings = 0 : !tessel.tile<128x64xf32, #{{.*}}>
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: tessel.dot
module attributes {tessel.target = "sm_90a"} {
func.func @from_buffer(%a: !tessel.tile<128x64xbf16, #opa>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<128x64xf32, #mma>) -> !tessel.tile<128x64xf32, #mma> {
  %r = tessel.dot %a, %b, %acc : !tessel.tile<128x64xbf16, #opa>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma>
  return %r : !tessel.tile<128x64xf32, #mma>
}
}

// -----

// B in registers goes to a buffer of its own, contiguous along N where its
// threads hold runs along N.

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]>
#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
#opa8 = #tessel.dot_operand<opIdx = 0, parent = #mma8>

// CHECK-LABEL: func.func @from_registers
// CHECK: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<64x128xf16, order = [1, 0]>
// CHECK-NEXT: tessel.local_store %{{.*}}, %[[BUF]]
// CHECK-NEXT: %[[P:.*]] = tessel.warpgroup_dot %{{.*}}, %[[BUF]], %{{.*}}
// CHECK-NEXT: tessel.warpgroup_dot_wait %[[P]] pendings = 0
module attributes {tessel.target = "sm_90a"} {
func.func @from_registers(%a: !tessel.tile<128x64xf16, #opa8>, %b: !tessel.tile<64x128xf16, #b>, %acc: !tessel.tile<128x128xf32, #mma8>) -> !tessel.tile<128x128xf32, #mma8> {
  %r = tessel.dot %a, %b, %acc : !tessel.tile<128x64xf16, #opa8>, !tessel.tile<64x128xf16, #b> -> !tessel.tile<128x128xf32, #mma8>
  return %r : !tessel.tile<128x128xf32, #mma8>
}
}

// -----

// Warps along N (a 64-row tile over two warpgroups): B in registers goes to
// a buffer contiguous along K, whatever runs its threads hold.

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]>
#mma42 = #tessel.mma<warpsPerCTA = [4, 2]>
#opa42 = #tessel.dot_operand<opIdx = 0, parent = #mma42>

// CHECK-LABEL: func.func @from_registers_along_n
// CHECK: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<64x128xf16, order = [0, 1]>
// CHECK-NEXT: tessel.local_store %{{.*}}, %[[BUF]]
// CHECK-NEXT: %[[P:.*]] = tessel.warpgroup_dot %{{.*}}, %[[BUF]], %{{.*}}
module attributes {tessel.target = "sm_90a"} {
func.func @from_registers_along_n(%a: !tessel.tile<64x64xf16, #opa42>, %b: !tessel.tile<64x128xf16, #b>, %acc: !tessel.tile<64x128xf32, #mma42>) -> !tessel.tile<64x128xf32, #mma42> {
  %r = tessel.dot %a, %b, %acc : !tessel.tile<64x64xf16, #opa42>, !tessel.tile<64x128xf16, #b> -> !tessel.tile<64x128xf32, #mma42>
  return %r : !tessel.tile<64x128xf32, #mma42>
}
}

// -----

// A B in registers that a loop's dots read is stored once, where it is
// defined, and every dot reads that buffer.

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @invariant
// CHECK: %[[B:.*]] = tessel.splat
// CHECK-NEXT: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<64x64xbf16, order = [1, 0]>
// CHECK-NEXT: tessel.local_store %[[B]], %[[BUF]]
// CHECK: scf.for
// CHECK-NOT: tessel.local_store
// CHECK: tessel.warpgroup_dot %{{.*}}, %[[BUF]]
// CHECK: tessel.warpgroup_dot %{{.*}}, %[[BUF]]
module attributes {tessel.target = "sm_90a"} {
func.func @invariant(%x: bf16, %n: i32, %a: !tessel.tile<64x64xbf16, #opa>, %acc0: !tessel.tile<64x64xf32, #mma>) -> !tessel.tile<64x64xf32, #mma> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %bt = tessel.splat %x : bf16 -> !tessel.tile<64x64xbf16, #b>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<64x64xf32, #mma>) : i32 {
    %d = tessel.dot %a, %bt, %acc : !tessel.tile<64x64xbf16, #opa>, !tessel.tile<64x64xbf16, #b> -> !tessel.tile<64x64xf32, #mma>
    %e = tessel.dot %a, %bt, %d : !tessel.tile<64x64xbf16, #opa>, !tessel.tile<64x64xbf16, #b> -> !tessel.tile<64x64xf32, #mma>
    scf.yield %e : !tessel.tile<64x64xf32, #mma>
  }
  return %r : !tessel.tile<64x64xf32, #mma>
}
}

// -----

// What stays on mma.sync: warps along N (a 64-row tile over 8 warps) with
// a B buffer contiguous along N, a buffer whose rows a descriptor cannot
// describe (48 columns: 96 bytes), a target without wgmma.

#mma42 = #tessel.mma<warpsPerCTA = [4, 2]>
#opa42 = #tessel.dot_operand<opIdx = 0, parent = #mma42>
#mma4 = #tessel.mma<warpsPerCTA = [4, 1]>
#opa4 = #tessel.dot_operand<opIdx = 0, parent = #mma4>

// CHECK-LABEL: func.func @stays
// CHECK-NOT: warpgroup
// CHECK-COUNT-2: tessel.dot
// CHECK-NOT: warpgroup
module attributes {tessel.target = "sm_90a"} {
func.func @stays(%a: !tessel.tile<64x64xbf16, #opa42>, %b: !tessel.memdesc<64x64xbf16, order = [1, 0]>, %acc: !tessel.tile<64x64xf32, #mma42>,
                 %a4: !tessel.tile<64x64xbf16, #opa4>, %b48: !tessel.memdesc<64x48xbf16, order = [1, 0]>, %acc48: !tessel.tile<64x48xf32, #mma4>) {
  %r = tessel.dot %a, %b, %acc : !tessel.tile<64x64xbf16, #opa42>, !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xf32, #mma42>
  %s = tessel.dot %a4, %b48, %acc48 : !tessel.tile<64x64xbf16, #opa4>, !tessel.memdesc<64x48xbf16, order = [1, 0]> -> !tessel.tile<64x48xf32, #mma4>
  return
}
}

// -----

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @not_hopper
// CHECK-NOT: warpgroup
module attributes {tessel.target = "sm_90"} {
func.func @not_hopper(%a: !tessel.tile<128x64xbf16, #opa>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<128x64xf32, #mma>) -> !tessel.tile<128x64xf32, #mma> {
  %r = tessel.dot %a, %b, %acc : !tessel.tile<128x64xbf16, #opa>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma>
  return %r : !tessel.tile<128x64xf32, #mma>
}
}

// -----

// A defined before the loop (a query block) is stored once, right after
// the tile its conversion to the operand layout starts from, to a buffer
// with K contiguous; the dots of both loops read that buffer and the
// conversions go. A computed in the loop (P), or read by a dot outside any
// loop, stays in registers.

#blk = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [8, 1], order = [1, 0]>
#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
#opa8 = #tessel.dot_operand<opIdx = 0, parent = #mma8>

// CHECK-LABEL: func.func @invariant_a
// CHECK-SAME: (%[[Q:[^:]*]]: !tessel.tile<128x64xbf16, #{{.*}}>
// CHECK-NEXT: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<128x64xbf16, order = [1, 0]>
// CHECK-NEXT: tessel.local_store %[[Q]], %[[BUF]] : !tessel.tile<128x64xbf16, #{{.*}}>, !tessel.memdesc<128x64xbf16, order = [1, 0]>
// CHECK-NOT: tessel.local_alloc
// CHECK-NOT: tessel.convert_layout
// CHECK: scf.for
// CHECK: %[[S:.*]] = tessel.warpgroup_dot %[[BUF]], %{{.*}}, %{{.*}} : !tessel.memdesc<128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x64xbf16, order = [0, 1]>
// CHECK: %[[P:.*]] = tessel.convert_layout
// CHECK: tessel.warpgroup_dot %[[P]], %{{.*}}, %{{.*}} : !tessel.tile<128x64xbf16, #{{.*}}>, !tessel.memdesc<64x64xbf16, order = [1, 0]>
// CHECK-NOT: tessel.convert_layout
// CHECK: scf.for
// CHECK: tessel.warpgroup_dot %[[BUF]], %{{.*}}, %{{.*}} : !tessel.memdesc<128x64xbf16, order = [1, 0]>
// CHECK: %[[QR:.*]] = tessel.convert_layout %[[Q]]
// CHECK-NEXT: tessel.warpgroup_dot %[[QR]], %{{.*}}, %{{.*}} : !tessel.tile<128x64xbf16, #{{.*}}>, !tessel.memdesc<64x64xbf16, order = [0, 1]>
// CHECK-NOT: tessel.local_alloc
module attributes {tessel.target = "sm_90a"} {
func.func @invariant_a(%q: !tessel.tile<128x64xbf16, #blk>, %k: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %v: !tessel.memdesc<64x64xbf16, order = [1, 0]>, %acc0: !tessel.tile<128x64xf32, #mma8>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %a = tessel.convert_layout %q : !tessel.tile<128x64xbf16, #blk> -> !tessel.tile<128x64xbf16, #opa8>
  %o = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<128x64xf32, #mma8>) : i32 {
    %s = tessel.dot %a, %k, %acc0 : !tessel.tile<128x64xbf16, #opa8>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma8>
    %sb = tessel.cast %s : !tessel.tile<128x64xf32, #mma8> -> !tessel.tile<128x64xbf16, #mma8>
    %p = tessel.convert_layout %sb : !tessel.tile<128x64xbf16, #mma8> -> !tessel.tile<128x64xbf16, #opa8>
    %d = tessel.dot %p, %v, %acc : !tessel.tile<128x64xbf16, #opa8>, !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma8>
    scf.yield %d : !tessel.tile<128x64xf32, #mma8>
  }
  %a2 = tessel.convert_layout %q : !tessel.tile<128x64xbf16, #blk> -> !tessel.tile<128x64xbf16, #opa8>
  %o2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %o) -> (!tessel.tile<128x64xf32, #mma8>) : i32 {
    %d = tessel.dot %a2, %k, %acc : !tessel.tile<128x64xbf16, #opa8>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma8>
    scf.yield %d : !tessel.tile<128x64xf32, #mma8>
  }
  %a3 = tessel.convert_layout %q : !tessel.tile<128x64xbf16, #blk> -> !tessel.tile<128x64xbf16, #opa8>
  %r = tessel.dot %a3, %k, %o2 : !tessel.tile<128x64xbf16, #opa8>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma8>
  return
}
}

// -----

// Shared memory decides. Before: the conversion of A to its operand layout
// (32 KiB of scratch and 4 KiB of discard slots, 36 KiB) and six 32 KiB
// buffers, 228 KiB. With A stored as it is, the conversion goes: 32 + 192
// = 224 KiB, within the 227 KiB of a Hopper CTA, so A moves. With seven
// buffers A would take the kernel to 256 KiB: it stays in registers and its
// conversion stays.

#blk = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [8, 1], order = [1, 0]>
#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
#opa8 = #tessel.dot_operand<opIdx = 0, parent = #mma8>

// CHECK-LABEL: func.func @fits
// CHECK: tessel.local_alloc : !tessel.memdesc<128x128xbf16, order = [1, 0]>
// CHECK-NEXT: tessel.local_store
// CHECK-NOT: tessel.convert_layout
// CHECK: tessel.warpgroup_dot %{{.*}}, %{{.*}}, %{{.*}} : !tessel.memdesc<128x128xbf16, order = [1, 0]>
module attributes {tessel.target = "sm_90a"} {
func.func @fits(%q: !tessel.tile<128x128xbf16, #blk>, %acc0: !tessel.tile<128x128xf32, #mma8>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %a = tessel.convert_layout %q : !tessel.tile<128x128xbf16, #blk> -> !tessel.tile<128x128xbf16, #opa8>
  %bufs = tessel.local_alloc : !tessel.memdesc<6x128x128xbf16, order = [1, 0]>
  %o = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<128x128xf32, #mma8>) : i32 {
    %b = tessel.memdesc_index %bufs[%i] : !tessel.memdesc<6x128x128xbf16, order = [1, 0]> -> !tessel.memdesc<128x128xbf16, order = [1, 0]>
    %d = tessel.dot %a, %b, %acc : !tessel.tile<128x128xbf16, #opa8>, !tessel.memdesc<128x128xbf16, order = [1, 0]> -> !tessel.tile<128x128xf32, #mma8>
    scf.yield %d : !tessel.tile<128x128xf32, #mma8>
  }
  return
}
}

// -----

#blk = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [8, 1], order = [1, 0]>
#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
#opa8 = #tessel.dot_operand<opIdx = 0, parent = #mma8>

// CHECK-LABEL: func.func @too_big
// CHECK: %[[A:.*]] = tessel.convert_layout
// CHECK-NEXT: tessel.local_alloc : !tessel.memdesc<7x128x128xbf16, order = [1, 0]>
// CHECK-NOT: tessel.local_alloc
// CHECK-NOT: tessel.local_store
// CHECK: tessel.warpgroup_dot %[[A]], %{{.*}}, %{{.*}} : !tessel.tile<128x128xbf16, #{{.*}}>
module attributes {tessel.target = "sm_90a"} {
func.func @too_big(%q: !tessel.tile<128x128xbf16, #blk>, %acc0: !tessel.tile<128x128xf32, #mma8>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %a = tessel.convert_layout %q : !tessel.tile<128x128xbf16, #blk> -> !tessel.tile<128x128xbf16, #opa8>
  %bufs = tessel.local_alloc : !tessel.memdesc<7x128x128xbf16, order = [1, 0]>
  %o = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<128x128xf32, #mma8>) : i32 {
    %b = tessel.memdesc_index %bufs[%i] : !tessel.memdesc<7x128x128xbf16, order = [1, 0]> -> !tessel.memdesc<128x128xbf16, order = [1, 0]>
    %d = tessel.dot %a, %b, %acc : !tessel.tile<128x128xbf16, #opa8>, !tessel.memdesc<128x128xbf16, order = [1, 0]> -> !tessel.tile<128x128xf32, #mma8>
    scf.yield %d : !tessel.tile<128x128xf32, #mma8>
  }
  return
}
}

// -----

// A loop-invariant tile read as A by one dot and as B by another, both in
// the same layout (the backward's key block: sᵀ = K·Qᵀ and dQ = dS·K), is
// stored to one buffer that both read.

#blk = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @one_buffer_for_a_and_b
// CHECK-SAME: (%[[K:[^:]*]]: !tessel.tile<64x128xbf16, #{{.*}}>
// CHECK-NEXT: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<64x128xbf16, order = [1, 0]>
// CHECK-NEXT: tessel.local_store %[[K]], %[[BUF]]
// CHECK-NOT: tessel.local_alloc
// CHECK: scf.for
// CHECK: tessel.warpgroup_dot %[[BUF]], %{{.*}}, %{{.*}} : !tessel.memdesc<64x128xbf16, order = [1, 0]>, !tessel.memdesc<128x64xbf16, order = [0, 1]>
// CHECK: tessel.warpgroup_dot %{{.*}}, %[[BUF]], %{{.*}} : !tessel.tile<64x64xbf16, #{{.*}}>, !tessel.memdesc<64x128xbf16, order = [1, 0]>
module attributes {tessel.target = "sm_90a"} {
func.func @one_buffer_for_a_and_b(%k: !tessel.tile<64x128xbf16, #blk>, %qt: !tessel.memdesc<128x64xbf16, order = [0, 1]>, %x: bf16, %n: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f32
  %zs = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %zq = tessel.splat %z : f32 -> !tessel.tile<64x128xf32, #mma>
  %ka = tessel.convert_layout %k : !tessel.tile<64x128xbf16, #blk> -> !tessel.tile<64x128xbf16, #opa>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %s = tessel.dot %ka, %qt, %zs : !tessel.tile<64x128xbf16, #opa>, !tessel.memdesc<128x64xbf16, order = [0, 1]> -> !tessel.tile<64x64xf32, #mma>
    %ds = tessel.splat %x : bf16 -> !tessel.tile<64x64xbf16, #opa>
    %dq = tessel.dot %ds, %k, %zq : !tessel.tile<64x64xbf16, #opa>, !tessel.tile<64x128xbf16, #blk> -> !tessel.tile<64x128xf32, #mma>
  }
  return
}
}

// -----

// An A that is the transpose of a tile computed in registers (dQ = dS·K with
// dSᵀ in the accumulator layout) is rounded where it is, stored once as it
// is and read M-major through the transpose bit: no transpose or layout
// conversion through shared memory is left.

#blk = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>
#blkt = #tessel.blocked<sizePerThread = [4, 1], threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [0, 1]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @transposed_a
// CHECK-SAME: (%[[DST:[^:]*]]: !tessel.tile<64x64xf32, #tessel.mma<warpsPerCTA = [4, 1]>>
// CHECK-NEXT: %[[R:.*]] = tessel.cast %[[DST]] : !tessel.tile<64x64xf32, #tessel.mma<warpsPerCTA = [4, 1]>> -> !tessel.tile<64x64xbf16, #tessel.mma<warpsPerCTA = [4, 1]>>
// CHECK-NEXT: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<64x64xbf16, order = [1, 0]>
// CHECK-NEXT: tessel.local_store %[[R]], %[[BUF]]
// CHECK-NEXT: %[[A:.*]] = tessel.memdesc_trans %[[BUF]] : !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [0, 1]>
// CHECK-NEXT: tessel.warpgroup_dot %[[A]], %{{.*}}, %{{.*}} : !tessel.memdesc<64x64xbf16, order = [0, 1]>, !tessel.memdesc<64x128xbf16, order = [1, 0]>
// CHECK-NOT: tessel.trans
// CHECK-NOT: tessel.convert_layout
// The same transpose read by a dot issued an iteration late keeps its
// registers (they go round the loop).
// CHECK-LABEL: func.func @transposed_a_rotated
// CHECK: tessel.trans
// CHECK: tessel.warpgroup_dot %{{.*}}, %{{.*}}, %{{.*}} {tessel.rotate} : !tessel.tile<64x64xbf16
module attributes {tessel.target = "sm_90a"} {
func.func @transposed_a(%dst: !tessel.tile<64x64xf32, #mma>, %kb: !tessel.memdesc<64x128xbf16, order = [1, 0]>, %acc: !tessel.tile<64x128xf32, #mma>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %b = tessel.convert_layout %dst : !tessel.tile<64x64xf32, #mma> -> !tessel.tile<64x64xf32, #blk>
  %t = tessel.trans %b [1, 0] : !tessel.tile<64x64xf32, #blk> -> !tessel.tile<64x64xf32, #blkt>
  %c = tessel.convert_layout %t : !tessel.tile<64x64xf32, #blkt> -> !tessel.tile<64x64xf32, #blk>
  %h = tessel.cast %c : !tessel.tile<64x64xf32, #blk> -> !tessel.tile<64x64xbf16, #blk>
  %a = tessel.convert_layout %h : !tessel.tile<64x64xbf16, #blk> -> !tessel.tile<64x64xbf16, #opa>
  %dq = tessel.dot %a, %kb, %acc : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x128xbf16, order = [1, 0]> -> !tessel.tile<64x128xf32, #mma>
  return
}
func.func @transposed_a_rotated(%dst: !tessel.tile<64x64xbf16, #blk>, %kb: !tessel.memdesc<64x128xbf16, order = [1, 0]>, %acc0: !tessel.tile<64x128xf32, #mma>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<64x128xf32, #mma>) : i32 {
    %t = tessel.trans %dst [1, 0] : !tessel.tile<64x64xbf16, #blk> -> !tessel.tile<64x64xbf16, #blkt>
    %a = tessel.convert_layout %t : !tessel.tile<64x64xbf16, #blkt> -> !tessel.tile<64x64xbf16, #opa>
    %d = tessel.dot %a, %kb, %acc {tessel.rotate} : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x128xbf16, order = [1, 0]> -> !tessel.tile<64x128xf32, #mma>
    scf.yield %d : !tessel.tile<64x128xf32, #mma>
  }
  return
}
}

// -----

// The transposed A's buffer (8 KiB) would take the kernel past the 227 KiB
// of a Hopper CTA (224 KiB of buffers live at the dot already): A stays the transpose in
// registers, and nothing the rewrite added is left.

#blk = #tessel.blocked<sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]>
#blkt = #tessel.blocked<sizePerThread = [4, 1], threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [0, 1]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @transposed_a_too_big
// CHECK: tessel.local_alloc : !tessel.memdesc<14x64x128xbf16, order = [1, 0]>
// CHECK-NOT: tessel.local_alloc
// CHECK-NOT: tessel.local_store
// CHECK-NOT: tessel.memdesc_trans
// CHECK: tessel.trans
// CHECK: tessel.warpgroup_dot %{{.*}}, %{{.*}}, %{{.*}} : !tessel.tile<64x64xbf16
module attributes {tessel.target = "sm_90a"} {
func.func @transposed_a_too_big(%dst: !tessel.tile<64x64xbf16, #blk>, %i: i32, %acc: !tessel.tile<64x128xf32, #mma>) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %bufs = tessel.local_alloc : !tessel.memdesc<14x64x128xbf16, order = [1, 0]>
  %kb = tessel.memdesc_index %bufs[%i] : !tessel.memdesc<14x64x128xbf16, order = [1, 0]> -> !tessel.memdesc<64x128xbf16, order = [1, 0]>
  %t = tessel.trans %dst [1, 0] : !tessel.tile<64x64xbf16, #blk> -> !tessel.tile<64x64xbf16, #blkt>
  %a = tessel.convert_layout %t : !tessel.tile<64x64xbf16, #blkt> -> !tessel.tile<64x64xbf16, #opa>
  %dq = tessel.dot %a, %kb, %acc : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x128xbf16, order = [1, 0]> -> !tessel.tile<64x128xf32, #mma>
  return
}
}

// -----

// A read back from a tile staged before the loop, whole rows at a constant
// offset (MTA's queries shifted by each offset of its convolution): the
// dots read row views of that buffer, no copy, and the loads and
// conversions go. The second dot accumulates onto the first's unfinished
// product: one wait for both.

#blk = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @staged_rows
// CHECK: %[[X:.*]] = tessel.local_alloc : !tessel.memdesc<72x64xbf16, order = [1, 0]>
// CHECK-NOT: tessel.local_alloc
// CHECK: scf.for
// CHECK-NOT: tessel.local_load
// CHECK-NOT: tessel.convert_layout
// CHECK: %[[V3:.*]] = tessel.memdesc_rows %[[X]][3] : !tessel.memdesc<72x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
// CHECK-NEXT: %[[P:.*]] = tessel.warpgroup_dot %[[V3]], %{{.*}}, %{{.*}} :
// CHECK-NEXT: %[[V0:.*]] = tessel.memdesc_rows %[[X]][0]
// CHECK-NEXT: %[[Q:.*]] = tessel.warpgroup_dot %[[V0]], %{{.*}}, %[[P]] :
// CHECK-NEXT: %[[R:.*]] = tessel.warpgroup_dot_wait %[[Q]] pendings = 0
// CHECK-NEXT: scf.yield %[[R]]
module attributes {tessel.target = "sm_90a"} {
func.func @staged_rows(%xt: !tessel.tile<72x64xbf16, #blk>, %b: !tessel.memdesc<64x32xbf16, order = [0, 1]>, %acc0: !tessel.tile<64x32xf32, #mma>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %x = tessel.local_alloc : !tessel.memdesc<72x64xbf16, order = [1, 0]>
  tessel.local_store %xt, %x : !tessel.tile<72x64xbf16, #blk>, !tessel.memdesc<72x64xbf16, order = [1, 0]>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<64x32xf32, #mma>) : i32 {
    %l3 = tessel.local_load %x [3, 0] : !tessel.memdesc<72x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xbf16, #blk>
    %a3 = tessel.convert_layout %l3 : !tessel.tile<64x64xbf16, #blk> -> !tessel.tile<64x64xbf16, #opa>
    %d = tessel.dot %a3, %b, %acc : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma>
    %l0 = tessel.local_load %x [0, 0] : !tessel.memdesc<72x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xbf16, #blk>
    %a0 = tessel.convert_layout %l0 : !tessel.tile<64x64xbf16, #blk> -> !tessel.tile<64x64xbf16, #opa>
    %e = tessel.dot %a0, %b, %d : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma>
    scf.yield %e : !tessel.tile<64x32xf32, #mma>
  }
  return
}
}

// -----

// A buffer the loop writes keeps its loads (a view would read the rows as
// they are when the dot runs).

#blk = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @written_in_loop
// CHECK: scf.for
// CHECK: tessel.local_store
// CHECK: tessel.local_load
// CHECK-NOT: tessel.memdesc_rows
// CHECK: tessel.warpgroup_dot %{{.*}} : !tessel.tile<64x64xbf16
module attributes {tessel.target = "sm_90a"} {
func.func @written_in_loop(%xt: !tessel.tile<72x64xbf16, #blk>, %b: !tessel.memdesc<64x32xbf16, order = [0, 1]>, %acc0: !tessel.tile<64x32xf32, #mma>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %x = tessel.local_alloc : !tessel.memdesc<72x64xbf16, order = [1, 0]>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<64x32xf32, #mma>) : i32 {
    tessel.local_store %xt, %x : !tessel.tile<72x64xbf16, #blk>, !tessel.memdesc<72x64xbf16, order = [1, 0]>
    %l3 = tessel.local_load %x [3, 0] : !tessel.memdesc<72x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xbf16, #blk>
    %a3 = tessel.convert_layout %l3 : !tessel.tile<64x64xbf16, #blk> -> !tessel.tile<64x64xbf16, #opa>
    %d = tessel.dot %a3, %b, %acc : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma>
    scf.yield %d : !tessel.tile<64x32xf32, #mma>
  }
  return
}
}

// -----

// Between two dots, a store to the first's B keeps the first's wait (it
// would overwrite what the product reads); a store to another buffer does
// not. A first dot with A in registers keeps its wait (it keeps them live);
// a last one needs none of its own.

#blk = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: func.func @chains
// CHECK: scf.for
// CHECK: %[[P1:.*]] = tessel.warpgroup_dot %{{.*}}, %[[B1:[^,]*]], %{{.*}} : !tessel.memdesc
// CHECK-NEXT: %[[W1:.*]] = tessel.warpgroup_dot_wait %[[P1]] pendings = 0
// CHECK-NEXT: tessel.local_store %{{.*}}, %[[B1]]
// CHECK-NEXT: %[[P2:.*]] = tessel.warpgroup_dot %{{.*}}, %[[B1]], %[[W1]] : !tessel.memdesc
// CHECK-NOT: tessel.warpgroup_dot_wait
// CHECK: tessel.local_store %{{.*}}, %[[B2:[^ ]*]] :
// CHECK-NEXT: %[[P3:.*]] = tessel.warpgroup_dot %{{.*}}, %[[B2]], %[[P2]] : !tessel.memdesc
// CHECK: %[[P4:.*]] = tessel.warpgroup_dot %{{.*}}, %[[B2]], %[[P3]] : !tessel.tile
// CHECK-NEXT: %[[W4:.*]] = tessel.warpgroup_dot_wait %[[P4]] pendings = 0
// CHECK-NEXT: tessel.warpgroup_dot %{{.*}}, %[[B2]], %[[W4]] : !tessel.memdesc
module attributes {tessel.target = "sm_90a"} {
func.func @chains(%at: !tessel.tile<64x64xbf16, #opa>, %ar: !tessel.tile<64x64xbf16, #blk>, %bt: !tessel.tile<64x32xbf16, #blk>, %acc0: !tessel.tile<64x32xf32, #mma>, %n: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %b1 = tessel.local_alloc : !tessel.memdesc<64x32xbf16, order = [0, 1]>
  %b2 = tessel.local_alloc : !tessel.memdesc<64x32xbf16, order = [0, 1]>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tessel.tile<64x32xf32, #mma>) : i32 {
    %d = tessel.dot %at, %b1, %acc : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma>
    tessel.local_store %bt, %b1 : !tessel.tile<64x32xbf16, #blk>, !tessel.memdesc<64x32xbf16, order = [0, 1]>
    %e = tessel.dot %at, %b1, %d : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma>
    tessel.local_store %bt, %b2 : !tessel.tile<64x32xbf16, #blk>, !tessel.memdesc<64x32xbf16, order = [0, 1]>
    %f = tessel.dot %at, %b2, %e : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma>
    %ai = tessel.convert_layout %ar : !tessel.tile<64x64xbf16, #blk> -> !tessel.tile<64x64xbf16, #opa>
    %ar2 = tessel.binary add %ai, %ai : !tessel.tile<64x64xbf16, #opa>
    %g = tessel.dot %ar2, %b2, %f : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma>
    %h = tessel.dot %at, %b2, %g : !tessel.tile<64x64xbf16, #opa>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma>
    scf.yield %h : !tessel.tile<64x32xf32, #mma>
  }
  return
}
}

// -----

// An accumulator in runs of four columns: B in registers goes to a buffer
// contiguous along K whose columns are in the order the runs need.

#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]>
#runs = #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>
#opr = #tessel.dot_operand<opIdx = 0, parent = #runs>

// CHECK-LABEL: func.func @from_registers_in_runs
// CHECK: %[[BUF:.*]] = tessel.local_alloc : !tessel.memdesc<64x128xf16, order = [0, 1], columns = #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>>
// CHECK-NEXT: tessel.local_store %{{.*}}, %[[BUF]]
// CHECK-NEXT: %[[P:.*]] = tessel.warpgroup_dot %{{.*}}, %[[BUF]], %{{.*}}
// CHECK-NOT: tessel.dot
module attributes {tessel.target = "sm_90a"} {
func.func @from_registers_in_runs(%a: !tessel.tile<64x64xf16, #opr>, %b: !tessel.tile<64x128xf16, #b>, %acc: !tessel.tile<64x128xf32, #runs>) -> !tessel.tile<64x128xf32, #runs> {
  %r = tessel.dot %a, %b, %acc : !tessel.tile<64x64xf16, #opr>, !tessel.tile<64x128xf16, #b> -> !tessel.tile<64x128xf32, #runs>
  return %r : !tessel.tile<64x128xf32, #runs>
}
}
