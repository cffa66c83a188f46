//===- TileLayout.cpp - Which elements of a tile a thread holds -----------===//

#include "Conversion/TesselToLLVM/TileLayout.h"
#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

FailureOr<TileLayout> TileLayout::get(TileType type) {
  return get(type.getEncoding(), type.getShape());
}

/// The rows of a 16-row mma.sync block: lane 4g + t holds rows g and
/// g + 8; warps take blocks round-robin.
static DimLayout mmaRows(int64_t size, unsigned warps, unsigned warpStride) {
  return {size,
          /*perThread=*/1,
          /*lanes=*/8,
          /*laneStride=*/4,
          /*regGroups=*/2,
          warps,
          warpStride};
}

/// The K dimension of an A or B fragment: lane 4g + t holds columns
/// (rows of B) 2t, 2t + 1, 2t + 8 and 2t + 9 of each 16-wide step.
static DimLayout mmaK(int64_t size) {
  return {size,
          /*perThread=*/2,
          /*lanes=*/4,
          /*laneStride=*/1,
          /*regGroups=*/2,
          /*warps=*/1,
          /*warpStride=*/1};
}

FailureOr<TileLayout> TileLayout::get(Attribute encoding,
                                      ArrayRef<int64_t> shape) {
  if (auto blocked = dyn_cast_if_present<BlockedEncodingAttr>(encoding)) {
    if (blocked.getRank() != shape.size())
      return failure();
    TileLayout layout;
    layout.dims.resize(shape.size());
    unsigned laneStride = 1, warpStride = 1;
    for (unsigned d : blocked.getOrder()) {
      unsigned lanes = blocked.getThreadsPerWarp()[d];
      unsigned warps = blocked.getWarpsPerCTA()[d];
      // Thread indices are decoded with shifts and masks.
      if (!llvm::isPowerOf2_32(lanes) || !llvm::isPowerOf2_32(warps))
        return failure();
      layout.dims[d] = {
          shape[d],  blocked.getSizePerThread()[d], lanes, laneStride, 1, warps,
          warpStride};
      laneStride *= lanes;
      warpStride *= warps;
    }
    return layout;
  }
  // mma.sync m16n8k16: warp w sits at (w % wm, w / wm) of the warp grid.
  if (auto mma = dyn_cast_if_present<MmaEncodingAttr>(encoding)) {
    if (shape.size() != 2)
      return failure();
    unsigned wm = mma.getWarpsPerCTA()[0], wn = mma.getWarpsPerCTA()[1];
    TileLayout layout;
    // Lane 4g + t holds columnRun adjacent columns from columnRun·t (pairs
    // as mma.sync writes them, or a warpgroup dot's runs of four).
    layout.dims = {mmaRows(shape[0], wm, 1),
                   {shape[1], /*perThread=*/mma.getColumnRun(), /*lanes=*/4,
                    /*laneStride=*/1, /*regGroups=*/1, wn,
                    /*warpStride=*/wm}};
    return layout;
  }
  if (auto operand = dyn_cast_if_present<DotOperandEncodingAttr>(encoding)) {
    if (shape.size() != 2)
      return failure();
    ArrayRef<unsigned> warps = operand.getParent().getWarpsPerCTA();
    unsigned wm = warps[0], wn = warps[1];
    TileLayout layout;
    if (operand.getOpIdx() == 0) {
      layout.dims = {mmaRows(shape[0], wm, 1), mmaK(shape[1])};
      layout.replicas.push_back({1, 1, wn, wm});
    } else {
      layout.dims = {mmaK(shape[0]),
                     {shape[1], /*perThread=*/1, /*lanes=*/8, /*laneStride=*/4,
                      /*regGroups=*/1, wn, /*warpStride=*/wm}};
      layout.replicas.push_back({1, 1, wm, 1});
    }
    return layout;
  }
  if (auto slice = dyn_cast_if_present<SliceEncodingAttr>(encoding)) {
    unsigned dim = slice.getDim();
    if (dim > shape.size())
      return failure();
    SmallVector<int64_t> parentShape(shape);
    parentShape.insert(parentShape.begin() + dim, 1);
    FailureOr<TileLayout> parent = get(slice.getParent(), parentShape);
    if (failed(parent))
      return failure();
    TileLayout layout = std::move(*parent);
    const DimLayout &gone = layout.dims[dim];
    layout.replicas.push_back(
        {gone.lanes, gone.laneStride, gone.warps, gone.warpStride});
    layout.dims.erase(layout.dims.begin() + dim);
    return layout;
  }
  return failure();
}

unsigned TileLayout::getNumWarps() const {
  unsigned warps = 1;
  for (const DimLayout &d : dims)
    warps *= d.warps;
  for (const ReplicaField &r : replicas)
    warps *= r.warps;
  return warps;
}

int64_t TileLayout::getNumSlots() const {
  int64_t n = 1;
  for (const DimLayout &d : dims)
    n *= d.numLocal();
  return n;
}

SmallVector<int64_t> TileLayout::getLocalIndices(int64_t slot) const {
  SmallVector<int64_t> local(dims.size());
  for (unsigned d = dims.size(); d-- > 0;) {
    local[d] = slot % dims[d].numLocal();
    slot /= dims[d].numLocal();
  }
  return local;
}

int64_t TileLayout::getSlot(ArrayRef<int64_t> local) const {
  int64_t slot = 0;
  for (auto [d, j] : llvm::zip(dims, local))
    slot = slot * d.numLocal() + j;
  return slot;
}

bool DimLayout::sameThreadBases(const DimLayout &o) const {
  // The same lanes and warps, stepping the same distance.
  auto sameField = [](unsigned count, unsigned stride, int64_t step,
                      unsigned oCount, unsigned oStride, int64_t oStep) {
    return count == oCount &&
           (count == 1 || (stride == oStride && step == oStep));
  };
  return sameField(lanes, laneStride, laneStep(), o.lanes, o.laneStride,
                   o.laneStep()) &&
         sameField(warps, warpStride, warpStep(), o.warps, o.warpStride,
                   o.warpStep());
}

bool DimLayout::sameDistribution(const DimLayout &o) const {
  if (size != o.size || numLocal() != o.numLocal() || !sameThreadBases(o))
    return false;
  for (int64_t j = 0, e = numLocal(); j < e; ++j)
    if (offset(j) != o.offset(j))
      return false;
  return true;
}

/// The replicated lanes and warps as a set: trivial fields dropped, sorted.
static SmallVector<std::pair<unsigned, unsigned>>
replicatedIds(ArrayRef<ReplicaField> replicas) {
  SmallVector<std::pair<unsigned, unsigned>> ids;
  for (const ReplicaField &r : replicas) {
    // Lane fields as (stride, count); warp fields offset past lanes.
    if (r.lanes > 1)
      ids.push_back({r.laneStride, r.lanes});
    if (r.warps > 1)
      ids.push_back({32 * r.warpStride, r.warps});
  }
  llvm::sort(ids);
  return ids;
}

bool TileLayout::sameDistribution(const TileLayout &other,
                                  ArrayRef<int32_t> perm) const {
  if (dims.size() != other.dims.size() ||
      replicatedIds(replicas) != replicatedIds(other.replicas))
    return false;
  for (unsigned d = 0; d < dims.size(); ++d)
    if (!dims[d].sameDistribution(other.dims[perm.empty() ? d : perm[d]]))
      return false;
  return true;
}

FailureOr<SmallVector<int64_t>>
TileLayout::slotsWithin(const TileLayout &source,
                        ArrayRef<int64_t> offsets) const {
  if (dims.size() != source.dims.size() || offsets.size() != dims.size() ||
      replicatedIds(replicas) != replicatedIds(source.replicas))
    return failure();
  // Per dimension, the source's local index of each local index: the same
  // thread bases, no wrapped copies in either, and the offset element among
  // the source's.
  SmallVector<SmallVector<int64_t>> within(dims.size());
  for (auto [d, mine, theirs] : llvm::enumerate(dims, source.dims)) {
    if (!mine.sameThreadBases(theirs) || mine.size % mine.span() != 0 ||
        theirs.size % theirs.span() != 0)
      return failure();
    DenseMap<int64_t, int64_t> localOf;
    for (int64_t k = 0, e = theirs.numLocal(); k < e; ++k)
      localOf[theirs.offset(k)] = k;
    for (int64_t j = 0, e = mine.numLocal(); j < e; ++j) {
      auto it = localOf.find(mine.offset(j) + offsets[d]);
      if (it == localOf.end())
        return failure();
      within[d].push_back(it->second);
    }
  }
  SmallVector<int64_t> slots;
  for (int64_t slot = 0, e = getNumSlots(); slot < e; ++slot) {
    SmallVector<int64_t> local = getLocalIndices(slot);
    for (auto [d, j] : llvm::enumerate(local))
      j = within[d][j];
    slots.push_back(source.getSlot(local));
  }
  return slots;
}

FailureOr<SmallVector<int64_t>> mlir::tessel::sliceSlots(ExtractSliceOp slice,
                                                         Attribute encoding) {
  if (!slice.getOffsets().empty())
    return failure();
  auto layoutOf = [&](Value tile) {
    auto type = cast<TileType>(tile.getType());
    return TileLayout::get(encoding ? encoding : type.getEncoding(),
                           type.getShape());
  };
  FailureOr<TileLayout> from = layoutOf(slice.getSrc());
  FailureOr<TileLayout> to = layoutOf(slice.getResult());
  if (failed(from) || failed(to))
    return failure();
  return to->slotsWithin(*from, slice.getStaticOffsets());
}

//===----------------------------------------------------------------------===//
// ThreadLayout
//===----------------------------------------------------------------------===//

ThreadLayout::ThreadLayout(OpBuilder &b, Location loc, TileLayout layout)
    : b(b), loc(loc), layout(std::move(layout)), bases(this->layout.getRank()) {
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  lane = arith::AndIOp::create(b, loc, tid, constant(31));
  warp = arith::ShRUIOp::create(b, loc, tid, constant(5));
}

Value ThreadLayout::constant(int64_t v) { return i32Constant(b, loc, v); }

/// (id / stride) % count for power-of-two stride and count.
static Value bitField(OpBuilder &b, Location loc, Value id, unsigned stride,
                      unsigned count) {
  if (count == 1)
    return i32Constant(b, loc, 0);
  Value shifted = id;
  if (stride > 1)
    shifted = arith::ShRUIOp::create(
        b, loc, id, i32Constant(b, loc, llvm::Log2_32(stride)));
  return arith::AndIOp::create(b, loc, shifted, i32Constant(b, loc, count - 1));
}

Value ThreadLayout::base(unsigned dim) {
  if (bases[dim])
    return bases[dim];
  const DimLayout &d = layout.getDim(dim);
  Value laneIdx = bitField(b, loc, lane, d.laneStride, d.lanes);
  Value warpIdx = warpIndexAlong(b, loc, d, warp);
  Value fromLane =
      arith::MulIOp::create(b, loc, laneIdx, constant(d.laneStep()));
  Value fromWarp =
      arith::MulIOp::create(b, loc, warpIdx, constant(d.warpStep()));
  return bases[dim] = arith::AddIOp::create(b, loc, fromWarp, fromLane);
}

Value ThreadLayout::warpIndex(unsigned dim) {
  return warpIndexAlong(b, loc, layout.getDim(dim), warp);
}

Value mlir::tessel::warpIndexAlong(OpBuilder &b, Location loc,
                                   const DimLayout &d, Value warp) {
  return bitField(b, loc, warp, d.warpStride, d.warps);
}

Value ThreadLayout::raw(unsigned dim, int64_t local) {
  Value start = base(dim);
  return arith::AddIOp::create(b, loc, start,
                               constant(layout.getDim(dim).offset(local)));
}

Value ThreadLayout::coord(unsigned dim, int64_t local) {
  const DimLayout &d = layout.getDim(dim);
  Value position = raw(dim, local);
  if (d.alwaysInside(local))
    return position;
  return arith::RemUIOp::create(b, loc, position, constant(d.size));
}

SmallVector<Value> ThreadLayout::coords(int64_t slot) {
  SmallVector<Value> result;
  for (auto [dim, local] : llvm::enumerate(layout.getLocalIndices(slot)))
    result.push_back(coord(dim, local));
  return result;
}

Value ThreadLayout::isInside(unsigned dim, int64_t local) {
  const DimLayout &d = layout.getDim(dim);
  if (d.alwaysInside(local))
    return {};
  Value position = raw(dim, local);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, position,
                               constant(d.size));
}

Value ThreadLayout::isOwner(int64_t slot) {
  Value owner;
  auto conj = [&](Value cond) {
    if (cond)
      owner = owner ? arith::AndIOp::create(b, loc, owner, cond) : cond;
  };
  for (auto [dim, local] : llvm::enumerate(layout.getLocalIndices(slot)))
    conj(isInside(dim, local));
  auto isFirst = [&](Value id, unsigned stride, unsigned count) -> Value {
    if (count == 1)
      return {};
    Value index = bitField(b, loc, id, stride, count);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, index,
                                 constant(0));
  };
  for (const ReplicaField &r : layout.getReplicas()) {
    conj(isFirst(lane, r.laneStride, r.lanes));
    conj(isFirst(warp, r.warpStride, r.warps));
  }
  return owner;
}

Value mlir::tessel::linearIndex(OpBuilder &b, Location loc,
                                ArrayRef<Value> coords,
                                ArrayRef<int64_t> shape) {
  Value index;
  for (auto [c, size] : llvm::zip(coords, shape)) {
    if (!index) {
      index = c;
      continue;
    }
    Value scaled = arith::MulIOp::create(
        b, loc, index,
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(size)));
    index = arith::AddIOp::create(b, loc, scaled, c);
  }
  return index;
}
