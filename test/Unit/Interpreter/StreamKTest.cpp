//===- StreamKTest.cpp - tessel.stream_k against direct computations ------===//

#include "TestUtils.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <random>

using namespace tessel;
using namespace tessel::test;

namespace {

// Per unit u: out[u] = Σ x[u*iters + i]. The state also carries the range
// [b, e) it covers and whether every merge joined adjacent ranges, earlier
// first; the epilogue adds 1 to check[u] when the merged range is exactly
// [0, iters). The body adds its slice length to work[q] of the program q
// that program_id reports.
const char *kSums = R"(
func.func @sums(%x: !tessel.ptr<f32>, %out: !tessel.ptr<f32>, %check: !tessel.ptr<i32>, %work: !tessel.ptr<i32>, %units: i32, %iters: i32) attributes {tessel.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%u: i32, %b: i32, %e: i32):
    %z = arith.constant 0.0 : f32
    %first = arith.muli %u, %iters : i32
    %s = scf.for %i = %b to %e step %c1 iter_args(%acc = %z) -> (f32) : i32 {
      %g = arith.addi %first, %i : i32
      %p = tessel.addptr %x, %g : !tessel.ptr<f32>, i32
      %xv = tessel.load %p : !tessel.ptr<f32>
      %a2 = arith.addf %acc, %xv : f32
      scf.yield %a2 : f32
    }
    %px = tessel.program_id 0 : i32
    %py = tessel.program_id 1 : i32
    %nx = tessel.num_programs 0 : i32
    %row = arith.muli %py, %nx : i32
    %q = arith.addi %row, %px : i32
    %n = arith.subi %e, %b : i32
    %wp = tessel.addptr %work, %q : !tessel.ptr<i32>, i32
    %old = tessel.atomic_add %wp, %n : !tessel.ptr<i32>
    %ok = arith.constant true
    tessel.yield %s, %b, %e, %ok : f32, i32, i32, i1
  } merge {
  ^bb0(%s1: f32, %b1: i32, %e1: i32, %ok1: i1, %s2: f32, %b2: i32, %e2: i32, %ok2: i1):
    %s = arith.addf %s1, %s2 : f32
    %adj = arith.cmpi eq, %e1, %b2 : i32
    %ok12 = arith.andi %ok1, %ok2 : i1
    %ok = arith.andi %ok12, %adj : i1
    tessel.yield %s, %b1, %e2, %ok : f32, i32, i32, i1
  } epilogue {
  ^bb0(%u: i32, %s: f32, %b: i32, %e: i32, %ok: i1):
    %p = tessel.addptr %out, %u : !tessel.ptr<f32>, i32
    tessel.store %p, %s : !tessel.ptr<f32>
    %b0 = arith.cmpi eq, %b, %c0 : i32
    %eN = arith.cmpi eq, %e, %iters : i32
    %t1 = arith.andi %ok, %b0 : i1
    %t2 = arith.andi %t1, %eN : i1
    %v = arith.extui %t2 : i1 to i32
    %cp = tessel.addptr %check, %u : !tessel.ptr<i32>, i32
    %old = tessel.atomic_add %cp, %v : !tessel.ptr<i32>
    tessel.yield
  } loc("sums.tsl":9:5)
  return
}
)";

struct SumsCase {
  int64_t units, iters;
  std::array<int64_t, 3> grid;
};

class StreamKSums : public ::testing::TestWithParam<SumsCase> {};

TEST_P(StreamKSums, MatchesDirectSums) {
  SumsCase p = GetParam();
  TestModule t(kSums);
  ASSERT_EQ(t.parseErrors(), "");
  int64_t total = p.units * p.iters;
  int64_t programs = p.grid[0] * p.grid[1] * p.grid[2];
  std::vector<double> x(total);
  for (int64_t k = 0; k < total; ++k)
    x[k] = static_cast<double>((k * 7) % 11); // Exact sums in f32.
  int bx = t.buffer(DType::F32, x), out = t.buffer(DType::F32, p.units);
  int check = t.buffer(DType::I32, p.units);
  int work = t.buffer(DType::I32, programs);
  ASSERT_EQ(
      t.run("sums",
            {buf(bx), buf(out), buf(check), buf(work), i(p.units), i(p.iters)},
            p.grid),
      "");
  std::vector<double> sums = t.memory.read(out);
  std::vector<int64_t> checks = t.memory.readInts(check);
  for (int64_t u = 0; u < p.units; ++u) {
    double ref = 0;
    for (int64_t k = 0; k < p.iters; ++k)
      ref += x[u * p.iters + k];
    EXPECT_EQ(sums[u], ref) << "unit " << u;
    EXPECT_EQ(checks[u], 1) << "unit " << u; // One epilogue, whole range.
  }
  // Each program computed exactly its share of the iterations.
  std::vector<int64_t> w = t.memory.readInts(work);
  for (int64_t q = 0; q < programs; ++q) {
    IterRange r =
        streamKRange(q, streamKPrograms(programs, p.units, p.iters), total);
    EXPECT_EQ(w[q], r.end - r.begin) << "program " << q;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Grids, StreamKSums,
    ::testing::Values(SumsCase{3, 5, {1, 1, 1}},  // One program does all.
                      SumsCase{5, 4, {3, 1, 1}},  // Fewer programs than units.
                      SumsCase{3, 7, {8, 1, 1}},  // More programs, 21 % 8 != 0.
                      SumsCase{2, 3, {10, 1, 1}}, // Programs with no work.
                      SumsCase{4, 6, {3, 2, 1}},  // 2-D grid.
                      SumsCase{7, 1, {4, 1, 1}})); // One iteration per unit.

// Fewer than one iteration per unit counts as one empty slot: every unit
// still gets body(unit, 0, 0) and exactly one epilogue (as in the lowering).
TEST(StreamK, ZeroItersRunsEachEpilogueOnce) {
  TestModule t(kSums);
  ASSERT_EQ(t.parseErrors(), "");
  int bx = t.buffer(DType::F32, 4), out = t.buffer(DType::F32, 4);
  int check = t.buffer(DType::I32, 4), work = t.buffer(DType::I32, 3);
  EXPECT_EQ(t.run("sums",
                  {buf(bx), buf(out), buf(check), buf(work), i(2), i(0)},
                  {3, 1, 1}),
            "");
  std::vector<int64_t> checks = t.memory.readInts(check);
  EXPECT_EQ(checks[0], 1);
  EXPECT_EQ(checks[1], 1);
  EXPECT_EQ(checks[2], 0); // Only two units.
  EXPECT_EQ(t.memory.read(out)[0], 0.0);
  EXPECT_EQ(
      t.run("sums", {buf(bx), buf(out), buf(check), buf(work), i(0), i(0)}),
      ""); // No units: nothing to do.
}

// LeanAttention's shape: each unit is a 4-row query tile attending over
// NB = 5 key blocks of 8; partial online-softmax states of the programs'
// slices are merged by the host and finalized in the epilogue.
constexpr int R = 4, C = 4, BN = 8, NB = 5, N = BN * NB, UNITS = 3;

std::string leanKernel() {
  std::string st = "!tessel.softmax_state<4x4>";
  return R"(
func.func @lean(%s: !tessel.ptr<f32>, %v: !tessel.ptr<f16>, %o: !tessel.ptr<f32>, %lse: !tessel.ptr<f32>, %units: i32, %iters: i32) attributes {tessel.kernel} {
  %c1 = arith.constant 1 : i32
  %cC = arith.constant 4 : i32
  %cR = arith.constant 4 : i32
  %cBN = arith.constant 8 : i32
  %cUnitS = arith.constant 160 : i32
  %cUnitO = arith.constant 16 : i32
  %lr = tessel.arange 0, 4 : !tessel.tile<4xi32>
)" + offsets2D("soff", R, BN, N) +
         offsets2D("voff", BN, C, C) + offsets2D("ooff", R, C, C) +
         R"(  tessel.stream_k units(%units) iters(%iters) body {
  ^bb0(%u: i32, %b: i32, %e: i32):
    %init = tessel.softmax_init : )" +
         st + R"(
    %su = arith.muli %u, %cUnitS : i32
    %st = scf.for %i = %b to %e step %c1 iter_args(%acc = %init) -> ()" +
         st + R"() : i32 {
      %col = arith.muli %i, %cBN : i32
      %so = arith.addi %su, %col : i32
      %sp0 = tessel.addptr %s, %so : !tessel.ptr<f32>, i32
)" + pointers("sp", "sp0", "soff", {R, BN}, "f32") +
         R"(      %sv = tessel.load %sp : !tessel.tile<4x8x!tessel.ptr<f32>>
      %vi = arith.muli %col, %cC : i32
      %vo = arith.addi %su, %vi : i32
      %vp0 = tessel.addptr %v, %vo : !tessel.ptr<f16>, i32
)" + pointers("vp", "vp0", "voff", {BN, C}, "f16") +
         R"(      %vv = tessel.load %vp : !tessel.tile<8x4x!tessel.ptr<f16>>
      %next = tessel.online_softmax %acc, %sv, %vv : )" +
         st + R"(, !tessel.tile<4x8xf32>, !tessel.tile<8x4xf16>
      scf.yield %next : )" +
         st + R"(
    }
    tessel.yield %st : )" +
         st + R"(
  } merge {
  ^bb0(%x: )" +
         st + ", %y: " + st + R"():
    %m = tessel.softmax_merge %x, %y : )" +
         st + R"(
    tessel.yield %m : )" +
         st + R"(
  } epilogue {
  ^bb0(%u: i32, %fin: )" +
         st + R"():
    %out, %l = tessel.softmax_finalize %fin : )" +
         st + R"( -> !tessel.tile<4x4xf32>, !tessel.tile<4xf32>
    %ou = arith.muli %u, %cUnitO : i32
    %op0 = tessel.addptr %o, %ou : !tessel.ptr<f32>, i32
)" + pointers("op", "op0", "ooff", {R, C}, "f32") +
         R"(    tessel.store %op, %out : !tessel.tile<4x4x!tessel.ptr<f32>>
    %lu = arith.muli %u, %cR : i32
    %lp0 = tessel.addptr %lse, %lu : !tessel.ptr<f32>, i32
)" + pointers("lp", "lp0", "lr", {R}, "f32") +
         R"(    tessel.store %lp, %l : !tessel.tile<4x!tessel.ptr<f32>>
    tessel.yield
  }
  return
}
)";
}

/// Scores and values of every unit: plain rows, a fully masked row, a row
/// whose first half (whole slices) is masked.
void leanData(std::vector<double> &s, std::vector<double> &v) {
  const double inf = std::numeric_limits<double>::infinity();
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(0, 2);
  std::uniform_real_distribution<double> uniform(-1, 1);
  // Unit u: scores at u*R*N (R × N), values at u*N*C (N × C); R*N == N*C.
  s.assign(UNITS * R * N, 0);
  v.assign(UNITS * N * C, 0);
  for (int u = 0; u < UNITS; ++u)
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < N; ++j) {
        double &x = s[(u * R + r) * N + j];
        x = normal(rng);
        if (u == 0 && r == 1)
          x = -inf; // Fully masked row.
        if (u == 1 && r == 2 && j < N / 2)
          x = -inf; // Whole slices of this row are masked.
      }
  for (double &x : v)
    x = roundTo(DType::F16, uniform(rng));
}

TEST(StreamK, LeanAttentionMatchesDirectSoftmax) {
  TestModule t(leanKernel());
  ASSERT_EQ(t.parseErrors(), "");
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> s, v;
  leanData(s, v);
  std::vector<double> refO(UNITS * R * C), refL(UNITS * R);
  for (int u = 0; u < UNITS; ++u)
    referenceSoftmax(&s[u * R * N], &v[u * N * C], R, N, C, &refO[u * R * C],
                     &refL[u * R]);
  for (int64_t programs : {1, 2, 4, 7, 16}) {
    SCOPED_TRACE("programs = " + std::to_string(programs));
    int bs = t.buffer(DType::F32, s), bv = t.buffer(DType::F16, v);
    int bo = t.buffer(DType::F32, UNITS * R * C),
        bl = t.buffer(DType::F32, UNITS * R);
    ASSERT_EQ(t.run("lean",
                    {buf(bs), buf(bv), buf(bo), buf(bl), i(UNITS), i(NB)},
                    {programs, 1, 1}),
              "");
    std::vector<double> o = t.memory.read(bo), l = t.memory.read(bl);
    for (size_t k = 0; k < o.size(); ++k)
      EXPECT_NEAR(o[k], refO[k], 1e-3) << k; // P is rounded to f16.
    for (size_t k = 0; k < l.size(); ++k) {
      if (refL[k] == -inf)
        EXPECT_EQ(l[k], -inf) << k;
      else
        EXPECT_NEAR(l[k], refL[k], 1e-5 * (1 + std::fabs(refL[k]))) << k;
    }
  }
}

// Partial states flowing through stream_k regions as tiles after
// tessel-expand-online give the same bits as the online ops.
TEST(StreamK, ExpansionComputesTheSameBits) {
  std::vector<double> s, v;
  leanData(s, v);
  for (int64_t programs : {1, 4, 16}) {
    SCOPED_TRACE("programs = " + std::to_string(programs));
    expectSameAfterExpansion(leanKernel(), "lean",
                             [&](TestModule &t) {
                               return std::vector<KernelArg>{
                                   buf(t.buffer(DType::F32, s)),
                                   buf(t.buffer(DType::F16, v)),
                                   buf(t.buffer(DType::F32, UNITS * R * C)),
                                   buf(t.buffer(DType::F32, UNITS * R)),
                                   i(UNITS),
                                   i(NB)};
                             },
                             {programs, 1, 1});
  }
}

// tessel-lower-stream-k's persistent kernel (workspaces, arrival flags,
// merges by the host) computes what the stream_k op computes.
void expectLoweredSums(const SumsCase &p) {
  int64_t total = p.units * p.iters;
  expectSameAfterLowering(
      kSums, "sums",
      [&](TestModule &t) {
        std::vector<double> x(total);
        for (int64_t k = 0; k < total; ++k)
          x[k] = static_cast<double>((k * 7) % 11);
        return std::vector<KernelArg>{buf(t.buffer(DType::F32, x)),
                                      buf(t.buffer(DType::F32, p.units)),
                                      buf(t.buffer(DType::I32, p.units)),
                                      buf(t.buffer(DType::I32, p.grid[0])),
                                      i(p.units),
                                      i(p.iters)};
      },
      p.grid);
}

// The cases above on the 1-D grids a persistent kernel uses.
TEST(StreamK, LoweredKernelComputesTheSameBits) {
  for (SumsCase p : {SumsCase{3, 5, {1, 1, 1}}, SumsCase{5, 4, {3, 1, 1}},
                     SumsCase{3, 7, {8, 1, 1}}, SumsCase{7, 1, {4, 1, 1}}}) {
    SCOPED_TRACE(std::to_string(p.units) + " units of " +
                 std::to_string(p.iters) + " on " + std::to_string(p.grid[0]));
    expectLoweredSums(p);
  }
}

// With more programs than iterations, a program with an empty range once lay
// between a unit's host and its last peer (6 iterations on 10 programs:
// program 2 owned nothing, yet host 1 waited on its flag), a deadlock the
// interpreter reported here; the split now gives programs past the
// iterations nothing, so a unit's peers are consecutive.
TEST(StreamK, LoweredKernelWithIdleProgramsBetweenPeers) {
  expectLoweredSums(SumsCase{2, 3, {10, 1, 1}});
}

// The cluster lowering: cluster q of the grid's G / C takes units q, q + G/C,
// ...; its CTA r the r-th of min(C, iters) equal slices of each, handed to
// CTA 0 through its shared memory. Every unit is summed exactly once, from
// adjacent slices merged in order, and each program does its slices' work:
// one unit per cluster, several, idle clusters, idle CTAs (iters < C), and
// C not a power of two.
struct ClusterCase {
  int64_t units, iters, programs, size;
};

TEST(StreamK, ClusterLoweringSumsEveryUnitOnce) {
  for (ClusterCase p : {ClusterCase{3, 5, 6, 2}, ClusterCase{5, 4, 4, 4},
                        ClusterCase{3, 7, 9, 3}, ClusterCase{7, 1, 4, 2},
                        ClusterCase{2, 3, 16, 4}, ClusterCase{1, 10, 12, 3},
                        ClusterCase{4, 0, 8, 2}}) {
    SCOPED_TRACE(std::to_string(p.units) + " units of " +
                 std::to_string(p.iters) + " on " + std::to_string(p.programs) +
                 " programs in clusters of " + std::to_string(p.size));
    std::string source = kSums;
    std::string head = "iters(%iters) body";
    source.replace(source.find(head), head.size(),
                   "iters(%iters) cluster(" + std::to_string(p.size) +
                       ") body");
    TestModule t(source);
    ASSERT_EQ(t.parseErrors(), "");
    ASSERT_EQ(t.lower(/*streamK=*/true), "");
    int64_t total = p.units * p.iters;
    std::vector<double> x(total);
    for (int64_t k = 0; k < total; ++k)
      x[k] = static_cast<double>((k * 7) % 11);
    int bx = t.buffer(DType::F32, x), out = t.buffer(DType::F32, p.units);
    int check = t.buffer(DType::I32, p.units);
    int work = t.buffer(DType::I32, p.programs);
    ASSERT_EQ(t.run("sums",
                    {buf(bx), buf(out), buf(check), buf(work), i(p.units),
                     i(p.iters)},
                    {p.programs, 1, 1}),
              "");
    std::vector<double> sums = t.memory.read(out);
    std::vector<int64_t> checks = t.memory.readInts(check);
    std::vector<int64_t> done = t.memory.readInts(work);
    int64_t clusters = p.programs / p.size;
    int64_t n = std::min(p.size, std::max<int64_t>(p.iters, 1));
    auto cut = [&](int64_t r) {
      return std::min(std::min(r, n) * std::max<int64_t>(p.iters, 1) / n,
                      p.iters);
    };
    for (int64_t u = 0; u < p.units; ++u) {
      double ref = 0;
      for (int64_t k = 0; k < p.iters; ++k)
        ref += x[u * p.iters + k];
      EXPECT_EQ(sums[u], ref) << "unit " << u;
      EXPECT_EQ(checks[u], 1) << "unit " << u;
    }
    for (int64_t q = 0; q < p.programs; ++q) {
      int64_t mine = (p.units - q / p.size + clusters - 1) / clusters;
      int64_t r = q % p.size;
      EXPECT_EQ(done[q], std::max<int64_t>(mine, 0) * (cut(r + 1) - cut(r)))
          << "program " << q;
    }
  }
}

// The cluster barrier's rules, in a cluster of two: an arrival must be
// followed by a wait before the next, a wait must follow an arrival; an
// error in one CTA stops its cluster (no hang) and is the one reported.
TEST(StreamK, ClusterBarrierMisuseIsReported) {
  auto kernel =
      [](const std::string &rank0, const std::string &rank1) {
        return R"(
func.func @k(%x: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.cluster = 2 : i64} {
  %p = tessel.program_id 0 : i32
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %p, %c0 : i32
  scf.if %first {
)" + rank0 + R"(
  } else {
)" + rank1 + R"(
  }
  return
}
)";
      };
  const std::string arrive = "    tessel.cluster_arrive loc(\"k.tsl\":3:5)\n";
  const std::string wait = "    tessel.cluster_wait loc(\"k.tsl\":4:5)\n";
  const std::string outOfBounds =
      "    %i = arith.constant 8 : i32\n"
      "    %q = tessel.addptr %x, %i : !tessel.ptr<f32>, i32\n"
      "    %v = tessel.load %q : !tessel.ptr<f32> loc(\"k.tsl\":5:5)\n";
  struct Case {
    std::string rank0, rank1, error;
  } cases[] = {
      {arrive + arrive, arrive + wait,
       "cluster_arrive twice without a cluster_wait between them at "
       "k.tsl:3:5 (program (0, 0, 0) of kernel 'k')"},
      {wait, arrive + wait,
       "cluster_wait without a cluster_arrive before it at k.tsl:4:5 "
       "(program (0, 0, 0) of kernel 'k')"},
      {arrive + wait, arrive + outOfBounds,
       "out-of-bounds load of buffer #0 at element 8 (size 4) at k.tsl:5:5 "
       "(program (1, 0, 0) of kernel 'k')"},
      // CTA 0 waits for CTA 1, which runs after it and arrives, twice.
      {arrive + wait + arrive + wait, arrive + wait + arrive + wait, ""},
  };
  for (const Case &c : cases) {
    TestModule t(kernel(c.rank0, c.rank1));
    ASSERT_EQ(t.parseErrors(), "");
    int x = t.buffer(DType::F32, 4);
    EXPECT_EQ(t.run("k", {buf(x)}, {2, 1, 1}), c.error);
  }
  TestModule t(kernel(arrive + wait, arrive + wait));
  int x = t.buffer(DType::F32, 4);
  EXPECT_EQ(t.run("k", {buf(x)}, {3, 1, 1}),
            "grid of kernel 'k' has 3 programs along x, not a multiple of its "
            "cluster of 2");
}

TEST(StreamK, LoweredLeanAttentionComputesTheSameBits) {
  std::vector<double> s, v;
  leanData(s, v);
  for (int64_t programs : {1, 2, 4, 7, 16}) {
    SCOPED_TRACE("programs = " + std::to_string(programs));
    expectSameAfterLowering(leanKernel(), "lean",
                            [&](TestModule &t) {
                              return std::vector<KernelArg>{
                                  buf(t.buffer(DType::F32, s)),
                                  buf(t.buffer(DType::F16, v)),
                                  buf(t.buffer(DType::F32, UNITS * R * C)),
                                  buf(t.buffer(DType::F32, UNITS * R)),
                                  i(UNITS),
                                  i(NB)};
                            },
                            {programs, 1, 1});
  }
}

// With rows, the rows of partial states from `rows` on are NaN: an epilogue
// that stores them shows it, one that masks them is unaffected.
const char *kLiveRows = R"(
func.func @rows(%out: !tessel.ptr<f32>, %units: i32, %iters: i32, %rows: i32) attributes {tessel.kernel} {
  %r = tessel.arange 0, 4 : !tessel.tile<4xi32>
  tessel.stream_k units(%units) iters(%iters) rows(%rows) body {
  ^bb0(%u: i32, %b: i32, %e: i32):
    %n = arith.subi %e, %b : i32
    %f = arith.sitofp %n : i32 to f32
    %t = tessel.splat %f : f32 -> !tessel.tile<4xf32>
    tessel.yield %t : !tessel.tile<4xf32>
  } merge {
  ^bb0(%a: !tessel.tile<4xf32>, %c: !tessel.tile<4xf32>):
    %s = tessel.binary add %a, %c : !tessel.tile<4xf32>
    tessel.yield %s : !tessel.tile<4xf32>
  } epilogue {
  ^bb0(%u: i32, %s: !tessel.tile<4xf32>):
    %c4 = arith.constant 4 : i32
    %base = arith.muli %u, %c4 : i32
    %row = tessel.splat %base : i32 -> !tessel.tile<4xi32>
    %off = tessel.binary add %row, %r : !tessel.tile<4xi32>
    %outs = tessel.splat %out : !tessel.ptr<f32> -> !tessel.tile<4x!tessel.ptr<f32>>
    %p = tessel.addptr %outs, %off : !tessel.tile<4x!tessel.ptr<f32>>, !tessel.tile<4xi32>
    tessel.store %p, %s : !tessel.tile<4x!tessel.ptr<f32>>
    tessel.yield
  }
  return
}
)";

TEST(StreamK, RowsPastTheLiveOnesArePoisoned) {
  TestModule t(kLiveRows);
  ASSERT_EQ(t.parseErrors(), "");
  for (int64_t live : {0, 2, 4, 9}) {
    SCOPED_TRACE("rows = " + std::to_string(live));
    int out = t.buffer(DType::F32, 8);
    EXPECT_EQ(t.run("rows", {buf(out), i(2), i(5), i(live)}, {3, 1, 1}), "");
    std::vector<double> o = t.memory.read(out);
    for (int64_t u = 0; u < 2; ++u)
      for (int64_t r = 0; r < 4; ++r) {
        if (r < live)
          EXPECT_EQ(o[u * 4 + r], 5.0);
        else
          EXPECT_TRUE(std::isnan(o[u * 4 + r]));
      }
  }
}

// max_rows promises rows never exceed it; a launch that breaks it is an error
// (the lowering has no room for those rows), one that keeps it runs.
TEST(StreamK, RowsPastMaxRowsAreAnError) {
  std::string source = kLiveRows;
  std::string head = "rows(%rows) body";
  source.replace(source.find(head), head.size(),
                 "rows(%rows) max_rows(2) body");
  TestModule t(source);
  ASSERT_EQ(t.parseErrors(), "");
  int out = t.buffer(DType::F32, 8);
  EXPECT_EQ(t.run("rows", {buf(out), i(2), i(5), i(2)}, {3, 1, 1}), "");
  EXPECT_NE(t.run("rows", {buf(out), i(2), i(5), i(3)}, {3, 1, 1})
                .find("stream_k's rows (3) exceed its max_rows (2)"),
            std::string::npos);
}

} // namespace
