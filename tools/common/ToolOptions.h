//===- ToolOptions.h - Tessel's own options in --help ---------------------===//
//
// The tools link libLLVM, whose static initialisers register several hundred
// options (every back end's: AMDGPU, ARM, ...). --help lists the tool's own;
// the others still work and --help-hidden lists them.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_COMMON_TOOLOPTIONS_H
#define TESSEL_TOOLS_COMMON_TOOLOPTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/CommandLine.h"

namespace tessel {

/// Moves every option registered so far that is in none of `categories`
/// (nor LLVM's --help/--version) behind --help-hidden. Options registered
/// later stay visible. cl::HideUnrelatedOptions alone makes them
/// ReallyHidden, which --help-hidden does not list either.
inline void hideUnrelatedOptions(
    llvm::ArrayRef<const llvm::cl::OptionCategory *> categories) {
  // Its map type differs between LLVM versions.
  auto &options = llvm::cl::getRegisteredOptions();
  llvm::SmallPtrSet<llvm::cl::Option *, 32> alreadyHidden;
  for (auto &entry : options)
    if (entry.second->getOptionHiddenFlag() == llvm::cl::ReallyHidden)
      alreadyHidden.insert(entry.second);
  llvm::cl::HideUnrelatedOptions(categories);
  for (auto &entry : options)
    if (entry.second->getOptionHiddenFlag() == llvm::cl::ReallyHidden &&
        !alreadyHidden.contains(entry.second))
      entry.second->setHiddenFlag(llvm::cl::Hidden);
}

} // namespace tessel

#endif // TESSEL_TOOLS_COMMON_TOOLOPTIONS_H
