//===- WarpGroupMma.cpp - Tensor-core dots as Hopper warpgroup MMA --------===//
//
// On sm_90a a dot whose accumulator layout is made of whole warpgroups along
// M becomes
//   %p = tessel.warpgroup_dot %a, %b_smem, %acc
//   %r = tessel.warpgroup_dot_wait %p pendings = 0
// B must be in shared memory in a layout a wgmma matrix descriptor
// describes: tessel-pipeline's buffers usually are (SharedTileLayout is the
// tensor cores' swizzle); a B in registers is stored to a buffer of its own.
// An A that a loop's dots read unchanged (attention's query block) goes to
// a buffer of its own too, as FlashAttention-3 keeps Q: registers it would
// hold through the whole loop are the ones the scores and the accumulator
// need.
//
//===----------------------------------------------------------------------===//

#include "tessel/Passes.h"

#include "Conversion/TesselToLLVM/TesselToLLVM.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELWARPGROUPMMA
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Dynamic shared memory one CTA may use on Hopper: the opt-in limit of
/// H100 and H200, 227 KB.
static constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// The dimension along which the threads of a B tile hold runs of elements
/// (stored contiguous, its copy to shared memory is vectorisable).
static unsigned runDimension(TileType b) {
  if (auto blocked = dyn_cast_if_present<BlockedEncodingAttr>(b.getEncoding()))
    return blocked.getOrder()[0];
  return 1;
}

/// A new buffer of `type` holding `tile`, stored once where `tile` is
/// defined (a loop-invariant tile thus before its loop).
static Value storeOnce(Value tile, MemDescType type, Location loc) {
  OpBuilder builder(tile.getContext());
  if (Operation *def = tile.getDefiningOp())
    builder.setInsertionPointAfter(def);
  else
    builder.setInsertionPointToStart(cast<BlockArgument>(tile).getOwner());
  Value buffer = LocalAllocOp::create(builder, loc, type);
  LocalStoreOp::create(builder, loc, tile, buffer);
  return buffer;
}

/// B of `dot` in shared memory in a layout wgmma reads, adding the buffer
/// and the store for a B in registers (once per B); null if there is none.
static Value operandBInSharedMemory(DotOp dot,
                                    DenseMap<Value, Value> &buffers) {
  Value b = dot.getB();
  if (auto desc = dyn_cast<MemDescType>(b.getType())) {
    auto a = cast<TileType>(dot.getA().getType());
    auto acc = cast<TileType>(dot.getAcc().getType());
    return whyNotWarpGroupDot(a, desc, acc).empty() ? b : Value();
  }
  if (Value buffer = buffers.lookup(b))
    return buffer;
  auto tile = cast<TileType>(b.getType());
  unsigned preferred = runDimension(tile);
  MemDescType type;
  for (unsigned dim : {preferred, 1 - preferred})
    if ((type = getWarpGroupDotOperandB(dot.getContext(), tile.getShape(),
                                        tile.getElementType(), dim)))
      break;
  if (!type)
    return {};
  return buffers[b] = storeOnce(b, type, dot.getLoc());
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

/// Gives the dots of `kernel` that read a loop-invariant A that A from a
/// shared buffer, one per tile, unless that buffer would take the kernel's
/// shared memory past what a Hopper CTA may use.
static void moveInvariantOperandsA(func::FuncOp kernel) {
  llvm::MapVector<Value, SmallVector<WarpGroupDotOp>> readers;
  kernel.walk([&](WarpGroupDotOp dot) {
    if (Value tile = invariantTileA(dot))
      readers[tile].push_back(dot);
  });
  for (auto &[tile, dots] : readers) {
    auto type = cast<TileType>(tile.getType());
    Value buffer =
        storeOnce(tile,
                  getWarpGroupDotOperandA(kernel.getContext(), type.getShape(),
                                          type.getElementType()),
                  dots.front().getLoc());
    SmallVector<Value> registers;
    llvm::SetVector<Operation *> conversions;
    for (WarpGroupDotOp dot : dots) {
      registers.push_back(dot.getA());
      if (auto convert = dot.getA().getDefiningOp<ConvertLayoutOp>())
        conversions.insert(convert);
      dot.getAMutable().assign(buffer);
    }
    // Conversions no dot reads any more take no scratch memory in the
    // measure below: out of the IR, in order, until it is decided.
    SmallVector<std::pair<Operation *, Operation *>> detached;
    for (Operation *convert : conversions)
      if (convert->use_empty()) {
        detached.emplace_back(convert, convert->getNextNode());
        convert->remove();
      }
    if (getKernelSharedBytes(kernel) <= kMaxSharedBytes) {
      for (auto [convert, next] : detached)
        convert->erase();
      continue;
    }
    for (auto [convert, next] : llvm::reverse(detached))
      next->getBlock()->getOperations().insert(Block::iterator(next), convert);
    for (auto [dot, a] : llvm::zip(dots, registers))
      dot.getAMutable().assign(a);
    Operation *store = *buffer.getUsers().begin();
    store->erase();
    buffer.getDefiningOp()->erase();
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
    DenseMap<Value, Value> buffers;
    for (DotOp dot : dots) {
      auto a = cast<TileType>(dot.getA().getType());
      auto acc = cast<TileType>(dot.getAcc().getType());
      if (!whyNotWarpGroupDot(a, MemDescType(), acc).empty())
        continue;
      Value b = operandBInSharedMemory(dot, buffers);
      if (!b)
        continue;
      OpBuilder builder(dot);
      Location loc = dot.getLoc();
      auto product = WarpGroupDotOp::create(builder, loc, acc, dot.getA(), b,
                                            dot.getAcc(), Value());
      if (dot->hasAttr(TesselDialect::getRotateAttrName()))
        product->setAttr(TesselDialect::getRotateAttrName(),
                         builder.getUnitAttr());
      auto wait =
          WarpGroupDotWaitOp::create(builder, loc, ValueRange{product}, 0);
      dot.getResult().replaceAllUsesWith(wait.getResults().front());
      dot.erase();
    }
    // Measured with every dot in its final form: mma.sync dots stage their
    // operands in scratch memory, warpgroup dots do not.
    for (auto kernel : module.getOps<func::FuncOp>())
      moveInvariantOperandsA(kernel);
  }
};

} // namespace
