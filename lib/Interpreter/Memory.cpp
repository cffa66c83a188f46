//===- Memory.cpp - Buffers and float formats -----------------------------===//
//
// Rounding is done directly from double to the target format (never through
// f32 first), so that f16/bf16 results are correctly rounded even where a
// detour through f32 would round twice.
//
//===----------------------------------------------------------------------===//

#include "tessel/Memory.h"
#include "Numerics.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessel {
using namespace detail;

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

/// Rounds to a binary format of `precision` significant bits whose normal
/// exponents are [minExp, maxExp]. Below 2^minExp the quantum stays that of
/// the smallest normal, which gives the subnormals.
static double roundToFormat(double x, int precision, int minExp, int maxExp) {
  if (!std::isfinite(x) || x == 0)
    return x;
  int exp = std::max(std::ilogb(x), minExp);
  double quantum = std::ldexp(1.0, exp - precision + 1);
  // Division by a power of two is exact; nearbyint rounds ties to even in
  // the default floating-point environment.
  double r = std::nearbyint(x / quantum) * quantum;
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, 1 - precision), maxExp);
  if (std::fabs(r) > maxFinite)
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

double detail::roundFloat(FloatFormat format, double value) {
  switch (format) {
  case FloatFormat::F16:
    return roundToFormat(value, 11, -14, 15);
  case FloatFormat::BF16:
    return roundToFormat(value, 8, -126, 127);
  case FloatFormat::F32:
    return static_cast<float>(value);
  }
  return value;
}

int64_t detail::floatToInt(double value, unsigned width) {
  if (std::isnan(value))
    return 0;
  double t = std::trunc(value);
  if (width == 1)
    return t != 0 ? 1 : 0;
  double hi = std::ldexp(1.0, width - 1); // 2^(w-1) is exact in a double.
  if (t >= hi)
    return static_cast<int64_t>(
        (width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1) >> 1);
  if (t < -hi)
    return width >= 64 ? std::numeric_limits<int64_t>::min()
                       : -(int64_t(1) << (width - 1));
  return static_cast<int64_t>(t);
}

uint16_t toF16Bits(double value) {
  double r = roundFloat(FloatFormat::F16, value);
  uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  if (std::isnan(r))
    return sign | 0x7E00;
  double a = std::fabs(r);
  if (std::isinf(a))
    return sign | 0x7C00;
  if (a < std::ldexp(1.0, -14)) // Subnormal (or zero): multiples of 2^-24.
    return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  int exp = std::ilogb(a);
  auto mantissa = static_cast<uint16_t>(std::ldexp(a, 10 - exp) - 1024);
  return sign | static_cast<uint16_t>((exp + 15) << 10) | mantissa;
}

double fromF16Bits(uint16_t bits) {
  int exp = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
  double magnitude;
  if (exp == 0x1F)
    magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN()
                         : std::numeric_limits<double>::infinity();
  else if (exp == 0)
    magnitude = std::ldexp(mantissa, -24);
  else
    magnitude = std::ldexp(mantissa + 1024, exp - 25);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

uint16_t toBF16Bits(double value) {
  // bf16 is the upper half of an f32 with the same exponent range, so the
  // rounded value converts to f32 exactly.
  auto f = static_cast<float>(roundFloat(FloatFormat::BF16, value));
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f))
    return static_cast<uint16_t>(((bits >> 16) & 0x8000) | 0x7FC0);
  return static_cast<uint16_t>(bits >> 16);
}

double fromBF16Bits(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

const char *dtypeName(DType type) {
  switch (type) {
  case DType::I1:
    return "i1";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  }
  return "?";
}

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::I1:
    return 1;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I32:
  case DType::F32:
    return 4;
  case DType::I64:
    return 8;
  }
  return 0;
}

std::optional<DType> dtypeNamed(std::string_view name) {
  for (DType t :
       {DType::I1, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32})
    if (name == dtypeName(t))
      return t;
  return std::nullopt;
}

static unsigned intWidth(DType type) {
  return type == DType::I1 ? 1 : type == DType::I32 ? 32 : 64;
}

double roundTo(DType type, double value) {
  switch (type) {
  case DType::F16:
    return roundFloat(FloatFormat::F16, value);
  case DType::BF16:
    return roundFloat(FloatFormat::BF16, value);
  case DType::F32:
    return roundFloat(FloatFormat::F32, value);
  default:
    return static_cast<double>(
        wrapInt(floatToInt(std::nearbyint(value), 64), intWidth(type)));
  }
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

int Memory::allocate(DType type, size_t n) {
  buffers.push_back({type, n, std::vector<unsigned char>(n * dtypeSize(type))});
  return numBuffers() - 1;
}

/// Loads/stores one element of a trivially copyable type at `index`.
template <typename T> static T loadRaw(const unsigned char *base, size_t i) {
  T v;
  std::memcpy(&v, base + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T> static void storeRaw(unsigned char *base, size_t i, T v) {
  std::memcpy(base + i * sizeof(T), &v, sizeof(T));
}

double Memory::getFloat(int id, size_t index) const {
  const Buffer &b = buffers[id];
  assert(index < b.size && "element out of range");
  switch (b.type) {
  case DType::F16:
    return fromF16Bits(loadRaw<uint16_t>(b.bytes.data(), index));
  case DType::BF16:
    return fromBF16Bits(loadRaw<uint16_t>(b.bytes.data(), index));
  case DType::F32:
    return loadRaw<float>(b.bytes.data(), index);
  default:
    return static_cast<double>(getInt(id, index));
  }
}

int64_t Memory::getInt(int id, size_t index) const {
  const Buffer &b = buffers[id];
  assert(index < b.size && "element out of range");
  switch (b.type) {
  case DType::I1:
    return b.bytes[index] & 1;
  case DType::I32:
    return loadRaw<int32_t>(b.bytes.data(), index);
  case DType::I64:
    return loadRaw<int64_t>(b.bytes.data(), index);
  default:
    return floatToInt(getFloat(id, index), 64);
  }
}

void Memory::setFloat(int id, size_t index, double value) {
  Buffer &b = buffers[id];
  assert(index < b.size && "element out of range");
  switch (b.type) {
  case DType::F16:
    return storeRaw(b.bytes.data(), index, toF16Bits(value));
  case DType::BF16:
    return storeRaw(b.bytes.data(), index, toBF16Bits(value));
  case DType::F32:
    return storeRaw(b.bytes.data(), index, static_cast<float>(value));
  default:
    return setInt(id, index, floatToInt(std::nearbyint(value), 64));
  }
}

void Memory::setInt(int id, size_t index, int64_t value) {
  Buffer &b = buffers[id];
  assert(index < b.size && "element out of range");
  switch (b.type) {
  case DType::I1:
    b.bytes[index] = static_cast<unsigned char>(value & 1);
    return;
  case DType::I32:
    return storeRaw(b.bytes.data(), index,
                    static_cast<int32_t>(wrapInt(value, 32)));
  case DType::I64:
    return storeRaw(b.bytes.data(), index, value);
  default:
    return setFloat(id, index, static_cast<double>(value));
  }
}

std::vector<double> Memory::read(int id) const {
  std::vector<double> out(size(id));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = getFloat(id, i);
  return out;
}

void Memory::write(int id, const std::vector<double> &values) {
  assert(values.size() == size(id) && "write expects one value per element");
  for (size_t i = 0; i < values.size(); ++i)
    setFloat(id, i, values[i]);
}

std::vector<int64_t> Memory::readInts(int id) const {
  std::vector<int64_t> out(size(id));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = getInt(id, i);
  return out;
}

void Memory::writeInts(int id, const std::vector<int64_t> &values) {
  assert(values.size() == size(id) && "write expects one value per element");
  for (size_t i = 0; i < values.size(); ++i)
    setInt(id, i, values[i]);
}

} // namespace tessel
