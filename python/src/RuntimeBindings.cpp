//===- RuntimeBindings.cpp - The CUDA runtime from Python -----------------===//
//
// Thin bindings of include/tessel/Runtime.h: load bundles, move memory and
// launch kernels by name. Device pointers and streams are Python ints (as
// torch.Tensor.data_ptr() and torch.cuda.Stream.cuda_stream give them).
// Driver and load failures raise tessel.DeviceError, launch failures
// tessel.LaunchError, with the runtime's message.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "tessel/Runtime.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <string_view>

namespace py = pybind11;
using namespace tessel;

void python::check(const Status &status, const char *error) {
  if (!status.ok())
    python::raise(error, status.message());
}

namespace {

using python::check;

template <class T> T take(Result<T> result) {
  check(result.status());
  return std::move(*result);
}

Stream toStream(uintptr_t stream) { return reinterpret_cast<Stream>(stream); }

} // namespace

std::vector<Arg> python::toArgs(const Kernel &kernel,
                                const py::sequence &values) {
  const std::vector<ParamInfo> &params = kernel.params();
  if (values.size() != params.size())
    throw py::value_error("kernel '" + kernel.name() + "' takes " +
                          std::to_string(params.size()) + " arguments, got " +
                          std::to_string(values.size()));
  std::vector<Arg> args;
  for (size_t i = 0; i < params.size(); ++i) {
    py::handle v = values[i];
    const ParamInfo &p = params[i];
    switch (p.kind) {
    case ArgKind::Ptr:
      if (v.is_none() && !p.none)
        throw py::type_error("kernel '" + kernel.name() + "', argument '" +
                             p.name +
                             "': None where the kernel uses the buffer");
      args.push_back(Arg::ptr(v.is_none() ? 0 : v.cast<uint64_t>()));
      break;
    case ArgKind::I32: {
      auto x = v.cast<int64_t>();
      if (x < std::numeric_limits<int32_t>::min() ||
          x > std::numeric_limits<int32_t>::max())
        throw py::value_error("kernel '" + kernel.name() + "', argument '" +
                              p.name + "': " + std::to_string(x) +
                              " does not fit in i32");
      args.push_back(Arg::i32(static_cast<int32_t>(x)));
      break;
    }
    case ArgKind::I64:
      args.push_back(Arg::i64(v.cast<int64_t>()));
      break;
    case ArgKind::F32:
      args.push_back(Arg::f32(v.cast<float>()));
      break;
    case ArgKind::F16:
      args.push_back(Arg::f16(v.cast<float>()));
      break;
    case ArgKind::BF16:
      args.push_back(Arg::bf16(v.cast<float>()));
      break;
    }
  }
  return args;
}

namespace {

// The DLPack ABI (dlpack.h, stable since v0.6): only what a launch reads.
struct DLDevice {
  int32_t deviceType;
  int32_t deviceId;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byteOffset;
};

/// (address, device type, device id, dtype code, bits, lanes) of a DLPack
/// capsule (`x.__dlpack__()`), without consuming it: the producer keeps
/// ownership and frees it when the capsule goes away.
py::tuple dlpackInfo(const py::capsule &capsule) {
  if (std::string_view(capsule.name() ? capsule.name() : "") != "dltensor")
    throw py::value_error("not an unconsumed DLPack capsule ('dltensor')");
  // DLManagedTensor begins with its DLTensor.
  const auto *t = capsule.get_pointer<DLTensor>();
  uint64_t address = reinterpret_cast<uintptr_t>(t->data) + t->byteOffset;
  return py::make_tuple(address, t->device.deviceType, t->device.deviceId,
                        t->dtype.code, t->dtype.bits, t->dtype.lanes);
}

void requireContiguous(const py::array &array, const char *what) {
  if (!(array.flags() & py::array::c_style))
    throw py::value_error(std::string(what) +
                          ": the array must be C-contiguous");
}

} // namespace

void tessel::python::bindRuntime(py::module_ &m) {
  m.def("dlpack_info", &dlpackInfo, py::arg("capsule"),
        "(address, device_type, device_id, dtype_code, bits, lanes) of a "
        "DLPack capsule, which stays unconsumed.");
  py::class_<Kernel>(m, "RuntimeKernel")
      .def_property_readonly("name", &Kernel::name)
      .def_property_readonly("params",
                             [](const Kernel &k) {
                               py::list params;
                               for (const ParamInfo &p : k.params())
                                 params.append(py::make_tuple(
                                     p.name, argKindName(p.kind), p.elem,
                                     python::multipleOfObject(p.multipleOf),
                                     p.none));
                               return params;
                             })
      .def_property_readonly("num_warps", &Kernel::numWarps)
      .def_property_readonly("shared_bytes", &Kernel::sharedBytes)
      .def_property_readonly("persistent", &Kernel::persistent)
      .def_property_readonly("cluster", &Kernel::cluster)
      .def_property_readonly("resident_clusters", &Kernel::residentClusters);

  py::class_<Module>(m, "RuntimeModule")
      .def(
          "kernel",
          [](const Module &mod, const std::string &name) {
            return take(mod.kernel(name));
          },
          py::arg("name"), py::keep_alive<0, 1>())
      // Names rather than handles: each handle must keep the module alive.
      .def("kernel_names", [](const Module &mod) {
        std::vector<std::string> names;
        for (const Kernel &k : mod.kernels())
          names.push_back(k.name());
        return names;
      });

  py::class_<Runtime> runtime(m, "Runtime");
  runtime
      .def(py::init([](int device, const std::string &driver) {
             RuntimeOptions options;
             options.device = device;
             options.driverLibrary = driver;
             return take(Runtime::create(options));
           }),
           py::arg("device") = 0, py::arg("driver_library") = "libcuda.so.1")
      // Handles stay valid as long as the Runtime: keep it alive with them.
      .def(
          "load_bundle",
          [](Runtime &rt, const std::string &path) {
            return take(rt.loadBundle(path));
          },
          py::arg("path"), py::keep_alive<0, 1>())
      .def(
          "load_bundle_from_string",
          [](Runtime &rt, const std::string &text, const std::string &name) {
            return take(rt.loadBundleFromString(text, name));
          },
          py::arg("text"), py::arg("name") = "<string>", py::keep_alive<0, 1>())
      .def(
          "launch",
          [](Runtime &rt, const Kernel &kernel, const py::sequence &args,
             uintptr_t stream, std::optional<std::vector<uint32_t>> grid) {
            std::vector<Arg> converted = python::toArgs(kernel, args);
            if (!grid) {
              check(rt.launch(kernel, converted, toStream(stream)),
                    "LaunchError");
              return;
            }
            if (grid->empty() || grid->size() > 3)
              throw py::value_error("grid must have 1 to 3 dimensions");
            Grid dims = {1, 1, 1};
            std::copy(grid->begin(), grid->end(), dims.begin());
            check(rt.launch(kernel, converted, dims, toStream(stream)),
                  "LaunchError");
          },
          py::arg("kernel"), py::arg("args"), py::arg("stream") = 0,
          py::arg("grid") = py::none())
      .def_property_readonly("multiprocessor_count",
                             &Runtime::multiprocessorCount)
      .def_property_readonly("device", &Runtime::device)
      .def_property_readonly("compute_capability", &Runtime::computeCapability)
      .def(
          "alloc",
          [](Runtime &rt, size_t bytes) { return take(rt.alloc(bytes)); },
          py::arg("bytes"))
      .def(
          "free", [](Runtime &rt, DevicePtr ptr) { check(rt.free(ptr)); },
          py::arg("ptr"))
      .def(
          "copy_to_device",
          [](Runtime &rt, DevicePtr dst, const py::array &src) {
            requireContiguous(src, "copy_to_device");
            check(rt.copyToDevice(dst, src.data(), src.nbytes()));
          },
          py::arg("dst"), py::arg("src"))
      .def(
          "copy_to_host",
          [](Runtime &rt, py::array &dst, DevicePtr src) {
            requireContiguous(dst, "copy_to_host");
            check(rt.copyToHost(dst.mutable_data(), src, dst.nbytes()));
          },
          py::arg("dst"), py::arg("src"))
      .def(
          "fill",
          [](Runtime &rt, DevicePtr dst, uint8_t value, size_t bytes) {
            check(rt.fill(dst, value, bytes));
          },
          py::arg("dst"), py::arg("value"), py::arg("bytes"))
      .def(
          "synchronize",
          [](Runtime &rt, uintptr_t stream) {
            Status status;
            {
              // Waiting for the GPU needs no Python objects.
              py::gil_scoped_release release;
              status = rt.synchronize(toStream(stream));
            }
            check(status);
          },
          py::arg("stream") = 0);
  python::bindFastLaunch(m, runtime);
}
