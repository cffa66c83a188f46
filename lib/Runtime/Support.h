//===- Support.h - Helpers shared by the runtime's sources ------*- C++ -*-===//

#ifndef TESSEL_RUNTIME_SUPPORT_H
#define TESSEL_RUNTIME_SUPPORT_H

#include "tessel/Runtime.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

/// Returns the Status of `expr` from the enclosing function if it failed.
#define TESSEL_TRY(expr)                                                       \
  do {                                                                         \
    ::tessel::Status tesselTryStatus = (expr);                                 \
    if (!tesselTryStatus.ok())                                                 \
      return tesselTryStatus;                                                  \
  } while (0)

namespace tessel {

/// A device address as messages show it: "0x7f3a00000010".
inline std::string hexAddress(uint64_t address) {
  char text[24];
  std::snprintf(text, sizeof(text), "%#" PRIx64, address);
  return text;
}

} // namespace tessel

#endif // TESSEL_RUNTIME_SUPPORT_H
