//===- Json.h - A small, strict JSON reader ---------------------*- C++ -*-===//
//
// Reads RFC 8259 JSON into a tree. Bundles are read from files that may be
// damaged or hostile, so every input either parses or gives an error with a
// line and column; nesting depth is bounded so no input can exhaust the stack.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_JSON_H
#define TESSEL_RUNTIME_JSON_H

#include "tessel/Runtime.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel {

class JsonValue {
public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  Type type = Type::Null;
  bool boolean = false;
  double number = 0;
  /// Set when the number was written as an integer that fits in int64.
  std::optional<int64_t> integer;
  std::string string;
  std::vector<JsonValue> array;
  /// Members in file order; keys are unique.
  std::vector<std::pair<std::string, JsonValue>> object;
  /// Byte offset of the value's first character in the input.
  size_t offset = 0;

  /// The member named `key` of an object, or null.
  const JsonValue *find(std::string_view key) const;
};

const char *jsonTypeName(JsonValue::Type type);

/// Nesting deeper than this is rejected.
constexpr unsigned kMaxJsonDepth = 128;

/// Parses one JSON document. Errors read "NAME:LINE:COL: error: ...".
Result<JsonValue> parseJson(std::string_view text, std::string_view name);

/// 1-based line and column (in bytes) of `offset` in `text`.
std::pair<unsigned, unsigned> lineAndColumn(std::string_view text,
                                            size_t offset);

} // namespace tessel

#endif // TESSEL_RUNTIME_JSON_H
