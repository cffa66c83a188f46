//===- StreamK.cpp - The high-level semantics of tessel.stream_k ----------===//
//
// With G programs in the grid and T = units * iters iterations, program p
// owns the linearised iterations streamKRange(p, P, T), P =
// streamKPrograms(G, units, iters) (programs P .. G-1 none). The host of a
// unit is the program owning the unit's first iteration. When the host executes
// the op it, for each unit it hosts:
//   1. runs `body(unit, begin, end)` for the slice of the unit owned by each
//      program q, in increasing q (begin/end count from the unit's start,
//      0 <= begin < end <= iters; programs with empty slices are skipped),
//      with program_id reporting q, the program that computes that slice on
//      the GPU;
//   2. folds the partial states left to right with `merge` (earlier first);
//   3. runs `epilogue(unit, state)`.
// Programs that host no unit do nothing. This is the result the lowered
// persistent kernel (partial states in a workspace, arrival flags, merge by
// the host) must produce, up to the rounding of merges.
// With `rows`, the float rows of each partial state from `rows` on are NaN:
// the lowering does not keep them, so an epilogue that uses them is wrong,
// and its outputs show it here. Rows beyond `max_rows` are an error: the
// lowering has no room for them.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "tessel/TesselDialect.h"

#include <algorithm>
#include <limits>

using namespace mlir;
namespace ts = mlir::tessel;

namespace tessel {
using namespace detail;

/// p * T / G computed as p * (T / G) + p * (T % G) / G, which gives the same
/// value without overflow while G < 2^31 (the lowering can use it as is).
static int64_t streamKCut(int64_t p, int64_t programs, int64_t total) {
  return p * (total / programs) + p * (total % programs) / programs;
}

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t streamKPrograms(int64_t programs, int64_t units, int64_t iters) {
  int64_t total = units * iters;
  int64_t even = std::max<int64_t>(std::min(programs, total), 1);
  // The split-K lowering's chunks per unit.
  int64_t perUnit = std::max<int64_t>(
      std::min(programs / std::max<int64_t>(units, 1), iters), 1);
  int64_t aligned = units * perUnit;
  if (aligned > 0 && aligned <= programs &&
      ceilDiv(iters, perUnit) <= ceilDiv(total, even))
    return aligned;
  return even;
}

IterRange streamKRange(int64_t program, int64_t used, int64_t total) {
  if (program >= used)
    return {total, total};
  return {streamKCut(program, used, total),
          streamKCut(program + 1, used, total)};
}

int64_t streamKOwner(int64_t iter, int64_t used, int64_t total) {
  // The largest p with cut(p) <= iter; cut is nondecreasing in p.
  int64_t lo = 0, hi = used - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (streamKCut(mid, used, total) <= iter)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// `v` with its float rows from `live` on set to NaN (rows: dimension 0 of a
/// tile, the rows of an online state).
static void poisonRows(RtValue &v, int64_t live) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  auto poison = [&](std::vector<double> &xs, int64_t perRow) {
    for (size_t i = live * perRow; i < xs.size(); ++i)
      xs[i] = nan;
  };
  if (v.softmax) {
    auto st = std::make_shared<SoftmaxStateValue>(*v.softmax);
    for (std::vector<double> *rows : {&st->m, &st->l})
      poison(*rows, 1);
    poison(st->acc, st->cols);
    v.softmax = std::move(st);
  } else if (v.kl) {
    auto st = std::make_shared<KLStateValue>(*v.kl);
    for (std::vector<double> *rows :
         {&st->ms, &st->ls, &st->mt, &st->lt, &st->a})
      poison(*rows, 1);
    v.kl = std::move(st);
  } else if (!v.shape.empty() && !v.floats.empty()) {
    poison(v.floats, v.floats.size() / v.shape[0]);
  }
}

LogicalResult Executor::runStreamKUnit(Operation *op, int64_t unit,
                                       int64_t iters, int64_t total,
                                       int64_t used, int64_t bodyIters,
                                       std::optional<int64_t> live) {
  auto streamK = cast<ts::StreamKOp>(op);
  int64_t first = unit * iters, last = first + iters;
  std::array<int64_t, 3> host = pid;
  std::vector<RtValue> state, partial;
  for (int64_t begin = first; begin < last;) {
    int64_t q = streamKOwner(begin, used, total);
    int64_t end = std::min(last, streamKRange(q, used, total).end);
    pid = {q % grid[0], (q / grid[0]) % grid[1], q / (grid[0] * grid[1])};
    LogicalResult ran =
        runRegion(streamK.getBody(),
                  {RtValue::intScalar(unit),
                   RtValue::intScalar(std::min(begin - first, bodyIters)),
                   RtValue::intScalar(std::min(end - first, bodyIters))},
                  partial);
    pid = host;
    if (failed(ran))
      return failure();
    if (live)
      for (RtValue &v : partial)
        poisonRows(v, *live);
    if (state.empty()) {
      state = std::move(partial);
    } else {
      std::vector<RtValue> args = std::move(state);
      args.insert(args.end(), partial.begin(), partial.end());
      if (failed(runRegion(streamK.getMerge(), args, state)))
        return failure();
    }
    begin = end;
  }
  std::vector<RtValue> args = {RtValue::intScalar(unit)}, none;
  args.insert(args.end(), state.begin(), state.end());
  return runRegion(streamK.getEpilogue(), args, none);
}

Executor::OptResult Executor::execStreamK(Operation *op) {
  auto streamK = dyn_cast<ts::StreamKOp>(op);
  if (!streamK)
    return std::nullopt;
  int64_t units = get(streamK.getUnits()).ints[0];
  int64_t iters = get(streamK.getIters()).ints[0];
  if (units < 0)
    return fail(op, "stream_k needs units >= 0, got " + Twine(units));
  if (units == 0)
    return success();
  std::optional<int64_t> live;
  if (Value rows = streamK.getRows()) // below 0: none live, as in the lowering
    live = std::max<int64_t>(get(rows).ints[0], 0);
  if (std::optional<uint64_t> bound = streamK.getMaxRows();
      bound && live && *live > int64_t(*bound))
    return fail(op, "stream_k's rows (" + Twine(*live) +
                        ") exceed its max_rows (" + Twine(*bound) + ")");
  // Fewer than one iteration per unit counts as one empty slot, so every
  // unit still gets body(unit, 0, 0) and its epilogue (as in the lowering).
  int64_t bodyIters = std::max<int64_t>(iters, 0);
  iters = std::max<int64_t>(iters, 1);
  int64_t programs = grid[0] * grid[1] * grid[2];
  int64_t self = pid[0] + grid[0] * (pid[1] + grid[1] * pid[2]);
  int64_t total = units * iters;
  int64_t used = streamKPrograms(programs, units, iters);
  IterRange mine = streamKRange(self, used, total);
  // Units whose first iteration u * iters lies in [mine.begin, mine.end).
  for (int64_t unit = (mine.begin + iters - 1) / iters;
       unit < units && unit * iters < mine.end; ++unit)
    if (failed(runStreamKUnit(op, unit, iters, total, used, bodyIters, live)))
      return failure();
  return success();
}

} // namespace tessel
