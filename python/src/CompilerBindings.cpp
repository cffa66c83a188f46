//===- CompilerBindings.cpp - The compiler library, opened at run time ----===//
//
// The compiler and the CPU interpreter live in libtessel_compiler.so, behind
// the C API of tessel-c/Compiler.h. This module opens it when it is imported
// ($TESSEL_COMPILER_LIBRARY, else the file next to this extension), so one
// compiler library, which may carry LLVM/MLIR inside, serves the extension of
// every Python version, and an extension built without LLVM gains the
// compiler by having the library put beside it. Without the library,
// has_compiler is False and compiler_error says why.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "tessel-c/Compiler.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

/// The C API's entry points, resolved from the library.
struct CompilerLibrary {
  std::string buildId;
  decltype(&tesselCompile) compile;
  decltype(&tesselResultStatus) status;
  decltype(&tesselResultText) text;
  decltype(&tesselResultNumDiagnostics) numDiagnostics;
  decltype(&tesselResultDiagnostic) diagnostic;
  decltype(&tesselResultDestroy) destroy;
  decltype(&tesselProgramCreate) programCreate;
  decltype(&tesselProgramDestroy) programDestroy;
  decltype(&tesselProgramKernels) programKernels;
  decltype(&tesselProgramRun) programRun;
};

const CompilerLibrary *library = nullptr;

/// The directory holding this extension module.
std::string extensionDirectory() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&extensionDirectory), &info) ||
      !info.dli_fname)
    return ".";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// Opens the library at `path` and resolves the API; on failure returns null
/// and sets `error`.
std::unique_ptr<CompilerLibrary> open(const std::string &path,
                                      std::string &error) {
  // RTLD_LOCAL: LLVM inside the library stays out of the process's symbol
  // space (PyTorch or Triton may load another LLVM).
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    error = why ? why : ("cannot open " + path);
    return nullptr;
  }
  auto resolve = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(handle, name));
    if (!fn && error.empty())
      error = path + ": no symbol " + name;
  };
  // The API version first: another version's symbols may mean other things.
  decltype(&tesselCompilerApiVersion) apiVersion;
  resolve(apiVersion, "tesselCompilerApiVersion");
  if (error.empty() && apiVersion() != TESSEL_COMPILER_API_VERSION)
    error = path + " has C API version " + std::to_string(apiVersion()) +
            ", this extension needs " +
            std::to_string(TESSEL_COMPILER_API_VERSION);
  auto lib = std::make_unique<CompilerLibrary>();
  decltype(&tesselCompilerVersion) version;
  decltype(&tesselCompilerBuildId) buildId;
  if (error.empty()) {
    resolve(version, "tesselCompilerVersion");
    resolve(buildId, "tesselCompilerBuildId");
    resolve(lib->compile, "tesselCompile");
    resolve(lib->status, "tesselResultStatus");
    resolve(lib->text, "tesselResultText");
    resolve(lib->numDiagnostics, "tesselResultNumDiagnostics");
    resolve(lib->diagnostic, "tesselResultDiagnostic");
    resolve(lib->destroy, "tesselResultDestroy");
    resolve(lib->programCreate, "tesselProgramCreate");
    resolve(lib->programDestroy, "tesselProgramDestroy");
    resolve(lib->programKernels, "tesselProgramKernels");
    resolve(lib->programRun, "tesselProgramRun");
  }
  // The extension's own front end (signatures()) must agree with the
  // library's.
  if (error.empty() && std::string(version()) != TESSEL_VERSION)
    error = path + " is the compiler of Tessel " + version() +
            ", this extension is Tessel " + TESSEL_VERSION;
  if (!error.empty()) {
    dlclose(handle);
    return nullptr;
  }
  lib->buildId = buildId();
  return lib;
}

using Result = std::unique_ptr<TesselResult, void (*)(TesselResult *)>;

Result own(TesselResult *result) { return Result(result, library->destroy); }

/// The text of a successful result; the matching Python exception otherwise.
std::string take(Result result) {
  std::string text = library->text(result.get());
  switch (library->status(result.get())) {
  case TesselOk:
    return text;
  case TesselCompileError: {
    py::list diagnostics;
    for (size_t i = 0, e = library->numDiagnostics(result.get()); i < e; ++i) {
      TesselDiagnostic d = library->diagnostic(result.get(), i);
      diagnostics.append(tessel::python::diagnosticTuple(
          d.severity, d.filename, d.line, d.column, d.message));
    }
    tessel::python::raiseCompileError(text, diagnostics);
  }
  case TesselLaunchError:
    tessel::python::raise("LaunchError", text);
  case TesselInvalidArgument:
    break;
  }
  throw py::value_error(text);
}

std::string compile(const std::string &source, const std::string &filename,
                    const std::string &kernel,
                    const std::map<std::string, std::string> &defines,
                    const std::string &streamK,
                    const std::optional<std::string> &target) {
  std::vector<const char *> names, values;
  for (const auto &[name, value] : defines) {
    names.push_back(name.c_str());
    values.push_back(value.c_str());
  }
  TesselCompileOptions options{
      source.c_str(),  filename.c_str(),
      kernel.c_str(),  names.data(),
      values.data(),   names.size(),
      streamK.c_str(), target ? target->c_str() : nullptr};
  TesselResult *result;
  {
    py::gil_scoped_release release;
    result = library->compile(&options);
  }
  return take(own(result));
}

/// Lowered tessel IR, parsed once, whose kernels run on the interpreter.
class Program {
public:
  Program(const std::string &ir, const std::string &name)
      : program(nullptr, library->programDestroy) {
    TesselResult *error = nullptr;
    program.reset(library->programCreate(ir.c_str(), name.c_str(), &error));
    if (!program)
      take(own(error));
  }

  /// Dicts as tesselProgramKernels describes them (params as tuples,
  /// non-finite float constants as floats).
  py::list kernels() {
    py::list result = py::module_::import("json").attr("loads")(
        take(own(library->programKernels(program.get()))));
    for (py::handle kernel : result) {
      py::list params = kernel["params"];
      for (size_t i = 0; i < params.size(); ++i)
        params[i] = py::tuple(params[i]);
      py::dict constants = kernel["constants"];
      for (auto [name, value] : constants)
        if (py::isinstance<py::dict>(value))
          constants[name] = py::float_(value["float"]);
    }
    return result;
  }

  /// Runs `kernel` over `grid` with `args` (contiguous, writeable NumPy
  /// arrays of the pointee's storage size for pointers, Python numbers for
  /// scalars); arrays are written back, also after a fault
  /// (tessel.LaunchError).
  void run(const std::string &name, const py::list &args,
           const std::array<int64_t, 3> &grid) {
    std::vector<TesselArg> values(args.size());
    // Held while the GIL is released: the arrays outlive the run whatever
    // other threads do with `args`.
    std::vector<py::array> arrays;
    for (size_t i = 0; i < args.size(); ++i) {
      py::handle value = args[i];
      TesselArg &arg = values[i];
      if (py::isinstance<py::array>(value)) {
        auto array = py::reinterpret_borrow<py::array>(value);
        arrays.push_back(array);
        if (!(array.flags() & py::array::c_style) || !array.writeable())
          throw py::value_error("kernel '" + name + "', argument " +
                                std::to_string(i) +
                                ": expected a writeable C-contiguous array");
        arg.kind = TesselArgBuffer;
        arg.data = array.mutable_data();
        arg.count = array.size();
        arg.elementSize = array.itemsize();
      } else if (PyIndex_Check(value.ptr())) {
        arg.kind = TesselArgInt;
        arg.intValue = value.cast<int64_t>();
      } else {
        arg.kind = TesselArgFloat;
        arg.floatValue = value.cast<double>();
      }
    }
    TesselResult *result;
    {
      py::gil_scoped_release release;
      result = library->programRun(program.get(), name.c_str(), values.data(),
                                   values.size(), grid.data());
    }
    take(own(result));
  }

private:
  std::unique_ptr<TesselProgram, void (*)(TesselProgram *)> program;
};

} // namespace

void tessel::python::bindCompiler(py::module_ &m) {
  std::string path, error;
  if (const char *env = std::getenv("TESSEL_COMPILER_LIBRARY"); env && *env)
    path = env;
  else
    path = extensionDirectory() + "/libtessel_compiler.so";
  // Kept for the life of the process, as the module is.
  library = open(path, error).release();
  m.attr("has_compiler") = py::bool_(library != nullptr);
  m.attr("compiler_library") = path;
  m.attr("compiler_error") = library ? py::object(py::none()) : py::str(error);
  // The library's GNU build ID: "" when it has none (or there is no library).
  m.attr("compiler_build_id") = library ? library->buildId : std::string();
  if (!library)
    return;

  m.def(
      "compile",
      [](const std::string &source, const std::string &filename,
         const std::string &kernel,
         const std::map<std::string, std::string> &defines,
         const std::string &streamK) {
        return compile(source, filename, kernel, defines, streamK,
                       std::nullopt);
      },
      py::arg("source"), py::arg("filename"), py::arg("kernel"),
      py::arg("defines"), py::arg("stream_k") = "persistent",
      "Compiles DSL source to lowered tessel IR (text with locations); "
      "raises tessel.CompileError. `kernel` empty: every kernel; `defines` "
      "maps constexpr names to DSL values ('64', 'True', 'bf16'); "
      "`stream_k` lowers stream_k as 'persistent' (stream-K) or 'split-k' "
      "(a split kernel K and its combine kernel K__combine, which "
      "Program.run runs after K).");
  m.def(
      "compile_bundle",
      [](const std::string &source, const std::string &filename,
         const std::string &kernel,
         const std::map<std::string, std::string> &defines,
         const std::string &target, const std::string &streamK) {
        return compile(source, filename, kernel, defines, streamK, target);
      },
      py::arg("source"), py::arg("filename"), py::arg("kernel"),
      py::arg("defines"), py::arg("target") = "sm_90",
      py::arg("stream_k") = "persistent",
      "Compiles DSL source to a kernel bundle (JSON text: PTX for `target` "
      "and launch metadata); raises tessel.CompileError. `stream_k` as for "
      "compile(); with 'split-k' the bundle links K to K__combine "
      "(\"then\"), which the runtime launches after K.");
  py::class_<Program>(m, "Program")
      .def(py::init<const std::string &, const std::string &>(), py::arg("ir"),
           py::arg("name"), "Parses lowered tessel IR; ValueError if invalid.")
      .def("kernels", &Program::kernels)
      .def("run", &Program::run, py::arg("kernel"), py::arg("args"),
           py::arg("grid"));
}
