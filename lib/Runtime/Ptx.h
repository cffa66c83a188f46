//===- Ptx.h - What the runtime reads from PTX text -------------*- C++ -*-===//
//
// A bundle's parameter list must match the PTX entry it names, byte for byte:
// a mismatch would not fail at launch, it would pass garbage to the kernel.
// So the loader reads the entry's signature from the PTX and compares.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_PTX_H
#define TESSEL_RUNTIME_PTX_H

#include "tessel/Runtime.h"

#include <string_view>
#include <vector>

namespace tessel {

/// The size in bytes of each parameter of `.entry ENTRY(...)` in `ptx`, in
/// order; an error if the PTX has no such entry.
Result<std::vector<unsigned>> ptxEntryParamSizes(std::string_view ptx,
                                                 std::string_view entry);

} // namespace tessel

#endif // TESSEL_RUNTIME_PTX_H
