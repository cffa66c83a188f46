//===- TestUtils.h - Parse and run hand-written kernels ---------*- C++ -*-===//

#ifndef TESSEL_TEST_UNIT_INTERPRETER_TESTUTILS_H
#define TESSEL_TEST_UNIT_INTERPRETER_TESTUTILS_H

#include "tessel/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <array>
#include <functional>
#include <string>
#include <vector>

namespace tessel::test {

/// A parsed and verified module of kernels, with the memory they run on.
class TestModule {
public:
  explicit TestModule(const std::string &source);
  /// Empty when the module parsed and verified; the diagnostics otherwise.
  const std::string &parseErrors() const { return diagnostics; }

  /// A zero-filled buffer, or one holding `values` (rounded to the type).
  int buffer(DType type, size_t n);
  int buffer(DType type, const std::vector<double> &values);

  /// Runs tessel-expand-online, then tessel-lower-stream-k if asked;
  /// returns "" on success.
  std::string lower(bool streamK);

  /// The kernel called `name`, or null.
  mlir::func::FuncOp kernel(const std::string &name);

  /// Runs kernel `name`; returns "" on success, the error otherwise.
  std::string run(const std::string &name, const std::vector<KernelArg> &args,
                  std::array<int64_t, 3> grid = {1, 1, 1});

  Memory memory;

private:
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string diagnostics;
};

/// Allocates a kernel's buffers in a module's memory and returns its args.
using Setup = std::function<std::vector<KernelArg>(TestModule &)>;

/// Runs `kernel` of `source` as written and after tessel-expand-online, each
/// on buffers made by `setup`, and expects every buffer to end bit for bit
/// the same: the interpreter's online ops compute exactly what their
/// expansion into tile arithmetic computes.
void expectSameAfterExpansion(const std::string &source,
                              const std::string &kernel, const Setup &setup,
                              std::array<int64_t, 3> grid = {1, 1, 1});

/// The same after tessel-expand-online and tessel-lower-stream-k, whose
/// kernel gets zeroed workspace and flag buffers as `tessel.workspace` says.
/// The flags must end cleared. Merges happen in the same order, so the
/// results are bit for bit those of the stream_k op.
void expectSameAfterLowering(const std::string &source,
                             const std::string &kernel, const Setup &setup,
                             std::array<int64_t, 3> grid);

/// "!tessel.tile<4x8xf32>".
std::string tileType(const std::vector<int64_t> &shape, const std::string &elt);
/// MLIR lines defining %NAME : tile<ROWSxCOLSxi32> = r * stride + c, for
/// r < rows, c < cols (row-major offsets of a 2-D block).
std::string offsets2D(const std::string &name, int64_t rows, int64_t cols,
                      int64_t stride);
/// MLIR lines defining %NAME = splat(%BASE) + %OFFSETS, a tile of pointers
/// to ELT of `shape`.
std::string pointers(const std::string &name, const std::string &base,
                     const std::string &offsets,
                     const std::vector<int64_t> &shape, const std::string &elt);

/// softmax(S)·V and the log-sum-exp of each row of S (rows × n, -inf for
/// masked entries), V n × cols, in double. Fully masked rows give o = 0 and
/// lse = -inf.
void referenceSoftmax(const double *s, const double *v, int rows, int n,
                      int cols, double *o, double *lse);

inline KernelArg buf(int id) { return KernelArg::ofBuffer(id); }
inline KernelArg i(int64_t v) { return KernelArg::ofInt(v); }
inline KernelArg f(double v) { return KernelArg::ofFloat(v); }

} // namespace tessel::test

#endif // TESSEL_TEST_UNIT_INTERPRETER_TESTUTILS_H
