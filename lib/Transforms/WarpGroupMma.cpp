//===- WarpGroupMma.cpp - Tensor-core dots as Hopper warpgroup MMA --------===//
//
// On sm_90a a dot whose accumulator layout is made of whole warpgroups along
// M (several side by side along N take turns over its 8-column blocks)
// becomes
//   %p = tessel.warpgroup_dot %a, %b_smem, %acc
//   %r = tessel.warpgroup_dot_wait %p pendings = 0
// B must be in shared memory in a layout a wgmma matrix descriptor
// describes: tessel-pipeline's buffers usually are (SharedTileLayout is the
// tensor cores' swizzle); a B in registers is stored to a buffer of its own.
// An A that a loop's dots read unchanged (attention's query block) goes to
// a buffer of its own too, as FlashAttention-3 keeps Q: registers it would
// hold through the whole loop are the ones the scores and the accumulator
// need (one buffer when another dot reads the same tile as B in the same
// layout). An A that is the transpose of a tile computed in registers (the
// backward's dS of dQ = dS·K, computed as dSᵀ) is stored as it is and read
// M-major: one store instead of a transpose through shared memory. An A
// that is whole rows of a tile staged before the loop, read back at a
// constant offset (MTA's queries shifted by each offset of its convolution),
// becomes a row view of that buffer (tessel.memdesc_rows). A dot whose
// accumulator is the product of the dot before it takes that product
// unfinished, so that a chain of dots waits once.
//
//===----------------------------------------------------------------------===//

#include "WarpGroupDots.h"

#include "tessel/Passes.h"

#include "Conversion/TesselToLLVM/TesselToLLVM.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELWARPGROUPMMA
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The dimension along which the threads of a B tile hold runs of elements
/// (stored contiguous, its copy to shared memory is vectorisable).
static unsigned runDimension(TileType b) {
  if (auto blocked = dyn_cast_if_present<BlockedEncodingAttr>(b.getEncoding()))
    return blocked.getOrder()[0];
  return 1;
}

/// The shared copies of register tiles the pass made, one per (tile,
/// memdesc type): a tile a kernel reads both as A and as B (the backward's
/// key block) is stored once when both want the same layout.
using SharedCopies = DenseMap<std::pair<Value, Type>, Value>;

/// A buffer of `type` holding `tile`, stored once where `tile` is defined (a
/// loop-invariant tile thus before its loop); `isNew` says whether this call
/// made it.
static Value storeOnce(Value tile, MemDescType type, Location loc,
                       SharedCopies &copies, bool *isNew = nullptr) {
  Value &buffer = copies[{tile, type}];
  if (isNew)
    *isNew = !buffer;
  if (buffer)
    return buffer;
  OpBuilder builder(tile.getContext());
  if (Operation *def = tile.getDefiningOp())
    builder.setInsertionPointAfter(def);
  else
    builder.setInsertionPointToStart(cast<BlockArgument>(tile).getOwner());
  buffer = LocalAllocOp::create(builder, loc, type);
  LocalStoreOp::create(builder, loc, tile, buffer);
  return buffer;
}

/// Erases a buffer and its store.
static void eraseBuffer(Value buffer) {
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    user->erase();
  buffer.getDefiningOp()->erase();
}

/// B of `dot` in shared memory in a layout wgmma reads, adding the buffer
/// and the store for a B in registers (once per B); null if there is none.
static Value operandBInSharedMemory(DotOp dot, SharedCopies &copies) {
  Value b = dot.getB();
  if (auto desc = dyn_cast<MemDescType>(b.getType())) {
    auto a = cast<TileType>(dot.getA().getType());
    auto acc = cast<TileType>(dot.getAcc().getType());
    return whyNotWarpGroupDot(a, desc, acc).empty() ? b : Value();
  }
  auto tile = cast<TileType>(b.getType());
  // The first layout the dot can read (warpgroups side by side along N
  // only take a B contiguous along K). An accumulator in runs of four
  // columns reads B's columns in its own order: stored so as it is staged.
  auto acc = cast<TileType>(dot.getAcc().getType());
  Attribute columns = getWarpGroupBColumns(
      dyn_cast_if_present<MmaEncodingAttr>(acc.getEncoding()));
  unsigned preferred = runDimension(tile);
  for (unsigned dim : {preferred, 1 - preferred})
    if (MemDescType type =
            getWarpGroupDotOperandB(dot.getContext(), tile.getShape(),
                                    tile.getElementType(), dim, columns);
        type && whyNotWarpGroupDot(dot.getA().getType(), type, acc).empty())
      return storeOnce(b, type, dot.getLoc(), copies);
  return {};
}

/// Whether something in `loop` may write the buffer `memdesc` views.
static bool writtenIn(scf::ForOp loop, Value memdesc) {
  Operation *buffer = bufferOf(memdesc);
  return !buffer ||
         llvm::any_of(accessesOf(buffer->getResult(0)), [&](Operation *user) {
           return !isa<LocalLoadOp, WarpGroupDotOp>(user) &&
                  loop->isAncestor(user);
         });
}

/// Gives a loop's dot whose A is rows of a tile staged in shared memory
/// before the loop (read back whole rows at a constant offset, through
/// layout conversions) a view of those rows instead: one buffer for every
/// such A, no copy, no registers (MTA's query rows shifted by each offset
/// of the convolution, from its staged halo rows). The buffer must be in
/// the layout a descriptor reads and, for a view not of all its rows, one
/// column block wide (memdesc_rows).
static void readStagedRowsA(func::FuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  kernel.walk([&](WarpGroupDotOp dot) {
    auto a = dyn_cast<TileType>(dot.getA().getType());
    // The ops that make the register A, users first.
    SmallVector<Operation *> chain;
    Value v = dot.getA();
    while (auto convert = v.getDefiningOp<ConvertLayoutOp>()) {
      chain.push_back(convert);
      v = convert.getSrc();
    }
    auto load = v.getDefiningOp<LocalLoadOp>();
    auto loop = dot->getParentOfType<scf::ForOp>();
    if (!a || !load || !load.getOffsets().empty() || !loop)
      return;
    auto src = cast<MemDescType>(load.getSrc().getType());
    ArrayRef<int64_t> at = load.getStaticOffsets();
    MemDescType view =
        getWarpGroupDotOperandA(ctx, a.getShape(), a.getElementType());
    if (src.getShape().size() != 2 || at[1] != 0 ||
        src.getShape()[1] != a.getDimSize(1) || !view ||
        src !=
            getWarpGroupDotOperandA(ctx, src.getShape(), a.getElementType()) ||
        (src.getShape() != a.getShape() && src.getSharedLayout().blocks != 1) ||
        writtenIn(loop, load.getSrc()))
      return;
    OpBuilder b(dot);
    Value rows = load.getSrc();
    if (src.getShape() != a.getShape())
      rows = MemDescRowsOp::create(b, dot.getLoc(), view, rows, at[0]);
    chain.push_back(load);
    dot.getAMutable().assign(rows);
    for (Operation *op : chain)
      if (op->use_empty())
        op->erase();
  });
}

/// The register tile to keep in shared memory for the A of `dot`: A, or
/// the tile A is a layout conversion of (stored as it is, the conversion
/// is then left unused). Null unless A is a register tile defined outside
/// the loop around the dot, in a shape a shared A can have.
static Value invariantTileA(WarpGroupDotOp dot) {
  auto loop = dot->getParentOfType<scf::ForOp>();
  Value a = dot.getA();
  auto tile = dyn_cast<TileType>(a.getType());
  if (!loop || !tile || !loop.isDefinedOutsideOfLoop(a) ||
      !getWarpGroupDotOperandA(dot.getContext(), tile.getShape(),
                               tile.getElementType()))
    return {};
  if (auto convert = a.getDefiningOp<ConvertLayoutOp>())
    return convert.getSrc();
  return a;
}

/// Whether `kernel` still fits the shared memory of a Hopper CTA, the ops
/// of `unused` (no longer read, about to be erased) left out of the measure.
static bool fitsSharedMemory(func::FuncOp kernel,
                             ArrayRef<Operation *> unused) {
  // Out of the IR, in order, while measured, then back where they were.
  SmallVector<std::pair<Operation *, Operation *>> detached;
  for (Operation *op : unused) {
    detached.emplace_back(op, op->getNextNode());
    op->remove();
  }
  bool fits = getKernelSharedBytes(kernel) <= getKernelSharedLimit(kernel);
  for (auto [op, next] : llvm::reverse(detached))
    next->getBlock()->getOperations().insert(Block::iterator(next), op);
  return fits;
}

/// Erases the ops of `chain` (users before what they use) that nothing
/// reads any more.
static void eraseUnused(ArrayRef<Operation *> chain) {
  for (Operation *op : chain)
    if (op->use_empty())
      op->erase();
}

/// Gives the dots of `kernel` that read a loop-invariant A that A from a
/// shared buffer, one per tile, unless that buffer would take the kernel's
/// shared memory past what a Hopper CTA may use.
static void moveInvariantOperandsA(func::FuncOp kernel, SharedCopies &copies) {
  llvm::MapVector<Value, SmallVector<WarpGroupDotOp>> readers;
  kernel.walk([&](WarpGroupDotOp dot) {
    if (Value tile = invariantTileA(dot))
      readers[tile].push_back(dot);
  });
  for (auto &[tile, dots] : readers) {
    auto type = cast<TileType>(tile.getType());
    MemDescType bufferType = getWarpGroupDotOperandA(
        kernel.getContext(), type.getShape(), type.getElementType());
    bool isNew;
    Value buffer =
        storeOnce(tile, bufferType, dots.front().getLoc(), copies, &isNew);
    SmallVector<Value> registers;
    SmallVector<Operation *> conversions;
    for (WarpGroupDotOp dot : dots) {
      registers.push_back(dot.getA());
      if (auto convert = dot.getA().getDefiningOp<ConvertLayoutOp>())
        if (!llvm::is_contained(conversions, convert))
          conversions.push_back(convert);
      dot.getAMutable().assign(buffer);
    }
    SmallVector<Operation *> unused;
    for (Operation *convert : conversions)
      if (convert->use_empty())
        unused.push_back(convert);
    if (!isNew || fitsSharedMemory(kernel, unused)) {
      eraseUnused(unused);
      continue;
    }
    for (auto [dot, a] : llvm::zip(dots, registers))
      dot.getAMutable().assign(a);
    copies.erase({tile, bufferType});
    eraseBuffer(buffer);
  }
}

/// The register tile whose transpose a register A is (through layout
/// conversions and at most one cast), and the ops between them, users
/// first; null when A is no such transpose.
static Value transposedTile(Value a, SmallVectorImpl<Operation *> &chain) {
  int transposes = 0, casts = 0;
  while (Operation *def = a.getDefiningOp()) {
    if (!isa<ConvertLayoutOp, CastOp, TransOp>(def) || !def->hasOneUse())
      break;
    transposes += isa<TransOp>(def);
    casts += isa<CastOp>(def);
    chain.push_back(def);
    a = def->getOperand(0);
  }
  return transposes == 1 && casts <= 1 ? a : Value();
}

/// Gives the dots of `kernel` whose A is the transpose of a tile computed in
/// registers (the backward's dSᵀ of dQ = dS·K) that A from shared memory:
/// the tile is stored once as it is and read M-major through wgmma's
/// transpose bit, instead of being transposed in registers through
/// shared-memory round trips. Not for dots issued an iteration late (their
/// A goes round the loop in registers) or past the shared memory a Hopper
/// CTA may use.
static void moveTransposedOperandsA(func::FuncOp kernel) {
  SmallVector<WarpGroupDotOp> dots;
  kernel.walk([&](WarpGroupDotOp dot) { dots.push_back(dot); });
  for (WarpGroupDotOp dot : dots) {
    auto a = dyn_cast<TileType>(dot.getA().getType());
    SmallVector<Operation *> chain;
    if (!a || dot->hasAttr(TesselDialect::getRotateAttrName()))
      continue;
    Value tile = transposedTile(dot.getA(), chain);
    MLIRContext *ctx = kernel.getContext();
    Type elem = a.getElementType();
    MemDescType view =
        getWarpGroupDotOperandA(ctx, a.getShape(), elem, /*contiguousDim=*/0);
    if (!tile || !view)
      continue;
    OpBuilder b(dot);
    Location loc = dot.getLoc();
    auto tileType = cast<TileType>(tile.getType());
    Value stored = tile;
    if (tileType.getElementType() != elem)
      stored = CastOp::create(b, loc, tileType.withElementType(elem), tile);
    Value buffer = LocalAllocOp::create(
        b, loc,
        MemDescType::get(ctx, tileType.getShape(), elem, /*order=*/{1, 0}));
    LocalStoreOp::create(b, loc, stored, buffer);
    Value registers = dot.getA();
    dot.getAMutable().assign(MemDescTransOp::create(b, loc, view, buffer));
    if (fitsSharedMemory(kernel, chain)) {
      eraseUnused(chain);
      continue;
    }
    Operation *trans = dot.getA().getDefiningOp();
    dot.getAMutable().assign(registers);
    trans->erase();
    eraseBuffer(buffer);
    if (stored != tile)
      stored.getDefiningOp()->erase();
  }
}

/// Whether `op`, between two dots, leaves what `dot` reads as it was: it
/// writes no memory, or only another buffer (a store of the next dot's B).
static bool keepsOperandsOf(Operation *op, WarpGroupDotOp dot) {
  if (isMemoryEffectFree(op))
    return true;
  auto store = dyn_cast<LocalStoreOp>(op);
  Operation *written = store ? bufferOf(store.getDst()) : nullptr;
  return written && written != bufferOf(dot.getB()) &&
         (!isa<MemDescType>(dot.getA().getType()) ||
          written != bufferOf(dot.getA()));
}

/// Lets a dot whose accumulator is the product of an earlier dot of its
/// block, through a wait for that product alone that nothing else reads,
/// take the product unfinished: warpgroup MMAs add to the same registers in
/// issue order, so a chain of products (a sum of dots over row views of one
/// tile, say) needs one wait, at its end. Not where something between the
/// two may write what the first reads, nor for a first dot with A in
/// registers (its wait keeps them live).
static void chainAccumulatingDots(func::FuncOp kernel) {
  SmallVector<WarpGroupDotOp> dots;
  kernel.walk([&](WarpGroupDotOp dot) { dots.push_back(dot); });
  for (WarpGroupDotOp dot : dots) {
    auto wait = dot.getAcc().getDefiningOp<WarpGroupDotWaitOp>();
    if (!wait || wait.getPendings() != 0 || wait.getInputs().size() != 1 ||
        !wait.getReads().empty() || !wait->hasOneUse() ||
        wait->getBlock() != dot->getBlock())
      continue;
    auto first = wait.getInputs().front().getDefiningOp<WarpGroupDotOp>();
    if (!first || first->getBlock() != dot->getBlock() ||
        !isa<MemDescType>(first.getA().getType()))
      continue;
    bool kept = true;
    for (Operation *op = first->getNextNode(); kept && op != dot;
         op = op->getNextNode())
      kept = op == wait.getOperation() || keepsOperandsOf(op, first);
    if (!kept)
      continue;
    dot.getAccMutable().assign(first.getResult());
    wait.erase();
  }
}

struct WarpGroupMmaPass
    : tessel::impl::TesselWarpGroupMmaBase<WarpGroupMmaPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!hasWarpGroupMma(module))
      return;
    SmallVector<DotOp> dots;
    module.walk([&](DotOp dot) { dots.push_back(dot); });
    SharedCopies copies;
    for (DotOp dot : dots) {
      auto a = cast<TileType>(dot.getA().getType());
      auto acc = cast<TileType>(dot.getAcc().getType());
      if (!whyNotWarpGroupDot(a, MemDescType(), acc).empty())
        continue;
      Value b = operandBInSharedMemory(dot, copies);
      if (!b)
        continue;
      OpBuilder builder(dot);
      Location loc = dot.getLoc();
      auto product = WarpGroupDotOp::create(builder, loc, acc, dot.getA(), b,
                                            dot.getAcc());
      if (dot->hasAttr(TesselDialect::getRotateAttrName()))
        product->setAttr(TesselDialect::getRotateAttrName(),
                         builder.getUnitAttr());
      auto wait = WarpGroupDotWaitOp::create(builder, loc, ValueRange{product},
                                             ValueRange(), 0);
      dot.getResult().replaceAllUsesWith(wait.getResults().front());
      dot.erase();
    }
    // Measured with every dot in its final form: mma.sync dots stage their
    // operands in scratch memory, warpgroup dots do not.
    for (auto kernel : module.getOps<func::FuncOp>()) {
      readStagedRowsA(kernel);
      moveInvariantOperandsA(kernel, copies);
      moveTransposedOperandsA(kernel);
      chainAccumulatingDots(kernel);
    }
  }
};

} // namespace
