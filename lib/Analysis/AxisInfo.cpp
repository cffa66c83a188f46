//===- AxisInfo.cpp - Contiguity, divisibility, constancy of tiles --------===//

#include "Analysis/AxisInfo.h"

#include "mlir/Analysis/DataFlow/SparseAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessel;

/// Beyond any offset a kernel computes: what 0 is divisible by.
static constexpr int64_t kMaxDivisor = int64_t(1) << 30;

int64_t mlir::tessel::highestPowerOf2Divisor(int64_t v) {
  if (v == 0)
    return kMaxDivisor;
  return std::min<int64_t>(kMaxDivisor, v & -v);
}

AxisInfo::AxisInfo(DimVector contiguity, DimVector divisibility,
                   DimVector constancy, std::optional<int64_t> constant)
    : contiguity(std::move(contiguity)), divisibility(std::move(divisibility)),
      constancy(std::move(constancy)), constant(constant) {}

AxisInfo AxisInfo::getPessimistic(unsigned rank) {
  DimVector ones(rank, 1);
  return AxisInfo(ones, ones, ones);
}

AxisInfo AxisInfo::join(const AxisInfo &a, const AxisInfo &b) {
  if (!a.isInitialized())
    return b;
  if (!b.isInitialized())
    return a;
  // Powers of two: the gcd is the minimum.
  auto meet = [](const DimVector &x, const DimVector &y) {
    DimVector r;
    for (auto [u, v] : llvm::zip_equal(x, y))
      r.push_back(std::min(u, v));
    return r;
  };
  std::optional<int64_t> constant;
  if (a.constant == b.constant)
    constant = a.constant;
  return AxisInfo(meet(a.contiguity, b.contiguity),
                  meet(a.divisibility, b.divisibility),
                  meet(a.constancy, b.constancy), constant);
}

void AxisInfo::print(raw_ostream &os) const {
  auto list = [&](StringRef name, const DimVector &v) {
    os << name << " = [";
    llvm::interleaveComma(v, os);
    os << "]";
  };
  list("contiguity", contiguity);
  os << ", ";
  list("divisibility", divisibility);
  os << ", ";
  list("constancy", constancy);
  if (constant)
    os << ", constant = " << *constant;
}

namespace {

using AxisInfoLattice = dataflow::Lattice<AxisInfo>;

/// Dimensions of a value as the analysis sees it: a scalar has one.
static ArrayRef<int64_t> shapeOf(Value v) {
  static const int64_t one[] = {1};
  if (auto tile = dyn_cast<TileType>(v.getType()))
    return tile.getShape();
  return one;
}

/// Bytes of the elements a pointer (or tile of pointers) points to.
static int64_t pointeeBytes(Type type) {
  Type pointee = cast<PtrType>(getElementTypeOrSelf(type)).getPointeeType();
  return std::max(1u, pointee.getIntOrFloatBitWidth() / 8);
}

/// The facts about a + b, with b's values (and divisibilities) scaled by
/// `scaleB` (an addptr's element size).
static AxisInfo addInfo(const AxisInfo &a, const AxisInfo &b, int64_t scaleB,
                        bool subtract) {
  AxisInfo::DimVector contiguity, divisibility, constancy;
  for (unsigned d = 0; d < a.getRank(); ++d) {
    // Runs of +1 survive where the other side is constant over them (a
    // subtracted run steps by -1).
    int64_t fromA = std::min(a.getContiguity(d), b.getConstancy(d));
    int64_t fromB =
        subtract ? 1 : std::min(a.getConstancy(d), b.getContiguity(d));
    int64_t c = std::max(fromA, fromB);
    int64_t divA = a.getElementDivisibility(d);
    int64_t divB = std::min(kMaxDivisor, b.getElementDivisibility(d) * scaleB);
    int64_t v = std::min(divA, divB);
    if (c > 1) {
      // A chunk starts where the contiguous side starts.
      int64_t startB = std::min(kMaxDivisor, b.getDivisibility(d) * scaleB);
      v = fromA >= fromB ? std::min(a.getDivisibility(d), divB)
                         : std::min(divA, startB);
    }
    contiguity.push_back(c);
    divisibility.push_back(v);
    constancy.push_back(std::min(a.getConstancy(d), b.getConstancy(d)));
  }
  std::optional<int64_t> constant;
  if (a.getConstantValue() && b.getConstantValue())
    constant = subtract
                   ? *a.getConstantValue() - *b.getConstantValue()
                   : *a.getConstantValue() + *b.getConstantValue() * scaleB;
  if (constant)
    std::fill(divisibility.begin(), divisibility.end(),
              highestPowerOf2Divisor(*constant));
  return AxisInfo(contiguity, divisibility, constancy, constant);
}

static AxisInfo mulInfo(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo::DimVector contiguity, divisibility, constancy;
  bool aIsOne = a.getConstantValue() == 1, bIsOne = b.getConstantValue() == 1;
  for (unsigned d = 0; d < a.getRank(); ++d) {
    int64_t c = bIsOne ? a.getContiguity(d) : aIsOne ? b.getContiguity(d) : 1;
    int64_t v = bIsOne ? a.getDivisibility(d)
                : aIsOne
                    ? b.getDivisibility(d)
                    : std::min(kMaxDivisor, a.getElementDivisibility(d) *
                                                b.getElementDivisibility(d));
    contiguity.push_back(c);
    divisibility.push_back(v);
    constancy.push_back(std::min(a.getConstancy(d), b.getConstancy(d)));
  }
  std::optional<int64_t> constant;
  if (a.getConstantValue() && b.getConstantValue())
    constant = *a.getConstantValue() * *b.getConstantValue();
  return AxisInfo(contiguity, divisibility, constancy, constant);
}

/// Whether every value of `v` is >= 0, from how it is made: aranges,
/// grid queries, non-negative constants and the sums, products, quotients
/// and remainders of such values (what index tiles are built from).
static bool isNonNegative(Value v, unsigned depth = 0) {
  if (depth > 8)
    return false;
  Operation *op = v.getDefiningOp();
  if (!op)
    return false;
  auto all = [&](ValueRange operands) {
    return llvm::all_of(operands,
                        [&](Value x) { return isNonNegative(x, depth + 1); });
  };
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case([](arith::ConstantOp c) {
        auto i = dyn_cast<IntegerAttr>(c.getValue());
        return i && !i.getValue().isNegative();
      })
      .Case([](ArangeOp a) { return a.getStart() >= 0; })
      .Case<ProgramIdOp, NumProgramsOp>([](Operation *) { return true; })
      .Case<SplatOp, BroadcastOp, ExpandDimsOp, ConvertLayoutOp, TransOp,
            ReshapeOp, arith::ExtUIOp, arith::IndexCastOp>(
          [&](Operation *op) { return all(op->getOperand(0)); })
      .Case<arith::AddIOp, arith::MulIOp, arith::DivSIOp, arith::RemSIOp,
            arith::MaxSIOp, arith::MinSIOp>(
          [&](Operation *op) { return all(op->getOperands()); })
      .Case([&](BinaryOp b) {
        switch (b.getKind()) {
        case BinaryKind::add:
        case BinaryKind::mul:
        case BinaryKind::div:
        case BinaryKind::rem:
        case BinaryKind::max:
        case BinaryKind::min:
          return all(b->getOperands());
        default:
          return false;
        }
      })
      .Default([](Operation *) { return false; });
}

/// The facts about x / c or x % c (truncating, integers) for x >= 0 and a
/// power of two c > 0: a chunk of q consecutive values starting at a multiple
/// of q, q dividing c, lies within one multiple of c, so its quotients are
/// equal and its remainders consecutive. Nothing is known otherwise.
static AxisInfo divRemInfo(Value x, const AxisInfo &a, const AxisInfo &b,
                           bool rem) {
  unsigned rank = a.getRank();
  std::optional<int64_t> c = b.getConstantValue();
  if (!c || *c <= 0 || (*c & (*c - 1)) || !isNonNegative(x))
    return AxisInfo::getPessimistic(rank);
  if (*c == 1)
    return rem ? AxisInfo(AxisInfo::DimVector(rank, 1),
                          AxisInfo::DimVector(rank, kMaxDivisor),
                          AxisInfo::DimVector(shapeOf(x)), 0)
               : a;
  AxisInfo::DimVector contiguity, divisibility, constancy;
  for (unsigned d = 0; d < rank; ++d) {
    int64_t q = a.getContiguity(d) > 1
                    ? std::min({a.getContiguity(d), a.getDivisibility(d), *c})
                    : 1;
    int64_t every = a.getElementDivisibility(d);
    if (rem) {
      contiguity.push_back(q);
      divisibility.push_back(q > 1 ? q : std::min(every, *c));
      constancy.push_back(a.getConstancy(d));
    } else {
      contiguity.push_back(1);
      divisibility.push_back(std::max<int64_t>(1, every / *c));
      constancy.push_back(std::max(a.getConstancy(d), q));
    }
  }
  std::optional<int64_t> constant;
  if (a.getConstantValue())
    constant = rem ? *a.getConstantValue() % *c : *a.getConstantValue() / *c;
  return AxisInfo(contiguity, divisibility, constancy, constant);
}

/// Equal where every operand is, nothing more.
static AxisInfo constancyOnly(ArrayRef<AxisInfo> operands) {
  unsigned rank = operands.front().getRank();
  AxisInfo::DimVector ones(rank, 1), constancy(rank, kMaxDivisor),
      divisibility(rank, kMaxDivisor);
  for (const AxisInfo &x : operands)
    for (unsigned d = 0; d < rank; ++d) {
      constancy[d] = std::min(constancy[d], x.getConstancy(d));
      divisibility[d] = std::min(divisibility[d], x.getElementDivisibility(d));
    }
  return AxisInfo(ones, divisibility, constancy);
}

/// A comparison of a run of consecutive values against values constant
/// over it flips at most once; aligned groups of p values whose start and
/// threshold are both multiples of p compare alike.
static AxisInfo compareInfo(const AxisInfo &a, const AxisInfo &b,
                            bool ordered) {
  AxisInfo result = constancyOnly({a, b});
  AxisInfo::DimVector contiguity(a.getRank(), 1), divisibility(a.getRank(), 1),
      constancy;
  for (unsigned d = 0; d < a.getRank(); ++d) {
    int64_t k = result.getConstancy(d);
    if (ordered) {
      auto groups = [](const AxisInfo &run, const AxisInfo &fixed, unsigned d) {
        int64_t p =
            std::min({run.getContiguity(d), fixed.getConstancy(d),
                      run.getDivisibility(d), fixed.getElementDivisibility(d)});
        return run.getContiguity(d) > 1 ? p : 1;
      };
      k = std::max({k, groups(a, b, d), groups(b, a, d)});
    }
    constancy.push_back(k);
  }
  return AxisInfo(contiguity, divisibility, constancy);
}

/// Choosing between two runs by a condition constant over them keeps what
/// both runs share; element by element, every value is one of theirs,
/// whatever the condition (a loop bound a select picks keeps its operands'
/// alignment).
static AxisInfo selectInfo(const AxisInfo &cond, const AxisInfo &a,
                           const AxisInfo &b) {
  AxisInfo result = constancyOnly({cond, a, b});
  AxisInfo::DimVector contiguity, divisibility, constancy;
  for (unsigned d = 0; d < a.getRank(); ++d) {
    int64_t c = std::min(
        {a.getContiguity(d), b.getContiguity(d), cond.getConstancy(d)});
    contiguity.push_back(c);
    divisibility.push_back(
        c > 1 ? std::min(a.getDivisibility(d), b.getDivisibility(d))
              : std::min(a.getElementDivisibility(d),
                         b.getElementDivisibility(d)));
    constancy.push_back(result.getConstancy(d));
  }
  return AxisInfo(contiguity, divisibility, constancy);
}

class AxisInfoAnalysis
    : public dataflow::SparseForwardDataFlowAnalysis<AxisInfoLattice> {
public:
  using SparseForwardDataFlowAnalysis::SparseForwardDataFlowAnalysis;

  void setToEntryState(AxisInfoLattice *lattice) override {
    Value v = lattice->getAnchor();
    propagateIfChanged(lattice, lattice->join(entryState(v)));
  }

  LogicalResult visitOperation(Operation *op,
                               ArrayRef<const AxisInfoLattice *> operands,
                               ArrayRef<AxisInfoLattice *> results) override {
    SmallVector<AxisInfo> in;
    for (const AxisInfoLattice *operand : operands) {
      // Wait until every operand is known.
      if (!operand->getValue().isInitialized())
        return success();
      in.push_back(operand->getValue());
    }
    for (auto [result, lattice] : llvm::zip(op->getResults(), results))
      propagateIfChanged(lattice, lattice->join(transfer(op, in, result)));
    return success();
  }

  void visitNonControlFlowArguments(Operation *op,
                                    const RegionSuccessor &successor,
                                    ArrayRef<AxisInfoLattice *> argLattices,
                                    unsigned firstIndex) override {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || argLattices.empty() ||
        argLattices.front()->getAnchor() != loop.getInductionVar())
      return SparseForwardDataFlowAnalysis::visitNonControlFlowArguments(
          op, successor, argLattices, firstIndex);
    // The induction variable: lb + i·step.
    const AxisInfo &lb =
        getLatticeElementFor(getProgramPointAfter(op), loop.getLowerBound())
            ->getValue();
    const AxisInfo &step =
        getLatticeElementFor(getProgramPointAfter(op), loop.getStep())
            ->getValue();
    AxisInfo iv = AxisInfo::getPessimistic(1);
    if (lb.isInitialized() && step.isInitialized())
      iv = AxisInfo(
          {1}, {std::min(lb.getDivisibility(0), step.getDivisibility(0))}, {1});
    propagateIfChanged(argLattices.front(), argLattices.front()->join(iv));
  }

private:
  static AxisInfo entryState(Value v) {
    AxisInfo pessimistic = AxisInfo::getPessimistic(shapeOf(v).size());
    auto arg = dyn_cast<BlockArgument>(v);
    auto func =
        arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
    if (!func || arg.getOwner() != &func.getBody().front())
      return pessimistic;
    // A pointer is at least aligned to its element; a hint says more.
    int64_t divisor = 1;
    if (isa<PtrType>(v.getType()))
      divisor = pointeeBytes(v.getType());
    if (int64_t hint = getMultipleOf(func, arg.getArgNumber()))
      divisor = std::max(divisor, highestPowerOf2Divisor(hint));
    return AxisInfo({1}, {divisor}, {1});
  }

  static AxisInfo transfer(Operation *op, ArrayRef<AxisInfo> in, Value result) {
    ArrayRef<int64_t> shape = shapeOf(result);
    AxisInfo pessimistic = AxisInfo::getPessimistic(shape.size());
    auto constantInfo = [&](int64_t value) {
      AxisInfo::DimVector ones(shape.size(), 1);
      return AxisInfo(ones, {highestPowerOf2Divisor(value)},
                      AxisInfo::DimVector(shape.begin(), shape.end()), value);
    };
    return llvm::TypeSwitch<Operation *, AxisInfo>(op)
        .Case([&](arith::ConstantOp c) {
          if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
            return constantInfo(i.getInt());
          return pessimistic;
        })
        .Case<arith::AddIOp>(
            [&](auto) { return addInfo(in[0], in[1], 1, false); })
        .Case<arith::SubIOp>(
            [&](auto) { return addInfo(in[0], in[1], 1, true); })
        .Case<arith::MulIOp>([&](auto) { return mulInfo(in[0], in[1]); })
        .Case<arith::DivSIOp, arith::RemSIOp>([&](Operation *op) {
          return divRemInfo(op->getOperand(0), in[0], in[1],
                            isa<arith::RemSIOp>(op));
        })
        .Case<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
              arith::IndexCastOp, ConvertLayoutOp>(
            [&](Operation *) { return in[0]; })
        .Case<arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp>(
            [&](Operation *) { return constancyOnly(in); })
        .Case([&](arith::SelectOp) { return selectInfo(in[0], in[1], in[2]); })
        .Case([&](arith::CmpIOp cmp) {
          auto p = cmp.getPredicate();
          return compareInfo(in[0], in[1],
                             p != arith::CmpIPredicate::eq &&
                                 p != arith::CmpIPredicate::ne);
        })
        .Case([&](ArangeOp arange) {
          return AxisInfo({shape[0]},
                          {highestPowerOf2Divisor(arange.getStart())}, {1});
        })
        .Case([&](SplatOp) {
          AxisInfo::DimVector ones(shape.size(), 1),
              divisibility(shape.size(), in[0].getDivisibility(0));
          return AxisInfo(ones, divisibility,
                          AxisInfo::DimVector(shape.begin(), shape.end()),
                          in[0].getConstantValue());
        })
        .Case([&](BroadcastOp b) {
          ArrayRef<int64_t> from = shapeOf(b.getSrc());
          AxisInfo::DimVector contiguity, divisibility, constancy;
          for (unsigned d = 0; d < shape.size(); ++d) {
            bool grown = from[d] == 1 && shape[d] > 1;
            contiguity.push_back(grown ? 1 : in[0].getContiguity(d));
            divisibility.push_back(in[0].getDivisibility(d));
            constancy.push_back(grown ? shape[d] : in[0].getConstancy(d));
          }
          return AxisInfo(contiguity, divisibility, constancy,
                          in[0].getConstantValue());
        })
        .Case([&](ExpandDimsOp e) {
          AxisInfo::DimVector contiguity, divisibility, constancy;
          int64_t every = kMaxDivisor;
          for (unsigned d = 0; d < in[0].getRank(); ++d) {
            contiguity.push_back(in[0].getContiguity(d));
            divisibility.push_back(in[0].getDivisibility(d));
            constancy.push_back(in[0].getConstancy(d));
            every = std::min(every, in[0].getElementDivisibility(d));
          }
          unsigned axis = e.getAxis();
          contiguity.insert(contiguity.begin() + axis, 1);
          divisibility.insert(divisibility.begin() + axis, every);
          constancy.insert(constancy.begin() + axis, 1);
          return AxisInfo(contiguity, divisibility, constancy,
                          in[0].getConstantValue());
        })
        .Case([&](ReshapeOp) {
          // Row-major: a 1-D tile's runs go on along the last dimension, in
          // chunks that divide its length (so none straddles two rows); a
          // chunk starting inside a source run is aligned to its length.
          // The other dimensions keep what holds of every element.
          if (in[0].getRank() != 1)
            return pessimistic;
          int64_t row = highestPowerOf2Divisor(shape.back());
          int64_t runs = in[0].getContiguity(0);
          int64_t contiguity = std::min(runs, row);
          int64_t divisibility = in[0].getDivisibility(0);
          if (contiguity < runs)
            divisibility = std::min(divisibility, contiguity);
          AxisInfo::DimVector ones(shape.size(), 1),
              every(shape.size(), in[0].getElementDivisibility(0));
          AxisInfo::DimVector contiguities = ones, divisibilities = every,
                              constancies = ones;
          contiguities.back() = contiguity;
          divisibilities.back() = divisibility;
          constancies.back() = std::min(in[0].getConstancy(0), row);
          return AxisInfo(contiguities, divisibilities, constancies,
                          in[0].getConstantValue());
        })
        .Case([&](TransOp t) {
          AxisInfo::DimVector contiguity, divisibility, constancy;
          for (int32_t d : t.getOrder()) {
            contiguity.push_back(in[0].getContiguity(d));
            divisibility.push_back(in[0].getDivisibility(d));
            constancy.push_back(in[0].getConstancy(d));
          }
          return AxisInfo(contiguity, divisibility, constancy,
                          in[0].getConstantValue());
        })
        .Case([&](BinaryOp b) {
          switch (b.getKind()) {
          case BinaryKind::add:
            return addInfo(in[0], in[1], 1, false);
          case BinaryKind::sub:
            return addInfo(in[0], in[1], 1, true);
          case BinaryKind::mul:
            return mulInfo(in[0], in[1]);
          case BinaryKind::div:
          case BinaryKind::rem:
            return divRemInfo(b.getLhs(), in[0], in[1],
                              b.getKind() == BinaryKind::rem);
          case BinaryKind::and_:
          case BinaryKind::or_:
          case BinaryKind::xor_:
          case BinaryKind::shl:
          case BinaryKind::shr:
          case BinaryKind::max:
          case BinaryKind::min:
            return constancyOnly(in);
          default:
            return pessimistic;
          }
        })
        .Case([&](CmpOp c) {
          auto p = c.getPredicate();
          return compareInfo(in[0], in[1],
                             p != CmpPredicate::eq && p != CmpPredicate::ne);
        })
        .Case([&](SelectOp) { return selectInfo(in[0], in[1], in[2]); })
        .Case([&](CastOp c) {
          Type to = getElementTypeOrSelf(c.getType());
          Type from = getElementTypeOrSelf(c.getSrc().getType());
          if (isa<IntegerType>(to) && isa<IntegerType>(from) &&
              !from.isInteger(1))
            return in[0];
          return pessimistic;
        })
        .Case([&](AddPtrOp p) {
          return addInfo(in[0], in[1], pointeeBytes(p.getType()), false);
        })
        // Shared buffers start 16-byte aligned (layoutSharedMemory), at the
        // same offset in every CTA of the cluster.
        .Case([&](SharedBufferOp) { return AxisInfo({1}, {16}, {1}); })
        .Case([&](ClusterMapOp) { return in[0]; })
        .Default([&](Operation *) { return pessimistic; });
  }
};

} // namespace

ModuleAxisInfo::ModuleAxisInfo(Operation *module) {
  dataflow::loadBaselineAnalyses(solver);
  solver.load<AxisInfoAnalysis>();
  (void)solver.initializeAndRun(module);
}

AxisInfo ModuleAxisInfo::get(Value v) const {
  if (auto *lattice = solver.lookupState<AxisInfoLattice>(v))
    if (lattice->getValue().isInitialized())
      return lattice->getValue();
  return AxisInfo::getPessimistic(shapeOf(v).size());
}
