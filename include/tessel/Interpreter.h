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

/// Element types of buffers: the scalar types of the DSL.
enum class DType { I1, I32, I64, F16, BF16, F32 };

/// "f16", "i32", ... as in the IR.
const char *dtypeName(DType type);
/// Bytes per element in memory (i1 takes one byte holding 0 or 1).
size_t dtypeSize(DType type);
/// The DType of a scalar MLIR type, if it is one of the six.
std::optional<DType> dtypeOf(mlir::Type type);
/// Rounds `value` to the nearest value of a float type (ties to even,
/// overflow to ±inf, NaN kept); wraps integers to their width (i1: low bit).
double roundTo(DType type, double value);

/// IEEE binary16 / bfloat16 bit patterns, round to nearest even.
uint16_t toF16Bits(double value);
uint16_t toBF16Bits(double value);
double fromF16Bits(uint16_t bits);
double fromBF16Bits(uint16_t bits);

/// Typed buffers standing in for GPU global memory. Elements are stored in
/// their storage format (f16/bf16 as 16-bit patterns), so what a kernel
/// stores is rounded exactly as on the GPU. Buffer ids are dense from 0.
class Memory {
public:
  /// A zero-filled buffer of `n` elements; returns its id.
  int allocate(DType type, size_t n);
  int numBuffers() const { return static_cast<int>(buffers.size()); }
  bool isValid(int id) const { return id >= 0 && id < numBuffers(); }
  DType dtype(int id) const { return buffers[id].type; }
  size_t size(int id) const { return buffers[id].size; }

  /// All elements as doubles (exact for every type but i64 beyond 2^53).
  std::vector<double> read(int id) const;
  /// Replaces the elements: floats round to nearest even, integers round to
  /// nearest and wrap to the width. `values` must have size(id) elements.
  void write(int id, const std::vector<double> &values);
  /// Exact integer access (any integer type).
  std::vector<int64_t> readInts(int id) const;
  void writeInts(int id, const std::vector<int64_t> &values);

  /// One element. Float getters/setters on integer buffers convert (and the
  /// reverse), as read()/write() do.
  double getFloat(int id, size_t index) const;
  void setFloat(int id, size_t index, double value);
  int64_t getInt(int id, size_t index) const;
  void setInt(int id, size_t index, int64_t value);

  /// The raw storage, for bindings that copy whole arrays.
  void *data(int id) { return buffers[id].bytes.data(); }
  const void *data(int id) const { return buffers[id].bytes.data(); }

private:
  struct Buffer {
    DType type;
    size_t size;
    std::vector<unsigned char> bytes;
  };
  std::vector<Buffer> buffers;
};

/// One kernel argument: a buffer for a `!tessel.ptr<T>` parameter, an
/// integer for an integer parameter, a float (or an integer) for a float one.
struct KernelArg {
  enum class Kind { Buffer, Int, Float };
  Kind kind = Kind::Int;
  int buffer = -1;
  int64_t intValue = 0;
  double floatValue = 0;

  static KernelArg ofBuffer(int id) { return {Kind::Buffer, id, 0, 0}; }
  static KernelArg ofInt(int64_t v) { return {Kind::Int, -1, v, 0}; }
  static KernelArg ofFloat(double v) { return {Kind::Float, -1, 0, v}; }
};

struct LaunchConfig {
  /// Programs along x, y, z; each must be >= 0 (0 runs nothing).
  std::array<int64_t, 3> grid = {1, 1, 1};
};

/// Runs `kernel` once per program of the grid, one program after another in
/// descending linear order (x fastest; why: lib/Interpreter/Interpreter.cpp).
/// On failure returns failure() and sets `error` to one line: the problem,
/// the op's location, the program and the kernel, e.g.
///   out-of-bounds load of buffer #2 at element 1037 (size 1024) in lane [13]
///   at kernel.tsl:12:5 (program (4, 0, 0) of kernel 'add')
/// Memory written before the failure stays written.
mlir::LogicalResult runKernel(mlir::func::FuncOp kernel,
                              llvm::ArrayRef<KernelArg> args,
                              const LaunchConfig &config, Memory &memory,
                              std::string &error);

/// Stream-K split, shared with the `tessel-lower-stream-k` pass so that both
/// cut the same ranges: the `total` = units * iters linearised iterations
/// are divided over `programs` programs, program p owning
///   [p * total / programs, (p + 1) * total / programs)
/// (integer division, evaluated as p * (total / programs) +
/// p * (total % programs) / programs, which cannot overflow 64 bits while
/// programs < 2^31). Ranges are contiguous, in program order, and differ in
/// length by at most one; with more programs than iterations some are empty.
struct IterRange {
  int64_t begin;
  int64_t end;
};
IterRange streamKRange(int64_t program, int64_t programs, int64_t total);
/// The program whose range holds iteration `iter` (0 <= iter < total).
int64_t streamKOwner(int64_t iter, int64_t programs, int64_t total);

} // namespace tessel

#endif // TESSEL_INTERPRETER_H
