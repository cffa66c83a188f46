// RUN: tessel-opt %s -split-input-file -tessel-test-axis-info -verify-diagnostics -o /dev/null

// The address of a row block of a (rows, 64) f16 matrix with a row stride
// hinted as a multiple of 8 and a base aligned to 16 bytes: along the rows
// each address is 16-byte aligned, along the columns runs of 64 consecutive
// elements start 16-byte aligned. A row mask compared against an unknown
// bound is constant along the columns only; a column mask against an
// unknown bound is constant nowhere.

func.func @rows(%q: !tessel.ptr<f16> {tessel.multiple_of = 16 : i64}, %s: i32 {tessel.multiple_of = 8 : i64}, %n: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %pid = tessel.program_id 0 : i32
  %c128 = arith.constant 128 : i32
  // expected-remark @+1 {{contiguity = [1], divisibility = [128], constancy = [1]}}
  %m0 = arith.muli %pid, %c128 {test.axis} : i32
  // expected-remark @+1 {{contiguity = [128], divisibility = [1073741824], constancy = [1]}}
  %r = tessel.arange 0, 128 {test.axis} : !tessel.tile<128xi32>
  %m0s = tessel.splat %m0 : i32 -> !tessel.tile<128xi32>
  // expected-remark @+1 {{contiguity = [128], divisibility = [128], constancy = [1]}}
  %rows = tessel.binary add %m0s, %r {test.axis} : !tessel.tile<128xi32>
  // expected-remark @+1 {{contiguity = [128, 1], divisibility = [128, 1], constancy = [1, 1]}}
  %rr = tessel.expand_dims %rows {axis = 1 : i32, test.axis} : !tessel.tile<128xi32> -> !tessel.tile<128x1xi32>
  %ss = tessel.splat %s : i32 -> !tessel.tile<128x1xi32>
  // expected-remark @+1 {{contiguity = [1, 1], divisibility = [8, 8], constancy = [1, 1]}}
  %ro = tessel.binary mul %rr, %ss {test.axis} : !tessel.tile<128x1xi32>
  %qs = tessel.splat %q : !tessel.ptr<f16> -> !tessel.tile<128x1x!tessel.ptr<f16>>
  // expected-remark @+1 {{contiguity = [1, 1], divisibility = [16, 16], constancy = [1, 1]}}
  %qr = tessel.addptr %qs, %ro {test.axis} : !tessel.tile<128x1x!tessel.ptr<f16>>, !tessel.tile<128x1xi32>
  // expected-remark @+1 {{contiguity = [1, 1], divisibility = [16, 16], constancy = [1, 64]}}
  %qb = tessel.broadcast %qr {test.axis} : !tessel.tile<128x1x!tessel.ptr<f16>> -> !tessel.tile<128x64x!tessel.ptr<f16>>
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32>
  %cc = tessel.expand_dims %c {axis = 0 : i32} : !tessel.tile<64xi32> -> !tessel.tile<1x64xi32>
  %cb = tessel.broadcast %cc : !tessel.tile<1x64xi32> -> !tessel.tile<128x64xi32>
  // expected-remark @+1 {{contiguity = [1, 64], divisibility = [2, 16], constancy = [1, 1]}}
  %p = tessel.addptr %qb, %cb {test.axis} : !tessel.tile<128x64x!tessel.ptr<f16>>, !tessel.tile<128x64xi32>
  %ns = tessel.splat %n : i32 -> !tessel.tile<128xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [1]}}
  %ok = tessel.cmp lt %rows, %ns {test.axis} : !tessel.tile<128xi32> -> !tessel.tile<128xi1>
  %oke = tessel.expand_dims %ok {axis = 1 : i32} : !tessel.tile<128xi1> -> !tessel.tile<128x1xi1>
  // expected-remark @+1 {{contiguity = [1, 1], divisibility = [1, 1], constancy = [1, 64]}}
  %okb = tessel.broadcast %oke {test.axis} : !tessel.tile<128x1xi1> -> !tessel.tile<128x64xi1>
  return
}

// -----

// A loop's induction variable is as aligned as its start and step; the
// columns it offsets compare against a bound known to be a multiple of 16
// alike in aligned groups of 16. Without a hint a pointer is aligned to its
// element only.

func.func @loop(%k: !tessel.ptr<f32>, %n: i32 {tessel.multiple_of = 48 : i64}) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c = tessel.arange 0, 64 : !tessel.tile<64xi32>
  scf.for %i = %c0 to %n step %c64 : i32 {
    %is = tessel.splat %i : i32 -> !tessel.tile<64xi32>
    // expected-remark @+1 {{contiguity = [64], divisibility = [64], constancy = [1]}}
    %cols = tessel.binary add %is, %c {test.axis} : !tessel.tile<64xi32>
    %ns = tessel.splat %n : i32 -> !tessel.tile<64xi32>
    // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [16]}}
    %ok = tessel.cmp lt %cols, %ns {test.axis} : !tessel.tile<64xi32> -> !tessel.tile<64xi1>
    %ks = tessel.splat %k : !tessel.ptr<f32> -> !tessel.tile<64x!tessel.ptr<f32>>
    // expected-remark @+1 {{contiguity = [64], divisibility = [4], constancy = [1]}}
    %kp = tessel.addptr %ks, %cols {test.axis} : !tessel.tile<64x!tessel.ptr<f32>>, !tessel.tile<64xi32>
  }
  return
}

// -----

// A row-major reshape of a 1-D run: the run goes on along the last
// dimension, cut to its length (each row starts aligned to the row's
// length); the rows themselves are not contiguous. Rows of 6 keep runs of 2.

func.func @reshape(%w: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %r = tessel.arange 0, 2048 : !tessel.tile<2048xi32>
  // expected-remark @+1 {{contiguity = [1, 128], divisibility = [1, 128], constancy = [1, 1]}}
  %t = tessel.reshape %r {test.axis} : !tessel.tile<2048xi32> -> !tessel.tile<16x128xi32>
  %ws = tessel.splat %w : !tessel.ptr<f32> -> !tessel.tile<16x128x!tessel.ptr<f32>>
  // expected-remark @+1 {{contiguity = [1, 128], divisibility = [4, 16], constancy = [1, 1]}}
  %p = tessel.addptr %ws, %t {test.axis} : !tessel.tile<16x128x!tessel.ptr<f32>>, !tessel.tile<16x128xi32>
  %s = tessel.arange 0, 24 : !tessel.tile<24xi32>
  // expected-remark @+1 {{contiguity = [1, 2], divisibility = [1, 2], constancy = [1, 1]}}
  %u = tessel.reshape %s {test.axis} : !tessel.tile<24xi32> -> !tessel.tile<4x6xi32>
  %c = arith.constant 3 : i32
  %k = tessel.splat %c : i32 -> !tessel.tile<64xi32>
  // expected-remark @+1 {{contiguity = [1, 1], divisibility = [1, 1], constancy = [1, 8]}}
  %v = tessel.reshape %k {test.axis} : !tessel.tile<64xi32> -> !tessel.tile<8x8xi32>
  return
}

// -----

// Quotients and remainders of a non-negative run by a power of two: the
// columns a·64 + d of a (rows, 384) tile split into a (constant over runs
// of 64) and d (runs of 64 starting at 0). Column 2·64 + d of a pointer
// tile built from them is contiguous in runs of 64 again. A divisor that
// is not a power of two, or a run that may be negative, teaches nothing.

func.func @divrem(%q: !tessel.ptr<f16> {tessel.multiple_of = 16 : i64}, %s: i32 {tessel.multiple_of = 8 : i64}, %x: i32) attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %c = tessel.arange 0, 384 : !tessel.tile<384xi32>
  %c64 = arith.constant 64 : i32
  %d64 = tessel.splat %c64 : i32 -> !tessel.tile<384xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [64]}}
  %a = tessel.binary div %c, %d64 {test.axis} : !tessel.tile<384xi32>
  // expected-remark @+1 {{contiguity = [64], divisibility = [64], constancy = [1]}}
  %d = tessel.binary rem %c, %d64 {test.axis} : !tessel.tile<384xi32>
  %ss = tessel.splat %s : i32 -> !tessel.tile<384xi32>
  %rows = tessel.binary mul %a, %ss : !tessel.tile<384xi32>
  %off = tessel.binary add %rows, %d : !tessel.tile<384xi32>
  %qs = tessel.splat %q : !tessel.ptr<f16> -> !tessel.tile<384x!tessel.ptr<f16>>
  // expected-remark @+1 {{contiguity = [64], divisibility = [16], constancy = [1]}}
  %p = tessel.addptr %qs, %off {test.axis} : !tessel.tile<384x!tessel.ptr<f16>>, !tessel.tile<384xi32>
  %c48 = arith.constant 48 : i32
  %d48 = tessel.splat %c48 : i32 -> !tessel.tile<384xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [1]}}
  %r48 = tessel.binary rem %c, %d48 {test.axis} : !tessel.tile<384xi32>
  %xs = tessel.splat %x : i32 -> !tessel.tile<384xi32>
  %shifted = tessel.binary sub %c, %xs : !tessel.tile<384xi32>
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [1]}}
  %neg = tessel.binary rem %shifted, %d64 {test.axis} : !tessel.tile<384xi32>
  %c8 = arith.constant 8 : i32
  %c40 = arith.constant 40 : i32
  // expected-remark @+1 {{contiguity = [1], divisibility = [1], constancy = [1], constant = 5}}
  %k = arith.divsi %c40, %c8 {test.axis} : i32
  return
}
