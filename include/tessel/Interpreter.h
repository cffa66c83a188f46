//===- Interpreter.h - Executes tessel IR on the CPU ------------*- C++ -*-===//
//
// The reference semantics of tessel IR: runs a kernel (a func.func of tessel,
// arith, math and scf ops, as emitted by the front end or after the
// tile-level passes) over its whole grid on the CPU, on buffers held by a
// `Memory`. The GPU code must compute what this computes, up to the rounding
// freedom documented on each op in lib/Interpreter.
//
// Errors (out-of-bounds access, integer division by zero, an op the
// interpreter does not know, bad arguments) are reported as text naming the
// op's source location, never as undefined behaviour or an assert.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_INTERPRETER_H
#define TESSEL_INTERPRETER_H

#include "tessel/Memory.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel {

/// The DType of a scalar MLIR type, if it is one of the six.
std::optional<DType> dtypeOf(mlir::Type type);

struct LaunchConfig {
  /// Programs along x, y, z; each must be >= 0 (0 runs nothing).
  std::array<int64_t, 3> grid = {1, 1, 1};
};

/// Runs `kernel` once per program of the grid, one program after another in
/// descending linear order (x fastest; why: lib/Interpreter/Interpreter.cpp;
/// a kernel with tessel.cluster C runs C programs at a time, taking turns, and
/// needs a grid whose x is a multiple of C).
/// On failure returns failure() and sets `error` to one line: the problem,
/// the op's location, the program and the kernel, e.g.
///   out-of-bounds load of buffer #2 at element 1037 (size 1024) in lane [13]
///   at kernel.tsl:12:5 (program (4, 0, 0) of kernel 'add')
/// Memory written before the failure stays written. A kernel with a
/// follow-up (`tessel.then`, split-K's combine kernel) runs it next over the
/// same grid and arguments (workspace included); the follow-up cannot be
/// run on its own.
mlir::LogicalResult runKernel(mlir::func::FuncOp kernel,
                              llvm::ArrayRef<KernelArg> args,
                              const LaunchConfig &config, Memory &memory,
                              std::string &error);

/// Elements per program of each of `kernel`'s trailing workspace parameters
/// (its tessel.workspace attribute: what the launcher provides, not the
/// caller); empty without any.
llvm::ArrayRef<int64_t> getWorkspaceSizes(mlir::func::FuncOp kernel);

/// Appends `kernel`'s workspace buffers for a launch over `grid` to `args`:
/// zeroed, each its size per program times the programs. A grid runKernel
/// would refuse (a negative size, 2^31 programs or more) gets empty ones and
/// is reported by runKernel, not by allocating for it.
void allocateWorkspaces(mlir::func::FuncOp kernel,
                        const std::array<int64_t, 3> &grid, Memory &memory,
                        std::vector<KernelArg> &args);

/// Stream-K split, shared with the `tessel-lower-stream-k` pass so that both
/// cut the same ranges: the `total` = units * iters linearised iterations
/// are divided over P = streamKPrograms(programs, units, iters) programs,
/// program p < P owning
///   [p * total / P, (p + 1) * total / P)
/// (integer division, evaluated as p * (total / P) + p * (total % P) / P,
/// which cannot overflow 64 bits while P < 2^31). Ranges are contiguous, in
/// program order, and differ in length by at most one. Programs from P on
/// own nothing ([total, total)). P is min(programs, total), so that with more
/// programs than iterations each iteration gets a program of its own, every
/// program that takes part owns at least one and a unit's peers are
/// consecutive programs; or units * S, S = max(1, min(programs / units,
/// iters)) (the split-K lowering's chunks per unit), where those are at most
/// `programs` and make no range longer: each unit is then S whole ranges,
/// and no program computes slices of two units.
int64_t streamKPrograms(int64_t programs, int64_t units, int64_t iters);
struct IterRange {
  int64_t begin;
  int64_t end;
};
/// The range of `program` when `used` = streamKPrograms(...) programs take
/// part.
IterRange streamKRange(int64_t program, int64_t used, int64_t total);
/// The program whose range holds iteration `iter` (0 <= iter < total).
int64_t streamKOwner(int64_t iter, int64_t used, int64_t total);

} // namespace tessel

#endif // TESSEL_INTERPRETER_H
