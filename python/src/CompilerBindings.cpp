//===- CompilerBindings.cpp - Front end, passes and interpreter -----------===//
//
// compile() runs the front end and the tile passes (expand-online,
// lower-stream-k, persistent or split-K) and returns the lowered IR as text
// with its .tsl locations, which is what the Python package caches on disk;
// Program parses that text back and runs its kernels on the CPU interpreter.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "Conversion/NVPTX/GPUCompile.h"
#include "Frontend/Lexer.h"
#include "Frontend/MLIRGen.h"
#include "Frontend/Parser.h"
#include "tessel/Interpreter.h"
#include "tessel/Passes.h"
#include "tessel/TesselDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

namespace py = pybind11;
using namespace tessel;
using mlir::tessel::TesselDialect;

namespace {

/// The first file:line:col inside `loc` (fused and named locations nest).
SourceLoc sourceLocOf(mlir::Location loc) {
  SourceLoc at;
  loc->walk([&](mlir::Location l) {
    if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(l)) {
      at = {file.getLine(), file.getColumn()};
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return at;
}

/// Runs the front end on `source`, then `tail` on the module, which returns
/// the text to hand back (empty on failure, with a diagnostic or `error`).
/// Raises tessel.CompileError with every diagnostic, all pointing at the DSL.
template <class Tail>
std::string compileWith(const std::string &source, const std::string &filename,
                        const std::string &kernel,
                        const std::map<std::string, std::string> &defines,
                        Tail tail) {
  // One context per compile, used by one thread: no thread pool to start.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  // A pass error is about the DSL line it names; the IR of the op would bury
  // it.
  context.printOpOnDiagnostic(false);
  loadFrontendDialects(context);
  SourceManager sm(filename, source);
  std::ostringstream printed;
  DiagnosticEngine diag(sm, printed);
  std::string result, error;
  {
    py::gil_scoped_release release;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        compileSource(context, sm, diag, {kernel, defines});
    if (module) {
      // Pass errors (e.g. two stream_k in one kernel) point at the DSL.
      mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
        diag.error(sourceLocOf(d.getLocation()), d.str());
        for (const mlir::Diagnostic &note : d.getNotes())
          diag.note(sourceLocOf(note.getLocation()), note.str());
        return mlir::success();
      });
      result = tail(*module, error);
    }
  }
  if (!diag.hasErrors() && result.empty())
    diag.error({}, "internal compiler error: " +
                       (error.empty() ? "compilation failed without a "
                                        "diagnostic"
                                      : error));
  if (diag.hasErrors())
    python::raiseCompileError(diag, printed.str());
  return result;
}

/// The lowering `stream_k` names ("persistent", "split-k"); ValueError if
/// none.
mlir::tessel::StreamKStrategy streamKStrategy(const std::string &name) {
  using mlir::tessel::StreamKStrategy;
  if (std::optional<StreamKStrategy> strategy =
          mlir::tessel::symbolizeStreamKStrategy(name))
    return *strategy;
  throw py::value_error(
      "stream_k must be '" +
      stringifyStreamKStrategy(StreamKStrategy::Persistent).str() + "' or '" +
      stringifyStreamKStrategy(StreamKStrategy::SplitK).str() + "', got '" +
      name + "'");
}

/// Front end + tile passes; the lowered module printed with its locations
/// (what the interpreter runs).
std::string compile(const std::string &source, const std::string &filename,
                    const std::string &kernel,
                    const std::map<std::string, std::string> &defines,
                    const std::string &streamK) {
  mlir::tessel::StreamKStrategy strategy = streamKStrategy(streamK);
  return compileWith(
      source, filename, kernel, defines,
      [&](mlir::ModuleOp module, std::string &) {
        mlir::PassManager pm(module.getContext());
        pm.addPass(mlir::tessel::createTesselExpandOnline());
        pm.addPass(mlir::tessel::createTesselLowerStreamK({strategy}));
        std::string ir;
        if (mlir::succeeded(pm.run(module))) {
          llvm::raw_string_ostream os(ir);
          module->print(os, mlir::OpPrintingFlags().enableDebugInfo());
        }
        return ir;
      });
}

/// The whole pipeline to a kernel bundle (docs/bundle.md) for `target`.
std::string compileBundle(const std::string &source,
                          const std::string &filename,
                          const std::string &kernel,
                          const std::map<std::string, std::string> &defines,
                          const std::string &target,
                          const std::string &streamK) {
  if (target != "sm_80" && target != "sm_90" && target != "sm_90a")
    throw py::value_error("unknown target '" + target +
                          "' (expected sm_80, sm_90 or sm_90a)");
  mlir::tessel::StreamKStrategy strategy = streamKStrategy(streamK);
  return compileWith(
      source, filename, kernel, defines,
      [&](mlir::ModuleOp module, std::string &error) -> std::string {
        GPUArtifacts out;
        if (mlir::failed(
                compileForGPU(module, target, out, error, false, strategy)))
          return {};
        return writeBundle(out.kernels, out.ptx, target,
                           std::string("tessel ") + TESSEL_VERSION + " " +
                               filename);
      });
}

py::object constantValue(mlir::Attribute attr) {
  if (auto b = llvm::dyn_cast<mlir::BoolAttr>(attr))
    return py::bool_(b.getValue());
  if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(attr))
    return py::int_(i.getInt());
  if (auto f = llvm::dyn_cast<mlir::FloatAttr>(attr))
    return py::float_(f.getValueAsDouble());
  if (auto t = llvm::dyn_cast<mlir::TypeAttr>(attr))
    if (auto dtype = dtypeOf(t.getValue()))
      return py::str(dtypeName(*dtype));
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return py::str(text);
}

/// Lowered tessel IR, parsed once, whose kernels run on the interpreter.
class Program {
public:
  Program(const std::string &ir, const std::string &name)
      : context(std::make_unique<mlir::MLIRContext>(
            mlir::MLIRContext::Threading::DISABLED)) {
    loadFrontendDialects(*context);
    std::string errors;
    mlir::ScopedDiagnosticHandler handler(
        context.get(), [&](mlir::Diagnostic &d) {
          errors += (errors.empty() ? "" : "; ") + d.str();
          return mlir::success();
        });
    mlir::ParserConfig config(context.get());
    module = mlir::parseSourceString<mlir::ModuleOp>(ir, config, name);
    if (!module)
      throw py::value_error("cannot parse tessel IR '" + name + "': " + errors);
  }

  /// One dict per kernel: name, params [(name, type, elem, multiple_of)]
  /// (type "ptr" or a scalar type; elem the pointee type of a pointer;
  /// multiple_of the parameter's hint or None), num_warps, constants,
  /// persistent, workspace (elements per program of each trailing workspace
  /// argument the launcher provides; those are not in params), then (the
  /// kernel run() runs right after this one, e.g. split-K's combine kernel;
  /// None: none; such a follow-up cannot be run on its own).
  py::list kernels() {
    py::list result;
    module->walk([&](mlir::func::FuncOp f) {
      if (!f->hasAttr(TesselDialect::getKernelAttrName()))
        return;
      llvm::ArrayRef<int64_t> workspace = workspaceOf(f);
      py::list params;
      unsigned numUser = f.getNumArguments() - workspace.size();
      for (mlir::BlockArgument arg : f.getArguments().take_front(numUser)) {
        mlir::Type type = arg.getType();
        py::object hint = python::multipleOfObject(
            mlir::tessel::getMultipleOf(f, arg.getArgNumber()));
        if (auto ptr = llvm::dyn_cast<mlir::tessel::PtrType>(type)) {
          auto elem = dtypeOf(ptr.getPointeeType());
          params.append(py::make_tuple(mlir::tessel::getKernelArgName(arg),
                                       "ptr", elem ? dtypeName(*elem) : "?",
                                       hint));
        } else {
          auto dtype = dtypeOf(type);
          params.append(py::make_tuple(mlir::tessel::getKernelArgName(arg),
                                       dtype ? dtypeName(*dtype) : "?", "",
                                       hint));
        }
      }
      py::dict constants;
      if (auto dict = f->getAttrOfType<mlir::DictionaryAttr>(
              TesselDialect::getConstantsAttrName()))
        for (mlir::NamedAttribute entry : dict)
          constants[py::str(entry.getName().str())] =
              constantValue(entry.getValue());
      auto warps = f->getAttrOfType<mlir::IntegerAttr>(
          TesselDialect::getNumWarpsAttrName());
      auto launch = f->getAttrOfType<mlir::StringAttr>(
          TesselDialect::getLaunchAttrName());
      py::dict info;
      info["name"] = f.getSymName().str();
      info["params"] = params;
      info["num_warps"] = warps ? warps.getInt() : 4;
      info["constants"] = constants;
      info["persistent"] = launch && launch.getValue() == "persistent";
      info["workspace"] =
          std::vector<int64_t>(workspace.begin(), workspace.end());
      mlir::func::FuncOp next = mlir::tessel::getFollowUpKernel(f);
      info["then"] = next ? py::object(py::str(next.getSymName().str()))
                          : py::object(py::none());
      result.append(info);
    });
    return result;
  }

  /// Runs `kernel` over `grid` with `args` (contiguous, writeable NumPy
  /// arrays of the pointee's storage size for pointers, Python numbers for
  /// scalars). Arrays are copied in and copied back after the run, also after
  /// a failure (memory written before it stays written, as on a GPU); the
  /// same array passed twice is one buffer. Workspaces are allocated zeroed,
  /// per program. A fault raises tessel.LaunchError.
  void run(const std::string &name, const py::list &args,
           const std::array<int64_t, 3> &grid) {
    mlir::func::FuncOp kernel = lookup(name);
    llvm::ArrayRef<int64_t> workspace = workspaceOf(kernel);
    size_t numUser = kernel.getNumArguments() - workspace.size();
    if (args.size() != numUser)
      throw py::value_error("kernel '" + name + "' takes " +
                            std::to_string(numUser) + " arguments, got " +
                            std::to_string(args.size()));
    Memory memory;
    std::vector<KernelArg> kernelArgs;
    std::vector<std::pair<py::array, int>> copyBack;
    std::map<void *, int> bufferOf;
    for (mlir::BlockArgument arg : kernel.getArguments().take_front(numUser)) {
      py::handle value = args[arg.getArgNumber()];
      mlir::Type type = arg.getType();
      std::string where = "kernel '" + name + "', argument '" +
                          mlir::tessel::getKernelArgName(arg) + "'";
      if (auto ptr = llvm::dyn_cast<mlir::tessel::PtrType>(type)) {
        if (!py::isinstance<py::array>(value))
          throw py::type_error(where + ": expected a NumPy array");
        auto array = py::reinterpret_borrow<py::array>(value);
        std::optional<DType> pointee = dtypeOf(ptr.getPointeeType());
        if (!pointee)
          throw py::value_error(where + ": unsupported pointee type");
        DType elem = *pointee;
        if (!(array.flags() & py::array::c_style) || !array.writeable() ||
            static_cast<size_t>(array.itemsize()) != dtypeSize(elem))
          throw py::value_error(where +
                                ": expected a writeable C-contiguous "
                                "array of " +
                                std::to_string(dtypeSize(elem)) +
                                "-byte elements");
        void *data = array.mutable_data();
        // The same array twice is one buffer, as on a GPU. (Empty arrays may
        // share an address without being the same buffer.)
        auto known = array.size() ? bufferOf.find(data) : bufferOf.end();
        if (known != bufferOf.end()) {
          if (memory.dtype(known->second) != elem ||
              memory.size(known->second) != static_cast<size_t>(array.size()))
            throw py::value_error(where +
                                  ": the same memory is passed as "
                                  "another argument with a different type "
                                  "or size");
          kernelArgs.push_back(KernelArg::ofBuffer(known->second));
          continue;
        }
        int id = memory.allocate(elem, array.size());
        std::memcpy(memory.data(id), data, array.nbytes());
        bufferOf[data] = id;
        copyBack.emplace_back(array, id);
        kernelArgs.push_back(KernelArg::ofBuffer(id));
      } else if (type.isInteger()) {
        kernelArgs.push_back(KernelArg::ofInt(value.cast<int64_t>()));
      } else {
        kernelArgs.push_back(KernelArg::ofFloat(value.cast<double>()));
      }
    }
    int64_t programs = grid[0] * grid[1] * grid[2];
    for (size_t i = 0; i < workspace.size(); ++i) {
      auto ptr = llvm::cast<mlir::tessel::PtrType>(
          kernel.getArgument(numUser + i).getType());
      kernelArgs.push_back(KernelArg::ofBuffer(memory.allocate(
          *dtypeOf(ptr.getPointeeType()), workspace[i] * programs)));
    }

    LaunchConfig config;
    config.grid = grid;
    std::string error;
    mlir::LogicalResult result = mlir::success();
    {
      py::gil_scoped_release release;
      // The context does not lock its uniquer (threading is off): one run
      // of a Program at a time.
      std::lock_guard<std::mutex> lock(runMutex);
      result = runKernel(kernel, kernelArgs, config, memory, error);
    }
    for (auto &[array, id] : copyBack)
      std::memcpy(array.mutable_data(), memory.data(id), array.nbytes());
    if (mlir::failed(result))
      python::raise("LaunchError", error);
  }

private:
  mlir::func::FuncOp lookup(const std::string &name) {
    auto f = module->lookupSymbol<mlir::func::FuncOp>(name);
    if (!f || !f->hasAttr(TesselDialect::getKernelAttrName()))
      throw py::value_error("no kernel named '" + name + "'");
    return f;
  }

  static llvm::ArrayRef<int64_t> workspaceOf(mlir::func::FuncOp f) {
    if (auto ws = f->getAttrOfType<mlir::DenseI64ArrayAttr>(
            TesselDialect::getWorkspaceAttrName()))
      return ws.asArrayRef();
    return {};
  }

  // Declared first: the module's IR lives in the context.
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::mutex runMutex;
};

} // namespace

void tessel::python::bindCompiler(py::module_ &m) {
  m.def("compile", &compile, py::arg("source"), py::arg("filename"),
        py::arg("kernel"), py::arg("defines"),
        py::arg("stream_k") = "persistent",
        "Compiles DSL source to lowered tessel IR (text with locations); "
        "raises tessel.CompileError. `kernel` empty: every kernel; `defines` "
        "maps constexpr names to DSL values ('64', 'True', 'bf16'); "
        "`stream_k` lowers stream_k as 'persistent' (stream-K) or 'split-k' "
        "(a split kernel K and its combine kernel K__combine, which "
        "Program.run runs after K).");
  m.def("compile_bundle", &compileBundle, py::arg("source"),
        py::arg("filename"), py::arg("kernel"), py::arg("defines"),
        py::arg("target") = "sm_90", py::arg("stream_k") = "persistent",
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
