//===- TesselTypes.cpp - tessel types and attributes ----------------------===//

#include "tessel/TesselDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tessel;

#define GET_TYPEDEF_CLASSES
#include "tessel/TesselOpsTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tessel/TesselAttrs.cpp.inc"

#include "tessel/TesselEnums.cpp.inc"

#include "tessel/TesselAttrInterfaces.cpp.inc"

static bool isScalarElementType(Type type) {
  return type.isF16() || type.isBF16() || type.isF32() ||
         type.isSignlessInteger(1) || type.isSignlessInteger(32) ||
         type.isSignlessInteger(64);
}

//===----------------------------------------------------------------------===//
// PtrType
//===----------------------------------------------------------------------===//

LogicalResult PtrType::verify(function_ref<InFlightDiagnostic()> emitError,
                              Type pointeeType, bool shared) {
  if (!isScalarElementType(pointeeType))
    return emitError() << "pointee must be one of i1, i32, i64, f16, bf16, "
                          "f32, got "
                       << pointeeType;
  return success();
}

// `<` type (`,` `shared`)? `>`
Type PtrType::parse(AsmParser &parser) {
  Type pointee;
  if (parser.parseLess() || parser.parseType(pointee))
    return Type();
  bool shared = succeeded(parser.parseOptionalComma());
  if (shared && parser.parseKeyword("shared"))
    return Type();
  if (parser.parseGreater())
    return Type();
  return parser.getChecked<PtrType>(parser.getContext(), pointee, shared);
}

void PtrType::print(AsmPrinter &printer) const {
  printer << "<" << getPointeeType() << (getShared() ? ", shared>" : ">");
}

//===----------------------------------------------------------------------===//
// TileType
//===----------------------------------------------------------------------===//

LogicalResult TileType::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape, Type elementType,
                               Attribute encoding) {
  if (shape.empty())
    return emitError() << "tile must have rank at least 1";
  int64_t numElements = 1;
  for (int64_t dim : shape) {
    if (dim <= 0)
      return emitError() << "tile dimensions must be positive, got " << dim;
    if (llvm::MulOverflow(numElements, dim, numElements)) {
      auto diag = emitError()
                  << "tile must have fewer than 2^63 elements, got shape ";
      llvm::interleave(shape, diag, "x");
      return diag;
    }
  }
  if (!isScalarElementType(elementType) && !isa<PtrType>(elementType))
    return emitError() << "tile element type must be a scalar or a pointer, "
                          "got "
                       << elementType;
  if (!encoding)
    return success();
  auto layout = dyn_cast<LayoutEncodingAttrInterface>(encoding);
  if (!layout)
    return emitError() << "tile encoding must be a layout attribute "
                          "(#tessel.blocked, #tessel.slice, #tessel.mma, "
                          "#tessel.dot_operand), got "
                       << encoding;
  if (layout.getRank() != shape.size())
    return emitError() << "layout encoding of rank " << layout.getRank()
                       << " does not fit a tile of rank " << shape.size();
  return success();
}

Type TileType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  Attribute encoding;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return {};
  if (succeeded(parser.parseOptionalComma()) && parser.parseAttribute(encoding))
    return {};
  if (parser.parseGreater())
    return {};
  return parser.getChecked<TileType>(parser.getContext(), shape, elementType,
                                     encoding);
}

void TileType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t dim : getShape())
    printer << dim << "x";
  printer << getElementType();
  if (getEncoding())
    printer << ", " << getEncoding();
  printer << ">";
}

TileType TileType::cloneWith(std::optional<ArrayRef<int64_t>> shape,
                             Type elementType) const {
  return TileType::get(shape ? *shape : getShape(), elementType, getEncoding());
}

TileType TileType::withElementType(Type elementType) const {
  return TileType::get(getShape(), elementType, getEncoding());
}

//===----------------------------------------------------------------------===//
// MemDescType
//===----------------------------------------------------------------------===//

SharedTileLayout SharedTileLayout::get(int64_t rows, int64_t rowElems,
                                       int64_t elemBytes, int64_t pitch) {
  SharedTileLayout l;
  l.rows = rows;
  l.elemBytes = elemBytes;
  l.chunkElems = 16 / elemBytes;
  int64_t rowChunks = llvm::divideCeil(rowElems, l.chunkElems);
  // Column blocks for the tensor cores' 16-bit operands; wider elements (the
  // f32 halo tiles of tessel-stage-slices) keep whole rows, which measured
  // better for their sliding-window reads (MTA's backward spilled with
  // blocks).
  int64_t blockChunks =
      elemBytes == 2 ? std::min<int64_t>(rowChunks, 8) : rowChunks;
  l.blockElems = blockChunks * l.chunkElems;
  if (pitch)
    l.blockElems = pitch;
  l.blocks = llvm::divideCeil(rowChunks, blockChunks);
  // Each block starts on a whole period of the swizzle (8 rows).
  l.blockRows = l.blocks > 1 ? llvm::alignTo(rows, 8) : rows;
  // Rows narrower than the 128 bytes of the 32 banks share a phase; the XOR
  // stays inside an aligned group of maxPhase chunks of the row. Wider
  // elements are not swizzled: no tensor core or ldmatrix reads them, and
  // MTA's halo tiles are read in windows shifted by constants, which plain
  // rows address as one base plus a constant per window (with the XOR every
  // element of every window took its own address arithmetic: H200, mta_bwd
  // 15.3 -> 12.5 ms, its spills 1272 -> 320 bytes).
  l.perPhase = std::max<int64_t>(1, 8 / blockChunks);
  l.maxPhase = elemBytes == 2 ? std::min<int64_t>(8 / l.perPhase,
                                                  blockChunks & -blockChunks)
                              : 1;
  return l;
}

int64_t SharedTileLayout::getAccessElems() const {
  int64_t rowBytes = getBlockBytes();
  return std::max<int64_t>(1, std::min<int64_t>(16, rowBytes & -rowBytes) /
                                  elemBytes);
}

int64_t SharedTileLayout::getNvmmaSwizzleBytes() const {
  int64_t chunks = blockElems / chunkElems;
  if (elemBytes != 2 || (chunks != 2 && chunks != 4 && chunks != 8))
    return 0;
  return chunks * 16;
}

SharedTileLayout MemDescType::getSharedLayout() const {
  ArrayRef<int64_t> tile = getTileShape();
  unsigned contiguous = getContiguousDim();
  return SharedTileLayout::get(
      tile[1 - contiguous], tile[contiguous],
      std::max(1u, getElementType().getIntOrFloatBitWidth() / 8), getPitch());
}

std::string mlir::tessel::whyNotMemDescColumns(ArrayRef<int64_t> shape,
                                               Type elementType,
                                               ArrayRef<unsigned> order,
                                               int64_t pitch,
                                               Attribute columns) {
  std::string why;
  llvm::raw_string_ostream os(why);
  auto mma = dyn_cast<MmaEncodingAttr>(columns);
  if (!mma)
    os << "memdesc columns must be a #tessel.mma layout, got " << columns;
  else if (order[0] != 0 || pitch != 0 || elementType.isF32())
    os << "memdesc columns need a 16-bit B operand contiguous along K (order "
          "= [0, 1]), got "
       << "'" << elementType << "' with order = [" << order[0] << ", "
       << order[1] << "]";
  else if (failed(getWarpGroupColumnRows(mma, shape.back())))
    os << "memdesc of " << shape.back()
       << " columns cannot take the column order of " << mma
       << " (pairs of 8-column blocks per warpgroup, a power of two in all)";
  return why;
}

LogicalResult MemDescType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, Type elementType,
                                  ArrayRef<unsigned> order, int64_t pitch,
                                  Attribute columns) {
  if (shape.size() != 2 && shape.size() != 3)
    return emitError() << "memdesc must be a tile (2-D) or buffers of tiles "
                          "(3-D), got rank "
                       << shape.size();
  if (llvm::any_of(shape, [](int64_t d) { return d <= 0; }))
    return emitError() << "memdesc dimensions must be positive";
  if (!elementType.isF16() && !elementType.isBF16() && !elementType.isF32())
    return emitError() << "memdesc element type must be f16, bf16 or f32, got "
                       << elementType;
  if (order.size() != 2 || order[0] > 1 || order[1] != 1 - order[0])
    return emitError() << "memdesc order must be [1, 0] or [0, 1]";
  if (columns) {
    std::string why =
        whyNotMemDescColumns(shape, elementType, order, pitch, columns);
    if (!why.empty())
      return emitError() << why;
  }
  if (pitch == 0)
    return success();
  if (!elementType.isF32())
    return emitError() << "only f32 memdescs take a pitch (16-bit rows are "
                          "swizzled), got "
                       << elementType;
  int64_t rowElems = shape[shape.size() - 2 + order[0]];
  if (pitch < rowElems || pitch % 2 != 0)
    return emitError() << "memdesc pitch must be even and at least the row's "
                       << rowElems << " elements, got " << pitch;
  return success();
}

Type MemDescType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  SmallVector<unsigned> order;
  auto parseOrder = [&]() -> ParseResult {
    unsigned v;
    if (parser.parseInteger(v))
      return failure();
    order.push_back(v);
    return success();
  };
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseComma() ||
      parser.parseKeyword("order") || parser.parseEqual() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseOrder))
    return {};
  int64_t pitch = 0;
  Attribute columns;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "pitch" && !pitch) {
      if (parser.parseInteger(pitch))
        return {};
    } else if (key == "columns" && !columns) {
      if (parser.parseAttribute(columns))
        return {};
    } else {
      parser.emitError(parser.getCurrentLocation(),
                       "expected pitch or columns (once each), got ")
          << key;
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<MemDescType>(parser.getContext(), shape, elementType,
                                        order, pitch, columns);
}

void MemDescType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t dim : getShape())
    printer << dim << "x";
  printer << getElementType() << ", order = [";
  llvm::interleaveComma(getOrder(), printer);
  printer << "]";
  if (getPitch())
    printer << ", pitch = " << getPitch();
  if (getColumns())
    printer << ", columns = " << getColumns();
  printer << ">";
}

//===----------------------------------------------------------------------===//
// State types
//===----------------------------------------------------------------------===//

LogicalResult
SoftmaxStateType::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    return emitError() << "softmax state needs positive rows and cols, got "
                       << rows << "x" << cols;
  return success();
}

Type SoftmaxStateType::parse(AsmParser &parser) {
  SmallVector<int64_t, 2> dims;
  if (parser.parseLess() ||
      parser.parseDimensionList(dims, /*allowDynamic=*/false,
                                /*withTrailingX=*/false) ||
      parser.parseGreater())
    return {};
  if (dims.size() != 2) {
    parser.emitError(parser.getNameLoc(),
                     "softmax state expects <ROWSxCOLS>, got ")
        << dims.size() << " dimension(s)";
    return {};
  }
  return parser.getChecked<SoftmaxStateType>(parser.getContext(), dims[0],
                                             dims[1]);
}

void SoftmaxStateType::print(AsmPrinter &printer) const {
  printer << "<" << getRows() << "x" << getCols() << ">";
}

LogicalResult KLStateType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t rows) {
  if (rows <= 0)
    return emitError() << "kl state needs positive rows, got " << rows;
  return success();
}

//===----------------------------------------------------------------------===//
// TensorDescType, MBarriersType
//===----------------------------------------------------------------------===//

LogicalResult
TensorDescType::verify(function_ref<InFlightDiagnostic()> emitError,
                       ArrayRef<int64_t> blockShape, Type elementType) {
  if (blockShape.empty() || blockShape.size() > 5)
    return emitError() << "tensor descriptor needs 1 to 5 dimensions, got "
                       << blockShape.size();
  if (llvm::any_of(blockShape, [](int64_t d) { return d <= 0; }))
    return emitError() << "tensor descriptor block dimensions must be "
                          "positive";
  if (!isScalarElementType(elementType) || elementType.isInteger(1))
    return emitError() << "tensor descriptor element type must be a number, "
                          "got "
                       << elementType;
  if (llvm::count_if(blockShape, [](int64_t d) { return d != 1; }) > 2)
    return emitError() << "a block may have at most two dimensions other "
                          "than 1 (it loads a tile), got "
                       << blockShape.size();
  return success();
}

SmallVector<unsigned> TensorDescType::getTileDims() const {
  SmallVector<unsigned> dims;
  for (auto [i, d] : llvm::enumerate(getBlockShape()))
    if (d != 1)
      dims.push_back(i);
  return dims;
}

SmallVector<int64_t> TensorDescType::getTileShape() const {
  SmallVector<int64_t> shape;
  for (unsigned d : getTileDims())
    shape.push_back(getBlockShape()[d]);
  if (shape.empty())
    shape.push_back(1);
  return shape;
}

Type TensorDescType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return parser.getChecked<TensorDescType>(parser.getContext(), shape,
                                           elementType);
}

void TensorDescType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t dim : getBlockShape())
    printer << dim << "x";
  printer << getElementType() << ">";
}

std::optional<TMABox> mlir::tessel::getTMABox(TensorDescType desc) {
  SmallVector<unsigned> dims = desc.getTileDims();
  ArrayRef<int64_t> block = desc.getBlockShape();
  unsigned rank = desc.getRank();
  // A vector of 32-bit values (attention's per-row statistics): one box,
  // written as it is, in whole 128-byte lines (a bulk tensor copy's
  // destination is 128-byte aligned, and a pipeline's buffers follow each
  // other).
  if (dims.size() == 1 && dims[0] == rank - 1 &&
      desc.getElementType().getIntOrFloatBitWidth() == 32) {
    if (block[rank - 1] % 32 != 0 || block[rank - 1] > 256)
      return std::nullopt;
    TMABox t;
    t.box.assign(block.begin(), block.end());
    t.swizzleBytes = 0;
    t.copies = 1;
    t.copyStrideBytes = 0;
    t.bytes = 4 * block[rank - 1];
    return t;
  }
  if (desc.getElementType().getIntOrFloatBitWidth() != 16 || dims.size() != 2 ||
      dims[1] != rank - 1 || block[dims[0]] % 8 != 0 || block[dims[0]] > 256 ||
      block[rank - 1] % 8 != 0)
    return std::nullopt;
  SharedTileLayout layout =
      SharedTileLayout::get(block[dims[0]], block[rank - 1], 2);
  TMABox t;
  t.swizzleBytes = layout.getNvmmaSwizzleBytes();
  if (!t.swizzleBytes && layout.blockElems != layout.chunkElems)
    return std::nullopt;
  t.box.assign(block.begin(), block.end());
  t.box[rank - 1] = layout.blockElems;
  t.copies = layout.blocks;
  t.copyStrideBytes = layout.getBlockStrideBytes();
  t.bytes = t.copies * block[dims[0]] * layout.getBlockBytes();
  return t;
}

LogicalResult
MBarriersType::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t count) {
  if (count <= 0)
    return emitError() << "mbarriers need a positive count, got " << count;
  return success();
}

//===----------------------------------------------------------------------===//
// BlockedEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult BlockedEncodingAttr::verify(
    function_ref<InFlightDiagnostic()> emitError,
    ArrayRef<unsigned> sizePerThread, ArrayRef<unsigned> threadsPerWarp,
    ArrayRef<unsigned> warpsPerCTA, ArrayRef<unsigned> order) {
  size_t rank = order.size();
  if (sizePerThread.size() != rank || threadsPerWarp.size() != rank ||
      warpsPerCTA.size() != rank)
    return emitError()
           << "blocked encoding expects sizePerThread, "
              "threadsPerWarp and warpsPerCTA of the rank of order ("
           << rank << "), got " << sizePerThread.size() << ", "
           << threadsPerWarp.size() << " and " << warpsPerCTA.size();
  for (auto [name, values] : {std::pair<StringRef, ArrayRef<unsigned>>{
                                  "sizePerThread", sizePerThread},
                              {"warpsPerCTA", warpsPerCTA}})
    for (auto [dim, value] : llvm::enumerate(values))
      if (value == 0)
        return emitError() << name << " must be positive, got 0 in dimension "
                           << dim;
  unsigned threads = 1;
  for (unsigned t : threadsPerWarp)
    threads *= t;
  if (threads != 32)
    return emitError() << "threadsPerWarp must multiply to 32, got " << threads;
  SmallVector<bool> seen(rank, false);
  for (unsigned dim : order) {
    if (dim >= rank || seen[dim]) {
      auto diag = emitError() << "order must be a permutation of [0, " << rank
                              << "), got [";
      llvm::interleaveComma(order, diag);
      return diag << "]";
    }
    seen[dim] = true;
  }
  return success();
}

unsigned BlockedEncodingAttr::getRank() const { return getOrder().size(); }

//===----------------------------------------------------------------------===//
// SliceEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult
SliceEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          unsigned dim, Attribute parent) {
  auto layout = dyn_cast<LayoutEncodingAttrInterface>(parent);
  if (!layout)
    return emitError() << "slice parent must be a layout attribute, got "
                       << parent;
  // The slice must still describe a tile: rank at least 1.
  if (layout.getRank() < 2)
    return emitError() << "slice parent must have rank at least 2, got "
                       << layout.getRank();
  if (dim >= layout.getRank())
    return emitError() << "slice dim " << dim << " is out of range for a "
                       << "parent of rank " << layout.getRank();
  return success();
}

unsigned SliceEncodingAttr::getRank() const {
  return cast<LayoutEncodingAttrInterface>(getParent()).getRank() - 1;
}

//===----------------------------------------------------------------------===//
// MmaEncodingAttr and DotOperandEncodingAttr
//===----------------------------------------------------------------------===//

LogicalResult
MmaEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        ArrayRef<unsigned> warpsPerCTA, unsigned columnRun) {
  if (warpsPerCTA.size() != 2)
    return emitError() << "mma encoding expects warpsPerCTA = [wm, wn], got "
                       << warpsPerCTA.size() << " value(s)";
  for (unsigned w : warpsPerCTA)
    if (!llvm::isPowerOf2_32(w))
      return emitError() << "mma warpsPerCTA must be powers of two, got " << w;
  if (columnRun != 2 && columnRun != 4)
    return emitError() << "mma columnRun must be 2 or 4, got " << columnRun;
  if (columnRun == 4 && warpsPerCTA[0] % 4 != 0)
    return emitError() << "mma columnRun = 4 is a warpgroup layout: it needs "
                          "a multiple of 4 warps along M, got "
                       << warpsPerCTA[0];
  return success();
}

Attribute mlir::tessel::getWarpGroupBColumns(MmaEncodingAttr acc) {
  return acc && acc.getColumnRun() != 2 ? Attribute(acc) : Attribute();
}

FailureOr<SmallVector<int64_t>>
mlir::tessel::getWarpGroupColumnRows(MmaEncodingAttr acc, int64_t n) {
  int64_t wn = acc.getWarpsPerCTA()[1], run = acc.getColumnRun();
  // Each warpgroup takes pairs of 8-column blocks (a run of 4 spans both);
  // a power of two keeps the order a move of bit fields (SwizzledRows).
  if (n % (8 * wn * (run / 2)) != 0 || !llvm::isPowerOf2_64(n))
    return failure();
  // wgmma writes the products of B's column r = 8 (w + wn j) + 2t + e
  // (warpgroup w along N, its block j: what WarpGroupDotToLLVM reads) to
  // lane t's accumulator slot 2j + e, which the layout (TileLayout's
  // DimLayout: `run` columns per lane, 4 lanes, then the warps) holds at
  // column run (t + 4 (w + wn ⌊(2j + e) / run⌋)) + (2j + e) % run.
  SmallVector<int64_t> rows(n, -1);
  for (int64_t w = 0; w < wn; ++w)
    for (int64_t j = 0; j < n / (8 * wn); ++j)
      for (int64_t t = 0; t < 4; ++t)
        for (int64_t e = 0; e < 2; ++e) {
          int64_t slot = 2 * j + e;
          int64_t col = run * (t + 4 * (w + wn * (slot / run))) + slot % run;
          int64_t &row = rows[col];
          if (row >= 0)
            return failure();
          row = 8 * (w + wn * j) + 2 * t + e;
        }
  for (int64_t col = 0; col < n; ++col) {
    int64_t moved = 0;
    for (int64_t bit = 1; bit < n; bit <<= 1)
      if (col & bit)
        moved |= rows[bit];
    if (rows[col] != moved)
      return failure();
  }
  return rows;
}

unsigned MmaEncodingAttr::getRank() const { return 2; }

LogicalResult
DotOperandEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               unsigned opIdx, MmaEncodingAttr parent) {
  if (opIdx > 1)
    return emitError() << "dot_operand opIdx must be 0 (A) or 1 (B), got "
                       << opIdx;
  return success();
}

unsigned DotOperandEncodingAttr::getRank() const { return 2; }

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace mlir::tessel {
bool isPtrLike(Type type) { return isa<PtrType>(getElementTypeOrSelf(type)); }

bool isMaskLike(Type type) {
  return getElementTypeOrSelf(type).isSignlessInteger(1);
}

ArrayRef<int64_t> getShapeOrEmpty(Type type) {
  if (auto tile = dyn_cast<TileType>(type))
    return tile.getShape();
  return {};
}

Type getPointeeLikeType(Type ptrLike) {
  auto ptr = dyn_cast<PtrType>(getElementTypeOrSelf(ptrLike));
  if (!ptr)
    return {};
  if (auto tile = dyn_cast<TileType>(ptrLike))
    return tile.withElementType(ptr.getPointeeType());
  return ptr.getPointeeType();
}

Type getMaskLikeType(Type type) {
  Type i1 = IntegerType::get(type.getContext(), 1);
  if (auto tile = dyn_cast<TileType>(type))
    return tile.withElementType(i1);
  return i1;
}
} // namespace mlir::tessel

void TesselDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "tessel/TesselOpsTypes.cpp.inc"
      >();
}

void TesselDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessel/TesselAttrs.cpp.inc"
      >();
}
