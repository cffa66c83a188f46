//===- Bundle.h - The kernel bundle format ----------------------*- C++ -*-===//
//
// A bundle is what the compiler hands the runtime: one PTX module plus, for
// each kernel in it, the signature, resources and launch rule needed to launch
// it without glue code. docs/bundle.md describes the file; this is its
// checked, in-memory form.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_BUNDLE_H
#define TESSEL_RUNTIME_BUNDLE_H

#include "Runtime/Expr.h"
#include "tessel/Runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel {

struct LaunchRule {
  enum class Kind { Grid, Persistent };
  Kind kind = Kind::Grid;
  /// Grid: x, y, z (missing ones are 1); empty when the caller gives the
  /// grid at each launch.
  std::vector<Expr> grid;
  /// Persistent: an upper bound on the number of CTAs (the work available).
  std::optional<Expr> maxCtas;
  /// Persistent: CTAs per SM; 0 means as many as fit (occupancy).
  int ctasPerSM = 0;
  /// Zeroed scratch memory passed as an extra, last pointer parameter; may
  /// use the name num_ctas (the grid size).
  std::optional<Expr> workspaceBytes;
  /// When the runtime zeroes the workspace: before every launch, or (bundle
  /// version 5) only when it is allocated or a launch asks for another size,
  /// for kernels that leave it as zeroed as they found it.
  enum class Zeroing { PerLaunch, PerSize };
  Zeroing workspaceZeroing = Zeroing::PerLaunch;
  /// A kernel of the bundle launched right after this one, on the same
  /// stream, grid, arguments and workspace (bundle version 2); empty: none.
  std::string then;
  /// CTAs per thread-block cluster, along x (bundle version 6): the grid's x
  /// is a multiple of it. 1: no clusters.
  int cluster = 1;
};

/// A TMA tensor map (bundle version 4): a CUtensorMap the runtime encodes
/// at each launch with cuTensorMapEncodeTiled and passes by value after the
/// arguments.
struct TensorMapInfo {
  /// The index of the ptr parameter giving the base address.
  uint32_t param = 0;
  /// Element counts, innermost first; their number is the rank (1 to 5).
  std::vector<Expr> dims;
  /// Elements between consecutive indices of dims 1.. (rank - 1 of them).
  std::vector<Expr> strides;
  /// The box each TMA copy moves, innermost first.
  std::vector<uint32_t> box;
  /// Bytes: 0, 32, 64 or 128.
  unsigned swizzle = 0;
  /// Of the parameter's element type, and its CUtensorMapDataType.
  unsigned elemBytes = 0;
  int dataType = 0;

  static constexpr size_t kMaxRank = 5;
};

struct KernelInfo {
  std::string name;
  std::string ptxEntry;
  int numWarps = 0;
  /// Dynamic shared memory per CTA, passed at launch.
  uint32_t sharedBytes = 0;
  /// The caller's parameters (the workspace pointer is not listed).
  std::vector<ParamInfo> params;
  std::vector<std::pair<std::string, int64_t>> constants;
  LaunchRule launch;
  /// Passed after the parameters, before the workspace pointer.
  std::vector<TensorMapInfo> tensorMaps;

  /// Expressions read slot i for parameter i, then these slots for num_ctas
  /// and grid_x, grid_y, grid_z (the launch's grid).
  size_t numCtasSlot() const { return params.size(); }
  size_t gridSlot(int axis) const { return params.size() + 1 + axis; }
  size_t numSlots() const { return params.size() + 4; }
};

/// A compute capability target such as sm_90 or sm_90a.
struct Target {
  int major = 0, minor = 0;
  /// sm_90a code runs only on exactly that architecture.
  bool archSpecific = false;
};
std::optional<Target> parseTarget(std::string_view text);

struct Bundle {
  std::string target;
  std::vector<KernelInfo> kernels;
  std::string ptx;
};

/// Reads and checks a bundle; `name` (usually the path) prefixes errors as
/// "NAME:LINE:COL: error: ...".
Result<Bundle> parseBundle(std::string_view text, std::string_view name);
Result<Bundle> readBundleFile(const std::string &path);

} // namespace tessel

#endif // TESSEL_RUNTIME_BUNDLE_H
