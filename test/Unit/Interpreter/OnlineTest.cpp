//===- OnlineTest.cpp - Online softmax and coupled KL vs direct -----------===//
//
// Scores of R rows × N = NB blocks of BN columns, processed block by block;
// results compared with a direct computation in double.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <random>

using namespace tessel;
using namespace tessel::test;

namespace {

constexpr int R = 4, C = 4, BN = 8, NB = 3, N = BN * NB;
const double kInf = std::numeric_limits<double>::infinity();

std::string tile(std::vector<int64_t> shape, const std::string &elt) {
  return tileType(shape, elt);
}
const std::string kSoftmax = "!tessel.softmax_state<4x4>";
const std::string kKL = "!tessel.kl_state<4>";

/// Constants and the offsets every kernel here uses.
std::string prologue() {
  return R"(
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %cC = arith.constant 4 : i32
  %cBN = arith.constant 8 : i32
  %cNB = arith.constant 3 : i32
  %lr = tessel.arange 0, 4 : !tessel.tile<4xi32>
)" + offsets2D("soff", R, BN, N) +
         offsets2D("voff", BN, C, C) + offsets2D("ooff", R, C, C);
}

/// Loads the R×BN block of BASE (f32 scores) starting at column %COL0 into
/// %P_<base>.
std::string loadScores(const std::string &p, const std::string &base,
                       const std::string &col0) {
  std::string ptr = p + "_" + base + "p";
  return "  %" + ptr + "0 = tessel.addptr %" + base + ", %" + col0 +
         " : !tessel.ptr<f32>, i32\n" +
         pointers(ptr, ptr + "0", "soff", {R, BN}, "f32") + "  %" + p + "_" +
         base + " = tessel.load %" + ptr + " : " +
         tile({R, BN}, "!tessel.ptr<f32>") + "\n";
}

/// Loads the BN×C block of %v (f16) starting at row %COL0 into %P_v.
std::string loadValues(const std::string &p, const std::string &col0) {
  return "  %" + p + "_vr = arith.muli %" + col0 + ", %cC : i32\n  %" + p +
         "_vp0 = tessel.addptr %v, %" + p + "_vr : !tessel.ptr<f16>, i32\n" +
         pointers(p + "_vp", p + "_vp0", "voff", {BN, C}, "f16") + "  %" + p +
         "_v = tessel.load %" + p +
         "_vp : " + tile({BN, C}, "!tessel.ptr<f16>") + "\n";
}

/// Stores tile %VALUE (shape, offsets %OFFS) to pointer %BASE.
std::string store(const std::string &base, const std::string &value,
                  const std::string &offs, std::vector<int64_t> shape) {
  return pointers(base + "_" + value + "_p", base, offs, shape, "f32") +
         "  tessel.store %" + base + "_" + value + "_p, %" + value + " : " +
         tile(shape, "!tessel.ptr<f32>") + "\n";
}

std::string softmaxKernels() {
  std::string k =
      R"(
func.func @attn(%s: !tessel.ptr<f32>, %v: !tessel.ptr<f16>, %o: !tessel.ptr<f32>, %lse: !tessel.ptr<f32>) attributes {tessel.kernel} {)" +
      prologue() + "  %init = tessel.softmax_init : " + kSoftmax +
      "\n  %st = scf.for %b = %c0 to %cNB step %c1 iter_args(%acc "
      "= %init) -> (" +
      kSoftmax + ") : i32 {\n  %col0 = arith.muli %b, %cBN : i32\n" +
      loadScores("blk", "s", "col0") + loadValues("blk", "col0") +
      "  %next = tessel.online_softmax %acc, %blk_s, %blk_v : " + kSoftmax +
      ", " + tile({R, BN}, "f32") + ", " + tile({BN, C}, "f16") +
      "\n  scf.yield %next : " + kSoftmax +
      "\n  }\n  %out, %l = tessel.softmax_finalize %st : " + kSoftmax + " -> " +
      tile({R, C}, "f32") + ", " + tile({R}, "f32") + "\n" +
      store("o", "out", "ooff", {R, C}) + store("lse", "l", "lr", {R}) +
      "  return\n}\n";
  // merge3: three block states merged as (a·b)·c and a·(b·c).
  k += R"(
func.func @merge3(%s: !tessel.ptr<f32>, %v: !tessel.ptr<f16>, %o: !tessel.ptr<f32>, %lse: !tessel.ptr<f32>, %o2: !tessel.ptr<f32>, %lse2: !tessel.ptr<f32>) attributes {tessel.kernel} {)" +
       prologue() + "  %init = tessel.softmax_init : " + kSoftmax + "\n";
  for (int b = 0; b < NB; ++b) {
    std::string p = "b" + std::to_string(b);
    k += "  %" + p + "_c0 = arith.constant " + std::to_string(b * BN) +
         " : i32\n" + loadScores(p, "s", p + "_c0") + loadValues(p, p + "_c0") +
         "  %st" + std::to_string(b) + " = tessel.online_softmax %init, %" + p +
         "_s, %" + p + "_v : " + kSoftmax + ", " + tile({R, BN}, "f32") + ", " +
         tile({BN, C}, "f16") + "\n";
  }
  auto merge = [&](const std::string &r, const std::string &a,
                   const std::string &b) {
    return "  %" + r + " = tessel.softmax_merge %" + a + ", %" + b + " : " +
           kSoftmax + "\n";
  };
  auto finalize = [&](const std::string &st, const std::string &o,
                      const std::string &l) {
    return "  %" + o + ", %" + l + " = tessel.softmax_finalize %" + st + " : " +
           kSoftmax + " -> " + tile({R, C}, "f32") + ", " + tile({R}, "f32") +
           "\n";
  };
  k += merge("ab", "st0", "st1") + merge("left", "ab", "st2") +
       merge("bc", "st1", "st2") + merge("right", "st0", "bc") +
       finalize("left", "out1", "l1") + finalize("right", "out2", "l2") +
       store("o", "out1", "ooff", {R, C}) + store("lse", "l1", "lr", {R}) +
       store("o2", "out2", "ooff", {R, C}) + store("lse2", "l2", "lr", {R}) +
       "  return\n}\n";
  return k;
}

struct SoftmaxData {
  std::vector<double> s, v; // v already rounded to f16
};

SoftmaxData softmaxData() {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0, 3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  SoftmaxData d{std::vector<double>(R * N), std::vector<double>(N * C)};
  for (int j = 0; j < N; ++j) {
    d.s[0 * N + j] = normal(rng);
    d.s[1 * N + j] = -kInf; // Fully masked row.
    d.s[2 * N + j] = j == 20 ? 1e4 - 1 : (j % 5 == 0 ? 1e4 : -1e4);
    d.s[3 * N + j] = j < BN ? -kInf : normal(rng); // First block masked.
  }
  for (double &x : d.v)
    x = roundTo(DType::F16, uniform(rng));
  return d;
}

void expectSoftmax(const std::vector<double> &o, const std::vector<double> &lse,
                   const SoftmaxData &d) {
  std::vector<double> refO(R * C), refL(R);
  referenceSoftmax(d.s.data(), d.v.data(), R, N, C, refO.data(), refL.data());
  for (int k = 0; k < R * C; ++k) {
    ASSERT_FALSE(std::isnan(o[k])) << k;
    // P is rounded to f16 before the product with V (|V| <= 1).
    EXPECT_NEAR(o[k], refO[k], 1e-3) << "o[" << k / C << "][" << k % C << "]";
  }
  for (int r = 0; r < R; ++r) {
    if (refL[r] == -kInf)
      EXPECT_EQ(lse[r], -kInf) << r;
    else
      EXPECT_NEAR(lse[r], refL[r], 2e-6 * std::fabs(refL[r]) + 1e-5) << r;
  }
}

TEST(Online, SoftmaxOverBlocksMatchesDirectSoftmax) {
  TestModule t(softmaxKernels());
  ASSERT_EQ(t.parseErrors(), "");
  SoftmaxData d = softmaxData();
  int s = t.buffer(DType::F32, d.s), v = t.buffer(DType::F16, d.v);
  int o = t.buffer(DType::F32, R * C), lse = t.buffer(DType::F32, R);
  ASSERT_EQ(t.run("attn", {buf(s), buf(v), buf(o), buf(lse)}), "");
  std::vector<double> out = t.memory.read(o), l = t.memory.read(lse);
  expectSoftmax(out, l, d);
  // The fully masked row: o = 0 and lse = -inf exactly.
  for (int c = 0; c < C; ++c)
    EXPECT_EQ(out[1 * C + c], 0.0);
  EXPECT_EQ(l[1], -kInf);
}

TEST(Online, SoftmaxMergeIsAssociative) {
  TestModule t(softmaxKernels());
  ASSERT_EQ(t.parseErrors(), "");
  SoftmaxData d = softmaxData();
  int s = t.buffer(DType::F32, d.s), v = t.buffer(DType::F16, d.v);
  int o1 = t.buffer(DType::F32, R * C), l1 = t.buffer(DType::F32, R);
  int o2 = t.buffer(DType::F32, R * C), l2 = t.buffer(DType::F32, R);
  ASSERT_EQ(
      t.run("merge3", {buf(s), buf(v), buf(o1), buf(l1), buf(o2), buf(l2)}),
      "");
  std::vector<double> a = t.memory.read(o1), b = t.memory.read(o2);
  std::vector<double> la = t.memory.read(l1), lb = t.memory.read(l2);
  for (int k = 0; k < R * C; ++k)
    EXPECT_NEAR(a[k], b[k], 1e-6) << k;
  for (int r = 0; r < R; ++r)
    EXPECT_TRUE(la[r] == lb[r] || std::fabs(la[r] - lb[r]) < 1e-5) << r;
  expectSoftmax(a, la, d);
  expectSoftmax(b, lb, d);
}

//===----------------------------------------------------------------------===//
// Coupled KL
//===----------------------------------------------------------------------===//

std::string klKernels() {
  std::string outs = tile({R}, "f32");
  auto finish = [&](const std::string &st) {
    return "  %kl, %ls, %lt = tessel.kl_finalize %" + st + " : " + kKL +
           " -> " + outs + ", " + outs + ", " + outs + "\n" +
           store("klo", "kl", "lr", {R}) + store("lso", "ls", "lr", {R}) +
           store("lto", "lt", "lr", {R}) + "  return\n}\n";
  };
  std::string sig = "(%s: !tessel.ptr<f32>, %t: !tessel.ptr<f32>, %klo: "
                    "!tessel.ptr<f32>, %lso: !tessel.ptr<f32>, %lto: "
                    "!tessel.ptr<f32>) attributes {tessel.kernel} {";
  std::string block = tile({R, BN}, "f32");
  std::string k =
      "func.func @kl" + sig + prologue() + "  %init = tessel.kl_init : " + kKL +
      "\n  %st = scf.for %b = %c0 to %cNB step %c1 iter_args(%acc "
      "= %init) -> (" +
      kKL + ") : i32 {\n  %col0 = arith.muli %b, %cBN : i32\n" +
      loadScores("blk", "s", "col0") + loadScores("blk", "t", "col0") +
      "  %next = tessel.online_kl %acc, %blk_s, %blk_t : " + kKL + ", " +
      block + ", " + block + "\n  scf.yield %next : " + kKL + "\n  }\n" +
      finish("st");
  // klmerge: the three block states merged as (a·b)·c.
  k += "func.func @klmerge" + sig + prologue() +
       "  %init = tessel.kl_init : " + kKL + "\n";
  for (int b = 0; b < NB; ++b) {
    std::string p = "b" + std::to_string(b);
    k += "  %" + p + "_c0 = arith.constant " + std::to_string(b * BN) +
         " : i32\n" + loadScores(p, "s", p + "_c0") +
         loadScores(p, "t", p + "_c0") + "  %st" + std::to_string(b) +
         " = tessel.online_kl %init, %" + p + "_s, %" + p + "_t : " + kKL +
         ", " + block + ", " + block + "\n";
  }
  k += "  %ab = tessel.kl_merge %st0, %st1 : " + kKL +
       "\n  %abc = tessel.kl_merge %ab, %st2 : " + kKL + "\n" + finish("abc");
  return k;
}

/// Teacher s and student t scores: a plain row, a fully masked row, a row
/// masked in both at the same places, a row of large teacher logits.
void klData(std::vector<double> &s, std::vector<double> &tt) {
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0, 2);
  s.assign(R * N, 0);
  tt.assign(R * N, 0);
  for (int j = 0; j < N; ++j) {
    s[0 * N + j] = normal(rng);
    tt[0 * N + j] = normal(rng);
    s[1 * N + j] = tt[1 * N + j] = -kInf;    // Fully masked row.
    bool masked = j % 3 == 0 || j >= 2 * BN; // Masked in both.
    s[2 * N + j] = masked ? -kInf : normal(rng);
    tt[2 * N + j] = masked ? -kInf : normal(rng);
    s[3 * N + j] = 20 * normal(rng); // Large logits.
    tt[3 * N + j] = normal(rng);
  }
  for (double &x : s)
    x = roundTo(DType::F32, x);
  for (double &x : tt)
    x = roundTo(DType::F32, x);
}

TEST(Online, CoupledKLMatchesDirectKL) {
  TestModule t(klKernels());
  ASSERT_EQ(t.parseErrors(), "");
  std::vector<double> s, tt;
  klData(s, tt);
  for (const char *kernel : {"kl", "klmerge"}) {
    SCOPED_TRACE(kernel);
    int bs = t.buffer(DType::F32, s), bt = t.buffer(DType::F32, tt);
    int kl = t.buffer(DType::F32, R), ls = t.buffer(DType::F32, R),
        lt = t.buffer(DType::F32, R);
    ASSERT_EQ(t.run(kernel, {buf(bs), buf(bt), buf(kl), buf(ls), buf(lt)}), "");
    std::vector<double> klv = t.memory.read(kl), lsv = t.memory.read(ls),
                        ltv = t.memory.read(lt);
    for (int r = 0; r < R; ++r) {
      auto lse = [&](const std::vector<double> &x) {
        double m = -kInf, l = 0;
        for (int j = 0; j < N; ++j)
          m = std::max(m, x[r * N + j]);
        if (m == -kInf)
          return -kInf;
        for (int j = 0; j < N; ++j)
          l += std::exp(x[r * N + j] - m);
        return m + std::log(l);
      };
      double lseS = lse(s), lseT = lse(tt), ref = 0;
      for (int j = 0; j < N && lseS != -kInf; ++j)
        if (s[r * N + j] != -kInf)
          ref += std::exp(s[r * N + j] - lseS) * (s[r * N + j] - tt[r * N + j]);
      ref = lseS == -kInf ? 0 : ref - lseS + lseT;
      ASSERT_FALSE(std::isnan(klv[r])) << r;
      EXPECT_NEAR(klv[r], ref, 2e-4 + 1e-4 * std::fabs(ref)) << "row " << r;
      if (lseS == -kInf) {
        EXPECT_EQ(klv[r], 0.0);
        EXPECT_EQ(lsv[r], -kInf);
        EXPECT_EQ(ltv[r], -kInf);
      } else {
        EXPECT_NEAR(lsv[r], lseS, 1e-5 * (1 + std::fabs(lseS))) << r;
        EXPECT_NEAR(ltv[r], lseT, 1e-5 * (1 + std::fabs(lseT))) << r;
      }
    }
  }
}

// The interpreter's online ops and their expansion by tessel-expand-online
// into max/exp/sum/dot give the same bits.
TEST(Online, ExpansionComputesTheSameBits) {
  SoftmaxData d = softmaxData();
  auto softmaxArgs = [&](TestModule &t) {
    std::vector<KernelArg> args = {buf(t.buffer(DType::F32, d.s)),
                                   buf(t.buffer(DType::F16, d.v))};
    for (int k = 0; k < 2; ++k) {
      args.push_back(buf(t.buffer(DType::F32, R * C)));
      args.push_back(buf(t.buffer(DType::F32, R)));
    }
    return args;
  };
  expectSameAfterExpansion(softmaxKernels(), "attn", [&](TestModule &t) {
    std::vector<KernelArg> args = softmaxArgs(t);
    args.resize(4);
    return args;
  });
  expectSameAfterExpansion(softmaxKernels(), "merge3", softmaxArgs);
  std::vector<double> s, tt;
  klData(s, tt);
  auto klArgs = [&](TestModule &t) {
    return std::vector<KernelArg>{
        buf(t.buffer(DType::F32, s)), buf(t.buffer(DType::F32, tt)),
        buf(t.buffer(DType::F32, R)), buf(t.buffer(DType::F32, R)),
        buf(t.buffer(DType::F32, R))};
  };
  expectSameAfterExpansion(klKernels(), "kl", klArgs);
  expectSameAfterExpansion(klKernels(), "klmerge", klArgs);
}

} // namespace
