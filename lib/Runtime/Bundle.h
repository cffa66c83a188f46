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
  /// A kernel of the bundle launched right after this one, on the same
  /// stream, grid, arguments and workspace (bundle version 2); empty: none.
  std::string then;
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

  /// Expressions read slot i for parameter i, and this slot for num_ctas.
  size_t numCtasSlot() const { return params.size(); }
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
