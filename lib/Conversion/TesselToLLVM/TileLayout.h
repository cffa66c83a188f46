//===- TileLayout.h - Which elements of a tile a thread holds ---*- C++ -*-===//
//
// The one place that reads layout encodings for the GPU lowering: a
// TileLayout says, for a tile type, how many values ("slots") each thread
// holds and which element each slot is; ThreadLayout emits the IR that
// computes those coordinates for the running thread. Lowering patterns only
// talk to these two classes, so a new encoding (shared, MMA accumulator or
// operand) needs a factory here, not changes to every pattern.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_CONVERSION_TILELAYOUT_H
#define TESSEL_CONVERSION_TILELAYOUT_H

#include "tessel/TesselDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tessel {

/// One dimension of a tile as the threads of a CTA hold it. A thread's
/// lane index along it is laneIdx = lane / laneStride % lanes (warps
/// alike); its local index j splits into j = (rep·regGroups + g)·perThread
/// + e, and it holds there the element of coordinate
///   e + perThread·(laneIdx + lanes·(g + regGroups·(warpIdx + warps·rep)))
/// wrapped modulo `size`: `perThread` contiguous elements, then the lanes,
/// then `regGroups` register groups, then the warps, repeated to cover the
/// dimension. Blocked layouts have one register group; the mma.sync
/// fragments put two between the lanes and the warps (rows g and g + 8 of a
/// 16-row block). Where the repetitions overshoot (a size that is not a
/// multiple of the span), the wrapped slots hold copies of real elements.
struct DimLayout {
  int64_t size;
  unsigned perThread, lanes, laneStride, regGroups, warps, warpStride;

  int64_t span() const {
    return int64_t(perThread) * lanes * regGroups * warps;
  }
  int64_t numLocal() const {
    return llvm::divideCeil(size, span()) * perThread * regGroups;
  }
  /// Coordinate step of one lane and of one warp.
  int64_t laneStep() const { return perThread; }
  int64_t warpStep() const { return int64_t(perThread) * lanes * regGroups; }
  /// Coordinate of local index j minus the thread's base.
  int64_t offset(int64_t j) const {
    int64_t group = j / perThread;
    return j % perThread + group % regGroups * perThread * lanes +
           group / regGroups * span();
  }
  /// Whether local index j is inside the tile for every thread.
  bool alwaysInside(int64_t j) const {
    int64_t maxBase = (lanes - 1) * laneStep() + (warps - 1) * warpStep();
    return offset(j) + maxBase < size;
  }
  /// Whether both put the same elements at the same local indices of the
  /// same threads (the fields may differ: one register group is no group).
  bool sameDistribution(const DimLayout &o) const;
  /// Whether both give every thread the same base coordinate.
  bool sameThreadBases(const DimLayout &o) const;
};

/// Lanes and warps whose threads hold the same elements: what slicing a
/// dimension away leaves of it, or the warps that share an mma operand.
struct ReplicaField {
  unsigned lanes, laneStride, warps, warpStride;
};

/// The slots of one thread: row-major over the local indices of each
/// dimension (dimension 0 slowest).
class TileLayout {
public:
  /// Fails if `type` has no encoding this lowering knows.
  static FailureOr<TileLayout> get(TileType type);
  static FailureOr<TileLayout> get(Attribute encoding, ArrayRef<int64_t> shape);

  unsigned getRank() const { return dims.size(); }
  const DimLayout &getDim(unsigned d) const { return dims[d]; }
  ArrayRef<ReplicaField> getReplicas() const { return replicas; }
  /// Warps per CTA the layout was made for.
  unsigned getNumWarps() const;
  int64_t getNumSlots() const;
  SmallVector<int64_t> getLocalIndices(int64_t slot) const;
  int64_t getSlot(ArrayRef<int64_t> local) const;
  /// Whether both layouts put the same elements in the same slots of the
  /// same threads (`perm` maps dimensions of `this` to those of `other`).
  bool sameDistribution(const TileLayout &other,
                        ArrayRef<int32_t> perm = {}) const;
  /// For a slice at `offsets` of a tile laid out as `source`, laid out as
  /// this: the slot of `source` where each thread holds the element of each
  /// of its slots; failure if a thread does not hold them all.
  FailureOr<SmallVector<int64_t>> slotsWithin(const TileLayout &source,
                                              ArrayRef<int64_t> offsets) const;

private:
  SmallVector<DimLayout> dims;
  SmallVector<ReplicaField> replicas;
};

/// The running thread's view of a layout: coordinates of its slots and
/// whether it owns them, as i32 values.
class ThreadLayout {
public:
  ThreadLayout(OpBuilder &b, Location loc, TileLayout layout);

  const TileLayout &getLayout() const { return layout; }
  /// Coordinate along `dim` of local index `local`, in [0, size).
  Value coord(unsigned dim, int64_t local);
  SmallVector<Value> coords(int64_t slot);
  /// Whether the slot is the one copy of its element that writes it (inside
  /// the tile and first of its replicas); null when always true.
  Value isOwner(int64_t slot);
  /// Whether local index `local` along `dim` is inside the tile, before
  /// wrapping; null when always true.
  Value isInside(unsigned dim, int64_t local);
  /// This thread's index along the warps of `dim`.
  Value warpIndex(unsigned dim);

private:
  Value constant(int64_t v);
  Value base(unsigned dim);
  /// Coordinate of `local` along `dim` before wrapping.
  Value raw(unsigned dim, int64_t local);

  OpBuilder &b;
  Location loc;
  TileLayout layout;
  Value lane, warp;
  SmallVector<Value> bases;
};

/// The index along the warps of `d` of the threads of warp `warp` (an i32,
/// say a warp-uniform copy of the warp index).
Value warpIndexAlong(OpBuilder &b, Location loc, const DimLayout &d,
                     Value warp);

/// For `slice` (static offsets), the slot of its source where each thread
/// holds each of its slots' elements (TileLayout::slotsWithin); failure where
/// the slice moves data. With `encoding`, as if both tiles had it (a layout
/// being chosen); else their own.
FailureOr<SmallVector<int64_t>> sliceSlots(ExtractSliceOp slice,
                                           Attribute encoding = {});

/// Row-major linear index of `coords` in `shape`, as i32.
Value linearIndex(OpBuilder &b, Location loc, ArrayRef<Value> coords,
                  ArrayRef<int64_t> shape);

} // namespace mlir::tessel

#endif // TESSEL_CONVERSION_TILELAYOUT_H
