//===- Compiler.cpp - C API of the compiler and interpreter ---------------===//
//
// tesselCompile runs the front end and the tile passes (expand-online,
// lower-stream-k) and returns the lowered IR as text with its .tsl locations,
// or runs the whole pipeline to a kernel bundle; TesselProgram parses that IR
// back and runs its kernels on the CPU interpreter. Nothing here throws across
// the C boundary: every failure becomes a TesselResult.
//
//===----------------------------------------------------------------------===//

#include "tessel-c/Compiler.h"

#include "Conversion/NVPTX/GPUCompile.h"
#include "Frontend/MLIRGen.h"
#include "tessel/Interpreter.h"
#include "tessel/Passes.h"
#include "tessel/TesselDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <link.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace tessel;
using mlir::tessel::TesselDialect;

struct TesselResult {
  TesselStatus status = TesselOk;
  std::string text;
  // Owned storage behind the TesselDiagnostic views.
  struct Diag {
    std::string severity, filename, message;
    unsigned line, column;
  };
  std::vector<Diag> diagnostics;

  static TesselResult *ok(std::string text) {
    return new TesselResult{TesselOk, std::move(text), {}};
  }
  static TesselResult *error(TesselStatus status, std::string text) {
    return new TesselResult{status, std::move(text), {}};
  }
};

namespace {

const char *orEmpty(const char *s) { return s ? s : ""; }

/// Runs the front end on the options' source, then `tail` on the module,
/// which returns the text to hand back (empty on failure, with a diagnostic
/// or `error`). Every diagnostic, pass errors included, points at the DSL.
template <class Tail>
TesselResult *compileWith(const TesselCompileOptions &options, Tail tail) {
  // One context per compile, used by one thread: no thread pool to start.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  // A pass error is about the DSL line it names; the IR of the op would bury
  // it.
  context.printOpOnDiagnostic(false);
  loadFrontendDialects(context);
  SourceManager sm(orEmpty(options.filename), orEmpty(options.source));
  std::ostringstream printed;
  DiagnosticEngine diag(sm, printed);
  GenOptions gen;
  gen.kernel = orEmpty(options.kernel);
  for (size_t i = 0; i < options.numDefines; ++i)
    gen.defines[options.defineNames[i]] = options.defineValues[i];
  std::string result, error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      compileSource(context, sm, diag, gen);
  if (module) {
    DSLDiagnosticHandler handler(context, diag);
    result = tail(*module, error);
  }
  if (!diag.hasErrors() && result.empty())
    diag.error({}, "internal compiler error: " +
                       (error.empty() ? "compilation failed without a "
                                        "diagnostic"
                                      : error));
  if (!diag.hasErrors())
    return TesselResult::ok(std::move(result));
  TesselResult *r = TesselResult::error(TesselCompileError, printed.str());
  for (const Diagnostic &d : diag.getDiagnostics())
    r->diagnostics.push_back({severityName(d.severity),
                              diag.getSource(d.loc.file).getFilename(),
                              d.message, d.loc.line, d.loc.col});
  return r;
}

/// Front end + tile passes; the lowered module printed with its locations.
TesselResult *compileToIR(const TesselCompileOptions &options,
                          mlir::tessel::StreamKStrategy strategy) {
  return compileWith(options, [&](mlir::ModuleOp module, std::string &) {
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
TesselResult *compileToBundle(const TesselCompileOptions &options,
                              mlir::tessel::StreamKStrategy strategy) {
  std::string target = options.target;
  return compileWith(
      options, [&](mlir::ModuleOp module, std::string &error) -> std::string {
        GPUArtifacts out;
        if (mlir::failed(
                compileForGPU(module, target, out, error, false, strategy)))
          return {};
        return writeBundle(out.kernels, out.ptx, target,
                           std::string("tessel ") + TESSEL_VERSION + " " +
                               orEmpty(options.filename));
      });
}

llvm::json::Value constantValue(mlir::Attribute attr) {
  if (auto b = llvm::dyn_cast<mlir::BoolAttr>(attr))
    return b.getValue();
  if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(attr))
    return i.getInt();
  if (auto f = llvm::dyn_cast<mlir::FloatAttr>(attr)) {
    // JSON has no infinities or NaN: those travel as {"float": "inf"}.
    double value = f.getValueAsDouble();
    if (std::isfinite(value))
      return value;
    return llvm::json::Object{{"float", std::isnan(value) ? "nan"
                                        : value > 0       ? "inf"
                                                          : "-inf"}};
  }
  if (auto t = llvm::dyn_cast<mlir::TypeAttr>(attr))
    if (auto dtype = dtypeOf(t.getValue()))
      return dtypeName(*dtype);
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

llvm::json::Value multipleOf(mlir::func::FuncOp f, unsigned arg) {
  int64_t hint = mlir::tessel::getMultipleOf(f, arg);
  return hint ? llvm::json::Value(hint) : llvm::json::Value(nullptr);
}

/// The description tesselProgramKernels documents, for one kernel.
llvm::json::Object describeKernel(mlir::func::FuncOp f) {
  llvm::ArrayRef<int64_t> workspace = getWorkspaceSizes(f);
  llvm::json::Array params;
  unsigned numUser = f.getNumArguments() - workspace.size();
  for (mlir::BlockArgument arg : f.getArguments().take_front(numUser)) {
    std::string name = mlir::tessel::getKernelArgName(arg);
    llvm::json::Value hint = multipleOf(f, arg.getArgNumber());
    if (auto ptr = llvm::dyn_cast<mlir::tessel::PtrType>(arg.getType())) {
      auto elem = dtypeOf(ptr.getPointeeType());
      params.push_back(
          llvm::json::Array{name, "ptr", elem ? dtypeName(*elem) : "?", hint,
                            mlir::tessel::isNoneArg(f, arg.getArgNumber())});
    } else {
      auto dtype = dtypeOf(arg.getType());
      params.push_back(llvm::json::Array{name, dtype ? dtypeName(*dtype) : "?",
                                         "", hint, false});
    }
  }
  llvm::json::Object constants;
  if (auto dict = f->getAttrOfType<mlir::DictionaryAttr>(
          TesselDialect::getConstantsAttrName()))
    for (mlir::NamedAttribute entry : dict)
      constants[entry.getName().str()] = constantValue(entry.getValue());
  auto warps =
      f->getAttrOfType<mlir::IntegerAttr>(TesselDialect::getNumWarpsAttrName());
  auto launch =
      f->getAttrOfType<mlir::StringAttr>(TesselDialect::getLaunchAttrName());
  auto cluster =
      f->getAttrOfType<mlir::IntegerAttr>(TesselDialect::getClusterAttrName());
  mlir::func::FuncOp next = mlir::tessel::getFollowUpKernel(f);
  return llvm::json::Object{
      {"name", f.getSymName().str()},
      {"params", std::move(params)},
      {"num_warps", warps ? warps.getInt() : 4},
      {"constants", std::move(constants)},
      {"persistent", launch && launch.getValue() == "persistent"},
      {"cluster", cluster ? cluster.getInt() : 1},
      {"workspace", llvm::json::Array(workspace)},
      {"then", next ? llvm::json::Value(next.getSymName().str())
                    : llvm::json::Value(nullptr)}};
}

} // namespace

struct TesselProgram {
  // Declared first: the module's IR lives in the context.
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  // The context does not lock its uniquer (threading is off): one call on a
  // program at a time.
  std::mutex mutex;

  mlir::func::FuncOp lookup(llvm::StringRef name) {
    auto f = module->lookupSymbol<mlir::func::FuncOp>(name);
    return f && f->hasAttr(TesselDialect::getKernelAttrName())
               ? f
               : mlir::func::FuncOp();
  }

  TesselResult *run(llvm::StringRef name, llvm::ArrayRef<TesselArg> args,
                    const std::array<int64_t, 3> &grid);
};

TesselResult *TesselProgram::run(llvm::StringRef name,
                                 llvm::ArrayRef<TesselArg> args,
                                 const std::array<int64_t, 3> &grid) {
  // Looking a kernel up and reading its attributes use the context too.
  std::lock_guard<std::mutex> lock(mutex);
  auto invalid = [](std::string message) {
    return TesselResult::error(TesselInvalidArgument, std::move(message));
  };
  mlir::func::FuncOp kernel = lookup(name);
  if (!kernel)
    return invalid("no kernel named '" + name.str() + "'");
  size_t numUser = kernel.getNumArguments() - getWorkspaceSizes(kernel).size();
  if (args.size() != numUser)
    return invalid("kernel '" + name.str() + "' takes " +
                   std::to_string(numUser) + " arguments, got " +
                   std::to_string(args.size()));
  Memory memory;
  std::vector<KernelArg> kernelArgs;
  std::vector<std::pair<const TesselArg *, int>> copyBack;
  std::map<void *, int> bufferOf;
  for (mlir::BlockArgument arg : kernel.getArguments().take_front(numUser)) {
    const TesselArg &value = args[arg.getArgNumber()];
    std::string where = "kernel '" + name.str() + "', argument '" +
                        mlir::tessel::getKernelArgName(arg) + "'";
    auto ptr = llvm::dyn_cast<mlir::tessel::PtrType>(arg.getType());
    if (!ptr) {
      if (value.kind == TesselArgBuffer)
        return invalid(where + ": expected a number, got a buffer");
      if (!arg.getType().isInteger())
        kernelArgs.push_back(KernelArg::ofFloat(value.kind == TesselArgInt
                                                    ? double(value.intValue)
                                                    : value.floatValue));
      else if (value.kind == TesselArgInt)
        kernelArgs.push_back(KernelArg::ofInt(value.intValue));
      else
        return invalid(where + ": expected an integer");
      continue;
    }
    if (value.kind != TesselArgBuffer)
      return invalid(where + ": expected a buffer");
    std::optional<DType> pointee = dtypeOf(ptr.getPointeeType());
    if (!pointee)
      return invalid(where + ": unsupported pointee type");
    DType elem = *pointee;
    if (value.elementSize != dtypeSize(elem) || (!value.data && value.count))
      return invalid(where + ": expected a buffer of " +
                     std::to_string(dtypeSize(elem)) + "-byte elements");
    // The same memory twice is one buffer, as on a GPU. (Empty buffers may
    // share an address without being the same buffer.)
    auto known = value.count ? bufferOf.find(value.data) : bufferOf.end();
    if (known != bufferOf.end()) {
      if (memory.dtype(known->second) != elem ||
          memory.size(known->second) != value.count)
        return invalid(where + ": the same memory is passed as another "
                               "argument with a different type or size");
      kernelArgs.push_back(KernelArg::ofBuffer(known->second));
      continue;
    }
    int id = memory.allocate(elem, value.count);
    if (value.count)
      std::memcpy(memory.data(id), value.data, value.count * value.elementSize);
    bufferOf[value.data] = id;
    copyBack.emplace_back(&value, id);
    kernelArgs.push_back(KernelArg::ofBuffer(id));
  }
  allocateWorkspaces(kernel, grid, memory, kernelArgs);

  LaunchConfig config;
  config.grid = grid;
  std::string error;
  mlir::LogicalResult result =
      runKernel(kernel, kernelArgs, config, memory, error);
  // Memory written before a fault stays written, as on a GPU.
  for (auto &[value, id] : copyBack)
    if (value->count)
      std::memcpy(value->data, memory.data(id),
                  value->count * value->elementSize);
  if (mlir::failed(result))
    return TesselResult::error(TesselLaunchError, error);
  return TesselResult::ok({});
}

namespace {

/// The NT_GNU_BUILD_ID note, in hex, of the loaded object one of whose
/// segments holds `address` ("" without one).
std::string readBuildId(const void *address) {
  std::pair<uintptr_t, std::string> search{reinterpret_cast<uintptr_t>(address),
                                           {}};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *search = static_cast<std::pair<uintptr_t, std::string> *>(data);
        auto holds = [&](const ElfW(Phdr) & segment) {
          uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          return segment.p_type == PT_LOAD && search->first >= start &&
                 search->first < start + segment.p_memsz;
        };
        if (std::none_of(info->dlpi_phdr, info->dlpi_phdr + info->dlpi_phnum,
                         holds))
          return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_NOTE)
            continue;
          // Notes are padded to the segment's alignment (4, or 8).
          size_t align = segment.p_align == 8 ? 8 : 4;
          auto pad = [&](size_t n) { return (n + align - 1) & ~(align - 1); };
          const char *note =
              reinterpret_cast<const char *>(info->dlpi_addr + segment.p_vaddr);
          const char *end = note + segment.p_memsz;
          while (size_t(end - note) >= sizeof(ElfW(Nhdr))) {
            const auto *header = reinterpret_cast<const ElfW(Nhdr) *>(note);
            const char *name = note + sizeof(ElfW(Nhdr));
            size_t nameBytes = pad(header->n_namesz);
            size_t descBytes = pad(header->n_descsz);
            if (size_t(end - name) < nameBytes + descBytes)
              break;
            const auto *desc =
                reinterpret_cast<const unsigned char *>(name + nameBytes);
            if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              static const char digits[] = "0123456789abcdef";
              for (size_t j = 0; j < header->n_descsz; ++j) {
                search->second += digits[desc[j] >> 4];
                search->second += digits[desc[j] & 15];
              }
              return 1;
            }
            note = name + nameBytes + descBytes;
          }
        }
        return 1;
      },
      &search);
  return search.second;
}

} // namespace

extern "C" {

unsigned tesselCompilerApiVersion(void) { return TESSEL_COMPILER_API_VERSION; }

const char *tesselCompilerVersion(void) { return TESSEL_VERSION; }

const char *tesselCompilerBuildId(void) {
  // This library's own code (a local function: an exported one could be
  // another copy's).
  static const std::string id =
      readBuildId(reinterpret_cast<const void *>(&readBuildId));
  return id.c_str();
}

TesselStatus tesselResultStatus(const TesselResult *result) {
  return result->status;
}

const char *tesselResultText(const TesselResult *result) {
  return result->text.c_str();
}

size_t tesselResultNumDiagnostics(const TesselResult *result) {
  return result->diagnostics.size();
}

TesselDiagnostic tesselResultDiagnostic(const TesselResult *result,
                                        size_t index) {
  const TesselResult::Diag &d = result->diagnostics[index];
  return {d.severity.c_str(), d.filename.c_str(), d.line, d.column,
          d.message.c_str()};
}

void tesselResultDestroy(TesselResult *result) { delete result; }

TesselResult *tesselCompile(const TesselCompileOptions *options) {
  using mlir::tessel::StreamKStrategy;
  const char *streamK = options->streamK ? options->streamK : "persistent";
  std::optional<StreamKStrategy> strategy =
      mlir::tessel::symbolizeStreamKStrategy(streamK);
  if (!strategy)
    return TesselResult::error(
        TesselInvalidArgument,
        "stream_k must be '" +
            stringifyStreamKStrategy(StreamKStrategy::Persistent).str() +
            "' or '" + stringifyStreamKStrategy(StreamKStrategy::SplitK).str() +
            "', got '" + streamK + "'");
  if (!options->target)
    return compileToIR(*options, *strategy);
  llvm::StringRef target = options->target;
  if (!mlir::tessel::isKnownTarget(target))
    return TesselResult::error(TesselInvalidArgument,
                               "unknown target '" + target.str() +
                                   "' (expected sm_80, sm_90 or sm_90a)");
  return compileToBundle(*options, *strategy);
}

TesselProgram *tesselProgramCreate(const char *ir, const char *name,
                                   TesselResult **error) {
  auto program = std::make_unique<TesselProgram>();
  program->context = std::make_unique<mlir::MLIRContext>(
      mlir::MLIRContext::Threading::DISABLED);
  loadFrontendDialects(*program->context);
  std::string errors;
  mlir::ScopedDiagnosticHandler handler(
      program->context.get(), [&](mlir::Diagnostic &d) {
        errors += (errors.empty() ? "" : "; ") + d.str();
        return mlir::success();
      });
  mlir::ParserConfig config(program->context.get());
  program->module = mlir::parseSourceString<mlir::ModuleOp>(orEmpty(ir), config,
                                                            orEmpty(name));
  if (!program->module) {
    if (error)
      *error = TesselResult::error(TesselInvalidArgument,
                                   std::string("cannot parse tessel IR '") +
                                       orEmpty(name) + "': " + errors);
    return nullptr;
  }
  return program.release();
}

void tesselProgramDestroy(TesselProgram *program) { delete program; }

TesselResult *tesselProgramKernels(TesselProgram *program) {
  std::lock_guard<std::mutex> lock(program->mutex);
  llvm::json::Array kernels;
  program->module->walk([&](mlir::func::FuncOp f) {
    if (f->hasAttr(TesselDialect::getKernelAttrName()))
      kernels.push_back(describeKernel(f));
  });
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(kernels));
  return TesselResult::ok(std::move(text));
}

TesselResult *tesselProgramRun(TesselProgram *program, const char *kernel,
                               const TesselArg *args, size_t numArgs,
                               const int64_t grid[3]) {
  return program->run(orEmpty(kernel), llvm::ArrayRef(args, numArgs),
                      {grid[0], grid[1], grid[2]});
}

} // extern "C"
