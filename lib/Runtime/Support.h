//===- Support.h - Helpers shared by the runtime's sources ------*- C++ -*-===//

#ifndef TESSEL_RUNTIME_SUPPORT_H
#define TESSEL_RUNTIME_SUPPORT_H

#include "tessel/Runtime.h"

/// Returns the Status of `expr` from the enclosing function if it failed.
#define TESSEL_TRY(expr)                                                       \
  do {                                                                         \
    ::tessel::Status tesselTryStatus = (expr);                                 \
    if (!tesselTryStatus.ok())                                                 \
      return tesselTryStatus;                                                  \
  } while (0)

#endif // TESSEL_RUNTIME_SUPPORT_H
