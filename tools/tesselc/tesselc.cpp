//===- tesselc.cpp - The Tessel DSL compiler driver -----------------------===//
//
//   tesselc FILE.tsl [--kernel NAME] [-D NAME=VALUE ...]
//           [--emit=ast|tessel|llvm|ptx|bundle] [--target sm_80|sm_90|sm_90a]
//           [-o OUT]
//           [--stream-k=persistent|split-k]
//
// One flag per stage, as in the Toy tutorial's driver.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Lexer.h"
#include "Frontend/MLIRGen.h"
#include "Frontend/Parser.h"

#include "Conversion/NVPTX/GPUCompile.h"
#include "common/ToolOptions.h"
#include "tessel/Passes.h"
#include "tessel/TesselDialect.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>

namespace cl = llvm::cl;

namespace {
enum class Emit { AST, Tessel, LLVM, PTX, Bundle };

cl::OptionCategory tesselcCategory("tesselc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .tsl file>"),
                               cl::Required, cl::cat(tesselcCategory));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(tesselcCategory));
cl::opt<std::string>
    kernelName("kernel",
               cl::desc("Compile only this kernel (default: every @kernel)"),
               cl::value_desc("name"), cl::cat(tesselcCategory));
cl::list<std::string>
    defines("D", cl::Prefix,
            cl::desc("Set a constexpr parameter: -D NAME=VALUE (an integer, "
                     "float, True/False or a type name such as bf16)"),
            cl::value_desc("NAME=VALUE"), cl::cat(tesselcCategory));
cl::opt<Emit> emit(
    "emit", cl::desc("What to produce"), cl::init(Emit::Tessel),
    cl::values(clEnumValN(Emit::AST, "ast", "the syntax tree, as text"),
               clEnumValN(Emit::Tessel, "tessel",
                          "tessel IR as emitted by the front end (verified)"),
               clEnumValN(Emit::LLVM, "llvm",
                          "LLVM IR for the NVPTX target, optimised (O3)"),
               clEnumValN(Emit::PTX, "ptx", "PTX assembly"),
               clEnumValN(Emit::Bundle, "bundle",
                          "a kernel bundle: PTX with its launch metadata")),
    cl::cat(tesselcCategory));
cl::opt<std::string>
    target("target",
           cl::desc("GPU architecture: sm_80, sm_90, or sm_90a (Hopper's "
                    "warpgroup MMA; runs on compute capability 9.0 only)"),
           cl::init("sm_90"), cl::cat(tesselcCategory));
cl::opt<mlir::tessel::StreamKStrategy>
    streamK("stream-k",
            cl::desc("How stream_k is lowered for the GPU (llvm, ptx, "
                     "bundle)"),
            cl::init(mlir::tessel::StreamKStrategy::Persistent),
            mlir::tessel::streamKStrategyValues(), cl::cat(tesselcCategory));
/// Options (prefixes) that report on the passes of a compile.
constexpr llvm::StringLiteral kPassReports[] = {
    "mlir-timing", "mlir-print-ir", "time-passes",
    "print-after", "print-before",  "opt-bisect-limit"};
} // namespace

/// The GPU stages: LLVM IR, PTX or a bundle of `module` on `os`.
static bool emitGPU(mlir::ModuleOp module, llvm::raw_ostream &os) {
  tessel::GPUArtifacts out;
  std::string error;
  if (mlir::failed(tessel::compileForGPU(module, target, out, error,
                                         emit == Emit::LLVM, streamK))) {
    if (!error.empty())
      llvm::errs() << "tesselc: error: " << error << "\n";
    return false;
  }
  if (emit == Emit::LLVM)
    os << out.llvmIR;
  else if (emit == Emit::PTX)
    os << out.ptx;
  else
    os << tessel::writeBundle(out.kernels, out.ptx, target,
                              "tesselc " + inputFile);
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // libLLVM's options behind --help-hidden; MLIR's printing options, next,
  // stay in --help: --mlir-print-debuginfo prints each op's .tsl location.
  tessel::hideUnrelatedOptions({&tesselcCategory});
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  // By name for --mlir-print-ir-before/after=<pass> (registered first: the
  // option reads the pass registry when it is made).
  mlir::registerTransformsPasses();
  mlir::tessel::registerTesselPasses();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "Tessel DSL compiler\n");

  if (!mlir::tessel::isKnownTarget(target)) {
    llvm::errs() << "tesselc: error: unknown --target '" << target
                 << "' (expected sm_80, sm_90 or sm_90a)\n";
    return 1;
  }
  std::string readError;
  auto source = tessel::SourceManager::fromFile(inputFile, readError);
  if (!source) {
    llvm::errs() << "tesselc: error: " << readError << "\n";
    return 1;
  }
  tessel::GenOptions options;
  options.kernel = kernelName;
  for (const std::string &d : defines) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) {
      llvm::errs() << "tesselc: error: -D expects NAME=VALUE, got '" << d
                   << "'\n";
      return 1;
    }
    options.defines[d.substr(0, eq)] = d.substr(eq + 1);
  }
  std::string errorMessage;
  auto output = mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::errs() << "tesselc: error: " << errorMessage << "\n";
    return 1;
  }
  tessel::DiagnosticEngine diag(*source, std::cerr);
  if (emit == Emit::AST) {
    tessel::Lexer lexer(*source, diag);
    tessel::Parser parser(lexer, diag);
    auto module = parser.parseModule();
    if (!module || diag.hasErrors())
      return 1;
    output->os() << tessel::ast::dumpToString(*module, /*withLocs=*/true);
    output->keep();
    return 0;
  }
  mlir::MLIRContext context;
  // The kernels of a file compile in parallel unless an option reports on
  // the passes: its report is of the one module, in order.
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (option->getNumOccurrences() &&
        llvm::any_of(kPassReports, [&, name = name](llvm::StringRef prefix) {
          return name.starts_with(prefix);
        }))
      context.disableMultithreading();
  auto module = tessel::compileSource(context, *source, diag, options);
  if (!module)
    return 1;
  if (emit == Emit::Tessel) {
    module->print(output->os());
    output->keep();
    return 0;
  }
  // A pass's error about a kernel reads like the front end's, at its line.
  context.printOpOnDiagnostic(false);
  tessel::DSLDiagnosticHandler handler(context, diag);
  if (!emitGPU(*module, output->os()))
    return 1;
  output->keep();
  return 0;
}
