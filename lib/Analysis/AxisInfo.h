//===- AxisInfo.h - Contiguity, divisibility, constancy of tiles -*- C++
//-*-===//
//
// What the GPU lowering needs to know of integer and pointer tiles to turn a
// thread's run of element accesses into one vector access: along each
// dimension, how long the runs of consecutive values are, how aligned their
// first values are, and how long the runs of equal values are (for masks).
// A sparse forward data-flow analysis over a kernel, seeded by the
// `tessel.multiple_of` hints of its parameters (Triton's AxisInfo).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_ANALYSIS_AXISINFO_H
#define TESSEL_ANALYSIS_AXISINFO_H

#include "tessel/TesselDialect.h"

#include "mlir/Analysis/DataFlowFramework.h"

#include <optional>

namespace mlir::tessel {

/// The facts about the values of a tile along each of its dimensions (a
/// scalar is a tile of one dimension of one element). Split the dimension
/// into aligned chunks of length L (L a power of two, chunk i covering
/// indices [iL, iL + L)):
///  - contiguity c: in every chunk of length c the values step by +1
///    (pointers: by one element);
///  - divisibility v: the first value of every chunk of length c is a
///    multiple of v (pointers: an address aligned to v bytes);
///  - constancy k: in every chunk of length k the values are equal.
/// All three are powers of two; an uninitialised AxisInfo has rank 0.
class AxisInfo {
public:
  using DimVector = SmallVector<int64_t, 2>;

  AxisInfo() = default;
  AxisInfo(DimVector contiguity, DimVector divisibility, DimVector constancy,
           std::optional<int64_t> constant = std::nullopt);
  /// Nothing known: runs of one, alignment 1.
  static AxisInfo getPessimistic(unsigned rank);
  /// What holds of both.
  static AxisInfo join(const AxisInfo &a, const AxisInfo &b);

  bool isInitialized() const { return !contiguity.empty(); }
  unsigned getRank() const { return contiguity.size(); }
  int64_t getContiguity(unsigned d) const { return contiguity[d]; }
  int64_t getDivisibility(unsigned d) const { return divisibility[d]; }
  int64_t getConstancy(unsigned d) const { return constancy[d]; }
  /// The divisibility of every value along `d`, not only of chunk starts.
  int64_t getElementDivisibility(unsigned d) const {
    return contiguity[d] > 1 ? 1 : divisibility[d];
  }
  /// The value of a scalar or a splat, when known.
  std::optional<int64_t> getConstantValue() const { return constant; }

  bool operator==(const AxisInfo &o) const {
    return contiguity == o.contiguity && divisibility == o.divisibility &&
           constancy == o.constancy && constant == o.constant;
  }
  void print(raw_ostream &os) const;

private:
  DimVector contiguity, divisibility, constancy;
  std::optional<int64_t> constant;
};

/// The largest power of two dividing `v` (a large one for 0).
int64_t highestPowerOf2Divisor(int64_t v);

/// The AxisInfo of the values of a module's kernels, computed once on
/// construction; later changes to the IR are not seen.
class ModuleAxisInfo {
public:
  explicit ModuleAxisInfo(Operation *module);
  /// The facts about `v`, pessimistic where the analysis knows nothing.
  AxisInfo get(Value v) const;

private:
  DataFlowSolver solver;
};

} // namespace mlir::tessel

#endif // TESSEL_ANALYSIS_AXISINFO_H
