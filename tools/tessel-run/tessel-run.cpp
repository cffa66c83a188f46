//===- tessel-run.cpp - Run a Tessel kernel on seeded or file inputs ------===//
//
//   tessel-run FILE.bundle [--kernel NAME] [--grid X[,Y[,Z]]] ARGS
//   tessel-run FILE.tsl|FILE.mlir --kernel NAME [-D NAME=VALUE ...]
//              --grid X[,Y[,Z]] [--stage=source|expanded|lowered]
//              [--stream-k=persistent|split-k] ARGS
//   ARGS: --arg NAME=SPEC ... [--save NAME=PATH ...] [--seed N] [--repeat N]
//
// A bundle runs on the GPU through tessel::Runtime, a .tsl/.mlir kernel on
// the CPU interpreter; both make the same inputs from the same specs and
// seed (Run.h), so their --save outputs compare directly. Each path is built
// where its dependencies are: bundles with the CUDA runtime, .tsl/.mlir with
// the compiler (--help lists the options).
//
//===----------------------------------------------------------------------===//

#include "Run.h"

#include <string_view>

using namespace tessel::run;

int main(int argc, char **argv) {
  Options options;
  std::string error;
  if (!parseCommandLine(argc, argv, options, error))
    return fail(error);
  if (options.help) {
    printUsage();
    return 0;
  }
  std::string_view input = options.input;
  bool bundle =
      input.size() >= 7 && input.substr(input.size() - 7) == ".bundle";
  if (bundle) {
#if TESSEL_RUN_HAS_RUNTIME
    return runBundle(options);
#else
    return fail("this tessel-run is built without the CUDA runtime "
                "(TESSEL_ENABLE_CUDA_RUNTIME=OFF): it cannot run '" +
                options.input + "'");
#endif
  }
#if TESSEL_RUN_HAS_COMPILER
  return runInterpreter(options);
#else
  return fail(
      "this tessel-run is built without the compiler "
      "(TESSEL_ENABLE_COMPILER=OFF): it runs .bundle files only, not '" +
      options.input + "'");
#endif
}
