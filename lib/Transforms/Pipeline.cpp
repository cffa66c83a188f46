//===- Pipeline.cpp - Loads feeding dots through async copies -------------===//
//
// A loop
//   for iv in [lb, ub) step st:  t = load(p(iv), m(iv));  ... dot(a, t or
//   trans(t))
// becomes, with S stages (buffers buf[0..S)):
//   for s in [0, S - 1): async_copy(p(lb + s·st) -> buf[s], m & in range);
//   commit for iv:  async_wait(S - 2)          -- this iteration's tile has
//   landed
//            i = (iv - lb) / st
//            async_copy(p(iv + (S-1)·st) -> buf[(i + S - 1) % S], ...); commit
//            ... dot(a, buf[i % S] or its transpose)
//   async_wait(0)
// The buffer refilled in iteration i is the one iteration i - 1 read; the
// barrier of async_wait orders those reads before the refill.
//
// On targets with warpgroup MMA a dot whose product only goes round the loop
// (an accumulator) may run one iteration late (tessel-rotate-warpgroup-dots),
// still reading its buffer while iteration i + 1 refills: the loads feeding
// only such dots get S + 1 buffers, refilled in the same order, and their
// dots are marked `tessel.rotate` (one such dot per loop: each carries its A
// operand's registers into the next iteration).
//
// The pointers may come from loads of arrays the loop does not write (a
// paged KV cache's page numbers, read from its block table): those loads run
// an iteration before the copy they address, masked off past the loop's end,
// and their values go round the loop: issued with the copy, each copy would
// wait a trip to memory for its addresses first.
//
// In a loop pipelined so, a 2-D load of 16-bit elements that feeds anything
// else (a dot's A, a B whose shape the MMA steps do not tile, elementwise
// ops) is copied the same way and read back from its buffer where it was
// loaded, unless the buffers would take the kernel past the shared memory
// its target's CTAs may use (such copies only hide latency).
//
// A loop pipelined so also takes its row and column vectors (a 1-D load of
// 32-bit values, e.g. attention's per-row statistics, read only through
// expand_dims on one axis) into the same stages, as 1 x N (N x 1) tiles read
// back where they were loaded: loaded in the iteration, their latency would
// stall the dots' consumers. A vector block of a tensor map goes the same
// way, by the tensor memory accelerator.
//
// A block load of a tensor map (tessel-lower-tensor-descs kept it for the
// tensor memory accelerator) is copied the same way by tessel.tma_load, one
// thread issuing, completing on barrier `slot` of the buffers' mbarriers:
// iteration i waits for phase parity (i / slots) % 2 of barrier i % slots.
// In a loop nested in others (the backward's query blocks inside its loop
// over a group's heads) the barriers, made once before the outermost loop,
// go on counting phases: i counts from the iterations of earlier entries,
// a count the loops around carry.
// A CTA barrier at the top of each iteration orders the previous
// iteration's reads of the buffer before its refill. A block load that
// feeds something else than dots is read back from the buffer; one outside
// loops is copied and waited for where it is.
//
//===----------------------------------------------------------------------===//

#include "LoopSlice.h"
#include "tessel/Passes.h"

#include "Conversion/TesselToLLVM/TesselToLLVM.h"
#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELPIPELINE
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// A load the pass can move into shared memory, and how.
struct Candidate {
  /// A tessel.load (copied by cp.async) or tessel.load_block (by TMA).
  Operation *load;
  /// The pure ops of the loop body that compute its pointers and mask, or
  /// its block's coordinates, in an order that defines before use.
  SetVector<Operation *> slice;
  MemDescType bufferType; // one buffer (2-D)
  /// Its dots may run an iteration late: one buffer more.
  bool readLate = false;
  /// Only dots read it (from the buffer); otherwise its tile is read back
  /// from the buffer where it was loaded.
  bool feedsDots = true;
  /// A vector copied as the 2-D tile its expand_dims users make (on this
  /// axis); -1 for a tile copied as it is.
  int32_t vectorAxis = -1;
  /// The vector's layout in the copy.
  Attribute copyEncoding;
  unsigned slots(unsigned stages) const { return stages + (readLate ? 1 : 0); }
  bool tma() const { return isa<LoadBlockOp>(load); }
};

/// Whether a tensor-core dot can read `b` (K x N) from shared memory: the
/// MMA steps and the warps' columns tile it exactly. Not a dot in runs of
/// four columns: it stages B itself, its columns reordered.
static bool fitsMma(DotOp dot, ArrayRef<int64_t> b) {
  auto result = cast<TileType>(dot.getType());
  auto mma = dyn_cast_if_present<MmaEncodingAttr>(result.getEncoding());
  if (!mma || mma.getColumnRun() != 2)
    return false;
  return b[0] % 16 == 0 && b[1] % (8 * mma.getWarpsPerCTA()[1]) == 0;
}

/// Whether every use of the load is the B operand of a tensor-core dot
/// that fits, directly or through a transpose.
static bool onlyFeedsDots(Operation *load) {
  auto tile = cast<TileType>(load->getResult(0).getType());
  auto isB = [](OpOperand &use) {
    auto dot = dyn_cast<DotOp>(use.getOwner());
    return dot && use.getOperandNumber() == 1;
  };
  if (load->use_empty())
    return false;
  for (OpOperand &use : load->getUses()) {
    if (isB(use)) {
      if (!fitsMma(cast<DotOp>(use.getOwner()), tile.getShape()))
        return false;
      continue;
    }
    auto trans = dyn_cast<TransOp>(use.getOwner());
    if (!trans || trans->use_empty())
      return false;
    SmallVector<int64_t> shape{tile.getDimSize(1), tile.getDimSize(0)};
    for (OpOperand &tuse : trans->getUses())
      if (!isB(tuse) || !fitsMma(cast<DotOp>(tuse.getOwner()), shape))
        return false;
  }
  return true;
}

/// The dots that read `load` as B, directly or through a transpose.
static SmallVector<DotOp> consumerDots(Operation *load) {
  SmallVector<DotOp> dots;
  for (Operation *user : load->getUsers()) {
    if (auto dot = dyn_cast<DotOp>(user)) {
      dots.push_back(dot);
      continue;
    }
    for (Operation *tuser : user->getUsers())
      dots.push_back(cast<DotOp>(tuser));
  }
  return dots;
}

/// Whether tessel-rotate-warpgroup-dots may issue `dot` an iteration late:
/// a warpgroup dot of the loop's body whose product only goes round the
/// loop, with an A computed in the iteration (a dot with ready operands has
/// nothing to overlap).
static bool mayRunLate(DotOp dot, scf::ForOp loop) {
  auto a = cast<TileType>(dot.getA().getType());
  auto acc = cast<TileType>(dot.getAcc().getType());
  Operation *aDef = dot.getA().getDefiningOp();
  return hasWarpGroupMma(loop) && dot->getBlock() == loop.getBody() &&
         dot->hasOneUse() && isa<scf::YieldOp>(*dot->getUsers().begin()) &&
         aDef && aDef->getBlock() == loop.getBody() &&
         whyNotWarpGroupDot(a, MemDescType(), acc).empty();
}

static bool isZero(Value v) {
  auto splat = v.getDefiningOp<SplatOp>();
  if (!splat)
    return false;
  Attribute value;
  return matchPattern(splat.getSrc(), m_Constant(&value)) &&
         (matchPattern(value, m_Zero()) ||
          matchPattern(value, m_AnyZeroFloat()));
}

/// Whether tessel-rotate-warpgroup-dots may issue every dot reading `load`
/// an iteration late.
static bool dotsMayRunLate(Operation *load, scf::ForOp loop) {
  return llvm::all_of(consumerDots(load),
                      [&](DotOp dot) { return mayRunLate(dot, loop); });
}

/// `load` as a candidate whose copy may run iterations ahead: the loop
/// writes no array it reads, and its pointers and mask are computed from
/// the induction variable, invariants and loads of arrays the loop does not
/// write (the slice).
static std::optional<Candidate> copiedAhead(LoadOp load, scf::ForOp loop,
                                            ArrayRef<Value> writtenBases) {
  Value base = baseArgument(load.getPtr());
  if (!base || llvm::is_contained(writtenBases, base))
    return std::nullopt;
  Candidate c{load, {}, {}};
  if (!collectSlice(load.getPtr(), loop, c.slice, writtenBases) ||
      (load.getMask() &&
       !collectSlice(load.getMask(), loop, c.slice, writtenBases)))
    return std::nullopt;
  return c;
}

static std::optional<Candidate> analyse(LoadOp load, scf::ForOp loop,
                                        ArrayRef<Value> writtenBases) {
  auto tile = dyn_cast<TileType>(load.getType());
  if (!tile)
    return std::nullopt;
  Type elem = tile.getElementType();
  auto blocked = dyn_cast_if_present<BlockedEncodingAttr>(tile.getEncoding());
  if (!(elem.isF16() || elem.isBF16()) || tile.getRank() != 2 || !blocked ||
      load->use_empty() || (load.getOther() && !isZero(load.getOther())))
    return std::nullopt;
  std::optional<Candidate> found = copiedAhead(load, loop, writtenBases);
  if (!found)
    return std::nullopt;
  Candidate &c = *found;
  // Rows of whole 16-byte chunks along the loads' fastest dimension.
  SmallVector<unsigned> order(blocked.getOrder());
  if (tile.getDimSize(order[0]) % 8 != 0)
    return std::nullopt;
  c.bufferType =
      MemDescType::get(load.getContext(), tile.getShape(), elem, order);
  // Any other tile is read back from its buffer where it was loaded.
  c.feedsDots = onlyFeedsDots(load);
  c.readLate = c.feedsDots && dotsMayRunLate(load, loop);
  return found;
}

/// `v` (an i32 or index loop bound) as an i32.
static Value asI32(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isInteger(32))
    return v;
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
}

/// Makes `c` carry its vector `tile` through the stages as the 2-D tile its
/// expand_dims users on `axis` make, contiguous along the vector.
static void carryAsVector(Candidate &c, TileType tile, int32_t axis) {
  SmallVector<int64_t> shape{1, 1};
  shape[1 - axis] = tile.getDimSize(0);
  SmallVector<unsigned> order{1, 0};
  if (axis == 1)
    order = {0, 1};
  c.bufferType =
      MemDescType::get(tile.getContext(), shape, tile.getElementType(), order);
  c.feedsDots = false;
  c.vectorAxis = axis;
}

/// A row or column vector of 32-bit values that the loop's stages can carry:
/// read only through expand_dims on one axis, 16-byte rows.
static std::optional<Candidate> analyseVector(LoadOp load, scf::ForOp loop,
                                              ArrayRef<Value> writtenBases,
                                              unsigned numWarps) {
  auto tile = dyn_cast<TileType>(load.getType());
  if (!tile || tile.getRank() != 1 || !tile.getElementType().isF32() ||
      tile.getDimSize(0) % 4 != 0 ||
      (load.getOther() && !isZero(load.getOther())))
    return std::nullopt;
  std::optional<int32_t> axis = expandedAxis(load);
  if (!axis)
    return std::nullopt;
  std::optional<Candidate> found = copiedAhead(load, loop, writtenBases);
  if (!found)
    return std::nullopt;
  Candidate &c = *found;
  // The copy takes the vector in a layout of its own (a thread an element,
  // one copy each), its pointers computed again from the same ops: the
  // tile ops of the slice are elementwise, their other tiles splats and
  // ranges.
  for (Operation *op : c.slice) {
    if (llvm::none_of(op->getResultTypes(), llvm::IsaPred<TileType>))
      continue;
    if (!isa<SplatOp, ArangeOp, BinaryOp, CmpOp, CastOp, AddPtrOp>(op))
      return std::nullopt;
    for (Value operand : op->getOperands())
      if (isa<TileType>(operand.getType()) &&
          !c.slice.contains(operand.getDefiningOp()) &&
          !operand.getDefiningOp<SplatOp>() &&
          !operand.getDefiningOp<ArangeOp>())
        return std::nullopt;
  }
  carryAsVector(c, tile, *axis);
  SmallVector<unsigned> perThread{1, 1}, lanes{1, 1}, warps{1, 1};
  lanes[1 - *axis] = 32;
  warps[1 - *axis] = numWarps;
  MLIRContext *ctx = load.getContext();
  c.copyEncoding = SliceEncodingAttr::get(
      ctx, *axis,
      BlockedEncodingAttr::get(ctx, perThread, lanes, warps,
                               c.bufferType.getOrder()));
  return found;
}

/// A block load of a tensor map: tessel-lower-tensor-descs checked that its
/// array is not written and that its coordinates can be computed ahead.
static FailureOr<Candidate> analyse(LoadBlockOp load, scf::ForOp loop) {
  auto tile = cast<TileType>(load.getType());
  Candidate c{load, {}, {}};
  for (Value coord : load.getCoords())
    if (!collectSlice(coord, loop, c.slice))
      return load.emitOpError("its coordinates must be computed from the "
                              "loop's induction variable and invariants");
  // A vector (tessel-lower-tensor-descs kept only those read through
  // expand_dims on one axis).
  if (tile.getRank() == 1) {
    std::optional<int32_t> axis = expandedAxis(load);
    if (!axis)
      return load.emitOpError("a vector copied by the tensor memory "
                              "accelerator must be read through expand_dims "
                              "on one axis");
    carryAsVector(c, tile, *axis);
    return c;
  }
  c.bufferType = MemDescType::get(load.getContext(), tile.getShape(),
                                  tile.getElementType(), {1, 0});
  c.feedsDots = onlyFeedsDots(load);
  c.readLate = c.feedsDots && dotsMayRunLate(load, loop);
  return c;
}

/// Replaces the tile `load` yields by a read of it from `view`, where the
/// load was.
static void readBack(Operation *load, Value view) {
  OpBuilder b(load);
  Value tile =
      LocalLoadOp::create(b, load->getLoc(), load->getResult(0).getType(), view,
                          ArrayRef<int64_t>{0, 0});
  load->getResult(0).replaceAllUsesWith(tile);
}

/// Replaces the expand_dims users of vector `load` by reads of the 2-D tile
/// from `view`, where the load was.
static void readBackVector(Operation *load, Value view) {
  OpBuilder b(load);
  for (Operation *user : llvm::make_early_inc_range(load->getUsers())) {
    Value tile =
        LocalLoadOp::create(b, load->getLoc(), user->getResult(0).getType(),
                            view, ArrayRef<int64_t>{0, 0});
    user->getResult(0).replaceAllUsesWith(tile);
    user->erase();
  }
}

/// The 2-D form of `v` (a vector of candidate `c`'s pointers or mask) that
/// its copy takes.
static Value asCopied(OpBuilder &b, const Candidate &c, Value v) {
  if (c.vectorAxis < 0)
    return v;
  auto vector = cast<TileType>(v.getType());
  return ExpandDimsOp::create(
      b, v.getLoc(),
      TileType::get(c.bufferType.getShape(), vector.getElementType(),
                    cast<SliceEncodingAttr>(c.copyEncoding).getParent()),
      v, c.vectorAxis);
}

/// `type` in `encoding` if it is a tile.
static Type reencoded(Type type, Attribute encoding) {
  auto tile = dyn_cast<TileType>(type);
  if (!tile)
    return type;
  return TileType::get(tile.getShape(), tile.getElementType(), encoding);
}

/// `op` (a clone of a slice op run for an iteration ahead) with its loads
/// masked off past the loop's end (`inRange`): the arrays they read may end
/// with the loop's iterations.
static void aheadOf(Operation *op, Value inRange) {
  auto load = dyn_cast<LoadOp>(op);
  if (!load)
    return;
  OpBuilder b(load);
  Location loc = load.getLoc();
  Value mask = inRange;
  if (auto tile = dyn_cast<TileType>(load.getPtr().getType()))
    mask = SplatOp::create(b, loc, tile.withElementType(b.getI1Type()), mask);
  if (Value m = load.getMask())
    mask = isa<TileType>(m.getType())
               ? Value(BinaryOp::create(b, loc, BinaryKind::and_, m, mask))
               : Value(arith::AndIOp::create(b, loc, m, mask));
  load.getMaskMutable().assign(mask);
}

/// The ops of `slice` that `roots` depend on, in the slice's order; values
/// `known` already has stop the walk.
static SmallVector<Operation *> neededOps(const SetVector<Operation *> &slice,
                                          ValueRange roots,
                                          const IRMapping &known) {
  DenseSet<Operation *> needed;
  SmallVector<Value> work(roots);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || known.contains(v) || !slice.contains(def) ||
        !needed.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return llvm::filter_to_vector(
      slice, [&](Operation *op) { return needed.contains(op); });
}

/// The loads in the slices of `candidates` (in the loads' own layouts)
/// whose pointers and masks read no other load, each once.
static SmallVector<LoadOp> addressLoadsOf(ArrayRef<Candidate> candidates) {
  SetVector<Operation *> loads;
  for (const Candidate &c : candidates) {
    if (c.copyEncoding)
      continue;
    for (Operation *op : c.slice)
      if (isa<LoadOp>(op) &&
          llvm::none_of(neededOps(c.slice, op->getOperands(), IRMapping()),
                        llvm::IsaPred<LoadOp>))
        loads.insert(op);
  }
  return llvm::map_to_vector(loads,
                             [](Operation *op) { return cast<LoadOp>(op); });
}

/// The coordinates, buffer and barrier of a TMA copy: `dst[slot]` of
/// `buffer` on barrier `slot` of `barriers`.
static void copyBlock(OpBuilder &b, LoadBlockOp load, ValueRange coords,
                      MemDescType bufferType, Value buffer, Value barriers,
                      Value slot, Value issue) {
  Location loc = load.getLoc();
  Value dst = MemDescIndexOp::create(b, loc, bufferType, buffer, slot);
  TMALoadOp::create(b, loc, load.getDesc(), coords, dst, barriers, slot, issue);
}

/// The pipeline of one loop's candidates.
class LoopPipeliner {
public:
  LoopPipeliner(scf::ForOp loop, unsigned stages)
      : loop(loop), stages(stages), b(loop) {}

  void run(MutableArrayRef<Candidate> candidates);
  /// The loops around this one that run() replaced, by the old op.
  DenseMap<Operation *, scf::ForOp> replaced;

private:
  Value constant(int64_t v) {
    return arith::ConstantOp::create(
        b, loop.getLoc(),
        b.getIntegerAttr(loop.getInductionVar().getType(), v));
  }
  Value i32(Value v) { return asI32(b, loop.getLoc(), v); }
  /// `index` modulo each candidate's number of buffers.
  SmallVector<Value> slotsOf(ArrayRef<Candidate> candidates, Value index);
  /// Splat or range `tile` in `encoding`, before the loop.
  Value copyLayoutOf(Value tile, Attribute encoding) {
    Value &made = inCopyLayout[{tile, encoding}];
    if (!made) {
      OpBuilder before(loop);
      Operation *clone = before.clone(*tile.getDefiningOp());
      clone->getResult(0).setType(reencoded(tile.getType(), encoding));
      made = clone->getResult(0);
    }
    return made;
  }
  /// Issues the copies of the iteration at `iv` into buffers `slots` (TMA
  /// copies on their barriers `slots`); `addresses` are the values of the
  /// address loads for it.
  void copyIteration(MutableArrayRef<Candidate> candidates,
                     ArrayRef<Value> buffers, ArrayRef<Value> barriers,
                     Value iv, ArrayRef<Value> slots,
                     ArrayRef<Value> addresses);
  /// Issues the address loads of the iteration at `iv`; their values.
  SmallVector<Value> loadAddresses(MutableArrayRef<Candidate> candidates,
                                   Value iv);
  Value inRange(Value iv) {
    return arith::CmpIOp::create(b, loop.getLoc(), arith::CmpIPredicate::slt,
                                 iv, loop.getUpperBound());
  }

  scf::ForOp loop;
  unsigned stages;
  OpBuilder b;
  DenseMap<std::pair<Value, Attribute>, Value> inCopyLayout;
  /// The loads of the copies' slices (in the loads' own layouts) whose
  /// pointers and masks read no other load: page numbers from a block
  /// table, issued an iteration before the copies they address.
  SmallVector<LoadOp> addressLoads;
};

SmallVector<Value> LoopPipeliner::slotsOf(ArrayRef<Candidate> candidates,
                                          Value index) {
  SmallVector<Value> slots;
  DenseMap<unsigned, Value> bySlots;
  for (const Candidate &c : candidates) {
    Value &slot = bySlots[c.slots(stages)];
    if (!slot)
      slot = arith::RemSIOp::create(
          b, loop.getLoc(), index,
          arith::ConstantOp::create(b, loop.getLoc(),
                                    b.getI32IntegerAttr(c.slots(stages))));
    slots.push_back(slot);
  }
  return slots;
}

SmallVector<Value>
LoopPipeliner::loadAddresses(MutableArrayRef<Candidate> candidates, Value iv) {
  if (addressLoads.empty())
    return {};
  Value valid = inRange(iv);
  IRMapping map;
  map.map(loop.getInductionVar(), iv);
  SmallVector<Value> values;
  for (LoadOp load : addressLoads) {
    const Candidate &c = *llvm::find_if(
        candidates, [&](const Candidate &c) { return c.slice.contains(load); });
    for (Operation *op : neededOps(c.slice, load.getResult(), map))
      aheadOf(b.clone(*op, map), valid);
    values.push_back(map.lookup(load.getResult()));
  }
  return values;
}

void LoopPipeliner::copyIteration(MutableArrayRef<Candidate> candidates,
                                  ArrayRef<Value> buffers,
                                  ArrayRef<Value> barriers, Value iv,
                                  ArrayRef<Value> slots,
                                  ArrayRef<Value> addresses) {
  Location loc = loop.getLoc();
  Value inRange = this->inRange(iv);
  bool asyncCopies = false;
  // Slices in the loads' own layouts share their clones: a load in two
  // slices (one page number for the K and the V tile) is issued once.
  IRMapping shared;
  shared.map(loop.getInductionVar(), iv);
  for (auto [load, value] : llvm::zip(addressLoads, addresses))
    shared.map(load.getResult(), value);
  for (auto [c, buffer, bars, slot] :
       llvm::zip(candidates, buffers, barriers, slots)) {
    IRMapping own;
    own.map(loop.getInductionVar(), iv);
    IRMapping &map = c.copyEncoding ? own : shared;
    if (c.copyEncoding) {
      // The splats and ranges the slice reads, in the copy's layout, made
      // once before the loop.
      for (Operation *op : c.slice)
        for (Value operand : op->getOperands())
          if (isa<TileType>(operand.getType()) &&
              !c.slice.contains(operand.getDefiningOp()))
            map.map(operand, copyLayoutOf(operand, c.copyEncoding));
      for (Operation *op : c.slice) {
        Operation *clone = b.clone(*op, map);
        for (Value result : clone->getResults())
          result.setType(reencoded(result.getType(), c.copyEncoding));
        aheadOf(clone, inRange);
      }
    } else {
      for (Operation *op : neededOps(c.slice, c.load->getOperands(), map))
        aheadOf(b.clone(*op, map), inRange);
    }
    if (auto block = dyn_cast<LoadBlockOp>(c.load)) {
      SmallVector<Value> coords = llvm::map_to_vector(
          block.getCoords(), [&](Value v) { return map.lookupOrDefault(v); });
      copyBlock(b, block, coords, c.bufferType, buffer, bars, slot, inRange);
      continue;
    }
    auto load = cast<LoadOp>(c.load);
    Value ptr = asCopied(b, c, map.lookupOrDefault(load.getPtr()));
    auto ptrType = cast<TileType>(ptr.getType());
    Value mask = SplatOp::create(b, loc, ptrType.withElementType(b.getI1Type()),
                                 inRange);
    if (Value m = load.getMask())
      mask = BinaryOp::create(b, loc, BinaryKind::and_,
                              asCopied(b, c, map.lookupOrDefault(m)), mask);
    Value dst = MemDescIndexOp::create(b, loc, c.bufferType, buffer, slot);
    AsyncCopyOp::create(b, loc, ptr, dst, mask);
    asyncCopies = true;
  }
  if (asyncCopies)
    AsyncCommitOp::create(b, loc);
}

/// The scf.for loops around `loop`, innermost first (tessel-lower-tensor-
/// descs let a tensor-map copy sit in loops nested only in scf.for bodies).
static SmallVector<scf::ForOp> loopsAround(scf::ForOp loop) {
  SmallVector<scf::ForOp> around;
  for (Operation *p = loop->getParentOp(); auto f = dyn_cast<scf::ForOp>(p);
       p = p->getParentOp())
    around.push_back(f);
  return around;
}

/// The iterations `loop` ran in its earlier entries (i32), carried round the
/// loops `around` it (innermost first; replaced by loops that carry it) and
/// advanced by its trip count after it.
static Value earlierIterations(scf::ForOp loop,
                               MutableArrayRef<scf::ForOp> around,
                               DenseMap<Operation *, scf::ForOp> &replaced) {
  Location loc = loop.getLoc();
  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(around.back());
  Value count =
      arith::ConstantOp::create(rewriter, loc, rewriter.getI32IntegerAttr(0));
  for (scf::ForOp &f : llvm::reverse(around)) {
    rewriter.setInsertionPoint(f);
    Operation *old = f;
    f = cast<scf::ForOp>(*f.replaceWithAdditionalYields(
        rewriter, count, /*replaceInitOperandUsesInLoop=*/false,
        [](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
          return SmallVector<Value>{args.front()};
        }));
    replaced[old] = f;
    count = f.getRegionIterArgs().back();
  }
  // After the loop: the count and its trip count.
  rewriter.setInsertionPointAfter(loop);
  Value span = arith::SubIOp::create(
      rewriter, loc, asI32(rewriter, loc, loop.getUpperBound()),
      asI32(rewriter, loc, loop.getLowerBound()));
  Value trips = arith::MaxSIOp::create(
      rewriter, loc,
      arith::CeilDivSIOp::create(rewriter, loc, span,
                                 asI32(rewriter, loc, loop.getStep())),
      arith::ConstantOp::create(rewriter, loc, rewriter.getI32IntegerAttr(0)));
  Value next = arith::AddIOp::create(rewriter, loc, count, trips);
  for (scf::ForOp f : around) {
    Operation *yield = f.getBody()->getTerminator();
    yield->setOperand(yield->getNumOperands() - 1, next);
    next = f.getResults().back();
  }
  return count;
}

/// Moves the ops of `loop`'s block up to `last` that wait for a load issued
/// in that block, and that only the loop and what follows it use, to just
/// above the loop, below the prologue built after `last`: the prologue's
/// copies then travel while they wait. (LICM leaves a query block's
/// conversion to a dot operand right above its key loop, where it would hold
/// the first keys' copies back by a trip to memory.)
static void sinkBelowPrologue(scf::ForOp loop, Operation *last) {
  if (!last)
    return;
  Block *block = loop->getBlock();
  auto upToLast =
      llvm::make_range(block->begin(), std::next(last->getIterator()));
  DenseSet<Operation *> waiting;
  for (Operation &op : upToLast)
    if (llvm::any_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && def->getBlock() == block &&
                 (isa<LoadOp>(def) || waiting.contains(def));
        }))
      waiting.insert(&op);
  SetVector<Operation *> sunk;
  for (Operation &op : llvm::reverse(upToLast)) {
    if (!waiting.contains(&op) || op.getNumRegions() ||
        !isMemoryEffectFree(&op))
      continue;
    if (llvm::all_of(op.getUsers(), [&](Operation *user) {
          Operation *at = block->findAncestorOpInBlock(*user);
          return at && (at == loop.getOperation() ||
                        loop->isBeforeInBlock(at) || sunk.contains(at));
        }))
      sunk.insert(&op);
  }
  for (Operation *op : llvm::reverse(sunk))
    op->moveBefore(loop);
}

void LoopPipeliner::run(MutableArrayRef<Candidate> candidates) {
  Location loc = loop.getLoc();
  Value lb = loop.getLowerBound(), step = loop.getStep();
  // Barriers of a loop inside others go on counting across its entries.
  SmallVector<scf::ForOp> around = loopsAround(loop);
  Value earlier;
  if (!around.empty() &&
      llvm::any_of(candidates, [](const Candidate &c) { return c.tma(); }))
    earlier = earlierIterations(loop, around, replaced);
  if (earlier)
    b.setInsertionPoint(loop); // its block moved into the new loop around it
  Operation *beforePrologue = loop->getPrevNode();
  OpBuilder once(around.empty() ? loop.getOperation()
                                : around.back().getOperation());
  SmallVector<Value> buffers, barriers;
  // Whether a warpgroup dot may read what cp.async copied (else the waits
  // need no proxy fence, which would also wait for the loop's atomics).
  bool asyncCopies = false, dotsReadCopies = false;
  for (Candidate &c : candidates) {
    SmallVector<int64_t> shape{int64_t(c.slots(stages))};
    llvm::append_range(shape, c.bufferType.getShape());
    MemDescType type = c.bufferType.withShape(shape, c.bufferType.getOrder());
    buffers.push_back(LocalAllocOp::create(b, loc, type));
    barriers.push_back(
        c.tma() ? Value(MBarrierAllocOp::create(
                      earlier ? once : b, loc,
                      MBarriersType::get(loop.getContext(), c.slots(stages))))
                : Value());
    asyncCopies |= !c.tma();
    dotsReadCopies |= !c.tma() && c.feedsDots;
  }
  // Prologue: the first stages - 1 iterations, after a CTA barrier: other
  // warps may still read what the buffers' memory held for another buffer
  // sharing it (an earlier loop's; in a loop around, also a later loop's in
  // the previous entry), as a warpgroup dot reads until its own warpgroup's
  // wait. (The slots it refills in these buffers were last read two
  // iterations back, which the loop's own barriers order.) Barriers made
  // just above (tessel.mbarrier_alloc) end with one already.
  bool freshBarriers =
      !earlier &&
      llvm::all_of(candidates, [](const Candidate &c) { return c.tma(); });
  if (!freshBarriers)
    BarrierOp::create(b, loc);
  addressLoads = addressLoadsOf(candidates);
  // The address loads of the first `stages` iterations, then the copies of
  // the first stages - 1; the last iteration's addresses go into the loop.
  SmallVector<SmallVector<Value>> addresses;
  SmallVector<Value> ivs;
  unsigned prologue = addressLoads.empty() ? stages - 1 : stages;
  for (unsigned s = 0; s < prologue; ++s) {
    Value offset = arith::MulIOp::create(b, loc, step, constant(s));
    ivs.push_back(arith::AddIOp::create(b, loc, lb, offset));
    addresses.push_back(loadAddresses(candidates, ivs.back()));
  }
  for (unsigned s = 0; s + 1 < stages; ++s) {
    Value first = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(s));
    SmallVector<Value> slots(candidates.size(), first);
    if (earlier)
      slots =
          slotsOf(candidates, arith::AddIOp::create(b, loc, earlier, first));
    copyIteration(candidates, buffers, barriers, ivs[s], slots, addresses[s]);
  }
  if (!addressLoads.empty()) {
    IRRewriter rewriter(b);
    rewriter.setInsertionPoint(loop);
    loop = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
        rewriter, addresses.back(), /*replaceInitOperandUsesInLoop=*/false,
        [](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
          return SmallVector<Value>(args.begin(), args.end());
        }));
  }

  // Each iteration: wait for its own tile, request the one stages - 1 ahead
  // (after a CTA barrier: every thread is done with the buffer refilled).
  b.setInsertionPointToStart(loop.getBody());
  if (asyncCopies)
    AsyncWaitOp::create(b, loc, stages - 2, !dotsReadCopies);
  else
    BarrierOp::create(b, loc);
  Value iv = loop.getInductionVar();
  Value index = arith::DivSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, iv, lb), step);
  Value index32 = i32(index);
  if (earlier)
    index32 = arith::AddIOp::create(b, loc, index32, earlier);
  SmallVector<Value> slots = slotsOf(candidates, index32);
  Value ahead = arith::AddIOp::create(
      b, loc, index32,
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(stages - 1)));
  SmallVector<Value> refills = slotsOf(candidates, ahead);
  SmallVector<Value> views;
  for (auto [c, buffer, slot] : llvm::zip(candidates, buffers, slots))
    views.push_back(MemDescIndexOp::create(b, loc, c.bufferType, buffer, slot));
  Value aheadIv = arith::AddIOp::create(
      b, loc, iv, arith::MulIOp::create(b, loc, step, constant(stages - 1)));
  // The addresses of iteration aheadIv came round the loop; those of the
  // next one go round it.
  auto carried = loop.getRegionIterArgs().take_back(addressLoads.size());
  copyIteration(candidates, buffers, barriers, aheadIv, refills,
                SmallVector<Value>(carried));
  if (!addressLoads.empty()) {
    Value next = arith::AddIOp::create(b, loc, aheadIv, step);
    SmallVector<Value> values = loadAddresses(candidates, next);
    Operation *yield = loop.getBody()->getTerminator();
    unsigned first = yield->getNumOperands() - values.size();
    for (auto [i, v] : llvm::enumerate(values))
      yield->setOperand(first + i, v);
  }
  // Use k of a barrier completes its phase k.
  for (auto [c, bars, slot] : llvm::zip(candidates, barriers, slots)) {
    if (!c.tma())
      continue;
    Value use = arith::DivSIOp::create(
        b, loc, index32,
        arith::ConstantOp::create(b, loc,
                                  b.getI32IntegerAttr(c.slots(stages))));
    Value parity = arith::AndIOp::create(
        b, loc, use, arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1)));
    MBarrierWaitOp::create(b, loc, bars, slot, parity);
  }

  // The dots read the buffers; the loads and their address arithmetic go.
  for (auto [c, view] : llvm::zip(candidates, views)) {
    if (c.vectorAxis >= 0)
      readBackVector(c.load, view);
    else if (!c.feedsDots)
      readBack(c.load, view);
    if (c.readLate)
      for (DotOp dot : consumerDots(c.load))
        dot->setAttr(TesselDialect::getRotateAttrName(), b.getUnitAttr());
    for (OpOperand &use : llvm::make_early_inc_range(c.load->getUses())) {
      if (isa<DotOp>(use.getOwner())) {
        use.set(view);
        continue;
      }
      auto trans = cast<TransOp>(use.getOwner());
      OpBuilder tb(trans);
      auto desc = cast<MemDescType>(view.getType());
      ArrayRef<int64_t> s = desc.getShape();
      MemDescType transposed = desc.withShape(
          {s[1], s[0]}, {desc.getOrder()[1], desc.getOrder()[0]});
      Value t = MemDescTransOp::create(tb, trans.getLoc(), transposed, view);
      for (OpOperand &tuse : llvm::make_early_inc_range(trans->getUses()))
        tuse.set(t);
      trans.erase();
    }
    c.load->erase();
    for (Operation *op : llvm::reverse(c.slice))
      if (op->use_empty())
        op->erase();
  }

  // Copies past the loop's end (zeros) land before anything after it (TMA
  // copies past the end are not issued).
  b.setInsertionPointAfter(loop);
  if (asyncCopies)
    AsyncWaitOp::create(b, loc, 0, !dotsReadCopies);
  sinkBelowPrologue(loop, beforePrologue);
}

/// The kernel of `loop`; before tessel-warp-specialize its launch warps are
/// its num_warps.
static func::FuncOp kernelOf(scf::ForOp loop) {
  return loop->getParentOfType<func::FuncOp>();
}

/// Whether `kernel` keeps within the shared memory its target's CTAs may
/// use (getKernelSharedLimit) once a loop takes buffers for `candidates`.
/// The copies that only hide latency (tiles read back) are left out of a
/// loop where it would not.
static bool fitsSharedMemory(func::FuncOp kernel,
                             ArrayRef<Candidate> candidates, unsigned stages) {
  int64_t bytes = getKernelSharedBytes(kernel);
  for (const Candidate &c : candidates)
    bytes += c.slots(stages) * getMemDescBytes(c.bufferType);
  return bytes <= getKernelSharedLimit(kernel);
}

struct PipelinePass : tessel::impl::TesselPipelineBase<PipelinePass> {
  using TesselPipelineBase::TesselPipelineBase;

  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (unsigned i = 0; i < loops.size(); ++i) {
      scf::ForOp loop = loops[i];
      // A kernel's num_stages overrides the pass's.
      unsigned stages = numStages;
      if (auto attr = kernelOf(loop)->getAttrOfType<IntegerAttr>(
              TesselDialect::getNumStagesAttrName()))
        stages = attr.getInt();
      // The arrays the loop writes (an unknown one blocks every cp.async
      // copy; tessel-lower-tensor-descs kept TMA copies only of arrays the
      // kernel does not write).
      SmallVector<Value> written;
      bool unknownWrite = false;
      loop.getBody()->walk([&](Operation *op) {
        if (isa<StoreOp, AtomicAddOp>(op)) {
          Value base = baseArgument(op->getOperand(0));
          unknownWrite |= !base;
          written.push_back(base);
        } else if (isa<FlagSignalOp, FlagWaitOp>(op)) {
          unknownWrite = true;
        }
      });
      SmallVector<Candidate> candidates, readBackTiles;
      if (stages >= 2 && !unknownWrite)
        for (auto load : loop.getBody()->getOps<LoadOp>())
          if (std::optional<Candidate> c = analyse(load, loop, written))
            (c->feedsDots ? candidates : readBackTiles)
                .push_back(std::move(*c));
      for (auto load : loop.getBody()->getOps<LoadBlockOp>()) {
        FailureOr<Candidate> c = analyse(load, loop);
        if (failed(c))
          return signalPassFailure();
        candidates.push_back(std::move(*c));
      }
      // Tiles read back and vectors ride along in a loop pipelined for its
      // dots (by cp.async or by the tensor memory accelerator): elsewhere
      // (a persistent loop around the key loops) a copy ahead would hold its
      // buffers over the whole inner loop for little latency to hide.
      if (!candidates.empty() && stages >= 2 && !unknownWrite) {
        for (auto load : loop.getBody()->getOps<LoadOp>())
          if (std::optional<Candidate> c = analyseVector(
                  load, loop, written, getLaunchWarps(kernelOf(loop))))
            candidates.push_back(std::move(*c));
        SmallVector<Candidate> all(candidates);
        llvm::append_range(all, readBackTiles);
        if (fitsSharedMemory(kernelOf(loop), all, stages))
          candidates = std::move(all);
      }
      // One late dot per loop: each carries its A operand into the next
      // iteration, and two (the backward's dK and dV) leave ptxas too few
      // registers to keep the products in flight.
      SetVector<Operation *> late;
      for (Candidate &c : candidates)
        if (c.readLate)
          for (DotOp dot : consumerDots(c.load))
            late.insert(dot);
      if (late.size() > 1)
        for (Candidate &c : candidates)
          c.readLate = false;
      // Without stages (num_stages=1) a TMA copy is issued and waited for
      // in its own iteration.
      if (candidates.empty())
        continue;
      LoopPipeliner pipeliner(loop, std::max(stages, 1u));
      pipeliner.run(candidates);
      // Loops around it now carry its count (inner loops come first).
      for (scf::ForOp &later : loops)
        if (scf::ForOp now = pipeliner.replaced.lookup(later))
          later = now;
    }
    // Block loads outside loops: copied once, where they are.
    getOperation().walk([&](LoadBlockOp load) {
      OpBuilder b(load);
      Location loc = load.getLoc();
      auto tile = cast<TileType>(load.getType());
      auto buffer = LocalAllocOp::create(
          b, loc,
          MemDescType::get(&getContext(),
                           {1, tile.getDimSize(0), tile.getDimSize(1)},
                           tile.getElementType(), {1, 0}));
      Value barriers =
          MBarrierAllocOp::create(b, loc, MBarriersType::get(&getContext(), 1));
      Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
      auto view = MemDescType::get(&getContext(), tile.getShape(),
                                   tile.getElementType(), {1, 0});
      copyBlock(b, load, load.getCoords(), view, buffer, barriers, zero,
                Value());
      MBarrierWaitOp::create(b, loc, barriers, zero, zero);
      readBack(load, MemDescIndexOp::create(b, loc, view, buffer, zero));
      load->erase();
    });
  }
};

} // namespace
