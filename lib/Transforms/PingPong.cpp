//===- PingPong.cpp - Consumer warpgroups take turns on the tensor cores --===//
//
// In a warp-specialised kernel (tessel.ping_pong, after
// tessel-warp-specialize) with n >= 2 consumer warpgroups, each loop of the
// consumers that issues warpgroup dots (and holds no such loop) issues them
// in turns: warpgroup w waits on named barrier 3 + w before its first dot of
// the iteration and, once its last dot of the iteration is issued, arrives on
// the barrier of warpgroup (w + 1) % n. While one warpgroup's products are on
// the tensor cores, the other runs its softmax (FlashAttention-3's ping-pong):
//   consumers {
//     if (w == n - 1) arrive(3 + 0)            -- warpgroup 0 starts
//     for ... { ...; wait(3 + w); dots; arrive(3 + (w + 1) % n); ... }
//     if (w == 0) wait(3 + 0)                  -- the last turn's arrival
//   }
// Each barrier counts 256 threads: its warpgroup's wait and the previous
// warpgroup's arrival. Loops run the same iterations in every warpgroup
// (they are the CTA's), so turns stay paired.
//
//===----------------------------------------------------------------------===//

#include "tessel/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELPINGPONG
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The first named barrier free for the turns (0 to 2: the CTA's and the
/// regions of tessel.warp_specialize).
constexpr int64_t kFirstTurnBarrier = 3;
/// A turn barrier's threads: one warpgroup waiting, one arriving.
constexpr int64_t kTurnThreads = 256;

static LogicalResult pingPong(func::FuncOp kernel) {
  WarpSpecializeOp split;
  kernel.walk([&](WarpSpecializeOp op) { split = op; });
  if (!split) {
    // Asked for warp specialisation but left whole (no tensor-map copy to
    // hand a producer, e.g. a specialisation that skips its copied loop):
    // no consumer warpgroups to take turns either.
    if (kernel->hasAttr(TesselDialect::getWarpSpecializeAttrName()))
      return success();
    return kernel.emitError()
           << "ping_pong needs a warp-specialised kernel (warp_specialize=True "
              "on sm_90a)";
  }
  int64_t groups = split.getConsumerWarps() / 4;
  if (groups < 2)
    return kernel.emitError() << "ping_pong needs at least two consumer "
                                 "warpgroups (num_warps >= 8), got "
                              << groups;
  if (kFirstTurnBarrier + groups > 16)
    return kernel.emitError() << "ping_pong: " << groups
                              << " warpgroups need more than the 16 hardware "
                                 "barriers";
  Block &consumers = split.getConsumers().front();
  // The loops that issue dots, but not one around another such loop: its
  // own dots (those run after an inner loop's last iteration) take no turn,
  // or a warpgroup would wait for its turn twice in a row.
  SmallVector<scf::ForOp> loops;
  consumers.walk([&](scf::ForOp loop) {
    if (llvm::any_of(loop.getBody()->getOperations(),
                     llvm::IsaPred<WarpGroupDotOp>))
      loops.push_back(loop);
  });
  llvm::erase_if(loops, [&](scf::ForOp outer) {
    return llvm::any_of(loops, [&](scf::ForOp inner) {
      return inner != outer && outer->isProperAncestor(inner);
    });
  });
  if (loops.empty())
    return success();

  Location loc = split.getLoc();
  OpBuilder b = OpBuilder::atBlockBegin(&consumers);
  auto i32 = [&](OpBuilder &at, int64_t v) -> Value {
    return arith::ConstantOp::create(at, loc, at.getI32IntegerAttr(v));
  };
  // One op per statement: the IR does not depend on the order in which a
  // compiler evaluates arguments.
  Value group = WarpGroupIdOp::create(b, loc, b.getI32Type());
  Value base = i32(b, kFirstTurnBarrier);
  Value mine = arith::AddIOp::create(b, loc, group, base);
  Value one = i32(b, 1);
  Value up = arith::AddIOp::create(b, loc, group, one);
  Value count = i32(b, groups);
  Value ring = arith::RemUIOp::create(b, loc, up, count);
  Value next = arith::AddIOp::create(b, loc, ring, base);
  auto onlyIn = [&](OpBuilder &at, int64_t g, auto body) {
    Value is = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::eq, group,
                                     i32(at, g));
    auto branch = scf::IfOp::create(at, loc, is, /*withElse=*/false);
    OpBuilder inside = branch.getThenBodyBuilder();
    body(inside);
  };
  onlyIn(b, groups - 1, [&](OpBuilder &at) {
    NamedBarrierArriveOp::create(at, loc, i32(at, kFirstTurnBarrier),
                                 kTurnThreads);
  });
  for (scf::ForOp loop : loops) {
    WarpGroupDotOp first, last;
    for (Operation &op : loop.getBody()->getOperations())
      if (auto dot = dyn_cast<WarpGroupDotOp>(op)) {
        first = first ? first : dot;
        last = dot;
      }
    OpBuilder at(first);
    NamedBarrierWaitOp::create(at, loc, mine, kTurnThreads);
    at.setInsertionPointAfter(last);
    NamedBarrierArriveOp::create(at, loc, next, kTurnThreads);
  }
  b.setInsertionPointToEnd(&consumers);
  onlyIn(b, 0, [&](OpBuilder &at) {
    NamedBarrierWaitOp::create(at, loc, i32(at, kFirstTurnBarrier),
                               kTurnThreads);
  });
  return success();
}

struct PingPongPass : tessel::impl::TesselPingPongBase<PingPongPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!hasWarpGroupMma(module))
      return;
    for (auto kernel : module.getOps<func::FuncOp>())
      if (kernel->hasAttr(TesselDialect::getPingPongAttrName()) &&
          failed(pingPong(kernel)))
        return signalPassFailure();
  }
};

} // namespace
