// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm | FileCheck %s

// A 64x64 bf16 product on one warpgroup (4 warps along M), K = 32: two
// wgmma.m64n64k16, A from registers, B (K x N, N contiguous: 64 columns of
// 128 bytes, the 128-byte swizzle) through a descriptor with the transpose
// bit. The descriptor: swizzle mode 1 (bits 62-63), SBO 1024 bytes (8 rows
// of 128 bytes, bits 32-45 = 64), LBO the column-block stride 32 * 128 =
// 4096 bytes (bits 16-29 = 256); the second step starts 16 rows = 2048
// bytes (128 units) further. The fence takes every accumulator and A
// register in and out, the wait every accumulator. The scale-d predicate p
// is set from the constant 1 (accumulate).

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: llvm.func @mn_major
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.fence.sync.aligned;", "=f,=f,{{.*}},=r,=r,=r,=r,=r,=r,=r,=r,0,1,2,{{.*}}"
// CHECK: %[[ADDR:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<3> to i64
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(262143 : i64) : i64
// CHECK: %[[LOW:.*]] = llvm.and %[[ADDR]], %[[MASK]] : i64
// CHECK: %[[START:.*]] = llvm.lshr %[[LOW]], %{{.*}} : i64
// CHECK: %[[BITS:.*]] = llvm.mlir.constant(4611686293322072064 : i64) : i64
// CHECK: %[[BASE:.*]] = llvm.or %[[START]], %[[BITS]] : i64
// CHECK: %[[S0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[D0:.*]] = llvm.add %[[BASE]], %[[S0]] : i64
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred p;\0A\09setp.ne.b32 p, $69, 0;\0A\09wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1, {{.*}}, $31}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;\0A\09}", "=f,{{.*}},=f,0,1,{{.*}},31,r,r,r,r,l,r"
// CHECK: %[[S1:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK: llvm.add %[[BASE]], %[[S1]] : i64
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: wgmma.mma_async
// CHECK: llvm.return
func.func @mn_major(%x: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<64x64xf32, #mma>
  return
}

// -----

// K contiguous (B = trans of a row-major key tile), K = 128: two column
// blocks of 64; steps 0-3 advance 32 bytes inside the first block (2 units
// each), steps 4-7 start in the second, 64 rows * 128 bytes = 8192 bytes
// (512 units) on. No transpose bit; LBO is not read (1).

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: llvm.func @k_major
// CHECK: llvm.mlir.constant(4611686293305360384 : i64) : i64
// CHECK: llvm.mlir.constant(0 : i64) : i64
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, p, 1, 1, 0;
// CHECK: llvm.mlir.constant(2 : i64) : i64
// CHECK: llvm.mlir.constant(4 : i64) : i64
// CHECK: llvm.mlir.constant(6 : i64) : i64
// CHECK: llvm.mlir.constant(512 : i64) : i64
// CHECK: llvm.mlir.constant(514 : i64) : i64
// CHECK: llvm.mlir.constant(516 : i64) : i64
// CHECK: llvm.mlir.constant(518 : i64) : i64
// CHECK-COUNT-1: nvvm.wgmma.commit.group.sync.aligned
func.func @k_major(%x: f16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : f16 -> !tessel.tile<64x128xf16, #opa>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %k = tessel.local_alloc : !tessel.memdesc<64x128xf16, order = [1, 0]>
  %b = tessel.memdesc_trans %k : !tessel.memdesc<64x128xf16, order = [1, 0]> -> !tessel.memdesc<128x64xf16, order = [0, 1]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x128xf16, #opa>, !tessel.memdesc<128x64xf16, order = [0, 1]> -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<64x64xf32, #mma>
  return
}

// -----

// Two warpgroups side by side along N (warps [4, 2]): the 8-column blocks
// of the 64 x 64 result alternate between them, so each issues m64n32 over
// every other group of 8 rows of the K-major B: SBO twice a group's 1024
// bytes (128 units), and warpgroup 1 starts one group (1024 bytes) in.

#mma42 = #tessel.mma<warpsPerCTA = [4, 2]>
#opa42 = #tessel.dot_operand<opIdx = 0, parent = #mma42>

// CHECK-LABEL: llvm.func @warpgroups_along_n
// CHECK: nvvm.shfl.sync idx
// CHECK: llvm.mlir.constant(1024 : i32) : i32
// CHECK: llvm.mlir.constant(4611686568183267328 : i64) : i64
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// CHECK-NOT: wgmma.mma_async.sync.aligned.m64n64
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @warpgroups_along_n(%x: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %a = tessel.splat %x : bf16 -> !tessel.tile<64x128xbf16, #opa42>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma42>
  %b = tessel.local_alloc : !tessel.memdesc<128x64xbf16, order = [0, 1]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x128xbf16, #opa42>, !tessel.memdesc<128x64xbf16, order = [0, 1]> -> !tessel.tile<64x64xf32, #mma42>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<64x64xf32, #mma42>
  return
}

// -----

// Two warpgroups (8 warps) over 128 rows: each thread's one 16-row block is
// in its warpgroup's 64-row slice, one wgmma per step. Four warps over 128
// rows: two slices per warpgroup, two wgmma per step.

#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
#opa8 = #tessel.dot_operand<opIdx = 0, parent = #mma8>
#mma4 = #tessel.mma<warpsPerCTA = [4, 1]>
#opa4 = #tessel.dot_operand<opIdx = 0, parent = #mma4>

// CHECK-LABEL: llvm.func @two_warpgroups
// CHECK-COUNT-1: wgmma.mma_async
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @two_warpgroups(%x: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %a = tessel.splat %x : bf16 -> !tessel.tile<128x16xbf16, #opa8>
  %acc = tessel.splat %z : f32 -> !tessel.tile<128x64xf32, #mma8>
  %b = tessel.local_alloc : !tessel.memdesc<16x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<128x16xbf16, #opa8>, !tessel.memdesc<16x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma8>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x64xf32, #mma8>
  return
}
// CHECK-LABEL: llvm.func @two_slices
// CHECK-COUNT-2: wgmma.mma_async
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @two_slices(%x: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : bf16 -> !tessel.tile<128x16xbf16, #opa4>
  %acc = tessel.splat %z : f32 -> !tessel.tile<128x64xf32, #mma4>
  %b = tessel.local_alloc : !tessel.memdesc<16x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<128x16xbf16, #opa4>, !tessel.memdesc<16x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma4>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x64xf32, #mma4>
  return
}

// -----

// A from shared memory too: 128 x 128 bf16, K contiguous (two column blocks
// of 64, the 128-byte swizzle), over two warpgroups (8 warps). A's
// descriptor is B's K-major one: swizzle mode 1, SBO 8 rows * 128 bytes =
// 1024 (64 units), LBO 1 (not read): 4611686293305360384. Its start is the
// first row of the thread's warpgroup: warpgroup (warp % 8) / 4, the warp
// index read from lane 0 (warp-uniform) once at the kernel's entry and
// copied where the dot is, times 64 rows * 128 bytes = 8192. Steps 0-3
// advance 32 bytes (2 units) in the first column block, steps 4-7 start in
// the second, 128 rows * 128 bytes = 16384 bytes (1024 units) on. B
// (128 x 64, N contiguous): SBO 1024 (64 units), LBO the column-block
// stride 128 * 128 = 16384 bytes (1024 units): 4611686293372403712; 16
// rows = 2048 bytes (128 units) a step. The wgmma takes both descriptors
// ($64, $65), imm-trans-a 0 (K-major) and imm-trans-b 1; the fence only
// the 32 accumulators.

#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>

// CHECK-LABEL: llvm.func @shared_a
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[FIVE:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK: %[[WARP:.*]] = llvm.lshr %[[TID]], %[[FIVE]] : i32
// CHECK: %[[LANE0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[UNIFORM:.*]] = nvvm.shfl.sync idx %{{.*}}, %[[WARP]], %[[LANE0]], %{{.*}} : i32 -> i32
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.fence.sync.aligned;", "{{(=f,){32}0,}}1,2,{{.*}},30,31"
// CHECK: %[[BITS_B:.*]] = llvm.mlir.constant(4611686293372403712 : i64) : i64
// CHECK: %[[BASE_B:.*]] = llvm.or %{{.*}}, %[[BITS_B]] : i64
// CHECK: %[[HERE:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "mov.b32 $0, $1;", "=r,r" %[[UNIFORM]] : (i32) -> i32
// CHECK: %[[SEVEN:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK: %[[WARP_M:.*]] = llvm.and %[[HERE]], %[[SEVEN]] : i32
// CHECK: %[[WG:.*]] = llvm.lshr %[[WARP_M]], %{{.*}} : i32
// CHECK: %[[WG_BYTES:.*]] = llvm.mlir.constant(8192 : i32) : i32
// CHECK: %[[ROW:.*]] = llvm.mul %[[WG]], %[[WG_BYTES]] : i32
// CHECK: %[[ROW64:.*]] = llvm.zext %[[ROW]] : i32 to i64
// CHECK: %[[A:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<3> to i64
// CHECK: %[[FIRST:.*]] = llvm.add %[[A]], %[[ROW64]] : i64
// CHECK: %[[LOW:.*]] = llvm.and %[[FIRST]], %{{.*}} : i64
// CHECK: %[[START:.*]] = llvm.lshr %[[LOW]], %{{.*}} : i64
// CHECK: %[[BITS_A:.*]] = llvm.mlir.constant(4611686293305360384 : i64) : i64
// CHECK: %[[BASE_A:.*]] = llvm.or %[[START]], %[[BITS_A]] : i64
// CHECK: llvm.add %[[BASE_B]], %{{.*}} : i64
// CHECK: %[[A0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[A0]] : i64
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred p;\0A\09setp.ne.b32 p, $66, 0;\0A\09wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1, {{.*}}, $31}, $64, $65, p, 1, 1, 0, 1;\0A\09}", "{{(=f,){32}0,}}1,{{.*}},31,l,l,r"
// CHECK: llvm.mlir.constant(128 : i64) : i64
// CHECK: llvm.mlir.constant(2 : i64) : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(256 : i64) : i64
// CHECK: llvm.mlir.constant(4 : i64) : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(384 : i64) : i64
// CHECK: llvm.mlir.constant(6 : i64) : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(512 : i64) : i64
// CHECK: llvm.mlir.constant(1024 : i64) : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(640 : i64) : i64
// CHECK: llvm.mlir.constant(1026 : i64) : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(768 : i64) : i64
// CHECK: llvm.mlir.constant(1028 : i64) : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(896 : i64) : i64
// CHECK: llvm.mlir.constant(1030 : i64) : i64
// CHECK: wgmma.mma_async
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @shared_a(%z: f32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %acc = tessel.splat %z : f32 -> !tessel.tile<128x64xf32, #mma8>
  %a = tessel.local_alloc : !tessel.memdesc<128x128xbf16, order = [1, 0]>
  %b = tessel.local_alloc : !tessel.memdesc<128x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x128xbf16, order = [1, 0]>, !tessel.memdesc<128x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma8>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x64xf32, #mma8>
  return
}

// -----

// Four warps over 128 rows: two 64-row slices per warpgroup, the second a
// band of 64 rows further. A (128 x 32 f16, rows of 64 bytes: the 64-byte
// swizzle, mode 2) has SBO 8 * 64 = 512 bytes (32 units), LBO 1:
// 0x8000002000010000, printed as a signed i64; the warpgroup offset is
// 64 rows * 64 bytes = 4096 bytes, and so is the second slice's (256
// units); the second step is 32 bytes (2 units) on. So A's descriptor
// advances 0, 2 (slice 0), 256, 258 (slice 1). B (32 x 32, N contiguous):
// SBO 512 (32 units), LBO 32 * 64 = 2048 (128 units); 16 rows = 1024 bytes
// (64 units) a step.

#mma4 = #tessel.mma<warpsPerCTA = [4, 1]>

// CHECK-LABEL: llvm.func @shared_a_slices
// CHECK: llvm.mlir.constant(-9223371899407433728 : i64) : i64
// CHECK: %[[WG_BYTES:.*]] = llvm.mlir.constant(4096 : i32) : i32
// CHECK: llvm.mul %{{.*}}, %[[WG_BYTES]] : i32
// CHECK: %[[BITS_A:.*]] = llvm.mlir.constant(-9223371899415756800 : i64) : i64
// CHECK: %[[BASE_A:.*]] = llvm.or %{{.*}}, %[[BITS_A]] : i64
// CHECK: llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[S00:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[S00]] : i64
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {$0, {{.*}}, $15}, $32, $33, p, 1, 1, 0, 1;
// CHECK: llvm.mlir.constant(64 : i64) : i64
// CHECK: %[[S01:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[S01]] : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[S10:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[S10]] : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(64 : i64) : i64
// CHECK: %[[S11:.*]] = llvm.mlir.constant(258 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[S11]] : i64
// CHECK: wgmma.mma_async
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @shared_a_slices(%z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %acc = tessel.splat %z : f32 -> !tessel.tile<128x32xf32, #mma4>
  %a = tessel.local_alloc : !tessel.memdesc<128x32xf16, order = [1, 0]>
  %b = tessel.local_alloc : !tessel.memdesc<32x32xf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x32xf16, order = [1, 0]>, !tessel.memdesc<32x32xf16, order = [1, 0]> -> !tessel.tile<128x32xf32, #mma4>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x32xf32, #mma4>
  return
}

// -----

// A in shared memory M-major (the backward's dSᵀ stored as it is, read as
// dS): 128 x 64 bf16 with M contiguous, two column blocks of 64 rows (the
// 128-byte swizzle) of K = 64 rows each. Its descriptor is the MN-major
// one: swizzle mode 1, SBO 8 rows of K * 128 bytes = 1024 (64 units), LBO
// the column-block stride 64 * 128 = 8192 bytes (512 units):
// 4611686293338849280. The second warpgroup starts one column block on
// (8192 bytes); a step of K is 16 rows, 2048 bytes (128 units). The wgmma
// reads it with imm-trans-a 1 (B, K-major: imm-trans-b 0, 32 bytes a step).

#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>

// CHECK-LABEL: llvm.func @shared_a_m_major
// CHECK: %[[WG_BYTES:.*]] = llvm.mlir.constant(8192 : i32) : i32
// CHECK: llvm.mul %{{.*}}, %[[WG_BYTES]] : i32
// CHECK: %[[BITS_A:.*]] = llvm.mlir.constant(4611686293338849280 : i64) : i64
// CHECK: %[[BASE_A:.*]] = llvm.or %{{.*}}, %[[BITS_A]] : i64
// CHECK: llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[S0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[S0]] : i64
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, $64, $65, p, 1, 1, 1, 0;
// CHECK: llvm.mlir.constant(2 : i64) : i64
// CHECK: %[[S1:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[S1]] : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(4 : i64) : i64
// CHECK: %[[S2:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[S2]] : i64
// CHECK: wgmma.mma_async
// CHECK: llvm.mlir.constant(6 : i64) : i64
// CHECK: %[[S3:.*]] = llvm.mlir.constant(384 : i64) : i64
// CHECK: llvm.add %[[BASE_A]], %[[S3]] : i64
// CHECK: wgmma.mma_async
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @shared_a_m_major(%z: f32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %acc = tessel.splat %z : f32 -> !tessel.tile<128x64xf32, #mma8>
  %a = tessel.local_alloc : !tessel.memdesc<128x64xbf16, order = [0, 1]>
  %b = tessel.local_alloc : !tessel.memdesc<64x64xbf16, order = [0, 1]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x64xbf16, order = [0, 1]>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma8>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<128x64xf32, #mma8>
  return
}

// -----

// A dot reads its operands until the wait for its product: a buffer
// allocated (and written) between the dot and its wait does not share the
// bytes of the dot's B, although B is not used after the dot.

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>
#b = #tessel.blocked<sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>

// CHECK-LABEL: llvm.func @operands_live_until_wait
// CHECK: llvm.getelementptr %{{.*}}[0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: wgmma.mma_async
// CHECK: llvm.getelementptr %{{.*}}[4096] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: wgmma.wait_group.sync.aligned 0
func.func @operands_live_until_wait(%x: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %t = tessel.splat %x : bf16 -> !tessel.tile<32x64xbf16, #b>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xf32, #mma>
  %y = tessel.local_alloc : !tessel.memdesc<32x64xbf16, order = [1, 0]>
  tessel.local_store %t, %y : !tessel.tile<32x64xbf16, #b>, !tessel.memdesc<32x64xbf16, order = [1, 0]>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<64x64xf32, #mma>
  return
}

// -----

// A wait that keeps the dot's register A reads A's 8 registers (2 steps of
// K, 4 each, packed as the dot packs them) after the 32 accumulators it
// ties: A stays live until the products are done.

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: llvm.func @wait_keeps_a
// CHECK: wgmma.mma_async
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;", "=f,{{.*}},=f,0,{{.*}},31,r,r,r,r,r,r,r,r"
func.func @wait_keeps_a(%x: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %a = tessel.splat %x : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.warpgroup_dot_wait %p reads %a : !tessel.tile<64x32xbf16, #opa> pendings = 0 : !tessel.tile<64x64xf32, #mma>
  return
}

// -----

// A as rows of a staged tile (tessel.memdesc_rows): 72 x 64 bf16 (one
// column block of 128-byte rows), rows from 3 and from 2; the views start
// 3 * 128 = 384 and 256 bytes into the region, unswizzled (the tensor cores
// swizzle by address bits). The second dot accumulates onto the first's
// unfinished product: two groups, one wait.

#mma4 = #tessel.mma<warpsPerCTA = [4, 1]>

// CHECK-LABEL: llvm.func @shared_a_rows
// CHECK: %[[ROWS3:.*]] = llvm.mlir.constant(384 : i32) : i32
// CHECK: llvm.getelementptr %{{.*}}[%[[ROWS3]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: wgmma.wait_group
// CHECK: %[[ROWS2:.*]] = llvm.mlir.constant(256 : i32) : i32
// CHECK: llvm.getelementptr %{{.*}}[%[[ROWS2]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK-NOT: wgmma.wait_group
func.func @shared_a_rows(%z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x32xf32, #mma4>
  %x = tessel.local_alloc : !tessel.memdesc<72x64xbf16, order = [1, 0]>
  %b = tessel.local_alloc : !tessel.memdesc<64x32xbf16, order = [0, 1]>
  %a3 = tessel.memdesc_rows %x[3] : !tessel.memdesc<72x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a3, %b, %acc : !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma4>
  %a2 = tessel.memdesc_rows %x[2] : !tessel.memdesc<72x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  %q = tessel.warpgroup_dot %a2, %b, %p : !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.memdesc<64x32xbf16, order = [0, 1]> -> !tessel.tile<64x32xf32, #mma4>
  %r = tessel.warpgroup_dot_wait %q pendings = 0 : !tessel.tile<64x32xf32, #mma4>
  return
}

// -----

// A zero accumulator (a splat of +0.0) is not read: the fence ties undefined
// values into the accumulator registers (no zeros copied into them) and the
// first step of the chain has scale-d = 0 (D = A·B), the next ones 1. A
// splat of -0.0 or of a runtime value is added onto as usual.

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: llvm.func @zero_accumulator
// CHECK: %[[UNDEF:.*]] = llvm.mlir.undef : f32
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.fence.sync.aligned;", {{.*}} %[[UNDEF]], %[[UNDEF]],
// CHECK: %[[OFF:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16{{.*}}, %[[OFF]] :
// CHECK: %[[ON:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16{{.*}}, %[[ON]] :
// CHECK-LABEL: llvm.func @negative_zero_accumulator
// CHECK-NOT: llvm.mlir.undef
// CHECK: llvm.mlir.constant(4611686293322072064 : i64)
// CHECK: llvm.add %{{.*}}, %{{.*}} : i64
// CHECK-NEXT: %[[ON1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16{{.*}}, %[[ON1]] :
func.func @zero_accumulator(%x: bf16) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %zero = arith.constant 0.0 : f32
  %a = tessel.splat %x : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %acc = tessel.splat %zero : f32 -> !tessel.tile<64x64xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<64x64xf32, #mma>
  return
}

func.func @negative_zero_accumulator(%x: bf16) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %zero = arith.constant -0.0 : f32
  %a = tessel.splat %x : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %acc = tessel.splat %zero : f32 -> !tessel.tile<64x64xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<64x64xf32, #mma>
  return
}

// -----

// For sm_90a (warpgroup dots), a wait for cp.async copies fences them for
// the async proxy before its barrier, unless only threads read them
// (thread_readers: the fence would also wait for the thread's atomics).

#mma = #tessel.mma<warpsPerCTA = [4, 1]>
#opa = #tessel.dot_operand<opIdx = 0, parent = #mma>

// CHECK-LABEL: llvm.func @async_wait_fences
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK: wgmma.mma_async
module attributes {tessel.target = "sm_90a"} {
func.func @async_wait_fences(%x: bf16, %z: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  tessel.async_wait 1
  tessel.async_wait 0 {thread_readers}
  %a = tessel.splat %x : bf16 -> !tessel.tile<64x32xbf16, #opa>
  %acc = tessel.splat %z : f32 -> !tessel.tile<64x64xf32, #mma>
  %b = tessel.local_alloc : !tessel.memdesc<32x64xbf16, order = [1, 0]>
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x32xbf16, #opa>, !tessel.memdesc<32x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xf32, #mma>
  %r = tessel.warpgroup_dot_wait %p pendings = 0 : !tessel.tile<64x64xf32, #mma>
  return
}
}

// -----

// Two dots with A in shared memory over two warpgroups, in a loop: the warp
// index is read from lane 0 once, in the kernel's entry block, and each dot
// copies it where it is (no shuffle in the loop, whose latency would come
// before the loop's first wgmma in every iteration).

#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>

// CHECK-LABEL: llvm.func @warp_index_at_entry
// CHECK: nvvm.shfl.sync idx
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.br ^[[HEAD:.*]](
// CHECK: ^[[HEAD]](
// CHECK: "mov.b32 $0, $1;"
// CHECK: wgmma.mma_async
// CHECK: "mov.b32 $0, $1;"
// CHECK: wgmma.mma_async
// CHECK: llvm.br ^[[HEAD]](
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.return
func.func @warp_index_at_entry(%z: f32, %n: i32) attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %init = tessel.splat %z : f32 -> !tessel.tile<128x64xf32, #mma8>
  %a = tessel.local_alloc : !tessel.memdesc<128x128xbf16, order = [1, 0]>
  %b = tessel.local_alloc : !tessel.memdesc<128x64xbf16, order = [1, 0]>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tessel.tile<128x64xf32, #mma8>) : i32 {
    %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x128xbf16, order = [1, 0]>, !tessel.memdesc<128x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma8>
    %q = tessel.warpgroup_dot %a, %b, %p : !tessel.memdesc<128x128xbf16, order = [1, 0]>, !tessel.memdesc<128x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma8>
    %w = tessel.warpgroup_dot_wait %q pendings = 0 : !tessel.tile<128x64xf32, #mma8>
    scf.yield %w : !tessel.tile<128x64xf32, #mma8>
  }
  return
}
