//===- Arg.cpp - Typed kernel arguments -----------------------------------===//

#include "tessel/Runtime.h"

#include <cmath>
#include <cstring>

using namespace tessel;

const char *tessel::argKindName(ArgKind kind) {
  switch (kind) {
  case ArgKind::Ptr:
    return "ptr";
  case ArgKind::I32:
    return "i32";
  case ArgKind::I64:
    return "i64";
  case ArgKind::F16:
    return "f16";
  case ArgKind::BF16:
    return "bf16";
  case ArgKind::F32:
    return "f32";
  }
  return "?";
}

unsigned tessel::argKindSize(ArgKind kind) {
  switch (kind) {
  case ArgKind::Ptr:
  case ArgKind::I64:
    return 8;
  case ArgKind::I32:
  case ArgKind::F32:
    return 4;
  case ArgKind::F16:
  case ArgKind::BF16:
    return 2;
  }
  return 0;
}

static uint32_t floatBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

// IEEE binary16, rounded to nearest even.
static uint16_t toHalf(float v) {
  uint32_t bits = floatBits(v);
  uint16_t sign = (bits >> 16) & 0x8000;
  uint32_t mag = bits & 0x7fffffff;
  if (mag > 0x7f800000) // NaN stays a (quiet) NaN
    return sign | 0x7e00;
  if (mag >= 0x477ff000) // rounds to at least 65520: infinity
    return sign | 0x7c00;
  if (mag < 0x38800000) // below 2^-14: subnormal, in units of 2^-24
    return sign | uint16_t(std::nearbyint(std::fabs(v) * 16777216.0f));
  uint32_t half = ((mag >> 23) - 112) << 10 | (mag & 0x7fffff) >> 13;
  uint32_t rest = mag & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // a carry into the exponent is still the right encoding
  return sign | uint16_t(half);
}

// bfloat16 is the top half of a float, rounded to nearest even.
static uint16_t toBFloat16(float v) {
  uint32_t bits = floatBits(v);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return uint16_t(bits >> 16) | 0x40; // keep NaN a NaN after truncation
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

Arg Arg::ptr(uint64_t devicePtr) {
  Arg a(ArgKind::Ptr);
  a.bits.u64 = devicePtr;
  return a;
}

Arg Arg::i32(int32_t v) {
  Arg a(ArgKind::I32);
  a.bits.i32 = v;
  return a;
}

Arg Arg::i64(int64_t v) {
  Arg a(ArgKind::I64);
  a.bits.i64 = v;
  return a;
}

Arg Arg::f32(float v) {
  Arg a(ArgKind::F32);
  a.bits.f32 = v;
  return a;
}

Arg Arg::f16(float v) {
  Arg a(ArgKind::F16);
  a.bits.u16 = toHalf(v);
  return a;
}

Arg Arg::bf16(float v) {
  Arg a(ArgKind::BF16);
  a.bits.u16 = toBFloat16(v);
  return a;
}
