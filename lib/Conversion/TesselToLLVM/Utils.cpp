//===- Utils.cpp - Shared pieces of the tessel-to-LLVM patterns -----------===//

#include "Conversion/TesselToLLVM/Utils.h"
#include "Conversion/TesselToLLVM/SharedBanks.h"
#include "Conversion/TesselToLLVM/TesselToLLVM.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tessel;

int64_t mlir::tessel::getSharedBytes(Type type) {
  if (isa<PtrType>(type))
    return 8;
  return std::max(1u, type.getIntOrFloatBitWidth() / 8);
}

int64_t mlir::tessel::getTileBytes(TileType type) {
  return type.getNumElements() * getSharedBytes(type.getElementType());
}

TileLayout mlir::tessel::getLayout(Type tileType) {
  FailureOr<TileLayout> layout = TileLayout::get(cast<TileType>(tileType));
  assert(succeeded(layout) && "encodings are checked before the conversion");
  return *layout;
}

Value mlir::tessel::i32Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}

Value mlir::tessel::vectorOf(OpBuilder &b, Location loc, ValueRange elements) {
  auto type =
      VectorType::get({int64_t(elements.size())}, elements.front().getType());
  Value vector = LLVM::PoisonOp::create(b, loc, type);
  for (auto [i, element] : llvm::enumerate(elements))
    vector = LLVM::InsertElementOp::create(b, loc, vector, element,
                                           i32Constant(b, loc, i));
  return vector;
}

Value mlir::tessel::laneOf(OpBuilder &b, Location loc, Value vector,
                           int64_t lane) {
  return LLVM::ExtractElementOp::create(b, loc, vector,
                                        i32Constant(b, loc, lane));
}

SmallVector<OpFoldResult>
mlir::tessel::sliceOrigin(OpBuilder &b, Location loc, ArrayRef<int64_t> offsets,
                          ArrayRef<ValueRange> dynamic, ArrayRef<int64_t> sizes,
                          ArrayRef<int64_t> bounds) {
  SmallVector<OpFoldResult> origin;
  auto next = dynamic.begin();
  for (auto [offset, size, bound] : llvm::zip(offsets, sizes, bounds)) {
    if (!ShapedType::isDynamic(offset)) {
      origin.push_back(b.getI32IntegerAttr(offset));
      continue;
    }
    Value low = i32Constant(b, loc, 0);
    Value high = i32Constant(b, loc, bound - size);
    Value runtime = llvm::getSingleElement(*next++);
    Value atLeastLow = arith::MaxSIOp::create(b, loc, runtime, low);
    origin.push_back(
        arith::MinSIOp::create(b, loc, atLeastLow, high).getResult());
  }
  return origin;
}

Value mlir::tessel::addOffset(OpBuilder &b, Location loc, Value c,
                              OpFoldResult offset) {
  if (auto value = dyn_cast<Value>(offset))
    return arith::AddIOp::create(b, loc, c, value);
  int64_t constant = cast<IntegerAttr>(cast<Attribute>(offset)).getInt();
  if (constant == 0)
    return c;
  return arith::AddIOp::create(b, loc, c, i32Constant(b, loc, constant));
}

Value mlir::tessel::andPredicates(OpBuilder &b, Location loc, Value x,
                                  Value y) {
  if (!x || !y)
    return x ? x : y;
  return arith::AndIOp::create(b, loc, x, y);
}

/// The threads that run the code `b` inserts: inside a region of a
/// tessel.warp_specialize, that region's warps; else the whole CTA (null).
/// The first of them, the number of them and the hardware barrier they
/// synchronise on.
struct ThreadGroup {
  WarpSpecializeOp split;
  int64_t first = 0, count = 0, barrier = 0;
};
static ThreadGroup threadGroup(OpBuilder &b) {
  ThreadGroup group;
  Operation *at = b.getInsertionBlock()->getParentOp();
  group.split = dyn_cast<WarpSpecializeOp>(at);
  if (!group.split)
    group.split = at->getParentOfType<WarpSpecializeOp>();
  if (!group.split)
    return group;
  int64_t consumers = 32 * group.split.getConsumerWarps();
  if (group.split.getProducer().isAncestor(b.getInsertionBlock()->getParent()))
    return {group.split, consumers, 32 * group.split.getProducerWarps(), 2};
  return {group.split, 0, consumers, 1};
}

Value mlir::tessel::isThreadZero(OpBuilder &b, Location loc) {
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                               i32Constant(b, loc, threadGroup(b).first));
}

void mlir::tessel::emitBarrier(OpBuilder &b, Location loc) {
  ThreadGroup group = threadGroup(b);
  if (!group.split) {
    NVVM::Barrier0Op::create(b, loc);
    return;
  }
  emitNamedBarrier(b, loc, i32Constant(b, loc, group.barrier), group.count);
}

void mlir::tessel::emitNamedBarrier(OpBuilder &b, Location loc, Value id,
                                    int64_t threads) {
  Value count = i32Constant(b, loc, threads);
  NVVM::BarrierOp::create(b, loc, Type(), id, count,
                          NVVM::BarrierReductionAttr(), Value());
}

void mlir::tessel::emitIf(OpBuilder &b, Location loc, Value cond,
                          function_ref<void(OpBuilder &)> body) {
  if (!cond) {
    body(b);
    return;
  }
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body(b);
}

Value mlir::tessel::emitIfElse(OpBuilder &b, Location loc, Value cond,
                               function_ref<Value(OpBuilder &)> then,
                               Value otherwise) {
  if (!cond)
    return then(b);
  auto ifOp = scf::IfOp::create(b, loc, otherwise.getType(), cond,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, loc, then(b));
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, otherwise);
  return ifOp.getResult(0);
}

namespace {
/// How a scalar travels through a predicated PTX access: the register class
/// of its inline-asm operand, the PTX type of that register and of the
/// access, and the integer type of the register.
struct PtxAccess {
  StringRef constraint, regType, memType;
  Type bits;
};
} // namespace

static PtxAccess ptxAccessOf(Type type) {
  MLIRContext *ctx = type.getContext();
  unsigned width = type.getIntOrFloatBitWidth();
  if (width == 64)
    return {"l", "b64", "b64", IntegerType::get(ctx, 64)};
  if (width == 32)
    return {"r", "b32", "b32", IntegerType::get(ctx, 32)};
  if (width == 16)
    return {"h", "b16", "b16", IntegerType::get(ctx, 16)};
  // Bytes (and i1, kept as bytes) go through a 16-bit register.
  return {"h", "b16", "u8", IntegerType::get(ctx, 16)};
}

/// `v` as the integer the access moves, and back.
static Value toBits(OpBuilder &b, Location loc, Value v, Type bits) {
  Type type = v.getType();
  if (isa<FloatType>(type))
    return LLVM::BitcastOp::create(b, loc, bits, v);
  if (type.getIntOrFloatBitWidth() < bits.getIntOrFloatBitWidth())
    return LLVM::ZExtOp::create(b, loc, bits, v);
  return v;
}

static Value fromBits(OpBuilder &b, Location loc, Value v, Type type) {
  if (isa<FloatType>(type))
    return LLVM::BitcastOp::create(b, loc, type, v);
  if (type.getIntOrFloatBitWidth() < v.getType().getIntOrFloatBitWidth())
    return LLVM::TruncOp::create(b, loc, type, v);
  return v;
}

// Masked accesses are predicated PTX instead of a branch per element: the IR
// keeps large blocks, which LLVM's passes handle far faster than thousands
// of tiny ones (masked intrinsics are split into such blocks late,
// quadratically).
Value mlir::tessel::inlinePtx(OpBuilder &b, Location loc, Type result,
                              ValueRange operands, StringRef text,
                              StringRef constraints) {
  auto op = LLVM::InlineAsmOp::create(
      b, loc, result ? TypeRange{result} : TypeRange{}, operands, text,
      constraints, /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
  return result ? op.getResult(0) : Value();
}

/// The inline-assembly register class of a value of `type`.
static StringRef registerClass(Type type) {
  if (type.isF32())
    return "f";
  if (type.isF64())
    return "d";
  if (type.isInteger(64))
    return "l";
  if (type.isInteger(16) || type.isF16() || type.isBF16())
    return "h";
  return "r";
}

SmallVector<Value>
mlir::tessel::tiedInlinePtx(OpBuilder &b, Location loc, ValueRange tied,
                            ValueRange inputs, StringRef text,
                            ArrayRef<StringRef> inputConstraints) {
  SmallVector<std::string> constraints;
  for (Value v : tied)
    constraints.push_back(("=" + registerClass(v.getType())).str());
  for (unsigned i = 0; i < tied.size(); ++i)
    constraints.push_back(std::to_string(i));
  llvm::append_range(constraints, inputConstraints);
  SmallVector<Value> operands(tied);
  llvm::append_range(operands, inputs);
  SmallVector<Type> types(tied.getTypes());
  Type result;
  if (types.size() == 1)
    result = types.front();
  else if (!types.empty())
    result = LLVM::LLVMStructType::getLiteral(b.getContext(), types);
  Value out =
      inlinePtx(b, loc, result, operands, text, llvm::join(constraints, ","));
  if (types.size() <= 1)
    return out ? SmallVector<Value>{out} : SmallVector<Value>{};
  SmallVector<Value> values;
  for (unsigned i = 0; i < types.size(); ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, loc, out, i));
  return values;
}

void mlir::tessel::emitAsyncProxyFence(OpBuilder &b, Location loc) {
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

/// The state space of accesses through `ptr`: ".global", or none for a
/// generic pointer (into a cluster's shared memory).
static StringRef stateSpace(Value ptr) {
  return cast<LLVM::LLVMPointerType>(ptr.getType()).getAddressSpace() == 1
             ? ".global"
             : "";
}

Value mlir::tessel::loadMasked(OpBuilder &b, Location loc, Type type, Value ptr,
                               Value mask, Value other) {
  if (!mask)
    return LLVM::LoadOp::create(b, loc, type, ptr);
  PtxAccess access = ptxAccessOf(type);
  std::string text =
      llvm::formatv("mov.{0} $0, $3;\n\t@$2 ld{2}.{1} $0, [ $1 + 0 ];",
                    access.regType, access.memType, stateSpace(ptr));
  Value loaded = inlinePtx(
      b, loc, access.bits, {ptr, mask, toBits(b, loc, other, access.bits)},
      text,
      (llvm::Twine("=") + access.constraint + ",l,b," + access.constraint)
          .str());
  return fromBits(b, loc, loaded, type);
}

void mlir::tessel::storeMasked(OpBuilder &b, Location loc, Value value,
                               Value ptr, Value mask) {
  if (!mask) {
    LLVM::StoreOp::create(b, loc, value, ptr);
    return;
  }
  PtxAccess access = ptxAccessOf(value.getType());
  std::string text = llvm::formatv("@$2 st{1}.{0} [ $0 + 0 ], $1;",
                                   access.memType, stateSpace(ptr));
  inlinePtx(b, loc, Type(), {ptr, toBits(b, loc, value, access.bits), mask},
            text, (llvm::Twine("l,") + access.constraint + ",b").str());
}

Value mlir::tessel::loadWords(OpBuilder &b, Location loc, Value ptr,
                              unsigned words, Value mask, Value other) {
  Type i32 = b.getI32Type();
  auto vector = VectorType::get({words}, i32);
  if (!mask)
    return LLVM::LoadOp::create(b, loc, vector, ptr, /*alignment=*/4 * words);
  auto word = [&](Value v, unsigned i) -> Value {
    return LLVM::ExtractElementOp::create(b, loc, v, i32Constant(b, loc, i));
  };
  if (words == 1)
    return LLVM::BitcastOp::create(
        b, loc, vector, loadMasked(b, loc, i32, ptr, mask, word(other, 0)));
  // mov the fallback into each register, then one predicated access.
  std::string text, regs, constraints;
  for (unsigned i = 0; i < words; ++i) {
    text += llvm::formatv("mov.b32 ${0}, ${1};\n\t", i, words + 2 + i).str();
    regs += llvm::formatv("{0}${1}", i ? ", " : "", i).str();
    constraints += "=r,";
  }
  text += llvm::formatv("@${0} ld{4}.v{1}.b32 {{{2}}, [ ${3} + 0 ];", words + 1,
                        words, regs, words, stateSpace(ptr))
              .str();
  constraints += "l,b";
  SmallVector<Value> operands = {ptr, mask};
  for (unsigned i = 0; i < words; ++i) {
    operands.push_back(word(other, i));
    constraints += ",r";
  }
  Type result = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                 SmallVector<Type>(words, i32));
  Value loaded = inlinePtx(b, loc, result, operands, text, constraints);
  Value out = LLVM::PoisonOp::create(b, loc, vector);
  for (unsigned i = 0; i < words; ++i)
    out = LLVM::InsertElementOp::create(
        b, loc, out, LLVM::ExtractValueOp::create(b, loc, loaded, i),
        i32Constant(b, loc, i));
  return out;
}

void mlir::tessel::storeWords(OpBuilder &b, Location loc, Value value,
                              Value ptr, Value mask) {
  unsigned words = cast<VectorType>(value.getType()).getNumElements();
  if (!mask) {
    LLVM::StoreOp::create(b, loc, value, ptr, /*alignment=*/4 * words);
    return;
  }
  SmallVector<Value> operands = {ptr, mask};
  for (unsigned i = 0; i < words; ++i)
    operands.push_back(
        LLVM::ExtractElementOp::create(b, loc, value, i32Constant(b, loc, i)));
  if (words == 1) {
    storeMasked(b, loc, operands[2], ptr, mask);
    return;
  }
  std::string regs, constraints = "l,b";
  for (unsigned i = 0; i < words; ++i) {
    regs += llvm::formatv("{0}${1}", i ? ", " : "", i + 2).str();
    constraints += ",r";
  }
  std::string text = llvm::formatv("@$1 st{2}.v{0}.b32 [ $0 + 0 ], {{{1}};",
                                   words, regs, stateSpace(ptr));
  inlinePtx(b, loc, Type(), operands, text, constraints);
}

/// i1 has no memory form: it is kept as a byte.
static Type storageType(Type type) {
  if (type.isInteger(1))
    return IntegerType::get(type.getContext(), 8);
  return type;
}

Value mlir::tessel::sharedElementPtr(OpBuilder &b, Location loc, Type type,
                                     int64_t byteOffset, Value index) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Value ptr =
      LLVM::AddressOfOp::create(b, loc, ptrType, kSharedMemorySymbol.str());
  if (byteOffset != 0)
    ptr = LLVM::GEPOp::create(b, loc, ptrType, b.getI8Type(), ptr,
                              ArrayRef<LLVM::GEPArg>{int32_t(byteOffset)});
  return LLVM::GEPOp::create(b, loc, ptrType, storageType(type), ptr,
                             ValueRange{index});
}

void mlir::tessel::storeShared(OpBuilder &b, Location loc, Value value,
                               Value ptr) {
  Type storage = storageType(value.getType());
  if (storage != value.getType())
    value = arith::ExtUIOp::create(b, loc, storage, value);
  LLVM::StoreOp::create(b, loc, value, ptr);
}

/// Every thread's discard slot holds any element type, or 16 bytes of them.
static constexpr int64_t kDiscardSlotBytes = 16;

int64_t mlir::tessel::withDiscardSlots(int64_t dataBytes, int64_t numThreads) {
  return llvm::alignTo(dataBytes, kDiscardSlotBytes) +
         kDiscardSlotBytes * numThreads;
}

void mlir::tessel::storeOwned(OpBuilder &b, Location loc, Value value,
                              Value ptr, Value owner, int64_t dataBytes) {
  if (owner) {
    Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
    Value discard =
        sharedElementPtr(b, loc, b.getIntegerType(8 * kDiscardSlotBytes),
                         llvm::alignTo(dataBytes, kDiscardSlotBytes), tid);
    ptr = LLVM::SelectOp::create(b, loc, owner, ptr, discard);
  }
  storeShared(b, loc, value, ptr);
}

Value mlir::tessel::packWords(OpBuilder &b, Location loc, ValueRange values,
                              ArrayRef<int64_t> group) {
  Type elem = values.front().getType();
  Type bits = b.getIntegerType(elem.getIntOrFloatBitWidth());
  Value v = LLVM::PoisonOp::create(
      b, loc, VectorType::get({int64_t(group.size())}, bits));
  for (auto [i, slot] : llvm::enumerate(group)) {
    Value x = values[slot];
    if (isa<FloatType>(elem))
      x = LLVM::BitcastOp::create(b, loc, bits, x);
    v = LLVM::InsertElementOp::create(b, loc, v, x, i32Constant(b, loc, i));
  }
  unsigned words = group.size() * elem.getIntOrFloatBitWidth() / 32;
  return LLVM::BitcastOp::create(b, loc,
                                 VectorType::get({words}, b.getI32Type()), v);
}

Value mlir::tessel::loadShared(OpBuilder &b, Location loc, Type type,
                               Value ptr) {
  Type storage = storageType(type);
  Value value = LLVM::LoadOp::create(b, loc, storage, ptr);
  if (storage != type)
    value = arith::TruncIOp::create(b, loc, type, value);
  return value;
}

SmallVector<int64_t>
mlir::tessel::remapScratchShape(TileType src, TileType dst,
                                ArrayRef<int64_t> offsets) {
  SmallVector<int64_t> shape(src.getShape());
  int64_t elemBytes = getSharedBytes(src.getElementType());
  FailureOr<SharedAccess> write = sharedAccessOf(src);
  FailureOr<SharedAccess> read = sharedAccessOf(dst, offsets);
  if (shape.size() != 2 || elemBytes > 4 || failed(write) || failed(read))
    return shape;
  shape[1] = cheapestPitch(*write, *read, shape[1], shape[1], elemBytes,
                           /*step=*/std::max<int64_t>(1, 4 / elemBytes));
  return shape;
}

/// Bytes of the elements of a remap's scratch (`scratchShape` empty: the
/// tile's), before the discard slots.
static int64_t remapDataBytes(TileType src, ArrayRef<int64_t> scratchShape) {
  return ShapedType::getNumElements(scratchShape.empty() ? src.getShape()
                                                         : scratchShape) *
         getSharedBytes(src.getElementType());
}

int64_t mlir::tessel::getRemapScratchBytes(TileType src,
                                           ArrayRef<int64_t> scratchShape,
                                           int64_t numThreads) {
  return withDiscardSlots(remapDataBytes(src, scratchShape), numThreads);
}

Slots mlir::tessel::remapThroughShared(
    OpBuilder &b, Location loc, ValueRange src, TileType srcType,
    TileType dstType,
    function_ref<Value(OpBuilder &, ArrayRef<Value>)> srcIndexOf,
    ArrayRef<int64_t> scratchShape) {
  if (scratchShape.empty())
    scratchShape = srcType.getShape();
  Type elem = src.front().getType();
  TileLayout srcLayout = getLayout(srcType);
  TileLayout dstLayout = getLayout(dstType);
  int64_t dataBytes = remapDataBytes(srcType, scratchShape);
  emitBarrier(b, loc);
  ThreadLayout from(b, loc, srcLayout);
  for (auto [slot, value] : llvm::enumerate(src)) {
    Value index = linearIndex(b, loc, from.coords(slot), scratchShape);
    Value ptr = sharedElementPtr(b, loc, elem, 0, index);
    storeOwned(b, loc, value, ptr, from.isOwner(slot), dataBytes);
  }
  emitBarrier(b, loc);
  ThreadLayout to(b, loc, dstLayout);
  Slots result;
  for (int64_t slot = 0, e = dstLayout.getNumSlots(); slot < e; ++slot) {
    Value index = srcIndexOf(b, to.coords(slot));
    result.push_back(
        loadShared(b, loc, elem, sharedElementPtr(b, loc, elem, 0, index)));
  }
  return result;
}

Value SwizzledRows::storedRow(OpBuilder &b, Location loc, Value row) const {
  if (rowShifts.empty())
    return row;
  Value stored;
  for (auto [mask, shift] : rowShifts) {
    Value field = arith::AndIOp::create(b, loc, row, i32Constant(b, loc, mask));
    if (shift > 0)
      field = arith::ShLIOp::create(b, loc, field, i32Constant(b, loc, shift));
    else if (shift < 0)
      field =
          arith::ShRUIOp::create(b, loc, field, i32Constant(b, loc, -shift));
    stored = stored ? arith::OrIOp::create(b, loc, stored, field) : field;
  }
  return stored;
}

Value SwizzledRows::chunkIndex(OpBuilder &b, Location loc, Value row,
                               Value chunk) const {
  const SharedTileLayout &l = layout;
  row = storedRow(b, loc, row);
  Value blockStart;
  if (l.blocks > 1) { // blocks of 8 chunks: a power of two
    Value block = arith::ShRUIOp::create(b, loc, chunk, i32Constant(b, loc, 3));
    chunk = arith::AndIOp::create(b, loc, chunk, i32Constant(b, loc, 7));
    blockStart = arith::MulIOp::create(
        b, loc, block, i32Constant(b, loc, l.blockRows * l.blockElems));
  }
  if (l.maxPhase > 1) {
    Value phase = row;
    if (l.perPhase > 1)
      phase = arith::ShRUIOp::create(
          b, loc, phase, i32Constant(b, loc, llvm::Log2_64(l.perPhase)));
    phase = arith::AndIOp::create(b, loc, phase,
                                  i32Constant(b, loc, l.maxPhase - 1));
    chunk = arith::XOrIOp::create(b, loc, chunk, phase);
  }
  Value rowStart =
      arith::MulIOp::create(b, loc, row, i32Constant(b, loc, l.blockElems));
  Value offset =
      arith::MulIOp::create(b, loc, chunk, i32Constant(b, loc, l.chunkElems));
  Value index = arith::AddIOp::create(b, loc, rowStart, offset);
  return blockStart ? arith::AddIOp::create(b, loc, blockStart, index) : index;
}

Value SwizzledRows::index(OpBuilder &b, Location loc, Value row,
                          Value col) const {
  // Plain rows: the index is linear in the column, so that a window read at
  // a constant shift is the same address plus a constant.
  if (layout.blocks == 1 && layout.maxPhase == 1)
    return arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, storedRow(b, loc, row),
                              i32Constant(b, loc, layout.blockElems)),
        col);
  int64_t chunkElems = layout.chunkElems;
  Value shift = i32Constant(b, loc, llvm::Log2_64(chunkElems));
  Value chunk = arith::ShRUIOp::create(b, loc, col, shift);
  Value within =
      arith::AndIOp::create(b, loc, col, i32Constant(b, loc, chunkElems - 1));
  return arith::AddIOp::create(b, loc, chunkIndex(b, loc, row, chunk), within);
}

Value SwizzledRows::elementPtr(OpBuilder &b, Location loc, Value base,
                               Type elem, ArrayRef<Value> coords,
                               unsigned contiguous) const {
  Value at = index(b, loc, coords[1 - contiguous], coords[contiguous]);
  return LLVM::GEPOp::create(b, loc, base.getType(), elem, base,
                             ValueRange{at});
}

Value mlir::tessel::broadcastFromThreadZero(OpBuilder &b, Location loc,
                                            Value value) {
  Value ptr =
      sharedElementPtr(b, loc, value.getType(), 0, i32Constant(b, loc, 0));
  emitBarrier(b, loc);
  storeOwned(b, loc, value, ptr, isThreadZero(b, loc),
             getSharedBytes(value.getType()));
  emitBarrier(b, loc);
  return loadShared(b, loc, value.getType(), ptr);
}

Value mlir::tessel::shuffleXor(OpBuilder &b, Location loc, Value v,
                               unsigned laneMask) {
  Type i32 = b.getI32Type();
  Type type = v.getType();
  unsigned width = type.getIntOrFloatBitWidth();
  auto shfl = [&](Value x) {
    Value all = i32Constant(b, loc, -1);
    Value offset = i32Constant(b, loc, laneMask);
    Value clamp = i32Constant(b, loc, 0x1f);
    return NVVM::ShflOp::create(b, loc, i32, all, x, offset, clamp,
                                NVVM::ShflKind::bfly, UnitAttr())
        .getResult();
  };
  Type bits = b.getIntegerType(width);
  Value raw = type == bits ? v : LLVM::BitcastOp::create(b, loc, bits, v);
  Value out;
  if (width == 64) {
    Type i64 = b.getI64Type();
    Value lo = arith::TruncIOp::create(b, loc, i32, raw);
    Value hi = arith::TruncIOp::create(
        b, loc, i32,
        arith::ShRUIOp::create(
            b, loc, raw,
            arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32))));
    Value lo64 = arith::ExtUIOp::create(b, loc, i64, shfl(lo));
    Value hiLow = arith::ExtUIOp::create(b, loc, i64, shfl(hi));
    Value hi64 = arith::ShLIOp::create(
        b, loc, hiLow,
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32)));
    out = arith::OrIOp::create(b, loc, hi64, lo64);
  } else {
    Value wide = width == 32
                     ? raw
                     : arith::ExtUIOp::create(b, loc, i32, raw).getResult();
    out = shfl(wide);
    if (width != 32)
      out = arith::TruncIOp::create(b, loc, bits, out);
  }
  return type == bits ? out : LLVM::BitcastOp::create(b, loc, type, out);
}
