//===- Launch.h - From a kernel's launch rule to launch dimensions -*- C++ -*-//
//
// Host-only, so argument checking and grid sizing are testable without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_LAUNCH_H
#define TESSEL_RUNTIME_LAUNCH_H

#include "Runtime/Bundle.h"
#include "tessel/Runtime.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace tessel {

/// A tensor map's extent at one launch, as cuTensorMapEncodeTiled takes it;
/// entries past the rank are 0.
struct TensorMapShape {
  uint64_t dims[TensorMapInfo::kMaxRank] = {};
  /// In bytes, for dims 1 and up.
  uint64_t strides[TensorMapInfo::kMaxRank - 1] = {};

  bool operator==(const TensorMapShape &other) const;
};

struct LaunchPlan {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t blockThreads = 0;
  uint32_t sharedBytes = 0;
  /// CTAs per thread-block cluster along x; 1: a launch without clusters.
  uint32_t cluster = 1;
  uint64_t workspaceBytes = 0;
  /// One per tensor map of the kernel; none when the plan is empty.
  std::vector<TensorMapShape> tensorMaps;

  /// A zero dimension means there is nothing to do.
  bool empty() const { return grid[0] == 0 || grid[1] == 0 || grid[2] == 0; }
};

/// Whether `address` can be a tensor map's base: TMA reads 16-byte aligned
/// tensors only.
inline bool tensorMapBaseFits(uint64_t address) { return address % 16 == 0; }

/// Checks the number and kinds of `args` against the kernel's parameters,
/// that they keep the parameters' multiple_of hints and that the pointers
/// tensor maps are made of are 16-byte aligned.
Status checkArgs(const KernelInfo &k, const std::vector<Arg> &args);

/// Checks `args` and evaluates the launch rule. Persistent grids are capped
/// at `numSMs` x `blocksPerSM` (the occupancy of this kernel) and, for a
/// kernel with clusters, at `maxClusters` clusters (when known) and rounded
/// down to whole clusters, so every CTA is resident at once and CTAs that
/// spin-wait on each other cannot deadlock. `grid`, when given, replaces the
/// kernel's grid formula; a kernel without one needs it. Then, unless the
/// grid is empty, evaluates the tensor maps' dims and strides on that grid
/// and checks them.
Result<LaunchPlan> planLaunch(const KernelInfo &k, const std::vector<Arg> &args,
                              int numSMs, int blocksPerSM,
                              const Grid *grid = nullptr,
                              std::optional<int> maxClusters = std::nullopt);

/// The launch of `next`, the 'then' of the kernel `plan` launches: the same
/// grid and workspace, `next`'s own block, shared memory and cluster size
/// (its tensor maps are its leader's, passed with the arguments).
LaunchPlan planFollowUp(const KernelInfo &next, const LaunchPlan &plan);

} // namespace tessel

#endif // TESSEL_RUNTIME_LAUNCH_H
