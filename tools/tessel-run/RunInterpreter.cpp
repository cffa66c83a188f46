//===- RunInterpreter.cpp - tessel-run on the CPU interpreter -------------===//
//
// Compiles a .tsl kernel (or parses a .mlir module), brings it to the
// requested stage and runs it on the CPU interpreter. Built with the compiler
// only.
//
//===----------------------------------------------------------------------===//

#include "Run.h"

#include "Frontend/MLIRGen.h"
#include "tessel/Interpreter.h"
#include "tessel/Passes.h"
#include "tessel/TesselDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <iostream>

namespace tessel::run {

static mlir::OwningOpRef<mlir::ModuleOp>
loadModule(const Options &options, mlir::MLIRContext &context) {
  if (llvm::StringRef(options.input).ends_with(".mlir"))
    return mlir::parseSourceFile<mlir::ModuleOp>(options.input, &context);
  std::string readError;
  auto source = SourceManager::fromFile(options.input, readError);
  if (!source) {
    fail(readError);
    return nullptr;
  }
  GenOptions gen;
  gen.kernel = options.kernel;
  for (const std::string &d : options.defines) {
    size_t eq = d.find('=');
    gen.defines[d.substr(0, eq)] = d.substr(eq + 1);
  }
  DiagnosticEngine diag(*source, std::cerr);
  return compileSource(context, *source, diag, gen);
}

int runInterpreter(const Options &options) {
  mlir::MLIRContext context;
  loadFrontendDialects(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModule(options, context);
  if (!module)
    return 1;
  std::string stage = options.stage.value_or("lowered");
  if (stage != "source") {
    mlir::PassManager pm(&context);
    pm.addPass(mlir::tessel::createTesselExpandOnline());
    if (stage == "lowered")
      pm.addPass(mlir::tessel::createTesselLowerStreamK(
          {*mlir::tessel::symbolizeStreamKStrategy(
              options.streamK.value_or("persistent"))}));
    if (mlir::failed(pm.run(*module)))
      return 1;
  }

  mlir::func::FuncOp kernel;
  module->walk([&](mlir::func::FuncOp f) {
    if (f->hasAttr("tessel.kernel") &&
        (options.kernel.empty() || f.getSymName() == options.kernel) && !kernel)
      kernel = f;
  });
  if (!kernel)
    return fail(options.kernel.empty()
                    ? "no kernel in '" + options.input + "'"
                    : "no kernel named '" + options.kernel + "'");
  std::string name = kernel.getSymName().str();

  std::array<int64_t, 3> grid;
  if (!parseGrid(options.grid.value_or("1"), grid))
    return fail("--grid expects X[,Y[,Z]] with integers in [0, 2^31), got '" +
                *options.grid + "'");
  // The trailing parameters are workspace the launcher provides.
  unsigned numUser =
      kernel.getNumArguments() - getWorkspaceSizes(kernel).size();
  std::vector<Param> params;
  for (mlir::BlockArgument arg : kernel.getArguments().take_front(numUser)) {
    mlir::Type type = arg.getType();
    if (auto ptr = llvm::dyn_cast<mlir::tessel::PtrType>(type))
      params.push_back({mlir::tessel::getKernelArgName(arg),
                        KernelArg::Kind::Buffer, *dtypeOf(ptr.getPointeeType()),
                        mlir::tessel::isNoneArg(kernel, arg.getArgNumber())});
    else
      params.push_back(
          {mlir::tessel::getKernelArgName(arg),
           type.isInteger() ? KernelArg::Kind::Int : KernelArg::Kind::Float});
  }
  Inputs inputs;
  std::string error;
  if (!makeInputs(name, params, options, inputs, error))
    return fail(error);
  allocateWorkspaces(kernel, grid, inputs.memory, inputs.args);

  LaunchConfig config;
  config.grid = grid;
  const Memory initial = inputs.memory;
  auto run = [&](double &ms, std::string &error) {
    inputs.memory = initial;
    auto start = std::chrono::steady_clock::now();
    if (mlir::failed(
            runKernel(kernel, inputs.args, config, inputs.memory, error)))
      return false;
    ms = std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
             .count();
    return true;
  };
  double ms;
  if (!timeRuns(options, /*defaultWarmup=*/0, run, ms, error))
    return fail(error);
  report(name, "the CPU interpreter", grid, ms, options);
  if (!saveBuffers(options, inputs, error))
    return fail(error);
  return 0;
}

} // namespace tessel::run
