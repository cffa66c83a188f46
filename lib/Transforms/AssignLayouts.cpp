//===- AssignLayouts.cpp - A layout encoding for every tile ---------------===//
//
// Ops that compute lane by lane (elementwise ops, a load's pointers, mask and
// values, loop-carried and branch values) tie their tiles to one encoding; a
// union-find over the tile values gives these classes, each of one shape.
// The result class of a dot on tensor cores (f16/bf16 operands) takes the
// mma.sync accumulator layout and its A operand the matching operand
// layout; every other class then gets the canonical blocked layout of its
// shape, or, where it is a reduction result, an expand_dims or broadcast
// operand or a transpose, the layout that makes that op free of data
// movement. A class that no memory op or dot places and that takes a reduction
// result back to full shape (`acc += where(..., sum(x, axis=1)[:, None], 0)`)
// follows the reduced tile's layout instead of converting the row vector at
// every use; one whose tiles slice an accumulator where each thread holds the
// slice's elements already (the halves of a product of two operands side by
// side) keeps the accumulator's layout; one that nothing places and that is
// only reduced along its fastest dimension holds as much of it per thread as
// it can, since lanes along a reduced dimension cost shuffles. Where a value is
// asked for two layouts, a tessel.convert_layout provides the second (free
// where both hold the same elements in the same registers, as the probabilities
// of attention do between its two dots).
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/TileLayout.h"
#include "tessel/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELASSIGNLAYOUTS
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr unsigned kWarpSize = 32;
/// One vectorised global access per thread: ld.global.v4.b32 and friends.
constexpr unsigned kVectorBytes = 16;

static TileType tileOf(Value v) { return dyn_cast<TileType>(v.getType()); }

static unsigned elementBytes(Type type) {
  return std::max(1u, type.getIntOrFloatBitWidth() / 8);
}

/// The canonical layout of `shape`: per thread, 16 bytes of `elemBytes`
/// elements along the fastest dimension (fewer where that dimension is not
/// a multiple of them or the tile has fewer elements per thread); lanes
/// filled fastest dimension first, then warps; lanes or warps left over
/// repeat the slowest dimension. `vectorBytes` bounds the run per thread
/// (unbounded: as many elements as the thread holds).
static BlockedEncodingAttr
canonicalLayout(MLIRContext *ctx, ArrayRef<int64_t> shape, unsigned elemBytes,
                unsigned numWarps, unsigned vectorBytes = kVectorBytes) {
  unsigned rank = shape.size();
  int64_t fastest = shape.back();
  int64_t perThread =
      ShapedType::getNumElements(shape) / (kWarpSize * numWarps);
  int64_t vec = std::min<int64_t>(vectorBytes / elemBytes,
                                  fastest & -fastest); // largest 2^k | fastest
  vec = std::min<int64_t>(
      vec, std::max<int64_t>(1, llvm::bit_floor(uint64_t(perThread))));
  SmallVector<unsigned> sizePerThread(rank, 1), threads(rank, 1),
      warps(rank, 1), order;
  sizePerThread.back() = vec;
  for (unsigned d = rank; d-- > 0;)
    order.push_back(d);
  unsigned lanesLeft = kWarpSize, warpsLeft = numWarps;
  for (unsigned d : order) {
    uint64_t want = llvm::divideCeil(shape[d], sizePerThread[d]);
    threads[d] = std::min<uint64_t>(lanesLeft, llvm::PowerOf2Ceil(want));
    lanesLeft /= threads[d];
  }
  threads[order.back()] *= lanesLeft;
  for (unsigned d : order) {
    uint64_t want =
        llvm::divideCeil(shape[d], uint64_t(sizePerThread[d]) * threads[d]);
    warps[d] = std::min<uint64_t>(warpsLeft, llvm::PowerOf2Ceil(want));
    warpsLeft /= warps[d];
  }
  warps[order.back()] *= warpsLeft;
  return BlockedEncodingAttr::get(ctx, sizePerThread, threads, warps, order);
}

/// The mma.sync layout of a dot's M x N result: the warp grid whose busiest
/// warp computes the fewest 16 x 8 blocks and, of those, the one with the
/// most warps along M (each warp then owns whole rows, so row reductions stay
/// within a warp). For power-of-two shapes that is M split into 16-row blocks
/// as far as it goes; a halo of 69 rows on 4 warps is split 2 x 2 (9 blocks
/// for the busiest warp) rather than 4 x 1 (12: 128 rows of which 59 lie
/// outside the tile).
static MmaEncodingAttr mmaLayout(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                 unsigned numWarps) {
  uint64_t mBlocks = llvm::divideCeil(shape[0], 16);
  uint64_t nBlocks = llvm::divideCeil(shape[1], 8);
  uint64_t most = std::min<uint64_t>(numWarps, llvm::PowerOf2Ceil(mBlocks));
  unsigned best = 1;
  uint64_t bestBlocks = std::numeric_limits<uint64_t>::max();
  for (unsigned wm = 1; wm <= most; wm *= 2) {
    uint64_t blocks = llvm::divideCeil(mBlocks, wm) *
                      llvm::divideCeil(nBlocks, numWarps / wm);
    if (blocks <= bestBlocks) {
      best = wm;
      bestBlocks = blocks;
    }
  }
  return MmaEncodingAttr::get(ctx, {best, numWarps / best});
}

static bool usesTensorCores(DotOp dot) {
  Type elem = tileOf(dot.getA()).getElementType();
  return elem.isF16() || elem.isBF16();
}

/// `mma` in runs of four columns (Hopper's warpgroup MMA) where `dot` can
/// and should compute into it, else `mma`. Should: its result goes to
/// global memory (an atomic_add or store, through elementwise ops), where a
/// thread's run of four f32 is one 16-byte access and pairs would first
/// trade halves between lanes (the backwards' dQ). Can: a warpgroup dot
/// whose B is a register tile from outside its loop, which tessel-warpgroup-
/// mma then stages in shared memory itself, its columns in the order the
/// runs need (tessel-pipeline's copies of B keep theirs).
static MmaEncodingAttr withColumnRuns(DotOp dot, MmaEncodingAttr mma) {
  MLIRContext *ctx = dot.getContext();
  auto b = tileOf(dot.getB());
  auto loop = dot->getParentOfType<scf::ForOp>();
  if (!hasWarpGroupMma(dot) || !b || mma.getWarpsPerCTA()[0] % 4 != 0 ||
      (loop && !loop.isDefinedOutsideOfLoop(dot.getB())))
    return mma;
  Value v = dot.getResult();
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (isa<AtomicAddOp, StoreOp>(user) && user->getOperand(1) == v)
      break;
    if (!isa<BinaryOp, UnaryOp, CastOp>(user))
      return mma;
    v = user->getResult(0);
  }
  if (!v.hasOneUse())
    return mma;
  auto runs = MmaEncodingAttr::get(ctx, mma.getWarpsPerCTA(), 4);
  auto acc = tileOf(dot.getResult());
  auto a = tileOf(dot.getA());
  MemDescType staged = getWarpGroupDotOperandB(
      ctx, b.getShape(), b.getElementType(), /*contiguousDim=*/0, runs);
  if (!staged ||
      !whyNotWarpGroupDot(
           TileType::get(a.getShape(), a.getElementType(),
                         DotOperandEncodingAttr::get(ctx, 0, runs)),
           staged, TileType::get(acc.getShape(), acc.getElementType(), runs))
           .empty())
    return mma;
  return runs;
}

/// The layout of trans(x) for x in `src`: result dimension i is source
/// dimension perm[i], held exactly as before, so the transpose is a renaming.
static BlockedEncodingAttr permuteLayout(BlockedEncodingAttr src,
                                         ArrayRef<int32_t> perm) {
  SmallVector<unsigned> sizePerThread, threads, warps, order;
  SmallVector<unsigned> resultDimOf(perm.size());
  for (auto [i, d] : llvm::enumerate(perm)) {
    sizePerThread.push_back(src.getSizePerThread()[d]);
    threads.push_back(src.getThreadsPerWarp()[d]);
    warps.push_back(src.getWarpsPerCTA()[d]);
    resultDimOf[d] = i;
  }
  for (unsigned d : src.getOrder())
    order.push_back(resultDimOf[d]);
  return BlockedEncodingAttr::get(src.getContext(), sizePerThread, threads,
                                  warps, order);
}

/// Ops whose copies cost no data movement: renamings and the integer/i1
/// arithmetic of offsets, pointers and masks.
static bool isCheapToCopy(Operation *op) {
  if (isa<SplatOp, ArangeOp, ExpandDimsOp, BroadcastOp, AddPtrOp>(op))
    return true;
  if (!isa<BinaryOp, UnaryOp, CmpOp, SelectOp, CastOp>(op))
    return false;
  return llvm::all_of(op->getOperandTypes(), [](Type t) {
    return getElementTypeOrSelf(t).isSignlessInteger();
  });
}

/// Gives `use` a private copy of the cheap ops that compute it. A row or
/// column index is often expanded along both dimensions (`m[:, None]`,
/// `m[None, :]`) or broadcast to tiles of several shapes, and one offset
/// tile often addresses several arrays: with its own copy, each use takes
/// the layout that makes it free instead of a convert_layout, and the
/// memory ops sharing an offset do not share a layout.
static void rematerializeFor(OpOperand &use) {
  Operation *def = use.get().getDefiningOp();
  if (!def || !isCheapToCopy(def))
    return;
  if (!use.get().hasOneUse()) {
    OpBuilder b(use.getOwner());
    def = b.clone(*def);
    use.set(def->getResult(0));
  }
  for (OpOperand &operand : def->getOpOperands())
    if (isa<TileType>(operand.get().getType()))
      rematerializeFor(operand);
}

/// The expand_dims of `op`'s operand when that undoes a reduction along the
/// same axis (`sum(x, axis=1)[:, None]`): broadcast in the reduced tile's
/// layout, the row vector moves no data.
static ExpandDimsOp expandOfReduction(BroadcastOp op) {
  auto expand = op.getSrc().getDefiningOp<ExpandDimsOp>();
  if (!expand)
    return nullptr;
  auto reduce = expand.getSrc().getDefiningOp<ReduceOp>();
  return reduce && reduce.getAxis() == expand.getAxis() ? expand : nullptr;
}

/// Union-find over the tile values of one kernel, plus the relations between
/// classes that a layout choice must honour.
class KernelLayouts {
public:
  KernelLayouts(func::FuncOp func, unsigned numWarps)
      : func(func), numWarps(numWarps) {}

  LogicalResult run();

private:
  unsigned id(Value v) {
    auto [it, inserted] = ids.try_emplace(v, parent.size());
    if (inserted) {
      parent.push_back(parent.size());
      values.push_back(v);
    }
    return it->second;
  }
  unsigned find(unsigned x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  unsigned classOf(Value v) { return find(id(v)); }
  void join(ValueRange vs);
  /// Ties every tile operand and result of `op`.
  void joinAll(Operation *op) {
    SmallVector<Value> tiles(op->getOperands());
    llvm::append_range(tiles, op->getResults());
    join(tiles);
  }
  LogicalResult collect(Operation *op);
  /// One layout per shape, so that tiles of a shape agree (and their
  /// slices do) whatever their element type; shapes no memory op touches
  /// are laid out for f32.
  Attribute canonical(ArrayRef<int64_t> shape) {
    auto it = anchorBytes.find(SmallVector<int64_t>(shape));
    unsigned bytes = it == anchorBytes.end() ? 4 : it->second;
    return canonicalLayout(func.getContext(), shape, bytes, numWarps);
  }
  void chooseEncodings();
  bool propagate();
  void applyEncodings();
  void insertConversions();

  func::FuncOp func;
  unsigned numWarps;
  DenseMap<Value, unsigned> ids;
  SmallVector<unsigned> parent;
  SmallVector<Value> values;
  /// Narrowest element each tile shape is loaded or stored with.
  std::map<SmallVector<int64_t>, unsigned> anchorBytes;
  SmallVector<ReduceOp> reduces;
  SmallVector<ExpandDimsOp> expands;
  SmallVector<BroadcastOp> broadcasts;
  SmallVector<TransOp> transposes;
  SmallVector<ExtractSliceOp> slices;
  SmallVector<DotOp> dots;
  /// Tiles whose class a memory op places (pointers, masks, values).
  SmallVector<Value> memoryTiles;
  /// Class representative -> encoding.
  DenseMap<unsigned, Attribute> encoding;
};

void KernelLayouts::join(ValueRange vs) {
  std::optional<unsigned> first;
  for (Value v : vs) {
    if (!tileOf(v))
      continue;
    unsigned c = classOf(v);
    if (!first)
      first = c;
    else
      parent[c] = *first;
  }
}

LogicalResult KernelLayouts::collect(Operation *op) {
  for (Value v : op->getResults())
    if (tileOf(v))
      id(v);
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument arg : block.getArguments())
        if (tileOf(arg))
          id(arg);
  // Tiles of global accesses: their shape's layout vectorises the
  // narrowest element accessed.
  auto anchorElements = [&](TileType tile, Type elem) {
    auto [it, inserted] =
        anchorBytes.try_emplace(SmallVector<int64_t>(tile.getShape()), 0);
    unsigned bytes = elementBytes(elem);
    it->second = inserted ? bytes : std::min(it->second, bytes);
  };
  auto anchor = [&](Value ptr) {
    if (auto tile = tileOf(ptr))
      anchorElements(tile,
                     cast<PtrType>(tile.getElementType()).getPointeeType());
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<BinaryOp, UnaryOp, CmpOp, SelectOp, CastOp, AddPtrOp>(
          [&](Operation *op) {
            joinAll(op);
            return success();
          })
      .Case<LoadOp, StoreOp, AtomicAddOp>([&](Operation *op) {
        anchor(op->getOperand(0));
        joinAll(op);
        if (tileOf(op->getOperand(0)))
          memoryTiles.push_back(op->getOperand(0));
        return success();
      })
      // A block load (a TMA copy on its way to shared memory) is placed
      // like the loads of the same elements.
      .Case([&](LoadBlockOp load) {
        auto tile = tileOf(load.getResult());
        anchorElements(tile, tile.getElementType());
        memoryTiles.push_back(load.getResult());
        return success();
      })
      .Case([&](DotOp dot) {
        join({dot.getAcc(), dot.getResult()});
        dots.push_back(dot);
        return success();
      })
      .Case([&](scf::ForOp loop) {
        for (auto [init, arg, result, yielded] :
             llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs(),
                       loop.getResults(), loop.getYieldedValues()))
          join({init, arg, result, yielded});
        return success();
      })
      .Case([&](scf::IfOp branch) {
        for (auto [i, result] : llvm::enumerate(branch.getResults()))
          join({result, branch.thenYield().getOperand(i),
                branch.elseYield().getOperand(i)});
        return success();
      })
      .Case([&](ReduceOp op) {
        reduces.push_back(op);
        return success();
      })
      .Case([&](ExpandDimsOp op) {
        expands.push_back(op);
        return success();
      })
      .Case([&](BroadcastOp op) {
        broadcasts.push_back(op);
        return success();
      })
      .Case([&](TransOp op) {
        transposes.push_back(op);
        return success();
      })
      .Case([&](ExtractSliceOp op) {
        slices.push_back(op);
        return success();
      })
      .Case<SplatOp, ArangeOp, ReshapeOp, ConvertLayoutOp, scf::YieldOp,
            func::ReturnOp>([](Operation *) { return success(); })
      .Default([](Operation *op) -> LogicalResult {
        auto isTile = [](Type t) { return isa<TileType>(t); };
        if (llvm::any_of(op->getOperandTypes(), isTile) ||
            llvm::any_of(op->getResultTypes(), isTile) ||
            op->getNumRegions() != 0)
          return op->emitOpError()
                 << "is not supported by tessel-assign-layouts (run "
                    "tessel-expand-online and tessel-lower-stream-k first)";
        return success();
      });
}

/// Gives unassigned classes the layout a placed neighbour makes free; returns
/// whether anything changed.
bool KernelLayouts::propagate() {
  bool changed = false;
  auto assign = [&](Value v, Attribute enc) {
    auto [it, inserted] = encoding.try_emplace(classOf(v), enc);
    changed |= inserted;
  };
  auto encodingOf = [&](Value v) { return encoding.lookup(classOf(v)); };
  for (ReduceOp op : reduces)
    if (tileOf(op.getResult()))
      if (Attribute src = encodingOf(op.getSrc()))
        assign(op.getResult(),
               SliceEncodingAttr::get(func.getContext(), op.getAxis(), src));
  for (ExpandDimsOp op : expands)
    if (Attribute dst = encodingOf(op.getResult()))
      assign(op.getSrc(),
             SliceEncodingAttr::get(func.getContext(), op.getAxis(), dst));
  for (BroadcastOp op : broadcasts)
    if (Attribute dst = encodingOf(op.getResult()))
      assign(op.getSrc(), dst);
  for (TransOp op : transposes)
    if (auto src =
            dyn_cast_if_present<BlockedEncodingAttr>(encodingOf(op.getSrc())))
      assign(op.getResult(), permuteLayout(src, op.getOrder()));
  // Forward, for the classes chooseEncodings leaves to a reduction's layout.
  for (BroadcastOp op : broadcasts)
    if (ExpandDimsOp expand = expandOfReduction(op)) {
      if (auto reduced = dyn_cast_if_present<SliceEncodingAttr>(
              encodingOf(expand.getSrc()));
          reduced && reduced.getDim() == expand.getAxis())
        assign(expand.getResult(), reduced.getParent());
      if (Attribute src = encodingOf(op.getSrc()))
        assign(op.getResult(), src);
    }
  return changed;
}

void KernelLayouts::chooseEncodings() {
  // Classes that some op wants in a derived layout wait for propagation.
  DenseSet<unsigned> derived;
  for (ReduceOp op : reduces)
    if (tileOf(op.getResult()))
      derived.insert(classOf(op.getResult()));
  for (ExpandDimsOp op : expands)
    derived.insert(classOf(op.getSrc()));
  for (BroadcastOp op : broadcasts)
    derived.insert(classOf(op.getSrc()));
  for (TransOp op : transposes)
    derived.insert(classOf(op.getResult()));
  // Reduction results taken back to full shape into a class that nothing
  // else places.
  DenseSet<unsigned> placed;
  for (Value v : memoryTiles)
    placed.insert(classOf(v));
  for (DotOp dot : dots)
    placed.insert(classOf(dot.getResult()));
  for (BroadcastOp op : broadcasts)
    if (expandOfReduction(op) && !placed.contains(classOf(op.getResult())))
      derived.insert(classOf(op.getResult()));

  // A class whose dots all take runs of four columns gets them; the others
  // keep mma.sync's pairs.
  SmallVector<std::pair<DotOp, MmaEncodingAttr>> products;
  DenseMap<unsigned, bool> allRuns;
  for (DotOp dot : dots)
    if (usesTensorCores(dot)) {
      MmaEncodingAttr pairs = mmaLayout(
          func.getContext(), tileOf(dot.getResult()).getShape(), numWarps);
      MmaEncodingAttr chosen = withColumnRuns(dot, pairs);
      products.push_back({dot, chosen});
      auto [it, inserted] = allRuns.try_emplace(classOf(dot.getResult()), true);
      it->second &= chosen != pairs;
    }
  for (auto [dot, mma] : products) {
    unsigned c = classOf(dot.getResult());
    if (!allRuns.lookup(c))
      mma = MmaEncodingAttr::get(func.getContext(), mma.getWarpsPerCTA());
    encoding.try_emplace(c, mma);
  }
  // A slice of a product's accumulator that each thread holds already (say
  // the halves of a product of two operands side by side) keeps its layout,
  // unless memory or a product places its class.
  for (ExtractSliceOp slice : slices) {
    Attribute src = encoding.lookup(classOf(slice.getSrc()));
    unsigned c = classOf(slice.getResult());
    if (isa_and_present<MmaEncodingAttr>(src) && !placed.contains(c) &&
        succeeded(sliceSlots(slice, src)))
      encoding.try_emplace(c, src);
  }
  llvm::MapVector<unsigned, ArrayRef<int64_t>> shapes;
  for (Value v : values)
    shapes.try_emplace(classOf(v), tileOf(v).getShape());
  // A class that nothing places and that is reduced along its fastest
  // dimension only (MTA's dW: a row sum of a product of two staged windows
  // per tap) holds as much of that dimension in each thread as its elements
  // allow: fewer lanes along it, fewer shuffle steps per sum. (With the run
  // per thread unbounded, the element size does not matter.)
  DenseMap<unsigned, bool> rowReduced;
  for (ReduceOp op : reduces) {
    TileType src = tileOf(op.getSrc());
    auto it = rowReduced.try_emplace(classOf(op.getSrc()), true).first;
    it->second &= op.getAxis() + 1 == src.getRank() && src.getRank() > 1;
  }
  for (auto &[c, shape] : shapes)
    if (!derived.contains(c) && !placed.contains(c) && rowReduced.lookup(c))
      encoding.try_emplace(c, canonicalLayout(func.getContext(), shape,
                                              /*elemBytes=*/4, numWarps,
                                              /*vectorBytes=*/~0u));
  for (auto &[c, shape] : shapes)
    if (!derived.contains(c))
      encoding.try_emplace(c, canonical(shape));
  // Classes that only depend on each other (say a reduction of a transpose
  // that nothing anchors) fall back to their canonical layout, in program
  // order, until everything is placed.
  while (true) {
    while (propagate()) {
    }
    auto open = llvm::find_if(shapes, [&](const auto &entry) {
      return !encoding.count(entry.first);
    });
    if (open == shapes.end())
      return;
    encoding[open->first] = canonical(open->second);
  }
}

void KernelLayouts::applyEncodings() {
  for (Value v : values) {
    TileType t = tileOf(v);
    v.setType(TileType::get(t.getShape(), t.getElementType(),
                            encoding.lookup(classOf(v))));
  }
}

static TileType withEncoding(Value v, Attribute enc) {
  TileType t = tileOf(v);
  return TileType::get(t.getShape(), t.getElementType(), enc);
}

/// `op`'s result gets `want`; its users keep the class encoding through a
/// convert_layout.
static void convertResult(Operation *op, Attribute want) {
  Value result = op->getResult(0);
  TileType classType = tileOf(result);
  if (classType.getEncoding() == want)
    return;
  result.setType(withEncoding(result, want));
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  auto convert = ConvertLayoutOp::create(b, op->getLoc(), classType, result);
  result.replaceAllUsesExcept(convert.getResult(), convert);
}

/// `op`'s operand `i` gets `want` through a convert_layout.
static void convertOperand(Operation *op, unsigned i, Attribute want) {
  Value src = op->getOperand(i);
  if (tileOf(src).getEncoding() == want)
    return;
  OpBuilder b(op);
  op->setOperand(i, ConvertLayoutOp::create(b, op->getLoc(),
                                            withEncoding(src, want), src));
}

void KernelLayouts::insertConversions() {
  MLIRContext *ctx = func.getContext();
  for (DotOp dot : dots)
    if (auto mma =
            dyn_cast<MmaEncodingAttr>(tileOf(dot.getResult()).getEncoding()))
      convertOperand(dot, 0, DotOperandEncodingAttr::get(ctx, 0, mma));
  for (ReduceOp op : reduces)
    if (tileOf(op.getResult()))
      convertResult(op,
                    SliceEncodingAttr::get(ctx, op.getAxis(),
                                           tileOf(op.getSrc()).getEncoding()));
  for (ExpandDimsOp op : expands)
    convertOperand(
        op, 0,
        SliceEncodingAttr::get(ctx, op.getAxis(),
                               tileOf(op.getResult()).getEncoding()));
  for (BroadcastOp op : broadcasts)
    convertOperand(op, 0, tileOf(op.getResult()).getEncoding());
  for (TransOp op : transposes) {
    TileType src = tileOf(op.getSrc());
    auto blocked = dyn_cast<BlockedEncodingAttr>(src.getEncoding());
    if (!blocked) {
      blocked = canonicalLayout(ctx, src.getShape(),
                                elementBytes(src.getElementType()), numWarps);
      convertOperand(op, 0, blocked);
    }
    convertResult(op, permuteLayout(blocked, op.getOrder()));
  }
}

LogicalResult KernelLayouts::run() {
  bool hasEncoding = false;
  func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      if (auto tile = dyn_cast<TileType>(t))
        hasEncoding |= bool(tile.getEncoding());
  });
  if (hasEncoding)
    return func.emitOpError() << "already has tile layouts";
  SmallVector<OpOperand *> uses;
  func.walk([&](Operation *op) {
    if (isa<BroadcastOp, ExpandDimsOp>(op))
      uses.push_back(&op->getOpOperand(0));
    if (isa<LoadOp, StoreOp, AtomicAddOp>(op))
      for (OpOperand &operand : op->getOpOperands())
        if (isMaskLike(operand.get().getType()) ||
            isPtrLike(operand.get().getType()))
          uses.push_back(&operand);
    // A zero a product starts from (one splat for every tile of its shape,
    // after CSE) would tie that product's layout to every other user's.
    if (auto dot = dyn_cast<DotOp>(op))
      uses.push_back(&dot.getAccMutable());
  });
  for (OpOperand *use : uses)
    rematerializeFor(*use);
  WalkResult walk = func.getBody().walk([&](Operation *op) {
    return failed(collect(op)) ? WalkResult::interrupt()
                               : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  chooseEncodings();
  applyEncodings();
  insertConversions();
  return success();
}

struct AssignLayoutsPass
    : tessel::impl::TesselAssignLayoutsBase<AssignLayoutsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(TesselDialect::getKernelAttrName()))
        continue;
      unsigned numWarps = 4;
      if (auto attr = func->getAttrOfType<IntegerAttr>(
              TesselDialect::getNumWarpsAttrName()))
        numWarps = attr.getInt();
      if (failed(KernelLayouts(func, numWarps).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
