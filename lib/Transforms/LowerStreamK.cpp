//===- LowerStreamK.cpp - stream_k to a persistent grid or split-K --------===//
//
// The lowered form is plain tessel/scf/arith IR (plus flag_signal/flag_wait
// for stream-K), so the interpreter checks it exactly as the GPU will run it.
//
// Two strategies, chosen by the pass option:
//
// persistent (stream-K): one kernel; the linearised units × iters are split
// evenly over the grid (at most one program per iteration; over whole
// units' worth of programs where that lengthens no share), and a unit's
// host program waits for its peers' partial states and merges them.
// Balances any units × iters. The peers count their arrivals on one flag of the
// host, which waits for them all at once (one memory round trip, not one per
// peer; words that mark themselves written, polled by the host, measured
// slower: docs/gpu/2026-11-29-marked-handover.md), and both lowerings load the
// next partial states while one merges (foldSlots): a fold is a chain of
// dependent merges, and with one trip to memory per merge its latency, not the
// merges, sets the time of short decodes.
//
// cluster (an op with `cluster` C, under the persistent strategy): the peers
// of a unit are the C CTAs of one thread-block cluster, and the partial
// states go to its first CTA through that CTA's shared memory, ordered by
// the cluster barrier, instead of through a global workspace and flags (a
// device-scope fence, an atomic and a spin each): docs/gpu/2026-11-29-
// fixup-cluster-probe-and-mta-one-product.md measured 1-1.7 us less per
// decode. Cluster q of Q = G / C takes units q, q + Q, ...; CTA r computes
// slice r of n = min(C, iters) equal slices of each (r >= n: none), so a
// unit needs no co-resident grid, only its cluster, which the hardware
// schedules at once. Per unit (A and B: barrier phases):
//     state = body(slice r)
//     wait A       (A_0: every CTA has started, so its shared memory can be
//                   written; A_j: CTA 0 has read unit j-1's states)
//     0 < r < n:   store state to slot r - 1 of CTA 0's buffer
//     arrive B     (release: the stores)
//     wait B       (CTA 0, and peers with a unit to come)
//     r == 0:      fold slots 0 .. n - 2 into state; epilogue
//     more units:  arrive A_{j+1}
// after one relaxed arrival at A_0 at the start. A peer on its last unit
// leaves after arriving at B (an exited CTA counts as arrived). The buffer
// holds C - 1 states: the op layer picks C so that it fits beside the
// body's pipeline.
//
// split-k (FlashDecoding): the kernel K plus a combine kernel K__combine,
// launched in turn on the same grid G with the same arguments and
// workspace (K's `tessel.then` links them). Each unit's iterations are cut
// into S = max(1, min(⌊G / units⌋, iters)) equal chunks; work item
// w = unit·S + chunk is computed by program w of K (a grid-stride loop over
// w, which runs at most once when S > 1 since units·S ≤ G) and its partial
// state stored to workspace slot w; the combine kernel folds a unit's S
// partials in chunk order with the merge region and runs the epilogue.
// Why this shape:
//  - S is computed in-kernel from num_programs, so the runtime's persistent
//    grid sizing (occupancy × SMs) chooses the split and both kernels agree
//    on it without a new launch rule; the workspace keeps its per-program
//    layout (slot w < G) and the bundle format its persistent kind.
//  - S is capped at iters so that no chunk is empty (no wasted programs,
//    no merges of empty states); with S = 1 the split kernel runs whole
//    units and their epilogues itself and the combine kernel has no work,
//    so units > G costs no workspace traffic.
//  - No flags or spin-waits: the launch boundary orders the two kernels, so
//    neither needs co-resident programs.
// Chunks of a unit are exactly the ranges the persistent lowering gives
// programs u·S .. u·S + S − 1 of a grid of units·S, merged in the same
// order, so both lowerings compute the same bits for that grid.
//
//===----------------------------------------------------------------------===//

#include "tessel/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELLOWERSTREAMK
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Integer arithmetic on scalars, one op per statement.
struct Scalars {
  OpBuilder &b;
  Location loc;

  Value i64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivSIOp::create(b, loc, x, y); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivSIOp::create(b, loc, x, y);
  }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value le(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value wide(Value v) {
    return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
  }
  Value narrow(Value v) {
    return arith::TruncIOp::create(b, loc, b.getI32Type(), v);
  }
};

/// Inlines the single block of `region` with `args` for its arguments and
/// returns the values it yields.
static SmallVector<Value> inlineRegion(OpBuilder &b, Region &region,
                                       ValueRange args) {
  IRMapping map;
  Block &block = region.front();
  map.map(block.getArguments(), args);
  for (Operation &op : block.without_terminator())
    b.clone(op, map);
  SmallVector<Value> results;
  for (Value v : block.getTerminator()->getOperands())
    results.push_back(map.lookupOrDefault(v));
  return results;
}

/// Number of elements of a state value (1 for a scalar).
static int64_t numElements(Type type) {
  if (auto tile = dyn_cast<TileType>(type))
    return tile.getNumElements();
  return 1;
}

/// Elements of a slot of a partial state value of type `type`: the whole
/// value, or with max_rows its first max_rows rows (the verifier gives every
/// state value rows then).
static int64_t slotElements(StreamKOp op, Type type) {
  int64_t elements = numElements(type);
  std::optional<uint64_t> bound = op.getMaxRows();
  auto tile = dyn_cast<TileType>(type);
  if (!bound || !tile)
    return elements;
  return elements / tile.getDimSize(0) * int64_t(*bound);
}

/// Pointers to slot `slot` (of `slotSize` elements) of a workspace, shaped
/// like `type` (row-major: a slot of fewer elements holds its first rows).
static Value slotPointers(OpBuilder &b, Location loc, Value base, Value slot,
                          int64_t slotSize, Type type) {
  Scalars s{b, loc};
  int64_t size = numElements(type);
  Value start = s.mul(slot, s.i64(slotSize));
  Value ptr = AddPtrOp::create(b, loc, base.getType(), base, start);
  auto tile = dyn_cast<TileType>(type);
  if (!tile)
    return ptr;
  Type i32 = b.getI32Type();
  Value offsets =
      ArangeOp::create(b, loc, TileType::get({size}, i32),
                       b.getI32IntegerAttr(0), b.getI32IntegerAttr(size));
  if (tile.getRank() != 1)
    offsets = ReshapeOp::create(b, loc, tile.withElementType(i32), offsets);
  Value ptrs =
      SplatOp::create(b, loc, tile.withElementType(base.getType()), ptr);
  return AddPtrOp::create(b, loc, ptrs.getType(), ptrs, offsets);
}

/// Partial states in flight while one merges (see foldSlots): as many as
/// kFoldRegisters registers per thread hold (40 KB for 128 threads), at
/// most kMaxFoldDepth. (With 144, eight of the decode's 16 x 128 states,
/// ptxas spilled in the persistent kernel; four is the depth measured in
/// docs/gpu/2026-11-28-decode-fold-pipeline.md.)
static constexpr int64_t kFoldRegisters = 80, kMaxFoldDepth = 8;

static int64_t foldDepth(StreamKOp op) {
  auto func = op->getParentOfType<func::FuncOp>();
  int64_t threads = 32 * 4;
  if (auto warps = func->getAttrOfType<IntegerAttr>(
          TesselDialect::getNumWarpsAttrName()))
    threads = 32 * warps.getInt();
  int64_t perThread = 0;
  for (Type t : op.getStateTypes())
    perThread += std::max<int64_t>(1, numElements(t) / threads);
  return std::clamp<int64_t>(kFoldRegisters / perThread, 1, kMaxFoldDepth);
}

/// Where partial states go: a workspace per state value, and where each
/// value is live (with the op's `rows`, a mask of its first rows; null: all
/// of it). The masks are made once, where the op was.
struct PartialStates {
  SmallVector<Type> types;
  SmallVector<int64_t> slotSizes;
  SmallVector<Value> workspaces, live;

  PartialStates(OpBuilder &b, Location loc, StreamKOp op,
                ArrayRef<Value> workspaces)
      : types(op.getStateTypes()), workspaces(workspaces) {
    Value column = liveColumn(b, loc, op);
    for (Type type : types) {
      slotSizes.push_back(slotElements(op, type));
      live.push_back(liveRows(b, loc, column, type));
    }
  }

  /// The same states in other workspaces (one per state value).
  PartialStates in(ArrayRef<Value> others) const {
    PartialStates moved(*this);
    moved.workspaces.assign(others.begin(), others.end());
    return moved;
  }

  /// Stores `state` to slot `slot` (its live rows).
  void store(OpBuilder &b, Location loc, Value slot, ValueRange state) const {
    for (auto [value, ws, size, mask] :
         llvm::zip(state, workspaces, slotSizes, live)) {
      Value ptrs = slotPointers(b, loc, ws, slot, size, value.getType());
      StoreOp::create(b, loc, ptrs, value, mask);
    }
  }

  /// The partial state in slot `slot`, read only if `valid` (an i1; zeros
  /// otherwise, and in the rows that are not live).
  SmallVector<Value> load(OpBuilder &b, Location loc, Value slot,
                          Value valid) const {
    SmallVector<Value> part;
    for (auto [type, ws, size, rows] :
         llvm::zip(types, workspaces, slotSizes, live)) {
      Value mask = valid;
      if (auto tile = dyn_cast<TileType>(type)) {
        mask =
            SplatOp::create(b, loc, tile.withElementType(b.getI1Type()), valid);
        if (rows)
          mask = BinaryOp::create(b, loc, BinaryKind::and_, mask, rows);
      }
      Value ptrs = slotPointers(b, loc, ws, slot, size, type);
      part.push_back(LoadOp::create(b, loc, type, ptrs, mask, Value()));
    }
    return part;
  }

private:
  /// Which of the state's rows are live, as a column; null without `rows`.
  /// (With rows, the verifier makes every state value a tile or an online
  /// state of the same rows, and checkStreamK has seen the online states
  /// expanded to tiles.) Rows past max_rows, which `rows` promised not to
  /// reach, have no room in a slot: they are not moved.
  Value liveColumn(OpBuilder &b, Location loc, StreamKOp op) const {
    Value rows = op.getRows();
    if (!rows)
      return Value();
    if (std::optional<uint64_t> bound = op.getMaxRows()) {
      Value most = arith::ConstantOp::create(
          b, loc, b.getI32IntegerAttr(int32_t(*bound)));
      rows = arith::MinSIOp::create(b, loc, rows, most);
    }
    int64_t n = cast<TileType>(types.front()).getDimSize(0);
    auto column = TileType::get({n}, b.getI32Type());
    Value index = ArangeOp::create(b, loc, column, b.getI32IntegerAttr(0),
                                   b.getI32IntegerAttr(n));
    Value bound = SplatOp::create(b, loc, column, rows);
    return CmpOp::create(b, loc, column.withElementType(b.getI1Type()),
                         CmpPredicate::lt, index, bound);
  }

  /// The live rows of a value of type `type`: `column` broadcast to its
  /// shape; null for a scalar or without a column.
  static Value liveRows(OpBuilder &b, Location loc, Value column, Type type) {
    auto tile = dyn_cast<TileType>(type);
    if (!column || !tile)
      return Value();
    SmallVector<int64_t> shape = {tile.getDimSize(0)};
    Value live = column;
    for (int64_t d = 1; d < tile.getRank(); ++d) {
      shape.push_back(1);
      live = ExpandDimsOp::create(b, loc, TileType::get(shape, b.getI1Type()),
                                  live, b.getI32IntegerAttr(d));
    }
    if (tile.getRank() == 1)
      return live;
    return BroadcastOp::create(b, loc, tile.withElementType(b.getI1Type()),
                               live);
  }
};

/// Merges into `state`, in order, the partial states of workspace slots
/// slotOf(j), j in [lo, hi); with no `state` (then lo < hi) the fold starts
/// from slot lo's. A fold is a chain of merges, each waiting for its slot's
/// loads, so it is software-pipelined: `depth` slots are in flight while one
/// merges. A step of the loop merges `depth` slots, each from its buffer,
/// and refills that buffer with the slot `depth` ahead; the buffers go round
/// the loop in place (a rotation would copy registers that loads have yet to
/// fill, and so wait for them), and their loads are nowhere LLVM could sink
/// them under the merge that waits for them. (With a slot's loads in the step
/// that merges it, behind the branch that skips slots past the end, each
/// merge cost a trip to L2.) Loads of slots past hi are masked off. (ptxas
/// gives the loads one scoreboard and waits for all of them at each step's
/// first merge, so a step, not the fold, costs a trip: docs/gpu/2026-12-02-
/// decode-whole-units-and-fold.md.)
static SmallVector<Value> foldSlots(OpBuilder &b, Location loc, StreamKOp op,
                                    const PartialStates &partials,
                                    ValueRange state, Value lo, Value hi,
                                    function_ref<Value(Value)> slotOf) {
  Scalars s{b, loc};
  int64_t depth = foldDepth(op);
  size_t n = op.getStateTypes().size();
  auto fetch = [&](Value j, int64_t ahead) {
    Value k = ahead ? s.add(j, s.i64(ahead)) : j;
    // One statement per op: the IR's order must not be the compiler's
    // choice of argument order.
    Value valid = s.lt(k, hi);
    Value slot = slotOf(k);
    return partials.load(b, loc, slot, valid);
  };
  SmallVector<Value> merged(state);
  Value first = lo;
  if (merged.empty()) {
    merged = fetch(lo, 0);
    first = s.add(lo, s.i64(1));
  }
  SmallVector<Value> init(merged);
  for (int64_t t = 0; t < depth; ++t)
    llvm::append_range(init, fetch(first, t));
  auto loop = scf::ForOp::create(b, loc, first, hi, s.i64(depth), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  ValueRange args = loop.getRegionIterArgs();
  Value j = loop.getInductionVar();
  SmallVector<Value> acc(args.take_front(n)), refilled;
  for (int64_t t = 0; t < depth; ++t) {
    SmallVector<Value> mergeArgs(acc);
    llvm::append_range(mergeArgs, args.slice(n * (t + 1), n));
    // The step's first slot is always in range.
    if (t == 0) {
      acc = inlineRegion(b, op.getMerge(), mergeArgs);
    } else {
      auto ifOp = scf::IfOp::create(b, loc, TypeRange(op.getStateTypes()),
                                    s.lt(s.add(j, s.i64(t)), hi),
                                    /*withElseRegion=*/true);
      b.setInsertionPointToStart(ifOp.thenBlock());
      scf::YieldOp::create(b, loc, inlineRegion(b, op.getMerge(), mergeArgs));
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc, acc);
      b.setInsertionPointAfter(ifOp);
      acc = ifOp.getResults();
    }
    llvm::append_range(refilled, fetch(j, t + depth));
  }
  SmallVector<Value> yielded(acc);
  llvm::append_range(yielded, refilled);
  scf::YieldOp::create(b, loc, yielded);
  return SmallVector<Value>(loop.getResults().take_front(n));
}

static LogicalResult checkStreamK(StreamKOp op, func::FuncOp func) {
  for (Type t : op.getStateTypes())
    if (isa<SoftmaxStateType, KLStateType>(t))
      return op.emitOpError()
             << "yields an online state; run tessel-expand-online first";
  if (!func->hasAttr(TesselDialect::getKernelAttrName()))
    return op.emitOpError() << "must be inside a tessel kernel";
  // Every program must reach the op: the grid cooperates on it.
  if (op->getBlock() != &func.getBody().front())
    return op.emitOpError()
           << "must be at the top level of the kernel, not nested in "
              "control flow";
  if (func->hasAttr(TesselDialect::getLaunchAttrName()))
    return op.emitOpError()
           << "is the second stream_k of kernel '" << func.getSymName()
           << "'; a kernel holds at most one";
  return success();
}

/// Marks `func` persistent, with `perProgram` elements of each workspace
/// pointer it takes last.
static void markPersistent(func::FuncOp func, ArrayRef<int64_t> perProgram) {
  MLIRContext *ctx = func.getContext();
  func->setAttr(TesselDialect::getLaunchAttrName(),
                StringAttr::get(ctx, "persistent"));
  func->setAttr(TesselDialect::getWorkspaceAttrName(),
                DenseI64ArrayAttr::get(ctx, perProgram));
}

/// Appends a workspace pointer per state value (then, with `withFlags`, the
/// i32 arrival flags) to the kernel and marks it persistent; returns them.
static SmallVector<Value> addWorkspace(StreamKOp op, func::FuncOp func,
                                       bool withFlags) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  SmallVector<Value> workspaces;
  SmallVector<int64_t> perProgram;
  // Each region of the workspace starts 16-byte aligned (see
  // getWorkspaceSlotBytes), so slots of whole vectors move as vectors.
  auto aligned =
      NamedAttribute(TesselDialect::getMultipleOfAttrName(),
                     IntegerAttr::get(IntegerType::get(ctx, 64), 16));
  auto append = [&](Type elementType, int64_t elements) {
    (void)func.insertArgument(func.getNumArguments(),
                              PtrType::get(ctx, elementType),
                              DictionaryAttr::get(ctx, aligned), loc);
    workspaces.push_back(func.getArguments().back());
    perProgram.push_back(elements);
  };
  for (Type t : op.getStateTypes())
    append(getElementTypeOrSelf(t), slotElements(op, t));
  if (withFlags)
    append(IntegerType::get(ctx, 32), 1);
  markPersistent(func, perProgram);
  return workspaces;
}

/// What both strategies compute first: this program p of G, the body's
/// iterations per unit (≥ 0), the slots per unit (≥ 1: fewer than one
/// iteration per unit counts as one empty slot, so every unit still gets
/// body(unit, 0, 0) and its epilogue) and the units, all i64.
struct Schedule {
  Value p, g, bodyIters, iters, units;

  Schedule(Scalars &s, StreamKOp op) {
    Type i32 = s.b.getI32Type();
    p = s.wide(ProgramIdOp::create(s.b, s.loc, i32, 0u));
    g = s.wide(NumProgramsOp::create(s.b, s.loc, i32, 0u));
    Value given = s.wide(op.getIters());
    bodyIters = s.max(given, s.i64(0));
    iters = s.max(bodyIters, s.i64(1));
    units = s.wide(op.getUnits());
  }
};

/// Chunks per unit, S = max(1, min(⌊G / units⌋, iters)), as both split-K
/// kernels compute it (and the persistent split where it takes whole units).
static Value chunksPerUnit(Scalars &s, const Schedule &sched) {
  Value perUnit = s.div(sched.g, s.max(sched.units, s.i64(1)));
  Value capped = s.min(perUnit, sched.iters);
  return s.max(capped, s.i64(1));
}

/// tessel::streamKPrograms in IR: min(G, T) programs (at least one), or
/// units · S (S = chunksPerUnit) where those are at most G and make no
/// program's range longer; then each unit's range starts a program's (the
/// split-K chunks), and no program computes two units' slices in turn (each
/// behind a pipeline that drains and fills again) or hosts a unit after
/// handing another over.
static Value programsTakingPart(Scalars &s, const Schedule &sched,
                                Value total) {
  Value one = s.i64(1);
  Value even = s.max(s.min(sched.g, total), one);
  Value perUnit = chunksPerUnit(s, sched);
  Value aligned = s.mul(sched.units, perUnit);
  Value alignedSpan = s.ceilDiv(sched.iters, perUnit);
  Value evenSpan = s.ceilDiv(total, even);
  Value someAligned = s.lt(s.i64(0), aligned);
  Value fits = s.le(aligned, sched.g);
  Value noLonger = s.le(alignedSpan, evenSpan);
  Value alignedFits = arith::AndIOp::create(s.b, s.loc, someAligned, fits);
  Value takeAligned = arith::AndIOp::create(s.b, s.loc, alignedFits, noLonger);
  return s.select(takeAligned, aligned, even);
}

static void lowerPersistent(StreamKOp op, ArrayRef<Value> workspacesAndFlags) {
  ArrayRef<Value> workspaces = workspacesAndFlags.drop_back();
  Value flags = workspacesAndFlags.back();
  Type flagType = flags.getType();
  Location loc = op.getLoc();
  OpBuilder b(op);
  Scalars s{b, loc};
  Schedule sched(s, op);
  PartialStates partials(b, loc, op, workspaces);
  Value p = sched.p, iters = sched.iters;
  Value bodyIters = sched.bodyIters;
  Value one = s.i64(1);
  // The split of tessel::streamKRange: T = units · iters iterations over
  // g = streamKPrograms(G, units, iters) programs, program p < g owning
  // [⌊p·T/g⌋, ⌊(p+1)·T/g⌋), computed as p·⌊T/g⌋ + ⌊p·(T mod g)/g⌋ without
  // overflowing 64 bits; programs from g on own nothing. So every program
  // that takes part owns an iteration and a unit's peers are consecutive
  // programs: its host merges no empty slots.
  Value total = s.mul(sched.units, iters);
  Value g = programsTakingPart(s, sched, total);
  Value quotient = s.div(total, g);
  Value remainder = arith::RemSIOp::create(b, loc, total, g);
  auto rangeStart = [&](Value q) {
    Value whole = s.mul(q, quotient);
    return s.add(whole, s.div(s.mul(q, remainder), g));
  };
  Value start = rangeStart(s.min(p, g));
  Value end = rangeStart(s.min(s.add(p, one), g));
  // Units touched: [start / iters, ceil(end / iters)), empty if start == end.
  Value firstUnit = s.div(start, iters);
  Value touched = s.lt(start, end);
  Value unitsEnd = s.ceilDiv(end, iters);
  Value lastUnit = s.select(touched, unitsEnd, firstUnit);
  auto loop = scf::ForOp::create(b, loc, firstUnit, lastUnit, one);
  b.setInsertionPointToStart(loop.getBody());

  Value unit = loop.getInductionVar();
  Value unitBegin = s.mul(unit, iters);
  Value unitEnd = s.add(unitBegin, iters);
  Value begin = s.min(s.sub(s.max(start, unitBegin), unitBegin), bodyIters);
  Value stop = s.min(s.sub(s.min(end, unitEnd), unitBegin), bodyIters);
  Value unit32 = s.narrow(unit);
  SmallVector<Value> state =
      inlineRegion(b, op.getBody(), {unit32, s.narrow(begin), s.narrow(stop)});

  // The host holds the unit's first iteration; the others hand over: each
  // stores its partial state to its slot and counts one arrival on the
  // host's flag. The owner of iteration i is ⌈(i + 1)·g/T⌉ − 1.
  auto owner = [&](Value i) {
    return s.sub(s.ceilDiv(s.mul(s.add(i, one), g), total), one);
  };
  Value isHost = s.le(start, unitBegin);
  auto hostIf = scf::IfOp::create(b, loc, isHost, /*withElseRegion=*/true);
  b.setInsertionPoint(hostIf.elseBlock()->getTerminator());
  partials.store(b, loc, p, state);
  FlagSignalOp::create(
      b, loc, AddPtrOp::create(b, loc, flagType, flags, owner(unitBegin)));

  // Peers: programs p+1 .. owner(unitEnd − 1), each of which arrives once.
  b.setInsertionPoint(hostIf.thenBlock()->getTerminator());
  Value firstPeer = s.add(p, one);
  Value peerEnd = s.ceilDiv(s.mul(unitEnd, g), total);
  Value arrivals = s.sub(peerEnd, firstPeer);
  Value anyArrival = s.lt(s.i64(0), arrivals);
  auto waitIf = scf::IfOp::create(b, loc, anyArrival,
                                  /*withElseRegion=*/false);
  b.setInsertionPoint(waitIf.thenBlock()->getTerminator());
  Value count = s.narrow(arrivals);
  Value ownFlag = AddPtrOp::create(b, loc, flagType, flags, p);
  FlagWaitOp::create(b, loc, ownFlag, count);
  b.setInsertionPointAfter(waitIf);
  SmallVector<Value> epilogueArgs = {unit32};
  llvm::append_range(epilogueArgs,
                     foldSlots(b, loc, op, partials, state, firstPeer, peerEnd,
                               [](Value q) { return q; }));
  inlineRegion(b, op.getEpilogue(), epilogueArgs);
}

/// The cluster lowering (see the file comment).
static void lowerCluster(StreamKOp op, func::FuncOp func) {
  MLIRContext *ctx = op.getContext();
  int64_t size = *op.getCluster();
  markPersistent(func, {});
  func->setAttr(TesselDialect::getClusterAttrName(),
                IntegerAttr::get(IntegerType::get(ctx, 64), size));
  Location loc = op.getLoc();
  OpBuilder b(op);
  Scalars s{b, loc};
  Schedule sched(s, op);
  // CTA 0's slots of the C - 1 peers' states, one buffer per state value.
  SmallVector<Value> buffers;
  for (Type t : op.getStateTypes()) {
    auto ptr = PtrType::get(ctx, getElementTypeOrSelf(t), /*shared=*/true);
    buffers.push_back(SharedBufferOp::create(
        b, loc, ptr, b.getI64IntegerAttr((size - 1) * slotElements(op, t))));
  }
  PartialStates partials(b, loc, op, buffers);
  ClusterArriveOp::create(b, loc, /*relaxed=*/true);

  Value one = s.i64(1), zero = s.i64(0), c = s.i64(size);
  Value rank = arith::RemSIOp::create(b, loc, sched.p, c);
  Value cluster = s.div(sched.p, c);
  Value clusters = s.max(s.div(sched.g, c), one);
  // Slice r of n = min(C, iters): [⌊r·iters/n⌋, ⌊(r+1)·iters/n⌋), empty
  // from r = n on; cut to the body's iterations (none for iters < 1).
  Value n = s.min(c, sched.iters);
  auto cut = [&](Value r) {
    Value whole = s.div(s.mul(s.min(r, n), sched.iters), n);
    return s.narrow(s.min(whole, sched.bodyIters));
  };
  Value begin = cut(rank);
  Value end = cut(s.add(rank, one));
  Value isFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rank, zero);
  // One statement per op: the IR's order must not be the compiler's choice
  // of argument order.
  Value inSlices = s.lt(rank, n);
  Value notFirst = s.lt(zero, rank);
  Value isPeer = arith::AndIOp::create(b, loc, notFirst, inSlices);

  auto loop = scf::ForOp::create(b, loc, cluster, sched.units, clusters);
  b.setInsertionPointToStart(loop.getBody());
  Value unit = loop.getInductionVar();
  Value unit32 = s.narrow(unit);
  Value more = s.lt(s.add(unit, clusters), sched.units);
  SmallVector<Value> state =
      inlineRegion(b, op.getBody(), {unit32, begin, end});
  ClusterWaitOp::create(b, loc);
  auto storeIf = scf::IfOp::create(b, loc, isPeer, /*withElseRegion=*/false);
  b.setInsertionPoint(storeIf.thenBlock()->getTerminator());
  Value cta0 = s.narrow(zero);
  SmallVector<Value> cta0Buffers;
  for (Value buffer : buffers)
    cta0Buffers.push_back(ClusterMapOp::create(b, loc, buffer, cta0));
  partials.in(cta0Buffers).store(b, loc, s.sub(rank, one), state);
  b.setInsertionPointAfter(storeIf);
  ClusterArriveOp::create(b, loc, /*relaxed=*/false);
  Value waits = arith::OrIOp::create(b, loc, isFirst, more);
  auto waitIf = scf::IfOp::create(b, loc, waits, /*withElseRegion=*/false);
  b.setInsertionPoint(waitIf.thenBlock()->getTerminator());
  ClusterWaitOp::create(b, loc);
  b.setInsertionPointAfter(waitIf);
  auto foldIf = scf::IfOp::create(b, loc, isFirst, /*withElseRegion=*/false);
  b.setInsertionPoint(foldIf.thenBlock()->getTerminator());
  SmallVector<Value> epilogueArgs = {unit32};
  llvm::append_range(epilogueArgs,
                     foldSlots(b, loc, op, partials, state, zero, s.sub(n, one),
                               [](Value j) { return j; }));
  inlineRegion(b, op.getEpilogue(), epilogueArgs);
  b.setInsertionPointAfter(foldIf);
  auto nextIf = scf::IfOp::create(b, loc, more, /*withElseRegion=*/false);
  b.setInsertionPoint(nextIf.thenBlock()->getTerminator());
  ClusterArriveOp::create(b, loc, /*relaxed=*/false);
}

/// The split kernel: program w computes work item w = unit·S + chunk; with
/// S = 1 it finishes the unit, else it stores the partial state to slot w.
static void lowerSplit(StreamKOp op, ArrayRef<Value> workspaces) {
  Location loc = op.getLoc();
  OpBuilder b(op);
  Scalars s{b, loc};
  Schedule sched(s, op);
  PartialStates partials(b, loc, op, workspaces);
  Value chunks = chunksPerUnit(s, sched);
  Value items = s.mul(sched.units, chunks);
  auto loop = scf::ForOp::create(b, loc, sched.p, items, sched.g);
  b.setInsertionPointToStart(loop.getBody());
  Value item = loop.getInductionVar();
  Value unit = s.div(item, chunks);
  Value chunk = s.sub(item, s.mul(unit, chunks));
  // Chunk c covers [⌊c·iters/S⌋, ⌊(c+1)·iters/S⌋); c·iters < 2^62.
  auto cut = [&](Value c) {
    return s.min(s.div(s.mul(c, sched.iters), chunks), sched.bodyIters);
  };
  Value begin = cut(chunk);
  Value end = cut(s.add(chunk, s.i64(1)));
  Value unit32 = s.narrow(unit);
  SmallVector<Value> state =
      inlineRegion(b, op.getBody(), {unit32, s.narrow(begin), s.narrow(end)});
  Value whole =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, chunks, s.i64(1));
  auto wholeIf = scf::IfOp::create(b, loc, whole, /*withElseRegion=*/true);
  b.setInsertionPoint(wholeIf.thenBlock()->getTerminator());
  SmallVector<Value> epilogueArgs = {unit32};
  llvm::append_range(epilogueArgs, state);
  inlineRegion(b, op.getEpilogue(), epilogueArgs);
  b.setInsertionPoint(wholeIf.elseBlock()->getTerminator());
  partials.store(b, loc, item, state);
}

/// The combine kernel: with S > 1, each unit's S partial states are merged
/// in chunk order and the epilogue runs once per unit.
static void lowerCombine(StreamKOp op, ArrayRef<Value> workspaces) {
  Location loc = op.getLoc();
  OpBuilder b(op);
  Scalars s{b, loc};
  Schedule sched(s, op);
  PartialStates partials(b, loc, op, workspaces);
  Value chunks = chunksPerUnit(s, sched);
  Value one = s.i64(1);
  Value split = s.lt(one, chunks);
  Value combined = s.select(split, sched.units, s.i64(0));
  auto loop = scf::ForOp::create(b, loc, sched.p, combined, sched.g);
  b.setInsertionPointToStart(loop.getBody());
  Value unit = loop.getInductionVar();
  Value first = s.mul(unit, chunks);
  auto slotOf = [&](Value chunk) { return s.add(first, chunk); };
  SmallVector<Value> merged =
      foldSlots(b, loc, op, partials, ValueRange(), s.i64(0), chunks, slotOf);
  SmallVector<Value> epilogueArgs = {s.narrow(unit)};
  llvm::append_range(epilogueArgs, merged);
  inlineRegion(b, op.getEpilogue(), epilogueArgs);
}

/// Split-K runs the kernel's code outside the stream_k in both kernels,
/// so that code must not write memory (it would write twice).
static LogicalResult checkNoWritesOutside(StreamKOp op, func::FuncOp func) {
  Operation *writer = nullptr;
  func.walk<WalkOrder::PreOrder>([&](Operation *inner) {
    if (inner == op.getOperation())
      return WalkResult::skip();
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects || !effects.hasEffect<MemoryEffects::Write>())
      return WalkResult::advance();
    writer = inner;
    return WalkResult::interrupt();
  });
  if (!writer)
    return success();
  InFlightDiagnostic diag =
      op.emitOpError() << "cannot be lowered to split-K: kernel '"
                       << func.getSymName()
                       << "' writes memory outside the stream_k, which the "
                          "split and combine kernels would both do";
  diag.attachNote(writer->getLoc()) << "written here";
  return diag;
}

static LogicalResult lowerSplitK(StreamKOp op, func::FuncOp func) {
  if (failed(checkNoWritesOutside(op, func)))
    return failure();
  SmallVector<Value> workspaces = addWorkspace(op, func, /*withFlags=*/false);
  // The combine kernel is the kernel with its new arguments, cloned before
  // the op is lowered; the symbol table renames it if the name is taken.
  auto combine = cast<func::FuncOp>(func->clone());
  combine.setSymName((func.getSymName() + "__combine").str());
  auto module = func->getParentOfType<ModuleOp>();
  SymbolTable(module).insert(combine, std::next(Block::iterator(func)));
  func->setAttr(TesselDialect::getThenAttrName(),
                FlatSymbolRefAttr::get(combine));
  StreamKOp combineOp = *combine.getOps<StreamKOp>().begin();
  unsigned numState = workspaces.size();
  lowerCombine(combineOp,
               SmallVector<Value>(combine.getArguments().take_back(numState)));
  combineOp.erase();
  lowerSplit(op, workspaces);
  op.erase();
  return success();
}

struct LowerStreamKPass
    : tessel::impl::TesselLowerStreamKBase<LowerStreamKPass> {
  using TesselLowerStreamKBase::TesselLowerStreamKBase;

  void runOnOperation() override {
    SmallVector<StreamKOp> ops;
    getOperation().walk([&](StreamKOp op) { ops.push_back(op); });
    for (StreamKOp op : ops) {
      auto func = op->getParentOfType<func::FuncOp>();
      if (!func || failed(checkStreamK(op, func)))
        return signalPassFailure();
      if (strategy == StreamKStrategy::SplitK) {
        if (failed(lowerSplitK(op, func)))
          return signalPassFailure();
        continue;
      }
      if (op.getCluster()) {
        lowerCluster(op, func);
        op.erase();
        continue;
      }
      lowerPersistent(op, addWorkspace(op, func, /*withFlags=*/true));
      op.erase();
    }
  }
};

} // namespace
