//===- GPUCompile.h - tessel IR to PTX and kernel bundles -------*- C++ -*-===//
//
// The GPU half of the compiler, one call per stage: the tile-level passes
// and the lowering to the LLVM dialect, then LLVM IR optimised for NVPTX,
// then PTX text from LLVM's NVPTX back end, then the bundle the runtime
// loads (docs/bundle.md). Everything runs in process.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_CONVERSION_GPUCOMPILE_H
#define TESSEL_CONVERSION_GPUCOMPILE_H

#include "tessel/TesselDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessel {

/// What the compiler tells of one kernel for its bundle's "kernels" entry (the
/// runtime reads it back as tessel::KernelInfo).
struct CompiledKernel {
  struct Param {
    std::string name, kind, elem;
    /// The kernel's multiple_of hint (bytes of alignment for a pointer);
    /// 0: none.
    int64_t multipleOf = 0;
    /// A pointer compiled as None: launches pass a null pointer.
    bool none = false;
  };
  std::string name;
  unsigned numWarps = 4;
  int64_t sharedBytes = 0;
  std::vector<Param> params;
  std::vector<std::pair<std::string, int64_t>> constants;
  bool persistent = false;
  /// Bytes of workspace per program (0: none); the runtime allocates
  /// `workspacePerProgram × num_ctas` and passes it last.
  int64_t workspacePerProgram = 0;
  /// The kernel launched right after this one on the same grid, with the
  /// same arguments and workspace (split-K's combine kernel); empty: none.
  std::string then;
  /// CTAs per thread-block cluster along x (the `tessel.cluster` attribute);
  /// 1: no clusters.
  int64_t cluster = 1;
  /// A TMA tensor map (CUtensorMap) the runtime encodes at each launch with
  /// cuTensorMapEncodeTiled and passes by value after the parameters.
  struct TensorMap {
    /// The ptr parameter giving the base address (and element type).
    std::string param;
    /// Element counts, innermost first: launch expressions.
    std::vector<std::string> dims;
    /// Elements between consecutive indices of dims 1..: launch expressions.
    std::vector<std::string> strides;
    /// The box, innermost first.
    std::vector<int64_t> box;
    /// Bytes: 0, 32, 64 or 128.
    unsigned swizzle = 0;
  };
  std::vector<TensorMap> tensorMaps;
};

/// Runs tessel-expand-online, tessel-lower-stream-k (with `streamK`),
/// canonicalize, CSE, tessel-assign-layouts, tessel-pipeline,
/// tessel-stage-slices, tessel-warpgroup-mma and convert-tessel-to-llvm on a
/// front-end module (for the module's `tessel.target`), recording each
/// kernel's launch metadata on the way.
/// Errors are reported through the context's diagnostics.
mlir::LogicalResult
lowerToLLVMDialect(mlir::ModuleOp module, std::vector<CompiledKernel> &kernels,
                   mlir::tessel::StreamKStrategy streamK =
                       mlir::tessel::StreamKStrategy::Persistent);

/// The NVPTX target machine for `chip` (sm_80, sm_90, sm_90a) with PTX ISA
/// 8.0.
std::unique_ptr<llvm::TargetMachine>
createNVPTXTargetMachine(llvm::StringRef chip, std::string &error);

/// LLVM IR of an LLVM-dialect module, with the target's data layout and
/// optimised at O3.
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &machine);

/// PTX assembly of `module`; empty (with `error` set) on failure.
std::string emitPTX(llvm::Module &module, llvm::TargetMachine &machine,
                    std::string &error);

/// One PTX module holding the items of `modules` (PTX text of one target
/// and ISA): their common header, then each declaration and definition once
/// (declarations of one symbol that differ only in `.align` keep the larger
/// one). None where the headers differ, a text cannot be read or two modules
/// give one name different items.
std::optional<std::string> mergePTXModules(llvm::ArrayRef<std::string> modules);

/// What compileForGPU produces.
struct GPUArtifacts {
  std::vector<CompiledKernel> kernels;
  /// The optimised LLVM IR, printed (only when asked for).
  std::string llvmIR;
  std::string ptx;
};

/// Every stage above in turn, for `target` (sm_80, sm_90, or sm_90a: Hopper's
/// warpgroup MMA), recorded on the module as `tessel.target`, stream_k
/// lowered with `streamK`. Pass failures are reported through the context's
/// diagnostics; target and PTX emission failures in `error`. Where the
/// module's context is multi-threaded, its kernels compile on a thread each
/// (their PTX merged); the module itself is then left as it was.
mlir::LogicalResult
compileForGPU(mlir::ModuleOp module, llvm::StringRef target, GPUArtifacts &out,
              std::string &error, bool printLLVMIR = false,
              mlir::tessel::StreamKStrategy streamK =
                  mlir::tessel::StreamKStrategy::Persistent);

/// A bundle (docs/bundle.md) holding `ptx` and `kernels`.
std::string writeBundle(const std::vector<CompiledKernel> &kernels,
                        llvm::StringRef ptx, llvm::StringRef target,
                        llvm::StringRef producer);

} // namespace tessel

#endif // TESSEL_CONVERSION_GPUCOMPILE_H
