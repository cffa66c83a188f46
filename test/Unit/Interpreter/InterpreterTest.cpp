//===- InterpreterTest.cpp - Kernels, memory ops, errors, control flow ----===//

#include "TestUtils.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace tessel;
using namespace tessel::test;

namespace {

// The DSL's `add`: out[offs] = x[offs] + y[offs] for offs < n, BLOCK = 256.
// The `masked` flag drops the masks, for the out-of-bounds test.
std::string addKernel(bool masked) {
  std::string mask = masked ? " mask %m" : "";
  std::string other = masked ? " mask %m other %z" : "";
  return R"(
func.func @add(%x: !tessel.ptr<f32>, %y: !tessel.ptr<f32>, %out: !tessel.ptr<f32>, %n: i32) attributes {tessel.kernel} {
  %pid = tessel.program_id 0 : i32
  %c256 = arith.constant 256 : i32
  %base = arith.muli %pid, %c256 : i32
  %r = tessel.arange 0, 256 : !tessel.tile<256xi32>
  %b = tessel.splat %base : i32 -> !tessel.tile<256xi32>
  %offs = tessel.binary add %b, %r : !tessel.tile<256xi32>
  %nn = tessel.splat %n : i32 -> !tessel.tile<256xi32>
  %m = tessel.cmp lt %offs, %nn : !tessel.tile<256xi32> -> !tessel.tile<256xi1>
  %zero = arith.constant 0.0 : f32
  %z = tessel.splat %zero : f32 -> !tessel.tile<256xf32>
  %xs = tessel.splat %x : !tessel.ptr<f32> -> !tessel.tile<256x!tessel.ptr<f32>>
  %xp = tessel.addptr %xs, %offs : !tessel.tile<256x!tessel.ptr<f32>>, !tessel.tile<256xi32>
  %ys = tessel.splat %y : !tessel.ptr<f32> -> !tessel.tile<256x!tessel.ptr<f32>>
  %yp = tessel.addptr %ys, %offs : !tessel.tile<256x!tessel.ptr<f32>>, !tessel.tile<256xi32>
  %os = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<256x!tessel.ptr<f32>>
  %op = tessel.addptr %os, %offs : !tessel.tile<256x!tessel.ptr<f32>>, !tessel.tile<256xi32>
  %a = tessel.load %xp)" +
         other + R"( : !tessel.tile<256x!tessel.ptr<f32>> loc("add.tsl":4:33)
  %c = tessel.load %yp)" +
         other + R"( : !tessel.tile<256x!tessel.ptr<f32>> loc("add.tsl":4:60)
  %s = tessel.binary add %a, %c : !tessel.tile<256xf32>
  tessel.store %op, %s)" +
         mask + R"( : !tessel.tile<256x!tessel.ptr<f32>> loc("add.tsl":4:5)
  return
}
)";
}

TEST(Interpreter, VectorAddRaggedWithMasks) {
  TestModule t(addKernel(true));
  ASSERT_EQ(t.parseErrors(), "");
  const int n = 1000;
  std::vector<double> x(n), y(n), sentinel(1024, -7.0);
  for (int k = 0; k < n; ++k) {
    x[k] = 0.5 * k;
    y[k] = 1000.0 - k;
  }
  int bx = t.buffer(DType::F32, x), by = t.buffer(DType::F32, y);
  int bo = t.buffer(DType::F32, sentinel); // Longer than n: the tail stays.
  EXPECT_EQ(t.run("add", {buf(bx), buf(by), buf(bo), i(n)}, {4, 1, 1}), "");
  std::vector<double> out = t.memory.read(bo);
  for (int k = 0; k < 1024; ++k)
    ASSERT_EQ(out[k], k < n ? x[k] + y[k] : -7.0) << "element " << k;
}

TEST(Interpreter, UnmaskedOutOfBoundsNamesLocationAndIndex) {
  TestModule t(addKernel(false));
  ASSERT_EQ(t.parseErrors(), "");
  int bx = t.buffer(DType::F32, 1000), by = t.buffer(DType::F32, 1000);
  int bo = t.buffer(DType::F32, 1024);
  // Program 3 runs first (descending order) and reads x[768..1023].
  EXPECT_EQ(t.run("add", {buf(bx), buf(by), buf(bo), i(1000)}, {4, 1, 1}),
            "out-of-bounds load of buffer #0 at element 1000 (size 1000) in "
            "lane [232] at add.tsl:4:33 (program (3, 0, 0) of kernel 'add')");
}

TEST(Interpreter, MaskedOffLanesAreNotTouched) {
  // Masked-off lanes point far outside the buffer; the load gives `other`,
  // the store and the atomic leave memory alone, the atomic returns 0.
  TestModule t(R"(
func.func @k(%p: !tessel.ptr<i32>, %out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %r = tessel.arange 0, 8 : !tessel.tile<8xi32>
  %c4 = arith.constant 4 : i32
  %four = tessel.splat %c4 : i32 -> !tessel.tile<8xi32>
  %m = tessel.cmp lt %r, %four : !tessel.tile<8xi32> -> !tessel.tile<8xi1>
  %big = arith.constant 1000000 : i32
  %bigs = tessel.splat %big : i32 -> !tessel.tile<8xi32>
  %far = tessel.binary mul %r, %bigs : !tessel.tile<8xi32>
  %offs = tessel.select %m, %r, %far : !tessel.tile<8xi1>, !tessel.tile<8xi32>
  %ps = tessel.splat %p : !tessel.ptr<i32> -> !tessel.tile<8x!tessel.ptr<i32>>
  %pp = tessel.addptr %ps, %offs : !tessel.tile<8x!tessel.ptr<i32>>, !tessel.tile<8xi32>
  %c9 = arith.constant -9 : i32
  %other = tessel.splat %c9 : i32 -> !tessel.tile<8xi32>
  %v = tessel.load %pp mask %m other %other : !tessel.tile<8x!tessel.ptr<i32>>
  %os = tessel.splat %out : !tessel.ptr<i32> -> !tessel.tile<8x!tessel.ptr<i32>>
  %op = tessel.addptr %os, %r : !tessel.tile<8x!tessel.ptr<i32>>, !tessel.tile<8xi32>
  tessel.store %op, %v : !tessel.tile<8x!tessel.ptr<i32>>
  %old = tessel.atomic_add %pp, %v mask %m : !tessel.tile<8x!tessel.ptr<i32>>
  %c8 = arith.constant 8 : i32
  %eight = tessel.splat %c8 : i32 -> !tessel.tile<8xi32>
  %r8 = tessel.binary add %r, %eight : !tessel.tile<8xi32>
  %op2 = tessel.addptr %os, %r8 : !tessel.tile<8x!tessel.ptr<i32>>, !tessel.tile<8xi32>
  tessel.store %op2, %old : !tessel.tile<8x!tessel.ptr<i32>>
  tessel.store %pp, %v mask %m : !tessel.tile<8x!tessel.ptr<i32>>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int p = t.buffer(DType::I32, {10, 11, 12, 13});
  int out = t.buffer(DType::I32, 16);
  EXPECT_EQ(t.run("k", {buf(p), buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out),
            (std::vector<int64_t>{10, 11, 12, 13, -9, -9, -9, -9, 10, 11, 12,
                                  13, 0, 0, 0, 0}));
  // The atomic doubled p, then the masked store wrote the loaded values.
  EXPECT_EQ(t.memory.readInts(p), (std::vector<int64_t>{10, 11, 12, 13}));
}

TEST(Interpreter, AtomicAddAccumulatesDuplicateLanesAndReturnsOldValues) {
  TestModule t(R"(
func.func @k(%p: !tessel.ptr<f32>, %out: !tessel.ptr<f32>) attributes {tessel.kernel} {
  %r = tessel.arange 0, 4 : !tessel.tile<4xi32>
  %c0 = arith.constant 0 : i32
  %zeros = tessel.splat %c0 : i32 -> !tessel.tile<4xi32>
  %ps = tessel.splat %p : !tessel.ptr<f32> -> !tessel.tile<4x!tessel.ptr<f32>>
  %pp = tessel.addptr %ps, %zeros : !tessel.tile<4x!tessel.ptr<f32>>, !tessel.tile<4xi32>
  %one = arith.constant 1.5 : f32
  %ones = tessel.splat %one : f32 -> !tessel.tile<4xf32>
  %old = tessel.atomic_add %pp, %ones : !tessel.tile<4x!tessel.ptr<f32>>
  %os = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<4x!tessel.ptr<f32>>
  %op = tessel.addptr %os, %r : !tessel.tile<4x!tessel.ptr<f32>>, !tessel.tile<4xi32>
  tessel.store %op, %old : !tessel.tile<4x!tessel.ptr<f32>>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int p = t.buffer(DType::F32, std::vector<double>{1.0});
  int out = t.buffer(DType::F32, 4);
  EXPECT_EQ(t.run("k", {buf(p), buf(out)}, {2, 1, 1}), "");
  EXPECT_EQ(t.memory.read(p), std::vector<double>{13.0});
  // Program 1 ran first: it saw 1, 2.5, 4, 5.5; program 0 wrote last.
  EXPECT_EQ(t.memory.read(out), (std::vector<double>{7, 8.5, 10, 11.5}));
}

TEST(Interpreter, ProgramsRunInDescendingOrder) {
  // Each program records the value of a counter it increments: with
  // descending order program p of G sees G - 1 - p.
  TestModule t(R"(
func.func @k(%counter: !tessel.ptr<i32>, %out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %x = tessel.program_id 0 : i32
  %y = tessel.program_id 1 : i32
  %nx = tessel.num_programs 0 : i32
  %row = arith.muli %y, %nx : i32
  %lin = arith.addi %row, %x : i32
  %one = arith.constant 1 : i32
  %old = tessel.atomic_add %counter, %one : !tessel.ptr<i32>
  %p = tessel.addptr %out, %lin : !tessel.ptr<i32>, i32
  tessel.store %p, %old : !tessel.ptr<i32>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int counter = t.buffer(DType::I32, 1), out = t.buffer(DType::I32, 6);
  EXPECT_EQ(t.run("k", {buf(counter), buf(out)}, {3, 2, 1}), "");
  EXPECT_EQ(t.memory.readInts(out), (std::vector<int64_t>{5, 4, 3, 2, 1, 0}));
}

TEST(Interpreter, IntegerDivisionByZeroIsAnError) {
  TestModule t(R"(
func.func @scalar(%a: i32, %b: i32, %out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %q = arith.divsi %a, %b : i32 loc("div.tsl":3:9)
  tessel.store %out, %q : !tessel.ptr<i32>
  return
}
func.func @tile(%out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %r0 = tessel.arange 0, 4 : !tessel.tile<4xi32>
  %c2 = arith.constant 2 : i32
  %two = tessel.splat %c2 : i32 -> !tessel.tile<4xi32>
  %r = tessel.binary sub %r0, %two : !tessel.tile<4xi32>
  %c7 = arith.constant 7 : i32
  %s = tessel.splat %c7 : i32 -> !tessel.tile<4xi32>
  %q = tessel.binary rem %s, %r : !tessel.tile<4xi32> loc("div.tsl":7:13)
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::I32, 1);
  EXPECT_EQ(t.run("scalar", {i(-7), i(2), buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out), std::vector<int64_t>{-3}); // Truncates.
  EXPECT_EQ(t.run("scalar", {i(7), i(0), buf(out)}),
            "integer division by zero at div.tsl:3:9 (program (0, 0, 0) of "
            "kernel 'scalar')");
  EXPECT_EQ(t.run("tile", {buf(out)}),
            "integer division by zero in lane [2] at div.tsl:7:13 (program "
            "(0, 0, 0) of kernel 'tile')");
}

TEST(Interpreter, IntegerArithmeticWrapsAndRounds) {
  TestModule t(R"(
func.func @k(%a: i32, %b: i32, %out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %s = arith.addi %a, %b : i32
  %fd = arith.floordivsi %a, %b : i32
  %cd = arith.ceildivsi %a, %b : i32
  %r = arith.remsi %a, %b : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %p1 = tessel.addptr %out, %c1 : !tessel.ptr<i32>, i32
  %p2 = tessel.addptr %out, %c2 : !tessel.ptr<i32>, i32
  %p3 = tessel.addptr %out, %c3 : !tessel.ptr<i32>, i32
  tessel.store %out, %s : !tessel.ptr<i32>
  tessel.store %p1, %fd : !tessel.ptr<i32>
  tessel.store %p2, %cd : !tessel.ptr<i32>
  tessel.store %p3, %r : !tessel.ptr<i32>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::I32, 4);
  EXPECT_EQ(t.run("k", {i(INT32_MAX), i(-2), buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out),
            (std::vector<int64_t>{INT32_MAX - 2, -1073741824, -1073741823, 1}));
  EXPECT_EQ(t.run("k", {i(INT32_MAX), i(1), buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out)[0], INT32_MIN); // Wraps at 32 bits.
}

TEST(Interpreter, ShiftsAreArithmeticAndCheckTheirCount) {
  TestModule t(R"(
func.func @k(%a: i32, %n: i32, %out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %l = arith.shli %a, %n : i32 loc("shift.tsl":3:9)
  %r = arith.shrsi %a, %n : i32
  %c1 = arith.constant 1 : i32
  %p1 = tessel.addptr %out, %c1 : !tessel.ptr<i32>, i32
  tessel.store %out, %l : !tessel.ptr<i32>
  tessel.store %p1, %r : !tessel.ptr<i32>
  return
}
func.func @tile(%out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %r = tessel.arange 0, 4 : !tessel.tile<4xi32>
  %c30 = arith.constant 30 : i32
  %s = tessel.splat %c30 : i32 -> !tessel.tile<4xi32>
  %n = tessel.binary add %r, %s : !tessel.tile<4xi32>
  %x = tessel.binary shl %r, %n : !tessel.tile<4xi32> loc("shift.tsl":9:13)
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::I32, 2);
  EXPECT_EQ(t.run("k", {i(-20), i(2), buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out), (std::vector<int64_t>{-80, -5}));
  EXPECT_EQ(t.run("k", {i(0x40000001), i(1), buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out),
            (std::vector<int64_t>{INT32_MIN + 2, 0x20000000}));
  EXPECT_EQ(
      t.run("k", {i(1), i(32), buf(out)}),
      "shift by 32 of a 32-bit integer at shift.tsl:3:9 (program (0, 0, 0) "
      "of kernel 'k')");
  EXPECT_EQ(t.run("tile", {buf(out)}),
            "shift by 32 of a 32-bit integer in lane [2] at shift.tsl:9:13 "
            "(program (0, 0, 0) of kernel 'tile')");
}

TEST(Interpreter, StoreRoundsToF16AndBF16) {
  TestModule t(R"(
func.func @k(%in: !tessel.ptr<f32>, %h: !tessel.ptr<f16>, %b: !tessel.ptr<bf16>) attributes {tessel.kernel} {
  %r = tessel.arange 0, 8 : !tessel.tile<8xi32>
  %is = tessel.splat %in : !tessel.ptr<f32> -> !tessel.tile<8x!tessel.ptr<f32>>
  %ip = tessel.addptr %is, %r : !tessel.tile<8x!tessel.ptr<f32>>, !tessel.tile<8xi32>
  %v = tessel.load %ip : !tessel.tile<8x!tessel.ptr<f32>>
  %vh = tessel.cast %v : !tessel.tile<8xf32> -> !tessel.tile<8xf16>
  %vb = tessel.cast %v : !tessel.tile<8xf32> -> !tessel.tile<8xbf16>
  %hs = tessel.splat %h : !tessel.ptr<f16> -> !tessel.tile<8x!tessel.ptr<f16>>
  %hp = tessel.addptr %hs, %r : !tessel.tile<8x!tessel.ptr<f16>>, !tessel.tile<8xi32>
  tessel.store %hp, %vh : !tessel.tile<8x!tessel.ptr<f16>>
  %bs = tessel.splat %b : !tessel.ptr<bf16> -> !tessel.tile<8x!tessel.ptr<bf16>>
  %bp = tessel.addptr %bs, %r : !tessel.tile<8x!tessel.ptr<bf16>>, !tessel.tile<8xi32>
  tessel.store %bp, %vb : !tessel.tile<8x!tessel.ptr<bf16>>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  double inf = std::numeric_limits<double>::infinity();
  std::vector<double> in = {1 + 0x1p-11,       // f16 tie: to even (1)
                            1 + 3 * 0x1p-11,   // f16 tie: to even (1 + 2^-9)
                            65520,             // f16: overflows to inf
                            0x1p-25 + 0x1p-30, // f16: rounds up to 2^-24
                            1 + 0x1p-8,        // bf16 tie: to even (1)
                            1 + 3 * 0x1p-8,    // bf16 tie: up (1 + 2^-6)
                            -3.0e38,           // bf16: -3.0040e38
                            std::nan("")};
  int bin = t.buffer(DType::F32, in);
  int bh = t.buffer(DType::F16, 8), bb = t.buffer(DType::BF16, 8);
  EXPECT_EQ(t.run("k", {buf(bin), buf(bh), buf(bb)}), "");
  std::vector<double> h = t.memory.read(bh), b = t.memory.read(bb);
  EXPECT_EQ(h[0], 1.0);
  EXPECT_EQ(h[1], 1 + 0x1p-9);
  EXPECT_EQ(h[2], inf);
  EXPECT_EQ(h[3], 0x1p-24);
  EXPECT_EQ(b[4], 1.0);
  EXPECT_EQ(b[5], 1 + 0x1p-6);
  EXPECT_EQ(b[6], -0x1.c4p127);
  EXPECT_TRUE(std::isnan(h[7]) && std::isnan(b[7]));
  // The f16 storage holds the IEEE bit patterns.
  auto *bits = static_cast<const uint16_t *>(t.memory.data(bh));
  EXPECT_EQ(bits[0], 0x3C00);
  EXPECT_EQ(bits[2], 0x7C00);
  EXPECT_EQ(bits[3], 0x0001);
}

// exp/exp2 marked ftz flush results below the smallest normal f32 to zero,
// as the GPU's ex2.approx.ftz does; unmarked ones keep the subnormal.
TEST(Interpreter, FlushingExponentialsDropSubnormalResults) {
  TestModule t(R"(
func.func @k(%in: !tessel.ptr<f32>, %kept: !tessel.ptr<f32>, %flushed: !tessel.ptr<f32>, %e: !tessel.ptr<f32>) attributes {tessel.kernel} {
  %r = tessel.arange 0, 4 : !tessel.tile<4xi32>
  %is = tessel.splat %in : !tessel.ptr<f32> -> !tessel.tile<4x!tessel.ptr<f32>>
  %ip = tessel.addptr %is, %r : !tessel.tile<4x!tessel.ptr<f32>>, !tessel.tile<4xi32>
  %v = tessel.load %ip : !tessel.tile<4x!tessel.ptr<f32>>
  %a = tessel.unary exp2 %v : !tessel.tile<4xf32>
  %b = tessel.unary exp2 ftz %v : !tessel.tile<4xf32>
  %c = tessel.unary exp ftz %v : !tessel.tile<4xf32>
  %ks = tessel.splat %kept : !tessel.ptr<f32> -> !tessel.tile<4x!tessel.ptr<f32>>
  %kp = tessel.addptr %ks, %r : !tessel.tile<4x!tessel.ptr<f32>>, !tessel.tile<4xi32>
  tessel.store %kp, %a : !tessel.tile<4x!tessel.ptr<f32>>
  %fs = tessel.splat %flushed : !tessel.ptr<f32> -> !tessel.tile<4x!tessel.ptr<f32>>
  %fp = tessel.addptr %fs, %r : !tessel.tile<4x!tessel.ptr<f32>>, !tessel.tile<4xi32>
  tessel.store %fp, %b : !tessel.tile<4x!tessel.ptr<f32>>
  %es = tessel.splat %e : !tessel.ptr<f32> -> !tessel.tile<4x!tessel.ptr<f32>>
  %ep = tessel.addptr %es, %r : !tessel.tile<4x!tessel.ptr<f32>>, !tessel.tile<4xi32>
  tessel.store %ep, %c : !tessel.tile<4x!tessel.ptr<f32>>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  double inf = std::numeric_limits<double>::infinity();
  int bin = t.buffer(DType::F32, {-130.0, -126.0, 1.0, -inf});
  int bk = t.buffer(DType::F32, 4), bf = t.buffer(DType::F32, 4),
      be = t.buffer(DType::F32, 4);
  EXPECT_EQ(t.run("k", {buf(bin), buf(bk), buf(bf), buf(be)}), "");
  std::vector<double> kept = t.memory.read(bk), flushed = t.memory.read(bf),
                      e = t.memory.read(be);
  EXPECT_EQ(kept, (std::vector<double>{0x1p-130, 0x1p-126, 2, 0}));
  EXPECT_EQ(flushed, (std::vector<double>{0, 0x1p-126, 2, 0}));
  // exp(-130) ~ 3.5e-57 is far below 2^-126; exp(1) is kept.
  EXPECT_EQ(e[0], 0);
  EXPECT_NEAR(e[2], std::exp(1.0), 1e-6);
}

// A slice at a runtime offset reads the window there; an offset that puts
// the window outside the tile is an error, not a read past it.
TEST(Interpreter, SliceAtRuntimeOffsetIsBoundsChecked) {
  TestModule t(R"(
func.func @k(%x: i32, %out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %r = tessel.arange 0, 8 : !tessel.tile<8xi32>
  %s = tessel.extract_slice %r [%x] : !tessel.tile<8xi32> -> !tessel.tile<4xi32>
  %o = tessel.arange 0, 4 : !tessel.tile<4xi32>
  %os = tessel.splat %out : !tessel.ptr<i32> -> !tessel.tile<4x!tessel.ptr<i32>>
  %op = tessel.addptr %os, %o : !tessel.tile<4x!tessel.ptr<i32>>, !tessel.tile<4xi32>
  tessel.store %op, %s : !tessel.tile<4x!tessel.ptr<i32>>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::I32, 4);
  EXPECT_EQ(t.run("k", {i(3), buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out), (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(t.run("k", {i(4), buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out), (std::vector<int64_t>{4, 5, 6, 7}));
  for (int x : {5, -1}) {
    std::string error = t.run("k", {i(x), buf(out)});
    EXPECT_NE(error.find("slice [" + std::to_string(x) + ", " +
                         std::to_string(x + 4) +
                         ") of dimension 0 is out of bounds for size 8"),
              std::string::npos)
        << error;
  }
}

TEST(Interpreter, DotAccumulatesF16InputsInF32) {
  // out (16x8) = a (16x32, f16) · b (32x8, f16), both loaded as 2-D tiles
  // through base + rows[:, None] * stride + cols[None, :].
  TestModule t(R"(
func.func @k(%a: !tessel.ptr<f16>, %b: !tessel.ptr<f16>, %out: !tessel.ptr<f32>) attributes {tessel.kernel} {
  %r16 = tessel.arange 0, 16 : !tessel.tile<16xi32>
  %r32 = tessel.arange 0, 32 : !tessel.tile<32xi32>
  %r8 = tessel.arange 0, 8 : !tessel.tile<8xi32>
  %c32 = arith.constant 32 : i32
  %c8 = arith.constant 8 : i32
  // a offsets: rows * 32 + cols
  %ar = tessel.expand_dims %r16 {axis = 1 : i32} : !tessel.tile<16xi32> -> !tessel.tile<16x1xi32>
  %s32 = tessel.splat %c32 : i32 -> !tessel.tile<16x1xi32>
  %ars = tessel.binary mul %ar, %s32 : !tessel.tile<16x1xi32>
  %arb = tessel.broadcast %ars : !tessel.tile<16x1xi32> -> !tessel.tile<16x32xi32>
  %ac = tessel.expand_dims %r32 {axis = 0 : i32} : !tessel.tile<32xi32> -> !tessel.tile<1x32xi32>
  %acb = tessel.broadcast %ac : !tessel.tile<1x32xi32> -> !tessel.tile<16x32xi32>
  %ao = tessel.binary add %arb, %acb : !tessel.tile<16x32xi32>
  %as = tessel.splat %a : !tessel.ptr<f16> -> !tessel.tile<16x32x!tessel.ptr<f16>>
  %ap = tessel.addptr %as, %ao : !tessel.tile<16x32x!tessel.ptr<f16>>, !tessel.tile<16x32xi32>
  %av = tessel.load %ap : !tessel.tile<16x32x!tessel.ptr<f16>>
  // b offsets: rows * 8 + cols
  %br = tessel.expand_dims %r32 {axis = 1 : i32} : !tessel.tile<32xi32> -> !tessel.tile<32x1xi32>
  %s8 = tessel.splat %c8 : i32 -> !tessel.tile<32x1xi32>
  %brs = tessel.binary mul %br, %s8 : !tessel.tile<32x1xi32>
  %brb = tessel.broadcast %brs : !tessel.tile<32x1xi32> -> !tessel.tile<32x8xi32>
  %bc = tessel.expand_dims %r8 {axis = 0 : i32} : !tessel.tile<8xi32> -> !tessel.tile<1x8xi32>
  %bcb = tessel.broadcast %bc : !tessel.tile<1x8xi32> -> !tessel.tile<32x8xi32>
  %bo = tessel.binary add %brb, %bcb : !tessel.tile<32x8xi32>
  %bs = tessel.splat %b : !tessel.ptr<f16> -> !tessel.tile<32x8x!tessel.ptr<f16>>
  %bp = tessel.addptr %bs, %bo : !tessel.tile<32x8x!tessel.ptr<f16>>, !tessel.tile<32x8xi32>
  %bv = tessel.load %bp : !tessel.tile<32x8x!tessel.ptr<f16>>
  %zero = arith.constant 0.0 : f32
  %acc = tessel.splat %zero : f32 -> !tessel.tile<16x8xf32>
  %d = tessel.dot %av, %bv, %acc : !tessel.tile<16x32xf16>, !tessel.tile<32x8xf16> -> !tessel.tile<16x8xf32>
  // out offsets: rows * 8 + cols.
  %orr = tessel.expand_dims %r16 {axis = 1 : i32} : !tessel.tile<16xi32> -> !tessel.tile<16x1xi32>
  %s8b = tessel.splat %c8 : i32 -> !tessel.tile<16x1xi32>
  %ors = tessel.binary mul %orr, %s8b : !tessel.tile<16x1xi32>
  %orb = tessel.broadcast %ors : !tessel.tile<16x1xi32> -> !tessel.tile<16x8xi32>
  %ocb = tessel.broadcast %bc : !tessel.tile<1x8xi32> -> !tessel.tile<16x8xi32>
  %oo = tessel.binary add %orb, %ocb : !tessel.tile<16x8xi32>
  %os = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<16x8x!tessel.ptr<f32>>
  %op = tessel.addptr %os, %oo : !tessel.tile<16x8x!tessel.ptr<f32>>, !tessel.tile<16x8xi32>
  tessel.store %op, %d : !tessel.tile<16x8x!tessel.ptr<f32>>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  std::vector<double> a(16 * 32), b(32 * 8);
  for (size_t k = 0; k < a.size(); ++k)
    a[k] = std::sin(0.37 * k) * 3;
  for (size_t k = 0; k < b.size(); ++k)
    b[k] = std::cos(0.11 * k) / 3;
  int ba = t.buffer(DType::F16, a), bb = t.buffer(DType::F16, b);
  int bo = t.buffer(DType::F32, 16 * 8);
  EXPECT_EQ(t.run("k", {buf(ba), buf(bb), buf(bo)}), "");
  std::vector<double> ah = t.memory.read(ba), bh = t.memory.read(bb);
  std::vector<double> out = t.memory.read(bo);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      double ref = 0;
      for (int k = 0; k < 32; ++k)
        ref += ah[r * 32 + k] * bh[k * 8 + c];
      // One rounding to f32 of the exact sum of f16 products.
      EXPECT_NEAR(out[r * 8 + c], ref, std::fabs(ref) * 0x1p-24 + 1e-30)
          << r << "," << c;
    }
}

TEST(Interpreter, Reductions) {
  // Row sums, row maxima and column minima of a 3x4 tile; row 2 is all -inf.
  TestModule t(R"(
func.func @k(%in: !tessel.ptr<f32>, %out: !tessel.ptr<f32>, %iout: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %r12 = tessel.arange 0, 12 : !tessel.tile<12xi32>
  %is = tessel.splat %in : !tessel.ptr<f32> -> !tessel.tile<12x!tessel.ptr<f32>>
  %ip = tessel.addptr %is, %r12 : !tessel.tile<12x!tessel.ptr<f32>>, !tessel.tile<12xi32>
  %flat = tessel.load %ip : !tessel.tile<12x!tessel.ptr<f32>>
  %x = tessel.reshape %flat : !tessel.tile<12xf32> -> !tessel.tile<3x4xf32>
  %sum = tessel.reduce sum %x {axis = 1 : i32} : !tessel.tile<3x4xf32> -> !tessel.tile<3xf32>
  %max = tessel.reduce max %x {axis = 1 : i32} : !tessel.tile<3x4xf32> -> !tessel.tile<3xf32>
  %min = tessel.reduce min %x {axis = 0 : i32} : !tessel.tile<3x4xf32> -> !tessel.tile<4xf32>
  %total = tessel.reduce sum %r12 {axis = 0 : i32} : !tessel.tile<12xi32> -> i32
  %r3 = tessel.arange 0, 3 : !tessel.tile<3xi32>
  %r4 = tessel.arange 0, 4 : !tessel.tile<4xi32>
  %os = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<3x!tessel.ptr<f32>>
  %p0 = tessel.addptr %os, %r3 : !tessel.tile<3x!tessel.ptr<f32>>, !tessel.tile<3xi32>
  tessel.store %p0, %sum : !tessel.tile<3x!tessel.ptr<f32>>
  %c3 = arith.constant 3 : i32
  %o3 = tessel.addptr %out, %c3 : !tessel.ptr<f32>, i32
  %os3 = tessel.splat %o3 : !tessel.ptr<f32> -> !tessel.tile<3x!tessel.ptr<f32>>
  %p1 = tessel.addptr %os3, %r3 : !tessel.tile<3x!tessel.ptr<f32>>, !tessel.tile<3xi32>
  tessel.store %p1, %max : !tessel.tile<3x!tessel.ptr<f32>>
  %c6 = arith.constant 6 : i32
  %o6 = tessel.addptr %out, %c6 : !tessel.ptr<f32>, i32
  %os6 = tessel.splat %o6 : !tessel.ptr<f32> -> !tessel.tile<4x!tessel.ptr<f32>>
  %p2 = tessel.addptr %os6, %r4 : !tessel.tile<4x!tessel.ptr<f32>>, !tessel.tile<4xi32>
  tessel.store %p2, %min : !tessel.tile<4x!tessel.ptr<f32>>
  tessel.store %iout, %total : !tessel.ptr<i32>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  double ninf = -std::numeric_limits<double>::infinity();
  // Row 0 sums to 1 + 2^-23 in double, an f32; adding in f32 one term
  // after the other would round each 1 + 2^-24 back to 1.
  int in = t.buffer(DType::F32, {1, 0x1p-24, 0x1p-24, 0, 3, -2, 7, 0.5, ninf,
                                 ninf, ninf, ninf});
  int out = t.buffer(DType::F32, 10), iout = t.buffer(DType::I32, 1);
  EXPECT_EQ(t.run("k", {buf(in), buf(out), buf(iout)}), "");
  std::vector<double> o = t.memory.read(out);
  EXPECT_EQ(o[0], 1 + 0x1p-23);
  EXPECT_EQ(o[1], 8.5);
  EXPECT_EQ(o[2], ninf); // Sum of -inf.
  EXPECT_EQ(o[3], 1);
  EXPECT_EQ(o[4], 7);
  EXPECT_EQ(o[5], ninf); // Max of an all -inf row.
  EXPECT_EQ(o[6], ninf);
  EXPECT_EQ(o[9], ninf);
  EXPECT_EQ(t.memory.readInts(iout)[0], 66);
}

TEST(Interpreter, ShapeOps) {
  // trans, extract_slice and reshape of a 2x3 tile [[0,1,2],[3,4,5]].
  TestModule t(R"(
func.func @k(%out: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %r = tessel.arange 0, 6 : !tessel.tile<6xi32>
  %x = tessel.reshape %r : !tessel.tile<6xi32> -> !tessel.tile<2x3xi32>
  %t = tessel.trans %x [1, 0] : !tessel.tile<2x3xi32> -> !tessel.tile<3x2xi32>
  %tf = tessel.reshape %t : !tessel.tile<3x2xi32> -> !tessel.tile<6xi32>
  %s = tessel.extract_slice %x [0, 1] : !tessel.tile<2x3xi32> -> !tessel.tile<2x2xi32>
  %sf = tessel.reshape %s : !tessel.tile<2x2xi32> -> !tessel.tile<4xi32>
  %os = tessel.splat %out : !tessel.ptr<i32> -> !tessel.tile<6x!tessel.ptr<i32>>
  %op = tessel.addptr %os, %r : !tessel.tile<6x!tessel.ptr<i32>>, !tessel.tile<6xi32>
  tessel.store %op, %tf : !tessel.tile<6x!tessel.ptr<i32>>
  %c6 = arith.constant 6 : i32
  %o6 = tessel.addptr %out, %c6 : !tessel.ptr<i32>, i32
  %r4 = tessel.arange 0, 4 : !tessel.tile<4xi32>
  %os6 = tessel.splat %o6 : !tessel.ptr<i32> -> !tessel.tile<4x!tessel.ptr<i32>>
  %op6 = tessel.addptr %os6, %r4 : !tessel.tile<4x!tessel.ptr<i32>>, !tessel.tile<4xi32>
  tessel.store %op6, %sf : !tessel.tile<4x!tessel.ptr<i32>>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::I32, 10);
  EXPECT_EQ(t.run("k", {buf(out)}), "");
  EXPECT_EQ(t.memory.readInts(out),
            (std::vector<int64_t>{0, 3, 1, 4, 2, 5, 1, 2, 4, 5}));
}

TEST(Interpreter, ScfForWithIterArgsAndScfIf) {
  // acc = sum over i in [lo, hi) step 3 of (i odd ? i * 2.0 : -1.0), also
  // counting the iterations; the last i is carried out too.
  TestModule t(R"(
func.func @k(%lo: i32, %hi: i32, %out: !tessel.ptr<f32>, %count: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %c3 = arith.constant 3 : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %z = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %m1 = arith.constant -1.0 : f32
  %res:2 = scf.for %i = %lo to %hi step %c3 iter_args(%acc = %z, %n = %c0) -> (f32, i32) : i32 {
    %r = arith.remsi %i, %c2 : i32
    %odd = arith.cmpi ne, %r, %c0 : i32
    %v = scf.if %odd -> (f32) {
      %fi = arith.sitofp %i : i32 to f32
      %d = arith.mulf %fi, %two : f32
      scf.yield %d : f32
    } else {
      scf.yield %m1 : f32
    }
    %acc2 = arith.addf %acc, %v : f32
    %n2 = arith.addi %n, %c1 : i32
    scf.yield %acc2, %n2 : f32, i32
  }
  tessel.store %out, %res#0 : !tessel.ptr<f32>
  tessel.store %count, %res#1 : !tessel.ptr<i32>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::F32, 1), count = t.buffer(DType::I32, 1);
  EXPECT_EQ(t.run("k", {i(-4), i(11), buf(out), buf(count)}), "");
  double ref = 0;
  int n = 0;
  for (int k = -4; k < 11; k += 3, ++n)
    ref += (k % 2 != 0) ? k * 2.0 : -1.0;
  EXPECT_EQ(t.memory.read(out)[0], ref);
  EXPECT_EQ(t.memory.readInts(count)[0], n);
  EXPECT_EQ(t.run("k", {i(5), i(5), buf(out), buf(count)}), "");
  EXPECT_EQ(t.memory.readInts(count)[0], 0); // Empty loop.
}

TEST(Interpreter, FloatSemantics) {
  // cmpf unordered/ordered, maximumf vs maxnumf on NaN, fptosi saturation,
  // f16 arithmetic rounding, a boolean to float (`(x < y).to(f32)`).
  TestModule t(R"(
func.func @k(%a: f32, %out: !tessel.ptr<f32>, %iout: !tessel.ptr<i32>) attributes {tessel.kernel} {
  %nan = arith.constant 0x7FC00000 : f32
  %one = arith.constant 1.0 : f32
  %une = arith.cmpf une, %nan, %one : f32
  %one_ = arith.cmpf one, %nan, %one : f32
  %mx = arith.maximumf %nan, %one : f32
  %mn = arith.maxnumf %nan, %one : f32
  %big = arith.constant 3.0e10 : f32
  %sat = arith.fptosi %big : f32 to i32
  %h = arith.truncf %a : f32 to f16
  %oneh = arith.constant 1.0 : f16
  %hh = arith.addf %h, %oneh : f16
  %back = arith.extf %hh : f16 to f32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %u = arith.extui %une : i1 to i32
  %o = arith.extui %one_ : i1 to i32
  %p1 = tessel.addptr %iout, %c1 : !tessel.ptr<i32>, i32
  %p2 = tessel.addptr %iout, %c2 : !tessel.ptr<i32>, i32
  tessel.store %iout, %u : !tessel.ptr<i32>
  tessel.store %p1, %o : !tessel.ptr<i32>
  tessel.store %p2, %sat : !tessel.ptr<i32>
  %q1 = tessel.addptr %out, %c1 : !tessel.ptr<f32>, i32
  %q2 = tessel.addptr %out, %c2 : !tessel.ptr<f32>, i32
  %q3 = tessel.addptr %out, %c3 : !tessel.ptr<f32>, i32
  %c4 = arith.constant 4 : i32
  %q4 = tessel.addptr %out, %c4 : !tessel.ptr<f32>, i32
  %uf = arith.uitofp %une : i1 to f32
  %of = arith.uitofp %one_ : i1 to f32
  tessel.store %out, %mx : !tessel.ptr<f32>
  tessel.store %q1, %mn : !tessel.ptr<f32>
  tessel.store %q2, %back : !tessel.ptr<f32>
  tessel.store %q3, %uf : !tessel.ptr<f32>
  tessel.store %q4, %of : !tessel.ptr<f32>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::F32, 5), iout = t.buffer(DType::I32, 3);
  EXPECT_EQ(t.run("k", {f(2049), buf(out), buf(iout)}), "");
  EXPECT_EQ(t.memory.readInts(iout), (std::vector<int64_t>{1, 0, INT32_MAX}));
  std::vector<double> o = t.memory.read(out);
  EXPECT_TRUE(std::isnan(o[0]));
  EXPECT_EQ(o[1], 1.0);
  // 2049 is a tie in f16 (spacing 2): to 2048; 2048 + 1 again.
  EXPECT_EQ(o[2], 2048.0);
  EXPECT_EQ(o[3], 1.0);
  EXPECT_EQ(o[4], 0.0);
}

TEST(Interpreter, UnsupportedOpIsAnErrorWithLocation) {
  TestModule t(R"(
func.func @k(%a: i32) attributes {tessel.kernel} {
  %s = arith.shrui %a, %a : i32 loc("k.tsl":2:3)
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  EXPECT_EQ(t.run("k", {i(1)}),
            "unsupported op 'arith.shrui' at k.tsl:2:3 (program (0, 0, 0) of "
            "kernel 'k')");
}

TEST(Interpreter, UnsupportedTypeIsAnErrorWithLocation) {
  TestModule t(R"(
func.func @k(%a: f32) attributes {tessel.kernel} {
  %d = arith.extf %a : f32 to f64 loc("k.tsl":4:8)
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  EXPECT_EQ(t.run("k", {f(1)}),
            "'arith.extf' on type f64 is not supported by the interpreter at "
            "k.tsl:4:8 (program (0, 0, 0) of kernel 'k')");
}

TEST(Interpreter, CallsAndSelectOfWholeValues) {
  // A helper left as a call; arith.select on a scalar condition picks whole
  // values, here online-softmax states.
  TestModule t(R"(
func.func private @twice(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}
func.func @k(%a: f32, %c: i1, %out: !tessel.ptr<f32>) attributes {tessel.kernel} {
  %y = func.call @twice(%a) : (f32) -> f32
  tessel.store %out, %y : !tessel.ptr<f32>
  %empty = tessel.softmax_init : !tessel.softmax_state<1x1>
  %s = tessel.splat %a : f32 -> !tessel.tile<1x1xf32>
  %v = tessel.splat %y : f32 -> !tessel.tile<1x1xf32>
  %full = tessel.online_softmax %empty, %s, %v : !tessel.softmax_state<1x1>, !tessel.tile<1x1xf32>, !tessel.tile<1x1xf32>
  %st = arith.select %c, %full, %empty : !tessel.softmax_state<1x1>
  %o, %lse = tessel.softmax_finalize %st : !tessel.softmax_state<1x1> -> !tessel.tile<1x1xf32>, !tessel.tile<1xf32>
  %c1 = arith.constant 1 : i32
  %p = tessel.addptr %out, %c1 : !tessel.ptr<f32>, i32
  %ps = tessel.splat %p : !tessel.ptr<f32> -> !tessel.tile<1x!tessel.ptr<f32>>
  tessel.store %ps, %lse : !tessel.tile<1x!tessel.ptr<f32>>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::F32, 2);
  EXPECT_EQ(t.run("k", {f(1.25), i(1), buf(out)}), "");
  EXPECT_EQ(t.memory.read(out), (std::vector<double>{2.5, 1.25}));
  EXPECT_EQ(t.run("k", {f(1.25), i(0), buf(out)}), "");
  EXPECT_EQ(t.memory.read(out)[1], -std::numeric_limits<double>::infinity());
}

TEST(Interpreter, ArgumentsAreCheckedAgainstTheSignature) {
  TestModule t(R"(
func.func @k(%p: !tessel.ptr<f16> loc("p"("k.tsl":1:7)), %n: i32) attributes {tessel.kernel} {
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int f32buf = t.buffer(DType::F32, 4), f16buf = t.buffer(DType::F16, 4);
  EXPECT_EQ(t.run("k", {buf(f16buf)}), "kernel 'k' expects 2 arguments, got 1");
  EXPECT_EQ(t.run("k", {buf(f32buf), i(1)}),
            "parameter #0 'p' (!tessel.ptr<f16>) of kernel 'k' got buffer #0 "
            "of f32");
  EXPECT_EQ(t.run("k", {i(3), i(1)}),
            "parameter #0 'p' (!tessel.ptr<f16>) of kernel 'k' needs a "
            "buffer, got an integer");
  EXPECT_EQ(t.run("k", {buf(7), i(1)}),
            "parameter #0 'p' (!tessel.ptr<f16>) of kernel 'k' got buffer #7, "
            "which does not exist");
  EXPECT_EQ(t.run("k", {buf(f16buf), f(1.5)}),
            "parameter #1 (i32) of kernel 'k' needs an integer, got a float");
  EXPECT_EQ(t.run("k", {buf(f16buf), i(int64_t(1) << 40)}),
            "parameter #1 (i32) of kernel 'k' got 1099511627776, which does "
            "not fit");
  EXPECT_EQ(t.run("k", {buf(f16buf), i(1)}, {2, -1, 1}),
            "grid of kernel 'k' must have sizes in [0, 2^31), got -1");
  EXPECT_EQ(t.run("k", {buf(f16buf), i(1)}, {0, 1, 1}), ""); // No programs.
}

TEST(Interpreter, WorkspacesArePerProgramAndNotAllocatedForBadGrids) {
  TestModule t(R"(
func.func @k(%p: !tessel.ptr<f16>, %w: !tessel.ptr<f32>, %c: !tessel.ptr<i32>) attributes {tessel.kernel, tessel.workspace = array<i64: 16, 3>} {
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  mlir::func::FuncOp k = t.kernel("k");
  EXPECT_EQ(getWorkspaceSizes(k), llvm::ArrayRef<int64_t>({16, 3}));
  std::vector<KernelArg> args = {KernelArg::ofBuffer(t.buffer(DType::F16, 4))};
  allocateWorkspaces(k, {2, 3, 1}, t.memory, args);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(t.memory.dtype(args[1].buffer), DType::F32);
  EXPECT_EQ(t.memory.size(args[1].buffer), 16u * 6);
  EXPECT_EQ(t.memory.dtype(args[2].buffer), DType::I32);
  EXPECT_EQ(t.memory.size(args[2].buffer), 3u * 6);
  EXPECT_EQ(t.run("k", args, {2, 3, 1}), "");
  // A grid runKernel refuses gets empty workspaces, and runKernel says why.
  for (std::array<int64_t, 3> bad :
       {std::array<int64_t, 3>{-1, 1, 1}, {1 << 30, 1 << 30, 1}}) {
    std::vector<KernelArg> none = {args[0]};
    allocateWorkspaces(k, bad, t.memory, none);
    ASSERT_EQ(none.size(), 3u);
    EXPECT_EQ(t.memory.size(none[1].buffer), 0u);
    EXPECT_NE(t.run("k", none, bad), "");
  }
  TestModule plain("func.func @k(%p: !tessel.ptr<f16>) attributes "
                   "{tessel.kernel} {\n  return\n}\n");
  EXPECT_TRUE(getWorkspaceSizes(plain.kernel("k")).empty());
}

TEST(Interpreter, IntegerHintsAreCheckedBeforeAnyProgramRuns) {
  // A violated hint must not run: the program would store 1.
  TestModule t(R"(
func.func @k(%p: !tessel.ptr<f32> {tessel.multiple_of = 16 : i64}, %n: i32 {tessel.multiple_of = 8 : i64} loc("n"("k.tsl":1:20)), %m: i64 {tessel.multiple_of = 4 : i64}) attributes {tessel.kernel} {
  %one = arith.constant 1.0 : f32
  tessel.store %p, %one : !tessel.ptr<f32>
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::F32, 1);
  EXPECT_EQ(t.run("k", {buf(out), i(12), i(4)}),
            "parameter #1 'n' (i32) of kernel 'k' got 12, which is not a "
            "multiple of 8 (multiple_of in the kernel source)");
  // The value the kernel would see (the signed reading of the width).
  EXPECT_EQ(t.run("k", {buf(out), i(0xfffffffc), i(4)}),
            "parameter #1 'n' (i32) of kernel 'k' got -4, which is not a "
            "multiple of 8 (multiple_of in the kernel source)");
  EXPECT_EQ(t.run("k", {buf(out), i(8), i(6)}),
            "parameter #2 (i64) of kernel 'k' got 6, which is not a multiple "
            "of 4 (multiple_of in the kernel source)");
  EXPECT_EQ(t.memory.read(out)[0], 0.0);
  // Zero and negative multiples keep the hints; buffers have no address.
  EXPECT_EQ(t.run("k", {buf(out), i(-16), i(0)}), "");
  EXPECT_EQ(t.memory.read(out)[0], 1.0);
}

TEST(Interpreter, FlagWaitCountsArrivalsAndMissingOnesAreADeadlock) {
  // Programs 1 .. G-1 signal, program 0 (run after them) waits for
  // `count` arrivals: satisfied when they all came, and the flag is
  // cleared. A second wait finds none.
  TestModule t(R"(
func.func @k(%flags: !tessel.ptr<i32>, %count: i32, %twice: i1) attributes {tessel.kernel} {
  %pid = tessel.program_id 0 : i32
  %c0 = arith.constant 0 : i32
  %host = arith.cmpi eq, %pid, %c0 : i32
  scf.if %host {
    tessel.flag_wait %flags count %count : !tessel.ptr<i32> loc("wait.tsl":5:5)
    scf.if %twice {
      tessel.flag_wait %flags : !tessel.ptr<i32> loc("wait.tsl":6:7)
    }
  } else {
    tessel.flag_signal %flags : !tessel.ptr<i32>
  }
  return
}
)");
  ASSERT_EQ(t.parseErrors(), "");
  int flags = t.buffer(DType::I32, 1);
  EXPECT_EQ(t.run("k", {buf(flags), i(3), i(0)}, {4, 1, 1}), "");
  EXPECT_EQ(t.memory.readInts(flags)[0], 0);
  EXPECT_EQ(t.run("k", {buf(flags), i(1), i(1)}, {2, 1, 1}),
            "deadlock: flag_wait on buffer #0 element 0 finds 0 of 1 "
            "arrivals: in the interpreter's sequential schedule (descending "
            "program order) nothing can signal it while this program waits "
            "at wait.tsl:6:7 (program (0, 0, 0) of kernel 'k')");
  t.memory.writeInts(flags, {0});
  EXPECT_EQ(t.run("k", {buf(flags), i(4), i(0)}, {4, 1, 1}),
            "deadlock: flag_wait on buffer #0 element 0 finds 3 of 4 "
            "arrivals: in the interpreter's sequential schedule (descending "
            "program order) nothing can signal it while this program waits "
            "at wait.tsl:5:5 (program (0, 0, 0) of kernel 'k')");
}

} // namespace
