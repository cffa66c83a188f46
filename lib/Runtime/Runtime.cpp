//===- Runtime.cpp - Load kernel bundles and launch them on a GPU ---------===//

#include "tessel/Runtime.h"
#include "Runtime/Bundle.h"
#include "Runtime/CudaDriver.h"
#include "Runtime/Launch.h"
#include "Runtime/Support.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>

using namespace tessel;
using namespace tessel::cuda;

namespace tessel::detail {

/// What a tensor map is encoded from: which map of the kernel, its base
/// address and its shape (the rest is fixed by the bundle).
struct TensorMapKey {
  size_t map = 0;
  uint64_t base = 0;
  TensorMapShape shape;

  bool operator==(const TensorMapKey &other) const {
    return map == other.map && base == other.base && shape == other.shape;
  }
};

struct TensorMapKeyHash {
  size_t operator()(const TensorMapKey &key) const {
    uint64_t hash = key.map;
    auto mix = [&](uint64_t value) {
      hash = (hash ^ value) * 0x100000001b3; // FNV-1a's prime, on words
    };
    mix(key.base);
    for (uint64_t dim : key.shape.dims)
      mix(dim);
    for (uint64_t stride : key.shape.strides)
      mix(stride);
    return size_t(hash ^ (hash >> 32));
  }
};

struct KernelState {
  RuntimeImpl *owner = nullptr;
  KernelInfo info;
  CUfunction function = nullptr;
  /// Occupancy; computed for persistent kernels only, which need it.
  int blocksPerSM = 0;
  /// The clusters the device holds at once, for persistent kernels with
  /// clusters; unknown where the driver cannot tell.
  std::optional<int> maxClusters;
  /// Grown on demand and kept: launches of one persistent kernel reuse it.
  CUdeviceptr workspace = 0;
  uint64_t workspaceSize = 0;
  /// The size of the launches whose workspace is left zeroed (the
  /// "per_size" kernels' own guarantee); 0: none known.
  uint64_t zeroedSize = 0;
  /// The kernel's 'then', launched after it; the kernel whose 'then' this is.
  KernelState *followUp = nullptr;
  const KernelState *leader = nullptr;
  /// Tensor maps encoded by earlier launches: launches repeated with the
  /// same tensors need no cuTensorMapEncodeTiled. Cleared when it grows past
  /// kMaxCachedTensorMaps (shapes or buffers that change at every launch).
  std::unordered_map<TensorMapKey, CUtensorMap, TensorMapKeyHash> tensorMaps;
  static constexpr size_t kMaxCachedTensorMaps = 4096;
};

struct ModuleState {
  std::string name;
  std::vector<std::unique_ptr<KernelState>> kernels;
};

struct RuntimeImpl {
  explicit RuntimeImpl(const CudaDriver &drv) : drv(drv) {}
  ~RuntimeImpl();

  const CudaDriver &drv;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr; // the retained primary context
  int numSMs = 0, maxSharedOptin = 0, ccMajor = 0, ccMinor = 0;

  std::mutex mutex; // guards everything below and the kernels' workspaces
  std::unordered_map<std::string, CUmodule> modules; // by PTX text
  std::vector<std::unique_ptr<ModuleState>> bundles;

  /// Runs `body` with the primary context current on this thread, restoring
  /// the caller's context afterwards. A template: launches pass through here,
  /// and a std::function would allocate for their captures.
  template <class Body> Status inContext(Body &&body);
  Status queryDevice(int ordinal);
  Result<Module> load(Result<Bundle> bundle, std::string_view name);
  Status checkTarget(const Bundle &bundle, std::string_view name) const;
  Result<CUmodule> loadModule(const Bundle &bundle, std::string_view name);
  Status prepareKernel(CUmodule module, KernelState &k);
  Status prepareWorkspace(KernelState &k, uint64_t bytes, CUstream stream);
  /// Tensor map `index` of `k` on the tensor at `base` with `shape`, from
  /// k's cache or encoded (and cached). Needs the mutex and the context.
  Status tensorMap(KernelState &k, size_t index, uint64_t base,
                   const TensorMapShape &shape, CUtensorMap &out);
  /// `params` holds a pointer to each argument's bytes, to each tensor map's
  /// and, for a kernel with a workspace, &k.workspace last (see
  /// paramPointers).
  Status enqueue(KernelState &k, const LaunchPlan &plan, void **params,
                 CUstream stream);
  Status launchInClusters(CUfunction function, const LaunchPlan &plan,
                          void **params, CUstream stream);
};

/// What a PreparedLaunch holds: the argument template and the tensor maps
/// are patched in place (under the runtime's mutex), so `params` is built
/// once.
struct PreparedState {
  PreparedState(RuntimeImpl &runtime, Kernel kernel)
      : runtime(runtime), kernel(kernel) {}
  RuntimeImpl &runtime;
  Kernel kernel;
  KernelState *state = nullptr;
  LaunchPlan plan;
  std::vector<Arg> args;
  std::vector<CUtensorMap> maps;
  std::vector<void *> params;
  std::vector<uint32_t> pointerParams;
  /// For each tensor map: the index of its base in launch()'s pointers, and
  /// the base its bytes in `maps` were encoded for, if they were.
  struct MapBase {
    uint32_t pointer = 0;
    bool encoded = false;
    uint64_t base = 0;
  };
  std::vector<MapBase> mapBases;
};

} // namespace tessel::detail

using detail::KernelState;
using detail::PreparedState;
using detail::RuntimeImpl;

static std::string kernelContext(const KernelInfo &k) {
  return "kernel '" + k.name + "': ";
}

template <class Body> Status RuntimeImpl::inContext(Body &&body) {
  TESSEL_TRY(drv.call(drv.cuCtxPushCurrent, context));
  Status status = body();
  CUcontext popped;
  Status pop = drv.call(drv.cuCtxPopCurrent, &popped);
  return status.ok() ? pop : status;
}

RuntimeImpl::~RuntimeImpl() {
  if (!context)
    return;
  // Nothing can be reported from a destructor, and at exit the driver may
  // already be shutting down: errors are ignored.
  (void)inContext([&] {
    (void)drv.cuCtxSynchronize(); // kernels may still use what is freed
    for (auto &bundle : bundles)
      for (auto &k : bundle->kernels)
        if (k->workspace)
          (void)drv.cuMemFree(k->workspace);
    for (auto &entry : modules)
      (void)drv.cuModuleUnload(entry.second);
    return Status();
  });
  (void)drv.cuDevicePrimaryCtxRelease(device);
}

Status RuntimeImpl::queryDevice(int ordinal) {
  this->ordinal = ordinal;
  TESSEL_TRY(drv.call(drv.cuDeviceGet, &device, ordinal));
  TESSEL_TRY(drv.call(drv.cuDevicePrimaryCtxRetain, &context, device));
  const std::pair<int *, int> attributes[] = {
      {&numSMs, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&maxSharedOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&ccMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&ccMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR}};
  for (auto [value, attribute] : attributes)
    TESSEL_TRY(drv.call(drv.cuDeviceGetAttribute, value, attribute, device));
  return Status();
}

Status RuntimeImpl::checkTarget(const Bundle &bundle,
                                std::string_view name) const {
  Target target = *parseTarget(bundle.target); // checked by parseBundle
  int want = target.major * 10 + target.minor, have = ccMajor * 10 + ccMinor;
  // PTX for sm_XY JIT-compiles for any later GPU; sm_XYa only for sm_XY.
  if (target.archSpecific ? want == have : want <= have)
    return Status();
  return Status::error(std::string(name) + ": the bundle targets " +
                       bundle.target + " but the device is sm_" +
                       std::to_string(have));
}

Result<CUmodule> RuntimeImpl::loadModule(const Bundle &bundle,
                                         std::string_view name) {
  auto cached = modules.find(bundle.ptx);
  if (cached != modules.end())
    return cached->second;
  char infoLog[16384] = "", errorLog[16384] = "";
  int options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                   CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {infoLog, reinterpret_cast<void *>(sizeof(infoLog)),
                    errorLog, reinterpret_cast<void *>(sizeof(errorLog))};
  CUmodule module = nullptr;
  CUresult result =
      drv.cuModuleLoadDataEx(&module, bundle.ptx.c_str(), 4, options, values);
  if (result != CUDA_SUCCESS) {
    infoLog[sizeof(infoLog) - 1] = errorLog[sizeof(errorLog) - 1] = '\0';
    std::string log = errorLog[0] ? errorLog : infoLog;
    while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
      log.pop_back();
    std::string message = drv.check(result, drv.cuModuleLoadDataEx.name)
                              .prepend(std::string(name) + ": ")
                              .message();
    return Status::error(message + (log.empty() ? "" : "\nJIT log:\n" + log));
  }
  modules.emplace(bundle.ptx, module);
  return module;
}

/// The launch attribute for clusters of `size` CTAs along x.
static CUlaunchAttribute clusterDimension(unsigned size) {
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim = {size, 1, 1};
  return attribute;
}

/// The cuLaunchKernelEx configuration of `plan` with `attribute` (which must
/// outlive it).
static CUlaunchConfig launchConfig(const LaunchPlan &plan, CUstream stream,
                                   CUlaunchAttribute &attribute) {
  CUlaunchConfig config{};
  config.gridDimX = plan.grid[0];
  config.gridDimY = plan.grid[1];
  config.gridDimZ = plan.grid[2];
  config.blockDimX = plan.blockThreads;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = plan.sharedBytes;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

Status RuntimeImpl::prepareKernel(CUmodule module, KernelState &k) {
  const KernelInfo &info = k.info;
  std::string where = kernelContext(info);
  Status s = drv.call(drv.cuModuleGetFunction, &k.function, module,
                      info.ptxEntry.c_str());
  if (!s.ok())
    return s.prepend(where);
  if (info.sharedBytes > kDefaultSharedLimit) {
    if (info.sharedBytes > unsigned(maxSharedOptin))
      return Status::error(where + "needs " + std::to_string(info.sharedBytes) +
                           " bytes of shared memory; the device allows " +
                           std::to_string(maxSharedOptin) + " per block");
    s = drv.call(drv.cuFuncSetAttribute, k.function,
                 CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                 int(info.sharedBytes));
    if (!s.ok())
      return s.prepend(where);
  }
  unsigned cluster = unsigned(info.launch.cluster);
  if (cluster > kPortableClusterSize) {
    s = drv.call(drv.cuFuncSetAttribute, k.function,
                 CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (!s.ok())
      return s.prepend(where);
  }
  if (info.launch.kind != LaunchRule::Kind::Persistent)
    return Status();
  s = drv.call(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor, &k.blocksPerSM,
               k.function, info.numWarps * 32, size_t(info.sharedBytes));
  if (!s.ok())
    return s.prepend(where);
  // Without the entry point the launch fails anyway (no cuLaunchKernelEx).
  if (cluster == 1 || !drv.cuOccupancyMaxActiveClusters.available())
    return Status();
  LaunchPlan oneCluster;
  oneCluster.grid[0] = cluster;
  oneCluster.blockThreads = unsigned(info.numWarps) * 32;
  oneCluster.sharedBytes = info.sharedBytes;
  CUlaunchAttribute attribute = clusterDimension(cluster);
  CUlaunchConfig config = launchConfig(oneCluster, nullptr, attribute);
  int clusters = 0;
  s = drv.call(drv.cuOccupancyMaxActiveClusters, &clusters, k.function,
               &config);
  if (!s.ok())
    return s.prepend(where);
  k.maxClusters = clusters;
  return Status();
}

Result<Module> RuntimeImpl::load(Result<Bundle> parsed, std::string_view name) {
  if (!parsed.ok())
    return parsed.status();
  Bundle &bundle = *parsed;
  TESSEL_TRY(checkTarget(bundle, name));
  auto state = std::make_unique<detail::ModuleState>();
  state->name = std::string(name);
  std::lock_guard<std::mutex> lock(mutex);
  TESSEL_TRY(inContext([&] {
    Result<CUmodule> module = loadModule(bundle, name);
    if (!module.ok())
      return module.status();
    for (KernelInfo &info : bundle.kernels) {
      auto k = std::make_unique<KernelState>();
      k->owner = this;
      k->info = std::move(info);
      TESSEL_TRY(prepareKernel(*module, *k));
      state->kernels.push_back(std::move(k));
    }
    // parseBundle checked that every 'then' names another kernel.
    for (auto &k : state->kernels)
      for (auto &next : state->kernels)
        if (next->info.name == k->info.launch.then) {
          k->followUp = next.get();
          next->leader = k.get();
        }
    return Status();
  }));
  bundles.push_back(std::move(state));
  return Module(bundles.back().get());
}

Status RuntimeImpl::prepareWorkspace(KernelState &k, uint64_t bytes,
                                     CUstream stream) {
  if (bytes > k.workspaceSize) {
    if (k.workspace) {
      // Launches still in flight may be using the old buffer.
      TESSEL_TRY(drv.call(drv.cuCtxSynchronize));
      TESSEL_TRY(drv.call(drv.cuMemFree, k.workspace));
      k.workspace = 0;
      k.workspaceSize = 0;
    }
    TESSEL_TRY(drv.call(drv.cuMemAlloc, &k.workspace, bytes));
    k.workspaceSize = bytes;
    k.zeroedSize = 0;
  }
  // Arrival flags and counters must start at zero on every launch. A
  // "per_size" kernel leaves them at zero, but a launch of another size lays
  // them out elsewhere.
  if (bytes == 0 || k.zeroedSize == bytes)
    return Status();
  TESSEL_TRY(drv.call(drv.cuMemsetD8Async, k.workspace, 0, bytes, stream));
  if (k.info.launch.workspaceZeroing == LaunchRule::Zeroing::PerSize)
    k.zeroedSize = bytes;
  return Status();
}

/// The CUtensorMapSwizzle of a swizzle span of `bytes` (0, 32, 64 or 128).
static int swizzleMode(unsigned bytes) {
  switch (bytes) {
  case 32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case 64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case 128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

template <class T> static std::string listText(const T *values, size_t count) {
  std::string text = "[";
  for (size_t i = 0; i < count; ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

Status RuntimeImpl::tensorMap(KernelState &k, size_t index, uint64_t base,
                              const TensorMapShape &shape, CUtensorMap &out) {
  TensorMapKey key{index, base, shape};
  auto cached = k.tensorMaps.find(key);
  if (cached != k.tensorMaps.end()) {
    out = cached->second;
    return Status();
  }
  const TensorMapInfo &map = k.info.tensorMaps[index];
  std::string where = "tensor map of '" + k.info.params[map.param].name + "': ";
  if (!drv.cuTensorMapEncodeTiled.available())
    return Status::error(where + "the CUDA driver has no " +
                         drv.cuTensorMapEncodeTiled.name +
                         " (driver too old: tensor maps need CUDA 12 or "
                         "newer)");
  static const uint32_t elementStrides[TensorMapInfo::kMaxRank] = {1, 1, 1, 1,
                                                                   1};
  uint32_t rank = uint32_t(map.dims.size());
  // Out-of-bounds elements read as zeros (OOB_FILL_NONE), which the kernels
  // rely on at the edges of their tensors. L2 promotion to 256 bytes, as
  // CUTLASS's descriptors do: a box's rows are at most 128 bytes wide
  // (swizzled) and the neighbouring bytes are mostly read by the next row or
  // the neighbouring CTA, so the wider DRAM requests are rarely wasted.
  Status s = drv.call(
      drv.cuTensorMapEncodeTiled, &out, map.dataType, rank,
      reinterpret_cast<void *>(base), shape.dims, shape.strides, map.box.data(),
      elementStrides, int(CU_TENSOR_MAP_INTERLEAVE_NONE),
      swizzleMode(map.swizzle), int(CU_TENSOR_MAP_L2_PROMOTION_L2_256B),
      int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  if (!s.ok())
    return Status::error(where + s.message() + " (address " + hexAddress(base) +
                         ", dims " + listText(shape.dims, rank) +
                         ", byte strides " + listText(shape.strides, rank - 1) +
                         ", box " + listText(map.box.data(), rank) +
                         ", swizzle " + std::to_string(map.swizzle) + ")");
  if (k.tensorMaps.size() >= KernelState::kMaxCachedTensorMaps)
    k.tensorMaps.clear();
  k.tensorMaps.emplace(key, out);
  return Status();
}

/// The kernel parameters cuLaunchKernel reads: each argument's bytes, each
/// tensor map's, then the workspace pointer of a kernel that has one.
static std::vector<void *> paramPointers(KernelState &k,
                                         const std::vector<Arg> &args,
                                         std::vector<CUtensorMap> &maps) {
  std::vector<void *> params;
  params.reserve(args.size() + maps.size() + 1);
  for (const Arg &arg : args)
    params.push_back(const_cast<void *>(arg.data())); // the driver only reads
  for (CUtensorMap &map : maps)
    params.push_back(&map);
  if (k.info.launch.workspaceBytes)
    params.push_back(&k.workspace);
  return params;
}

// The attribute makes the bundle's cluster size the launch's: the driver
// refuses one that contradicts the PTX's .reqnctapercluster (which alone
// would make cuLaunchKernel launch clusters), and clusters PTX without it.
Status RuntimeImpl::launchInClusters(CUfunction function,
                                     const LaunchPlan &plan, void **params,
                                     CUstream stream) {
  if (!drv.cuLaunchKernelEx.available())
    return Status::error(std::string("the CUDA driver has no ") +
                         drv.cuLaunchKernelEx.name +
                         " (driver too old: thread-block clusters need CUDA "
                         "12 or newer)");
  CUlaunchAttribute attribute = clusterDimension(plan.cluster);
  CUlaunchConfig config = launchConfig(plan, stream, attribute);
  return drv.call(drv.cuLaunchKernelEx, &config, function, params, nullptr);
}

Status RuntimeImpl::enqueue(KernelState &k, const LaunchPlan &plan,
                            void **params, CUstream stream) {
  if (k.info.launch.workspaceBytes)
    TESSEL_TRY(prepareWorkspace(k, plan.workspaceBytes, stream));
  auto launch = [&](CUfunction function, const LaunchPlan &p) {
    if (p.cluster > 1)
      return launchInClusters(function, p, params, stream);
    return drv.call(drv.cuLaunchKernel, function, p.grid[0], p.grid[1],
                    p.grid[2], p.blockThreads, 1u, 1u, p.sharedBytes, stream,
                    params, nullptr);
  };
  TESSEL_TRY(launch(k.function, plan));
  if (!k.followUp)
    return Status();
  // The follow-up reads what the kernel left in the workspace: same
  // stream, grid, arguments and workspace, which is not zeroed again.
  Status s = launch(k.followUp->function, planFollowUp(k.followUp->info, plan));
  return s.ok() ? s
                : s.prepend("its 'then' " + kernelContext(k.followUp->info));
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

const std::string &Kernel::name() const { return state->info.name; }
const std::vector<ParamInfo> &Kernel::params() const {
  return state->info.params;
}
int Kernel::numWarps() const { return state->info.numWarps; }
uint32_t Kernel::sharedBytes() const { return state->info.sharedBytes; }
bool Kernel::persistent() const {
  return state->info.launch.kind == LaunchRule::Kind::Persistent;
}
int Kernel::cluster() const { return state->info.launch.cluster; }
std::optional<int> Kernel::residentClusters() const {
  return state->maxClusters;
}

Result<Kernel> Module::kernel(std::string_view name) const {
  std::string known;
  for (auto &k : state->kernels) {
    if (k->info.name == name)
      return Kernel(k.get());
    known += (known.empty() ? "" : ", ") + k->info.name;
  }
  return Status::error("no kernel '" + std::string(name) + "' in " +
                       state->name + " (it has " + known + ")");
}

std::vector<Kernel> Module::kernels() const {
  std::vector<Kernel> result;
  for (auto &k : state->kernels)
    result.push_back(Kernel(k.get()));
  return result;
}

Runtime::Runtime(std::unique_ptr<RuntimeImpl> impl) : impl(std::move(impl)) {}
Runtime::~Runtime() = default;

Result<std::unique_ptr<Runtime>>
Runtime::create(const RuntimeOptions &options) {
  Result<const CudaDriver *> loaded = CudaDriver::load(options.driverLibrary);
  if (!loaded.ok())
    return loaded.status();
  const CudaDriver &drv = **loaded;
  CUresult result = drv.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE)
    return Status::error("no CUDA device (cuInit: " + drv.describe(result) +
                         ")");
  TESSEL_TRY(drv.check(result, drv.cuInit.name));
  int count = 0;
  TESSEL_TRY(drv.call(drv.cuDeviceGetCount, &count));
  if (count == 0)
    return Status::error("no CUDA device");
  if (options.device < 0 || options.device >= count)
    return Status::error("CUDA device " + std::to_string(options.device) +
                         " requested but there are " + std::to_string(count));
  auto impl = std::make_unique<RuntimeImpl>(drv);
  TESSEL_TRY(impl->queryDevice(options.device));
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Result<Module> Runtime::loadBundle(const std::string &path) {
  return impl->load(readBundleFile(path), path);
}

Result<Module> Runtime::loadBundleFromString(std::string_view text,
                                             std::string_view name) {
  return impl->load(parseBundle(text, name), name);
}

Status Runtime::launch(const Kernel &kernel, const std::vector<Arg> &args,
                       Stream stream) {
  return launchWith(kernel, args, nullptr, stream);
}

Status Runtime::launch(const Kernel &kernel, const std::vector<Arg> &args,
                       const Grid &grid, Stream stream) {
  return launchWith(kernel, args, &grid, stream);
}

/// Why `k` cannot be launched by `impl` on its own, if it cannot.
static Status checkLaunchable(const KernelState &k, const RuntimeImpl *impl) {
  if (k.owner != impl)
    return Status::error(kernelContext(k.info) +
                         "it was loaded by another Runtime");
  if (k.leader)
    return Status::error(kernelContext(k.info) +
                         "it runs as the 'then' of "
                         "kernel '" +
                         k.leader->info.name + "'; launch '" +
                         k.leader->info.name + "'");
  return Status();
}

Status Runtime::launchWith(const Kernel &kernel, const std::vector<Arg> &args,
                           const Grid *grid, Stream stream) {
  KernelState &k = *kernel.state;
  TESSEL_TRY(checkLaunchable(k, impl.get()));
  Result<LaunchPlan> plan = planLaunch(k.info, args, impl->numSMs,
                                       k.blocksPerSM, grid, k.maxClusters);
  if (!plan.ok())
    return plan.status();
  if (plan->empty())
    return Status();
  std::vector<CUtensorMap> maps(k.info.tensorMaps.size());
  std::vector<void *> params = paramPointers(k, args, maps);
  std::lock_guard<std::mutex> lock(impl->mutex);
  Status s = impl->inContext([&] {
    for (size_t i = 0; i < maps.size(); ++i)
      TESSEL_TRY(impl->tensorMap(k, i,
                                 args[k.info.tensorMaps[i].param].address(),
                                 plan->tensorMaps[i], maps[i]));
    return impl->enqueue(k, *plan, params.data(),
                         static_cast<CUstream>(stream));
  });
  if (!s.ok())
    s.prepend(kernelContext(k.info));
  return s;
}

Result<PreparedLaunch> Runtime::prepare(const Kernel &kernel,
                                        const std::vector<Arg> &args,
                                        const std::optional<Grid> &grid) {
  KernelState &k = *kernel.state;
  TESSEL_TRY(checkLaunchable(k, impl.get()));
  Result<LaunchPlan> plan =
      planLaunch(k.info, args, impl->numSMs, k.blocksPerSM,
                 grid ? &*grid : nullptr, k.maxClusters);
  if (!plan.ok())
    return plan.status();
  auto state = std::make_unique<PreparedState>(*impl, kernel);
  state->state = &k;
  state->plan = *plan;
  state->args = args;
  state->maps.resize(k.info.tensorMaps.size());
  state->params = paramPointers(k, state->args, state->maps);
  for (size_t i = 0; i < args.size(); ++i)
    if (k.info.params[i].kind == ArgKind::Ptr && !k.info.params[i].none)
      state->pointerParams.push_back(uint32_t(i));
  // The maps are encoded at the first launch: the pointers given here are
  // placeholders.
  for (const TensorMapInfo &map : k.info.tensorMaps) {
    auto pointer = std::find(state->pointerParams.begin(),
                             state->pointerParams.end(), map.param);
    state->mapBases.push_back(
        {uint32_t(pointer - state->pointerParams.begin())});
  }
  return PreparedLaunch(std::move(state));
}

PreparedLaunch::PreparedLaunch(std::unique_ptr<PreparedState> state)
    : state(std::move(state)) {}
PreparedLaunch::PreparedLaunch(PreparedLaunch &&) noexcept = default;
PreparedLaunch &PreparedLaunch::operator=(PreparedLaunch &&) noexcept = default;
PreparedLaunch::~PreparedLaunch() = default;

const Kernel &PreparedLaunch::kernel() const { return state->kernel; }

const std::vector<uint32_t> &PreparedLaunch::pointerParams() const {
  return state->pointerParams;
}

Grid PreparedLaunch::grid() const {
  const uint32_t *g = state->plan.grid;
  return {g[0], g[1], g[2]};
}

bool PreparedLaunch::pointersFit(const DevicePtr *pointers) const {
  const std::vector<ParamInfo> &params = state->state->info.params;
  for (size_t i = 0; i < state->pointerParams.size(); ++i)
    if (!params[state->pointerParams[i]].keepsHint(pointers[i]))
      return false;
  for (const PreparedState::MapBase &map : state->mapBases)
    if (!tensorMapBaseFits(pointers[map.pointer]))
      return false;
  return true;
}

Status PreparedLaunch::launch(const DevicePtr *pointers, Stream stream) {
  PreparedState &s = *state;
  RuntimeImpl &rt = s.runtime;
  std::lock_guard<std::mutex> lock(rt.mutex);
  for (size_t i = 0; i < s.pointerParams.size(); ++i)
    s.args[s.pointerParams[i]] = Arg::ptr(pointers[i]);
  if (!pointersFit(pointers))
    return checkArgs(s.state->info, s.args); // says which pointer is wrong
  if (s.plan.empty())
    return Status();
  Status status = rt.inContext([&] {
    // The scalars are fixed, so a tensor map changes only with its base.
    for (size_t i = 0; i < s.mapBases.size(); ++i) {
      PreparedState::MapBase &map = s.mapBases[i];
      uint64_t base = pointers[map.pointer];
      if (map.encoded && map.base == base)
        continue;
      map.encoded = false;
      TESSEL_TRY(
          rt.tensorMap(*s.state, i, base, s.plan.tensorMaps[i], s.maps[i]));
      map.encoded = true;
      map.base = base;
    }
    return rt.enqueue(*s.state, s.plan, s.params.data(),
                      static_cast<CUstream>(stream));
  });
  if (!status.ok())
    status.prepend(kernelContext(s.state->info));
  return status;
}

Result<Grid> Runtime::launchGrid(const Kernel &kernel,
                                 const std::vector<Arg> &args) const {
  const KernelState &k = *kernel.state;
  Result<LaunchPlan> plan = planLaunch(k.info, args, impl->numSMs,
                                       k.blocksPerSM, nullptr, k.maxClusters);
  if (!plan.ok())
    return plan.status();
  return Grid{plan->grid[0], plan->grid[1], plan->grid[2]};
}

int Runtime::multiprocessorCount() const { return impl->numSMs; }

int Runtime::device() const { return impl->ordinal; }

std::pair<int, int> Runtime::computeCapability() const {
  return {impl->ccMajor, impl->ccMinor};
}

Result<DevicePtr> Runtime::alloc(size_t bytes) {
  CUdeviceptr ptr = 0;
  TESSEL_TRY(impl->inContext(
      [&] { return impl->drv.call(impl->drv.cuMemAlloc, &ptr, bytes); }));
  return DevicePtr(ptr);
}

Status Runtime::free(DevicePtr ptr) {
  return impl->inContext(
      [&] { return impl->drv.call(impl->drv.cuMemFree, ptr); });
}

Status Runtime::copyToDevice(DevicePtr dst, const void *src, size_t bytes) {
  return impl->inContext(
      [&] { return impl->drv.call(impl->drv.cuMemcpyHtoD, dst, src, bytes); });
}

Status Runtime::copyToHost(void *dst, DevicePtr src, size_t bytes) {
  return impl->inContext(
      [&] { return impl->drv.call(impl->drv.cuMemcpyDtoH, dst, src, bytes); });
}

Status Runtime::fill(DevicePtr dst, uint8_t value, size_t bytes) {
  return impl->inContext(
      [&] { return impl->drv.call(impl->drv.cuMemsetD8, dst, value, bytes); });
}

Status Runtime::synchronize(Stream stream) {
  return impl->inContext([&] {
    return impl->drv.call(impl->drv.cuStreamSynchronize,
                          static_cast<CUstream>(stream));
  });
}

Result<float> Runtime::timeMs(const std::function<Status()> &work,
                              Stream stream) {
  const CudaDriver &drv = impl->drv;
  CUstream s = static_cast<CUstream>(stream);
  CUevent start = nullptr, stop = nullptr;
  float ms = 0;
  auto timed = [&] {
    TESSEL_TRY(drv.call(drv.cuEventCreate, &start, 0u));
    TESSEL_TRY(drv.call(drv.cuEventCreate, &stop, 0u));
    TESSEL_TRY(drv.call(drv.cuEventRecord, start, s));
    TESSEL_TRY(work());
    TESSEL_TRY(drv.call(drv.cuEventRecord, stop, s));
    TESSEL_TRY(drv.call(drv.cuEventSynchronize, stop));
    return drv.call(drv.cuEventElapsedTime, &ms, start, stop);
  };
  TESSEL_TRY(impl->inContext([&] {
    Status status = timed();
    for (CUevent event : {start, stop})
      if (event)
        (void)drv.cuEventDestroy(event);
    return status;
  }));
  return ms;
}
