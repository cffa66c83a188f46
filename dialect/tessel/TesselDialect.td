//===- TesselDialect.td - The tessel dialect ---------------*- tablegen -*-===//

#ifndef TESSEL_DIALECT
#define TESSEL_DIALECT

include "mlir/IR/OpBase.td"

def Tessel_Dialect : Dialect {
  let name = "tessel";
  let cppNamespace = "::mlir::tessel";
  let summary = "Tile-level kernels with online reductions and stream-K scheduling";
  let description = [{
    Values are statically shaped tiles (`!tessel.tile<64x128xf16>`), pointers
    and tiles of pointers into global memory, and the states of the online
    reductions (online softmax, coupled two-distribution KL). Scalars use the
    upstream `arith` and `math` dialects; tiles use tessel's own elementwise
    ops because a tile type carries an optional layout encoding that upstream
    ops do not know about. Kernels are `func.func` ops marked `tessel.kernel`.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::func::FuncDialect"
  ];
  let extraClassDeclaration = [{
    /// Unit attribute on a func.func: the function is a kernel entry point.
    static constexpr llvm::StringLiteral getKernelAttrName() {
      return llvm::StringLiteral("tessel.kernel");
    }
    /// i32 attribute on a kernel: warps per CTA.
    static constexpr llvm::StringLiteral getNumWarpsAttrName() {
      return llvm::StringLiteral("tessel.num_warps");
    }
    /// i32 attribute on a kernel: buffers per load that tessel-pipeline
    /// moves into shared memory (1: none moved).
    static constexpr llvm::StringLiteral getNumStagesAttrName() {
      return llvm::StringLiteral("tessel.num_stages");
    }
    /// Unit attribute on a kernel: on sm_90a, run its tensor-map copies on
    /// a producer warpgroup of their own (tessel-warp-specialize).
    static constexpr llvm::StringLiteral getWarpSpecializeAttrName() {
      return llvm::StringLiteral("tessel.warp_specialize");
    }
    /// Unit attribute on a warp-specialised kernel: its consumer
    /// warpgroups take turns issuing their loops' warpgroup dots
    /// (tessel-ping-pong).
    static constexpr llvm::StringLiteral getPingPongAttrName() {
      return llvm::StringLiteral("tessel.ping_pong");
    }
    /// Dictionary attribute on a kernel: the constexpr values it was
    /// specialised with.
    static constexpr llvm::StringLiteral getConstantsAttrName() {
      return llvm::StringLiteral("tessel.constants");
    }
    /// String attribute on a kernel: how the runtime sizes its grid
    /// ("persistent": at most the co-resident CTAs).
    static constexpr llvm::StringLiteral getLaunchAttrName() {
      return llvm::StringLiteral("tessel.launch");
    }
    /// Dense i64 array on a persistent kernel: elements per program of each
    /// trailing workspace pointer argument.
    static constexpr llvm::StringLiteral getWorkspaceAttrName() {
      return llvm::StringLiteral("tessel.workspace");
    }
    /// i64 attribute on a kernel: its CTAs run in thread-block clusters of
    /// this many along x (the grid's x a multiple of it); absent: no cluster.
    static constexpr llvm::StringLiteral getClusterAttrName() {
      return llvm::StringLiteral("tessel.cluster");
    }
    /// Flat symbol reference on a kernel: the kernel launched right after it
    /// on the same grid, with the same arguments and workspace (the combine
    /// kernel of a split-K lowering).
    static constexpr llvm::StringLiteral getThenAttrName() {
      return llvm::StringLiteral("tessel.then");
    }
    /// i64 attribute on an integer or pointer argument of a kernel: every
    /// launch passes a multiple of it (for a pointer, an address aligned to
    /// that many bytes). Checked at launch; lets the lowering vectorise.
    static constexpr llvm::StringLiteral getMultipleOfAttrName() {
      return llvm::StringLiteral("tessel.multiple_of");
    }
    /// Unit attribute on a pointer argument of a kernel compiled with it
    /// as None (`-D NAME=None`): the body does not use it and every launch
    /// passes a null pointer.
    static constexpr llvm::StringLiteral getNoneAttrName() {
      return llvm::StringLiteral("tessel.none");
    }
    /// String attribute on the module: the GPU it is compiled for ("sm_80",
    /// "sm_90", "sm_90a"). Passes that pick instructions read it; without
    /// it they keep to what every supported GPU runs (sm_80).
    static constexpr llvm::StringLiteral getTargetAttrName() {
      return llvm::StringLiteral("tessel.target");
    }
    /// Unit attribute on a dot in a loop: tessel-pipeline gave the buffers
    /// it reads one slot more, so tessel-rotate-warpgroup-dots may issue it
    /// an iteration late.
    static constexpr llvm::StringLiteral getRotateAttrName() {
      return llvm::StringLiteral("tessel.rotate");
    }
    /// Dictionary attribute on a kernel argument of type
    /// !tessel.tensor_desc: the argument is a TMA tensor map the runtime
    /// encodes at launch; `base` is the index of the pointer argument it
    /// describes, `sizes` and `strides` the launch expressions (over the
    /// kernel's integer parameters, its constants and grid_x/y/z) of its
    /// dimensions, outermost first (docs/bundle.md).
    static constexpr llvm::StringLiteral getTensorMapAttrName() {
      return llvm::StringLiteral("tessel.tensor_map");
    }
  private:
    void registerTypes();
    void registerAttributes();
  public:
  }];
}

class Tessel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tessel_Dialect, mnemonic, traits>;

#endif // TESSEL_DIALECT
