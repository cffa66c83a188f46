//===- CudaDriver.h - The CUDA Driver API, opened at run time ---*- C++ -*-===//
//
// The runtime builds without the CUDA toolkit and runs on machines without a
// driver, so it declares the few driver types it uses itself (values checked
// against CUDA 13's cuda.h) and resolves the entry points from libcuda.so.1
// with dlopen/dlsym.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_CUDADRIVER_H
#define TESSEL_RUNTIME_CUDADRIVER_H

#include "tessel/Runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_NO_DEVICE = 100,
};

// CUjit_option: where cuModuleLoadDataEx writes its logs.
enum : int {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

// CUdevice_attribute
enum : int {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

// CUfunction_attribute
enum : int {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
};

// CUlaunchAttributeID
enum : int { CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4 };

/// One attribute of a cuLaunchKernelEx launch: an id, then a 64-byte union
/// of values (8-byte aligned: some hold pointers) of which only the cluster
/// dimensions are used here.
struct CUlaunchAttribute {
  int id;
  alignas(8) union {
    char pad[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "as cuda.h lays it out");

/// cuLaunchKernelEx's launch: cuLaunchKernel's dimensions, shared memory and
/// stream, plus attributes.
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};
static_assert(sizeof(CUlaunchConfig) == 56, "as cuda.h lays it out");

/// The largest cluster whose size needs no
/// CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (sm_90's portable
/// size).
constexpr unsigned kPortableClusterSize = 8;

/// A TMA descriptor, passed to kernels by value. cuTensorMapEncodeTiled needs
/// it 64-byte aligned (newer cuda.h headers declare 128, more than needed).
struct alignas(64) CUtensorMap {
  uint64_t opaque[16];
};
static_assert(sizeof(CUtensorMap) == 128, "a CUtensorMap is 128 bytes");

// CUtensorMapDataType: the element types tensor maps are made for.
enum : int {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
  CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
};

// CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion and
// CUtensorMapFloatOOBfill.
enum : int {
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_32B = 1,
  CU_TENSOR_MAP_SWIZZLE_64B = 2,
  CU_TENSOR_MAP_SWIZZLE_128B = 3,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
};

/// Dynamic shared memory above this needs the attribute raised first.
constexpr unsigned kDefaultSharedLimit = 48 * 1024;

/// The table of driver entry points. One per library path per process; it is
/// never unloaded, because libcuda does not support being unloaded while
/// contexts or its helper threads exist.
class CudaDriver {
  struct Symbol {
    const char *name;
    const char *fallback; // an older name, for drivers without `name`
    void **address;
    bool optional; // older drivers lack it; callers check available()
  };
  // Filled by the Entry constructors below, so it must come first.
  std::vector<Symbol> symbols;

public:
  /// Marks an entry point only some drivers have: a driver without it still
  /// loads, and callers check available() first.
  struct Optional {};

  /// One entry point: calls it, and knows its name for error messages.
  template <class... Params> class Entry {
  public:
    Entry(CudaDriver *driver, const char *name, const char *fallback = nullptr)
        : name(name) {
      driver->symbols.push_back({name, fallback, &address, false});
    }
    Entry(CudaDriver *driver, const char *name, Optional) : name(name) {
      driver->symbols.push_back({name, nullptr, &address, true});
    }
    Entry(const Entry &) = delete;
    CUresult operator()(Params... params) const {
      return reinterpret_cast<CUresult (*)(Params...)>(address)(params...);
    }
    bool available() const { return address != nullptr; }
    const char *const name;

  private:
    void *address = nullptr;
  };

  /// Opens `library` and resolves every entry point, or explains why not:
  /// "no CUDA driver found (libcuda.so.1: ...)".
  static Result<const CudaDriver *> load(const std::string &library);

  /// "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  Status check(CUresult result, const char *call) const;
  /// Calls an entry point and checks its result.
  template <class... Params, class... Args>
  Status call(const Entry<Params...> &entry, Args &&...args) const {
    return check(entry(std::forward<Args>(args)...), entry.name);
  }
  /// "CUDA_ERROR_X (description)", or the number if the driver has no name.
  std::string describe(CUresult result) const;

  Entry<CUresult, const char **> cuGetErrorName{this, "cuGetErrorName"};
  Entry<CUresult, const char **> cuGetErrorString{this, "cuGetErrorString"};
  Entry<unsigned> cuInit{this, "cuInit"};
  Entry<int *> cuDeviceGetCount{this, "cuDeviceGetCount"};
  Entry<CUdevice *, int> cuDeviceGet{this, "cuDeviceGet"};
  Entry<int *, int, CUdevice> cuDeviceGetAttribute{this,
                                                   "cuDeviceGetAttribute"};
  Entry<CUcontext *, CUdevice> cuDevicePrimaryCtxRetain{
      this, "cuDevicePrimaryCtxRetain"};
  Entry<CUdevice> cuDevicePrimaryCtxRelease{this,
                                            "cuDevicePrimaryCtxRelease_v2"};
  Entry<CUcontext> cuCtxPushCurrent{this, "cuCtxPushCurrent_v2"};
  Entry<CUcontext *> cuCtxPopCurrent{this, "cuCtxPopCurrent_v2"};
  Entry<> cuCtxSynchronize{this, "cuCtxSynchronize"};
  Entry<CUmodule *, const void *, unsigned, int *, void **> cuModuleLoadDataEx{
      this, "cuModuleLoadDataEx"};
  Entry<CUmodule> cuModuleUnload{this, "cuModuleUnload"};
  Entry<CUfunction *, CUmodule, const char *> cuModuleGetFunction{
      this, "cuModuleGetFunction"};
  Entry<CUfunction, int, int> cuFuncSetAttribute{this, "cuFuncSetAttribute"};
  Entry<int *, CUfunction, int, size_t>
      cuOccupancyMaxActiveBlocksPerMultiprocessor{
          this, "cuOccupancyMaxActiveBlocksPerMultiprocessor"};
  Entry<CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
        unsigned, CUstream, void **, void **>
      cuLaunchKernel{this, "cuLaunchKernel"};
  Entry<CUdeviceptr *, size_t> cuMemAlloc{this, "cuMemAlloc_v2"};
  Entry<CUdeviceptr> cuMemFree{this, "cuMemFree_v2"};
  Entry<CUdeviceptr, const void *, size_t> cuMemcpyHtoD{this,
                                                        "cuMemcpyHtoD_v2"};
  Entry<void *, CUdeviceptr, size_t> cuMemcpyDtoH{this, "cuMemcpyDtoH_v2"};
  Entry<CUdeviceptr, unsigned char, size_t> cuMemsetD8{this, "cuMemsetD8_v2"};
  Entry<CUdeviceptr, unsigned char, size_t, CUstream> cuMemsetD8Async{
      this, "cuMemsetD8Async"};
  Entry<CUstream> cuStreamSynchronize{this, "cuStreamSynchronize"};
  Entry<CUevent *, unsigned> cuEventCreate{this, "cuEventCreate"};
  Entry<CUevent, CUstream> cuEventRecord{this, "cuEventRecord"};
  Entry<CUevent> cuEventSynchronize{this, "cuEventSynchronize"};
  Entry<float *, CUevent, CUevent> cuEventElapsedTime{
      this, "cuEventElapsedTime_v2", "cuEventElapsedTime"};
  Entry<CUevent> cuEventDestroy{this, "cuEventDestroy_v2"};
  // CUDA 12 and newer: kernels with tensor maps need it, others do not.
  Entry<CUtensorMap *, int, uint32_t, void *, const uint64_t *,
        const uint64_t *, const uint32_t *, const uint32_t *, int, int, int,
        int>
      cuTensorMapEncodeTiled{this, "cuTensorMapEncodeTiled", Optional()};
  // CUDA 12 and newer: kernels with thread-block clusters need them.
  Entry<const CUlaunchConfig *, CUfunction, void **, void **> cuLaunchKernelEx{
      this, "cuLaunchKernelEx", Optional()};
  Entry<int *, CUfunction, const CUlaunchConfig *> cuOccupancyMaxActiveClusters{
      this, "cuOccupancyMaxActiveClusters", Optional()};

private:
  CudaDriver() = default;
  CudaDriver(const CudaDriver &) = delete;
};

} // namespace tessel::cuda

#endif // TESSEL_RUNTIME_CUDADRIVER_H
