//===- tessel-run.cpp - Run a Tessel kernel on seeded or file inputs ------===//
//
//   tessel-run FILE.tsl|FILE.mlir --kernel NAME [-D NAME=VALUE ...]
//              --grid X[,Y[,Z]] [--stage=source|expanded|lowered]
//              --arg NAME=SPEC ... [--save NAME=PATH ...] [--seed N]
//
// SPEC is a scalar (`1024`, `0.125`) or a buffer `TYPE[N]` optionally
// followed by `:zeros`, `:rand` (uniform in [-1, 1)), `:randn`,
// `:fill=VALUE` or `:file=PATH` (N little-endian float64 values, rounded to
// TYPE). `--save` writes a buffer back as float64 after the run. Without a
// GPU back end the kernel runs on the CPU interpreter.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGen.h"
#include "tessel/Interpreter.h"
#include "tessel/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

namespace cl = llvm::cl;
using namespace tessel;

namespace {
enum class Stage { Source, Expanded, Lowered };

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<.tsl or .mlir>"),
                               cl::Required);
cl::opt<std::string> kernelName("kernel", cl::desc("Kernel to run"),
                                cl::value_desc("name"));
cl::list<std::string> defines("D", cl::Prefix,
                              cl::desc("constexpr value: -D NAME=VALUE"),
                              cl::value_desc("NAME=VALUE"));
cl::opt<std::string> gridSpec("grid",
                              cl::desc("Programs along x[,y[,z]] (for a "
                                       "persistent kernel: how many)"),
                              cl::init("1"));
cl::list<std::string> argSpecs("arg", cl::desc("A kernel argument"),
                               cl::value_desc("NAME=SPEC"));
cl::list<std::string> saveSpecs("save",
                                cl::desc("Write a buffer as float64 after "
                                         "the run"),
                                cl::value_desc("NAME=PATH"));
cl::opt<unsigned> seed("seed", cl::desc("Seed for :rand and :randn"),
                       cl::init(0));
cl::opt<Stage>
    stage("stage", cl::desc("Which form of the kernel to run"),
          cl::init(Stage::Lowered),
          cl::values(clEnumValN(Stage::Source, "source",
                                "as emitted by the front end"),
                     clEnumValN(Stage::Expanded, "expanded",
                                "after tessel-expand-online"),
                     clEnumValN(Stage::Lowered, "lowered",
                                "after tessel-expand-online and "
                                "tessel-lower-stream-k (what the GPU runs)")));

int fail(const std::string &message) {
  llvm::errs() << "tessel-run: error: " << message << "\n";
  return 1;
}

bool parseGrid(const std::string &spec, std::array<int64_t, 3> &grid) {
  grid = {1, 1, 1};
  size_t pos = 0;
  for (int i = 0; i < 3 && pos <= spec.size(); ++i) {
    size_t comma = spec.find(',', pos);
    std::string part = spec.substr(pos, comma - pos);
    char *end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end || v < 0)
      return false;
    grid[i] = v;
    if (comma == std::string::npos)
      return true;
    pos = comma + 1;
  }
  return false;
}

/// Fills a fresh buffer as SPEC's initialiser says.
bool makeBuffer(const std::string &name, const std::string &spec,
                Memory &memory, std::mt19937_64 &rng, int &id,
                std::string &error) {
  size_t open = spec.find('['), close = spec.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return error =
               "argument '" + name + "': expected TYPE[N], got '" + spec + "'",
           false;
  std::string typeName = spec.substr(0, open);
  std::optional<DType> type;
  for (DType t :
       {DType::I1, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32})
    if (typeName == dtypeName(t))
      type = t;
  char *end = nullptr;
  std::string count = spec.substr(open + 1, close - open - 1);
  long long n = std::strtoll(count.c_str(), &end, 10);
  if (!type || count.empty() || *end || n < 0)
    return error = "argument '" + name + "': bad buffer '" + spec + "'", false;
  id = memory.allocate(*type, n);
  std::string init = spec.substr(close + 1);
  std::vector<double> values(n, 0.0);
  if (init.empty() || init == ":zeros") {
  } else if (init == ":rand" || init == ":randn") {
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::normal_distribution<double> normal;
    for (double &v : values)
      v = init == ":rand" ? uniform(rng) : normal(rng);
  } else if (init.rfind(":fill=", 0) == 0) {
    double v = std::strtod(init.c_str() + 6, &end);
    if (*end)
      return error = "argument '" + name + "': bad fill value", false;
    std::fill(values.begin(), values.end(), v);
  } else if (init.rfind(":file=", 0) == 0) {
    std::ifstream in(init.substr(6), std::ios::binary);
    in.read(reinterpret_cast<char *>(values.data()), n * sizeof(double));
    if (!in || in.gcount() != static_cast<std::streamsize>(n * sizeof(double)))
      return error = "argument '" + name + "': cannot read " +
                     std::to_string(n) + " float64 values from '" +
                     init.substr(6) + "'",
             false;
  } else {
    return error = "argument '" + name + "': unknown initialiser '" + init +
                   "' (zeros, rand, randn, fill=V, file=PATH)",
           false;
  }
  memory.write(id, values);
  return true;
}

std::string argName(mlir::BlockArgument arg) {
  if (auto named = llvm::dyn_cast<mlir::NameLoc>(arg.getLoc()))
    return named.getName().str();
  return "arg" + std::to_string(arg.getArgNumber());
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "Run a Tessel kernel\n");

  mlir::MLIRContext context;
  loadFrontendDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (llvm::StringRef(inputFile).ends_with(".mlir")) {
    module = mlir::parseSourceFile<mlir::ModuleOp>(inputFile, &context);
    if (!module)
      return 1;
  } else {
    std::string readError;
    auto source = SourceManager::fromFile(inputFile, readError);
    if (!source)
      return fail(readError);
    GenOptions options;
    options.kernel = kernelName;
    for (const std::string &d : defines) {
      size_t eq = d.find('=');
      if (eq == std::string::npos || eq == 0)
        return fail("-D expects NAME=VALUE, got '" + d + "'");
      options.defines[d.substr(0, eq)] = d.substr(eq + 1);
    }
    DiagnosticEngine diag(*source, std::cerr);
    module = compileSource(context, *source, diag, options);
    if (!module)
      return 1;
  }
  if (stage != Stage::Source) {
    mlir::PassManager pm(&context);
    pm.addPass(mlir::tessel::createTesselExpandOnline());
    if (stage == Stage::Lowered)
      pm.addPass(mlir::tessel::createTesselLowerStreamK());
    if (mlir::failed(pm.run(*module)))
      return 1;
  }

  mlir::func::FuncOp kernel;
  module->walk([&](mlir::func::FuncOp f) {
    if (f->hasAttr("tessel.kernel") &&
        (kernelName.empty() || f.getSymName() == kernelName) && !kernel)
      kernel = f;
  });
  if (!kernel)
    return fail(kernelName.empty() ? "no kernel in '" + inputFile + "'"
                                   : "no kernel named '" + kernelName + "'");

  Memory memory;
  std::mt19937_64 rng(seed);
  std::map<std::string, std::string> given;
  for (const std::string &a : argSpecs) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--arg expects NAME=SPEC, got '" + a + "'");
    given[a.substr(0, eq)] = a.substr(eq + 1);
  }
  std::map<std::string, int> buffers;
  std::vector<KernelArg> args;
  auto workspace =
      kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tessel.workspace");
  std::array<int64_t, 3> grid;
  if (!parseGrid(gridSpec, grid))
    return fail("--grid expects X[,Y[,Z]] with non-negative integers, got '" +
                gridSpec + "'");
  unsigned numWorkspace = workspace ? workspace.size() : 0;
  unsigned numUser = kernel.getNumArguments() - numWorkspace;
  for (mlir::BlockArgument arg : kernel.getArguments()) {
    std::string name = argName(arg);
    mlir::Type type = arg.getType();
    if (arg.getArgNumber() >= numUser) {
      // Workspace the launcher provides: per program, zeroed.
      auto ptr = llvm::cast<mlir::tessel::PtrType>(type);
      int64_t per = workspace[arg.getArgNumber() - numUser];
      int id = memory.allocate(*dtypeOf(ptr.getPointeeType()),
                               per * grid[0] * grid[1] * grid[2]);
      args.push_back(KernelArg::ofBuffer(id));
      continue;
    }
    auto it = given.find(name);
    if (it == given.end())
      return fail("kernel '" + kernel.getSymName().str() + "' needs --arg " +
                  name + "=...");
    if (llvm::isa<mlir::tessel::PtrType>(type)) {
      int id;
      std::string error;
      if (!makeBuffer(name, it->second, memory, rng, id, error))
        return fail(error);
      buffers[name] = id;
      args.push_back(KernelArg::ofBuffer(id));
    } else {
      char *end = nullptr;
      const char *text = it->second.c_str();
      if (type.isInteger()) {
        long long v = std::strtoll(text, &end, 0);
        if (*end || it->second.empty())
          return fail("argument '" + name + "' expects an integer");
        args.push_back(KernelArg::ofInt(v));
      } else {
        double v = std::strtod(text, &end);
        if (*end || it->second.empty())
          return fail("argument '" + name + "' expects a number");
        args.push_back(KernelArg::ofFloat(v));
      }
    }
    given.erase(it);
  }
  if (!given.empty())
    return fail("kernel '" + kernel.getSymName().str() +
                "' has no parameter '" + given.begin()->first + "'");

  LaunchConfig config;
  config.grid = grid;
  std::string error;
  auto start = std::chrono::steady_clock::now();
  if (mlir::failed(runKernel(kernel, args, config, memory, error)))
    return fail(error);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  llvm::outs() << "kernel '" << kernel.getSymName() << "' ran on the CPU "
               << "interpreter: grid " << grid[0] << "x" << grid[1] << "x"
               << grid[2] << ", " << llvm::format("%.3f", ms) << " ms\n";

  for (const std::string &s : saveSpecs) {
    size_t eq = s.find('=');
    auto it =
        eq == std::string::npos ? buffers.end() : buffers.find(s.substr(0, eq));
    if (it == buffers.end())
      return fail("--save expects NAME=PATH of a buffer argument, got '" + s +
                  "'");
    std::vector<double> values = memory.read(it->second);
    std::ofstream out(s.substr(eq + 1), std::ios::binary);
    out.write(reinterpret_cast<const char *>(values.data()),
              values.size() * sizeof(double));
    if (!out)
      return fail("cannot write '" + s.substr(eq + 1) + "'");
  }
  return 0;
}
