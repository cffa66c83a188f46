//===- Memory.h - Buffers and float formats of the interpreter --*- C++ -*-===//
//
// The element types, their rounding and the typed buffers the interpreter
// runs kernels on. It needs no LLVM/MLIR, so tools built without the compiler
// make inputs exactly as the interpreter does (seeded values rounded to the
// element type, stored in the device's storage format) and copy them to a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_MEMORY_H
#define TESSEL_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tessel {

/// Element types of buffers: the scalar types of the DSL.
enum class DType { I1, I32, I64, F16, BF16, F32 };

/// "f16", "i32", ... as in the IR.
const char *dtypeName(DType type);
/// The DType of that name, if it is one of the six.
std::optional<DType> dtypeNamed(std::string_view name);
/// Bytes per element in memory (i1 takes one byte holding 0 or 1).
size_t dtypeSize(DType type);
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

} // namespace tessel

#endif // TESSEL_MEMORY_H
