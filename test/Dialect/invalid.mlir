// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the tessel ops and the tessel.* attributes on
// func.func. Type and attribute parse-time errors are in invalid-types.mlir.

//===----------------------------------------------------------------------===//
// tessel.kernel and tessel.num_warps
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'tessel.kernel' expects a func.func, got 'arith.constant'}}
%0 = arith.constant {tessel.kernel} 0 : i32

// -----

// expected-error @+1 {{'tessel.kernel' must be a unit attribute, got true}}
func.func @kernel_not_unit() attributes {tessel.kernel = true} {
  return
}

// -----

// expected-error @+1 {{kernel 'returns' must not return values, found 1}}
func.func @returns() -> i32 attributes {tessel.kernel} {
  %0 = arith.constant 0 : i32
  return %0 : i32
}

// -----

// expected-error @+1 {{'tessel.num_warps' must be an i32 attribute, got 4 : i64}}
func.func @num_warps_i64() attributes {tessel.kernel, tessel.num_warps = 4} {
  return
}

// -----

// expected-error @+1 {{'tessel.num_warps' must be an i32 attribute, got "4"}}
func.func @num_warps_string() attributes {tessel.kernel, tessel.num_warps = "4"} {
  return
}

// -----

// expected-error @+1 {{'tessel.num_warps' must be a power of two in [1, 32], got 6}}
func.func @num_warps_not_pow2() attributes {tessel.kernel, tessel.num_warps = 6 : i32} {
  return
}

// -----

// expected-error @+1 {{'tessel.num_warps' must be a power of two in [1, 32], got 64}}
func.func @num_warps_too_many() attributes {tessel.kernel, tessel.num_warps = 64 : i32} {
  return
}

// -----

// expected-error @+1 {{'tessel.num_warps' must be a power of two in [1, 32], got 0}}
func.func @num_warps_zero() attributes {tessel.kernel, tessel.num_warps = 0 : i32} {
  return
}

// -----

// expected-error @+1 {{'tessel.num_warps' is only valid on a kernel}}
func.func @num_warps_not_kernel() attributes {tessel.num_warps = 4 : i32} {
  return
}

// -----

// expected-error @+1 {{unknown tessel attribute 'tessel.kernal'}}
func.func @misspelt() attributes {tessel.kernal} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.program_id, tessel.num_programs
//===----------------------------------------------------------------------===//

func.func @program_id_axis() {
  // expected-error @+1 {{'tessel.program_id' op attribute 'axis' failed to satisfy constraint: 32-bit signless integer attribute whose value is non-negative whose maximum value is 2}}
  %0 = tessel.program_id 3 : i32
  return
}

// -----

func.func @num_programs_axis() {
  // expected-error @+1 {{'tessel.num_programs' op attribute 'axis' failed to satisfy constraint: 32-bit signless integer attribute whose value is non-negative whose maximum value is 2}}
  %0 = tessel.num_programs -1 : i32
  return
}

// -----

func.func @program_id_i64() {
  // expected-error @+1 {{'tessel.program_id' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = tessel.program_id 0 : i64
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.arange
//===----------------------------------------------------------------------===//

func.func @arange_empty() {
  // expected-error @+1 {{'tessel.arange' op expects end > start, got [16, 16)}}
  %0 = tessel.arange 16, 16 : !tessel.tile<16xi32>
  return
}

// -----

func.func @arange_i64() {
  // expected-error @+1 {{'tessel.arange' op expects a 1-D tile of i32, got '!tessel.tile<16xi64>'}}
  %0 = tessel.arange 0, 16 : !tessel.tile<16xi64>
  return
}

// -----

func.func @arange_2d() {
  // expected-error @+1 {{'tessel.arange' op expects a 1-D tile of i32, got '!tessel.tile<4x4xi32>'}}
  %0 = tessel.arange 0, 16 : !tessel.tile<4x4xi32>
  return
}

// -----

func.func @arange_float() {
  // expected-error @+1 {{'tessel.arange' op result #0 must be tile of integers, but got '!tessel.tile<16xf32>'}}
  %0 = tessel.arange 0, 16 : !tessel.tile<16xf32>
  return
}

// -----

func.func @arange_size() {
  // expected-error @+1 {{'tessel.arange' op expects result of shape [16], got '!tessel.tile<32xi32>'}}
  %0 = tessel.arange 16, 32 : !tessel.tile<32xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.splat
//===----------------------------------------------------------------------===//

func.func @splat_element(%s: f16) {
  // expected-error @+1 {{'tessel.splat' op expects source element type 'f32', got 'f16'}}
  %0 = tessel.splat %s : f16 -> !tessel.tile<8xf32>
  return
}

// -----

func.func @splat_tile(%t: !tessel.tile<4xf32>) {
  // expected-error @+1 {{'tessel.splat' op expects a scalar or pointer source, got '!tessel.tile<4xf32>'}}
  %0 = tessel.splat %t : !tessel.tile<4xf32> -> !tessel.tile<8xf32>
  return
}

// -----

func.func @splat_pointee(%p: !tessel.ptr<f32>) {
  // expected-error @+1 {{'tessel.splat' op expects source element type 'f32', got '!tessel.ptr<f32>'}}
  %0 = tessel.splat %p : !tessel.ptr<f32> -> !tessel.tile<8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.broadcast
//===----------------------------------------------------------------------===//

func.func @broadcast_element(%t: !tessel.tile<1x64xf32>) {
  // expected-error @+1 {{'tessel.broadcast' op expects result element type 'f32', got 'f16'}}
  %0 = tessel.broadcast %t : !tessel.tile<1x64xf32> -> !tessel.tile<8x64xf16>
  return
}

// -----

func.func @broadcast_rank(%t: !tessel.tile<64xf32>) {
  // expected-error @+1 {{'tessel.broadcast' op expects result rank 1, got 2}}
  %0 = tessel.broadcast %t : !tessel.tile<64xf32> -> !tessel.tile<8x64xf32>
  return
}

// -----

func.func @broadcast_dim(%t: !tessel.tile<2x64xf32>) {
  // expected-error @+1 {{'tessel.broadcast' op can only broadcast dimensions of size 1, but dimension 0 goes from 2 to 8}}
  %0 = tessel.broadcast %t : !tessel.tile<2x64xf32> -> !tessel.tile<8x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.expand_dims
//===----------------------------------------------------------------------===//

func.func @expand_dims_axis(%t: !tessel.tile<32xi32>) {
  // expected-error @+1 {{'tessel.expand_dims' op expects axis in [0, 1], got 2}}
  %0 = tessel.expand_dims %t {axis = 2 : i32} : !tessel.tile<32xi32> -> !tessel.tile<32x1xi32>
  return
}

// -----

func.func @expand_dims_element(%t: !tessel.tile<32xi32>) {
  // expected-error @+1 {{'tessel.expand_dims' op expects result element type 'i32', got 'i64'}}
  %0 = tessel.expand_dims %t {axis = 0 : i32} : !tessel.tile<32xi32> -> !tessel.tile<1x32xi64>
  return
}

// -----

func.func @expand_dims_shape(%t: !tessel.tile<32xi32>) {
  // expected-error @+1 {{'tessel.expand_dims' op expects result of shape [32, 1], got '!tessel.tile<1x32xi32>'}}
  %0 = tessel.expand_dims %t {axis = 1 : i32} : !tessel.tile<32xi32> -> !tessel.tile<1x32xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.reshape
//===----------------------------------------------------------------------===//

func.func @reshape_element(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.reshape' op expects result element type 'f16', got 'f32'}}
  %0 = tessel.reshape %t : !tessel.tile<4x8xf16> -> !tessel.tile<32xf32>
  return
}

// -----

func.func @reshape_size(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.reshape' op expects 32 elements in the result, got 64}}
  %0 = tessel.reshape %t : !tessel.tile<4x8xf16> -> !tessel.tile<64xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.trans
//===----------------------------------------------------------------------===//

func.func @trans_order_size(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.trans' op expects an order of 2 dimensions, got 3}}
  %0 = tessel.trans %t [1, 0, 2] : !tessel.tile<4x8xf16> -> !tessel.tile<8x4xf16>
  return
}

// -----

func.func @trans_order_repeat(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.trans' op expects order to be a permutation of [0, 2), got [1, 1]}}
  %0 = tessel.trans %t [1, 1] : !tessel.tile<4x8xf16> -> !tessel.tile<8x8xf16>
  return
}

// -----

func.func @trans_order_range(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.trans' op expects order to be a permutation of [0, 2), got [-1, 0]}}
  %0 = tessel.trans %t [-1, 0] : !tessel.tile<4x8xf16> -> !tessel.tile<8x4xf16>
  return
}

// -----

func.func @trans_element(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.trans' op expects result element type 'f16', got 'f32'}}
  %0 = tessel.trans %t [1, 0] : !tessel.tile<4x8xf16> -> !tessel.tile<8x4xf32>
  return
}

// -----

func.func @trans_shape(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.trans' op expects result of shape [8, 4], got '!tessel.tile<4x8xf16>'}}
  %0 = tessel.trans %t [1, 0] : !tessel.tile<4x8xf16> -> !tessel.tile<4x8xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.extract_slice
//===----------------------------------------------------------------------===//

func.func @extract_slice_element(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.extract_slice' op expects result element type 'f16', got 'f32'}}
  %0 = tessel.extract_slice %t [0, 0] : !tessel.tile<4x8xf16> -> !tessel.tile<2x2xf32>
  return
}

// -----

func.func @extract_slice_offsets(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.extract_slice' op expects 2 offsets and a result of the same rank, got 1 offsets and rank 2}}
  %0 = tessel.extract_slice %t [0] : !tessel.tile<4x8xf16> -> !tessel.tile<2x2xf16>
  return
}

// -----

func.func @extract_slice_rank(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.extract_slice' op expects 2 offsets and a result of the same rank, got 2 offsets and rank 1}}
  %0 = tessel.extract_slice %t [0, 0] : !tessel.tile<4x8xf16> -> !tessel.tile<2xf16>
  return
}

// -----

func.func @extract_slice_bounds(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.extract_slice' op slice [4, 10) of dimension 1 is out of bounds for size 8}}
  %0 = tessel.extract_slice %t [0, 4] : !tessel.tile<4x8xf16> -> !tessel.tile<2x6xf16>
  return
}

// -----

func.func @extract_slice_negative(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.extract_slice' op slice [-1, 1) of dimension 0 is out of bounds for size 4}}
  %0 = tessel.extract_slice %t [-1, 0] : !tessel.tile<4x8xf16> -> !tessel.tile<2x6xf16>
  return
}

// -----

// The end of the slice overflows int64; it is still out of bounds.
func.func @extract_slice_overflow(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.extract_slice' op slice [9223372036854775807, 9223372036854775807 + 2) of dimension 1 is out of bounds for size 8}}
  %0 = tessel.extract_slice %t [0, 9223372036854775807] : !tessel.tile<4x8xf16> -> !tessel.tile<2x2xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.convert_layout
//===----------------------------------------------------------------------===//

func.func @convert_layout_element(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.convert_layout' op expects result element type 'f16', got 'f32'}}
  %0 = tessel.convert_layout %t : !tessel.tile<4x8xf16> -> !tessel.tile<4x8xf32, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>
  return
}

// -----

func.func @convert_layout_shape(%t: !tessel.tile<4x8xf16>) {
  // expected-error @+1 {{'tessel.convert_layout' op expects result of shape [4, 8], got '!tessel.tile<8x4xf16, #tessel.blocked}}
  %0 = tessel.convert_layout %t : !tessel.tile<4x8xf16> -> !tessel.tile<8x4xf16, #tessel.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.binary, tessel.unary
//===----------------------------------------------------------------------===//

func.func @binary_pointers(%p: !tessel.tile<16x!tessel.ptr<f32>>) {
  // expected-error @+1 {{'tessel.binary' op expects integer or float elements, got pointers in '!tessel.tile<16x!tessel.ptr<f32>>' (use tessel.addptr for pointer arithmetic)}}
  %0 = tessel.binary add %p, %p : !tessel.tile<16x!tessel.ptr<f32>>
  return
}

// -----

func.func @binary_bitwise_float(%a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.binary' op 'xor' expects integer elements, got 'f32'}}
  %0 = tessel.binary xor %a, %a : !tessel.tile<16xf32>
  return
}

// -----

func.func @binary_shift_float(%a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.binary' op 'shr' expects integer elements, got 'f32'}}
  %0 = tessel.binary shr %a, %a : !tessel.tile<16xf32>
  return
}

// -----

func.func @binary_types(%a: !tessel.tile<16xf32>, %b: !tessel.tile<16xf16>) {
  // expected-error @+1 {{'tessel.binary' op requires the same type for all operands and results}}
  %0 = "tessel.binary"(%a, %b) <{kind = 0 : i32}> : (!tessel.tile<16xf32>, !tessel.tile<16xf16>) -> !tessel.tile<16xf32>
  return
}

// -----

func.func @binary_kind(%a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{custom op 'tessel.binary' expected string or keyword containing one of the following enum values for attribute 'kind' [add, sub, mul, div, rem, max, min, and, or, xor, shl, shr]}}
  %0 = tessel.binary pow %a, %a : !tessel.tile<16xf32>
  return
}

// -----

func.func @unary_pointers(%p: !tessel.tile<16x!tessel.ptr<f32>>) {
  // expected-error @+1 {{'tessel.unary' op expects integer or float elements, got pointers in '!tessel.tile<16x!tessel.ptr<f32>>'}}
  %0 = tessel.unary neg %p : !tessel.tile<16x!tessel.ptr<f32>>
  return
}

// -----

func.func @unary_not_float(%a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.unary' op 'not' expects integer elements, got 'f32'}}
  %0 = tessel.unary not %a : !tessel.tile<16xf32>
  return
}

// -----

func.func @unary_ftz_log(%a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.unary' op 'ftz' applies to exp and exp2 only, not 'log'}}
  %0 = tessel.unary log ftz %a : !tessel.tile<16xf32>
  return
}

// -----

func.func @unary_exp_int(%i: !tessel.tile<16xi32>) {
  // expected-error @+1 {{'tessel.unary' op 'exp' expects float elements, got 'i32'}}
  %0 = tessel.unary exp %i : !tessel.tile<16xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.cmp, tessel.select, tessel.cast
//===----------------------------------------------------------------------===//

func.func @cmp_pointers(%p: !tessel.tile<16x!tessel.ptr<f32>>) {
  // expected-error @+1 {{'tessel.cmp' op expects integer or float elements, got pointers in '!tessel.tile<16x!tessel.ptr<f32>>'}}
  %0 = tessel.cmp eq %p, %p : !tessel.tile<16x!tessel.ptr<f32>> -> !tessel.tile<16xi1>
  return
}

// -----

func.func @cmp_result_element(%a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.cmp' op expects an i1 result, got 'i32'}}
  %0 = tessel.cmp lt %a, %a : !tessel.tile<16xf32> -> !tessel.tile<16xi32>
  return
}

// -----

func.func @cmp_result_shape(%a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.cmp' op expects result of shape [16], got '!tessel.tile<8xi1>'}}
  %0 = tessel.cmp lt %a, %a : !tessel.tile<16xf32> -> !tessel.tile<8xi1>
  return
}

// -----

func.func @cmp_operand_types(%a: !tessel.tile<16xf32>, %b: !tessel.tile<16xf16>) {
  // expected-error @+1 {{'tessel.cmp' op requires all operands to have the same type}}
  %0 = "tessel.cmp"(%a, %b) <{predicate = 0 : i32}> : (!tessel.tile<16xf32>, !tessel.tile<16xf16>) -> !tessel.tile<16xi1>
  return
}

// -----

func.func @select_condition_element(%c: !tessel.tile<16xi32>, %a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.select' op expects an i1 condition, got 'i32'}}
  %0 = tessel.select %c, %a, %a : !tessel.tile<16xi32>, !tessel.tile<16xf32>
  return
}

// -----

func.func @select_condition_shape(%c: !tessel.tile<8xi1>, %a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.select' op expects condition of shape [16], got '!tessel.tile<8xi1>'}}
  %0 = tessel.select %c, %a, %a : !tessel.tile<8xi1>, !tessel.tile<16xf32>
  return
}

// -----

func.func @select_value_types(%c: !tessel.tile<16xi1>, %a: !tessel.tile<16xf32>, %b: !tessel.tile<16xf16>) {
  // expected-error @+1 {{'tessel.select' op failed to verify that all of {trueValue, falseValue, result} have same type}}
  %0 = "tessel.select"(%c, %a, %b) : (!tessel.tile<16xi1>, !tessel.tile<16xf32>, !tessel.tile<16xf16>) -> !tessel.tile<16xf32>
  return
}

// -----

func.func @cast_from_pointers(%p: !tessel.tile<16x!tessel.ptr<f32>>) {
  // expected-error @+1 {{'tessel.cast' op expects integer or float elements, got pointers in '!tessel.tile<16x!tessel.ptr<f32>>'}}
  %0 = tessel.cast %p : !tessel.tile<16x!tessel.ptr<f32>> -> !tessel.tile<16xi64>
  return
}

// -----

func.func @cast_to_pointers(%i: !tessel.tile<16xi64>) {
  // expected-error @+1 {{'tessel.cast' op expects integer or float elements, got pointers in '!tessel.tile<16x!tessel.ptr<f32>>'}}
  %0 = tessel.cast %i : !tessel.tile<16xi64> -> !tessel.tile<16x!tessel.ptr<f32>>
  return
}

// -----

func.func @cast_shape(%a: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.cast' op expects result of shape [16], got '!tessel.tile<4x4xf16>'}}
  %0 = tessel.cast %a : !tessel.tile<16xf32> -> !tessel.tile<4x4xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.addptr
//===----------------------------------------------------------------------===//

func.func @addptr_not_pointer(%x: i32) {
  // expected-error @+1 {{'tessel.addptr' op operand #0 must be pointer or tile of pointers, but got 'i32'}}
  %0 = tessel.addptr %x, %x : i32, i32
  return
}

// -----

func.func @addptr_float_offset(%p: !tessel.ptr<f32>, %x: f32) {
  // expected-error @+1 {{'tessel.addptr' op operand #1 must be}}
  %0 = tessel.addptr %p, %x : !tessel.ptr<f32>, f32
  return
}

// -----

func.func @addptr_tile_offset(%p: !tessel.ptr<f32>, %off: !tessel.tile<64xi32>) {
  // expected-error @+1 {{'tessel.addptr' op expects a scalar offset, got '!tessel.tile<64xi32>'}}
  %0 = tessel.addptr %p, %off : !tessel.ptr<f32>, !tessel.tile<64xi32>
  return
}

// -----

func.func @addptr_offset_shape(%p: !tessel.tile<64x!tessel.ptr<f32>>, %off: !tessel.tile<32xi32>) {
  // expected-error @+1 {{'tessel.addptr' op expects offset of shape [64], got '!tessel.tile<32xi32>'}}
  %0 = tessel.addptr %p, %off : !tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<32xi32>
  return
}

// -----

func.func @addptr_scalar_offset(%p: !tessel.tile<64x!tessel.ptr<f32>>, %off: i32) {
  // expected-error @+1 {{'tessel.addptr' op expects offset of shape [64], got 'i32'}}
  %0 = tessel.addptr %p, %off : !tessel.tile<64x!tessel.ptr<f32>>, i32
  return
}

// -----

func.func @addptr_result(%p: !tessel.ptr<f32>, %off: i32) {
  // expected-error @+1 {{'tessel.addptr' op failed to verify that all of {ptr, result} have same type}}
  %0 = "tessel.addptr"(%p, %off) : (!tessel.ptr<f32>, i32) -> !tessel.ptr<f16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.load, tessel.store, tessel.atomic_add
//===----------------------------------------------------------------------===//

func.func @load_not_pointer(%x: f32) {
  // expected-error @+1 {{custom op 'tessel.load' 'ptr' must be pointer or tile of pointers, but got 'f32'}}
  %0 = tessel.load %x : f32
  return
}

// -----

func.func @load_result(%p: !tessel.ptr<f32>) {
  // expected-error @+1 {{'tessel.load' op failed to verify that result holds the pointees}}
  %0 = "tessel.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tessel.ptr<f32>) -> f16
  return
}

// -----

func.func @load_mask_shape(%p: !tessel.tile<64x!tessel.ptr<f32>>, %m: !tessel.tile<32xi1>) {
  // expected-error @+1 {{'tessel.load' op failed to verify that mask is i1 of the pointers' shape}}
  %0 = "tessel.load"(%p, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<32xi1>) -> !tessel.tile<64xf32>
  return
}

// -----

// In the custom form the mask's type follows from the pointers', so a mask of
// another shape is a mismatch with its definition.
// expected-note @+1 {{prior use here}}
func.func @load_mask_shape_custom(%p: !tessel.tile<64x!tessel.ptr<f32>>, %m: !tessel.tile<32xi1>) {
  // expected-error @+1 {{use of value '%m' expects different type than prior uses: '!tessel.tile<64xi1>' vs '!tessel.tile<32xi1>'}}
  %0 = tessel.load %p mask %m : !tessel.tile<64x!tessel.ptr<f32>>
  return
}

// -----

func.func @load_mask_not_i1(%p: !tessel.tile<64x!tessel.ptr<f32>>, %m: !tessel.tile<64xi32>) {
  // expected-error @+1 {{'tessel.load' op operand #1 must be i1 or tile of i1, but got '!tessel.tile<64xi32>'}}
  %0 = "tessel.load"(%p, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<64xi32>) -> !tessel.tile<64xf32>
  return
}

// -----

func.func @load_other_type(%p: !tessel.tile<64x!tessel.ptr<f32>>, %m: !tessel.tile<64xi1>, %o: !tessel.tile<64xf16>) {
  // expected-error @+1 {{'tessel.load' op failed to verify that other has the result's type}}
  %0 = "tessel.load"(%p, %m, %o) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<64xi1>, !tessel.tile<64xf16>) -> !tessel.tile<64xf32>
  return
}

// -----

// NOTE: with a non-i1 pointee, ODS compares `other` against the mask type
// first (the mask segment is empty, so its begin() is `other`) and reports the
// mask rule instead of this one; only the predicate in TesselOps.td can fix it.
func.func @load_other_without_mask_f32(%p: !tessel.ptr<f32>, %o: f32) {
  // expected-error @+1 {{'tessel.load' op failed to verify that mask is i1 of the pointers' shape}}
  %0 = tessel.load %p other %o : !tessel.ptr<f32>
  return
}

// -----

func.func @load_other_without_mask(%p: !tessel.ptr<i1>, %o: i1) {
  // expected-error @+1 {{'tessel.load' op expects a mask when 'other' is given}}
  %0 = tessel.load %p other %o : !tessel.ptr<i1>
  return
}

// -----

func.func @store_not_pointer(%x: f32) {
  // expected-error @+1 {{custom op 'tessel.store' 'ptr' must be pointer or tile of pointers, but got 'f32'}}
  tessel.store %x, %x : f32
  return
}

// -----

func.func @store_value_type(%p: !tessel.tile<64x!tessel.ptr<f32>>, %v: !tessel.tile<64xf16>) {
  // expected-error @+1 {{'tessel.store' op failed to verify that value holds the pointees}}
  "tessel.store"(%p, %v) : (!tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<64xf16>) -> ()
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @store_value_type_custom(%p: !tessel.tile<64x!tessel.ptr<f32>>, %v: !tessel.tile<64xf16>) {
  // expected-error @+1 {{use of value '%v' expects different type than prior uses: '!tessel.tile<64xf32>' vs '!tessel.tile<64xf16>'}}
  tessel.store %p, %v : !tessel.tile<64x!tessel.ptr<f32>>
  return
}

// -----

func.func @store_mask_shape(%p: !tessel.tile<64x!tessel.ptr<f32>>, %v: !tessel.tile<64xf32>, %m: !tessel.tile<32xi1>) {
  // expected-error @+1 {{'tessel.store' op failed to verify that mask is i1 of the pointers' shape}}
  "tessel.store"(%p, %v, %m) : (!tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<64xf32>, !tessel.tile<32xi1>) -> ()
  return
}

// -----

func.func @atomic_add_pointee(%p: !tessel.ptr<f16>, %v: f16) {
  // expected-error @+1 {{'tessel.atomic_add' op expects f32 or i32 pointees, got 'f16'}}
  %0 = tessel.atomic_add %p, %v : !tessel.ptr<f16>
  return
}

// -----

func.func @atomic_add_value_type(%p: !tessel.ptr<f32>, %v: i32) {
  // expected-error @+1 {{'tessel.atomic_add' op failed to verify that value holds the pointees}}
  %0 = "tessel.atomic_add"(%p, %v) : (!tessel.ptr<f32>, i32) -> f32
  return
}

// -----

func.func @atomic_add_mask_shape(%p: !tessel.tile<64x!tessel.ptr<f32>>, %v: !tessel.tile<64xf32>, %m: !tessel.tile<32xi1>) {
  // expected-error @+1 {{'tessel.atomic_add' op failed to verify that mask is i1 of the pointers' shape}}
  %0 = "tessel.atomic_add"(%p, %v, %m) : (!tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<64xf32>, !tessel.tile<32xi1>) -> !tessel.tile<64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.dot
//===----------------------------------------------------------------------===//

func.func @dot_rank(%a: !tessel.tile<32xf16>, %b: !tessel.tile<32x8xf16>, %acc: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.dot' op expects 2-D operands, got '!tessel.tile<32xf16>' and '!tessel.tile<32x8xf16>'}}
  %0 = tessel.dot %a, %b, %acc : !tessel.tile<32xf16>, !tessel.tile<32x8xf16> -> !tessel.tile<16x8xf32>
  return
}

// -----

func.func @dot_mixed(%a: !tessel.tile<16x32xf16>, %b: !tessel.tile<32x8xbf16>, %acc: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.dot' op expects operands of one type among f16, bf16, f32, got 'f16' and 'bf16'}}
  %0 = tessel.dot %a, %b, %acc : !tessel.tile<16x32xf16>, !tessel.tile<32x8xbf16> -> !tessel.tile<16x8xf32>
  return
}

// -----

func.func @dot_int(%a: !tessel.tile<16x32xi32>, %b: !tessel.tile<32x8xi32>, %acc: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.dot' op expects operands of one type among f16, bf16, f32, got 'i32' and 'i32'}}
  %0 = tessel.dot %a, %b, %acc : !tessel.tile<16x32xi32>, !tessel.tile<32x8xi32> -> !tessel.tile<16x8xf32>
  return
}

// -----

func.func @dot_k(%a: !tessel.tile<16x32xf16>, %b: !tessel.tile<16x8xf16>, %acc: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.dot' op expects a: MxK and b: KxN, got K = 32 for a and 16 for b}}
  %0 = tessel.dot %a, %b, %acc : !tessel.tile<16x32xf16>, !tessel.tile<16x8xf16> -> !tessel.tile<16x8xf32>
  return
}

// -----

func.func @dot_acc_shape(%a: !tessel.tile<16x32xf16>, %b: !tessel.tile<32x8xf16>, %acc: !tessel.tile<8x16xf32>) {
  // expected-error @+1 {{'tessel.dot' op expects the accumulator to be a tile<16x8xf32>, got '!tessel.tile<8x16xf32>'}}
  %0 = tessel.dot %a, %b, %acc : !tessel.tile<16x32xf16>, !tessel.tile<32x8xf16> -> !tessel.tile<8x16xf32>
  return
}

// -----

func.func @dot_acc_f16(%a: !tessel.tile<16x32xf16>, %b: !tessel.tile<32x8xf16>, %acc: !tessel.tile<16x8xf16>) {
  // expected-error @+1 {{'tessel.dot' op expects the accumulator to be a tile<16x8xf32>, got '!tessel.tile<16x8xf16>'}}
  %0 = tessel.dot %a, %b, %acc : !tessel.tile<16x32xf16>, !tessel.tile<32x8xf16> -> !tessel.tile<16x8xf16>
  return
}

// -----

func.func @dot_result(%a: !tessel.tile<16x32xf16>, %b: !tessel.tile<32x8xf16>, %acc: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.dot' op failed to verify that all of {acc, result} have same type}}
  %0 = "tessel.dot"(%a, %b, %acc) : (!tessel.tile<16x32xf16>, !tessel.tile<32x8xf16>, !tessel.tile<16x8xf32>) -> !tessel.tile<16x8xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.reduce
//===----------------------------------------------------------------------===//

func.func @reduce_pointers(%p: !tessel.tile<16x!tessel.ptr<f32>>) {
  // expected-error @+1 {{'tessel.reduce' op expects integer or float elements, got pointers in '!tessel.tile<16x!tessel.ptr<f32>>'}}
  %0 = tessel.reduce max %p {axis = 0 : i32} : !tessel.tile<16x!tessel.ptr<f32>> -> !tessel.ptr<f32>
  return
}

// -----

func.func @reduce_axis(%t: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.reduce' op expects axis in [0, 2), got 2}}
  %0 = tessel.reduce sum %t {axis = 2 : i32} : !tessel.tile<16x8xf32> -> !tessel.tile<16xf32>
  return
}

// -----

func.func @reduce_element(%t: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.reduce' op expects result element type 'f32', got 'f16'}}
  %0 = tessel.reduce sum %t {axis = 1 : i32} : !tessel.tile<16x8xf32> -> !tessel.tile<16xf16>
  return
}

// -----

func.func @reduce_1d_to_tile(%t: !tessel.tile<16xf32>) {
  // expected-error @+1 {{'tessel.reduce' op reducing a 1-D tile gives a scalar, got '!tessel.tile<1xf32>'}}
  %0 = tessel.reduce sum %t {axis = 0 : i32} : !tessel.tile<16xf32> -> !tessel.tile<1xf32>
  return
}

// -----

func.func @reduce_shape(%t: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.reduce' op expects result of shape [8], got '!tessel.tile<16xf32>'}}
  %0 = tessel.reduce sum %t {axis = 0 : i32} : !tessel.tile<16x8xf32> -> !tessel.tile<16xf32>
  return
}

// -----

func.func @reduce_2d_to_scalar(%t: !tessel.tile<16x8xf32>) {
  // expected-error @+1 {{'tessel.reduce' op expects result of shape [16], got 'f32'}}
  %0 = tessel.reduce sum %t {axis = 1 : i32} : !tessel.tile<16x8xf32> -> f32
  return
}

// -----

//===----------------------------------------------------------------------===//
// Online softmax
//===----------------------------------------------------------------------===//

func.func @online_softmax_scores_rank(%st: !tessel.softmax_state<16x64>, %s: !tessel.tile<16xf32>, %v: !tessel.tile<32x64xf16>) {
  // expected-error @+1 {{'tessel.online_softmax' op expects 2-D scores, got '!tessel.tile<16xf32>'}}
  %0 = tessel.online_softmax %st, %s, %v : !tessel.softmax_state<16x64>, !tessel.tile<16xf32>, !tessel.tile<32x64xf16>
  return
}

// -----

func.func @online_softmax_scores_rows(%st: !tessel.softmax_state<16x64>, %s: !tessel.tile<8x32xf32>, %v: !tessel.tile<32x64xf16>) {
  // expected-error @+1 {{'tessel.online_softmax' op expects scores to be a tile<16x32xf32>, got '!tessel.tile<8x32xf32>'}}
  %0 = tessel.online_softmax %st, %s, %v : !tessel.softmax_state<16x64>, !tessel.tile<8x32xf32>, !tessel.tile<32x64xf16>
  return
}

// -----

func.func @online_softmax_scores_f16(%st: !tessel.softmax_state<16x64>, %s: !tessel.tile<16x32xf16>, %v: !tessel.tile<32x64xf16>) {
  // expected-error @+1 {{'tessel.online_softmax' op expects scores to be a tile<16x32xf32>, got '!tessel.tile<16x32xf16>'}}
  %0 = tessel.online_softmax %st, %s, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf16>, !tessel.tile<32x64xf16>
  return
}

// -----

func.func @online_softmax_values_int(%st: !tessel.softmax_state<16x64>, %s: !tessel.tile<16x32xf32>, %v: !tessel.tile<32x64xi32>) {
  // expected-error @+1 {{'tessel.online_softmax' op expects float values, got 'i32'}}
  %0 = tessel.online_softmax %st, %s, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xi32>
  return
}

// -----

func.func @online_softmax_values_shape(%st: !tessel.softmax_state<16x64>, %s: !tessel.tile<16x32xf32>, %v: !tessel.tile<64x32xf16>) {
  // expected-error @+1 {{'tessel.online_softmax' op expects values of shape [32, 64], got '!tessel.tile<64x32xf16>'}}
  %0 = tessel.online_softmax %st, %s, %v : !tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<64x32xf16>
  return
}

// -----

func.func @online_softmax_state(%st: !tessel.kl_state<16>, %s: !tessel.tile<16x32xf32>, %v: !tessel.tile<32x64xf16>) {
  // expected-error @+1 {{'tessel.online_softmax' op operand #0 must be online-softmax state, but got '!tessel.kl_state<16>'}}
  %0 = tessel.online_softmax %st, %s, %v : !tessel.kl_state<16>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>
  return
}

// -----

func.func @online_softmax_result(%st: !tessel.softmax_state<16x64>, %s: !tessel.tile<16x32xf32>, %v: !tessel.tile<32x64xf16>) {
  // expected-error @+1 {{'tessel.online_softmax' op failed to verify that all of {state, result} have same type}}
  %0 = "tessel.online_softmax"(%st, %s, %v) : (!tessel.softmax_state<16x64>, !tessel.tile<16x32xf32>, !tessel.tile<32x64xf16>) -> !tessel.softmax_state<16x32>
  return
}

// -----

func.func @softmax_merge_types(%a: !tessel.softmax_state<16x64>, %b: !tessel.softmax_state<16x32>) {
  // expected-error @+1 {{'tessel.softmax_merge' op requires the same type for all operands and results}}
  %0 = "tessel.softmax_merge"(%a, %b) : (!tessel.softmax_state<16x64>, !tessel.softmax_state<16x32>) -> !tessel.softmax_state<16x64>
  return
}

// -----

func.func @softmax_finalize_output(%st: !tessel.softmax_state<16x64>) {
  // expected-error @+1 {{'tessel.softmax_finalize' op expects the output to be a tile<16x64xf32>, got '!tessel.tile<16x64xf16>'}}
  %o, %lse = tessel.softmax_finalize %st : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf16>, !tessel.tile<16xf32>
  return
}

// -----

func.func @softmax_finalize_lse(%st: !tessel.softmax_state<16x64>) {
  // expected-error @+1 {{'tessel.softmax_finalize' op expects the log-sum-exp to be a tile<16xf32>, got '!tessel.tile<16x1xf32>'}}
  %o, %lse = tessel.softmax_finalize %st : !tessel.softmax_state<16x64> -> !tessel.tile<16x64xf32>, !tessel.tile<16x1xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Online KL
//===----------------------------------------------------------------------===//

func.func @online_kl_teacher_rank(%st: !tessel.kl_state<16>, %s: !tessel.tile<16xf32>, %t: !tessel.tile<16x32xf32>) {
  // expected-error @+1 {{'tessel.online_kl' op expects 2-D teacher scores, got '!tessel.tile<16xf32>'}}
  %0 = tessel.online_kl %st, %s, %t : !tessel.kl_state<16>, !tessel.tile<16xf32>, !tessel.tile<16x32xf32>
  return
}

// -----

func.func @online_kl_teacher_rows(%st: !tessel.kl_state<16>, %s: !tessel.tile<32x32xf32>, %t: !tessel.tile<16x32xf32>) {
  // expected-error @+1 {{'tessel.online_kl' op expects teacher scores to be a tile<16x32xf32>, got '!tessel.tile<32x32xf32>'}}
  %0 = tessel.online_kl %st, %s, %t : !tessel.kl_state<16>, !tessel.tile<32x32xf32>, !tessel.tile<16x32xf32>
  return
}

// -----

func.func @online_kl_teacher_bf16(%st: !tessel.kl_state<16>, %s: !tessel.tile<16x32xbf16>, %t: !tessel.tile<16x32xf32>) {
  // expected-error @+1 {{'tessel.online_kl' op expects teacher scores to be a tile<16x32xf32>, got '!tessel.tile<16x32xbf16>'}}
  %0 = tessel.online_kl %st, %s, %t : !tessel.kl_state<16>, !tessel.tile<16x32xbf16>, !tessel.tile<16x32xf32>
  return
}

// -----

func.func @online_kl_student(%st: !tessel.kl_state<16>, %s: !tessel.tile<16x32xf32>, %t: !tessel.tile<16x16xf32>) {
  // expected-error @+1 {{'tessel.online_kl' op expects student scores to be a tile<16x32xf32>, got '!tessel.tile<16x16xf32>'}}
  %0 = tessel.online_kl %st, %s, %t : !tessel.kl_state<16>, !tessel.tile<16x32xf32>, !tessel.tile<16x16xf32>
  return
}

// -----

func.func @online_kl_result(%st: !tessel.kl_state<16>, %s: !tessel.tile<16x32xf32>, %t: !tessel.tile<16x32xf32>) {
  // expected-error @+1 {{'tessel.online_kl' op failed to verify that all of {state, result} have same type}}
  %0 = "tessel.online_kl"(%st, %s, %t) : (!tessel.kl_state<16>, !tessel.tile<16x32xf32>, !tessel.tile<16x32xf32>) -> !tessel.kl_state<8>
  return
}

// -----

func.func @kl_merge_types(%a: !tessel.kl_state<16>, %b: !tessel.kl_state<8>) {
  // expected-error @+1 {{'tessel.kl_merge' op requires the same type for all operands and results}}
  %0 = "tessel.kl_merge"(%a, %b) : (!tessel.kl_state<16>, !tessel.kl_state<8>) -> !tessel.kl_state<16>
  return
}

// -----

func.func @kl_finalize_kl(%st: !tessel.kl_state<16>) {
  // expected-error @+1 {{'tessel.kl_finalize' op expects the KL to be a tile<16xf32>, got '!tessel.tile<8xf32>'}}
  %kl, %ls, %lt = tessel.kl_finalize %st : !tessel.kl_state<16> -> !tessel.tile<8xf32>, !tessel.tile<16xf32>, !tessel.tile<16xf32>
  return
}

// -----

func.func @kl_finalize_teacher_lse(%st: !tessel.kl_state<16>) {
  // expected-error @+1 {{'tessel.kl_finalize' op expects the teacher log-sum-exp to be a tile<16xf32>, got '!tessel.tile<16xf16>'}}
  %kl, %ls, %lt = tessel.kl_finalize %st : !tessel.kl_state<16> -> !tessel.tile<16xf32>, !tessel.tile<16xf16>, !tessel.tile<16xf32>
  return
}

// -----

func.func @kl_finalize_student_lse(%st: !tessel.kl_state<16>) {
  // expected-error @+1 {{'tessel.kl_finalize' op expects the student log-sum-exp to be a tile<16xf32>, got '!tessel.tile<1x16xf32>'}}
  %kl, %ls, %lt = tessel.kl_finalize %st : !tessel.kl_state<16> -> !tessel.tile<16xf32>, !tessel.tile<16xf32>, !tessel.tile<1x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tessel.stream_k, tessel.yield
//===----------------------------------------------------------------------===//

func.func @stream_k_body_args(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects the body region to take ('i32', 'i32', 'i32'), got ('i32', 'i32')}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32):
    %st = tessel.kl_init : !tessel.kl_state<8>
    tessel.yield %st : !tessel.kl_state<8>
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %b: !tessel.kl_state<8>):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
    tessel.yield %m : !tessel.kl_state<8>
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.kl_state<8>):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_body_arg_types(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects the body region to take ('i32', 'i32', 'i32'), got ('i32', 'index', 'index')}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: index, %end: index):
    %st = tessel.kl_init : !tessel.kl_state<8>
    tessel.yield %st : !tessel.kl_state<8>
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %b: !tessel.kl_state<8>):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
    tessel.yield %m : !tessel.kl_state<8>
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.kl_state<8>):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_empty_state(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects the body region to yield a partial state, got nothing}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    tessel.yield
  } merge {
  ^bb0:
    tessel.yield
  } epilogue {
  ^bb0(%unit: i32):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_rows_of_a_scalar(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op with rows expects every state value to have the same number of rows (a tile's first dimension), got 'i32'}}
  tessel.stream_k units(%units) iters(%iters) rows(%units) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %t = tessel.splat %begin : i32 -> !tessel.tile<8xi32>
    tessel.yield %t, %end : !tessel.tile<8xi32>, i32
  } merge {
  ^bb0(%a: !tessel.tile<8xi32>, %x: i32, %b: !tessel.tile<8xi32>, %y: i32):
    tessel.yield %a, %x : !tessel.tile<8xi32>, i32
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.tile<8xi32>, %e: i32):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_rows_disagree(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op with rows expects every state value to have the same number of rows (a tile's first dimension), got '!tessel.kl_state<16>'}}
  tessel.stream_k units(%units) iters(%iters) rows(%units) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %t = tessel.splat %begin : i32 -> !tessel.tile<8xi32>
    %st = tessel.kl_init : !tessel.kl_state<16>
    tessel.yield %t, %st : !tessel.tile<8xi32>, !tessel.kl_state<16>
  } merge {
  ^bb0(%a: !tessel.tile<8xi32>, %x: !tessel.kl_state<16>, %b: !tessel.tile<8xi32>, %y: !tessel.kl_state<16>):
    tessel.yield %a, %x : !tessel.tile<8xi32>, !tessel.kl_state<16>
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.tile<8xi32>, %e: !tessel.kl_state<16>):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_merge_args(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects the merge region to take ('!tessel.kl_state<8>', 'f32', '!tessel.kl_state<8>', 'f32'), got ('!tessel.kl_state<8>', '!tessel.kl_state<8>', 'f32', 'f32')}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %st = tessel.kl_init : !tessel.kl_state<8>
    %z = arith.constant 0.0 : f32
    tessel.yield %st, %z : !tessel.kl_state<8>, f32
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %b: !tessel.kl_state<8>, %x: f32, %y: f32):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
    %s = arith.addf %x, %y : f32
    tessel.yield %m, %s : !tessel.kl_state<8>, f32
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.kl_state<8>, %x: f32):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_merge_yield(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects the merge region to yield ('!tessel.kl_state<8>', 'f32'), got ('!tessel.kl_state<8>')}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %st = tessel.kl_init : !tessel.kl_state<8>
    %z = arith.constant 0.0 : f32
    tessel.yield %st, %z : !tessel.kl_state<8>, f32
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %x: f32, %b: !tessel.kl_state<8>, %y: f32):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
    tessel.yield %m : !tessel.kl_state<8>
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.kl_state<8>, %x: f32):
    tessel.yield
  }
  return
}

// -----

// A merge region without a yield gets an empty one, which is not the state.
func.func @stream_k_merge_no_yield(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects the merge region to yield ('!tessel.kl_state<8>'), got ()}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %st = tessel.kl_init : !tessel.kl_state<8>
    tessel.yield %st : !tessel.kl_state<8>
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %b: !tessel.kl_state<8>):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.kl_state<8>):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_epilogue_args(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects the epilogue region to take ('i32', '!tessel.kl_state<8>'), got ('!tessel.kl_state<8>')}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %st = tessel.kl_init : !tessel.kl_state<8>
    tessel.yield %st : !tessel.kl_state<8>
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %b: !tessel.kl_state<8>):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
    tessel.yield %m : !tessel.kl_state<8>
  } epilogue {
  ^bb0(%st: !tessel.kl_state<8>):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_epilogue_yield(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects the epilogue region to yield (), got ('!tessel.kl_state<8>')}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %st = tessel.kl_init : !tessel.kl_state<8>
    tessel.yield %st : !tessel.kl_state<8>
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %b: !tessel.kl_state<8>):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
    tessel.yield %m : !tessel.kl_state<8>
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.kl_state<8>):
    tessel.yield %st : !tessel.kl_state<8>
  }
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @stream_k_units_i64(%units: i64, %iters: i32) {
  // expected-error @+1 {{use of value '%units' expects different type than prior uses: 'i32' vs 'i64'}}
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %st = tessel.kl_init : !tessel.kl_state<8>
    tessel.yield %st : !tessel.kl_state<8>
  } merge {
  ^bb0(%a: !tessel.kl_state<8>, %b: !tessel.kl_state<8>):
    %m = tessel.kl_merge %a, %b : !tessel.kl_state<8>
    tessel.yield %m : !tessel.kl_state<8>
  } epilogue {
  ^bb0(%unit: i32, %st: !tessel.kl_state<8>):
    tessel.yield
  }
  return
}

// -----

func.func @yield_outside_stream_k() {
  // expected-error @+1 {{'tessel.yield' op expects parent op 'tessel.stream_k'}}
  tessel.yield
}

// -----

func.func @flag_signal_not_i32(%f: !tessel.ptr<f32>) {
  // expected-error @below {{operand #0 must be pointer to i32, but got '!tessel.ptr<f32>'}}
  tessel.flag_signal %f : !tessel.ptr<f32>
  return
}

// -----

func.func @flag_wait_tile(%f: !tessel.tile<4x!tessel.ptr<i32>>) {
  // expected-error @below {{operand #0 must be pointer to i32, but got '!tessel.tile<4x!tessel.ptr<i32>>'}}
  tessel.flag_wait %f : !tessel.tile<4x!tessel.ptr<i32>>
  return
}

// -----

// expected-error @below {{'tessel.cluster' expects an i64 in [2, 16], got 17 : i64}}
func.func @cluster_too_large() attributes {tessel.kernel, tessel.cluster = 17 : i64} {
  return
}

// -----

// expected-error @below {{'tessel.cluster' is only valid on a kernel}}
func.func @cluster_not_kernel() attributes {tessel.cluster = 2 : i64} {
  return
}

// -----

func.func @cluster_map_outside_cluster(%p: !tessel.ptr<f32, shared>, %r: i32) attributes {tessel.kernel} {
  // expected-error @+1 {{'tessel.cluster_map' op must be inside a kernel with a 'tessel.cluster' attribute}}
  %q = tessel.cluster_map %p, %r : !tessel.ptr<f32, shared>
  return
}

// -----

func.func @cluster_map_global(%p: !tessel.ptr<f32>, %r: i32) attributes {tessel.kernel, tessel.cluster = 2 : i64} {
  // expected-error @+1 {{'tessel.cluster_map' op expects a pointer to shared memory, got '!tessel.ptr<f32>'}}
  %q = tessel.cluster_map %p, %r : !tessel.ptr<f32>
  return
}

// -----

func.func @cluster_wait_outside_cluster() attributes {tessel.kernel} {
  // expected-error @+1 {{'tessel.cluster_wait' op must be inside a kernel with a 'tessel.cluster' attribute}}
  tessel.cluster_wait
  return
}

// -----

func.func @shared_buffer_global() {
  // expected-error @+1 {{'tessel.shared_buffer' op expects a pointer to shared memory, got '!tessel.ptr<f32>'}}
  %b = tessel.shared_buffer elements(4) : !tessel.ptr<f32>
  return
}

// -----

func.func @shared_buffer_empty() {
  // expected-error @+1 {{'tessel.shared_buffer' op attribute 'elements' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %b = tessel.shared_buffer elements(0) : !tessel.ptr<f32, shared>
  return
}

// -----

func.func @atomic_add_shared(%p: !tessel.ptr<f32, shared>, %x: f32) {
  // expected-error @+1 {{'tessel.atomic_add' op expects pointers to global memory}}
  %old = tessel.atomic_add %p, %x : !tessel.ptr<f32, shared>
  return
}

// -----

func.func @stream_k_max_rows_without_rows(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op with max_rows expects rows}}
  tessel.stream_k units(%units) iters(%iters) max_rows(2) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %f = arith.sitofp %begin : i32 to f32
    %t = tessel.splat %f : f32 -> !tessel.tile<4xf32>
    tessel.yield %t : !tessel.tile<4xf32>
  } merge {
  ^bb0(%a: !tessel.tile<4xf32>, %b: !tessel.tile<4xf32>):
    tessel.yield %a : !tessel.tile<4xf32>
  } epilogue {
  ^bb0(%unit: i32, %a: !tessel.tile<4xf32>):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_max_rows_too_many(%units: i32, %iters: i32, %rows: i32) {
  // expected-error @+1 {{'tessel.stream_k' op expects max_rows below the state's 4 rows, got 4}}
  tessel.stream_k units(%units) iters(%iters) rows(%rows) max_rows(4) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %f = arith.sitofp %begin : i32 to f32
    %t = tessel.splat %f : f32 -> !tessel.tile<4xf32>
    tessel.yield %t : !tessel.tile<4xf32>
  } merge {
  ^bb0(%a: !tessel.tile<4xf32>, %b: !tessel.tile<4xf32>):
    tessel.yield %a : !tessel.tile<4xf32>
  } epilogue {
  ^bb0(%unit: i32, %a: !tessel.tile<4xf32>):
    tessel.yield
  }
  return
}

// -----

func.func @stream_k_cluster_one(%units: i32, %iters: i32) {
  // expected-error @+1 {{'tessel.stream_k' op attribute 'cluster' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 2 whose maximum value is 16}}
  tessel.stream_k units(%units) iters(%iters) cluster(1) body {
  ^bb0(%unit: i32, %begin: i32, %end: i32):
    %f = arith.sitofp %begin : i32 to f32
    tessel.yield %f : f32
  } merge {
  ^bb0(%a: f32, %b: f32):
    tessel.yield %a : f32
  } epilogue {
  ^bb0(%unit: i32, %a: f32):
    tessel.yield
  }
  return
}

// -----

// expected-error @below {{'tessel.launch' expects "persistent", got "grid"}}
func.func @bad_launch() attributes {tessel.kernel, tessel.launch = "grid"} {
  return
}

// -----

// expected-error @below {{'tessel.workspace' describes 2 workspace arguments but the kernel has only 1 arguments}}
func.func @bad_workspace(%a: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.workspace = array<i64: 1, 1>} {
  return
}

// -----

// expected-error @below {{'tessel.workspace' is only valid on a kernel}}
func.func @workspace_not_kernel(%a: !tessel.ptr<i32>) attributes {tessel.workspace = array<i64: 1>} {
  return
}

// -----

// expected-error @below {{'tessel.constants' must be a dictionary, got 3 : i64}}
func.func @bad_constants() attributes {tessel.kernel, tessel.constants = 3} {
  return
}

// -----

// expected-error @below {{'tessel.then' is only valid on a kernel}}
func.func @then_not_kernel() attributes {tessel.then = @k} {
  return
}
func.func @k() attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{'tessel.then' expects a flat symbol reference, got "k"}}
func.func @then_string() attributes {tessel.kernel, tessel.then = "k"} {
  return
}

// -----

// expected-error @below {{'tessel.then' names @missing, which is not a kernel of this module}}
func.func @then_missing() attributes {tessel.kernel, tessel.then = @missing} {
  return
}

// -----

// expected-error @below {{'tessel.then' names @helper, which is not a kernel of this module}}
func.func @then_not_a_kernel() attributes {tessel.kernel, tessel.then = @helper} {
  return
}
func.func @helper() {
  return
}

// -----

// expected-error @below {{'tessel.then' names the kernel itself}}
func.func @then_self() attributes {tessel.kernel, tessel.then = @then_self} {
  return
}

// -----

// expected-error @below {{'tessel.then' names @b, which has a follow-up of its own}}
func.func @a() attributes {tessel.kernel, tessel.then = @b} {
  return
}
func.func @b() attributes {tessel.kernel, tessel.then = @c} {
  return
}
func.func @c() attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{follow-up kernel @next takes '(i32) -> ()', not '(i64) -> ()'}}
func.func @then_signature(%n: i64) attributes {tessel.kernel, tessel.then = @next} {
  return
}
func.func @next(%n: i32) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{follow-up kernel @next must have the same 'tessel.workspace'}}
func.func @then_workspace(%w: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.launch = "persistent", tessel.then = @next, tessel.workspace = array<i64: 4>} {
  return
}
func.func @next(%w: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.launch = "persistent", tessel.workspace = array<i64: 8>} {
  return
}

// -----

// expected-error @below {{follow-up kernel @next must have the same 'tessel.multiple_of' on argument 0}}
func.func @then_hint(%n: i32 {tessel.multiple_of = 8 : i64}) attributes {tessel.kernel, tessel.then = @next} {
  return
}
func.func @next(%n: i32 {tessel.multiple_of = 4 : i64}) attributes {tessel.kernel} {
  return
}

//===----------------------------------------------------------------------===//
// tessel.multiple_of on kernel arguments
//===----------------------------------------------------------------------===//

// -----

// expected-error @below {{'tessel.multiple_of' is only valid on arguments of a kernel}}
func.func @hint_not_kernel(%n: i32 {tessel.multiple_of = 8 : i64}) {
  return
}

// -----

// expected-error @below {{'tessel.multiple_of' must be a positive i64 attribute, got 0 : i64}}
func.func @hint_zero(%n: i32 {tessel.multiple_of = 0 : i64}) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{'tessel.multiple_of' must be a positive i64 attribute, got -16 : i64}}
func.func @hint_negative(%p: !tessel.ptr<f16> {tessel.multiple_of = -16 : i64}) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{'tessel.multiple_of' must be a positive i64 attribute, got 8 : i32}}
func.func @hint_i32(%n: i32 {tessel.multiple_of = 8 : i32}) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{'tessel.multiple_of' must be a positive i64 attribute, got "8"}}
func.func @hint_string(%n: i32 {tessel.multiple_of = "8"}) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{'tessel.multiple_of' on argument 1 of type 'f32' (expected i32, i64 or !tessel.ptr)}}
func.func @hint_float(%n: i32, %s: f32 {tessel.multiple_of = 2 : i64}) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{'tessel.multiple_of' on argument 0 of type 'i1' (expected i32, i64 or !tessel.ptr)}}
func.func @hint_bool(%b: i1 {tessel.multiple_of = 2 : i64}) attributes {tessel.kernel} {
  return
}

//===----------------------------------------------------------------------===//
// tessel.none on kernel arguments
//===----------------------------------------------------------------------===//

// -----

// expected-error @below {{'tessel.none' on argument 0: a unit attribute on a !tessel.ptr argument}}
func.func @none_scalar(%n: i32 {tessel.none}) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{'tessel.none' on argument 0: a unit attribute on a !tessel.ptr argument}}
func.func @none_not_unit(%p: !tessel.ptr<f32> {tessel.none = 1 : i64}) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{argument 0 is compiled as None ('tessel.none') but used}}
func.func @none_used(%p: !tessel.ptr<f32> {tessel.none}) attributes {tessel.kernel} {
  %x = tessel.load %p : !tessel.ptr<f32>
  return
}

// -----

// expected-error @below {{'tessel.none' is only valid on arguments of a kernel}}
func.func @none_not_kernel(%p: !tessel.ptr<f32> {tessel.none}) {
  return
}

// -----

// expected-error @below {{follow-up kernel @next_none must have the same 'tessel.none' on argument 0}}
func.func @then_none(%p: !tessel.ptr<f32> {tessel.none}) attributes {tessel.kernel, tessel.then = @next_none} {
  return
}
func.func @next_none(%p: !tessel.ptr<f32>) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @below {{unknown tessel argument attribute 'tessel.aligned'}}
func.func @unknown_arg_attr(%n: i32 {tessel.aligned = 8 : i64}) attributes {tessel.kernel} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// Shared memory and asynchronous copies
//===----------------------------------------------------------------------===//

func.func @index_of_a_tile(%b: !tessel.memdesc<64x32xf16, order = [1, 0]>, %i: i32) {
  // expected-error @+1 {{expects buffers of tiles (a 3-D memdesc), got '!tessel.memdesc<64x32xf16, order = [1, 0]>'}}
  %v = tessel.memdesc_index %b[%i] : !tessel.memdesc<64x32xf16, order = [1, 0]> -> !tessel.memdesc<64x32xf16, order = [1, 0]>
  return
}

// -----

func.func @index_result(%b: !tessel.memdesc<2x64x32xf16, order = [1, 0]>, %i: i32) {
  // expected-error @+1 {{result must be one buffer of '!tessel.memdesc<2x64x32xf16, order = [1, 0]>', got '!tessel.memdesc<64x32xf16, order = [0, 1]>'}}
  %v = tessel.memdesc_index %b[%i] : !tessel.memdesc<2x64x32xf16, order = [1, 0]> -> !tessel.memdesc<64x32xf16, order = [0, 1]>
  return
}

// -----

func.func @index_pitch(%b: !tessel.memdesc<2x64x36xf32, order = [1, 0], pitch = 40>, %i: i32) {
  // expected-error @+1 {{result must be one buffer of '!tessel.memdesc<2x64x36xf32, order = [1, 0], pitch = 40>', got '!tessel.memdesc<64x36xf32, order = [1, 0]>'}}
  %v = tessel.memdesc_index %b[%i] : !tessel.memdesc<2x64x36xf32, order = [1, 0], pitch = 40> -> !tessel.memdesc<64x36xf32, order = [1, 0]>
  return
}

// -----

func.func @rows_outside(%v: !tessel.memdesc<72x64xbf16, order = [1, 0]>) {
  // expected-error @+1 {{result must be rows [9, 9 + its rows) of '!tessel.memdesc<72x64xbf16, order = [1, 0]>', got '!tessel.memdesc<64x64xbf16, order = [1, 0]>'}}
  %r = tessel.memdesc_rows %v[9] : !tessel.memdesc<72x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  return
}

// -----

func.func @rows_two_blocks(%v: !tessel.memdesc<72x128xbf16, order = [1, 0]>) {
  // expected-error @+1 {{expects a tile whose rows (K contiguous) are one swizzled column block, got '!tessel.memdesc<72x128xbf16, order = [1, 0]>'}}
  %r = tessel.memdesc_rows %v[8] : !tessel.memdesc<72x128xbf16, order = [1, 0]> -> !tessel.memdesc<64x128xbf16, order = [1, 0]>
  return
}

// -----

func.func @rows_unaligned_load(%v: !tessel.memdesc<72x64xbf16, order = [1, 0]>) {
  // expected-error @+1 {{starting at row 3 (not a multiple of 8) may only be a warpgroup dot's A, read by}}
  %r = tessel.memdesc_rows %v[3] : !tessel.memdesc<72x64xbf16, order = [1, 0]> -> !tessel.memdesc<64x64xbf16, order = [1, 0]>
  %t = tessel.local_load %r [0, 0] : !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xbf16>
  return
}

// -----

func.func @trans_order(%v: !tessel.memdesc<64x32xf16, order = [1, 0]>) {
  // expected-error @+1 {{result must be the transpose of '!tessel.memdesc<64x32xf16, order = [1, 0]>' (dimensions and order swapped), got '!tessel.memdesc<32x64xf16, order = [1, 0]>'}}
  %t = tessel.memdesc_trans %v : !tessel.memdesc<64x32xf16, order = [1, 0]> -> !tessel.memdesc<32x64xf16, order = [1, 0]>
  return
}

// -----

func.func @copy_shape(%p: !tessel.tile<64x16x!tessel.ptr<f16>>, %v: !tessel.memdesc<64x32xf16, order = [1, 0]>) {
  // expected-error @+1 {{destination '!tessel.memdesc<64x32xf16, order = [1, 0]>' must be one tile of the elements '!tessel.tile<64x16x!tessel.ptr<f16>>' points to}}
  tessel.async_copy %p, %v : !tessel.tile<64x16x!tessel.ptr<f16>>, !tessel.memdesc<64x32xf16, order = [1, 0]>
  return
}

// -----

func.func @copy_element(%p: !tessel.tile<64x32x!tessel.ptr<bf16>>, %v: !tessel.memdesc<64x32xf16, order = [1, 0]>) {
  // expected-error @+1 {{must be one tile of the elements}}
  tessel.async_copy %p, %v : !tessel.tile<64x32x!tessel.ptr<bf16>>, !tessel.memdesc<64x32xf16, order = [1, 0]>
  return
}

// -----

func.func @copy_mask(%p: !tessel.tile<64x32x!tessel.ptr<f16>>, %v: !tessel.memdesc<64x32xf16, order = [1, 0]>, %m: !tessel.tile<32x64xi1>) {
  // expected-error @+1 {{mask must have the pointers' shape}}
  tessel.async_copy %p, %v mask %m : !tessel.tile<64x32x!tessel.ptr<f16>>, !tessel.memdesc<64x32xf16, order = [1, 0]>, !tessel.tile<32x64xi1>
  return
}

// -----

func.func @dot_memdesc_k(%a: !tessel.tile<16x32xf16>, %b: !tessel.memdesc<16x64xf16, order = [1, 0]>, %acc: !tessel.tile<16x64xf32>) {
  // expected-error @+1 {{expects a: MxK and b: KxN, got K = 32 for a and 16 for b}}
  %d = tessel.dot %a, %b, %acc : !tessel.tile<16x32xf16>, !tessel.memdesc<16x64xf16, order = [1, 0]> -> !tessel.tile<16x64xf32>
  return
}

// -----

// expected-error @+1 {{'tessel.num_stages' must be an i32 in [1, 8], got 9 : i32}}
func.func @stages(%x: i32) attributes {tessel.kernel, tessel.num_stages = 9 : i32} {
  return
}

// -----

func.func @local_store_shape(%t: !tessel.tile<16x32xf32>, %b: !tessel.memdesc<16x16xf32, order = [1, 0]>) {
  // expected-error @+1 {{destination '!tessel.memdesc<16x16xf32, order = [1, 0]>' must hold one '!tessel.tile<16x32xf32>'}}
  tessel.local_store %t, %b : !tessel.tile<16x32xf32>, !tessel.memdesc<16x16xf32, order = [1, 0]>
  return
}

// -----

func.func @slice_runtime_too_large(%t: !tessel.tile<16x32xf32>, %i: i32) {
  // expected-error @+1 {{'tessel.extract_slice' op slice [?, ? + 64) of dimension 1 is larger than its size 32}}
  %s = tessel.extract_slice %t [0, %i] : !tessel.tile<16x32xf32> -> !tessel.tile<16x64xf32>
  return
}

// -----

func.func @local_load_outside(%b: !tessel.memdesc<16x32xf32, order = [1, 0]>) {
  // expected-error @+1 {{slice [24, 40) of dimension 1 is out of bounds for size 32}}
  %t = tessel.local_load %b [0, 24] : !tessel.memdesc<16x32xf32, order = [1, 0]> -> !tessel.tile<8x16xf32>
  return
}

// -----

// expected-error @+1 {{'tessel.target' must be "sm_80", "sm_90" or "sm_90a", got "sm_100a"}}
module attributes {tessel.target = "sm_100a"} {
}

// -----

// expected-error @+1 {{'tessel.target' is only valid on a module}}
func.func @target_on_func() attributes {tessel.target = "sm_90a"} {
  return
}

// -----

#mma4 = #tessel.mma<warpsPerCTA = [4, 1]>
func.func @rotate_outside_loop(%a: !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma4>>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<64x64xf32, #mma4>) {
  // expected-error @+1 {{'tessel.rotate' is only valid on a dot in a loop}}
  %p = tessel.dot %a, %b, %acc {tessel.rotate} : !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma4>>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<64x64xf32, #mma4>
  return
}

// -----

func.func @rotate_not_unit() attributes {tessel.rotate = 1 : i32} {
  // expected-error @-1 {{'tessel.rotate' must be a unit attribute, got 1 : i32}}
  return
}

// -----

#mma24 = #tessel.mma<warpsPerCTA = [2, 4]>
func.func @warpgroup_warps_along_m(%a: !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma24>>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<64x64xf32, #mma24>) {
  // expected-error @+1 {{expects the accumulator in a #tessel.mma layout with a multiple of 4 warps along M (whole warpgroups)}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma24>>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<64x64xf32, #mma24>
  return
}

// -----

// An accumulator in runs of four columns reads B's columns in its own order.
#runs = #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>
func.func @warpgroup_runs_plain_b(%a: !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #runs>>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<64x64xf32, #runs>) {
  // expected-error @+1 {{expects B's columns in the order of the accumulator's layout (columns = #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>)}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #runs>>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<64x64xf32, #runs>
  return
}

// -----

// ... and an accumulator in pairs reads them in theirs.
#mma42 = #tessel.mma<warpsPerCTA = [4, 2]>
func.func @warpgroup_pairs_ordered_b(%a: !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma42>>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1], columns = #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>>, %acc: !tessel.tile<64x64xf32, #mma42>) {
  // expected-error @+1 {{expects B's columns in their own order (no columns)}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma42>>, !tessel.memdesc<64x64xbf16, order = [0, 1], columns = #tessel.mma<warpsPerCTA = [4, 2], columnRun = 4>> -> !tessel.tile<64x64xf32, #mma42>
  return
}

// -----

// Warpgroups side by side along N read every other group of 8 rows of B:
// only a K-major B has such groups.
#mma42 = #tessel.mma<warpsPerCTA = [4, 2]>
func.func @warpgroup_warps_along_n(%a: !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma42>>, %b: !tessel.memdesc<64x64xbf16, order = [1, 0]>, %acc: !tessel.tile<64x64xf32, #mma42>) {
  // expected-error @+1 {{expects B contiguous along K (order = [0, 1]) for warpgroups side by side along N}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma42>>, !tessel.memdesc<64x64xbf16, order = [1, 0]> -> !tessel.tile<64x64xf32, #mma42>
  return
}

// -----

#mma42 = #tessel.mma<warpsPerCTA = [4, 2]>
func.func @warpgroup_split_n(%a: !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma42>>, %b: !tessel.memdesc<64x24xbf16, order = [0, 1]>, %acc: !tessel.tile<64x24xf32, #mma42>) {
  // expected-error @+1 {{expects M a multiple of 64 (16 rows per warp), N a multiple of 16 up to 512 and K a multiple of 16, got 64x24x64}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma42>>, !tessel.memdesc<64x24xbf16, order = [0, 1]> -> !tessel.tile<64x24xf32, #mma42>
  return
}

// -----

#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
func.func @warpgroup_rows(%a: !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma8>>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<64x64xf32, #mma8>) {
  // expected-error @+1 {{expects M a multiple of 128 (16 rows per warp), N a multiple of 8 up to 256 and K a multiple of 16, got 64x64x64}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma8>>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<64x64xf32, #mma8>
  return
}

// -----

#mma4 = #tessel.mma<warpsPerCTA = [4, 1]>
func.func @warpgroup_b_layout(%a: !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma4>>, %b: !tessel.memdesc<64x48xbf16, order = [1, 0]>, %acc: !tessel.tile<64x48xf32, #mma4>) {
  // expected-error @+1 {{expects B in a layout a wgmma matrix descriptor describes}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x64xbf16, #tessel.dot_operand<opIdx = 0, parent = #mma4>>, !tessel.memdesc<64x48xbf16, order = [1, 0]> -> !tessel.tile<64x48xf32, #mma4>
  return
}

// -----

#mma4 = #tessel.mma<warpsPerCTA = [4, 1]>
func.func @warpgroup_a_layout(%a: !tessel.tile<64x64xbf16>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<64x64xf32, #mma4>) {
  // expected-error @+1 {{expects A in the #tessel.dot_operand layout of the accumulator's}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.tile<64x64xbf16>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<64x64xf32, #mma4>
  return
}

// -----

// Rows of 48 elements (96 bytes): no swizzle a descriptor describes.
#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
func.func @warpgroup_shared_a_layout(%a: !tessel.memdesc<128x48xbf16, order = [1, 0]>, %b: !tessel.memdesc<48x64xbf16, order = [1, 0]>, %acc: !tessel.tile<128x64xf32, #mma8>) {
  // expected-error @+1 {{expects A in shared memory as an MxK memdesc in a layout a wgmma matrix descriptor describes (K contiguous in rows of 32, 64 or a multiple of 128 bytes, or M contiguous in whole 64-row column blocks), got !tessel.memdesc<128x48xbf16, order = [1, 0]>}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x48xbf16, order = [1, 0]>, !tessel.memdesc<48x64xbf16, order = [1, 0]> -> !tessel.tile<128x64xf32, #mma8>
  return
}

// -----

// A pipeline's buffers (3-D) are read one at a time.
#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
func.func @warpgroup_shared_a_buffers(%a: !tessel.memdesc<2x128x64xbf16, order = [1, 0]>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<128x64xf32, #mma8>) {
  // expected-error @+1 {{expects 2-D f16 or bf16 operands and a 2-D f32 accumulator, got !tessel.memdesc<2x128x64xbf16, order = [1, 0]>}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<2x128x64xbf16, order = [1, 0]>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma8>
  return
}

// -----

#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
func.func @warpgroup_shared_a_rows(%a: !tessel.memdesc<64x64xbf16, order = [1, 0]>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<128x64xf32, #mma8>) {
  // expected-error @+1 {{expects M a multiple of 128 (16 rows per warp), N a multiple of 8 up to 256 and K a multiple of 16, got 128x64x64}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<64x64xbf16, order = [1, 0]>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma8>
  return
}

// -----

#mma8 = #tessel.mma<warpsPerCTA = [8, 1]>
func.func @warpgroup_shared_a_type(%a: !tessel.memdesc<128x64xf16, order = [1, 0]>, %b: !tessel.memdesc<64x64xbf16, order = [0, 1]>, %acc: !tessel.tile<128x64xf32, #mma8>) {
  // expected-error @+1 {{expects B a 64x64 memdesc of f16, got !tessel.memdesc<64x64xbf16, order = [0, 1]>}}
  %p = tessel.warpgroup_dot %a, %b, %acc : !tessel.memdesc<128x64xf16, order = [1, 0]>, !tessel.memdesc<64x64xbf16, order = [0, 1]> -> !tessel.tile<128x64xf32, #mma8>
  return
}

// -----

func.func @tensor_desc_strides(%p: !tessel.ptr<f16>, %n: i64) {
  // expected-error @+1 {{a descriptor of rank 2 needs 2 sizes and 1 strides (the innermost is 1), got 2 and 2}}
  %d = tessel.make_tensor_desc %p, [%n, %n], [%n, %n] : !tessel.ptr<f16> -> !tessel.tensor_desc<64x64xf16>
  return
}

// -----

func.func @tensor_desc_base(%p: !tessel.ptr<f32>, %n: i64) {
  // expected-error @+1 {{base must be a pointer to 'f16', got '!tessel.ptr<f32>'}}
  %d = tessel.make_tensor_desc %p, [%n, %n], [%n] : !tessel.ptr<f32> -> !tessel.tensor_desc<64x64xf16>
  return
}

// -----

func.func @load_block_shape(%d: !tessel.tensor_desc<1x64x32xf16>, %i: i32) {
  // expected-error @+1 {{result must be the block of '!tessel.tensor_desc<1x64x32xf16>' without its unit dimensions, got '!tessel.tile<1x64x32xf16>'}}
  %t = tessel.load_block %d[%i, %i, %i] : !tessel.tensor_desc<1x64x32xf16> -> !tessel.tile<1x64x32xf16>
  return
}

// -----

func.func @load_block_coords(%d: !tessel.tensor_desc<64x32xf16>, %i: i32) {
  // expected-error @+1 {{needs 2 coordinates, got 1}}
  %t = tessel.load_block %d[%i] : !tessel.tensor_desc<64x32xf16> -> !tessel.tile<64x32xf16>
  return
}

// -----

func.func @tma_load_rows(%d: !tessel.tensor_desc<12x64xf16>, %i: i32, %buf: !tessel.memdesc<12x64xf16, order = [1, 0]>) {
  %bars = tessel.mbarrier_alloc : !tessel.mbarriers<1>
  // expected-error @+1 {{the tensor memory accelerator cannot write a block of '!tessel.tensor_desc<12x64xf16>'}}
  tessel.tma_load %d[%i, %i], %buf, %bars[%i] : !tessel.tensor_desc<12x64xf16>, !tessel.memdesc<12x64xf16, order = [1, 0]>, !tessel.mbarriers<1>
  return
}

// -----

func.func @tma_load_vector_dst(%d: !tessel.tensor_desc<64xf32>, %i: i32, %buf: !tessel.memdesc<64x1xf32, order = [1, 0]>) {
  %bars = tessel.mbarrier_alloc : !tessel.mbarriers<1>
  // expected-error @+1 {{destination must hold one block of '!tessel.tensor_desc<64xf32>' with its rows contiguous, got '!tessel.memdesc<64x1xf32, order = [1, 0]>'}}
  tessel.tma_load %d[%i], %buf, %bars[%i] : !tessel.tensor_desc<64xf32>, !tessel.memdesc<64x1xf32, order = [1, 0]>, !tessel.mbarriers<1>
  return
}

// -----

func.func @tma_load_vector_box(%d: !tessel.tensor_desc<16xf32>, %i: i32, %buf: !tessel.memdesc<1x16xf32, order = [1, 0]>) {
  %bars = tessel.mbarrier_alloc : !tessel.mbarriers<1>
  // expected-error @+1 {{the tensor memory accelerator cannot write a block of '!tessel.tensor_desc<16xf32>'}}
  tessel.tma_load %d[%i], %buf, %bars[%i] : !tessel.tensor_desc<16xf32>, !tessel.memdesc<1x16xf32, order = [1, 0]>, !tessel.mbarriers<1>
  return
}

// -----

func.func @tma_load_dst(%d: !tessel.tensor_desc<64x64xf16>, %i: i32, %buf: !tessel.memdesc<64x64xf16, order = [0, 1]>) {
  %bars = tessel.mbarrier_alloc : !tessel.mbarriers<1>
  // expected-error @+1 {{destination must hold one block of '!tessel.tensor_desc<64x64xf16>' with its rows contiguous, got '!tessel.memdesc<64x64xf16, order = [0, 1]>'}}
  tessel.tma_load %d[%i, %i], %buf, %bars[%i] : !tessel.tensor_desc<64x64xf16>, !tessel.memdesc<64x64xf16, order = [0, 1]>, !tessel.mbarriers<1>
  return
}

// -----

// expected-error @+1 {{'tessel.tensor_map' on argument 0 needs a !tessel.tensor_desc argument and {base = <index of a pointer argument to its elements>, sizes = [<one string per dimension>], strides = [<one per dimension but the innermost>]}, got {base = 1 : i64, sizes = ["N"], strides = []}}}
func.func @tensor_map_rank(%d: !tessel.tensor_desc<64x64xf16> {tessel.tensor_map = {base = 1 : i64, sizes = ["N"], strides = []}}, %p: !tessel.ptr<f16>) attributes {tessel.kernel} {
  return
}

// -----

// expected-error @+1 {{tensor map argument 0 describes argument 1, which is compiled as None}}
func.func @tensor_map_of_none(%d: !tessel.tensor_desc<64x64xf16> {tessel.tensor_map = {base = 1 : i64, sizes = ["N", "64"], strides = ["64"]}}, %p: !tessel.ptr<f16> {tessel.none}) attributes {tessel.kernel} {
  return
}

// -----

func.func @ws_warps() attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  // expected-error @+1 {{consumer_warps and producer_warps must be whole warpgroups (multiples of 4), got 8 and 2}}
  tessel.warp_specialize {consumer_warps = 8 : i32, producer_warps = 2 : i32} consumers {
    %c = arith.constant 0 : i32
  } producer {
    %p = arith.constant 0 : i32
  }
  return
}

// -----

func.func @ws_num_warps() attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  // expected-error @+1 {{consumer_warps must be the kernel's tessel.num_warps (8), got 4}}
  tessel.warp_specialize {consumer_warps = 4 : i32, producer_warps = 4 : i32} consumers {
    %c = arith.constant 0 : i32
  } producer {
    %p = arith.constant 0 : i32
  }
  return
}

// -----

func.func @ws_registers() attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  // expected-error @+1 {{register counts must be multiples of 8 in [24, 256], got 20}}
  tessel.warp_specialize {consumer_registers = 240 : i32, consumer_warps = 8 : i32, producer_registers = 20 : i32, producer_warps = 4 : i32} consumers {
    %c = arith.constant 0 : i32
  } producer {
    %p = arith.constant 0 : i32
  }
  return
}

// -----

func.func @ws_one_count() attributes {tessel.kernel, tessel.num_warps = 8 : i32} {
  // expected-error @+1 {{needs both register counts or neither}}
  tessel.warp_specialize {consumer_registers = 240 : i32, consumer_warps = 8 : i32, producer_warps = 4 : i32} consumers {
    %c = arith.constant 0 : i32
  } producer {
    %p = arith.constant 0 : i32
  }
  return
}

// -----

func.func @ws_producer_tiles(%x: f32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  // expected-error @+1 {{producer region must not compute tiles}}
  tessel.warp_specialize {consumer_warps = 4 : i32, producer_warps = 4 : i32} consumers {
    %c = arith.constant 0 : i32
  } producer {
    %t = tessel.splat %x : f32 -> !tessel.tile<64xf32>
  }
  return
}

// -----

func.func @ws_twin() attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  tessel.warp_specialize {consumer_warps = 4 : i32, producer_warps = 4 : i32} consumers {
    %a = tessel.local_alloc {tessel.buffer = 0 : i64} : !tessel.memdesc<64x64xf16, order = [1, 0]>
  } producer {
    // expected-error @+1 {{in a producer region needs a 'tessel.buffer' number that a consumer buffer has}}
    %b = tessel.local_alloc {tessel.buffer = 1 : i64} : !tessel.memdesc<64x64xf16, order = [1, 0]>
  }
  return
}

// -----

func.func @buffer_number(%x: f32) {
  // expected-error @+1 {{'tessel.buffer' numbers a tessel.local_alloc}}
  %b = arith.addf %x, %x {tessel.buffer = 1 : i64} : f32
  return
}

// -----

// expected-error @+1 {{'tessel.warp_specialize' is a unit attribute of a kernel}}
func.func @ws_not_kernel() attributes {tessel.warp_specialize} {
  return
}

// -----

func.func @named_barrier_id() {
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{barrier id must be in [3, 15] (0 to 2 are the CTA's and tessel.warp_specialize's), got 1}}
  tessel.named_barrier_wait %c1, 256
  return
}

// -----

func.func @named_barrier_threads(%id: i32) {
  // expected-error @+1 {{counts whole warps: threads must be a multiple of 32, got 100}}
  tessel.named_barrier_arrive %id, 100
  return
}
