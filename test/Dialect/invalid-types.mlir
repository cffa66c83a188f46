// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// Type and attribute verifiers: these fail while the type is parsed, and MLIR
// reports them on the line of the type.

//===----------------------------------------------------------------------===//
// !tessel.ptr
//===----------------------------------------------------------------------===//

// expected-error @+1 {{pointee must be one of i1, i32, i64, f16, bf16, f32, got 'index'}}
func.func private @ptr_index(!tessel.ptr<index>)

// -----

// expected-error @+1 {{pointee must be one of i1, i32, i64, f16, bf16, f32, got '!tessel.ptr<f32>'}}
func.func private @ptr_to_ptr(!tessel.ptr<!tessel.ptr<f32>>)

// -----

// expected-error @+1 {{pointee must be one of i1, i32, i64, f16, bf16, f32, got 'f64'}}
func.func private @ptr_f64(!tessel.ptr<f64>)

// -----

//===----------------------------------------------------------------------===//
// !tessel.tile
//===----------------------------------------------------------------------===//

// expected-error @+1 {{tile must have rank at least 1}}
func.func private @tile_rank0(!tessel.tile<f32>)

// -----

// expected-error @+1 {{tile dimensions must be positive, got 0}}
func.func private @tile_zero_dim(!tessel.tile<16x0xf32>)

// -----

// expected-error @+1 {{tile must have fewer than 2^63 elements, got shape 4611686018427387904x4}}
func.func private @tile_too_large(!tessel.tile<4611686018427387904x4xf32>)

// -----

// expected-error @+1 {{expected static shape}}
func.func private @tile_dynamic(!tessel.tile<16x?xf32>)

// -----

// expected-error @+1 {{tile element type must be a scalar or a pointer, got 'index'}}
func.func private @tile_index(!tessel.tile<16xindex>)

// -----

// expected-error @+1 {{tile element type must be a scalar or a pointer, got '!tessel.kl_state<4>'}}
func.func private @tile_of_state(!tessel.tile<16x!tessel.kl_state<4>>)

// -----

// expected-error @+1 {{tile element type must be a scalar or a pointer, got '!tessel.tile<4xf32>'}}
func.func private @tile_of_tile(!tessel.tile<16x!tessel.tile<4xf32>>)

// -----

// expected-error @+1 {{tile encoding must be a layout attribute (#tessel.blocked, #tessel.slice, #tessel.mma, #tessel.dot_operand), got "row_major"}}
func.func private @tile_encoding_not_layout(!tessel.tile<16x16xf32, "row_major">)

// -----

// expected-error @+1 {{layout encoding of rank 2 does not fit a tile of rank 1}}
func.func private @tile_encoding_rank(!tessel.tile<64xf32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>)

// -----

// expected-error @+1 {{layout encoding of rank 1 does not fit a tile of rank 2}}
func.func private @slice_rank(!tessel.tile<4x8xf32, #tessel.slice<dim = 0, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>>)

// -----

//===----------------------------------------------------------------------===//
// #tessel.slice
//===----------------------------------------------------------------------===//

// expected-error @+1 {{slice dim 2 is out of range for a parent of rank 2}}
func.func private @slice_dim(!tessel.tile<4xf32, #tessel.slice<dim = 2, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>>)

// -----

// expected-error @+1 {{slice parent must have rank at least 2, got 1}}
func.func private @slice_of_1d(!tessel.tile<4xf32, #tessel.slice<dim = 0, parent = #tessel.blocked<sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]>>>)

// -----

// expected-error @+1 {{slice parent must be a layout attribute, got "row_major"}}
func.func private @slice_parent(!tessel.tile<4xf32, #tessel.slice<dim = 0, parent = "row_major">>)

// -----

//===----------------------------------------------------------------------===//
// #tessel.blocked
//===----------------------------------------------------------------------===//

// expected-error @+1 {{blocked encoding expects sizePerThread, threadsPerWarp and warpsPerCTA of the rank of order (2), got 1, 2 and 2}}
func.func private @blocked_rank(!tessel.tile<4x8xf32, #tessel.blocked<sizePerThread = [1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>)

// -----

// expected-error @+1 {{sizePerThread must be positive, got 0 in dimension 1}}
func.func private @blocked_size_zero(!tessel.tile<4x8xf32, #tessel.blocked<sizePerThread = [1, 0], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>)

// -----

// expected-error @+1 {{warpsPerCTA must be positive, got 0 in dimension 0}}
func.func private @blocked_warps_zero(!tessel.tile<4x8xf32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [0, 4], order = [1, 0]>>)

// -----

// expected-error @+1 {{threadsPerWarp must multiply to 32, got 16}}
func.func private @blocked_threads(!tessel.tile<4x8xf32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 4], warpsPerCTA = [1, 1], order = [1, 0]>>)

// -----

// expected-error @+1 {{order must be a permutation of [0, 2), got [1, 1]}}
func.func private @blocked_order_repeat(!tessel.tile<4x8xf32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 1]>>)

// -----

// expected-error @+1 {{order must be a permutation of [0, 2), got [2, 0]}}
func.func private @blocked_order_range(!tessel.tile<4x8xf32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [2, 0]>>)

// -----

// The attribute is checked on its own too, not only inside a tile.
// expected-error @+1 {{threadsPerWarp must multiply to 32, got 64}}
func.func private @blocked_alone() attributes {layout = #tessel.blocked<sizePerThread = [1], threadsPerWarp = [64], warpsPerCTA = [4], order = [0]>}

// -----

//===----------------------------------------------------------------------===//
// !tessel.softmax_state and !tessel.kl_state
//===----------------------------------------------------------------------===//

// expected-error @+1 {{softmax state expects <ROWSxCOLS>, got 1 dimension(s)}}
func.func private @softmax_state_1d(!tessel.softmax_state<16>)

// -----

// expected-error @+1 {{softmax state expects <ROWSxCOLS>, got 3 dimension(s)}}
func.func private @softmax_state_3d(!tessel.softmax_state<16x64x2>)

// -----

// expected-error @+1 {{softmax state needs positive rows and cols, got 16x0}}
func.func private @softmax_state_zero(!tessel.softmax_state<16x0>)

// -----

// expected-error @+1 {{expected static shape}}
func.func private @softmax_state_dynamic(!tessel.softmax_state<?x64>)

// -----

// expected-error @+1 {{kl state needs positive rows, got 0}}
func.func private @kl_state_zero(!tessel.kl_state<0>)

// -----

// expected-error @+1 {{kl state needs positive rows, got -4}}
func.func private @kl_state_negative(!tessel.kl_state<-4>)

// -----

// expected-error @+1 {{expected '>'}}
func.func private @kl_state_2d(!tessel.kl_state<16x64>)

// -----

//===----------------------------------------------------------------------===//
// #tessel.mma and #tessel.dot_operand
//===----------------------------------------------------------------------===//

// expected-error @+1 {{mma encoding expects warpsPerCTA = [wm, wn], got 1 value(s)}}
func.func private @mma_rank(!tessel.tile<64x64xf32, #tessel.mma<warpsPerCTA = [4]>>)

// -----

// expected-error @+1 {{mma warpsPerCTA must be powers of two, got 3}}
func.func private @mma_warps(!tessel.tile<64x64xf32, #tessel.mma<warpsPerCTA = [3, 1]>>)

// -----

// expected-error @+1 {{mma columnRun must be 2 or 4, got 8}}
func.func private @mma_run(!tessel.tile<64x64xf32, #tessel.mma<warpsPerCTA = [4, 1], columnRun = 8>>)

// -----

// expected-error @+1 {{mma columnRun = 4 is a warpgroup layout: it needs a multiple of 4 warps along M, got 2}}
func.func private @mma_run_warps(!tessel.tile<64x64xf32, #tessel.mma<warpsPerCTA = [2, 2], columnRun = 4>>)

// -----

// expected-error @+1 {{layout encoding of rank 2 does not fit a tile of rank 1}}
func.func private @mma_tile_rank(!tessel.tile<64xf32, #tessel.mma<warpsPerCTA = [4, 1]>>)

// -----

// expected-error @+1 {{dot_operand opIdx must be 0 (A) or 1 (B), got 2}}
func.func private @dot_operand_index(!tessel.tile<64x64xf16, #tessel.dot_operand<opIdx = 2, parent = #tessel.mma<warpsPerCTA = [4, 1]>>>)

// -----

// expected-error @+2 {{expected an #tessel.mma layout, got #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>}}
// expected-error @+1 {{failed to parse Tessel_DotOperandEncodingAttr parameter 'parent'}}
func.func private @dot_operand_parent(!tessel.tile<64x32xf16, #tessel.dot_operand<opIdx = 0, parent = #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>>)

// -----

//===----------------------------------------------------------------------===//
// !tessel.memdesc
//===----------------------------------------------------------------------===//

// expected-error @+1 {{memdesc must be a tile (2-D) or buffers of tiles (3-D), got rank 1}}
func.func private @memdesc_rank(!tessel.memdesc<64xf16, order = [1, 0]>)

// -----

// expected-error @+1 {{memdesc order must be [1, 0] or [0, 1]}}
func.func private @memdesc_order(!tessel.memdesc<64x32xf16, order = [1, 1]>)


// -----

// expected-error @+1 {{memdesc element type must be f16, bf16 or f32, got 'i32'}}
func.func private @memdesc_element(!tessel.memdesc<64x32xi32, order = [1, 0]>)

// -----

// expected-error @+1 {{only f32 memdescs take a pitch (16-bit rows are swizzled), got 'f16'}}
func.func private @memdesc_pitch_f16(!tessel.memdesc<64x32xf16, order = [1, 0], pitch = 40>)

// -----

// expected-error @+1 {{memdesc pitch must be even and at least the row's 42 elements, got 41}}
func.func private @memdesc_pitch_short(!tessel.memdesc<3x37x42xf32, order = [1, 0], pitch = 41>)

// -----

// expected-error @+1 {{memdesc pitch must be even and at least the row's 37 elements, got 43}}
func.func private @memdesc_pitch_odd(!tessel.memdesc<37x42xf32, order = [0, 1], pitch = 43>)

// -----

// expected-error @+1 {{memdesc columns need a 16-bit B operand contiguous along K (order = [0, 1]), got 'bf16' with order = [1, 0]}}
func.func private @memdesc_columns_order(!tessel.memdesc<64x64xbf16, order = [1, 0], columns = #tessel.mma<warpsPerCTA = [4, 1], columnRun = 4>>)

// -----

// expected-error @+1 {{memdesc of 48 columns cannot take the column order of #tessel.mma<warpsPerCTA = [4, 1], columnRun = 4> (pairs of 8-column blocks per warpgroup, a power of two in all)}}
func.func private @memdesc_columns_blocks(!tessel.memdesc<64x48xbf16, order = [0, 1], columns = #tessel.mma<warpsPerCTA = [4, 1], columnRun = 4>>)

// -----

// expected-error @+1 {{memdesc columns must be a #tessel.mma layout, got 7 : i32}}
func.func private @memdesc_columns_attr(!tessel.memdesc<64x64xbf16, order = [0, 1], columns = 7 : i32>)

// -----

// expected-error @+1 {{expected pitch or columns (once each), got swizzle}}
func.func private @memdesc_key(!tessel.memdesc<64x64xbf16, order = [0, 1], swizzle = 7>)
