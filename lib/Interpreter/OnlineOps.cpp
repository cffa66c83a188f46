//===- OnlineOps.cpp - Online softmax and coupled-KL states ---------------===//
//
// The formulas of TesselOps.td, evaluated the way their expansion into
// max/exp2/sum/dot (tessel-expand-online) evaluates them: every elementwise
// step is an f32 op (rounded), sums over a row accumulate in double and are
// rounded once (as tessel.reduce), and the product with V is a tessel.dot,
// whose operand P is therefore rounded to V's element type first.
//
// Rows that have seen only -inf so far have m = -inf; exponents are taken
// relative to m_safe = (m == -inf ? 0 : m), so such rows keep l = 0 and
// acc = 0 instead of computing exp(-inf - -inf) = NaN.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "tessel/TesselDialect.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace ts = mlir::tessel;

namespace tessel {
using namespace detail;

static constexpr double kNegInf = -std::numeric_limits<double>::infinity();

static double f32(double x) { return roundFloat(FloatFormat::F32, x); }
static double safe(double m) { return m == kNegInf ? 0.0 : m; }
/// exp(x - m_safe) as the expansion computes it, in f32 steps:
/// 2^(x·log2 e − m_safe·log2 e) with results below the smallest normal f32
/// flushed to 0 (exp2 ftz).
static double expRel(double x, double mSafe) {
  const double log2e = f32(M_LOG2E);
  double exponent = f32(f32(x * log2e) - f32(mSafe * log2e));
  double r = std::exp2(exponent);
  return f32(r < std::numeric_limits<float>::min() ? 0.0 : r);
}

static double rowMax(const RtValue &t, int64_t row, int64_t n) {
  double m = kNegInf;
  for (int64_t j = 0; j < n; ++j)
    m = maximumF(m, t.floats[row * n + j]);
  return m;
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

static SoftmaxStateValue softmaxInit(int64_t rows, int64_t cols) {
  return {rows, cols, std::vector<double>(rows, kNegInf),
          std::vector<double>(rows, 0.0),
          std::vector<double>(rows * cols, 0.0)};
}

/// m' = max(m, rowmax S), l' = l·α + Σ P, acc' = acc·α + P·V with
/// α = e^(m − m'), P = e^(S − m').
static SoftmaxStateValue onlineSoftmax(const SoftmaxStateValue &st,
                                       const RtValue &scores,
                                       const RtValue &values,
                                       FloatFormat valueFormat) {
  int64_t rows = st.rows, cols = st.cols, n = scores.shape[1];
  SoftmaxStateValue out = softmaxInit(rows, cols);
  std::vector<double> p(n), acc(cols);
  for (int64_t r = 0; r < rows; ++r) {
    double m = maximumF(st.m[r], rowMax(scores, r, n)), mSafe = safe(m);
    double alpha = expRel(st.m[r], mSafe), sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      double pj = expRel(scores.floats[r * n + j], mSafe);
      sum += pj;
      p[j] = roundFloat(valueFormat, pj);
    }
    for (int64_t c = 0; c < cols; ++c)
      acc[c] = f32(st.acc[r * cols + c] * alpha);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < cols; ++c)
        acc[c] += p[j] * values.floats[j * cols + c];
    out.m[r] = m;
    out.l[r] = f32(f32(st.l[r] * alpha) + f32(sum));
    for (int64_t c = 0; c < cols; ++c)
      out.acc[r * cols + c] = f32(acc[c]);
  }
  return out;
}

static SoftmaxStateValue softmaxMerge(const SoftmaxStateValue &a,
                                      const SoftmaxStateValue &b) {
  SoftmaxStateValue out = softmaxInit(a.rows, a.cols);
  for (int64_t r = 0; r < a.rows; ++r) {
    double m = maximumF(a.m[r], b.m[r]), mSafe = safe(m);
    double fa = expRel(a.m[r], mSafe), fb = expRel(b.m[r], mSafe);
    out.m[r] = m;
    out.l[r] = f32(f32(a.l[r] * fa) + f32(b.l[r] * fb));
    for (int64_t c = r * a.cols; c < (r + 1) * a.cols; ++c)
      out.acc[c] = f32(f32(a.acc[c] * fa) + f32(b.acc[c] * fb));
  }
  return out;
}

/// o = acc / l and lse = m + log l; rows with l == 0 give o = 0, lse = -inf.
static void softmaxFinalize(const SoftmaxStateValue &st, RtValue &o,
                            RtValue &lse) {
  o = RtValue::lanes(ElemKind::Float, {st.rows, st.cols});
  lse = RtValue::lanes(ElemKind::Float, {st.rows});
  for (int64_t r = 0; r < st.rows; ++r) {
    bool empty = st.l[r] == 0;
    lse.floats[r] = empty ? kNegInf : f32(st.m[r] + f32(std::log(st.l[r])));
    double inverse = empty ? 0.0 : f32(1.0 / st.l[r]);
    for (int64_t c = r * st.cols; c < (r + 1) * st.cols; ++c)
      o.floats[c] = empty ? 0.0 : f32(st.acc[c] * inverse);
  }
}

//===----------------------------------------------------------------------===//
// Coupled KL
//===----------------------------------------------------------------------===//

static KLStateValue klInit(int64_t rows) {
  std::vector<double> ninf(rows, kNegInf), zero(rows, 0.0);
  return {ninf, zero, ninf, zero, zero};
}

/// mₛ' = max(mₛ, rowmax s), lₛ' = lₛ·αₛ + Σ e^(s − mₛ'),
/// A' = A·αₛ + Σ e^(s − mₛ')(s − t), and lₜ' likewise with t. Entries with
/// s = -inf contribute nothing to A (their s − t may be NaN).
static KLStateValue onlineKL(const KLStateValue &st, const RtValue &s,
                             const RtValue &t) {
  auto rows = static_cast<int64_t>(st.ms.size());
  int64_t n = s.shape[1];
  KLStateValue out = klInit(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double ms = maximumF(st.ms[r], rowMax(s, r, n)), msSafe = safe(ms);
    double mt = maximumF(st.mt[r], rowMax(t, r, n)), mtSafe = safe(mt);
    double as = expRel(st.ms[r], msSafe), at = expRel(st.mt[r], mtSafe);
    double sumS = 0, sumT = 0, sumA = 0;
    for (int64_t j = r * n; j < (r + 1) * n; ++j) {
      double ps = expRel(s.floats[j], msSafe);
      sumS += ps;
      sumT += expRel(t.floats[j], mtSafe);
      if (s.floats[j] != kNegInf)
        sumA += f32(ps * f32(s.floats[j] - t.floats[j]));
    }
    out.ms[r] = ms;
    out.mt[r] = mt;
    out.ls[r] = f32(f32(st.ls[r] * as) + f32(sumS));
    out.lt[r] = f32(f32(st.lt[r] * at) + f32(sumT));
    out.a[r] = f32(f32(st.a[r] * as) + f32(sumA));
  }
  return out;
}

static KLStateValue klMerge(const KLStateValue &a, const KLStateValue &b) {
  KLStateValue out = klInit(static_cast<int64_t>(a.ms.size()));
  for (size_t r = 0; r < a.ms.size(); ++r) {
    double ms = maximumF(a.ms[r], b.ms[r]), mt = maximumF(a.mt[r], b.mt[r]);
    double fas = expRel(a.ms[r], safe(ms)), fbs = expRel(b.ms[r], safe(ms));
    double fat = expRel(a.mt[r], safe(mt)), fbt = expRel(b.mt[r], safe(mt));
    out.ms[r] = ms;
    out.mt[r] = mt;
    out.ls[r] = f32(f32(a.ls[r] * fas) + f32(b.ls[r] * fbs));
    out.lt[r] = f32(f32(a.lt[r] * fat) + f32(b.lt[r] * fbt));
    out.a[r] = f32(f32(a.a[r] * fas) + f32(b.a[r] * fbs));
  }
  return out;
}

/// kl = A/lₛ − LSE(s) + LSE(t) with LSE = m + log l; an LSE with l == 0 is
/// -inf and a row with lₛ == 0 has kl = 0. (A row with lₜ == 0 < lₛ breaks
/// the "masked in both" rule; it gets -inf, as the expansion computes.)
static void klFinalize(const KLStateValue &st, RtValue &kl, RtValue &lseS,
                       RtValue &lseT) {
  auto rows = static_cast<int64_t>(st.ms.size());
  kl = lseS = lseT = RtValue::lanes(ElemKind::Float, {rows});
  auto lse = [](double m, double l) {
    return l == 0 ? kNegInf : f32(m + f32(std::log(l)));
  };
  for (int64_t r = 0; r < rows; ++r) {
    lseS.floats[r] = lse(st.ms[r], st.ls[r]);
    lseT.floats[r] = lse(st.mt[r], st.lt[r]);
    kl.floats[r] = st.ls[r] == 0
                       ? 0.0
                       : f32(f32(f32(st.a[r] / st.ls[r]) - lseS.floats[r]) +
                             lseT.floats[r]);
  }
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

template <typename T> static RtValue stateValue(T state) {
  RtValue v;
  if constexpr (std::is_same_v<T, SoftmaxStateValue>)
    v.softmax = std::make_shared<const SoftmaxStateValue>(std::move(state));
  else
    v.kl = std::make_shared<const KLStateValue>(std::move(state));
  return v;
}

Executor::OptResult Executor::execOnlineOp(Operation *op) {
  auto done = [&](auto state) -> OptResult {
    set(op->getResult(0), stateValue(std::move(state)));
    return success();
  };
  auto setAll = [&](ArrayRef<RtValue> values) -> OptResult {
    for (auto [result, value] : llvm::zip(op->getResults(), values))
      set(result, value);
    return success();
  };
  return llvm::TypeSwitch<Operation *, OptResult>(op)
      .Case([&](ts::SoftmaxInitOp init) {
        auto type = cast<ts::SoftmaxStateType>(init.getType());
        return done(softmaxInit(type.getRows(), type.getCols()));
      })
      .Case([&](ts::OnlineSoftmaxOp o) {
        FloatFormat format = ElemType::get(o.getValues().getType())->format;
        return done(onlineSoftmax(*get(o.getState()).softmax,
                                  get(o.getScores()), get(o.getValues()),
                                  format));
      })
      .Case([&](ts::SoftmaxMergeOp m) {
        return done(
            softmaxMerge(*get(m.getLhs()).softmax, *get(m.getRhs()).softmax));
      })
      .Case([&](ts::SoftmaxFinalizeOp f) {
        RtValue o, lse;
        softmaxFinalize(*get(f.getState()).softmax, o, lse);
        return setAll({o, lse});
      })
      .Case([&](ts::KLInitOp init) {
        return done(klInit(cast<ts::KLStateType>(init.getType()).getRows()));
      })
      .Case([&](ts::OnlineKLOp o) {
        return done(onlineKL(*get(o.getState()).kl, get(o.getTeacher()),
                             get(o.getStudent())));
      })
      .Case([&](ts::KLMergeOp m) {
        return done(klMerge(*get(m.getLhs()).kl, *get(m.getRhs()).kl));
      })
      .Case([&](ts::KLFinalizeOp f) {
        RtValue kl, lseS, lseT;
        klFinalize(*get(f.getState()).kl, kl, lseS, lseT);
        return setAll({kl, lseS, lseT});
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace tessel
