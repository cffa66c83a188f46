//===- Compile.cpp - A front-end module to PTX, its kernels in parallel ---===//
//
// Each kernel of a file is an independent program: the kernels of a module
// compile on a thread each, every one in an MLIR and an LLVM context of its
// own (a context's dialect registry and pass instrumentation are not for
// concurrent pass managers), and their PTX is merged into one module. The
// whole module compiles on the caller's thread instead where the caller's
// context runs single-threaded, where LLVM IR is to be printed or passes
// timed, and, to report them as it always has, where compiling apart meets
// any diagnostic or error.
//
//===----------------------------------------------------------------------===//

#include "Conversion/NVPTX/GPUCompile.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Pass.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

using namespace tessel;

/// Every stage on one module, on this thread.
static mlir::LogicalResult
compileModule(mlir::ModuleOp module, llvm::StringRef target, GPUArtifacts &out,
              std::string &error, bool printLLVMIR,
              mlir::tessel::StreamKStrategy streamK) {
  // The passes pick instructions for the target they find on the module.
  module->setAttr(mlir::tessel::TesselDialect::getTargetAttrName(),
                  mlir::StringAttr::get(module.getContext(), target));
  if (mlir::failed(lowerToLLVMDialect(module, out.kernels, streamK)))
    return mlir::failure();
  auto machine = createNVPTXTargetMachine(target, error);
  if (!machine)
    return mlir::failure();
  llvm::LLVMContext llvmContext;
  auto llvmModule = translateToLLVMIR(module, llvmContext, *machine);
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return mlir::failure();
  }
  if (printLLVMIR) {
    llvm::raw_string_ostream os(out.llvmIR);
    llvmModule->print(os, nullptr);
  }
  out.ptx = emitPTX(*llvmModule, *machine, error);
  return mlir::success(!out.ptx.empty());
}

/// Kernel `index` of the module in `bytecode`, alone, in a context of its
/// own; fails on any diagnostic (the caller reports it by compiling the
/// module whole).
static mlir::LogicalResult
compileKernelApart(llvm::StringRef bytecode, size_t index,
                   llvm::StringRef target, GPUArtifacts &out,
                   mlir::tessel::StreamKStrategy streamK) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<mlir::tessel::TesselDialect>();
  bool diagnosed = false;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &) {
    diagnosed = true;
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(bytecode,
                                              mlir::ParserConfig(&context));
  if (!module)
    return mlir::failure();
  for (auto [i, kernel] :
       llvm::enumerate(llvm::to_vector(module->getOps<mlir::func::FuncOp>())))
    if (i != index)
      kernel.erase();
  std::string error;
  return mlir::success(mlir::succeeded(compileModule(*module, target, out,
                                                     error, false, streamK)) &&
                       !diagnosed);
}

/// The `count` kernels of `module` compiled apart on `threads` threads, the
/// PTX merged; fails where the whole module is to be compiled instead.
static mlir::LogicalResult
compileKernelsApart(mlir::ModuleOp module, size_t count, unsigned threads,
                    llvm::StringRef target, GPUArtifacts &out,
                    mlir::tessel::StreamKStrategy streamK) {
  std::string bytecode;
  llvm::raw_string_ostream os(bytecode);
  if (mlir::failed(mlir::writeBytecodeToFile(module, os)))
    return mlir::failure();
  std::vector<GPUArtifacts> parts(count);
  std::vector<char> compiled(count, false);
  // Largest first (by operations, a proxy for the back end's time): on few
  // threads a file's largest kernel then does not start last and set the
  // file's time alone (mta.tsl on 2 cores: mta_bwd is half the file's work).
  llvm::SmallVector<std::pair<size_t, size_t>> bySize;
  for (auto [i, kernel] :
       llvm::enumerate(module.getOps<mlir::func::FuncOp>())) {
    size_t ops = 0;
    kernel.walk([&](mlir::Operation *) { ++ops; });
    bySize.push_back({ops, i});
  }
  llvm::stable_sort(bySize, [](auto a, auto b) { return a.first > b.first; });
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
    for (size_t i : llvm::make_second_range(bySize))
      pool.async([&, i] {
        compiled[i] = mlir::succeeded(
            compileKernelApart(bytecode, i, target, parts[i], streamK));
      });
    pool.wait();
  }
  if (!llvm::all_of(compiled, [](char ok) { return ok; }))
    return mlir::failure();
  std::vector<std::string> ptx;
  for (GPUArtifacts &part : parts)
    ptx.push_back(std::move(part.ptx));
  std::optional<std::string> merged = mergePTXModules(ptx);
  if (!merged)
    return mlir::failure();
  for (GPUArtifacts &part : parts)
    llvm::append_range(out.kernels, part.kernels);
  out.ptx = std::move(*merged);
  return mlir::success();
}

mlir::LogicalResult
tessel::compileForGPU(mlir::ModuleOp module, llvm::StringRef target,
                      GPUArtifacts &out, std::string &error, bool printLLVMIR,
                      mlir::tessel::StreamKStrategy streamK) {
  size_t kernels = llvm::range_size(module.getOps<mlir::func::FuncOp>());
  unsigned threads = std::min<size_t>(
      kernels, llvm::hardware_concurrency().compute_thread_count());
  if (threads > 1 && module.getContext()->isMultithreadingEnabled() &&
      !printLLVMIR && !llvm::TimePassesIsEnabled) {
    GPUArtifacts apart;
    if (mlir::succeeded(compileKernelsApart(module, kernels, threads, target,
                                            apart, streamK))) {
      out = std::move(apart);
      return mlir::success();
    }
  }
  return compileModule(module, target, out, error, printLLVMIR, streamK);
}
