//===- Interpreter.cpp - Kernel launch, values and control flow -----------===//
//
// The grid runs program after program in DESCENDING linear order (the last
// program first, program 0 last). The stream-K lowering makes the host CTA
// of a unit (the lowest program touching it) spin-wait for the arrival flags
// of the higher programs that computed the unit's other slices; descending
// order is a sequential schedule in which every such wait is already
// satisfied. Lowered IR that spin-waits on a flag still unset under this
// order would wait forever on a GPU as well, and is to be reported as a
// deadlock. Correct kernels give the same results in any order. The CTAs
// of a thread-block cluster (tessel.cluster) wait for each other at its
// barrier, which no sequential order satisfies: they take turns on threads
// of their own (Cluster.h), clusters in descending order.
//
//===----------------------------------------------------------------------===//

#include "Cluster.h"
#include "Executor.h"

#include "tessel/TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
namespace ts = mlir::tessel;

namespace tessel {
using namespace detail;

//===----------------------------------------------------------------------===//
// Values and helpers
//===----------------------------------------------------------------------===//

std::optional<DType> dtypeOf(Type type) {
  if (type.isSignlessInteger(1))
    return DType::I1;
  if (type.isSignlessInteger(32))
    return DType::I32;
  if (type.isSignlessInteger(64))
    return DType::I64;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF32())
    return DType::F32;
  return std::nullopt;
}

std::optional<ElemType> ElemType::get(Type type) {
  if (auto tile = dyn_cast<ts::TileType>(type))
    type = tile.getElementType();
  if (isa<ts::PtrType>(type))
    return ElemType{ElemKind::Ptr, 64, FloatFormat::F32};
  if (isa<IndexType>(type))
    return ElemType{ElemKind::Int, 64, FloatFormat::F32};
  if (auto integer = dyn_cast<IntegerType>(type))
    if (integer.isSignless() && integer.getWidth() <= 64)
      return ElemType{ElemKind::Int, integer.getWidth(), FloatFormat::F32};
  if (type.isF16())
    return ElemType{ElemKind::Float, 16, FloatFormat::F16};
  if (type.isBF16())
    return ElemType{ElemKind::Float, 16, FloatFormat::BF16};
  if (type.isF32())
    return ElemType{ElemKind::Float, 32, FloatFormat::F32};
  return std::nullopt;
}

int64_t detail::numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

ArrayRef<int64_t> detail::shapeOf(Type type) {
  if (auto tile = dyn_cast<ts::TileType>(type))
    return tile.getShape();
  return {};
}

RtValue RtValue::lanes(ElemKind kind, ArrayRef<int64_t> shape) {
  RtValue v;
  v.shape.assign(shape.begin(), shape.end());
  auto n = static_cast<size_t>(numElements(shape));
  if (kind == ElemKind::Int)
    v.ints.resize(n);
  else if (kind == ElemKind::Float)
    v.floats.resize(n);
  else
    v.ptrs.resize(n);
  return v;
}

RtValue RtValue::intScalar(int64_t value) {
  RtValue v;
  v.ints = {value};
  return v;
}

size_t RtValue::numLanes() const {
  return std::max({ints.size(), floats.size(), ptrs.size()});
}

Lane RtValue::lane(ElemKind kind, size_t index) const {
  Lane l;
  if (kind == ElemKind::Int)
    l.i = ints[index];
  else if (kind == ElemKind::Float)
    l.f = floats[index];
  else
    l.p = ptrs[index];
  return l;
}

void RtValue::setLane(ElemKind kind, size_t index, const Lane &l) {
  if (kind == ElemKind::Int)
    ints[index] = l.i;
  else if (kind == ElemKind::Float)
    floats[index] = l.f;
  else
    ptrs[index] = l.p;
}

std::string detail::laneName(ArrayRef<int64_t> shape, size_t flat) {
  SmallVector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = static_cast<int64_t>(flat) % shape[d];
    flat /= shape[d];
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(index, os);
  os << "]";
  return text;
}

/// Files print as file:line:col; a call site (an inlined helper) as the
/// callee's location followed by its caller's; names and fused locations by
/// the first file location inside them.
std::string detail::formatLoc(Location loc) {
  if (auto file = dyn_cast<FileLineColRange>(loc))
    return (file.getFilename().strref() + ":" + Twine(file.getStartLine()) +
            ":" + Twine(file.getStartColumn()))
        .str();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    std::string child = formatLoc(name.getChildLoc());
    return child != "unknown location" ? child : name.getName().str();
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return formatLoc(call.getCallee()) + " (called from " +
           formatLoc(call.getCaller()) + ")";
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string text = formatLoc(inner);
      if (text != "unknown location")
        return text;
    }
  if (auto opaque = dyn_cast<OpaqueLoc>(loc))
    return formatLoc(opaque.getFallbackLocation());
  return "unknown location";
}

double detail::maximumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::nan("");
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

double detail::minimumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::nan("");
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

//===----------------------------------------------------------------------===//
// Executor core
//===----------------------------------------------------------------------===//

Executor::Executor(Memory &memory, func::FuncOp kernel,
                   std::array<int64_t, 3> grid)
    : memory(memory), kernel(kernel), grid(grid) {}

const RtValue &Executor::get(Value value) const {
  auto it = env.find(value.getAsOpaquePointer());
  assert(it != env.end() && "value used before its definition was executed");
  return it->second;
}

void Executor::set(Value value, RtValue rt) {
  env[value.getAsOpaquePointer()] = std::move(rt);
}

LogicalResult Executor::fail(Operation *op, const Twine &message) {
  errorText = (message + " at " + formatLoc(op->getLoc()) + " (program (" +
               Twine(pid[0]) + ", " + Twine(pid[1]) + ", " + Twine(pid[2]) +
               ") of kernel '" + kernel.getSymName() + "')")
                  .str();
  return failure();
}

LogicalResult Executor::failType(Operation *op, Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName() << "' on type " << type
     << " is not supported by the interpreter";
  return fail(op, text);
}

LogicalResult Executor::runProgram(std::array<int64_t, 3> programId,
                                   ArrayRef<RtValue> args) {
  env.clear();
  pid = programId;
  std::vector<RtValue> results;
  return runRegion(kernel.getBody(), args, results);
}

LogicalResult Executor::runRegion(Region &region, ArrayRef<RtValue> args,
                                  std::vector<RtValue> &results) {
  Operation *parent = region.getParentOp();
  if (!region.hasOneBlock())
    return fail(parent, "regions of several blocks (unstructured control "
                        "flow) are not supported by the interpreter");
  Block &block = region.front();
  if (block.getNumArguments() != args.size())
    return fail(parent, "region expects " + Twine(block.getNumArguments()) +
                            " arguments, got " + Twine(args.size()));
  for (auto [arg, value] : llvm::zip(block.getArguments(), args))
    set(arg, value);
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      if (!isa<func::ReturnOp, scf::YieldOp, ts::YieldOp>(op))
        return fail(&op, "unsupported terminator '" +
                             op.getName().getStringRef() + "'");
      results.clear();
      for (Value v : op.getOperands())
        results.push_back(get(v));
      return success();
    }
    if (failed(exec(&op)))
      return failure();
  }
  return fail(parent, "region has no terminator");
}

LogicalResult Executor::exec(Operation *op) {
  for (auto family :
       {&Executor::execControlFlow, &Executor::execElementwise,
        &Executor::execTileOp, &Executor::execMemoryOp, &Executor::execOnlineOp,
        &Executor::execStreamK, &Executor::execClusterOp})
    if (OptResult result = (this->*family)(op))
      return *result;
  return fail(op, "unsupported op '" + op->getName().getStringRef() + "'");
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

void Executor::setResults(Operation *op, std::vector<RtValue> &values) {
  for (auto [result, value] : llvm::zip(op->getResults(), values))
    set(result, std::move(value));
}

Executor::OptResult Executor::execControlFlow(Operation *op) {
  if (isa<scf::ForOp>(op))
    return runFor(op);
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    bool cond = get(ifOp.getCondition()).ints[0] & 1;
    Region &region = cond ? ifOp.getThenRegion() : ifOp.getElseRegion();
    if (region.empty()) // An absent else of an if without results.
      return success();
    std::vector<RtValue> results;
    if (failed(runRegion(region, {}, results)))
      return failure();
    setResults(op, results);
    return success();
  }
  if (isa<func::CallOp>(op))
    return runCall(op);
  return std::nullopt;
}

LogicalResult Executor::runFor(Operation *op) {
  auto forOp = cast<scf::ForOp>(op);
  unsigned width = ElemType::get(forOp.getInductionVar().getType())->width;
  bool isUnsigned = forOp.getUnsignedCmp();
  auto read = [&](Value v) {
    int64_t i = get(v).ints[0];
    return isUnsigned ? static_cast<int64_t>(asUnsigned(i, width))
                      : asSigned(i, width);
  };
  int64_t lb = read(forOp.getLowerBound()), ub = read(forOp.getUpperBound());
  int64_t step = read(forOp.getStep());
  if (step <= 0)
    return fail(op, "scf.for step must be positive, got " + Twine(step));
  std::vector<RtValue> carried;
  for (Value init : forOp.getInitArgs())
    carried.push_back(get(init));
  // The induction variable is computed in 64 bits and the loop stops before
  // iv + step could pass the upper bound, so it never wraps.
  for (int64_t iv = lb; iv < ub; iv += step) {
    std::vector<RtValue> args = {RtValue::intScalar(wrapInt(iv, width))};
    args.insert(args.end(), carried.begin(), carried.end());
    if (failed(runRegion(forOp.getRegion(), args, carried)))
      return failure();
    if (ub - iv <= step)
      break;
  }
  setResults(op, carried);
  return success();
}

/// Helpers are normally inlined by the front end; a remaining call runs the
/// callee's body. Values live in one environment keyed by SSA value, so a
/// recursive call would overwrite its caller's values: it is an error.
LogicalResult Executor::runCall(Operation *op) {
  auto call = cast<func::CallOp>(op);
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      op, call.getCalleeAttr());
  if (!callee || callee.isExternal())
    return fail(op, "call to '" + call.getCallee() +
                        "', which has no body in the module");
  if (llvm::is_contained(activeCalls, callee.getOperation()))
    return fail(op, "recursive call to '" + call.getCallee() +
                        "' is not supported by the interpreter");
  std::vector<RtValue> args, results;
  for (Value v : call.getOperands())
    args.push_back(get(v));
  activeCalls.push_back(callee);
  LogicalResult result = runRegion(callee.getBody(), args, results);
  activeCalls.pop_back();
  if (failed(result))
    return failure();
  setResults(op, results);
  return success();
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

/// "parameter #2 'n' (i32) of kernel 'add'": the name comes from a NameLoc
/// on the block argument, when the front end gives one.
static std::string describeParam(func::FuncOp kernel, unsigned index) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "parameter #" << index;
  if (auto name = dyn_cast<NameLoc>(kernel.getArgument(index).getLoc()))
    os << " '" << name.getName().strref() << "'";
  os << " (" << kernel.getArgumentTypes()[index] << ") of kernel '"
     << kernel.getSymName() << "'";
  return text;
}

static const char *kindName(KernelArg::Kind kind) {
  switch (kind) {
  case KernelArg::Kind::Buffer:
    return "a buffer";
  case KernelArg::Kind::Int:
    return "an integer";
  case KernelArg::Kind::Float:
    return "a float";
  }
  return "?";
}

/// Converts one argument to its runtime value, or explains why it does not
/// fit the parameter.
static std::optional<std::string> bindArg(func::FuncOp kernel, unsigned index,
                                          const KernelArg &arg,
                                          const Memory &memory, RtValue &out) {
  Type type = kernel.getArgumentTypes()[index];
  auto mismatch = [&](const Twine &what) {
    return (describeParam(kernel, index) + " " + what).str();
  };
  std::optional<ElemType> elem = ElemType::get(type);
  if (!elem || isa<ts::TileType>(type))
    return mismatch("has a type the interpreter cannot pass");
  if (elem->kind == ElemKind::Ptr) {
    if (arg.kind != KernelArg::Kind::Buffer)
      return mismatch(Twine("needs a buffer, got ") + kindName(arg.kind));
    if (!memory.isValid(arg.buffer))
      return mismatch("got buffer #" + Twine(arg.buffer) +
                      ", which does not exist");
    DType want = *dtypeOf(cast<ts::PtrType>(type).getPointeeType());
    if (memory.dtype(arg.buffer) != want)
      return mismatch("got buffer #" + Twine(arg.buffer) + " of " +
                      dtypeName(memory.dtype(arg.buffer)));
    out = RtValue::lanes(ElemKind::Ptr, {});
    out.ptrs[0] = {arg.buffer, 0};
    return std::nullopt;
  }
  if (elem->kind == ElemKind::Int) {
    if (arg.kind != KernelArg::Kind::Int)
      return mismatch(Twine("needs an integer, got ") + kindName(arg.kind));
    // Accept the signed or the unsigned reading of the width.
    int64_t v = arg.intValue;
    bool fits = elem->width >= 64 || (v >= -(int64_t(1) << (elem->width - 1)) &&
                                      v < (int64_t(1) << elem->width));
    if (elem->width == 1)
      fits = v == 0 || v == 1;
    if (!fits)
      return mismatch("got " + Twine(v) + ", which does not fit");
    // As on the GPU, a broken hint stops the launch. (The interpreter's
    // pointers are buffers, without addresses to check.)
    int64_t value = wrapInt(v, elem->width);
    int64_t multiple = ts::getMultipleOf(kernel, index);
    if (multiple && value % multiple != 0)
      return mismatch("got " + Twine(value) + ", which is not a multiple of " +
                      Twine(multiple) + " (multiple_of in the kernel source)");
    out = RtValue::intScalar(value);
    return std::nullopt;
  }
  if (arg.kind == KernelArg::Kind::Buffer)
    return mismatch("needs a number, got a buffer");
  double v = arg.kind == KernelArg::Kind::Int
                 ? static_cast<double>(arg.intValue)
                 : arg.floatValue;
  out = RtValue::lanes(ElemKind::Float, {});
  out.floats[0] = roundFloat(elem->format, v);
  return std::nullopt;
}

/// Runs every program of `grid` in descending order (see the file comment),
/// cluster by cluster with tessel.cluster (see Cluster.h).
static LogicalResult runGrid(func::FuncOp kernel, ArrayRef<RtValue> values,
                             const std::array<int64_t, 3> &grid,
                             int64_t programs, Memory &memory,
                             std::string &error) {
  int64_t gx = grid[0], gy = grid[1], size = 1;
  if (auto attr = kernel->getAttrOfType<IntegerAttr>(
          ts::TesselDialect::getClusterAttrName()))
    size = attr.getInt();
  if (gx % size != 0) {
    error = "grid of kernel '" + kernel.getSymName().str() + "' has " +
            std::to_string(gx) +
            " programs along x, not a multiple of its "
            "cluster of " +
            std::to_string(size);
    return failure();
  }
  std::vector<Executor> executors;
  executors.reserve(size);
  for (int64_t rank = 0; rank < size; ++rank)
    executors.emplace_back(memory, kernel, grid);
  for (int64_t first = programs - size; first >= 0; first -= size) {
    ClusterRun cluster(size);
    auto program = [&](int64_t rank, std::string &why) {
      int64_t linear = first + rank;
      std::array<int64_t, 3> pid = {linear % gx, (linear / gx) % gy,
                                    linear / (gx * gy)};
      Executor &executor = executors[rank];
      executor.joinCluster(&cluster, rank);
      if (succeeded(executor.runProgram(pid, values)))
        return success();
      why = executor.error();
      return failure();
    };
    if (failed(cluster.run(program, error)))
      return failure();
  }
  return success();
}

/// The programs of `grid`, or -1 (with the reason in `error`, for kernel
/// `name`) for a grid no launch takes: program ids are i32 and stream-K's
/// split is exact below 2^31 programs.
static int64_t countPrograms(const std::array<int64_t, 3> &grid,
                             const std::string &name, std::string *error) {
  int64_t programs = 1;
  for (int64_t dim : grid) {
    if (dim < 0 || dim > INT32_MAX) {
      if (error)
        *error = "grid of kernel '" + name +
                 "' must have sizes in [0, 2^31), got " + std::to_string(dim);
      return -1;
    }
    programs = std::min<int64_t>(programs * dim, int64_t(INT32_MAX) + 1);
  }
  if (programs > INT32_MAX) {
    if (error)
      *error = "grid of kernel '" + name + "' has more than 2^31 - 1 programs";
    return -1;
  }
  return programs;
}

ArrayRef<int64_t> getWorkspaceSizes(func::FuncOp kernel) {
  if (auto sizes = kernel->getAttrOfType<DenseI64ArrayAttr>(
          ts::TesselDialect::getWorkspaceAttrName()))
    return sizes.asArrayRef();
  return {};
}

void allocateWorkspaces(func::FuncOp kernel, const std::array<int64_t, 3> &grid,
                        Memory &memory, std::vector<KernelArg> &args) {
  int64_t programs = std::max<int64_t>(countPrograms(grid, "", nullptr), 0);
  ArrayRef<int64_t> sizes = getWorkspaceSizes(kernel);
  ArrayRef<Type> types = kernel.getArgumentTypes().take_back(sizes.size());
  for (auto [perProgram, type] : llvm::zip(sizes, types))
    args.push_back(KernelArg::ofBuffer(
        memory.allocate(*dtypeOf(cast<ts::PtrType>(type).getPointeeType()),
                        perProgram * programs)));
}

LogicalResult runKernel(func::FuncOp kernel, ArrayRef<KernelArg> args,
                        const LaunchConfig &config, Memory &memory,
                        std::string &error) {
  error.clear();
  std::string name = kernel.getSymName().str();
  if (func::FuncOp lead = ts::getLeadingKernel(kernel)) {
    error = "kernel '" + name + "' runs after kernel '" +
            lead.getSymName().str() + "' (its tessel.then); run '" +
            lead.getSymName().str() + "'";
    return failure();
  }
  if (kernel.isExternal()) {
    error = "kernel '" + name + "' has no body";
    return failure();
  }
  if (kernel.getNumArguments() != args.size()) {
    error = "kernel '" + name + "' expects " +
            std::to_string(kernel.getNumArguments()) + " arguments, got " +
            std::to_string(args.size());
    return failure();
  }
  int64_t programs = countPrograms(config.grid, name, &error);
  if (programs < 0)
    return failure();
  std::vector<RtValue> values(args.size());
  for (unsigned i = 0; i < args.size(); ++i)
    if (std::optional<std::string> why =
            bindArg(kernel, i, args[i], memory, values[i])) {
      error = *why;
      return failure();
    }

  if (failed(runGrid(kernel, values, config.grid, programs, memory, error)))
    return failure();
  // A follow-up (split-K's combine kernel) runs next on the same programs,
  // arguments and workspace, as the runtime launches it.
  if (func::FuncOp next = ts::getFollowUpKernel(kernel))
    return runGrid(next, values, config.grid, programs, memory, error);
  return success();
}

} // namespace tessel
