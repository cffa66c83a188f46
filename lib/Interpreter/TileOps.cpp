//===- TileOps.cpp - Grid queries, shapes, addptr, dot, reduce ------------===//
//
// dot: acc + a·b is accumulated in double (products of f16/bf16/f32 values
// are exact there) and rounded to f32 once per element. The GPU accumulates
// in f32 in an order of its own, so results agree to f32 accumulation error,
// not bit for bit. f32 operands are used at full precision (no TF32).
//
// reduce: sums accumulate in double and round to the element type once;
// max/min propagate NaN, and the max of an all -inf row is -inf. Integer
// sums wrap to the width.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "tessel/TesselDialect.h"

#include "llvm/ADT/TypeSwitch.h"

#include <chrono>

using namespace mlir;
namespace ts = mlir::tessel;

namespace tessel {
using namespace detail;

static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// Lanes of `shape` where lane `index` (a multi-index) is source lane
/// base + Σ index[d] · mult[d].
static RtValue gatherAffine(const RtValue &src, ElemKind kind,
                            ArrayRef<int64_t> shape, int64_t base,
                            ArrayRef<int64_t> mult) {
  RtValue out = RtValue::lanes(kind, shape);
  SmallVector<int64_t> index(shape.size(), 0);
  int64_t flat = base;
  for (size_t i = 0, n = out.numLanes(); i < n; ++i) {
    out.setLane(kind, i, src.lane(kind, flat));
    for (size_t d = shape.size(); d-- > 0;) {
      flat += mult[d];
      if (++index[d] < shape[d])
        break;
      flat -= mult[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

/// splat, broadcast, trans, extract_slice, expand_dims, reshape and
/// convert_layout: ops that only move lanes.
static bool movesLanes(Operation *op) {
  return isa<ts::SplatOp, ts::BroadcastOp, ts::TransOp, ts::ExtractSliceOp,
             ts::ExpandDimsOp, ts::ReshapeOp, ts::ConvertLayoutOp>(op);
}

/// `offsets`: an extract_slice's origin (its runtime offsets resolved).
static RtValue moveLanes(Operation *op, const RtValue &src,
                         ArrayRef<int64_t> offsets = {}) {
  Type type = op->getResult(0).getType();
  ArrayRef<int64_t> shape = shapeOf(type);
  if (isa<ts::ExpandDimsOp, ts::ReshapeOp, ts::ConvertLayoutOp>(op)) {
    RtValue out = src; // Row-major order is unchanged.
    out.shape.assign(shape.begin(), shape.end());
    return out;
  }
  SmallVector<int64_t> strides = stridesOf(src.shape);
  SmallVector<int64_t> mult(shape.size(), 0); // A splat repeats lane 0.
  int64_t base = 0;
  if (isa<ts::BroadcastOp>(op)) {
    for (size_t d = 0; d < shape.size(); ++d)
      mult[d] = src.shape[d] == 1 ? 0 : strides[d];
  } else if (auto trans = dyn_cast<ts::TransOp>(op)) {
    for (size_t d = 0; d < shape.size(); ++d)
      mult[d] = strides[trans.getOrder()[d]];
  } else if (isa<ts::ExtractSliceOp>(op)) {
    for (size_t d = 0; d < shape.size(); ++d) {
      mult[d] = strides[d];
      base += offsets[d] * strides[d];
    }
  }
  return gatherAffine(src, ElemType::get(type)->kind, shape, base, mult);
}

static RtValue arange(int64_t start, int64_t end) {
  RtValue out = RtValue::lanes(ElemKind::Int, {end - start});
  for (int64_t i = start; i < end; ++i)
    out.ints[i - start] = wrapInt(i, 32);
  return out;
}

static RtValue dot(const RtValue &a, const RtValue &b, const RtValue &acc) {
  int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  std::vector<double> sum(acc.floats);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) {
      double aik = a.floats[i * k + kk];
      const double *brow = &b.floats[kk * n];
      double *srow = &sum[i * n];
      for (int64_t j = 0; j < n; ++j)
        srow[j] += aik * brow[j];
    }
  RtValue out = RtValue::lanes(ElemKind::Float, acc.shape);
  for (size_t i = 0; i < sum.size(); ++i)
    out.floats[i] = roundFloat(FloatFormat::F32, sum[i]);
  return out;
}

static Lane reduceLanes(ts::ReduceKind kind, const ElemType &elem,
                        const RtValue &src, int64_t first, int64_t count,
                        int64_t stride) {
  Lane out;
  if (elem.kind == ElemKind::Float) {
    double r = src.floats[first];
    for (int64_t i = 1; i < count; ++i) {
      double x = src.floats[first + i * stride];
      r = kind == ts::ReduceKind::sum   ? r + x
          : kind == ts::ReduceKind::max ? maximumF(r, x)
                                        : minimumF(r, x);
    }
    out.f = roundFloat(elem.format, r);
    return out;
  }
  int64_t r = asSigned(src.ints[first], elem.width);
  for (int64_t i = 1; i < count; ++i) {
    int64_t x = asSigned(src.ints[first + i * stride], elem.width);
    r = kind == ts::ReduceKind::sum
            ? static_cast<int64_t>(static_cast<uint64_t>(r) + x)
        : kind == ts::ReduceKind::max ? std::max(r, x)
                                      : std::min(r, x);
  }
  out.i = wrapInt(r, elem.width);
  return out;
}

static RtValue reduce(ts::ReduceKind kind, const ElemType &elem,
                      const RtValue &src, int64_t axis, Type resultType) {
  ArrayRef<int64_t> shape = src.shape;
  int64_t outer = numElements(shape.take_front(axis)), len = shape[axis];
  int64_t inner = numElements(shape.drop_front(axis + 1));
  RtValue out = RtValue::lanes(elem.kind, shapeOf(resultType));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      out.setLane(
          elem.kind, o * inner + i,
          reduceLanes(kind, elem, src, o * len * inner + i, len, inner));
  return out;
}

Executor::OptResult Executor::execTileOp(Operation *op) {
  if (auto slice = dyn_cast<ts::ExtractSliceOp>(op)) {
    SmallVector<int64_t> offsets(slice.getStaticOffsets());
    auto dynamic = slice.getOffsets().begin();
    ArrayRef<int64_t> srcShape = shapeOf(slice.getSrc().getType());
    ArrayRef<int64_t> size = shapeOf(slice.getType());
    for (size_t d = 0; d < offsets.size(); ++d) {
      if (!ShapedType::isDynamic(offsets[d]))
        continue;
      offsets[d] = asSigned(get(*dynamic++).ints[0], 32);
      if (offsets[d] < 0 || offsets[d] > srcShape[d] - size[d])
        return fail(op, "slice [" + Twine(offsets[d]) + ", " +
                            Twine(offsets[d] + size[d]) + ") of dimension " +
                            Twine(d) + " is out of bounds for size " +
                            Twine(srcShape[d]));
    }
    set(op->getResult(0), moveLanes(op, get(slice.getSrc()), offsets));
    return success();
  }
  if (movesLanes(op)) {
    set(op->getResult(0), moveLanes(op, get(op->getOperand(0))));
    return success();
  }
  auto setResult = [&](RtValue value) -> OptResult {
    set(op->getResult(0), std::move(value));
    return success();
  };
  return llvm::TypeSwitch<Operation *, OptResult>(op)
      .Case([&](ts::ProgramIdOp q) {
        return setResult(RtValue::intScalar(pid[q.getAxis()]));
      })
      .Case([&](ts::NumProgramsOp q) {
        return setResult(RtValue::intScalar(grid[q.getAxis()]));
      })
      .Case([&](ts::ClockOp) {
        auto now = std::chrono::steady_clock::now().time_since_epoch();
        return setResult(RtValue::intScalar(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
      })
      .Case([&](ts::ArangeOp a) {
        // The attributes are signed i32 (the generated getters are unsigned).
        return setResult(
            arange(a.getStartAttr().getInt(), a.getEndAttr().getInt()));
      })
      .Case([&](ts::AddPtrOp) -> OptResult {
        return mapLanes(op, [](ArrayRef<Lane> in, Lane &out, std::string &) {
          out.p = {in[0].p.buffer,
                   static_cast<int64_t>(static_cast<uint64_t>(in[0].p.offset) +
                                        static_cast<uint64_t>(in[1].i))};
          return true;
        });
      })
      .Case([&](ts::DotOp d) {
        return setResult(dot(get(d.getA()), get(d.getB()), get(d.getAcc())));
      })
      .Case([&](ts::ReduceOp r) {
        ElemType elem = *ElemType::get(r.getSrc().getType());
        return setResult(reduce(r.getKind(), elem, get(r.getSrc()), r.getAxis(),
                                r.getType()));
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace tessel
