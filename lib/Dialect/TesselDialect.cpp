//===- TesselDialect.cpp - tessel dialect registration --------------------===//

#include "tessel/TesselDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

using namespace mlir;
using namespace mlir::tessel;

#include "tessel/TesselOpsDialect.cpp.inc"

void TesselDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "tessel/TesselOps.cpp.inc"
      >();
}

/// A kernel's follow-up runs on the kernel's grid with its arguments and
/// workspace, so it must take exactly the same arguments and launch the same
/// way. Launches chain one level only: the runtime and the interpreter run
/// the pair, nothing more. (The reference is checked here rather than in a
/// symbol-use verifier because func.func is not a tessel op.)
static LogicalResult verifyThen(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func || !op->hasAttr(TesselDialect::getKernelAttrName()))
    return op->emitError() << "'" << name << "' is only valid on a kernel";
  auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
  if (!ref)
    return op->emitError() << "'" << name
                           << "' expects a flat symbol reference, got "
                           << attr.getValue();
  auto next = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(op, ref);
  if (!next || !next->hasAttr(TesselDialect::getKernelAttrName()))
    return op->emitError() << "'" << name << "' names " << ref
                           << ", which is not a kernel of this module";
  if (next == func)
    return op->emitError() << "'" << name << "' names the kernel itself";
  if (next->hasAttr(name))
    return op->emitError() << "'" << name << "' names " << ref
                           << ", which has a follow-up of its own";
  if (next.getFunctionType() != func.getFunctionType())
    return op->emitError() << "follow-up kernel " << ref << " takes "
                           << next.getFunctionType() << ", not "
                           << func.getFunctionType();
  for (StringRef same : {TesselDialect::getLaunchAttrName(),
                         TesselDialect::getWorkspaceAttrName()})
    if (next->getAttr(same) != op->getAttr(same))
      return op->emitError() << "follow-up kernel " << ref
                             << " must have the same '" << same << "'";
  // Launches check the leader's hints and null pointers only; they must hold
  // for both.
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (getMultipleOf(next, i) != getMultipleOf(func, i))
      return op->emitError()
             << "follow-up kernel " << ref << " must have the same '"
             << TesselDialect::getMultipleOfAttrName() << "' on argument " << i;
    if (isNoneArg(next, i) != isNoneArg(func, i))
      return op->emitError()
             << "follow-up kernel " << ref << " must have the same '"
             << TesselDialect::getNoneAttrName() << "' on argument " << i;
  }
  return success();
}

/// Kernels are func.func ops carrying `tessel.kernel`; they return nothing
/// because results leave through pointers.
LogicalResult TesselDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == getKernelAttrName()) {
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func)
      return op->emitError() << "'" << name << "' expects a func.func, got '"
                             << op->getName() << "'";
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a unit attribute, got "
             << attr.getValue();
    if (func.getFunctionType().getNumResults() != 0)
      return op->emitError() << "kernel '" << func.getSymName()
                             << "' must not return values, found "
                             << func.getFunctionType().getNumResults();
    return success();
  }
  if (name == getNumWarpsAttrName()) {
    auto warps = dyn_cast<IntegerAttr>(attr.getValue());
    if (!warps || !warps.getType().isSignlessInteger(32))
      return op->emitError()
             << "'" << name << "' must be an i32 attribute, got "
             << attr.getValue();
    int64_t n = warps.getInt();
    if (n < 1 || n > 32 || (n & (n - 1)) != 0)
      return op->emitError()
             << "'" << name << "' must be a power of two in [1, 32], got " << n;
    if (!op->hasAttr(getKernelAttrName()))
      return op->emitError() << "'" << name << "' is only valid on a kernel";
    return success();
  }
  if (name == getNumStagesAttrName()) {
    auto stages = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stages || !stages.getType().isSignlessInteger(32) ||
        stages.getInt() < 1 || stages.getInt() > 8)
      return op->emitError()
             << "'" << name << "' must be an i32 in [1, 8], got "
             << attr.getValue();
    if (!op->hasAttr(getKernelAttrName()))
      return op->emitError() << "'" << name << "' is only valid on a kernel";
    return success();
  }
  if (name == getWarpSpecializeAttrName() || name == getPingPongAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || !op->hasAttr(getKernelAttrName()))
      return op->emitError()
             << "'" << name << "' is a unit attribute of a kernel";
    return success();
  }
  if (name == WarpSpecializeOp::getBufferAttrName()) {
    if (!isa<LocalAllocOp>(op) || !isa<IntegerAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' numbers a tessel.local_alloc";
    return success();
  }
  if (name == getConstantsAttrName()) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a dictionary, got "
                             << attr.getValue();
    if (!op->hasAttr(getKernelAttrName()))
      return op->emitError() << "'" << name << "' is only valid on a kernel";
    return success();
  }
  if (name == getLaunchAttrName() || name == getWorkspaceAttrName()) {
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func || !op->hasAttr(getKernelAttrName()))
      return op->emitError() << "'" << name << "' is only valid on a kernel";
    if (name == getLaunchAttrName()) {
      auto kind = dyn_cast<StringAttr>(attr.getValue());
      if (!kind || kind.getValue() != "persistent")
        return op->emitError()
               << "'" << name << "' expects \"persistent\", got "
               << attr.getValue();
      return success();
    }
    auto sizes = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!sizes)
      return op->emitError() << "'" << name << "' expects an array<i64>, got "
                             << attr.getValue();
    if (sizes.size() > func.getNumArguments())
      return op->emitError() << "'" << name << "' describes " << sizes.size()
                             << " workspace arguments but the kernel has only "
                             << func.getNumArguments() << " arguments";
    return success();
  }
  if (name == getClusterAttrName()) {
    auto size = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !op->hasAttr(getKernelAttrName()))
      return op->emitError() << "'" << name << "' is only valid on a kernel";
    if (!size || !size.getType().isInteger(64) || size.getInt() < 2 ||
        size.getInt() > 16)
      return op->emitError()
             << "'" << name << "' expects an i64 in [2, 16], got "
             << attr.getValue();
    return success();
  }
  if (name == getThenAttrName())
    return verifyThen(op, attr);
  if (name == getTargetAttrName()) {
    auto target = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << name << "' is only valid on a module";
    if (!target || !isKnownTarget(target.getValue()))
      return op->emitError() << "'" << name
                             << "' must be \"sm_80\", \"sm_90\" or "
                                "\"sm_90a\", got "
                             << attr.getValue();
    return success();
  }
  if (name == getRotateAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a unit attribute, got "
             << attr.getValue();
    if (!isa<DotOp, WarpGroupDotOp>(op) ||
        !isa<LoopLikeOpInterface>(op->getParentOp()))
      return op->emitError()
             << "'" << name << "' is only valid on a dot in a loop";
    return success();
  }
  return op->emitError() << "unknown tessel attribute '" << name << "'";
}

/// Argument attributes of kernels: only `tessel.multiple_of`, a positive i64
/// on an argument a launch passes as an integer or an address.
/// `tessel.tensor_map` on a !tessel.tensor_desc argument: the index of a
/// pointer argument to its elements, and as many sizes and strides (launch
/// expressions) as the descriptor has dimensions and dimensions less one.
static LogicalResult verifyTensorMap(func::FuncOp func, unsigned argIndex,
                                     Attribute value) {
  auto fail = [&]() {
    return func.emitError()
           << "'" << TesselDialect::getTensorMapAttrName() << "' on argument "
           << argIndex
           << " needs a !tessel.tensor_desc argument and {base = <index of a "
              "pointer argument to its elements>, sizes = [<one string per "
              "dimension>], strides = [<one per dimension but the "
              "innermost>]}, got "
           << value;
  };
  auto desc = dyn_cast<TensorDescType>(func.getArgumentTypes()[argIndex]);
  auto map = dyn_cast<DictionaryAttr>(value);
  if (!desc || !map || map.size() != 3)
    return fail();
  auto base = map.getAs<IntegerAttr>("base");
  auto sizes = map.getAs<ArrayAttr>("sizes");
  auto strides = map.getAs<ArrayAttr>("strides");
  auto allStrings = [](ArrayAttr a) {
    return llvm::all_of(a, llvm::IsaPred<StringAttr>);
  };
  if (!base || !sizes || !strides || !allStrings(sizes) ||
      !allStrings(strides) || sizes.size() != desc.getRank() ||
      strides.size() + 1 != desc.getRank() || base.getInt() < 0 ||
      base.getInt() >= func.getNumArguments())
    return fail();
  auto ptr = dyn_cast<PtrType>(func.getArgumentTypes()[base.getInt()]);
  if (!ptr || ptr.getPointeeType() != desc.getElementType())
    return fail();
  if (isNoneArg(func, base.getInt()))
    return func.emitError()
           << "tensor map argument " << argIndex << " describes argument "
           << base.getInt() << ", which is compiled as None";
  return success();
}

LogicalResult TesselDialect::verifyRegionArgAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned argIndex,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name != getMultipleOfAttrName() && name != getTensorMapAttrName() &&
      name != getNoneAttrName())
    return op->emitError() << "unknown tessel argument attribute '" << name
                           << "'";
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func || !op->hasAttr(getKernelAttrName()))
    return op->emitError() << "'" << name
                           << "' is only valid on arguments of a kernel";
  if (name == getTensorMapAttrName())
    return verifyTensorMap(func, argIndex, attr.getValue());
  if (name == getNoneAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) ||
        !isa<PtrType>(func.getArgumentTypes()[argIndex]))
      return op->emitError() << "'" << name << "' on argument " << argIndex
                             << ": a unit attribute on a !tessel.ptr argument";
    // Launches pass a null pointer for it: nothing may read or write it.
    if (!func.isExternal() && !func.getArgument(argIndex).use_empty())
      return op->emitError()
             << "argument " << argIndex << " is compiled as None ('" << name
             << "') but used";
    return success();
  }
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || !value.getType().isSignlessInteger(64) || value.getInt() < 1)
    return op->emitError() << "'" << name
                           << "' must be a positive i64 attribute, got "
                           << attr.getValue();
  Type type = func.getArgumentTypes()[argIndex];
  if (!acceptsMultipleOf(type))
    return op->emitError() << "'" << name << "' on argument " << argIndex
                           << " of type " << type
                           << " (expected i32, i64 or !tessel.ptr)";
  return success();
}

std::string mlir::tessel::getKernelArgName(BlockArgument arg) {
  if (auto named = dyn_cast<NameLoc>(arg.getLoc()))
    return named.getName().str();
  return "arg" + std::to_string(arg.getArgNumber());
}

int64_t mlir::tessel::getLaunchWarps(func::FuncOp kernel) {
  int64_t warps = 4;
  if (auto attr = kernel->getAttrOfType<IntegerAttr>(
          TesselDialect::getNumWarpsAttrName()))
    warps = attr.getInt();
  kernel.walk([&](WarpSpecializeOp split) {
    warps += split.getProducerWarps();
    return WalkResult::interrupt();
  });
  return warps;
}

StringRef mlir::tessel::getTarget(Operation *op) {
  auto module =
      isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  if (module)
    if (auto target = module->getAttrOfType<StringAttr>(
            TesselDialect::getTargetAttrName()))
      return target.getValue();
  return "sm_80";
}

bool mlir::tessel::isKnownTarget(StringRef target) {
  return llvm::is_contained({"sm_80", "sm_90", "sm_90a"}, target);
}

bool mlir::tessel::hasWarpGroupMma(Operation *op) {
  return getTarget(op) == "sm_90a";
}

int64_t mlir::tessel::getMultipleOf(func::FuncOp kernel, unsigned index) {
  auto hint = kernel.getArgAttrOfType<IntegerAttr>(
      index, TesselDialect::getMultipleOfAttrName());
  return hint ? hint.getInt() : 0;
}

bool mlir::tessel::isNoneArg(func::FuncOp kernel, unsigned index) {
  return kernel.getArgAttr(index, TesselDialect::getNoneAttrName()) != nullptr;
}

bool mlir::tessel::acceptsMultipleOf(Type type) {
  return isa<PtrType>(type) || type.isSignlessInteger(32) ||
         type.isSignlessInteger(64);
}

func::FuncOp mlir::tessel::getFollowUpKernel(func::FuncOp kernel) {
  auto then = kernel->getAttrOfType<FlatSymbolRefAttr>(
      TesselDialect::getThenAttrName());
  if (!then)
    return {};
  return SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(kernel, then);
}

func::FuncOp mlir::tessel::getLeadingKernel(func::FuncOp kernel) {
  auto module = kernel->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  for (auto other : module.getOps<func::FuncOp>())
    if (getFollowUpKernel(other) == kernel)
      return other;
  return {};
}
