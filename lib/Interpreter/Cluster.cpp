//===- Cluster.cpp - Thread-block clusters: turns, barrier, shared memory -===//
//
// The barrier's rule, as PTX's barrier.cluster has it: each CTA alternates
// arrive and wait; its k-th wait completes once every other CTA of the
// cluster has arrived k times or exited. Breaking the alternation is an
// error here (undefined behaviour on the GPU).
//
//===----------------------------------------------------------------------===//

#include "Cluster.h"
#include "Executor.h"

#include "tessel/TesselDialect.h"

#include <limits>
#include <thread>

using namespace mlir;
namespace ts = mlir::tessel;

namespace tessel {
namespace detail {

bool ClusterRun::phaseComplete(int64_t rank) const {
  int64_t phase = ranks[rank].waits + 1;
  for (int64_t r = 0; r < size(); ++r)
    if (r != rank && !ranks[r].done && ranks[r].arrivals < phase)
      return false;
  return true;
}

bool ClusterRun::canRun(int64_t rank) const {
  const Rank &r = ranks[rank];
  return !r.done && (!r.waiting || phaseComplete(rank));
}

void ClusterRun::passTurn() {
  turn = -1;
  for (int64_t r = 0; r < size() && !aborted; ++r)
    if (canRun(r)) {
      turn = r;
      break;
    }
  turnTaken.notify_all();
}

LogicalResult ClusterRun::run(
    function_ref<LogicalResult(int64_t rank, std::string &error)> program,
    std::string &error) {
  std::vector<std::string> errors(size());
  std::optional<int64_t> firstFailure;
  turn = 0;
  auto runRank = [&](int64_t rank) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      turnTaken.wait(lock, [&] { return turn == rank || aborted; });
      if (turn != rank) {
        ranks[rank].done = true;
        return;
      }
    }
    bool ok = succeeded(program(rank, errors[rank]));
    std::unique_lock<std::mutex> lock(mutex);
    ranks[rank].done = true;
    if (!ok && !firstFailure)
      firstFailure = rank;
    aborted |= !ok;
    passTurn();
  };
  if (size() == 1) {
    runRank(0);
  } else {
    std::vector<std::thread> threads;
    for (int64_t rank = 0; rank < size(); ++rank)
      threads.emplace_back(runRank, rank);
    for (std::thread &t : threads)
      t.join();
  }
  if (!firstFailure)
    return success();
  error = errors[*firstFailure];
  return failure();
}

std::optional<std::string> ClusterRun::arrive(int64_t rank) {
  std::lock_guard<std::mutex> lock(mutex);
  Rank &me = ranks[rank];
  if (me.arrivals > me.waits)
    return std::string("cluster_arrive twice without a cluster_wait between "
                       "them");
  ++me.arrivals;
  return std::nullopt;
}

std::optional<std::string> ClusterRun::wait(int64_t rank) {
  std::unique_lock<std::mutex> lock(mutex);
  Rank &me = ranks[rank];
  if (me.arrivals == me.waits)
    return std::string("cluster_wait without a cluster_arrive before it");
  if (!phaseComplete(rank)) {
    me.waiting = true;
    passTurn();
    turnTaken.wait(lock, [&] { return turn == rank || aborted; });
    me.waiting = false;
    if (turn != rank)
      return std::string("stopped: another CTA of the cluster failed");
  }
  ++me.waits;
  return std::nullopt;
}

int ClusterRun::bufferOf(Operation *op, int64_t rank, Memory &memory) {
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = buffers.try_emplace({op, rank}, -1);
  if (!inserted)
    return it->second;
  auto buffer = cast<ts::SharedBufferOp>(op);
  Type pointee = buffer.getType().getPointeeType();
  auto elements = size_t(buffer.getElements());
  int id = memory.allocate(*dtypeOf(pointee), elements);
  if (isa<FloatType>(pointee))
    for (size_t i = 0; i < elements; ++i)
      memory.setFloat(id, i, std::numeric_limits<double>::quiet_NaN());
  it->second = id;
  owners[id] = {op, rank};
  return id;
}

std::optional<std::pair<Operation *, int64_t>>
ClusterRun::ownerOf(int buffer) const {
  auto it = owners.find(buffer);
  if (it == owners.end())
    return std::nullopt;
  return it->second;
}

Executor::OptResult Executor::execClusterOp(Operation *op) {
  if (auto buffer = dyn_cast<ts::SharedBufferOp>(op)) {
    RtValue out = RtValue::lanes(ElemKind::Ptr, {});
    out.ptrs[0] = {cluster->bufferOf(op, clusterRank, memory), 0};
    set(buffer.getResult(), std::move(out));
    return success();
  }
  if (auto map = dyn_cast<ts::ClusterMapOp>(op)) {
    PtrLane ptr = get(map.getPtr()).ptrs[0];
    int64_t rank = get(map.getRank()).ints[0];
    auto owner = cluster->ownerOf(ptr.buffer);
    if (!owner)
      return fail(op, "cluster_map of a pointer that is not into a "
                      "shared_buffer");
    if (rank < 0 || rank >= cluster->size())
      return fail(op, "cluster_map to CTA " + Twine(rank) +
                          " of a cluster of " + Twine(cluster->size()));
    RtValue out = RtValue::lanes(ElemKind::Ptr, {});
    out.ptrs[0] = {cluster->bufferOf(owner->first, rank, memory), ptr.offset};
    set(map.getResult(), std::move(out));
    return success();
  }
  std::optional<std::string> why;
  if (isa<ts::ClusterArriveOp>(op))
    why = cluster->arrive(clusterRank);
  else if (isa<ts::ClusterWaitOp>(op))
    why = cluster->wait(clusterRank);
  else
    return std::nullopt;
  if (why)
    return fail(op, *why);
  return success();
}

} // namespace detail
} // namespace tessel
