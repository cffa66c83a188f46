//===- TesselOps.cpp - tessel op verifiers --------------------------------===//
//
// Every rule says what was expected and what was found, so a malformed IR
// produced by a pass or written by hand points at its own fix.
//
//===----------------------------------------------------------------------===//

#include "tessel/TesselDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tessel;

static bool isFloatElement(Type type) {
  Type elt = getElementTypeOrSelf(type);
  return elt.isF16() || elt.isBF16() || elt.isF32();
}

static bool isIntElement(Type type) {
  return getElementTypeOrSelf(type).isSignlessInteger();
}

/// A type a tile may hold: a scalar or a pointer.
static bool isScalarOrPtr(Type type) {
  return isa<PtrType>(type) || isa<FloatType>(type) || isa<IntegerType>(type);
}

static LogicalResult checkSameElementType(Operation *op, Type expected,
                                          Type found, StringRef what) {
  if (getElementTypeOrSelf(expected) == getElementTypeOrSelf(found))
    return success();
  return op->emitOpError() << "expects " << what << " element type "
                           << getElementTypeOrSelf(expected) << ", got "
                           << getElementTypeOrSelf(found);
}

static LogicalResult checkShape(Operation *op, ArrayRef<int64_t> expected,
                                Type found, StringRef what) {
  if (getShapeOrEmpty(found) == expected)
    return success();
  if (expected.empty())
    return op->emitOpError()
           << "expects a scalar " << what << ", got " << found;
  auto diag = op->emitOpError() << "expects " << what << " of shape [";
  llvm::interleaveComma(expected, diag);
  return diag << "], got " << found;
}

/// A tile of `shape` with f32 elements, for the online ops' messages.
static LogicalResult checkF32Tile(Operation *op, ArrayRef<int64_t> shape,
                                  Type found, StringRef what) {
  auto tile = dyn_cast<TileType>(found);
  if (tile && tile.getShape() == shape && tile.getElementType().isF32())
    return success();
  auto diag = op->emitOpError() << "expects " << what << " to be a tile<";
  for (int64_t dim : shape)
    diag << dim << "x";
  return diag << "f32>, got " << found;
}

//===----------------------------------------------------------------------===//
// Construction and shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ArangeOp::verify() {
  // The generated getters are unsigned; the bounds are signed.
  int64_t start = getStartAttr().getInt(), end = getEndAttr().getInt();
  if (end <= start)
    return emitOpError() << "expects end > start, got [" << start << ", " << end
                         << ")";
  auto type = cast<TileType>(getResult().getType());
  if (type.getRank() != 1 || !type.getElementType().isSignlessInteger(32))
    return emitOpError() << "expects a 1-D tile of i32, got " << type;
  return checkShape(*this, {end - start}, type, "result");
}

LogicalResult SplatOp::verify() {
  Type src = getSrc().getType();
  if (!isScalarOrPtr(src))
    return emitOpError() << "expects a scalar or pointer source, got " << src;
  return checkSameElementType(*this, getResult().getType(), src, "source");
}

LogicalResult BroadcastOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  auto dst = cast<TileType>(getResult().getType());
  if (failed(checkSameElementType(*this, src, dst, "result")))
    return failure();
  if (src.getRank() != dst.getRank())
    return emitOpError() << "expects result rank " << src.getRank() << ", got "
                         << dst.getRank();
  for (auto [i, from, to] : llvm::enumerate(src.getShape(), dst.getShape()))
    if (from != to && from != 1)
      return emitOpError() << "can only broadcast dimensions of size 1, but "
                              "dimension "
                           << i << " goes from " << from << " to " << to;
  return success();
}

LogicalResult ExpandDimsOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  int64_t axis = getAxis();
  if (axis < 0 || axis > src.getRank())
    return emitOpError() << "expects axis in [0, " << src.getRank() << "], got "
                         << axis;
  SmallVector<int64_t> shape(src.getShape());
  shape.insert(shape.begin() + axis, 1);
  if (failed(checkSameElementType(*this, src, getResult().getType(), "result")))
    return failure();
  return checkShape(*this, shape, getResult().getType(), "result");
}

LogicalResult ReshapeOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  auto dst = cast<TileType>(getResult().getType());
  if (failed(checkSameElementType(*this, src, dst, "result")))
    return failure();
  if (src.getNumElements() != dst.getNumElements())
    return emitOpError() << "expects " << src.getNumElements()
                         << " elements in the result, got "
                         << dst.getNumElements();
  return success();
}

LogicalResult TransOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  ArrayRef<int32_t> order = getOrder();
  if (static_cast<int64_t>(order.size()) != src.getRank())
    return emitOpError() << "expects an order of " << src.getRank()
                         << " dimensions, got " << order.size();
  SmallVector<bool> seen(order.size(), false);
  SmallVector<int64_t> shape;
  for (int32_t dim : order) {
    if (dim < 0 || dim >= src.getRank() || seen[dim]) {
      auto diag = emitOpError() << "expects order to be a permutation of [0, "
                                << src.getRank() << "), got [";
      llvm::interleaveComma(order, diag);
      return diag << "]";
    }
    seen[dim] = true;
    shape.push_back(src.getDimSize(dim));
  }
  if (failed(checkSameElementType(*this, src, getResult().getType(), "result")))
    return failure();
  return checkShape(*this, shape, getResult().getType(), "result");
}

/// A slice of `sizes` at `offsets` (ShapedType::kDynamic: the next runtime
/// offset) inside `bounds`: as many runtime offsets as dynamic entries,
/// constant ones in range, every size at most its dimension.
static LogicalResult checkSliceOffsets(Operation *op, ArrayRef<int64_t> offsets,
                                       size_t numDynamic,
                                       ArrayRef<int64_t> sizes,
                                       ArrayRef<int64_t> bounds) {
  if (offsets.size() != bounds.size() || sizes.size() != bounds.size())
    return op->emitOpError()
           << "expects " << bounds.size()
           << " offsets and a result of the same rank, got " << offsets.size()
           << " offsets and rank " << sizes.size();
  if (static_cast<size_t>(llvm::count(offsets, ShapedType::kDynamic)) !=
      numDynamic)
    return op->emitOpError() << "expects one runtime offset per dynamic entry, "
                             << "got " << numDynamic;
  for (size_t i = 0; i < bounds.size(); ++i) {
    int64_t offset = ShapedType::isDynamic(offsets[i]) ? 0 : offsets[i];
    int64_t size = sizes[i], end;
    bool overflow = llvm::AddOverflow(offset, size, end);
    if (offset >= 0 && !overflow && end <= bounds[i])
      continue;
    auto diag = op->emitOpError() << "slice [";
    if (ShapedType::isDynamic(offsets[i]))
      return diag << "?, ? + " << size << ") of dimension " << i
                  << " is larger than its size " << bounds[i];
    diag << offset << ", ";
    if (overflow)
      diag << offset << " + " << size;
    else
      diag << end;
    return diag << ") of dimension " << i << " is out of bounds for size "
                << bounds[i];
  }
  return success();
}

LogicalResult ExtractSliceOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  auto dst = cast<TileType>(getResult().getType());
  if (failed(checkSameElementType(*this, src, dst, "result")))
    return failure();
  return checkSliceOffsets(*this, getStaticOffsets(), getOffsets().size(),
                           dst.getShape(), src.getShape());
}

LogicalResult ConvertLayoutOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  auto dst = cast<TileType>(getResult().getType());
  if (failed(checkSameElementType(*this, src, dst, "result")))
    return failure();
  return checkShape(*this, src.getShape(), dst, "result");
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult checkArithmeticElement(Operation *op, Type type) {
  if (isPtrLike(type))
    return op->emitOpError()
           << "expects integer or float elements, got pointers in " << type
           << " (use tessel.addptr for pointer arithmetic)";
  return success();
}

LogicalResult BinaryOp::verify() {
  Type type = getResult().getType();
  if (failed(checkArithmeticElement(*this, type)))
    return failure();
  BinaryKind kind = getKind();
  bool bitwise = kind == BinaryKind::and_ || kind == BinaryKind::or_ ||
                 kind == BinaryKind::xor_ || kind == BinaryKind::shl ||
                 kind == BinaryKind::shr;
  if (bitwise && !isIntElement(type))
    return emitOpError() << "'" << stringifyBinaryKind(kind)
                         << "' expects integer elements, got "
                         << getElementTypeOrSelf(type);
  return success();
}

LogicalResult UnaryOp::verify() {
  Type type = getResult().getType();
  if (failed(checkArithmeticElement(*this, type)))
    return failure();
  UnaryKind kind = getKind();
  if (getFtz() && kind != UnaryKind::exp && kind != UnaryKind::exp2)
    return emitOpError() << "'ftz' applies to exp and exp2 only, not '"
                         << stringifyUnaryKind(kind) << "'";
  if (kind == UnaryKind::neg || kind == UnaryKind::abs)
    return success();
  if (kind == UnaryKind::not_) {
    if (!isIntElement(type))
      return emitOpError() << "'not' expects integer elements, got "
                           << getElementTypeOrSelf(type);
    return success();
  }
  if (!isFloatElement(type))
    return emitOpError() << "'" << stringifyUnaryKind(kind)
                         << "' expects float elements, got "
                         << getElementTypeOrSelf(type);
  return success();
}

LogicalResult CmpOp::verify() {
  if (failed(checkArithmeticElement(*this, getLhs().getType())))
    return failure();
  auto result = cast<TileType>(getResult().getType());
  if (!result.getElementType().isSignlessInteger(1))
    return emitOpError() << "expects an i1 result, got "
                         << result.getElementType();
  return checkShape(*this, getShapeOrEmpty(getLhs().getType()), result,
                    "result");
}

LogicalResult SelectOp::verify() {
  auto cond = cast<TileType>(getCondition().getType());
  if (!cond.getElementType().isSignlessInteger(1))
    return emitOpError() << "expects an i1 condition, got "
                         << cond.getElementType();
  return checkShape(*this, getShapeOrEmpty(getResult().getType()), cond,
                    "condition");
}

LogicalResult CastOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  auto dst = cast<TileType>(getResult().getType());
  if (failed(checkArithmeticElement(*this, src)) ||
      failed(checkArithmeticElement(*this, dst)))
    return failure();
  return checkShape(*this, src.getShape(), dst, "result");
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

LogicalResult AddPtrOp::verify() {
  return checkShape(*this, getShapeOrEmpty(getPtr().getType()),
                    getOffset().getType(), "offset");
}

LogicalResult LoadOp::verify() {
  if (getOther() && !getMask())
    return emitOpError() << "expects a mask when 'other' is given";
  return success();
}

LogicalResult AtomicAddOp::verify() {
  Type pointee = getElementTypeOrSelf(getValue().getType());
  if (!pointee.isF32() && !pointee.isSignlessInteger(32))
    return emitOpError() << "expects f32 or i32 pointees, got " << pointee;
  if (cast<PtrType>(getElementTypeOrSelf(getPtr().getType())).getShared())
    return emitOpError() << "expects pointers to global memory";
  return success();
}

//===----------------------------------------------------------------------===//
// Dot and reduce
//===----------------------------------------------------------------------===//

/// Shape and element type of a dot operand, a tile or a memdesc.
static std::pair<ArrayRef<int64_t>, Type> operandShape(Type type) {
  if (auto tile = dyn_cast<TileType>(type))
    return {tile.getShape(), tile.getElementType()};
  auto desc = cast<MemDescType>(type);
  return {desc.getShape(), desc.getElementType()};
}

LogicalResult DotOp::verify() {
  auto a = cast<TileType>(getA().getType());
  auto [bShape, bElem] = operandShape(getB().getType());
  auto acc = cast<TileType>(getAcc().getType());
  if (a.getRank() != 2 || bShape.size() != 2)
    return emitOpError() << "expects 2-D operands, got " << a << " and "
                         << getB().getType();
  if (a.getElementType() != bElem || !isFloatElement(a))
    return emitOpError() << "expects operands of one type among f16, bf16, "
                            "f32, got "
                         << a.getElementType() << " and " << bElem;
  if (a.getDimSize(1) != bShape[0])
    return emitOpError() << "expects a: MxK and b: KxN, got K = "
                         << a.getDimSize(1) << " for a and " << bShape[0]
                         << " for b";
  return checkF32Tile(*this, {a.getDimSize(0), bShape[1]}, acc,
                      "the accumulator");
}

void DotOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (isa<MemDescType>(getB().getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &getBMutable());
}

Speculation::Speculatability DotOp::getSpeculatability() {
  return isa<MemDescType>(getB().getType()) ? Speculation::NotSpeculatable
                                            : Speculation::Speculatable;
}

//===----------------------------------------------------------------------===//
// Hopper warpgroup MMA
//===----------------------------------------------------------------------===//

/// The largest N of one wgmma instruction.
static constexpr int64_t kMaxWgmmaN = 256;

std::string mlir::tessel::whyNotWarpGroupDot(Type a, MemDescType b,
                                             TileType acc) {
  std::string why;
  llvm::raw_string_ostream os(why);
  auto [mk, elem] = operandShape(a);
  if (mk.size() != 2 || acc.getRank() != 2 || !acc.getElementType().isF32() ||
      !(elem.isF16() || elem.isBF16())) {
    os << "expects 2-D f16 or bf16 operands and a 2-D f32 accumulator, got "
       << a << " and " << acc;
    return why;
  }
  auto mma = dyn_cast_if_present<MmaEncodingAttr>(acc.getEncoding());
  if (!mma || mma.getWarpsPerCTA()[0] % 4 != 0) {
    os << "expects the accumulator in a #tessel.mma layout with a multiple "
          "of 4 warps along M (whole warpgroups), got "
       << acc;
    return why;
  }
  // Warpgroups side by side along N hold its 8-column blocks in turn: each
  // multiplies by every wn-th group of 8 rows of a K-major B.
  int64_t wn = mma.getWarpsPerCTA()[1];
  if (auto desc = dyn_cast<MemDescType>(a)) {
    if (desc != getWarpGroupDotOperandA(a.getContext(), mk, elem,
                                        desc.getContiguousDim())) {
      os << "expects A in shared memory as an MxK memdesc in a layout a "
            "wgmma matrix descriptor describes (K contiguous in rows of 32, "
            "64 or a multiple of 128 bytes, or M contiguous in whole "
            "64-row column blocks), got "
         << a;
      return why;
    }
  } else {
    auto operand = dyn_cast_if_present<DotOperandEncodingAttr>(
        cast<TileType>(a).getEncoding());
    if (!operand || operand.getOpIdx() != 0 || operand.getParent() != mma) {
      os << "expects A in the #tessel.dot_operand layout of the "
            "accumulator's, got "
         << a;
      return why;
    }
  }
  int64_t m = acc.getDimSize(0), n = acc.getDimSize(1), k = mk[1];
  int64_t band = 16 * mma.getWarpsPerCTA()[0];
  if (m % band != 0 || n % (8 * wn) != 0 || n / wn > kMaxWgmmaN ||
      k % 16 != 0 || mk[0] != m) {
    os << "expects M a multiple of " << band
       << " (16 rows per warp), N a multiple of " << 8 * wn << " up to "
       << kMaxWgmmaN * wn << " and K a multiple of 16, got " << m << "x" << n
       << "x" << k;
    return why;
  }
  if (!b)
    return why;
  ArrayRef<int64_t> kn = b.getShape();
  if (kn.size() != 2 || kn[0] != k || kn[1] != n ||
      b.getElementType() != elem) {
    os << "expects B a " << k << "x" << n << " memdesc of " << elem << ", got "
       << b;
    return why;
  }
  Attribute columns = getWarpGroupBColumns(mma);
  if (b != getWarpGroupDotOperandB(b.getContext(), kn, elem,
                                   b.getContiguousDim(), b.getColumns()))
    os << "expects B in a layout a wgmma matrix descriptor describes (rows "
          "of 32, 64 or a multiple of 128 bytes along the contiguous "
          "dimension), got "
       << b;
  else if (b.getColumns() != columns && columns)
    os << "expects B's columns in the order of the accumulator's layout "
          "(columns = "
       << columns << "), got " << b;
  else if (b.getColumns() != columns)
    os << "expects B's columns in their own order (no columns) for " << mma
       << ", got " << b;
  else if (wn > 1 && b.getContiguousDim() != 0)
    os << "expects B contiguous along K (order = [0, 1]) for warpgroups "
          "side by side along N, got "
       << b;
  return why;
}

/// A memdesc of `shape` contiguous along `contiguousDim`, in a swizzle a
/// wgmma matrix descriptor describes; null if there is none. An MN-major
/// operand (contiguous along M or N, not along `kDim`) must span whole
/// column blocks there: its descriptor walks them a block at a time, and a
/// warpgroup's rows of a shared A start one.
static MemDescType wgmmaOperand(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                Type elem, unsigned contiguousDim,
                                unsigned kDim, Attribute columns = {}) {
  SmallVector<unsigned> order{contiguousDim, 1 - contiguousDim};
  // Columns in another order only where the type allows them.
  if (columns &&
      !whyNotMemDescColumns(shape, elem, order, /*pitch=*/0, columns).empty())
    return {};
  auto type = MemDescType::get(ctx, shape, elem, order, /*pitch=*/0, columns);
  SharedTileLayout layout = type.getSharedLayout();
  if (layout.getNvmmaSwizzleBytes() == 0)
    return {};
  int64_t mn = shape[contiguousDim];
  if (contiguousDim != kDim && mn > layout.blockElems &&
      mn % layout.blockElems != 0)
    return {};
  return type;
}

MemDescType mlir::tessel::getWarpGroupDotOperandA(MLIRContext *ctx,
                                                  ArrayRef<int64_t> mk,
                                                  Type elem,
                                                  unsigned contiguousDim) {
  return wgmmaOperand(ctx, mk, elem, contiguousDim, /*kDim=*/1);
}

MemDescType mlir::tessel::getWarpGroupDotOperandB(MLIRContext *ctx,
                                                  ArrayRef<int64_t> kn,
                                                  Type elem,
                                                  unsigned contiguousDim,
                                                  Attribute columns) {
  return wgmmaOperand(ctx, kn, elem, contiguousDim, /*kDim=*/0, columns);
}

LogicalResult WarpGroupDotOp::verify() {
  std::string why =
      whyNotWarpGroupDot(getA().getType(), cast<MemDescType>(getB().getType()),
                         cast<TileType>(getAcc().getType()));
  if (!why.empty())
    return emitOpError() << why;
  return success();
}

LogicalResult WarpGroupDotWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  llvm::append_range(inferred, adaptor.getInputs().getTypes());
  return success();
}

//===----------------------------------------------------------------------===//
// Shared memory and asynchronous copies
//===----------------------------------------------------------------------===//

LogicalResult MemDescIndexOp::verify() {
  auto src = cast<MemDescType>(getSrc().getType());
  auto result = cast<MemDescType>(getType());
  if (src.getShape().size() != 3)
    return emitOpError() << "expects buffers of tiles (a 3-D memdesc), got "
                         << src;
  if (result != src.withShape(src.getTileShape(), src.getOrder()))
    return emitOpError() << "result must be one buffer of " << src << ", got "
                         << result;
  return success();
}

LogicalResult MemDescTransOp::verify() {
  auto src = cast<MemDescType>(getSrc().getType());
  auto result = cast<MemDescType>(getType());
  ArrayRef<int64_t> s = src.getShape();
  if (s.size() != 2 ||
      result !=
          src.withShape({s[1], s[0]}, {src.getOrder()[1], src.getOrder()[0]}))
    return emitOpError() << "result must be the transpose of " << src
                         << " (dimensions and order swapped), got " << result;
  return success();
}

Value mlir::tessel::getViewedMemDesc(Operation *op) {
  if (isa_and_present<MemDescIndexOp, MemDescTransOp, MemDescRowsOp>(op))
    return op->getOperand(0);
  return {};
}

LogicalResult MemDescRowsOp::verify() {
  auto src = cast<MemDescType>(getSrc().getType());
  auto result = cast<MemDescType>(getType());
  ArrayRef<int64_t> s = src.getShape();
  int64_t offset = getOffset();
  if (s.size() != 2 || result.getShape().size() != 2 ||
      result != src.withShape({result.getShape()[0], s[1]}, src.getOrder()) ||
      offset < 0 || offset + result.getShape()[0] > s[0])
    return emitOpError() << "result must be rows [" << offset << ", " << offset
                         << " + its rows) of " << src << ", got " << result;
  SharedTileLayout layout = src.getSharedLayout();
  if (src.getContiguousDim() != 1 || layout.blocks != 1 ||
      layout.getNvmmaSwizzleBytes() == 0)
    return emitOpError() << "expects a tile whose rows (K contiguous) are one "
                            "swizzled column block, got "
                         << src;
  if (offset % 8 != 0)
    for (OpOperand &use : getResult().getUses()) {
      auto dot = dyn_cast<WarpGroupDotOp>(use.getOwner());
      if (!dot || use.getOperandNumber() != 0)
        return emitOpError()
               << "starting at row " << offset
               << " (not a multiple of 8) may only be a warpgroup dot's A, "
                  "read by "
               << *use.getOwner();
    }
  return success();
}

LogicalResult LocalStoreOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  auto dst = cast<MemDescType>(getDst().getType());
  if (dst.getShape() != src.getShape() ||
      dst.getElementType() != src.getElementType())
    return emitOpError() << "destination " << dst << " must hold one " << src;
  return success();
}

LogicalResult LocalLoadOp::verify() {
  auto src = cast<MemDescType>(getSrc().getType());
  auto result = cast<TileType>(getType());
  if (src.getShape().size() != 2 || result.getRank() != 2 ||
      getStaticOffsets().size() != 2 ||
      result.getElementType() != src.getElementType())
    return emitOpError() << "expects a 2-D tile of the elements of one 2-D "
                            "memdesc and two offsets";
  return checkSliceOffsets(*this, getStaticOffsets(), getOffsets().size(),
                           result.getShape(), src.getShape());
}

LogicalResult MakeTensorDescOp::verify() {
  auto desc = cast<TensorDescType>(getType());
  auto base = dyn_cast<PtrType>(getBase().getType());
  if (!base || base.getShared() ||
      base.getPointeeType() != desc.getElementType())
    return emitOpError() << "base must be a pointer to "
                         << desc.getElementType() << ", got "
                         << getBase().getType();
  if (getShape().size() != desc.getRank() ||
      getStrides().size() + 1 != desc.getRank())
    return emitOpError() << "a descriptor of rank " << desc.getRank()
                         << " needs " << desc.getRank() << " sizes and "
                         << desc.getRank() - 1
                         << " strides (the innermost is 1), got "
                         << getShape().size() << " and " << getStrides().size();
  return success();
}

LogicalResult LoadBlockOp::verify() {
  auto desc = cast<TensorDescType>(getDesc().getType());
  auto result = cast<TileType>(getType());
  if (getCoords().size() != desc.getRank())
    return emitOpError() << "needs " << desc.getRank() << " coordinates, got "
                         << getCoords().size();
  if (result.getShape() != ArrayRef<int64_t>(desc.getTileShape()) ||
      result.getElementType() != desc.getElementType())
    return emitOpError() << "result must be the block of " << desc
                         << " without its unit dimensions, got " << result;
  return success();
}

LogicalResult TMALoadOp::verify() {
  auto desc = cast<TensorDescType>(getDesc().getType());
  auto dst = cast<MemDescType>(getDst().getType());
  if (getCoords().size() != desc.getRank())
    return emitOpError() << "needs " << desc.getRank() << " coordinates, got "
                         << getCoords().size();
  if (!getTMABox(desc))
    return emitOpError() << "the tensor memory accelerator cannot write a "
                            "block of "
                         << desc;
  // A vector's block lands in a 1 x N or N x 1 buffer, contiguous along
  // its N; a tile's in a buffer of its shape with contiguous rows.
  SmallVector<int64_t> tile = desc.getTileShape();
  ArrayRef<int64_t> shape = dst.getShape();
  bool fits =
      tile.size() == 1
          ? shape.size() == 2 && shape[0] * shape[1] == tile[0] &&
                shape[dst.getContiguousDim()] == tile[0]
          : shape == ArrayRef<int64_t>(tile) && dst.getContiguousDim() == 1;
  if (!fits || dst.getElementType() != desc.getElementType())
    return emitOpError() << "destination must hold one block of " << desc
                         << " with its rows contiguous, got " << dst;
  return success();
}

static LogicalResult verifyNamedBarrier(Operation *op, Value id,
                                        uint32_t threads) {
  if (threads % 32)
    return op->emitOpError() << "counts whole warps: threads must be a "
                                "multiple of 32, got "
                             << threads;
  APInt c;
  if (matchPattern(id, m_ConstantInt(&c)) &&
      (c.getSExtValue() < 3 || c.getSExtValue() > 15))
    return op->emitOpError() << "barrier id must be in [3, 15] (0 to 2 are "
                                "the CTA's and tessel.warp_specialize's), got "
                             << c.getSExtValue();
  return success();
}

LogicalResult NamedBarrierWaitOp::verify() {
  return verifyNamedBarrier(*this, getId(), getThreads());
}

LogicalResult NamedBarrierArriveOp::verify() {
  return verifyNamedBarrier(*this, getId(), getThreads());
}

LogicalResult WarpSpecializeOp::verify() {
  if (getProducerWarps() % 4 || getConsumerWarps() % 4)
    return emitOpError() << "consumer_warps and producer_warps must be whole "
                            "warpgroups (multiples of 4), got "
                         << getConsumerWarps() << " and " << getProducerWarps();
  if (auto kernel = (*this)->getParentOfType<func::FuncOp>())
    if (auto warps = kernel->getAttrOfType<IntegerAttr>(
            TesselDialect::getNumWarpsAttrName());
        warps && warps.getInt() != getConsumerWarps())
      return emitOpError() << "consumer_warps must be the kernel's "
                           << TesselDialect::getNumWarpsAttrName() << " ("
                           << warps.getInt() << "), got " << getConsumerWarps();
  std::optional<uint32_t> producer = getProducerRegisters(),
                          consumer = getConsumerRegisters();
  if (producer.has_value() != consumer.has_value())
    return emitOpError() << "needs both register counts or neither";
  for (std::optional<uint32_t> n : {producer, consumer})
    if (n && (*n < 24 || *n > 256 || *n % 8))
      return emitOpError() << "register counts must be multiples of 8 in "
                              "[24, 256], got "
                           << *n;
  // Layouts place every tile on the consumer warps.
  WalkResult tiles = getProducer().walk([](Operation *op) {
    for (Type t : op->getResultTypes())
      if (isa<TileType>(t))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (tiles.wasInterrupted())
    return emitOpError() << "producer region must not compute tiles";
  // A buffer the producer fills is the consumers' buffer of the same
  // number: one region of shared memory.
  DenseSet<int64_t> buffers;
  getConsumers().walk([&](LocalAllocOp alloc) {
    if (auto id = alloc->getAttrOfType<IntegerAttr>(getBufferAttrName()))
      buffers.insert(id.getInt());
  });
  WalkResult twins = getProducer().walk([&](LocalAllocOp alloc) {
    auto id = alloc->getAttrOfType<IntegerAttr>(getBufferAttrName());
    if (id && buffers.contains(id.getInt()))
      return WalkResult::advance();
    alloc.emitOpError() << "in a producer region needs a '"
                        << getBufferAttrName()
                        << "' number that a consumer buffer has";
    return WalkResult::interrupt();
  });
  return failure(twins.wasInterrupted());
}

LogicalResult AsyncCopyOp::verify() {
  auto ptr = cast<TileType>(getPtr().getType());
  auto dst = cast<MemDescType>(getDst().getType());
  auto pointee = dyn_cast<PtrType>(ptr.getElementType());
  if (!pointee)
    return emitOpError() << "expects a tile of pointers, got " << ptr;
  if (dst.getShape().size() != 2 || ptr.getShape() != dst.getShape() ||
      pointee.getPointeeType() != dst.getElementType())
    return emitOpError() << "destination " << dst
                         << " must be one tile of the elements " << ptr
                         << " points to";
  if (Value mask = getMask())
    if (getShapeOrEmpty(mask.getType()) != ptr.getShape())
      return emitOpError() << "mask must have the pointers' shape";
  return success();
}

LogicalResult ReduceOp::verify() {
  auto src = cast<TileType>(getSrc().getType());
  int64_t axis = getAxis();
  if (failed(checkArithmeticElement(*this, src)))
    return failure();
  if (axis < 0 || axis >= src.getRank())
    return emitOpError() << "expects axis in [0, " << src.getRank() << "), got "
                         << axis;
  Type result = getResult().getType();
  if (failed(checkSameElementType(*this, src, result, "result")))
    return failure();
  if (src.getRank() == 1) {
    if (isa<TileType>(result))
      return emitOpError() << "reducing a 1-D tile gives a scalar, got "
                           << result;
    return success();
  }
  SmallVector<int64_t> shape(src.getShape());
  shape.erase(shape.begin() + axis);
  return checkShape(*this, shape, result, "result");
}

//===----------------------------------------------------------------------===//
// Online reductions
//===----------------------------------------------------------------------===//

LogicalResult OnlineSoftmaxOp::verify() {
  auto state = cast<SoftmaxStateType>(getState().getType());
  auto scores = dyn_cast<TileType>(getScores().getType());
  if (!scores || scores.getRank() != 2)
    return emitOpError() << "expects 2-D scores, got " << getScores().getType();
  int64_t n = scores.getDimSize(1);
  if (failed(checkF32Tile(*this, {state.getRows(), n}, scores, "scores")))
    return failure();
  auto values = cast<TileType>(getValues().getType());
  if (!isFloatElement(values))
    return emitOpError() << "expects float values, got "
                         << values.getElementType();
  return checkShape(*this, {n, state.getCols()}, values, "values");
}

LogicalResult SoftmaxFinalizeOp::verify() {
  auto state = cast<SoftmaxStateType>(getState().getType());
  if (failed(checkF32Tile(*this, {state.getRows(), state.getCols()},
                          getOutput().getType(), "the output")))
    return failure();
  return checkF32Tile(*this, {state.getRows()}, getLse().getType(),
                      "the log-sum-exp");
}

LogicalResult OnlineKLOp::verify() {
  auto state = cast<KLStateType>(getState().getType());
  auto teacher = dyn_cast<TileType>(getTeacher().getType());
  if (!teacher || teacher.getRank() != 2)
    return emitOpError() << "expects 2-D teacher scores, got "
                         << getTeacher().getType();
  SmallVector<int64_t> shape = {state.getRows(), teacher.getDimSize(1)};
  if (failed(checkF32Tile(*this, shape, teacher, "teacher scores")))
    return failure();
  return checkF32Tile(*this, shape, getStudent().getType(), "student scores");
}

LogicalResult KLFinalizeOp::verify() {
  int64_t rows = cast<KLStateType>(getState().getType()).getRows();
  if (failed(checkF32Tile(*this, {rows}, getKl().getType(), "the KL")) ||
      failed(checkF32Tile(*this, {rows}, getLseTeacher().getType(),
                          "the teacher log-sum-exp")))
    return failure();
  return checkF32Tile(*this, {rows}, getLseStudent().getType(),
                      "the student log-sum-exp");
}

//===----------------------------------------------------------------------===//
// StreamKOp
//===----------------------------------------------------------------------===//

TypeRange StreamKOp::getStateTypes() {
  return cast<YieldOp>(getBody().front().getTerminator())
      .getValues()
      .getTypes();
}

static LogicalResult checkRegionArgs(Operation *op, Region &region,
                                     StringRef name, TypeRange expected) {
  TypeRange found = region.getArgumentTypes();
  if (found == expected)
    return success();
  auto diag = op->emitOpError()
              << "expects the " << name << " region to take (";
  llvm::interleaveComma(expected, diag);
  diag << "), got (";
  llvm::interleaveComma(found, diag);
  return diag << ")";
}

static LogicalResult checkYield(Operation *op, Region &region, StringRef name,
                                TypeRange expected) {
  TypeRange found =
      cast<YieldOp>(region.front().getTerminator()).getValues().getTypes();
  if (found == expected)
    return success();
  auto diag = op->emitOpError()
              << "expects the " << name << " region to yield (";
  llvm::interleaveComma(expected, diag);
  diag << "), got (";
  llvm::interleaveComma(found, diag);
  return diag << ")";
}

/// The rows of a state value of type `type`: a tile's first dimension, an
/// online state's rows; none for a scalar.
static std::optional<int64_t> stateRows(Type type) {
  if (auto tile = dyn_cast<TileType>(type))
    return tile.getRank() ? std::optional(tile.getDimSize(0)) : std::nullopt;
  if (auto softmax = dyn_cast<SoftmaxStateType>(type))
    return softmax.getRows();
  if (auto kl = dyn_cast<KLStateType>(type))
    return kl.getRows();
  return std::nullopt;
}

int64_t StreamKOp::getStateRows(Type state) {
  return stateRows(state).value_or(0);
}

Type StreamKOp::findStateWithoutRows(TypeRange state) {
  std::optional<int64_t> first = stateRows(state.front());
  for (Type t : state)
    if (!stateRows(t) || stateRows(t) != first)
      return t;
  return Type();
}

LogicalResult StreamKOp::verifyRegions() {
  Type i32 = IntegerType::get(getContext(), 32);
  if (failed(checkRegionArgs(*this, getBody(), "body", {i32, i32, i32})))
    return failure();
  TypeRange state = getStateTypes();
  if (state.empty())
    return emitOpError() << "expects the body region to yield a partial "
                            "state, got nothing";
  SmallVector<Type> twoStates(state.begin(), state.end());
  twoStates.append(state.begin(), state.end());
  if (failed(checkRegionArgs(*this, getMerge(), "merge", twoStates)) ||
      failed(checkYield(*this, getMerge(), "merge", state)))
    return failure();
  SmallVector<Type> epilogueArgs = {i32};
  epilogueArgs.append(state.begin(), state.end());
  if (failed(checkRegionArgs(*this, getEpilogue(), "epilogue", epilogueArgs)))
    return failure();
  if (getRows())
    if (Type t = findStateWithoutRows(state))
      return emitOpError() << "with rows expects every state value to have "
                              "the same number of rows (a tile's first "
                              "dimension), got "
                           << t;
  if (std::optional<uint64_t> bound = getMaxRows()) {
    if (!getRows())
      return emitOpError() << "with max_rows expects rows";
    if (int64_t(*bound) >= *stateRows(state.front()))
      return emitOpError() << "expects max_rows below the state's "
                           << *stateRows(state.front()) << " rows, got "
                           << *bound;
  }
  return checkYield(*this, getEpilogue(), "epilogue", {});
}

//===----------------------------------------------------------------------===//
// Thread-block clusters
//===----------------------------------------------------------------------===//

/// The cluster ops belong to kernels that run in clusters.
static LogicalResult checkInCluster(Operation *op) {
  auto kernel = op->getParentOfType<func::FuncOp>();
  if (!kernel || !kernel->hasAttr(TesselDialect::getClusterAttrName()))
    return op->emitOpError()
           << "must be inside a kernel with a '"
           << TesselDialect::getClusterAttrName() << "' attribute";
  return success();
}

static LogicalResult checkSharedPointer(Operation *op, Type type) {
  if (!cast<PtrType>(type).getShared())
    return op->emitOpError()
           << "expects a pointer to shared memory, got " << type;
  return success();
}

LogicalResult SharedBufferOp::verify() {
  return checkSharedPointer(*this, getType());
}

LogicalResult ClusterMapOp::verify() {
  if (failed(checkSharedPointer(*this, getPtr().getType())))
    return failure();
  return checkInCluster(*this);
}

LogicalResult ClusterArriveOp::verify() { return checkInCluster(*this); }

LogicalResult ClusterWaitOp::verify() { return checkInCluster(*this); }

#define GET_OP_CLASSES
#include "tessel/TesselOps.cpp.inc"
