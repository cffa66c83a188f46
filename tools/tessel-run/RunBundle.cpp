//===- RunBundle.cpp - tessel-run on the GPU, through tessel::Runtime -----===//
//
// The runtime API's worked example: loads a bundle, makes the inputs on the
// host exactly as the interpreter path does, copies them to the device,
// launches and times the kernel, and copies the buffers back for --save.
//
//===----------------------------------------------------------------------===//

#include "Run.h"

#include "tessel/Runtime.h"

#include <algorithm>
#include <cstdint>

namespace tessel::run {

namespace {

/// Device buffers that are freed with it.
struct DeviceBuffers {
  Runtime &runtime;
  std::vector<DevicePtr> ptrs;

  explicit DeviceBuffers(Runtime &runtime) : runtime(runtime) {}
  ~DeviceBuffers() {
    for (DevicePtr p : ptrs)
      (void)runtime.free(p);
  }
};

size_t bytesOf(const Memory &memory, int id) {
  return memory.size(id) * dtypeSize(memory.dtype(id));
}

Result<Kernel> pickKernel(const Module &module, const Options &options) {
  if (!options.kernel.empty())
    return module.kernel(options.kernel);
  std::vector<Kernel> kernels = module.kernels();
  if (kernels.size() == 1)
    return kernels[0];
  std::string names;
  for (const Kernel &k : kernels)
    names += (names.empty() ? "" : ", ") + k.name();
  return Status::error("'" + options.input + "' has " +
                       std::to_string(kernels.size()) + " kernels (" + names +
                       "): choose one with --kernel");
}

/// The parameters --arg gives, or why tessel-run cannot make one.
Result<std::vector<Param>> paramsOf(const Kernel &kernel) {
  std::vector<Param> params;
  for (const ParamInfo &p : kernel.params()) {
    switch (p.kind) {
    case ArgKind::Ptr: {
      std::optional<DType> elem = dtypeNamed(p.elem);
      if (!elem)
        return Status::error("kernel '" + kernel.name() + "': parameter '" +
                             p.name + "' points to " + p.elem +
                             ", which tessel-run makes no buffers of");
      params.push_back({p.name, KernelArg::Kind::Buffer, *elem, p.none});
      break;
    }
    case ArgKind::I32:
    case ArgKind::I64:
      params.push_back({p.name, KernelArg::Kind::Int});
      break;
    case ArgKind::F16:
    case ArgKind::BF16:
    case ArgKind::F32:
      params.push_back({p.name, KernelArg::Kind::Float});
      break;
    }
  }
  return params;
}

/// The launch arguments: device pointers for buffers, scalars of the
/// parameter's kind.
Result<std::vector<Arg>> launchArgs(const Kernel &kernel, const Inputs &inputs,
                                    const DeviceBuffers &device) {
  std::vector<Arg> args;
  for (size_t i = 0; i < inputs.args.size(); ++i) {
    const KernelArg &a = inputs.args[i];
    const ParamInfo &p = kernel.params()[i];
    switch (p.kind) {
    case ArgKind::Ptr:
      args.push_back(Arg::ptr(p.none ? 0 : device.ptrs[a.buffer]));
      break;
    case ArgKind::I32:
      if (a.intValue < INT32_MIN || a.intValue > INT32_MAX)
        return Status::error("argument '" + p.name +
                             "': " + std::to_string(a.intValue) +
                             " does not fit an i32");
      args.push_back(Arg::i32(int32_t(a.intValue)));
      break;
    case ArgKind::I64:
      args.push_back(Arg::i64(a.intValue));
      break;
    case ArgKind::F16:
      args.push_back(Arg::f16(float(a.floatValue)));
      break;
    case ArgKind::BF16:
      args.push_back(Arg::bf16(float(a.floatValue)));
      break;
    case ArgKind::F32:
      args.push_back(Arg::f32(float(a.floatValue)));
      break;
    }
  }
  return args;
}

} // namespace

int runBundle(const Options &options) {
  if (!options.defines.empty() || options.stage || options.streamK)
    return fail("-D, --stage and --stream-k apply to .tsl/.mlir kernels; the "
                "kernels of a bundle are compiled already");
  RuntimeOptions runtimeOptions;
  runtimeOptions.device = options.device;
  runtimeOptions.driverLibrary = options.driverLibrary;
  auto created = Runtime::create(runtimeOptions);
  if (!created.ok())
    return fail(created.message() + ": running '" + options.input +
                "' needs an NVIDIA GPU and its driver");
  Runtime &runtime = **created;
  Result<Module> module = runtime.loadBundle(options.input);
  if (!module.ok())
    return fail(module.message());
  Result<Kernel> kernel = pickKernel(*module, options);
  if (!kernel.ok())
    return fail(kernel.message());
  Result<std::vector<Param>> params = paramsOf(*kernel);
  if (!params.ok())
    return fail(params.message());

  Inputs inputs;
  std::string error;
  if (!makeInputs(kernel->name(), *params, options, inputs, error))
    return fail(error);
  DeviceBuffers device(runtime);
  for (int id = 0; id < inputs.memory.numBuffers(); ++id) {
    // cuMemAlloc rejects 0 bytes.
    Result<DevicePtr> ptr =
        runtime.alloc(std::max<size_t>(bytesOf(inputs.memory, id), 1));
    if (!ptr.ok())
      return fail(ptr.message());
    device.ptrs.push_back(*ptr);
  }
  Result<std::vector<Arg>> args = launchArgs(*kernel, inputs, device);
  if (!args.ok())
    return fail(args.message());

  // A grid kernel runs on --grid, else on its bundle's grid formula; a
  // persistent one sizes its own.
  std::optional<Grid> given;
  if (options.grid && !kernel->persistent()) {
    std::array<int64_t, 3> g;
    if (!parseGrid(*options.grid, g))
      return fail("--grid expects X[,Y[,Z]] with integers in [0, 2^31), "
                  "got '" +
                  *options.grid + "'");
    given = Grid{uint32_t(g[0]), uint32_t(g[1]), uint32_t(g[2])};
  }
  Result<Grid> grid =
      given ? Result<Grid>(*given) : runtime.launchGrid(*kernel, *args);
  if (!grid.ok())
    return fail(grid.message());

  auto run = [&](double &ms, std::string &error) {
    // Every run starts from the same inputs (kernels accumulate with
    // atomics), so --save holds what one run computes.
    for (int id = 0; id < inputs.memory.numBuffers(); ++id) {
      size_t bytes = bytesOf(inputs.memory, id);
      Status s = bytes ? runtime.copyToDevice(device.ptrs[id],
                                              inputs.memory.data(id), bytes)
                       : Status();
      if (!s.ok())
        return error = s.message(), false;
    }
    Result<float> time = runtime.timeMs([&] {
      return given ? runtime.launch(*kernel, *args, *given)
                   : runtime.launch(*kernel, *args);
    });
    if (!time.ok())
      return error = time.message(), false;
    ms = *time;
    return true;
  };
  double ms;
  if (!timeRuns(options, /*defaultWarmup=*/1, run, ms, error))
    return fail(error);
  report(kernel->name(), "the GPU", {(*grid)[0], (*grid)[1], (*grid)[2]}, ms,
         options);

  for (const auto &[name, path] : options.saves) {
    auto it = inputs.buffers.find(name);
    if (it == inputs.buffers.end())
      continue; // saveBuffers names it
    Status s = runtime.copyToHost(inputs.memory.data(it->second),
                                  device.ptrs[it->second],
                                  bytesOf(inputs.memory, it->second));
    if (!s.ok())
      return fail(s.message());
  }
  if (!saveBuffers(options, inputs, error))
    return fail(error);
  return 0;
}

} // namespace tessel::run
