//===- WarpSpecialize.cpp - Tensor-map copies on a producer warpgroup -----===//
//
// A kernel marked tessel.warp_specialize (sm_90a) whose tile loads
// tessel-pipeline turned into tessel.tma_load becomes
//   %empty = mbarrier_alloc {arrivals = consumer threads}   (one per %full)
//   tessel.warp_specialize consumers {
//     ... the body; each tma_load(d -> %full[d % N]) becomes
//         mbarrier_arrive %empty[d % N] (under the copy's predicate) ...
//   } producer {
//     ... the body's loops cut down to the copies and the scalars they need;
//         before each copy: mbarrier_wait %empty[d % N], (d / N) % 2 ...
//   }
// Fill d of a buffer of N slots waits for phase d / N of its slot's empty
// barrier, which every consumer thread completes where the copy stood: so
// the producer writes the buffer only after the consumers have done
// everything the original program did before its copy (their reads of the
// data d - N that the slot held, and of any buffer sharing its memory).
// Phases cannot be confused: to arrive for fill d + N the consumers must
// first have waited for data that the producer copies after fill d.
//
// A pipelined loop inside another (attention's key loop, entered once per
// query block) starts each entry with copies ahead of its first iterations;
// arriving where they stand would hold them until the consumers reach the
// next entry, past everything between (the epilogue, the next query block's
// load), and the copies' latency would then stand in front of its first
// iteration. Where nothing between the end of the loop around's body and
// those copies touches a buffer that may share their slots' memory, the
// consumers arrive for them early (EarlyRelease): once before the first
// entry, then at the end of each entry's body, after its last use of shared
// memory, for the next entry's first rounds (those its own loop did not
// already arrive for).
//
//===----------------------------------------------------------------------===//

#include "WarpGroupDots.h"
#include "tessel/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELWARPSPECIALIZE
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// One producer warpgroup.
constexpr int64_t kProducerWarps = 4;
constexpr int64_t kWarpGroupThreads = 128;
/// The registers a producer warpgroup keeps: the least setmaxnreg allows.
constexpr int64_t kProducerRegisters = 24;
constexpr int64_t kRegisterFile = 65536;
/// The most a thread of a warpgroup may hold (setmaxnreg's bound rounded to
/// what a warpgroup pair can take from one producer warpgroup).
constexpr int64_t kMaxConsumerRegisters = 240;

/// Which fill of its barrier a copy is: `index` is `round % slots`, or a
/// constant below `slots` (its own round).
static FailureOr<Value> copyRound(TMALoadOp copy) {
  int64_t slots = cast<MBarriersType>(copy.getBarriers().getType()).getCount();
  Value index = copy.getIndex();
  APInt c;
  if (matchPattern(index, m_ConstantInt(&c)) && c.getSExtValue() < slots)
    return index;
  if (auto rem = index.getDefiningOp<arith::RemSIOp>())
    if (matchPattern(rem.getRhs(), m_ConstantInt(&c)) &&
        c.getSExtValue() == slots)
      return rem.getLhs();
  return copy.emitOpError()
         << "cannot be moved to a producer warpgroup: its barrier slot is "
            "neither a constant nor a round modulo the "
         << slots << " slots";
}

/// The ops of a kernel body the producer runs: the copies, what computes
/// their operands, and the loops and branches around them (with only the
/// loop-carried values and results those need).
class ProducerSlice {
public:
  explicit ProducerSlice(func::FuncOp kernel) : kernel(kernel) {}

  void addRoot(Operation *op) { markOp(op); }

  void run() {
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        for (Value bound :
             {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
          markValue(bound);
        continue;
      }
      if (auto branch = dyn_cast<scf::IfOp>(op)) {
        markValue(branch.getCondition());
        continue;
      }
      for (Value operand : op->getOperands())
        markValue(operand);
    }
  }

  bool contains(Operation *op) const { return live.contains(op); }

  /// The first op the producer would run that it cannot: one that writes
  /// memory, waits, or computes tiles (which live on the consumer warps).
  Operation *findUnmovable() const {
    for (Operation *op : live) {
      if (isa<scf::ForOp, scf::IfOp, TMALoadOp, LocalAllocOp, MBarrierAllocOp,
              MemDescIndexOp>(op))
        continue;
      if (!isMemoryEffectFree(op) ||
          llvm::any_of(op->getResultTypes(), llvm::IsaPred<TileType>))
        return op;
    }
    return nullptr;
  }

  /// Clones the live ops of `from` at `b`, calling `beforeCopy` ahead of
  /// each cloned tessel.tma_load.
  void clone(Block &from, OpBuilder &b, IRMapping &map,
             function_ref<void(TMALoadOp, OpBuilder &, IRMapping &)> beforeCopy)
      const {
    for (Operation &op : from.without_terminator()) {
      if (!live.contains(&op))
        continue;
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        cloneLoop(loop, b, map, beforeCopy);
        continue;
      }
      if (auto branch = dyn_cast<scf::IfOp>(op)) {
        cloneIf(branch, b, map, beforeCopy);
        continue;
      }
      if (auto copy = dyn_cast<TMALoadOp>(op))
        beforeCopy(copy, b, map);
      b.clone(op, map);
    }
  }

private:
  SmallVector<unsigned> liveIndices(Operation *op) const {
    SmallVector<unsigned> kept;
    if (auto it = liveResults.find(op); it != liveResults.end())
      kept.assign(it->second.begin(), it->second.end());
    llvm::sort(kept);
    return kept;
  }

  static SmallVector<Value> pick(ValueRange values, ArrayRef<unsigned> kept,
                                 IRMapping &map) {
    return llvm::map_to_vector(
        kept, [&](unsigned i) { return map.lookupOrDefault(values[i]); });
  }

  void cloneLoop(scf::ForOp loop, OpBuilder &b, IRMapping &map,
                 function_ref<void(TMALoadOp, OpBuilder &, IRMapping &)>
                     beforeCopy) const {
    SmallVector<unsigned> kept = liveIndices(loop);
    auto copy = scf::ForOp::create(b, loop.getLoc(),
                                   map.lookupOrDefault(loop.getLowerBound()),
                                   map.lookupOrDefault(loop.getUpperBound()),
                                   map.lookupOrDefault(loop.getStep()),
                                   pick(loop.getInitArgs(), kept, map));
    map.map(loop.getInductionVar(), copy.getInductionVar());
    for (auto [i, k] : llvm::enumerate(kept))
      map.map(loop.getRegionIterArgs()[k], copy.getRegionIterArgs()[i]);
    Block *body = copy.getBody();
    if (body->mightHaveTerminator())
      body->getTerminator()->erase();
    OpBuilder inner = OpBuilder::atBlockEnd(body);
    clone(*loop.getBody(), inner, map, beforeCopy);
    scf::YieldOp::create(inner, loop.getLoc(),
                         pick(loop.getYieldedValues(), kept, map));
    for (auto [i, k] : llvm::enumerate(kept))
      map.map(loop.getResult(k), copy.getResult(i));
  }

  void cloneIf(scf::IfOp branch, OpBuilder &b, IRMapping &map,
               function_ref<void(TMALoadOp, OpBuilder &, IRMapping &)>
                   beforeCopy) const {
    SmallVector<unsigned> kept = liveIndices(branch);
    SmallVector<Type> types = llvm::map_to_vector(
        kept, [&](unsigned i) { return branch.getResult(i).getType(); });
    auto copy = scf::IfOp::create(b, branch.getLoc(), types,
                                  map.lookupOrDefault(branch.getCondition()),
                                  /*withElse=*/!branch.getElseRegion().empty());
    auto fill = [&](Region &from, Region &to) {
      if (from.empty())
        return;
      Block *block = &to.front();
      if (block->mightHaveTerminator())
        block->getTerminator()->erase();
      OpBuilder inner = OpBuilder::atBlockEnd(block);
      clone(from.front(), inner, map, beforeCopy);
      auto yield = cast<scf::YieldOp>(from.front().getTerminator());
      scf::YieldOp::create(inner, branch.getLoc(),
                           pick(yield.getOperands(), kept, map));
    };
    fill(branch.getThenRegion(), copy.getThenRegion());
    fill(branch.getElseRegion(), copy.getElseRegion());
    for (auto [i, k] : llvm::enumerate(kept))
      map.map(branch.getResult(k), copy.getResult(i));
  }

  void markOp(Operation *op) {
    for (; op && op != kernel; op = op->getParentOp())
      if (live.insert(op))
        worklist.push_back(op);
  }

  /// Result (or loop-carried value) `i` of a loop or branch is needed.
  void markResult(Operation *op, unsigned i) {
    markOp(op);
    if (!liveResults[op].insert(i).second)
      return;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      markValue(loop.getInitArgs()[i]);
      markValue(loop.getYieldedValues()[i]);
      return;
    }
    auto branch = cast<scf::IfOp>(op);
    markValue(branch.thenYield().getOperand(i));
    if (!branch.getElseRegion().empty())
      markValue(branch.elseYield().getOperand(i));
  }

  void markValue(Value v) {
    if (auto result = dyn_cast<OpResult>(v)) {
      Operation *def = result.getOwner();
      if (isa<scf::ForOp, scf::IfOp>(def))
        markResult(def, result.getResultNumber());
      else
        markOp(def);
      return;
    }
    auto arg = cast<BlockArgument>(v);
    if (auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
      if (arg.getArgNumber() > 0)
        markResult(loop, arg.getArgNumber() - 1);
  }

  func::FuncOp kernel;
  SetVector<Operation *> live;
  SmallVector<Operation *> worklist;
  DenseMap<Operation *, DenseSet<unsigned>> liveResults;
};

/// Whether `barrier` only orders earlier reads before a copy's refill: the
/// next op that touches memory is a tessel.tma_load.
static bool guardsRefill(BarrierOp barrier) {
  for (Operation *op = barrier->getNextNode(); op; op = op->getNextNode()) {
    if (isa<TMALoadOp>(op))
      return true;
    if (!isMemoryEffectFree(op))
      return false;
  }
  return false;
}

/// Whether `op` or an op nested in it touches a shared-memory buffer: takes
/// a memdesc, or waits for warpgroup dots that may read one.
static bool touchesBuffers(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        if (isa<WarpGroupDotWaitOp>(nested) ||
            llvm::any_of(nested->getOperandTypes(),
                         [](Type t) { return isa<MemDescType>(t); }))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// The copies ahead of a pipelined loop's first iterations, inside a loop
/// around it, that the consumers may arrive for early (see the file
/// comment). The copies are rounds `count + k`, k = 0 .. ahead - 1, of the
/// ring's count of rounds before this entry (an iteration argument of
/// `around`); `next` is the count after it.
struct EarlyRelease {
  scf::ForOp around;
  Value count, next;
  SmallVector<TMALoadOp> copies;
  /// The last op of the body of `around` that touches shared memory.
  Operation *after = nullptr;
};

/// The early release of ring `full`'s first copies, if they qualify: its
/// consumers wait for it in one loop `loop`, directly inside another, with
/// the copies ahead of `loop` just before it in the same block, rounds
/// count + 0, 1, ... of an iteration argument of the loop around; and every
/// buffer touched before them in that body is also used inside `loop` or
/// lives outside the loop around (either way live while the ring's buffers
/// are, so never sharing their memory).
static std::optional<EarlyRelease>
findEarlyRelease(Value full, ArrayRef<TMALoadOp> copies,
                 const DenseMap<Operation *, Value> &rounds) {
  scf::ForOp loop;
  for (Operation *user : full.getUsers()) {
    if (!isa<MBarrierWaitOp>(user))
      continue;
    auto l = user->getParentOfType<scf::ForOp>();
    if (!l || (loop && l != loop))
      return std::nullopt;
    loop = l;
  }
  auto around = loop ? dyn_cast<scf::ForOp>(loop->getParentOp()) : nullptr;
  if (!around)
    return std::nullopt;
  EarlyRelease release{around};
  SmallVector<int64_t> offsets;
  for (TMALoadOp copy : copies) {
    if (copy.getBarriers() != full || loop->isProperAncestor(copy))
      continue;
    if (copy->getBlock() != loop->getBlock() || !copy->isBeforeInBlock(loop))
      return std::nullopt;
    Value round = rounds.lookup(copy), count = round;
    int64_t k = 0;
    APInt c;
    if (auto add = round.getDefiningOp<arith::AddIOp>();
        add && matchPattern(add.getRhs(), m_ConstantInt(&c))) {
      count = add.getLhs();
      k = c.getSExtValue();
    }
    auto arg = dyn_cast<BlockArgument>(count);
    if (!arg || arg.getOwner() != around.getBody() || arg.getArgNumber() == 0 ||
        (release.count && release.count != count))
      return std::nullopt;
    release.count = count;
    release.copies.push_back(copy);
    offsets.push_back(k);
  }
  int64_t slots = cast<MBarriersType>(full.getType()).getCount();
  int64_t ahead = release.copies.size();
  llvm::sort(offsets);
  if (ahead == 0 || ahead >= slots ||
      offsets != llvm::to_vector(llvm::seq<int64_t>(0, ahead)))
    return std::nullopt;
  Block *body = around.getBody();
  release.next = body->getTerminator()->getOperand(
      cast<BlockArgument>(release.count).getArgNumber() - 1);

  // (`copies` are in program order: the first is the earliest.)
  Operation *first = release.copies.front();
  auto liveWithRing = [&](Value memdesc) {
    Operation *buffer = bufferOf(memdesc);
    return !buffer || !around->isAncestor(buffer) ||
           llvm::any_of(
               accessesOf(buffer->getResult(0)),
               [&](Operation *access) { return loop->isAncestor(access); });
  };
  for (Operation &op : body->without_terminator()) {
    if (&op == first)
      break;
    WalkResult shared = op.walk([&](Operation *nested) {
      for (Value v : nested->getOperands())
        if (isa<MemDescType>(v.getType()) && !liveWithRing(v))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (shared.wasInterrupted())
      return std::nullopt;
  }
  release.after = loop;
  for (Operation &op : body->without_terminator())
    if (release.after->isBeforeInBlock(&op) && touchesBuffers(&op))
      release.after = &op;
  Operation *def = release.next.getDefiningOp();
  if (!def || def->getBlock() != body)
    return std::nullopt;
  if (release.after->isBeforeInBlock(def))
    release.after = def;
  return release;
}

/// The consumers' arrivals for `release`'s copies on their `empty` ring:
/// in the first entry where the copies stand, whether they copy or not
/// (rounds 0 .. ahead - 1); at the end of each entry's body, for the rounds
/// next + k that the loop did not arrive for itself (count + k + ahead ..
/// next - 1 + ahead it did, where the copies existed: those at or past
/// count + ahead), so each round gets one arrival.
static void arriveEarly(const EarlyRelease &release, Value empty,
                        DenseSet<Operation *> &released) {
  scf::ForOp around = release.around;
  int64_t ahead = release.copies.size();
  int64_t slots = cast<MBarriersType>(empty.getType()).getCount();
  OpBuilder before(release.copies.front());
  Value first = arith::CmpIOp::create(
      before, release.copies.front()->getLoc(), arith::CmpIPredicate::eq,
      around.getInductionVar(), around.getLowerBound());
  for (TMALoadOp copy : release.copies) {
    OpBuilder at(copy);
    MBarrierArriveOp::create(at, copy.getLoc(), empty, copy.getIndex(), first);
    released.insert(copy);
  }
  OpBuilder at(release.after->getContext());
  at.setInsertionPointAfter(release.after);
  Location loc = release.copies.front()->getLoc();
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(at, loc, at.getI32IntegerAttr(v));
  };
  Value trips =
      arith::SubIOp::create(at, loc, release.next, release.count).getResult();
  for (int64_t k = 0; k < ahead; ++k) {
    // (One op built per statement: the IR's order must not depend on the
    // compiler's order of evaluating arguments.)
    Value offset = i32(k);
    Value round = arith::AddIOp::create(at, loc, release.next, offset);
    Value n = i32(slots);
    Value index = arith::RemSIOp::create(at, loc, round, n);
    Value reach = arith::AddIOp::create(at, loc, trips, offset);
    Value bound = i32(ahead);
    Value fresh =
        arith::CmpIOp::create(at, loc, arith::CmpIPredicate::sge, reach, bound);
    MBarrierArriveOp::create(at, loc, empty, index, fresh);
  }
}

static LogicalResult warpSpecialize(func::FuncOp kernel) {
  Block &body = kernel.getBody().front();
  SmallVector<TMALoadOp> copies;
  kernel.walk([&](TMALoadOp copy) { copies.push_back(copy); });
  if (copies.empty())
    return success();
  auto warpsAttr =
      kernel->getAttrOfType<IntegerAttr>(TesselDialect::getNumWarpsAttrName());
  int64_t warps = warpsAttr ? warpsAttr.getInt() : 4;
  if (warps % 4)
    return kernel.emitError()
           << "warp_specialize needs whole consumer warpgroups: num_warps "
              "must be a multiple of 4, got "
           << warps;
  DenseMap<Operation *, Value> rounds;
  for (TMALoadOp copy : copies) {
    FailureOr<Value> round = copyRound(copy);
    if (failed(round))
      return failure();
    rounds[copy] = *round;
  }

  ProducerSlice slice(kernel);
  for (TMALoadOp copy : copies)
    slice.addRoot(copy);
  slice.run();
  if (Operation *op = slice.findUnmovable())
    return op->emitError()
           << "warp_specialize: the tensor-map copies depend on this op, "
              "which a producer warpgroup cannot run (it writes memory, "
              "waits or computes a tile)";

  // Barriers first, initialised by every thread before the split; one
  // "empty" barrier per slot of each copy's "full" barriers.
  SmallVector<MBarrierAllocOp> fulls;
  kernel.walk([&](MBarrierAllocOp alloc) { fulls.push_back(alloc); });
  for (MBarrierAllocOp full : llvm::reverse(fulls))
    full->moveBefore(&body, body.begin());
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  b.setInsertionPointAfter(fulls.back());
  DenseMap<Value, Value> empties;
  int64_t consumerThreads = 32 * warps;
  for (MBarrierAllocOp full : fulls) {
    auto empty = MBarrierAllocOp::create(b, full.getLoc(), full.getType());
    empty.setArrivals(consumerThreads);
    empties[full.getResult()] = empty.getResult();
  }

  // Buffers the producer fills are the consumers' (tessel.buffer numbers).
  int64_t buffers = 0;
  kernel.walk([&](LocalAllocOp alloc) {
    if (slice.contains(alloc))
      alloc->setAttr(WarpSpecializeOp::getBufferAttrName(),
                     b.getI64IntegerAttr(buffers++));
  });

  // The split; the consumers take the whole body.
  int64_t consumerGroups = warps / 4;
  int64_t launchThreads = consumerThreads + 32 * kProducerWarps;
  // Each thread enters with `even` registers (ptxas's count for one CTA per
  // SM), and setmaxnreg only moves registers within the CTA's allocation:
  // what the consumers take the producer must have given back. (Counted
  // from the whole register file instead, 16 consumer warps asked for 120
  // where 112 were free, and their setmaxnreg.inc waited forever on an
  // H200.)
  int64_t even = std::min<int64_t>(kRegisterFile / launchThreads / 8 * 8, 256);
  int64_t consumerRegisters = std::min(
      kMaxConsumerRegisters,
      (launchThreads * even - 32 * kProducerWarps * kProducerRegisters) /
          (kWarpGroupThreads * consumerGroups) / 8 * 8);
  auto split =
      WarpSpecializeOp::create(b, kernel.getLoc(), warps, kProducerWarps,
                               /*producer_registers=*/IntegerAttr(),
                               /*consumer_registers=*/IntegerAttr());
  // (Such a kernel then takes an SM alone: see getKernelSharedBytes.)
  if (consumerRegisters > even) {
    split.setProducerRegisters(kProducerRegisters);
    split.setConsumerRegisters(consumerRegisters);
  }
  Block *consumers = new Block;
  split.getConsumers().push_back(consumers);
  consumers->getOperations().splice(consumers->end(), body.getOperations(),
                                    std::next(split->getIterator()),
                                    std::prev(body.end()));
  Block *producer = new Block;
  split.getProducer().push_back(producer);

  // The producer: each copy after its slot's consumers are done with it.
  OpBuilder pb = OpBuilder::atBlockEnd(producer);
  IRMapping map;
  slice.clone(
      *consumers, pb, map, [&](TMALoadOp copy, OpBuilder &at, IRMapping &m) {
        Location loc = copy.getLoc();
        int64_t slots =
            cast<MBarriersType>(copy.getBarriers().getType()).getCount();
        auto i32 = [&](int64_t v) -> Value {
          return arith::ConstantOp::create(at, loc, at.getI32IntegerAttr(v));
        };
        Value round = m.lookupOrDefault(rounds.lookup(copy));
        Value n = i32(slots);
        Value half = at.createOrFold<arith::DivSIOp>(loc, round, n);
        Value one = i32(1);
        Value parity = at.createOrFold<arith::AndIOp>(loc, half, one);
        Value empty = empties.lookup(copy.getBarriers());
        Value index = m.lookupOrDefault(copy.getIndex());
        auto wait = [&](OpBuilder &w) {
          MBarrierWaitOp::create(w, loc, empty, index, parity);
        };
        Value issue = copy.getIssue();
        if (!issue) {
          wait(at);
          return;
        }
        auto guard = scf::IfOp::create(at, loc, m.lookupOrDefault(issue),
                                       /*withElse=*/false);
        OpBuilder inside = guard.getThenBodyBuilder();
        wait(inside);
      });

  // The consumers: arrive where each copy was; drop the refill guards.
  SmallVector<BarrierOp> guards;
  consumers->walk([&](BarrierOp barrier) {
    if (guardsRefill(barrier))
      guards.push_back(barrier);
  });
  for (BarrierOp guard : guards)
    guard.erase();
  DenseSet<Operation *> released;
  for (MBarrierAllocOp full : fulls) {
    std::optional<EarlyRelease> release =
        findEarlyRelease(full.getResult(), copies, rounds);
    if (release)
      arriveEarly(*release, empties.lookup(full.getResult()), released);
  }
  for (TMALoadOp copy : copies) {
    if (!released.contains(copy)) {
      OpBuilder at(copy);
      MBarrierArriveOp::create(at, copy.getLoc(),
                               empties.lookup(copy.getBarriers()),
                               copy.getIndex(), copy.getIssue());
    }
    copy.erase();
  }
  return success();
}

struct WarpSpecializePass
    : tessel::impl::TesselWarpSpecializeBase<WarpSpecializePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!hasWarpGroupMma(module))
      return;
    for (auto kernel : module.getOps<func::FuncOp>())
      if (kernel->hasAttr(TesselDialect::getWarpSpecializeAttrName()) &&
          failed(warpSpecialize(kernel)))
        return signalPassFailure();
  }
};

} // namespace
