//===- MemoryToLLVM.cpp - Global loads, stores, atomics and flags ---------===//
//
// Accesses go under their mask (predicated ld/st.global): a masked-off load
// yields `other` without touching memory. Writes come only from the owner of
// each element (a tile's replicated and wrapped copies stay silent; a scalar
// is written by thread 0), so an atomic adds each element once.
//
// Loads and stores are vectorised: a thread's run of slots along one
// dimension becomes one access of up to 16 bytes (ld.global.v4.b32) where
// the AxisInfo analysis shows the pointers consecutive and aligned over the
// run and the mask (and `other`) equal over it. So are f32 atomic adds whose
// old values nothing reads, on sm_90 and later (red.global.add.v4.f32). A
// warpgroup dot's product, two columns per thread, is stored or reduced four
// elements at a time through the next lane (LanePair), so a quad of lanes
// writes whole 32-byte sectors.
//
//===----------------------------------------------------------------------===//

#include "Analysis/AxisInfo.h"
#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

Value zeroOf(OpBuilder &b, Location loc, Type type) {
  return LLVM::ZeroOp::create(b, loc, type);
}

/// The per-slot write predicates of an access through `ptr`: the owner
/// predicate of each slot of a tile, thread 0 for a scalar.
SmallVector<Value> writerPredicates(OpBuilder &b, Location loc, Value ptr,
                                    size_t numSlots) {
  auto tile = dyn_cast<TileType>(ptr.getType());
  if (!tile)
    return {isThreadZero(b, loc)};
  TileLayout layout = getLayout(tile);
  ThreadLayout thread(b, loc, layout);
  SmallVector<Value> preds;
  for (size_t slot = 0; slot < numSlots; ++slot)
    preds.push_back(thread.isOwner(slot));
  return preds;
}

/// Slot i of an optional mask (it has the pointers' layout).
Value maskAt(ValueRange mask, size_t i) {
  return mask.empty() ? Value() : mask[i];
}

/// How many elements from the start of an aligned chunk along `dim` one
/// access through the tile of pointers `ptr` may cover: what the pointers'
/// contiguity and alignment and the constancy of `uniform` (mask, other)
/// allow.
int64_t accessLimit(const ModuleAxisInfo &info, Value ptr,
                    ArrayRef<Value> uniform, unsigned dim) {
  auto tile = cast<TileType>(ptr.getType());
  Type pointee = cast<PtrType>(tile.getElementType()).getPointeeType();
  unsigned bits = pointee.getIntOrFloatBitWidth();
  AxisInfo axis = info.get(ptr);
  int64_t limit = std::min(
      axis.getContiguity(dim),
      std::max<int64_t>(1, axis.getDivisibility(dim) * 8 / std::max(bits, 8u)));
  for (Value v : uniform)
    if (v && isa<TileType>(v.getType()))
      limit = std::min(limit, info.get(v).getConstancy(dim));
  return limit;
}

/// Elements of one access through the tile of pointers `ptr` along `dim`
/// (by default the thread's longest run): the thread's run, cut to
/// accessLimit, to 16 bytes and to a divisor of the tile's size.
int64_t accessWidth(const ModuleAxisInfo &info, Value ptr,
                    ArrayRef<Value> uniform, std::optional<unsigned> dim = {}) {
  auto tile = dyn_cast<TileType>(ptr.getType());
  if (!tile)
    return 1;
  Type pointee = cast<PtrType>(tile.getElementType()).getPointeeType();
  unsigned d = dim ? *dim : runDimension(getLayout(tile));
  return runWidth(tile, d, pointee.getIntOrFloatBitWidth(),
                  accessLimit(info, ptr, uniform, d));
}

/// Whether `v` is computed elementwise from the product of a warpgroup dot,
/// also through the results of loops and branches (attention's output is
/// the loop's accumulator).
bool fromWarpGroupDot(Value v) {
  SmallVector<Value> work = {v};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    Operation *def = x.getDefiningOp();
    if (isa_and_nonnull<WarpGroupDotWaitOp>(def))
      return true;
    if (isa_and_nonnull<BinaryOp, UnaryOp, CastOp, SelectOp>(def))
      llvm::append_range(work, def->getOperands());
    unsigned i = isa<OpResult>(x) ? cast<OpResult>(x).getResultNumber() : 0;
    if (auto loop = dyn_cast_if_present<scf::ForOp>(def))
      work.push_back(loop.getYieldedValues()[i]);
    if (auto branch = dyn_cast_if_present<scf::IfOp>(def))
      for (Region &region : branch->getRegions())
        if (!region.empty())
          work.push_back(region.front().getTerminator()->getOperand(i));
  }
  return false;
}

/// Whether a thread's runs of two elements along `dim` can be paired with
/// those of the lane holding the next two (LanePair): runs of two,
/// lanes along `dim`, an even number of runs, and every slot inside the tile
/// (so a lane and its partner own their elements alike).
bool canPairLanes(const TileLayout &layout, unsigned dim) {
  const DimLayout &run = layout.getDim(dim);
  if (run.perThread != 2 || run.lanes < 2 || layout.getNumSlots() % 4 != 0)
    return false;
  for (unsigned d = 0; d < layout.getRank(); ++d)
    for (int64_t j = 0, e = layout.getDim(d).numLocal(); j < e; ++j)
      if (!layout.getDim(d).alwaysInside(j))
        return false;
  return true;
}

/// The width of an access of `value` through `ptr` of `width` elements at
/// a time: four where runs of two of a warpgroup dot's product can be paired
/// with the next lane's (LanePair) within 16 bytes. Only there: its operands
/// never passed the shared-memory pipe that the shuffles take, where an
/// mma.sync kernel's ldmatrix and window loads queue (MTA's backward, bound
/// by that pipe, ran 4 % slower with paired reductions; the warpgroup
/// backwards 5-7 % faster).
int64_t pairedWidth(const ModuleAxisInfo &info, Value ptr, Value value,
                    ArrayRef<Value> uniform, int64_t width) {
  auto tile = dyn_cast<TileType>(ptr.getType());
  if (!tile || width != 2)
    return width;
  TileLayout layout = getLayout(tile);
  unsigned dim = runDimension(layout);
  unsigned bits = cast<PtrType>(tile.getElementType())
                      .getPointeeType()
                      .getIntOrFloatBitWidth();
  if (4 * bits > 128 || accessLimit(info, ptr, uniform, dim) < 4 ||
      !canPairLanes(layout, dim) || !fromWarpGroupDot(value))
    return width;
  return 4;
}

/// The elements of vector<words x i32> `v` as `count` values of `elem`.
SmallVector<Value> unpackWords(OpBuilder &b, Location loc, Value v, Type elem,
                               int64_t count) {
  Type bits = b.getIntegerType(elem.getIntOrFloatBitWidth());
  Value asBits =
      LLVM::BitcastOp::create(b, loc, VectorType::get({count}, bits), v);
  SmallVector<Value> out;
  for (int64_t i = 0; i < count; ++i) {
    Value x =
        LLVM::ExtractElementOp::create(b, loc, asBits, i32Constant(b, loc, i));
    if (isa<FloatType>(elem))
      x = LLVM::BitcastOp::create(b, loc, elem, x);
    out.push_back(x);
  }
  return out;
}

/// A thread and the lane holding the next two elements of its rows
/// (lane ^ laneStride), exchanging runs of two so that each issues one access
/// of four elements where it issued two of two: of each two runs A, B of a
/// thread, the lane with the even index along them takes its A followed by
/// its partner's A, the odd one its partner's B followed by its own B, so
/// each lane sends one run (getAccessWidths checked that the four elements
/// are consecutive and aligned, and the mask equal over them). Runs travel as
/// the 32-bit words packWords makes of them.
class LanePair {
public:
  LanePair(OpBuilder &b, Location loc, unsigned laneStride)
      : b(b), loc(loc), laneStride(laneStride) {
    Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
    Value bit = i32Constant(b, loc, laneStride);
    Value masked = arith::AndIOp::create(b, loc, tid, bit);
    Value zero = i32Constant(b, loc, 0);
    even =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, masked, zero);
  }

  /// `x` on the even lane, `y` on the odd one.
  Value pick(Value x, Value y) {
    return arith::SelectOp::create(b, loc, even, x, y).getResult();
  }

  /// The four-element run this lane accesses, as the words of runs `first`
  /// and `second` (one or two each: f32, or halves packed in pairs).
  SmallVector<Value> exchange(ValueRange first, ValueRange second) {
    SmallVector<Value> received;
    for (auto [x, y] : llvm::zip(first, second))
      received.push_back(shuffleXor(b, loc, pick(y, x), laneStride));
    SmallVector<Value> run;
    for (auto [x, r] : llvm::zip(first, received))
      run.push_back(pick(x, r));
    for (auto [r, y] : llvm::zip(received, second))
      run.push_back(pick(r, y));
    return run;
  }

  /// Where that run starts: `first` on the even lane, two elements of
  /// `elem` before `second` on the odd one.
  Value address(Value first, Value second, Type elem) {
    Value before = LLVM::GEPOp::create(b, loc, second.getType(), elem, second,
                                       ArrayRef<LLVM::GEPArg>{-2});
    return pick(first, before);
  }

  /// Its predicate (every slot is inside the tile, canPairLanes: both runs
  /// have one or neither has).
  Value predicate(Value first, Value second) {
    return first ? pick(first, second) : Value();
  }

private:
  OpBuilder &b;
  Location loc;
  unsigned laneStride;
  Value even;
};

/// `run` as its 32-bit words: f32 values stay, halves are packed in pairs.
SmallVector<Value> runWords(OpBuilder &b, Location loc, ValueRange values,
                            ArrayRef<int64_t> run) {
  if (values.front().getType().getIntOrFloatBitWidth() == 32)
    return llvm::map_to_vector(run, [&](int64_t s) { return values[s]; });
  Value packed = packWords(b, loc, values, run);
  return llvm::map_to_vector(
      llvm::seq<int64_t>(0,
                         cast<VectorType>(packed.getType()).getNumElements()),
      [&](int64_t i) { return laneOf(b, loc, packed, i); });
}

/// Pairs of runs `runs[2i]`, `runs[2i + 1]` accessed four elements at a time
/// through a LanePair: `access(scalars, address, predicate)` for each.
void forPairedRuns(OpBuilder &b, Location loc, ValueRange values,
                   ValueRange ptrs, ArrayRef<SmallVector<int64_t>> runs,
                   unsigned laneStride, function_ref<Value(int64_t)> predOf,
                   function_ref<void(ArrayRef<Value>, Value, Value)> access) {
  LanePair pair(b, loc, laneStride);
  Type elem = values.front().getType();
  for (size_t i = 0; i + 1 < runs.size(); i += 2) {
    ArrayRef<int64_t> first = runs[i], second = runs[i + 1];
    SmallVector<Value> a = runWords(b, loc, values, first);
    SmallVector<Value> c = runWords(b, loc, values, second);
    SmallVector<Value> run = pair.exchange(a, c);
    Value at = pair.address(ptrs[first[0]], ptrs[second[0]], elem);
    Value predA = predOf(first[0]);
    Value predB = predOf(second[0]);
    access(run, at, pair.predicate(predA, predB));
  }
}

struct LoadLowering : VectorisedPattern<LoadOp> {
  using VectorisedPattern::VectorisedPattern;
  LogicalResult
  matchAndRewrite(LoadOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elem = getTypeConverter()->convertType(
        getElementTypeOrSelf(op.getResult().getType()));
    ValueRange ptrs = adaptor.getPtr(), mask = adaptor.getMask(),
               other = adaptor.getOther();
    int64_t width = widthOf(op);
    if (width == 1) {
      Slots result;
      for (auto [i, ptr] : llvm::enumerate(ptrs)) {
        Value pred = maskAt(mask, i), fallback;
        if (pred)
          fallback = other.empty() ? zeroOf(rewriter, loc, elem) : other[i];
        result.push_back(loadMasked(rewriter, loc, elem, ptr, pred, fallback));
      }
      rewriter.replaceOpWithMultiple(op, {result});
      return success();
    }
    Slots result(ptrs.size());
    unsigned words = width * elem.getIntOrFloatBitWidth() / 32;
    Value zeros =
        zeroOf(rewriter, loc, VectorType::get({words}, rewriter.getI32Type()));
    auto tile = cast<TileType>(op.getPtr().getType());
    for (ArrayRef<int64_t> group :
         accessGroups(tile, runDimension(getLayout(tile)), width)) {
      Value pred = maskAt(mask, group.front()), fallback;
      if (pred)
        fallback =
            other.empty() ? zeros : packWords(rewriter, loc, other, group);
      Value loaded =
          loadWords(rewriter, loc, ptrs[group.front()], words, pred, fallback);
      for (auto [slot, value] :
           llvm::zip(group, unpackWords(rewriter, loc, loaded, elem, width)))
        result[slot] = value;
    }
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

struct StoreLowering : VectorisedPattern<StoreOp> {
  using VectorisedPattern::VectorisedPattern;
  LogicalResult
  matchAndRewrite(StoreOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ValueRange ptrs = adaptor.getPtr(), values = adaptor.getValue();
    SmallVector<Value> writers =
        writerPredicates(rewriter, loc, op.getPtr(), ptrs.size());
    int64_t width = widthOf(op);
    auto predicate = [&](size_t i) {
      return andPredicates(rewriter, loc, writers[i],
                           maskAt(adaptor.getMask(), i));
    };
    if (width == 1) {
      for (auto [i, ptr] : llvm::enumerate(ptrs))
        storeMasked(rewriter, loc, values[i], ptr, predicate(i));
    } else {
      // A run is owned as a whole (its copies are whole runs too).
      auto tile = cast<TileType>(op.getPtr().getType());
      TileLayout layout = getLayout(tile);
      unsigned dim = runDimension(layout);
      if (width > layout.getDim(dim).perThread) {
        forPairedRuns(rewriter, loc, values, ptrs, accessGroups(tile, dim, 2),
                      layout.getDim(dim).laneStride, predicate,
                      [&](ArrayRef<Value> run, Value at, Value pred) {
                        SmallVector<int64_t> all =
                            llvm::to_vector(llvm::seq<int64_t>(0, run.size()));
                        storeWords(rewriter, loc,
                                   packWords(rewriter, loc, run, all), at,
                                   pred);
                      });
      } else {
        for (ArrayRef<int64_t> group : accessGroups(tile, dim, width))
          storeWords(rewriter, loc, packWords(rewriter, loc, values, group),
                     ptrs[group.front()], predicate(group.front()));
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// `red.global.add.v{2,4}.f32` of `group`'s values at the first one's
/// address, where `pred` holds if there is one (sm_90: an L2 reduction of 8
/// or 16 bytes).
void reduceWords(OpBuilder &b, Location loc, ValueRange values,
                 ArrayRef<int64_t> group, Value ptr, Value pred) {
  SmallVector<Value> operands = {ptr};
  std::string regs, constraints = "l";
  if (pred) {
    operands.push_back(pred);
    constraints += ",b";
  }
  for (auto [i, slot] : llvm::enumerate(group)) {
    operands.push_back(values[slot]);
    regs += llvm::formatv("{0}${1}", i ? ", " : "", operands.size() - 1).str();
    constraints += ",f";
  }
  std::string text =
      llvm::formatv("{0}red.global.add.v{1}.f32 [ $0 + 0 ], {{{2}};",
                    pred ? "@$1 " : "", group.size(), regs);
  inlinePtx(b, loc, Type(), operands, text, constraints);
}

struct AtomicAddLowering : VectorisedPattern<AtomicAddOp> {
  using VectorisedPattern::VectorisedPattern;
  LogicalResult
  matchAndRewrite(AtomicAddOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ValueRange ptrs = adaptor.getPtr(), values = adaptor.getValue();
    Type elem = values.front().getType();
    auto kind =
        isa<FloatType>(elem) ? LLVM::AtomicBinOp::fadd : LLVM::AtomicBinOp::add;
    SmallVector<Value> writers =
        writerPredicates(rewriter, loc, op.getPtr(), ptrs.size());
    if (int64_t width = widthOf(op); width > 1) {
      // Runs of f32 whose old values nothing reads (getAccessWidths).
      auto tile = cast<TileType>(op.getPtr().getType());
      TileLayout layout = getLayout(tile);
      unsigned dim = runDimension(layout);
      auto predOf = [&](int64_t slot) {
        return andPredicates(rewriter, loc, writers[slot],
                             maskAt(adaptor.getMask(), slot));
      };
      if (width > layout.getDim(dim).perThread) {
        forPairedRuns(rewriter, loc, values, ptrs, accessGroups(tile, dim, 2),
                      layout.getDim(dim).laneStride, predOf,
                      [&](ArrayRef<Value> run, Value at, Value pred) {
                        reduceWords(rewriter, loc, run, {0, 1, 2, 3}, at, pred);
                      });
      } else {
        for (ArrayRef<int64_t> group : accessGroups(tile, dim, width))
          reduceWords(rewriter, loc, values, group, ptrs[group.front()],
                      predOf(group.front()));
      }
      rewriter.eraseOp(op);
      return success();
    }
    Slots old;
    for (auto [i, ptr] : llvm::enumerate(ptrs)) {
      Value pred = andPredicates(rewriter, loc, writers[i],
                                 maskAt(adaptor.getMask(), i));
      old.push_back(emitIfElse(
          rewriter, loc, pred,
          [&, i = i, ptr = ptr](OpBuilder &b) {
            return LLVM::AtomicRMWOp::create(b, loc, kind, ptr, values[i],
                                             LLVM::AtomicOrdering::monotonic)
                .getResult();
          },
          zeroOf(rewriter, loc, elem)));
    }
    // Only the owner saw the old value; copies get it from the owner.
    if (!op.getResult().use_empty()) {
      if (auto tile = dyn_cast<TileType>(op.getResult().getType()))
        old = remapThroughShared(rewriter, loc, old, tile, tile,
                                 [&](OpBuilder &b, ArrayRef<Value> coords) {
                                   return linearIndex(b, loc, coords,
                                                      tile.getShape());
                                 });
      else
        old = {broadcastFromThreadZero(rewriter, loc, old.front())};
    }
    rewriter.replaceOpWithMultiple(op, {old});
    return success();
  }
};

/// The CTA's writes happen before the barrier; thread 0's release add at
/// GPU scope then publishes them (release is cumulative over what the
/// barrier ordered before it), as CUTLASS's semaphores do.
struct FlagSignalLowering : OpConversionPattern<FlagSignalOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FlagSignalOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    emitBarrier(rewriter, loc);
    emitIf(rewriter, loc, isThreadZero(rewriter, loc), [&](OpBuilder &b) {
      // NVPTX drops the ordering of a release atomicrmw: fence explicitly.
      LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release, "device");
      LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add,
                                adaptor.getFlag(), i32Constant(b, loc, 1),
                                LLVM::AtomicOrdering::monotonic,
                                b.getStringAttr("device"));
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// Thread 0 spins on an acquire load at GPU scope until the flag has counted
/// every arrival, and clears it; the barrier then extends what it acquired
/// to the whole CTA.
struct FlagWaitLowering : OpConversionPattern<FlagWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FlagWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value flag = adaptor.getFlag();
    Value count =
        adaptor.getCount() ? adaptor.getCount() : i32Constant(rewriter, loc, 1);
    emitIf(rewriter, loc, isThreadZero(rewriter, loc), [&](OpBuilder &b) {
      scf::WhileOp::create(
          b, loc, TypeRange{}, ValueRange{},
          [&](OpBuilder &b, Location loc, ValueRange) {
            Value v = LLVM::LoadOp::create(
                b, loc, b.getI32Type(), flag, /*alignment=*/4,
                /*isVolatile=*/false, /*isNonTemporal=*/false,
                /*isInvariant=*/false, /*isInvariantGroup=*/false,
                LLVM::AtomicOrdering::acquire, b.getStringAttr("device"));
            Value pending = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::slt, v, count);
            scf::ConditionOp::create(b, loc, pending, ValueRange{});
          },
          [&](OpBuilder &b, Location loc, ValueRange) {
            scf::YieldOp::create(b, loc);
          });
      LLVM::StoreOp::create(b, loc, i32Constant(b, loc, 0), flag);
    });
    emitBarrier(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

unsigned mlir::tessel::runDimension(const TileLayout &layout) {
  unsigned best = 0;
  for (unsigned d = 1; d < layout.getRank(); ++d)
    if (layout.getDim(d).perThread >= layout.getDim(best).perThread)
      best = d;
  return best;
}

SmallVector<SmallVector<int64_t>>
mlir::tessel::accessGroups(TileType tile, unsigned dim, int64_t width) {
  TileLayout layout = getLayout(tile);
  SmallVector<SmallVector<int64_t>> groups;
  for (int64_t slot = 0, e = layout.getNumSlots(); slot < e; ++slot) {
    SmallVector<int64_t> local = layout.getLocalIndices(slot);
    if (local[dim] % width != 0)
      continue;
    SmallVector<int64_t> group;
    for (int64_t i = 0; i < width; ++i, ++local[dim])
      group.push_back(layout.getSlot(local));
    groups.push_back(group);
  }
  return groups;
}

int64_t mlir::tessel::runWidth(TileType tile, unsigned dim, unsigned bits,
                               int64_t limit) {
  if (bits < 8) // i1: bytes in memory, not worth packing
    return 1;
  int64_t perThread = getLayout(tile).getDim(dim).perThread;
  int64_t width = std::min({perThread, int64_t(128 / bits), limit});
  while (width > 1 &&
         (tile.getDimSize(dim) % width != 0 || perThread % width != 0))
    width /= 2;
  return width * bits % 32 == 0 ? width : 1;
}

AccessWidths mlir::tessel::getAccessWidths(ModuleOp module) {
  ModuleAxisInfo info(module);
  AccessWidths widths;
  module.walk([&](Operation *op) {
    int64_t width = 1;
    if (auto load = dyn_cast<LoadOp>(op))
      width =
          accessWidth(info, load.getPtr(), {load.getMask(), load.getOther()});
    else if (auto store = dyn_cast<StoreOp>(op))
      width =
          pairedWidth(info, store.getPtr(), store.getValue(), {store.getMask()},
                      accessWidth(info, store.getPtr(), {store.getMask()}));
    else if (auto copy = dyn_cast<AsyncCopyOp>(op))
      width = accessWidth(
          info, copy.getPtr(), {copy.getMask()},
          cast<MemDescType>(copy.getDst().getType()).getContiguousDim());
    else if (auto add = dyn_cast<AtomicAddOp>(op);
             add && add.getResult().use_empty() && getTarget(op) != "sm_80" &&
             getElementTypeOrSelf(add.getValue().getType()).isF32()) {
      // sm_90's vector reductions: f32 only, and no old values.
      width = pairedWidth(info, add.getPtr(), add.getValue(), {add.getMask()},
                          accessWidth(info, add.getPtr(), {add.getMask()}));
    }
    if (width > 1)
      widths[op] = width;
  });
  return widths;
}

void mlir::tessel::populateMemoryPatterns(LLVMTypeConverter &converter,
                                          RewritePatternSet &patterns,
                                          const AccessWidths &widths) {
  patterns.add<LoadLowering, StoreLowering, AtomicAddLowering>(converter,
                                                               widths);
  patterns.add<FlagSignalLowering, FlagWaitLowering>(converter,
                                                     patterns.getContext());
}
