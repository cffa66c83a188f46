//===- Numerics.h - Scalar rounding and wrapping (internal) -----*- C++ -*-===//
//
// The scalar arithmetic rules of the interpreter: floats are carried as
// doubles rounded to their type after every operation, integers as int64
// wrapped to their width after every operation.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_INTERPRETER_NUMERICS_H
#define TESSEL_LIB_INTERPRETER_NUMERICS_H

#include <cstdint>

namespace tessel::detail {

enum class FloatFormat { F16, BF16, F32 };

/// Rounds to the nearest value of the format, ties to even; overflow gives
/// ±inf, NaN and ±inf pass through.
double roundFloat(FloatFormat format, double value);

/// Wraps to a two's complement integer of `width` bits: i1 is kept as 0/1,
/// wider types sign-extended into the int64.
inline int64_t wrapInt(int64_t value, unsigned width) {
  if (width >= 64)
    return value;
  if (width == 1)
    return value & 1;
  uint64_t bits = static_cast<uint64_t>(value) << (64 - width);
  return static_cast<int64_t>(bits) >> (64 - width);
}

/// The signed reading of a wrapped integer: i1 true is -1.
inline int64_t asSigned(int64_t value, unsigned width) {
  return width == 1 ? -(value & 1) : value;
}

/// The unsigned reading of a wrapped integer.
inline uint64_t asUnsigned(int64_t value, unsigned width) {
  if (width >= 64)
    return static_cast<uint64_t>(value);
  return static_cast<uint64_t>(value) & ((uint64_t(1) << width) - 1);
}

/// Float to integer as the GPU's cvt.rzi does: truncates toward zero,
/// saturates to the signed range of `width` bits, NaN gives 0. For i1 the
/// result is 1 when the truncated value is nonzero.
int64_t floatToInt(double value, unsigned width);

} // namespace tessel::detail

#endif // TESSEL_LIB_INTERPRETER_NUMERICS_H
