//===- LowerStreamK.cpp - stream_k to a persistent grid -------------------===//
//
// The lowered form is plain tessel/scf/arith IR plus flag_signal/flag_wait,
// so the interpreter checks it exactly as the GPU will run it.
//
//===----------------------------------------------------------------------===//

#include "tessel/Passes.h"

#include "mlir/IR/IRMapping.h"

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

/// Pointers to slot `slot` (of `size` elements) of a workspace, shaped like
/// `type`.
static Value slotPointers(OpBuilder &b, Location loc, Value base, Value slot,
                          Type type) {
  Scalars s{b, loc};
  int64_t size = numElements(type);
  Value start = s.mul(slot, s.i64(size));
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

static LogicalResult lowerStreamK(StreamKOp op, func::FuncOp func) {
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
  if (func->hasAttr(TesselDialect::getWorkspaceAttrName()))
    return op.emitOpError()
           << "is the second stream_k of kernel '" << func.getSymName()
           << "'; a kernel holds at most one";

  // New kernel arguments: a workspace per state value, then the flags.
  MLIRContext *ctx = op.getContext();
  SmallVector<Type> stateTypes(op.getStateTypes());
  SmallVector<Value> workspaces;
  SmallVector<int64_t> perProgram;
  Location loc = op.getLoc();
  for (Type t : stateTypes) {
    auto ptrType = PtrType::get(ctx, getElementTypeOrSelf(t));
    (void)func.insertArgument(func.getNumArguments(), ptrType, {}, loc);
    workspaces.push_back(func.getArguments().back());
    perProgram.push_back(numElements(t));
  }
  auto flagType = PtrType::get(ctx, IntegerType::get(ctx, 32));
  (void)func.insertArgument(func.getNumArguments(), flagType, {}, loc);
  Value flags = func.getArguments().back();
  perProgram.push_back(1);
  func->setAttr(TesselDialect::getLaunchAttrName(),
                StringAttr::get(ctx, "persistent"));
  func->setAttr(TesselDialect::getWorkspaceAttrName(),
                DenseI64ArrayAttr::get(ctx, perProgram));

  OpBuilder b(op);
  Scalars s{b, loc};
  Type i32 = b.getI32Type();
  // This program's iterations [start, end) out of T = units · iters, split
  // as tessel::streamKRange does: p·⌊T/G⌋ + ⌊p·(T mod G)/G⌋ = ⌊p·T/G⌋
  // without overflowing 64 bits.
  Value p = s.wide(ProgramIdOp::create(b, loc, i32, 0u));
  Value g = s.wide(NumProgramsOp::create(b, loc, i32, 0u));
  // Fewer than one iteration per unit counts as one empty slot, so every
  // unit still gets body(unit, 0, 0) and its epilogue.
  Value bodyIters = s.max(s.wide(op.getIters()), s.i64(0));
  Value iters = s.max(bodyIters, s.i64(1));
  Value total = s.mul(s.wide(op.getUnits()), iters);
  Value quotient = s.div(total, g);
  Value remainder = arith::RemSIOp::create(b, loc, total, g);
  auto rangeStart = [&](Value q) {
    Value whole = s.mul(q, quotient);
    return s.add(whole, s.div(s.mul(q, remainder), g));
  };
  Value start = rangeStart(p);
  Value end = rangeStart(s.add(p, s.i64(1)));
  // Units touched: [start / iters, ceil(end / iters)), empty if start == end.
  Value firstUnit = s.div(start, iters);
  Value lastUnit = s.select(s.lt(start, end), s.ceilDiv(end, iters), firstUnit);
  Value one = s.i64(1);
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

  // The host holds the unit's first iteration; the others hand over.
  Value isHost = s.le(start, unitBegin);
  auto hostIf = scf::IfOp::create(b, loc, isHost, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(hostIf.elseBlock()->getTerminator());
    for (auto [value, ws] : llvm::zip(state, workspaces)) {
      Value ptrs = slotPointers(b, loc, ws, p, value.getType());
      StoreOp::create(b, loc, ptrs, value, Value());
    }
    FlagSignalOp::create(b, loc, AddPtrOp::create(b, loc, flagType, flags, p));

    // Peers: programs p+1 .. owner(unitEnd − 1), where the owner of
    // iteration i is ⌈(i + 1)·G/T⌉ − 1.
    b.setInsertionPoint(hostIf.thenBlock()->getTerminator());
    Value firstPeer = s.add(p, one);
    Value peerEnd = s.ceilDiv(s.mul(unitEnd, g), total);
    auto peers = scf::ForOp::create(b, loc, firstPeer, peerEnd, one, state);
    b.setInsertionPointToStart(peers.getBody());
    Value q = peers.getInductionVar();
    // With more programs than iterations some peers own nothing: they
    // neither compute nor signal, so they are skipped.
    Value qStart = rangeStart(q);
    Value qEnd = rangeStart(s.add(q, one));
    auto nonEmpty =
        scf::IfOp::create(b, loc, TypeRange(stateTypes), s.lt(qStart, qEnd),
                          /*withElseRegion=*/true);
    b.setInsertionPointToStart(nonEmpty.thenBlock());
    FlagWaitOp::create(b, loc, AddPtrOp::create(b, loc, flagType, flags, q));
    SmallVector<Value> mergeArgs(peers.getRegionIterArgs());
    for (auto [type, ws] : llvm::zip(stateTypes, workspaces)) {
      Value ptrs = slotPointers(b, loc, ws, q, type);
      mergeArgs.push_back(LoadOp::create(b, loc, type, ptrs, Value(), Value()));
    }
    SmallVector<Value> merged = inlineRegion(b, op.getMerge(), mergeArgs);
    scf::YieldOp::create(b, loc, merged);
    b.setInsertionPointToStart(nonEmpty.elseBlock());
    scf::YieldOp::create(b, loc, peers.getRegionIterArgs());
    b.setInsertionPointAfter(nonEmpty);
    scf::YieldOp::create(b, loc, nonEmpty.getResults());

    b.setInsertionPointAfter(peers);
    SmallVector<Value> epilogueArgs = {unit32};
    llvm::append_range(epilogueArgs, peers.getResults());
    inlineRegion(b, op.getEpilogue(), epilogueArgs);
  }
  op.erase();
  return success();
}

struct LowerStreamKPass
    : tessel::impl::TesselLowerStreamKBase<LowerStreamKPass> {
  void runOnOperation() override {
    SmallVector<StreamKOp> ops;
    getOperation().walk([&](StreamKOp op) { ops.push_back(op); });
    for (StreamKOp op : ops) {
      auto func = op->getParentOfType<func::FuncOp>();
      if (!func || failed(lowerStreamK(op, func)))
        return signalPassFailure();
    }
  }
};

} // namespace
