//===- Runtime.h - Load kernel bundles and launch them on a GPU -*- C++ -*-===//
//
// The public C++ API of the Tessel runtime. It opens libcuda at run time, so a
// program linked against it loads on any machine and reports "no CUDA driver
// found" instead of failing to start. Errors are returned as Status/Result
// values with a message; nothing throws or aborts on bad input.
//
// Typical use:
//   auto rt = tessel::Runtime::create();           // device 0, primary context
//   if (!rt.ok()) { print(rt.message()); return; }
//   auto mod = (*rt)->loadBundle("add.bundle");
//   auto add = mod->kernel("add");
//   Status s = (*rt)->launch(*add, {Arg::ptr(x), Arg::ptr(y), Arg::i32(n)});
//
// Handles (Module, Kernel) stay valid as long as the Runtime that made them.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_H
#define TESSEL_RUNTIME_H

#include <array>
#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel {

/// Success, or an error with a message.
class [[nodiscard]] Status {
public:
  Status() = default;
  static Status error(std::string message);

  bool ok() const { return !failed; }
  const std::string &message() const { return msg; }
  /// Adds context in front of an error message ("kernel 'add': ...").
  Status &prepend(std::string_view context);

private:
  bool failed = false;
  std::string msg;
};

/// A value, or the Status that explains why there is none.
template <class T> class [[nodiscard]] Result {
public:
  Result(T value) : val(std::move(value)) {}
  Result(Status error) : err(std::move(error)) {
    assert(!err.ok() && "a Result without a value needs an error");
  }

  bool ok() const { return val.has_value(); }
  const Status &status() const { return err; }
  const std::string &message() const { return err.message(); }

  /// The value; only valid if ok().
  T &value() { return (assert(ok() && "no value"), *val); }
  const T &value() const { return (assert(ok() && "no value"), *val); }
  T &operator*() { return value(); }
  const T &operator*() const { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

private:
  std::optional<T> val;
  Status err;
};

/// Kinds of kernel parameters, as named in bundles ("ptr", "i32", ...).
enum class ArgKind : uint8_t { Ptr, I32, I64, F16, BF16, F32 };
const char *argKindName(ArgKind kind);
/// Bytes the kernel receives for a parameter of this kind.
unsigned argKindSize(ArgKind kind);

/// One typed kernel argument, checked against the bundle at launch.
class Arg {
public:
  static Arg ptr(uint64_t devicePtr);
  static Arg i32(int32_t v);
  static Arg i64(int64_t v);
  static Arg f32(float v);
  /// f16/bf16 round the float to nearest even.
  static Arg f16(float v);
  static Arg bf16(float v);

  ArgKind kind() const { return k; }
  /// The value of an i32/i64 argument (grid expressions use it).
  int64_t intValue() const { return k == ArgKind::I32 ? bits.i32 : bits.i64; }
  /// The device address of a ptr argument.
  uint64_t address() const { return bits.u64; }
  /// The bytes cuLaunchKernel reads for this argument.
  const void *data() const { return &bits; }

private:
  explicit Arg(ArgKind kind) : k(kind) {}
  ArgKind k;
  union {
    uint64_t u64;
    int32_t i32;
    int64_t i64;
    float f32;
    uint16_t u16;
  } bits = {0};
};

/// A kernel parameter as the bundle declares it.
struct ParamInfo {
  std::string name;
  ArgKind kind;
  std::string elem; // element type of a pointer ("f16"); empty for scalars
  /// The kernel's multiple_of hint, checked at every launch: an i32/i64
  /// argument is a multiple of it, a pointer aligned to that many bytes;
  /// 0: no hint.
  int64_t multipleOf = 0;
  /// A pointer the kernel was compiled with as None (it does not use it):
  /// every launch passes a null pointer, Arg::ptr(0).
  bool none = false;

  /// Whether an integer argument keeps the hint.
  bool keepsHint(int64_t value) const {
    return !multipleOf || value % multipleOf == 0;
  }
  /// Whether a pointer argument's address keeps the hint.
  bool keepsHint(uint64_t address) const {
    return !multipleOf || address % uint64_t(multipleOf) == 0;
  }
};

namespace detail {
struct KernelState;
struct ModuleState;
struct PreparedState;
struct RuntimeImpl;
} // namespace detail

/// A kernel of a loaded bundle.
class Kernel {
public:
  const std::string &name() const;
  const std::vector<ParamInfo> &params() const;
  int numWarps() const;
  uint32_t sharedBytes() const;
  /// Persistent kernels get a grid sized from the SM count and occupancy.
  bool persistent() const;
  /// CTAs per thread-block cluster along x (a grid's x is a multiple of it);
  /// 1: no clusters.
  int cluster() const;
  /// The clusters the device holds at once, which bounds a persistent
  /// kernel's grid (a cluster's CTAs share one GPC, so fewer fit than the
  /// SMs suggest); none without clusters or where the driver cannot tell.
  std::optional<int> residentClusters() const;

private:
  friend class Module;
  friend class Runtime;
  explicit Kernel(detail::KernelState *state) : state(state) {}
  detail::KernelState *state;
};

/// The kernels of one loaded bundle.
class Module {
public:
  Result<Kernel> kernel(std::string_view name) const;
  std::vector<Kernel> kernels() const;

private:
  friend struct detail::RuntimeImpl;
  explicit Module(detail::ModuleState *state) : state(state) {}
  detail::ModuleState *state;
};

using DevicePtr = uint64_t;
/// CTAs along x, y, z.
using Grid = std::array<uint32_t, 3>;
/// A CUstream (e.g. torch.cuda.current_stream().cuda_stream); nullptr is the
/// legacy default stream.
using Stream = void *;

/// One kernel's launch with every argument but the pointers fixed: checked,
/// planned (grid, workspace, tensor map shapes) and packed once by
/// Runtime::prepare, so that a caller repeating a launch (an op called again
/// on inputs of the same shapes) pays only for patching the pointers,
/// checking their multiple_of hints and the driver call; a tensor map is
/// encoded again only when its pointer changes. Valid as long as the Runtime
/// that made it.
class PreparedLaunch {
public:
  PreparedLaunch(PreparedLaunch &&) noexcept;
  PreparedLaunch &operator=(PreparedLaunch &&) noexcept;
  ~PreparedLaunch();

  const Kernel &kernel() const;
  /// Indices of the kernel's pointer parameters (those compiled as None
  /// left out: they stay null): launch() takes their addresses in this
  /// order.
  const std::vector<uint32_t> &pointerParams() const;
  /// The grid every launch uses (sized by occupancy for persistent kernels).
  Grid grid() const;
  /// Whether `pointers` (one per pointerParams()) keep the multiple_of hints
  /// of their parameters, and those that tensor maps are made of are 16-byte
  /// aligned; launch() refuses them otherwise.
  bool pointersFit(const DevicePtr *pointers) const;
  /// Enqueues the kernel with `pointers` (one per pointerParams()) and the
  /// prepared scalars on `stream`.
  Status launch(const DevicePtr *pointers, Stream stream = nullptr);

private:
  friend class Runtime;
  explicit PreparedLaunch(std::unique_ptr<detail::PreparedState> state);
  std::unique_ptr<detail::PreparedState> state;
};

struct RuntimeOptions {
  int device = 0;
  /// The driver library to open; tests point it at a stub.
  std::string driverLibrary = "libcuda.so.1";
};

/// One device, driven through its primary context, so memory is shared with
/// PyTorch and other users of the CUDA runtime API in the process.
class Runtime {
public:
  static Result<std::unique_ptr<Runtime>>
  create(const RuntimeOptions &options = {});
  ~Runtime();
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  /// Loads a bundle file (see docs/bundle.md). Modules are cached by PTX
  /// text, so loading the same kernels twice JIT-compiles them once.
  Result<Module> loadBundle(const std::string &path);
  /// `name` is used in error messages.
  Result<Module> loadBundleFromString(std::string_view text,
                                      std::string_view name = "<string>");

  /// Checks `args` against the kernel's parameters (kinds and multiple_of
  /// hints), computes the grid from its launch rule, encodes the kernel's
  /// tensor maps (or finds them encoded by an earlier launch) and enqueues
  /// the kernel on `stream` (asynchronously).
  /// A grid with a zero dimension launches nothing and succeeds. A kernel
  /// with a `then` (split-K's combine kernel) is followed on `stream` by that
  /// kernel with the same grid, arguments and workspace; the `then` kernel
  /// itself cannot be launched on its own.
  Status launch(const Kernel &kernel, const std::vector<Arg> &args,
                Stream stream = nullptr);
  /// The same with the grid given by the caller: for kernels whose bundle
  /// has no grid formula (as for Triton's kernel[grid]); not for persistent
  /// kernels, which size their own grid.
  Status launch(const Kernel &kernel, const std::vector<Arg> &args,
                const Grid &grid, Stream stream = nullptr);

  /// Checks and plans a launch of `kernel` with `args` (see launch()) once,
  /// for repeated launches that differ only in their pointer arguments; the
  /// pointers given here are placeholders (their hints are checked at each
  /// launch). `grid` as for launch(kernel, args, grid); none: the kernel's
  /// own rule.
  Result<PreparedLaunch> prepare(const Kernel &kernel,
                                 const std::vector<Arg> &args,
                                 const std::optional<Grid> &grid = {});

  /// The grid launch(kernel, args) would use (for a persistent kernel, the
  /// one sized by occupancy), or why it would not launch; for tools that
  /// report it.
  Result<Grid> launchGrid(const Kernel &kernel,
                          const std::vector<Arg> &args) const;

  int multiprocessorCount() const;
  /// The ordinal of the device this Runtime drives.
  int device() const;
  /// (major, minor) of the device, e.g. (9, 0) for an H100.
  std::pair<int, int> computeCapability() const;

  // Device memory helpers for tools and tests; they synchronize.
  Result<DevicePtr> alloc(size_t bytes);
  Status free(DevicePtr ptr);
  Status copyToDevice(DevicePtr dst, const void *src, size_t bytes);
  Status copyToHost(void *dst, DevicePtr src, size_t bytes);
  /// Sets `bytes` bytes at `dst` to `value`.
  Status fill(DevicePtr dst, uint8_t value, size_t bytes);
  /// Waits for `stream`; reports errors of earlier asynchronous launches.
  Status synchronize(Stream stream = nullptr);

  /// Milliseconds of GPU time between events recorded on `stream` before and
  /// after `work` runs (work enqueues launches; the call waits for them).
  Result<float> timeMs(const std::function<Status()> &work,
                       Stream stream = nullptr);

private:
  explicit Runtime(std::unique_ptr<detail::RuntimeImpl> impl);
  Status launchWith(const Kernel &kernel, const std::vector<Arg> &args,
                    const Grid *grid, Stream stream);
  std::unique_ptr<detail::RuntimeImpl> impl;
};

} // namespace tessel

#endif // TESSEL_RUNTIME_H
