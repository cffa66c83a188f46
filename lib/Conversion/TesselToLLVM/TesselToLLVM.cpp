//===- TesselToLLVM.cpp - The convert-tessel-to-llvm pass -----------------===//
//
// Three conversions in a row: tessel (with func, arith, math and the types
// of scf) to the LLVM and NVVM dialects (a tessel.warp_specialize last:
// a branch on the thread index); then (after loops carrying the lanes
// of a vector are made to carry the vector) scf to cf; then cf and the
// arith that scf-to-cf creates to LLVM. Finally a persistent kernel's
// workspace arguments are packed behind one pointer.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/TesselToLLVM.h"
#include "Conversion/TesselToLLVM/Utils.h"

#include "tessel/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_CONVERTTESSELTOLLVM
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

static unsigned getNumWarps(func::FuncOp func) {
  if (auto attr = func->getAttrOfType<IntegerAttr>(
          TesselDialect::getNumWarpsAttrName()))
    return attr.getInt();
  return 4;
}

//===----------------------------------------------------------------------===//
// Types, kernels and shared memory sizes
//===----------------------------------------------------------------------===//

void mlir::tessel::addTesselTypeConversions(LLVMTypeConverter &converter) {
  MLIRContext *ctx = &converter.getContext();
  // A pointer into a cluster's shared memory is generic: it may point into
  // another CTA's (mapa), which only generic and shared::cluster addresses
  // reach, and generic ones serve the CTA's own too.
  converter.addConversion([ctx](PtrType type) -> Type {
    return LLVM::LLVMPointerType::get(ctx, type.getShared() ? 0 : 1);
  });
  converter.addConversion([ctx](MemDescType) -> Type {
    return LLVM::LLVMPointerType::get(ctx, 3);
  });
  converter.addConversion([ctx](MBarriersType) -> Type {
    return LLVM::LLVMPointerType::get(ctx, 3);
  });
  // A tensor map is a kernel parameter passed by value; the kernel uses its
  // address in the parameter space (generic).
  converter.addConversion([ctx](TensorDescType) -> Type {
    return LLVM::LLVMPointerType::get(ctx);
  });
  converter.addConversion(
      [&converter](TileType type, SmallVectorImpl<Type> &results)
          -> std::optional<LogicalResult> {
        FailureOr<TileLayout> layout = TileLayout::get(type);
        Type elem = converter.convertType(type.getElementType());
        if (failed(layout) || !elem)
          return failure();
        results.append(layout->getNumSlots(), elem);
        return success();
      });
}

/// Whether the kernel's warpgroups resize their registers (setmaxnreg).
static bool resizesRegisters(func::FuncOp kernel) {
  return kernel
      .walk([](WarpSpecializeOp split) {
        return split.getConsumerRegisters() ? WalkResult::interrupt()
                                            : WalkResult::advance();
      })
      .wasInterrupted();
}

namespace {

/// A kernel becomes an llvm.func with one parameter per argument.
struct KernelLowering : OpConversionPattern<func::FuncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::FuncOp func, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!func->hasAttr(TesselDialect::getKernelAttrName()))
      return rewriter.notifyMatchFailure(func, "not a tessel kernel");
    TypeConverter::SignatureConversion signature(func.getNumArguments());
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      Type converted = getTypeConverter()->convertType(type);
      if (!converted)
        return rewriter.notifyMatchFailure(func, "unsupported argument type");
      signature.addInputs(i, converted);
    }
    MLIRContext *ctx = getContext();
    auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                            signature.getConvertedTypes());
    auto kernel = LLVM::LLVMFuncOp::create(rewriter, func.getLoc(),
                                           func.getSymName(), type);
    kernel->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(),
                    rewriter.getUnitAttr());
    int32_t threads = 32 * getLaunchWarps(func);
    kernel->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                    rewriter.getDenseI32ArrayAttr({threads, 1, 1}));
    // ptxas honours setmaxnreg only when it knows the registers a thread has
    // at entry, which the thread bound alone does not give it (it ignores
    // them, C7508); with one CTA per SM, which getKernelSharedBytes makes
    // such a kernel take anyway, the entry count is the SM's registers over
    // the CTA's threads.
    if (resizesRegisters(func))
      kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                      rewriter.getI32IntegerAttr(1));
    // .reqnctapercluster: the CTAs run in clusters of this many along x.
    if (auto cluster = func->getAttrOfType<IntegerAttr>(
            TesselDialect::getClusterAttrName()))
      kernel->setAttr(
          NVVM::NVVMDialect::getClusterDimAttrName(),
          rewriter.getDenseI32ArrayAttr({int32_t(cluster.getInt()), 1, 1}));
    // A tensor map: 128 bytes by value, 64-byte aligned, read where it is
    // (__grid_constant__), as cp.async.bulk.tensor needs.
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      if (!isa<TensorDescType>(type))
        continue;
      kernel.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(LLVM::LLVMArrayType::get(
                            rewriter.getI8Type(), kTensorMapBytes)));
      kernel.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                        rewriter.getI64IntegerAttr(64));
      kernel.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                        rewriter.getUnitAttr());
    }
    rewriter.inlineRegionBefore(func.getBody(), kernel.getBody(), kernel.end());
    rewriter.applySignatureConversion(&kernel.getBody().front(), signature,
                                      getTypeConverter());
    rewriter.eraseOp(func);
    return success();
  }
};

struct ReturnLowering : OpConversionPattern<func::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange{});
    return success();
  }
};

} // namespace

void mlir::tessel::populateTesselToLLVMPatterns(
    LLVMTypeConverter &converter, RewritePatternSet &patterns,
    const AccessWidths &widths, const DenseMap<Operation *, int64_t> &offsets) {
  patterns.add<KernelLowering, ReturnLowering>(converter,
                                               patterns.getContext());
  populateElementwisePatterns(converter, patterns);
  populateMemoryPatterns(converter, patterns, widths);
  populateSharedPatterns(converter, patterns, widths, offsets);
  populateLayoutPatterns(converter, patterns);
  populateReducePatterns(converter, patterns);
  populateDotPatterns(converter, patterns);
  populateWarpGroupDotPatterns(converter, patterns);
  populateTMAPatterns(converter, patterns, offsets);
  populateWarpSpecializePatterns(converter, patterns);
}

static bool sameDistribution(Type src, Type dst, ArrayRef<int32_t> perm = {}) {
  return getLayout(dst).sameDistribution(getLayout(src), perm);
}

int64_t mlir::tessel::getScratchBytes(Operation *op) {
  int64_t threads = 32 * getNumWarps(op->getParentOfType<func::FuncOp>());
  // A tile remapped through shared memory, with the discard slots of the
  // copies that do not own their element.
  auto remapBytes = [&](Value src, ArrayRef<int64_t> scratchShape = {}) {
    return getRemapScratchBytes(cast<TileType>(src.getType()), scratchShape,
                                threads);
  };
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([&](ReshapeOp op) { return remapBytes(op.getSrc()); })
      .Case([&](ExtractSliceOp op) {
        return remapBytes(
            op.getSrc(),
            remapScratchShape(cast<TileType>(op.getSrc().getType()),
                              cast<TileType>(op.getType()),
                              op.getStaticOffsets()));
      })
      .Case([&](ConvertLayoutOp op) -> int64_t {
        if (sameDistribution(op.getSrc().getType(), op.getType()))
          return 0;
        return remapBytes(
            op.getSrc(),
            remapScratchShape(cast<TileType>(op.getSrc().getType()),
                              cast<TileType>(op.getType())));
      })
      .Case([&](TransOp op) -> int64_t {
        if (sameDistribution(op.getSrc().getType(), op.getType(),
                             op.getOrder()))
          return 0;
        return remapBytes(op.getSrc());
      })
      .Case([](ReduceOp op) -> int64_t {
        auto src = cast<TileType>(op.getSrc().getType());
        unsigned warps = getLayout(src).getDim(op.getAxis()).warps;
        if (warps == 1)
          return 0;
        return src.getNumElements() / src.getDimSize(op.getAxis()) * warps *
               getSharedBytes(src.getElementType());
      })
      .Case([&](DotOp op) -> int64_t {
        int64_t bytes = getDotBytes(op);
        return bytes ? withDiscardSlots(bytes, threads) : 0;
      })
      .Case([&](AtomicAddOp op) -> int64_t {
        if (op.getResult().use_empty())
          return 0;
        if (isa<TileType>(op.getType()))
          return remapBytes(op.getResult());
        return withDiscardSlots(getSharedBytes(op.getType()), threads);
      })
      .Default([](Operation *) { return 0; });
}

int64_t mlir::tessel::getKernelSharedBytes(func::FuncOp kernel) {
  int64_t bytes = layoutSharedMemory(kernel).totalBytes;
  // setmaxnreg.inc waits until registers are free: a kernel whose warps
  // resize theirs takes more than half of an SM's shared memory, so that no
  // second CTA (whose increase could wait on this one's) shares its SM.
  if (resizesRegisters(kernel))
    bytes = std::max<int64_t>(bytes,
                              llvm::alignTo(kHopperSharedBytes / 2 + 1, 1024));
  return bytes;
}

int64_t mlir::tessel::getKernelSharedLimit(func::FuncOp kernel) {
  return hasWarpGroupMma(kernel) ? kHopperSharedBytes : kSm80SharedBytes;
}

SmallVector<int64_t> mlir::tessel::getWorkspaceSlotBytes(func::FuncOp kernel) {
  auto sizes = kernel->getAttrOfType<DenseI64ArrayAttr>(
      TesselDialect::getWorkspaceAttrName());
  if (!sizes)
    return {};
  ArrayRef<Type> args = kernel.getArgumentTypes().take_back(sizes.size());
  SmallVector<int64_t> bytes;
  for (auto [elements, type] : llvm::zip(sizes.asArrayRef(), args))
    bytes.push_back(llvm::alignTo(
        elements * getSharedBytes(cast<PtrType>(type).getPointeeType()), 16));
  return bytes;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Every tile must have a layout this lowering knows, made for the kernel's
/// warps: patterns then never fail on a type.
static LogicalResult checkLayouts(func::FuncOp kernel) {
  unsigned warps = getNumWarps(kernel);
  auto check = [&](Value v) -> LogicalResult {
    auto tile = dyn_cast<TileType>(v.getType());
    if (!tile)
      return success();
    FailureOr<TileLayout> layout = TileLayout::get(tile);
    Location loc = v.getLoc();
    if (failed(layout))
      return emitError(loc) << "tile " << tile
                            << " has no layout the GPU lowering knows (run "
                               "tessel-assign-layouts first)";
    if (layout->getNumWarps() != warps)
      return emitError(loc)
             << "layout of " << tile << " spans " << layout->getNumWarps()
             << " warps but the kernel has " << warps;
    return success();
  };
  WalkResult walk = kernel.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (failed(check(v)))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Value v : block.getArguments())
          if (failed(check(v)))
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// Aligned like a shared-memory region (see layoutSharedMemory), so that
/// swizzled regions start where the hardware's swizzle pattern does.
static void declareSharedMemory(ModuleOp module) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), 0);
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/false,
                         LLVM::Linkage::External, kSharedMemorySymbol,
                         Attribute(), /*alignment=*/1024, /*addrSpace=*/3);
}

/// The trailing workspace arguments become offsets into one buffer passed
/// last: region i holds slotBytes[i] bytes per program, for every program.
static void packWorkspaces(LLVM::LLVMFuncOp kernel,
                           ArrayRef<int64_t> slotBytes) {
  Block &entry = kernel.getBody().front();
  unsigned first = entry.getNumArguments() - slotBytes.size();
  Location loc = kernel.getLoc();
  auto b = OpBuilder::atBlockBegin(&entry);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(kernel.getContext(), 1);
  Value base = entry.addArgument(ptrType, loc);
  Value x = NVVM::GridDimXOp::create(b, loc, i32);
  Value y = NVVM::GridDimYOp::create(b, loc, i32);
  Value xy = LLVM::MulOp::create(b, loc, x, y);
  Value z = NVVM::GridDimZOp::create(b, loc, i32);
  Value xyz = LLVM::MulOp::create(b, loc, xy, z);
  Value programs = LLVM::ZExtOp::create(b, loc, i64, xyz);
  int64_t offset = 0;
  for (auto [i, bytes] : llvm::enumerate(slotBytes)) {
    Value start = LLVM::MulOp::create(
        b, loc, programs,
        LLVM::ConstantOp::create(b, loc, b.getI64IntegerAttr(offset)));
    Value region = LLVM::GEPOp::create(b, loc, ptrType, b.getI8Type(), base,
                                       ValueRange{start});
    entry.getArgument(first + i).replaceAllUsesWith(region);
    offset += bytes;
  }
  entry.eraseArguments(first, slotBytes.size());
  SmallVector<Type> params(entry.getArgumentTypes());
  kernel.setFunctionType(LLVM::LLVMFunctionType::get(
      LLVM::LLVMVoidType::get(kernel.getContext()), params));
  // The arguments before the workspaces keep their attributes (a tensor
  // map's byval and alignment); the buffer's pointer has none.
  if (ArrayAttr attrs = kernel.getArgAttrsAttr()) {
    SmallVector<Attribute> kept(attrs.getValue().take_front(first));
    kept.push_back(b.getDictionaryAttr({}));
    kernel.setArgAttrsAttr(b.getArrayAttr(kept));
  }
}

namespace {

/// For the scf and cf conversions: each scf.if splits its block, and with
/// rollback enabled the driver records every op a split moves, which grows
/// quadratically with the thousands of ops of a kernel body. (The tessel
/// conversion keeps rollback: without it, every 1:N replacement places a
/// cast after the last of its values, a dominance query that renumbers the
/// whole block each time.) No pattern fails after changing IR.
static ConversionConfig oneShot() {
  ConversionConfig config;
  config.allowPatternRollback = false;
  return config;
}

struct ConvertTesselToLLVMPass
    : tessel::impl::ConvertTesselToLLVMBase<ConvertTesselToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<SmallVector<int64_t>> workspaces;
    bool needsShared = false;
    for (auto kernel : module.getOps<func::FuncOp>()) {
      if (failed(checkLayouts(kernel)))
        return signalPassFailure();
      if (kernel->hasAttr(TesselDialect::getClusterAttrName()) &&
          getTarget(module) == "sm_80") {
        kernel.emitError() << "kernel '" << kernel.getSymName()
                           << "' runs in thread-block clusters, which need "
                              "sm_90 or later; the target is sm_80";
        return signalPassFailure();
      }
      workspaces[kernel.getSymName()] = getWorkspaceSlotBytes(kernel);
      int64_t sharedBytes = getKernelSharedBytes(kernel);
      // Past what any GPU grants a block the kernel could never launch: say
      // so here, where the kernel is known, not at its first launch.
      if (sharedBytes > kHopperSharedBytes) {
        kernel.emitError() << "kernel '" << kernel.getSymName() << "' needs "
                           << sharedBytes
                           << " bytes of shared memory per CTA; no GPU "
                              "allows more than "
                           << kHopperSharedBytes
                           << " (smaller tiles or fewer stages)";
        return signalPassFailure();
      }
      needsShared |= sharedBytes > 0;
    }
    if (needsShared)
      declareSharedMemory(module);
    if (failed(lowerTessel(module)))
      return signalPassFailure();
    lowerWarpSpecialize(module);
    if (failed(carryVectorLanes(module)) || failed(lowerScf(module)) ||
        failed(lowerControlFlow(module)))
      return signalPassFailure();
    for (auto kernel : module.getOps<LLVM::LLVMFuncOp>())
      if (!kernel.isExternal())
        if (SmallVector<int64_t> slots = workspaces.lookup(kernel.getSymName());
            !slots.empty())
          packWorkspaces(kernel, slots);
  }

  LogicalResult lowerTessel(ModuleOp module) {
    MLIRContext *ctx = &getContext();
    LLVMTypeConverter converter(ctx);
    addTesselTypeConversions(converter);
    // Before any rewrite: the analyses read the IR as the patterns meet it.
    AccessWidths widths = getAccessWidths(module);
    DenseMap<Operation *, int64_t> offsets;
    for (auto kernel : module.getOps<func::FuncOp>())
      offsets.insert_range(layoutSharedMemory(kernel).offsets);
    RewritePatternSet patterns(ctx);
    populateTesselToLLVMPatterns(converter, patterns, widths, offsets);
    // ceildivsi/floordivsi have no LLVM lowering: expand them to arith.
    arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    populateMathToLLVMConversionPatterns(converter, patterns);
    ConversionTarget target(*ctx);
    target.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();
    target.addIllegalDialect<TesselDialect, arith::ArithDialect,
                             math::MathDialect, func::FuncDialect>();
    // Lowered after its regions (lowerWarpSpecialize): their barriers ask it
    // which threads take part.
    target.addLegalOp<WarpSpecializeOp>();
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    return applyPartialConversion(module, target, std::move(patterns));
  }

  // One walk, no folding: the rest of the IR stays as the conversion left it.
  LogicalResult carryVectorLanes(ModuleOp module) {
    RewritePatternSet patterns(&getContext());
    populateCarryVectorLanesPatterns(patterns);
    walkAndApplyPatterns(module, std::move(patterns));
    return success();
  }

  LogicalResult lowerScf(ModuleOp module) {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    populateSCFToControlFlowConversionPatterns(patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<scf::SCFDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    return applyPartialConversion(module, target, std::move(patterns),
                                  oneShot());
  }

  LogicalResult lowerControlFlow(ModuleOp module) {
    MLIRContext *ctx = &getContext();
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    // NVVM ops without an LLVM intrinsic (the polling loop of
    // mbarrier.try_wait.parity) become inline PTX.
    populateNVVMToLLVMConversionPatterns(patterns);
    ConversionTarget target(*ctx);
    target.addLegalDialect<LLVM::LLVMDialect>();
    target.addDynamicallyLegalDialect<NVVM::NVVMDialect>([](Operation *op) {
      auto ptx = dyn_cast<NVVM::BasicPtxBuilderInterface>(op);
      return !ptx || ptx.hasIntrinsic();
    });
    target.addIllegalDialect<cf::ControlFlowDialect, arith::ArithDialect>();
    if (failed(applyPartialConversion(module, target, std::move(patterns),
                                      oneShot())))
      return failure();
    SmallVector<UnrealizedConversionCastOp> casts, left;
    module.walk([&](UnrealizedConversionCastOp op) { casts.push_back(op); });
    reconcileUnrealizedCasts(casts, &left);
    if (left.empty())
      return success();
    return left.front().emitOpError() << "is left after the conversion";
  }
};

} // namespace
