//===- LowerTensorDescs.cpp - Tensor descriptors: tensor maps or pointers -===//
//
// A descriptor the tensor memory accelerator can serve becomes a kernel
// argument (a CUtensorMap the runtime encodes from the launch arguments,
// passed after the kernel's own and before a persistent kernel's workspace
// pointers, the runtime's order): its
// sizes and strides are written as launch expressions, which is why they
// must be computed from the kernel's integer arguments, constants and grid
// size alone. Any other block load becomes the pointer arithmetic and masks
// of an ordinary load:
//   ptrs = base + Σ_d c_d·stride_d + i·stride_r + j·stride_c
//   mask = every dimension's index inside [0, size)
//
//===----------------------------------------------------------------------===//

#include "Analysis/AxisInfo.h"
#include "LoopSlice.h"
#include "tessel/Passes.h"

#include "Conversion/TesselToLLVM/TesselToLLVM.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELLOWERTENSORDESCS
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// `v` as a launch expression (Runtime/Expr.h), or "" when a launch cannot
/// compute it. DSL `//` is C division, the launch's `/` floors: they agree
/// on the non-negative sizes and strides of arrays.
static std::string launchExpr(Value v, func::FuncOp kernel) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != &kernel.getBody().front() ||
        !arg.getType().isSignlessInteger() || arg.getType().isInteger(1))
      return "";
    return getKernelArgName(arg);
  }
  Operation *def = v.getDefiningOp();
  if (!def)
    return "";
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return std::to_string(value.getSExtValue());
  if (auto n = dyn_cast<NumProgramsOp>(def))
    return std::string("grid_") + "xyz"[n.getAxis()];
  if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp>(
          def))
    return launchExpr(def->getOperand(0), kernel);
  const char *symbol = llvm::TypeSwitch<Operation *, const char *>(def)
                           .Case([](arith::AddIOp) { return "+"; })
                           .Case([](arith::SubIOp) { return "-"; })
                           .Case([](arith::MulIOp) { return "*"; })
                           .Case([](arith::DivSIOp) { return "/"; })
                           .Case([](arith::RemSIOp) { return "%"; })
                           .Default(nullptr);
  if (!symbol)
    return "";
  std::string a = launchExpr(def->getOperand(0), kernel);
  std::string b = launchExpr(def->getOperand(1), kernel);
  if (a.empty() || b.empty())
    return "";
  return "(" + a + " " + symbol + " " + b + ")";
}

/// Whether tessel-pipeline can copy `load`'s block with the tensor memory
/// accelerator: outside loops (once), or in the body of an scf.for nested
/// only in scf.for bodies (the loops around carry the count of its earlier
/// iterations, which its barriers' phases continue) with coordinates it can
/// compute iterations ahead. A vector only in such a loop, read through
/// expand_dims on one axis. The innermost coordinate must be known to fall
/// on 16 bytes (`info`): a bulk tensor copy starting elsewhere stops the
/// kernel (an illegal instruction on an H200).
static bool copyable(LoadBlockOp load, const ModuleAxisInfo &info) {
  auto desc = cast<TensorDescType>(load.getDesc().getType());
  int64_t bytes = desc.getElementType().getIntOrFloatBitWidth() / 8;
  if (info.get(load.getCoords().back()).getDivisibility(0) * bytes % 16 != 0)
    return false;
  auto loop = dyn_cast<scf::ForOp>(load->getParentOp());
  // A vector rides in a loop's stages as the tile its expand_dims make.
  if (cast<TileType>(load.getType()).getRank() == 1 &&
      (!loop || !expandedAxis(load)))
    return false;
  if (!loop)
    return !load->getParentOfType<LoopLikeOpInterface>();
  for (Operation *p = loop->getParentOp(); !isa<func::FuncOp>(p);
       p = p->getParentOp())
    if (!isa<scf::ForOp>(p))
      return false;
  SetVector<Operation *> slice;
  return llvm::all_of(load.getCoords(),
                      [&](Value c) { return collectSlice(c, loop, slice); });
}

/// The tensor-map attribute of `make`, or null when it cannot be one
/// (`written`: the arrays `kernel` writes, writtenArrays).
static DictionaryAttr tensorMapOf(MakeTensorDescOp make, func::FuncOp kernel,
                                  const std::optional<DenseSet<Value>> &written,
                                  const ModuleAxisInfo &info) {
  auto base = dyn_cast<BlockArgument>(make.getBase());
  // A kernel with a follow-up (split-K's combine) shares its parameters with
  // it, so it keeps ordinary loads.
  if (!base || base.getOwner() != &kernel.getBody().front() ||
      getFollowUpKernel(kernel) ||
      !getTMABox(cast<TensorDescType>(make.getType())) || !written ||
      written->contains(base) ||
      !llvm::all_of(make->getUsers(), [&](Operation *user) {
        return copyable(cast<LoadBlockOp>(user), info);
      }))
    return {};
  Builder b(make.getContext());
  auto exprs = [&](ValueRange values) -> ArrayAttr {
    SmallVector<Attribute> out;
    for (Value v : values) {
      std::string e = launchExpr(v, kernel);
      if (e.empty())
        return {};
      out.push_back(b.getStringAttr(e));
    }
    return b.getArrayAttr(out);
  };
  ArrayAttr sizes = exprs(make.getShape()), strides = exprs(make.getStrides());
  if (!sizes || !strides)
    return {};
  return b.getDictionaryAttr(
      {b.getNamedAttr("base", b.getI64IntegerAttr(base.getArgNumber())),
       b.getNamedAttr("sizes", sizes), b.getNamedAttr("strides", strides)});
}

/// Builds the ordinary load a block load stands for.
class BlockLoadExpansion {
public:
  BlockLoadExpansion(LoadBlockOp load, MakeTensorDescOp make)
      : b(load), loc(load.getLoc()), load(load), make(make),
        desc(cast<TensorDescType>(make.getType())) {}

  Value build();

private:
  Value i64(Value v) {
    return v.getType().isInteger(64)
               ? v
               : arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
  }
  /// A stride of dimension d: the value, or 1 for the innermost.
  Value stride(unsigned d) {
    if (d + 1 == desc.getRank())
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(1));
    return make.getStrides()[d];
  }
  /// Whether `v` is an i32 value widened (or a constant that fits).
  static std::optional<Value> narrow(Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtSIOp>())
      if (ext.getIn().getType().isInteger(32))
        return ext.getIn();
    return std::nullopt;
  }
  /// Whether indices [c, c + extent) of dimension d are known inside it.
  bool knownInside(unsigned d, Value c, int64_t extent) {
    APInt start, size;
    return matchPattern(c, m_ConstantInt(&start)) &&
           matchPattern(make.getShape()[d], m_ConstantInt(&size)) &&
           start.getSExtValue() >= 0 &&
           start.getSExtValue() + extent <= size.getSExtValue();
  }
  /// i1 scalar: 0 <= x < size (x an i32 index).
  Value inside(Value x, Value size) {
    Value lo = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sge, x,
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
    Value hi =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i64(x), size);
    return arith::AndIOp::create(b, loc, lo, hi);
  }
  TileType tile(ArrayRef<int64_t> shape, Type elem) {
    return TileType::get(shape, elem);
  }
  Value splat(ArrayRef<int64_t> shape, Value scalar) {
    return SplatOp::create(b, loc, tile(shape, scalar.getType()), scalar);
  }
  /// `t` (1-D, along result dimension `axis` of `shape`) broadcast to
  /// `shape`.
  Value spread(Value t, ArrayRef<int64_t> shape, unsigned axis) {
    if (shape.size() == 1)
      return t;
    Type elem = cast<TileType>(t.getType()).getElementType();
    SmallVector<int64_t> unit(shape);
    unit[1 - axis] = 1;
    Value e = ExpandDimsOp::create(b, loc, tile(unit, elem), t,
                                   b.getI32IntegerAttr(1 - axis));
    return BroadcastOp::create(b, loc, tile(shape, elem), e);
  }

  OpBuilder b;
  Location loc;
  LoadBlockOp load;
  MakeTensorDescOp make;
  TensorDescType desc;
};

Value BlockLoadExpansion::build() {
  auto result = cast<TileType>(load.getType());
  ArrayRef<int64_t> shape = result.getShape();
  SmallVector<unsigned> tileDims = desc.getTileDims();
  ValueRange coords = load.getCoords();

  // The block's first element, and whether its unit dimensions are inside.
  Value offset = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value scalarOk;
  for (unsigned d = 0; d < desc.getRank(); ++d) {
    offset = arith::AddIOp::create(
        b, loc, offset,
        arith::MulIOp::create(b, loc, i64(coords[d]), stride(d)));
    if (llvm::is_contained(tileDims, d) || knownInside(d, coords[d], 1))
      continue;
    Value ok = inside(coords[d], make.getShape()[d]);
    scalarOk = scalarOk ? arith::AndIOp::create(b, loc, scalarOk, ok) : ok;
  }
  Value first = AddPtrOp::create(b, loc, make.getBase().getType(),
                                 make.getBase(), offset);

  // Offsets and bounds along the tile's dimensions.
  bool narrowOffsets = llvm::all_of(tileDims, [&](unsigned d) {
    return d + 1 == desc.getRank() || narrow(stride(d)).has_value();
  });
  Type offType = narrowOffsets ? b.getI32Type() : b.getI64Type();
  Value offsets, mask;
  for (auto [axis, d] : llvm::enumerate(tileDims)) {
    int64_t extent = shape[axis];
    Value idx =
        ArangeOp::create(b, loc, tile({extent}, b.getI32Type()),
                         b.getI32IntegerAttr(0), b.getI32IntegerAttr(extent));
    Value s = stride(d);
    if (narrowOffsets)
      s = d + 1 == desc.getRank()
              ? arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1))
              : *narrow(s);
    Value along = narrowOffsets
                      ? idx
                      : CastOp::create(b, loc, tile({extent}, offType), idx);
    if (d + 1 != desc.getRank())
      along =
          BinaryOp::create(b, loc, BinaryKind::mul, along, splat({extent}, s));
    along = spread(along, shape, axis);
    offsets = offsets
                  ? BinaryOp::create(b, loc, BinaryKind::add, offsets, along)
                  : along;
    if (knownInside(d, coords[d], extent))
      continue;
    // 0 <= c + i < size, in i64 so that no size is clipped.
    Value pos = BinaryOp::create(b, loc, BinaryKind::add,
                                 splat({extent}, coords[d]), idx);
    Value pos64 = CastOp::create(b, loc, tile({extent}, b.getI64Type()), pos);
    Type bools = tile({extent}, b.getI1Type());
    Value lo = CmpOp::create(
        b, loc, bools, CmpPredicate::ge, pos,
        splat({extent},
              arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0))));
    Value hi = CmpOp::create(b, loc, bools, CmpPredicate::lt, pos64,
                             splat({extent}, make.getShape()[d]));
    Value ok =
        spread(BinaryOp::create(b, loc, BinaryKind::and_, lo, hi), shape, axis);
    mask = mask ? BinaryOp::create(b, loc, BinaryKind::and_, mask, ok) : ok;
  }
  if (!offsets) // a block of one element
    offsets = splat(
        shape, arith::ConstantOp::create(b, loc, b.getIntegerAttr(offType, 0)));
  if (scalarOk) {
    Value ok = splat(shape, scalarOk);
    mask = mask ? BinaryOp::create(b, loc, BinaryKind::and_, mask, ok) : ok;
  }
  auto ptrs = tile(shape, first.getType());
  Value addresses =
      AddPtrOp::create(b, loc, ptrs, splat(shape, first), offsets);
  Value other;
  if (mask) {
    Type elem = result.getElementType();
    other = splat(shape,
                  arith::ConstantOp::create(b, loc, elem, b.getZeroAttr(elem)));
  }
  return LoadOp::create(b, loc, result, addresses, mask, other);
}

struct LowerTensorDescsPass
    : tessel::impl::TesselLowerTensorDescsBase<LowerTensorDescsPass> {
  void runOnOperation() override {
    // The Hopper path: the copies land where warpgroup MMA reads them.
    bool tma = hasWarpGroupMma(getOperation());
    // Alignment facts only for tensor maps, which only the Hopper path has.
    std::optional<ModuleAxisInfo> info;
    if (tma)
      info.emplace(getOperation());
    for (auto kernel : getOperation().getOps<func::FuncOp>()) {
      if (kernel.isExternal())
        continue;
      SmallVector<MakeTensorDescOp> makes;
      kernel.walk([&](MakeTensorDescOp make) { makes.push_back(make); });
      // Once per kernel: lowering a descriptor adds an argument, not a write.
      std::optional<DenseSet<Value>> written = writtenArrays(kernel);
      for (MakeTensorDescOp make : makes) {
        for (Operation *user : make->getUsers())
          if (!isa<LoadBlockOp>(user)) {
            user->emitError("a tensor descriptor can only be read by "
                            "tessel.load_block here");
            return signalPassFailure();
          }
        if (DictionaryAttr map =
                tma ? tensorMapOf(make, kernel, written, *info) : nullptr) {
          // Before a persistent kernel's workspace pointers, which stay last.
          unsigned index =
              kernel.getNumArguments() - getWorkspaceSlotBytes(kernel).size();
          auto base = cast<BlockArgument>(make.getBase());
          Location loc = NameLoc::get(
              StringAttr::get(&getContext(), getKernelArgName(base) + "_map"),
              make.getLoc());
          if (failed(kernel.insertArgument(index, make.getType(), {}, loc)))
            return signalPassFailure();
          kernel.setArgAttr(index, TesselDialect::getTensorMapAttrName(), map);
          make.replaceAllUsesWith(kernel.getArgument(index));
          make.erase();
          continue;
        }
        for (Operation *user : llvm::make_early_inc_range(make->getUsers())) {
          auto load = cast<LoadBlockOp>(user);
          load.replaceAllUsesWith(BlockLoadExpansion(load, make).build());
          load.erase();
        }
        make.erase();
      }
    }
  }
};

} // namespace
