//===- TileLayout.cpp - Which elements of a tile a thread holds -----------===//

#include "Conversion/TesselToLLVM/TileLayout.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

FailureOr<TileLayout> TileLayout::get(TileType type) {
  return get(type.getEncoding(), type.getShape());
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
      layout.dims[d] = {shape[d], blocked.getSizePerThread()[d],
                        lanes,    laneStride,
                        warps,    warpStride};
      laneStride *= lanes;
      warpStride *= warps;
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

bool TileLayout::sameDistribution(const TileLayout &other,
                                  ArrayRef<int32_t> perm) const {
  if (dims.size() != other.dims.size() || replicas != other.replicas)
    return false;
  for (unsigned d = 0; d < dims.size(); ++d)
    if (!(dims[d] == other.dims[perm.empty() ? d : perm[d]]))
      return false;
  return true;
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

Value ThreadLayout::constant(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}

Value ThreadLayout::field(Value id, unsigned stride, unsigned count) {
  if (count == 1)
    return constant(0);
  Value shifted = id;
  if (stride > 1)
    shifted =
        arith::ShRUIOp::create(b, loc, id, constant(llvm::Log2_32(stride)));
  return arith::AndIOp::create(b, loc, shifted, constant(count - 1));
}

Value ThreadLayout::base(unsigned dim) {
  if (bases[dim])
    return bases[dim];
  const DimLayout &d = layout.getDim(dim);
  Value laneIdx = field(lane, d.laneStride, d.lanes);
  Value warpIdx = field(warp, d.warpStride, d.warps);
  Value fromLane =
      arith::MulIOp::create(b, loc, laneIdx, constant(d.perThread));
  Value fromWarp = arith::MulIOp::create(
      b, loc, warpIdx, constant(int64_t(d.lanes) * d.perThread));
  return bases[dim] = arith::AddIOp::create(b, loc, fromWarp, fromLane);
}

Value ThreadLayout::warpIndex(unsigned dim) {
  const DimLayout &d = layout.getDim(dim);
  return field(warp, d.warpStride, d.warps);
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
    Value index = field(id, stride, count);
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
