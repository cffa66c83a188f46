//===- NumericsTest.cpp - Float formats, Memory, stream-K split -----------===//

#include "tessel/Interpreter.h"

#include "llvm/ADT/APFloat.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace tessel;

namespace {

/// LLVM's APFloat conversion, round to nearest even: the reference.
uint16_t apfloatBits(const llvm::fltSemantics &sem, double value) {
  llvm::APFloat f(value);
  bool lost;
  f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

TEST(Numerics, F16AndBF16DecodeEveryPatternLikeAPFloat) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    llvm::APFloat h(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
    llvm::APFloat b(llvm::APFloat::BFloat(), llvm::APInt(16, bits));
    bool lost;
    h.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    b.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    double dh = fromF16Bits(bits), db = fromBF16Bits(bits);
    if (h.isNaN()) {
      EXPECT_TRUE(std::isnan(dh)) << bits;
    } else {
      ASSERT_EQ(dh, h.convertToDouble()) << bits;
      ASSERT_EQ(std::signbit(dh), h.isNegative()) << bits;
      ASSERT_EQ(toF16Bits(dh), bits) << bits; // Round trip.
    }
    if (b.isNaN()) {
      EXPECT_TRUE(std::isnan(db)) << bits;
    } else {
      ASSERT_EQ(db, b.convertToDouble()) << bits;
      ASSERT_EQ(toBF16Bits(db), bits) << bits;
    }
  }
}

TEST(Numerics, RoundingMatchesAPFloat) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-40, 20);
  std::vector<double> values = {0x1p-25, 0x1p-24 * 1.5, 65504,   65519.99,
                                65520,   -65520,        0x1p-26, 1 + 0x1p-11,
                                0x1p128, -0x1.ffffp127};
  for (int k = 0; k < 200000; ++k)
    values.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  // Exact halfway points of f16 and bf16, to exercise ties.
  for (int k = 0; k < 2000; ++k) {
    double x = std::ldexp(std::floor(mantissa(rng) * 1024) + 0.5, -10);
    values.push_back(x);
    values.push_back(std::ldexp(std::floor(mantissa(rng) * 128) + 0.5, -7));
  }
  for (double v : values) {
    ASSERT_EQ(toF16Bits(v), apfloatBits(llvm::APFloat::IEEEhalf(), v)) << v;
    ASSERT_EQ(toBF16Bits(v), apfloatBits(llvm::APFloat::BFloat(), v)) << v;
    ASSERT_EQ(roundTo(DType::F16, v), fromF16Bits(toF16Bits(v))) << v;
    ASSERT_EQ(roundTo(DType::F32, v),
              static_cast<double>(static_cast<float>(v)));
  }
}

TEST(Numerics, MemoryConvertsOnReadAndWrite) {
  Memory memory;
  int f = memory.allocate(DType::F16, 3);
  int i32 = memory.allocate(DType::I32, 3);
  int i64 = memory.allocate(DType::I64, 1);
  int i1 = memory.allocate(DType::I1, 2);
  EXPECT_EQ(memory.read(f), (std::vector<double>{0, 0, 0})); // Zero-filled.
  memory.write(f, {0.1, -2.5, 1e6});
  EXPECT_EQ(memory.read(f),
            (std::vector<double>{0.0999755859375, -2.5, INFINITY}));
  memory.write(i32, {2.5, -1.6, 4294967297.0});
  EXPECT_EQ(memory.readInts(i32), (std::vector<int64_t>{2, -2, 1}));
  memory.writeInts(i64, {INT64_MIN + 1});
  EXPECT_EQ(memory.readInts(i64)[0], INT64_MIN + 1);
  memory.writeInts(i1, {1, 2});
  EXPECT_EQ(memory.readInts(i1), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(memory.size(f), 3u);
  EXPECT_EQ(memory.dtype(i1), DType::I1);
  EXPECT_FALSE(memory.isValid(4));
}

TEST(Numerics, StreamKRangesCoverEvenly) {
  for (int64_t programs : {1, 2, 3, 7, 8, 13, 132})
    for (int64_t units : {0, 1, 4, 5, 8, 32, 224})
      for (int64_t iters : {1, 3, 4, 64, 255}) {
        int64_t total = units * iters;
        // At most one program per iteration: the first P take part, each
        // owning at least one iteration; the others own nothing.
        int64_t used = streamKPrograms(programs, units, iters);
        int64_t even = std::max<int64_t>(std::min(programs, total), 1);
        ASSERT_LE(used, even);
        ASSERT_GE(used, 1);
        int64_t expect = 0, longest = 0;
        for (int64_t p = 0; p < programs; ++p) {
          IterRange r = streamKRange(p, used, total);
          ASSERT_EQ(r.begin, expect);
          int64_t len = r.end - r.begin;
          if (p >= used) {
            ASSERT_EQ(len, 0) << p << " of " << programs << ", " << total;
            continue;
          }
          ASSERT_EQ(r.begin, p * total / used);
          ASSERT_GE(len, total ? 1 : 0);
          ASSERT_TRUE(len == total / used || len == total / used + 1);
          for (int64_t it = r.begin; it < r.end; ++it)
            ASSERT_EQ(streamKOwner(it, used, total), p);
          longest = std::max(longest, len);
          expect = r.end;
        }
        ASSERT_EQ(expect, total);
        // Fewer programs only where no range gets longer, and then every
        // unit starts a range: no program computes slices of two units.
        ASSERT_LE(longest, (total + even - 1) / even);
        if (used != even)
          for (int64_t u = 1; u < units; ++u)
            ASSERT_EQ(
                streamKRange(streamKOwner(u * iters, used, total), used, total)
                    .begin,
                u * iters)
                << units << " units of " << iters << " on " << programs;
      }
  // A decode's shapes on 132 SMs: 8 units (GQA 64/8) take 16 programs each
  // instead of straddling 132; 4 units divide 132 evenly already; 224 units
  // (more than the grid) stay balanced over all of it.
  EXPECT_EQ(streamKPrograms(132, 8, 64), 128);
  EXPECT_EQ(streamKPrograms(132, 4, 512), 132);
  EXPECT_EQ(streamKPrograms(132, 224, 128), 132);
  // Large values: the split stays exact where p * total would overflow.
  int64_t total = int64_t(1) << 61, programs = 1000003;
  IterRange r = streamKRange(programs - 1, programs, total);
  EXPECT_EQ(r.end, total);
  EXPECT_EQ(streamKOwner(total - 1, programs, total), programs - 1);
}

} // namespace
