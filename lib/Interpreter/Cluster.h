//===- Cluster.h - The CTAs of one thread-block cluster (internal) -*- C++ -*-//
//
// A kernel with tessel.cluster C runs its grid cluster by cluster (in
// descending order, like programs); the C programs of a cluster share a
// barrier and each other's shared memory, so no sequential order runs them
// all: each runs on a thread of its own, and the threads take turns. Only
// the thread holding the turn executes ops, so the executors need no locks;
// a program gives the turn up when it finishes or waits at the barrier
// before every other program has arrived, and the turn goes to the lowest
// program that can run. So CTA 0, which usually gathers what the others
// write, runs first: if it reads before waiting for them, it reads the NaNs
// of an unwritten shared buffer. Each CTA alternates arrive and wait
// (checked), so the waiting CTA of the lowest phase can always go on once
// the CTAs still running have arrived: the barrier alone cannot deadlock. A
// CTA that fails stops its cluster.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_INTERPRETER_CLUSTER_H
#define TESSEL_LIB_INTERPRETER_CLUSTER_H

#include "tessel/Memory.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessel::detail {

class ClusterRun {
public:
  explicit ClusterRun(int64_t size) : ranks(size) {}

  int64_t size() const { return int64_t(ranks.size()); }

  /// Runs program(rank) for every rank, taking turns (see the file comment);
  /// on failure `error` is the first failure's text.
  mlir::LogicalResult
  run(llvm::function_ref<mlir::LogicalResult(int64_t rank, std::string &error)>
          program,
      std::string &error);

  /// The buffer of shared_buffer `op` in CTA `rank`, allocated on first use
  /// (by it or by a peer that maps it) with NaN floats: its contents start
  /// undefined.
  int bufferOf(mlir::Operation *op, int64_t rank, Memory &memory);
  /// The shared_buffer op and rank that `buffer` belongs to, if any.
  std::optional<std::pair<mlir::Operation *, int64_t>>
  ownerOf(int buffer) const;

  /// Counts one arrival of `rank`; an error text if it has arrived already
  /// without waiting since.
  std::optional<std::string> arrive(int64_t rank);
  /// Waits until every other program has arrived as often as `rank` has
  /// (or finished); an error text on misuse, or when another CTA of the
  /// cluster failed meanwhile.
  std::optional<std::string> wait(int64_t rank);

private:
  struct Rank {
    int64_t arrivals = 0, waits = 0;
    bool waiting = false, done = false;
  };
  bool canRun(int64_t rank) const;
  bool phaseComplete(int64_t rank) const;
  /// Gives the turn to the lowest program that can run (-1: none).
  void passTurn();

  std::vector<Rank> ranks;
  int64_t turn = -1;
  bool aborted = false;
  std::mutex mutex;
  std::condition_variable turnTaken;
  llvm::DenseMap<std::pair<mlir::Operation *, int64_t>, int> buffers;
  llvm::DenseMap<int, std::pair<mlir::Operation *, int64_t>> owners;
};

} // namespace tessel::detail

#endif // TESSEL_LIB_INTERPRETER_CLUSTER_H
