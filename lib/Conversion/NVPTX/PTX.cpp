//===- PTX.cpp - LLVM IR and PTX through LLVM's NVPTX back end ------------===//

#include "Conversion/NVPTX/GPUCompile.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/OptBisect.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetOptions.h"

#include <mutex>

using namespace tessel;

static constexpr llvm::StringLiteral kTriple = "nvptx64-nvidia-cuda";

std::unique_ptr<llvm::TargetMachine>
tessel::createNVPTXTargetMachine(llvm::StringRef chip, std::string &error) {
  // Once per process: the target registry and the options are not locked,
  // and compiles run on several threads (the Python package's autotuner).
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    // 32-bit shared-memory pointers (NVPTX's -nvptx-short-ptr, set before
    // the target machine reads it): a kernel keeps dozens of shared addresses
    // live and would spend two registers on each.
    auto &options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("nvptx-short-ptr"); it != options.end())
      static_cast<llvm::cl::opt<bool> *>(it->second)->setValue(true);
  });
  llvm::Triple triple(kTriple);
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  // Multiplies and adds contract into fma.rn, as CUDA C++ compilers and
  // Triton do by default: one rounding instead of two, half the instructions
  // of the kernels' elementwise math (NVPTX otherwise writes mul.rn/add.rn so
  // that ptxas cannot fuse them either).
  llvm::TargetOptions targetOptions;
  targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  // The oldest PTX ISA with what the kernels use: 8.0 (CUDA 12.0) for
  // sm_80; 8.1 (CUDA 12.1) for sm_90, whose atomic adds of f32 runs are
  // vector reductions (red.global.add.v4.f32).
  llvm::StringRef features = chip.starts_with("sm_90") ? "+ptx81" : "+ptx80";
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, chip, features, targetOptions, std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

std::unique_ptr<llvm::Module>
tessel::translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                          llvm::TargetMachine &machine) {
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context, "tessel");
  if (!llvmModule)
    return nullptr;
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // LLVM's own instrumentation, so that -time-passes, -print-after and
  // -opt-bisect-limit see the O3 pipeline as they see the back end's.
  llvm::PassInstrumentationCallbacks callbacks;
  llvm::StandardInstrumentations instrumentations(context,
                                                  /*DebugLogging=*/false);
  instrumentations.registerCallbacks(callbacks, &mam);
  llvm::PassBuilder builder(&machine, llvm::PipelineTuningOptions(),
                            std::nullopt, &callbacks);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
      .run(*llvmModule, mam);
  return llvmModule;
}

namespace {
/// Keeps two of NVPTX's codegen IR passes off the functions of more than
/// kLimit instructions. Straight-line strength reduction searches, for each
/// candidate, back over every earlier one of the same stride that has no
/// constant offset to it: N such address computations cost N^2 symbolic
/// subtractions. MTA's backward, its windows unrolled, spent 95 % of its
/// compile there at 64 x 64 tiles (~2900 such addresses), and a third at
/// the ops' 32 x 32 (13.6k instructions, 0.6 s); with it off, that kernel
/// ran 4 % faster (H200), the attention kernels (4-7k instructions) within
/// 0.6 % either way, MTA's forward (3k) 1.6 % slower: the limit sits
/// between. Global value numbering, run twice more after the O3 pipeline's
/// own, took 0.4 s there and left its PTX byte for byte as it was.
class SkipQuadraticPasses : public llvm::OptPassGate {
public:
  static constexpr size_t kLimit = 10000;

  /// `outer`: the gate it replaces on the context (-opt-bisect-limit), asked
  /// about every pass this one lets run.
  SkipQuadraticPasses(llvm::Module &module, const llvm::OptPassGate &outer)
      : outer(outer) {
    for (llvm::Function &f : module)
      if (f.getInstructionCount() > kLimit)
        large.insert(("function (" + f.getName() + ")").str());
  }
  bool isEnabled() const override {
    return !large.empty() || outer.isEnabled();
  }
  bool shouldRunPass(llvm::StringRef pass,
                     llvm::StringRef unit) const override {
    // Passes go by their argument names here (-slsr, -gvn).
    if ((pass == "slsr" || pass == "gvn") && large.contains(unit))
      return false;
    return !outer.isEnabled() || outer.shouldRunPass(pass, unit);
  }

private:
  const llvm::OptPassGate &outer;
  llvm::StringSet<> large;
};
} // namespace

std::string tessel::emitPTX(llvm::Module &module, llvm::TargetMachine &machine,
                            std::string &error) {
  llvm::OptPassGate &previous = module.getContext().getOptPassGate();
  SkipQuadraticPasses gate(module, previous);
  module.getContext().setOptPassGate(gate);
  llvm::scope_exit restore(
      [&] { module.getContext().setOptPassGate(previous); });
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  llvm::CodeGenFileType::AssemblyFile)) {
    error = "the NVPTX target cannot emit assembly";
    return {};
  }
  pm.run(module);
  return std::string(ptx);
}
