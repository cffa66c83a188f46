//===- Executor.h - Runtime values and the op executor (internal) -*- C++ -*-=//
//
// Runtime values and the executor of one kernel launch. The executor's
// methods are spread over the files of this directory by op family:
// Interpreter.cpp (driver, control flow), Elementwise.cpp, TileOps.cpp,
// MemoryOps.cpp, OnlineOps.cpp, StreamK.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_INTERPRETER_EXECUTOR_H
#define TESSEL_LIB_INTERPRETER_EXECUTOR_H

#include "Numerics.h"
#include "tessel/Interpreter.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessel::detail {

class ClusterRun;

struct PtrLane {
  int32_t buffer = -1;
  int64_t offset = 0; // In elements.
};

/// One lane of any element kind; only the member of its kind is meaningful.
struct Lane {
  int64_t i = 0;
  double f = 0;
  PtrLane p;
};

enum class ElemKind { Int, Float, Ptr };

/// What the executor needs to know about a scalar type (or the element type
/// of a tile): integers by width (index is 64), floats by format.
struct ElemType {
  ElemKind kind = ElemKind::Int;
  unsigned width = 0;
  FloatFormat format = FloatFormat::F32;

  /// Of a scalar, pointer or tile type; nullopt for anything else.
  static std::optional<ElemType> get(mlir::Type type);
};

/// Online-softmax state: row max m, row sum l, accumulator acc (row-major).
struct SoftmaxStateValue {
  int64_t rows = 0, cols = 0;
  std::vector<double> m, l, acc;
};

/// Coupled-KL state, per row (s = teacher, t = student).
struct KLStateValue {
  std::vector<double> ms, ls, mt, lt, a;
};

/// A runtime value. Scalars and tiles are lanes (a scalar is one lane with an
/// empty shape) kept in the vector of their element kind; floats are already
/// rounded to their type, integers wrapped to their width. States are
/// immutable once built, so copies share them.
struct RtValue {
  std::vector<int64_t> shape;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<PtrLane> ptrs;
  std::shared_ptr<const SoftmaxStateValue> softmax;
  std::shared_ptr<const KLStateValue> kl;

  /// Zero lanes of `kind` for `shape`.
  static RtValue lanes(ElemKind kind, llvm::ArrayRef<int64_t> shape);
  static RtValue intScalar(int64_t v);
  size_t numLanes() const;
  Lane lane(ElemKind kind, size_t index) const;
  void setLane(ElemKind kind, size_t index, const Lane &lane);
};

/// The lanes of one memory access: pointers, optional mask, their shape.
struct Access {
  const RtValue *ptrs;
  const RtValue *mask;
  llvm::ArrayRef<int64_t> shape;

  bool active(size_t lane) const { return !mask || (mask->ints[lane] & 1); }
};

/// The shape of a tile type; empty for anything else.
llvm::ArrayRef<int64_t> shapeOf(mlir::Type type);
/// Number of elements of a shape (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// "[3, 5]": the multi-index of row-major lane `flat` of `shape`.
std::string laneName(llvm::ArrayRef<int64_t> shape, size_t flat);
/// "file.tsl:12:5" for a file location; see the definition for the others.
std::string formatLoc(mlir::Location loc);
/// IEEE maximum/minimum: NaN if either is NaN, +0 above -0.
double maximumF(double a, double b);
double minimumF(double a, double b);

/// Executes one kernel launch, program by program.
class Executor {
public:
  Executor(Memory &memory, mlir::func::FuncOp kernel,
           std::array<int64_t, 3> grid);

  mlir::LogicalResult runProgram(std::array<int64_t, 3> pid,
                                 llvm::ArrayRef<RtValue> args);
  const std::string &error() const { return errorText; }
  /// Makes the next programs CTA `rank` of `cluster` (every program belongs
  /// to one, of one CTA without tessel.cluster).
  void joinCluster(ClusterRun *run, int64_t rank) {
    cluster = run;
    clusterRank = rank;
  }

  /// Runs the single block of `region` with `args` bound to its arguments;
  /// `results` receives the operands of its terminator.
  mlir::LogicalResult runRegion(mlir::Region &region,
                                llvm::ArrayRef<RtValue> args,
                                std::vector<RtValue> &results);

private:
  using LaneFn =
      llvm::function_ref<bool(llvm::ArrayRef<Lane>, Lane &, std::string &)>;
  using OptResult = std::optional<mlir::LogicalResult>;

  const RtValue &get(mlir::Value value) const;
  void set(mlir::Value value, RtValue rt);
  /// Records `message` with the op's location and the program; returns
  /// failure() so that callers can `return fail(...)`.
  mlir::LogicalResult fail(mlir::Operation *op, const llvm::Twine &message);
  /// `fail` for a type the interpreter does not handle.
  mlir::LogicalResult failType(mlir::Operation *op, mlir::Type type);

  mlir::LogicalResult exec(mlir::Operation *op);
  // Each family returns nullopt for ops that are not its own.
  OptResult execControlFlow(mlir::Operation *op); // Interpreter.cpp
  OptResult execElementwise(mlir::Operation *op); // Elementwise.cpp
  OptResult execTileOp(mlir::Operation *op);      // TileOps.cpp
  OptResult execMemoryOp(mlir::Operation *op);    // MemoryOps.cpp
  OptResult execOnlineOp(mlir::Operation *op);    // OnlineOps.cpp
  OptResult execStreamK(mlir::Operation *op);     // StreamK.cpp
  OptResult execClusterOp(mlir::Operation *op);   // Cluster.cpp

  void setResults(mlir::Operation *op, std::vector<RtValue> &values);
  mlir::LogicalResult runFor(mlir::Operation *op);
  mlir::LogicalResult runCall(mlir::Operation *op);

  /// Sets the op's single result to fn applied lane by lane to its operands
  /// (all of the result's shape; a one-lane operand is broadcast). fn
  /// returns false with a reason to stop with an error naming the lane.
  mlir::LogicalResult mapLanes(mlir::Operation *op, LaneFn fn);
  mlir::LogicalResult execConstant(mlir::Operation *op);
  mlir::LogicalResult execSelect(mlir::Operation *op);

  Access accessOf(mlir::Value ptr, mlir::Value mask);
  mlir::LogicalResult execLoad(mlir::Operation *op);
  mlir::LogicalResult execMakeTensorDesc(mlir::Operation *op);
  mlir::LogicalResult execLoadBlock(mlir::Operation *op);
  mlir::LogicalResult execStore(mlir::Operation *op);
  mlir::LogicalResult execAtomicAdd(mlir::Operation *op);
  mlir::LogicalResult execFlag(mlir::Operation *op, bool signal);

  mlir::LogicalResult runStreamKUnit(mlir::Operation *op, int64_t unit,
                                     int64_t iters, int64_t total, int64_t used,
                                     int64_t bodyIters,
                                     std::optional<int64_t> live);

  Memory &memory;
  mlir::func::FuncOp kernel;
  std::array<int64_t, 3> grid;
  std::array<int64_t, 3> pid = {0, 0, 0};
  ClusterRun *cluster = nullptr;
  int64_t clusterRank = 0;
  std::unordered_map<const void *, RtValue> env;
  llvm::SmallVector<mlir::Operation *> activeCalls;
  std::string errorText;
};

} // namespace tessel::detail

#endif // TESSEL_LIB_INTERPRETER_EXECUTOR_H
