//===- Run.h - What tessel-run's GPU and interpreter paths share -*- C++
//-*-===//
//
// The command line, the inputs (seeded or read from files, rounded to the
// element type in the interpreter's `Memory`), timing and --save. Needs no
// LLVM/MLIR and no GPU: the paths that do (RunBundle.cpp with the CUDA
// runtime, RunInterpreter.cpp with the compiler) are built where they can be.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_RUN_H
#define TESSEL_TOOLS_TESSEL_RUN_RUN_H

#include "tessel/Memory.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessel::run {

struct Options {
  std::string input;
  std::string kernel;
  std::vector<std::string> defines; // -D NAME=VALUE
  std::optional<std::string> grid;
  std::optional<std::string> stage;
  std::optional<std::string> streamK;                     // persistent, split-k
  std::vector<std::pair<std::string, std::string>> args;  // NAME, SPEC
  std::vector<std::pair<std::string, std::string>> saves; // NAME, PATH
  uint64_t seed = 0;
  unsigned repeat = 1;
  std::optional<unsigned> warmup;
  std::string driverLibrary = "libcuda.so.1";
  int device = 0;
  bool help = false;
};

/// Reads argv into `options`; false with `error` set on a bad command line.
bool parseCommandLine(int argc, char **argv, Options &options,
                      std::string &error);
void printUsage();

/// Prints "tessel-run: error: MESSAGE" and returns the exit status 1.
int fail(const std::string &message);

/// X[,Y[,Z]] of non-negative integers below 2^31; missing dimensions are 1.
bool parseGrid(const std::string &spec, std::array<int64_t, 3> &grid);

/// A kernel parameter the caller gives with --arg: a buffer of `elem`, an
/// integer or a float.
struct Param {
  std::string name;
  KernelArg::Kind kind;
  DType elem = DType::F32;
  /// A pointer compiled as None: no --arg, an empty buffer (a null pointer
  /// on the GPU).
  bool none = false;
};

/// Buffers made for --arg, by parameter name, and the arguments in parameter
/// order.
struct Inputs {
  Memory memory;
  std::vector<KernelArg> args;
  std::map<std::string, int> buffers;
};

/// Makes one argument per parameter from the --arg specs, drawing seeded
/// values in parameter order (so every path makes the same inputs).
bool makeInputs(const std::string &kernel, const std::vector<Param> &params,
                const Options &options, Inputs &inputs, std::string &error);

/// Writes the buffers named by --save as little-endian float64.
bool saveBuffers(const Options &options, const Inputs &inputs,
                 std::string &error);

/// One run of the kernel from the initial inputs: sets its milliseconds.
using TimedRun = std::function<bool(double &ms, std::string &error)>;

/// Runs `warmup` untimed runs, then options.repeat timed ones; `median` is
/// the median of their milliseconds.
bool timeRuns(const Options &options, unsigned defaultWarmup,
              const TimedRun &run, double &median, std::string &error);

/// Prints "kernel 'K' ran on WHERE: grid XxYxZ, T ms" (and how many runs the
/// median is of).
void report(const std::string &kernel, const std::string &where,
            const std::array<int64_t, 3> &grid, double ms,
            const Options &options);

/// The two paths; each returns the exit status.
int runBundle(const Options &options);
int runInterpreter(const Options &options);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_RUN_H
