//===- FakeCuda.h - A stand-in libcuda for the runtime's tests --*- C++ -*-===//
//
// libTesselFakeCuda.so exports the driver entry points the runtime resolves.
// "Device" memory is host memory and a launch calls a host function, so the
// tests drive the whole load-and-launch path on machines without a GPU and
// can inject driver failures. Tools run by lit use it as their driver
// (--driver-library, or as libcuda.so.1 on LD_LIBRARY_PATH).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_FAKECUDA_H
#define TESSEL_TEST_FAKECUDA_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct FakeLaunch {
  std::string function;
  unsigned grid[3];
  unsigned block[3];
  unsigned sharedBytes;
  void *stream;
  /// The bytes of each kernel parameter, sized as the entry's PTX declares
  /// them (empty where the PTX has no such entry).
  std::vector<std::string> args;
  /// cuLaunchKernelEx's CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION; 1, 1, 1
  /// without one.
  unsigned cluster[3] = {1, 1, 1};
};

/// The arguments of one cuTensorMapEncodeTiled call (the arrays cut to the
/// rank). The fake's CUtensorMap holds the call's number (from 1) in its
/// first 8 bytes and the address in the next 8, so tests can tell which
/// encoding a launch received.
struct FakeTensorMapEncode {
  int dataType;
  unsigned rank;
  uint64_t address;
  std::vector<uint64_t> dims, strides;
  std::vector<uint32_t> box, elementStrides;
  int interleave, swizzle, l2Promotion, oobFill;
};

struct FakeCudaState {
  // What the fake device is and does.
  int initResult = 0;
  int deviceCount = 1;
  int smCount = 4;
  int sharedOptin = 232448;
  int ccMajor = 9, ccMinor = 0;
  int occupancy = 2;
  /// What cuOccupancyMaxActiveClusters says, whatever the cluster size.
  int maxActiveClusters = 2;
  /// The entry point of this name returns `failResult`.
  std::string failCall;
  int failResult = 700; // CUDA_ERROR_ILLEGAL_ADDRESS
  /// Runs at each launch with the kernel parameters.
  std::function<void(const FakeLaunch &, void **params)> kernel;

  // What the runtime did.
  int moduleLoads = 0, moduleUnloads = 0;
  int retains = 0, releases = 0;
  int contextDepth = 0;
  int liveAllocations = 0, liveEvents = 0;
  int memsets = 0;
  int maxDynamicShared = 0; // the last CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED...
  int nonPortableClusters = 0; // the last ..._NON_PORTABLE_CLUSTER_SIZE...
  std::vector<FakeLaunch> launches;
  /// The configurations cuOccupancyMaxActiveClusters was asked about (no
  /// arguments).
  std::vector<FakeLaunch> clusterQueries;
  std::vector<FakeTensorMapEncode> tensorMapEncodes;
};

/// The fake's state; tests reset it by assigning FakeCudaState().
extern "C" FakeCudaState *fakeCudaState();

// For tests that load the fake through ctypes (the Python package's), which
// cannot reach FakeCudaState:
/// Forgets the launches recorded so far and any injected failure.
extern "C" void fakeCudaReset();
/// Makes the entry point `call` return `result` (an empty name: none).
extern "C" void fakeCudaFail(const char *call, int result);
extern "C" int fakeCudaLaunchCount();
extern "C" int fakeCudaTensorMapEncodeCount();
/// Launch `i` as one line: "FUNCTION grid=X,Y,Z block=X,Y,Z shared=N
/// stream=0xS args=HEX,HEX,..." (each argument's bytes in hex, in memory
/// order); valid until the next call.
extern "C" const char *fakeCudaDescribeLaunch(int i);

/// The path the fake library was loaded from (for RuntimeOptions).
std::string fakeCudaPath();
/// The path of the fake driver without the entry points CUDA 12 added
/// (cuTensorMapEncodeTiled, cuLaunchKernelEx, cuOccupancyMaxActiveClusters),
/// next to the fake.
std::string fakeOldCudaPath();

/// PTX that makes the fake JIT fail with a log.
constexpr const char *kFakeJitError = "FAKE_JIT_ERROR";

#endif // TESSEL_TEST_FAKECUDA_H
