//===- Pipeline.cpp - Front-end IR to the LLVM dialect, with metadata -----===//

#include "Conversion/NVPTX/GPUCompile.h"
#include "Conversion/TesselToLLVM/TesselToLLVM.h"

#include "tessel/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tessel;

/// A parameter as docs/bundle.md names it; fails for types a launch cannot
/// pass.
static FailureOr<::tessel::CompiledKernel::Param> paramOf(BlockArgument arg) {
  std::string name = getKernelArgName(arg);
  auto typeName = [](Type t) -> std::string {
    if (t.isSignlessInteger(1) || t.isSignlessInteger(32) ||
        t.isSignlessInteger(64) || t.isF16() || t.isBF16() || t.isF32()) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << t;
      return s;
    }
    return {};
  };
  Type type = arg.getType();
  if (auto ptr = dyn_cast<PtrType>(type))
    return ::tessel::CompiledKernel::Param{name, "ptr",
                                           typeName(ptr.getPointeeType())};
  std::string kind = typeName(type);
  if (kind.empty() || kind == "i1")
    return emitError(arg.getLoc())
           << "kernel parameter '" << name << "' of type " << type
           << " cannot be passed at launch (ptr, i32, i64, f16, bf16, f32)";
  return ::tessel::CompiledKernel::Param{name, kind, ""};
}

/// A tensor-map argument as docs/bundle.md describes it: dimensions
/// innermost first (tessel-lower-tensor-descs wrote them outermost first).
static ::tessel::CompiledKernel::TensorMap
tensorMapOf(func::FuncOp kernel, BlockArgument arg, TensorDescType desc) {
  auto map = kernel.getArgAttrOfType<DictionaryAttr>(
      arg.getArgNumber(), TesselDialect::getTensorMapAttrName());
  auto strings = [&](StringRef name) {
    std::vector<std::string> out;
    for (Attribute a : llvm::reverse(map.getAs<ArrayAttr>(name)))
      out.push_back(cast<StringAttr>(a).str());
    return out;
  };
  ::tessel::CompiledKernel::TensorMap t;
  int64_t base = map.getAs<IntegerAttr>("base").getInt();
  t.param = paramOf(kernel.getArgument(base))->name;
  t.dims = strings("sizes");
  t.strides = strings("strides");
  TMABox box = *getTMABox(desc);
  t.box.assign(box.box.rbegin(), box.box.rend());
  t.swizzle = box.swizzleBytes;
  return t;
}

/// Launch metadata of a kernel after layout assignment.
static LogicalResult describe(func::FuncOp kernel,
                              ::tessel::CompiledKernel &info) {
  info.name = kernel.getSymName().str();
  info.numWarps = getLaunchWarps(kernel);
  info.sharedBytes = getKernelSharedBytes(kernel);
  SmallVector<int64_t> workspace = getWorkspaceSlotBytes(kernel);
  for (int64_t bytes : workspace)
    info.workspacePerProgram += bytes;
  info.persistent = kernel->hasAttr(TesselDialect::getLaunchAttrName());
  if (auto cluster = kernel->getAttrOfType<IntegerAttr>(
          TesselDialect::getClusterAttrName()))
    info.cluster = cluster.getInt();
  if (func::FuncOp next = getFollowUpKernel(kernel))
    info.then = next.getSymName().str();
  unsigned numParams = kernel.getNumArguments() - workspace.size();
  for (BlockArgument arg : kernel.getArguments().take_front(numParams)) {
    if (auto desc = dyn_cast<TensorDescType>(arg.getType())) {
      info.tensorMaps.push_back(tensorMapOf(kernel, arg, desc));
      continue;
    }
    FailureOr<::tessel::CompiledKernel::Param> param = paramOf(arg);
    if (failed(param))
      return failure();
    param->multipleOf = getMultipleOf(kernel, arg.getArgNumber());
    param->none = isNoneArg(kernel, arg.getArgNumber());
    info.params.push_back(*param);
  }
  // Launch expressions only take integers: booleans count as 0/1, float and
  // type constants are left out.
  if (auto constants = kernel->getAttrOfType<DictionaryAttr>(
          TesselDialect::getConstantsAttrName()))
    for (NamedAttribute c : constants) {
      if (auto b = dyn_cast<BoolAttr>(c.getValue()))
        info.constants.emplace_back(c.getName().str(), b.getValue());
      else if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
        info.constants.emplace_back(c.getName().str(), i.getInt());
    }
  return success();
}

/// The pass manager options a tool registered (tesselc: --mlir-timing,
/// --mlir-print-ir-after...); none elsewhere, where applying them fails
/// harmlessly.
static void configure(PassManager &pm) {
  (void)applyPassManagerCLOptions(pm);
  applyDefaultTimingPassManagerCLOptions(pm);
}

namespace tessel {
LogicalResult lowerToLLVMDialect(ModuleOp module,
                                 std::vector<CompiledKernel> &kernels,
                                 StreamKStrategy streamK) {
  PassManager tiles(module.getContext());
  configure(tiles);
  tiles.addPass(createTesselExpandOnline());
  tiles.addPass(createTesselLowerStreamK({streamK}));
  tiles.addPass(createCanonicalizerPass());
  tiles.addPass(createCSEPass());
  tiles.addPass(createTesselLowerTensorDescs());
  tiles.addPass(createTesselAssignLayouts());
  // Layout conversions of loop-invariant tiles (a query block converted to
  // a dot operand) run once, before their loop.
  tiles.addPass(createLoopInvariantCodeMotionPass());
  // Sliced tiles first take their shared buffers, which tessel-pipeline
  // counts before it gives a loop's optional copies theirs.
  tiles.addPass(createTesselStageSlices());
  tiles.addPass(createTesselPipeline());
  // Hopper (the module's tessel.target is sm_90a): dots on warpgroup MMA.
  tiles.addPass(createTesselWarpGroupMma());
  tiles.addPass(createTesselRotateWarpGroupDots());
  tiles.addPass(createTesselOrderWarpGroupDots());
  tiles.addPass(createTesselDeferWarpGroupWaits());
  tiles.addPass(createTesselDoubleBufferStores());
  tiles.addPass(createTesselWarpSpecialize());
  tiles.addPass(createTesselPingPong());
  // Last: the passes above match their loops' carried values.
  tiles.addPass(createTesselPrefetchScalarLoads());
  if (failed(tiles.run(module)))
    return failure();
  for (auto kernel : module.getOps<func::FuncOp>()) {
    kernels.emplace_back();
    if (failed(describe(kernel, kernels.back())))
      return failure();
  }
  PassManager lower(module.getContext());
  configure(lower);
  lower.addPass(createConvertTesselToLLVM());
  return lower.run(module);
}
} // namespace tessel
