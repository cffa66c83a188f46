//===- FakeCuda.cpp - A stand-in libcuda for the runtime's tests ----------===//

#include "FakeCuda.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

/// Tools run by lit load the fake too; TESSEL_FAKE_CUDA_NO_DEVICE=1 makes it
/// a machine without a GPU, as cuInit reports one.
FakeCudaState initialState() {
  FakeCudaState s;
  const char *noDevice = std::getenv("TESSEL_FAKE_CUDA_NO_DEVICE");
  if (noDevice && std::strcmp(noDevice, "1") == 0)
    s.initResult = 100; // CUDA_ERROR_NO_DEVICE
  return s;
}

FakeCudaState state = initialState();

/// What CUmodule and CUfunction handles point at.
struct FakeModule {
  std::string ptx;
};
struct FakeFunction {
  std::string name;
  std::vector<size_t> paramSizes;
};
std::deque<FakeModule> modules;
std::deque<FakeFunction> functions;

CUresult injected(const char *call) {
  return state.failCall == call ? state.failResult : 0;
}

/// Bytes of one PTX parameter declaration: ".param .u64 x",
/// ".param .u64 .ptr .align 1 x", ".param .align 8 .b8 x[16]".
size_t paramSize(const std::string &decl) {
  static const std::pair<const char *, size_t> types[] = {
      {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}, {".u32", 4},
      {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u16", 2}, {".s16", 2},
      {".b16", 2}, {".f16", 2}, {".u8", 1},  {".s8", 1},  {".b8", 1}};
  size_t size = 0;
  for (const auto &[type, bytes] : types) {
    size_t at = decl.find(type);
    if (at != std::string::npos && (at + std::strlen(type) == decl.size() ||
                                    decl[at + std::strlen(type)] == ' ')) {
      size = bytes;
      break;
    }
  }
  size_t bracket = decl.find('[');
  if (bracket != std::string::npos)
    size *= std::strtoul(decl.c_str() + bracket + 1, nullptr, 10);
  return size;
}

/// The parameter sizes of `.entry name(...)` in `ptx`.
std::vector<size_t> entryParamSizes(const std::string &ptx,
                                    const std::string &name) {
  std::vector<size_t> sizes;
  size_t at = ptx.find(".entry " + name + "(");
  if (at == std::string::npos)
    return sizes;
  size_t begin = ptx.find('(', at) + 1, end = ptx.find(')', begin);
  std::string list = ptx.substr(begin, end - begin);
  for (size_t pos = 0; pos < list.size();) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos)
      comma = list.size();
    std::string decl = list.substr(pos, comma - pos);
    if (decl.find(".param") != std::string::npos)
      sizes.push_back(paramSize(decl));
    pos = comma + 1;
  }
  return sizes;
}

#ifndef FAKE_CUDA_11
/// cuLaunchKernelEx's configuration, as cuda.h lays it out.
struct LaunchAttribute {
  int id;
  alignas(8) unsigned char value[64];
};
struct LaunchConfig {
  unsigned grid[3], block[3], sharedBytes;
  void *stream;
  const LaunchAttribute *attrs;
  unsigned numAttrs;
};

/// `config` as a launch of `function` (no arguments), with its cluster
/// dimensions if it has them.
FakeLaunch launchOf(const LaunchConfig &config, void *function) {
  FakeLaunch launch{static_cast<FakeFunction *>(function)->name,
                    {config.grid[0], config.grid[1], config.grid[2]},
                    {config.block[0], config.block[1], config.block[2]},
                    config.sharedBytes,
                    config.stream,
                    {}};
  for (unsigned i = 0; i < config.numAttrs; ++i)
    if (config.attrs[i].id == 4) // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
      std::memcpy(launch.cluster, config.attrs[i].value,
                  sizeof(launch.cluster));
  return launch;
}
#endif

/// Runs and records `launch`, giving it the arguments.
CUresult run(FakeLaunch launch, void *function, void **params) {
  const FakeFunction &f = *static_cast<FakeFunction *>(function);
  for (size_t i = 0; i < f.paramSizes.size(); ++i)
    launch.args.emplace_back(static_cast<const char *>(params[i]),
                             f.paramSizes[i]);
  if (state.kernel)
    state.kernel(launch, params);
  state.launches.push_back(launch);
  return 0;
}

std::string hex(const void *data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < size; ++i) {
    unsigned char byte = static_cast<const unsigned char *>(data)[i];
    text += digits[byte >> 4];
    text += digits[byte & 15];
  }
  return text;
}

} // namespace

extern "C" {

FakeCudaState *fakeCudaState() { return &state; }

void fakeCudaReset() {
  state.launches.clear();
  state.tensorMapEncodes.clear();
  state.failCall.clear();
}

void fakeCudaFail(const char *call, int result) {
  state.failCall = call;
  state.failResult = result;
}

int fakeCudaLaunchCount() { return int(state.launches.size()); }

int fakeCudaTensorMapEncodeCount() {
  return int(state.tensorMapEncodes.size());
}

const char *fakeCudaDescribeLaunch(int i) {
  static std::string text;
  const FakeLaunch &l = state.launches.at(size_t(i));
  char head[256];
  std::snprintf(head, sizeof(head),
                " grid=%u,%u,%u block=%u,%u,%u shared=%u stream=%p args=",
                l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                l.block[2], l.sharedBytes, l.stream);
  text = l.function + head;
  for (size_t a = 0; a < l.args.size(); ++a)
    text += (a ? "," : "") + hex(l.args[a].data(), l.args[a].size());
  return text.c_str();
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  static const struct {
    CUresult code;
    const char *name;
  } names[] = {{0, "CUDA_SUCCESS"},
               {2, "CUDA_ERROR_OUT_OF_MEMORY"},
               {100, "CUDA_ERROR_NO_DEVICE"},
               {218, "CUDA_ERROR_INVALID_PTX"},
               {700, "CUDA_ERROR_ILLEGAL_ADDRESS"}};
  for (const auto &n : names) {
    if (n.code == error) {
      *name = n.name;
      return 0;
    }
  }
  *name = nullptr;
  return 1; // CUDA_ERROR_INVALID_VALUE, as the real driver does
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  const char *name;
  *text = cuGetErrorName(error, &name) == 0 ? "fake description" : nullptr;
  return *text ? 0 : 1;
}

CUresult cuInit(unsigned) { return state.initResult; }

CUresult cuDeviceGetCount(int *count) {
  if (CUresult failure = injected("cuDeviceGetCount"))
    return failure;
  *count = state.deviceCount;
  return 0;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return 0;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  switch (attribute) {
  case 16:
    *value = state.smCount;
    return 0;
  case 75:
    *value = state.ccMajor;
    return 0;
  case 76:
    *value = state.ccMinor;
    return 0;
  case 97:
    *value = state.sharedOptin;
    return 0;
  }
  return 1;
}

CUresult cuDevicePrimaryCtxRetain(void **context, int) {
  if (CUresult failure = injected("cuDevicePrimaryCtxRetain"))
    return failure;
  static int primary;
  *context = &primary;
  ++state.retains;
  return 0;
}

CUresult cuDevicePrimaryCtxRelease_v2(int) {
  ++state.releases;
  return 0;
}

CUresult cuCtxPushCurrent_v2(void *) {
  ++state.contextDepth;
  return 0;
}

CUresult cuCtxPopCurrent_v2(void **) {
  --state.contextDepth;
  return 0;
}

CUresult cuCtxSynchronize() { return 0; }

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count,
                            int *options, void **values) {
  if (std::strstr(static_cast<const char *>(image), kFakeJitError)) {
    for (unsigned i = 0; i < count; ++i)
      if (options[i] == 5) // CU_JIT_ERROR_LOG_BUFFER
        std::strcpy(static_cast<char *>(values[i]), "ptxas fatal: fake");
    return 218;
  }
  modules.push_back({static_cast<const char *>(image)});
  *module = &modules.back();
  ++state.moduleLoads;
  return 0;
}

CUresult cuModuleUnload(void *) {
  ++state.moduleUnloads;
  return 0;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  const std::string &ptx = static_cast<FakeModule *>(module)->ptx;
  functions.push_back({name, entryParamSizes(ptx, name)});
  *function = &functions.back();
  return 0;
}

CUresult cuFuncSetAttribute(void *, int attribute, int value) {
  if (CUresult failure = injected("cuFuncSetAttribute"))
    return failure;
  if (attribute == 8)
    state.maxDynamicShared = value;
  if (attribute == 14)
    state.nonPortableClusters = value;
  return 0;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, void *, int,
                                                     size_t) {
  *blocks = state.occupancy;
  return 0;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned sharedBytes, void *stream, void **params,
                        void **) {
  if (CUresult failure = injected("cuLaunchKernel"))
    return failure;
  FakeLaunch launch{static_cast<FakeFunction *>(function)->name,
                    {gx, gy, gz},
                    {bx, by, bz},
                    sharedBytes,
                    stream,
                    {}};
  return run(launch, function, params);
}

// A CUDA 11 driver has no tensor maps and no cluster launches.
#ifndef FAKE_CUDA_11
CUresult cuLaunchKernelEx(const LaunchConfig *config, void *function,
                          void **params, void **) {
  if (CUresult failure = injected("cuLaunchKernelEx"))
    return failure;
  return run(launchOf(*config, function), function, params);
}

CUresult cuOccupancyMaxActiveClusters(int *clusters, void *function,
                                      const LaunchConfig *config) {
  if (CUresult failure = injected("cuOccupancyMaxActiveClusters"))
    return failure;
  state.clusterQueries.push_back(launchOf(*config, function));
  *clusters = state.maxActiveClusters;
  return 0;
}

CUresult cuTensorMapEncodeTiled(void *tensorMap, int dataType, unsigned rank,
                                void *address, const uint64_t *dims,
                                const uint64_t *strides, const uint32_t *box,
                                const uint32_t *elementStrides, int interleave,
                                int swizzle, int l2Promotion, int oobFill) {
  if (CUresult failure = injected("cuTensorMapEncodeTiled"))
    return failure;
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64 != 0 || rank < 1 || rank > 5)
    return 1; // CUDA_ERROR_INVALID_VALUE, as the real driver says
  state.tensorMapEncodes.push_back({dataType,
                                    rank,
                                    reinterpret_cast<uint64_t>(address),
                                    {dims, dims + rank},
                                    {strides, strides + rank - 1},
                                    {box, box + rank},
                                    {elementStrides, elementStrides + rank},
                                    interleave,
                                    swizzle,
                                    l2Promotion,
                                    oobFill});
  uint64_t opaque[16] = {state.tensorMapEncodes.size(),
                         reinterpret_cast<uint64_t>(address)};
  std::memcpy(tensorMap, opaque, sizeof(opaque));
  return 0;
}
#endif

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  if (CUresult failure = injected("cuMemAlloc_v2"))
    return failure;
  *ptr = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
  ++state.liveAllocations;
  return 0;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  std::free(reinterpret_cast<void *>(ptr));
  --state.liveAllocations;
  return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  std::memcpy(dst, reinterpret_cast<void *>(src), bytes);
  return 0;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t bytes) {
  std::memset(reinterpret_cast<void *>(dst), value, bytes);
  return 0;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes,
                         void *) {
  ++state.memsets;
  return cuMemsetD8_v2(dst, value, bytes);
}

CUresult cuStreamSynchronize(void *) {
  if (CUresult failure = injected("cuStreamSynchronize"))
    return failure;
  return 0;
}

CUresult cuEventCreate(void **event, unsigned) {
  *event = new int;
  ++state.liveEvents;
  return 0;
}

CUresult cuEventRecord(void *, void *) { return 0; }
CUresult cuEventSynchronize(void *) { return 0; }

CUresult cuEventElapsedTime_v2(float *ms, void *, void *) {
  *ms = 2.5f;
  return 0;
}

CUresult cuEventDestroy_v2(void *event) {
  delete static_cast<int *>(event);
  --state.liveEvents;
  return 0;
}

} // extern "C"

std::string fakeCudaPath() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&fakeCudaState), &info))
    return "";
  return info.dli_fname;
}

std::string fakeOldCudaPath() {
  std::string path = fakeCudaPath();
  return path.substr(0, path.rfind('/') + 1) + "libTesselFakeCudaOld.so";
}
