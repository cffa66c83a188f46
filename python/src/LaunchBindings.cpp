//===- LaunchBindings.cpp - The launch fast path from Python --------------===//
//
// What a repeated launch from Python runs, in C++ and with the raw CPython
// API, so that it costs little more than the driver call:
//  - Runtime.try_launch(kernel, args, grid): a kernel[grid](...) call. Takes
//    ints, floats and the tensors of the framework registered with
//    set_tensor_adapter() (dtype and device checked, data_ptr() read), checks
//    the multiple_of hints and launches on the framework's current stream.
//    Anything else (another kind of buffer, a value out of range, a broken
//    hint) returns False without launching: the Python path then launches it
//    or raises the error that names the kernel and the argument.
//  - Runtime.prepare(...) -> PreparedLaunch: a launch checked and planned
//    once (the ready ops' plans); calling it with the buffers (tensors or
//    addresses) launches it on the current stream.
//  - Plan: what a ready op's repeated call runs once its plan is found
//    (tessel/ops/plans.py): the plan's allocations and prepared launches.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <pybind11/stl.h>

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace tessel;

namespace {

/// The framework whose tensors the fast path takes (PyTorch): references
/// owned here, replaced by set_tensor_adapter(); never freed at exit, when
/// the interpreter may already be gone.
struct TensorAdapter {
  PyObject *type = nullptr;
  /// Its dtype objects and the element types they hold ("f16").
  std::vector<std::pair<PyObject *, std::string>> dtypes;
  /// current_stream(device) -> the raw CUstream as an int.
  PyObject *currentStream = nullptr;
};
TensorAdapter *adapter = nullptr;

PyObject *dataPtrName, *getDeviceName, *dtypeName;

/// The result of a Python call, or nullptr with the Python error cleared:
/// the fast path declines instead, and the slow path meets the error again.
py::object callMethod(PyObject *object, PyObject *name) {
  PyObject *result = PyObject_CallMethodObjArgs(object, name, nullptr);
  if (!result)
    PyErr_Clear();
  return py::reinterpret_steal<py::object>(result);
}

std::optional<int64_t> toInt(PyObject *value, int64_t lo, int64_t hi) {
  if (!PyLong_CheckExact(value)) // not bool: the slow path refuses bools
    return std::nullopt;
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow || (x == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return std::nullopt;
  }
  if (x < lo || x > hi)
    return std::nullopt;
  return x;
}

std::optional<double> toReal(PyObject *value) {
  if (PyFloat_CheckExact(value))
    return PyFloat_AS_DOUBLE(value);
  if (!PyLong_CheckExact(value))
    return std::nullopt;
  double x = PyLong_AsDouble(value);
  if (x == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  return x;
}

/// A non-negative int as a device address.
std::optional<DevicePtr> toAddress(PyObject *value) {
  std::optional<int64_t> x =
      toInt(value, 0, std::numeric_limits<int64_t>::max());
  return x ? std::optional<DevicePtr>(DevicePtr(*x)) : std::nullopt;
}

/// The address of a registered tensor holding `elem` on `device`.
std::optional<DevicePtr> tensorAddress(PyObject *value, const std::string &elem,
                                       int device) {
  if (!adapter || !PyObject_TypeCheck(
                      value, reinterpret_cast<PyTypeObject *>(adapter->type)))
    return std::nullopt;
  py::object dtype =
      py::reinterpret_steal<py::object>(PyObject_GetAttr(value, dtypeName));
  if (!dtype) {
    PyErr_Clear();
    return std::nullopt;
  }
  bool match = false;
  for (const auto &[object, name] : adapter->dtypes)
    if (object == dtype.ptr()) {
      match = name == elem;
      break;
    }
  if (!match)
    return std::nullopt;
  py::object where = callMethod(value, getDeviceName);
  if (!where || toInt(where.ptr(), device, device) != device)
    return std::nullopt;
  py::object address = callMethod(value, dataPtrName);
  return address ? toAddress(address.ptr()) : std::nullopt;
}

/// A buffer of a prepared launch: an address, or anything with data_ptr().
std::optional<DevicePtr> bufferAddress(PyObject *value) {
  if (PyLong_CheckExact(value))
    return toAddress(value);
  py::object address = callMethod(value, dataPtrName);
  return address ? toAddress(address.ptr()) : std::nullopt;
}

/// The registered framework's current stream on `device` (none registered:
/// the legacy default stream), or nullopt if asking failed; `raise`: raise
/// the framework's error instead.
std::optional<Stream> currentStream(int device, bool raise = false) {
  if (!adapter)
    return nullptr;
  py::object index = py::int_(device);
  PyObject *result = PyObject_CallFunctionObjArgs(adapter->currentStream,
                                                  index.ptr(), nullptr);
  if (!result) {
    if (raise)
      throw py::error_already_set();
    PyErr_Clear();
    return std::nullopt;
  }
  py::object owned = py::reinterpret_steal<py::object>(result);
  std::optional<int64_t> raw =
      toInt(result, 0, std::numeric_limits<int64_t>::max());
  if (!raw)
    return std::nullopt;
  return reinterpret_cast<Stream>(uintptr_t(*raw));
}

/// One argument of a kernel[grid](...) call, if the fast path takes it.
std::optional<Arg> fastArg(const ParamInfo &p, PyObject *value, int device,
                           bool &sawTensor) {
  switch (p.kind) {
  case ArgKind::Ptr: {
    if (p.none) // compiled as None: None passes a null pointer
      return value == Py_None ? std::optional(Arg::ptr(0)) : std::nullopt;
    std::optional<DevicePtr> address;
    if (PyLong_CheckExact(value)) {
      address = toAddress(value);
    } else {
      address = tensorAddress(value, p.elem, device);
      sawTensor = sawTensor || address;
    }
    if (!address || !p.keepsHint(*address))
      return std::nullopt;
    return Arg::ptr(*address);
  }
  case ArgKind::I32:
  case ArgKind::I64: {
    bool i32 = p.kind == ArgKind::I32;
    std::optional<int64_t> x =
        i32 ? toInt(value, std::numeric_limits<int32_t>::min(),
                    std::numeric_limits<int32_t>::max())
            : toInt(value, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max());
    if (!x || !p.keepsHint(*x))
      return std::nullopt;
    return i32 ? Arg::i32(int32_t(*x)) : Arg::i64(*x);
  }
  case ArgKind::F32:
  case ArgKind::F16:
  case ArgKind::BF16: {
    std::optional<double> x = toReal(value);
    if (!x)
      return std::nullopt;
    float f = float(*x);
    return p.kind == ArgKind::F32   ? Arg::f32(f)
           : p.kind == ArgKind::F16 ? Arg::f16(f)
                                    : Arg::bf16(f);
  }
  }
  return std::nullopt;
}

/// A grid as kernel[grid] takes it (an int, or a tuple or list of 1 to 3).
std::optional<Grid> toGrid(PyObject *value) {
  Grid grid = {1, 1, 1};
  auto dim = [&](PyObject *item, size_t i) {
    std::optional<int64_t> x =
        toInt(item, 0, std::numeric_limits<uint32_t>::max());
    if (x)
      grid[i] = uint32_t(*x);
    return bool(x);
  };
  if (PyLong_CheckExact(value))
    return dim(value, 0) ? std::optional<Grid>(grid) : std::nullopt;
  if (!PyTuple_CheckExact(value) && !PyList_CheckExact(value))
    return std::nullopt;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
  if (n < 1 || n > 3)
    return std::nullopt;
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!dim(PySequence_Fast_GET_ITEM(value, i), size_t(i)))
      return std::nullopt;
  return grid;
}

/// Runtime.try_launch: see the file comment.
bool tryLaunch(Runtime &rt, const Kernel &kernel, const py::tuple &values,
               const py::handle &gridValue) {
  const std::vector<ParamInfo> &params = kernel.params();
  if (size_t(PyTuple_GET_SIZE(values.ptr())) != params.size())
    return false;
  std::optional<Grid> grid;
  if (!gridValue.is_none() && !(grid = toGrid(gridValue.ptr())))
    return false;
  std::vector<Arg> args;
  args.reserve(params.size());
  bool sawTensor = false;
  for (size_t i = 0; i < params.size(); ++i) {
    std::optional<Arg> arg = fastArg(
        params[i], PyTuple_GET_ITEM(values.ptr(), i), rt.device(), sawTensor);
    if (!arg)
      return false;
    args.push_back(*arg);
  }
  // Launches with only addresses go on the legacy default stream, as in the
  // slow path.
  std::optional<Stream> stream =
      sawTensor ? currentStream(rt.device()) : Stream(nullptr);
  if (!stream)
    return false;
  python::check(grid ? rt.launch(kernel, args, *grid, *stream)
                     : rt.launch(kernel, args, *stream),
                "LaunchError");
  return true;
}

/// A PreparedLaunch and the device whose current stream its calls use.
struct PyPreparedLaunch {
  PreparedLaunch launch;
  int device;
};

/// Launches `p` with the buffers `values` on `stream`: False if a buffer
/// breaks its parameter's multiple_of hint (nothing is launched).
bool launchPrepared(PyPreparedLaunch &p, const py::tuple &values,
                    Stream stream) {
  const size_t count = p.launch.pointerParams().size();
  if (values.size() != count)
    throw py::value_error("kernel '" + p.launch.kernel().name() +
                          "': the prepared launch takes " +
                          std::to_string(count) + " buffers, got " +
                          std::to_string(values.size()));
  std::vector<DevicePtr> pointers(count);
  for (size_t i = 0; i < count; ++i) {
    std::optional<DevicePtr> address =
        bufferAddress(PyTuple_GET_ITEM(values.ptr(), i));
    if (!address) {
      const ParamInfo &param =
          p.launch.kernel().params()[p.launch.pointerParams()[i]];
      throw py::type_error("kernel '" + p.launch.kernel().name() +
                           "', argument '" + param.name +
                           "': expected a device address or an object with "
                           "data_ptr()");
    }
    pointers[i] = *address;
  }
  if (!p.launch.pointersFit(pointers.data()))
    return false;
  python::check(p.launch.launch(pointers.data(), stream), "LaunchError");
  return true;
}

/// A ready op's plan (tessel/ops/plans.py): allocations, prepared launches
/// and which buffers it returns.
struct Plan {
  /// () -> a new tensor each.
  py::tuple allocations;
  /// Each launch with the buffer index of each of its pointer parameters.
  std::vector<std::pair<PyPreparedLaunch *, std::vector<size_t>>> launches;
  /// The same as Python sees them, ((PreparedLaunch, (index, ...)), ...):
  /// immutable, it keeps the prepared launches alive as long as the plan.
  py::tuple launchObjects;
  /// Buffer indices of the results; -1: None.
  std::vector<int64_t> results;

  /// The results for `inputs`, or None where a launch declines them
  /// (misaligned: the op then takes its checked path).
  py::object operator()(const py::args &inputs) {
    std::vector<py::object> buffers;
    buffers.reserve(inputs.size() + allocations.size());
    for (py::handle x : inputs)
      buffers.push_back(py::reinterpret_borrow<py::object>(x));
    for (py::handle allocate : allocations)
      buffers.push_back(allocate());
    for (auto &[launch, slots] : launches) {
      py::tuple values(slots.size());
      for (size_t i = 0; i < slots.size(); ++i)
        values[i] = buffers.at(slots[i]);
      std::optional<Stream> stream = currentStream(launch->device, true);
      if (!stream)
        throw py::type_error("current_stream() must return an int");
      if (!launchPrepared(*launch, values, *stream))
        return py::none();
    }
    py::list out(results.size());
    for (size_t i = 0; i < results.size(); ++i)
      out[i] = results[i] < 0 ? py::none() : buffers.at(size_t(results[i]));
    return out;
  }
};

void setTensorAdapter(const py::object &type, const py::dict &dtypes,
                      const py::object &stream) {
  if (adapter) {
    Py_XDECREF(adapter->type);
    Py_XDECREF(adapter->currentStream);
    for (auto &entry : adapter->dtypes)
      Py_DECREF(entry.first);
    delete adapter;
    adapter = nullptr;
  }
  if (type.is_none())
    return;
  if (!PyType_Check(type.ptr()))
    throw py::type_error("set_tensor_adapter: expected a type");
  adapter = new TensorAdapter;
  adapter->type = type.inc_ref().ptr();
  adapter->currentStream = stream.inc_ref().ptr();
  for (auto [dtype, elem] : dtypes)
    adapter->dtypes.emplace_back(dtype.inc_ref().ptr(),
                                 elem.cast<std::string>());
}

} // namespace

void tessel::python::bindFastLaunch(py::module_ &m,
                                    py::class_<Runtime> &runtime) {
  dataPtrName = PyUnicode_InternFromString("data_ptr");
  getDeviceName = PyUnicode_InternFromString("get_device");
  dtypeName = PyUnicode_InternFromString("dtype");

  m.def("set_tensor_adapter", &setTensorAdapter, py::arg("tensor_type"),
        py::arg("dtypes") = py::dict(), py::arg("current_stream") = py::none(),
        "Registers the framework whose tensors the fast path takes: its "
        "tensor type, {dtype: element type name} and current_stream(device) "
        "-> raw CUstream int; tensor_type None forgets it.");
  py::class_<Plan>(m, "Plan")
      .def(py::init([](const py::list &allocations, const py::list &launches,
                       const std::vector<std::optional<size_t>> &results) {
             Plan plan;
             plan.allocations = py::tuple(allocations);
             py::list objects;
             for (py::handle entry : launches) {
               auto [launch, slots] =
                   entry.cast<std::pair<py::object, std::vector<size_t>>>();
               if (!py::isinstance<PyPreparedLaunch>(launch))
                 throw py::type_error("Plan: each launch is (PreparedLaunch, "
                                      "[buffer index, ...])");
               objects.append(
                   py::make_tuple(launch, py::tuple(py::cast(slots))));
               plan.launches.emplace_back(launch.cast<PyPreparedLaunch *>(),
                                          std::move(slots));
             }
             plan.launchObjects = py::tuple(objects);
             for (const std::optional<size_t> &r : results)
               plan.results.push_back(r ? int64_t(*r) : -1);
             return plan;
           }),
           py::arg("allocations"), py::arg("launches"), py::arg("results"))
      .def_property_readonly("allocations",
                             [](const Plan &p) { return p.allocations; })
      .def_property_readonly("launches",
                             [](const Plan &p) { return p.launchObjects; })
      .def("__call__", &Plan::operator(),
           "The op's results (a list) for these inputs (every buffer the "
           "allocations do not make), or None if a launch declined them "
           "(misaligned); what launched before that wrote only this call's "
           "own outputs.");

  py::class_<PyPreparedLaunch>(m, "PreparedLaunch")
      .def_property_readonly(
          "kernel_name",
          [](const PyPreparedLaunch &p) { return p.launch.kernel().name(); })
      .def_property_readonly(
          "grid", [](const PyPreparedLaunch &p) { return p.launch.grid(); })
      .def_property_readonly(
          "pointer_params",
          [](const PyPreparedLaunch &p) { return p.launch.pointerParams(); })
      .def(
          "__call__",
          [](PyPreparedLaunch &p, const py::args &buffers) {
            std::optional<Stream> stream = currentStream(p.device, true);
            if (!stream)
              throw py::type_error("current_stream() must return an int");
            return launchPrepared(p, buffers, *stream);
          },
          "Launches with these buffers (tensors or addresses, one per "
          "pointer parameter) on the registered framework's current stream; "
          "False (nothing launched) if one breaks a multiple_of hint.")
      .def(
          "launch_on",
          [](PyPreparedLaunch &p, uintptr_t stream, const py::args &buffers) {
            return launchPrepared(p, buffers, reinterpret_cast<Stream>(stream));
          },
          "The same on the stream given (a raw CUstream int).");

  runtime
      .def("try_launch", &tryLaunch, py::arg("kernel"), py::arg("args"),
           py::arg("grid") = py::none(),
           "Launches kernel[grid](*args) if every argument is an int, a float "
           "or a registered tensor that fits its parameter; False (nothing "
           "launched) otherwise.")
      .def(
          "prepare",
          [](Runtime &rt, const Kernel &kernel, const py::sequence &args,
             std::optional<std::vector<uint32_t>> grid) {
            std::optional<Grid> dims;
            if (grid) {
              if (grid->empty() || grid->size() > 3)
                throw py::value_error("grid must have 1 to 3 dimensions");
              dims = Grid{1, 1, 1};
              std::copy(grid->begin(), grid->end(), dims->begin());
            }
            Result<PreparedLaunch> prepared =
                rt.prepare(kernel, python::toArgs(kernel, args), dims);
            python::check(prepared.status(), "LaunchError");
            return PyPreparedLaunch{std::move(*prepared), rt.device()};
          },
          py::arg("kernel"), py::arg("args"), py::arg("grid") = py::none(),
          py::keep_alive<0, 1>(),
          "Checks and plans a launch once (args as for launch(); pointers are "
          "placeholders): the PreparedLaunch then launches it with new "
          "buffers.");
}
