//===- Launch.cpp - From a kernel's launch rule to launch dimensions ------===//

#include "Runtime/Launch.h"
#include "Runtime/Support.h"

#include <algorithm>
#include <limits>

using namespace tessel;

/// The code compiled for the kernel relies on its multiple_of hints (vector
/// accesses need aligned addresses), so a broken one must not launch; nor may
/// a pointer the kernel was compiled without get an address.
static Status checkHint(const KernelInfo &k, const ParamInfo &p,
                        const Arg &arg) {
  bool fits = p.none                   ? arg.address() == 0
              : p.kind == ArgKind::Ptr ? p.keepsHint(arg.address())
                                       : p.keepsHint(arg.intValue());
  if (fits)
    return Status();
  std::string where = "kernel '" + k.name + "': argument '" + p.name + "' = ";
  if (p.none)
    return Status::error(where + hexAddress(arg.address()) +
                         ": the kernel was compiled with it None; pass a "
                         "null pointer (or compile it with a buffer)");
  const char *why = " (multiple_of in the kernel source)";
  if (p.kind == ArgKind::Ptr)
    return Status::error(where + hexAddress(arg.address()) + " is not " +
                         std::to_string(p.multipleOf) + "-byte aligned" + why);
  return Status::error(where + std::to_string(arg.intValue()) +
                       " is not a multiple of " + std::to_string(p.multipleOf) +
                       why);
}

bool TensorMapShape::operator==(const TensorMapShape &other) const {
  return std::equal(std::begin(dims), std::end(dims), std::begin(other.dims)) &&
         std::equal(std::begin(strides), std::end(strides),
                    std::begin(other.strides));
}

static Status checkTensorMapBase(const KernelInfo &k, const TensorMapInfo &map,
                                 uint64_t address) {
  if (tensorMapBaseFits(address))
    return Status();
  return Status::error("kernel '" + k.name + "': argument '" +
                       k.params[map.param].name + "' = " + hexAddress(address) +
                       " is not 16-byte aligned (its tensor map needs it)");
}

Status tessel::checkArgs(const KernelInfo &k, const std::vector<Arg> &args) {
  if (args.size() != k.params.size()) {
    std::string signature;
    for (const ParamInfo &p : k.params)
      signature +=
          (signature.empty() ? "" : ", ") + p.name + ": " + argKindName(p.kind);
    return Status::error("kernel '" + k.name + "' takes " +
                         std::to_string(k.params.size()) + " arguments (" +
                         signature + "), got " + std::to_string(args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamInfo &p = k.params[i];
    if (args[i].kind() != p.kind)
      return Status::error("kernel '" + k.name + "': argument " +
                           std::to_string(i) + " ('" + p.name + "') must be " +
                           argKindName(p.kind) + ", got " +
                           argKindName(args[i].kind()));
    TESSEL_TRY(checkHint(k, p, args[i]));
  }
  for (const TensorMapInfo &map : k.tensorMaps)
    TESSEL_TRY(checkTensorMapBase(k, map, args[map.param].address()));
  return Status();
}

static std::string tensorMapContext(const KernelInfo &k,
                                    const TensorMapInfo &map) {
  return "kernel '" + k.name + "': tensor map of '" + k.params[map.param].name +
         "': ";
}

namespace {

/// Evaluates a kernel's expressions and checks their ranges. Messages are
/// built only on failure: this runs on every launch.
struct Evaluator {
  const KernelInfo &k;
  std::vector<int64_t> slots;

  Result<int64_t> eval(const Expr &e, std::string_view what, int64_t hi) {
    Result<int64_t> v = e.eval(slots);
    if (v.ok() && *v >= 0 && *v <= hi)
      return v;
    std::string where = "kernel '" + k.name + "': " + std::string(what) + ": ";
    if (!v.ok())
      return Status::error(where + v.message());
    return Status::error(where + "'" + e.text() + "' = " + std::to_string(*v) +
                         ", outside [0, " + std::to_string(hi) + "]");
  }

  /// The dims and byte strides of `map`, within cuTensorMapEncodeTiled's
  /// limits.
  Status tensorMap(const TensorMapInfo &map, TensorMapShape &shape) {
    static constexpr int64_t maxDim = int64_t(1) << 32,
                             maxStrideBytes = int64_t(1) << 40;
    for (size_t i = 0; i < map.dims.size(); ++i) {
      const Expr &e = map.dims[i];
      Result<int64_t> dim = e.eval(slots);
      if (!dim.ok())
        return Status::error(tensorMapContext(k, map) + "dim " + dim.message());
      if (*dim > maxDim)
        return Status::error(tensorMapContext(k, map) + "dim '" + e.text() +
                             "' = " + std::to_string(*dim) +
                             " exceeds 2^32 elements");
      // TMA cannot describe an empty dimension; the kernel's loops over one
      // read nothing, so any extent does, and 1 is encoded.
      shape.dims[i] = uint64_t(std::max<int64_t>(*dim, 1));
    }
    for (size_t i = 0; i < map.strides.size(); ++i) {
      const Expr &e = map.strides[i];
      Result<int64_t> stride = e.eval(slots);
      if (!stride.ok())
        return Status::error(tensorMapContext(k, map) + "stride " +
                             stride.message());
      int64_t bytes;
      bool overflow =
          __builtin_mul_overflow(*stride, int64_t(map.elemBytes), &bytes);
      bool inRange = !overflow && bytes >= 0 && bytes < maxStrideBytes;
      if (inRange && bytes % 16 == 0) {
        shape.strides[i] = uint64_t(bytes);
        continue;
      }
      std::string value =
          tensorMapContext(k, map) + "stride '" + e.text() +
          "' = " + std::to_string(*stride) + " elements" +
          (overflow ? "" : " (" + std::to_string(bytes) + " bytes)");
      return Status::error(value + (inRange ? " is not a multiple of 16 bytes"
                                            : " is outside [0, 2^40) bytes"));
    }
    return Status();
  }
};

} // namespace

/// "CTAs of 128 threads with 1024 bytes of shared memory".
static std::string ctaText(const LaunchPlan &plan) {
  return "CTAs of " + std::to_string(plan.blockThreads) + " threads with " +
         std::to_string(plan.sharedBytes) + " bytes of shared memory";
}

static Status sizePersistentGrid(const KernelInfo &k, Evaluator &ev, int numSMs,
                                 int blocksPerSM,
                                 std::optional<int> maxClusters,
                                 LaunchPlan &plan) {
  const std::string where = "kernel '" + k.name + "': ";
  if (blocksPerSM <= 0)
    return Status::error(where + "no CTA of " +
                         std::to_string(plan.blockThreads) + " threads with " +
                         std::to_string(plan.sharedBytes) +
                         " bytes of shared memory fits on an SM");
  const LaunchRule &rule = k.launch;
  int perSM =
      rule.ctasPerSM ? std::min(rule.ctasPerSM, blocksPerSM) : blocksPerSM;
  int64_t ctas = int64_t(numSMs) * perSM;
  // A cluster's CTAs run on the SMs of one GPC, so fewer of them may be
  // resident than the SMs hold: an H200 holds 7 clusters of 16 CTAs at one
  // CTA per SM, not 8.
  const int64_t cluster = rule.cluster;
  if (cluster > 1) {
    if (maxClusters && *maxClusters == 0)
      return Status::error(where + "no cluster of " + std::to_string(cluster) +
                           " " + ctaText(plan) + " fits on the device");
    if (maxClusters)
      ctas = std::min(ctas, *maxClusters * cluster);
    if (ctas < cluster)
      return Status::error(
          where + "a cluster of " + std::to_string(cluster) + " " +
          ctaText(plan) + " does not fit: the device holds " +
          std::to_string(ctas) + " at once (" + std::to_string(numSMs) +
          " SMs x " + std::to_string(perSM) + " per SM)");
  }
  if (rule.maxCtas) {
    Result<int64_t> bound =
        ev.eval(*rule.maxCtas, "max_ctas", std::numeric_limits<int64_t>::max());
    if (!bound.ok())
      return bound.status();
    // Rounding up would exceed the bound and rounding down launch nothing.
    if (*bound > 0 && *bound < cluster)
      return Status::error(where + "max_ctas '" + rule.maxCtas->text() +
                           "' = " + std::to_string(*bound) +
                           " is less than its cluster size " +
                           std::to_string(cluster));
    ctas = std::min(ctas, *bound);
  }
  ctas = std::min<int64_t>(ctas, std::numeric_limits<int32_t>::max());
  plan.grid[0] = uint32_t(ctas - ctas % cluster);
  return Status();
}

Result<LaunchPlan> tessel::planLaunch(const KernelInfo &k,
                                      const std::vector<Arg> &args, int numSMs,
                                      int blocksPerSM, const Grid *grid,
                                      std::optional<int> maxClusters) {
  TESSEL_TRY(checkArgs(k, args));
  Evaluator ev{k, std::vector<int64_t>(k.numSlots(), 0)};
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].kind() == ArgKind::I32 || args[i].kind() == ArgKind::I64)
      ev.slots[i] = args[i].intValue();

  LaunchPlan plan;
  plan.blockThreads = uint32_t(k.numWarps) * 32;
  plan.sharedBytes = k.sharedBytes;
  const LaunchRule &rule = k.launch;
  plan.cluster = uint32_t(rule.cluster);
  if (rule.kind == LaunchRule::Kind::Persistent) {
    if (grid)
      return Status::error("kernel '" + k.name +
                           "': a persistent kernel sizes its own grid; "
                           "launch it without one");
    TESSEL_TRY(
        sizePersistentGrid(k, ev, numSMs, blocksPerSM, maxClusters, plan));
  } else if (grid) {
    static const uint32_t maxDims[3] = {uint32_t(INT32_MAX), 65535, 65535};
    for (int i = 0; i < 3; ++i) {
      if ((*grid)[i] > maxDims[i])
        return Status::error("kernel '" + k.name + "': grid[" +
                             std::to_string(i) +
                             "] = " + std::to_string((*grid)[i]) + " exceeds " +
                             std::to_string(maxDims[i]));
      plan.grid[i] = (*grid)[i];
    }
  } else if (rule.grid.empty()) {
    return Status::error("kernel '" + k.name +
                         "': its bundle has no grid formula; give the grid "
                         "at launch");
  } else {
    // CUDA's limits on grid dimensions (x, y, z).
    static const int64_t maxDims[3] = {std::numeric_limits<int32_t>::max(),
                                       65535, 65535};
    static const char *const names[3] = {"grid[0]", "grid[1]", "grid[2]"};
    for (size_t i = 0; i < rule.grid.size(); ++i) {
      Result<int64_t> dim = ev.eval(rule.grid[i], names[i], maxDims[i]);
      if (!dim.ok())
        return dim.status();
      plan.grid[i] = uint32_t(*dim);
    }
  }
  // The driver refuses a grid of partial clusters; say why before it does.
  if (plan.grid[0] % plan.cluster != 0)
    return Status::error("kernel '" + k.name +
                         "': grid[0] = " + std::to_string(plan.grid[0]) +
                         " is not a multiple of its cluster size " +
                         std::to_string(plan.cluster));
  if (rule.workspaceBytes && !plan.empty()) {
    ev.slots[k.numCtasSlot()] =
        int64_t(plan.grid[0]) * plan.grid[1] * plan.grid[2];
    Result<int64_t> bytes = ev.eval(*rule.workspaceBytes, "workspace_bytes",
                                    std::numeric_limits<int64_t>::max());
    if (!bytes.ok())
      return bytes.status();
    plan.workspaceBytes = uint64_t(*bytes);
  }
  if (plan.empty() || k.tensorMaps.empty())
    return plan;
  for (int axis = 0; axis < 3; ++axis)
    ev.slots[k.gridSlot(axis)] = plan.grid[axis];
  plan.tensorMaps.resize(k.tensorMaps.size());
  for (size_t i = 0; i < k.tensorMaps.size(); ++i)
    TESSEL_TRY(ev.tensorMap(k.tensorMaps[i], plan.tensorMaps[i]));
  return plan;
}

LaunchPlan tessel::planFollowUp(const KernelInfo &next,
                                const LaunchPlan &plan) {
  // Not a copy of `plan`: launches run this, and its tensor maps would
  // allocate.
  LaunchPlan followUp;
  std::copy(std::begin(plan.grid), std::end(plan.grid), followUp.grid);
  followUp.workspaceBytes = plan.workspaceBytes;
  followUp.blockThreads = uint32_t(next.numWarps) * 32;
  followUp.sharedBytes = next.sharedBytes;
  followUp.cluster = uint32_t(next.launch.cluster);
  return followUp;
}
